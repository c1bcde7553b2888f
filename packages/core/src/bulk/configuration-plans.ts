/**
 * Declarative configuration plans (release 3.2.0, "the service plans"; docs/configuration-plans.md):
 * Terraform's plan and apply for an account's configuration.
 *
 * `POST /configuration/plans` compares a manifest (`configuration-manifest.ts`) with the
 * current state and records a plan (`pln_`): one change per resource, `create`, `update`
 * (with each changed field, before and after) or `delete`, and the revision of every record
 * it read. `POST /configuration/plans/{plan_id}/applications` applies it as an asynchronous
 * operation (type `configuration_plan_application`), one item per change, each running what
 * the resource's own route runs (`writeResource` of registry/batch-use-cases.ts, as batch items
 * do; the registry hands it to `configurationPlanOperationKinds`, the registry being above us).
 *
 * Decisions:
 * - Order: creates and updates of showcases, tags, custom fields, webhooks, settings groups,
 *   products, then modules; then the deletes in the reverse order (modules first).
 * - Validity: a plan can be applied for 1 hour (`PLAN_VALIDITY_MS`); afterwards its status
 *   reads `expired` and an application is 409 `plan_expired`; a day later the housekeeping
 *   removes it (404). A plan is applied once: a second
 *   application is 409 `state_conflict`, reason `plan_already_applied`.
 * - Staleness (409 `plan_stale`): at the application's start, every record the plan read must
 *   be at the revision it saw, and no record may have taken a key the plan creates; nothing
 *   runs otherwise. While the items run, each checks its record again and fails with
 *   `plan_stale` if the fields the plan compared changed (a position or a count moved by an
 *   earlier item of the same application is not a change the plan read).
 * - Permissions: planning reads the types the manifest lists (`<type>.read`, `settings.read`);
 *   applying needs the write of each change (`showcases.create`, `settings.update`, …).
 */
import { Clock, Effect } from "effect"
import { Caller, Ids } from "../access/context.js"
import { allows } from "../access/policies.js"
import { type ApiError, apiError, type DetailItem, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent } from "../events/events.js"
import { type ItemServices, type OperationKind, startOperation } from "../operations/operations.js"
import { type Json, type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import { type ResourceDefinition, resourceView } from "../records/resource.js"
import { DAY, formatTimestamp, HOUR } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { SETTINGS_TYPE, type SettingsGroup, settingsGroups, updateSettings } from "../site/site-settings.js"
import { recordChange } from "../trail/audit.js"
import {
  byKey,
  decodeManifest,
  findByKey,
  flatKinds,
  type ManifestKind,
  manifestKinds,
  liveRecords,
  moduleKind,
  productKind,
  sameJson,
  settingDiffers,
  settingsState,
  showcaseKind
} from "./configuration-manifest.js"

export const CONFIGURATION_PLAN_TYPE = "configuration_plan"
/** The operation type of an application. */
export const CONFIGURATION_PLAN_APPLICATION = "configuration_plan_application"
/** How long a plan can be applied after it was computed (§8.3: a plan is kept until it expires). */
export const PLAN_VALIDITY_MS = 1 * HOUR
/**
 * §8.3 keeps a plan until it expires; the housekeeping (`trail/retention.ts`) removes it a day
 * later, so that an application just past the hour still answers 409 `plan_expired`, not 404.
 */
export const CONFIGURATION_PLAN_RETENTION_MS = PLAN_VALIDITY_MS + 1 * DAY

/** At most this many changes in one plan (§8.2): its application is one operation, its items recorded with it. */
export const MAX_PLAN_CHANGES = 10_000

export const configurationPlanFields = ["object", "id", "status", "summary", "changes", "operation_id", "created_at", "expires_at", "applied_at"] as const

type Action = "create" | "update" | "delete"

/** One change of a plan, as shown. */
interface Change {
  readonly action: Action
  readonly resource_type: string
  readonly key: string
  /** A module's product (its `external_id`); `null` otherwise. */
  readonly parent_key: string | null
  readonly resource_id: string | null
  /** Per field: the value before and after (`null` before a create, after a delete). */
  readonly fields: Record<string, { readonly before: Json; readonly after: Json }>
}

/** What an item of the application runs (stored in the plan, then in the operation's items). */
interface ItemPayload extends JsonObject {
  readonly list: string
  readonly action: Action
  readonly key: string
  readonly parent_key: string | null
  readonly id: string | null
  readonly body: JsonObject
  /** Update and delete: the revision the plan saw and the compared fields as they were. */
  readonly expected_revision: number | null
  readonly before: JsonObject | null
}

/** A record the plan read, at the revision it saw (a settings group never written: revision 0). */
interface Read extends JsonObject {
  readonly type: string
  readonly id: string
  readonly revision: number
}

interface Planned {
  readonly change: Change
  readonly item: ItemPayload
}

const kindOf = (list: string): ManifestKind | undefined => manifestKinds.find((kind) => kind.list === list)
const groupOf = (name: string): SettingsGroup | undefined => settingsGroups.find((group) => group.group === name)

const pick = (data: JsonObject, fields: ReadonlyArray<string>): JsonObject => Object.fromEntries(fields.map((field) => [field, data[field] ?? null]))

/** Compared as the record stores it (a webhook's event types without repeats). */
const normalized = (field: string, value: Json | undefined): Json =>
  field === "event_types" && Array.isArray(value) ? [...new Set(value)] : (value ?? null)

// ---------------------------------------------------------------------------------------
// Computing a plan

/** The diff of one list of entries against the records of its kind. */
const diffList = (
  kind: ManifestKind,
  entries: ReadonlyArray<JsonObject>,
  records: ReadonlyArray<StoredRecord>,
  options: {
    readonly path: string
    readonly prune: boolean
    readonly parentKey: string | null
    /** The record's value of a compared field, when it is not the record's own (a product's showcase name). */
    readonly valueIn?: (record: StoredRecord, field: string) => Json
  },
  out: { readonly planned: Array<Planned>; readonly deletes: Array<Planned>; readonly reads: Array<Read>; readonly problems: Array<DetailItem> }
): ReadonlyMap<string, StoredRecord> => {
  const existing = byKey(kind, records)
  const seen = new Set<string>()
  const type = kind.definition.type
  entries.forEach((entry, i) => {
    const key = String(entry[kind.keyField])
    if (seen.has(key)) {
      out.problems.push({ field: `${options.path}[${i}].${kind.keyField}`, code: "invalid_value", reason: "duplicate_key" })
      return
    }
    seen.add(key)
    const compared = Object.keys(entry).filter((field) => field !== "modules" && entry[field] !== undefined)
    const record = existing.get(key)
    const base = { resource_type: type, key, parent_key: options.parentKey }
    const item = { list: kind.list, key, parent_key: options.parentKey }
    if (!record) {
      const fields = Object.fromEntries(compared.map((field) => [field, { before: null, after: entry[field] ?? null }]))
      out.planned.push({
        change: { action: "create", ...base, resource_id: null, fields },
        item: { ...item, action: "create", id: null, body: pick(entry, compared), expected_revision: null, before: null }
      })
      return
    }
    out.reads.push({ type, id: record.id, revision: record.revision })
    const valueOf = (field: string) => (options.valueIn ? options.valueIn(record, field) : normalized(field, record.data[field]))
    const fields: Record<string, { before: Json; after: Json }> = {}
    for (const field of compared) {
      const before = valueOf(field)
      const after = normalized(field, entry[field])
      if (sameJson(before, after)) continue
      if (kind.immutable.includes(field)) {
        out.problems.push({ field: `${options.path}[${i}].${field}`, code: "not_allowed", reason: "immutable" })
        continue
      }
      fields[field] = { before, after }
    }
    if (Object.keys(fields).length === 0) return
    out.planned.push({
      change: { action: "update", ...base, resource_id: record.id, fields },
      item: {
        ...item,
        action: "update",
        id: record.id,
        body: Object.fromEntries(Object.entries(fields).map(([field, { after }]) => [field, after])),
        expected_revision: record.revision,
        before: Object.fromEntries(compared.map((field) => [field, valueOf(field)]))
      }
    })
  })
  if (options.prune) {
    for (const [key, record] of existing) {
      if (seen.has(key)) continue
      out.reads.push({ type, id: record.id, revision: record.revision })
      const before = Object.fromEntries(kind.exported.map((field) => [field, options.valueIn?.(record, field) ?? normalized(field, record.data[field])]))
      out.deletes.push({
        change: {
          action: "delete",
          resource_type: type,
          key,
          parent_key: options.parentKey,
          resource_id: record.id,
          fields: Object.fromEntries(Object.entries(before).map(([field, value]) => [field, { before: value, after: null }]))
        },
        item: { list: kind.list, action: "delete", key, parent_key: options.parentKey, id: record.id, body: {}, expected_revision: record.revision, before }
      })
    }
  }
  return existing
}

const arrayOf = (value: Json | undefined): ReadonlyArray<JsonObject> | undefined => (Array.isArray(value) ? (value as ReadonlyArray<JsonObject>) : undefined)

/** The capability a plan's reading of a list needs. */
const readCapability = (list: string) => `${list}.read`

/** Compare a decoded manifest with the current state: the plan's changes in the order they run, and what it read. */
const computePlan = (manifest: JsonObject) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const prune = manifest.prune === true
    const out = { planned: [] as Array<Planned>, deletes: [] as Array<Planned>, reads: [] as Array<Read>, problems: [] as Array<DetailItem> }
    const listed = [...flatKinds.map((kind) => kind.list), "products"].filter((list) => manifest[list] !== undefined)
    for (const capability of [...listed.map(readCapability), ...(manifest.products !== undefined ? ["modules.read"] : []), ...(manifest.settings !== undefined ? ["settings.read"] : [])]) {
      if (!allows(caller.grant, capability)) return yield* Effect.fail(apiError("permission_denied", { params: { capability } }))
    }

    // Showcases are read whenever products are listed: a product names its showcase.
    const showcaseRecords = manifest.showcases !== undefined || manifest.products !== undefined ? yield* liveRecords(showcaseKind.definition) : []
    const flatDeletes: Array<Array<Planned>> = []
    for (const kind of flatKinds) {
      const entries = arrayOf(manifest[kind.list])
      if (entries === undefined) continue
      const records = kind === showcaseKind ? showcaseRecords : yield* liveRecords(kind.definition)
      const deletes: Array<Planned> = []
      diffList(kind, entries, records, { path: `manifest.${kind.list}`, prune, parentKey: null }, { ...out, deletes })
      flatDeletes.push(deletes)
    }

    // Settings groups: only the fields an entry names; never deleted.
    const settings = (manifest.settings ?? {}) as Record<string, JsonObject | undefined>
    for (const group of settingsGroups) {
      const entry = settings[group.group]
      if (entry === undefined) continue
      const state = yield* settingsState(group)
      out.reads.push({ type: SETTINGS_TYPE, id: group.group, revision: state.record?.revision ?? 0 })
      const fields: Record<string, { before: Json; after: Json }> = {}
      for (const [field, wanted] of Object.entries(entry)) {
        if (wanted === undefined || !settingDiffers(state, field, wanted)) continue
        fields[field] = { before: state.effective[field] ?? null, after: wanted }
      }
      if (Object.keys(fields).length === 0) continue
      out.planned.push({
        change: { action: "update", resource_type: SETTINGS_TYPE, key: group.group, parent_key: null, resource_id: group.group, fields },
        item: {
          list: "settings",
          action: "update",
          key: group.group,
          parent_key: null,
          id: group.group,
          body: Object.fromEntries(Object.entries(fields).map(([field, { after }]) => [field, after])),
          expected_revision: state.record?.revision ?? 0,
          before: Object.fromEntries(Object.keys(fields).map((field) => [field, state.effective[field] ?? null]))
        }
      })
    }

    // Products name their showcase; their modules are diffed under each product.
    const productDeletes: Array<Planned> = []
    const moduleDeletes: Array<Planned> = []
    const products = arrayOf(manifest.products)
    if (products !== undefined) {
      const showcaseNames = new Map(showcaseRecords.map((record) => [record.id, String(record.data.name)]))
      const existingShowcases = byKey(showcaseKind, showcaseRecords)
      const manifestShowcases = arrayOf(manifest.showcases)?.map((entry) => String(entry.name))
      // The showcases there will be: the manifest's, and (unless pruned away) the account's.
      const available = new Set([...(manifestShowcases ?? []), ...(manifestShowcases !== undefined && prune ? [] : existingShowcases.keys())])
      products.forEach((entry, i) => {
        if (!available.has(String(entry.showcase))) {
          out.problems.push({ field: `manifest.products[${i}].showcase`, code: "invalid_value", reason: "not_found" })
        }
      })
      const productRecords = yield* liveRecords(productKind.definition)
      const productModules: Array<Planned> = []
      const existingProducts = diffList(
        productKind,
        products,
        productRecords,
        {
          path: "manifest.products",
          prune,
          parentKey: null,
          valueIn: (record, field) => (field === "showcase" ? (showcaseNames.get(String(record.data.showcase_id)) ?? null) : normalized(field, record.data[field]))
        },
        { ...out, deletes: productDeletes }
      )
      for (const [i, entry] of products.entries()) {
        const moduleEntries = arrayOf(entry.modules)
        if (moduleEntries === undefined) continue
        const product = existingProducts.get(String(entry.external_id))
        const records = product ? yield* liveRecords(moduleKind.definition, { field: "product_id", id: product.id }) : []
        diffList(
          moduleKind,
          moduleEntries,
          records,
          { path: `manifest.products[${i}].modules`, prune, parentKey: String(entry.external_id) },
          { ...out, planned: productModules, deletes: moduleDeletes }
        )
      }
      out.planned.push(...productModules)
    }
    if (out.problems.length > 0) return yield* Effect.fail(apiError("plan_invalid", { details: out.problems }))
    const planned = [...out.planned, ...moduleDeletes, ...productDeletes, ...flatDeletes.reverse().flat()]
    if (planned.length > MAX_PLAN_CHANGES) {
      return yield* Effect.fail(apiError("plan_invalid", { details: [{ field: "manifest", code: "too_many_items", params: { max: MAX_PLAN_CHANGES } }] }))
    }
    return { planned, reads: out.reads }
  })

// ---------------------------------------------------------------------------------------
// The plan

const statusOf = (record: StoredRecord, now: number): string =>
  record.data.status === "planned" && String(record.data.expires_at) <= formatTimestamp(now) ? "expired" : String(record.data.status)

const planView = (record: StoredRecord, now: number): JsonObject => inOrder({ ...record.data, status: statusOf(record, now) }, configurationPlanFields)

/** Compute and record a plan for `manifest` (422 `plan_invalid`, itemized by path in the request). */
export const createConfigurationPlan = Effect.fn("ConfigurationPlans.create")(function* (body: { readonly manifest: unknown }) {
  const decoded = decodeManifest(body.manifest)
  if (decoded._tag === "Left") return yield* Effect.fail(apiError("plan_invalid", { details: decoded.left }))
  const { planned, reads } = yield* computePlan(decoded.right)
  const caller = yield* Caller
  const records = yield* Records
  const id = yield* (yield* Ids).next("plan")
  const now = yield* Clock.currentTimeMillis
  const changes = planned.map((p) => p.change)
  const count = (action: Action) => changes.filter((change) => change.action === action).length
  const data: JsonObject = {
    object: CONFIGURATION_PLAN_TYPE,
    id,
    status: "planned",
    summary: { create: count("create"), update: count("update"), delete: count("delete") },
    changes: changes as unknown as Json,
    operation_id: null,
    created_at: formatTimestamp(now),
    expires_at: formatTimestamp(now + PLAN_VALIDITY_MS),
    applied_at: null,
    // Internal: what the application runs and checks.
    items: planned.map((p) => p.item),
    reads: reads as unknown as Json
  }
  const record = yield* records.insert(caller.tenant, CONFIGURATION_PLAN_TYPE, id, data).pipe(Effect.mapError(writeUnavailable))
  const view = planView(record, now)
  yield* recordChange(`${CONFIGURATION_PLAN_TYPE}.created`, { object: CONFIGURATION_PLAN_TYPE, id })
  yield* emitEvent(`${CONFIGURATION_PLAN_TYPE}.created`, view)
  return view
})

const loadPlan = (id: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const record = yield* records.get(caller.tenant, CONFIGURATION_PLAN_TYPE, id).pipe(Effect.mapError(readUnavailable))
    if (!record) return yield* Effect.fail(apiError("not_found"))
    return record
  })

export const getConfigurationPlan = Effect.fn("ConfigurationPlans.get")(function* (id: string) {
  const record = yield* loadPlan(id)
  return planView(record, yield* Clock.currentTimeMillis)
})

// ---------------------------------------------------------------------------------------
// Staleness

const stale = (reason: string, index?: number): ApiError =>
  apiError("plan_stale", { reason, details: index === undefined ? [] : [{ field: `changes[${index}]`, code: "plan_stale", reason }] })

/** Where a kind's record is looked up by key: a module under its product (found by the product's key). */
const parentOf = (item: ItemPayload) =>
  Effect.gen(function* () {
    if (item.list !== "modules") return undefined
    const product = yield* findByKey(productKind, String(item.parent_key))
    if (!product) return yield* Effect.fail(stale("gone"))
    return { field: "product_id", id: product.id }
  })

/** The compared fields of a record as they are now (a product's showcase by name). */
const currentValues = (item: ItemPayload, record: StoredRecord) =>
  Effect.gen(function* () {
    const before = item.before ?? {}
    const out: Record<string, Json> = {}
    for (const field of Object.keys(before)) {
      if (item.list === "products" && field === "showcase") {
        const caller = yield* Caller
        const records = yield* Records
        const showcase = yield* records.get(caller.tenant, showcaseKind.definition.type, String(record.data.showcase_id)).pipe(Effect.mapError(readUnavailable))
        out[field] = showcase?.data.name ?? null
      } else out[field] = normalized(field, record.data[field])
    }
    return out
  })

/** An item's own check, as it runs: its record still as the plan saw it (see the header). */
const checkItem = (item: ItemPayload) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    if (item.list === "settings") {
      const group = groupOf(item.key)
      if (!group) return yield* Effect.fail(stale("gone"))
      const state = yield* settingsState(group)
      if ((state.record?.revision ?? 0) === item.expected_revision) return
      const changed = Object.entries(item.before ?? {}).some(([field, value]) => !sameJson(state.effective[field] ?? null, value))
      if (changed) return yield* Effect.fail(stale("changed"))
      return
    }
    const kind = kindOf(item.list)!
    if (item.action === "create") {
      const parent = yield* parentOf(item)
      if (yield* findByKey(kind, item.key, parent)) return yield* Effect.fail(stale("exists"))
      return
    }
    const record = yield* records.get(caller.tenant, kind.definition.type, String(item.id)).pipe(Effect.mapError(readUnavailable))
    if (!record || record.data.deleted === true) return yield* Effect.fail(stale("gone"))
    if (record.revision === item.expected_revision) return
    const now = yield* currentValues(item, record)
    if (Object.entries(item.before ?? {}).some(([field, value]) => !sameJson(now[field], value))) return yield* Effect.fail(stale("changed"))
  })

/** Records read per store call by the application's check (`getMany`). */
const CHECK_READ_PAGE = 500

/**
 * At the application's start: every record read at its revision, no key the plan creates taken
 * since. In the request, before its 202, so it reads in bulk: the records by type, 500 per
 * read, and each kind's live keys once (a module's under each product), never one query per
 * change (a plan of 9,005 changes took ~21 s that way, and its request ran out of time: 503).
 */
const checkPlanFresh = (plan: StoredRecord) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const reads = (plan.data.reads ?? []) as unknown as ReadonlyArray<Read>
    for (const type of new Set(reads.map((read) => read.type))) {
      const ofType = reads.filter((read) => read.type === type)
      for (let start = 0; start < ofType.length; start += CHECK_READ_PAGE) {
        const page = ofType.slice(start, start + CHECK_READ_PAGE)
        const found = yield* records.getMany(caller.tenant, type, page.map((read) => read.id)).pipe(Effect.mapError(readUnavailable))
        const byId = new Map(found.map((record) => [record.id, record]))
        for (const read of page) {
          const record = byId.get(read.id)
          const revision = record ? record.revision : type === SETTINGS_TYPE ? 0 : -1
          if (revision !== read.revision || record?.data.deleted === true) return yield* Effect.fail(stale("changed"))
        }
      }
    }
    // Keys the plan creates, against each kind's live keys (a module under a product the plan creates cannot be taken).
    const keysRead = new Map<string, ReadonlyMap<string, StoredRecord>>()
    const liveKeys = (kind: ManifestKind, parent?: { field: string; id: string }) =>
      Effect.gen(function* () {
        const cacheKey = `${kind.list}:${parent?.id ?? ""}`
        const known = keysRead.get(cacheKey)
        if (known) return known
        const keys = byKey(kind, yield* liveRecords(kind.definition, parent))
        keysRead.set(cacheKey, keys)
        return keys
      })
    const items = (plan.data.items ?? []) as unknown as ReadonlyArray<ItemPayload>
    for (const [index, item] of items.entries()) {
      if (item.action !== "create" || item.list === "settings") continue
      let parent: { field: string; id: string } | undefined
      if (item.list === "modules") {
        const product = (yield* liveKeys(productKind)).get(String(item.parent_key))
        if (!product) continue
        parent = { field: "product_id", id: product.id }
      }
      if ((yield* liveKeys(kindOf(item.list)!, parent)).has(item.key)) return yield* Effect.fail(stale("exists", index))
    }
  })

// ---------------------------------------------------------------------------------------
// Applying

const capabilityOf = (item: ItemPayload): string => (item.list === "settings" ? "settings.update" : `${item.list}.${item.action}`)

/**
 * Apply a plan: 202 with the operation. Checked first, nothing queued otherwise: a plan
 * applied before (409 `state_conflict`, `plan_already_applied`), past its validity (409
 * `plan_expired`), the writes it needs (403), the state it read (409 `plan_stale`).
 */
export const applyConfigurationPlan = Effect.fn("ConfigurationPlans.apply")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const plan = yield* loadPlan(id)
  const now = yield* Clock.currentTimeMillis
  if (plan.data.status !== "planned") return yield* Effect.fail(apiError("state_conflict", { reason: "plan_already_applied" }))
  if (statusOf(plan, now) === "expired") return yield* Effect.fail(apiError("plan_expired"))
  const items = (plan.data.items ?? []) as unknown as ReadonlyArray<ItemPayload>
  for (const capability of new Set(items.map(capabilityOf))) {
    if (!allows(caller.grant, capability)) return yield* Effect.fail(apiError("permission_denied", { params: { capability } }))
  }
  yield* checkPlanFresh(plan)
  const operation = yield* startOperation(
    CONFIGURATION_PLAN_APPLICATION,
    items.map((item, index) => ({ key: `${index + 1}:${item.list}:${item.parent_key ? `${item.parent_key}/` : ""}${item.key}`.slice(0, 255), payload: item }))
  )
  const saved = yield* records
    .update(
      caller.tenant,
      CONFIGURATION_PLAN_TYPE,
      id,
      { ...plan.data, status: "applied", operation_id: String(operation.id), applied_at: formatTimestamp(now) },
      { expectedRevision: plan.revision }
    )
    .pipe(
      Effect.catchTag("RevisionConflict", () => Effect.fail(apiError("state_conflict", { reason: "plan_already_applied" }))),
      Effect.mapError((e) => (e._tag === "ApiError" ? e : writeUnavailable(e)))
    )
  yield* recordChange(`${CONFIGURATION_PLAN_TYPE}.applied`, { object: CONFIGURATION_PLAN_TYPE, id })
  yield* emitEvent(`${CONFIGURATION_PLAN_TYPE}.applied`, planView(saved, now))
  return operation
})

/** The write a resource's own route runs (`writeResource`, given by the registry). */
export type ResourceWriter = (
  definition: ResourceDefinition,
  action: Action,
  parents: Readonly<Record<string, string | undefined>>,
  id: string,
  body: JsonObject
) => Effect.Effect<StoredRecord | undefined, ApiError, ItemServices>

/** One change of an application: checked again, its references resolved by key, then the resource's own write. */
const runChange = (writeResource: ResourceWriter) => (payload: JsonObject) =>
  Effect.gen(function* () {
    const item = payload as ItemPayload
    yield* checkItem(item)
    if (item.list === "settings") {
      const group = groupOf(item.key)!
      const { data } = yield* updateSettings(group, item.body, undefined)
      return { id: group.group, object: data } as Json
    }
    const kind = kindOf(item.list)!
    const parent = yield* parentOf(item)
    let body = item.body
    if (item.list === "products" && typeof body.showcase === "string") {
      const showcase = yield* findByKey(showcaseKind, body.showcase)
      if (!showcase) return yield* Effect.fail(stale("gone"))
      const { showcase: _name, ...rest } = body
      body = { ...rest, showcase_id: showcase.id }
    }
    const parents = parent ? { product_id: parent.id } : {}
    const record = yield* writeResource(kind.definition, item.action, parents, String(item.id ?? ""), body)
    return (record ? { id: record.id, object: resourceView(kind.definition, record) } : { id: String(item.id ?? "") }) as Json
  })

/** The handler of an application's items, running each change through `writeResource`. */
export const configurationPlanOperationKinds = (writeResource: ResourceWriter): Readonly<Record<string, OperationKind>> => ({
  [CONFIGURATION_PLAN_APPLICATION]: { runItem: runChange(writeResource) }
})
