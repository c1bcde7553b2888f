/**
 * Credentials (§2.3, §3, §4.3, §5 and open-points): issue, read, change, suspend, revoke,
 * rotate the secret, remove, and link administrators. Secrets are shown once and stored
 * only as a keyed hash plus `last4`.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { type ApiError, apiError, type DetailItem, fieldError, validationFailed, writeUnavailable, readUnavailable } from "../errors/errors.js"
import { requirePlanSlot } from "../limits/plan-limits.js"
import { Crypto } from "../ports/crypto.js"
import {
  type Environment,
  type Json,
  type JsonObject,
  Records,
  type RevisionConflict,
  type StoredRecord,
  StoreUnavailable,
  type UniqueViolation,
  type Tenant,
  joinUnitOfWork,
  UnitOfWork,
  type Where
} from "../ports/store.js"
import { idPrefixes, type IdKind, isId } from "../records/ids.js"
import { paginate } from "../records/pagination.js"
import { Enum, List, PublicId, Text, Timestamp } from "../records/schema.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"
import { REQUEST_TYPE, recordChange } from "../trail/audit.js"
import { Caller, Ids } from "./context.js"
import { CapabilityCatalog, type CapabilityCatalogShape, type Grant, MAX_POLICY_RESOURCES, type Policy } from "./policies.js"

export const CREDENTIAL_TYPE = "credential"
export const ADMINISTRATOR_TYPE = "administrator"
export const SECRET_HASH_KEY = "secret_hash"

export const secretPrefix: Record<Environment, string> = { production: "ck_live_", sandbox: "ck_test_" }
const SECRET_BODY_LENGTH = 40
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
/** The shape of a v3 secret; anything else is `unauthenticated` without a store lookup. */
export const secretPattern = /^ck_(live|test)_[0-9A-Za-z]{40}$/

/** Longest time a rotated-out secret may keep working, for a rolling deploy (7 days). */
export const MAX_ROTATION_GRACE_SECONDS = 7 * 24 * 3600

// ---------------------------------------------------------------------------------------
// Request bodies

export const PolicyInput = Schema.Struct({
  capabilities: Schema.optional(List(Text({ min: 1, max: 200 }))),
  template: Schema.optional(Text({ min: 1, max: 100 })),
  resources: Schema.optional(Schema.NullOr(List(Text({ min: 1, max: 64 }), MAX_POLICY_RESOURCES)))
}).annotations({ identifier: "PolicyInput" })
export type PolicyInput = typeof PolicyInput.Type

export const CreateCredentialBody = Schema.Struct({
  name: Text({ min: 1, max: 200 }),
  purpose: Schema.optional(Schema.NullOr(Text({ max: 1000 }))),
  auth_mode: Schema.optional(Enum("autonomous", "both", "human_required")),
  expires_at: Schema.optional(Schema.NullOr(Timestamp)),
  policies: Schema.optional(List(PolicyInput, 100))
}).annotations({ identifier: "CreateCredentialBody" })

export const UpdateCredentialBody = Schema.Struct({
  name: Schema.optional(Text({ min: 1, max: 200 })),
  purpose: Schema.optional(Schema.NullOr(Text({ max: 1000 }))),
  auth_mode: Schema.optional(Enum("autonomous", "both", "human_required")),
  /** `inactive` is the deprecated alias of `suspended` (§3). */
  status: Schema.optional(Enum("active", "suspended", "inactive", "revoked", "expired")),
  expires_at: Schema.optional(Schema.NullOr(Timestamp)),
  policies: Schema.optional(List(PolicyInput, 100))
}).annotations({ identifier: "UpdateCredentialBody" })

export const RotateSecretBody = Schema.Struct({
  /** How long the current secret keeps working after the rotation (default 0: it stops now). */
  grace_period_seconds: Schema.optional(
    Schema.Number.pipe(Schema.int(), Schema.between(0, MAX_ROTATION_GRACE_SECONDS))
  )
}).annotations({ identifier: "RotateSecretBody" })

export const LinkAdministratorBody = Schema.Struct({
  administrator_id: PublicId("administrator")
}).annotations({ identifier: "LinkAdministratorBody" })

// ---------------------------------------------------------------------------------------
// The stored record and its representation

export interface AdminLink {
  readonly administrator_id: string
  readonly linked_at: string
}

/** `expires_at`, with "never" as the far future, so that a store filter can find the expired ones. */
const NEVER = "9999-12-31T23:59:59.999Z"
const expirySort = (expiresAt: Json | undefined): string => (typeof expiresAt === "string" ? expiresAt : NEVER)

const str = (v: Json | undefined): string | null => (typeof v === "string" ? v : null)

/** The status a client sees: a credential past `expires_at` is `expired`. */
export const effectiveStatus = (data: JsonObject, now: number): string => {
  const status = str(data.status) ?? "active"
  if (status === "active" || status === "suspended") {
    const expiresAt = str(data.expires_at)
    if (expiresAt !== null && Date.parse(expiresAt) <= now) return "expired"
  }
  return status
}

/** The fields of the credential resource (§2.3), in the order they are written. */
const viewFields = [
  "object",
  "id",
  "name",
  "purpose",
  "auth_mode",
  "environment",
  "status",
  "created_at",
  "updated_at",
  "expires_at",
  "revoked_at",
  "created_by",
  "revoked_by",
  "human",
  "policy",
  "policies",
  "revision",
  "secret"
] as const

const secretFields = ["configured", "issued_at", "last4", "rotated_at", "valid_until", "version"] as const

/** The credential resource of §2.3. `secretValue` only in the responses that show it once. */
export const credentialView = (
  record: StoredRecord,
  now: number,
  options: { readonly secretValue?: string; readonly human?: JsonObject | null } = {}
): JsonObject => {
  const stored = record.data.secret as JsonObject
  const secret: Record<string, Json> = {}
  for (const field of secretFields) secret[field] = stored[field] ?? null
  if (options.secretValue !== undefined) secret.value = options.secretValue
  const computed: Record<string, Json> = {
    status: effectiveStatus(record.data, now),
    policies: policiesOf(record.data).map((p) => ({ capabilities: p.capabilities, template: p.template, resources: p.resources })) as Json,
    policy: { active_version: (record.data.policy as JsonObject).active_version!, auth_revision: (record.data.policy as JsonObject).auth_revision! },
    human: options.human ?? null,
    revision: record.revision,
    secret
  }
  const out: Record<string, Json> = {}
  for (const field of viewFields) out[field] = field in computed ? computed[field]! : (record.data[field] ?? null)
  return out
}

export const credentialEtag = (record: StoredRecord): string => `W/"credential:${record.id}:${record.revision}"`

// ---------------------------------------------------------------------------------------
// Helpers


export const newSecret = Effect.fn("newSecret")(function* (environment: Environment) {
  const crypto = yield* Crypto
  const bytes = crypto.randomBytes(SECRET_BODY_LENGTH * 2)
  let body = ""
  // Rejection sampling keeps every character equally likely.
  for (const byte of bytes) {
    if (byte < 248 && body.length < SECRET_BODY_LENGTH) body += base62[byte % 62]
  }
  while (body.length < SECRET_BODY_LENGTH) {
    const [byte] = crypto.randomBytes(1)
    if (byte !== undefined && byte < 248) body += base62[byte % 62]
  }
  const value = secretPrefix[environment] + body
  return { value, hash: crypto.hashSecret(value), last4: value.slice(-4) }
})

/** The stored record of a new credential. */
export const credentialData = (input: {
  readonly id: string
  readonly name: string
  readonly purpose: string | null
  readonly authMode: string
  readonly environment: Environment
  readonly expiresAt: string | null
  readonly createdBy: { readonly id: string; readonly kind: string }
  readonly policies: ReadonlyArray<Policy>
  readonly secret: { readonly hash: string; readonly last4: string }
  readonly administrators: ReadonlyArray<AdminLink>
  readonly now: number
}): JsonObject => {
  const at = formatTimestamp(input.now)
  const policies = input.policies as unknown as Json
  return {
    object: "credential",
    id: input.id,
    name: input.name,
    purpose: input.purpose,
    auth_mode: input.authMode,
    environment: input.environment,
    status: "active",
    created_at: at,
    updated_at: at,
    expires_at: input.expiresAt,
    expires_sort: expirySort(input.expiresAt),
    revoked_at: null,
    created_by: input.createdBy,
    revoked_by: null,
    policy: { active_version: 1, auth_revision: 1 },
    policies,
    secret: { configured: true, issued_at: at, last4: input.secret.last4, rotated_at: null, valid_until: input.expiresAt, version: 1 },
    secret_hash: input.secret.hash,
    previous_secret_hash: null,
    previous_secret_valid_until: null,
    policy_versions: [{ version: 1, policies, created_at: at }],
    administrators: input.administrators as unknown as Json
  }
}

const idKinds = Object.keys(idPrefixes) as ReadonlyArray<IdKind>
const isAnyPublicId = (id: string): boolean => idKinds.some((kind) => isId(kind, id))

/** Validate the policies of a request: known capabilities and templates, one of the two, well-formed IDs. */
export const validatePolicies = (
  inputs: ReadonlyArray<PolicyInput>,
  catalog: CapabilityCatalogShape
): Effect.Effect<ReadonlyArray<Policy>, ApiError<"validation_failed">> => {
  const details: Array<DetailItem> = []
  const policies = inputs.map((input, i): Policy => {
    const at = `policies[${i}]`
    const hasCaps = input.capabilities !== undefined
    const hasTemplate = input.template !== undefined
    if (hasCaps === hasTemplate) {
      details.push({ field: at, code: "invalid_value", reason: "capabilities_or_template" })
    }
    input.capabilities?.forEach((cap, j) => {
      if (!catalog.isCapability(cap)) details.push({ field: `${at}.capabilities[${j}]`, code: "invalid_value", reason: "unknown_capability" })
    })
    if (hasTemplate && catalog.findTemplate(input.template!) === undefined) {
      details.push({ field: `${at}.template`, code: "invalid_value", reason: "unknown_template" })
    }
    input.resources?.forEach((id, j) => {
      if (!isAnyPublicId(id)) details.push({ field: `${at}.resources[${j}]`, code: "invalid" })
    })
    return {
      capabilities: hasTemplate ? null : [...new Set(input.capabilities ?? [])].sort(),
      template: input.template ?? null,
      resources: input.resources === undefined || input.resources === null ? null : [...new Set(input.resources)].sort()
    }
  })
  return details.length > 0 ? Effect.fail(validationFailed(details)) : Effect.succeed(policies)
}

/** Read a credential of the caller's tenant, or 404. */
export const loadCredential = (tenant: Tenant, id: string) =>
  Effect.flatMap(Records, (records) => records.get(tenant, CREDENTIAL_TYPE, id)).pipe(
    Effect.mapError(readUnavailable),
    Effect.flatMap((record) => (record ? Effect.succeed(record) : Effect.fail(apiError("not_found"))))
  )

const policiesOf = (data: JsonObject): ReadonlyArray<Policy> => (data.policies ?? []) as unknown as ReadonlyArray<Policy>

/** What a stored credential grants: its id and revision name its policies (computed once per revision). */
export const credentialGrant = (credential: StoredRecord, catalog: CapabilityCatalogShape): Grant =>
  catalog.grantOf(policiesOf(credential.data), `${credential.id}:${credential.revision}`)

const parseExpiry = (text: string | null | undefined, now: number, field: string) => {
  if (text === undefined || text === null) return Effect.succeed(text ?? null)
  const ms = Option.getOrThrow(parseTimestamp(text))
  return ms <= now
    ? Effect.fail(fieldError("validation_failed", field, { reason: "must_be_in_the_future" }))
    : Effect.succeed(formatTimestamp(ms))
}

// ---------------------------------------------------------------------------------------
// Use cases

export const issueCredential = Effect.fn("Credentials.issue")(function* (body: typeof CreateCredentialBody.Type) {
  const caller = yield* Caller
  const records = yield* Records
  const ids = yield* Ids
  const catalog = yield* CapabilityCatalog
  const now = yield* Clock.currentTimeMillis

  const policies = yield* validatePolicies(body.policies ?? [], catalog)
  const excess = catalog.checkDelegation(caller.grant, policies)
  if (excess) return yield* Effect.fail(excess)
  const expiresAt = yield* parseExpiry(body.expires_at, now, "expires_at")

  const id = yield* ids.next("credential")
  const secret = yield* newSecret(caller.tenant.environment)
  const data = credentialData({
    id,
    name: body.name,
    purpose: body.purpose ?? null,
    authMode: body.auth_mode ?? "autonomous",
    environment: caller.tenant.environment,
    expiresAt,
    createdBy: { id: caller.human?.adminId ?? caller.credential.id, kind: caller.human ? "admin" : "credential" },
    policies,
    secret,
    administrators: [],
    now
  })

  // A failure of it fails the request: no savepoint of its own in the request's unit of work.
  const record = yield* joinUnitOfWork(
    Effect.gen(function* () {
      // The account's plan may cap the credentials of an environment (409 `plan_limit_reached`).
      yield* requirePlanSlot(caller.tenant, CREDENTIAL_TYPE)
      const stored = yield* records.insert(caller.tenant, CREDENTIAL_TYPE, id, data, [
        { name: SECRET_HASH_KEY, value: secret.hash, global: true }
      ])
      yield* recordChange("credential.created", { object: "credential", id })
      return stored
    })
  ).pipe(
    Effect.catchTags({
      StoreUnavailable: (e) => Effect.fail(writeUnavailable(e)),
      UniqueViolation: (e) => Effect.fail(apiError("internal_error", { internal: e }))
    })
  )
  return { record, view: credentialView(record, now, { secretValue: secret.value }) }
})

/** The store conditions of a status as clients see it (`expired` is derived from `expires_at`). */
const statusFilter = (status: string | undefined, now: string): ReadonlyArray<Where> => {
  const unexpired: Where = { field: "expires_sort", op: "gt", value: now }
  switch (status) {
    case undefined:
      return []
    case "expired":
      return [{ field: "status", op: "in", values: ["active", "suspended"] }, { field: "expires_sort", op: "lte", value: now }]
    case "revoked":
      return [{ field: "status", op: "eq", value: "revoked" }]
    default:
      return [{ field: "status", op: "eq", value: status }, unexpired]
  }
}

export const listCredentials = Effect.fn("Credentials.list")(function* (query: {
  readonly limit: number
  readonly cursor: string | undefined
  readonly status: string | undefined
  readonly sort: "created_at" | "-created_at" | undefined
}) {
  const caller = yield* Caller
  const now = yield* Clock.currentTimeMillis
  const visible = caller.grant.get("credentials.read")
  const where: Array<Where> = [
    ...statusFilter(query.status, formatTimestamp(now)),
    ...(visible !== undefined && visible !== "all" ? [{ field: "id", op: "in" as const, values: [...visible] }] : [])
  ]
  const sort = query.sort ?? "-created_at"
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: CREDENTIAL_TYPE,
    where,
    sort: { field: "created_at", kind: "text", direction: sort.startsWith("-") ? "desc" : "asc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `credentials?status=${query.status ?? ""}`
  }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  return { data: items.map((r) => credentialView(r, now)), page }
})

/** Apply a change to one credential in a unit of work with its audit entry; `If-Match` as `expectedRevision`. */
const changeCredential = <ChangeError extends ApiError>(
  id: string,
  action: string,
  expectedRevision: number | undefined,
  change: (record: StoredRecord, now: number) => Effect.Effect<JsonObject, ChangeError, Caller | Records | Crypto | Ids>
) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const uow = yield* UnitOfWork
    const now = yield* Clock.currentTimeMillis
    return yield* uow
      .transaction(
        Effect.gen(function* () {
          const current = yield* loadCredential(caller.tenant, id)
          if (expectedRevision !== undefined && current.revision !== expectedRevision) {
            return yield* Effect.fail(apiError("revision_mismatch"))
          }
          const next = yield* change(current, now)
          const uniques = [
            { name: SECRET_HASH_KEY, value: String(next.secret_hash), global: true },
            ...(typeof next.previous_secret_hash === "string"
              ? [{ name: "previous_" + SECRET_HASH_KEY, value: next.previous_secret_hash, global: true }]
              : [])
          ]
          const data = {
            ...next,
            ...retainedPolicyVersions(next, now),
            expires_sort: expirySort(next.expires_at),
            updated_at: formatTimestamp(now)
          }
          const saved = yield* records.update(caller.tenant, CREDENTIAL_TYPE, id, data, {
            expectedRevision: current.revision,
            uniques
          })
          yield* recordChange(action, { object: "credential", id })
          return saved
        })
      )
      .pipe(
        Effect.catchIf(
          (e): e is RevisionConflict | UniqueViolation | StoreUnavailable =>
            e._tag === "RevisionConflict" || e._tag === "UniqueViolation" || e._tag === "StoreUnavailable",
          (e) =>
            Effect.fail(
              e._tag === "RevisionConflict"
                ? apiError("revision_mismatch")
                : e._tag === "UniqueViolation"
                  ? apiError("internal_error", { internal: e })
                  : writeUnavailable(e)
            )
        )
      )
  })

/** Credential management on a revoked credential is 422 `credential_revoked` (§7). */
const requireNotRevoked = (record: StoredRecord) =>
  record.data.status === "revoked" ? Effect.fail(apiError("credential_revoked", { statusOverride: 422 })) : Effect.void

export const updateCredential = Effect.fn("Credentials.update")(function* (
  id: string,
  body: typeof UpdateCredentialBody.Type,
  expectedRevision: number | undefined
) {
  const caller = yield* Caller
  const catalog = yield* CapabilityCatalog
  const policies = body.policies === undefined ? undefined : yield* validatePolicies(body.policies, catalog)
  if (policies !== undefined) {
    const excess = catalog.checkDelegation(caller.grant, policies)
    if (excess) return yield* Effect.fail(excess)
  }
  return yield* changeCredential(id, "credential.updated", expectedRevision, (record, now) =>
    Effect.gen(function* () {
      yield* requireNotRevoked(record)
      const data = record.data
      const currentStatus = effectiveStatus(data, now)
      const requested = body.status === "inactive" ? "suspended" : body.status
      if (requested === "revoked" || requested === "expired") {
        return yield* Effect.fail(fieldError("invalid_transition", "status", { reason: requested === "revoked" ? "use_revocations" : "set_expires_at" }))
      }
      const expiresAt = body.expires_at === undefined ? str(data.expires_at) : yield* parseExpiry(body.expires_at, now, "expires_at")
      const stillExpired = expiresAt !== null && Date.parse(expiresAt) <= now
      if (requested === "active" && currentStatus === "expired" && stillExpired) {
        return yield* Effect.fail(fieldError("invalid_transition", "status", { reason: "expired" }))
      }
      const status = requested ?? str(data.status) ?? "active"
      const policy = data.policy as { active_version: number; auth_revision: number }
      const authChanged =
        policies !== undefined || status !== data.status || body.auth_mode !== undefined || body.expires_at !== undefined
      const versions = (data.policy_versions ?? []) as ReadonlyArray<Json>
      const nextVersion = policies !== undefined ? policy.active_version + 1 : policy.active_version
      return {
        ...data,
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.purpose !== undefined ? { purpose: body.purpose } : {}),
        ...(body.auth_mode !== undefined ? { auth_mode: body.auth_mode } : {}),
        status,
        expires_at: expiresAt,
        secret: { ...(data.secret as JsonObject), valid_until: expiresAt },
        policy: { active_version: nextVersion, auth_revision: policy.auth_revision + (authChanged ? 1 : 0) },
        ...(policies !== undefined
          ? {
              policies: policies as unknown as Json,
              policy_versions: [...versions, { version: nextVersion, policies: policies as unknown as Json, created_at: formatTimestamp(now) }]
            }
          : {})
      }
    })
  )
})

export const revokeCredential = Effect.fn("Credentials.revoke")(function* (id: string) {
  const caller = yield* Caller
  return yield* changeCredential(id, "credential.revoked", undefined, (record, now) =>
    Effect.gen(function* () {
      yield* requireNotRevoked(record)
      const policy = record.data.policy as { active_version: number; auth_revision: number }
      return {
        ...record.data,
        status: "revoked",
        revoked_at: formatTimestamp(now),
        revoked_by: { id: caller.human?.adminId ?? caller.credential.id, kind: caller.human ? "admin" : "credential" },
        policy: { ...policy, auth_revision: policy.auth_revision + 1 }
      }
    })
  )
})

export const rotateSecret = Effect.fn("Credentials.rotateSecret")(function* (
  id: string,
  body: typeof RotateSecretBody.Type
) {
  const caller = yield* Caller
  let shown = ""
  const record = yield* changeCredential(id, "credential.secret_rotated", undefined, (current, now) =>
    Effect.gen(function* () {
      yield* requireNotRevoked(current)
      const secret = yield* newSecret(caller.tenant.environment)
      shown = secret.value
      const grace = body.grace_period_seconds ?? 0
      const previous = current.data.secret as JsonObject
      const policy = current.data.policy as { active_version: number; auth_revision: number }
      return {
        ...current.data,
        secret: {
          ...previous,
          issued_at: formatTimestamp(now),
          rotated_at: formatTimestamp(now),
          last4: secret.last4,
          version: Number(previous.version ?? 1) + 1
        },
        secret_hash: secret.hash,
        previous_secret_hash: grace > 0 ? current.data.secret_hash ?? null : null,
        previous_secret_valid_until: grace > 0 ? formatTimestamp(now + grace * 1000) : null,
        policy: { ...policy, auth_revision: policy.auth_revision + 1 }
      }
    })
  )
  const now = yield* Clock.currentTimeMillis
  return { record, view: credentialView(record, now, { secretValue: shown }) }
})

/** Permanent removal, only for a credential that never made a call (else only revocable). */
export const deleteCredential = Effect.fn("Credentials.delete")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const uow = yield* UnitOfWork
  yield* uow
    .transaction(
      Effect.gen(function* () {
        yield* loadCredential(caller.tenant, id)
        const used = yield* records.count(caller.tenant, REQUEST_TYPE, [{ field: "credential_id", op: "eq", value: id }], [])
        if ((used[0]?.count ?? 0) > 0) return yield* Effect.fail(apiError("credential_not_removable"))
        yield* records.remove(caller.tenant, CREDENTIAL_TYPE, id)
        yield* recordChange("credential.deleted", { object: "credential", id })
      })
    )
    .pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(writeUnavailable(e))))
})

/** Previous policy versions are kept 365 days (§8.3); the active one always. */
export const POLICY_VERSION_RETENTION_MS = 365 * 24 * 3600 * 1000

/** A previous version is shown (and kept) while it is younger than 365 days; the active one always. */
const isRetainedVersion = (version: { readonly version: number; readonly created_at: string }, active: number, now: number): boolean =>
  version.version === active || Date.parse(version.created_at) >= now - POLICY_VERSION_RETENTION_MS

/**
 * Retention (§8.3): every write of a credential also drops the previous policy versions past
 * their 365 days from the document (reads already hide them). A credential never written
 * again keeps them stored, hidden.
 */
const retainedPolicyVersions = (data: JsonObject, now: number): { readonly policy_versions?: Json } => {
  const versions = data.policy_versions
  const active = (data.policy as { active_version?: number } | undefined)?.active_version
  if (!Array.isArray(versions) || typeof active !== "number") return {}
  const typed = versions as unknown as ReadonlyArray<{ version: number; created_at: string }>
  const kept = typed.filter((v) => isRetainedVersion(v, active, now))
  return kept.length === typed.length ? {} : { policy_versions: kept as unknown as Json }
}

/** `GET /credentials/{id}/policy-versions`: the policies the credential has had, newest first. */
export const listPolicyVersions = Effect.fn("Credentials.listPolicyVersions")(function* (id: string) {
  const caller = yield* Caller
  const now = yield* Clock.currentTimeMillis
  const record = yield* loadCredential(caller.tenant, id)
  const active = (record.data.policy as { active_version: number }).active_version
  const versions = (record.data.policy_versions ?? []) as unknown as ReadonlyArray<{
    version: number
    policies: ReadonlyArray<Policy>
    created_at: string
  }>
  return versions
    .filter((v) => isRetainedVersion(v, active, now))
    .map((v) => ({
      object: "policy_version",
      credential_id: id,
      version: v.version,
      active: v.version === active,
      policies: v.policies.map((p) => ({ capabilities: p.capabilities, template: p.template, resources: p.resources })) as unknown as Json,
      created_at: v.created_at
    }))
    .reverse()
})

// ---------------------------------------------------------------------------------------
// Administrator links (human mode eligibility)

const adminLinks = (data: JsonObject): ReadonlyArray<AdminLink> => (data.administrators ?? []) as unknown as ReadonlyArray<AdminLink>

/** Administrators live at the account level, beside the production environment. */
export const accountTenant = (tenant: Tenant): Tenant => ({ accountId: tenant.accountId, environment: "production" })

const linkView = (credentialId: string, link: AdminLink, admin: StoredRecord | undefined): JsonObject => ({
  object: "credential_administrator",
  id: link.administrator_id,
  credential_id: credentialId,
  name: admin ? str(admin.data.name) : null,
  email: admin ? str(admin.data.email) : null,
  linked_at: link.linked_at
})

export const listAdministratorLinks = Effect.fn("Credentials.listAdministrators")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const record = yield* loadCredential(caller.tenant, id)
  const links = adminLinks(record.data)
  const admins = yield* Effect.forEach(links, (link) =>
    records.get(accountTenant(caller.tenant), ADMINISTRATOR_TYPE, link.administrator_id)
  ).pipe(Effect.mapError(readUnavailable))
  return links.map((link, i) => linkView(id, link, admins[i]))
})

export const linkAdministrator = Effect.fn("Credentials.linkAdministrator")(function* (
  id: string,
  body: typeof LinkAdministratorBody.Type
) {
  const caller = yield* Caller
  const records = yield* Records
  const admin = yield* records
    .get(accountTenant(caller.tenant), ADMINISTRATOR_TYPE, body.administrator_id)
    .pipe(Effect.mapError(readUnavailable))
  if (admin === undefined || admin.data.status === "removed") {
    return yield* Effect.fail(fieldError("validation_failed", "administrator_id", { reason: "not_found" }))
  }
  let link: AdminLink | undefined
  const record = yield* changeCredential(id, "credential.administrator_linked", undefined, (current, now) =>
    Effect.gen(function* () {
      yield* requireNotRevoked(current)
      const links = adminLinks(current.data)
      if (links.some((l) => l.administrator_id === body.administrator_id)) {
        return yield* Effect.fail(fieldError("already_exists", "administrator_id"))
      }
      link = { administrator_id: body.administrator_id, linked_at: formatTimestamp(now) }
      return { ...current.data, administrators: [...links, link] as unknown as Json }
    })
  )
  return linkView(record.id, link!, admin)
})

export const unlinkAdministrator = Effect.fn("Credentials.unlinkAdministrator")(function* (id: string, administratorId: string) {
  yield* changeCredential(id, "credential.administrator_unlinked", undefined, (current) => {
    const links = adminLinks(current.data)
    if (!links.some((l) => l.administrator_id === administratorId)) return Effect.fail(apiError("not_found"))
    return Effect.succeed({
      ...current.data,
      administrators: links.filter((l) => l.administrator_id !== administratorId) as unknown as Json
    })
  })
})

export { StoreUnavailable }
