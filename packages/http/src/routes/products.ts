/**
 * Operations of the "products" group beyond the derived list/get/create/update/delete:
 * publication through an asynchronous operation (§3, 3.3.0) and the order of a showcase.
 */
import { Caller, List, products, PublicId, reorderShowcaseProducts, startProductPublication, visibleResources } from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { representationSchema } from "../resources.js"
import { OperationSchema } from "../schemas.js"

const tag = "Catalog"

const OrderBody = Schema.Struct({
  ids: List(PublicId("product")).annotations({ description: "Every non-trashed product of the showcase, exactly once, in the new order." })
}).annotations({ identifier: "ProductOrderInput" })

export const productsRoutes: ReadonlyArray<Operation> = [
  defineOperation({
    id: "products.publications.create",
    method: "POST",
    path: "/products/{product_id}/publications",
    summary: "Publish a product and its copies in replicated accounts",
    description:
      "Publish a product through an asynchronous operation: one item for the product and one for each of its copies in replicated accounts (3.3.0); a replica may itself be published. Publishing a published product changes nothing.",
    tag,
    capability: "products.publish",
    scopedBy: "product_id",
    params: { product_id: "product" },
    idempotency: "required",
    success: { status: 202, description: "The operation, queued; `Location` is its address.", schema: OperationSchema, headers: ["Location"] },
    errors: [],
    handler: ({ path }) =>
      startProductPublication(path.product_id!).pipe(
        Effect.map((data) => ({ status: 202, body: { data }, headers: { location: `/api/v3/operations/${String(data.id)}` } }))
      )
  }),
  defineOperation({
    id: "products.order.replace",
    method: "PUT",
    path: "/showcases/{showcase_id}/products/order",
    summary: "Reorder the products of a showcase",
    description:
      "Reorder the products of a showcase: `ids` must hold exactly its non-trashed products (else 422 `order_set_mismatch` and nothing changes). Answers the products in their new order, all at once.",
    tag,
    capability: "products.update",
    params: { showcase_id: "showcase" },
    body: OrderBody,
    idempotency: "optional",
    success: { status: 200, description: "The showcase's products in their new order.", schema: representationSchema(products), collection: true },
    errors: ["order_set_mismatch"],
    handler: ({ path, body }) =>
      Effect.gen(function* () {
        const caller = yield* Caller
        const data = yield* reorderShowcaseProducts(path.showcase_id!, body.ids, visibleResources(caller.grant, "products.update"))
        return { status: 200, body: { data, page: { limit: data.length, next_cursor: null, prev_cursor: null } } }
      })
  })
]
