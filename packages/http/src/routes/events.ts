/** The public events collection and the event-type catalog (§6) over HTTP. */
import { eventTypeCatalog, getEvent, listEvents, Timestamp } from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { EventSchema, EventTypeSchema } from "../schemas.js"

const tag = "Events"

export const eventOperations = [
  defineOperation({
    id: "events.list",
    method: "GET",
    path: "/events",
    summary: "List the public events, kept 30 days",
    description: "The public events of the environment, newest first (`sort=created_at`: oldest first), kept 30 days.",
    tag,
    capability: "events.read",
    query: Schema.Struct({
      ...pageQuery("created_at"),
      type: Schema.optional(Schema.String),
      resource_type: Schema.optional(Schema.String),
      resource_id: Schema.optional(Schema.String),
      created_after: Schema.optional(Timestamp),
      created_before: Schema.optional(Timestamp)
    }),
    idempotency: "none",
    success: { status: 200, description: "A page of events.", schema: EventSchema, collection: true },
    errors: ["invalid_cursor", "cursor_expired"],
    handler: ({ query }) =>
      listEvents({
        limit: pageLimit(query.limit),
        cursor: query.cursor,
        sort: query.sort,
        type: query.type,
        resource_type: query.resource_type,
        resource_id: query.resource_id,
        created_after: query.created_after,
        created_before: query.created_before
      }).pipe(Effect.map((body) => ({ status: 200, body })))
  }),
  defineOperation({
    id: "events.get",
    method: "GET",
    path: "/events/{event_id}",
    summary: "One event, as recorded when it happened; 404 once past its 30 days.",
    tag,
    capability: "events.read",
    params: { event_id: "event" },
    idempotency: "none",
    success: { status: 200, description: "The event.", schema: EventSchema },
    errors: [],
    handler: ({ path }) => getEvent(path.event_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "event_types.list",
    method: "GET",
    path: "/event-types",
    summary: "The catalog of public events of this release: type, version, visibility and payload keys.",
    tag,
    capability: "authenticated",
    idempotency: "none",
    success: { status: 200, description: "Every event type at once.", schema: EventTypeSchema, collection: true },
    errors: [],
    handler: () =>
      Effect.succeed({
        status: 200,
        body: {
          data: eventTypeCatalog.map((e) => ({ ...e, payload_keys: [...e.payload_keys] })),
          page: { limit: eventTypeCatalog.length, next_cursor: null, prev_cursor: null }
        }
      })
  })
]
