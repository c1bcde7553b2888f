/**
 * Settings groups of the account (§2.3 "settings: sharing" and "settings: lesson questions",
 * open-points "Settings groups"): sharing, lesson questions, support, sales, security, email
 * and appearance.
 *
 * Each group is one record per tenant (type `settings`, ID the group's name) with its own
 * revision, read and changed as a whole: `GET` answers the defaults (revision `"0"`) until
 * the first write; `PATCH` changes only the fields sent, and `null` restores a field's
 * default. The record keeps only the values set; the defaults are computed when read (some
 * follow the account's name), so a restored field keeps following its default.
 */
import { Clock, Effect, Schema } from "effect"
import { loadAccount } from "../access/accounts.js"
import { Caller } from "../access/context.js"
import { type ApiError, apiError, writeUnavailable, readUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { type Json, type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import type { RuleServices } from "../records/resource.js"
import { Bool, Enum, Integer, List, Text } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"
import { recordChange } from "../trail/audit.js"
import { requireFile } from "../uploads/uploads.js"

export const SETTINGS_TYPE = "settings"

/** What a group's defaults may depend on. */
export interface SettingsAccount {
  readonly name: string
}

export interface SettingsGroup {
  /** The group's name: the record's ID, `id` and `group` of the representation, the ETag's ID. */
  readonly group: string
  /** Path under `/api/v3`. */
  readonly path: string
  /** Words for summaries ("sharing settings"). */
  readonly title: string
  /** The writable values, as represented, in order. */
  readonly values: Schema.Struct.Fields
  /** Values shown but written by the platform, not by PATCH, with the value of a fresh group. */
  readonly managed?: { readonly fields: Schema.Struct.Fields; readonly initial: JsonObject }
  /** The PATCH body: every field optional, `null` restores its default. */
  readonly update: Schema.Schema.AnyNoContext
  /** The value of each writable field until it is set, in stored form. */
  readonly defaults: (account: SettingsAccount) => JsonObject
  /** Fields holding a file ID of purpose `image` (shown as `{ file_id, url }`). */
  readonly files?: ReadonlyArray<string>
}

// ---------------------------------------------------------------------------------------
// Building blocks

const FileRef = Schema.NullOr(
  Schema.Struct({
    file_id: Schema.String,
    url: Schema.String.annotations({ description: "Path of the file resource (`/api/v3/files/{file_id}`)." })
  })
)
const FileId = Schema.String.annotations({ description: "ID of an uploaded file of the account, of purpose `image`; `null` restores the default." })
/**
 * A PATCH field: optional, `null` restores the default. `exact`: an absent field is not
 * `undefined`, so a problem inside an array is itemized on the item alone.
 */
const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(Schema.NullOr(schema), { exact: true })

const HexColor = Schema.String.pipe(
  Schema.filter((s) => /^#[0-9a-fA-F]{6}$/.test(s) || "invalid_value|expected=#RRGGBB"),
  Schema.annotations({ jsonSchema: { type: "string", pattern: "^#[0-9a-fA-F]{6}$" } })
)

const Email = Text({ min: 3, max: 254 }).pipe(
  Schema.filter((s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s) || "invalid_value|expected=an email address"),
  Schema.annotations({ jsonSchema: { type: "string", format: "email", maxLength: 254 } })
)

const ipv4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}\/(3[0-2]|[12]?\d)$/
const ipv6 = /^[0-9a-fA-F:]*:[0-9a-fA-F:]*\/(12[0-8]|1[01]\d|[1-9]?\d)$/
const CidrRange = Schema.String.pipe(
  Schema.filter((s) => ipv4.test(s) || ipv6.test(s) || "invalid_value|expected=an IPv4 or IPv6 range in CIDR notation"),
  Schema.annotations({ jsonSchema: { type: "string", description: "CIDR range, e.g. `203.0.113.0/24` or `2001:db8::/32`." } })
)

const QuestionSort = ["newest", "oldest", "most_replies"] as const
const Layouts = ["standard", "netflix"] as const

// ---------------------------------------------------------------------------------------
// The groups

export const sharingSettings: SettingsGroup = {
  group: "sharing",
  path: "/settings/sharing",
  title: "sharing settings",
  values: {
    title: Schema.String.annotations({ description: "Title of shared links. Default: the account's name." }),
    description: Schema.NullOr(Schema.String),
    image: FileRef.annotations({ description: "Image of shared links." })
  },
  managed: {
    fields: {
      propagation: Schema.Struct({
        replicas: Schema.Boolean.annotations({ description: "The account's replicas receive these settings (managed with the replicas)." })
      }),
      replica: Schema.NullOr(Schema.Struct({ account_id: Schema.String, environment: Schema.String })).annotations({
        description: "The account these settings are copied from; a replicated group is read-only (403 `replica_readonly`)."
      })
    },
    initial: { propagation: { replicas: false }, replica: null }
  },
  update: Schema.Struct({
    title: optional(Text({ min: 1, max: 200 })),
    description: optional(Text({ max: 1000 })),
    image: optional(FileId)
  }),
  defaults: (account) => ({ title: account.name, description: null, image: null }),
  files: ["image"]
}

export const lessonQuestionSettings: SettingsGroup = {
  group: "lesson_questions",
  path: "/settings/support/questions",
  title: "lesson question settings",
  values: {
    enabled: Schema.Boolean.annotations({ description: "Students may ask questions on lessons." }),
    moderation_enabled: Schema.Boolean.annotations({ description: "New questions wait for approval before others see them." }),
    open_in_new_tab: Schema.Boolean,
    min_length: Schema.Int.annotations({ description: "Fewest characters of a question." }),
    placeholder: Schema.NullOr(Schema.String).annotations({ description: "Hint in the empty question box; `null`: the platform's own." }),
    title: Schema.NullOr(Schema.String).annotations({ description: "Heading of the questions area; `null`: the platform's own." }),
    sort: Schema.Literal(...QuestionSort).annotations({ description: "Order in which questions are shown." })
  },
  update: Schema.Struct({
    enabled: optional(Bool),
    moderation_enabled: optional(Bool),
    open_in_new_tab: optional(Bool),
    min_length: optional(Integer({ min: 0, max: 10000 })),
    placeholder: optional(Text({ min: 1, max: 200 })),
    title: optional(Text({ min: 1, max: 200 })),
    sort: optional(Enum(...QuestionSort))
  }),
  defaults: () => ({
    enabled: true,
    moderation_enabled: false,
    open_in_new_tab: false,
    min_length: 0,
    placeholder: null,
    title: null,
    sort: "newest"
  })
}

/**
 * The support desk (tickets): `enabled` false turns off the writes that open or continue a
 * conversation (`POST /support/tickets`, `POST /support/tickets/{ticket_id}/messages`, and
 * their batch items): 409 `feature_disabled` (support/tickets.ts). Reads, status changes,
 * departments and FAQs stay available, so the team can finish the backlog.
 */
export const supportSettings: SettingsGroup = {
  group: "support",
  path: "/settings/support",
  title: "support settings",
  values: {
    enabled: Schema.Boolean.annotations({
      description:
        "The support desk takes tickets. `false`: opening a ticket and adding a message answer 409 `feature_disabled`; reads, status changes, departments and FAQs stay available. Default `true`."
    })
  },
  update: Schema.Struct({ enabled: optional(Bool) }),
  defaults: () => ({ enabled: true })
}

/**
 * Selling (release 3.2.0, packages/core/src/sales/features.ts): `enabled` false switches
 * sales off — creating and changing deliveries, gateways and funnels, and starting a
 * delivery's tag applications, answer 409 `feature_disabled` (reason `sales_disabled`);
 * `funnels_enabled` false does the same for funnel writes alone (reason `funnels_disabled`).
 * Reads, the trash and incoming gateway notifications stay: a payment that happened is
 * still recorded, so nothing is lost while selling is paused.
 */
export const salesSettings: SettingsGroup = {
  group: "sales",
  path: "/settings/sales",
  title: "sales settings",
  values: {
    enabled: Schema.Boolean.annotations({
      description:
        "The account sells. `false`: creating and changing deliveries, gateways and funnels, and starting a delivery's tag applications, answer 409 `feature_disabled` (reason `sales_disabled`); reads stay, and incoming gateway notifications are still recorded. Default `true`."
    }),
    funnels_enabled: Schema.Boolean.annotations({
      description:
        "Sales funnels may be built. `false`: creating and changing funnels answer 409 `feature_disabled` (reason `funnels_disabled`); reads, conversion counts, the trash and a restore stay. Default `true`."
    })
  },
  update: Schema.Struct({ enabled: optional(Bool), funnels_enabled: optional(Bool) }),
  defaults: () => ({ enabled: true, funnels_enabled: true })
}

export const securitySettings: SettingsGroup = {
  group: "security",
  path: "/settings/security",
  title: "security settings",
  values: {
    two_factor_required: Schema.Boolean.annotations({ description: "Administrators must sign in with a second factor." }),
    session_timeout_minutes: Schema.Int.annotations({ description: "An idle administrator session ends after this many minutes." }),
    allowed_ip_ranges: Schema.Array(Schema.String).annotations({
      description: "Administrators sign in only from these CIDR ranges; empty: from anywhere."
    }),
    password_min_length: Schema.Int.annotations({ description: "Fewest characters of an administrator password." })
  },
  update: Schema.Struct({
    two_factor_required: optional(Bool),
    session_timeout_minutes: optional(Integer({ min: 5, max: 43200 })),
    allowed_ip_ranges: optional(List(CidrRange, 100)),
    password_min_length: optional(Integer({ min: 8, max: 128 }))
  }),
  defaults: () => ({ two_factor_required: false, session_timeout_minutes: 1440, allowed_ip_ranges: [], password_min_length: 8 })
}

export const emailSettings: SettingsGroup = {
  group: "email",
  path: "/settings/email",
  title: "email settings",
  values: {
    sender_name: Schema.String.annotations({ description: "Name the account's emails come from. Default: the account's name." }),
    reply_to: Schema.NullOr(Schema.String).annotations({ description: "Address replies go to; `null`: the platform's no-reply address." }),
    footer: Schema.NullOr(Schema.String).annotations({ description: "Plain text added at the end of every email." })
  },
  update: Schema.Struct({
    sender_name: optional(Text({ min: 1, max: 100 })),
    reply_to: optional(Email),
    footer: optional(Text({ max: 2000 }))
  }),
  defaults: (account) => ({ sender_name: account.name, reply_to: null, footer: null })
}

export const appearanceSettings: SettingsGroup = {
  group: "appearance",
  path: "/settings/appearance",
  title: "appearance settings",
  values: {
    layout: Schema.Literal(...Layouts).annotations({
      description: "Layout of the members area; banners of type `netflix` are available with the `netflix` layout only."
    }),
    primary_color: Schema.String.annotations({ description: "`#RRGGBB`." }),
    logo: FileRef,
    favicon: FileRef
  },
  update: Schema.Struct({
    layout: optional(Enum(...Layouts)),
    primary_color: optional(HexColor),
    logo: optional(FileId),
    favicon: optional(FileId)
  }),
  defaults: () => ({ layout: "standard", primary_color: "#2563eb", logo: null, favicon: null }),
  files: ["logo", "favicon"]
}

export const settingsGroups: ReadonlyArray<SettingsGroup> = [
  sharingSettings,
  lessonQuestionSettings,
  supportSettings,
  salesSettings,
  securitySettings,
  emailSettings,
  appearanceSettings
]

// ---------------------------------------------------------------------------------------
// The representation


export const settingsEtag = (group: SettingsGroup, revision: number): string => `W/"${SETTINGS_TYPE}:${group.group}:${revision}"`

const overridesOf = (record: StoredRecord | undefined): JsonObject =>
  (record?.data.overrides as JsonObject | undefined) ?? {}

/** Stored values → represented values: a file ID becomes `{ file_id, url }`. */
const show = (group: SettingsGroup, values: JsonObject): JsonObject => {
  const out: Record<string, Json> = {}
  for (const field of Object.keys(group.values)) {
    const value = values[field] ?? null
    out[field] =
      group.files?.includes(field) && typeof value === "string" ? { file_id: value, url: `/api/v3/files/${value}` } : value
  }
  return out
}

export const settingsView = (group: SettingsGroup, account: SettingsAccount, record: StoredRecord | undefined): JsonObject => {
  const defaults = group.defaults(account)
  const managed = Object.fromEntries(
    Object.entries(group.managed?.initial ?? {}).map(([field, initial]) => [field, record?.data[field] ?? initial])
  )
  return {
    object: SETTINGS_TYPE,
    id: group.group,
    group: group.group,
    ...show(group, { ...defaults, ...overridesOf(record) }),
    ...managed,
    defaults: show(group, defaults),
    updated_at: record?.data.updated_at ?? null,
    revision: String(record?.revision ?? 0)
  }
}

const loadSettings = (group: SettingsGroup) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const record = yield* records.get(caller.tenant, SETTINGS_TYPE, group.group).pipe(Effect.mapError(readUnavailable))
    const account = yield* loadAccount(caller.tenant.accountId).pipe(Effect.mapError(readUnavailable))
    return { record, account: { name: typeof account?.data.name === "string" ? account.data.name : "" } }
  })

/** The keys of a settings group's representation (and of `settings.updated`'s `data.object`), over every group. */
export const settingsFields: ReadonlyArray<string> = [
  "object",
  "id",
  "group",
  ...new Set(settingsGroups.flatMap((group) => [...Object.keys(group.values), ...Object.keys(group.managed?.fields ?? {})])),
  "defaults",
  "updated_at",
  "revision"
]

// ---------------------------------------------------------------------------------------
// Use cases

/** The group as it is: its defaults and revision `"0"` until it is first written. */
export const getSettings = (group: SettingsGroup) =>
  Effect.map(loadSettings(group), ({ record, account }) => ({
    data: settingsView(group, account, record),
    etag: settingsEtag(group, record?.revision ?? 0)
  }))

/** One value of a group, as stored (a file field: its file ID), the default when unset. */
export const settingValue = (group: SettingsGroup, field: string): Effect.Effect<Json, ApiError<"credential_state_unverifiable">, RuleServices> =>
  Effect.map(loadSettings(group), ({ record, account }) => overridesOf(record)[field] ?? group.defaults(account)[field] ?? null)

/**
 * PATCH of a group: the fields sent change, `null` restores a field's default (§4.3); with
 * `If-Match`, only at that revision (412). A group copied from another account is read-only.
 */
export const updateSettings = (group: SettingsGroup, body: JsonObject, expectedRevision: number | undefined) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const { record, account } = yield* loadSettings(group)
    const revision = record?.revision ?? 0
    if (expectedRevision !== undefined && expectedRevision !== revision) return yield* Effect.fail(apiError("revision_mismatch"))
    const replica = record?.data.replica
    if (typeof replica === "object" && replica !== null) return yield* Effect.fail(apiError("replica_readonly"))

    const previous = overridesOf(record)
    const overrides: Record<string, Json> = { ...previous }
    for (const [field, value] of Object.entries(body)) {
      if (value === null) delete overrides[field]
      else overrides[field] = value
    }
    for (const field of group.files ?? []) {
      const id = body[field]
      if (typeof id === "string" && id !== previous[field]) yield* requireFile(field, id, ["image"])
    }

    const now = yield* Clock.currentTimeMillis
    const data: JsonObject = {
      object: SETTINGS_TYPE,
      id: group.group,
      group: group.group,
      ...(group.managed?.initial ?? {}),
      ...(record?.data ?? {}),
      overrides,
      updated_at: formatTimestamp(now)
    }
    const saved = record
      ? yield* records.update(caller.tenant, SETTINGS_TYPE, group.group, data, { expectedRevision: record.revision }).pipe(
          Effect.catchTags({
            RevisionConflict: () => Effect.fail(apiError("revision_mismatch")),
            UniqueViolation: (e) => Effect.fail(writeUnavailable(e)),
            StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
          })
        )
      : yield* records.insert(caller.tenant, SETTINGS_TYPE, group.group, data).pipe(
          Effect.catchTags({
            // Another first write won the race: this one was made against revision 0.
            UniqueViolation: () => Effect.fail(apiError("revision_mismatch")),
            StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
          })
        )
    const before = settingsView(group, account, record)
    const after = settingsView(group, account, saved)
    yield* recordChange(`${SETTINGS_TYPE}.updated`, { object: SETTINGS_TYPE, id: group.group })
    yield* emitEvent(`${SETTINGS_TYPE}.updated`, after, previousAttributes(before, after))
    return { data: after, etag: settingsEtag(group, saved.revision) }
  })
