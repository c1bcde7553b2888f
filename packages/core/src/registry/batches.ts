/**
 * Batches (`POST /operations`): many writes of one kind as one asynchronous operation. Every
 * described resource offers three batch types, `<plural>.create`, `<plural>.update` and
 * `<plural>.delete`; each item is that write, validated up front and run in a unit of work
 * of its own. The resources of `resourceDefinitions` run the generic machinery; those served
 * by use cases of their own (users, tags, webhooks, administrators) run the use cases their
 * single routes run, as `batch-use-cases.ts` names them, so an item has the checks and the
 * outcome of the route.
 */
import { Effect, Either, Schema } from "effect"
import { Caller } from "../access/context.js"
import { allows, type Grant } from "../access/policies.js"
import { personalView, reaches } from "../access/scope.js"
import { apiError, type DetailItem } from "../errors/errors.js"
import { MAX_BATCH_ITEMS, type OperationKind, startOperation } from "../operations/operations.js"
import type { Json, JsonObject } from "../ports/store.js"
import { anchorFields, anchorsOf, capabilityOf, type ResourceDefinition, resourceView, resourceWrites, scopedInCore } from "../records/resource.js"
import { detailsOf, strict } from "../records/schema.js"
import { type BatchAction, type BatchResource, batchResources, type BatchUseCases, writeResource } from "./batch-use-cases.js"
import { resourceDefinitions } from "./resources.js"

interface BatchType {
  readonly definition: ResourceDefinition
  readonly useCases: BatchUseCases
  readonly action: BatchAction
  /** The fields of an item besides `key`. */
  readonly item: Schema.Schema.AnyNoContext
}

const parentFields = (definition: ResourceDefinition): ReadonlyArray<string> => {
  const fields: Array<string> = []
  for (let p = definition.parent; p; p = p.parent) fields.push(p.field)
  return fields
}

const withParents = (definition: ResourceDefinition, schema: Schema.Schema.AnyNoContext, extra: Schema.Struct.Fields) =>
  Schema.extend(
    schema as unknown as Schema.Struct<Schema.Struct.Fields>,
    Schema.Struct({ ...Object.fromEntries(parentFields(definition).map((f) => [f, Schema.String])), ...extra })
  ) as unknown as Schema.Schema.AnyNoContext

/** Every resource with batches: those with use cases of their own, then the described ones with the generic machinery. */
const resourcesWithBatches: ReadonlyArray<BatchResource> = [
  ...batchResources,
  ...resourceDefinitions
    .filter((definition) => !batchResources.some((own) => own.definition.plural === definition.plural))
    .map((definition) => ({ definition, useCases: {} }))
]

/** A batch type for each write a client may make to a resource (`resourceWrites`). */
const batchTypes: ReadonlyMap<string, BatchType> = new Map(
  resourcesWithBatches.flatMap(({ definition, useCases }): ReadonlyArray<[string, BatchType]> => {
    const items = {
      create: withParents(definition, definition.create, {}),
      update: withParents(definition, definition.update, { id: Schema.String }),
      delete: withParents(definition, Schema.Struct({}), { id: Schema.String })
    }
    return resourceWrites(definition).map((action) => [`${definition.plural}.${action}`, { definition, useCases, action, item: items[action] }])
  })
)

export const batchTypeNames: ReadonlyArray<string> = [...batchTypes.keys()]

/** The problems of one item (without its `key`), each on its field: its schema, then its scope. Empty: valid. */
const itemProblems = (batch: BatchType, grant: Grant, payload: JsonObject): ReadonlyArray<DetailItem> => {
  const decoded = Schema.decodeUnknownEither(batch.item)(payload, strict)
  if (Either.isLeft(decoded)) return detailsOf(decoded.left, "field")
  return scopeProblems(batch, grant, payload)
}

/**
 * An item's scope, as far as its payload tells before it runs (access/scope.ts): the record it
 * names (an update's or removal's `id`, a nested item's outermost parent) and, for a create, the
 * owners it names. What only the stored record tells (an enrollment's owners on update) is
 * checked when the item runs, as the route checks it.
 */
const scopeProblems = (batch: BatchType, grant: Grant, payload: JsonObject): ReadonlyArray<DetailItem> => {
  const { definition, action } = batch
  const fields = anchorFields(definition).filter((field) =>
    action === "create" ? field !== "id" : !(scopedInCore(definition) && field === "id")
  )
  const named = fields.flatMap((field) => (typeof payload[field] === "string" ? [{ field, id: payload[field] as string }] : []))
  if (named.length === 0 || (scopedInCore(definition) && action !== "create")) return []
  const capability = capabilityOf(definition, action)
  return reaches(grant, capability, named.map((n) => n.id)) ? [] : [{ field: named[0]!.field, code: "not_found" }]
}

/**
 * One item of a batch type checked as `POST /operations` checks it (an import's row is one):
 * the problems on its fields, empty when it is valid; undefined for a type that does not exist.
 */
export const batchItemProblems = (type: string, grant: Grant, payload: JsonObject): ReadonlyArray<DetailItem> | undefined => {
  const batch = batchTypes.get(type)
  return batch === undefined ? undefined : itemProblems(batch, grant, payload)
}

const parentIdsOf = (definition: ResourceDefinition, payload: JsonObject) =>
  Object.fromEntries(parentFields(definition).map((f) => [f, typeof payload[f] === "string" ? payload[f] : undefined]))

const strip = (payload: JsonObject, fields: ReadonlyArray<string>) =>
  Object.fromEntries(Object.entries(payload).filter(([k]) => !fields.includes(k))) as JsonObject

/** The write of one item: what the resource's own route runs (`writeResource`). */
const writeItem = (definition: ResourceDefinition, action: BatchAction, payload: JsonObject) => {
  const own = strip(payload, parentFields(definition))
  return writeResource(definition, action, parentIdsOf(definition, payload), String(own.id ?? ""), action === "create" ? own : strip(own, ["id"]))
}

/**
 * A stored result (`{ id, object }`) as the caller reading the items may see it (access/scope.ts):
 * the record out of the reader's reach (`<plural>.read`) is only its ID; its personal data as the
 * reader's grant shows it; then the resource's own view, when it has one (live counts).
 */
const viewedResult = (definition: ResourceDefinition, useCases: BatchUseCases) => (result: Json) =>
  Effect.gen(function* () {
    const object = result !== null && typeof result === "object" && !Array.isArray(result) ? (result as JsonObject).object : undefined
    if (object === null || typeof object !== "object" || Array.isArray(object)) return result
    const { grant } = yield* Caller
    if (!reaches(grant, capabilityOf(definition, "read"), anchorsOf(definition, object as JsonObject))) return { ...(result as JsonObject), object: null } as Json
    const shown = definition.personal ? personalView(definition.personal, object as JsonObject, grant) : (object as JsonObject)
    const [seen] = useCases.view ? yield* useCases.view([shown]) : [shown]
    return { ...(result as JsonObject), object: seen ?? null } as Json
  })

/** A stored result of a batch item of any type, viewed as its type's items are (an import's rows). */
export const viewAnyBatchResult = (result: Json) => {
  const object = result !== null && typeof result === "object" && !Array.isArray(result) ? (result as JsonObject).object : undefined
  const type = object !== null && typeof object === "object" && !Array.isArray(object) ? (object as JsonObject).object : undefined
  const batch = [...batchTypes.values()].find((candidate) => candidate.definition.type === type)
  return batch ? viewedResult(batch.definition, batch.useCases)(result) : Effect.succeed(result)
}

/** The handlers of every batch type, for the workers. */
export const batchKinds: Readonly<Record<string, OperationKind>> = Object.fromEntries(
  [...batchTypes.entries()].map(([name, { definition, useCases, action }]): [string, OperationKind] => {
    const represent = useCases.represent ?? ((record) => resourceView(definition, record))
    const view = useCases.view ?? Effect.succeed
    const viewResult = viewedResult(definition, useCases)
    return [
      name,
      {
        // The result is the record as the operation's starter may see it (items run as the starter).
        runItem: (payload) =>
          Effect.flatMap(writeItem(definition, action, payload), (record) =>
            record
              ? Effect.map(view([represent(record)]), ([object]): Json => ({ id: record.id, object: object ?? null }))
              : Effect.succeed<Json>({ id: String(payload.id ?? "") })
          ),
        viewResult
      }
    ]
  })
)

export const StartBatchBody = Schema.Struct({
  type: Schema.String,
  items: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}).annotations({ identifier: "StartBatchBody" })

/** Check a batch whole (type, size, keys, every item) and queue it; nothing is queued if anything is wrong. */
export const startBatch = Effect.fn("Batches.start")(function* (body: typeof StartBatchBody.Type) {
  const caller = yield* Caller
  const batch = batchTypes.get(body.type)
  if (!batch) {
    return yield* Effect.fail(apiError("operation_type_unknown", { details: [{ field: "type", code: "operation_type_unknown" }] }))
  }
  const capability = `${batch.definition.plural}.${batch.action}`
  if (!allows(caller.grant, capability)) return yield* Effect.fail(apiError("permission_denied", { params: { capability } }))
  if (body.items.length === 0) {
    return yield* Effect.fail(apiError("validation_failed", { details: [{ field: "items", code: "too_short", params: { min: 1 } }] }))
  }
  if (body.items.length > MAX_BATCH_ITEMS) {
    return yield* Effect.fail(
      apiError("too_many_items", { details: [{ field: "items", code: "too_many_items", params: { max: MAX_BATCH_ITEMS } }] })
    )
  }
  const seen = new Map<string, number>()
  const duplicates: Array<DetailItem> = []
  const invalid: Array<DetailItem> = []
  const items = body.items.map((raw, i) => {
    const key = raw.key
    if (typeof key !== "string" || !/^[A-Za-z0-9._:-]{1,128}$/.test(key)) {
      invalid.push({ field: `items[${i}].key`, code: typeof key === "string" ? "invalid_value" : "required" })
    } else if (seen.has(key)) {
      duplicates.push({ field: `items[${i}].key`, code: "duplicate_item_key", params: { first: seen.get(key)! } })
    } else seen.set(key, i)
    const payload = strip(raw as JsonObject, ["key"])
    for (const detail of itemProblems(batch, caller.grant, payload)) invalid.push({ ...detail, field: `items[${i}].${detail.field}` })
    return { key: String(key), payload }
  })
  if (duplicates.length > 0) return yield* Effect.fail(apiError("duplicate_item_key", { details: duplicates }))
  if (invalid.length > 0) return yield* Effect.fail(apiError("item_invalid", { details: invalid }))
  const prepare = batch.useCases.prepare
  const stored = prepare
    ? yield* Effect.forEach(items, (item) => Effect.map(prepare(batch.action, item.payload), (payload) => ({ ...item, payload })))
    : items
  return yield* startOperation(body.type, stored)
})
