/**
 * Modules, lessons and attachments: the content of a product (release 3.1.0, replica rules of
 * 3.3.0). Lessons live under their product (`/products/{product_id}/lessons`, the paths the
 * contract shows for copies and content) and name their module in `module_id`; moving a
 * lesson is a PATCH of `module_id`, also to a module of another product.
 *
 * Decisions where the contract is silent (also in the OpenAPI descriptions):
 * - Positions are 1-based and dense among the non-trashed modules of a product and the
 *   non-trashed lessons of a module; a position above the count is last. A record shifted
 *   because another one moved gets a new revision and the event `<type>.reordered`.
 * - `status` of a module in a PATCH: `draft` unpublishes; `published` is 422
 *   `invalid_transition` (reason `use_publications`) except on a replica (3.3.0), as for
 *   products. A lesson's `status` may be set either way by PATCH.
 * - A module with non-trashed lessons cannot be trashed: 409 `state_conflict`
 *   (reason `module_not_empty`).
 * - `kind` of a lesson is chosen at creation (its content depends on it).
 * - A lesson moved to another product needs `lessons.create` there and loses its `exam_id`
 *   (an exam belongs to one product) unless one of the destination is sent.
 * - The exam a lesson links keeps the lesson in its `lesson_ids`, in the lesson's unit of work
 *   (`keepExamLessonIds`, learning/exams.ts): create, copy, change of `exam_id`, move, trash, restore.
 * - `connected` is set by the platform: the lesson's content is inherited from another
 *   lesson and cannot be replaced here.
 */
import { Effect, Option, Schema } from "effect"
import { Caller } from "../access/context.js"
import { allows } from "../access/policies.js"
import { adjustProductCounts, PRODUCT_TYPE } from "../catalog/products.js"
import { dropLessonTerms } from "../catalog/taxonomies.js"
import { keepExamLessonIds } from "../learning/exams.js"
import { apiError, fieldError, writeUnavailable } from "../errors/errors.js"
import {
  contends,
  type Json,
  type JsonObject,
  type ListQuery,
  Records,
  type StoredRecord,
  type StoreUnavailable,
  type Tenant
} from "../ports/store.js"
import {
  defineResource,
  equalsFilter,
  isReplica,
  type ParentDefinition,
  recordResourceChange,
  type ResourceDefinition,
  resourceView,
  saveResource
} from "../records/resource.js"
import { Enum, Integer, PublicId, Text } from "../records/schema.js"
import { currentTimestamp } from "../records/time.js"

export const MODULE_TYPE = "module"
export const LESSON_TYPE = "lesson"
export const ATTACHMENT_TYPE = "attachment"
const EXAM_TYPE = "exam"

export const lessonKinds = ["standard", "embed", "live", "quiz"] as const
const Kind = Enum(...lessonKinds)
const Status = Enum("draft", "published")
const MAX_POSITION = 2_147_483_647
const Position = (scope: string) =>
  Integer({ min: 1, max: MAX_POSITION }).annotations({
    description: `1-based position within the ${scope}; above the count places it last; the others shift.`
  })


const productParent: ParentDefinition = { type: PRODUCT_TYPE, idKind: "product", field: "product_id" }

// ---------------------------------------------------------------------------------------
// Records of the caller's tenant

/** A non-trashed record of the caller's tenant, or undefined. */
export const findLive = (type: string, id: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const record = yield* records.get(caller.tenant, type, id).pipe(Effect.mapError(writeUnavailable))
    return record && record.data.deleted !== true ? record : undefined
  })

/** Every non-trashed record of `type` whose `field` is `value`, in position order. */
export const childrenOf = (tenant: Tenant, type: string, field: string, value: string) =>
  Effect.gen(function* () {
    const records = yield* Records
    const out: Array<StoredRecord> = []
    let after: ListQuery["after"]
    const where = [
      { field, op: "eq", value },
      { field: "deleted", op: "eq", value: false }
    ] as const
    for (;;) {
      const page = yield* records
        .list(tenant, type, { where, sort: { field: "position", kind: "number", direction: "asc" }, after, limit: 1000 })
        .pipe(Effect.mapError(writeUnavailable))
      out.push(...page)
      const last = page.at(-1)
      if (page.length < 1000 || !last) return out
      after = { value: Number(last.data.position), id: last.id }
    }
  })

const isObject = (value: Json | undefined): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value)

/** Same test as the machinery's `isReplica`, on a record's data. */
const replicated = (data: JsonObject): boolean => isObject(data.replica_of)

/** A product that may take new content: a replicated one is read-only (403, 3.3.0). */
const requireWritableProduct = (product: StoredRecord) => (isReplica(product) ? Effect.fail(apiError("replica_readonly")) : Effect.void)

/** Putting a lesson into a product (a copy, a move) needs `lessons.create` there (§4.3). */
export const requireLessonsCreate = (productId: string) =>
  Effect.flatMap(Caller, (caller) =>
    allows(caller.grant, "lessons.create", productId)
      ? Effect.void
      : Effect.fail(apiError("permission_denied", { params: { capability: "lessons.create" } }))
  )

/** A module of the tenant, not trashed, for a body field: else 422 on the field. */
export const requireModule = (field: string, moduleId: string, productId?: string) =>
  Effect.gen(function* () {
    const module = yield* findLive(MODULE_TYPE, moduleId)
    if (!module || (productId !== undefined && module.data.product_id !== productId)) {
      return yield* Effect.fail(fieldError("validation_failed", field, { reason: "not_found" }))
    }
    return module
  })

/** An exam of the lesson's product (exams arrive with 3.2.0): else 422 on `exam_id`. */
const requireExam = (productId: string, examId: string) =>
  Effect.gen(function* () {
    const exam = yield* findLive(EXAM_TYPE, examId)
    if (!exam || exam.data.product_id !== productId) return yield* Effect.fail(fieldError("validation_failed", "exam_id", { reason: "not_found" }))
  })

// ---------------------------------------------------------------------------------------
// Positions and counts

/** 1-based; absent or above the count of the others: last. */
const clampPosition = (requested: number | undefined, others: number): number => Math.min(requested ?? others + 1, others + 1)

/**
 * Keep the positions of a scope (a product's modules, a module's lessons) dense: `placed`
 * (already saved at its position) keeps it, the others close up around it in their order.
 */
const arrange = (definition: ResourceDefinition, scopeField: string, scopeId: string, placed: StoredRecord | null) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    // Every write placing a record of this scope reads its whole order: concurrent ones meet here.
    yield* contends(caller.tenant, `${definition.type}/${scopeField}/${scopeId}`)
    const others = (yield* childrenOf(caller.tenant, definition.type, scopeField, scopeId)).filter((r) => r.id !== placed?.id)
    const at = placed ? Number(placed.data.position) - 1 : others.length
    const ordered = placed ? [...others.slice(0, at), placed, ...others.slice(at)] : others
    yield* Effect.forEach(ordered, (record, i) =>
      record === placed || record.data.position === i + 1
        ? Effect.void
        : Effect.gen(function* () {
            const saved = yield* saveResource(definition, record, { ...record.data, position: i + 1 }, undefined)
            yield* recordResourceChange(definition, "reordered", resourceView(definition, saved), resourceView(definition, record))
          })
    )
  })

/** A module's `lessons_count`, recounted (a derived count: new revision and `updated_at`, which always agree; no event). */
const recountLessons = (moduleId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const module = yield* records.get(caller.tenant, MODULE_TYPE, moduleId).pipe(Effect.mapError(writeUnavailable))
    if (!module) return
    const [group] = yield* records
      .count(caller.tenant, LESSON_TYPE, [
        { field: "module_id", op: "eq", value: moduleId },
        { field: "deleted", op: "eq", value: false }
      ], [])
      .pipe(Effect.mapError(writeUnavailable))
    const count = group?.count ?? 0
    if (module.data.lessons_count === count) return
    yield* records
      .update(caller.tenant, MODULE_TYPE, moduleId, { ...module.data, lessons_count: count, updated_at: yield* currentTimestamp }, {
        expectedRevision: module.revision
      })
      .pipe(Effect.mapError((e) => (e._tag === "RevisionConflict" ? apiError("revision_mismatch") : writeUnavailable(e))))
  })

const countProduct = (productId: Json | undefined, by: { readonly lessons?: number; readonly modules?: number }) =>
  Effect.flatMap(Caller, (caller) => adjustProductCounts(caller.tenant, String(productId), by))

// ---------------------------------------------------------------------------------------
// Modules

export const modules: ResourceDefinition = defineResource({
  type: MODULE_TYPE,
  idKind: "module",
  plural: "modules",
  path: "/products/{product_id}/modules",
  tag: "Content",
  parent: productParent,
  fields: {
    name: Schema.String,
    description: Schema.NullOr(Schema.String),
    status: Schema.Literal("draft", "published").annotations({
      description:
        "Created `draft`; published with its lessons through `POST .../modules/{module_id}/publications`; a PATCH sets only `draft` (on a replica, either)."
    }),
    position: Schema.Int.annotations({ description: "1-based, dense within the product." }),
    lessons_count: Schema.Int.annotations({ description: "Non-trashed lessons of the module. When it changes, the module's `revision` and `updated_at` change too." })
  },
  create: Schema.Struct({
    name: Text({ min: 1, max: 200 }),
    description: Schema.optional(Schema.NullOr(Text())),
    position: Schema.optional(Position("product"))
  }),
  update: Schema.Struct({
    name: Schema.optional(Text({ min: 1, max: 200 })),
    description: Schema.optional(Schema.NullOr(Text())),
    status: Schema.optional(Status.annotations({ description: "`draft` unpublishes; `published` is 422 `invalid_transition` except on a replica." })),
    position: Schema.optional(Position("product"))
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      // 3.3.0: no new modules in a replicated product.
      const product = yield* findLive(PRODUCT_TYPE, String(context.parentId))
      if (product) yield* requireWritableProduct(product)
      const others = (yield* childrenOf(context.tenant, MODULE_TYPE, "product_id", String(context.parentId))).length
      return {
        name: body.name,
        description: body.description ?? null,
        status: "draft",
        position: clampPosition(body.position, others),
        lessons_count: 0
      }
    }),
  change: (current, patch, context) =>
    Effect.gen(function* () {
      if (patch.status === "published" && current.status !== "published" && !replicated(current)) {
        return yield* Effect.fail(fieldError("invalid_transition", "status", { reason: "use_publications" }))
      }
      const merged: JsonObject = { ...current, ...(patch as JsonObject) }
      if (current.deleted !== true && patch.position === undefined) return merged
      const others = (yield* childrenOf(context.tenant, MODULE_TYPE, "product_id", String(current.product_id))).filter((r) => r.id !== context.id)
      return { ...merged, position: clampPosition(patch.position, others.length) }
    }),
  rules: {
    beforeDelete: (record) =>
      Effect.gen(function* () {
        const caller = yield* Caller
        const lessons = yield* childrenOf(caller.tenant, LESSON_TYPE, "module_id", record.id)
        if (lessons.length > 0) return yield* Effect.fail(apiError("state_conflict", { reason: "module_not_empty" }))
      }),
    afterCreate: (record) =>
      Effect.gen(function* () {
        yield* arrange(modules, "product_id", String(record.data.product_id), record)
        yield* countProduct(record.data.product_id, { modules: 1 })
      }),
    afterUpdate: (before, after) =>
      Effect.gen(function* () {
        const restored = before.data.deleted === true
        if (restored || before.data.position !== after.data.position) yield* arrange(modules, "product_id", String(after.data.product_id), after)
        if (restored) yield* countProduct(after.data.product_id, { modules: 1 })
        // A replica published by PATCH (3.3.0) is published as by the operation.
        if (before.data.status !== "published" && after.data.status === "published") {
          yield* recordResourceChange(modules, "published", resourceView(modules, after), resourceView(modules, before))
        }
      }),
    afterDelete: (record) =>
      Effect.gen(function* () {
        yield* arrange(modules, "product_id", String(record.data.product_id), null)
        yield* countProduct(record.data.product_id, { modules: -1 })
      })
  },
  trash: true,
  replicable: true,
  revision: "string",
  // A new module in a replicated product; `published` by PATCH; trashing a module with lessons.
  writeErrors: ["replica_readonly", "invalid_transition", "state_conflict"],
  filters: { status: equalsFilter("status", Status) },
  sorts: [
    { name: "position", field: "position", kind: "number" },
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  search: ["name"]
})

// ---------------------------------------------------------------------------------------
// Lessons

/**
 * Where a lesson goes on a PATCH: its module (moved, or checked again on a restore, as it may
 * be gone), the product that module belongs to, and its position there.
 */
const placeLesson = (current: JsonObject, patch: { readonly module_id?: string | undefined; readonly position?: number | undefined }, lessonId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const moduleId = patch.module_id ?? String(current.module_id)
    const moved = moduleId !== current.module_id
    const restoring = current.deleted === true
    if (!moved && !restoring && patch.position === undefined) return {}
    const module = yield* requireModule("module_id", moduleId)
    const productId = String(module.data.product_id)
    if (productId !== current.product_id) {
      // 3.3.0: no lesson moves into a replicated product; and it needs lessons.create there.
      const product = yield* findLive(PRODUCT_TYPE, productId)
      if (!product) return yield* Effect.fail(fieldError("validation_failed", "module_id", { reason: "not_found" }))
      yield* requireWritableProduct(product)
      yield* requireLessonsCreate(productId)
    }
    const others = (yield* childrenOf(caller.tenant, LESSON_TYPE, "module_id", moduleId)).filter((r) => r.id !== lessonId)
    return { module_id: moduleId, product_id: productId, position: clampPosition(patch.position, others.length) }
  })

export const lessons: ResourceDefinition = defineResource({
  type: LESSON_TYPE,
  idKind: "lesson",
  plural: "lessons",
  path: "/products/{product_id}/lessons",
  tag: "Content",
  parent: productParent,
  fields: {
    name: Schema.String,
    module_id: Schema.String.annotations({ description: "The module of the lesson, in the same product." }),
    kind: Schema.Literal(...lessonKinds).annotations({ description: "Chosen at creation. `quiz` lessons take no video." }),
    status: Schema.Literal("draft", "published"),
    position: Schema.Int.annotations({ description: "1-based, dense within the module." }),
    exam_id: Schema.NullOr(Schema.String).annotations({ description: "An exam of the same product, or null." }),
    connected: Schema.Boolean.annotations({
      description: "The content is inherited from another lesson (set by the platform): it cannot be replaced here (409 `state_conflict`)."
    })
  },
  create: Schema.Struct({
    name: Text({ min: 1, max: 200 }),
    module_id: PublicId("module"),
    kind: Schema.optional(Kind),
    position: Schema.optional(Position("module")),
    exam_id: Schema.optional(Schema.NullOr(PublicId("exam")))
  }),
  update: Schema.Struct({
    name: Schema.optional(Text({ min: 1, max: 200 })),
    module_id: Schema.optional(
      PublicId("module").annotations({
        description: "Moves the lesson, also to a module of another product (needs `lessons.create` there); it goes last unless `position` is sent."
      })
    ),
    status: Schema.optional(Status),
    position: Schema.optional(Position("module")),
    exam_id: Schema.optional(Schema.NullOr(PublicId("exam")))
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      const productId = String(context.parentId)
      // Lessons cannot be added to a replicated product (3.3.0), neither created nor copied.
      const product = yield* findLive(PRODUCT_TYPE, productId)
      if (product) yield* requireWritableProduct(product)
      yield* requireModule("module_id", body.module_id, productId)
      if (typeof body.exam_id === "string") yield* requireExam(productId, body.exam_id)
      const others = (yield* childrenOf(context.tenant, LESSON_TYPE, "module_id", body.module_id)).length
      return {
        name: body.name,
        module_id: body.module_id,
        kind: body.kind ?? "standard",
        status: "draft",
        position: clampPosition(body.position, others),
        exam_id: body.exam_id ?? null,
        connected: false
      }
    }),
  change: (current, patch, context) =>
    Effect.gen(function* () {
      const placed = yield* placeLesson(current, patch, context.id)
      // An exam belongs to one product: a lesson moved to another keeps none unless one is sent.
      const examless = placed.product_id !== undefined && placed.product_id !== current.product_id ? { exam_id: null } : {}
      const merged: JsonObject = { ...current, ...examless, ...(patch as JsonObject), ...placed }
      if (typeof patch.exam_id === "string" && patch.exam_id !== current.exam_id) yield* requireExam(String(merged.product_id), patch.exam_id)
      return merged
    }),
  rules: {
    afterCreate: (record) =>
      Effect.gen(function* () {
        yield* arrange(lessons, "module_id", String(record.data.module_id), record)
        yield* recountLessons(String(record.data.module_id))
        yield* countProduct(record.data.product_id, { lessons: 1 })
        yield* keepExamLessonIds(null, record)
      }),
    afterUpdate: (before, after) =>
      Effect.gen(function* () {
        const restored = before.data.deleted === true
        const moved = before.data.module_id !== after.data.module_id
        if (moved && !restored) {
          yield* arrange(lessons, "module_id", String(before.data.module_id), null)
          yield* recountLessons(String(before.data.module_id))
        }
        if (restored || moved || before.data.position !== after.data.position) {
          yield* arrange(lessons, "module_id", String(after.data.module_id), after)
          yield* recountLessons(String(after.data.module_id))
        }
        if (restored) yield* countProduct(after.data.product_id, { lessons: 1 })
        else if (before.data.product_id !== after.data.product_id) {
          yield* countProduct(before.data.product_id, { lessons: -1 })
          yield* countProduct(after.data.product_id, { lessons: 1 })
          // Terms belong to one product's taxonomies: a lesson that leaves the product leaves them.
          yield* dropLessonTerms(after.id)
        }
        // The exams' `lesson_ids`: a link made, changed or ended by this write (a restore links again).
        yield* keepExamLessonIds(before, after)
      }),
    afterDelete: (record) =>
      Effect.gen(function* () {
        yield* arrange(lessons, "module_id", String(record.data.module_id), null)
        yield* recountLessons(String(record.data.module_id))
        yield* countProduct(record.data.product_id, { lessons: -1 })
        yield* dropLessonTerms(record.id)
        yield* keepExamLessonIds(record, null)
      })
  },
  trash: true,
  replicable: true,
  revision: "string",
  // A new lesson in, or a lesson moved to, a replicated product.
  writeErrors: ["replica_readonly"],
  filters: {
    module_id: equalsFilter("module_id", PublicId("module"), "Lessons of this module."),
    status: equalsFilter("status", Status),
    kind: equalsFilter("kind", Kind)
  },
  sorts: [
    { name: "position", field: "position", kind: "number" },
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  search: ["name"]
})

/**
 * A write to what a lesson holds (its content, its attachments) is a write to the lesson:
 * its revision changes (3.4.4), checked against `expectedRevision` when given, with the
 * event `lesson.updated`. In the unit of work of that write.
 */
export const touchLesson = (lesson: StoredRecord, expectedRevision: number | undefined) =>
  Effect.gen(function* () {
    const saved = yield* saveResource(lessons, lesson, lesson.data, expectedRevision ?? lesson.revision)
    yield* recordResourceChange(lessons, "updated", resourceView(lessons, saved), resourceView(lessons, lesson))
    return saved
  })

// ---------------------------------------------------------------------------------------
// Attachments: files of a lesson, in order. Written as a set with the lesson's `If-Match`
// (content-lessons.ts), so they have no routes of their own besides reads.

export const attachmentPurposes = ["document", "pdf", "image"] as const

export const attachments: ResourceDefinition = defineResource({
  type: ATTACHMENT_TYPE,
  idKind: "attachment",
  plural: "attachments",
  path: "/products/{product_id}/lessons/{lesson_id}/attachments",
  tag: "Content",
  parent: { type: LESSON_TYPE, idKind: "lesson", field: "lesson_id", parent: productParent },
  fields: {
    name: Schema.String,
    file: Schema.String.annotations({ description: "File ID (purpose `document`, `pdf` or `image`)." }),
    position: Schema.Int.annotations({ description: "1-based, the order of the set." })
  },
  create: Schema.Struct({ name: Text({ min: 1, max: 200 }), file: PublicId("file"), position: Integer({ min: 1, max: MAX_POSITION }) }),
  update: Schema.Struct({
    name: Schema.optional(Text({ min: 1, max: 200 })),
    file: Schema.optional(PublicId("file")),
    position: Schema.optional(Integer({ min: 1, max: MAX_POSITION }))
  }),
  defaults: (body) => Effect.succeed({ name: body.name, file: body.file, position: body.position }),
  trash: false,
  revision: "string",
  sorts: [{ name: "position", field: "position", kind: "number" }]
})

// ---------------------------------------------------------------------------------------
// Replicas (3.3.0)

export const ReplicaRef = Schema.Struct({ account_id: Schema.String, environment: Schema.Literal("production", "sandbox"), id: Schema.String })
export type ReplicaRef = typeof ReplicaRef.Type

/** The copies of a record in replicated accounts (set by the platform). */
export const replicasOf = (record: StoredRecord): ReadonlyArray<ReplicaRef> =>
  Option.getOrElse(Schema.decodeUnknownOption(Schema.Array(ReplicaRef))(record.data.replicas), () => [])

/** Does `copy` (in its account) name `source` (in the caller's) as its origin? */
export const isCopyOf = (copy: StoredRecord, source: StoredRecord): boolean => {
  const origin = copy.data.replica_of
  return (
    isObject(origin) &&
    origin.account_id === source.tenant.accountId &&
    origin.id === source.id &&
    (origin.environment ?? source.tenant.environment) === source.tenant.environment
  )
}
