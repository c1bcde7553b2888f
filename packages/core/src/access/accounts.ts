/**
 * Accounts and their administrators, and the operator's way to open an account: one
 * administrator and one credential per environment, in `both` mode with every capability,
 * whose secrets are returned once, and the account's service plan (`limits/plan-limits.ts`),
 * which only the operator sets.
 */
import { Clock, Effect } from "effect"
import { Crypto } from "../ports/crypto.js"
import { type Environment, environments, type JsonObject, Records, type StoredRecord, type Tenant, UnitOfWork } from "../ports/store.js"
import { changePlan, noPlan, type Plan, type PlanChange, planOf, planUsage, recountPlanUsage, writePlan } from "../limits/plan-limits.js"
import { formatTimestamp } from "../records/time.js"
import { Ids } from "./context.js"
import { ADMINISTRATOR_TYPE, CREDENTIAL_TYPE, credentialData, newSecret, SECRET_HASH_KEY } from "./credentials.js"

export const ACCOUNT_TYPE = "account"

/** `active`; `blocked` (403 `instance_blocked`); `unavailable` (403 `instance_unavailable`). */
export type AccountStatus = "active" | "blocked" | "unavailable"

/** The environment an account's own record lives in (its home). */
export const ACCOUNT_HOME_ENVIRONMENT: Environment = "production"

export const accountHome = (accountId: string): Tenant => ({ accountId, environment: ACCOUNT_HOME_ENVIRONMENT })

export const loadAccount = (accountId: string) =>
  Effect.flatMap(Records, (records) => records.get(accountHome(accountId), ACCOUNT_TYPE, accountId))

export interface OpenAccountInput {
  readonly name: string
  readonly subdomain: string
  readonly administrator: { readonly email: string; readonly name: string; readonly password: string }
  /** The service plan's limits (default: none, every resource unlimited). */
  readonly plan?: PlanChange
}

/** An account as its operator sees it. */
export interface AccountView {
  readonly object: "account"
  readonly id: string
  readonly name: string
  readonly subdomain: string
  readonly status: AccountStatus
  readonly created_at: string
}

/** An administrator as the API shows one: never the password's hash nor the second factor's secret. */
export interface AdministratorView {
  readonly object: "administrator"
  readonly id: string
  readonly email: string
  readonly name: string
  readonly status: string
  readonly created_at: string
}

/**
 * What opening an account answers: public views only (whoever prints it, in a log or a test's
 * output, shows no hash and no secret but the credentials' own, shown this once).
 */
export interface OpenedAccount {
  readonly account: AccountView
  readonly administrator: AdministratorView
  readonly credentials: ReadonlyArray<{ readonly environment: Environment; readonly id: string; readonly secret: string }>
  /** The plan it was opened with (`noPlan` unless `OpenAccountInput.plan` set one). */
  readonly plan: Plan
}

const accountView = (record: StoredRecord): AccountView => ({
  object: "account",
  id: record.id,
  name: String(record.data.name),
  subdomain: String(record.data.subdomain),
  status: record.data.status as AccountStatus,
  created_at: String(record.data.created_at)
})

const administratorOf = (record: StoredRecord): AdministratorView => ({
  object: "administrator",
  id: record.id,
  email: String(record.data.email),
  name: String(record.data.name),
  status: String(record.data.status),
  created_at: String(record.data.created_at)
})

/** Open an account with its first administrator and a full-access credential per environment. */
export const openAccount = Effect.fn("Accounts.open")(function* (input: OpenAccountInput) {
  const records = yield* Records
  const ids = yield* Ids
  const crypto = yield* Crypto
  const uow = yield* UnitOfWork
  const nowMs = yield* Clock.currentTimeMillis
  const now = formatTimestamp(nowMs)

  const accountId = yield* ids.next("account")
  const home = accountHome(accountId)
  const adminId = yield* ids.next("administrator")
  const plan = input.plan === undefined ? noPlan : yield* changePlan(noPlan, input.plan)

  return yield* uow.transaction(
    Effect.gen(function* () {
      const account = yield* records.insert(
        home,
        ACCOUNT_TYPE,
        accountId,
        { object: "account", id: accountId, name: input.name, subdomain: input.subdomain, status: "active", created_at: now },
        [{ name: "subdomain", value: input.subdomain.toLowerCase(), global: true }]
      )
      const administrator = yield* records.insert(
        home,
        ADMINISTRATOR_TYPE,
        adminId,
        {
          object: "administrator",
          id: adminId,
          email: input.administrator.email.toLowerCase(),
          name: input.administrator.name,
          status: "active",
          password_hash: crypto.hashPassword(input.administrator.password),
          totp_secret: null,
          created_at: now,
          updated_at: now
        },
        [{ name: "email", value: input.administrator.email.toLowerCase() }]
      )
      const credentials = yield* Effect.forEach(environments, (environment) =>
        Effect.gen(function* () {
          const id = yield* ids.next("credential")
          const secret = yield* newSecret(environment)
          const data = credentialData({
            id,
            name: `Default ${environment} credential`,
            purpose: "Created with the account",
            authMode: "both",
            environment,
            expiresAt: null,
            createdBy: { id: adminId, kind: "admin" },
            policies: [{ capabilities: null, template: "full_access", resources: null }],
            secret,
            administrators: [{ administrator_id: adminId, linked_at: now }],
            now: nowMs
          })
          yield* records.insert({ accountId, environment }, CREDENTIAL_TYPE, id, data, [
            { name: SECRET_HASH_KEY, value: secret.hash, global: true }
          ])
          return { environment, id, secret: secret.value }
        })
      )
      if (input.plan !== undefined) yield* writePlan(accountId, plan)
      return { account: accountView(account), administrator: administratorOf(administrator), credentials, plan } satisfies OpenedAccount
    })
  )
})

/** Operator action: block, make unavailable, or reactivate an account. */
export const setAccountStatus = Effect.fn("Accounts.setStatus")(function* (accountId: string, status: AccountStatus) {
  const records = yield* Records
  const account = yield* loadAccount(accountId)
  if (!account) return false
  yield* records.update(accountHome(accountId), ACCOUNT_TYPE, accountId, { ...account.data, status })
  return true
})

/**
 * Operator action: change an account's plan limits (`PlanChange`: a limit to set, `null` to
 * lift one; what is not named stays), in both environments. Answers the plan now in effect, or
 * `undefined` when no account has this ID. Lowering a limit below the usage removes nothing.
 */
export const setPlanLimits = Effect.fn("Accounts.setPlanLimits")(function* (accountId: string, change: PlanChange) {
  const uow = yield* UnitOfWork
  return yield* uow.transaction(
    Effect.gen(function* () {
      if (!(yield* loadAccount(accountId))) return undefined
      const plan = yield* changePlan(yield* planOf(accountHome(accountId)), change)
      yield* writePlan(accountId, plan)
      yield* recountPlanUsage(accountId)
      return plan
    })
  )
})

/** The plan of the caller's environment with its usage, as `GET /account/usage` shows it. */
export const accountPlanUsage = (tenant: Tenant) => planUsage(tenant, accountHome(tenant.accountId))
