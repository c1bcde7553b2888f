/**
 * Term acceptances (§2.3 `term_acceptance`, §4.3 `GET /users/{user_id}/term-acceptances`;
 * open-points routes `/legal-terms/{id}/acceptances` and `/{acceptance_id}`). Decisions (also
 * in docs/legal.md and the description):
 *
 * - An acceptance is a record of fact: a user accepted one published version of a term, at
 *   `accepted_at` (the moment the service recorded it), from the IP address and user agent of
 *   its `proof`. It never changes and is never removed (no PATCH or DELETE, no capability or
 *   batch type for them); a user's trash leaves it; a sandbox reset empties it with the rest.
 * - `POST` names `user_id` (a non-trashed user of the account, else 422 on `user_id`), the
 *   `version` the user was shown (required: 1 to the term's `current_version`, else 422 on
 *   `version`, reason `not_found`; an acceptance of an earlier version is recorded as such and
 *   is not current), and `proof` `{ ip, user_agent }` (an IPv4 or IPv6 address; 1 to 1,024
 *   characters). One acceptance per user and version: a second is 409 `already_exists` on
 *   `user_id`.
 * - `version` and `text_sha256` say exactly what was accepted (the version's text is kept at
 *   `/legal-terms/{id}/versions`). `current` is true while `version` is the term's
 *   `current_version`, computed when read: publishing a new version makes every earlier
 *   acceptance `current: false`, so the user must accept again.
 * - `proof` is shown only to a credential holding `legal_terms.read_proof` on the term;
 *   otherwise the property is omitted, not null. Events and batch results never carry it.
 * - `links.self` is the acceptance under its term, `/api/v3/legal-terms/{id}/acceptances/{id}`.
 */
import { Effect, Option, Schema } from "effect"
import { Caller } from "../access/context.js"
import { allows, visibleResources } from "../access/policies.js"
import { apiError, fieldError, readUnavailable } from "../errors/errors.js"
import { requireLiveUser, USER_TYPE } from "../people/people-users.js"
import { type AccessPath, type JsonObject, listPath, Records, type StoredRecord, type Where } from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import {
  defineResource,
  equalsFilter,
  type FilterDefinition,
  requireParent,
  type ResourceDefinition,
  resourceSort,
  resourceView
} from "../records/resource.js"
import { Integer, PublicId, Text, Timestamp } from "../records/schema.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"
import { findVersion, LEGAL_TERM_TYPE, legalOwnRoutes, legalTermParent, READ_PROOF, TERM_ACCEPTANCE_TYPE } from "./legal-terms.js"

/** Stored, never shown: `<legal_term_id>:<user_id>:<version>`, the acceptance's unique key. */
const ACCEPTANCE_KEY = "acceptance_key"
/** Stored beside the representation, shown only with `legal_terms.read_proof`. */
const PROOF = "proof"
export const USER_AGENT_MAX = 1024

const WireTimestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

// ---------------------------------------------------------------------------------------
// IP addresses

const ipv4 = (text: string): boolean => {
  const parts = text.split(".")
  return parts.length === 4 && parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255)
}

const ipv6 = (text: string): boolean => {
  if (text.length > 45) return false
  const halves = text.split("::")
  if (halves.length > 2) return false
  const groupsOf = (half: string) => (half === "" ? [] : half.split(":"))
  const groups = halves.flatMap(groupsOf)
  // An IPv4 tail counts as two groups.
  const last = groups[groups.length - 1]
  const tail = last !== undefined && last.includes(".") ? (ipv4(last) ? 2 : -1) : 0
  if (tail < 0) return false
  const hex = tail > 0 ? groups.slice(0, -1) : groups
  if (!hex.every((g) => /^[0-9A-Fa-f]{1,4}$/.test(g))) return false
  const count = hex.length + tail
  return halves.length === 2 ? count <= 7 : count === 8
}

/** An IPv4 (dotted quad) or IPv6 (RFC 4291 text form) address. */
export const isIpAddress = (text: string): boolean => ipv4(text) || ipv6(text)

const IpAddress = Text({ min: 1, max: 45 }).pipe(
  Schema.filter((s) => isIpAddress(s) || "invalid_value|expected=ip_address"),
  Schema.annotations({ jsonSchema: { type: "string", anyOf: [{ format: "ipv4" }, { format: "ipv6" }], maxLength: 45, examples: ["203.0.113.7"] } })
)

const ProofInput = Schema.Struct({
  ip: IpAddress.annotations({ description: "The IP address (IPv4 or IPv6) the user accepted from." }),
  user_agent: Text({ min: 1, max: USER_AGENT_MAX }).annotations({ description: "The user agent of the user's browser or app, at most 1,024 characters." })
})

// ---------------------------------------------------------------------------------------
// The description

const acceptedRange = (name: "accepted_after" | "accepted_before"): FilterDefinition => ({
  schema: Timestamp,
  on: { field: "accepted_at", match: "text" },
  description: name === "accepted_after" ? "Accepted at or after this instant." : "Accepted before this instant (after `accepted_after`, else 422).",
  where: (value: never) => [
    {
      field: "accepted_at",
      op: name === "accepted_after" ? "gte" : "lt",
      // Compared as stored (UTC, milliseconds, `Z`); the query's schema has checked the value.
      value: Option.match(parseTimestamp(value as string), { onNone: () => value as string, onSome: formatTimestamp })
    }
  ]
})

const acceptanceKey = (legalTermId: string, userId: string, version: number) => `${legalTermId}:${userId}:${version}`

export const termAcceptances: ResourceDefinition = defineResource({
  type: TERM_ACCEPTANCE_TYPE,
  idKind: "term_acceptance",
  plural: "term_acceptances",
  path: "/legal-terms/{legal_term_id}/acceptances",
  tag: "Legal",
  parent: legalTermParent,
  fields: {
    user_id: Schema.String.annotations({ description: "The user who accepted." }),
    version: Schema.Int.annotations({ description: "The version of the term the user accepted." }),
    text_sha256: Schema.String.annotations({ description: "SHA-256 of the accepted version's text (UTF-8, lowercase hex), as the version records it." }),
    current: Schema.Boolean.annotations({
      description: "`version` is the term's `current_version`, as of this read: false once a later version is published, until the user accepts that one."
    }),
    accepted_at: WireTimestamp.annotations({ description: "When the service recorded the acceptance." }),
    links: Schema.Struct({
      self: Schema.String.annotations({ description: "The acceptance under its legal term: `/api/v3/legal-terms/{legal_term_id}/acceptances/{term_acceptance_id}`." })
    })
  },
  create: Schema.Struct({
    user_id: PublicId("user"),
    version: Integer({ min: 1, max: 1_000_000 }).annotations({ description: "The version the user was shown and accepted (the term's `current_version` when recorded at once)." }),
    proof: ProofInput
  }),
  update: Schema.Struct({}),
  defaults: (body, context) =>
    Effect.gen(function* () {
      const caller = yield* Caller
      const records = yield* Records
      const legalTermId = String(context.parentId)
      const term = yield* records.get(caller.tenant, LEGAL_TERM_TYPE, legalTermId).pipe(Effect.mapError(readUnavailable))
      if (!term) return yield* Effect.fail(apiError("not_found"))
      yield* requireLiveUser(body.user_id)
      const version = body.version > Number(term.data.current_version) ? undefined : yield* findVersion(legalTermId, body.version)
      if (!version) return yield* Effect.fail(fieldError("validation_failed", "version", { reason: "not_found" }))
      const key = acceptanceKey(legalTermId, body.user_id, body.version)
      const earlier = yield* records.findUnique(caller.tenant, TERM_ACCEPTANCE_TYPE, { name: ACCEPTANCE_KEY, value: key }).pipe(Effect.mapError(readUnavailable))
      if (earlier) return yield* Effect.fail(fieldError("already_exists", "user_id"))
      const acceptedAt = formatTimestamp(context.now)
      return {
        user_id: body.user_id,
        version: body.version,
        text_sha256: version.data.text_sha256 ?? null,
        current: body.version === Number(term.data.current_version),
        accepted_at: acceptedAt,
        links: { self: `/api/v3/legal-terms/${legalTermId}/acceptances/${context.id}` },
        [PROOF]: { ip: body.proof.ip, user_agent: body.proof.user_agent },
        [ACCEPTANCE_KEY]: key
      }
    }),
  unique: [ACCEPTANCE_KEY],
  // A record of fact: created, never changed or removed.
  writes: ["create"],
  trash: false,
  revision: "string",
  filters: {
    user_id: equalsFilter("user_id", PublicId("user"), "The acceptances of this user."),
    accepted_after: acceptedRange("accepted_after"),
    accepted_before: acceptedRange("accepted_before")
  },
  sorts: [{ name: "id", field: "id", kind: "text" }],
  // Newest first, as the other records people make.
  defaultReversed: true,
  replacedRoutes: legalOwnRoutes
})

/**
 * The lists read outside the machinery: a term's acceptances of one version (`current`), and
 * a user's acceptances across terms (§4.3), by ID and by `accepted_at`.
 */
export const legalAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(TERM_ACCEPTANCE_TYPE, ["legal_term_id", "deleted"], [{ field: "version", kind: "number" }, { field: "id", kind: "text" }]),
  listPath(TERM_ACCEPTANCE_TYPE, ["user_id"], [{ field: "id", kind: "text" }]),
  listPath(TERM_ACCEPTANCE_TYPE, ["user_id"], [{ field: "accepted_at", kind: "text" }, { field: "id", kind: "text" }])
]

// ---------------------------------------------------------------------------------------
// Views

/** May the caller see the proofs of this term's acceptances? */
export const canReadProof = (legalTermId: string) => Effect.map(Caller, (caller) => allows(caller.grant, READ_PROOF, legalTermId))

/**
 * Acceptances as this caller may see them: `current` against each term's current version
 * (one read of the page's terms), `proof` only with `legal_terms.read_proof` on the term.
 */
export const acceptanceViews = (items: ReadonlyArray<StoredRecord>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const termIds = [...new Set(items.map((item) => String(item.data.legal_term_id)))]
    const terms = termIds.length === 0 ? [] : yield* records.getMany(caller.tenant, LEGAL_TERM_TYPE, termIds).pipe(Effect.mapError(readUnavailable))
    const currentVersion = new Map(terms.map((term) => [term.id, Number(term.data.current_version)]))
    return items.map((record): JsonObject => {
      const { created_at, updated_at, revision, ...view } = resourceView(termAcceptances, record)
      const legalTermId = String(record.data.legal_term_id)
      const proof = record.data[PROOF]
      return {
        ...view,
        current: currentVersion.get(legalTermId) === Number(record.data.version),
        ...(allows(caller.grant, READ_PROOF, legalTermId) && proof !== undefined ? { proof } : {}),
        created_at: created_at ?? null,
        updated_at: updated_at ?? null,
        revision: revision ?? null
      }
    })
  })

// ---------------------------------------------------------------------------------------
// Lists

export interface AcceptanceRange {
  readonly acceptedAfter: string | undefined
  readonly acceptedBefore: string | undefined
}

/** The `accepted_at` conditions of a range; an empty range (`after >= before`) is 422 on `accepted_before`. */
const rangeWhere = (range: AcceptanceRange) =>
  Effect.gen(function* () {
    const after = range.acceptedAfter === undefined ? undefined : Option.getOrUndefined(parseTimestamp(range.acceptedAfter))
    const before = range.acceptedBefore === undefined ? undefined : Option.getOrUndefined(parseTimestamp(range.acceptedBefore))
    if (after !== undefined && before !== undefined && after >= before) {
      return yield* Effect.fail(apiError("validation_failed", { details: [{ parameter: "accepted_before", code: "invalid_value", reason: "empty_range" }] }))
    }
    const where: Array<Where> = []
    if (after !== undefined) where.push({ field: "accepted_at", op: "gte", value: formatTimestamp(after) })
    if (before !== undefined) where.push({ field: "accepted_at", op: "lt", value: formatTimestamp(before) })
    return where
  })

export interface TermAcceptancesQuery extends AcceptanceRange {
  readonly legalTermId: string
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
  readonly userId: string | undefined
  /** `true`: acceptances of the term's current version only; `false`: of earlier versions only. */
  readonly current: boolean | undefined
}

/** A page of a term's acceptances, as records (the view depends on the caller). */
export const listTermAcceptances = (input: TermAcceptancesQuery) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    yield* requireParent(legalTermParent, { legal_term_id: input.legalTermId })
    const where: Array<Where> = [
      { field: "deleted", op: "eq", value: false },
      { field: "legal_term_id", op: "eq", value: input.legalTermId }
    ]
    if (input.userId !== undefined) where.push({ field: "user_id", op: "eq", value: input.userId })
    if (input.current !== undefined) {
      const term = yield* records.get(caller.tenant, LEGAL_TERM_TYPE, input.legalTermId).pipe(Effect.mapError(readUnavailable))
      const version = Number(term?.data.current_version ?? 0)
      where.push(input.current ? { field: "version", op: "eq", value: version } : { field: "version", op: "lt", value: version })
    }
    where.push(...(yield* rangeWhere(input)))
    return yield* paginate({
      tenant: caller.tenant,
      type: TERM_ACCEPTANCE_TYPE,
      where,
      sort: resourceSort(termAcceptances, input.sort),
      limit: input.limit,
      cursor: input.cursor,
      collection: `${termAcceptances.path}:${JSON.stringify([input.legalTermId, input.userId ?? null, input.current ?? null, input.acceptedAfter ?? null, input.acceptedBefore ?? null])}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  })

export interface UserTermAcceptancesQuery extends AcceptanceRange {
  readonly userId: string
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
}

/**
 * `GET /users/{user_id}/term-acceptances` (§4.3): the user's acceptances of every term, the
 * platform's and the products', as records. A missing or trashed user is 404. A policy limited
 * to some legal terms sees only their acceptances (before pagination).
 */
export const listUserTermAcceptances = (input: UserTermAcceptancesQuery) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const user = yield* records.get(caller.tenant, USER_TYPE, input.userId).pipe(Effect.mapError(readUnavailable))
    if (!user || user.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    const where: Array<Where> = [{ field: "user_id", op: "eq", value: input.userId }, ...(yield* rangeWhere(input))]
    const visible = visibleResources(caller.grant, `${termAcceptances.plural}.read`)
    if (visible !== "all") where.push({ field: "legal_term_id", op: "in", values: [...visible] })
    return yield* paginate({
      tenant: caller.tenant,
      type: TERM_ACCEPTANCE_TYPE,
      where,
      sort: resourceSort(termAcceptances, input.sort),
      limit: input.limit,
      cursor: input.cursor,
      collection: `/users/{user_id}/term-acceptances:${JSON.stringify([input.userId, input.acceptedAfter ?? null, input.acceptedBefore ?? null])}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  })
