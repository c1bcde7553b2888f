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
 * Operations go at 30 days from creation whatever their status, as the contract says (their
 * `expires_at`): one still running then (never in practice: a run lasts minutes) loses its
 * record, and its worker stops at its next item (`operation_ownership_lost`, the item rolled
 * back) instead of finishing it.
 *
 * The work is bounded: each store step removes at most one slice of a type's history (an
 * hour of it) or one batch of receipts, each in a statement of its own, so a pass holds no
 * long transaction and no lock another tenant waits on, however large the backlog. Passes in
 * several processes at once are safe: removing what is already gone removes nothing.
 */
import { Clock, Effect } from "effect"
import { EVENT_RETENTION_MS, EVENT_TYPE } from "../events/events.js"
import { WEBHOOK_ATTEMPT_TYPE, WEBHOOK_DELIVERY_RETENTION_MS, WEBHOOK_DELIVERY_TYPE } from "../events/webhook-delivery.js"
import { pruneExpiredReceipts } from "../idempotency/idempotency.js"
import { OPERATION_ITEM_TYPE, OPERATION_RETENTION_MS, OPERATION_TYPE } from "../operations/operations.js"
import { Records } from "../ports/store.js"
import { formatTimestamp, HOUR } from "../records/time.js"
import { AUDIT_ENTRY_TYPE, AUDIT_RETENTION_MS, REQUEST_TYPE } from "./audit.js"

/** The most of a type's history (by `created_at`) one store step removes. */
export const RETENTION_SLICE_MS = HOUR
/** Steps per type and pass at most; a larger backlog is finished by the next passes. */
export const RETENTION_MAX_SLICES = 240

/**
 * Remove the records of `type` created before `before` (epoch ms), in every tenant, one
 * slice at a time from the oldest: each step finds the oldest record still due (IDs lead
 * with their creation time, so `id` order is age order) and removes what is older than an
 * hour after it. Every step removes at least the record it found, so the loop always ends.
 */
export const pruneCreatedBefore = Effect.fn("Retention.pruneType")(function* (type: string, before: number) {
  const records = yield* Records
  const cutoff = formatTimestamp(before)
  let removed = 0
  for (let slice = 0; slice < RETENTION_MAX_SLICES; slice++) {
    const [oldest] = yield* records.scan(type, [{ field: "created_at", op: "lt", value: cutoff }], 1)
    if (oldest === undefined) break
    const from = Date.parse(String(oldest.data.created_at))
    const bound = Number.isFinite(from) ? Math.min(from + RETENTION_SLICE_MS, before) : before
    removed += yield* records.prune(type, "created_at", formatTimestamp(bound))
    if (bound >= before) break
  }
  return removed
})

export const pruneRetained = Effect.fn("Retention.prune")(function* () {
  const now = yield* Clock.currentTimeMillis
  const requests = yield* pruneCreatedBefore(REQUEST_TYPE, now - AUDIT_RETENTION_MS)
  const auditEntries = yield* pruneCreatedBefore(AUDIT_ENTRY_TYPE, now - AUDIT_RETENTION_MS)
  const events = yield* pruneCreatedBefore(EVENT_TYPE, now - EVENT_RETENTION_MS)
  // Attempts, then the deliveries they belong to.
  const webhookAttempts = yield* pruneCreatedBefore(WEBHOOK_ATTEMPT_TYPE, now - WEBHOOK_DELIVERY_RETENTION_MS)
  const webhookDeliveries = yield* pruneCreatedBefore(WEBHOOK_DELIVERY_TYPE, now - WEBHOOK_DELIVERY_RETENTION_MS)
  // Operations first, then their items (created with them): a readable operation keeps its items.
  const operations = yield* pruneCreatedBefore(OPERATION_TYPE, now - OPERATION_RETENTION_MS)
  const operationItems = yield* pruneCreatedBefore(OPERATION_ITEM_TYPE, now - OPERATION_RETENTION_MS)
  const idempotencyReceipts = yield* pruneExpiredReceipts()
  return { requests, auditEntries, events, webhookAttempts, webhookDeliveries, operations, operationItems, idempotencyReceipts }
})
