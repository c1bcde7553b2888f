/**
 * Opening accounts from the server: the demo account of `pnpm start`, and the operator's
 * `create-account` command. Secrets are printed once and never stored in clear.
 */
import { Ids, openAccount, type OpenedAccount } from "@syllabus/core"
import { Effect } from "effect"

export interface AccountRequest {
  readonly name: string
  readonly subdomain: string
  readonly adminEmail: string
  readonly adminName: string
  readonly adminPassword: string
}

export const DEMO_ACCOUNT: AccountRequest = {
  name: "Demo Academy",
  subdomain: "demo",
  adminEmail: "admin@demo.example",
  adminName: "Demo Administrator",
  adminPassword: "demo-password"
}

/** Open the account; when the subdomain is taken, the demo takes another one. */
export const openAccountFrom = (request: AccountRequest, { demo }: { readonly demo: boolean }) =>
  Effect.gen(function* () {
    const attempt = (subdomain: string) =>
      openAccount({
        name: request.name,
        subdomain,
        administrator: { email: request.adminEmail, name: request.adminName, password: request.adminPassword }
      })
    return yield* attempt(request.subdomain).pipe(
      Effect.catchTag("UniqueViolation", (e) =>
        demo
          ? Effect.flatMap(Ids, (ids) => ids.next("account")).pipe(
              Effect.flatMap((id) => attempt(`${request.subdomain}-${id.slice(-6).toLowerCase()}`))
            )
          : Effect.fail(e)
      )
    )
  })

export const describeAccount = (opened: OpenedAccount, request: AccountRequest): string => {
  const lines = [
    `Account ${opened.account.data.name} (${opened.account.id}, subdomain ${opened.account.data.subdomain})`,
    `Administrator ${request.adminEmail} (${opened.administrator.id})${request === DEMO_ACCOUNT ? ` password ${request.adminPassword}` : ""}`,
    "Credentials (shown once, store them now):",
    ...opened.credentials.map((c) => `  ${c.environment.padEnd(10)} ${c.id}  ${c.secret}`)
  ]
  return lines.join("\n")
}
