/**
 * The audit trail (§4.5, §8.3): the request log (`/requests`, one entry per authenticated
 * call) and audit entries (`/audit-entries`, one per change, written in the unit of work of
 * the change). Account usage (`/account/usage`) is counted from the request log, so there
 * is one record of what happened and the counts cannot drift from it.
 */
import { Clock, Effect } from "effect"
import { Caller, Ids } from "../access/context.js"
import type { Anchors } from "../access/scope.js"
import { apiError, writeUnavailable } from "../errors/errors.js"
import { contractRateLimits, type RateLimits } from "../limits/rate-limit.js"
import { type Environment, type JsonObject, Records, type StoreUnavailable, type Tenant, type Where } from "../ports/store.js"
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

/** Record one call. A store failure is `audit_unavailable`. */
export const logRequest = (tenant: Tenant, entry: RequestLogEntry) =>
  Effect.flatMap(Records, (records) => records.insert(tenant, REQUEST_TYPE, entry.id, entry as unknown as JsonObject)).pipe(
    Effect.mapError(writeUnavailable),
    Effect.asVoid
  )

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
