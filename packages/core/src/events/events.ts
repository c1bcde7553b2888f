/**
 * Public events (§6, open-points "Events and webhooks"): every change records one, in the
 * unit of work of the change, as the JSON the resource had at that moment. Types are
 * `<resource>.<past-tense verb>`. The events collection, streams and webhooks read these
 * records; they are never rebuilt.
 */
import { Clock, Effect } from "effect"
import { Caller, Ids } from "../access/context.js"
import { apiError, writeUnavailable, readUnavailable } from "../errors/errors.js"
import { type AccessPath, type Json, type JsonObject, listPath, Records } from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import { DAY, formatTimestamp } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { type RetainedQuery, retainedBinding, retainedWhere } from "../trail/retained.js"

export const EVENT_TYPE = "event"
/** The payload version of every event type of this release. */
export const EVENT_VERSION = 1
/** Events are kept 30 days (§6, §8.3). */
export const EVENT_RETENTION_MS = 30 * DAY

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
    .pipe(Effect.mapError(writeUnavailable))
  return eventView(event)
})


export const eventView = (data: JsonObject): JsonObject => inOrder(data, eventFields)

/** `GET /events` filters by one of these, newest or oldest first (by `id`, creation order). */
const eventFilterFields = ["type", "resource_type", "resource_id"] as const

export const eventsAccessPaths: ReadonlyArray<AccessPath> = eventFilterFields.map((field) =>
  listPath(EVENT_TYPE, [field], [{ field: "id", kind: "text" }])
)

/** `GET /events`: newest first by default, filtered by type and resource, 30 days back. */
export const listEvents = Effect.fn("Events.list")(function* (query: {
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
  readonly type: string | undefined
  readonly resource_type: string | undefined
  readonly resource_id: string | undefined
  readonly created_after: string | undefined
  readonly created_before: string | undefined
}) {
  const caller = yield* Caller
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const retainedSince = formatTimestamp(now - EVENT_RETENTION_MS)
  const retained: RetainedQuery = {
    created_after: query.created_after,
    created_before: query.created_before,
    filters: { type: query.type, resource_type: query.resource_type, resource_id: query.resource_id }
  }
  const where = retainedWhere(retained, retainedSince)
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: EVENT_TYPE,
    where,
    sort: { field: "id", kind: "text", direction: query.sort === "created_at" ? "asc" : "desc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `events:${retainedBinding(retained)}`,
    // A cursor on an event that is no longer kept: the client missed events, and must know (410).
    checkPosition: (id) =>
      records.get(caller.tenant, EVENT_TYPE, id).pipe(
        Effect.mapError(readUnavailable),
        Effect.flatMap((event) =>
          !event || String(event.data.created_at) < retainedSince ? Effect.fail(apiError("cursor_expired")) : Effect.void
        )
      )
  }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  return { data: items.map((r) => eventView(r.data)), page }
})

/** `GET /events/{id}`: 404 once the event is past retention. */
export const getEvent = Effect.fn("Events.get")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const event = yield* records.get(caller.tenant, EVENT_TYPE, id).pipe(Effect.mapError(readUnavailable))
  if (!event || Date.parse(String(event.data.created_at)) < now - EVENT_RETENTION_MS) return yield* Effect.fail(apiError("not_found"))
  return eventView(event.data)
})
