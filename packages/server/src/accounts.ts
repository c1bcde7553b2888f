/**
 * Opening accounts from the server: the demo account of `start --demo`, the operator's
 * `create-account`, and `issue-credentials` for an account whose secrets were lost. Secrets
 * are printed once and stored only as keyed hashes: they can never be shown again.
 * An account's plan limits (docs/plan-limits.md) are the operator's too: `--plan` and
 * `--plan-limit` on `create-account`, and `set-plan-limits` for an open account.
 */
import {
  ACCOUNT_TYPE,
  accountHome,
  ADMINISTRATOR_TYPE,
  AdministratorPassword,
  CREDENTIAL_TYPE,
  credentialData,
  environments,
  Ids,
  newSecret,
  openAccount,
  type OpenedAccount,
  PASSWORD_LENGTH,
  type Plan,
  type PlanChange,
  planResources,
  Records,
  SECRET_HASH_KEY,
  setPlanLimits,
  type StoredRecord,
  UnitOfWork
} from "@syllabus/core"
import { Clock, Effect, Either, Schema } from "effect"

export interface AccountRequest {
  readonly name: string
  readonly subdomain: string
  readonly adminEmail: string
  readonly adminName: string
  readonly adminPassword: string
  /** The plan's limits and name (`--plan-limit`, `--plan`); none: every resource unlimited. */
  readonly plan?: PlanChange
}

export const DEMO_ACCOUNT: AccountRequest = {
  name: "Demo Academy",
  subdomain: "demo",
  adminEmail: "admin@demo.example",
  adminName: "Demo Administrator",
  adminPassword: "demo-password"
}

/** Why the API would refuse this administrator password (the same rule), or `undefined`. */
export const passwordProblem = (password: string): string | undefined =>
  Either.isRight(Schema.decodeUnknownEither(AdministratorPassword)(password))
    ? undefined
    : `the administrator password must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters long, as the API requires`

export const openAccountFrom = (request: AccountRequest) =>
  openAccount({
    name: request.name,
    subdomain: request.subdomain,
    administrator: { email: request.adminEmail, name: request.adminName, password: request.adminPassword },
    ...(request.plan ? { plan: request.plan } : {})
  })

/** The account of a subdomain, if one is open. */
export const findAccount = (subdomain: string) =>
  Effect.flatMap(Records, (records) => records.findUnique("global", ACCOUNT_TYPE, { name: "subdomain", value: subdomain.toLowerCase() }))

/**
 * The demo account of `start --demo`: opened the first time, reused afterwards (a server on a
 * database restarts onto the account it opened before, instead of opening one more).
 */
export const demoAccount = Effect.gen(function* () {
  const existing = yield* findAccount(DEMO_ACCOUNT.subdomain)
  if (existing) return { _tag: "Existing", account: existing } as const
  return { _tag: "Opened", opened: yield* openAccountFrom(DEMO_ACCOUNT) } as const
})

export const describeAccount = (opened: OpenedAccount, request: AccountRequest): string => {
  const lines = [
    `Account ${opened.account.name} (${opened.account.id}, subdomain ${opened.account.subdomain})`,
    `Administrator ${request.adminEmail} (${opened.administrator.id})${request === DEMO_ACCOUNT ? ` password ${request.adminPassword}` : ""}`,
    "Credentials (shown once, store them now):",
    ...opened.credentials.map((c) => `  ${c.environment.padEnd(10)} ${c.id}  ${c.secret}`),
    describePlan(opened.plan)
  ]
  return lines.join("\n")
}

/** What `start --demo` says when the demo account was opened by an earlier run. */
export const describeExistingDemo = (account: StoredRecord): string =>
  [
    `Demo account ${String(account.data.name)} (${account.id}, subdomain ${String(account.data.subdomain)}) already exists in this database; reusing it.`,
    "Its secrets were printed when it was opened; they are stored only as hashes and cannot be shown again.",
    `New ones: syllabus-server issue-credentials --subdomain ${String(account.data.subdomain)} (the old ones stay valid until revoked).`
  ].join("\n")

/**
 * A new full-access credential per environment for an account, linked to its first active
 * administrator, as the account's own were: for an operator who lost the secrets.
 */
export const issueCredentials = (subdomain: string) =>
  Effect.gen(function* () {
    const account = yield* findAccount(subdomain)
    if (!account) return yield* Effect.fail(new Error(`No account has the subdomain ${subdomain}.`))
    const records = yield* Records
    const ids = yield* Ids
    const uow = yield* UnitOfWork
    const now = yield* Clock.currentTimeMillis
    const admins = yield* records.list(accountHome(account.id), ADMINISTRATOR_TYPE, {
      where: [],
      sort: { field: "id", kind: "text", direction: "asc" },
      limit: 200
    })
    const admin = admins.find((a) => a.data.status === "active")
    if (!admin) return yield* Effect.fail(new Error(`The account ${account.id} has no active administrator to link the credentials to.`))
    const linkedAt = new Date(now).toISOString()
    const credentials = yield* uow.transaction(
      Effect.forEach(environments, (environment) =>
        Effect.gen(function* () {
          const id = yield* ids.next("credential")
          const secret = yield* newSecret(environment)
          const data = credentialData({
            id,
            name: `Operator ${environment} credential`,
            purpose: "Issued by the operator (issue-credentials)",
            authMode: "both",
            environment,
            expiresAt: null,
            createdBy: { id: admin.id, kind: "admin" },
            policies: [{ capabilities: null, template: "full_access", resources: null }],
            secret,
            administrators: [{ administrator_id: admin.id, linked_at: linkedAt }],
            now
          })
          yield* records.insert({ accountId: account.id, environment }, CREDENTIAL_TYPE, id, data, [
            { name: SECRET_HASH_KEY, value: secret.hash, global: true }
          ])
          return { environment, id, secret: secret.value }
        })
      )
    )
    return [
      `Account ${String(account.data.name)} (${account.id}, subdomain ${String(account.data.subdomain)})`,
      "New credentials (shown once, store them now):",
      ...credentials.map((c) => `  ${c.environment.padEnd(10)} ${c.id}  ${c.secret}`)
    ].join("\n")
  })

/**
 * The plan change of `--plan NAME` and `--plan-limit RESOURCE=N` (repeatable; `N` a whole
 * number, or `unlimited` to lift a limit), or what is wrong with them.
 */
export const planChangeOf = (
  name: string | undefined,
  limits: ReadonlyArray<string> | undefined
): { readonly change: PlanChange } | { readonly problem: string } => {
  const parsed: Record<string, number | null> = {}
  for (const entry of limits ?? []) {
    const match = /^([a-z_]+)=(\d+|unlimited)$/.exec(entry.trim())
    if (match === null) return { problem: `--plan-limit ${entry}: expected RESOURCE=N or RESOURCE=unlimited (resources: ${planResources.join(", ")})` }
    const [, resource, value] = match
    if (!(planResources as ReadonlyArray<string>).includes(resource!)) {
      return { problem: `--plan-limit ${entry}: unknown resource ${resource} (one of ${planResources.join(", ")})` }
    }
    parsed[resource!] = value === "unlimited" ? null : Number(value)
  }
  return { change: { ...(name !== undefined ? { name } : {}), limits: parsed } }
}

/** The plan as the commands print it: its name, then each resource's limit. */
export const describePlan = (plan: Plan): string =>
  [
    `Plan ${plan.name ?? "(unnamed)"}:`,
    ...planResources.map((resource) => `  ${resource.padEnd(15)} ${plan.limits[resource] ?? "unlimited"}`)
  ].join("\n")

/**
 * `set-plan-limits`: change the plan of the account of a subdomain, and describe the plan now in
 * effect. No account with the subdomain fails the command, as `issue-credentials` does.
 */
export const changePlanOf = (subdomain: string, change: PlanChange) =>
  Effect.gen(function* () {
    const account = yield* findAccount(subdomain)
    const plan = account ? yield* setPlanLimits(account.id, change) : undefined
    if (!account || plan === undefined) return yield* Effect.fail(new Error(`No account has the subdomain ${subdomain}.`))
    return [`Account ${String(account.data.name)} (${account.id}, subdomain ${String(account.data.subdomain)})`, describePlan(plan)].join("\n")
  })
