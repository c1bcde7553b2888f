/**
 * Event streams (§2.3, §4.3, §6, open-points "Event streams (SSE)") over HTTP: create, list,
 * get and delete streams, and the Server-Sent Events connection of one.
 */
import {
  connectEventStream,
  CreateEventStreamBody,
  createEventStream,
  deleteEventStream,
  getEventStream,
  listEventStreams
} from "@syllabus/core"
import { HttpServerRequest } from "@effect/platform/HttpServerRequest"
import { Effect, Option, Schema } from "effect"
import { defineOperation } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { ServerSettings } from "../services.js"

const tag = "Event streams"
const params = { event_stream_id: "event_stream" } as const

const Timestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

export const EventStreamSchema = Schema.Struct({
  object: Schema.Literal("event_stream"),
  id: Schema.String,
  status: Schema.Literal("active"),
  created_at: Timestamp,
  expires_at: Timestamp.annotations({ description: "30 days after the last connection (or the creation)." }),
  last_seen_at: Schema.NullOr(Timestamp),
  connection: Schema.Struct({
    connected: Schema.Boolean,
    since: Timestamp.annotations({ description: "When the connection opened, or closed." })
  }),
  cursor: Schema.Struct({
    advanced_at: Schema.NullOr(Timestamp),
    last_event_id: Schema.NullOr(Schema.String)
  }),
  filters: Schema.Struct({
    event_types: Schema.optional(Schema.Array(Schema.String)),
    resource_types: Schema.optional(Schema.Array(Schema.String))
  }).annotations({ description: "`{}` when the stream has no filters." })
}).annotations({ identifier: "EventStream" })

export const eventStreamOperations = [
  defineOperation({
    id: "event_streams.create",
    method: "POST",
    path: "/event-streams",
    summary: "Create an event stream, with optional filters and start",
    description:
      "Create an event stream: optional `filters` (`event_types`, `resource_types`; an empty list restricts nothing) and `start` (`earliest`, the default: also the retained events published before; `now`: only later ones). 5 per credential, 20 per account and environment. Connect to it with `GET /event-streams/{event_stream_id}/events`.",
    tag,
    capability: "events.read",
    body: CreateEventStreamBody,
    idempotency: "required",
    success: { status: 201, description: "The stream.", schema: EventStreamSchema, headers: ["Location"] },
    errors: ["too_many_streams"],
    handler: ({ body }) =>
      createEventStream(body).pipe(
        Effect.map((data) => ({ status: 201, body: { data }, headers: { location: `/api/v3/event-streams/${String(data.id)}` } }))
      )
  }),
  defineOperation({
    id: "event_streams.list",
    method: "GET",
    path: "/event-streams",
    summary: "The event streams of the environment, newest first.",
    tag,
    capability: "events.read",
    query: Schema.Struct({ limit: pageQuery().limit, cursor: pageQuery().cursor }),
    idempotency: "none",
    success: { status: 200, description: "A page of event streams.", schema: EventStreamSchema, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ query }) =>
      listEventStreams({ limit: pageLimit(query.limit), cursor: query.cursor }).pipe(Effect.map((body) => ({ status: 200, body })))
  }),
  defineOperation({
    id: "event_streams.get",
    method: "GET",
    path: "/event-streams/{event_stream_id}",
    summary: "An event stream, with its connection and cursor as they are now.",
    tag,
    capability: "events.read",
    params,
    idempotency: "none",
    success: { status: 200, description: "The stream.", schema: EventStreamSchema },
    errors: [],
    handler: ({ path }) => getEventStream(path.event_stream_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "event_streams.delete",
    method: "DELETE",
    path: "/event-streams/{event_stream_id}",
    summary: "Remove an event stream; its open connection closes within a few seconds.",
    tag,
    capability: "events.read",
    params,
    idempotency: "optional",
    success: { status: 204, description: "Removed." },
    errors: [],
    handler: ({ path }) => deleteEventStream(path.event_stream_id!).pipe(Effect.as({ status: 204, body: null }))
  }),
  defineOperation({
    id: "event_streams.events.list",
    method: "GET",
    path: "/event-streams/{event_stream_id}/events",
    summary: "Connect to an event stream (Server-Sent Events)",
    description:
      "The connection of a stream (`Accept: text/event-stream`), open to the credential that created it: the matching events in the order and with the payloads of `GET /events`, each as `id: <event id>`, `event: <type>`, `data: <envelope as one line of JSON>`, and a `: keep-alive` comment at least every 15 s. `Last-Event-ID` resumes after that event (no longer kept: 410 `cursor_expired`); without it the stream resumes after its cursor. One open connection per stream (409 `stream_busy`); it closes shortly after its credential is revoked or the stream is deleted.",
    tag,
    capability: "events.read",
    params,
    produces: "text/event-stream",
    idempotency: "none",
    success: { status: 200, description: "A stream of Server-Sent Events." },
    errors: ["stream_busy", "cursor_expired"],
    handler: ({ path }) =>
      Effect.gen(function* () {
        const settings = yield* ServerSettings
        const request = yield* Effect.serviceOption(HttpServerRequest)
        const lastEventId = Option.isSome(request) ? request.value.headers["last-event-id"] : undefined
        const stream = yield* connectEventStream(path.event_stream_id!, {
          lastEventId: lastEventId === undefined || lastEventId === "" ? undefined : lastEventId,
          keepAliveMs: settings.eventStreamKeepAliveMs,
          pollMs: settings.eventStreamPollMs
        })
        return { status: 200, body: null, stream }
      })
  })
]
