/**
 * Sales events (`sev_`, release 3.2.0, open-points routes `GET /sales/events` and
 * `GET /sales/events/{id}`): the lifecycle of a sale as its gateway reports it. Decisions (also
 * in docs/sales.md and the OpenAPI description):
 *
 * - Recorded only from a gateway's signed notification (`gateway-notifications.ts`), never
 *   through a body of the API: read-only (`sales_events.read`), never changed nor removed (the
 *   money history of the account); a sandbox reset empties the sandbox's.
 * - Idempotent by the gateway's own event ID: a unique key of the store on
 *   (`gateway_id`, `gateway_event_id`) makes the second arrival of an event ID, concurrent or
 *   not, change nothing and answer the sales event of the first (as Stripe de-duplicates by
 *   event ID). What the second one says besides its ID is not compared: a gateway's event ID
 *   names one event.
 * - Acting on access in the SAME unit of work as the record (`delivery-access.ts`): `approved`
 *   and `subscription_renewed` grant the delivery (enrollments, extended rather than
 *   duplicated; its tags); `refunded`, `chargeback`, `canceled` and `subscription_expired` end
 *   the access the delivery gave that user. Either the event and its effects are recorded, or
 *   nothing is.
 * - `product_ids` are the delivery's products when the event is recorded (a later change of the
 *   delivery does not rewrite history); funnel reports count approved events by them.
 * - Event `sales_event.recorded` (not `created`: the platform records what the gateway says),
 *   with its audit entry attributed to the gateway (`actor.kind` `gateway`, `actor.credential_id`
 *   the `gtw_` ID), as are the enrollment and tag changes it makes.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { Caller, Ids } from "../access/context.js"
import { type DetailItem, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent } from "../events/events.js"
import { USER_TYPE } from "../people/people-users.js"
import { type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import {
  defineResource,
  equalsFilter,
  type FilterDefinition,
  type ResourceDefinition,
  resourceView,
  ruleViolation,
  writtenByThePlatform
} from "../records/resource.js"
import { Enum, Integer, PublicId, SingleLineText, Text, Timestamp } from "../records/schema.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"
import { recordChange } from "../trail/audit.js"
import { DELIVERY_TYPE, deliveryProducts } from "./deliveries.js"
import { grantDelivery, revokeDelivery } from "./delivery-access.js"

export const SALES_EVENT_TYPE = "sales_event"
/** The one event a sales event makes: recorded, never changed. */
export const salesEventEventVerbs = ["recorded"] as const

export const salesEventTypes = ["approved", "refunded", "chargeback", "canceled", "subscription_renewed", "subscription_expired"] as const
export type SalesEventType = (typeof salesEventTypes)[number]

/** What each type does to the buyer's access through the delivery. */
const grants: ReadonlySet<SalesEventType> = new Set(["approved", "subscription_renewed"])
const revokes: ReadonlySet<SalesEventType> = new Set(["refunded", "chargeback", "canceled", "subscription_expired"])

/** The unique key of idempotency: one sales event per gateway event ID. */
const gatewayEventKey = (gatewayId: string, gatewayEventId: string) => ({ name: "gateway_event", value: `${gatewayId}:${gatewayEventId}` })

/** A notification may say it happened at most this far in our future (clock skew). */
const FUTURE_SKEW_MS = 5 * 60 * 1000

const WireTimestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

const occurredRange = (name: "occurred_after" | "occurred_before"): FilterDefinition => ({
  schema: Timestamp,
  on: { field: "occurred_at", match: "text" },
  description: name === "occurred_after" ? "Occurred at or after this instant." : "Occurred before this instant.",
  where: (value: never) => [
    {
      field: "occurred_at",
      op: name === "occurred_after" ? "gte" : "lt",
      value: Option.match(parseTimestamp(value as string), { onNone: () => value as string, onSome: formatTimestamp })
    }
  ]
})

const Type = Enum(...salesEventTypes)

export const salesEvents: ResourceDefinition = defineResource({
  type: SALES_EVENT_TYPE,
  idKind: "sales_event",
  plural: "sales_events",
  path: "/sales/events",
  tag: "Sales",
  fields: {
    gateway_id: Schema.String.annotations({ description: "The gateway that reported it." }),
    gateway_event_id: Schema.String.annotations({ description: "The gateway's own ID of the event: unique per gateway (a repeat changes nothing)." }),
    type: Schema.Literal(...salesEventTypes).annotations({
      description:
        "`approved` and `subscription_renewed` grant the delivery (enrollments, extended rather than duplicated; its tags); `refunded`, `chargeback`, `canceled` and `subscription_expired` cancel the enrollments the delivery gave the user, unless another sale (`sale_id`) of the delivery to that user still grants access."
    }),
    sale_id: Schema.String.annotations({ description: "The gateway's reference of the sale (order, charge or subscription)." }),
    delivery_id: Schema.String,
    product_ids: Schema.Array(Schema.String).annotations({ description: "The delivery's products when the event was recorded." }),
    user_id: Schema.String.annotations({ description: "The buyer." }),
    funnel_id: Schema.NullOr(Schema.String),
    funnel_step_id: Schema.NullOr(Schema.String),
    amount: Schema.Int.annotations({ description: "In the currency's minor units (cents)." }),
    currency: Schema.String.annotations({ description: "ISO 4217, upper case." }),
    occurred_at: WireTimestamp.annotations({ description: "When it happened at the gateway." })
  },
  // Recorded from a gateway's notification, never through a body.
  ...writtenByThePlatform,
  trash: false,
  revision: "string",
  filters: {
    type: equalsFilter("type", Type, "Sales events of this type."),
    gateway_id: equalsFilter("gateway_id", PublicId("gateway"), "Sales events reported by this gateway."),
    delivery_id: equalsFilter("delivery_id", PublicId("delivery"), "Sales events of this delivery."),
    user_id: equalsFilter("user_id", PublicId("user"), "Sales events of this buyer."),
    occurred_after: occurredRange("occurred_after"),
    occurred_before: occurredRange("occurred_before")
  },
  sorts: [
    { name: "occurred_at", field: "occurred_at", kind: "text" },
    { name: "created_at", field: "id", kind: "text" }
  ],
  // Newest first.
  defaultReversed: true
})

// ---------------------------------------------------------------------------------------
// A gateway's notification, as recorded

/** The body of a gateway's notification (after its signature is verified). */
export const NotificationBody = Schema.Struct({
  id: SingleLineText({ min: 1, max: 255 }).annotations({ description: "The gateway's own event ID: a repeat changes nothing and answers the first." }),
  type: Type,
  occurred_at: Timestamp,
  sale_id: SingleLineText({ min: 1, max: 255 }),
  delivery_id: PublicId("delivery"),
  user_id: PublicId("user"),
  amount: Integer({ min: 0, max: 1_000_000_000_000 }),
  currency: Schema.String.pipe(
    Schema.filter((s) => /^[A-Z]{3}$/.test(s) || "invalid_value|expected=an ISO 4217 code in upper case"),
    Schema.annotations({ jsonSchema: { type: "string", pattern: "^[A-Z]{3}$" } })
  ),
  funnel_id: Schema.optionalWith(Schema.NullOr(PublicId("funnel")), { exact: true }),
  funnel_step_id: Schema.optionalWith(Schema.NullOr(PublicId("funnel_step")), { exact: true })
}).annotations({ identifier: "GatewayNotification" })

export type Notification = typeof NotificationBody.Type

/** The sales event a gateway already reported with this event ID, if any. */
export const findSalesEvent = (gatewayId: string, gatewayEventId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records.findUnique(caller.tenant, SALES_EVENT_TYPE, gatewayEventKey(gatewayId, gatewayEventId)).pipe(Effect.mapError(readUnavailable))
  })

/** The references of a notification, each problem itemized: the delivery, the user, the funnel and its step. */
const referencedDelivery = (notification: Notification) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const get = (type: string, id: string) => records.get(caller.tenant, type, id).pipe(Effect.mapError(readUnavailable))
    const details: Array<DetailItem> = []
    const now = yield* Clock.currentTimeMillis
    const occurred = Option.getOrElse(parseTimestamp(notification.occurred_at), () => now)
    if (occurred > now + FUTURE_SKEW_MS) details.push({ field: "occurred_at", code: "invalid_value", reason: "in_future" })
    // A trashed delivery still counts (a payment for it happened); a removed one cannot.
    const delivery = yield* get(DELIVERY_TYPE, notification.delivery_id)
    if (!delivery) details.push({ field: "delivery_id", code: "validation_failed", reason: "not_found" })
    const user = yield* get(USER_TYPE, notification.user_id)
    if (!user || user.data.deleted === true) details.push({ field: "user_id", code: "validation_failed", reason: "not_found" })
    const funnelId = notification.funnel_id ?? null
    const stepId = notification.funnel_step_id ?? null
    if (funnelId !== null) {
      const funnel = yield* get("funnel", funnelId)
      if (!funnel) details.push({ field: "funnel_id", code: "validation_failed", reason: "not_found" })
      else if (stepId !== null) {
        const steps = Array.isArray(funnel.data.steps) ? (funnel.data.steps as ReadonlyArray<JsonObject>) : []
        if (!steps.some((step) => step?.id === stepId)) details.push({ field: "funnel_step_id", code: "validation_failed", reason: "not_found" })
      }
    } else if (stepId !== null) details.push({ field: "funnel_step_id", code: "validation_failed", reason: "requires_funnel_id" })
    if (details.length > 0) return yield* Effect.fail(ruleViolation(details))
    return { delivery: delivery!, occurred }
  })

/**
 * Record a verified notification of `gateway` and act on the buyer's access, in the caller's
 * unit of work; answers the sales event. The caller (`gateway-notifications.ts`) has already
 * looked for a sales event of the same event ID; a concurrent twin that commits first makes
 * this insert a `UniqueViolation` (the whole unit of work rolls back, and the caller answers
 * the twin's record).
 */
export const recordSalesEvent = (gateway: StoredRecord, notification: Notification) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const { delivery, occurred } = yield* referencedDelivery(notification)
    const id = yield* (yield* Ids).next("sales_event")
    const at = formatTimestamp(yield* Clock.currentTimeMillis)
    const data: JsonObject = {
      object: SALES_EVENT_TYPE,
      id,
      gateway_id: gateway.id,
      gateway_event_id: notification.id,
      type: notification.type,
      sale_id: notification.sale_id,
      delivery_id: delivery.id,
      product_ids: deliveryProducts(delivery).map((p) => p.product_id),
      user_id: notification.user_id,
      funnel_id: notification.funnel_id ?? null,
      funnel_step_id: notification.funnel_step_id ?? null,
      amount: notification.amount,
      currency: notification.currency,
      occurred_at: formatTimestamp(occurred),
      created_at: at,
      updated_at: at,
      deleted: false
    }
    const record = yield* records.insert(caller.tenant, SALES_EVENT_TYPE, id, data, [gatewayEventKey(gateway.id, notification.id)]).pipe(
      Effect.catchTag("StoreUnavailable", (e) => Effect.fail(writeUnavailable(e)))
    )
    const view = resourceView(salesEvents, record)
    yield* recordChange("sales_event.recorded", { object: SALES_EVENT_TYPE, id })
    yield* emitEvent("sales_event.recorded", view)
    const access = { delivery_id: delivery.id, user_id: notification.user_id, sales_event_id: id }
    if (grants.has(notification.type)) yield* grantDelivery({ ...access, at: occurred })
    else if (revokes.has(notification.type) && !(yield* anotherSaleStillPaid(record))) yield* revokeDelivery(access)
    return record
  })

/** More sales events of one buyer and delivery than any real history holds (a page of the store). */
const BUYER_HISTORY_MAX = 1_000

/**
 * Whether the buyer holds another sale of the same delivery whose latest event (by `occurred_at`)
 * still grants access: then the end of this sale (a refund, a chargeback…) leaves the access,
 * which the other sale paid for, in place. Reads the buyer's sales events of the delivery, a
 * handful, through the index of `user_id`.
 */
const anotherSaleStillPaid = (ending: StoredRecord) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const history = yield* records
      .list(caller.tenant, SALES_EVENT_TYPE, {
        where: [
          { field: "user_id", op: "eq", value: String(ending.data.user_id) },
          { field: "delivery_id", op: "eq", value: String(ending.data.delivery_id) }
        ],
        sort: { field: "occurred_at", kind: "text", direction: "asc" },
        limit: BUYER_HISTORY_MAX
      })
      .pipe(Effect.mapError(readUnavailable))
    const latestBySale = new Map<string, SalesEventType>()
    for (const event of history) latestBySale.set(String(event.data.sale_id), event.data.type as SalesEventType)
    latestBySale.delete(String(ending.data.sale_id))
    return [...latestBySale.values()].some((type) => grants.has(type))
  })
