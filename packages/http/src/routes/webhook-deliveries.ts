/**
 * Deliveries of a webhook and their attempts (§2.3 `webhook_delivery_attempt`, §4.3, §6,
 * §8.3; paths of open-points "Routes"), and replays.
 *
 * `POST /webhooks/{id}/replays` answers 202 with the deliveries it queued (a collection, all
 * at once): the sending is asynchronous (each delivery then has its own status and
 * attempts, which is what a client follows), while the work of the request itself is
 * bounded (at most 1,000 events, one record each) and done in its unit of work, so no
 * separate operation resource is needed and the client has the delivery IDs at once.
 */
import {
  getWebhookAttempt,
  getWebhookDelivery,
  List,
  listWebhookAttempts,
  listWebhookDeliveries,
  PublicId,
  replayWebhookEvents,
  Timestamp
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"

const tag = "Webhooks"
const base = "/webhooks/{webhook_id}/deliveries"
const deliveryParams = { webhook_id: "webhook", webhook_delivery_id: "webhook_delivery" } as const
const stamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })
const nullableStamp = Schema.NullOr(stamp)

const DeliverySchema = Schema.Struct({
  object: Schema.Literal("webhook_delivery"),
  id: Schema.String,
  webhook_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  payload_version: Schema.Int,
  origin: Schema.Literal("automatic", "replay").annotations({ description: "`replay`: made by `POST /webhooks/{id}/replays`." }),
  status: Schema.Literal("pending", "succeeded", "dead").annotations({
    description: "`pending` until an attempt gets a 2xx (`succeeded`) or the eighth attempt fails (`dead`)."
  }),
  attempt_count: Schema.Int,
  next_attempt_at: nullableStamp,
  created_at: stamp,
  updated_at: stamp,
  finished_at: nullableStamp,
  expires_at: stamp.annotations({ description: "30 days after creation; a 404 afterwards." })
}).annotations({
  identifier: "WebhookDelivery",
  description:
    "One event for one webhook: the JSON recorded when the event occurred, sent until a 2xx within `timeout_ms`; retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, then `dead`."
})

const AttemptSchema = Schema.Struct({
  object: Schema.Literal("webhook_delivery_attempt"),
  id: Schema.String,
  delivery_id: Schema.String,
  number: Schema.Int,
  origin: Schema.Literal("automatic", "replay"),
  started_at: stamp,
  finished_at: stamp,
  next_attempt_at: nullableStamp.annotations({ description: "When the next attempt is due after this failed one; `null` after the last." }),
  http_status: Schema.NullOr(Schema.Int),
  duration_ms: Schema.Int,
  transport_error: Schema.NullOr(
    Schema.String.annotations({
      description:
        "Why no response came: `timeout`, `destination_not_allowed` (the name resolves to a private, loopback, link-local or metadata address), `dns_failure`, `connection_refused`, `connection_reset`, `tls_error`, `network_error`."
    })
  ),
  response_excerpt: Schema.NullOr(
    Schema.String.annotations({
      description: "The first 200 characters of the response body, masked: e-mail addresses and tokens with digits (keys, card numbers) hidden."
    })
  )
}).annotations({ identifier: "WebhookDeliveryAttempt" })

const ReplayBody = Schema.Struct({
  event_ids: Schema.optional(
    List(PublicId("event")).pipe(Schema.filter((ids) => ids.length >= 1 || "too_short|min=1")).annotations({
      description: "Events to send again (retained, and received by this webhook); else a range."
    })
  ),
  created_after: Schema.optional(Timestamp.annotations({ description: "Range: events created at or after this time." })),
  created_before: Schema.optional(Timestamp.annotations({ description: "Range: events created before this time." }))
}).annotations({
  identifier: "WebhookReplayBody",
  description: "Either `event_ids` or a range (`created_after` and/or `created_before`) of at most 1,000 events the webhook receives."
})

export const webhookDeliveryRoutes: ReadonlyArray<Operation> = [
  defineOperation({
    id: "webhooks.deliveries.list",
    method: "GET",
    path: base,
    summary: "List the deliveries of a webhook, kept 30 days",
    description: "The deliveries of a webhook, newest first (`sort=created_at`: oldest first), kept 30 days.",
    tag,
    capability: "webhooks.read",
    scopedBy: "webhook_id",
    params: { webhook_id: "webhook" },
    query: Schema.Struct({
      ...pageQuery("created_at"),
      status: Schema.optional(Schema.Literal("pending", "succeeded", "dead").annotations({ message: () => "invalid_value|allowed=pending, succeeded, dead" })),
      event_id: Schema.optional(Schema.String)
    }),
    idempotency: "none",
    success: { status: 200, description: "A page of deliveries.", schema: DeliverySchema, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ path, query }) =>
      listWebhookDeliveries(path.webhook_id!, {
        limit: pageLimit(query.limit),
        cursor: query.cursor,
        sort: query.sort,
        status: query.status,
        event_id: query.event_id
      }).pipe(Effect.map((body) => ({ status: 200, body })))
  }),
  defineOperation({
    id: "webhooks.deliveries.get",
    method: "GET",
    path: `${base}/{webhook_delivery_id}`,
    summary: "One delivery of a webhook; 404 after 30 days.",
    tag,
    capability: "webhooks.read",
    scopedBy: "webhook_id",
    params: deliveryParams,
    idempotency: "none",
    success: { status: 200, description: "The delivery.", schema: DeliverySchema },
    errors: [],
    handler: ({ path }) =>
      getWebhookDelivery(path.webhook_id!, path.webhook_delivery_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "webhooks.deliveries.attempts.list",
    method: "GET",
    path: `${base}/{webhook_delivery_id}/attempts`,
    summary: "The attempts of a delivery, first to last.",
    tag,
    capability: "webhooks.read",
    scopedBy: "webhook_id",
    params: deliveryParams,
    query: Schema.Struct({ limit: pageQuery().limit, cursor: pageQuery().cursor }),
    idempotency: "none",
    success: { status: 200, description: "A page of attempts.", schema: AttemptSchema, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ path, query }) =>
      listWebhookAttempts(path.webhook_id!, path.webhook_delivery_id!, { limit: pageLimit(query.limit), cursor: query.cursor }).pipe(
        Effect.map((body) => ({ status: 200, body }))
      )
  }),
  defineOperation({
    id: "webhooks.deliveries.attempts.get",
    method: "GET",
    path: `${base}/{webhook_delivery_id}/attempts/{attempt_id}`,
    summary: "Get one attempt of a delivery",
    description: "One attempt of a delivery; `response_excerpt` is masked.",
    tag,
    capability: "webhooks.read",
    scopedBy: "webhook_id",
    params: { ...deliveryParams, attempt_id: "webhook_delivery_attempt" },
    idempotency: "none",
    success: { status: 200, description: "The attempt.", schema: AttemptSchema },
    errors: [],
    handler: ({ path }) =>
      getWebhookAttempt(path.webhook_id!, path.webhook_delivery_id!, path.attempt_id!).pipe(
        Effect.map((data) => ({ status: 200, body: { data } }))
      )
  }),
  defineOperation({
    id: "webhooks.replays.create",
    method: "POST",
    path: "/webhooks/{webhook_id}/replays",
    summary: "Send events to a webhook again",
    description:
      "Send events again, as recorded when they occurred: `event_ids`, or a range of at most 1,000 events. Answers 202 with the queued deliveries (origin `replay`).",
    tag,
    capability: "webhooks.update",
    scopedBy: "webhook_id",
    params: { webhook_id: "webhook" },
    body: ReplayBody,
    idempotency: "required",
    success: { status: 202, description: "The deliveries queued, all at once.", schema: DeliverySchema, collection: true },
    errors: ["too_many_items"],
    handler: ({ path, body }) =>
      replayWebhookEvents(path.webhook_id!, body).pipe(
        Effect.map((data) => ({
          status: 202,
          body: { data: data as never, page: { limit: data.length, next_cursor: null, prev_cursor: null } }
        }))
      )
  })
]
