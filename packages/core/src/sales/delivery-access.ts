/**
 * What a sale does to a user's access through its delivery (sales/deliveries.ts): the sales
 * events (sales/sales-events.ts) call `grantDelivery` on an approved sale (and a renewal) and
 * `revokeDelivery` on a refund, chargeback or cancellation, inside their own unit of work.
 *
 * Decisions (also in docs/sales.md):
 * - Grant: for each product of the delivery, an enrollment with source `delivery` and
 *   `delivery_id` set, starting at the sale (`at`) and ending `duration_days` later (null: no
 *   expiry). A user already active in the product is not enrolled twice (one active enrollment
 *   per user and product): that enrollment is extended to the later of the two expiries (no
 *   expiry wins) and its `delivery_id` becomes this delivery — the latest sale owns the
 *   access, as a renewal does at Hotmart or Kajabi. A product trashed or removed since the
 *   delivery was set up is skipped (nothing to enroll in), and so is a grant whose whole
 *   duration has already passed (a late notification of an old sale).
 * - The delivery's tags are applied to the user (`applyTags`): a tag already held is not added
 *   again, a tag removed since is skipped.
 * - A trashed delivery still grants: the payment happened at the gateway, and the buyer gets
 *   what the delivery said when it was sold (the trash stops new setups, not the money flow).
 * - Revoke: the active enrollments whose `delivery_id` is this delivery are canceled (event
 *   `enrollment.canceled`); access another way (a manual enrollment, another delivery that last
 *   extended it) is left alone. Tags stay: they are marketing segments (Kajabi's and
 *   ActiveCampaign's tags stay after a refund too), and an integration removes them with
 *   `PUT /users/{user_id}/tags` if it wants.
 * - Every write goes through the enrollment and user use cases, so their events and audit
 *   entries are the ordinary ones (`enrollment.created|updated|canceled`, `user.updated`).
 */
import { Clock, Effect } from "effect"
import { Caller } from "../access/context.js"
import { apiError, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import {
  cancelEnrollment,
  createDeliveryEnrollment,
  ENROLLMENT_TYPE,
  enrollments,
  findActiveEnrollment
} from "../learning/enrollments.js"
import { requireLiveUser, TAG_TYPE, USER_TAG_TYPE, USER_TYPE, users } from "../people/people-users.js"
import { type AccessPath, listPath, Records, type StoredRecord } from "../ports/store.js"
import { recordResourceChange, resourceView, saveResource } from "../records/resource.js"
import { DAY, formatTimestamp } from "../records/time.js"
import { DELIVERY_TYPE, deliveryProducts, deliveryTagIds } from "./deliveries.js"

/**
 * The users with access through a delivery, in user order, and one user's access through it:
 * active enrollments by `delivery_id` (an index of the store, never a scan of the enrollments).
 */
export const deliveryAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(ENROLLMENT_TYPE, ["delivery_id", "status"], [{ field: "user_id", kind: "text" }])
]

/** The delivery in the caller's tenant, trashed or not (a sale of a trashed one still counts), else 404. */
const loadDelivery = (deliveryId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const delivery = yield* records.get(caller.tenant, DELIVERY_TYPE, deliveryId).pipe(Effect.mapError(readUnavailable))
    if (!delivery) return yield* Effect.fail(fieldError("validation_failed", "delivery_id", { reason: "not_found" }))
    return delivery
  })

/** The later of two expiries, null (none) being the latest. */
const laterExpiry = (a: string | null, b: string | null): string | null => (a === null || b === null ? null : a > b ? a : b)

/**
 * Give `tagIds` to the user: each tag not held yet becomes held (its `user_tag` link and the
 * user's `tags`), one `user.updated` when anything changed. A tag that no longer exists is
 * skipped. Answers the tags added.
 */
export const applyTags = (user: StoredRecord, tagIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const now = formatTimestamp(yield* Clock.currentTimeMillis)
    const held = new Set((user.data.tags ?? []) as ReadonlyArray<string>)
    const added: Array<string> = []
    for (const tagId of tagIds) {
      if (held.has(tagId)) continue
      const tag = yield* records.get(caller.tenant, TAG_TYPE, tagId).pipe(Effect.mapError(readUnavailable))
      if (!tag) continue
      const linkId = `${user.id}:${tagId}`
      const link = yield* records.get(caller.tenant, USER_TAG_TYPE, linkId).pipe(Effect.mapError(readUnavailable))
      if (!link) {
        yield* records
          .insert(caller.tenant, USER_TAG_TYPE, linkId, { object: USER_TAG_TYPE, id: linkId, user_id: user.id, tag_id: tagId, created_at: now })
          .pipe(Effect.mapError(writeUnavailable))
      }
      held.add(tagId)
      added.push(tagId)
    }
    if (added.length === 0) return added
    const saved = yield* saveResource(users, user, { ...user.data, tags: [...((user.data.tags ?? []) as ReadonlyArray<string>), ...added] }, user.revision)
    yield* recordResourceChange(users, "updated", resourceView(users, saved), resourceView(users, user))
    return added
  })

/**
 * An approved sale of `delivery_id` to `user_id` at `at` (ms): the delivery's products as
 * enrollments and its tags, in the caller's unit of work. Answers the enrollments given or
 * extended. `sales_event_id` names the sale for the caller's own record (the sales event
 * keeps its delivery and user); the enrollments record the delivery, which `revokeDelivery`
 * finds them by.
 */
export const grantDelivery = Effect.fn("Deliveries.grant")(function* (input: {
  readonly delivery_id: string
  readonly user_id: string
  readonly sales_event_id: string
  readonly at: number
}) {
  const delivery = yield* loadDelivery(input.delivery_id)
  const user = yield* requireLiveUser(input.user_id)
  const caller = yield* Caller
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const startsAt = formatTimestamp(Math.min(input.at, now))
  const granted: Array<StoredRecord> = []
  for (const item of deliveryProducts(delivery)) {
    const product = yield* records.get(caller.tenant, "product", item.product_id).pipe(Effect.mapError(readUnavailable))
    if (!product || product.data.deleted === true) continue
    const ends = item.duration_days === null ? null : input.at + item.duration_days * DAY
    if (ends !== null && ends <= now) continue
    const expiresAt = ends === null ? null : formatTimestamp(ends)
    const current = yield* findActiveEnrollment(input.user_id, item.product_id)
    if (!current) {
      granted.push(
        yield* createDeliveryEnrollment({
          user_id: input.user_id,
          product_id: item.product_id,
          delivery_id: delivery.id,
          starts_at: startsAt,
          expires_at: expiresAt
        })
      )
      continue
    }
    const later = laterExpiry(current.data.expires_at as string | null, expiresAt)
    if (later === current.data.expires_at && current.data.delivery_id === delivery.id) {
      granted.push(current)
      continue
    }
    const saved = yield* saveResource(enrollments, current, { ...current.data, expires_at: later, delivery_id: delivery.id }, current.revision)
    yield* recordResourceChange(enrollments, "updated", resourceView(enrollments, saved), resourceView(enrollments, current))
    granted.push(saved)
  }
  yield* applyTags(user, deliveryTagIds(delivery))
  return granted
})

/** The user's active enrollments through the delivery (at most one per product: ≤ 50), by index. */
export const activeThroughDelivery = (deliveryId: string, userId: string, limit = 100) =>
  enrollmentsThroughDelivery(deliveryId, userId, "active", limit)

/** A user's enrollments of one status through a delivery (the same index). */
export const enrollmentsThroughDelivery = (deliveryId: string, userId: string, status: "active" | "canceled", limit: number) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records
      .list(caller.tenant, ENROLLMENT_TYPE, {
        where: [
          { field: "delivery_id", op: "eq", value: deliveryId },
          { field: "status", op: "eq", value: status },
          { field: "user_id", op: "eq", value: userId }
        ],
        sort: { field: "user_id", kind: "text", direction: "asc" },
        limit
      })
      .pipe(Effect.mapError(readUnavailable))
  })

/**
 * A refunded, charged back or canceled sale: the user's active enrollments through the
 * delivery are canceled (`enrollment.canceled`), in the caller's unit of work. Tags stay.
 * Answers the enrollments canceled.
 */
export const revokeDelivery = Effect.fn("Deliveries.revoke")(function* (input: {
  readonly delivery_id: string
  readonly user_id: string
  readonly sales_event_id: string
}) {
  yield* loadDelivery(input.delivery_id)
  const active = yield* activeThroughDelivery(input.delivery_id, input.user_id)
  return yield* Effect.forEach(active, (enrollment) => cancelEnrollment(enrollment.id))
})

/** The item failure of a user who has no (longer) active access through the delivery. */
export const noAccess = () => apiError("state_conflict", { reason: "no_access" })

/** The item failure of a user whose access through the delivery was taken away (a refund, a chargeback, a cancellation). */
export const accessRevoked = () => apiError("state_conflict", { reason: "revoked" })
