/**
 * Examples of the description, made from the schemas themselves so that every operation
 * has one and none can contradict its schema (the lint validates each against it): a value
 * per JSON Schema, with readable values for the fields whose name says what they hold, and
 * the error envelope of each code with its English message (`renderMessage`).
 */
import { type DetailCode, type ErrorCode, type Json, type JsonObject, renderMessage } from "@syllabus/core"

type JsonMap = { [key: string]: Json }

export const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** One instant for every timestamp of the examples: they show shapes, not a timeline. */
export const EXAMPLE_TIMESTAMP = "2026-03-02T14:30:00.000Z"
/** The body of every public ID of the examples (in range: it starts with 0). */
const ID_BODY = "0Rb3kX9sT"
export const EXAMPLE_REQUEST_ID = `req_${ID_BODY}`

/** Values for strings with a pattern that is not a public ID, tried in order. */
const patternCandidates = [
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "#1f6feb",
  "123456",
  "products.read",
  "order-2026-0001",
  "example"
]

/** Readable values for string fields, by name. */
const stringByName: Readonly<Record<string, string>> = {
  name: "Introduction to photography",
  // An audit entry's actor: a credential, or a payment gateway (`^(crd|gtw)_…`).
  credential_id: `crd_${ID_BODY}`,
  revision: "1",
  image: "https://cdn.example.com/images/cover.png",
  external_id: "crm-4411",
  capabilities: "products.read",
  resources: "prd_0Rb3kX9sT",
  template: "catalog_editor",
  label: "Courses",
  title: "Getting started",
  email: "ada@example.com",
  url: "https://example.com/webhooks/syllabus",
  currency: "BRL",
  purpose: "Nightly sync with the CRM",
  filename: "cover.png",
  content_type: "image/png",
  description: "Shown to learners on the storefront.",
  message: "Example message.",
  key: "item-1",
  type: "product.created",
  event_types: "product.created",
  event_type: "product.created",
  method: "GET",
  path: "/api/v3/products",
  last4: "a1B2",
  html: "<p>Welcome</p>",
  password: "correct horse battery staple",
  code: "123456"
}

const idPatternShape = /^\^([a-z]{2,3}|\[a-z\]\{2,3\})_\[0-9A-Za-z\]\{9\}\$$/

const stringSample = (schema: JsonObject, name: string): string => {
  if (schema.format === "date-time") return EXAMPLE_TIMESTAMP
  if (schema.format === "email") return "ada@example.com"
  if (schema.format === "uri" || schema.format === "url") return "https://example.com/webhooks/syllabus"
  const pattern = typeof schema.pattern === "string" ? schema.pattern : undefined
  if (pattern !== undefined) {
    const id = idPatternShape.exec(pattern)
    if (id !== null) return `${id[1]!.startsWith("[") ? "prd" : id[1]}_${ID_BODY}`
    const regex = new RegExp(pattern, "u")
    const fit = [stringByName[name], ...patternCandidates].find((candidate) => candidate !== undefined && regex.test(candidate))
    if (fit === undefined) throw new Error(`No example fits the pattern ${pattern} of ${name}`)
    return fit
  }
  const min = typeof schema.minLength === "number" ? schema.minLength : 0
  const max = typeof schema.maxLength === "number" ? schema.maxLength : Infinity
  let value = stringByName[name] ?? (name === "" ? "example" : name.replaceAll("_", " "))
  if (value.length > max) value = value.slice(0, max)
  if (value.length < min) value = value.padEnd(min, "x")
  return value
}

const numberSample = (schema: JsonObject, integer: boolean): number => {
  const min = typeof schema.minimum === "number" ? schema.minimum : typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + 1 : undefined
  const max = typeof schema.maximum === "number" ? schema.maximum : undefined
  let value = min !== undefined ? Math.max(min, 1) : 1
  if (max !== undefined && value > max) value = max
  return integer ? Math.ceil(value) : value
}

/**
 * A value valid for the schema. `resolve` gives the component a `$ref` points to. Every
 * property is filled (optional ones too, so that the example shows them); `anyOf` takes its
 * first branch that is not `null`.
 */
export const sampleOf = (schema: Json, resolve: (ref: string) => Json, name = "", depth = 0): Json => {
  if (depth > 12 || !isObject(schema)) return null
  if (typeof schema.$ref === "string") return sampleOf(resolve(schema.$ref), resolve, name, depth + 1)
  if (schema.const !== undefined) return schema.const
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]!
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]!
  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = schema[key]
    if (Array.isArray(branches) && branches.length > 0) {
      const chosen = branches.find((branch) => !(isObject(branch) && branch.type === "null")) ?? branches[0]!
      return sampleOf(chosen, resolve, name, depth + 1)
    }
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type
  switch (type) {
    case "string":
      return stringSample(schema, name)
    case "integer":
      return numberSample(schema, true)
    case "number":
      return numberSample(schema, false)
    case "boolean":
      // An example of a live resource: not in the trash; any other flag on.
      return name !== "deleted"
    case "null":
      return null
    case "array": {
      const count = Math.max(1, typeof schema.minItems === "number" ? schema.minItems : 1)
      const limit = typeof schema.maxItems === "number" ? schema.maxItems : count
      const items = Array.from({ length: Math.min(count, limit) }, () => sampleOf(schema.items ?? {}, resolve, name, depth + 1))
      // Arrays of unique values (sets of IDs) hold one item: the same sample twice would break `uniqueItems`.
      return schema.uniqueItems === true ? items.slice(0, 1) : items
    }
    case "object":
    default: {
      if (!isObject(schema.properties)) return type === "object" ? {} : null
      const out: JsonMap = {}
      for (const [property, child] of Object.entries(schema.properties)) {
        // A property no value satisfies (`not: {}`: not writable) is left out.
        if (isObject(child) && child.not !== undefined) continue
        out[property] = sampleOf(child, resolve, property, depth + 1)
      }
      return out
    }
  }
}

/** `certificate_template` → `CertificateTemplate`: the component a resource type's representation is named by. */
const componentName = (resourceType: string) => resourceType.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase())

/**
 * The example of a resource type's representation in a description: of the component named
 * after the type, else of the first whose `object` is the type (the settings, one component per
 * group); `undefined` when none is. Made once per type. The samples of `POST /sandbox/events`
 * start from it, so that a sample event's payload has its type's schema.
 */
export const representationExamples = (document: () => JsonObject) => {
  const made = new Map<string, JsonObject | undefined>()
  const make = (resourceType: string): JsonObject | undefined => {
    const components = document().components
    const schemas = isObject(components) && isObject(components.schemas) ? components.schemas : {}
    const isOfType = (schema: Json | undefined) =>
      isObject(schema) && isObject(schema.properties) && isObject(schema.properties.object) && Array.isArray(schema.properties.object.enum) &&
      schema.properties.object.enum.length === 1 && schema.properties.object.enum[0] === resourceType
    const named = schemas[componentName(resourceType)]
    const schema = isOfType(named) ? named : Object.values(schemas).find(isOfType)
    if (schema === undefined) return undefined
    const example = sampleOf(schema, (pointer) => schemas[pointer.slice("#/components/schemas/".length)] ?? null)
    return isObject(example) ? example : undefined
  }
  return (resourceType: string): JsonObject | undefined => {
    if (!made.has(resourceType)) made.set(resourceType, make(resourceType))
    return made.get(resourceType)
  }
}

// ---------------------------------------------------------------------------------------
// Errors

/** Codes whose example itemizes a problem, as the server does. */
const itemized: Partial<Record<ErrorCode, { readonly field?: string; readonly parameter?: string; readonly code: DetailCode }>> = {
  validation_failed: { field: "name", code: "required" },
  unknown_field: { field: "nickname", code: "unknown_field" },
  unknown_parameter: { parameter: "colour", code: "unknown_parameter" },
  already_exists: { field: "name", code: "already_exists" },
  item_invalid: { field: "items[0].name", code: "required" }
}

/** The envelope of one error code, as the server answers it in English. */
export const errorExample = (code: ErrorCode): { readonly value: Json } => {
  const detail = itemized[code]
  const error: JsonMap = {
    code,
    message: renderMessage("en-US", code),
    request_id: EXAMPLE_REQUEST_ID,
    details: detail === undefined ? [] : [{ ...detail, message: renderMessage("en-US", detail.code) }]
  }
  if (code === "rate_limit_exceeded") {
    error.retry_after_seconds = 12
    error.blocked_by = ["key"]
    error.limits = [{ scope: "key", limit: 600, window_seconds: 60, remaining: 0, retry_after_seconds: 12 }]
  }
  return { value: { error } }
}
