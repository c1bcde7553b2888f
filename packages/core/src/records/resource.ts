/**
 * One resource machinery, many resources. A resource is described once (`ResourceDefinition`):
 * its representation, create and update bodies, parent, capability, filters, sorts, unique
 * keys, trash, replica and revision behaviour. From that description this module derives its
 * use cases (list, get, create, update, trash/restore or remove), each writing its audit
 * entry and its event in the unit of work of the change; `@syllabus/http` derives the routes
 * and their OpenAPI from the same description.
 *
 * Rules particular to one resource plug in as small named functions of its description
 * (`defaults`, `change`, `rules`).
 */
import { Clock, Effect, Option, Schema } from "effect"
import { Caller, Ids } from "../access/context.js"
import { type Anchors, type PersonalField, reachAlternatives, reachOf, reaches, requireReach } from "../access/scope.js"
import { type ApiError, apiError, type DetailItem, type ErrorCode, fieldError, writeUnavailable, readUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { requirePlanSlot } from "../limits/plan-limits.js"
import type { Crypto } from "../ports/crypto.js"
import {
  type Json,
  type JsonObject,
  Records,
  type SortSpec,
  type StoredRecord,
  type StoreUnavailable,
  type Tenant,
  type UniqueKey,
  type Where
} from "../ports/store.js"
import { recordChange } from "../trail/audit.js"
import type { IdKind } from "./ids.js"
import { paginate } from "./pagination.js"
import { formatTimestamp } from "./time.js"

/** What a rule function of a resource may use. */
export type RuleServices = Caller | Records | Ids | Crypto

export interface WriteContext {
  readonly tenant: Tenant
  readonly id: string
  /** The parent's ID for a nested resource. */
  readonly parentId: string | undefined
  readonly now: number
  /** A client's write (`ClientAccess`): the records its body names must be in the caller's reach (`requireReference`). */
  readonly checkScope: boolean
}

/** A query filter: its parameter schema, and the store conditions of a value. */
export interface FilterDefinition {
  readonly schema: Schema.Schema.AnyNoContext
  readonly where: (value: never) => ReadonlyArray<Where>
  /**
   * The data field the conditions of `where` test, and how: `equals` (`eq`/`in`) or a range
   * in `text` or `number` order. An access path: each store keeps an index for it.
   */
  readonly on: { readonly field: string; readonly match: "equals" | "text" | "number" }
  readonly description?: string
}

export interface ParentDefinition {
  /** Object type of the parent (its records are of this type). */
  readonly type: string
  readonly idKind: IdKind
  /** The field of the child holding the parent ID, also the path parameter (e.g. `product_id`). */
  readonly field: string
  /** The parent's own parent, for deeper nesting (e.g. a lesson's module under a product). */
  readonly parent?: ParentDefinition
}

export interface ResourceDefinition<
  F extends Schema.Struct.Fields = Schema.Struct.Fields,
  C extends Schema.Schema.AnyNoContext = Schema.Schema.AnyNoContext,
  U extends Schema.Schema.AnyNoContext = Schema.Schema.AnyNoContext
> {
  /** The `object` of the representation and the type of its records (e.g. `showcase`). */
  readonly type: string
  readonly idKind: IdKind
  /** Plural for paths, operation IDs and capabilities (`showcases` → `showcases.read`, …). */
  readonly plural: string
  /**
   * The resource its capabilities are named after, when not its own plural: what belongs to
   * another resource is read and written with that one's (a question's replies: `questions.read`).
   */
  readonly capabilities?: string
  /** Path of the collection under `/api/v3` (e.g. `/showcases`, `/products/{product_id}/modules`). */
  readonly path: string
  readonly tag: string
  readonly parent?: ParentDefinition
  /**
   * Fields naming the records this one belongs to, for resource-limited policies (§5,
   * access/scope.ts): a policy naming one of them reaches this record too (an enrollment's
   * `product_id` and `user_id`). A nested resource belongs to its outermost parent without
   * saying so.
   */
  readonly owners?: ReadonlyArray<string>
  /**
   * Where the representation holds a person's personal data (§5 `users.read_personal`): every
   * surface that shows the resource (its routes, events, exports, operation items) nulls each for
   * a reader who may not see that person's (access/scope.ts, `personalView`).
   */
  readonly personal?: ReadonlyArray<PersonalField>
  /**
   * The fields of the representation, in order, besides those the machinery writes:
   * `object`, `id`, the parent field, `created_at`, `updated_at`, `deleted` (trash) and
   * `revision`.
   */
  readonly fields: F
  readonly create: C
  readonly update: U
  /** The field values of a new record, from the create body. */
  readonly defaults: (
    body: Schema.Schema.Type<C>,
    context: WriteContext
  ) => Effect.Effect<JsonObject, ApiError, RuleServices>
  /**
   * The field values after a PATCH. Default: each field sent replaces the stored one, `null`
   * clears it (or restores `nullDefaults` where given).
   */
  readonly change?: (
    current: JsonObject,
    patch: Schema.Schema.Type<U>,
    context: WriteContext
  ) => Effect.Effect<JsonObject, ApiError, RuleServices>
  /** `null` in a PATCH restores these defaults instead of clearing (settings). */
  readonly nullDefaults?: JsonObject
  /** Identifiers unique among the non-trashed records of the tenant: 409 `already_exists` on the field. */
  readonly unique?: ReadonlyArray<string>
  /**
   * Identifiers unique across every account and environment (a global unique key, e.g. a custom
   * domain's host name): 409 `already_exists` on the field, whoever holds it.
   */
  readonly uniqueAcrossAccounts?: ReadonlyArray<string>
  /** DELETE moves to the trash (and `PATCH deleted=false` restores); else DELETE removes for good. */
  readonly trash: boolean
  /** Replicated records are read-only except `status` (3.3.0). */
  readonly replicable?: boolean
  /** How `revision` is written: the contract has both (`credential`: integer; `product`: string). */
  readonly revision: "integer" | "string"
  readonly filters?: Readonly<Record<string, FilterDefinition>>
  /**
   * Sort names accepted by `sort`, first is the default. One rule for every collection (§4.2):
   * `sort=<name>` is ascending (`created_at`: oldest first), a leading `-` reverses.
   */
  readonly sorts: ReadonlyArray<{ readonly name: string; readonly field: string; readonly kind: "text" | "number" }>
  /** Without `sort`, the first sort reversed (as if `-<name>` were sent): e.g. products, newest first. */
  readonly defaultReversed?: boolean
  /** Fields searched by `q`. */
  readonly search?: ReadonlyArray<string>
  /** Resource-specific rules around the generic writes. */
  readonly rules?: {
    /**
     * The new field values, before they are saved by a create (`previous` null) or an update:
     * checks across fields or against other records (e.g. a file ID of the right purpose).
     */
    readonly check?: (data: JsonObject, previous: JsonObject | null) => Effect.Effect<void, ApiError, RuleServices>
    /** Before a record is trashed or removed (e.g. 409 `tag_in_use`). */
    readonly beforeDelete?: (record: StoredRecord) => Effect.Effect<void, ApiError, RuleServices>
    /** After a record is trashed or removed, inside the same unit of work (e.g. drop links). */
    readonly afterDelete?: (record: StoredRecord) => Effect.Effect<void, ApiError, RuleServices>
    /** After a create, inside the same unit of work (e.g. shift positions). */
    readonly afterCreate?: (record: StoredRecord) => Effect.Effect<void, ApiError, RuleServices>
    /** After an update, inside the same unit of work. */
    readonly afterUpdate?: (before: StoredRecord, after: StoredRecord) => Effect.Effect<void, ApiError, RuleServices>
  }
  /** Fields stored but never shown (e.g. a password hash). */
  readonly hidden?: ReadonlyArray<string>
  /**
   * Fields of the representation kept in a record of their own beside the resource's (of
   * `type`, same ID and tenant), which the platform rewrites without a new revision of the
   * resource, its ETag or an event (a webhook's delivery `health`). The use cases read them with
   * the resource (`defaults` until that record exists); the resource's own writes never store
   * them.
   */
  readonly beside?: { readonly type: string; readonly defaults: JsonObject }
  /**
   * Derived routes the resource replaces with its own (e.g. a create that answers a secret
   * once); the description still drives everything else (schemas, events, batches).
   */
  readonly replacedRoutes?: ReadonlyArray<"list" | "get" | "create" | "update" | "delete">
  /**
   * The writes a client may make, by route or batch (default all three): its capabilities are
   * `<plural>.read` and these, and `POST /operations` offers a batch type for each.
   */
  readonly writes?: ReadonlyArray<ResourceWrite>
  /** Error codes its rules answer on writes, for the description (e.g. `replica_readonly` from a parent). */
  readonly writeErrors?: ReadonlyArray<ErrorCode>
}

/**
 * The writes of a resource only the platform makes (issued certificates, the points ledger):
 * no body creates, changes or removes one: no such route, capability or batch.
 */
export const writtenByThePlatform = {
  create: Schema.Struct({}),
  update: Schema.Struct({}),
  defaults: () => Effect.fail(apiError("method_not_allowed")),
  replacedRoutes: ["create", "update", "delete"],
  writes: []
} as const

export type ResourceWrite = "create" | "update" | "delete"

/** The writes a client may make to a resource (its description's `writes`, else all three). */
export const resourceWrites = (definition: ResourceDefinition): ReadonlyArray<ResourceWrite> => definition.writes ?? ["create", "update", "delete"]

/**
 * A list held inside a record and replaced whole by a PATCH (an exam question's alternatives, a
 * funnel's steps): an item sent with its `id` keeps it, so the ID must be one of the record's
 * (`existing`, none on create; else reason `not_found`) and appear once (else `duplicate`). The
 * problems, itemized on `<field>[i].id`.
 */
export const keptIdProblems = (
  field: string,
  items: ReadonlyArray<{ readonly id?: string | undefined }>,
  existing: ReadonlySet<string>
): Array<DetailItem> => {
  const problems: Array<DetailItem> = []
  const seen = new Set<string>()
  items.forEach((item, i) => {
    if (item.id === undefined) return
    if (!existing.has(item.id)) problems.push({ field: `${field}[${i}].id`, code: "validation_failed", reason: "not_found" })
    else if (seen.has(item.id)) problems.push({ field: `${field}[${i}].id`, code: "invalid_value", reason: "duplicate" })
    seen.add(item.id)
  })
  return problems
}

/**
 * A reorder's `ids` must be exactly the current set, each once: else 422 `order_set_mismatch`,
 * itemized (`not_in_set`, `duplicate`, `missing`). Answers the records in the order asked.
 */
export const inRequestedOrder = (ids: ReadonlyArray<string>, current: ReadonlyArray<StoredRecord>) => {
  const byId = new Map(current.map((record) => [record.id, record]))
  const details: Array<DetailItem> = []
  const seen = new Set<string>()
  for (const [index, id] of ids.entries()) {
    if (!byId.has(id)) details.push({ field: `ids[${index}]`, code: "order_set_mismatch", reason: "not_in_set" })
    else if (seen.has(id)) details.push({ field: `ids[${index}]`, code: "order_set_mismatch", reason: "duplicate" })
    seen.add(id)
  }
  if (current.some((record) => !seen.has(record.id))) details.push({ field: "ids", code: "order_set_mismatch", reason: "missing" })
  return details.length > 0 ? Effect.fail(apiError("order_set_mismatch", { details })) : Effect.succeed(ids.map((id) => byId.get(id)!))
}

/** Build a definition, keeping its schema types tied to its rule functions. */
export const defineResource = <F extends Schema.Struct.Fields, C extends Schema.Schema.AnyNoContext, U extends Schema.Schema.AnyNoContext>(
  definition: ResourceDefinition<F, C, U>
): ResourceDefinition => definition as unknown as ResourceDefinition

// ---------------------------------------------------------------------------------------
// The representation

/** Fields the machinery manages itself: never accepted in a body. */
export const managedFields = ["object", "id", "created_at", "updated_at", "revision"] as const

/** Field names of the representation, in order. */
export const representationFields = (definition: ResourceDefinition): ReadonlyArray<string> => [
  "object",
  "id",
  ...(definition.parent ? [definition.parent.field] : []),
  ...Object.keys(definition.fields),
  "created_at",
  "updated_at",
  ...(definition.trash ? ["deleted"] : []),
  "revision"
]

export const resourceView = (definition: ResourceDefinition, record: StoredRecord): JsonObject => {
  const out: Record<string, Json> = {}
  for (const field of representationFields(definition)) {
    out[field] =
      field === "revision"
        ? definition.revision === "string"
          ? String(record.revision)
          : record.revision
        : field === "deleted"
          ? record.data.deleted === true
          : (record.data[field] ?? null)
  }
  return out
}

export const resourceEtag = (definition: ResourceDefinition, record: StoredRecord): string =>
  `W/"${definition.type}:${record.id}:${record.revision}"`

// ---------------------------------------------------------------------------------------
// Scope (access/scope.ts)

/** The capability of an action on a resource: `<plural>.<action>` (or its `capabilities`' name). */
export const capabilityOf = (definition: ResourceDefinition, action: string): string => `${definition.capabilities ?? definition.plural}.${action}`

/** The outermost parent of a nested resource (the one a resource-limited policy names). */
const outermostParent = (definition: ResourceDefinition): ParentDefinition | undefined => {
  let parent = definition.parent
  while (parent?.parent) parent = parent.parent
  return parent
}

/**
 * The fields holding a record's anchors: its own ID (a nested record: its outermost parent's),
 * then the owners its description declares.
 */
export const anchorFields = (definition: ResourceDefinition): ReadonlyArray<string> => [
  outermostParent(definition)?.field ?? "id",
  ...(definition.owners ?? [])
]

/**
 * A record's anchors: the values of its anchor fields. A nested record that does not store its
 * outermost parent (a taxonomy's term) takes it from the path's `parentIds`.
 */
export const anchorsOf = (
  definition: ResourceDefinition,
  data: JsonObject,
  parentIds: Readonly<Record<string, string | undefined>> = {}
): Anchors =>
  anchorFields(definition).flatMap((field) => {
    const value = data[field] ?? parentIds[field]
    return typeof value === "string" ? [value] : []
  })

/**
 * Whether the request pipeline may check a client's route of this resource by the path's ID
 * alone (`scopedBy`): when that ID is the record's only anchor. A resource with owners is reached
 * through them too, so its records are checked once loaded, here (`ClientAccess`).
 */
export const scopedInCore = (definition: ResourceDefinition): boolean => (definition.owners ?? []).length > 0

/**
 * What a client's call asks of the machinery: the check of its resource-limited scope for the
 * action's capability (`<plural>.<action>`). Routes, batch items, import rows and the changes of
 * a configuration plan pass it; the platform's own writes (a sale's enrollment, a replica's
 * copy) pass none.
 */
export interface ClientAccess {
  readonly checkScope: boolean
}

/**
 * A client's record out of reach of `<plural>.<action>` is 404, as if missing (§1.4): for the
 * use cases of a described resource outside the machinery (an enrollment's cancellation).
 */
export const requireResourceReach = (
  definition: ResourceDefinition,
  action: "read" | "update" | "delete",
  record: StoredRecord,
  parentIds: Readonly<Record<string, string | undefined>> = {}
) => requireReach(capabilityOf(definition, action), anchorsOf(definition, record.data, parentIds))

const requireRecordReach = (
  definition: ResourceDefinition,
  action: "read" | "update" | "delete",
  record: StoredRecord,
  parentIds: Readonly<Record<string, string | undefined>>,
  access: ClientAccess | undefined
) => (access?.checkScope ? requireResourceReach(definition, action, record, parentIds) : Effect.void)

/**
 * What a client's new or changed record belongs to must be in reach of `<plural>.<action>`: a
 * nested record's parent (else 404, as the route answers) and the owners its body names (else
 * 422 on the first owner field, reason `not_found`, as for a record that does not exist; a
 * limited credential must name one). A new top-level record of a resource without owners belongs
 * to nothing: a limited credential may create one, as its route allows.
 */
const requireOwnersReach = (
  definition: ResourceDefinition,
  action: "create" | "update",
  data: JsonObject,
  parentIds: Readonly<Record<string, string | undefined>>,
  access: ClientAccess | undefined
) =>
  Effect.gen(function* () {
    if (!access?.checkScope) return
    const caller = yield* Caller
    const capability = capabilityOf(definition, action)
    const anchors = anchorsOf(definition, data, parentIds).filter((id) => action === "update" || id !== data.id)
    const owners = definition.owners ?? []
    // A record that may belong to something (a rule for one product, or for all) is, for a limited
    // credential, created only for what it reaches.
    if ((anchors.length === 0 && owners.length === 0) || reaches(caller.grant, capability, anchors)) return
    if (outermostParent(definition) !== undefined && owners.length === 0) return yield* Effect.fail(apiError("not_found"))
    const field = owners.find((f) => typeof data[f] === "string") ?? owners[0] ?? "id"
    return yield* Effect.fail(fieldError("validation_failed", field, { reason: "not_found" }))
  })

/**
 * A client's update or removal of a record through a use case of its own (users, tags, webhooks…,
 * `registry/batch-use-cases.ts`): the record must be in reach, as the machinery requires of its own
 * writes. A missing record is left to the use case (its own 404).
 */
export const requireWriteReach = (
  definition: ResourceDefinition,
  action: "update" | "delete",
  parentIds: Readonly<Record<string, string | undefined>>,
  id: string
) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const record = yield* records.get(caller.tenant, definition.type, id).pipe(Effect.mapError(readUnavailable))
    if (record) yield* requireRecordReach(definition, action, record, parentIds, { checkScope: true })
  })

/**
 * A record another resource's body names (`field`): of the caller's tenant, not trashed, and
 * for a client (`checkScope`, the default) readable by the caller (`<plural>.read`, or the
 * capability given, reaching it).
 * Else 422 `validation_failed` on the field, reason `not_found`, whether it is missing or out of
 * reach: a limited credential learns nothing of what it cannot see.
 */
export const requireReference = (definition: ResourceDefinition, field: string, id: string, options: ReferenceOptions = {}) =>
  Effect.gen(function* () {
    const [record] = yield* referencedRecords(definition, [id], options)
    if (!record) return yield* Effect.fail(fieldError("validation_failed", field, { reason: "not_found" }))
    return record
  })

export interface ReferenceOptions {
  /** False for the platform's own writes (`WriteContext.checkScope`). */
  readonly checkScope?: boolean
  /** The capability that must reach it, when not `<plural>.read` (a comment's lesson: `comments.create`). */
  readonly capability?: string
}

/** The records named, in order, each `undefined` when missing, trashed or out of the caller's reach; one read for all. */
const referencedRecords = (definition: ResourceDefinition, ids: ReadonlyArray<string>, options: ReferenceOptions) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const found = ids.length === 0 ? [] : yield* records.getMany(caller.tenant, definition.type, [...new Set(ids)]).pipe(Effect.mapError(readUnavailable))
    const byId = new Map(found.map((record) => [record.id, record]))
    const capability = options.capability ?? capabilityOf(definition, "read")
    return ids.map((id) => {
      const record = byId.get(id)
      if (!record || record.data.deleted === true) return undefined
      return options.checkScope === false || reaches(caller.grant, capability, anchorsOf(definition, record.data)) ? record : undefined
    })
  })

/**
 * The problems of a list of records a body names (`field(i)` for the i-th): each must be named
 * once (`duplicate`) and be a record `requireReference` accepts (`not_found`). All at once.
 */
export const referenceProblems = (
  definition: ResourceDefinition,
  ids: ReadonlyArray<string>,
  field: (index: number) => string,
  options: ReferenceOptions = {}
): Effect.Effect<ReadonlyArray<DetailItem>, ApiError<"credential_state_unverifiable">, Caller | Records> =>
  Effect.map(referencedRecords(definition, ids, options), (found) =>
    ids.flatMap((id, index): ReadonlyArray<DetailItem> =>
      ids.indexOf(id) !== index
        ? [{ field: field(index), code: "invalid_value", reason: "duplicate" }]
        : found[index] === undefined
          ? [{ field: field(index), code: "validation_failed", reason: "not_found" }]
          : []
    )
  )

// ---------------------------------------------------------------------------------------
// Use cases


/** The records with the fields their description keeps beside them (`beside`), as they are now. */
const withBeside = (definition: ResourceDefinition, tenant: Tenant, list: ReadonlyArray<StoredRecord>) =>
  Effect.gen(function* () {
    const beside = definition.beside
    if (beside === undefined || list.length === 0) return list
    const records = yield* Records
    const kept = new Map((yield* records.getMany(tenant, beside.type, list.map((r) => r.id))).map((r) => [r.id, r.data]))
    return list.map((record): StoredRecord => {
      const fields = Object.entries(beside.defaults).map(([field, empty]) => [field, kept.get(record.id)?.[field] ?? empty] as const)
      return { ...record, data: { ...record.data, ...Object.fromEntries(fields) } }
    })
  })

/** Data as a write of the resource stores it: without the fields kept beside it. */
const withoutBeside = (definition: ResourceDefinition, data: JsonObject): JsonObject =>
  definition.beside === undefined
    ? data
    : Object.fromEntries(Object.entries(data).filter(([field]) => !(field in definition.beside!.defaults)))

/** A record just written, with the fields kept beside it; a failure to read them is the write's. */
const writtenWithBeside = (definition: ResourceDefinition, record: StoredRecord) =>
  withBeside(definition, record.tenant, [record]).pipe(
    Effect.map(([one]) => one!),
    Effect.mapError(writeUnavailable)
  )

/** The record of a resource in the caller's tenant (and under `parentId`), or 404. */
export const loadResource = (definition: ResourceDefinition, parentId: string | undefined, id: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const record = yield* records.get(caller.tenant, definition.type, id).pipe(Effect.mapError(readUnavailable))
    if (!record || (definition.parent && record.data[definition.parent.field] !== parentId)) {
      return yield* Effect.fail(apiError("not_found"))
    }
    const [loaded] = yield* withBeside(definition, caller.tenant, [record]).pipe(Effect.mapError(readUnavailable))
    return loaded!
  })

/** The parent (and its ancestors) must exist in the caller's tenant and not be trashed. */
export const requireParent = (
  parent: ParentDefinition | undefined,
  ids: Readonly<Record<string, string | undefined>>
): Effect.Effect<void, ApiError<"not_found" | "credential_state_unverifiable">, Caller | Records> =>
  Effect.gen(function* () {
    if (!parent) return
    const caller = yield* Caller
    const records = yield* Records
    const id = ids[parent.field]
    const record = id === undefined ? undefined : yield* records.get(caller.tenant, parent.type, id).pipe(Effect.mapError(readUnavailable))
    if (!record || record.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    if (parent.parent && record.data[parent.parent.field] !== ids[parent.parent.field]) return yield* Effect.fail(apiError("not_found"))
    yield* requireParent(parent.parent, ids)
  })

/** The field stored beside the representation that `q` searches: the `search` fields, one a line. */
export const SEARCH_FIELD = "search_text"

const searchText = (definition: ResourceDefinition, data: JsonObject): string | null =>
  definition.search ? definition.search.map((f) => (typeof data[f] === "string" ? data[f] : "")).join("\n") : null

const uniqueKeys = (definition: ResourceDefinition, data: JsonObject): ReadonlyArray<UniqueKey> =>
  data.deleted === true
    ? []
    : [
        ...(definition.unique ?? []).map((field) => ({ field, global: false })),
        ...(definition.uniqueAcrossAccounts ?? []).map((field) => ({ field, global: true }))
      ].flatMap(({ field, global }) => {
        const value = data[field]
        return typeof value === "string" && value !== "" ? [{ name: field, value, ...(global ? { global } : {}) }] : []
      })

/** Fields stored beside the representation, for the store's filters. */
const withIndexes = (definition: ResourceDefinition, data: JsonObject): JsonObject => {
  const text = searchText(definition, data)
  return text === null ? data : { ...data, [SEARCH_FIELD]: text }
}

const verbOf = {
  created: "created",
  updated: "updated",
  trashed: "trashed",
  restored: "restored",
  deleted: "deleted",
  published: "published",
  copied: "copied",
  reordered: "reordered"
} as const

/** Audit entry and event of one change, in its unit of work (`<type>.<verb>`). */
export const recordResourceChange = (
  definition: ResourceDefinition,
  verb: keyof typeof verbOf,
  after: JsonObject,
  before: JsonObject | null = null,
  // The record's anchors, which the trail and the event keep for scoped readers (access/scope.ts).
  anchors: Anchors = anchorsOf(definition, after)
) =>
  Effect.gen(function* () {
    yield* recordChange(`${definition.type}.${verb}`, { object: definition.type, id: String(after.id) }, null, anchors)
    yield* emitEvent(`${definition.type}.${verb}`, after, before ? previousAttributes(before, after) : null, anchors, definition.personal)
  })

export interface ListInput {
  readonly parentIds: Readonly<Record<string, string | undefined>>
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
  readonly deleted: boolean
  readonly q: string | undefined
  readonly filters: Readonly<Record<string, unknown>>
  /** Only these IDs, when given (a filter a use case computes, e.g. the subscribers of an event type). */
  readonly ids?: ReadonlySet<string> | undefined
}

/**
 * What a client's list of a resource may show (§4.2: access rules before pagination): in a
 * reached parent, every record; else the records one of whose anchors the caller's
 * `<plural>.read` reaches (an alternative per anchor field, each read through its index).
 */
const listReach = (definition: ResourceDefinition, parentIds: Readonly<Record<string, string | undefined>>) =>
  Effect.map(Caller, (caller) => {
    const capability = capabilityOf(definition, "read")
    const reach = reachOf(caller.grant, capability)
    const outermost = outermostParent(definition)
    if (reach === "all") return "all" as const
    if (outermost) {
      const parentId = parentIds[outermost.field]
      if (parentId !== undefined && reach.has(parentId)) return "all" as const
      return reachAlternatives(reach, definition.owners ?? [])
    }
    return reachAlternatives(reach, anchorFields(definition))
  })

/**
 * The order of a list for its `sort` parameter, one rule for every collection (§4.2): a
 * declared name is ascending, a leading `-` reverses; absent, the definition's default.
 */
export const resourceSort = (definition: ResourceDefinition, sort: string | undefined): SortSpec => {
  const first = definition.sorts[0]!
  const requested = sort ?? (definition.defaultReversed ? `-${first.name}` : first.name)
  const declared = definition.sorts.find((s) => s.name === requested.replace(/^-/, "")) ?? first
  return { field: declared.field, kind: declared.kind, direction: requested.startsWith("-") ? "desc" : "asc" }
}

export const listResources = (definition: ResourceDefinition, input: ListInput) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    yield* requireParent(definition.parent, input.parentIds)
    const sort = resourceSort(definition, input.sort)
    const where: Array<Where> = [{ field: "deleted", op: "eq", value: input.deleted }]
    if (definition.parent) where.push({ field: definition.parent.field, op: "eq", value: input.parentIds[definition.parent.field] ?? null })
    for (const [name, value] of Object.entries(input.filters)) {
      const filter = definition.filters?.[name]
      if (filter && value !== undefined) where.push(...filter.where(value as never))
    }
    if (input.q !== undefined && input.q !== "" && definition.search) where.push({ field: SEARCH_FIELD, op: "contains", value: input.q })
    if (input.ids !== undefined) where.push({ field: "id", op: "in", values: [...input.ids] })
    const { items, page } = yield* paginate({
      tenant: caller.tenant,
      type: definition.type,
      where,
      reach: yield* listReach(definition, input.parentIds),
      sort,
      limit: input.limit,
      cursor: input.cursor,
      collection: `${definition.path}:${JSON.stringify([input.parentIds, input.deleted, input.q ?? null, input.filters])}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
    const shown = yield* withBeside(definition, caller.tenant, items).pipe(Effect.mapError(readUnavailable))
    return { data: shown.map((r) => resourceView(definition, r)), page }
  })

/** A trashed record is not found (§7 `not_found`: "missing, deleted, or out of scope"); the trash is a list. */
export const getResource = (
  definition: ResourceDefinition,
  parentIds: Readonly<Record<string, string | undefined>>,
  id: string,
  access?: ClientAccess
) =>
  Effect.gen(function* () {
    yield* requireParent(definition.parent, parentIds)
    const record = yield* loadResource(definition, definition.parent ? parentIds[definition.parent.field] : undefined, id)
    if (record.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    yield* requireRecordReach(definition, "read", record, parentIds, access)
    return record
  })

export const createResource = (
  definition: ResourceDefinition,
  parentIds: Readonly<Record<string, string | undefined>>,
  body: unknown,
  access?: ClientAccess
) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    yield* requireParent(definition.parent, parentIds)
    const id = yield* (yield* Ids).next(definition.idKind)
    const now = yield* Clock.currentTimeMillis
    const parentId = definition.parent ? parentIds[definition.parent.field] : undefined
    const context: WriteContext = { tenant: caller.tenant, id, parentId, now, checkScope: access?.checkScope === true }
    const fields = yield* definition.defaults(body as never, context)
    yield* requireOwnersReach(definition, "create", { ...fields, id }, parentIds, access)
    if (definition.rules?.check) yield* definition.rules.check(fields, null)
    const at = formatTimestamp(now)
    const outermost = outermostParent(definition)
    const data: JsonObject = withIndexes(definition, withoutBeside(definition, {
      object: definition.type,
      id,
      // A deeper nested record keeps its outermost parent too (not shown): its scope's anchor.
      ...(outermost && outermost !== definition.parent ? { [outermost.field]: parentIds[outermost.field] ?? null } : {}),
      ...(definition.parent ? { [definition.parent.field]: parentId ?? null } : {}),
      ...fields,
      created_at: at,
      updated_at: at,
      deleted: false
    }))
    // The account's plan may cap this type (409 `plan_limit_reached`), checked in this unit of work.
    yield* requirePlanSlot(caller.tenant, definition.type)
    const inserted = yield* records.insert(caller.tenant, definition.type, id, data, uniqueKeys(definition, data)).pipe(
      Effect.catchTags({
        UniqueViolation: (e) => Effect.fail(fieldError("already_exists", e.name)),
        StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
      })
    )
    const record = yield* writtenWithBeside(definition, inserted)
    if (definition.rules?.afterCreate) yield* definition.rules.afterCreate(record)
    yield* recordResourceChange(definition, "created", resourceView(definition, record), null, anchorsOf(definition, record.data, parentIds))
    return record
  })

/** Save new data for a record, keeping its unique keys in step, with an optional revision check. */
export const saveResource = (
  definition: ResourceDefinition,
  record: StoredRecord,
  data: JsonObject,
  expectedRevision: number | undefined
) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const next = withIndexes(definition, withoutBeside(definition, { ...data, updated_at: formatTimestamp(now) }))
    const saved = yield* records
      .update(caller.tenant, definition.type, record.id, next, {
        expectedRevision: expectedRevision ?? record.revision,
        uniques: uniqueKeys(definition, next)
      })
      .pipe(
        Effect.catchTags({
          UniqueViolation: (e) => Effect.fail(fieldError("already_exists", e.name)),
          RevisionConflict: () => Effect.fail(apiError("revision_mismatch")),
          StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
        })
      )
    return yield* writtenWithBeside(definition, saved)
  })

/** Is this record a copy from another account (3.3.0)? */
export const isReplica = (record: StoredRecord): boolean =>
  typeof record.data.replica_of === "object" && record.data.replica_of !== null

/** The default PATCH: fields sent replace the stored ones; `null` clears or restores a default. */
const mergePatch = (definition: ResourceDefinition, current: JsonObject, patch: JsonObject): JsonObject => {
  const next: Record<string, Json> = { ...current }
  for (const [key, value] of Object.entries(patch)) {
    if (key === "deleted") continue
    next[key] = value === null && definition.nullDefaults && key in definition.nullDefaults ? definition.nullDefaults[key]! : value
  }
  return next
}

export const updateResource = (
  definition: ResourceDefinition,
  parentIds: Readonly<Record<string, string | undefined>>,
  id: string,
  body: JsonObject,
  expectedRevision: number | undefined,
  access?: ClientAccess
) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    yield* requireParent(definition.parent, parentIds)
    const parentId = definition.parent ? parentIds[definition.parent.field] : undefined
    const current = yield* loadResource(definition, parentId, id)
    yield* requireRecordReach(definition, "update", current, parentIds, access)
    if (expectedRevision !== undefined && current.revision !== expectedRevision) return yield* Effect.fail(apiError("revision_mismatch"))
    // §3: `deleted=true` in a PATCH is 422; `deleted=false` restores from the trash.
    if (body.deleted === true) {
      return yield* Effect.fail(apiError("validation_failed", { details: [{ field: "deleted", code: "invalid_value", reason: "use_delete" }] }))
    }
    const changed = Object.keys(body).filter((k) => k !== "deleted")
    if (isReplica(current) && changed.some((k) => k !== "status")) return yield* Effect.fail(apiError("replica_readonly"))
    const trashed = current.data.deleted === true
    if (trashed && body.deleted !== false) return yield* Effect.fail(apiError("not_found"))
    const now = yield* Clock.currentTimeMillis
    const context: WriteContext = { tenant: caller.tenant, id, parentId, now, checkScope: access?.checkScope === true }
    const patch = Object.fromEntries(Object.entries(body).filter(([k]) => k !== "deleted")) as JsonObject
    const merged = definition.change
      ? yield* definition.change(current.data, patch as never, context)
      : mergePatch(definition, current.data, patch)
    yield* requireOwnersReach(definition, "update", merged, parentIds, access)
    if (definition.rules?.check) yield* definition.rules.check(merged, current.data)
    const restoring = trashed && body.deleted === false
    // A restored record takes a slot of the plan again, as a create does.
    if (restoring) yield* requirePlanSlot(caller.tenant, definition.type)
    const saved = yield* saveResource(definition, current, { ...merged, deleted: false }, current.revision)
    if (definition.rules?.afterUpdate) yield* definition.rules.afterUpdate(current, saved)
    const anchors = anchorsOf(definition, saved.data, parentIds)
    if (restoring) yield* recordResourceChange(definition, "restored", resourceView(definition, saved), resourceView(definition, current), anchors)
    if (changed.length > 0 || !restoring) {
      yield* recordResourceChange(definition, "updated", resourceView(definition, saved), resourceView(definition, current), anchors)
    }
    return saved
  })

export const deleteResource = (
  definition: ResourceDefinition,
  parentIds: Readonly<Record<string, string | undefined>>,
  id: string,
  access?: ClientAccess
) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    yield* requireParent(definition.parent, parentIds)
    const current = yield* loadResource(definition, definition.parent ? parentIds[definition.parent.field] : undefined, id)
    if (current.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    yield* requireRecordReach(definition, "delete", current, parentIds, access)
    if (definition.replicable && isReplica(current)) return yield* Effect.fail(apiError("replica_readonly"))
    if (definition.rules?.beforeDelete) yield* definition.rules.beforeDelete(current)
    let result: StoredRecord | undefined
    if (definition.trash) {
      result = yield* saveResource(definition, current, { ...current.data, deleted: true }, current.revision)
      yield* recordResourceChange(definition, "trashed", resourceView(definition, result), resourceView(definition, current), anchorsOf(definition, result.data, parentIds))
    } else {
      yield* records.remove(caller.tenant, definition.type, id).pipe(Effect.mapError(writeUnavailable))
      yield* recordResourceChange(definition, "deleted", resourceView(definition, current), null, anchorsOf(definition, current.data, parentIds))
    }
    if (definition.rules?.afterDelete) yield* definition.rules.afterDelete(current)
    return result
  })

// ---------------------------------------------------------------------------------------
// Helpers for definitions

/** Filter on a field equal to the parameter. */
export const equalsFilter = (field: string, schema: Schema.Schema.AnyNoContext, description?: string): FilterDefinition => ({
  schema,
  where: (value: never) => [{ field, op: "eq", value: value as unknown as string }],
  on: { field, match: "equals" },
  ...(description ? { description } : {})
})

/** Filters `created_after` / `created_before` on `created_at`. */
export const createdRangeFilters = (timestamp: Schema.Schema.AnyNoContext, parse: (text: string) => Option.Option<number>) => ({
  created_after: {
    schema: timestamp,
    on: { field: "created_at", match: "text" as const },
    where: (value: never) => [{ field: "created_at", op: "gte" as const, value: formatTimestamp(Option.getOrThrow(parse(value as string))) }]
  },
  created_before: {
    schema: timestamp,
    on: { field: "created_at", match: "text" as const },
    where: (value: never) => [{ field: "created_at", op: "lt" as const, value: formatTimestamp(Option.getOrThrow(parse(value as string))) }]
  }
})

/** A 422 listing each problem of a rule check. */
export const ruleViolation = (details: ReadonlyArray<DetailItem>): ApiError<"validation_failed"> => apiError("validation_failed", { details })
