/**
 * Account plan limits (§7 `plan_limit_reached`): the service plan of an account caps how many
 * records of some types it may hold. Only the operator sets a plan (`create-account
 * --plan-limit`, `set-plan-limits`, or `setPlanLimits` for an embedder); no route changes it,
 * and `GET /account/usage` shows it with the usage (`planUsage`).
 *
 * Decisions (docs/plan-limits.md):
 * - What is limited (`planLimited`): products, administrators, credentials, webhooks, custom
 *   domains and replicas, each a record type. A resource without a limit in the plan is
 *   unlimited, and a new account's plan has none: the operator opts in, limit by limit.
 * - What occupies a slot: a record not in the trash; an administrator not removed; a credential
 *   not revoked (an expired one still occupies its slot until revoked or removed); a replica
 *   link not unlinked. Moving a record to the trash frees its slot; restoring it takes one
 *   again (409 when none is free).
 * - Per environment: one plan per account, applied to each environment on its own, so the
 *   sandbox refuses exactly what production would. Administrators belong to the account (they
 *   live in its production home), so they are counted once.
 * - Lowering a limit below the usage removes nothing: creates are refused until enough
 *   records are gone. What the operator places (the account's first administrator and
 *   credentials, `issue-credentials`) counts but is never refused; a replica's copies in a
 *   target account are product creates there and meet its limit.
 * - A create over the limit is 409 `plan_limit_reached`, `reason` naming the resource
 *   (`products`), the message naming the limit. The check runs inside the unit of work of the
 *   create, reading the count the writes keep (below), so concurrent creates cannot pass it
 *   together: on PostgreSQL the serializable read of every shard conflicts with another
 *   create's increment of any of them (one of the two runs again and sees the other's record);
 *   in memory the read locks the figures' (tenant, type) bucket.
 * - The count is a kept figure (`records/kept-figures.ts`): per limited type, 8 shard records
 *   kept by every write of its records, so a check reads 8 records by primary key whatever the
 *   size of the collection, and creates of an account without a limit rarely wait on one row.
 *
 * The plan itself is a record (`account_plan`, ID the account's) in each environment of the
 * account, written to both in one unit of work: a create reads its own environment's plan,
 * so no environment waits on the other's work.
 */
import { Clock, Data, Effect } from "effect"
import { apiError, writeUnavailable } from "../errors/errors.js"
import { environments, type Json, type JsonObject, Records, type Tenant, UnitOfWork } from "../ports/store.js"
import { figureId, type KeptFigures, recountFigures } from "../records/kept-figures.js"
import { formatTimestamp } from "../records/time.js"

/** The resources a plan may limit, as named in a plan and in `plan_limit_reached`'s `reason`. */
export const planResources = ["products", "administrators", "credentials", "webhooks", "domains", "replicas"] as const
export type PlanResource = (typeof planResources)[number]

/** A plan's limits: the most records of each resource an environment may hold; a resource not named is unlimited. */
export type PlanLimits = Partial<Readonly<Record<PlanResource, number>>>

/** The largest limit a plan may set (a limit is a whole number from 0). */
export const MAX_PLAN_LIMIT = 1_000_000_000

export interface Plan {
  /** The plan's name as the operator calls it (e.g. `starter`), shown to clients; null when unnamed. */
  readonly name: string | null
  readonly limits: PlanLimits
}

const isTrue = (value: Json | undefined) => value === true

interface PlanLimited {
  readonly resource: PlanResource
  /** The record type counted. */
  readonly type: string
  /** Whether a record with this data occupies a slot. */
  readonly occupies: (data: JsonObject) => boolean
  /** Kept in the account's home (production) for both environments, not in each (administrators). */
  readonly accountWide?: boolean
}

/** What each limit counts. Domains and replicas are named by their record types (`domain`, `replica`). */
export const planLimited: ReadonlyArray<PlanLimited> = [
  { resource: "products", type: "product", occupies: (data) => !isTrue(data.deleted) },
  { resource: "administrators", type: "administrator", occupies: (data) => data.status !== "removed", accountWide: true },
  { resource: "credentials", type: "credential", occupies: (data) => data.status !== "revoked" },
  { resource: "webhooks", type: "webhook", occupies: (data) => !isTrue(data.deleted) },
  { resource: "domains", type: "domain", occupies: (data) => !isTrue(data.deleted) },
  // A link is never removed: unlinking it (final) frees its slot.
  { resource: "replicas", type: "replica", occupies: (data) => data.status !== "unlinked" }
]

const limitedByType: ReadonlyMap<string, PlanLimited> = new Map(planLimited.map((limited) => [limited.type, limited]))

/** Whether creating (or restoring) a record of this type is checked against the plan. */
export const isPlanLimited = (type: string): boolean => limitedByType.has(type)

// ---------------------------------------------------------------------------------------
// The kept counts

/**
 * Shard records per limited type and environment. Every create of a limited type in a tenant
 * adds to one of them; two concurrent units of work that add to the same shard cannot both
 * commit on PostgreSQL (SERIALIZABLE: one reruns). With 8, most of 50 concurrent creates in one
 * tenant met on a shard (0.8 reruns per POST /credentials); with 64 few do, and a limit check
 * reads 64 rows by key.
 */
export const PLAN_USAGE_SHARDS = 64

/** Every counted record holds its type in `object`, which names the (single) group of its figures. */
const figuresOf = (limited: PlanLimited): KeptFigures => ({
  type: `plan_usage_${limited.type}`,
  of: limited.type,
  groupBy: "object",
  shards: PLAN_USAGE_SHARDS,
  measures: { used: (data) => (limited.occupies(data) ? 1 : 0) }
})

/** The counts the plan limits keep (registered in `registry/kept-figures.ts`). */
export const planUsageFigures: ReadonlyArray<KeptFigures> = planLimited.map(figuresOf)

/** The slots a resource's records occupy in a tenant: its shards read by primary key and summed. */
const usedSlots = (tenant: Tenant, limited: PlanLimited) =>
  Effect.gen(function* () {
    const records = yield* Records
    const figures = figuresOf(limited)
    const ids = Array.from({ length: figures.shards }, (_, shard) => figureId(limited.type, shard))
    const shards = yield* records.getMany(tenant, figures.type, ids)
    return shards.reduce((sum, shard) => sum + (typeof shard.data.used === "number" ? shard.data.used : 0), 0)
  })

// ---------------------------------------------------------------------------------------
// The plan

/** The record type of a plan (one per environment of the account, ID the account's). */
export const PLAN_TYPE = "account_plan"

/**
 * Record types a sandbox reset must keep with the types it keeps (`keptTypes`): the plan, and
 * the counts of the kept limited types (credentials), which would otherwise restart at 0 while
 * their records stay. A count of an emptied type goes with its records.
 */
export const planTypesKeptWith = (keptTypes: ReadonlyArray<string>): ReadonlyArray<string> => [
  PLAN_TYPE,
  ...planLimited.filter((limited) => keptTypes.includes(limited.type)).map((limited) => figuresOf(limited).type)
]

const limitsOf = (value: Json | undefined): PlanLimits => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return {}
  const limits: Partial<Record<PlanResource, number>> = {}
  for (const resource of planResources) {
    const limit = (value as JsonObject)[resource]
    if (typeof limit === "number") limits[resource] = limit
  }
  return limits
}

/** The plan in effect in a tenant: none stored is no limit. */
export const planOf = (tenant: Tenant) =>
  Effect.gen(function* () {
    const records = yield* Records
    const record = yield* records.get(tenant, PLAN_TYPE, tenant.accountId)
    return {
      name: typeof record?.data.name === "string" ? record.data.name : null,
      limits: limitsOf(record?.data.limits)
    } satisfies Plan
  })

/** A plan the operator asked for that cannot be set: its problem, in words. */
export class PlanLimitsInvalid extends Data.TaggedError("PlanLimitsInvalid")<{ readonly message: string }> {}

/** A change of plan: limits to set (`null` lifts one), and the name (`null` clears it); what is not named stays. */
export interface PlanChange {
  readonly name?: string | null
  readonly limits?: Partial<Readonly<Record<PlanResource, number | null>>>
}

/** A new account's plan, until the operator sets one: no name, no limit. */
export const noPlan: Plan = { name: null, limits: {} }

/** The plan after a change, or why the change cannot be made (an unknown resource, a limit out of range). */
export const changePlan = (plan: Plan, change: PlanChange): Effect.Effect<Plan, PlanLimitsInvalid> =>
  Effect.gen(function* () {
    const limits: Partial<Record<PlanResource, number>> = { ...plan.limits }
    for (const [resource, limit] of Object.entries(change.limits ?? {})) {
      if (!isPlanResource(resource)) {
        return yield* Effect.fail(new PlanLimitsInvalid({ message: `unknown plan resource ${resource} (one of ${planResources.join(", ")})` }))
      }
      if (limit === null || limit === undefined) {
        delete limits[resource]
        continue
      }
      if (!Number.isInteger(limit) || limit < 0 || limit > MAX_PLAN_LIMIT) {
        return yield* Effect.fail(new PlanLimitsInvalid({ message: `the limit of ${resource} must be a whole number from 0 to ${MAX_PLAN_LIMIT}` }))
      }
      limits[resource] = limit
    }
    const name = change.name === undefined ? plan.name : change.name
    if (name !== null && (name.trim() === "" || name.length > 100)) {
      return yield* Effect.fail(new PlanLimitsInvalid({ message: "the plan name must be 1 to 100 characters" }))
    }
    return { name, limits }
  })

export const isPlanResource = (name: string): name is PlanResource => (planResources as ReadonlyArray<string>).includes(name)

/**
 * Store an account's plan in each of its environments, in the caller's unit of work (or one of
 * its own). Operator only (`accounts.ts`: `openAccount`, `setPlanLimits`).
 */
export const writePlan = (accountId: string, plan: Plan) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const now = formatTimestamp(yield* Clock.currentTimeMillis)
    const data: JsonObject = { object: PLAN_TYPE, id: accountId, name: plan.name, limits: plan.limits, updated_at: now }
    yield* uow.transaction(
      Effect.forEach(
        environments,
        (environment) =>
          Effect.gen(function* () {
            const tenant: Tenant = { accountId, environment }
            const current = yield* records.get(tenant, PLAN_TYPE, accountId)
            if (current) yield* records.update(tenant, PLAN_TYPE, accountId, data)
            else yield* records.insert(tenant, PLAN_TYPE, accountId, data)
          }),
        { discard: true }
      )
    )
  })

/**
 * Count again, in both environments, the slots the account's records occupy: a plan set on an
 * account whose records predate the counts (a database from an earlier release) then starts
 * from the truth. In the caller's unit of work; it reads every limited record of the account.
 */
export const recountPlanUsage = (accountId: string) =>
  Effect.gen(function* () {
    const records = yield* Records
    yield* Effect.forEach(
      environments,
      (environment) => Effect.forEach(planUsageFigures, (figures) => recountFigures(records, { accountId, environment }, figures), { discard: true }),
      { discard: true }
    )
  })

// ---------------------------------------------------------------------------------------
// The rule

/** 409 `plan_limit_reached`: `reason` the resource, the message naming it and its limit. */
const limitReached = (resource: PlanResource, limit: number) =>
  apiError("plan_limit_reached", { reason: resource, params: { resource, limit } })

/**
 * One more record of `type` in `tenant` (a create, or a restore from the trash) must fit the
 * plan: else 409 `plan_limit_reached`. Run inside the unit of work that writes the record,
 * before the write. A type no plan limits, or a plan without a limit for it, passes with one
 * read (the plan).
 */
export const requirePlanSlot = (tenant: Tenant, type: string) =>
  Effect.gen(function* () {
    const limited = limitedByType.get(type)
    if (limited === undefined) return
    const limit = (yield* planOf(tenant).pipe(Effect.mapError(writeUnavailable))).limits[limited.resource]
    if (limit === undefined) return
    const used = yield* usedSlots(tenant, limited).pipe(Effect.mapError(writeUnavailable))
    if (used >= limit) return yield* Effect.fail(limitReached(limited.resource, limit))
  })

/**
 * The plan as `GET /account/usage` shows it to an environment (`tenant`): its name, and per
 * resource its limit (null: unlimited) and the slots in use; the account-wide resources
 * (administrators) are counted in the account's `home`.
 */
export const planUsage = (tenant: Tenant, home: Tenant) =>
  Effect.gen(function* () {
    const plan = yield* planOf(tenant)
    const resources = yield* Effect.forEach(planLimited, (limited) =>
      Effect.map(usedSlots(limited.accountWide ? home : tenant, limited), (used) => ({
        resource: limited.resource,
        limit: plan.limits[limited.resource] ?? null,
        used
      }))
    )
    return { name: plan.name, resources }
  })

/** What the description of a create of a limited resource says of the plan (OpenAPI). */
export const planLimitDescription = (resource: PlanResource): string => {
  const accountWide = planLimited.find((limited) => limited.resource === resource)?.accountWide === true
  const where = accountWide ? "the account" : "each environment (production and sandbox apart)"
  return `The account's plan may cap the ${resource} of ${where}: a create beyond it${accountWide ? "" : " (or a restore from the trash, where there is one)"} is 409 \`plan_limit_reached\` with \`reason\` \`${resource}\` (the message names the limit). \`GET /account/usage\` shows the limits and the slots in use; only the operator changes them.`
}

/** `planLimitDescription` of the resource a type counts in, or `undefined` for a type no plan limits. */
export const planLimitNote = (type: string): string | undefined => {
  const limited = limitedByType.get(type)
  return limited === undefined ? undefined : planLimitDescription(limited.resource)
}
