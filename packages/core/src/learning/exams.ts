/**
 * Exams (§2.3 `exam`, §4.3; release 3.2.0, open-points routes
 * `/products/{product_id}/exams`). Questions are in `exam-questions.ts`, attempts in
 * `exam-attempts.ts`; the decisions are in docs/exams.md and in the OpenAPI description.
 *
 * - A new exam is attached to no lesson (§4.3): a lesson links it through its `exam_id`
 *   (`content/content-catalog.ts` checks it names an exam of the lesson's product).
 *   `lesson_ids` lists the non-trashed lessons linking it, kept in step in the lesson's unit
 *   of work (`keepExamLessonIds`, called by the lessons' rules), never by reading lessons.
 * - `questions_count` (non-trashed questions) is kept by the questions' writes; with
 *   `lesson_ids` it is part of the exam's representation, so when either changes the exam's
 *   `revision` and `updated_at` change (no event of their own: the lesson's or the question's
 *   event says what happened). The exam's `If-Match` therefore covers its set of questions,
 *   which is why the reorder of questions takes the exam's ETag.
 * - `attempts_count` is counted on every read through the attempts' index of the exam (as a
 *   tag's `users_count`), so that learners submitting attempts never change the exam's
 *   revision (an administrator's `If-Match` stays valid during a live exam). The stored value,
 *   which the exam's events carry, is refreshed at each write of the exam.
 * - `settings` is created with its defaults; a PATCH merges the sub-fields sent (`retake` and
 *   `show_answer_key` too), the others stay.
 * - An exam some non-trashed lesson links cannot be trashed: 409 `state_conflict`, reason
 *   `exam_linked` (unlink it first), as a module with lessons cannot.
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { PRODUCT_TYPE } from "../catalog/products.js"
import { apiError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { type Json, type JsonObject, Records, type StoredRecord, type Tenant } from "../ports/store.js"
import { defineResource, type ParentDefinition, type ResourceDefinition } from "../records/resource.js"
import { Bool, Integer, RichText, Text } from "../records/schema.js"
import { currentTimestamp } from "../records/time.js"

export const EXAM_TYPE = "exam"
export const EXAM_QUESTION_TYPE = "exam_question"
export const EXAM_ATTEMPT_TYPE = "exam_attempt"
/** The capability that shows the answer key (§2.3, §5): never part of `*.read`. */
export const READ_ANSWER_KEY = "exams.read_answer_key"

const productParent: ParentDefinition = { type: PRODUCT_TYPE, idKind: "product", field: "product_id" }
export const examParent: ParentDefinition = { type: EXAM_TYPE, idKind: "exam", field: "exam_id", parent: productParent }

/** Served by `@syllabus/http`'s `routes/exams.ts`, with views that depend on the caller and live counts. */
export const examOwnRoutes = ["list", "get", "create", "update", "delete"] as const

// ---------------------------------------------------------------------------------------
// Settings

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** A grade in percent, 0 to 100 (decimals allowed). */
const Percent = Schema.Number.annotations({ message: () => "invalid_type|expected=number" }).pipe(
  Schema.filter((n) => (Number.isFinite(n) && n >= 0 && n <= 100) || "out_of_range|min=0|max=100"),
  Schema.annotations({ jsonSchema: { type: "number", minimum: 0, maximum: 100 } })
)

export const defaultExamSettings = {
  duration_minutes: 0,
  min_grade: 70,
  questions_count: 0,
  retake: { allowed: true, only_if_failed: false, wait_minutes: 0 },
  show_answer_key: { approved: false, failed: false },
  show_answers: true,
  show_grade: true,
  shuffle_alternatives: false,
  shuffle_questions: false
} as const satisfies JsonObject

const Settings = Schema.Struct({
  duration_minutes: Schema.Int.annotations({ description: "Time a learner has to finish, in minutes; `0`: no limit (the platform's player enforces it). Default `0`." }),
  min_grade: Schema.Number.annotations({ description: "Grade (percent, 0–100) an attempt needs to pass: `passed` is `grade >= min_grade`. Default `70`." }),
  questions_count: Schema.Int.annotations({
    description:
      "Questions a learner is shown per attempt, drawn from the exam's; `0`: all of them. Default `0`. With N below the exam's count, an attempt answers exactly N questions and is graded over them."
  }),
  retake: Schema.Struct({
    allowed: Schema.Boolean.annotations({ description: "A learner may attempt again. Default `true`; `false`: a second attempt is 409 `state_conflict` (`retake_not_allowed`)." }),
    only_if_failed: Schema.Boolean.annotations({ description: "Only after failing: once an attempt passed, another is 409 `state_conflict` (`already_passed`). Default `false`." }),
    wait_minutes: Schema.Int.annotations({ description: "Minutes between a learner's attempts; sooner is 409 `state_conflict` (`retake_too_soon`). Default `0`." })
  }),
  show_answer_key: Schema.Struct({
    approved: Schema.Boolean.annotations({ description: "The learner sees the answer key after passing (on the platform). Default `false`." }),
    failed: Schema.Boolean.annotations({ description: "The learner sees the answer key after failing (on the platform). Default `false`." })
  }),
  show_answers: Schema.Boolean.annotations({ description: "The learner sees their own answers after submitting (on the platform). Default `true`." }),
  show_grade: Schema.Boolean.annotations({ description: "The learner sees their grade (on the platform). Default `true`." }),
  shuffle_alternatives: Schema.Boolean.annotations({ description: "The platform shows the alternatives in a random order. Default `false`." }),
  shuffle_questions: Schema.Boolean.annotations({ description: "The platform shows the questions in a random order. Default `false`." })
}).annotations({
  description:
    "How the exam is taken. Created with the defaults named per field; a PATCH changes only the sub-fields sent. The `show_*` and `shuffle_*` settings govern what a learner sees on the platform, not what the API shows a credential."
})

export const ExamSettingsInput = Schema.Struct({
  duration_minutes: optional(Integer({ min: 0, max: 10_080 })),
  min_grade: optional(Percent),
  questions_count: optional(Integer({ min: 0, max: 1000 })),
  retake: optional(
    Schema.Struct({
      allowed: optional(Bool),
      only_if_failed: optional(Bool),
      wait_minutes: optional(Integer({ min: 0, max: 525_600 }))
    })
  ),
  show_answer_key: optional(Schema.Struct({ approved: optional(Bool), failed: optional(Bool) })),
  show_answers: optional(Bool),
  show_grade: optional(Bool),
  shuffle_alternatives: optional(Bool),
  shuffle_questions: optional(Bool)
}).annotations({ description: "Only the fields sent change (also inside `retake` and `show_answer_key`)." })

const isObject = (value: Json | undefined): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value)

/** Settings after a change: the sub-fields sent replace, the others stay (two levels). */
export const mergeExamSettings = (current: JsonObject, patch: JsonObject): JsonObject => {
  const out: Record<string, Json> = { ...current }
  for (const [key, value] of Object.entries(patch)) {
    const held = out[key]
    out[key] = isObject(value) && isObject(held) ? { ...held, ...value } : value
  }
  return out
}

/** The settings of a stored exam, with the defaults under whatever is missing. */
export const examSettings = (exam: JsonObject): typeof defaultExamSettings => {
  const stored = isObject(exam.settings) ? exam.settings : {}
  return mergeExamSettings(defaultExamSettings, stored) as unknown as typeof defaultExamSettings
}

// ---------------------------------------------------------------------------------------
// Kept fields

/**
 * Change a stored exam for a kept field (a count, `lesson_ids`): new revision and `updated_at`,
 * no event of its own, in the unit of work of the change that moved it.
 */
export const adjustExam = (tenant: Tenant, examId: string, change: (data: JsonObject) => JsonObject) =>
  Effect.gen(function* () {
    const records = yield* Records
    const exam = yield* records.get(tenant, EXAM_TYPE, examId).pipe(Effect.mapError(writeUnavailable))
    if (!exam) return undefined
    return yield* records
      .update(tenant, EXAM_TYPE, examId, { ...change(exam.data), updated_at: yield* currentTimestamp }, { expectedRevision: exam.revision })
      .pipe(Effect.mapError((e) => (e._tag === "RevisionConflict" ? apiError("revision_mismatch") : writeUnavailable(e))))
  })

/** The exam a lesson links, when the lesson is not trashed. */
const linkedExam = (lesson: StoredRecord | null): string | undefined =>
  lesson !== null && lesson.data.deleted !== true && typeof lesson.data.exam_id === "string" ? lesson.data.exam_id : undefined

/**
 * Keep `lesson_ids` of the exams a lesson's write touches: the lesson leaves the exam it
 * linked and joins the one it links now (a create: `before` null; a trash: `after` null).
 * Called by the lessons' rules, in the lesson's unit of work; `lesson_ids` stays in ID
 * (creation) order.
 */
export const keepExamLessonIds = (before: StoredRecord | null, after: StoredRecord | null) =>
  Effect.gen(function* () {
    const from = linkedExam(before)
    const to = linkedExam(after)
    if (from === to) return
    const caller = yield* Caller
    const lessonId = (after ?? before)!.id
    const others = (data: JsonObject) => (Array.isArray(data.lesson_ids) ? data.lesson_ids.filter((id) => id !== lessonId) : [])
    if (from !== undefined) yield* adjustExam(caller.tenant, from, (data) => ({ ...data, lesson_ids: others(data) }))
    if (to !== undefined) {
      yield* adjustExam(caller.tenant, to, (data) => ({ ...data, lesson_ids: [...others(data), lessonId].sort() }))
    }
  })

/** Attempts of each of these exams, counted through the attempts' index of the exam. */
export const attemptCounts = (examIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (examIds.length === 0) return new Map<string, number>()
    const caller = yield* Caller
    const records = yield* Records
    const counts = yield* records
      .count(
        caller.tenant,
        EXAM_ATTEMPT_TYPE,
        [
          { field: "exam_id", op: "in", values: examIds },
          { field: "deleted", op: "eq", value: false }
        ],
        ["exam_id"]
      )
      .pipe(Effect.mapError(readUnavailable))
    return new Map(counts.map((c) => [String(c.key[0]), c.count]))
  })

/**
 * Exams with their live `attempts_count`, and `settings` in their documented order (a JSON
 * store may keep keys in any order).
 */
export const examViews = (items: ReadonlyArray<JsonObject>) =>
  Effect.map(attemptCounts(items.map((item) => String(item.id))), (counts) =>
    items.map((item) => ({ ...item, attempts_count: counts.get(String(item.id)) ?? 0, settings: examSettings(item) }))
  )

// ---------------------------------------------------------------------------------------
// The description

export const exams: ResourceDefinition = defineResource({
  type: EXAM_TYPE,
  idKind: "exam",
  plural: "exams",
  path: "/products/{product_id}/exams",
  tag: "Learning",
  parent: productParent,
  fields: {
    title: Schema.String,
    description: Schema.NullOr(Schema.String).annotations({ description: "Rich text (HTML) shown before the exam, at most 512 KiB." }),
    lesson_ids: Schema.Array(Schema.String).annotations({
      description:
        "The non-trashed lessons linking the exam through their `exam_id`, in creation order. A new exam has none; set a lesson's `exam_id` to link it. When it changes, the exam's `revision` and `updated_at` change too."
    }),
    attempts_count: Schema.Int.annotations({ description: "Attempts recorded for the exam, counted when read; attempts never change the exam's `revision`." }),
    questions_count: Schema.Int.annotations({
      description: "Non-trashed questions of the exam. When it changes, the exam's `revision` and `updated_at` change too."
    }),
    settings: Settings
  },
  create: Schema.Struct({
    title: Text({ min: 1, max: 200 }),
    description: optional(Schema.NullOr(RichText())),
    settings: optional(ExamSettingsInput)
  }),
  update: Schema.Struct({
    title: optional(Text({ min: 1, max: 200 })),
    description: optional(Schema.NullOr(RichText())),
    settings: optional(ExamSettingsInput)
  }),
  defaults: (body) =>
    Effect.succeed({
      title: body.title,
      description: body.description ?? null,
      lesson_ids: [],
      attempts_count: 0,
      questions_count: 0,
      settings: mergeExamSettings(defaultExamSettings, (body.settings ?? {}) as JsonObject)
    }),
  change: (current, patch, context) =>
    Effect.gen(function* () {
      const { settings, ...rest } = patch as JsonObject
      const counts = yield* attemptCounts([context.id])
      return {
        ...current,
        ...rest,
        ...(isObject(settings) ? { settings: mergeExamSettings(examSettings(current), settings) } : {}),
        attempts_count: counts.get(context.id) ?? 0
      }
    }),
  rules: {
    beforeDelete: (record) =>
      Array.isArray(record.data.lesson_ids) && record.data.lesson_ids.length > 0
        ? Effect.fail(apiError("state_conflict", { reason: "exam_linked" }))
        : Effect.void
  },
  trash: true,
  revision: "string",
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "title", field: "title", kind: "text" }
  ],
  search: ["title"],
  replacedRoutes: examOwnRoutes
})
