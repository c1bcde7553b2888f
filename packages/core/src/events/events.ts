/**
 * Public events (§6, open-points "Events and webhooks"): every change records one, in the
 * unit of work of the change, as the JSON the resource had at that moment. Types are
 * `<resource>.<past-tense verb>`. The events collection, streams and webhooks read these
 * records; they are never rebuilt.
 */
import { Clock, Effect } from "effect"
import { Caller, Ids } from "../access/context.js"
import type { Grant } from "../access/policies.js"
import { type Anchors, type PersonalField, type PersonalMark, personalMarks, reachOf, reaches, redactPersonal, storedAnchors } from "../access/scope.js"
import { apiError, writeUnavailable, readUnavailable } from "../errors/errors.js"
import { type AccessPath, type Json, type JsonObject, listPath, Records, type StoredRecord } from "../ports/store.js"
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
  previous: JsonObject | null = null,
  /** The resource's anchors (access/scope.ts), kept so a limited reader sees only the events of what it reaches. */
  anchors: Anchors = typeof resource.id === "string" ? [resource.id] : [],
  /** Where the resource holds personal data: marked on the event, so a reader without the permission sees it null. */
  personal: ReadonlyArray<PersonalField> = []
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
    resource_id: typeof resource.id === "string" ? resource.id : null,
    scope_ids: [...anchors],
    personal_marks: { object: marksJson(personalMarks(personal, resource)), previous: marksJson(personalMarks(personal, previous)) }
  } satisfies JsonObject
  yield* records
    .insert(caller.tenant, EVENT_TYPE, id, event)
    .pipe(Effect.mapError(writeUnavailable))
  return eventView(event)
})


export const eventView = (data: JsonObject): JsonObject => inOrder(data, eventFields)

const marksJson = (marks: ReadonlyArray<PersonalMark>): Json => marks.map((mark) => ({ path: [...mark.path], user: mark.user }))

const marksOf = (value: Json | undefined): ReadonlyArray<PersonalMark> =>
  Array.isArray(value)
    ? value.flatMap((mark) => {
        if (mark === null || typeof mark !== "object" || Array.isArray(mark)) return []
        const { path, user } = mark as JsonObject
        return Array.isArray(path) ? [{ path: path.map(String), user: typeof user === "string" ? user : null }] : []
      })
    : []

/**
 * An event as a reader holding `grant` sees it: the envelope, with the personal data of its
 * resource (and of `previous_attributes`) null where the grant may not see that person's
 * (`users.read_personal`; the marks were kept when the event was recorded).
 */
export const eventForReader = (grant: Grant, data: JsonObject): JsonObject => {
  const view = eventView(data)
  const marks = (data.personal_marks ?? null) as JsonObject | null
  if (marks === null || typeof marks !== "object") return view
  const object = ((view.data ?? null) as JsonObject | null)?.object
  const previous = view.previous_attributes
  return {
    ...view,
    data: object !== null && typeof object === "object" && !Array.isArray(object)
      ? { ...(view.data as JsonObject), object: redactPersonal(object as JsonObject, marksOf(marks.object), grant) }
      : (view.data ?? null),
    previous_attributes: previous !== null && typeof previous === "object" && !Array.isArray(previous)
      ? redactPersonal(previous as JsonObject, marksOf(marks.previous), grant)
      : (previous ?? null)
  }
}

/** The capability that reads events (the collection, streams). */
export const EVENTS_READ = "events.read"

/** Does the grant's `events.read` reach this event's resource (its anchors, kept when it was recorded)? */
export const eventReached = (grant: Grant, event: JsonObject): boolean =>
  reaches(grant, EVENTS_READ, storedAnchors(event, typeof event.resource_id === "string" ? event.resource_id : null))

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
  const reach = reachOf(caller.grant, EVENTS_READ)
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: EVENT_TYPE,
    where,
    // A limited credential sees the events of the records it reaches (their anchors, kept on each event).
    ...(reach === "all" ? {} : { visible: (event: StoredRecord) => eventReached(caller.grant, event.data) }),
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
  return { data: items.map((r) => eventForReader(caller.grant, r.data)), page }
})

/** `GET /events/{id}`: 404 once the event is past retention. */
export const getEvent = Effect.fn("Events.get")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const event = yield* records.get(caller.tenant, EVENT_TYPE, id).pipe(Effect.mapError(readUnavailable))
  if (!event || Date.parse(String(event.data.created_at)) < now - EVENT_RETENTION_MS || !eventReached(caller.grant, event.data)) {
    return yield* Effect.fail(apiError("not_found"))
  }
  return eventForReader(caller.grant, event.data)
})
