/**
 * Payment gateways and sales events over HTTP (release 3.2.0, open-points routes
 * `/sales/gateways` and `/sales/events`). Served from their descriptions
 * (`describedOperations`), with what the derived routes cannot know: a gateway's create and
 * secret rotations show the signing secret once (`secret.value`; a replay is 409
 * `secret_not_replayable`), and the decisions in each operation's text (docs/sales.md). The
 * gateways' own notification endpoint, outside `/api/v3`, is `gateway-notifications.ts`.
 */
import {
  CreateGatewayBody,
  createGateway,
  gateways,
  resourceEtag,
  rotateGatewaySecret,
  salesEvents,
  SecretRotationBody
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { describedOperations, representationSchema } from "../resources.js"

const tag = "Sales"

const GatewaySchema = representationSchema(gateways)
const GatewayWithSecretSchema = Schema.Struct({
  ...(GatewaySchema as unknown as Schema.Struct<Schema.Struct.Fields>).fields,
  secret: Schema.Struct({
    value: Schema.String.annotations({
      description: "The signing secret of the gateway's notifications, `whsec_…` (Standard Webhooks): shown in this response only."
    })
  })
}).annotations({ identifier: "GatewayWithSecret" })

const salesOffNote =
  "When sales are switched off (`PATCH /settings/sales` with `enabled: false`), this write answers 409 `feature_disabled` (reason `sales_disabled`); reads, the trash, a restore alone (`deleted: false` and nothing else), secret rotations and the gateways' notifications go on."
const credentialsNote =
  "`credentials` are write-only: never returned (the representation lists the keys set with their last four characters), never in an event, the audit trail, an idempotency receipt or a log. A named `kind` accepts only its own keys (else 422 on `credentials.<key>`, reason `not_a_key_of_kind`, with the `allowed` keys)."
const notificationNote =
  "The gateway sends its notifications to `notification_path` (`POST /gateways/{gateway_id}/notifications` on this server's origin, outside `/api/v3`), signed with the Standard Webhooks scheme: headers `webhook-id`, `webhook-timestamp` (seconds; accepted within 5 minutes of the server's clock) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<raw body>\">`, keyed with the base64 part of the `whsec_` secret). The body: `{ id, type, occurred_at, sale_id, delivery_id, user_id, amount, currency, funnel_id?, funnel_step_id? }`; the answer 200 `{ data: <sales_event> }`, the same on every repeat of `id`. A forged or stale signature is 401 `unauthenticated` (reason `signature_invalid`, `signature_missing` or `timestamp_out_of_window`), an unknown or trashed gateway 404, a disabled one 409 `state_conflict` (reason `gateway_disabled`): nothing is recorded."

const gatewayOperations = describedOperations(gateways, tag, {
  "gateways.list": {
    summary: "List payment gateways, newest first",
    description: "Newest first unless `sort` says otherwise (`name`, `created_at`). Filters: `status`, `kind`; `q` searches the name. `deleted=true` lists the trash. Credentials and secrets are never included."
  },
  "gateways.get": { summary: "Retrieve a payment gateway", description: `${credentialsNote} ${notificationNote}` },
  "gateways.update": {
    summary: "Change a payment gateway's name, status or credentials",
    description: `\`credentials\` are merged into the keys set: a key with a string sets or replaces it, with \`null\` removes it, keys not named stay. \`kind\` is fixed at creation (422 \`not_allowed\`). \`status: disabled\` refuses the gateway's notifications (409) until it is \`active\` again. ${credentialsNote} ${salesOffNote}`,
    errors: ["feature_disabled"]
  },
  "gateways.delete": {
    summary: "Move a payment gateway to the trash",
    description: "A trashed gateway's notifications are 404 and nothing is recorded; its sales events stay. `PATCH deleted=false` restores it, with its secret."
  }
})

export const salesEventsRoutes: ReadonlyArray<Operation> = [
  ...gatewayOperations.filter((op) => op.id === "gateways.list" || op.id === "gateways.get"),
  defineOperation({
    id: "gateways.create",
    method: "POST",
    path: gateways.path,
    summary: "Connect a payment gateway. Its signing secret is in this response only.",
    description: `\`kind\` (\`stripe\`, \`paypal\`, \`mercado_pago\`, \`generic\`) and \`name\` are required; \`status\` defaults to \`active\`. The answer holds the signing secret of the gateway's notifications (\`secret.value\`, \`whsec_…\`), shown once: a replay of the same \`Idempotency-Key\` is 409 \`secret_not_replayable\`; \`POST /sales/gateways/{gateway_id}/secret-rotations\` makes a new one. Event \`gateway.created\`. ${credentialsNote} ${notificationNote} ${salesOffNote}`,
    tag,
    capability: "gateways.create",
    body: CreateGatewayBody,
    idempotency: "required",
    success: { status: 201, description: "The gateway, with `secret.value`.", schema: GatewayWithSecretSchema, headers: ["Location", "ETag"] },
    errors: ["secret_not_replayable", "feature_disabled"],
    handler: ({ body }) =>
      createGateway(body).pipe(
        Effect.map(({ record, view }) => ({
          status: 201,
          body: { data: view },
          headers: { location: `/api/v3${gateways.path}/${record.id}`, etag: resourceEtag(gateways, record) },
          showsSecretOnce: true
        }))
      )
  }),
  ...gatewayOperations.filter((op) => op.id === "gateways.update" || op.id === "gateways.delete"),
  defineOperation({
    id: "gateways.secret_rotations.create",
    method: "POST",
    path: `${gateways.path}/{gateway_id}/secret-rotations`,
    summary: "Replace a gateway's signing secret. The new secret is in this response only.",
    description:
      "A new signing secret at once; notifications signed with the previous one are still accepted for `previous_secret_expires_in` seconds (0 to 86,400; default 86,400, 24 hours, as Stripe rolls an endpoint secret), until `previous_secret_expires_at`; `0` ends it now (a leaked secret). A secret rotated out earlier is dropped: at most two are ever valid. Event `gateway.secret_rotated`. Allowed while sales are switched off. A replay of the same `Idempotency-Key` is 409 `secret_not_replayable`.",
    tag,
    capability: "gateways.update",
    scopedBy: "gateway_id",
    params: { gateway_id: "gateway" },
    body: SecretRotationBody,
    idempotency: "required",
    success: { status: 200, description: "The gateway, with the new `secret.value`.", schema: GatewayWithSecretSchema, headers: ["ETag"] },
    errors: ["secret_not_replayable"],
    handler: ({ path, body }) =>
      rotateGatewaySecret(path.gateway_id!, body).pipe(
        Effect.map(({ record, view }) => ({
          status: 200,
          body: { data: view },
          headers: { etag: resourceEtag(gateways, record) },
          showsSecretOnce: true
        }))
      )
  }),
  ...describedOperations(salesEvents, tag, {
    "sales_events.list": {
      summary: "List sales events, newest first",
      description:
        "The lifecycle of the account's sales as their gateways reported them, newest first by `occurred_at` (`sort=occurred_at` oldest first; `created_at`: in the order recorded). Filters, each served by an index: `type`, `gateway_id`, `delivery_id`, `user_id`, `occurred_after` (inclusive) and `occurred_before` (exclusive). Sales events are recorded only from a gateway's signed notification (`POST /gateways/{gateway_id}/notifications`, outside `/api/v3`), once per gateway event ID, and never change; each acted on the buyer's access in the same unit of work: `approved` and `subscription_renewed` grant the delivery (enrollments with `delivery_id`, extended rather than duplicated; its tags), `refunded`, `chargeback`, `canceled` and `subscription_expired` cancel the enrollments the delivery gave the buyer, unless another sale (`sale_id`) of the delivery to that buyer still grants access. Event `sales_event.recorded`."
    },
    "sales_events.get": { summary: "Retrieve a sales event" }
  })
]
