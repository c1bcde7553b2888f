/**
 * Public events (§6, open-points "Events and webhooks"): every change records one, in the
 * unit of work of the change, as the JSON the resource had at that moment. Types are
 * `<resource>.<past-tense verb>`. The events collection, streams and webhooks read these
 * records; they are never rebuilt.
 */
import { Clock, Effect } from "effect"
import { Caller, Ids } from "./context.js"
import { apiError } from "./errors.js"
import { type Json, type JsonObject, Records } from "./ports.js"
import { formatTimestamp } from "./time.js"

export const EVENT_TYPE = "event"
/** The payload version of every event type of this release. */
export const EVENT_VERSION = 1

export const eventFields = [
  "object",
  "id",
  "type",
  "version",
  "created_at",
  "environment",
  "request_id",
  "data",
  "previous_attributes"
] as const

/** The attributes of `before` that differ in `after`, with their values before. */
export const previousAttributes = (before: JsonObject, after: JsonObject): JsonObject | null => {
  const changed: Record<string, Json> = {}
  for (const [key, value] of Object.entries(before)) {
    if (JSON.stringify(value) !== JSON.stringify(after[key])) changed[key] = value
  }
  return Object.keys(changed).length > 0 ? changed : null
}

/** Record the event of a change; call it inside the change's unit of work. */
export const emitEvent = Effect.fn("emitEvent")(function* (
  type: string,
  resource: JsonObject,
  previous: JsonObject | null = null
) {
  const caller = yield* Caller
  const records = yield* Records
  const id = yield* (yield* Ids).next("event")
  const now = yield* Clock.currentTimeMillis
  const event = {
    object: "event",
    id,
    type,
    version: EVENT_VERSION,
    created_at: formatTimestamp(now),
    environment: caller.tenant.environment,
    request_id: caller.requestId,
    data: { object: resource },
    previous_attributes: previous,
    // Indexed copies for filtering, not part of the envelope.
    resource_type: typeof resource.object === "string" ? resource.object : null,
    resource_id: typeof resource.id === "string" ? resource.id : null
  } satisfies JsonObject
  yield* records
    .insert(caller.tenant, EVENT_TYPE, id, event)
    .pipe(Effect.mapError((cause) => apiError("audit_unavailable", { internal: cause })))
})
