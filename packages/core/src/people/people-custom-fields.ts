/**
 * Custom fields (3.1.0): the extra fields every user of the account carries, and the check of
 * the values a user is given. A field's `key` and `type` are fixed at creation (values stored
 * under them stay meaningful); removing a field removes its values from every user.
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { type ApiError, apiError, type DetailItem, readUnavailable } from "../errors/errors.js"
import { type Json, type JsonObject, Records, type StoredRecord, type Tenant, type Where } from "../ports/store.js"
import { defineResource, ruleViolation } from "../records/resource.js"
import { Bool, Enum, fitsUtf8, Integer, List, PLAIN_TEXT_MAX, Text } from "../records/schema.js"


/** Every record of a type in a tenant, in `id` order (sets bounded by the account: fields, a user's links). */
export const allRecords = (tenant: Tenant, type: string, where: ReadonlyArray<Where> = []) =>
  Effect.gen(function* () {
    const records = yield* Records
    const batch = 500
    const out: Array<StoredRecord> = []
    for (;;) {
      const last = out.at(-1)
      const page = yield* records
        .list(tenant, type, {
          where,
          sort: { field: "id", kind: "text", direction: "asc" },
          after: last ? { value: last.id, id: last.id } : undefined,
          limit: batch
        })
        .pipe(Effect.mapError(readUnavailable))
      out.push(...page)
      if (page.length < batch) return out
    }
  })

const fieldTypes = ["text", "number", "date", "select", "checkbox"] as const
type FieldType = (typeof fieldTypes)[number]
const FieldType = Enum(...fieldTypes)

const Key = Text({ min: 1, max: 64 }).pipe(
  Schema.filter((s) => /^[a-z][a-z0-9_]{0,63}$/.test(s) || "invalid_value|pattern=^[a-z][a-z0-9_]{0,63}$"),
  Schema.annotations({ jsonSchema: { type: "string", pattern: "^[a-z][a-z0-9_]{0,63}$" } })
)
const Options = List(Text({ min: 1, max: 200 })).annotations({
  description: "The choices of a `select` field (at least one, no repeats); empty for every other type."
})
const Position = Integer({ min: 1, max: 1_000_000 })

export const CUSTOM_FIELD_TYPE = "custom_field"

export const customFields = defineResource({
  type: CUSTOM_FIELD_TYPE,
  idKind: "custom_field",
  plural: "custom_fields",
  path: "/custom-fields",
  tag: "People",
  fields: {
    key: Schema.String.annotations({ description: "The name of the field in a user's `custom_fields`; fixed at creation." }),
    label: Schema.String,
    type: Schema.Literal(...fieldTypes).annotations({ description: "Fixed at creation." }),
    options: Schema.Array(Schema.String),
    required: Schema.Boolean.annotations({
      description: "Every new user must have a value; a value of a required field cannot be removed."
    }),
    position: Schema.Int.annotations({ description: "Display order, ascending; default: after the last field." })
  },
  create: Schema.Struct({
    key: Key,
    label: Text({ min: 1, max: 200 }),
    type: FieldType,
    options: Schema.optional(Options),
    required: Schema.optional(Bool),
    position: Schema.optional(Position)
  }),
  update: Schema.Struct({
    label: Schema.optional(Text({ min: 1, max: 200 })),
    options: Schema.optional(Options),
    required: Schema.optional(Bool),
    position: Schema.optional(Position)
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      const records = yield* Records
      const last = yield* records
        .list(context.tenant, CUSTOM_FIELD_TYPE, { where: [], sort: { field: "position", kind: "number", direction: "desc" }, limit: 1 })
        .pipe(Effect.mapError(readUnavailable))
      return {
        key: body.key,
        label: body.label,
        type: body.type,
        options: [...(body.options ?? [])],
        required: body.required ?? false,
        position: body.position ?? Number(last[0]?.data.position ?? 0) + 1
      }
    }),
  rules: {
    check: (data) => {
      const options = (data.options ?? []) as ReadonlyArray<string>
      const problems: Array<DetailItem> = []
      if (data.type === "select" && options.length === 0) problems.push({ field: "options", code: "required", reason: "select_needs_options" })
      if (data.type !== "select" && options.length > 0) problems.push({ field: "options", code: "not_allowed", reason: "only_for_select" })
      options.forEach((option, i) => {
        if (options.indexOf(option) !== i) problems.push({ field: `options[${i}]`, code: "invalid_value", reason: "duplicate" })
      })
      return problems.length > 0 ? Effect.fail(ruleViolation(problems)) : Effect.void
    }
    // `afterDelete` (remove the field's values from users) is added in people.ts, beside users.
  },
  unique: ["key"],
  trash: false,
  revision: "string",
  sorts: [
    { name: "position", field: "position", kind: "number" },
    { name: "created_at", field: "id", kind: "text" }
  ],
  search: ["key", "label"]
})

// ---------------------------------------------------------------------------------------
// Values of a user

const datePattern = /^(\d{4})-(\d{2})-(\d{2})$/
const isDate = (value: string): boolean => {
  const match = datePattern.exec(value)
  if (!match) return false
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])))
  return date.toISOString().slice(0, 10) === value
}

/** The problem with one value for a field of this type and options, if any. */
const valueProblem = (type: FieldType, options: ReadonlyArray<string>, value: Json): Omit<DetailItem, "field"> | undefined => {
  switch (type) {
    case "text":
      if (typeof value !== "string") return { code: "invalid_type", params: { expected: "string" } }
      return fitsUtf8(value, PLAIN_TEXT_MAX) ? undefined : { code: "too_long", reason: "utf8_bytes", params: { max: PLAIN_TEXT_MAX } }
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? undefined : { code: "invalid_type", params: { expected: "number" } }
    case "date":
      if (typeof value !== "string") return { code: "invalid_type", params: { expected: "date" } }
      return isDate(value) ? undefined : { code: "invalid_value", params: { expected: "YYYY-MM-DD" } }
    case "select":
      if (typeof value !== "string") return { code: "invalid_type", params: { expected: "string" } }
      return options.includes(value) ? undefined : { code: "invalid_value", params: { allowed: options.join(", ") } }
    case "checkbox":
      return typeof value === "boolean" ? undefined : { code: "invalid_type", params: { expected: "boolean" } }
  }
}

/**
 * A user's values after a write: `sent` (a create's whole set, or a PATCH's changes, where
 * `null` removes a value) checked against the account's fields and merged into `current`.
 * Unknown keys, values of the wrong type, and required fields left without a value are 422
 * on `custom_fields.<key>`. Required fields are checked for every key on create; on a PATCH
 * only a removal is refused, so that adding a required field does not lock existing users.
 */
export const mergeCustomFieldValues = (
  current: JsonObject | null,
  sent: Readonly<Record<string, Json>>
): Effect.Effect<JsonObject, ApiError, Caller | Records> =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const defined = new Map((yield* allRecords(caller.tenant, CUSTOM_FIELD_TYPE)).map((r) => [String(r.data.key), r.data]))
    const problems: Array<DetailItem> = []
    const next: Record<string, Json> = { ...(current ?? {}) }
    for (const [key, value] of Object.entries(sent)) {
      const field = defined.get(key)
      if (!field) {
        problems.push({ field: `custom_fields.${key}`, code: "unknown_field" })
      } else if (value === null) {
        if (field.required === true) problems.push({ field: `custom_fields.${key}`, code: "required" })
        delete next[key]
      } else {
        const problem = valueProblem(field.type as FieldType, (field.options ?? []) as ReadonlyArray<string>, value)
        if (problem) problems.push({ field: `custom_fields.${key}`, ...problem })
        next[key] = value
      }
    }
    if (current === null) {
      for (const [key, field] of defined) {
        if (field.required === true && (next[key] === undefined || next[key] === null) && !(key in sent)) {
          problems.push({ field: `custom_fields.${key}`, code: "required" })
        }
      }
    }
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
    return next
  })
