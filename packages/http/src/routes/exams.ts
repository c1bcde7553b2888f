/**
 * Exams, their questions and attempts (release 3.2.0; §2.3, §4.3, §4.6, open-points).
 * Served from their descriptions (`resourceOperations`), with what the derived routes cannot
 * know: an exam's live `attempts_count`; the answer key of questions and attempts, shown only
 * to a credential holding `exams.read_answer_key` (omitted otherwise); the reorder of an
 * exam's questions under the exam's `If-Match`; and the decisions, in each operation's text
 * (docs/exams.md).
 */
import {
  type ApiError,
  attemptView,
  type Caller,
  canReadAnswerKey,
  createResource,
  deleteResource,
  examAttempts,
  examQuestions,
  exams,
  examViews,
  getResource,
  type JsonObject,
  listExamAttempts,
  listExamQuestions,
  orderExamQuestions,
  QuestionOrderBody,
  questionView,
  type Records,
  resourceEtag,
  type StoredRecord,
  updateResource
} from "@syllabus/core"
import { Effect } from "effect"
import { defineOperation, type Operation, type Reply } from "../operation.js"
import { pageLimit } from "../query.js"
import { describedOperations, representationSchema, withView } from "../resources.js"

const tag = "Learning"





const pathIds = (path: Readonly<Record<string, string>>): Readonly<Record<string, string | undefined>> => path

// ---------------------------------------------------------------------------------------
// Exams

const examOperations = describedOperations(exams, tag, {
  "exams.list": { summary: "List the exams of a product" },
  "exams.get": { summary: "Retrieve an exam" },
  "exams.create": {
    summary: "Create an exam in a product, attached to no lesson",
    description:
      "The new exam is attached to no lesson: set its ID in a lesson's `exam_id` (lesson update) to link it; `lesson_ids` then lists that lesson. `settings` takes its defaults for every sub-field not sent."
  },
  "exams.update": {
    summary: "Change an exam's title, description or settings",
    description: "`settings` merges: only the sub-fields sent change (inside `retake` and `show_answer_key` too)."
  },
  "exams.delete": {
    summary: "Move an exam to the trash",
    description:
      "An exam some non-trashed lesson links (`lesson_ids` not empty) cannot be trashed: 409 `state_conflict`, reason `exam_linked`; unlink it from its lessons first. Its questions and attempts stay, and come back with it.",
    errors: ["state_conflict"]
  }
}).map(withView(examViews))

// ---------------------------------------------------------------------------------------
// Questions

const keyNote =
  "`correct` of each alternative (the answer key) is included only when the credential holds `exams.read_answer_key` on the product; otherwise it is omitted, not null."
const alternativesNote =
  "At least 2 alternatives (422 `validation_failed`, `too_short` on `alternatives`) and at least one marked `correct` (422 on `alternatives`, reason `no_correct_alternative`); single choice: if several are marked, only the first counts."

/** A question (or a page) as this caller may see it. */
const questionReply = (status: number, record: StoredRecord, headers: Readonly<Record<string, string>> = {}) =>
  Effect.map(canReadAnswerKey(String(record.data.product_id)), (withKey): Reply => ({
    status,
    body: { data: questionView(record, withKey) },
    headers: { etag: resourceEtag(examQuestions, record), ...headers }
  }))

const questionHandlers: Readonly<Record<string, Operation["handler"]>> = {
  "exam_questions.list": ({ path, query }) =>
    Effect.gen(function* () {
      const { limit, cursor, sort, deleted } = query as Record<string, string | undefined>
      const { items, page } = yield* listExamQuestions({
        parentIds: pathIds(path),
        limit: pageLimit(limit),
        cursor,
        sort,
        deleted: deleted === "true"
      })
      const withKey = yield* canReadAnswerKey(path.product_id!)
      return { status: 200, body: { data: items.map((record) => questionView(record, withKey)), page } }
    }),
  "exam_questions.get": ({ path }) =>
    Effect.flatMap(getResource(examQuestions, pathIds(path), path.exam_question_id!), (record) => questionReply(200, record)),
  "exam_questions.create": ({ path, body }) =>
    Effect.flatMap(createResource(examQuestions, pathIds(path), body), (record) =>
      questionReply(201, record, { location: `/api/v3/products/${path.product_id}/exams/${path.exam_id}/questions/${record.id}` })
    ),
  "exam_questions.update": ({ path, body, expectedRevision }) =>
    Effect.flatMap(updateResource(examQuestions, pathIds(path), path.exam_question_id!, body as JsonObject, expectedRevision), (record) =>
      questionReply(200, record)
    ),
  "exam_questions.delete": ({ path }) =>
    Effect.flatMap(deleteResource(examQuestions, pathIds(path), path.exam_question_id!), (record) =>
      record ? questionReply(200, record) : Effect.succeed<Reply>({ status: 204, body: null })
    )
}

const questionOperations = describedOperations(examQuestions, tag, {
  "exam_questions.list": {
    summary: "List the questions of an exam, by position",
    description: `In \`position\` order unless \`sort\` says otherwise. ${keyNote}`
  },
  "exam_questions.get": { summary: "Retrieve a question of an exam", description: keyNote },
  "exam_questions.create": {
    summary: "Add a question to an exam, last",
    description: `${alternativesNote} Each alternative gets a stable ID (\`alt_…\`). The question goes last; the exam's \`questions_count\` and revision change. ${keyNote}`
  },
  "exam_questions.update": {
    summary: "Change a question; alternatives, when sent, replace the whole set",
    description: `\`alternatives\` replaces the whole set: an item with the \`id\` of one of the question's alternatives keeps it (and its ID), one without \`id\` is new, those left out are gone; an \`id\` not of this question is 422 on \`alternatives[i].id\`. ${alternativesNote} Recorded answers of completed attempts are not regraded. ${keyNote}`
  },
  "exam_questions.delete": {
    summary: "Move a question of an exam to the trash",
    description: "The questions after it move up one; the exam's `questions_count` and revision change. A restored question comes last."
  }
}).map((operation) => ({ ...operation, handler: questionHandlers[operation.id] ?? operation.handler }))

const questionOrderOperation = defineOperation({
  id: "exam_questions.order.replace",
  method: "PUT",
  path: "/products/{product_id}/exams/{exam_id}/questions/order",
  summary: "Arrange the questions of an exam in a new order",
  description:
    "`ids` lists every non-trashed question of the exam exactly once, in the new order; else 422 `order_set_mismatch` (itemized: `not_in_set`, `duplicate`, `missing`) and the order is unchanged. `If-Match` takes the exam's ETag (the exam's revision covers its questions and their order); the exam gets a new revision, whose ETag the answer carries. Answers every question, in the new order. " +
    keyNote,
  tag,
  capability: "exam_questions.update",
  scopedBy: "product_id",
  params: { product_id: "product", exam_id: "exam" },
  body: QuestionOrderBody,
  idempotency: "optional",
  ifMatch: "exam",
  success: {
    status: 200,
    description: "The questions in the new order, all at once; `ETag` is the exam's.",
    schema: representationSchema(examQuestions),
    collection: true,
    headers: ["ETag"]
  },
  errors: ["order_set_mismatch"],
  handler: ({ path, body, expectedRevision }) =>
    Effect.gen(function* () {
      const { questions, exam } = yield* orderExamQuestions(path.product_id!, path.exam_id!, body.ids, expectedRevision)
      const withKey = yield* canReadAnswerKey(path.product_id!)
      const data = questions.map((record) => questionView(record, withKey))
      return {
        status: 200,
        body: { data, page: { limit: data.length, next_cursor: null, prev_cursor: null } },
        headers: { etag: resourceEtag(exams, exam) }
      }
    })
})

// ---------------------------------------------------------------------------------------
// Attempts

const attemptKeyNote =
  "`correct` and `correct_alternative_ids` of each answer (they tell the answer key) are included only when the credential holds `exams.read_answer_key` on the product; otherwise omitted. `grade`, `passed` and `correct_count` are always shown; the exam's `show_*` settings govern what the learner sees on the platform, not the API."

const attemptHandlers: Readonly<Record<string, Operation["handler"]>> = {
  "exam_attempts.list": ({ path, query }) =>
    Effect.gen(function* () {
      const { limit, cursor, sort, user_id } = query as Record<string, string | undefined>
      const { items, page } = yield* listExamAttempts({ parentIds: pathIds(path), limit: pageLimit(limit), cursor, sort, userId: user_id })
      const withKey = yield* canReadAnswerKey(path.product_id!)
      return { status: 200, body: { data: items.map((record) => attemptView(record, withKey)), page } }
    }),
  "exam_attempts.get": ({ path }) =>
    Effect.flatMap(getResource(examAttempts, pathIds(path), path.exam_attempt_id!), (record) =>
      Effect.map(canReadAnswerKey(path.product_id!), (withKey): Reply => ({
        status: 200,
        body: { data: attemptView(record, withKey) },
        headers: { etag: resourceEtag(examAttempts, record) }
      }))
    ),
  "exam_attempts.create": ({ path, body }) =>
    Effect.flatMap(createResource(examAttempts, pathIds(path), body), (record) =>
      Effect.map(canReadAnswerKey(path.product_id!), (withKey): Reply => ({
        status: 201,
        body: { data: attemptView(record, withKey) },
        headers: {
          location: `/api/v3/products/${path.product_id}/exams/${path.exam_id}/attempts/${record.id}`,
          etag: resourceEtag(examAttempts, record)
        }
      }))
    )
}

const attemptOperations = describedOperations(examAttempts, tag, {
  "exam_attempts.list": {
    summary: "List the attempts of an exam",
    description: `Oldest first unless \`sort\` says otherwise; \`user_id\` narrows to one learner. ${attemptKeyNote}`
  },
  "exam_attempts.get": { summary: "Retrieve an attempt of an exam", description: attemptKeyNote },
  "exam_attempts.create": {
    summary: "Record a learner's completed attempt, graded at submission",
    description:
      "Records a completed attempt of `user_id` (a user of the account, else 422 on `user_id`), who must hold an active enrollment in the product (else 409 `state_conflict`, reason `not_enrolled`). `answers` name the exam's non-trashed questions, each once, and alternatives of each (422 itemized on `answers[i]`; single choice: at most one). A question is right when the alternatives chosen are exactly those that count as correct; `grade` is the percent of questions right, `passed` is `grade >= settings.min_grade`. Every question is graded (unanswered: wrong) unless `settings.questions_count` N is below their number: then exactly N are answered and graded. The grading is kept: later edits of questions never regrade. Retakes follow `settings.retake`: 409 `state_conflict` with reason `retake_not_allowed`, `already_passed` or `retake_too_soon`; an exam without questions: reason `no_questions`. A passed attempt awards the points of the `exam_passed` gamification rules (once per learner and exam) and issues the product's certificate when its template's criteria are now met. The event is `exam_attempt.created`. " +
      attemptKeyNote,
    errors: ["state_conflict"]
  }
}).map((operation) => ({ ...operation, handler: attemptHandlers[operation.id] ?? operation.handler }))

export const examsRoutes: ReadonlyArray<Operation> = [...examOperations, ...questionOperations, questionOrderOperation, ...attemptOperations]
