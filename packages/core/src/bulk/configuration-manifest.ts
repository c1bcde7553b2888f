/**
 * The manifest of a declarative configuration plan (release 3.2.0, docs/configuration-plans.md):
 * its shape, how its entries are matched to the account's records, and the export of the
 * account's current state as a manifest.
 *
 * Decisions:
 * - Scope: showcases, tags, custom fields, webhooks, settings groups, products and their
 *   modules. What is account-local (file IDs, product IDs in webhook filters, a product's
 *   position or publication) is outside the manifest: it is never compared, written nor exported.
 * - Resources are named by a natural key, never by an account's own IDs, so that a manifest
 *   exported from one account applies to another: a showcase by its `name`, a tag by its
 *   `name`, a custom field by its `key`, a webhook by its `url`, a product by its
 *   `external_id` (products without one are not managed), a module by its `name` within its
 *   product, a settings group by its group name. A record whose key an older record of the
 *   same type already holds is not managed (the oldest one is).
 * - A field an entry leaves out is not managed: it is neither compared nor changed. The
 *   export writes every managed field, so an exported manifest describes the state whole.
 * - A field fixed at creation (a product's `format`, a custom field's `type`) that differs
 *   from the record is 422 `plan_invalid` (reason `immutable`): remove the record first.
 * - Deletion only with `prune: true`: the records of a type the manifest lists (its key
 *   present, even empty) that no entry names are deleted; the modules of a product whose
 *   entry has `modules`. Without `prune`, nothing is deleted. Settings groups are never deleted.
 */
import { Effect, Either, Schema } from "effect"
import { Caller } from "../access/context.js"
import { reaches } from "../access/scope.js"
import { type DetailItem, readUnavailable } from "../errors/errors.js"
import { CreateWebhookBody, webhooks } from "../events/webhooks.js"
import { products } from "../catalog/products.js"
import { showcases } from "../catalog/showcases.js"
import { modules } from "../content/content-catalog.js"
import { customFields } from "../people/people.js"
import { tags } from "../people/people-users.js"
import { type AccessPath, type Json, type JsonObject, listPath, Records, type StoredRecord } from "../ports/store.js"
import { anchorsOf, capabilityOf, type ResourceDefinition } from "../records/resource.js"
import { detailsOf, Enum, Text } from "../records/schema.js"
import { SETTINGS_TYPE, type SettingsGroup, settingsGroups } from "../site/site-settings.js"
import { loadAccount } from "../access/accounts.js"

/** At most this many entries in each list of a manifest (and modules per product). */
export const MAX_MANIFEST_ENTRIES = 1000

type AnySchema = Schema.Schema.AnyNoContext

const entries = (entry: AnySchema): AnySchema =>
  (Schema.Array(entry) as unknown as Schema.Schema<ReadonlyArray<unknown>>).pipe(Schema.maxItems(MAX_MANIFEST_ENTRIES)) as unknown as AnySchema

const struct = (fields: Schema.Struct.Fields): AnySchema => Schema.Struct(fields) as unknown as AnySchema

const structFields = (schema: Schema.Schema.AnyNoContext): Schema.Struct.Fields => (schema as unknown as Schema.Struct<Schema.Struct.Fields>).fields

const without = (fields: Schema.Struct.Fields, ...names: ReadonlyArray<string>): Schema.Struct.Fields =>
  Object.fromEntries(Object.entries(fields).filter(([name]) => !names.includes(name)))

const ShowcaseEntry = struct(without(structFields(showcases.create), "image"))
const TagEntry = struct(structFields(tags.create))
const CustomFieldEntry = struct(without(structFields(customFields.create), "position"))
const WebhookEntry = struct(without(CreateWebhookBody.fields, "payload_version", "resource_filters"))
const ModuleEntry = struct(without(structFields(modules.create), "position"))
const ProductEntry = struct({
  external_id: Text({ min: 1, max: 255 }).annotations({ description: "The product's key: its `external_id`." }),
  name: Text({ min: 1, max: 200 }),
  format: Enum("course", "blog"),
  showcase: Text({ min: 1, max: 200 }).annotations({ description: "The `name` of its showcase (of this manifest or of the account)." }),
  modules: Schema.optional(entries(ModuleEntry))
})

/** A settings group's entry: its PATCH body without the file fields (file IDs belong to one account). */
const settingsEntry = (group: SettingsGroup) => struct(without(structFields(group.update), ...(group.files ?? [])))

export const Manifest = Schema.Struct({
  prune: Schema.optional(Schema.Boolean),
  showcases: Schema.optional(entries(ShowcaseEntry)),
  tags: Schema.optional(entries(TagEntry)),
  custom_fields: Schema.optional(entries(CustomFieldEntry)),
  webhooks: Schema.optional(entries(WebhookEntry)),
  settings: Schema.optional(struct(Object.fromEntries(settingsGroups.map((group) => [group.group, Schema.optional(settingsEntry(group))])))),
  products: Schema.optional(entries(ProductEntry))
}).annotations({ identifier: "ConfigurationManifest" })

export type ManifestInput = JsonObject

/** The kinds of a manifest's lists other than products (with their modules) and settings. */
export interface ManifestKind {
  /** The manifest's list. */
  readonly list: "showcases" | "tags" | "custom_fields" | "webhooks" | "products" | "modules"
  readonly definition: ResourceDefinition
  /** The field of an entry (and of the record) that names it. */
  readonly keyField: string
  /** Fields set at creation only: a difference is 422 `plan_invalid`. */
  readonly immutable: ReadonlyArray<string>
  /** The fields an export writes (each a field of the entry). */
  readonly exported: ReadonlyArray<string>
}

export const showcaseKind: ManifestKind = { list: "showcases", definition: showcases, keyField: "name", immutable: [], exported: ["name", "description", "status"] }
export const tagKind: ManifestKind = { list: "tags", definition: tags, keyField: "name", immutable: [], exported: ["name"] }
export const customFieldKind: ManifestKind = {
  list: "custom_fields",
  definition: customFields,
  keyField: "key",
  immutable: ["type"],
  exported: ["key", "label", "type", "options", "required"]
}
export const webhookKind: ManifestKind = {
  list: "webhooks",
  definition: webhooks,
  keyField: "url",
  immutable: [],
  exported: ["url", "description", "event_types", "status", "max_per_second", "timeout_ms"]
}
export const productKind: ManifestKind = { list: "products", definition: products, keyField: "external_id", immutable: ["format"], exported: ["external_id", "name", "format"] }
export const moduleKind: ManifestKind = { list: "modules", definition: modules, keyField: "name", immutable: [], exported: ["name", "description"] }

/** The simple kinds, in the order their creates and updates run (their deletes run in reverse). */
export const flatKinds: ReadonlyArray<ManifestKind> = [showcaseKind, tagKind, customFieldKind, webhookKind]
export const manifestKinds: ReadonlyArray<ManifestKind> = [...flatKinds, productKind, moduleKind]

/** Decode a manifest; its problems itemized by path in the request (`manifest.products[2].name`). */
export const decodeManifest = (input: unknown): Either.Either<JsonObject, ReadonlyArray<DetailItem>> => {
  const decoded = Schema.decodeUnknownEither(Manifest as unknown as AnySchema)(input, { onExcessProperty: "error", errors: "all" })
  return Either.isRight(decoded)
    ? Either.right(decoded.right as unknown as JsonObject)
    : Either.left(detailsOf(decoded.left, "field").map((detail) => ({ ...detail, field: `manifest${detail.field ? (detail.field.startsWith("[") ? "" : ".") + detail.field : ""}` })))
}

// ---------------------------------------------------------------------------------------
// The state

const byId = [{ field: "id", kind: "text" }] as const

/**
 * The reads of a plan (every record of a managed type, oldest first, and a product's modules)
 * and of an application's items (the records holding one key, oldest first).
 */
export const configurationAccessPaths: ReadonlyArray<AccessPath> = [
  ...[showcaseKind, tagKind, customFieldKind, webhookKind, productKind].flatMap((kind) => [
    listPath(kind.definition.type, [], byId),
    listPath(kind.definition.type, [kind.keyField], byId)
  ]),
  listPath(modules.type, ["product_id"], byId),
  listPath(modules.type, ["product_id", moduleKind.keyField], byId)
]

/**
 * Whether the caller may see a record a plan reads (access/scope.ts): its resource's
 * `<plural>.read` reaches it. A plan, its application and an exported manifest see only these,
 * so a limited credential neither reads nor changes (nor prunes) what it cannot reach.
 */
const reachable = (definition: ResourceDefinition) =>
  Effect.map(Caller, (caller) => (record: StoredRecord) => reaches(caller.grant, capabilityOf(definition, "read"), anchorsOf(definition, record.data)))

/** Every live record of a resource the caller reaches (oldest first, read by pages of 1,000), optionally under a parent. */
export const liveRecords = (definition: ResourceDefinition, parent?: { readonly field: string; readonly id: string }) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const seen = yield* reachable(definition)
    const out: Array<StoredRecord> = []
    for (;;) {
      const last = out.at(-1)
      const page = yield* records
        .list(caller.tenant, definition.type, {
          where: parent ? [{ field: parent.field, op: "eq", value: parent.id }] : [],
          sort: { field: "id", kind: "text", direction: "asc" },
          after: last ? { value: last.id, id: last.id } : undefined,
          limit: 1000
        })
        .pipe(Effect.mapError(readUnavailable))
      out.push(...page)
      if (page.length < 1000) return out.filter((record) => record.data.deleted !== true && seen(record))
    }
  })

/** The managed records of a kind by key: the oldest record holding each key (records without a key are not managed). */
export const byKey = (kind: ManifestKind, records: ReadonlyArray<StoredRecord>): ReadonlyMap<string, StoredRecord> => {
  const out = new Map<string, StoredRecord>()
  for (const record of records) {
    const key = record.data[kind.keyField]
    if (typeof key === "string" && key !== "" && !out.has(key)) out.set(key, record)
  }
  return out
}

/** The managed record of a kind holding `key` (the oldest live one), under a parent for modules: one read of an index. */
export const findByKey = (kind: ManifestKind, key: string, parent?: { readonly field: string; readonly id: string }) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const seen = yield* reachable(kind.definition)
    const where = [...(parent ? [{ field: parent.field, op: "eq" as const, value: parent.id }] : []), { field: kind.keyField, op: "eq" as const, value: key }]
    let after: { value: string; id: string } | undefined
    for (;;) {
      const page = yield* records
        .list(caller.tenant, kind.definition.type, { where, sort: { field: "id", kind: "text", direction: "asc" }, after, limit: 100 })
        .pipe(Effect.mapError(readUnavailable))
      const live = page.find((record) => record.data.deleted !== true && seen(record))
      if (live || page.length < 100) return live
      after = { value: page.at(-1)!.id, id: page.at(-1)!.id }
    }
  })

/** A settings group as the manifest sees it: its stored record (if written) and its effective values. */
export const settingsState = (group: SettingsGroup) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const record = yield* records.get(caller.tenant, SETTINGS_TYPE, group.group).pipe(Effect.mapError(readUnavailable))
    const account = yield* loadAccount(caller.tenant.accountId).pipe(Effect.mapError(readUnavailable))
    const overrides = (record?.data.overrides as JsonObject | undefined) ?? {}
    const defaults = group.defaults({ name: typeof account?.data.name === "string" ? account.data.name : "" })
    const effective: JsonObject = { ...defaults, ...overrides }
    return { record, overrides, effective }
  })

/** Does a settings value differ from the manifest's (`null` in a manifest: the default, i.e. not overridden)? */
export const settingDiffers = (state: { readonly overrides: JsonObject; readonly effective: JsonObject }, field: string, wanted: Json): boolean =>
  wanted === null ? field in state.overrides : !sameJson(state.effective[field] ?? null, wanted)

export const sameJson = (a: Json | undefined, b: Json | undefined): boolean => JSON.stringify(a ?? null) === JSON.stringify(b ?? null)

// ---------------------------------------------------------------------------------------
// The export

const pick = (data: JsonObject, fields: ReadonlyArray<string>): JsonObject => Object.fromEntries(fields.map((field) => [field, data[field] ?? null]))

/** The account's configuration as a manifest: applied to another account, it makes that one's configuration the same. */
export const exportManifest = Effect.fn("ConfigurationPlans.exportManifest")(function* () {
  const out: Record<string, Json> = {}
  for (const kind of flatKinds) {
    out[kind.list] = [...byKey(kind, yield* liveRecords(kind.definition)).values()].map((record) => pick(record.data, kind.exported))
  }
  const settings: Record<string, Json> = {}
  for (const group of settingsGroups) {
    const { overrides } = yield* settingsState(group)
    const values = Object.fromEntries(Object.entries(overrides).filter(([field]) => !(group.files ?? []).includes(field)))
    if (Object.keys(values).length > 0) settings[group.group] = values
  }
  out.settings = settings
  const showcaseNames = new Map([...byKey(showcaseKind, yield* liveRecords(showcases)).values()].map((record) => [record.id, String(record.data.name)]))
  const productList: Array<Json> = []
  for (const product of byKey(productKind, yield* liveRecords(products)).values()) {
    const showcase = showcaseNames.get(String(product.data.showcase_id))
    // A product on a showcase that is not managed (its name held by an older one) cannot be named: not exported.
    if (showcase === undefined) continue
    const productModules = [...byKey(moduleKind, yield* liveRecords(modules, { field: "product_id", id: product.id })).values()]
    productList.push({ ...pick(product.data, productKind.exported), showcase, modules: productModules.map((module) => pick(module.data, moduleKind.exported)) })
  }
  out.products = productList
  return out as JsonObject
})
