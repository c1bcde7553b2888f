/**
 * Comments on lessons and their moderation (release 3.2.0; §2.3 `comment`, §3, §4.3
 * `GET /support/comments`, open-points `/support/comments` (+ `/{id}`, `/{id}/replies`)).
 * Access follows the comment's product (a credential limited to products sees theirs only),
 * so these routes load the comment and check its product themselves; the author's name is
 * shown by the caller's grant (`users.read_personal`). Decisions: docs/support.md.
 */
import {
  CommentReplyInput,
  comments,
  createCommentReply,
  createResource,
  deleteResource,
  type JsonObject,
  listCommentReplies,
  listComments,
  loadComment,
  resourceEtag,
  resourceView,
  type StoredRecord,
  updateResource
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation, type Reply } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { representationSchema } from "../resources.js"

/** A client's call: the machinery checks the caller's scope (access follows the product). */
const client = { checkScope: true } as const
const tag = "Support"
const CommentSchema = representationSchema(comments)
const params = { comment_id: "comment" } as const
const StatusParam = Schema.Literal("pending", "approved", "hidden").annotations({
  message: () => ({ message: "invalid_value|allowed=pending, approved, hidden", override: true })
})
const ListQuery = Schema.Struct({ ...pageQuery("id"), status: Schema.optional(StatusParam) })

const authorNote = "`user` is the learner who posted, with their name at the time (a name is not personal data, as on users)."
const scopeNote = "A credential limited to products reaches the comments of those products only; another's is 404."
const movesNote =
  "Moderation moves: pending → approved, hidden; approved → hidden; hidden → approved. Nothing goes back to `pending`: 422 `invalid_transition` on `status` (reason `from_<status>`). The same status is no change."

/** One comment as this caller may see it, with its ETag. */
const one = (status: number, record: StoredRecord, headers: Readonly<Record<string, string>> = {}) =>
  Effect.succeed<Reply>({
    status,
    body: { data: resourceView(comments, record) },
    headers: { etag: resourceEtag(comments, record), ...headers }
  })

const page = (result: { readonly items: ReadonlyArray<StoredRecord>; readonly page: JsonObject }) =>
  Effect.succeed<Reply>({ status: 200, body: { data: result.items.map((record) => resourceView(comments, record)), page: result.page } })

export const commentsRoutes: ReadonlyArray<Operation> = [
  defineOperation({
    id: "comments.list",
    method: "GET",
    path: "/support/comments",
    summary: "List top-level comments awaiting moderation, or of a status",
    description: `Top-level comments (replies are listed under their comment) across the products the credential may access. \`status\` defaults to \`pending\`: the moderation queue. Newest first by default; \`sort=id\` is oldest first. ${scopeNote} ${authorNote}`,
    tag,
    capability: "comments.read",
    query: ListQuery,
    idempotency: "none",
    success: { status: 200, description: "A page of comments.", schema: CommentSchema, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ query }) =>
      Effect.flatMap(listComments({ limit: pageLimit(query.limit), cursor: query.cursor, sort: query.sort, status: query.status }), page)
  }),
  defineOperation({
    id: "comments.create",
    method: "POST",
    path: "/support/comments",
    summary: "Record a learner's comment on a lesson",
    description: `As the learner integration records it: \`user_id\` (a user of the account) comments on \`lesson_id\` (a lesson of a product the credential may access), else 422 on the field (reason \`not_found\`). \`text\` is plain text, at most 64 KiB; it never changes afterwards. The comment's \`product_id\` is the lesson's; it starts \`pending\`. Event \`comment.created\`. ${authorNote}`,
    tag,
    capability: "comments.create",
    body: comments.create,
    idempotency: "required",
    success: { status: 201, description: "The new comment.", schema: CommentSchema, headers: ["Location", "ETag"] },
    errors: [],
    handler: ({ body }) =>
      Effect.flatMap(createResource(comments, {}, body, client), (record) => one(201, record, { location: `/api/v3/support/comments/${record.id}` }))
  }),
  defineOperation({
    id: "comments.get",
    method: "GET",
    path: "/support/comments/{comment_id}",
    summary: "Retrieve a comment or a reply",
    description: `${scopeNote} ${authorNote}`,
    tag,
    capability: "comments.read",
    params,
    idempotency: "none",
    success: { status: 200, description: "The comment.", schema: CommentSchema, headers: ["ETag"] },
    errors: [],
    handler: ({ path }) => Effect.flatMap(loadComment(path.comment_id!, "comments.read"), (record) => one(200, record))
  }),
  defineOperation({
    id: "comments.update",
    method: "PATCH",
    path: "/support/comments/{comment_id}",
    summary: "Moderate a comment: approve, hide, pin",
    description: `Only \`status\` and \`pinned\`: a comment's text cannot be changed (any other field is 422 \`unknown_field\`). ${movesNote} A reply's approval or hiding changes its comment's \`replies_count\` (and revision, with a \`comment.updated\` event). ${scopeNote} Event \`comment.updated\`.`,
    tag,
    capability: "comments.update",
    params,
    body: comments.update,
    idempotency: "optional",
    ifMatch: "comment",
    success: { status: 200, description: "The comment.", schema: CommentSchema, headers: ["ETag"] },
    errors: ["invalid_transition"],
    handler: ({ path, body, expectedRevision }) =>
      Effect.gen(function* () {
        const record = yield* updateResource(comments, {}, path.comment_id!, body as JsonObject, expectedRevision, client)
        return yield* one(200, record)
      })
  }),
  defineOperation({
    id: "comments.delete",
    method: "DELETE",
    path: "/support/comments/{comment_id}",
    summary: "Remove a comment and its replies",
    description: `Removed for good (no trash: a comment has no \`deleted\`), with its replies; a removed approved reply leaves its comment's \`replies_count\`. ${scopeNote} Event \`comment.deleted\`.`,
    tag,
    capability: "comments.delete",
    params,
    idempotency: "optional",
    success: { status: 204, description: "Removed." },
    errors: [],
    handler: ({ path }) =>
      Effect.gen(function* () {
        yield* deleteResource(comments, {}, path.comment_id!, client)
        return { status: 204, body: null }
      })
  }),
  defineOperation({
    id: "comments.replies.list",
    method: "GET",
    path: "/support/comments/{comment_id}/replies",
    summary: "List the replies to a comment, oldest first",
    description: `Every status unless \`status\` is given; oldest first (\`sort=-id\`: newest first). ${scopeNote} ${authorNote}`,
    tag,
    capability: "comments.read",
    params,
    query: ListQuery,
    idempotency: "none",
    success: { status: 200, description: "A page of replies.", schema: CommentSchema, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ path, query }) =>
      Effect.flatMap(
        listCommentReplies(path.comment_id!, { limit: pageLimit(query.limit), cursor: query.cursor, sort: query.sort, status: query.status }),
        page
      )
  }),
  defineOperation({
    id: "comments.replies.create",
    method: "POST",
    path: "/support/comments/{comment_id}/replies",
    summary: "Reply to a comment",
    description: `A reply is a comment with \`parent_id\`, on the same lesson, one level deep: replying to a reply is 422 \`hierarchy_violation\` (reason \`reply_to_reply\`). Without \`user_id\` the account replies (\`user\` null) and the reply is \`approved\` at once (the comment's \`replies_count\` and revision change, event \`comment.updated\`); with \`user_id\` (a user of the account, else 422, reason \`not_found\`) a learner replies and the reply starts \`pending\`. \`text\` is plain text, at most 64 KiB. ${scopeNote} Event \`comment.created\`.`,
    tag,
    capability: "comments.create",
    params,
    body: CommentReplyInput,
    idempotency: "required",
    success: { status: 201, description: "The reply.", schema: CommentSchema, headers: ["Location", "ETag"] },
    errors: ["hierarchy_violation"],
    handler: ({ path, body }) =>
      Effect.flatMap(createCommentReply(path.comment_id!, body), (record) => one(201, record, { location: `/api/v3/support/comments/${record.id}` }))
  })
]
