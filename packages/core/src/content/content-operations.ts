/**
 * The asynchronous operations of the content group (§3, §4.3, 3.3.0):
 *
 * - Module publication (`POST .../modules/{module_id}/publications`): one item for the
 *   module, one per non-trashed lesson of it, one per copy of the module in a replicated
 *   account (that copy is published with its own lessons, recorded in its account). A
 *   replicated module may itself be published. Publishing what is published changes nothing.
 * - Lesson copy (`POST .../lessons/{lesson_id}/copies`): checked when asked (the source is not
 *   a replica, the caller holds `lessons.create` on the destination product, which is not
 *   a replica, the destination module is of that product), then one item makes the copy: a
 *   `draft` at the end of the module, with the content and the attachments of the source,
 *   events `lesson.created` and `lesson.copied`. Its `exam_id` stays within the same
 *   product only. Without `target_module_id`, a copy in the same product goes to the
 *   source's module; in another product the module must be named.
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { PRODUCT_TYPE } from "../catalog/products.js"
import { type ApiError, apiError, fieldError, writeUnavailable } from "../errors/errors.js"
import { type ItemServices, type OperationKind, startOperation } from "../operations/operations.js"
import { type Json, type JsonObject, Records, type StoredRecord, type Tenant } from "../ports/store.js"
import {
  createResource,
  getResource,
  isReplica,
  recordResourceChange,
  type ResourceDefinition,
  resourceView,
  saveResource
} from "../records/resource.js"
import { PublicId, Text } from "../records/schema.js"
import {
  childrenOf,
  findLive,
  isCopyOf,
  LESSON_TYPE,
  lessons,
  MODULE_TYPE,
  modules,
  ReplicaRef,
  replicasOf,
  requireLessonsCreate,
  requireModule
} from "./content-catalog.js"
import { copyAttachments, copyContent } from "./content-lessons.js"

/** Operation types (an open enum). */
export const MODULE_PUBLICATION = "module_publication"
export const LESSON_COPY = "lesson_copy"

const itemInvalid = () => apiError("item_invalid")

// ---------------------------------------------------------------------------------------
// Module publication

export const startModulePublication = (productId: string, moduleId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const module = yield* getResource(modules, { product_id: productId }, moduleId)
    const nested = yield* childrenOf(caller.tenant, LESSON_TYPE, "module_id", module.id)
    return yield* startOperation(MODULE_PUBLICATION, [
      { key: module.id, payload: { module_id: module.id } },
      ...nested.map((lesson) => ({ key: lesson.id, payload: { module_id: module.id, lesson_id: lesson.id } })),
      ...replicasOf(module).map((replica) => ({
        key: `${replica.account_id}:${replica.environment}:${replica.id}`,
        payload: { module_id: module.id, replica }
      }))
    ])
  })

const reference = (record: StoredRecord): JsonObject => ({
  object: record.type,
  id: record.id,
  account_id: record.tenant.accountId,
  environment: record.tenant.environment,
  status: String(record.data.status)
})

/** Publish one record of the caller's tenant (its event `<type>.published`); already published: nothing changes. */
const publish = (definition: ResourceDefinition, record: StoredRecord) =>
  Effect.gen(function* () {
    if (record.data.status === "published") return reference(record)
    const saved = yield* saveResource(definition, record, { ...record.data, status: "published" }, undefined)
    yield* recordResourceChange(definition, "published", resourceView(definition, saved), resourceView(definition, record))
    return reference(saved)
  })

/** A module and everything nested in it, in the caller's tenant. */
const publishWithLessons = (module: StoredRecord) =>
  Effect.gen(function* () {
    const published = yield* publish(modules, module)
    yield* Effect.forEach(yield* childrenOf(module.tenant, LESSON_TYPE, "module_id", module.id), (lesson) => publish(lessons, lesson))
    return published
  })

const PublicationItem = Schema.Struct({ module_id: Schema.String, lesson_id: Schema.optional(Schema.String), replica: Schema.optional(ReplicaRef) })

const sameReplica = (a: ReplicaRef, b: ReplicaRef) => a.account_id === b.account_id && a.environment === b.environment && a.id === b.id

const runPublicationItem = (payload: JsonObject): Effect.Effect<Json, ApiError, ItemServices> =>
  Effect.gen(function* () {
    const item = yield* Schema.decodeUnknown(PublicationItem)(payload).pipe(Effect.mapError(itemInvalid))
    const caller = yield* Caller
    const records = yield* Records
    const source = yield* findLive(MODULE_TYPE, item.module_id)
    if (!source) return yield* Effect.fail(apiError("not_found"))
    if (item.lesson_id !== undefined) {
      const lesson = yield* findLive(LESSON_TYPE, item.lesson_id)
      if (!lesson) return yield* Effect.fail(apiError("not_found"))
      return yield* publish(lessons, lesson)
    }
    const ref = item.replica
    if (!ref) return yield* publish(modules, source)
    // Only a copy the source lists, and that names the source as its origin, is written in its account.
    const tenant: Tenant = { accountId: ref.account_id, environment: ref.environment }
    const copy = replicasOf(source).some((r) => sameReplica(r, ref))
      ? yield* records.get(tenant, MODULE_TYPE, ref.id).pipe(Effect.mapError(writeUnavailable))
      : undefined
    if (!copy || copy.data.deleted === true || !isCopyOf(copy, source)) return yield* Effect.fail(apiError("not_found"))
    // The copy's changes are recorded in its own account (audit entries and events), as the publisher's act.
    return yield* publishWithLessons(copy).pipe(Effect.provideService(Caller, { ...caller, tenant }))
  })

// ---------------------------------------------------------------------------------------
// Lesson copy

export const LessonCopyInput = Schema.Struct({
  target_product_id: PublicId("product").annotations({ description: "The destination product; needs `lessons.create` on it." }),
  target_module_id: Schema.optional(
    PublicId("module").annotations({
      description: "A module of the destination product; defaults to the source's module when copying within its product."
    })
  ),
  name: Schema.optional(Text({ min: 1, max: 200 }).annotations({ description: "The copy's name; defaults to the source's." }))
}).annotations({ identifier: "LessonCopyInput" })
export type LessonCopyInput = typeof LessonCopyInput.Type

export const startLessonCopy = (productId: string, lessonId: string, input: LessonCopyInput) =>
  Effect.gen(function* () {
    const lesson = yield* getResource(lessons, { product_id: productId }, lessonId)
    if (isReplica(lesson)) return yield* Effect.fail(apiError("replica_readonly"))
    const targetId = input.target_product_id
    yield* requireLessonsCreate(targetId)
    const target = yield* findLive(PRODUCT_TYPE, targetId)
    if (!target) return yield* Effect.fail(fieldError("validation_failed", "target_product_id", { reason: "not_found" }))
    if (isReplica(target)) return yield* Effect.fail(apiError("replica_readonly"))
    const moduleId = input.target_module_id ?? (targetId === productId ? String(lesson.data.module_id) : undefined)
    if (moduleId === undefined) {
      return yield* Effect.fail(apiError("validation_failed", { details: [{ field: "target_module_id", code: "required", reason: "other_product" }] }))
    }
    yield* requireModule("target_module_id", moduleId, targetId)
    return yield* startOperation(LESSON_COPY, [
      {
        key: lesson.id,
        payload: { lesson_id: lesson.id, product_id: productId, target_product_id: targetId, target_module_id: moduleId, name: input.name ?? null }
      }
    ])
  })

const CopyItem = Schema.Struct({
  lesson_id: Schema.String,
  product_id: Schema.String,
  target_product_id: Schema.String,
  target_module_id: Schema.String,
  name: Schema.NullOr(Schema.String)
})

const runCopyItem = (payload: JsonObject): Effect.Effect<Json, ApiError, ItemServices> =>
  Effect.gen(function* () {
    const item = yield* Schema.decodeUnknown(CopyItem)(payload).pipe(Effect.mapError(itemInvalid))
    const source = yield* findLive(LESSON_TYPE, item.lesson_id)
    if (!source || source.data.product_id !== item.product_id) return yield* Effect.fail(apiError("not_found"))
    const sameProduct = item.target_product_id === item.product_id
    // The rules of a new lesson hold again here (a replicated or missing destination fails the item).
    const copy = yield* createResource(lessons, { product_id: item.target_product_id }, {
      name: item.name ?? source.data.name,
      module_id: item.target_module_id,
      kind: source.data.kind,
      exam_id: sameProduct ? (source.data.exam_id ?? null) : null
    })
    yield* copyContent(source, copy)
    yield* copyAttachments(source, copy)
    yield* recordResourceChange(lessons, "copied", resourceView(lessons, copy))
    return { object: LESSON_TYPE, id: copy.id, source_lesson_id: source.id }
  })

export const contentKinds: Readonly<Record<string, OperationKind>> = {
  [MODULE_PUBLICATION]: { runItem: runPublicationItem },
  [LESSON_COPY]: { runItem: runCopyItem }
}
