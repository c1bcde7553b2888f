/**
 * Retention (§8.3): the one housekeeping pass that removes from the store what the contract
 * keeps only for a time. Reads already hide what is past its time; this frees the storage.
 *
 * | §8.3 row                          | kept                    | removed here                     |
 * |-----------------------------------|-------------------------|----------------------------------|
 * | events                            | 30 days                 | `event` by `created_at`          |
 * | webhook deliveries and attempts   | 30 days                 | attempts, then deliveries        |
 * | operations and items              | 30 days from creation   | operations, then their items     |
 * | audit trail (requests, entries)   | 30 days                 | `request`, `audit_entry`         |
 * | idempotency receipts              | 48 hours                | receipts past `expiresAt`        |
 * | previous policy revisions         | 365 days                | on the credential's next write (`access/credentials.ts`) |
 *
 * Beside §8.3, files kept for a time (certificate previews, 24 hours: their `expires_at`) are
 * removed with their bytes by `sweepExpiredFiles` (uploads/file-content.ts).
 *
 * Operations go at 30 days from creation whatever their status, as the contract says (their
 * `expires_at`): one still running then (never in practice: a run lasts minutes) loses its
 * record, and its worker stops at its next item (`operation_ownership_lost`, the item rolled
 * back) instead of finishing it.
 *
 * The work is bounded: each store step removes at most one batch of a type (or of receipts),
 * each in a statement of its own, read over the index of its access path, so a pass holds
 * no long transaction and no lock another tenant waits on, however large the backlog; what a
 * pass leaves, the next one removes. Passes in several processes at once are safe: removing
 * what is already gone removes nothing.
 */
import { Clock, type Duration, Effect } from "effect"
import { EVENT_RETENTION_MS, EVENT_TYPE } from "../events/events.js"
import { WEBHOOK_ATTEMPT_TYPE, WEBHOOK_DELIVERY_RETENTION_MS, WEBHOOK_DELIVERY_TYPE } from "../events/webhook-delivery.js"
import { pruneExpiredReceipts } from "../idempotency/idempotency.js"
import { OPERATION_ITEM_TYPE, OPERATION_RETENTION_MS, OPERATION_TYPE } from "../operations/operations.js"
import { type AccessPath, housekeepingPath, Records } from "../ports/store.js"
import type { IdKind } from "../records/ids.js"
import { formatTimestamp } from "../records/time.js"
import { sweepExpiredUploads } from "../uploads/uploads.js"
import { sweepExpiredFiles } from "../uploads/file-content.js"
import { sweepExpiredExports } from "../bulk/exports.js"
import { CONFIGURATION_PLAN_RETENTION_MS, CONFIGURATION_PLAN_TYPE } from "../bulk/configuration-plans.js"
import { expireDueEnrollments } from "../learning/enrollments.js"
import { backgroundBudget, SYSTEM_ACCOUNT, yieldToEventLoop } from "../workers/background.js"
import { AUDIT_ENTRY_TYPE, AUDIT_RETENTION_MS, REQUEST_TYPE } from "./audit.js"

/** Records removed per store step. */
export const RETENTION_BATCH = 1_000
/** Steps per type and pass at most; a larger backlog is finished by the next passes. */
export const RETENTION_MAX_BATCHES = 1_000

/**
 * The record types §8.3 keeps for a time, by `created_at`, in the order a pass removes them:
 * attempts before their deliveries, operations before their items (a readable operation keeps
 * its items).
 */
const retained: ReadonlyArray<{ readonly type: string; readonly keptMs: number }> = [
  { type: REQUEST_TYPE, keptMs: AUDIT_RETENTION_MS },
  { type: AUDIT_ENTRY_TYPE, keptMs: AUDIT_RETENTION_MS },
  { type: EVENT_TYPE, keptMs: EVENT_RETENTION_MS },
  { type: WEBHOOK_ATTEMPT_TYPE, keptMs: WEBHOOK_DELIVERY_RETENTION_MS },
  { type: WEBHOOK_DELIVERY_TYPE, keptMs: WEBHOOK_DELIVERY_RETENTION_MS },
  { type: OPERATION_TYPE, keptMs: OPERATION_RETENTION_MS },
  { type: OPERATION_ITEM_TYPE, keptMs: OPERATION_RETENTION_MS },
  { type: CONFIGURATION_PLAN_TYPE, keptMs: CONFIGURATION_PLAN_RETENTION_MS }
]

/**
 * The append-only streams among the retained types: records only ever added (or, for events,
 * marked), read newest first, kept for a time, whose IDs lead with their creation time. A
 * store may keep each in time slices and free a whole slice once all of it is past retention
 * (PostgreSQL: a partition per week, `packages/pg/src/streams.ts`); reads hide what is past its
 * time, so what a slice holds beyond it until then is never served.
 */
export const streamTypes: ReadonlyArray<{ readonly type: string; readonly idKind: IdKind; readonly keptMs: number }> = [
  { type: REQUEST_TYPE, idKind: "request", keptMs: AUDIT_RETENTION_MS },
  { type: AUDIT_ENTRY_TYPE, idKind: "audit_entry", keptMs: AUDIT_RETENTION_MS },
  { type: EVENT_TYPE, idKind: "event", keptMs: EVENT_RETENTION_MS },
  { type: WEBHOOK_ATTEMPT_TYPE, idKind: "webhook_delivery_attempt", keptMs: WEBHOOK_DELIVERY_RETENTION_MS }
]

/** What retention reads across tenants: each retained type by `created_at`. */
export const retentionAccessPaths: ReadonlyArray<AccessPath> = retained.map(({ type }) =>
  housekeepingPath(type, [], [{ field: "created_at", kind: "text" }])
)

/** Remove the records of `type` created before `before` (epoch ms), in every tenant, batch by batch. */
export const pruneCreatedBefore = Effect.fn("Retention.pruneType")(function* (type: string, before: number) {
  const records = yield* Records
  const cutoff = formatTimestamp(before)
  let removed = 0
  for (let step = 0; step < RETENTION_MAX_BATCHES; step++) {
    const n = yield* records.prune(type, "created_at", cutoff, RETENTION_BATCH)
    removed += n
    if (n < RETENTION_BATCH) break
    // A turn of the event loop between batches: requests are read between units of work.
    yield* yieldToEventLoop
  }
  return removed
})

export const pruneRetained = Effect.fn("Retention.prune")(function* () {
  const now = yield* Clock.currentTimeMillis
  const removed: Record<string, number> = {}
  for (const { type, keptMs } of retained) removed[type] = yield* pruneCreatedBefore(type, now - keptMs)
  removed["idempotency_receipt"] = yield* pruneExpiredReceipts()
  return removed
})

/**
 * Everything the housekeeping does, once and now: what a test clock runs after moving the time
 * (`@syllabus/testing`, the contract suite's `h().housekeeping()`).
 */
export const housekeepingPass = () =>
  Effect.all([sweepExpiredUploads(), sweepExpiredFiles(), sweepExpiredExports(), expireDueEnrollments(), pruneRetained()], { discard: true })

/**
 * A job run now and then every `interval` (from the end of a pass), each pass in a slot of the
 * process's background budget (`BackgroundBudget`, one housekeeping pass at a time); a failed
 * pass is logged and the next one comes.
 */
const every = <A, E, R>(interval: Duration.DurationInput, name: string, job: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const budget = yield* backgroundBudget
    for (;;) {
      yield* budget.run("housekeeping", SYSTEM_ACCOUNT, job).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`${name} failed`, cause)))
      yield* Effect.sleep(interval)
    }
  })

/**
 * The housekeeping every server process runs beside its workers (embedded or standalone):
 * expired upload sessions free their storage, expired files (certificate previews) lose their
 * record and bytes and due enrollments become `expired` every minute, what §8.3 no longer keeps leaves the store every hour.
 */
export const housekeepingWorker = () =>
  Effect.all([
    every("1 minute", "upload expiry", sweepExpiredUploads()),
    every("1 minute", "file expiry", sweepExpiredFiles()),
    every("1 minute", "export expiry", sweepExpiredExports()),
    every("1 minute", "enrollment expiry", expireDueEnrollments()),
    every("1 hour", "retention pruning", pruneRetained())
  ], {
    concurrency: "unbounded",
    discard: true
  })
