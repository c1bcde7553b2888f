/**
 * Webhooks over HTTP (§4.3, open-points "Events and webhooks"). Get, update and delete are
 * the derived routes of the `webhooks` description; create and secret rotations show the
 * signing secret once (`secret.value`; a replay is 409 `secret_not_replayable`), and the
 * list adds the `event_type` filter.
 */
import {
  CreateWebhookBody,
  createWebhook,
  EventTypeName,
  listWebhooks,
  resourceEtag,
  rotateWebhookSecret,
  webhooks,
  WebhookSecretRotationBody,
  planLimitDescription
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { representationSchema, resourceOperations } from "../resources.js"

const tag = webhooks.tag
const params = { webhook_id: "webhook" } as const

const WebhookSchema = representationSchema(webhooks)
const WebhookWithSecretSchema = Schema.Struct({
  ...(WebhookSchema as unknown as Schema.Struct<Schema.Struct.Fields>).fields,
  secret: Schema.Struct({ value: Schema.String.annotations({ description: "The signing secret, `whsec_…`: shown in this response only." }) })
}).annotations({ identifier: "WebhookWithSecret" })

const ListQuery = Schema.Struct({
  ...pageQuery("created_at"),
  status: Schema.optional(Schema.Literal("active", "inactive").annotations({ message: () => "invalid_value|allowed=active, inactive" })),
  event_type: Schema.optional(EventTypeName.annotations({ description: "Webhooks that receive this event type: subscribed to it or to `*`." }))
})

const derived = resourceOperations(webhooks).filter((op) => op.id !== "webhooks.create" && op.id !== "webhooks.list")

export const webhooksRoutes: ReadonlyArray<Operation> = [
  defineOperation({
    id: "webhooks.list",
    method: "GET",
    path: webhooks.path,
    summary: "List webhooks, newest first. Signing secrets are never included.",
    tag,
    capability: "webhooks.read",
    query: ListQuery,
    idempotency: "none",
    success: { status: 200, description: "A page of webhooks.", schema: WebhookSchema, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ query }) =>
      Effect.gen(function* () {
        const result = yield* listWebhooks({
          limit: pageLimit(query.limit),
          cursor: query.cursor,
          sort: query.sort,
          status: query.status,
          event_type: query.event_type
        })
        return { status: 200, body: result }
      })
  }),
  defineOperation({
    id: "webhooks.create",
    method: "POST",
    path: webhooks.path,
    summary: "Register a webhook. Its signing secret is in this response only.",
    description: planLimitDescription("webhooks"),
    tag,
    capability: "webhooks.create",
    body: CreateWebhookBody,
    idempotency: "required",
    success: { status: 201, description: "The webhook, with `secret.value`.", schema: WebhookWithSecretSchema, headers: ["Location", "ETag"] },
    errors: ["plan_limit_reached", "secret_not_replayable"],
    handler: ({ body }) =>
      createWebhook(body).pipe(
        Effect.map(({ record, view }) => ({
          status: 201,
          body: { data: view },
          headers: { location: `/api/v3/webhooks/${record.id}`, etag: resourceEtag(webhooks, record) },
          showsSecretOnce: true
        }))
      )
  }),
  ...derived,
  defineOperation({
    id: "webhooks.secret_rotations.create",
    method: "POST",
    path: `${webhooks.path}/{webhook_id}/secret-rotations`,
    summary: "Replace the signing secret. The new secret is in this response only.",
    description:
      "A new signing secret at once; the previous one stays valid for `previous_secret_expires_in` seconds (0 to 86,400; default 86,400, 24 hours), until `previous_secret_expires_at`: meanwhile every delivery carries two signatures in `webhook-signature` (`v1,<by the new secret> v1,<by the previous one>`, as Standard Webhooks allows), so a receiver checking either secret accepts it; afterwards, only the new one. `0` ends the previous secret now (a leaked secret). A secret rotated out earlier is dropped: at most two are ever valid. Event `webhook.secret_rotated`. A replay of the same `Idempotency-Key` is 409 `secret_not_replayable`.",
    tag,
    capability: "webhooks.update",
    scopedBy: "webhook_id",
    params,
    body: WebhookSecretRotationBody,
    idempotency: "required",
    success: { status: 200, description: "The webhook, with the new `secret.value`.", schema: WebhookWithSecretSchema, headers: ["ETag"] },
    errors: ["secret_not_replayable"],
    handler: ({ path, body }) =>
      rotateWebhookSecret(path.webhook_id!, body).pipe(
        Effect.map(({ record, view }) => ({
          status: 200,
          body: { data: view },
          headers: { etag: resourceEtag(webhooks, record) },
          showsSecretOnce: true
        }))
      )
  })
]
