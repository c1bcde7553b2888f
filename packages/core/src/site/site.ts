/**
 * Resources of the site (release 3.1.0): banners (§2.3, with their order and the types an
 * account may use) and the navigation menu. The settings groups are in `site-settings.ts`.
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { apiError, type DetailItem, fieldError, writeUnavailable, readUnavailable } from "../errors/errors.js"
import type { OperationKind } from "../operations/operations.js"
import { contends, type Json, type JsonObject, Records, type StoredRecord, type Where } from "../ports/store.js"
import {
  defineResource,
  equalsFilter,
  recordResourceChange,
  type ResourceDefinition,
  resourceView,
  ruleViolation,
  saveResource,
  inRequestedOrder
} from "../records/resource.js"
import { Bool, Enum, Integer, List, PublicId, RichText, Text } from "../records/schema.js"
import { requireFile } from "../uploads/uploads.js"
import { appearanceSettings, settingValue } from "./site-settings.js"

export * from "./site-settings.js"

// ---------------------------------------------------------------------------------------
// Shared rules


/** More than any arranged set may hold (an order is at most 1,000 IDs, §8.2). */
const ARRANGED_MAX = 10_000

/** The non-trashed records of a type matching `where`, by position (ties by ID). */
const inPositionOrder = (type: string, where: ReadonlyArray<Where>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    // Read to place or move a record: the writes of one order meet here (`contends`).
    yield* contends(caller.tenant, `${type}/order/${JSON.stringify(where)}`)
    const records = yield* Records
    return yield* records
      .list(caller.tenant, type, {
        where: [{ field: "deleted", op: "eq", value: false }, ...where],
        sort: { field: "position", kind: "number", direction: "asc" },
        limit: ARRANGED_MAX
      })
      .pipe(Effect.mapError(readUnavailable))
  })

/**
 * Give `ordered` the positions 1..n. Each record that moves gets a new revision, its audit
 * entry and its `<type>.reordered` event, in the unit of work of the change that moved it.
 */
const placeInOrder = (definition: ResourceDefinition, ordered: ReadonlyArray<StoredRecord>) =>
  Effect.forEach(ordered, (record, index) =>
    record.data.position === index + 1
      ? Effect.succeed(record)
      : Effect.gen(function* () {
          const saved = yield* saveResource(definition, record, { ...record.data, position: index + 1 }, undefined)
          yield* recordResourceChange(definition, "reordered", resourceView(definition, saved), resourceView(definition, record))
          return saved
        })
  )

/** Does a non-trashed record of this type exist in the caller's tenant? */
const exists = (type: string, id: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const record = yield* records.get(caller.tenant, type, id).pipe(Effect.mapError(readUnavailable))
    return record !== undefined && record.data.deleted !== true
  })

/**
 * An optional body field. `exact` (absent, never `undefined`): a problem inside an object or
 * an array is itemized on its own path only, not also on the field holding it.
 */
const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

const notFound = (field: string): DetailItem => ({ field, code: "validation_failed", reason: "not_found" })

const WebUrl = Text({ min: 1, max: 2048 }).pipe(
  Schema.filter((s) => /^https?:\/\/[^\s/]+\S*$/.test(s) || "invalid_value|expected=an http or https URL"),
  Schema.annotations({ jsonSchema: { type: "string", format: "uri", maxLength: 2048 } })
)

// ---------------------------------------------------------------------------------------
// Banners

const bannerTypes = ["image", "html", "netflix"] as const
const linkKinds = ["none", "product", "url"] as const
const linkTargets = ["_self", "_blank"] as const
const BannerStatus = Enum("active", "inactive")
const FileId = Schema.String.annotations({ description: "ID of an uploaded file of the account, of purpose `image`." })

const ImagesBody = Schema.Struct({
  desktop: optional(Schema.NullOr(FileId)),
  mobile: optional(Schema.NullOr(FileId))
}).annotations({ description: "Replaces both images: one left out is `null`." })

const LinkBody = Schema.Struct({
  kind: Enum(...linkKinds),
  product_id: optional(Schema.NullOr(PublicId("product"))),
  target: optional(Enum(...linkTargets)),
  url: optional(Schema.NullOr(WebUrl))
}).annotations({
  description: "Replaces the whole link. `product` needs `product_id` (a product of the account), `url` needs `url`; the field of the other kind must be left out or `null`. `target` defaults to `_self`."
})

const ShowcaseIds = List(PublicId("showcase")).annotations({ description: "Showcases the banner is shown on: IDs of showcases of the account, each once." })

const imagesOf = (body: Schema.Schema.Type<typeof ImagesBody> | undefined): JsonObject => ({
  desktop: body?.desktop ?? null,
  mobile: body?.mobile ?? null
})

type LinkInput = Schema.Schema.Type<typeof LinkBody>
const linkOf = (body: LinkInput | undefined): JsonObject => ({
  kind: body?.kind ?? "none",
  product_id: body?.product_id ?? null,
  target: body?.target ?? "_self",
  url: body?.url ?? null
})

/** A link names exactly what its kind needs: a product of the account, or a URL. */
const checkLink = (link: JsonObject, previous: JsonObject | undefined) =>
  Effect.gen(function* () {
    const details: Array<DetailItem> = []
    const wants = link.kind === "product" ? "product_id" : link.kind === "url" ? "url" : null
    for (const field of ["product_id", "url"] as const) {
      if (field === wants && link[field] === null) details.push({ field: `link.${field}`, code: "required" })
      if (field !== wants && link[field] !== null) details.push({ field: `link.${field}`, code: "invalid_value", reason: "kind_mismatch" })
    }
    const product = link.product_id
    if (details.length === 0 && typeof product === "string" && product !== previous?.product_id && !(yield* exists("product", product))) {
      details.push(notFound("link.product_id"))
    }
    if (details.length > 0) return yield* Effect.fail(ruleViolation(details))
  })

/** Each showcase once, and each one added must be a showcase of the account. */
const checkShowcases = (ids: ReadonlyArray<Json>, previous: ReadonlyArray<Json>) =>
  Effect.gen(function* () {
    const details: Array<DetailItem> = []
    const seen = new Set<Json>()
    for (const [index, id] of ids.entries()) {
      if (seen.has(id)) details.push({ field: `showcases[${index}]`, code: "invalid_value", reason: "duplicate" })
      else if (typeof id === "string" && !previous.includes(id) && !(yield* exists("showcase", id))) details.push(notFound(`showcases[${index}]`))
      seen.add(id)
    }
    if (details.length > 0) return yield* Effect.fail(ruleViolation(details))
  })

/**
 * Banner types an account may not use: `netflix` banners belong to the `netflix` layout of
 * the appearance settings (422 `banner_type_unavailable` otherwise). Checked when a banner
 * becomes of that type; banners already of it stay when the layout changes.
 */
const checkTypeAvailable = (type: Json, previousType: Json | undefined) =>
  Effect.gen(function* () {
    if (type !== "netflix" || previousType === "netflix") return
    if ((yield* settingValue(appearanceSettings, "layout")) !== "netflix") {
      return yield* Effect.fail(fieldError("banner_type_unavailable", "type", { reason: "netflix_layout_required" }))
    }
  })

const countBanners = Effect.map(inPositionOrder("banner", []), (list) => list.length)

export const banners: ResourceDefinition = defineResource({
  type: "banner",
  idKind: "banner",
  plural: "banners",
  path: "/banners",
  tag: "Site",
  fields: {
    name: Schema.String,
    type: Schema.Literal(...bannerTypes).annotations({
      description: "`image`: the images, with the link; `html`: the `html`; `netflix`: the large banner of the `netflix` layout (appearance settings), else 422 `banner_type_unavailable`."
    }),
    status: Schema.Literal("active", "inactive"),
    position: Schema.Int.annotations({
      description: "1-based place among the non-trashed banners. A new or restored banner comes last; `PUT /banners/order` rearranges."
    }),
    html: Schema.NullOr(Schema.String),
    images: Schema.Struct({ desktop: Schema.NullOr(Schema.String), mobile: Schema.NullOr(Schema.String) }).annotations({
      description: "File IDs of the images (purpose `image`)."
    }),
    link: Schema.Struct({
      kind: Schema.Literal(...linkKinds),
      product_id: Schema.NullOr(Schema.String),
      target: Schema.Literal(...linkTargets),
      url: Schema.NullOr(Schema.String)
    }),
    showcases: Schema.Array(Schema.String).annotations({ description: "IDs of the showcases the banner is shown on." })
  },
  create: Schema.Struct({
    name: Text({ min: 1, max: 200 }),
    type: optional(Enum(...bannerTypes)).annotations({ description: "Default `image`." }),
    status: optional(BannerStatus),
    html: optional(Schema.NullOr(RichText())),
    images: optional(ImagesBody),
    link: optional(LinkBody),
    showcases: optional(ShowcaseIds)
  }),
  update: Schema.Struct({
    name: optional(Text({ min: 1, max: 200 })),
    type: optional(Enum(...bannerTypes)),
    status: optional(BannerStatus),
    html: optional(Schema.NullOr(RichText())),
    images: optional(ImagesBody),
    link: optional(LinkBody),
    showcases: optional(ShowcaseIds)
  }),
  defaults: (body) =>
    Effect.map(countBanners, (count) => ({
      name: body.name,
      type: body.type ?? "image",
      status: body.status ?? "active",
      position: count + 1,
      html: body.html ?? null,
      images: imagesOf(body.images),
      link: linkOf(body.link),
      showcases: body.showcases ?? []
    })),
  change: (current, patch) =>
    Effect.gen(function* () {
      const { images, link, ...plain } = patch
      // A decoded body holds only the fields sent, none undefined.
      const next: Record<string, Json> = { ...current, ...(plain as JsonObject) }
      if (images !== undefined) next.images = imagesOf(images)
      if (link !== undefined) next.link = linkOf(link)
      // A banner restored from the trash comes last.
      if (current.deleted === true) next.position = (yield* countBanners) + 1
      return next
    }),
  rules: {
    check: (data, previous) =>
      Effect.gen(function* () {
        const images = data.images as JsonObject
        const before = previous?.images as JsonObject | undefined
        for (const side of ["desktop", "mobile"] as const) {
          const id = images[side]
          if (typeof id === "string" && id !== before?.[side]) yield* requireFile(`images.${side}`, id, ["image"])
        }
        yield* checkLink(data.link as JsonObject, previous?.link as JsonObject | undefined)
        yield* checkShowcases(data.showcases as ReadonlyArray<Json>, (previous?.showcases as ReadonlyArray<Json> | undefined) ?? [])
        yield* checkTypeAvailable(data.type ?? null, previous?.type)
      }),
    // The banners after a trashed one move up: positions stay 1..n.
    afterDelete: () => Effect.asVoid(Effect.flatMap(inPositionOrder("banner", []), (list) => placeInOrder(banners, list)))
  },
  writeErrors: ["banner_type_unavailable"],
  trash: true,
  replicable: true,
  revision: "string",
  filters: { status: equalsFilter("status", BannerStatus), type: equalsFilter("type", Enum(...bannerTypes)) },
  sorts: [
    { name: "position", field: "position", kind: "number" },
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  search: ["name"]
})

export const BannerOrderBody = Schema.Struct({
  ids: List(PublicId("banner")).annotations({ description: "Every non-trashed banner (active and inactive), each once, in the new order." })
})

/**
 * `PUT /banners/order`: `ids` must be exactly the non-trashed banners, each once (else 422
 * `order_set_mismatch`, nothing changes); they take positions 1..n in that order. The order is
 * the account's own arrangement, so replicated banners take part in it.
 */
export const orderBanners = (ids: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const ordered = yield* inRequestedOrder(ids, yield* inPositionOrder("banner", []))
    const placed = yield* placeInOrder(banners, ordered)
    const data = placed.map((record) => resourceView(banners, record))
    return { data, page: { limit: data.length, next_cursor: null, prev_cursor: null } }
  })

// ---------------------------------------------------------------------------------------
// Navigation

const NavUrl = Text({ min: 1, max: 2048 }).pipe(
  Schema.filter((s) => /^(https?:\/\/[^\s/]+\S*|\/\S*)$/.test(s) || "invalid_value|expected=an http or https URL, or a path starting with /"),
  Schema.annotations({ jsonSchema: { type: "string", maxLength: 2048 } })
)
const NavPosition = Integer({ min: 1, max: 100000 }).annotations({
  description: "1-based place among the items of the same parent; above their count places it last."
})

/** The items under a parent (`null`: the top-level items), by position, without `except`. */
const itemsUnder = (parentId: Json, except?: string) =>
  Effect.map(
    inPositionOrder("navigation_item", [{ field: "parent_id", op: "eq", value: typeof parentId === "string" ? parentId : null }]),
    (list) => list.filter((record) => record.id !== except)
  )

/** Put `record` at its `position` among its siblings and close the gaps: positions stay 1..n per parent. */
const arrangeAround = (record: StoredRecord) =>
  Effect.gen(function* () {
    const others = yield* itemsUnder(record.data.parent_id ?? null, record.id)
    const at = Math.min(Number(record.data.position), others.length + 1) - 1
    yield* placeInOrder(navigation, [...others.slice(0, at), record, ...others.slice(at)])
  })

const closeGaps = (parentId: Json) => Effect.asVoid(Effect.flatMap(itemsUnder(parentId), (list) => placeInOrder(navigation, list)))

/** A menu is one level deep: a parent is a top-level item, and an item with children has no parent. */
const checkParent = (data: JsonObject, id: string | undefined) =>
  Effect.gen(function* () {
    const parentId = data.parent_id
    if (typeof parentId !== "string") return
    if (parentId === id) return yield* Effect.fail(fieldError("hierarchy_violation", "parent_id", { reason: "self" }))
    const caller = yield* Caller
    const records = yield* Records
    const parent = yield* records.get(caller.tenant, "navigation_item", parentId).pipe(Effect.mapError(readUnavailable))
    if (!parent) return yield* Effect.fail(ruleViolation([notFound("parent_id")]))
    if (parent.data.parent_id !== null) return yield* Effect.fail(fieldError("hierarchy_violation", "parent_id", { reason: "parent_is_nested" }))
    if (id !== undefined && (yield* itemsUnder(id)).length > 0) {
      return yield* Effect.fail(fieldError("hierarchy_violation", "parent_id", { reason: "has_children" }))
    }
  })

export const navigation: ResourceDefinition = defineResource({
  type: "navigation_item",
  idKind: "navigation_item",
  plural: "navigation",
  path: "/navigation",
  tag: "Site",
  fields: {
    label: Schema.String,
    url: Schema.NullOr(Schema.String).annotations({ description: "Where the item leads: an http(s) URL or a path of the site." }),
    product_id: Schema.NullOr(Schema.String).annotations({ description: "Or the product it leads to. With neither, the item only opens its children." }),
    parent_id: Schema.NullOr(Schema.String).annotations({ description: "The top-level item this one is under (one level), or `null`." }),
    position: Schema.Int.annotations({ description: "1-based place among the items of the same parent." }),
    visible: Schema.Boolean
  },
  create: Schema.Struct({
    label: Text({ min: 1, max: 100 }),
    url: optional(Schema.NullOr(NavUrl)),
    product_id: optional(Schema.NullOr(PublicId("product"))),
    parent_id: optional(Schema.NullOr(PublicId("navigation_item"))),
    position: optional(NavPosition),
    visible: optional(Bool)
  }),
  update: Schema.Struct({
    label: optional(Text({ min: 1, max: 100 })),
    url: optional(Schema.NullOr(NavUrl)),
    product_id: optional(Schema.NullOr(PublicId("product"))),
    parent_id: optional(Schema.NullOr(PublicId("navigation_item"))),
    position: optional(NavPosition).annotations({ description: "Moves the item among its siblings; with a new `parent_id`, default last." }),
    visible: optional(Bool)
  }),
  defaults: (body) =>
    Effect.map(itemsUnder(body.parent_id ?? null), (others) => ({
      label: body.label,
      url: body.url ?? null,
      product_id: body.product_id ?? null,
      parent_id: body.parent_id ?? null,
      position: Math.min(body.position ?? others.length + 1, others.length + 1),
      visible: body.visible ?? true
    })),
  change: (current, patch, context) =>
    Effect.gen(function* () {
      const next: Record<string, Json> = { ...current }
      for (const [field, value] of Object.entries(patch)) next[field] = value ?? null
      const parentId = next.parent_id ?? null
      const moved = parentId !== (current.parent_id ?? null)
      if (moved || patch.position !== undefined) {
        // Under another parent it goes last, unless a position is given; a position above the count is last.
        const others = yield* itemsUnder(parentId, context.id)
        next.position = Math.min(patch.position ?? others.length + 1, others.length + 1)
      }
      return next
    }),
  rules: {
    check: (data, previous) =>
      Effect.gen(function* () {
        if (data.url !== null && data.product_id !== null) {
          return yield* Effect.fail(ruleViolation([{ field: "product_id", code: "invalid_value", reason: "url_and_product_id" }]))
        }
        if (typeof data.product_id === "string" && data.product_id !== previous?.product_id && !(yield* exists("product", data.product_id))) {
          return yield* Effect.fail(ruleViolation([notFound("product_id")]))
        }
        if (data.parent_id !== (previous?.parent_id ?? null)) yield* checkParent(data, typeof data.id === "string" ? data.id : undefined)
      }),
    afterCreate: arrangeAround,
    afterUpdate: (before, after) =>
      Effect.gen(function* () {
        if (before.data.parent_id === after.data.parent_id && before.data.position === after.data.position) return
        yield* arrangeAround(after)
        if (before.data.parent_id !== after.data.parent_id) yield* closeGaps(before.data.parent_id ?? null)
      }),
    // Removing an item removes the items under it, and its siblings close the gap.
    afterDelete: (record) =>
      Effect.gen(function* () {
        const caller = yield* Caller
        const records = yield* Records
        for (const child of yield* itemsUnder(record.id)) {
          yield* records.remove(caller.tenant, "navigation_item", child.id).pipe(Effect.mapError(writeUnavailable))
          yield* recordResourceChange(navigation, "deleted", resourceView(navigation, child))
        }
        yield* closeGaps(record.data.parent_id ?? null)
      })
  },
  writeErrors: ["hierarchy_violation"],
  trash: false,
  revision: "string",
  filters: {
    parent_id: {
      schema: Schema.String.pipe(
        Schema.filter((s) => s === "none" || /^nav_[0-9A-Za-z]{9}$/.test(s) || "invalid_value|expected=a navigation item ID or none")
      ).annotations({ jsonSchema: { type: "string" } }),
      where: (value: never) => [{ field: "parent_id", op: "eq", value: value === "none" ? null : (value as string) }],
      on: { field: "parent_id", match: "equals" },
      description: "Items under this item; `none`: the top-level items."
    }
  },
  sorts: [
    { name: "position", field: "position", kind: "number" },
    { name: "label", field: "label", kind: "text" },
    { name: "created_at", field: "id", kind: "text" }
  ],
  search: ["label"]
})

export const siteResources: ReadonlyArray<ResourceDefinition> = [banners, navigation]

export const siteOperationKinds: Readonly<Record<string, OperationKind>> = {}
