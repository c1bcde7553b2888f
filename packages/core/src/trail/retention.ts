/**
 * Retention (§8.3): the audit trail and events are kept 30 days. Reads already hide older
 * entries; this removes them from the store.
 */
import { Clock, Effect } from "effect"
import { EVENT_RETENTION_MS, EVENT_TYPE } from "../events/events.js"
import { Records } from "../ports/store.js"
import { formatTimestamp } from "../records/time.js"
import { AUDIT_ENTRY_TYPE, AUDIT_RETENTION_MS, REQUEST_TYPE } from "./audit.js"

export const pruneRetained = Effect.fn("Retention.prune")(function* () {
  const records = yield* Records
  const before = formatTimestamp((yield* Clock.currentTimeMillis) - AUDIT_RETENTION_MS)
  const requests = yield* records.prune(REQUEST_TYPE, "created_at", before)
  const auditEntries = yield* records.prune(AUDIT_ENTRY_TYPE, "created_at", before)
  const now = yield* Clock.currentTimeMillis
  const events = yield* records.prune(EVENT_TYPE, "created_at", formatTimestamp(now - EVENT_RETENTION_MS))
  return { requests, auditEntries, events }
})
