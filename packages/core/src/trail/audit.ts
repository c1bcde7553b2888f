/**
 * The audit trail (§4.5, §8.3): the request log (`/requests`, one entry per authenticated
 * call) and audit entries (`/audit-entries`, one per change, written in the unit of work of
 * the change). Account usage (`/account/usage`) is counted from the request log, so there
 * is one record of what happened and the counts cannot drift from it.
 */
import { Cause, Clock, Deferred, Effect, type Either } from "effect"
import { Caller, Ids } from "../access/context.js"
import type { Anchors } from "../access/scope.js"
import { apiError, type ApiError, writeUnavailable } from "../errors/errors.js"
import { contractRateLimits, type RateLimits } from "../limits/rate-limit.js"
import { type Environment, type JsonObject, Records, type StoreUnavailable, type Tenant, UniqueViolation, type Where } from "../ports/store.js"
import { isId } from "../records/ids.js"
import { DAY, formatTimestamp, HOUR } from "../records/time.js"

export const REQUEST_TYPE = "request"
export const AUDIT_ENTRY_TYPE = "audit_entry"
export const AUDIT_RETENTION_MS = 30 * DAY

/** One authenticated call, as the request log keeps it. */
export interface RequestLogEntry {
  readonly object: "request"
  readonly id: string
  readonly method: string
  readonly path: string
  readonly operation_id: string | null
  readonly status: number
  /** `success`, `client_error`, `rate_limited` or `server_error`. */
  readonly outcome: string
  readonly error_code: string | null
  readonly credential_id: string
  readonly administrator_id: string | null
  readonly client_request_id: string | null
  readonly idempotency_key: string | null
  readonly idempotent_replayed: boolean
  readonly duration_ms: number
  readonly environment: Environment
  readonly created_at: string
}

/** Fields of a request-log entry, in order. */
export const requestFields: ReadonlyArray<keyof RequestLogEntry> = [
  "object",
  "id",
  "method",
  "path",
  "operation_id",
  "status",
  "outcome",
  "error_code",
  "credential_id",
  "administrator_id",
  "client_request_id",
  "idempotency_key",
  "idempotent_replayed",
  "duration_ms",
  "environment",
  "created_at"
]

export const auditEntryFields = [
  "object",
  "id",
  "action",
  "resource_type",
  "resource_id",
  "actor",
  "request_id",
  "changes",
  "environment",
  "created_at"
] as const

export const outcomeOf = (status: number): string =>
  status === 429 ? "rate_limited" : status >= 500 ? "server_error" : status >= 400 ? "client_error" : "success"

/** The most entries of one group commit of the request log. */
const REQUEST_LOG_BATCH = 500

/**
 * The request log, in group commits: a call is answered only once its entry is stored (a
 * failure is `audit_unavailable`, and a read then fails closed), and the entries of concurrent
 * calls are written together. The first call of an idle store writes at once,
 * alone (no timer to wait for); calls arriving while a write is in flight queue, and go in the
 * next write as one `insertMany` per tenant. Under load, one statement stores many requests'
 * entries instead of each request committing its own.
 *
 * Only for a store whose commits are worth sharing (`Records.groupCommit`: PostgreSQL); a store
 * in memory inserts each entry at once, as a queue would only add work there. One writer per
 * app (`makeApp`); its queues are per `Records` instance, so one writer serves any store.
 */
export const makeRequestLogWriter = () => {
  interface Pending {
    readonly tenant: Tenant
    readonly entry: RequestLogEntry
    readonly stored: Deferred.Deferred<void, ApiError<"audit_unavailable">>
  }
  interface Line {
    readonly queue: Array<Pending>
    draining: boolean
  }
  const lines = new WeakMap<object, Line>()
  const tenantKey = (tenant: Tenant) => `${tenant.accountId}\u0000${tenant.environment}`

  /** Write one batch of what is queued (at most `REQUEST_LOG_BATCH`, one `insertMany` per tenant) and answer its waiters. */
  const writeBatch = (records: Records["Type"], line: Line) =>
    Effect.gen(function* () {
      const batch = line.queue.splice(0, REQUEST_LOG_BATCH)
      const byTenant = new Map<string, Array<Pending>>()
      for (const pending of batch) {
        const key = tenantKey(pending.tenant)
        const group = byTenant.get(key)
        if (group === undefined) byTenant.set(key, [pending])
        else group.push(pending)
      }
      /** Store `pending`'s entries in one statement; its waiters answered. */
      const write = (pending: ReadonlyArray<Pending>) =>
        records
          .insertMany(pending[0]!.tenant, REQUEST_TYPE, pending.map((p) => ({ id: p.entry.id, data: p.entry as unknown as JsonObject })))
          .pipe(
            // A defect too: a waiter is never left without an answer.
            Effect.catchAllCause((cause) => Effect.fail(Cause.squash(cause))),
            Effect.either
          )
      const answer = (pending: Pending, written: Either.Either<unknown, unknown>) =>
        written._tag === "Right" ? Deferred.succeed(pending.stored, undefined) : Deferred.fail(pending.stored, writeUnavailable(written.left))
      for (const group of byTenant.values()) {
        const written = yield* write(group)
        // An ID another process made in the same millisecond refuses the whole statement: each
        // entry alone then, so that only the call whose ID was taken fails.
        if (written._tag === "Left" && written.left instanceof UniqueViolation && group.length > 1) {
          for (const pending of group) yield* answer(pending, yield* write([pending]))
          continue
        }
        for (const pending of group) yield* answer(pending, written)
      }
    })

  /** Batches until the queue is empty, then the line is idle again. */
  const drain = (records: Records["Type"], line: Line): Effect.Effect<void> =>
    Effect.suspend(() =>
      line.queue.length === 0 ? Effect.sync(() => (line.draining = false)) : Effect.zipRight(writeBatch(records, line), drain(records, line))
    )

  return (tenant: Tenant, entry: RequestLogEntry): Effect.Effect<void, ApiError<"audit_unavailable">, Records> =>
    Effect.gen(function* () {
      const records = yield* Records
      if (records.groupCommit !== true) {
        return yield* records.insert(tenant, REQUEST_TYPE, entry.id, entry as unknown as JsonObject).pipe(Effect.mapError(writeUnavailable), Effect.asVoid)
      }
      let line = lines.get(records)
      if (line === undefined) {
        line = { queue: [], draining: false }
        lines.set(records, line)
      }
      const stored = yield* Deferred.make<void, ApiError<"audit_unavailable">>()
      line.queue.push({ tenant, entry, stored })
      if (!line.draining) {
        line.draining = true
        // The caller of an idle line writes its own batch, in its fiber (uninterruptible: the
        // batch may hold others' entries); what queued meanwhile is written by a fiber of its
        // own, so that no caller's answer waits for later callers' writes.
        const current = line
        yield* Effect.uninterruptible(
          Effect.zipRight(
            writeBatch(records, current),
            Effect.suspend(() =>
              current.queue.length === 0 ? Effect.sync(() => (current.draining = false)) : Effect.asVoid(Effect.forkDaemon(drain(records, current)))
            )
          )
        )
      }
      yield* Deferred.await(stored)
    })
}

/**
 * Record one change made by the caller. Call it inside the unit of work of the change: if
 * it cannot be written, the change is not made either.
 */
export const recordChange = Effect.fnUntraced(function* (
  action: string,
  resource: { readonly object: string; readonly id: string },
  changes: JsonObject | null = null,
  /** The resource's anchors (access/scope.ts), kept so a limited reader sees only the entries of what it reaches. */
  anchors: Anchors = [resource.id]
) {
  const caller = yield* Caller
  const records = yield* Records
  const id = yield* (yield* Ids).next("audit_entry")
  const now = yield* Clock.currentTimeMillis
  const entry = {
    object: "audit_entry",
    id,
    action,
    resource_type: resource.object,
    resource_id: resource.id,
    actor: {
      // A payment gateway's signed notification acts as the gateway (sales/gateway-notifications.ts).
      kind: caller.human ? "admin" : isId("gateway", caller.credential.id) ? "gateway" : "credential",
      credential_id: caller.credential.id,
      administrator_id: caller.human?.adminId ?? null
    },
    request_id: caller.requestId,
    changes,
    environment: caller.tenant.environment,
    created_at: formatTimestamp(now),
    scope_ids: [...anchors]
  } satisfies JsonObject
  yield* records
    .insert(caller.tenant, AUDIT_ENTRY_TYPE, id, entry)
    .pipe(Effect.mapError(writeUnavailable))
})

export const usageWindows = [
  { name: "1h", ms: HOUR },
  { name: "24h", ms: DAY },
  { name: "7d", ms: 7 * DAY },
  { name: "30d", ms: 30 * DAY }
] as const

/** `GET /account/usage`: calls per window, per outcome and per credential, with the limits in effect. */
export const accountUsage = (limits: RateLimits = contractRateLimits, limiterEnabled = true) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const windows = yield* Effect.forEach(usageWindows, (window) =>
      Effect.gen(function* () {
        const since: Where = { field: "created_at", op: "gte", value: formatTimestamp(now - window.ms) }
        const groups = yield* records.count(caller.tenant, REQUEST_TYPE, [since], ["outcome", "credential_id"])
        const emptyOutcomes = (): Record<string, number> => ({ success: 0, client_error: 0, rate_limited: 0, server_error: 0 })
        const byOutcome = emptyOutcomes()
        const byCredential = new Map<string, { requests: number; by_outcome: Record<string, number> }>()
        let total = 0
        for (const group of groups) {
          const [outcome, credentialId] = group.key as ReadonlyArray<string>
          total += group.count
          byOutcome[outcome!] = (byOutcome[outcome!] ?? 0) + group.count
          const row = byCredential.get(credentialId!) ?? { requests: 0, by_outcome: emptyOutcomes() }
          row.requests += group.count
          row.by_outcome[outcome!] = (row.by_outcome[outcome!] ?? 0) + group.count
          byCredential.set(credentialId!, row)
        }
        return {
          window: window.name,
          from: formatTimestamp(now - window.ms),
          to: formatTimestamp(now),
          requests: total,
          by_outcome: byOutcome,
          by_credential: [...byCredential.entries()]
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([credential_id, row]) => ({ credential_id, ...row }))
        }
      })
    ).pipe(Effect.mapError(writeUnavailable))
    const env = caller.tenant.environment
    return {
      object: "account_usage",
      environment: env,
      generated_at: formatTimestamp(now),
      windows,
      limits: {
        enabled: limiterEnabled,
        window_seconds: 60,
        origin: limits.origin,
        instance: limits.account[env],
        key: limits.credential[env]
      }
    }
  })
