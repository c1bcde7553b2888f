/**
 * Taxonomies of a product and their terms (§2.3, §4.3, 3.1.0), and the links of terms to
 * lessons, which they count (the terms of a blog's lessons are set in
 * content/lesson-terms.ts).
 *
 * A lesson's terms are stored as link records (`lesson_term`: lesson_id, taxonomy_term_id,
 * product_id), so the counters shown on the resources are counts of records, recomputed
 * whenever a link or a term comes or goes: `lessons_count` of a term, `terms_count` of a
 * taxonomy. A counter that changes changes its resource (revision, event, audit entry).
 * Taxonomies and terms are removed for good (their §2.3 shape has no `deleted`; removing one
 * removes what hangs on it: a taxonomy its terms, a term its lesson links).
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { apiError, fieldError, writeUnavailable, readUnavailable } from "../errors/errors.js"
import type { OperationKind } from "../operations/operations.js"
import { type JsonObject, Records, type StoredRecord, type Where } from "../ports/store.js"
import {
  defineResource,
  isReplica,
  type ParentDefinition,
  recordResourceChange,
  type ResourceDefinition,
  resourceView,
  saveResource
} from "../records/resource.js"
import { Text } from "../records/schema.js"
import { requireFile } from "../uploads/uploads.js"

export const LESSON_TERM_TYPE = "lesson_term"


const productParent: ParentDefinition = { type: "product", idKind: "product", field: "product_id" }
const taxonomyParent: ParentDefinition = { type: "taxonomy", idKind: "taxonomy", field: "taxonomy_id", parent: productParent }

const Name = Text({ min: 1, max: 200 })
const FileId = Schema.String.annotations({ description: "ID of an uploaded file of purpose `image`." })
const Count = (description: string) => Schema.Int.annotations({ description })

// ---------------------------------------------------------------------------------------
// Store helpers

/** Every record of a type matching `where`, in ID order (page by page: sets may exceed one page). */
const allRecords = (type: string, where: ReadonlyArray<Where>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const out: Array<StoredRecord> = []
    let after: { value: string; id: string } | undefined
    for (;;) {
      const page = yield* records
        .list(caller.tenant, type, { where, sort: { field: "id", kind: "text", direction: "asc" }, after, limit: 500 })
        .pipe(Effect.mapError(readUnavailable))
      out.push(...page)
      const last = page.at(-1)
      if (page.length < 500 || !last) return out
      after = { value: last.id, id: last.id }
    }
  })

const countOf = (type: string, where: ReadonlyArray<Where>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const counts = yield* (yield* Records).count(caller.tenant, type, where, []).pipe(Effect.mapError(readUnavailable))
    return counts.reduce((sum, group) => sum + group.count, 0)
  })

const getRecord = (type: string, id: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    return yield* (yield* Records).get(caller.tenant, type, id).pipe(Effect.mapError(readUnavailable))
  })

/** Keep a counter field true: recount the records it counts; save (with its event) only when it changed. */
const refreshCount = (definition: ResourceDefinition, id: string, field: string, countedType: string, where: ReadonlyArray<Where>) =>
  Effect.gen(function* () {
    const record = yield* getRecord(definition.type, id)
    if (!record) return
    const count = yield* countOf(countedType, where)
    if (record.data[field] === count) return
    const saved = yield* saveResource(definition, record, { ...record.data, [field]: count }, record.revision)
    yield* recordResourceChange(definition, "updated", resourceView(definition, saved), resourceView(definition, record))
  })

// ---------------------------------------------------------------------------------------
// Rules shared by taxonomies and terms

/** §4.3: the taxonomies and terms of a replicated product are read-only (403 `replica_readonly`). */
const requireWritableProduct = (productId: unknown) =>
  Effect.gen(function* () {
    const product = typeof productId === "string" ? yield* getRecord("product", productId) : undefined
    if (product && isReplica(product)) return yield* Effect.fail(apiError("replica_readonly"))
  })

/** A name is unique among its siblings (as GitHub labels or WordPress terms): 409 `already_exists`. */
const requireUniqueName = (type: string, parentField: string, data: JsonObject, previous: JsonObject | null) =>
  Effect.gen(function* () {
    if (previous && previous.name === data.name) return
    const caller = yield* Caller
    const taken = yield* (yield* Records)
      .list(caller.tenant, type, {
        where: [
          { field: parentField, op: "eq", value: String(data[parentField]) },
          { field: "name", op: "eq", value: String(data.name) }
        ],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: 2
      })
      .pipe(Effect.mapError(readUnavailable))
    if (taken.some((record) => record.id !== previous?.id)) return yield* Effect.fail(fieldError("already_exists", "name"))
  })

// ---------------------------------------------------------------------------------------
// Taxonomies

export const taxonomies: ResourceDefinition = defineResource({
  type: "taxonomy",
  idKind: "taxonomy",
  plural: "taxonomies",
  path: "/products/{product_id}/taxonomies",
  tag: "Catalog",
  parent: productParent,
  fields: {
    name: Schema.String.annotations({ description: "Unique within the product." }),
    plural_name: Schema.String,
    terms_count: Count("How many terms the taxonomy has.")
  },
  create: Schema.Struct({ name: Name, plural_name: Name }),
  update: Schema.Struct({ name: Schema.optional(Name), plural_name: Schema.optional(Name) }),
  defaults: (body, context) =>
    Effect.succeed({ product_id: context.parentId ?? null, name: body.name, plural_name: body.plural_name, terms_count: 0 }),
  rules: {
    check: (data, previous) =>
      Effect.zipRight(requireWritableProduct(data.product_id), requireUniqueName("taxonomy", "product_id", data, previous)),
    beforeDelete: (record) => requireWritableProduct(record.data.product_id),
    afterDelete: (record) =>
      Effect.gen(function* () {
        const terms = yield* allRecords("taxonomy_term", [{ field: "taxonomy_id", op: "eq", value: record.id }])
        yield* Effect.forEach(terms, removeTerm, { discard: true })
      })
  },
  writeErrors: ["already_exists"],
  trash: false,
  replicable: true,
  revision: "string",
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  search: ["name"]
})

// ---------------------------------------------------------------------------------------
// Terms

export const taxonomyTerms: ResourceDefinition = defineResource({
  type: "taxonomy_term",
  idKind: "taxonomy_term",
  plural: "taxonomy_terms",
  path: "/products/{product_id}/taxonomies/{taxonomy_id}/terms",
  tag: "Catalog",
  parent: taxonomyParent,
  fields: {
    name: Schema.String.annotations({ description: "Unique within the taxonomy." }),
    image: Schema.NullOr(Schema.String).annotations({ description: "File ID of the term image (purpose `image`), or null." }),
    lessons_count: Count("How many lessons of the product carry the term.")
  },
  create: Schema.Struct({ name: Name, image: Schema.optional(Schema.NullOr(FileId)) }),
  update: Schema.Struct({ name: Schema.optional(Name), image: Schema.optional(Schema.NullOr(FileId)) }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      // The product is kept on the term (not shown) for the replica rule and the lesson links.
      const taxonomy = yield* getRecord("taxonomy", context.parentId ?? "")
      return {
        taxonomy_id: taxonomy?.id ?? null,
        product_id: taxonomy?.data.product_id ?? null,
        name: body.name,
        image: body.image ?? null,
        lessons_count: 0
      }
    }),
  rules: {
    check: (data, previous) =>
      Effect.gen(function* () {
        yield* requireWritableProduct(data.product_id)
        if (typeof data.image === "string" && data.image !== previous?.image) yield* requireFile("image", data.image, ["image"])
        yield* requireUniqueName("taxonomy_term", "taxonomy_id", data, previous)
      }),
    afterCreate: (record) => refreshTermsCount(String(record.data.taxonomy_id)),
    beforeDelete: (record) => requireWritableProduct(record.data.product_id),
    afterDelete: (record) =>
      Effect.zipRight(dropLinks([{ field: "taxonomy_term_id", op: "eq", value: record.id }]), refreshTermsCount(String(record.data.taxonomy_id)))
  },
  writeErrors: ["already_exists"],
  trash: false,
  replicable: true,
  revision: "string",
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  search: ["name"]
})

const refreshTermsCount = (taxonomyId: string) =>
  refreshCount(taxonomies, taxonomyId, "terms_count", "taxonomy_term", [{ field: "taxonomy_id", op: "eq", value: taxonomyId }])

/** Keep a term's `lessons_count` true after its links changed. */
export const refreshLessonsCount = (termId: string) =>
  refreshCount(taxonomyTerms, termId, "lessons_count", LESSON_TERM_TYPE, [{ field: "taxonomy_term_id", op: "eq", value: termId }])

/** A term removed with its taxonomy: its own event and audit entry, and its links gone. */
const removeTerm = (term: StoredRecord) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    yield* (yield* Records).remove(caller.tenant, "taxonomy_term", term.id).pipe(Effect.mapError(writeUnavailable))
    yield* recordResourceChange(taxonomyTerms, "deleted", resourceView(taxonomyTerms, term))
    yield* dropLinks([{ field: "taxonomy_term_id", op: "eq", value: term.id }])
  })

/** Remove the lesson links matching `where`; answers the terms they pointed to. */
const dropLinks = (where: ReadonlyArray<Where>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const links = yield* allRecords(LESSON_TERM_TYPE, where)
    yield* Effect.forEach(links, (link) => records.remove(caller.tenant, LESSON_TERM_TYPE, link.id).pipe(Effect.mapError(writeUnavailable)), {
      discard: true
    })
    return [...new Set(links.map((link) => String(link.data.taxonomy_term_id)))]
  })

/** The IDs of the terms a lesson carries, in link order. */
export const linkedTermIds = (lessonId: string) =>
  Effect.map(allRecords(LESSON_TERM_TYPE, [{ field: "lesson_id", op: "eq", value: lessonId }]), (links) =>
    links.map((link) => String(link.data.taxonomy_term_id))
  )

/**
 * For the lessons' own rules (content-catalog.ts): when a lesson is trashed or removed, or moves
 * to another product, its links go and the `lessons_count` of its terms follows (§3: "dependent
 * terms/lessons links removed"); a term belongs to one product's taxonomies.
 */
export const dropLessonTerms = (lessonId: string) =>
  Effect.gen(function* () {
    const terms = yield* dropLinks([{ field: "lesson_id", op: "eq", value: lessonId }])
    yield* Effect.forEach(terms, refreshLessonsCount, { discard: true })
  })

export const taxonomiesResources: ReadonlyArray<ResourceDefinition> = [taxonomies, taxonomyTerms]

export const taxonomiesOperationKinds: Readonly<Record<string, OperationKind>> = {}
