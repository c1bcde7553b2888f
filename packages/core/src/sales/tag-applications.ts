/**
 * `POST /sales/deliveries/{delivery_id}/tags/applications` (§4.3): an asynchronous operation
 * (type `delivery_tag_application`) that applies the delivery's tags to every user with active
 * access through it, one item per user.
 *
 * Decisions (also in docs/sales.md and the OpenAPI description):
 * - The users are those with an ACTIVE enrollment whose `delivery_id` is this delivery, each
 *   once (a user enrolled in several of its products is one item, key = the user ID). They
 *   are enumerated through the index (`delivery_id`, `status`, `user_id`) in keyset pages of 100 and
 *   recorded page by page (`addOperationItems`), never held whole.
 * - Each item runs later, in its own unit of work: it re-checks the access, and a user who no
 *   longer has it (the enrollment expired, was canceled, or its expiry has passed; the user
 *   trashed or removed) is an item failed with 409 `state_conflict`, reason `no_access`
 *   (`error.resource_id`: the user). The others get the delivery's tags as they are when the
 *   item runs; a tag already held is not added again, so repeating the operation never
 *   duplicates a tag (an item then succeeds with `tag_ids_added: []`). Result:
 *   `{ object: "user", id, tag_ids_added }`.
 * - Sales switched off: 409 `feature_disabled` (reason `sales_disabled`) before anything is
 *   recorded. A trashed or missing delivery: 404. A delivery without tags, or without users,
 *   still starts (an operation of no-op items, or of none), as Stripe answers a list that is
 *   empty rather than refusing it.
 */
import { Clock, Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { type ApiError, apiError, readUnavailable } from "../errors/errors.js"
import { ENROLLMENT_TYPE, isOpenEnrollment } from "../learning/enrollments.js"
import { addOperationItems, type ItemServices, type OperationKind, startOperation } from "../operations/operations.js"
import { USER_TYPE } from "../people/people-users.js"
import { type Json, type JsonObject, type ListQuery, Records } from "../ports/store.js"
import { getResource } from "../records/resource.js"
import { deliveries, DELIVERY_TYPE, deliveryTagIds } from "./deliveries.js"
import { accessRevoked, activeThroughDelivery, applyTags, enrollmentsThroughDelivery, noAccess } from "./delivery-access.js"
import { requireSalesFeature } from "./features.js"

/** The operation type (open enum of operation types). */
export const DELIVERY_TAG_APPLICATION = "delivery_tag_application"

/** Enrollments read per page while the items are recorded. */
const ENUMERATION_PAGE = 100

const itemOf = (deliveryId: string, userId: string) => ({ key: userId, payload: { id: userId, delivery_id: deliveryId, user_id: userId } })

/** Start the operation: one item per user with active access through the delivery. Answers the operation (for the 202). */
export const startDeliveryTagApplication = (deliveryId: string) =>
  Effect.gen(function* () {
    const delivery = yield* getResource(deliveries, {}, deliveryId)
    yield* requireSalesFeature("sales")
    const caller = yield* Caller
    const records = yield* Records
    let operation: JsonObject | undefined
    let lastUser: string | undefined
    let after: ListQuery["after"]
    for (;;) {
      const page = yield* records
        .list(caller.tenant, ENROLLMENT_TYPE, {
          where: [
            { field: "delivery_id", op: "eq", value: delivery.id },
            { field: "status", op: "eq", value: "active" }
          ],
          sort: { field: "user_id", kind: "text", direction: "asc" },
          after,
          limit: ENUMERATION_PAGE
        })
        .pipe(Effect.mapError(readUnavailable))
      // In user order, a user's enrollments are adjacent: each user once, across pages too.
      const items: Array<ReturnType<typeof itemOf>> = []
      for (const enrollment of page) {
        const userId = String(enrollment.data.user_id)
        if (userId === lastUser) continue
        lastUser = userId
        items.push(itemOf(delivery.id, userId))
      }
      operation = operation === undefined
        ? yield* startOperation(DELIVERY_TAG_APPLICATION, items)
        : items.length > 0
          ? yield* addOperationItems(String(operation.id), items)
          : operation
      const last = page.at(-1)
      if (page.length < ENUMERATION_PAGE || !last) return operation
      after = { value: String(last.data.user_id), id: last.id }
    }
  })

const TagApplicationItem = Schema.Struct({ delivery_id: Schema.String, user_id: Schema.String })

/** One user: the delivery's tags, if the user still has active access through it. */
const runTagApplicationItem = (payload: JsonObject): Effect.Effect<Json, ApiError, ItemServices> =>
  Effect.gen(function* () {
    const item = yield* Schema.decodeUnknown(TagApplicationItem)(payload).pipe(Effect.mapError(() => apiError("item_invalid")))
    const caller = yield* Caller
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const delivery = yield* records.get(caller.tenant, DELIVERY_TYPE, item.delivery_id).pipe(Effect.mapError(readUnavailable))
    if (!delivery) return yield* Effect.fail(apiError("not_found"))
    const user = yield* records.get(caller.tenant, USER_TYPE, item.user_id).pipe(Effect.mapError(readUnavailable))
    const active = yield* activeThroughDelivery(item.delivery_id, item.user_id)
    if (!user || user.data.deleted === true) return yield* Effect.fail(noAccess())
    if (!active.some((enrollment) => isOpenEnrollment(enrollment, now))) {
      // Taken away (its enrollment canceled: a refund, a chargeback) is told apart from lapsed.
      const canceled = yield* enrollmentsThroughDelivery(item.delivery_id, item.user_id, "canceled", 1)
      return yield* Effect.fail(canceled.length > 0 ? accessRevoked() : noAccess())
    }
    const added = yield* applyTags(user, deliveryTagIds(delivery))
    return { object: USER_TYPE, id: user.id, tag_ids_added: added }
  })

export const deliveryTagApplicationKinds: Readonly<Record<string, OperationKind>> = {
  [DELIVERY_TAG_APPLICATION]: { runItem: runTagApplicationItem }
}
