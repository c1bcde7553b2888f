/**
 * Custom domains of an account (`dom_`, release 3.2.0, open-points routes `/domains`,
 * `/domains/{domain_id}`, `POST /domains/{domain_id}/verifications`): the host names on which
 * the account's administrators sign in (§5.2 step 5) besides `<subdomain>.<platform host>`.
 * Decisions (also in docs/domains.md and the OpenAPI description), as Vercel, GitHub Pages and
 * Shopify handle custom domains:
 *
 * - **Production only.** A domain serves the account's live site; the sandbox has no domains of
 *   its own (its list is empty; a create there is 422 `domain_rule_violation`, reason
 *   `sandbox_environment`), and the sandbox reset never touches them.
 * - **Host name.** Lower-cased (one trailing dot dropped), a DNS host name of at least two
 *   labels (letters, digits, hyphens; labels of 1 to 63, at most 233 in all, so that its
 *   challenge's name fits DNS's 253; a top-level label starting with a letter), never an IP
 *   address (422 `validation_failed` on `hostname`). Nothing under the platform's own host
 *   (`PlatformHost`: the subdomains are the platform's): 422 `domain_rule_violation`, reason
 *   `platform_host`. Special-use names (RFC 6761 and friends: `localhost`, `.local`, `.test`,
 *   `.invalid`, `.example`, `.internal` with the clouds' metadata names, …) and `xn--` labels
 *   that are not valid punycode of a valid IDN (or other labels with `--` at 3–4, reserved by
 *   IDNA 2008) are 422 on `hostname` with the reason. It never changes: to use another one,
 *   add it and remove the old one.
 * - **Claims and ownership.** A name is unique in an account (409 `already_exists`). Across
 *   accounts, a pending or failed domain is a claim that holds nothing: another account may
 *   claim the same name, and the first to verify owns it (the global unique key of
 *   `verified_hostname`, taken in the unit of work of the verification): from then on a create
 *   of it anywhere else is 409 `already_exists`, and the other claims' verifications fail
 *   (`verified_elsewhere`). So a squatter's pending claim never keeps the real owner out, and
 *   verified ownership wins over it. A claim not verified within 7 days of its creation lapses:
 *   its verification fails without a lookup (`claim_expired`; remove it and add it again).
 * - **Verification.** A DNS TXT record `_syllabus-challenge.<hostname>` whose value is
 *   `syllabus-verification=<token>` (a random token, shown in `verification`; it proves control
 *   of the name and is published in DNS, so it is not a secret). `POST …/verifications` reads it
 *   through the `DnsResolver` port, outside any unit of work (a network call never holds a
 *   transaction open): found → `active` (`verified_at`, event `domain.verified`); not found, a
 *   different value or no answer → `failed` with `verification.failure_reason` (event
 *   `domain.failed`). A failed domain may be verified again; an active one is 422
 *   `invalid_transition` (reason `from_active`): once verified it stays active.
 * - **Primary.** Exactly one primary among the active domains when there is any: the first one
 *   to become active is primary; `PATCH { primary: true }` on another active one moves it (the
 *   previous primary is changed in the same unit of work, with its own `domain.updated`). Only
 *   an active domain can be primary (422 `domain_rule_violation`, reason `not_active`); the
 *   primary cannot be unset by itself (reason `primary_required`: make another one primary).
 * - **Removal.** DELETE removes the domain for good (204) and frees its host name at once, for
 *   this account or another: no trash, since a trashed domain would keep its host name taken.
 *   The primary cannot be removed while another domain is active (reason `primary_domain`:
 *   move the primary first); the last active one can, and sign-in falls back to the subdomain.
 */
import { Clock, Context, Effect, Option, Schema } from "effect"
import { Caller } from "../access/context.js"
import { ACCOUNT_TYPE, accountHome } from "../access/accounts.js"
import { apiError, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { Crypto } from "../ports/crypto.js"
import { DnsResolver, type TxtLookup } from "../ports/dns.js"
import { type JsonObject, Records, type StoredRecord, type Tenant, UnitOfWork, type Where } from "../ports/store.js"
import {
  defineResource,
  equalsFilter,
  getResource,
  recordResourceChange,
  type ResourceDefinition,
  resourceView,
  saveResource
} from "../records/resource.js"
import { Bool, Enum } from "../records/schema.js"
import { DAY, formatTimestamp, parseTimestamp } from "../records/time.js"
import { recordChange } from "../trail/audit.js"
import { decodePunycode } from "./punycode.js"

export const DOMAIN_TYPE = "domain"

/** The name of the domain's challenge record, and the prefix of its value. */
export const CHALLENGE_LABEL = "_syllabus-challenge"
const CHALLENGE_VALUE_PREFIX = "syllabus-verification="

/**
 * The platform's own host (`<subdomain>.<host>` are the accounts' addresses): no custom domain
 * may be it or under it. Set by the assembling layer (`syllabusLayer`'s `platformHost`); null
 * when the deployment has none configured.
 */
export class PlatformHost extends Context.Reference<PlatformHost>()("@syllabus/core/PlatformHost", {
  defaultValue: (): { readonly host: string | null } => ({ host: null })
}) {}

export const domainStatuses = ["pending", "active", "failed"] as const
export type DomainStatus = (typeof domainStatuses)[number]

/** Why a verification failed (`verification.failure_reason`). */
export const verificationFailures = ["record_not_found", "record_mismatch", "lookup_failed", "verified_elsewhere", "claim_expired"] as const

/** How long a claim may stay unverified (`claim_expired` after). */
export const CLAIM_LAPSE_MS = 7 * DAY

/** The field holding an active domain's host name under the global unique key (not in the representation). */
const OWNED_KEY = "verified_hostname"

// ---------------------------------------------------------------------------------------
// The host name

/** A DNS name holds at most 253 characters: the challenge's name (`_syllabus-challenge.` and the host name) must fit. */
const HOSTNAME_MAX = 253 - CHALLENGE_LABEL.length - 1
const label = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

/** Lower case, one trailing dot dropped: the form a host name is stored and compared in. */
export const normalizeHostname = (text: string): string => text.toLowerCase().replace(/\.$/, "")

/** Is this a DNS host name of at least two labels, and not an IP address? */
export const isCustomHostname = (text: string): boolean => {
  const name = normalizeHostname(text)
  if (name.length === 0 || name.length > HOSTNAME_MAX) return false
  const labels = name.split(".")
  // The top-level label starts with a letter (as every top-level domain does), so an IPv4
  // address is no host name; an IPv6 address has colons, which no label holds.
  return labels.length >= 2 && labels.every((l) => label.test(l)) && /^[a-z]/.test(labels.at(-1)!)
}

/**
 * Special-use and private-use names (RFC 6761, 6762, 7686, 8375, 9476, ICANN's `.internal`):
 * they never resolve publicly (or resolve to this host), so nobody can own them. The cloud
 * metadata names (`metadata.google.internal`, `instance-data.ec2.internal`) are under `.internal`.
 */
const SPECIAL_USE_SUFFIXES = ["localhost", "local", "test", "invalid", "example", "internal", "onion", "alt", "home.arpa", "localdomain", "lan", "intranet", "corp", "private"]

/** Is this (normalized) name special-use, or under one? */
export const isSpecialUseName = (name: string): boolean => SPECIAL_USE_SUFFIXES.some((s) => name === s || name.endsWith(`.${s}`))

/**
 * IDNA 2008 for an ASCII label: an `xn--` label must be punycode that decodes to non-ASCII
 * letters, marks and digits (and hyphens) and encodes back to itself; any other label with
 * `--` at positions 3–4 is reserved (RFC 5891 §4.2.3.1).
 */
const validIdnaLabel = (ascii: string): boolean => {
  if (ascii.slice(2, 4) !== "--") return true
  if (!ascii.startsWith("xn--")) return false
  const unicode = decodePunycode(ascii.slice(4))
  if (unicode === undefined || !/[^\x00-\x7f]/.test(unicode)) return false
  // Letters, marks and digits (IDNA 2008's PVALID, near enough: no symbols, no emoji), in NFC,
  // and the platform's IDNA (UTS 46, in `URL`) encodes it back to the same label.
  if (!/^[\p{L}\p{M}\p{N}-]+$/u.test(unicode) || unicode !== unicode.normalize("NFC")) return false
  const encoded = URL.canParse(`http://${unicode}.example/`) ? new URL(`http://${unicode}.example/`).hostname : ""
  return encoded === `${ascii}.example`
}

/** Why a well-formed host name cannot be claimed, if it cannot (the `reason` of its 422 item). */
export const hostnameProblem = (text: string): "special_use" | "invalid_idn" | undefined => {
  const name = normalizeHostname(text)
  if (isSpecialUseName(name)) return "special_use"
  return name.split(".").every(validIdnaLabel) ? undefined : "invalid_idn"
}

/**
 * The form `isCustomHostname` accepts (but the length), for the description: two labels or
 * more, the last starting with a letter, one trailing dot allowed.
 */
const HOSTNAME_PATTERN = "^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.?$"

const Hostname = Schema.String.annotations({ message: () => "invalid_type|expected=string" }).pipe(
  Schema.filter((s) => s.length <= HOSTNAME_MAX + 1 || `too_long|max=${HOSTNAME_MAX}`),
  Schema.filter((s) => isCustomHostname(s) || "invalid_value|expected=a DNS host name (not an IP address)"),
  Schema.filter((s) => {
    const reason = hostnameProblem(s)
    return reason === undefined || `invalid_value|reason=${reason}`
  }),
  Schema.annotations({
    description:
      "A DNS host name of at least two labels (e.g. `learn.example.com`; labels of 1 to 63 letters, digits or hyphens, the last starting with a letter, at most 233 characters in all so that its challenge's name fits DNS's 253), stored in lower case; not an IP address, not under the platform's own host; not a special-use name (`localhost`, `.local`, `.test`, `.invalid`, `.example`, `.internal`, …: reason `special_use`); an `xn--` label must be valid punycode of a valid IDN (reason `invalid_idn`). Unique in the account; across accounts, once another account verified it (409 `already_exists`). Never changes.",
    jsonSchema: { type: "string", format: "hostname", pattern: HOSTNAME_PATTERN, maxLength: HOSTNAME_MAX + 1 }
  })
)

/** Is `hostname` the platform's own host or under it? */
const underPlatformHost = (hostname: string, platformHost: string | null): boolean => {
  if (platformHost === null || platformHost === "") return false
  const host = normalizeHostname(platformHost)
  return hostname === host || hostname.endsWith(`.${host}`)
}

const ruleViolated = (reason: string, field?: string) =>
  apiError("domain_rule_violation", {
    reason,
    ...(field ? { details: [{ field, code: "domain_rule_violation" as const, reason }] } : {})
  })

// ---------------------------------------------------------------------------------------
// The representation

const nullableTimestamp = (description: string) =>
  Schema.NullOr(Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })).annotations({ description })

const Verification = Schema.Struct({
  method: Schema.Literal("dns_txt").annotations({ description: "How control of the name is proven: a DNS TXT record." }),
  record_type: Schema.Literal("TXT"),
  record_name: Schema.String.annotations({ description: "The name of the TXT record to publish: `_syllabus-challenge.<hostname>`." }),
  record_value: Schema.String.annotations({
    description: "The value it must hold: `syllabus-verification=<token>`, a random token of this domain (not a secret: it is published in DNS)."
  }),
  checked_at: nullableTimestamp("When the record was last looked up (`POST /domains/{domain_id}/verifications`), or null."),
  failure_reason: Schema.NullOr(Schema.Literal(...verificationFailures)).annotations({
    description:
      "Why the last verification failed: `record_not_found` (no such name, or no TXT record there), `record_mismatch` (TXT records there, none with the value), `lookup_failed` (DNS gave no answer), `verified_elsewhere` (another account verified the name first: it owns it), `claim_expired` (not verified within 7 days of its creation: remove it and add it again); null when it did not fail."
  })
}).annotations({ identifier: "DomainVerification" })

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

// ---------------------------------------------------------------------------------------
// Rules

/** The active domain that owns a host name, in any account, through the global unique key (one read). */
const ownerOf = (hostname: string) =>
  Effect.flatMap(Records, (records) =>
    records.findUnique("global", DOMAIN_TYPE, { name: OWNED_KEY, value: hostname }).pipe(
      Effect.mapError(readUnavailable),
      Effect.map((found) => (found && found.type === DOMAIN_TYPE && found.data.status === "active" ? found : undefined))
    )
  )

const live: Where = { field: "deleted", op: "eq", value: false }

/** The account's active domains, counted through the index of `status`. */
const activeCount = Effect.gen(function* () {
  const caller = yield* Caller
  const records = yield* Records
  const groups = yield* records
    .count(caller.tenant, DOMAIN_TYPE, [live, { field: "status", op: "eq", value: "active" }], [])
    .pipe(Effect.mapError(readUnavailable))
  return groups[0]?.count ?? 0
})

/** The primary domains of a tenant (at most one, unless a rule here is broken), through the index of `primary`. */
const primaries = (tenant: Tenant) =>
  Effect.flatMap(Records, (records) =>
    records
      .list(tenant, DOMAIN_TYPE, {
        where: [live, { field: "primary", op: "eq", value: true }],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: 10
      })
      .pipe(Effect.mapError(readUnavailable))
  )

/** Another domain became primary: the previous one is not, in the same unit of work. */
const demoteOthers = (primary: StoredRecord) =>
  Effect.gen(function* () {
    const others = (yield* primaries(primary.tenant)).filter((record) => record.id !== primary.id)
    yield* Effect.forEach(
      others,
      (other) =>
        Effect.gen(function* () {
          const saved = yield* saveResource(domains, other, { ...other.data, primary: false }, undefined)
          yield* recordResourceChange(domains, "updated", resourceView(domains, saved), resourceView(domains, other))
        }),
      { discard: true }
    )
  })

export const domains: ResourceDefinition = defineResource({
  type: DOMAIN_TYPE,
  idKind: "domain",
  plural: "domains",
  path: "/domains",
  tag: "Account",
  fields: {
    hostname: Schema.String.annotations({ description: "The host name, in lower case." }),
    status: Schema.Literal(...domainStatuses).annotations({
      description:
        "`pending` until verified; `active` once its TXT record was found (it stays active); `failed` when the last verification did not find it (verify again)."
    }),
    primary: Schema.Boolean.annotations({
      description:
        "The address administrators are sent to for sign-in (human mode) and shown on the confirmation screen. Exactly one active domain is primary; the first to become active is."
    }),
    verification: Verification,
    verified_at: nullableTimestamp("When the domain became active, or null.")
  },
  create: Schema.Struct({ hostname: Hostname }),
  update: Schema.Struct({
    primary: optional(
      Bool.annotations({
        description: "`true` makes this active domain the primary one (the previous primary is no longer); `false` is accepted only on a domain that is not primary."
      })
    )
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      if (context.tenant.environment !== "production") return yield* Effect.fail(ruleViolated("sandbox_environment"))
      const hostname = normalizeHostname(body.hostname)
      if (underPlatformHost(hostname, (yield* PlatformHost).host)) return yield* Effect.fail(ruleViolated("platform_host", "hostname"))
      // Another account's claim holds nothing; its verified domain owns the name.
      if ((yield* ownerOf(hostname)) !== undefined) return yield* Effect.fail(fieldError("already_exists", "hostname"))
      const token = Buffer.from((yield* Crypto).randomBytes(24)).toString("base64url")
      return {
        hostname,
        status: "pending",
        primary: false,
        verification: {
          method: "dns_txt",
          record_type: "TXT",
          record_name: `${CHALLENGE_LABEL}.${hostname}`,
          record_value: `${CHALLENGE_VALUE_PREFIX}${token}`,
          checked_at: null,
          failure_reason: null
        },
        verified_at: null
      }
    }),
  change: (current, patch) =>
    Effect.gen(function* () {
      if (patch.primary === true && current.status !== "active") return yield* Effect.fail(ruleViolated("not_active", "primary"))
      if (patch.primary === false && current.primary === true) return yield* Effect.fail(ruleViolated("primary_required", "primary"))
      return patch.primary === undefined ? current : { ...current, primary: patch.primary }
    }),
  rules: {
    afterUpdate: (before, after) => (before.data.primary !== true && after.data.primary === true ? demoteOthers(after) : Effect.void),
    beforeDelete: (record) =>
      Effect.gen(function* () {
        if (record.data.primary === true && (yield* activeCount) > 1) return yield* Effect.fail(ruleViolated("primary_domain"))
      })
  },
  // In the account, every claim; across accounts, only a verified one (`OWNED_KEY`).
  unique: ["hostname"],
  uniqueAcrossAccounts: [OWNED_KEY],
  trash: false,
  revision: "string",
  filters: {
    status: equalsFilter("status", Enum(...domainStatuses), "Only the domains in this status."),
    primary: {
      schema: Schema.Literal("true", "false"),
      where: (value: never) => [{ field: "primary", op: "eq", value: (value as string) === "true" }],
      on: { field: "primary", match: "equals" },
      description: "`true`: only the primary domain; `false`: the others."
    }
  },
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "hostname", field: "hostname", kind: "text" }
  ],
  search: ["hostname"],
  writeErrors: ["already_exists", "domain_rule_violation"],
  // Served by `@syllabus/http` routes/domains.ts, with the verification and their own words.
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

// ---------------------------------------------------------------------------------------
// Verification

/** What a lookup says of a domain's challenge. */
const verdict = (lookup: TxtLookup, expected: string): (typeof verificationFailures)[number] | null => {
  switch (lookup.outcome) {
    case "found":
      return lookup.records.some((value) => value.trim() === expected) ? null : "record_mismatch"
    case "not_found":
      return "record_not_found"
    case "unavailable":
      return "lookup_failed"
  }
}

/**
 * `POST /domains/{domain_id}/verifications`: look the challenge up (outside any unit of work),
 * then record the outcome in one: `active` (and primary when no other domain is) with
 * `domain.verified`, or `failed` with its reason and `domain.failed`. A verification that
 * finds the domain already active (a concurrent one won) answers it as it is.
 */
export const verifyDomain = Effect.fn("Domains.verify")(function* (id: string) {
  const uow = yield* UnitOfWork
  const dns = yield* DnsResolver
  const before = yield* getResource(domains, {}, id)
  if (before.data.status === "active") return yield* Effect.fail(apiError("invalid_transition", { reason: "from_active" }))
  const verification = before.data.verification as JsonObject
  // A lapsed claim is not looked up: it cannot become active any more.
  const createdAt = Option.getOrElse(parseTimestamp(String(before.data.created_at)), () => 0)
  const lapsed = (yield* Clock.currentTimeMillis) - createdAt > CLAIM_LAPSE_MS
  const found = lapsed ? "claim_expired" : verdict(yield* dns.resolveTxt(String(verification.record_name)), String(verification.record_value))
  const record = (failure: (typeof verificationFailures)[number] | null) =>
    Effect.gen(function* () {
        const current = yield* getResource(domains, {}, id)
        if (current.data.status === "active") return current
        const caller = yield* Caller
        const at = formatTimestamp(yield* Clock.currentTimeMillis)
        // Proven, but another account proved it first: that account owns the name.
        const owner = failure === null ? yield* ownerOf(String(current.data.hostname)) : undefined
        if (owner !== undefined && owner.id !== id) failure = "verified_elsewhere"
        const checked = { ...(current.data.verification as JsonObject), checked_at: at, failure_reason: failure }
        const primary = failure === null && (yield* primaries(caller.tenant)).length === 0
        const data: JsonObject =
          failure === null
            ? { ...current.data, status: "active", primary, verified_at: at, verification: checked, [OWNED_KEY]: String(current.data.hostname) }
            : { ...current.data, status: "failed", verification: checked }
        const saved = yield* saveResource(domains, current, data, current.revision)
        const verb = failure === null ? "verified" : "failed"
        const after = resourceView(domains, saved)
        yield* recordChange(`${DOMAIN_TYPE}.${verb}`, { object: DOMAIN_TYPE, id })
        yield* emitEvent(`${DOMAIN_TYPE}.${verb}`, after, previousAttributes(resourceView(domains, current), after))
        return saved
      })
  const inUnit = (failure: (typeof verificationFailures)[number] | null) =>
    uow.transaction(record(failure)).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(writeUnavailable(e))))
  return yield* inUnit(found).pipe(
    // Another account's verification of the name committed first (its global key): this one failed.
    Effect.catchIf(
      (error) => found === null && error.code === "already_exists",
      () => inUnit("verified_elsewhere")
    )
  )
})

/** Events of a domain besides its lifecycle (`registry/event-types.ts`). */
export const domainEventVerbs = ["verified", "failed"] as const

// ---------------------------------------------------------------------------------------
// Sign-in on a custom domain (§5.2 step 5)

/**
 * The account an active custom domain belongs to, through the host name's global unique key
 * (one read, never a scan); undefined for a name no active domain holds.
 */
export const accountOfDomain = (hostname: string) =>
  Effect.gen(function* () {
    const records = yield* Records
    const name = normalizeHostname(hostname)
    if (!isCustomHostname(name)) return undefined
    const domain = yield* records.findUnique("global", DOMAIN_TYPE, { name: OWNED_KEY, value: name })
    if (!domain || domain.type !== DOMAIN_TYPE || domain.data.status !== "active") return undefined
    const accountId = domain.tenant.accountId
    return yield* records.get(accountHome(accountId), ACCOUNT_TYPE, accountId)
  })

/** The host name of the account's primary active domain, if it has one. */
export const primaryDomainOf = (accountId: string) =>
  Effect.map(primaries(accountHome(accountId)), (found) => {
    const primary = found.find((record) => record.data.status === "active")
    return primary === undefined ? undefined : String(primary.data.hostname)
  })
