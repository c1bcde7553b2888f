/**
 * What the description adds to the JSON Schemas Effect derives, by rule rather than by hand,
 * so that a new schema follows them without editing this file:
 *
 * - no generated titles (`"int"`, `"maxLength(200)"`, `"unknown"`…: Effect names a schema by
 *   its refinements; a title is for a person, and the property name already says it), nor
 *   generated descriptions ("a string at most 200 character(s) long": the keywords say it);
 * - the pattern of its prefix on each public ID (§2.2, `records/ids.ts`): the `id` of a
 *   resource whose `object` names an ID kind, and every `<kind>_id` property;
 * - `x-extensible` on every enum, as §9 classifies them;
 * - on a text whose limit is a size (`x-max-utf8-bytes`, records/schema.ts `Text`), that size
 *   said in its description: JSON Schema's `maxLength` counts characters.
 */
import { ID_BODY_LENGTH, type IdKind, idPrefixes, type Json, type JsonObject } from "@syllabus/core"

type JsonMap = { [key: string]: Json }

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Effect describes its refinements in lower case ("an integer", "a number between 0 and 9"); ours are sentences. */
const isGenerated = (description: string) => /^an? [a-z]/.test(description)

const isIdKind = (name: string): name is IdKind => Object.prototype.hasOwnProperty.call(idPrefixes, name)

/** The pattern of a public ID of one kind: its prefix, `_`, its fixed-width base62 body (`records/ids.ts`). */
export const idPattern = (kind: IdKind): string => `^${idPrefixes[kind]}_[0-9A-Za-z]{${ID_BODY_LENGTH}}$`

/**
 * `<kind>_id` properties whose value is not a public ID of that kind: `operation_id` of the
 * request log and of `deprecations[]` is an OpenAPI operation ID (`credentials.list`).
 */
const notPublicIds = new Set(["operation_id"])

/** The pattern `PublicId` of `@syllabus/core` gives a body field before its kind is known here. */
const anyPublicId = `^[a-z]{2,3}_[0-9A-Za-z]{${ID_BODY_LENGTH}}$`

/** A string schema (or string-or-null) given the pattern, unless it has one of its own. */
const withPattern = (schema: Json, pattern: string): Json => {
  if (!isObject(schema)) return schema
  if (schema.type === "string" && (schema.pattern === undefined || schema.pattern === anyPublicId)) {
    return { ...schema, pattern }
  }
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: schema.anyOf.map((branch) => withPattern(branch, pattern)) }
  // A list of IDs of that kind (`product_id: [...]` of a webhook's filters).
  if (schema.type === "array" && schema.items !== undefined) return { ...schema, items: withPattern(schema.items, pattern) }
  return schema
}

const objectKind = (properties: JsonObject): IdKind | undefined => {
  const object = properties.object
  if (!isObject(object) || !Array.isArray(object.enum) || object.enum.length !== 1) return undefined
  const kind = object.enum[0]
  return typeof kind === "string" && isIdKind(kind) ? kind : undefined
}

// ---------------------------------------------------------------------------------------
// Enums (§9)

/**
 * Closed enums (`x-extensible: false`): adding a value is a breaking change. §9 names
 * publication status, `operation.status`, `credential.status`, `format` and `denial_reason`;
 * §2.3 lists some sets exhaustively ("enum: a, b", not "enum including"): `auth_mode`, a
 * banner's `status` (`active`, `inactive`, as webhooks' and showcases'); the environments are
 * the two of the architecture; the rate-limit scopes are the three of §8.1. Every other enum
 * is open (`x-extensible: true`): event and operation types, error codes ("a new error code
 * under an already documented status" is compatible), sort orders, the rest of the statuses.
 */
const closedEverywhere = new Set(["format", "denial_reason", "auth_mode", "environment", "scope", "blocked_by", "deleted"])
const closedStatuses: ReadonlyArray<{ readonly owners?: ReadonlyArray<string>; readonly within: ReadonlyArray<string> }> = [
  { within: ["draft", "published"] }, // publication status
  { within: ["active", "inactive"] },
  { owners: ["Credential", "UpdateCredentialBody"], within: ["active", "revoked", "suspended", "expired", "inactive"] },
  { owners: ["Operation", "Import"], within: ["queued", "running", "succeeded", "failed", "canceled"] } // an import's status is its operation's
]
/** Constants naming what a representation is (`object`, a settings group's `id` and `group`). */
const constantNames = new Set(["object", "id", "group"])

const isClosed = (owner: string, property: string, values: ReadonlyArray<Json>): boolean => {
  if (closedEverywhere.has(property)) return true
  if (constantNames.has(property) && values.length === 1) return true
  if (property !== "status") return false
  return closedStatuses.some(
    (rule) => (rule.owners === undefined || rule.owners.includes(owner)) && values.every((v) => typeof v === "string" && rule.within.includes(v))
  )
}

/**
 * The schema with its rules applied. `owner` is the component's name, `property` the name of
 * the property (or parameter) the schema is the value of.
 */
export const applySchemaRules = (schema: Json, owner: string, property = ""): Json => {
  if (Array.isArray(schema)) return schema.map((item) => applySchemaRules(item, owner, property))
  if (!isObject(schema)) return schema
  const out: JsonMap = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === "title") continue
    if (key === "description" && typeof value === "string" && isGenerated(value)) continue
    if (key === "properties" && isObject(value)) {
      const kind = objectKind(value)
      const properties: JsonMap = {}
      for (const [name, child] of Object.entries(value)) {
        let rewritten = applySchemaRules(child, owner, name)
        const idKind = name === "id" ? kind : name.endsWith("_id") && !notPublicIds.has(name) ? name.slice(0, -3) : undefined
        if (idKind !== undefined && isIdKind(idKind)) rewritten = withPattern(rewritten, idPattern(idKind))
        properties[name] = rewritten
      }
      out[key] = properties
    } else if (key === "items" || key === "anyOf" || key === "oneOf" || key === "allOf" || key === "additionalProperties") {
      out[key] = applySchemaRules(value, owner, property)
    } else {
      out[key] = value
    }
  }
  const maxBytes = out["x-max-utf8-bytes"]
  if (typeof maxBytes === "number") {
    const size = `At most ${maxBytes.toLocaleString("en-US")} bytes of UTF-8 (a character takes 1 to 4), else 422 \`too_long\` (reason \`utf8_bytes\`).`
    out.description = typeof out.description === "string" ? `${out.description} ${size}` : size
  }
  if (Array.isArray(out.enum) && out["x-extensible"] === undefined) {
    out["x-extensible"] = !isClosed(owner, property, out.enum)
  }
  return out
}

/** The `x-extensible` of an enum parameter: that of the field it filters, when a component has one with the same values. */
export const parameterExtensible = (components: JsonObject, name: string, values: ReadonlyArray<Json>): boolean | undefined => {
  const same = (other: Json | undefined) =>
    isObject(other) && Array.isArray(other.enum) && other.enum.length === values.length && values.every((v) => (other.enum as Array<Json>).includes(v))
  for (const component of Object.values(components)) {
    if (!isObject(component) || !isObject(component.properties)) continue
    const field = component.properties[name]
    if (same(field) && isObject(field) && typeof field["x-extensible"] === "boolean") return field["x-extensible"]
  }
  return undefined
}
