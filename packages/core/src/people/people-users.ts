/**
 * Users and tags (3.1.0). A user's personal data (email, document, phone) is shown only to
 * callers holding `users.read_personal`, as the report columns marked personal are (§4.4);
 * without it those fields are `null`. A user's tags are a set replaced with
 * `PUT /users/{user_id}/tags`; each assignment is also a `user_tag` record, so that a tag's
 * `users_count` and its `tag_in_use` check are store counts.
 */
import { Clock, Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { personalView, READ_PERSONAL } from "../access/scope.js"
import { apiError, type DetailItem, fieldError, writeUnavailable, readUnavailable } from "../errors/errors.js"
import { type Json, type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import {
  defineResource,
  equalsFilter,
  loadResource,
  recordResourceChange,
  resourceView,
  ruleViolation,
  saveResource
} from "../records/resource.js"
import { Enum, List, PublicId, Text, Timestamp } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"
import { allRecords, mergeCustomFieldValues } from "./people-custom-fields.js"


export const USER_TYPE = "user"

/** A user of the caller's tenant, not trashed, named by a body's `user_id`: else 422 on `user_id` (reason `not_found`). */
export const requireLiveUser = (userId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const user = yield* records.get(caller.tenant, USER_TYPE, userId).pipe(Effect.mapError(readUnavailable))
    if (!user || user.data.deleted === true) return yield* Effect.fail(fieldError("validation_failed", "user_id", { reason: "not_found" }))
    return user
  })
export const TAG_TYPE = "tag"
/** One tag assigned to one user: `{ user_id, tag_id }`. */
export const USER_TAG_TYPE = "user_tag"

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
/** An email address; stored lowercased, so that uniqueness ignores case. */
export const Email = Text({ min: 3, max: 254 }).pipe(
  Schema.filter((s) => emailPattern.test(s) || "invalid_value|expected=email"),
  Schema.annotations({ jsonSchema: { type: "string", format: "email", maxLength: 254 } })
)

const Status = Enum("active", "blocked")
const CustomFieldValue = Schema.Union(Schema.String, Schema.Number, Schema.Boolean)
/** A map: its keys are data (custom field keys), so its JSON Schema declares no properties. */
const valuesMap = (description: string, nullable: boolean) => ({
  jsonSchema: {
    type: "object",
    additionalProperties: { type: ["string", "number", "boolean", ...(nullable ? ["null"] : [])] },
    description
  }
})
const CustomFieldValues = Schema.Record({ key: Schema.String, value: Schema.NullOr(CustomFieldValue) }).annotations(
  valuesMap("Values by custom field key, checked against the account's custom fields; in a PATCH only the keys sent change, `null` removes a value.", true)
)
const personal = (what: string) => `${what}. Personal data: \`null\` unless the credential holds \`users.read_personal\`.`

export const users = defineResource({
  type: USER_TYPE,
  idKind: "user",
  plural: "users",
  path: "/users",
  tag: "People",
  personal: ["email", "document", "phone"].map((field) => ({ path: [field], person: ["id"] })),
  fields: {
    name: Schema.String,
    email: Schema.NullOr(Schema.String).annotations({ description: personal("Unique in the account, lowercased") }),
    document: Schema.NullOr(Schema.String).annotations({ description: personal("Identity document number") }),
    phone: Schema.NullOr(Schema.String).annotations({ description: personal("Phone number") }),
    status: Schema.Literal("active", "blocked"),
    tags: Schema.Array(Schema.String).annotations({ description: "IDs of the user's tags; replaced with `PUT /users/{user_id}/tags`." }),
    custom_fields: Schema.Record({ key: Schema.String, value: CustomFieldValue }).annotations(valuesMap("Values by custom field key.", false)),
    last_access_at: Schema.NullOr(Timestamp).annotations({ description: "The user's last visit to the platform." })
  },
  create: Schema.Struct({
    name: Text({ min: 1, max: 200 }),
    email: Email,
    document: Schema.optional(Schema.NullOr(Text({ max: 64 }))),
    phone: Schema.optional(Schema.NullOr(Text({ max: 32 }))),
    status: Schema.optional(Status),
    custom_fields: Schema.optional(CustomFieldValues)
  }),
  update: Schema.Struct({
    name: Schema.optional(Text({ min: 1, max: 200 })),
    email: Schema.optional(Email),
    document: Schema.optional(Schema.NullOr(Text({ max: 64 }))),
    phone: Schema.optional(Schema.NullOr(Text({ max: 32 }))),
    status: Schema.optional(Status),
    custom_fields: Schema.optional(CustomFieldValues)
  }),
  defaults: (body) =>
    Effect.map(mergeCustomFieldValues(null, body.custom_fields ?? {}), (values) => ({
      name: body.name,
      email: body.email.toLowerCase(),
      document: body.document ?? null,
      phone: body.phone ?? null,
      status: body.status ?? "active",
      tags: [],
      custom_fields: values,
      last_access_at: null
    })),
  change: (current, patch) =>
    Effect.gen(function* () {
      const { custom_fields, email, ...rest } = patch
      return {
        ...current,
        ...rest,
        ...(email !== undefined ? { email: email.toLowerCase() } : {}),
        ...(custom_fields !== undefined
          ? { custom_fields: yield* mergeCustomFieldValues((current.custom_fields ?? {}) as JsonObject, custom_fields) }
          : {})
      } as JsonObject
    }),
  unique: ["email"],
  trash: true,
  revision: "string",
  filters: {
    status: equalsFilter("status", Status),
    email: {
      schema: Schema.String,
      where: (value: never) => [{ field: "email", op: "eq", value: (value as string).toLowerCase() }],
      on: { field: "email", match: "equals" },
      description: "Exact email, any case. Needs `users.read_personal`."
    }
  },
  // Newest first unless `sort` says otherwise.
  defaultReversed: true,
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  search: ["name"]
})

/** Users as this caller may see them: personal fields `null` without `users.read_personal`. */
export const userViews = (items: ReadonlyArray<JsonObject>) =>
  Effect.map(Caller, (caller) => items.map((item) => personalView(users.personal!, item, caller.grant)))

/** May the caller filter users by email (which would tell personal data)? */
export const requireReadPersonal = Effect.flatMap(Caller, (caller) =>
  caller.grant.get(READ_PERSONAL) === "all"
    ? Effect.void
    : Effect.fail(apiError("permission_denied", { params: { capability: READ_PERSONAL } }))
)

// ---------------------------------------------------------------------------------------
// Tags

export const tags = defineResource({
  type: TAG_TYPE,
  idKind: "tag",
  plural: "tags",
  path: "/tags",
  tag: "People",
  fields: {
    name: Schema.String,
    users_count: Schema.Int.annotations({
      description: "Users holding the tag, those in the trash included (their tags come back with them)."
    })
  },
  create: Schema.Struct({ name: Text({ min: 1, max: 200 }) }),
  update: Schema.Struct({ name: Schema.optional(Text({ min: 1, max: 200 })) }),
  defaults: (body) => Effect.succeed({ name: body.name, users_count: 0 }),
  rules: {
    beforeDelete: (record) =>
      Effect.flatMap(holders([record.id]), (counts) => ((counts.get(record.id) ?? 0) > 0 ? Effect.fail(apiError("tag_in_use")) : Effect.void))
  },
  unique: ["name"],
  trash: false,
  revision: "string",
  sorts: [
    { name: "name", field: "name", kind: "text" },
    { name: "created_at", field: "id", kind: "text" }
  ],
  search: ["name"]
})

/** How many users hold each of these tags. */
const holders = (tagIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const counts = yield* records
      .count(caller.tenant, USER_TAG_TYPE, [{ field: "tag_id", op: "in", values: tagIds }], ["tag_id"])
      .pipe(Effect.mapError(readUnavailable))
    return new Map(counts.map((c) => [String(c.key[0]), c.count]))
  })

/** Tags with their live `users_count`. */
export const tagViews = (items: ReadonlyArray<JsonObject>) =>
  items.length === 0
    ? Effect.succeed(items)
    : Effect.map(holders(items.map((t) => String(t.id))), (counts) =>
        items.map((t) => ({ ...t, users_count: counts.get(String(t.id)) ?? 0 }))
      )

export const ReplaceUserTagsBody = Schema.Struct({
  ids: List(PublicId("tag")).annotations({ description: "Every tag the user is to hold, each once." })
}).annotations({ identifier: "ReplaceUserTagsBody" })

/** `PUT /users/{user_id}/tags`: the user holds exactly these tags afterwards. */
export const replaceUserTags = (userId: string, ids: ReadonlyArray<string>, expectedRevision: number | undefined) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const user = yield* loadResource(users, undefined, userId)
    if (user.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    if (expectedRevision !== undefined && user.revision !== expectedRevision) return yield* Effect.fail(apiError("revision_mismatch"))
    const problems: Array<DetailItem> = []
    for (const [i, id] of ids.entries()) {
      if (ids.indexOf(id) !== i) {
        problems.push({ field: `ids[${i}]`, code: "invalid_value", reason: "duplicate" })
        continue
      }
      const tag = yield* records.get(caller.tenant, TAG_TYPE, id).pipe(Effect.mapError(readUnavailable))
      if (!tag) problems.push({ field: `ids[${i}]`, code: "validation_failed", reason: "not_found" })
    }
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))

    const links = yield* allRecords(caller.tenant, USER_TAG_TYPE, [{ field: "user_id", op: "eq", value: userId }])
    const wanted = new Set(ids)
    const held = new Set(links.map((l) => String(l.data.tag_id)))
    const now = formatTimestamp(yield* Clock.currentTimeMillis)
    for (const link of links) {
      if (!wanted.has(String(link.data.tag_id))) yield* records.remove(caller.tenant, USER_TAG_TYPE, link.id).pipe(Effect.mapError(writeUnavailable))
    }
    for (const tagId of ids) {
      if (held.has(tagId)) continue
      const id = `${userId}:${tagId}`
      yield* records
        .insert(caller.tenant, USER_TAG_TYPE, id, { object: USER_TAG_TYPE, id, user_id: userId, tag_id: tagId, created_at: now })
        .pipe(Effect.mapError(writeUnavailable))
    }
    const saved = yield* saveResource(users, user, { ...user.data, tags: [...ids] }, user.revision)
    yield* recordResourceChange(users, "updated", resourceView(users, saved), resourceView(users, user))
    return saved
  })

/** After a custom field is removed: its values leave every user that had one (trash included). */
export const removeCustomFieldValues = (field: StoredRecord) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const key = String(field.data.key)
    for (const user of yield* allRecords(caller.tenant, USER_TYPE)) {
      const values = (user.data.custom_fields ?? {}) as Readonly<Record<string, Json>>
      if (!(key in values)) continue
      const { [key]: _removed, ...rest } = values
      const saved = yield* saveResource(users, user, { ...user.data, custom_fields: rest }, user.revision)
      yield* recordResourceChange(users, "updated", resourceView(users, saved), resourceView(users, user))
    }
  })
