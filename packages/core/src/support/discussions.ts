/**
 * What lesson questions (`questions.ts`) and comments (`comments.ts`) share: the author of a
 * post (`user`: `{ id, name }`, or null for a reply the account wrote; a name is not personal
 * data, as on users); the lesson a learner posts on; the
 * blocks of a rich-text body; and the one rule of a status change (`invalid_transition`).
 * Decisions: docs/support.md, "Lesson questions and comments".
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { allows } from "../access/policies.js"
import { apiError, fieldError, readUnavailable } from "../errors/errors.js"
import { lessons } from "../content/content-catalog.js"
import { users } from "../people/people-users.js"
import { requireReference } from "../records/resource.js"
import { type Json, type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import { Enum, fitsUtf8, List, PublicId, RICH_TEXT_MAX, RichText, Text, tooLarge } from "../records/schema.js"

/** The author as stored and represented: `{ id, name }`. */
export const Author = Schema.NullOr(
  Schema.Struct({
    id: Schema.String,
    name: Schema.String.annotations({ description: "The learner's name when the post was made." })
  })
)

/** A live user of the account the caller may read, else 422 `validation_failed` on `field` (reason `not_found`). */
export const requireUser = (field: string, id: string) => requireReference(users, field, id)

/** The author of a post by `user`. */
export const authorOf = (user: StoredRecord): JsonObject => ({ id: user.id, name: typeof user.data.name === "string" ? user.data.name : "" })

/**
 * A live lesson of the account (of `productId` when given) that the caller's `capability` (the
 * post's create) reaches, else 422 `validation_failed` on `field` (reason `not_found`).
 */
export const requireLesson = (field: string, id: string, capability: string, productId?: string) =>
  Effect.gen(function* () {
    const lesson = yield* requireReference(lessons, field, id, { capability })
    if (productId !== undefined && lesson.data.product_id !== productId) return yield* Effect.fail(fieldError("validation_failed", field, { reason: "not_found" }))
    return lesson
  })

// ---------------------------------------------------------------------------------------
// A rich-text body

export const blockTypes = ["paragraph", "heading", "list", "quote", "code", "image", "link"] as const

const Block = Schema.Struct({
  type: Enum(...blockTypes),
  text: Schema.optional(RichText().annotations({ description: "The block's text (HTML allowed), at most 512 KiB." })),
  items: Schema.optional(List(RichText()).annotations({ description: "`list` blocks: the items." })),
  url: Schema.optional(Text({ min: 1, max: 2048 }).annotations({ description: "`link` blocks: the address." })),
  file: Schema.optional(PublicId("file").annotations({ description: "`image` blocks: a file of the account." })),
  language: Schema.optional(Text({ max: 64 }).annotations({ description: "`code` blocks: the language." }))
})

/** `{ blocks }`: at least one block, at most 1,000, 512 KiB of JSON in all (§8.2, rich text). */
export const BodyInput = Schema.Struct({ blocks: List(Block) })
  .pipe(
    Schema.filter((body) => body.blocks.length > 0 || "required"),
    Schema.filter((body) => fitsUtf8(JSON.stringify(body), RICH_TEXT_MAX) || tooLarge(RICH_TEXT_MAX))
  )
  .annotations({
    identifier: "RichBody",
    description:
      "Rich text as blocks (`paragraph`, `heading`, `list`, `quote`, `code`, `image`, `link`): at least one block, at most 512 KiB (524,288 bytes of UTF-8) as JSON, else 422 `too_long` on `body`."
  })

export const Body = Schema.Struct({ blocks: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown })) }).annotations({
  description: "Rich text as blocks: `{ type, text?, items?, url?, file?, language? }`."
})

/** The characters of a body a reader sees: its texts and items, tags left out. */
export const bodyLength = (body: JsonObject): number => {
  const blocks = Array.isArray(body.blocks) ? (body.blocks as ReadonlyArray<JsonObject>) : []
  const texts = blocks.flatMap((block) => [
    ...(typeof block.text === "string" ? [block.text] : []),
    ...(Array.isArray(block.items) ? block.items.filter((i): i is string => typeof i === "string") : [])
  ])
  return texts.reduce((sum, text) => sum + text.replace(/<[^>]*>/g, "").trim().length, 0)
}

// ---------------------------------------------------------------------------------------
// Status changes

/**
 * A status change allowed by `moves` (from → the statuses it may go to), else 422
 * `invalid_transition` on `status` with reason `from_<current>`. The same status is no change.
 */
export const checkTransition = (moves: Readonly<Record<string, ReadonlyArray<string>>>, from: Json | undefined, to: string) =>
  from === to || (moves[String(from)] ?? []).includes(to)
    ? Effect.void
    : Effect.fail(apiError("invalid_transition", { details: [{ field: "status", code: "invalid_transition", reason: `from_${String(from)}` }] }))

/** 403 `permission_denied` unless the caller holds it for `productId`. */
export const requireCapability = (capability: string, productId: string) =>
  Effect.flatMap(Caller, (caller) =>
    allows(caller.grant, capability, productId) ? Effect.void : Effect.fail(apiError("permission_denied", { params: { capability } }))
  )
