/**
 * The terms of a blog's lessons (open-points:
 * `GET|PUT /products/{product_id}/lessons/{lesson_id}/terms`), read and replaced as a set.
 * Setting them is a write to what the lesson holds, so a write of the lesson (`touchLesson`).
 * The link records are counted, and removed with their term, by catalog/taxonomies.ts.
 */
import { Clock, Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { LESSON_TERM_TYPE, linkedTermIds, refreshLessonsCount, taxonomyTerms } from "../catalog/taxonomies.js"
import { apiError, type DetailItem, writeUnavailable, readUnavailable } from "../errors/errors.js"
import { Records } from "../ports/store.js"
import { isReplica, resourceView, ruleViolation } from "../records/resource.js"
import { ARRAY_MAX, List, PublicId } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"
import { touchLesson } from "./content-catalog.js"


const getRecord = (type: string, id: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    return yield* (yield* Records).get(caller.tenant, type, id).pipe(Effect.mapError(readUnavailable))
  })

export const LessonTermsBody = Schema.Struct({
  ids: List(PublicId("taxonomy_term")).annotations({
    description: "Every term the lesson carries (a set: repeats count once); terms of the product's taxonomies."
  })
})

/** The lesson, under its product, if that product is a blog (else 409 `format_unsupported`). */
const requireBlogLesson = (productId: string, lessonId: string) =>
  Effect.gen(function* () {
    const product = yield* getRecord("product", productId)
    const lesson = yield* getRecord("lesson", lessonId)
    if (!product || product.data.deleted === true || !lesson || lesson.data.deleted === true || lesson.data.product_id !== productId) {
      return yield* Effect.fail(apiError("not_found"))
    }
    if (product.data.format !== "blog") return yield* Effect.fail(apiError("format_unsupported"))
    return { product, lesson }
  })

/** The terms of these IDs (of any product), in creation order. */
const termRecords = (termIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (termIds.length === 0) return []
    const caller = yield* Caller
    return yield* (yield* Records)
      .list(caller.tenant, "taxonomy_term", {
        where: [{ field: "id", op: "in", values: termIds }],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: termIds.length
      })
      .pipe(Effect.mapError(readUnavailable))
  })

/** The terms of a lesson as a collection, all at once (a set holds at most `ARRAY_MAX`). */
const termsView = (termIds: ReadonlyArray<string>) =>
  Effect.map(termRecords(termIds), (terms) => ({
    data: terms.map((term) => resourceView(taxonomyTerms, term)),
    page: { limit: ARRAY_MAX, next_cursor: null, prev_cursor: null }
  }))

export const listLessonTerms = (productId: string, lessonId: string) =>
  Effect.gen(function* () {
    yield* requireBlogLesson(productId, lessonId)
    return yield* termsView(yield* linkedTermIds(lessonId))
  })

/**
 * PUT replaces the set. It is a write to what the lesson holds, so a write of the lesson
 * (`touchLesson`): `If-Match` names the lesson's ETag, and a change moves the lesson's revision
 * (event `lesson.updated`) and the `lessons_count` of every term that gained or lost it.
 */
export const replaceLessonTerms = (
  productId: string,
  lessonId: string,
  body: Schema.Schema.Type<typeof LessonTermsBody>,
  expectedRevision: number | undefined
) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const { product, lesson } = yield* requireBlogLesson(productId, lessonId)
    if (isReplica(product) || isReplica(lesson)) return yield* Effect.fail(apiError("replica_readonly"))
    if (expectedRevision !== undefined && lesson.revision !== expectedRevision) return yield* Effect.fail(apiError("revision_mismatch"))
    const wanted = [...new Set(body.ids)]
    // Only terms of this product's taxonomies; each other ID is itemized (as a file ID of another account is).
    const own = new Set((yield* termRecords(wanted)).filter((term) => term.data.product_id === productId).map((term) => term.id))
    const problems = body.ids.flatMap((id, index): ReadonlyArray<DetailItem> =>
      own.has(id) ? [] : [{ field: `ids[${index}]`, code: "validation_failed", reason: "not_found" }]
    )
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))

    const current = yield* linkedTermIds(lessonId)
    const added = wanted.filter((id) => !current.includes(id))
    const removed = current.filter((id) => !wanted.includes(id))
    if (added.length === 0 && removed.length === 0) return yield* termsView(current)

    const now = formatTimestamp(yield* Clock.currentTimeMillis)
    yield* Effect.forEach(
      added,
      (termId) =>
        records
          .insert(caller.tenant, LESSON_TERM_TYPE, `${lessonId}.${termId}`, {
            id: `${lessonId}.${termId}`,
            lesson_id: lessonId,
            taxonomy_term_id: termId,
            product_id: productId,
            created_at: now
          })
          .pipe(Effect.mapError(writeUnavailable)),
      { discard: true }
    )
    yield* Effect.forEach(removed, (termId) => records.remove(caller.tenant, LESSON_TERM_TYPE, `${lessonId}.${termId}`).pipe(Effect.mapError(writeUnavailable)), {
      discard: true
    })
    yield* Effect.forEach([...added, ...removed], refreshLessonsCount, { discard: true })

    yield* touchLesson(lesson, expectedRevision)
    return yield* termsView(wanted)
  })
