/**
 * Comments on lessons (§2.3 `comment`, §3, §4.3 `GET /support/comments`; open-points routes
 * `/support/comments` (+ `/{id}`, `/{id}/replies`)). Decisions (also in docs/support.md and the
 * OpenAPI description):
 *
 * - A comment is a learner's (`user_id`) plain text (64 KiB) on a lesson; its `product_id` is
 *   the lesson's. Its text never changes afterwards. A top-level comment starts `pending`.
 * - Replies are comments too, one level deep (`parent_id`, the top-level comment; a reply to a
 *   reply is 422 `hierarchy_violation`), on the same lesson. A learner's reply (`user_id`)
 *   starts `pending`; the account's (`user` null) starts `approved`.
 * - Moderation (§3, transitions not shown there): pending → approved | hidden, approved →
 *   hidden, hidden → approved; nothing goes back to `pending` (422 `invalid_transition`). The
 *   same status is no change. `replies_count` counts a comment's `approved` replies, kept by
 *   the replies' writes (the parent gets a new revision and a `comment.updated` event).
 * - Access follows the product: a credential limited to products sees and changes the
 *   comments of those products only (others are 404, a lesson of another product 422).
 * - `GET /support/comments`: top-level comments of every accessible product, `status`
 *   `pending` unless asked, newest first (`sort=id`: oldest first). Replies are listed under
 *   their comment, oldest first, every status unless `status` is given.
 * - No trash (the shape has no `deleted`): DELETE removes a comment with its replies (204).
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { reachAlternatives, reachOf, requireReach } from "../access/scope.js"
import { apiError, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { type AccessPath, type JsonObject, listPath, Records, type StoredRecord, type Where } from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import {
  anchorFields,
  anchorsOf,
  createResource,
  defineResource,
  getResource,
  recordResourceChange,
  type ResourceDefinition,
  resourceSort,
  resourceView,
  saveResource
} from "../records/resource.js"
import { Bool, Enum, PublicId, Text } from "../records/schema.js"
import { Author, authorOf, checkTransition, requireLesson, requireUser } from "./discussions.js"

export const COMMENT_TYPE = "comment"
export const commentStatuses = ["pending", "approved", "hidden"] as const
type CommentStatus = (typeof commentStatuses)[number]

/** The moderation moves (§3 names the states; the moves are ours). */
export const commentMoves: Readonly<Record<CommentStatus, ReadonlyArray<CommentStatus>>> = {
  pending: ["approved", "hidden"],
  approved: ["hidden"],
  hidden: ["approved"]
}

const CASCADE_PAGE = 500
const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

const commentFields = {
  product_id: Schema.String.annotations({ description: "The product of the lesson." }),
  lesson_id: Schema.String,
  text: Schema.String.annotations({ description: "Plain text, at most 64 KiB; it never changes." }),
  status: Schema.Literal(...commentStatuses).annotations({
    description: "`pending`: awaiting moderation; `approved`: shown on the lesson; `hidden`: not shown."
  }),
  pinned: Schema.Boolean,
  replies_count: Schema.Int.annotations({ description: "Its `approved` replies (a reply's is always 0)." }),
  user: Author.annotations({ description: "The learner who wrote it; `null` for a reply of the account." })
}

export const comments: ResourceDefinition = defineResource({
  type: COMMENT_TYPE,
  idKind: "comment",
  plural: "comments",
  path: "/support/comments",
  tag: "Support",
  // Access follows the product: a policy naming it reaches its comments.
  owners: ["product_id"],
  fields: {
    parent_id: Schema.NullOr(Schema.String).annotations({ description: "The comment this one replies to; `null` for a top-level comment." }),
    ...commentFields
  },
  create: Schema.Struct({
    user_id: PublicId("user").annotations({ description: "The learner commenting: a user of the account." }),
    lesson_id: PublicId("lesson").annotations({ description: "The lesson commented on, of a product the credential may access." }),
    text: Text({ min: 1 })
  }),
  update: Schema.Struct({
    status: optional(Enum(...commentStatuses)),
    pinned: optional(Bool)
  }),
  defaults: (body) =>
    Effect.gen(function* () {
      const user = yield* requireUser("user_id", body.user_id)
      // A lesson of a product the caller may comment on: the comment belongs to that product.
      const lesson = yield* requireLesson("lesson_id", body.lesson_id, "comments.create")
      const productId = String(lesson.data.product_id)
      return {
        parent_id: null,
        product_id: productId,
        lesson_id: lesson.id,
        text: body.text,
        status: "pending",
        pinned: false,
        replies_count: 0,
        user: authorOf(user)
      }
    }),
  change: (current, patch) =>
    Effect.gen(function* () {
      const next: Record<string, JsonObject[string]> = { ...current }
      if (patch.status !== undefined && patch.status !== current.status) {
        yield* checkTransition(commentMoves, current.status, patch.status)
        next.status = patch.status
      }
      if (patch.pinned !== undefined) next.pinned = patch.pinned
      return next
    }),
  rules: {
    afterUpdate: (before, after) =>
      typeof after.data.parent_id === "string" && (before.data.status === "approved") !== (after.data.status === "approved")
        ? keepParent(after.data.parent_id, after.data.status === "approved" ? 1 : -1)
        : Effect.void,
    afterDelete: (record) =>
      typeof record.data.parent_id === "string"
        ? record.data.status === "approved" ? keepParent(record.data.parent_id, -1) : Effect.void
        : removeReplies(record.id)
  },
  trash: false,
  revision: "string",
  sorts: [{ name: "id", field: "id", kind: "text" }],
  defaultReversed: true,
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

/** The lists of comments outside the machinery: top-level by status (and product), replies of a comment. */
export const commentsAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(COMMENT_TYPE, ["parent_id", "status"], [{ field: "id", kind: "text" }]),
  listPath(COMMENT_TYPE, ["parent_id", "status", "product_id"], [{ field: "id", kind: "text" }]),
  listPath(COMMENT_TYPE, ["parent_id"], [{ field: "id", kind: "text" }])
]

/** `replies_count` of a top-level comment after one of its replies changed, with its event. */
const keepParent = (parentId: string, delta: number) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const parent = yield* records.get(caller.tenant, COMMENT_TYPE, parentId).pipe(Effect.mapError(readUnavailable))
    if (!parent) return
    const saved = yield* saveResource(comments, parent, { ...parent.data, replies_count: Math.max(0, Number(parent.data.replies_count ?? 0) + delta) }, undefined)
    yield* recordResourceChange(comments, "updated", resourceView(comments, saved), resourceView(comments, parent))
  })

/** Remove the replies of a removed comment, a page per statement, in its unit of work. */
const removeReplies = (commentId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    for (;;) {
      const page = yield* records
        .list(caller.tenant, COMMENT_TYPE, {
          where: [{ field: "parent_id", op: "eq", value: commentId }],
          sort: { field: "id", kind: "text", direction: "asc" },
          limit: CASCADE_PAGE
        })
        .pipe(Effect.mapError(readUnavailable))
      yield* Effect.forEach(page, (reply) => records.remove(caller.tenant, COMMENT_TYPE, reply.id).pipe(Effect.mapError(writeUnavailable)), {
        discard: true
      })
      if (page.length < CASCADE_PAGE) return
    }
  })

// ---------------------------------------------------------------------------------------
// Reading and writing through the routes (access follows the product)

/** A comment the caller's `capability` reaches (through its product), else 404. */
export const loadComment = (id: string, capability: string) =>
  Effect.gen(function* () {
    const record = yield* getResource(comments, {}, id)
    yield* requireReach(capability, anchorsOf(comments, record.data))
    return record
  })

export interface CommentListInput {
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
  readonly status: string | undefined
}


/** `GET /support/comments` (§4.3): top-level comments of the accessible products, `pending` by default, newest first. */
export const listComments = (input: CommentListInput) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const status = input.status ?? "pending"
    const { items, page } = yield* paginate({
      tenant: caller.tenant,
      type: COMMENT_TYPE,
      where: [{ field: "parent_id", op: "eq", value: null }, { field: "status", op: "eq", value: status }],
      reach: reachAlternatives(reachOf(caller.grant, "comments.read"), anchorFields(comments)),
      sort: resourceSort(comments, input.sort),
      limit: input.limit,
      cursor: input.cursor,
      collection: `${comments.path}:${JSON.stringify([status])}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
    return { items, page }
  })

const replyOrder: ResourceDefinition = { ...comments, defaultReversed: false }

/** The replies of a comment the caller may read, oldest first unless `sort=-id`; every status unless `status` is given. */
export const listCommentReplies = (commentId: string, input: CommentListInput) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    yield* loadComment(commentId, "comments.read")
    const where: Array<Where> = [{ field: "parent_id", op: "eq", value: commentId }]
    if (input.status !== undefined) where.push({ field: "status", op: "eq", value: input.status })
    const { items, page } = yield* paginate({
      tenant: caller.tenant,
      type: COMMENT_TYPE,
      where,
      sort: resourceSort(replyOrder, input.sort),
      limit: input.limit,
      cursor: input.cursor,
      collection: `${comments.path}/${commentId}/replies:${JSON.stringify([input.status ?? null])}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
    return { items, page }
  })

export const CommentReplyInput = Schema.Struct({
  text: Text({ min: 1 }),
  user_id: optional(PublicId("user").annotations({ description: "A learner's reply: the user writing it. Absent: the account replies." }))
}).annotations({ identifier: "CommentReplyInput" })

/** How a reply is created: a comment whose parent is the comment of the path (one level deep). */
const replyWrites = (parent: StoredRecord): ResourceDefinition => ({
  ...comments,
  create: CommentReplyInput,
  defaults: (body) =>
    Effect.gen(function* () {
      const input = body as typeof CommentReplyInput.Type
      const user = input.user_id === undefined ? null : authorOf(yield* requireUser("user_id", input.user_id))
      return {
        parent_id: parent.id,
        product_id: String(parent.data.product_id),
        lesson_id: String(parent.data.lesson_id),
        text: input.text,
        status: user === null ? "approved" : "pending",
        pinned: false,
        replies_count: 0,
        user
      }
    }),
  rules: {
    afterCreate: (record) => (record.data.status === "approved" ? keepParent(parent.id, 1) : Effect.void)
  }
})

/** `POST /support/comments/{comment_id}/replies`: a reply to a top-level comment (else 422 `hierarchy_violation`). */
export const createCommentReply = (commentId: string, body: typeof CommentReplyInput.Type) =>
  Effect.gen(function* () {
    const parent = yield* loadComment(commentId, "comments.create")
    if (typeof parent.data.parent_id === "string") {
      return yield* Effect.fail(apiError("hierarchy_violation", { reason: "reply_to_reply" }))
    }
    return yield* createResource(replyWrites(parent), {}, body)
  })
