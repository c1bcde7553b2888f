/**
 * Exam questions (§2.3 `exam_question`, §4.3, §4.6; open-points routes
 * `/products/{product_id}/exams/{exam_id}/questions` and the reorder
 * `PUT .../questions/order`). Decisions (also in docs/exams.md and the description):
 *
 * - `format` is a closed enum (§9 names `format` closed): `single_choice`, `multiple_choice`.
 * - `alternatives`: at least 2 (422 `too_short` on `alternatives`), at most 100; at least one
 *   marked `correct` (422 on `alternatives`, reason `no_correct_alternative`). Single choice:
 *   when several are marked only the first counts, and only it shows `correct: true`. The
 *   marks are stored as sent, so a change of `format` alone loses none.
 * - Alternative IDs (`alt_…`) are stable: in a PATCH, `alternatives` replaces the whole set;
 *   an item with the `id` of an alternative of the question keeps that alternative (its ID),
 *   one without `id` is new, those left out are gone. An `id` not of this question: 422 on
 *   `alternatives[i].id` (reason `not_found`).
 * - The answer key (`correct` of each alternative) is stored apart from the alternatives and
 *   shown only to a credential holding `exams.read_answer_key` (on the product); otherwise the
 *   property is omitted, not null. Events and batch results never carry it: they hold the
 *   question as anyone may see it.
 * - `position`: 1-based, dense among the exam's non-trashed questions; a new or restored
 *   question comes last, the trash closes the gap, `PUT .../questions/order` rearranges (the
 *   exact set of non-trashed questions, under the exam's `If-Match`).
 * - Recorded answers of attempts are never regraded when a question changes (§4.3): an
 *   attempt keeps its grading (exam-attempts.ts).
 */
import { Effect, Schema } from "effect"
import { Caller, Ids } from "../access/context.js"
import { allows } from "../access/policies.js"
import { apiError, type DetailItem, readUnavailable } from "../errors/errors.js"
import { type Json, type JsonObject, Records, type StoredRecord, type Where } from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import {
  defineResource,
  type ListInput,
  loadResource,
  recordResourceChange,
  requireParent,
  type ResourceDefinition,
  resourceSort,
  resourceView,
  ruleViolation,
  saveResource,
  inRequestedOrder,
  keptIdProblems
} from "../records/resource.js"
import { Bool, Enum, List, PublicId, RichText, Text } from "../records/schema.js"
import { requireFile } from "../uploads/uploads.js"
import { adjustExam, EXAM_QUESTION_TYPE, EXAM_TYPE, examParent, exams, examOwnRoutes, READ_ANSWER_KEY } from "./exams.js"

export const questionFormats = ["single_choice", "multiple_choice"] as const
const Format = Enum(...questionFormats)
/** Stored beside the alternatives, never in the representation: the IDs marked correct, in their order. */
const ANSWER_KEY = "answer_key"
const MAX_ALTERNATIVES = 100
/** More than an exam's questions (a reorder names at most 1,000, §8.2). */
const QUESTIONS_MAX = 10_000

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

const AlternativeInput = Schema.Struct({
  id: optional(
    PublicId("exam_alternative").annotations({
      description: "In a PATCH: keeps the alternative of the question with this ID. Absent: a new alternative."
    })
  ),
  text: Text({ min: 1 }),
  correct: optional(Bool.annotations({ description: "Marks the alternative correct. Default `false`." }))
})

const AlternativesInput = List(AlternativeInput, MAX_ALTERNATIVES).pipe(
  Schema.filter((items) => items.length >= 2 || "too_short|min=2"),
  Schema.annotations({
    jsonSchema: { minItems: 2, maxItems: MAX_ALTERNATIVES },
    description:
      "At least 2 (at most 100), at least one marked `correct`. Single choice: if several are marked, only the first counts. In a PATCH this replaces the whole set."
  })
)

const Alternative = Schema.Struct({
  id: Schema.String,
  text: Schema.String,
  correct: Schema.optionalWith(Schema.Boolean, { exact: true }).annotations({
    description: "Present only for a credential holding `exams.read_answer_key`; omitted (not null) otherwise."
  })
})

type AlternativeInput = typeof AlternativeInput.Type

/** The IDs that count as correct: single choice, the first marked; multiple choice, every one marked. */
export const effectiveAnswerKey = (data: JsonObject): ReadonlyArray<string> => {
  const marked = Array.isArray(data[ANSWER_KEY]) ? data[ANSWER_KEY].map(String) : []
  return data.format === "single_choice" ? marked.slice(0, 1) : marked
}

const alternativeIds = (data: JsonObject): ReadonlyArray<string> =>
  Array.isArray(data.alternatives) ? data.alternatives.map((a) => String((a as JsonObject).id)) : []

/** The stored alternatives and their marks from a set sent; `existing` are the IDs an item may keep. */
const buildAlternatives = (input: ReadonlyArray<AlternativeInput>, existing: ReadonlySet<string>) =>
  Effect.gen(function* () {
    const ids = yield* Ids
    const problems = keptIdProblems("alternatives", input, existing)
    if (!input.some((item) => item.correct === true)) {
      problems.push({ field: "alternatives", code: "invalid_value", reason: "no_correct_alternative" })
    }
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
    const alternatives: Array<JsonObject> = []
    const marked: Array<string> = []
    for (const item of input) {
      const id = item.id ?? (yield* ids.next("exam_alternative"))
      alternatives.push({ id, text: item.text })
      if (item.correct === true) marked.push(id)
    }
    return { alternatives, [ANSWER_KEY]: marked }
  })

/** The exam of a question's write (the machinery checked it exists under the product). */
const examOf = (examId: string | undefined) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const exam = yield* records.get(caller.tenant, EXAM_TYPE, String(examId)).pipe(Effect.mapError(readUnavailable))
    if (!exam) return yield* Effect.fail(apiError("not_found"))
    return exam
  })

const countQuestions = (examId: Json | undefined, delta: number) =>
  Effect.flatMap(Caller, (caller) =>
    adjustExam(caller.tenant, String(examId), (data) => ({ ...data, questions_count: Math.max(0, Number(data.questions_count ?? 0) + delta) }))
  )

/** The exam's non-trashed questions matching `where`, by position. */
const questionsOf = (examId: string, where: ReadonlyArray<Where> = []) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records
      .list(caller.tenant, EXAM_QUESTION_TYPE, {
        where: [{ field: "exam_id", op: "eq", value: examId }, { field: "deleted", op: "eq", value: false }, ...where],
        sort: { field: "position", kind: "number", direction: "asc" },
        limit: QUESTIONS_MAX
      })
      .pipe(Effect.mapError(readUnavailable))
  })

/** Save a question at a new position because another one moved, with its event. */
const reposition = (record: StoredRecord, position: number) =>
  Effect.gen(function* () {
    const saved = yield* saveResource(examQuestions, record, { ...record.data, position }, undefined)
    yield* recordResourceChange(examQuestions, "reordered", resourceView(examQuestions, saved), resourceView(examQuestions, record))
    return saved
  })

export const examQuestions: ResourceDefinition = defineResource({
  type: EXAM_QUESTION_TYPE,
  idKind: "exam_question",
  plural: "exam_questions",
  path: "/products/{product_id}/exams/{exam_id}/questions",
  tag: "Learning",
  parent: examParent,
  fields: {
    text: Schema.String.annotations({ description: "Rich text (HTML), at most 512 KiB." }),
    image: Schema.NullOr(Schema.String).annotations({ description: "File ID of an image shown with the question (purpose `image`), or null." }),
    format: Schema.Literal(...questionFormats).annotations({
      description: "`single_choice`: one alternative is the answer; `multiple_choice`: every alternative marked correct, and only those. A closed enum."
    }),
    position: Schema.Int.annotations({
      description: "1-based, dense among the exam's non-trashed questions. A new or restored question comes last; `PUT .../questions/order` rearranges."
    }),
    alternatives: Schema.Array(Alternative).annotations({
      description: "In order. `correct` (the answer key) only for a credential holding `exams.read_answer_key`, otherwise omitted."
    })
  },
  create: Schema.Struct({
    text: RichText({ min: 1 }),
    image: optional(Schema.NullOr(PublicId("file"))),
    format: Format,
    alternatives: AlternativesInput
  }),
  update: Schema.Struct({
    text: optional(RichText({ min: 1 })),
    image: optional(Schema.NullOr(PublicId("file"))),
    format: optional(Format),
    alternatives: optional(AlternativesInput)
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      const exam = yield* examOf(context.parentId)
      return {
        text: body.text,
        image: body.image ?? null,
        format: body.format,
        position: Number(exam.data.questions_count ?? 0) + 1,
        ...(yield* buildAlternatives(body.alternatives, new Set()))
      }
    }),
  change: (current, patch, context) =>
    Effect.gen(function* () {
      const { alternatives, ...rest } = patch as { readonly alternatives?: ReadonlyArray<AlternativeInput> } & JsonObject
      const next: Record<string, Json> = { ...current, ...rest }
      if (alternatives !== undefined) Object.assign(next, yield* buildAlternatives(alternatives, new Set(alternativeIds(current))))
      // A restored question comes last.
      if (current.deleted === true) next.position = Number((yield* examOf(context.parentId)).data.questions_count ?? 0) + 1
      return next
    }),
  rules: {
    check: (data, previous) =>
      typeof data.image === "string" && data.image !== previous?.image ? Effect.asVoid(requireFile("image", data.image, ["image"])) : Effect.void,
    afterCreate: (record) => Effect.asVoid(countQuestions(record.data.exam_id, 1)),
    afterUpdate: (before) => (before.data.deleted === true ? Effect.asVoid(countQuestions(before.data.exam_id, 1)) : Effect.void),
    afterDelete: (record) =>
      Effect.gen(function* () {
        yield* countQuestions(record.data.exam_id, -1)
        // Close the gap: the questions after it move up one.
        const after = yield* questionsOf(String(record.data.exam_id), [{ field: "position", op: "gt", value: Number(record.data.position) }])
        yield* Effect.forEach(after, (question) => reposition(question, Number(question.data.position) - 1), { discard: true })
      })
  },
  hidden: [ANSWER_KEY],
  trash: true,
  revision: "string",
  sorts: [
    { name: "position", field: "position", kind: "number" },
    { name: "created_at", field: "id", kind: "text" }
  ],
  replacedRoutes: examOwnRoutes
})

// ---------------------------------------------------------------------------------------
// Views and reads

/** May the caller see the answer key of this product's exams? */
export const canReadAnswerKey = (productId: string) => Effect.map(Caller, (caller) => allows(caller.grant, READ_ANSWER_KEY, productId))

/** A question as this caller may see it: `correct` on each alternative only with the key. */
export const questionView = (record: StoredRecord, withKey: boolean): JsonObject => {
  const view = resourceView(examQuestions, record)
  if (!withKey) return view
  const key = new Set(effectiveAnswerKey(record.data))
  const alternatives = Array.isArray(view.alternatives) ? view.alternatives : []
  return { ...view, alternatives: alternatives.map((a) => ({ ...(a as JsonObject), correct: key.has(String((a as JsonObject).id)) })) }
}

/** A page of an exam's questions, as records (the view depends on the caller). */
export const listExamQuestions = (input: Omit<ListInput, "q" | "filters" | "visible">) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    yield* requireParent(examQuestions.parent, input.parentIds)
    const { items, page } = yield* paginate({
      tenant: caller.tenant,
      type: EXAM_QUESTION_TYPE,
      where: [
        { field: "deleted", op: "eq", value: input.deleted },
        { field: "exam_id", op: "eq", value: input.parentIds.exam_id ?? null }
      ],
      sort: resourceSort(examQuestions, input.sort),
      limit: input.limit,
      cursor: input.cursor,
      collection: `${examQuestions.path}:${JSON.stringify([input.parentIds, input.deleted])}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
    return { items, page }
  })

// ---------------------------------------------------------------------------------------
// The order

export const QuestionOrderBody = Schema.Struct({
  ids: List(PublicId("exam_question")).annotations({ description: "Every non-trashed question of the exam, each once, in the new order." })
}).annotations({ identifier: "ExamQuestionOrderBody" })

/**
 * `PUT /products/{product_id}/exams/{exam_id}/questions/order` (§4.6): `ids` must be exactly
 * the exam's non-trashed questions, each once (else 422 `order_set_mismatch`, itemized, and
 * nothing changes); they take positions 1..n. Uses the exam's `If-Match`; the exam gets a new
 * revision (its ETag covers the order of its questions). Answers the questions in order and
 * the exam after the change.
 */
export const orderExamQuestions = (productId: string, examId: string, ids: ReadonlyArray<string>, expectedRevision: number | undefined) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    yield* requireParent(exams.parent, { product_id: productId })
    const exam = yield* loadResource(exams, productId, examId)
    if (exam.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    if (expectedRevision !== undefined && exam.revision !== expectedRevision) return yield* Effect.fail(apiError("revision_mismatch"))
    const ordered = yield* inRequestedOrder(ids, yield* questionsOf(examId))
    const placed = yield* Effect.forEach(ordered, (record, index) =>
      record.data.position === index + 1 ? Effect.succeed(record) : reposition(record, index + 1)
    )
    const touched = yield* adjustExam(caller.tenant, examId, (data) => data)
    return { questions: placed, exam: touched ?? exam }
  })
