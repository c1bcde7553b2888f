/**
 * What a lesson holds: its content (§2.3 `lesson_content`, §4.3 `PUT .../content`) and its
 * attachments. Both are writes to the lesson: each changes the lesson's revision (3.4.4).
 *
 * Content: PUT replaces the whole content, with the content's own ETag
 * (`W/"lesson_content:<lesson_id>:<revision>"`) in `If-Match`. The request body is at most
 * 1 MiB (the pipeline's cap, 413). `raw` blocks are rejected, embeds need a recognized
 * provider, quiz lessons take no video (each 422, itemized); `body.inherited` is accepted and
 * ignored (answered from the lesson's `connected`); a connected lesson's content is 409
 * `state_conflict` and a replicated lesson's 403 `replica_readonly`. A lesson never written
 * has empty content at revision 0.
 *
 * Attachments are a set written at once (`PUT .../attachments`, §4.1: a PUT on a set
 * sub-resource replaces the set) under the lesson's own `If-Match`, so that the check and the
 * new lesson revision are atomic (3.4.4). An item with an `id` keeps that attachment, one
 * without is new, an attachment left out is removed; the order of the set is `position`.
 */
import { Clock, Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { apiError, type DetailItem, writeUnavailable } from "../errors/errors.js"
import type { Json, JsonObject, StoredRecord } from "../ports/store.js"
import { Records } from "../ports/store.js"
import {
  createResource,
  deleteResource,
  getResource,
  isReplica,
  requireParent,
  resourceView,
  ruleViolation,
  updateResource
} from "../records/resource.js"
import { Bool, Enum, Integer, List, PublicId, RichText, Text } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"
import { type Purpose, requireFile } from "../uploads/uploads.js"
import { ATTACHMENT_TYPE, attachmentPurposes, attachments, childrenOf, lessons, touchLesson } from "./content-catalog.js"

export const LESSON_CONTENT_TYPE = "lesson_content"

// ---------------------------------------------------------------------------------------
// Providers

/** Providers an embed may show, by the hosts of their URLs (a host or any of its subdomains). */
export const embedProviders: Readonly<Record<string, ReadonlyArray<string>>> = {
  youtube: ["youtube.com", "youtu.be", "youtube-nocookie.com"],
  vimeo: ["vimeo.com"],
  loom: ["loom.com"],
  wistia: ["wistia.com", "wistia.net"],
  vidyard: ["vidyard.com"],
  spotify: ["spotify.com"],
  soundcloud: ["soundcloud.com"],
  google_drive: ["drive.google.com", "docs.google.com"],
  figma: ["figma.com"],
  canva: ["canva.com"]
}

/** Providers a lesson's video may come from (each also an embed provider). */
export const videoProviders = ["youtube", "vimeo", "loom", "wistia", "vidyard"] as const

/** The provider of an https URL, if it is a recognized one. */
export const providerOf = (url: string): string | undefined => {
  let host: string
  try {
    const parsed = new URL(url)
    if (parsed.protocol !== "https:") return undefined
    host = parsed.hostname.toLowerCase()
  } catch {
    return undefined
  }
  return Object.keys(embedProviders).find((name) => embedProviders[name]!.some((h) => host === h || host.endsWith(`.${h}`)))
}

// ---------------------------------------------------------------------------------------
// Content

const HttpsUrl = Text({ min: 1, max: 2048 }).pipe(
  Schema.filter((s) => /^https:\/\/\S+$/.test(s) || "invalid_value|expected=https URL"),
  Schema.annotations({ jsonSchema: { type: "string", format: "uri", maxLength: 2048 } })
)

/** Files shown in the body: uploaded for the editor, or images and documents. */
const blockFilePurposes: ReadonlyArray<Purpose> = ["editor", "image", "pdf", "document"]

export const ContentBlock = Schema.Struct({
  id: Schema.optional(Text({ min: 1, max: 64 })),
  type: Text({ min: 1, max: 64 }).annotations({
    description:
      "`paragraph`, `heading`, `list`, `quote`, `code`, `image`, `file`, `embed`, `divider`, …; `raw` blocks are rejected (422)."
  }),
  text: Schema.optional(RichText()),
  level: Schema.optional(Integer({ min: 1, max: 6 })),
  style: Schema.optional(Text({ max: 32 })),
  items: Schema.optional(List(RichText())),
  url: Schema.optional(
    Text({ min: 1, max: 2048 }).annotations({ description: "`embed` blocks: an https URL of a recognized provider (else 422)." })
  ),
  file: Schema.optional(PublicId("file").annotations({ description: "A file of the account (purpose `editor`, `image`, `pdf` or `document`)." })),
  caption: Schema.optional(Text()),
  language: Schema.optional(Text({ max: 64 })),
  html: Schema.optional(RichText().annotations({ description: "Only `raw` blocks carry it, and they are rejected." }))
})

export const LessonContentInput = Schema.Struct({
  format: Schema.optional(Enum("standard")),
  body: Schema.Struct({
    blocks: List(ContentBlock),
    inherited: Schema.optional(Bool.annotations({ description: "Accepted and ignored." }))
  }),
  embed: Schema.optional(Schema.NullOr(Schema.Struct({ url: HttpsUrl.annotations({ description: "A URL of a recognized provider." }) }))),
  live: Schema.optional(Schema.NullOr(Schema.Struct({ url: HttpsUrl }))),
  video: Schema.optional(Schema.NullOr(Schema.Struct({ provider: Enum(...videoProviders), url: HttpsUrl })))
}).annotations({ identifier: "LessonContentInput" })
export type LessonContentInput = typeof LessonContentInput.Type

/** The rules of §4.3 on a content, for a lesson of `kind`: each problem, itemized. */
export const contentProblems = (content: LessonContentInput, kind: string): ReadonlyArray<DetailItem> => {
  const problems: Array<DetailItem> = []
  content.body.blocks.forEach((block, i) => {
    if (block.type === "raw") problems.push({ field: `body.blocks[${i}]`, code: "not_allowed", reason: "raw_block" })
    if (block.type === "embed") {
      if (block.url === undefined) problems.push({ field: `body.blocks[${i}].url`, code: "required" })
      else if (providerOf(block.url) === undefined) {
        problems.push({ field: `body.blocks[${i}].url`, code: "invalid_value", reason: "embed_provider_unrecognized" })
      }
    }
  })
  if (content.embed && providerOf(content.embed.url) === undefined) {
    problems.push({ field: "embed.url", code: "invalid_value", reason: "embed_provider_unrecognized" })
  }
  if (content.video) {
    if (kind === "quiz") problems.push({ field: "video", code: "not_allowed", reason: "quiz_lesson" })
    else if (providerOf(content.video.url) !== content.video.provider) {
      problems.push({ field: "video.url", code: "invalid_value", reason: "provider_mismatch" })
    }
  }
  return problems
}

const emptyContent = (lessonId: string): JsonObject => ({
  object: LESSON_CONTENT_TYPE,
  lesson_id: lessonId,
  format: "standard",
  body: { blocks: [] },
  embed: null,
  live: null,
  video: null
})

/** The representation: `body.inherited` says whether the lesson's content is connected. */
const contentView = (lesson: StoredRecord, content: StoredRecord | undefined): JsonObject => {
  const data = content?.data ?? emptyContent(lesson.id)
  const body = (data.body ?? {}) as JsonObject
  return {
    object: LESSON_CONTENT_TYPE,
    lesson_id: lesson.id,
    format: data.format ?? "standard",
    revision: String(content?.revision ?? 0),
    body: { blocks: body.blocks ?? [], inherited: lesson.data.connected === true },
    embed: data.embed ?? null,
    live: data.live ?? null,
    video: data.video ?? null
  }
}

const contentEtag = (lessonId: string, content: StoredRecord | undefined) => `W/"${LESSON_CONTENT_TYPE}:${lessonId}:${content?.revision ?? 0}"`

const loadContent = (lessonId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records.get(caller.tenant, LESSON_CONTENT_TYPE, lessonId).pipe(Effect.mapError(writeUnavailable))
  })

export const getLessonContent = (productId: string, lessonId: string) =>
  Effect.gen(function* () {
    const lesson = yield* getResource(lessons, { product_id: productId }, lessonId)
    const content = yield* loadContent(lesson.id)
    return { data: contentView(lesson, content), etag: contentEtag(lesson.id, content) }
  })

export const replaceLessonContent = (
  productId: string,
  lessonId: string,
  input: LessonContentInput,
  expectedRevision: number | undefined
) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const lesson = yield* getResource(lessons, { product_id: productId }, lessonId)
    if (isReplica(lesson)) return yield* Effect.fail(apiError("replica_readonly"))
    if (lesson.data.connected === true) return yield* Effect.fail(apiError("state_conflict", { reason: "content_connected" }))
    const current = yield* loadContent(lesson.id)
    const revision = current?.revision ?? 0
    if (expectedRevision !== undefined && expectedRevision !== revision) return yield* Effect.fail(apiError("revision_mismatch"))
    const problems = contentProblems(input, String(lesson.data.kind))
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
    yield* Effect.forEach(input.body.blocks, (block, i) =>
      block.file === undefined ? Effect.void : Effect.asVoid(requireFile(`body.blocks[${i}].file`, block.file, blockFilePurposes))
    )
    const data: JsonObject = {
      ...emptyContent(lesson.id),
      format: input.format ?? "standard",
      // `inherited` is not stored: it comes from the lesson.
      body: { blocks: input.body.blocks as unknown as ReadonlyArray<Json> },
      embed: input.embed ?? null,
      live: input.live ?? null,
      video: input.video ?? null,
      updated_at: formatTimestamp(yield* Clock.currentTimeMillis)
    }
    const saved = yield* (current
      ? records.update(caller.tenant, LESSON_CONTENT_TYPE, lesson.id, data, { expectedRevision: revision })
      : records.insert(caller.tenant, LESSON_CONTENT_TYPE, lesson.id, data)
    ).pipe(
      Effect.catchTags({
        RevisionConflict: () => Effect.fail(apiError("revision_mismatch")),
        UniqueViolation: () => Effect.fail(apiError("revision_mismatch")),
        StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
      })
    )
    const touched = yield* touchLesson(lesson, undefined)
    return { data: contentView(touched, saved), etag: contentEtag(lesson.id, saved) }
  })

/** The content of `source` given to a new lesson (a copy), as its first revision. */
export const copyContent = (source: StoredRecord, target: StoredRecord) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const content = yield* loadContent(source.id)
    if (!content) return
    const at = formatTimestamp(yield* Clock.currentTimeMillis)
    yield* records
      .insert(caller.tenant, LESSON_CONTENT_TYPE, target.id, { ...content.data, lesson_id: target.id, updated_at: at })
      .pipe(Effect.mapError(writeUnavailable))
  })

// ---------------------------------------------------------------------------------------
// Attachments

export const AttachmentsInput = Schema.Struct({
  attachments: List(
    Schema.Struct({
      id: Schema.optional(PublicId("attachment").annotations({ description: "An attachment of the lesson to keep; without it, a new one." })),
      name: Text({ min: 1, max: 200 }),
      file: PublicId("file").annotations({ description: "File ID (purpose `document`, `pdf` or `image`)." })
    }).annotations({ identifier: "AttachmentInput" })
  ).annotations({ description: "The whole set, in order: attachments left out are removed." })
}).annotations({ identifier: "AttachmentsInput" })
export type AttachmentsInput = typeof AttachmentsInput.Type

const lessonIds = (productId: string, lessonId: string) => ({ product_id: productId, lesson_id: lessonId })

const attachmentsOf = (lessonId: string) => Effect.flatMap(Caller, (caller) => childrenOf(caller.tenant, ATTACHMENT_TYPE, "lesson_id", lessonId))

export const listAttachments = (productId: string, lessonId: string) =>
  Effect.gen(function* () {
    yield* requireParent(attachments.parent, lessonIds(productId, lessonId))
    return (yield* attachmentsOf(lessonId)).map((r) => resourceView(attachments, r))
  })

export const getAttachment = (productId: string, lessonId: string, id: string) => getResource(attachments, lessonIds(productId, lessonId), id)

export const replaceAttachments = (productId: string, lessonId: string, input: AttachmentsInput, expectedRevision: number | undefined) =>
  Effect.gen(function* () {
    const lesson = yield* getResource(lessons, { product_id: productId }, lessonId)
    if (expectedRevision !== undefined && expectedRevision !== lesson.revision) return yield* Effect.fail(apiError("revision_mismatch"))
    if (isReplica(lesson)) return yield* Effect.fail(apiError("replica_readonly"))
    const ids = lessonIds(productId, lesson.id)
    const current = new Map((yield* attachmentsOf(lesson.id)).map((r) => [r.id, r]))
    const seen = new Set<string>()
    const problems: Array<DetailItem> = []
    input.attachments.forEach((item, i) => {
      if (item.id === undefined) return
      if (!current.has(item.id)) problems.push({ field: `attachments[${i}].id`, code: "invalid_value", reason: "not_found" })
      else if (seen.has(item.id)) problems.push({ field: `attachments[${i}].id`, code: "invalid_value", reason: "duplicate" })
      seen.add(item.id)
    })
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
    yield* Effect.forEach(input.attachments, (item, i) =>
      item.id !== undefined && current.get(item.id)!.data.file === item.file
        ? Effect.void
        : Effect.asVoid(requireFile(`attachments[${i}].file`, item.file, attachmentPurposes))
    )
    yield* Effect.forEach([...current.values()].filter((r) => !seen.has(r.id)), (r) => deleteResource(attachments, ids, r.id))
    yield* Effect.forEach(input.attachments, (item, i) => {
      const fields = { name: item.name, file: item.file, position: i + 1 }
      const existing = item.id === undefined ? undefined : current.get(item.id)
      if (!existing) return Effect.asVoid(createResource(attachments, ids, fields))
      const unchanged = Object.entries(fields).every(([k, v]) => existing.data[k] === v)
      return unchanged ? Effect.void : Effect.asVoid(updateResource(attachments, ids, existing.id, fields, undefined))
    })
    const touched = yield* touchLesson(lesson, lesson.revision)
    return { data: (yield* attachmentsOf(lesson.id)).map((r) => resourceView(attachments, r)), lesson: touched }
  })

/** The attachments of `source` given to a new lesson (a copy), as new attachments. */
export const copyAttachments = (source: StoredRecord, target: StoredRecord) =>
  Effect.gen(function* () {
    const ids = lessonIds(String(target.data.product_id), target.id)
    yield* Effect.forEach(yield* attachmentsOf(source.id), (r) =>
      createResource(attachments, ids, { name: r.data.name, file: r.data.file, position: r.data.position })
    )
  })
