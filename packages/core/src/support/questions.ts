/**
 * Lesson questions (§2.3 `question`, §3, §4.3; open-points routes
 * `/products/{product_id}/questions` (+ `/{question_id}`, `/{question_id}/replies`)) and their
 * replies. Decisions (also in docs/support.md and the OpenAPI description):
 *
 * - A question is asked by a learner (`user_id`) on a lesson of the product, as the learner
 *   integration records it; its `body` (blocks, rich text, 512 KiB) never changes afterwards.
 *   It starts `pending` when the lesson question settings have `moderation_enabled`, else
 *   `open`; a body shorter than the settings' `min_length` (characters of text) is 422.
 * - Statuses: `pending` (awaiting moderation), `open` (in the queue awaiting a reply),
 *   `answered` (the account published a reply), `closed`, `hidden`. PATCH moves
 *   (`questionMoves`): pending → open | hidden; open → closed | hidden; answered → open |
 *   closed | hidden; closed → open | hidden; hidden → open. `answered` is reached only by a
 *   reply and `pending` only at creation: other moves are 422 `invalid_transition`. The same
 *   status is no change.
 * - `status=open` needs `questions.reopen` (also to approve a pending question), `pinned`
 *   needs `questions.pin`, whenever sent, besides `questions.update` (403 `permission_denied`).
 *   Reopening only changes the status: every published reply stays.
 * - Replies (`qrp_`): by the account (`user` null) or a learner's follow-up (`user_id`);
 *   `draft` or `published` (default), a draft may be published, never the reverse (422
 *   `invalid_transition`). `replies_count` counts published replies, `has_draft` says a draft
 *   exists; both are kept by the replies' writes, in their unit of work (the question gets a
 *   new revision and a `question.updated` event). The account's published reply moves an
 *   `open` question to `answered`; a learner's published reply moves an `answered` one back
 *   to `open`.
 * - When the lesson question settings have `enabled` false, asking a question, a learner's
 *   reply and reopening (`status=open`) are 409 `feature_disabled`; reading, the account's
 *   replies, closing, hiding, pinning and removing still work, so the queue can be worked down.
 * - No trash (the shape has no `deleted`): DELETE removes a question with its replies (204);
 *   a reply's DELETE removes it.
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { apiError, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { PRODUCT_TYPE } from "../catalog/products.js"
import { type JsonObject, Records } from "../ports/store.js"
import {
  defineResource,
  equalsFilter,
  type ParentDefinition,
  recordResourceChange,
  type ResourceDefinition,
  resourceView,
  saveResource
} from "../records/resource.js"
import { Bool, Enum, PublicId } from "../records/schema.js"
import { currentTimestamp } from "../records/time.js"
import { lessonQuestionSettings, settingValue } from "../site/site-settings.js"
import { Author, authorOf, Body, BodyInput, bodyLength, checkTransition, requireCapability, requireLesson, requireUser } from "./discussions.js"

export const QUESTION_TYPE = "question"
export const QUESTION_REPLY_TYPE = "question_reply"
export const REOPEN_QUESTIONS = "questions.reopen"
export const PIN_QUESTIONS = "questions.pin"

export const questionStatuses = ["pending", "open", "answered", "closed", "hidden"] as const
type QuestionStatus = (typeof questionStatuses)[number]

/** The moves a PATCH may make (§3: `open` needs `questions.reopen`). */
export const questionMoves: Readonly<Record<QuestionStatus, ReadonlyArray<QuestionStatus>>> = {
  pending: ["open", "hidden"],
  open: ["closed", "hidden"],
  answered: ["open", "closed", "hidden"],
  closed: ["open", "hidden"],
  hidden: ["open"]
}

const replyStatuses = ["draft", "published"] as const
/** Kept beside `has_draft`: the question's draft replies. */
const DRAFTS = "drafts_count"
/** Replies removed with their question per statement. */
const CASCADE_PAGE = 500

const productParent: ParentDefinition = { type: PRODUCT_TYPE, idKind: "product", field: "product_id" }
const questionParent: ParentDefinition = { type: QUESTION_TYPE, idKind: "question", field: "question_id", parent: productParent }

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** Are lesson questions switched on in the settings? Else 409 `feature_disabled`. */
export const requireLessonQuestions = Effect.flatMap(settingValue(lessonQuestionSettings, "enabled"), (enabled) =>
  enabled === false ? Effect.fail(apiError("feature_disabled", { reason: "lesson_questions_disabled" })) : Effect.void
)

// ---------------------------------------------------------------------------------------
// Questions

export const questions: ResourceDefinition = defineResource({
  type: QUESTION_TYPE,
  idKind: "question",
  plural: "questions",
  path: "/products/{product_id}/questions",
  tag: "Support",
  parent: productParent,
  fields: {
    lesson_id: Schema.String.annotations({ description: "The lesson of the product the question was asked on." }),
    body: Body.annotations({ description: "The question as the learner wrote it (blocks); it never changes." }),
    status: Schema.Literal(...questionStatuses).annotations({
      description:
        "`pending`: awaiting moderation (new questions, when the settings' `moderation_enabled`); `open`: in the queue awaiting a reply; `answered`: the account published a reply; `closed`; `hidden`."
    }),
    pinned: Schema.Boolean.annotations({ description: "Shown first on the lesson. Changing it needs `questions.pin`." }),
    has_draft: Schema.Boolean.annotations({ description: "A reply to it is saved as a draft, not yet published." }),
    replies_count: Schema.Int.annotations({ description: "Its published replies." }),
    user: Author.annotations({ description: "The learner who asked." })
  },
  create: Schema.Struct({
    user_id: PublicId("user").annotations({ description: "The learner asking: a user of the account." }),
    lesson_id: PublicId("lesson").annotations({ description: "A lesson of the product." }),
    body: BodyInput
  }),
  update: Schema.Struct({
    status: optional(Enum(...questionStatuses)),
    pinned: optional(Bool)
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      yield* requireLessonQuestions
      const productId = String(context.parentId)
      const user = yield* requireUser("user_id", body.user_id)
      yield* requireLesson("lesson_id", body.lesson_id, "questions.create", productId)
      const minLength = Number(yield* settingValue(lessonQuestionSettings, "min_length"))
      if (bodyLength(body.body as unknown as JsonObject) < minLength) {
        return yield* Effect.fail(fieldError("validation_failed", "body", { reason: "below_min_length", params: { min: minLength } }))
      }
      const moderated = (yield* settingValue(lessonQuestionSettings, "moderation_enabled")) === true
      return {
        lesson_id: body.lesson_id,
        body: body.body as unknown as JsonObject,
        status: moderated ? "pending" : "open",
        pinned: false,
        has_draft: false,
        replies_count: 0,
        user: authorOf(user),
        user_id: user.id,
        [DRAFTS]: 0
      }
    }),
  change: (current, patch) =>
    Effect.gen(function* () {
      const productId = String(current.product_id)
      if (patch.status === "open") yield* requireCapability(REOPEN_QUESTIONS, productId)
      if (patch.pinned !== undefined) yield* requireCapability(PIN_QUESTIONS, productId)
      const next: Record<string, JsonObject[string]> = { ...current }
      if (patch.status !== undefined && patch.status !== current.status) {
        if (patch.status === "open") yield* requireLessonQuestions
        yield* checkTransition(questionMoves, current.status, patch.status)
        next.status = patch.status
      }
      if (patch.pinned !== undefined) next.pinned = patch.pinned
      return next
    }),
  rules: {
    afterDelete: (record) => removeReplies(record.id)
  },
  hidden: [DRAFTS, "user_id"],
  trash: false,
  revision: "string",
  filters: {
    status: equalsFilter("status", Enum(...questionStatuses), "Questions in this status (`open`: the queue awaiting a reply)."),
    lesson_id: equalsFilter("lesson_id", PublicId("lesson"), "Questions asked on this lesson."),
    user_id: equalsFilter("user_id", PublicId("user"), "Questions asked by this learner."),
    pinned: {
      schema: Schema.Literal("true", "false"),
      where: (value: never) => [{ field: "pinned", op: "eq", value: (value as string) === "true" }],
      on: { field: "pinned", match: "equals" },
      description: "Pinned questions only (`true`) or the others (`false`)."
    }
  },
  // Newest first unless `sort` says otherwise.
  defaultReversed: true,
  sorts: [{ name: "created_at", field: "id", kind: "text" }],
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

/** Remove the replies of a removed question, a page per statement, in its unit of work. */
const removeReplies = (questionId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    for (;;) {
      const page = yield* records
        .list(caller.tenant, QUESTION_REPLY_TYPE, {
          where: [
            { field: "question_id", op: "eq", value: questionId },
            { field: "deleted", op: "eq", value: false }
          ],
          sort: { field: "id", kind: "text", direction: "asc" },
          limit: CASCADE_PAGE
        })
        .pipe(Effect.mapError(readUnavailable))
      yield* Effect.forEach(page, (reply) => records.remove(caller.tenant, QUESTION_REPLY_TYPE, reply.id).pipe(Effect.mapError(writeUnavailable)), {
        discard: true
      })
      if (page.length < CASCADE_PAGE) return
    }
  })

// ---------------------------------------------------------------------------------------
// Replies

/** What a reply's write does to its question: counts, and the status a reply moves it to. */
const replyEffect = (reply: JsonObject | null, sign: 1 | -1) => ({
  published: reply?.status === "published" ? sign : 0,
  drafts: reply?.status === "draft" ? sign : 0,
  byAccount: reply !== null && reply.user === null
})

/**
 * Keep the question of a reply true after the reply's write (`before` → `after`, null when
 * absent): `replies_count`, `has_draft`, and the status a newly published reply moves it to.
 * Saved with a new revision and a `question.updated` event, in the reply's unit of work.
 */
const keepQuestion = (questionId: string, before: JsonObject | null, after: JsonObject | null) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const question = yield* records.get(caller.tenant, QUESTION_TYPE, questionId).pipe(Effect.mapError(readUnavailable))
    if (!question) return
    const removed = replyEffect(before, -1)
    const added = replyEffect(after, 1)
    const published = Number(question.data.replies_count ?? 0) + removed.published + added.published
    const drafts = Number(question.data[DRAFTS] ?? 0) + removed.drafts + added.drafts
    const newlyPublished = after?.status === "published" && before?.status !== "published"
    let status = question.data.status ?? "open"
    if (newlyPublished && added.byAccount && status === "open") status = "answered"
    if (newlyPublished && !added.byAccount && status === "answered") status = "open"
    const data = { ...question.data, replies_count: Math.max(0, published), [DRAFTS]: Math.max(0, drafts), has_draft: drafts > 0, status }
    if (JSON.stringify(data) === JSON.stringify(question.data)) return
    const saved = yield* saveResource(questions, question, data, undefined)
    yield* recordResourceChange(questions, "updated", resourceView(questions, saved), resourceView(questions, question))
  })

export const questionReplies: ResourceDefinition = defineResource({
  type: QUESTION_REPLY_TYPE,
  idKind: "question_reply",
  plural: "question_replies",
  // Read and written with the questions' capabilities.
  capabilities: "questions",
  path: "/products/{product_id}/questions/{question_id}/replies",
  tag: "Support",
  parent: questionParent,
  fields: {
    product_id: Schema.String,
    body: Body,
    status: Schema.Literal(...replyStatuses).annotations({
      description: "`draft`: saved, not shown to learners (the question's `has_draft`); `published`: shown, counted in `replies_count`."
    }),
    user: Author.annotations({ description: "The learner who wrote a follow-up; `null` for a reply of the account." }),
    published_at: Schema.NullOr(Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } }))
  },
  create: Schema.Struct({
    body: BodyInput,
    status: optional(Enum(...replyStatuses).annotations({ description: "Default `published`." })),
    user_id: optional(
      PublicId("user").annotations({ description: "A learner's follow-up: the user writing it. Absent: the account replies." })
    )
  }),
  update: Schema.Struct({
    body: optional(BodyInput),
    status: optional(Enum(...replyStatuses))
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      const caller = yield* Caller
      const records = yield* Records
      const question = yield* records.get(caller.tenant, QUESTION_TYPE, String(context.parentId)).pipe(Effect.mapError(readUnavailable))
      if (!question) return yield* Effect.fail(apiError("not_found"))
      let user: JsonObject | null = null
      if (body.user_id !== undefined) {
        yield* requireLessonQuestions
        user = authorOf(yield* requireUser("user_id", body.user_id))
      }
      const status = body.status ?? "published"
      const now = yield* currentTimestamp
      return {
        product_id: String(question.data.product_id),
        body: body.body as unknown as JsonObject,
        status,
        user,
        published_at: status === "published" ? now : null
      }
    }),
  change: (current, patch) =>
    Effect.gen(function* () {
      const next: Record<string, JsonObject[string]> = { ...current }
      if (patch.body !== undefined) next.body = patch.body as unknown as JsonObject
      if (patch.status !== undefined && patch.status !== current.status) {
        yield* checkTransition({ draft: ["published"] }, current.status, patch.status)
        next.status = patch.status
        next.published_at = yield* currentTimestamp
      }
      return next
    }),
  rules: {
    afterCreate: (record) => keepQuestion(String(record.data.question_id), null, record.data),
    afterUpdate: (before, after) => keepQuestion(String(after.data.question_id), before.data, after.data),
    afterDelete: (record) => keepQuestion(String(record.data.question_id), record.data, null)
  },
  trash: false,
  revision: "string",
  filters: {
    status: equalsFilter("status", Enum(...replyStatuses), "Replies in this status.")
  },
  // Oldest first: the conversation's order.
  sorts: [{ name: "created_at", field: "id", kind: "text" }],
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})
