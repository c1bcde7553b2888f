/**
 * Event streams (§2.3 `event_stream`, §4.3 `POST /event-streams`, §5.4, §6, §8.2,
 * open-points "Event streams (SSE)"): a stream is a stored position in the environment's
 * public events, with filters, owned by the credential that created it. Its connection
 * (`GET /event-streams/{id}/events`) sends the matching events as Server-Sent Events, in the
 * order and with the payloads of the events collection.
 *
 * Everything a connection needs lives in the stream's record, so any server process on the
 * same store can serve it: the connection holds a lease on the record (one open connection,
 * 409 `stream_busy`), renewed while open and released on close; new events are found by
 * polling the store after the stream's cursor, so an event written by one process reaches a
 * connection held by another.
 */
import { Chunk, Clock, Effect, Option, Schema, Stream } from "effect"
import { ACCOUNT_TYPE, accountHome } from "../access/accounts.js"
import type { Grant } from "../access/policies.js"
import { Caller, Ids } from "../access/context.js"
import { CREDENTIAL_TYPE, effectiveStatus } from "../access/credentials.js"
import { apiError, writeUnavailable, readUnavailable } from "../errors/errors.js"
import { type Json, type JsonObject, Records, type StoredRecord, type Tenant, type Where } from "../ports/store.js"
import { formatId, ID_EPOCH_MS, ID_SEQUENCE_BITS, isId } from "../records/ids.js"
import { paginate } from "../records/pagination.js"
import { Enum, List, Text } from "../records/schema.js"
import { DAY, formatTimestamp, SECOND } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { recordChange } from "../trail/audit.js"
import { EVENT_RETENTION_MS, EVENT_TYPE, eventForReader, eventReached } from "./events.js"
import { ChangeSignals } from "./change-signals.js"

export const EVENT_STREAM_TYPE = "event_stream"
/** §6, §8.2: 5 streams per credential, 20 per account (and environment). */
export const STREAMS_PER_CREDENTIAL = 5
export const STREAMS_PER_ACCOUNT = 20
/** A stream nobody connected to for this long expires (events are kept as long). */
export const EVENT_STREAM_IDLE_EXPIRY_MS = 30 * DAY
/** open-points: a comment line at least every 15 s. */
export const EVENT_STREAM_KEEP_ALIVE_MS = 15 * SECOND
/** A connection's lease: a process that died holding it frees the stream after this long. */
export const EVENT_STREAM_LEASE_MS = 15 * SECOND
/** How often an open connection renews its lease and saves its cursor, at least. */
const LEASE_RENEW_MS = 5 * SECOND
/** How often an open connection checks its credential, its account and its stream. */
const CHECK_MS = SECOND
/** How often an idle connection looks for new events. */
export const EVENT_STREAM_POLL_MS = 200
const BATCH = 100
/** How long after its ID is taken an event may still commit and be sent (late, out of order). */
const LATE_COMMIT_WINDOW_MS = 3 * SECOND
const LATE_LIMIT = 1000

export const eventStreamFields = [
  "object",
  "id",
  "status",
  "created_at",
  "expires_at",
  "last_seen_at",
  "connection",
  "cursor",
  "filters"
] as const

const TypeNames = List(Text({ min: 1, max: 200 }), 100)

export const CreateEventStreamBody = Schema.Struct({
  filters: Schema.optional(
    Schema.Struct({
      event_types: Schema.optional(TypeNames),
      resource_types: Schema.optional(TypeNames)
    })
  ),
  start: Schema.optional(Enum("earliest", "now"))
})
export type CreateEventStreamBody = Schema.Schema.Type<typeof CreateEventStreamBody>

/** The representation, nested objects in their documented order too (a store may reorder keys). */
export const eventStreamView = (record: StoredRecord): JsonObject => {
  const data = record.data
  const nested = (value: Json | undefined, fields: ReadonlyArray<string>): JsonObject =>
    inOrder(typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject) : {}, fields)
  const filters = (typeof data.filters === "object" && data.filters !== null ? data.filters : {}) as JsonObject
  return inOrder(
    {
      ...data,
      connection: nested(data.connection, ["connected", "since"]),
      cursor: nested(data.cursor, ["advanced_at", "last_event_id"]),
      filters: Object.fromEntries(
        (["event_types", "resource_types"] as const).flatMap((key) => (filters[key] !== undefined ? [[key, filters[key]]] : []))
      )
    },
    eventStreamFields
  )
}


/** Streams that count: not expired. */
const liveWhere = (now: number): ReadonlyArray<Where> => [{ field: "expires_at", op: "gt", value: formatTimestamp(now) }]

/** `POST /event-streams`: within the limits, a new stream positioned by `start`. */
export const createEventStream = Effect.fn("EventStreams.create")(function* (body: CreateEventStreamBody) {
  const caller = yield* Caller
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const countOf = (where: ReadonlyArray<Where>) =>
    records.count(caller.tenant, EVENT_STREAM_TYPE, where, []).pipe(
      Effect.map((groups) => groups.reduce((sum, g) => sum + g.count, 0)),
      Effect.mapError(readUnavailable)
    )
  const mine = yield* countOf([...liveWhere(now), { field: "credential_id", op: "eq", value: caller.credential.id }])
  const all = yield* countOf(liveWhere(now))
  if (mine >= STREAMS_PER_CREDENTIAL || all >= STREAMS_PER_ACCOUNT) return yield* Effect.fail(apiError("too_many_streams"))

  // Empty lists restrict nothing: they are left out, as absent ones.
  const filters: Record<string, Json> = {}
  if (body.filters?.event_types && body.filters.event_types.length > 0) filters.event_types = [...new Set(body.filters.event_types)]
  if (body.filters?.resource_types && body.filters.resource_types.length > 0) {
    filters.resource_types = [...new Set(body.filters.resource_types)]
  }
  const start = body.start ?? "earliest"
  // `now`: only events after the newest one that exists at creation.
  const newest =
    start === "now"
      ? yield* records
          .list(caller.tenant, EVENT_TYPE, { where: [], sort: { field: "id", kind: "text", direction: "desc" }, limit: 1 })
          .pipe(Effect.mapError(readUnavailable))
      : []
  const id = yield* (yield* Ids).next("event_stream")
  const at = formatTimestamp(now)
  const data = {
    object: "event_stream",
    id,
    status: "active",
    created_at: at,
    expires_at: formatTimestamp(now + EVENT_STREAM_IDLE_EXPIRY_MS),
    last_seen_at: null,
    connection: { connected: false, since: at },
    cursor: { advanced_at: null, last_event_id: null },
    filters,
    // Internal: the owner, where `start` put the stream, and the lease of its open connection.
    credential_id: caller.credential.id,
    start,
    start_after: newest[0]?.id ?? null,
    lease_owner: null,
    lease_until: null
  } satisfies JsonObject
  const record = yield* records.insert(caller.tenant, EVENT_STREAM_TYPE, id, data).pipe(Effect.mapError(writeUnavailable))
  yield* recordChange("event_stream.created", { object: "event_stream", id })
  return eventStreamView(record)
})

/** A live stream of the caller's environment, or 404. */
const loadStream = (id: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const record = yield* records.get(caller.tenant, EVENT_STREAM_TYPE, id).pipe(Effect.mapError(readUnavailable))
    if (!record || String(record.data.expires_at) <= formatTimestamp(now)) return yield* Effect.fail(apiError("not_found"))
    return record
  })

export const getEventStream = Effect.fn("EventStreams.get")(function* (id: string) {
  return eventStreamView(yield* loadStream(id))
})

/** `GET /event-streams`: the environment's streams, newest first. */
export const listEventStreams = Effect.fn("EventStreams.list")(function* (query: {
  readonly limit: number
  readonly cursor: string | undefined
}) {
  const caller = yield* Caller
  const now = yield* Clock.currentTimeMillis
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: EVENT_STREAM_TYPE,
    where: liveWhere(now),
    sort: { field: "id", kind: "text", direction: "desc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: "event_streams"
  }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  return { data: items.map(eventStreamView), page }
})

/** `DELETE /event-streams/{id}`: removed for good; an open connection notices and closes. */
export const deleteEventStream = Effect.fn("EventStreams.delete")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  yield* loadStream(id)
  yield* records.remove(caller.tenant, EVENT_STREAM_TYPE, id).pipe(Effect.mapError(writeUnavailable))
  yield* recordChange("event_stream.deleted", { object: "event_stream", id })
})

// ---------------------------------------------------------------------------------------
// The connection

export interface ConnectionOptions {
  /** The `Last-Event-ID` header: resume after that event. */
  readonly lastEventId: string | undefined
  readonly keepAliveMs?: number | undefined
  readonly pollMs?: number | undefined
}

const encoder = new TextEncoder()

/** open-points: `id:`, `event:`, `data:` the envelope as one line of JSON. */
/** One SSE message of an event, as a reader holding `grant` sees it (`eventForReader`). */
export const sseMessage = (event: JsonObject, grant: Grant): string =>
  `id: ${String(event.id)}\nevent: ${String(event.type)}\ndata: ${JSON.stringify(eventForReader(grant, event))}\n\n`

export const SSE_KEEP_ALIVE = ": keep-alive\n\n"

/** The credential that owns a connection may still use it: active, in an active account. */
const credentialStillValid = (tenant: Tenant, credentialId: string, now: number) =>
  Effect.gen(function* () {
    const records = yield* Records
    const credential = yield* records.get(tenant, CREDENTIAL_TYPE, credentialId)
    if (!credential || effectiveStatus(credential.data, now) !== "active") return false
    const account = yield* records.get(accountHome(tenant.accountId), ACCOUNT_TYPE, tenant.accountId)
    return account !== undefined && account.data.status === "active"
  })

const stringList = (value: Json | undefined): ReadonlyArray<string> | undefined =>
  Array.isArray(value) && value.length > 0 ? value.filter((v): v is string => typeof v === "string") : undefined

/**
 * `GET /event-streams/{id}/events`: check the position, take the stream's lease, and answer
 * the bytes of the connection. The stream runs until the client leaves, the stream is deleted,
 * its credential stops being valid, or the store fails; then the lease is released.
 */
export const connectEventStream = Effect.fn("EventStreams.connect")(function* (id: string, options: ConnectionOptions) {
  const caller = yield* Caller
  const records = yield* Records
  const tenant = caller.tenant
  const record = yield* loadStream(id)
  // A connection belongs to the credential that owns the stream (its revocation closes it).
  if (record.data.credential_id !== caller.credential.id) return yield* Effect.fail(apiError("not_found"))
  const now = yield* Clock.currentTimeMillis

  // Where to start: after `Last-Event-ID` (which must still be kept), else after the cursor.
  let after: string | null
  if (options.lastEventId !== undefined) {
    const lastId = options.lastEventId.trim()
    const event = isId("event", lastId)
      ? yield* records.get(tenant, EVENT_TYPE, lastId).pipe(Effect.mapError(readUnavailable))
      : undefined
    if (!event || String(event.data.created_at) < formatTimestamp(now - EVENT_RETENTION_MS)) {
      return yield* Effect.fail(apiError("cursor_expired"))
    }
    after = lastId
  } else {
    const cursor = record.data.cursor as { last_event_id?: Json } | null
    after = typeof cursor?.last_event_id === "string" ? cursor.last_event_id : null
  }
  const floor = typeof record.data.start_after === "string" ? record.data.start_after : null
  if (floor !== null && (after === null || after < floor)) after = floor

  // One open connection: take the lease, unless a live one holds it.
  const owner = caller.requestId
  const connectedAt = formatTimestamp(now)
  const lease = (data: JsonObject, at: number): JsonObject => ({
    ...data,
    lease_owner: owner,
    lease_until: formatTimestamp(at + EVENT_STREAM_LEASE_MS),
    last_seen_at: formatTimestamp(at),
    expires_at: formatTimestamp(at + EVENT_STREAM_IDLE_EXPIRY_MS)
  })
  let current = record
  for (let attempt = 0; ; attempt++) {
    const holder = current.data.lease_owner
    if (typeof holder === "string" && String(current.data.lease_until) > formatTimestamp(now)) {
      return yield* Effect.fail(apiError("stream_busy"))
    }
    const taken = yield* records
      .update(tenant, EVENT_STREAM_TYPE, id, lease({ ...current.data, connection: { connected: true, since: connectedAt } }, now), {
        expectedRevision: current.revision
      })
      .pipe(
        Effect.map((r) => Option.some(r)),
        Effect.catchTag("RevisionConflict", () => Effect.succeed(Option.none<StoredRecord>())),
        Effect.mapError(writeUnavailable)
      )
    if (Option.isSome(taken)) break
    // Someone else wrote the stream meanwhile (another connection, or a delete): look again.
    const again = yield* records.get(tenant, EVENT_STREAM_TYPE, id).pipe(Effect.mapError(readUnavailable))
    if (!again) return yield* Effect.fail(apiError("not_found"))
    if (attempt >= 3) return yield* Effect.fail(apiError("stream_busy"))
    current = again
  }

  const credentialId = caller.credential.id
  const grant = caller.grant
  const eventTypes = stringList((record.data.filters as JsonObject | null)?.event_types)
  const resourceTypes = stringList((record.data.filters as JsonObject | null)?.resource_types)
  const keepAliveMs = options.keepAliveMs ?? EVENT_STREAM_KEEP_ALIVE_MS
  const pollMs = options.pollMs ?? EVENT_STREAM_POLL_MS

  interface Position {
    readonly after: string | null
    /** The cursor to save, when it moved since the last save. */
    readonly unsaved: { readonly last_event_id: string; readonly advanced_at: string } | null
    readonly savedAt: number
    readonly checkedAt: number
    readonly sentAt: number
    readonly idle: boolean
    readonly first: boolean
    /** Completes at this process's next commit in the tenant, registered before the last read. */
    readonly wake: Effect.Effect<void>
  }

  /** Save the cursor and renew the lease, if the stream is still ours; `false` when it is not. */
  const save = (position: Position, at: number, release: boolean) =>
    Effect.gen(function* () {
      for (let attempt = 0; attempt < 3; attempt++) {
        const stored = yield* records.get(tenant, EVENT_STREAM_TYPE, id)
        if (!stored || stored.data.lease_owner !== owner) return false
        const base: JsonObject = {
          ...stored.data,
          ...(position.unsaved ? { cursor: position.unsaved } : {})
        }
        const data: JsonObject = release
          ? {
              ...base,
              lease_owner: null,
              lease_until: null,
              last_seen_at: formatTimestamp(at),
              connection: { connected: false, since: formatTimestamp(at) }
            }
          : lease(base, at)
        const written = yield* records
          .update(tenant, EVENT_STREAM_TYPE, id, data, { expectedRevision: stored.revision })
          .pipe(
            Effect.as(true),
            Effect.catchTag("RevisionConflict", () => Effect.succeed(false))
          )
        if (written) return true
      }
      return true
    })

  const step = (position: Position): Effect.Effect<Option.Option<readonly [Chunk.Chunk<Uint8Array>, Position]>, unknown, Records> =>
    Effect.gen(function* () {
      // Idle: until the next poll, or sooner when a write of the tenant commits here.
      if (!position.first && position.idle) yield* Effect.race(position.wake, Effect.sleep(pollMs))
      const at = yield* Clock.currentTimeMillis
      let next: Position = { ...position, first: false }
      const out: Array<Uint8Array> = []
      if (position.first) out.push(encoder.encode(": connected\n\n"))

      if (at - position.checkedAt >= CHECK_MS) {
        // The credential revoked, suspended or expired, or its account closed: the connection ends (§5.4).
        if (!(yield* credentialStillValid(tenant, credentialId, at))) return Option.none()
        if (position.unsaved !== null || at - position.savedAt >= LEASE_RENEW_MS) {
          // The stream deleted, or its lease lost: the connection ends.
          if (!(yield* save(position, at, false))) return Option.none()
          next = { ...next, unsaved: null, savedAt: at }
        } else {
          const stored = yield* records.get(tenant, EVENT_STREAM_TYPE, id)
          if (!stored || stored.data.lease_owner !== owner) return Option.none()
        }
        next = { ...next, checkedAt: at }
      }

      next = { ...next, wake: yield* watchTenant }
      const where: Array<Where> = [{ field: "created_at", op: "gte", value: formatTimestamp(at - EVENT_RETENTION_MS) }]
      if (eventTypes) where.push({ field: "type", op: "in", values: eventTypes })
      if (resourceTypes) where.push({ field: "resource_type", op: "in", values: resourceTypes })
      const events = yield* records.list(tenant, EVENT_TYPE, {
        where,
        sort: { field: "id", kind: "text", direction: "asc" },
        ...(next.after !== null ? { after: { value: next.after, id: next.after } } : {}),
        limit: BATCH
      })
      // An event whose ID was taken before one already sent, but committed after it was read
      // (concurrent writers, other processes): sent late rather than never.
      const previous = position.after
      const floorId = formatId("event", Math.max(1, (at - LATE_COMMIT_WINDOW_MS - ID_EPOCH_MS) * 2 ** ID_SEQUENCE_BITS))
      for (const sent of recent) if (sent <= floorId) recent.delete(sent)
      const lowest = startedAfter !== null && startedAfter > floorId ? startedAfter : floorId
      const late =
        previous !== null && lowest < previous
          ? (yield* records.list(tenant, EVENT_TYPE, {
              where: [...where, { field: "id", op: "lte", value: previous }],
              sort: { field: "id", kind: "text", direction: "asc" },
              after: { value: lowest, id: lowest },
              limit: LATE_LIMIT
            })).filter((event) => !recent.has(event.id))
          : []
      for (const event of [...late, ...events]) {
        recent.add(event.id)
        // A limited credential's stream carries the events of what it reaches only (access/scope.ts).
        if (eventReached(grant, event.data)) out.push(encoder.encode(sseMessage(event.data, grant)))
      }
      const last = events.at(-1)
      if (last) {
        next = {
          ...next,
          after: last.id,
          unsaved: { last_event_id: last.id, advanced_at: formatTimestamp(at) },
          sentAt: at,
          idle: events.length < BATCH
        }
      } else {
        next = { ...next, idle: true, ...(late.length > 0 ? { sentAt: at } : {}) }
        if (at - next.sentAt >= keepAliveMs) {
          out.push(encoder.encode(SSE_KEEP_ALIVE))
          next = { ...next, sentAt: at }
        }
      }
      return Option.some([Chunk.fromIterable(out), next] as const)
    })

  /** IDs sent by this connection in the late-commit window, and where it started. */
  const recent = new Set<string>()
  const startedAfter = after
  const signals = yield* Effect.serviceOption(ChangeSignals)
  const watchTenant: Effect.Effect<Effect.Effect<void>> = Option.isSome(signals) ? signals.value.watch(tenant) : Effect.succeed(Effect.never)
  const initial: Position = {
    after,
    unsaved: null,
    savedAt: now,
    checkedAt: now,
    sentAt: now,
    idle: false,
    first: true,
    wake: Effect.never
  }
  let latest = initial
  const context = yield* Effect.context<Records>()
  const bytes: Stream.Stream<Uint8Array> = Stream.unfoldChunkEffect(initial, (position) =>
    step(position).pipe(
      Effect.tap((result) =>
        Effect.sync(() => {
          if (Option.isSome(result)) latest = result.value[1]
        })
      ),
      // A store that fails ends the connection; the client reconnects and resumes.
      Effect.catchAllCause(() => Effect.succeed(Option.none()))
    )
  ).pipe(
    Stream.ensuring(
      Effect.gen(function* () {
        const at = yield* Clock.currentTimeMillis
        yield* save(latest, at, true)
      }).pipe(Effect.ignore)
    ),
    Stream.provideContext(context)
  )
  return bytes
})
