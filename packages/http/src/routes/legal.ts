/**
 * Legal terms, their versions and the users' acceptances (release 3.2.0; §2.3
 * `term_acceptance`, §4.3 `GET /users/{user_id}/term-acceptances`, §5 `legal_terms.read_proof`;
 * open-points routes). Served from their descriptions (`describedOperations`), with what the
 * derived routes cannot know: an acceptance's `current` (against the term's version in force,
 * when read) and its `proof`, shown only to a credential holding `legal_terms.read_proof`
 * (omitted otherwise); and the decisions, in each operation's text (docs/legal.md).
 */
import {
  acceptanceViews,
  createResource,
  getResource,
  legalTerms,
  legalTermVersions,
  listTermAcceptances,
  listUserTermAcceptances,
  PublicId,
  resourceEtag,
  type StoredRecord,
  termAcceptances,
  Timestamp,
  USER_AGENT_MAX
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation, type Reply } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { describedOperations } from "../resources.js"

const tag = "Legal"

const pathIds = (path: Readonly<Record<string, string>>): Readonly<Record<string, string | undefined>> => path

// ---------------------------------------------------------------------------------------
// Terms

const versionNote =
  "Versions: a term is published as version 1 when created; a change of `text` (to a different text) publishes version `current_version + 1` at once, kept unchanged at `GET /legal-terms/{legal_term_id}/versions` (event `legal_term_version.created`). A new version requires new acceptance: acceptances of earlier versions read `current: false`."
const scopeNote =
  "`kind` `platform` (the account's own terms; `product_id` absent or null, else 422 on `product_id`, reason `platform_term`) or `product` (`product_id` required, a non-trashed product of the account, else 422 on `product_id`). One non-trashed term per scope: a second platform term is 409 `already_exists` on `kind`, a second term of a product 409 `already_exists` on `product_id`."

const termOperations = describedOperations(legalTerms, tag, {
  "legal_terms.list": {
    summary: "List the legal terms: the platform's and the products'",
    description: "Oldest first unless `sort` says otherwise (`created_at`, `title`); filter by `kind` and `product_id`; `q` searches the title."
  },
  "legal_terms.get": { summary: "Retrieve a legal term with the text of its current version" },
  "legal_terms.create": {
    summary: "Create the platform's legal term or a product's, published as version 1",
    description: `${scopeNote} \`text\` is rich text (HTML), 1 character to 512 KiB; \`text_sha256\` is the SHA-256 of its UTF-8 bytes. ${versionNote}`
  },
  "legal_terms.update": {
    summary: "Change a legal term's title, or publish a new version of its text",
    description: `\`kind\` and \`product_id\` never change (422 \`unknown_field\`). ${versionNote} A change of \`title\` alone, or a \`text\` equal to the current one, publishes nothing. Restoring from the trash needs the scope to be free (409 \`already_exists\`).`
  },
  "legal_terms.delete": {
    summary: "Move a legal term nobody accepted to the trash",
    description:
      "A term some user accepted cannot be trashed: 409 `state_conflict`, reason `term_accepted` (acceptances are records of fact, and their `links.self` must keep answering). A trashed term frees its scope for a new term; its versions come back with it.",
    errors: ["state_conflict"]
  }
})

const versionOperations = describedOperations(legalTermVersions, tag, {
  "legal_term_versions.list": {
    capability: "legal_terms.read",
    summary: "List the published versions of a legal term, newest first",
    description:
      "Every version ever published, each exactly as published (`text`, `text_sha256`, `published_at`); versions never change and are never removed. Newest first (`sort=version`: oldest first)."
  },
  "legal_term_versions.get": {
    capability: "legal_terms.read",
    summary: "Retrieve a published version of a legal term",
    description: "The text a user accepted when an acceptance names this version (its `text_sha256` matches)."
  }
})

// ---------------------------------------------------------------------------------------
// Acceptances

const WireTimestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

const TermAcceptanceSchema = Schema.Struct({
  object: Schema.Literal("term_acceptance"),
  id: Schema.String,
  legal_term_id: Schema.String,
  ...termAcceptances.fields,
  proof: Schema.optionalWith(
    Schema.Struct({
      ip: Schema.String.annotations({ description: "The IP address (IPv4 or IPv6) the user accepted from." }),
      user_agent: Schema.String.annotations({ description: `The user agent of the user's browser or app (at most ${USER_AGENT_MAX.toLocaleString("en-US")} characters).` })
    }),
    { exact: true }
  ).annotations({ description: "Present only for a credential holding `legal_terms.read_proof` on the term; omitted (not null) otherwise." }),
  created_at: WireTimestamp,
  updated_at: WireTimestamp,
  revision: Schema.String
}).annotations({ identifier: "TermAcceptance" }) as unknown as Schema.Schema.AnyNoContext

const proofNote =
  "`proof` (`ip`, `user_agent`) is included only when the credential holds `legal_terms.read_proof` on the term; otherwise it is omitted, not null. Events and batch results never carry it."
const currentNote =
  "`current` is true while `version` is the term's `current_version` (computed when read): once a new version is published the user has to accept again."

/** Acceptances as this caller may see them. */
const acceptanceReply = (status: number, record: StoredRecord, headers: Readonly<Record<string, string>> = {}) =>
  Effect.map(acceptanceViews([record]), ([data]): Reply => ({
    status,
    body: { data: data ?? null },
    headers: { etag: resourceEtag(termAcceptances, record), ...headers }
  }))

const AcceptancesQuery = Schema.Struct({
  ...pageQuery("id"),
  user_id: Schema.optional(PublicId("user")),
  current: Schema.optional(Schema.Literal("true", "false")),
  accepted_after: Schema.optional(Timestamp),
  accepted_before: Schema.optional(Timestamp)
})

const acceptanceHandlers: Readonly<Record<string, Operation["handler"]>> = {
  "term_acceptances.list": ({ path, query }) =>
    Effect.gen(function* () {
      const q = query as typeof AcceptancesQuery.Type
      const { items, page } = yield* listTermAcceptances({
        legalTermId: path.legal_term_id!,
        limit: pageLimit(q.limit),
        cursor: q.cursor,
        sort: q.sort,
        userId: q.user_id,
        current: q.current === undefined ? undefined : q.current === "true",
        acceptedAfter: q.accepted_after,
        acceptedBefore: q.accepted_before
      })
      return { status: 200, body: { data: yield* acceptanceViews(items), page } }
    }),
  "term_acceptances.get": ({ path }) =>
    Effect.flatMap(getResource(termAcceptances, pathIds(path), path.term_acceptance_id!), (record) => acceptanceReply(200, record)),
  "term_acceptances.create": ({ path, body }) =>
    Effect.flatMap(createResource(termAcceptances, pathIds(path), body), (record) =>
      acceptanceReply(201, record, { location: `/api/v3/legal-terms/${path.legal_term_id}/acceptances/${record.id}` })
    )
}

const acceptanceOperations = describedOperations(termAcceptances, tag, {
  "term_acceptances.list": {
    summary: "List the acceptances of a legal term, newest first",
    description: `Newest first (\`sort=id\`: oldest first). \`user_id\` narrows to one user; \`current=true\` keeps the acceptances of the term's current version (so \`?user_id=…&current=true\` answers whether a user accepted the version in force), \`current=false\` those of earlier versions; \`accepted_after\` (inclusive) and \`accepted_before\` (exclusive) bound \`accepted_at\` (\`accepted_before\` not after \`accepted_after\`: 422, reason \`empty_range\`). ${currentNote} ${proofNote}`
  },
  "term_acceptances.get": { summary: "Retrieve an acceptance of a legal term", description: `${currentNote} ${proofNote}` },
  "term_acceptances.create": {
    summary: "Record that a user accepted a version of a legal term, with its proof",
    description: `\`user_id\`: a non-trashed user of the account (else 422 on \`user_id\`). \`version\`: the version the user was shown, 1 to the term's \`current_version\` (else 422 on \`version\`, reason \`not_found\`); an acceptance of an earlier version is recorded as such, with \`current: false\`. \`proof\`: \`ip\` (IPv4 or IPv6) and \`user_agent\` (1 to ${USER_AGENT_MAX.toLocaleString("en-US")} characters) of the user's browser or app. \`accepted_at\` is when the service records it. One acceptance per user and version: a second is 409 \`already_exists\` on \`user_id\`. An acceptance is a record of fact: it is never changed or removed. Event \`term_acceptance.created\` (without the proof). ${proofNote}`
  }
}).map((operation) => ({
  ...operation,
  ...(operation.id === "term_acceptances.list" ? { query: AcceptancesQuery as unknown as Schema.Schema.AnyNoContext } : {}),
  success: { ...operation.success, schema: TermAcceptanceSchema },
  handler: acceptanceHandlers[operation.id] ?? operation.handler
}))

const UserAcceptancesQuery = Schema.Struct({
  ...pageQuery("id"),
  accepted_after: Schema.optional(Timestamp.annotations({ description: "Only acceptances recorded at or after this instant." })),
  accepted_before: Schema.optional(Timestamp.annotations({ description: "Only acceptances recorded before this instant; after `accepted_after` (else 422)." }))
})

const userAcceptancesOperation = defineOperation({
  id: "term_acceptances.list_for_user",
  method: "GET",
  path: "/users/{user_id}/term-acceptances",
  summary: "List a user's acceptances of every legal term, newest first",
  description: `The user's acceptances of the platform's legal term and of the products' terms, newest first (\`sort=id\`: oldest first). \`accepted_after\` (inclusive) and \`accepted_before\` (exclusive) bound \`accepted_at\` (\`accepted_before\` not after \`accepted_after\`: 422, reason \`empty_range\`). Each item's \`links.self\` is the acceptance under its legal term. A policy limited to some legal terms sees only their acceptances. A missing or trashed user is 404. ${currentNote} ${proofNote}`,
  tag,
  capability: "term_acceptances.read",
  params: { user_id: "user" },
  query: UserAcceptancesQuery,
  idempotency: "none",
  success: { status: 200, description: "A page of the user's acceptances.", schema: TermAcceptanceSchema, collection: true },
  errors: ["invalid_cursor"],
  handler: ({ path, query }) =>
    Effect.gen(function* () {
      const { items, page } = yield* listUserTermAcceptances({
        userId: path.user_id!,
        limit: pageLimit(query.limit),
        cursor: query.cursor,
        sort: query.sort,
        acceptedAfter: query.accepted_after,
        acceptedBefore: query.accepted_before
      })
      return { status: 200, body: { data: yield* acceptanceViews(items), page } }
    })
})

export const legalRoutes: ReadonlyArray<Operation> = [...termOperations, ...versionOperations, ...acceptanceOperations, userAcceptancesOperation]
