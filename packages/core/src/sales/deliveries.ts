/**
 * Sales deliveries (`dlv_`, release 3.2.0, open-points route `/sales/deliveries`): what a sale
 * grants — products, each as an enrollment with a duration, and tags — as Hotmart's and
 * Kajabi's "offers deliver products and tags" do. A gateway's sale names the delivery; its
 * approval grants it and a refund takes the access back (delivery-access.ts).
 *
 * Decisions (also in docs/sales.md and the OpenAPI description):
 * - `products`: 1 to 50 entries `{ product_id, duration_days }`; `duration_days` an integer
 *   1..36,500, or null (the default) for access without expiry. A product appears once
 *   (422 on `products[i].product_id`, reason `duplicate`) and must be a non-trashed product of
 *   the account (reason `not_found`). `tag_ids`: 0 to 50 tags of the account, each once. The
 *   references are checked when they are written (create, or a PATCH sending them): a product
 *   or tag removed later is skipped when the delivery grants, never an error for the buyer.
 *   A PATCH of `products` or `tag_ids` replaces the whole list, and changes only future grants
 *   (access already given stays as given, like a changed price at Stripe).
 * - Trash: DELETE trashes (`deleted: true`), `PATCH deleted=false` restores; a trashed
 *   delivery is not found, but sales of it that arrive still grant (delivery-access.ts).
 * - Sales switched off (`/settings/sales`, `enabled: false`): creating and changing answer 409
 *   `feature_disabled` (reason `sales_disabled`); reads, trash and restore stay.
 * - `POST /sales/deliveries/{delivery_id}/tags/applications` (§4.3): tag-applications.ts.
 */
import { Effect, Option, Schema } from "effect"
import { Caller } from "../access/context.js"
import { type DetailItem, readUnavailable } from "../errors/errors.js"
import { type Json, type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import { defineResource, referenceProblems, type ResourceDefinition, ruleViolation } from "../records/resource.js"
import { products as productsResource } from "../catalog/products.js"
import { tags } from "../people/people-users.js"
import { Integer, List, PublicId, Text } from "../records/schema.js"
import { requireSalesFeature } from "./features.js"

export const DELIVERY_TYPE = "delivery"
/** At most this many products and this many tags in one delivery. */
export const DELIVERY_MAX_PRODUCTS = 50
export const DELIVERY_MAX_TAGS = 50
/** The longest finite access a delivery gives: 100 years. */
const MAX_DURATION_DAYS = 36_500

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

const DeliveryProductInput = Schema.Struct({
  product_id: PublicId("product").annotations({ description: "A non-trashed product of the account, once per delivery." }),
  duration_days: optional(
    Schema.NullOr(Integer({ min: 1, max: MAX_DURATION_DAYS })).annotations({
      description: "Days of access from the sale (1 to 36,500); null or absent: no expiry."
    })
  )
})

const ProductsInput = List(DeliveryProductInput, DELIVERY_MAX_PRODUCTS).pipe(
  Schema.filter((items) => items.length >= 1 || "too_short|min=1"),
  Schema.annotations({
    jsonSchema: { minItems: 1, maxItems: DELIVERY_MAX_PRODUCTS },
    description: "What a sale grants: 1 to 50 products, each once, with the access duration. In a PATCH this replaces the whole list."
  })
)

const TagIdsInput = List(PublicId("tag"), DELIVERY_MAX_TAGS).annotations({
  description: "Tags a sale gives the buyer: 0 to 50 tags of the account, each once. In a PATCH this replaces the whole list."
})

const DeliveryProduct = Schema.Struct({
  product_id: Schema.String,
  duration_days: Schema.NullOr(Schema.Int).annotations({ description: "Days of access from the sale; null: no expiry." })
})

/** The products of a stored delivery, as the grant reads them. */
export const deliveryProducts = (record: StoredRecord): ReadonlyArray<{ readonly product_id: string; readonly duration_days: number | null }> =>
  Option.getOrElse(Schema.decodeUnknownOption(Schema.Array(DeliveryProduct))(record.data.products), () => [])

/** The tags of a stored delivery. */
export const deliveryTagIds = (record: StoredRecord): ReadonlyArray<string> =>
  Option.getOrElse(Schema.decodeUnknownOption(Schema.Array(Schema.String))(record.data.tag_ids), () => [])

const sameJson = (a: Json | undefined, b: Json | undefined) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null)

/** The references sent (a create, or a PATCH sending them) are checked, all problems at once. */
const checkReferences = (data: JsonObject, previous: JsonObject | null) =>
  Effect.gen(function* () {
    const products = (data.products ?? []) as ReadonlyArray<{ readonly product_id: string }>
    const tagIds = (data.tag_ids ?? []) as ReadonlyArray<string>
    const problems = [
      ...(previous !== null && sameJson(previous.products, data.products)
        ? []
        : yield* referenceProblems(productsResource, products.map((p) => p.product_id), (i) => `products[${i}].product_id`)),
      ...(previous !== null && sameJson(previous.tag_ids, data.tag_ids) ? [] : yield* referenceProblems(tags, tagIds, (i) => `tag_ids[${i}]`))
    ]
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
  })

const normalizedProducts = (products: ReadonlyArray<{ readonly product_id: string; readonly duration_days?: number | null | undefined }>) =>
  products.map((p) => ({ product_id: p.product_id, duration_days: p.duration_days ?? null }))

export const deliveries: ResourceDefinition = defineResource({
  type: DELIVERY_TYPE,
  idKind: "delivery",
  plural: "deliveries",
  path: "/sales/deliveries",
  tag: "Sales",
  fields: {
    name: Schema.String,
    products: Schema.Array(DeliveryProduct).annotations({ description: "The products a sale grants (1 to 50), each as an enrollment lasting `duration_days`." }),
    tag_ids: Schema.Array(Schema.String).annotations({ description: "The tags a sale gives the buyer (0 to 50)." })
  },
  create: Schema.Struct({
    name: Text({ min: 1, max: 200 }),
    products: ProductsInput,
    tag_ids: optional(TagIdsInput)
  }),
  update: Schema.Struct({
    name: optional(Text({ min: 1, max: 200 })),
    products: optional(ProductsInput),
    tag_ids: optional(TagIdsInput)
  }),
  defaults: (body) =>
    Effect.gen(function* () {
      yield* requireSalesFeature("sales")
      return { name: body.name, products: normalizedProducts(body.products), tag_ids: [...(body.tag_ids ?? [])] }
    }),
  change: (current, patch) =>
    Effect.gen(function* () {
      // A restore alone (`{ deleted: false }`) is the trash's business, allowed with sales off.
      if (Object.keys(patch).length > 0) yield* requireSalesFeature("sales")
      return {
        ...current,
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.products !== undefined ? { products: normalizedProducts(patch.products) } : {}),
        ...(patch.tag_ids !== undefined ? { tag_ids: [...patch.tag_ids] } : {})
      }
    }),
  rules: { check: checkReferences },
  trash: true,
  revision: "string",
  writeErrors: ["feature_disabled"],
  // Newest first unless `sort` says otherwise.
  defaultReversed: true,
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  search: ["name"],
  // Served by `@syllabus/http` routes/deliveries.ts with their own words, beside the tag applications.
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})
