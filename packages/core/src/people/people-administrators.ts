/**
 * Administrators (3.1.0): the people who sign in for human mode (§5.2) with email, password
 * and a TOTP second factor (open-points "Human mode"). They belong to the account, not to an
 * environment: their records live in the account's production tenant (`accountTenant`, as
 * `openAccount` stores the first one) and every environment reads and writes the same ones.
 * The audit entry and event of a change are recorded where the call was made, beside its
 * request log entry.
 *
 * The password is write-only; its hash and the factor secrets are stored but never shown.
 * A factor is enrolled in two steps: an enrollment shows a new secret once (pending), a
 * confirmation with a current code turns it on. Removing an administrator keeps the record
 * (`status: removed`, so audit entries keep naming it), frees the email, drops the password
 * and factor, and ends human mode: its links to credentials of every environment go (§5.4).
 */
import { Clock, Effect, Schema } from "effect"
import { loadAccount } from "../access/accounts.js"
import { Caller, type CallerInfo, Ids } from "../access/context.js"
import { accountTenant, ADMINISTRATOR_TYPE, CREDENTIAL_TYPE } from "../access/credentials.js"
import { apiError, fieldError, writeUnavailable, readUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { requirePlanSlot } from "../limits/plan-limits.js"
import { Crypto } from "../ports/crypto.js"
import { environments, type JsonObject, Records, type StoredRecord, type Where } from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import { defineResource, representationFields, resourceView } from "../records/resource.js"
import { Enum, Text, Timestamp } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"
import { recordChange } from "../trail/audit.js"
import { allRecords } from "./people-custom-fields.js"
import { Email } from "./people-users.js"
import { acceptedTotpCodes, base32Encode, TOTP_DIGITS, TOTP_STEP_SECONDS } from "./totp.js"


/** An administrator's password, wherever one is set (the API, and the server's `create-account`). */
export const PASSWORD_LENGTH = { min: 12, max: 256 } as const
export const AdministratorPassword = Text(PASSWORD_LENGTH).annotations({ description: "Write-only; at least 12 characters." })
const Password = AdministratorPassword

export const CreateAdministratorBody = Schema.Struct({
  email: Email,
  name: Text({ min: 1, max: 200 }),
  password: Password
})
export const UpdateAdministratorBody = Schema.Struct({
  email: Schema.optional(Email),
  name: Schema.optional(Text({ min: 1, max: 200 })),
  password: Schema.optional(Password)
})
export const ConfirmTwoFactorBody = Schema.Struct({
  code: Schema.String.pipe(
    Schema.filter((s) => new RegExp(`^\\d{${TOTP_DIGITS}}$`).test(s) || `invalid_value|expected=${TOTP_DIGITS} digits`),
    Schema.annotations({ jsonSchema: { type: "string", pattern: `^\\d{${TOTP_DIGITS}}$` } })
  ).annotations({ description: "The current code of the authenticator app." })
})

/**
 * A password as a use case takes it: as sent, or already hashed. A batch item is stored for
 * 30 days before and after it runs, so a batch hashes the password when it is started
 * (`hashAdministratorPassword`) and its item never holds the password itself.
 */
type PasswordInput = { readonly password: string } | { readonly password_hash: string }
export type CreateAdministratorInput = Omit<typeof CreateAdministratorBody.Type, "password"> & PasswordInput
export type UpdateAdministratorInput = Omit<typeof UpdateAdministratorBody.Type, "password"> & Partial<PasswordInput>

const passwordHashOf = (input: Partial<PasswordInput>) =>
  Effect.map(Crypto, (crypto) =>
    "password_hash" in input && typeof input.password_hash === "string"
      ? input.password_hash
      : "password" in input && typeof input.password === "string"
        ? crypto.hashPassword(input.password)
        : undefined
  )

/** The body with `password` replaced by its hash (what a batch stores of an item). */
export const hashAdministratorPassword = (body: JsonObject) =>
  Effect.map(Crypto, (crypto): JsonObject => {
    if (typeof body.password !== "string") return body
    const { password, ...rest } = body
    return { ...rest, password_hash: crypto.hashPassword(password) }
  })

const newAdministratorFields = (body: Omit<typeof CreateAdministratorBody.Type, "password">) =>
  Effect.succeed({ email: body.email.toLowerCase(), name: body.name, status: "active", last_sign_in_at: null })

export const administrators = defineResource({
  type: ADMINISTRATOR_TYPE,
  idKind: "administrator",
  plural: "administrators",
  path: "/administrators",
  tag: "People",
  fields: {
    email: Schema.String.annotations({ description: "Unique among the account's administrators that are not removed; lowercased." }),
    name: Schema.String,
    status: Schema.Literal("active", "removed"),
    two_factor: Schema.Struct({ enabled: Schema.Boolean, enrolled_at: Schema.NullOr(Timestamp) }),
    last_sign_in_at: Schema.NullOr(Timestamp)
  },
  create: CreateAdministratorBody,
  update: UpdateAdministratorBody,
  defaults: newAdministratorFields,
  unique: ["email"],
  trash: false,
  revision: "string",
  filters: {},
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" },
    { name: "email", field: "email", kind: "text" }
  ],
  hidden: ["password_hash", "totp_secret", "totp_pending_secret"]
})

export const TwoFactorEnrollmentSchema = Schema.Struct({
  object: Schema.Literal("two_factor_enrollment"),
  administrator_id: Schema.String,
  status: Schema.Literal("pending"),
  secret: Schema.String.annotations({ description: "Base32 TOTP secret (SHA-1, 6 digits, 30 s); shown in this response only." }),
  otpauth_uri: Schema.String.annotations({ description: "The secret as an `otpauth://totp/…` URI, for a QR code." }),
  created_at: Timestamp
}).annotations({ identifier: "TwoFactorEnrollment" })

/** The representation: the stored fields, never the password hash or a factor secret. */
export const administratorView = (record: StoredRecord): JsonObject => ({
  ...resourceView(administrators, record),
  two_factor: {
    enabled: typeof record.data.totp_secret === "string",
    enrolled_at: typeof record.data.two_factor_enrolled_at === "string" ? record.data.two_factor_enrolled_at : null
  }
})

export const administratorEtag = (record: StoredRecord) => `W/"${ADMINISTRATOR_TYPE}:${record.id}:${record.revision}"`

const home = Effect.map(Caller, (caller) => accountTenant(caller.tenant))

/** The events of an administrator's changes (`administrator.<verb>`), as `GET /event-types` lists them. */
export const administratorEventVerbs = ["created", "updated", "removed", "two_factor_enrollment_started", "two_factor_enabled"] as const

/** The keys of an administrator's representation (and of its events' `data.object`). */
export const administratorFields: ReadonlyArray<string> = [...representationFields(administrators), "two_factor"]

/** Audit entry and event of a change, in the caller's environment. */
const recordAdministratorChange = (verb: typeof administratorEventVerbs[number], after: StoredRecord, before?: StoredRecord) =>
  Effect.gen(function* () {
    const action = `${ADMINISTRATOR_TYPE}.${verb}`
    const view = administratorView(after)
    yield* recordChange(action, { object: ADMINISTRATOR_TYPE, id: after.id })
    yield* emitEvent(action, view, before ? previousAttributes(administratorView(before), view) : null)
  })

const loadAdministrator = (id: string) =>
  Effect.gen(function* () {
    const tenant = yield* home
    const record = yield* Effect.flatMap(Records, (records) => records.get(tenant, ADMINISTRATOR_TYPE, id)).pipe(Effect.mapError(readUnavailable))
    if (!record) return yield* Effect.fail(apiError("not_found"))
    return record
  })

/** A removed administrator is kept for the record, and changes no more. */
const loadActive = (id: string, expectedRevision?: number) =>
  Effect.gen(function* () {
    const record = yield* loadAdministrator(id)
    if (expectedRevision !== undefined && record.revision !== expectedRevision) return yield* Effect.fail(apiError("revision_mismatch"))
    if (record.data.status === "removed") return yield* Effect.fail(apiError("state_conflict", { reason: "administrator_removed" }))
    return record
  })

/** Save new data; the email stays unique among administrators that are not removed. */
const save = (record: StoredRecord, data: JsonObject) =>
  Effect.gen(function* () {
    const records = yield* Records
    const now = formatTimestamp(yield* Clock.currentTimeMillis)
    const uniques = data.status === "removed" ? [] : [{ name: "email", value: String(data.email) }]
    return yield* records
      .update(record.tenant, ADMINISTRATOR_TYPE, record.id, { ...data, updated_at: now }, { expectedRevision: record.revision, uniques })
      .pipe(
        Effect.catchTags({
          UniqueViolation: () => Effect.fail(fieldError("already_exists", "email")),
          RevisionConflict: () => Effect.fail(apiError("revision_mismatch")),
          StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
        })
      )
  })

export interface ListAdministratorsInput {
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
  readonly status: string | undefined
  readonly email: string | undefined
}

export const listAdministrators = (input: ListAdministratorsInput) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const sortName = (input.sort ?? "created_at").replace(/^-/, "")
    const declared = administrators.sorts.find((s) => s.name === sortName) ?? administrators.sorts[0]!
    const where: Array<Where> = []
    if (input.status !== undefined) where.push({ field: "status", op: "eq", value: input.status })
    if (input.email !== undefined) where.push({ field: "email", op: "eq", value: input.email.toLowerCase() })
    const visible = caller.grant.get("administrators.read")
    if (visible !== undefined && visible !== "all") where.push({ field: "id", op: "in", values: [...visible] })
    const { items, page } = yield* paginate({
      tenant: accountTenant(caller.tenant),
      type: ADMINISTRATOR_TYPE,
      where,
      sort: { field: declared.field, kind: declared.kind, direction: (input.sort ?? "").startsWith("-") ? "desc" : "asc" },
      limit: input.limit,
      cursor: input.cursor,
      collection: `/administrators:${JSON.stringify([input.status ?? null, input.email ?? null])}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
    return { data: items.map(administratorView), page }
  })

export const getAdministrator = loadAdministrator

export const createAdministrator = (body: CreateAdministratorInput) =>
  Effect.gen(function* () {
    const records = yield* Records
    const tenant = yield* home
    const id = yield* (yield* Ids).next("administrator")
    const now = formatTimestamp(yield* Clock.currentTimeMillis)
    const fields = yield* newAdministratorFields(body)
    const data: JsonObject = {
      object: ADMINISTRATOR_TYPE,
      id,
      ...fields,
      password_hash: (yield* passwordHashOf(body)) ?? null,
      totp_secret: null,
      created_at: now,
      updated_at: now
    }
    // The account's plan may cap its administrators (409 `plan_limit_reached`), checked in this unit of work.
    yield* requirePlanSlot(tenant, ADMINISTRATOR_TYPE)
    const record = yield* records.insert(tenant, ADMINISTRATOR_TYPE, id, data, [{ name: "email", value: fields.email }]).pipe(
      Effect.catchTags({
        UniqueViolation: () => Effect.fail(fieldError("already_exists", "email")),
        StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
      })
    )
    yield* recordAdministratorChange("created", record)
    return record
  })

export const updateAdministrator = (id: string, body: UpdateAdministratorInput, expectedRevision: number | undefined) =>
  Effect.gen(function* () {
    const current = yield* loadActive(id, expectedRevision)
    const passwordHash = yield* passwordHashOf(body)
    const saved = yield* save(current, {
      ...current.data,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.email !== undefined ? { email: body.email.toLowerCase() } : {}),
      ...(passwordHash !== undefined ? { password_hash: passwordHash } : {})
    })
    yield* recordAdministratorChange("updated", saved, current)
    return saved
  })

/** §5.4: removing an administrator ends its human mode on every credential of the account. */
const unlinkEverywhere = (administratorId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const now = formatTimestamp(yield* Clock.currentTimeMillis)
    for (const environment of environments) {
      const tenant = { accountId: caller.tenant.accountId, environment }
      for (const credential of yield* allRecords(tenant, CREDENTIAL_TYPE)) {
        const links = (credential.data.administrators ?? []) as ReadonlyArray<{ readonly administrator_id: string }>
        if (!links.some((l) => l.administrator_id === administratorId)) continue
        const kept = links.filter((l) => l.administrator_id !== administratorId) as unknown as JsonObject[]
        // No `uniques`: the credential keeps its secret-hash keys.
        yield* records
          .update(tenant, CREDENTIAL_TYPE, credential.id, { ...credential.data, administrators: kept, updated_at: now }, { expectedRevision: credential.revision })
          .pipe(Effect.mapError(writeUnavailable))
        // The credential's own trail, in the credential's environment.
        yield* recordChange("credential.administrator_unlinked", { object: CREDENTIAL_TYPE, id: credential.id }, { administrator_id: administratorId }).pipe(
          Effect.provideService(Caller, { ...caller, tenant } satisfies CallerInfo)
        )
      }
    }
  })

export const removeAdministrator = (id: string) =>
  Effect.gen(function* () {
    const records = yield* Records
    const current = yield* loadActive(id)
    const active = yield* records
      .count(current.tenant, ADMINISTRATOR_TYPE, [{ field: "status", op: "eq", value: "active" }], [])
      .pipe(Effect.mapError(readUnavailable))
    // Someone must still be able to sign in for the account.
    if ((active[0]?.count ?? 0) <= 1) return yield* Effect.fail(apiError("state_conflict", { reason: "last_administrator" }))
    const saved = yield* save(current, {
      ...current.data,
      status: "removed",
      password_hash: null,
      totp_secret: null,
      totp_pending_secret: null,
      two_factor_enrolled_at: null
    })
    yield* unlinkEverywhere(id)
    yield* recordAdministratorChange("removed", saved, current)
    return saved
  })

/** Start an enrollment: a new secret, pending until confirmed; a factor already on stays on until then. */
export const startTwoFactorEnrollment = (id: string) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const current = yield* loadActive(id)
    const account = yield* loadAccount(current.tenant.accountId).pipe(Effect.mapError(readUnavailable))
    const secret = base32Encode(crypto.randomBytes(20))
    const saved = yield* save(current, { ...current.data, totp_pending_secret: secret })
    yield* recordAdministratorChange("two_factor_enrollment_started", saved, current)
    const issuer = String(account?.data.name ?? "Syllabus")
    const label = encodeURIComponent(`${issuer}:${String(saved.data.email)}`)
    const params = `secret=${secret}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=${TOTP_DIGITS}&period=${TOTP_STEP_SECONDS}`
    return {
      record: saved,
      view: {
        object: "two_factor_enrollment",
        administrator_id: id,
        status: "pending",
        secret,
        otpauth_uri: `otpauth://totp/${label}?${params}`,
        created_at: String(saved.data.updated_at)
      } satisfies JsonObject
    }
  })

/** Confirm the pending enrollment with a current code (RFC 6238, one step of drift either way). */
export const confirmTwoFactorEnrollment = (id: string, code: string) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const current = yield* loadActive(id)
    const pending = current.data.totp_pending_secret
    if (typeof pending !== "string") return yield* Effect.fail(apiError("state_conflict", { reason: "no_pending_enrollment" }))
    const now = yield* Clock.currentTimeMillis
    if (!acceptedTotpCodes(crypto.hmacSha1, pending, now).some((accepted) => crypto.safeEqual(accepted, code))) {
      return yield* Effect.fail(fieldError("validation_failed", "code", { reason: "code_mismatch" }))
    }
    const saved = yield* save(current, {
      ...current.data,
      totp_secret: pending,
      totp_pending_secret: null,
      two_factor_enrolled_at: formatTimestamp(now)
    })
    yield* recordAdministratorChange("two_factor_enabled", saved, current)
    return saved
  })
