/**
 * Products (§2.3, §3, §4.3; replicas 3.3.0): the items of the catalog. A product sits on a
 * showcase at a 1-based position (positions stay dense among the showcase's non-trashed
 * products), is created as a `draft`, and is published through an asynchronous operation
 * that also publishes its copies in replicated accounts, one operation item per product.
 *
 * Decisions where the contract is silent (also in the OpenAPI descriptions):
 * - `format` is chosen at creation and never changes (lessons and terms depend on it).
 * - `status` in a PATCH: `draft` unpublishes; `published` is 422 `invalid_transition`
 *   (reason `use_publications`): publishing goes through `POST /products/{id}/publications`.
 *   On a replica, whose only writable field is `status` (3.3.0), both values are accepted.
 * - `display`, `definitions` and `offer` merge in a PATCH: the sub-fields sent replace, the
 *   others stay.
 * - A product moved to another showcase without a `position` goes last there; a restored
 *   product goes last in its showcase; a position above the count is last (clamped).
 * - A product whose position shifts because another one moved gets a new revision and the
 *   event `product.reordered`.
 * - `lessons_count` and `modules_count` are kept by the content group through
 *   `adjustProductCounts` (new revision and `updated_at`, no event of their own).
 */
import { Effect, Option, Schema } from "effect"
import { Caller } from "../access/context.js"
import { type ApiError, apiError, fieldError, writeUnavailable } from "../errors/errors.js"
import { type ItemServices, type OperationKind, startOperation } from "../operations/operations.js"
import {
  type AccessPath,
  contends,
  type Json,
  type JsonObject,
  listPath,
  type ListQuery,
  Records,
  type StoredRecord,
  type StoreUnavailable,
  type Tenant,
  type Where
} from "../ports/store.js"
import {
  defineResource,
  equalsFilter,
  getResource,
  loadResource,
  recordResourceChange,
  type ResourceDefinition,
  resourceView,
  saveResource
} from "../records/resource.js"
import { Bool, Enum, Integer, PublicId, Text } from "../records/schema.js"
import { currentTimestamp } from "../records/time.js"
import { requireFile } from "../uploads/uploads.js"
import { showcases } from "./showcases.js"

export const PRODUCT_TYPE = "product"
/** The operation type of a publication (open enum of operation types). */
export const PRODUCT_PUBLICATION = "product_publication"

const productFormats = ["course", "blog"] as const
const Format = Enum(...productFormats)
const Status = Enum("draft", "published")
const durationTypes = ["days", "weeks", "months", "years"] as const
const MAX_POSITION = 2_147_483_647

const Url = Text({ min: 1, max: 2048 }).pipe(
  Schema.filter((s) => /^https?:\/\/\S+$/.test(s) || "invalid_value|expected=http(s) URL"),
  Schema.annotations({ jsonSchema: { type: "string", format: "uri", maxLength: 2048 } })
)
const ExternalId = Text({ min: 1, max: 255 })
const FileId = Schema.String.annotations({ description: "ID of an uploaded file of purpose `image`; `null` removes it." })


const isObject = (value: Json | undefined): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value)

/** Same test as the machinery's `isReplica`, on a record's data. */
const replicated = (data: JsonObject): boolean => isObject(data.replica_of)

// ---------------------------------------------------------------------------------------
// Positions within a showcase

const byPosition = { field: "position", kind: "number", direction: "asc" } as const

/** The place of a product among its showcase's non-trashed products, in position order. */
const inShowcase = (showcaseId: string): ReadonlyArray<Where> => [
  { field: "showcase_id", op: "eq", value: showcaseId },
  { field: "deleted", op: "eq", value: false }
]

/** A showcase's products in position order is an access path: placing one reads a range of it, never all. */
export const productsAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(PRODUCT_TYPE, ["showcase_id", "deleted"], [{ field: "position", kind: "number" }, { field: "id", kind: "text" }])
]

/** The non-trashed products of a showcase in position order; with `from`/`to`, those between (inclusive). */
const showcaseProducts = (tenant: Tenant, showcaseId: string, from?: number, to?: number) =>
  Effect.gen(function* () {
    const records = yield* Records
    const out: Array<StoredRecord> = []
    let after: ListQuery["after"]
    const where: ReadonlyArray<Where> = [
      ...inShowcase(showcaseId),
      ...(from !== undefined ? [{ field: "position", op: "gte", value: from } as const] : []),
      ...(to !== undefined ? [{ field: "position", op: "lte", value: to } as const] : [])
    ]
    for (;;) {
      const page = yield* records.list(tenant, PRODUCT_TYPE, { where, sort: byPosition, after, limit: 1000 }).pipe(Effect.mapError(writeUnavailable))
      out.push(...page)
      const last = page.at(-1)
      if (page.length < 1000 || !last) return out
      after = { value: Number(last.data.position), id: last.id }
    }
  })

/** A write that reads a showcase's order to place a product: concurrent ones meet there (`contends`). */
const showcaseOrder = (tenant: Tenant, showcaseId: string) => contends(tenant, `showcase/${showcaseId}`)

/** How many non-trashed products the showcase holds: the last position, positions being dense (one read). */
const showcaseCount = (tenant: Tenant, showcaseId: string) =>
  Effect.gen(function* () {
    yield* showcaseOrder(tenant, showcaseId)
    const records = yield* Records
    const [last] = yield* records
      .list(tenant, PRODUCT_TYPE, { where: inShowcase(showcaseId), sort: { ...byPosition, direction: "desc" }, limit: 1 })
      .pipe(Effect.mapError(writeUnavailable))
    return last === undefined ? 0 : Number(last.data.position)
  })

/** What a new product holds besides what its create body says. */
export const newProductSettings = {
  // Kept by the content group (`adjustProductCounts`).
  lessons_count: 0,
  modules_count: 0,
  display: { hide_module_bar: false, show_progress: true },
  definitions: { alias_product_id: null },
  offer: {
    embed: { dynamic: false, url: null },
    expected_delivery_id: null,
    free: { class_id: null, duration: null, duration_type: null, enabled: false },
    url: null
  }
} as const satisfies JsonObject

/** 1-based; absent or above the count of the others: last. */
const clampPosition = (requested: number | undefined, others: number): number => Math.min(requested ?? others + 1, others + 1)

/** Save a product at a new position, with its event, because another product moved. */
const reposition = (record: StoredRecord, position: number) =>
  Effect.gen(function* () {
    const saved = yield* saveResource(products, record, { ...record.data, position }, undefined)
    yield* recordResourceChange(products, "reordered", resourceView(products, saved), resourceView(products, record))
    return saved
  })

/**
 * Keep the positions of a showcase dense (1..n) around one product's move: the products
 * between `from` and `to` (inclusive, not `moved` itself) shift by `delta`. A product
 * entering at position p opens a gap (p..n shift +1), one leaving it closes the gap (p+1..n
 * shift -1), one moving within the showcase shifts the range between its two places. Only
 * that range is read and written: placing a product last touches no other.
 */
const shift = (showcaseId: string, from: number, to: number | undefined, delta: 1 | -1, moved: string | undefined) =>
  Effect.gen(function* () {
    if (to !== undefined && from > to) return
    const caller = yield* Caller
    yield* showcaseOrder(caller.tenant, showcaseId)
    const range = yield* showcaseProducts(caller.tenant, showcaseId, from, to)
    yield* Effect.forEach(range, (record) =>
      record.id === moved ? Effect.void : Effect.asVoid(reposition(record, Number(record.data.position) + delta))
    )
  })

/** `placed` (saved at its position) entered the showcase: the products at and after it move down. */
const enter = (placed: StoredRecord) => shift(String(placed.data.showcase_id), Number(placed.data.position), undefined, 1, placed.id)

/** A product at `position` left the showcase: the products after it move up. */
const leave = (showcaseId: string, position: number) => shift(showcaseId, position + 1, undefined, -1, undefined)

// ---------------------------------------------------------------------------------------
// Rules

const requireShowcase = (showcaseId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const showcase = yield* records.get(caller.tenant, showcases.type, showcaseId).pipe(Effect.mapError(writeUnavailable))
    if (!showcase || showcase.data.deleted === true) return yield* Effect.fail(fieldError("validation_failed", "showcase_id", { reason: "not_found" }))
  })

const ALIAS_FIELD = "definitions.alias_product_id"

const requireAlias = (productId: string, aliasId: string) =>
  Effect.gen(function* () {
    if (aliasId === productId) return yield* Effect.fail(fieldError("validation_failed", ALIAS_FIELD, { reason: "self_reference" }))
    const caller = yield* Caller
    const records = yield* Records
    const alias = yield* records.get(caller.tenant, PRODUCT_TYPE, aliasId).pipe(Effect.mapError(writeUnavailable))
    if (!alias || alias.data.deleted === true) return yield* Effect.fail(fieldError("validation_failed", ALIAS_FIELD, { reason: "not_found" }))
  })

const aliasOf = (data: JsonObject | null): Json | undefined => (isObject(data?.definitions) ? data.definitions.alias_product_id : undefined)

/** PATCH of the nested objects: the sub-fields sent replace, the others stay. */
const mergeDeep = (current: JsonObject, patch: JsonObject): JsonObject =>
  Object.fromEntries([
    ...Object.entries(current),
    ...Object.entries(patch).map(([key, value]) => {
      const was = current[key]
      return [key, isObject(value) && isObject(was) ? mergeDeep(was, value) : value] as const
    })
  ])

// ---------------------------------------------------------------------------------------
// The description

const Display = Schema.Struct({ hide_module_bar: Schema.Boolean, show_progress: Schema.Boolean })
const Definitions = Schema.Struct({
  alias_product_id: Schema.NullOr(Schema.String).annotations({ description: "Another product of the account this one stands for." })
})
const Offer = Schema.Struct({
  embed: Schema.Struct({ dynamic: Schema.Boolean, url: Schema.NullOr(Schema.String) }),
  expected_delivery_id: Schema.NullOr(Schema.String).annotations({ description: "ID of a delivery (`dlv_`)." }),
  free: Schema.Struct({
    class_id: Schema.NullOr(Schema.String),
    duration: Schema.NullOr(Schema.Int),
    duration_type: Schema.NullOr(Schema.Literal(...durationTypes)),
    enabled: Schema.Boolean
  }),
  url: Schema.NullOr(Schema.String)
})

const DisplayInput = Schema.Struct({ hide_module_bar: Schema.optional(Bool), show_progress: Schema.optional(Bool) })
const DefinitionsInput = Schema.Struct({ alias_product_id: Schema.optional(Schema.NullOr(PublicId("product"))) })
const OfferInput = Schema.Struct({
  embed: Schema.optional(Schema.Struct({ dynamic: Schema.optional(Bool), url: Schema.optional(Schema.NullOr(Url)) })),
  expected_delivery_id: Schema.optional(Schema.NullOr(PublicId("delivery"))),
  free: Schema.optional(
    Schema.Struct({
      class_id: Schema.optional(Schema.NullOr(Text({ min: 1, max: 255 }))),
      duration: Schema.optional(Schema.NullOr(Integer({ min: 1, max: 36_500 }))),
      duration_type: Schema.optional(Schema.NullOr(Enum(...durationTypes))),
      enabled: Schema.optional(Bool)
    })
  ),
  url: Schema.optional(Schema.NullOr(Url))
})

const Position = Integer({ min: 1, max: MAX_POSITION }).annotations({
  jsonSchema: {
    type: "integer",
    minimum: 1,
    maximum: MAX_POSITION,
    description:
      "1-based position within the showcase; above the count places the product last; the others shift. Without it, a new or moved product goes last."
  }
})

export const products: ResourceDefinition = defineResource({
  type: PRODUCT_TYPE,
  idKind: "product",
  plural: "products",
  path: "/products",
  tag: "Catalog",
  fields: {
    name: Schema.String,
    image: Schema.NullOr(Schema.String).annotations({ description: "File ID of the product image (purpose `image`)." }),
    external_id: Schema.NullOr(Schema.String).annotations({ description: "Your identifier; unique among non-trashed products." }),
    showcase_id: Schema.String,
    format: Schema.Literal(...productFormats).annotations({ description: "Chosen at creation; cannot change." }),
    status: Schema.Literal("draft", "published").annotations({
      description: "Created `draft`; published through `POST /products/{product_id}/publications`; a PATCH sets only `draft` (on a replica, either)."
    }),
    position: Schema.Int.annotations({ description: "1-based, dense within the showcase." }),
    // A count that moves changes the product's representation: its `revision` (the ETag covers the
    // whole product) and its `updated_at` change with it, always together.
    lessons_count: Schema.Int.annotations({
      description: "Non-trashed lessons of the product. When it changes, the product's `revision` (its ETag) and `updated_at` change too."
    }),
    modules_count: Schema.Int.annotations({
      description: "Non-trashed modules of the product. When it changes, the product's `revision` (its ETag) and `updated_at` change too."
    }),
    display: Display,
    definitions: Definitions,
    offer: Offer
  },
  create: Schema.Struct({
    format: Format,
    name: Text({ min: 1, max: 200 }),
    showcase_id: PublicId("showcase"),
    position: Schema.optional(Position),
    external_id: Schema.optional(Schema.NullOr(ExternalId))
  }),
  update: Schema.Struct({
    name: Schema.optional(Text({ min: 1, max: 200 })),
    image: Schema.optional(Schema.NullOr(FileId)),
    external_id: Schema.optional(Schema.NullOr(ExternalId)),
    showcase_id: Schema.optional(PublicId("showcase")),
    position: Schema.optional(Position),
    status: Schema.optional(Status.annotations({ description: "`draft` unpublishes; `published` is 422 `invalid_transition` except on a replica." })),
    display: Schema.optional(DisplayInput),
    definitions: Schema.optional(DefinitionsInput),
    offer: Schema.optional(OfferInput)
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      const others = yield* showcaseCount(context.tenant, body.showcase_id)
      return {
        name: body.name,
        image: null,
        external_id: body.external_id ?? null,
        showcase_id: body.showcase_id,
        format: body.format,
        status: "draft",
        position: clampPosition(body.position, others),
        ...newProductSettings
      }
    }),
  change: (current, patch, context) =>
    Effect.gen(function* () {
      if (patch.status === "published" && current.status !== "published" && !replicated(current)) {
        return yield* Effect.fail(fieldError("invalid_transition", "status", { reason: "use_publications" }))
      }
      const merged = mergeDeep(current, patch as JsonObject)
      const restoring = current.deleted === true
      const showcaseId = String(merged.showcase_id)
      const staying = !restoring && showcaseId === current.showcase_id
      if (staying && patch.position === undefined) return merged
      // The others: the showcase's products without this one (counted among them when it stays).
      const others = (yield* showcaseCount(context.tenant, showcaseId)) - (staying ? 1 : 0)
      return { ...merged, position: clampPosition(patch.position, others) }
    }),
  rules: {
    check: (data, previous) =>
      Effect.gen(function* () {
        if (typeof data.image === "string" && data.image !== previous?.image) yield* requireFile("image", data.image, ["image"])
        if (data.showcase_id !== previous?.showcase_id) yield* requireShowcase(String(data.showcase_id))
        const alias = aliasOf(data)
        if (typeof alias === "string" && alias !== aliasOf(previous)) yield* requireAlias(String(data.id), alias)
      }),
    afterCreate: enter,
    afterUpdate: (before, after) =>
      Effect.gen(function* () {
        const wasTrashed = before.data.deleted === true
        const moved = before.data.showcase_id !== after.data.showcase_id
        const [from, to] = [Number(before.data.position), Number(after.data.position)]
        if (moved && !wasTrashed) yield* leave(String(before.data.showcase_id), from)
        if (moved || wasTrashed) yield* enter(after)
        else if (to < from) yield* shift(String(after.data.showcase_id), to, from - 1, 1, after.id)
        else if (to > from) yield* shift(String(after.data.showcase_id), from + 1, to, -1, after.id)
        // A replica published by PATCH (3.3.0) is published as by the operation.
        if (before.data.status !== "published" && after.data.status === "published") {
          yield* recordResourceChange(products, "published", resourceView(products, after), resourceView(products, before))
        }
      }),
    afterDelete: (record) => leave(String(record.data.showcase_id), Number(record.data.position))
  },
  unique: ["external_id"],
  // `status: "published"` in a PATCH (publishing has its own route), listed in the description.
  writeErrors: ["invalid_transition"],
  trash: true,
  replicable: true,
  revision: "string",
  filters: {
    status: equalsFilter("status", Status),
    format: equalsFilter("format", Format),
    showcase_id: equalsFilter("showcase_id", Schema.String.annotations({ description: "Products of this showcase." })),
    external_id: equalsFilter("external_id", Schema.String.annotations({ description: "The product with this `external_id`." }))
  },
  // Newest first unless `sort` says otherwise.
  defaultReversed: true,
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" },
    { name: "position", field: "position", kind: "number" }
  ],
  search: ["name", "external_id"]
})

// ---------------------------------------------------------------------------------------
// Reorder within a showcase

const orderMismatch = (reason: string) => fieldError("order_set_mismatch", "ids", { reason })

/**
 * `PUT /showcases/{showcase_id}/products/order`: `ids` must be exactly the showcase's
 * non-trashed products (else 422 `order_set_mismatch`, nothing changes). A caller limited to
 * some products may reorder only a showcase whose products it may all update (else 404).
 */
export const reorderShowcaseProducts = (showcaseId: string, ids: ReadonlyArray<string>, visible: "all" | ReadonlySet<string>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const showcase = yield* loadResource(showcases, undefined, showcaseId)
    if (showcase.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    const current = yield* showcaseProducts(caller.tenant, showcaseId)
    if (visible !== "all" && current.some((r) => !visible.has(r.id))) return yield* Effect.fail(apiError("not_found"))
    const byId = new Map(current.map((r) => [r.id, r]))
    if (new Set(ids).size !== ids.length) return yield* Effect.fail(orderMismatch("duplicate"))
    if (ids.some((id) => !byId.has(id))) return yield* Effect.fail(orderMismatch("unexpected"))
    if (ids.length !== current.length) return yield* Effect.fail(orderMismatch("missing"))
    const ordered = yield* Effect.forEach(ids, (id, i) => {
      const record = byId.get(id)!
      return record.data.position === i + 1 ? Effect.succeed(record) : reposition(record, i + 1)
    })
    return ordered.map((record) => resourceView(products, record))
  })

// ---------------------------------------------------------------------------------------
// Publication

const ReplicaRef = Schema.Struct({ account_id: Schema.String, environment: Schema.Literal("production", "sandbox"), id: Schema.String })
type ReplicaRef = typeof ReplicaRef.Type

/** The copies of a product in replicated accounts (set by the platform). */
const replicasOf = (record: StoredRecord): ReadonlyArray<ReplicaRef> =>
  Option.getOrElse(Schema.decodeUnknownOption(Schema.Array(ReplicaRef))(record.data.replicas), () => [])

/** `POST /products/{product_id}/publications`: one item for the product, one per copy. */
export const startProductPublication = (productId: string) =>
  Effect.gen(function* () {
    const product = yield* getResource(products, {}, productId)
    return yield* startOperation(PRODUCT_PUBLICATION, [
      { key: product.id, payload: { product_id: product.id } },
      ...replicasOf(product).map((replica) => ({
        key: `${replica.account_id}:${replica.environment}:${replica.id}`,
        payload: { product_id: product.id, replica }
      }))
    ])
  })

const reference = (record: StoredRecord): JsonObject => ({
  object: PRODUCT_TYPE,
  id: record.id,
  account_id: record.tenant.accountId,
  environment: record.tenant.environment,
  status: String(record.data.status)
})

/** Publish one product record of the caller's tenant; already published: nothing changes. */
const publish = (record: StoredRecord) =>
  Effect.gen(function* () {
    if (record.data.status === "published") return reference(record)
    const saved = yield* saveResource(products, record, { ...record.data, status: "published" }, undefined)
    yield* recordResourceChange(products, "published", resourceView(products, saved), resourceView(products, record))
    return reference(saved)
  })

const PublicationItem = Schema.Struct({ product_id: Schema.String, replica: Schema.optional(ReplicaRef) })

const sameReplica = (a: ReplicaRef, b: ReplicaRef) => a.account_id === b.account_id && a.environment === b.environment && a.id === b.id

const runPublicationItem = (payload: JsonObject): Effect.Effect<Json, ApiError, ItemServices> =>
  Effect.gen(function* () {
    const item = yield* Schema.decodeUnknown(PublicationItem)(payload).pipe(Effect.mapError(() => apiError("item_invalid")))
    const caller = yield* Caller
    const records = yield* Records
    const source = yield* records.get(caller.tenant, PRODUCT_TYPE, item.product_id).pipe(Effect.mapError(writeUnavailable))
    if (!source || source.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    const ref = item.replica
    if (!ref) return yield* publish(source)
    // Only a copy the source lists, and that names the source as its origin, is written in its account.
    const tenant: Tenant = { accountId: ref.account_id, environment: ref.environment }
    const copy = replicasOf(source).some((r) => sameReplica(r, ref))
      ? yield* records.get(tenant, PRODUCT_TYPE, ref.id).pipe(Effect.mapError(writeUnavailable))
      : undefined
    const origin = copy?.data.replica_of
    const fromSource =
      isObject(origin) &&
      origin.account_id === caller.tenant.accountId &&
      origin.id === source.id &&
      (origin.environment ?? caller.tenant.environment) === caller.tenant.environment
    if (!copy || copy.data.deleted === true || !fromSource) return yield* Effect.fail(apiError("not_found"))
    // The copy's change is recorded in its own account (its audit entry and event), as the publisher's act.
    return yield* publish(copy).pipe(Effect.provideService(Caller, { ...caller, tenant }))
  })

export const productsResources: ReadonlyArray<ResourceDefinition> = [products]

export const productsOperationKinds: Readonly<Record<string, OperationKind>> = {
  [PRODUCT_PUBLICATION]: { runItem: runPublicationItem }
}

// ---------------------------------------------------------------------------------------
// For the content group

/**
 * Keep `lessons_count` / `modules_count` in step, inside the caller's unit of work (e.g.
 * `adjustProductCounts(tenant, productId, { lessons: +1 })` when a lesson is created). Never
 * below zero. The representation changed, so the revision changes (the ETag of a product covers
 * all of it, §4.3) and `updated_at` with it: they always agree, `updated_at` is when the
 * representation last changed. A derived count is not an edit of its own: no event is emitted.
 */
export const adjustProductCounts = (
  tenant: Tenant,
  productId: string,
  by: { readonly lessons?: number; readonly modules?: number }
): Effect.Effect<void, ApiError<"revision_mismatch" | "audit_unavailable">, Records> =>
  Effect.gen(function* () {
    const records = yield* Records
    const record = yield* records.get(tenant, PRODUCT_TYPE, productId).pipe(Effect.mapError(writeUnavailable))
    if (!record) return
    const count = (field: string, delta: number | undefined) => Math.max(0, Number(record.data[field] ?? 0) + (delta ?? 0))
    yield* records
      .update(
        tenant,
        PRODUCT_TYPE,
        productId,
        {
          ...record.data,
          lessons_count: count("lessons_count", by.lessons),
          modules_count: count("modules_count", by.modules),
          updated_at: yield* currentTimestamp
        },
        { expectedRevision: record.revision }
      )
      .pipe(Effect.mapError((e) => (e._tag === "RevisionConflict" ? apiError("revision_mismatch") : writeUnavailable(e))))
  })
