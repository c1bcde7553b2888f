/**
 * Legal terms (release 3.2.0; open-points routes `/legal-terms`, `/legal-terms/{id}`): the
 * platform's term and each product's term, versioned. Acceptances are in
 * `term-acceptances.ts`; the decisions are in docs/legal.md and in the OpenAPI description.
 *
 * - `kind` is `platform` (the account's own terms of use; `product_id` null) or `product`
 *   (a product's terms; `product_id` names a non-trashed product of the account, else 422 on
 *   `product_id`). Neither changes after creation. At most one non-trashed term per scope: a
 *   second platform term is 409 `already_exists` on `kind`, a second term of a product 409
 *   `already_exists` on `product_id` (also when restoring from the trash).
 * - Versions, as Stripe's and Shopify's terms-of-service records keep them: a term is
 *   published at creation as version 1; a PATCH whose `text` differs from the current text
 *   publishes version `current_version + 1` at once (there are no drafts). Each version is an
 *   immutable `legal_term_version` record (`/legal-terms/{id}/versions`), written in the unit of
 *   work of the change with its event `legal_term_version.created`. A change of `title` alone,
 *   or a `text` equal to the current one, publishes nothing.
 * - A new version requires new acceptance: an acceptance names the version the user accepted,
 *   and reads `current: false` once a later version is published (term-acceptances.ts).
 * - `text` is rich text (HTML), 1 character to 512 KiB (§8.2); `text_sha256` is the SHA-256 of
 *   its UTF-8 bytes, in hex, the fingerprint acceptances keep.
 * - DELETE moves a term to the trash and `PATCH deleted=false` restores it, unless some user
 *   accepted it: then 409 `state_conflict`, reason `term_accepted` (acceptances are records of
 *   fact and their `links.self` must keep answering).
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { PRODUCT_TYPE, products } from "../catalog/products.js"
import { apiError, fieldError, readUnavailable } from "../errors/errors.js"
import { Crypto } from "../ports/crypto.js"
import { type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import {
  createResource,
  defineResource,
  equalsFilter,
  type ParentDefinition,
  requireReference,
  type ResourceDefinition,
  ruleViolation
} from "../records/resource.js"
import { Enum, PublicId, RichText, Text } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"

export const LEGAL_TERM_TYPE = "legal_term"
export const LEGAL_TERM_VERSION_TYPE = "legal_term_version"
export const TERM_ACCEPTANCE_TYPE = "term_acceptance"
/** The capability that shows an acceptance's proof (§2.3, §5): never part of `*.read`. */
export const READ_PROOF = "legal_terms.read_proof"

export const legalTermKinds = ["platform", "product"] as const

/** Stored, never shown: the scope a term is unique in (`platform`, or the product's ID). */
const SCOPE_KEY = "scope_key"
/** Stored on a version, never shown: `<legal_term_id>:<version>`, its unique key. */
export const VERSION_KEY = "version_key"

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })
const WireTimestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

export const legalTermParent: ParentDefinition = { type: LEGAL_TERM_TYPE, idKind: "legal_term", field: "legal_term_id" }

/** Served by `@syllabus/http`'s `routes/legal.ts`, with the decisions in each operation's text. */
export const legalOwnRoutes = ["list", "get", "create", "update", "delete"] as const

const scopeOf = (data: JsonObject): string => (data.kind === "product" ? String(data.product_id) : "platform")

export const versionKey = (legalTermId: string, version: number): string => `${legalTermId}:${version}`

const sha256 = (text: string) => Effect.map(Crypto, (crypto) => crypto.sha256Hex(text))

// ---------------------------------------------------------------------------------------
// Versions

/**
 * The published versions of a term: immutable, written only when the term's text changes
 * (`publishVersion`), never through a body.
 */
export const legalTermVersions: ResourceDefinition = defineResource({
  type: LEGAL_TERM_VERSION_TYPE,
  idKind: "legal_term_version",
  plural: "legal_term_versions",
  // Read with `legal_terms.read`.
  capabilities: "legal_terms",
  path: "/legal-terms/{legal_term_id}/versions",
  tag: "Legal",
  parent: legalTermParent,
  fields: {
    version: Schema.Int.annotations({ description: "1-based, in the order the versions were published." }),
    title: Schema.String.annotations({ description: "The term's title when this version was published." }),
    text: Schema.String.annotations({ description: "The text of this version, exactly as published (rich text, HTML)." }),
    text_sha256: Schema.String.annotations({ description: "SHA-256 of the text's UTF-8 bytes, lowercase hex: what an acceptance of this version keeps." }),
    published_at: WireTimestamp
  },
  create: Schema.Struct({ version: Schema.Int, title: Schema.String, text: Schema.String, text_sha256: Schema.String, published_at: Schema.String }),
  update: Schema.Struct({}),
  defaults: (body, context) =>
    Effect.succeed({ ...body, [VERSION_KEY]: versionKey(String(context.parentId), body.version) } as unknown as JsonObject),
  unique: [VERSION_KEY],
  replacedRoutes: ["list", "get", "create", "update", "delete"],
  writes: [],
  trash: false,
  revision: "string",
  sorts: [{ name: "version", field: "version", kind: "number" }],
  defaultReversed: true
})

/** Record the term's current text as a new version, with its event, in the unit of work of the term's change. */
const publishVersion = (term: StoredRecord) =>
  Effect.asVoid(
    createResource(
      legalTermVersions,
      { legal_term_id: term.id },
      {
        version: term.data.current_version,
        title: term.data.title,
        text: term.data.text,
        text_sha256: term.data.text_sha256,
        published_at: term.data.version_published_at
      }
    )
  )

/** A version of a term by its number, if published. */
export const findVersion = (legalTermId: string, version: number) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records
      .findUnique(caller.tenant, LEGAL_TERM_VERSION_TYPE, { name: VERSION_KEY, value: versionKey(legalTermId, version) })
      .pipe(Effect.mapError(readUnavailable))
  })

// ---------------------------------------------------------------------------------------
// Rules

/** `kind` and `product_id` agree, and the product is a non-trashed one of the account. */
const checkScope = (kind: string, productId: string | null | undefined) =>
  Effect.gen(function* () {
    if (kind === "platform") {
      if (productId !== undefined && productId !== null) {
        return yield* Effect.fail(ruleViolation([{ field: "product_id", code: "invalid_value", reason: "platform_term" }]))
      }
      return
    }
    if (productId === undefined || productId === null) return yield* Effect.fail(ruleViolation([{ field: "product_id", code: "required" }]))
    yield* requireReference(products, "product_id", productId)
  })

/** No other non-trashed term holds the scope: else 409 `already_exists` on `kind` (platform) or `product_id`. */
const checkUniqueScope = (data: JsonObject) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const holder = yield* records
      .findUnique(caller.tenant, LEGAL_TERM_TYPE, { name: SCOPE_KEY, value: scopeOf(data) })
      .pipe(Effect.mapError(readUnavailable))
    if (holder && holder.id !== data.id) {
      return yield* Effect.fail(fieldError("already_exists", data.kind === "product" ? "product_id" : "kind"))
    }
  })

/** Has some user accepted this term? One index probe (the acceptances of the term). */
const hasAcceptances = (legalTermId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const found = yield* records
      .list(caller.tenant, TERM_ACCEPTANCE_TYPE, {
        where: [
          { field: "legal_term_id", op: "eq", value: legalTermId },
          { field: "deleted", op: "eq", value: false }
        ],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: 1
      })
      .pipe(Effect.mapError(readUnavailable))
    return found.length > 0
  })

// ---------------------------------------------------------------------------------------
// The description

export const legalTerms: ResourceDefinition = defineResource({
  type: LEGAL_TERM_TYPE,
  idKind: "legal_term",
  plural: "legal_terms",
  path: "/legal-terms",
  tag: "Legal",
  fields: {
    kind: Schema.Literal(...legalTermKinds).annotations({
      description: "`platform`: the account's own terms (one at most); `product`: the terms of `product_id` (one at most per product). A closed enum; fixed at creation."
    }),
    product_id: Schema.NullOr(Schema.String).annotations({ description: "The product of a `product` term; null for the `platform` term. Fixed at creation." }),
    title: Schema.String,
    text: Schema.String.annotations({ description: "The text of the current version (rich text, HTML, at most 512 KiB)." }),
    current_version: Schema.Int.annotations({
      description: "The version in force: 1 at creation, one more each time `text` changes. A user has accepted the term when an acceptance of theirs names this version (`current: true`)."
    }),
    version_published_at: WireTimestamp.annotations({ description: "When the current version was published." }),
    text_sha256: Schema.String.annotations({ description: "SHA-256 of the current text's UTF-8 bytes, lowercase hex." })
  },
  create: Schema.Struct({
    kind: Enum(...legalTermKinds),
    product_id: optional(Schema.NullOr(PublicId("product"))),
    title: Text({ min: 1, max: 200 }),
    text: RichText({ min: 1 })
  }),
  update: Schema.Struct({
    title: optional(Text({ min: 1, max: 200 })),
    text: optional(RichText({ min: 1 }))
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      yield* checkScope(body.kind, body.product_id)
      const data = {
        kind: body.kind,
        product_id: body.kind === "product" ? (body.product_id ?? null) : null,
        title: body.title,
        text: body.text,
        current_version: 1,
        version_published_at: formatTimestamp(context.now),
        text_sha256: yield* sha256(body.text)
      }
      return { ...data, [SCOPE_KEY]: scopeOf(data) }
    }),
  change: (current, patch, context) =>
    Effect.gen(function* () {
      const next: Record<string, JsonObject[string]> = { ...current }
      if (patch.title !== undefined) next.title = patch.title
      if (patch.text !== undefined) {
        const digest = yield* sha256(patch.text)
        if (digest !== current.text_sha256) {
          next.text = patch.text
          next.text_sha256 = digest
          next.current_version = Number(current.current_version ?? 0) + 1
          next.version_published_at = formatTimestamp(context.now)
        }
      }
      return next
    }),
  rules: {
    // At creation (`previous` null) and on a restore from the trash: the scope must be free.
    check: (data, previous) => (previous === null || previous.deleted === true ? checkUniqueScope(data) : Effect.void),
    afterCreate: publishVersion,
    afterUpdate: (before, after) => (after.data.current_version !== before.data.current_version ? publishVersion(after) : Effect.void),
    beforeDelete: (record) =>
      Effect.flatMap(hasAcceptances(record.id), (accepted) =>
        accepted ? Effect.fail(apiError("state_conflict", { reason: "term_accepted" })) : Effect.void
      )
  },
  unique: [SCOPE_KEY],
  trash: true,
  revision: "string",
  filters: {
    kind: equalsFilter("kind", Enum(...legalTermKinds), "Terms of this kind."),
    product_id: equalsFilter("product_id", PublicId("product"), "The terms of this product.")
  },
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "title", field: "title", kind: "text" }
  ],
  search: ["title"],
  replacedRoutes: legalOwnRoutes
})
