/**
 * Exam attempts (release 3.2.0, open-points routes
 * `/products/{product_id}/exams/{exam_id}/attempts` and `/{exam_attempt_id}`): a learner's
 * completed attempt, recorded with its answers and graded against the answer key AT
 * SUBMISSION. Decisions (also in docs/exams.md and the description):
 *
 * - `POST` records a completed attempt: `user_id` (a user of the account, else 422 on
 *   `user_id`) who holds an ACTIVE enrollment in the exam's product (found by the
 *   enrollments' unique key `active_key`; none, or one past its `expires_at`: 409
 *   `state_conflict`, reason `not_enrolled`), and `answers` `[{ exam_question_id,
 *   alternative_ids }]` naming the exam's non-trashed questions and their alternatives
 *   (422, itemized per answer). An exam without questions cannot be attempted (409
 *   `state_conflict`, reason `no_questions`).
 * - Grading: a question is right when the alternatives chosen are exactly those that count
 *   as correct (single choice: the first marked; multiple choice: every one marked).
 *   `grade` = percent of right questions (two decimals), `passed` = `grade >= min_grade` (the
 *   exam's `settings.min_grade` then, kept on the attempt). The questions graded are every
 *   non-trashed question of the exam (one not answered is wrong), or, when
 *   `settings.questions_count` N is below their number, exactly the N the attempt answers.
 * - The attempt keeps what it was graded with: each answer's correctness and the IDs that
 *   counted as correct (the key's snapshot). Later edits of questions never regrade it (§4.3).
 * - Retakes (`settings.retake`): `allowed: false` and an earlier attempt → 409 `state_conflict`
 *   `retake_not_allowed`; `only_if_failed` and an earlier passed attempt → `already_passed`;
 *   `wait_minutes` since the user's last attempt not yet passed → `retake_too_soon`.
 * - Answer-key visibility: `correct` and `correct_alternative_ids` of each answer are shown
 *   only with `exams.read_answer_key` (they tell the key); `grade`, `passed` and
 *   `correct_count` always. The exam's `show_*` settings govern what the learner sees on the
 *   platform, not what the API shows a credential.
 * - A passed attempt, in its unit of work, awards the points of the active `exam_passed`
 *   gamification rules (once per learner and exam: the source is the exam, so a retake that
 *   passes again earns nothing more) and issues the product's certificate when its template's
 *   criteria are now met (`issueCertificateIfEarned`, with the exams the learner has passed).
 * - An attempt is final: no PATCH or DELETE, no capability or batch type to change or remove
 *   one (`writes`). Its event is `exam_attempt.created`, whose
 *   payload says `passed`; the payload never holds the key.
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { apiError, type DetailItem, fieldError, readUnavailable } from "../errors/errors.js"
import { type AccessPath, type Json, type JsonObject, listPath, Records, type StoredRecord, type Where } from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import {
  defineResource,
  equalsFilter,
  type ListInput,
  requireParent,
  type ResourceDefinition,
  resourceSort,
  resourceView,
  ruleViolation
} from "../records/resource.js"
import { List, PublicId } from "../records/schema.js"
import { formatTimestamp, MINUTE, parseTimestamp } from "../records/time.js"
import { requireLiveUser, USER_TYPE } from "../people/people-users.js"
import { effectiveAnswerKey } from "./exam-questions.js"
import { findOpenEnrollment } from "./enrollments.js"
import { rewardAttempt } from "./rewards.js"
import { EXAM_ATTEMPT_TYPE, EXAM_QUESTION_TYPE, EXAM_TYPE, examParent, examSettings, examOwnRoutes } from "./exams.js"

/** Stored beside the answers, never in the representation: per answer, its correctness and the IDs that counted. */
const GRADING = "grading"
/** More than an exam's questions (a reorder names at most 1,000, §8.2). */
const QUESTIONS_MAX = 10_000

const AnswerInput = Schema.Struct({
  exam_question_id: PublicId("exam_question"),
  alternative_ids: List(PublicId("exam_alternative"), 100).annotations({
    description: "The alternatives chosen (single choice: at most one). Empty: the question was left blank."
  })
})

const Answer = Schema.Struct({
  exam_question_id: Schema.String,
  alternative_ids: Schema.Array(Schema.String),
  correct: Schema.optionalWith(Schema.Boolean, { exact: true }).annotations({
    description: "The answer was right, graded at submission. Only with `exams.read_answer_key`; omitted otherwise."
  }),
  correct_alternative_ids: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }).annotations({
    description: "The alternatives that counted as correct at submission (the key's snapshot). Only with `exams.read_answer_key`; omitted otherwise."
  })
})

type AnswerInput = typeof AnswerInput.Type

const sameSet = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((id) => b.includes(id))

/** The user's earlier attempts of the exam matching `where`: the newest `limit`. */
const earlierAttempts = (examId: string, userId: string, where: ReadonlyArray<Where>, limit: number) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records
      .list(caller.tenant, EXAM_ATTEMPT_TYPE, {
        where: [
          { field: "exam_id", op: "eq", value: examId },
          { field: "deleted", op: "eq", value: false },
          { field: "user_id", op: "eq", value: userId },
          ...where
        ],
        sort: { field: "id", kind: "text", direction: "desc" },
        limit
      })
      .pipe(Effect.mapError(readUnavailable))
  })

const attemptsOfUser = (examId: string, userId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const [group] = yield* records
      .count(
        caller.tenant,
        EXAM_ATTEMPT_TYPE,
        [
          { field: "exam_id", op: "eq", value: examId },
          { field: "deleted", op: "eq", value: false },
          { field: "user_id", op: "eq", value: userId }
        ],
        []
      )
      .pipe(Effect.mapError(readUnavailable))
    return group?.count ?? 0
  })

/** The user's open enrollment in the product; else 409 `not_enrolled`. */
const requireOpenEnrollment = (userId: string, productId: string, now: number) =>
  Effect.flatMap(findOpenEnrollment(userId, productId, now), (enrollment) =>
    enrollment ? Effect.succeed(enrollment) : Effect.fail(apiError("state_conflict", { reason: "not_enrolled" }))
  )

/** The exam's non-trashed questions, by position. */
const questionsOf = (examId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records
      .list(caller.tenant, EXAM_QUESTION_TYPE, {
        where: [
          { field: "exam_id", op: "eq", value: examId },
          { field: "deleted", op: "eq", value: false }
        ],
        sort: { field: "position", kind: "number", direction: "asc" },
        limit: QUESTIONS_MAX
      })
      .pipe(Effect.mapError(readUnavailable))
  })

/** Check each answer against the exam's questions: 422, itemized per answer. */
const checkAnswers = (answers: ReadonlyArray<AnswerInput>, questions: ReadonlyMap<string, StoredRecord>, drawn: number | undefined) => {
  const problems: Array<DetailItem> = []
  const seen = new Set<string>()
  answers.forEach((answer, i) => {
    const question = questions.get(answer.exam_question_id)
    if (!question) {
      problems.push({ field: `answers[${i}].exam_question_id`, code: "validation_failed", reason: "not_found" })
      return
    }
    if (seen.has(answer.exam_question_id)) {
      problems.push({ field: `answers[${i}].exam_question_id`, code: "invalid_value", reason: "duplicate" })
      return
    }
    seen.add(answer.exam_question_id)
    const offered = new Set(
      Array.isArray(question.data.alternatives) ? question.data.alternatives.map((a) => String((a as JsonObject).id)) : []
    )
    const chosen = new Set<string>()
    answer.alternative_ids.forEach((id, j) => {
      if (!offered.has(id)) problems.push({ field: `answers[${i}].alternative_ids[${j}]`, code: "validation_failed", reason: "not_found" })
      else if (chosen.has(id)) problems.push({ field: `answers[${i}].alternative_ids[${j}]`, code: "invalid_value", reason: "duplicate" })
      chosen.add(id)
    })
    if (question.data.format === "single_choice" && answer.alternative_ids.length > 1) {
      problems.push({ field: `answers[${i}].alternative_ids`, code: "invalid_value", reason: "single_choice" })
    }
  })
  if (drawn !== undefined && problems.length === 0 && answers.length !== drawn) {
    problems.push({ field: "answers", code: "invalid_value", reason: "questions_count", params: { count: drawn } })
  }
  return problems
}

/** The retake settings against the user's earlier attempts (409 `state_conflict` with the reason). */
const checkRetake = (exam: StoredRecord, userId: string, now: number) =>
  Effect.gen(function* () {
    const { retake } = examSettings(exam.data)
    const [latest] = yield* earlierAttempts(exam.id, userId, [], 1)
    if (latest === undefined) return
    if (!retake.allowed) return yield* Effect.fail(apiError("state_conflict", { reason: "retake_not_allowed" }))
    if (retake.only_if_failed) {
      const passed = yield* earlierAttempts(exam.id, userId, [{ field: "passed", op: "eq", value: true }], 1)
      if (passed.length > 0) return yield* Effect.fail(apiError("state_conflict", { reason: "already_passed" }))
    }
    if (retake.wait_minutes > 0) {
      const last = parseTimestamp(String(latest.data.submitted_at))
      const availableAt = (last._tag === "Some" ? last.value : 0) + retake.wait_minutes * MINUTE
      if (availableAt > now) {
        return yield* Effect.fail(apiError("state_conflict", { reason: "retake_too_soon", params: { available_at: formatTimestamp(availableAt) } }))
      }
    }
  })

export const examAttempts: ResourceDefinition = defineResource({
  type: EXAM_ATTEMPT_TYPE,
  idKind: "exam_attempt",
  plural: "exam_attempts",
  path: "/products/{product_id}/exams/{exam_id}/attempts",
  tag: "Learning",
  parent: examParent,
  fields: {
    product_id: Schema.String,
    user_id: Schema.String,
    enrollment_id: Schema.String.annotations({ description: "The active enrollment of the user in the product when the attempt was recorded." }),
    number: Schema.Int.annotations({ description: "1-based: the user's how-many-th attempt of the exam." }),
    answers: Schema.Array(Answer).annotations({
      description: "One per question graded, in the exam's order then: what the user chose (`[]`: left blank)."
    }),
    questions_count: Schema.Int.annotations({ description: "Questions graded." }),
    correct_count: Schema.Int.annotations({ description: "Questions answered right." }),
    grade: Schema.Number.annotations({ description: "Percent of the questions graded answered right (0–100, two decimals), at submission." }),
    min_grade: Schema.Number.annotations({ description: "The exam's `settings.min_grade` at submission." }),
    passed: Schema.Boolean.annotations({ description: "`grade >= min_grade`." }),
    submitted_at: Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" }, description: "When the attempt was recorded." })
  },
  create: Schema.Struct({
    user_id: PublicId("user"),
    answers: List(AnswerInput).annotations({
      description: "The user's answers, each question once. Unanswered questions are wrong."
    })
  }),
  update: Schema.Struct({}),
  defaults: (body, context) =>
    Effect.gen(function* () {
      const caller = yield* Caller
      const records = yield* Records
      const exam = yield* records.get(caller.tenant, EXAM_TYPE, String(context.parentId)).pipe(Effect.mapError(readUnavailable))
      if (!exam) return yield* Effect.fail(apiError("not_found"))
      const productId = String(exam.data.product_id)
      const settings = examSettings(exam.data)
      yield* requireLiveUser(body.user_id)
      const questions = yield* questionsOf(exam.id)
      const byId = new Map(questions.map((q) => [q.id, q]))
      const drawn = settings.questions_count > 0 && settings.questions_count < questions.length ? settings.questions_count : undefined
      const problems = checkAnswers(body.answers, byId, drawn)
      if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
      const enrollment = yield* requireOpenEnrollment(body.user_id, productId, context.now)
      if (questions.length === 0) return yield* Effect.fail(apiError("state_conflict", { reason: "no_questions" }))
      yield* checkRetake(exam, body.user_id, context.now)

      const chosen = new Map(body.answers.map((a) => [a.exam_question_id, a.alternative_ids]))
      const graded = drawn === undefined ? questions : questions.filter((q) => chosen.has(q.id))
      const answers: Array<JsonObject> = []
      const grading: Array<JsonObject> = []
      for (const question of graded) {
        const selected = chosen.get(question.id) ?? []
        const key = effectiveAnswerKey(question.data)
        answers.push({ exam_question_id: question.id, alternative_ids: [...selected] })
        grading.push({ correct: sameSet(selected, key), correct_alternative_ids: [...key] })
      }
      const correctCount = grading.filter((g) => g.correct === true).length
      const grade = Math.round((10_000 * correctCount) / graded.length) / 100
      return {
        product_id: productId,
        user_id: body.user_id,
        enrollment_id: enrollment.id,
        number: (yield* attemptsOfUser(exam.id, body.user_id)) + 1,
        answers,
        questions_count: graded.length,
        correct_count: correctCount,
        grade,
        min_grade: settings.min_grade,
        passed: grade >= settings.min_grade,
        submitted_at: formatTimestamp(context.now),
        [GRADING]: grading
      }
    }),
  rules: { afterCreate: rewardAttempt },
  hidden: [GRADING],
  trash: false,
  revision: "string",
  filters: { user_id: equalsFilter("user_id", PublicId("user"), "Attempts of this user.") },
  sorts: [{ name: "created_at", field: "id", kind: "text" }],
  replacedRoutes: examOwnRoutes,
  // An attempt is final: recorded, never changed or removed (no such route, capability or batch).
  writes: ["create"]
})

/**
 * An attempt as this caller may see it: each answer's grading only with the answer key. The
 * answers are written in their documented order (a JSON store may keep keys in any order).
 */
export const attemptView = (record: StoredRecord, withKey: boolean): JsonObject => {
  const view = resourceView(examAttempts, record)
  const grading = Array.isArray(record.data[GRADING]) ? (record.data[GRADING] as ReadonlyArray<JsonObject>) : []
  const answers = Array.isArray(view.answers) ? (view.answers as ReadonlyArray<JsonObject>) : []
  return {
    ...view,
    answers: answers.map(
      (answer, i): Json => ({
        exam_question_id: answer.exam_question_id ?? null,
        alternative_ids: answer.alternative_ids ?? [],
        ...(withKey ? { correct: grading[i]?.correct ?? false, correct_alternative_ids: grading[i]?.correct_alternative_ids ?? [] } : {})
      })
    )
  }
}

/** A page of an exam's attempts, as records (the view depends on the caller); `user_id` narrows to one learner. */
export const listExamAttempts = (input: Omit<ListInput, "q" | "filters" | "visible" | "deleted"> & { readonly userId: string | undefined }) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    yield* requireParent(examAttempts.parent, input.parentIds)
    const where: Array<Where> = [
      { field: "deleted", op: "eq", value: false },
      { field: "exam_id", op: "eq", value: input.parentIds.exam_id ?? null }
    ]
    if (input.userId !== undefined) where.push({ field: "user_id", op: "eq", value: input.userId })
    return yield* paginate({
      tenant: caller.tenant,
      type: EXAM_ATTEMPT_TYPE,
      where,
      sort: resourceSort(examAttempts, input.sort),
      limit: input.limit,
      cursor: input.cursor,
      // As the machinery names the collection, so a cursor of one list is not taken by another.
      collection: `${examAttempts.path}:${JSON.stringify([input.parentIds, input.userId ?? null])}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  })
