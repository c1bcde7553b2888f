/**
 * Sales deliveries (release 3.2.0, open-points route `/sales/deliveries`): the five routes
 * served from the description with the decisions in their words (docs/sales.md), and
 * `POST /sales/deliveries/{delivery_id}/tags/applications` (§4.3), an asynchronous operation.
 */
import { deliveries, startDeliveryTagApplication } from "@syllabus/core"
import { Effect } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { describedOperations } from "../resources.js"
import { OperationSchema } from "../schemas.js"

const tag = "Sales"

const salesOffNote =
  "When sales are switched off (`PATCH /settings/sales` with `enabled: false`), this write answers 409 `feature_disabled` (reason `sales_disabled`); reads, the trash and restoring from it stay available, and sales of existing deliveries still grant access."

const referencesNote =
  "`products` holds 1 to 50 entries `{ product_id, duration_days }`: a non-trashed product of the account (else 422 on `products[i].product_id`, reason `not_found`), each once (reason `duplicate`); `duration_days` is 1 to 36,500 days of access from the sale, or null/absent for no expiry. `tag_ids` holds 0 to 50 tags of the account, each once (422 on `tag_ids[i]`, reasons `not_found`, `duplicate`). Every problem is itemized at once, and nothing is saved."

const deliveryOperations = describedOperations(deliveries, tag, {
  "deliveries.list": {
    summary: "List sales deliveries, newest first",
    description: "Newest first unless `sort` says otherwise (`created_at`, `name`); `q` searches the name; `deleted=true` lists the trash."
  },
  "deliveries.get": { summary: "Retrieve a sales delivery" },
  "deliveries.create": {
    summary: "Create a sales delivery: the products and tags a sale grants",
    description:
      `${referencesNote} When a gateway reports the sale approved, the buyer is enrolled in each product (source \`delivery\`, \`delivery_id\` set) for its duration — an active enrollment in the product is extended to the later expiry instead of duplicated — and given the tags; a refund, chargeback or cancellation cancels the enrollments that delivery gave (tags stay). ${salesOffNote}`,
    errors: ["feature_disabled"]
  },
  "deliveries.update": {
    summary: "Change a sales delivery",
    description:
      `\`products\` and \`tag_ids\`, when sent, replace the whole list and follow the creation's rules (checked only when sent). The change applies to later sales; access already given stays as given (apply new tags to existing buyers with \`POST /sales/deliveries/{delivery_id}/tags/applications\`). \`deleted: false\` restores a trashed delivery. ${salesOffNote}`,
    errors: ["feature_disabled"]
  },
  "deliveries.delete": {
    summary: "Move a sales delivery to the trash",
    description:
      "A trashed delivery is not found and cannot be named by new setups; access it gave stays, and a sale of it the gateway reports later still grants what it said (the payment happened). `PATCH deleted=false` restores it."
  }
})

const tagApplications = defineOperation({
  id: "deliveries.tag_applications.create",
  method: "POST",
  path: "/sales/deliveries/{delivery_id}/tags/applications",
  summary: "Apply a delivery's tags to every user with active access through it",
  description:
    "Starts an asynchronous operation (type `delivery_tag_application`) with one item per user holding an active enrollment whose `delivery_id` is this delivery (key: the user ID). Each item gives the user the delivery's tags as they are when it runs; a tag already held is not added again, so repeating the operation never duplicates a tag (the item succeeds with `tag_ids_added: []`). A user who no longer has active access when the item runs is an item failed with `state_conflict` and `resource_id` the user: reason `revoked` when the access was taken away (the enrollment canceled: a refund, a chargeback, a cancellation), else `no_access` (expired, expiry passed, user trashed). Item result: `{ object: \"user\", id, tag_ids_added }`. Follow the operation at `Location` and its items at `items_url`. A trashed delivery is 404. " +
    salesOffNote.replace("this write", "this operation"),
  tag,
  capability: "deliveries.update",
  scopedBy: "delivery_id",
  params: { delivery_id: "delivery" },
  idempotency: "required",
  success: { status: 202, description: "The operation, queued; `Location` is its address.", schema: OperationSchema, headers: ["Location"] },
  errors: ["feature_disabled", "operation_backlog_exceeded"],
  handler: ({ path }) =>
    startDeliveryTagApplication(path.delivery_id!).pipe(
      Effect.map((data) => ({ status: 202, body: { data }, headers: { location: `/api/v3/operations/${String(data.id)}` } }))
    )
})

export const deliveriesRoutes: ReadonlyArray<Operation> = [...deliveryOperations, tagApplications]
