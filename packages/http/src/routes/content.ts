/**
 * Operations of the "content" group beyond the derived list/get/create/update/delete of
 * modules and lessons: module publication and lesson copies (asynchronous operations), the
 * content of a lesson, and its attachments (read one by one, written as a set under the
 * lesson's `If-Match`).
 */
import {
  allows,
  apiError,
  attachments,
  AttachmentsInput,
  Caller,
  ContentBlock,
  getAttachment,
  getLessonContent,
  type JsonObject,
  LessonContentInput,
  LessonCopyInput,
  lessons,
  listAttachments,
  replaceAttachments,
  replaceLessonContent,
  resourceEtag,
  resourceView,
  startLessonCopy,
  startModulePublication
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation, type Reply } from "../operation.js"
import { representationSchema } from "../resources.js"
import { OperationSchema } from "../schemas.js"

const tag = "Content"
const lessonParams = { product_id: "product", lesson_id: "lesson" } as const

const Url = Schema.Struct({ url: Schema.String })
const LessonContentSchema = Schema.Struct({
  object: Schema.Literal("lesson_content"),
  lesson_id: Schema.String,
  format: Schema.Literal("standard"),
  revision: Schema.String,
  body: Schema.Struct({
    blocks: Schema.Array(ContentBlock),
    inherited: Schema.Boolean.annotations({ description: "The content is inherited from another lesson (the lesson is `connected`)." })
  }),
  embed: Schema.NullOr(Url),
  live: Schema.NullOr(Url),
  video: Schema.NullOr(Schema.Struct({ provider: Schema.String, url: Schema.String }))
}).annotations({ identifier: "LessonContent" })

const AttachmentSchema = representationSchema(attachments)

const accepted = (data: JsonObject): Reply => ({
  status: 202,
  body: { data },
  headers: { location: `/api/v3/operations/${String(data.id)}` }
})

const everything = <A>(data: ReadonlyArray<A>) => ({ data, page: { limit: data.length, next_cursor: null, prev_cursor: null } })

export const contentRoutes: ReadonlyArray<Operation> = [
  defineOperation({
    id: "modules.publications.create",
    method: "POST",
    path: "/products/{product_id}/modules/{module_id}/publications",
    summary: "Publish a module with its lessons and copies",
    description:
      "Publish a module and everything nested in it through an asynchronous operation: one item for the module, one per lesson, one per copy of the module in a replicated account (published with its lessons, 3.3.0). A replicated module may itself be published.",
    tag,
    capability: "modules.publish",
    scopedBy: "product_id",
    params: { product_id: "product", module_id: "module" },
    idempotency: "required",
    success: { status: 202, description: "The operation, queued; `Location` is its address.", schema: OperationSchema, headers: ["Location"] },
    errors: [],
    handler: ({ path }) => startModulePublication(path.product_id!, path.module_id!).pipe(Effect.map(accepted))
  }),
  defineOperation({
    id: "lessons.copies.create",
    method: "POST",
    path: "/products/{product_id}/lessons/{lesson_id}/copies",
    summary: "Copy a lesson into a module, as a draft",
    description:
      "Copy a lesson, with its content and attachments, as a `draft` at the end of a module, through an asynchronous operation (its item's `result` names the copy). Needs `lessons.create` on the destination product (else 403 `permission_denied`). A replicated lesson cannot be copied, nor can a lesson be copied into a replicated product (403 `replica_readonly`).",
    tag,
    capability: "lessons.create",
    params: lessonParams,
    body: LessonCopyInput,
    idempotency: "required",
    success: { status: 202, description: "The operation, queued; `Location` is its address.", schema: OperationSchema, headers: ["Location"] },
    errors: ["replica_readonly"],
    handler: ({ path, body }) =>
      Effect.gen(function* () {
        // The source is read: outside the caller's lessons.read scope it does not exist (§1 rule 4).
        const caller = yield* Caller
        if (!allows(caller.grant, "lessons.read", path.product_id)) return yield* Effect.fail(apiError("not_found"))
        return accepted(yield* startLessonCopy(path.product_id!, path.lesson_id!, body))
      })
  }),
  defineOperation({
    id: "lessons.content.get",
    method: "GET",
    path: "/products/{product_id}/lessons/{lesson_id}/content",
    summary: "Get the content of a lesson",
    description: "The content of a lesson; a lesson never written has empty content at revision `0`.",
    tag,
    capability: "lessons.read",
    scopedBy: "product_id",
    params: lessonParams,
    idempotency: "none",
    success: { status: 200, description: "The content.", schema: LessonContentSchema, headers: ["ETag"] },
    errors: [],
    handler: ({ path }) =>
      getLessonContent(path.product_id!, path.lesson_id!).pipe(Effect.map(({ data, etag }) => ({ status: 200, body: { data }, headers: { etag } })))
  }),
  defineOperation({
    id: "lessons.content.replace",
    method: "PUT",
    path: "/products/{product_id}/lessons/{lesson_id}/content",
    summary: "Replace the content of a lesson",
    description:
      "Replace the whole content of a lesson (the request is at most 1 MiB). `raw` blocks are rejected; embeds need a recognized provider (youtube, vimeo, loom, wistia, vidyard, spotify, soundcloud, google_drive, figma, canva); a video's URL must be of its provider; quiz lessons take no video (each 422, itemized). `body.inherited` is accepted and ignored. A connected lesson: 409 `state_conflict`; a replicated one: 403 `replica_readonly`. The lesson's revision changes too.",
    tag,
    capability: "lessons.update",
    scopedBy: "product_id",
    params: lessonParams,
    body: LessonContentInput,
    idempotency: "optional",
    ifMatch: "lesson_content",
    success: { status: 200, description: "The content.", schema: LessonContentSchema, headers: ["ETag"] },
    errors: ["replica_readonly", "state_conflict"],
    handler: ({ path, body, expectedRevision }) =>
      replaceLessonContent(path.product_id!, path.lesson_id!, body, expectedRevision).pipe(
        Effect.map(({ data, etag }) => ({ status: 200, body: { data }, headers: { etag } }))
      )
  }),
  defineOperation({
    id: "attachments.list",
    method: "GET",
    path: "/products/{product_id}/lessons/{lesson_id}/attachments",
    summary: "The attachments of a lesson, in order, all at once.",
    tag,
    capability: "lessons.read",
    scopedBy: "product_id",
    params: lessonParams,
    idempotency: "none",
    success: { status: 200, description: "Every attachment of the lesson.", schema: AttachmentSchema, collection: true },
    errors: [],
    handler: ({ path }) => listAttachments(path.product_id!, path.lesson_id!).pipe(Effect.map((data) => ({ status: 200, body: everything(data) })))
  }),
  defineOperation({
    id: "attachments.get",
    method: "GET",
    path: "/products/{product_id}/lessons/{lesson_id}/attachments/{attachment_id}",
    summary: "An attachment of a lesson.",
    tag,
    capability: "lessons.read",
    scopedBy: "product_id",
    params: { ...lessonParams, attachment_id: "attachment" },
    idempotency: "none",
    success: { status: 200, description: "The attachment.", schema: AttachmentSchema, headers: ["ETag"] },
    errors: [],
    handler: ({ path }) =>
      getAttachment(path.product_id!, path.lesson_id!, path.attachment_id!).pipe(
        Effect.map((record) => ({ status: 200, body: { data: resourceView(attachments, record) }, headers: { etag: resourceEtag(attachments, record) } }))
      )
  }),
  defineOperation({
    id: "attachments.replace",
    method: "PUT",
    path: "/products/{product_id}/lessons/{lesson_id}/attachments",
    summary: "Replace the attachments of a lesson as an ordered set",
    description:
      "Replace the attachments of a lesson as a set, in order: an item with `id` keeps that attachment, one without is new, those left out are removed. `If-Match` takes the lesson's ETag: the check and the lesson's new revision are one (3.4.4); the answer carries the lesson's new ETag. A replicated lesson: 403 `replica_readonly`.",
    tag,
    capability: "lessons.update",
    scopedBy: "product_id",
    params: lessonParams,
    body: AttachmentsInput,
    idempotency: "optional",
    ifMatch: "lesson",
    success: { status: 200, description: "Every attachment of the lesson, in order.", schema: AttachmentSchema, collection: true, headers: ["ETag"] },
    errors: ["replica_readonly"],
    handler: ({ path, body, expectedRevision }) =>
      replaceAttachments(path.product_id!, path.lesson_id!, body, expectedRevision).pipe(
        Effect.map(({ data, lesson }) => ({ status: 200, body: everything(data), headers: { etag: resourceEtag(lessons, lesson) } }))
      )
  })
]
