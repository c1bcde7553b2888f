/**
 * fast-check arbitraries from the JSON Schemas of the description (the subset it uses:
 * `type`, `enum`, `anyOf`, `properties`/`required`/`additionalProperties`, `items`,
 * `minItems`/`maxItems`, `minLength`/`maxLength`, `minimum`/`maximum`, `pattern`, `format`).
 *
 * - `validValue`: values the schema accepts ("valid-ish": the description cannot say
 *   everything, e.g. that a referenced showcase must exist).
 * - `violation`: a valid value with exactly one change the schema refuses (a required field
 *   removed, a wrong type, a string over `maxLength`, an array over `maxItems`, a value out of
 *   the enum, an unknown property, ...) and the place (the contract's `details[].field`) the
 *   server must name; or a value at a bound the schema accepts, which must not be refused for
 *   that bound.
 */
import fc from "fast-check"
import type { JsonSchema } from "./description.js"
import { allPrefixes, fieldFixture, type FixtureKind, fixtureKinds } from "./fixtures.js"

// ---------------------------------------------------------------------------------------
// Names of fixtures inside generated values

/** A value that stands for a fixture's public ID; each store reads its own. */
export class Ref {
  constructor(readonly kind: FixtureKind) {}
  [fc.toStringMethod]() {
    return `Ref(${this.kind})`
  }
}

/** A property created with `defineProperty`, so that `__proto__` is a key like any other. */
export const withKey = (object: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> => {
  const copy: Record<string, unknown> = {}
  for (const k of Object.keys(object)) Object.defineProperty(copy, k, { value: object[k], enumerable: true, writable: true, configurable: true })
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true })
  return copy
}

/** Replace every `Ref` by the fixture's ID (keys kept as own properties, `__proto__` included). */
export const resolveRefs = (value: unknown, ids: Readonly<Record<FixtureKind, string>>): unknown => {
  if (value instanceof Ref) return ids[value.kind]
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, ids))
  if (value !== null && typeof value === "object") {
    let out: Record<string, unknown> = {}
    for (const key of Object.keys(value)) out = withKey(out, key, resolveRefs((value as Record<string, unknown>)[key], ids))
    return out
  }
  return value
}

// ---------------------------------------------------------------------------------------
// Building blocks

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const GENERIC_ID_PATTERN = "^[a-z]{2,3}_[0-9A-Za-z]{9}$"

/** A public ID of this prefix whose body is a small integer (in range, almost surely missing). */
export const idOf = (prefix: string): fc.Arbitrary<string> =>
  fc.stringMatching(/^[0-9A-Za-z]{9}$/).map((body) => `${prefix}_${body.replace(/^./, "0")}`)

/** Bodies whose integer is above 2^53 - 1: "above the supported range" (§2.2). */
export const outOfRangeIdOf = (prefix: string): fc.Arbitrary<string> =>
  fc.stringMatching(/^[b-z][0-9A-Za-z]{8}$/).map((body) => `${prefix}_${body}`)

const prefixOfPattern = (pattern: string | undefined): string | undefined => /^\^([a-z]{2,3})_\[0-9A-Za-z\]\{9\}\$$/.exec(pattern ?? "")?.[1]

export const intBetween = (min: number, max: number): fc.Arbitrary<number> => {
  if (min > max) return fc.constant(min)
  const core =
    min >= -0x80000000 && max <= 0x7fffffff
      ? fc.integer({ min, max })
      : fc.bigInt({ min: BigInt(Math.max(min, Number.MIN_SAFE_INTEGER)), max: BigInt(Math.min(max, Number.MAX_SAFE_INTEGER)) }).map(Number)
  return fc.oneof({ weight: 6, arbitrary: core }, { weight: 1, arbitrary: fc.constant(min) }, { weight: 1, arbitrary: fc.constant(max) })
}

/** Printable text, mostly ASCII, sometimes any well-formed Unicode (never U+0000 or a lone surrogate). */
export const printable = (minLength: number, maxLength: number): fc.Arbitrary<string> => {
  const max = Math.min(maxLength, minLength + 24)
  return fc
    .oneof(
      { weight: 4, arbitrary: fc.string({ minLength, maxLength: max, unit: "grapheme-ascii" }) },
      { weight: 1, arbitrary: fc.string({ minLength, maxLength: max, unit: "grapheme" }) }
    )
    .filter((s) => s.length >= minLength && s.length <= maxLength && !/\u0000/.test(s))
}

/** A string of exactly `length` UTF-16 code units, ASCII. */
export const asciiOfLength = (length: number): fc.Arbitrary<string> =>
  fc.constantFrom("a", "Z", "9", " ", "~").map((c) => c.repeat(length))

const isoDate = fc.date({ min: new Date("1971-01-01T00:00:00Z"), max: new Date("2098-12-31T00:00:00Z"), noInvalidDate: true })

const dateTime: fc.Arbitrary<string> = fc.oneof(
  isoDate.map((d) => d.toISOString()),
  fc.tuple(isoDate, fc.integer({ min: -12, max: 14 })).map(([d, h]) => {
    const shifted = new Date(d.getTime() + h * 3_600_000).toISOString().slice(0, 19)
    return `${shifted}${h < 0 ? "-" : "+"}${String(Math.abs(h)).padStart(2, "0")}:00`
  })
)

const email = fc.tuple(fc.stringMatching(/^[a-z0-9]{1,16}$/), fc.constantFrom("example.com", "example.org", "mail.example.net")).map(([l, d]) => `${l}@${d}`)

const uri = fc
  .tuple(fc.constantFrom("https://example.com", "https://www.youtube.com", "https://vimeo.com", "https://cdn.example.org"), fc.stringMatching(/^(\/[a-z0-9_-]{1,10}){0,3}$/))
  .map(([origin, path]) => origin + path)

/** The JSON types a schema accepts ("integer" counted apart from "number"). */
export const typesOf = (schema: JsonSchema): ReadonlySet<string> => {
  if (schema.anyOf) return new Set((schema.anyOf as Array<JsonSchema>).flatMap((s) => [...typesOf(s)]))
  if (schema.enum) return new Set((schema.enum as Array<unknown>).map((v) => (v === null ? "null" : typeof v)))
  if (Array.isArray(schema.type)) return new Set(schema.type as Array<string>)
  if (typeof schema.type === "string") return new Set([schema.type])
  return new Set(["string", "number", "integer", "boolean", "null", "object", "array"])
}

export interface GenOptions {
  /** The operation, for the fixtures its ID fields name. */
  readonly operationId: string
  /** Plain ASCII and fewer optional fields: values meant to be accepted whole (the replay property). */
  readonly clean?: boolean
}

// ---------------------------------------------------------------------------------------
// Valid values

export const validValue = (schema: JsonSchema, options: GenOptions, name?: string): fc.Arbitrary<unknown> => {
  // An IP address (a string of one of the formats `ipv4`, `ipv6`).
  if (schema.type === "string" && Array.isArray(schema.anyOf) && schema.anyOf.some((s: JsonSchema) => s.format === "ipv4")) {
    return options.clean ? fc.ipV4() : fc.oneof(fc.ipV4(), fc.ipV6())
  }
  if (schema.anyOf) {
    const members = (schema.anyOf as Array<JsonSchema>).map((s) => validValue(s, options, name))
    return options.clean ? members[0]! : fc.oneof(...members)
  }
  if (schema.enum) return fc.constantFrom(...(schema.enum as Array<unknown>))
  if (Array.isArray(schema.type)) {
    return fc.oneof(...(schema.type as Array<string>).map((type) => validValue({ ...schema, type }, options, name)))
  }
  switch (schema.type) {
    case "null":
      return fc.constant(null)
    case "boolean":
      return fc.boolean()
    case "integer":
      // An acceptance of the fixture legal term names its one version.
      if (options.clean && options.operationId === "term_acceptances.create" && name === "version") return fc.constant(1)
      return intBetween(schema.minimum ?? -1_000_000, schema.maximum ?? 1_000_000)
    case "number":
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true })
    case "string":
      return validString(schema, options, name)
    case "array": {
      // A funnel's steps follow rules the description states in prose only (an offer with its
      // delivery; docs/sales.md): the replay's clean create sends the smallest funnel that keeps them.
      if (options.clean && options.operationId === "funnels.create" && name === "steps") {
        return fc.constant([{ kind: "offer", name: "Fuzz offer", delivery_id: new Ref("delivery") }])
      }
      const min = schema.minItems ?? 0
      const max = Math.min(schema.maxItems ?? 5, min + (options.clean ? 1 : 3))
      return fc.array(validValue(schema.items ?? {}, options, name), { minLength: min, maxLength: max })
    }
    case "object":
      return validObject(schema, options)
    default:
      return fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null))
  }
}

const validString = (schema: JsonSchema, options: GenOptions, name: string | undefined): fc.Arbitrary<unknown> => {
  const pattern: string | undefined = schema.pattern
  const exactPrefix = prefixOfPattern(pattern)
  if (pattern === GENERIC_ID_PATTERN || exactPrefix !== undefined) {
    const kind = fieldFixture(options.operationId, name)
    const prefix = exactPrefix ?? (kind ? fixtureKinds[kind] : undefined)
    const fixture: Array<fc.Arbitrary<unknown>> = kind ? [fc.constant(new Ref(kind))] : []
    if (options.clean && fixture.length > 0) return fixture[0]!
    return fc.oneof(
      ...fixture.map((arbitrary) => ({ weight: 4, arbitrary })),
      { weight: 1, arbitrary: prefix ? idOf(prefix) : fc.constantFrom(...allPrefixes).chain(idOf) }
    )
  }
  if (pattern !== undefined) return fc.stringMatching(new RegExp(pattern))
  // A replica link names another account by its subdomain (a rule the description states in prose).
  if (options.clean && options.operationId === "replicas.create" && name === "target_subdomain") return fc.constant(new Ref("replica_target"))
  // A file ID described in prose only (`images.desktop`): the fixture file, sometimes.
  const kind = fieldFixture(options.operationId, name)
  if (kind === "file") return options.clean ? fc.constant(new Ref("file")) : fc.oneof(fc.constant(new Ref("file")), idOf("fil"))
  // A media type: common ones (which a purpose accepts is not described; see docs/reliability.md).
  if (name === "content_type") return fc.constantFrom("image/png", "image/jpeg", "application/pdf", "text/csv", "text/plain", "application/json", "video/mp4")
  if (schema.format === "date-time") return dateTime
  if (schema.format === "email") return email
  if (schema.format === "uri") return uri
  const min: number = schema.minLength ?? 0
  const max: number = schema.maxLength ?? 65_536
  if (options.clean) {
    const alnum = fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    return fc.string({ unit: alnum, minLength: Math.max(min, 1), maxLength: Math.min(max, Math.max(min, 1) + 20) })
  }
  return printable(min, max)
}

const validObject = (schema: JsonSchema, options: GenOptions): fc.Arbitrary<unknown> => {
  const properties: Record<string, JsonSchema> = schema.properties ?? {}
  const required = new Set<string>(schema.required ?? [])
  const model: Record<string, fc.Arbitrary<unknown>> = {}
  for (const [key, sub] of Object.entries(properties)) model[key] = validValue(sub, options, key)
  const requiredKeys = Object.keys(properties).filter((k) => required.has(k))
  const record = fc.record(model, { requiredKeys })
  const extra = schema.additionalProperties
  if (extra && typeof extra === "object" && Object.keys(properties).length === 0) {
    // A map (`custom_fields`): a few entries.
    return fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/), validValue(extra, options), { maxKeys: options.clean ? 0 : 3 })
  }
  if (options.clean) {
    // Required fields, and each optional one only now and then.
    const count = Object.keys(properties).length
    const keep = fc.array(fc.integer({ min: 0, max: 3 }).map((n) => n === 0), { minLength: count, maxLength: count })
    return fc.tuple(record, keep).map(([value, kept]) =>
      Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([k]) => required.has(k) || kept[Object.keys(properties).indexOf(k)] === true))
    )
  }
  return record
}

// ---------------------------------------------------------------------------------------
// Places in a value

type Segment = string | number

/** The contract's name for a place in a body: `a.b[2].c` (the server's `details[].field`). */
export const fieldPath = (path: ReadonlyArray<Segment>): string =>
  path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? key : `${acc}.${key}`), "")

interface Site {
  readonly path: ReadonlyArray<Segment>
  /** The schema that describes the value at this place (the member of an `anyOf` it matches, when it is an object or array). */
  readonly schema: JsonSchema
  /** The whole schema of the place (with its `anyOf`), for the types it accepts. */
  readonly declared: JsonSchema
  readonly value: unknown
}

const typeOfValue = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value === "number" ? (Number.isInteger(value) ? "integer" : "number") : typeof value

/** The member of `anyOf` that describes this value (by its JSON type). */
const memberFor = (schema: JsonSchema, value: unknown): JsonSchema => {
  if (!schema.anyOf) return schema
  const type = typeOfValue(value)
  const members = schema.anyOf as Array<JsonSchema>
  return (
    members.find((m) => m.type === type || (type === "integer" && m.type === "number") || (Array.isArray(m.type) && m.type.includes(type))) ??
    members[0]!
  )
}

/** Every place of a value with the schema describing it (the root excluded). */
export const sitesOf = (schema: JsonSchema, value: unknown, path: ReadonlyArray<Segment> = []): Array<Site> => {
  const out: Array<Site> = []
  const member = memberFor(schema, value)
  if (path.length > 0) out.push({ path, schema: member, declared: schema, value })
  if (Array.isArray(value) && member.items) {
    value.forEach((item, i) => out.push(...sitesOf(member.items, item, [...path, i])))
  } else if (value !== null && typeof value === "object" && !(value instanceof Ref)) {
    const properties: Record<string, JsonSchema> = member.properties ?? {}
    for (const [key, item] of Object.entries(value)) {
      const sub = properties[key] ?? (typeof member.additionalProperties === "object" ? member.additionalProperties : undefined)
      if (sub) out.push(...sitesOf(sub, item, [...path, key]))
    }
  }
  return out
}

const setAt = (value: unknown, path: ReadonlyArray<Segment>, replace: (old: unknown) => unknown): unknown => {
  if (path.length === 0) return replace(value)
  const [head, ...rest] = path
  if (Array.isArray(value)) return value.map((v, i) => (i === head ? setAt(v, rest, replace) : v))
  const object = value as Record<string, unknown>
  let out: Record<string, unknown> = {}
  for (const key of Object.keys(object)) out = withKey(out, key, key === head ? setAt(object[key], rest, replace) : object[key])
  return out
}

const REMOVE = Symbol("remove")
const withoutRemoved = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.filter((v) => v !== REMOVE).map(withoutRemoved)
  if (value !== null && typeof value === "object" && !(value instanceof Ref)) {
    let out: Record<string, unknown> = {}
    for (const key of Object.keys(value)) {
      const v = (value as Record<string, unknown>)[key]
      if (v !== REMOVE) out = withKey(out, key, withoutRemoved(v))
    }
    return out
  }
  return value
}

// ---------------------------------------------------------------------------------------
// Violations

/** What the server must answer about one changed place. */
export type Expectation =
  | { readonly kind: "refused"; readonly field: string; readonly itemCode?: string; readonly what: string }
  | { readonly kind: "bound-accepted"; readonly field: string; readonly what: string; readonly forbidden: ReadonlyArray<string> }

export interface Mutated {
  readonly body: unknown
  readonly expect: Expectation
}

/** Values of each JSON type, some of them odd: huge, negative zero, NaN-like strings, nesting. */
const valuesOfType: Readonly<Record<string, ReadonlyArray<unknown>>> = {
  string: ["NaN", "Infinity", "-Infinity", "1e309", "0x1F", "", " ", "true", "null", "123", "\u200b", "日本語", "\ud83d\ude00"],
  number: [1.5, -0.000001, 1e308, -1e308, 2 ** 53 + 2, 0.1],
  integer: [0, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 1, -(2 ** 53 - 1)],
  boolean: [true, false],
  null: [null],
  array: [[], [1, "a", null], [[[[[[[[["deep"]]]]]]]]]],
  object: [{}, { a: 1 }, { a: { b: { c: { d: { e: { f: { g: {} } } } } } } }]
}

/** A value of a JSON type the schema does not accept. */
const wrongTyped = (declared: JsonSchema): fc.Arbitrary<unknown> | undefined => {
  const accepted = typesOf(declared)
  const candidates = Object.entries(valuesOfType)
    .filter(([type]) => !accepted.has(type) && !(type === "integer" && accepted.has("number")))
    .flatMap(([, values]) => values)
    // An integer schema refuses fractions; a number schema accepts whole numbers.
    .filter((v) => !(typeof v === "number" && Number.isInteger(v) && (accepted.has("number") || accepted.has("integer"))))
  return candidates.length === 0 ? undefined : fc.constantFrom(...candidates)
}

/** A name no described object has: odd ones included. */
export const unknownKey = (known: ReadonlyArray<string>): fc.Arbitrary<string> =>
  fc
    .oneof(
      fc.constantFrom("__proto__", "constructor", "toString", "hasOwnProperty", "prototype", "id", "object", "revision", "created_at", "deleted", "secret", "account_id", "a.b", "[0]", " ", "日本", "🙂"),
      fc.constantFrom(...(known.length > 0 ? known : ["name"])).map((k) => k.toUpperCase() + "_"),
      fc.constantFrom(...(known.length > 0 ? known : ["name"])).map((k) => ` ${k}`),
      fc.string({ minLength: 1, maxLength: 12, unit: "grapheme" })
    )
    .filter((k) => !known.includes(k) && !/\u0000/.test(k))

const NOT_MATCHING = ["", " ", "x", "ABC_000000001", "prd_00000000", "prd_0000000001", "prd-000000001", "PRD_000000001", "prd_00000000!", "#12345", "not a value", "\u00e9", "0".repeat(70)]

/**
 * One change the schema refuses, at one place, or a bound it accepts. `null` when the body
 * has no place for any (an empty schema).
 */
export const violation = (schema: JsonSchema, options: GenOptions): fc.Arbitrary<Mutated> =>
  validValue(schema, options).chain((body) => {
    const sites = sitesOf(schema, body)
    const choices: Array<fc.Arbitrary<Mutated>> = []
    const refused = (site: Site, what: string, replacement: fc.Arbitrary<unknown>, itemCode?: string) =>
      replacement.map(
        (r): Mutated => ({
          body: withoutRemoved(setAt(body, site.path, () => r)),
          expect: { kind: "refused", field: fieldPath(site.path), what, ...(itemCode === undefined ? {} : { itemCode }) }
        })
      )
    const accepted = (site: Site, what: string, replacement: fc.Arbitrary<unknown>, forbidden: ReadonlyArray<string>) =>
      replacement.map((r): Mutated => ({ body: setAt(body, site.path, () => r), expect: { kind: "bound-accepted", field: fieldPath(site.path), what, forbidden } }))

    // Objects (the root too): a required field missing, a field no schema names.
    const objects: Array<{ path: ReadonlyArray<Segment>; schema: JsonSchema; value: Record<string, unknown> }> = []
    if (body !== null && typeof body === "object" && !Array.isArray(body)) objects.push({ path: [], schema, value: body as Record<string, unknown> })
    for (const site of sites) {
      if (site.value !== null && typeof site.value === "object" && !Array.isArray(site.value) && !(site.value instanceof Ref) && site.schema.type === "object") {
        objects.push({ path: site.path, schema: site.schema, value: site.value as Record<string, unknown> })
      }
    }
    for (const object of objects) {
      for (const key of (object.schema.required ?? []) as Array<string>) {
        if (key in object.value) {
          choices.push(
            fc.constant<Mutated>({
              body: withoutRemoved(setAt(body, [...object.path, key], () => REMOVE)),
              expect: { kind: "refused", field: fieldPath([...object.path, key]), what: "required field missing", itemCode: "required" }
            })
          )
        }
      }
      if (object.schema.additionalProperties === false) {
        const known = Object.keys(object.schema.properties ?? {})
        choices.push(
          fc.tuple(unknownKey(known), fc.constantFrom<unknown>("x", 1, null, true, {}, [])).map(([key, v]): Mutated => ({
            body: setAt(body, object.path, (o) => withKey(o as Record<string, unknown>, key, v)),
            expect: { kind: "refused", field: fieldPath([...object.path, key]), what: `unknown property ${JSON.stringify(key)}`, itemCode: "unknown_field" }
          }))
        )
      }
    }

    for (const site of sites) {
      const s = site.schema
      const wrong = wrongTyped(site.declared)
      if (wrong) choices.push(refused(site, "wrong type", wrong))
      if (s.enum) {
        choices.push(
          refused(
            site,
            "value outside the enum",
            fc.constantFrom(...(s.enum as Array<string>).flatMap((v) => [String(v).toUpperCase() + "X", ` ${v}`, `${v}\u200b`]), "", "other").filter((v) => !(s.enum as Array<unknown>).includes(v))
          )
        )
      } else if (typeof site.value === "string" || site.value instanceof Ref) {
        if (s.pattern !== undefined) {
          const re = new RegExp(s.pattern)
          choices.push(refused(site, `string not matching ${s.pattern}`, fc.constantFrom(...NOT_MATCHING).filter((v) => !re.test(v))))
        }
        if (s.maxLength !== undefined && s.maxLength <= 600_000) {
          choices.push(refused(site, `string over maxLength ${s.maxLength}`, asciiOfLength(s.maxLength + 1)))
          if (s.pattern === undefined && s.format === undefined && s.maxLength <= 70_000) {
            choices.push(accepted(site, `string at maxLength ${s.maxLength}`, asciiOfLength(s.maxLength), ["too_long", "invalid_type", "required"]))
          }
        }
        if (s.minLength !== undefined && s.minLength > 0) {
          choices.push(refused(site, `string under minLength ${s.minLength}`, asciiOfLength(s.minLength - 1)))
        }
        if (s.format === "date-time") {
          // Impossible calendar dates (2024-02-30) have a property of their own (suite.ts, "impossible-dates").
          choices.push(refused(site, "not a date-time", fc.constantFrom("2024-13-01T00:00:00Z", "yesterday", "2024-01-01", "1704067200", "2024-01-01T25:00:00Z", "")))
        }
        if (s.format === "email") choices.push(refused(site, "not an email", fc.constantFrom("not-an-email", "@example.com", "a@", "a b@example.com")))
        if (s.format === "uri") choices.push(refused(site, "not a URI", fc.constantFrom("not a uri", "::::", "http//missing-colon", "https://exa mple.com/")))
      }
      if (typeof site.value === "number" && (s.type === "integer" || s.type === "number")) {
        if (s.minimum !== undefined) {
          choices.push(refused(site, `number under minimum ${s.minimum}`, fc.constantFrom(s.minimum - 1, s.minimum - 1e9, -1e308)))
          choices.push(accepted(site, `number at minimum ${s.minimum}`, fc.constant(s.minimum), ["out_of_range", "invalid_type", "required"]))
        }
        if (s.maximum !== undefined) {
          choices.push(refused(site, `number over maximum ${s.maximum}`, fc.constantFrom(s.maximum + 1, 1e308)))
          choices.push(accepted(site, `number at maximum ${s.maximum}`, fc.constant(s.maximum), ["out_of_range", "invalid_type", "required"]))
        }
        if (s.type === "integer") choices.push(refused(site, "fraction for an integer", fc.constantFrom(1.5, 0.5, -2.25)))
      }
      if (Array.isArray(site.value) && s.type === "array") {
        const items = site.value
        const filler = items.length > 0 ? fc.constant(items[0]) : validValue(s.items ?? {}, options)
        if (s.maxItems !== undefined && s.maxItems <= 1000) {
          choices.push(refused(site, `array over maxItems ${s.maxItems}`, filler.map((item) => Array.from({ length: s.maxItems + 1 }, () => item))))
          if (s.maxItems <= 100) {
            choices.push(accepted(site, `array at maxItems ${s.maxItems}`, filler.map((item) => Array.from({ length: s.maxItems }, () => item)), ["too_many_items", "invalid_type", "required"]))
          }
        }
        if (s.minItems !== undefined && s.minItems > 0) {
          choices.push(refused(site, `array under minItems ${s.minItems}`, fc.constant(items.slice(0, s.minItems - 1))))
        }
      }
    }
    if (choices.length === 0) {
      // Nothing to change but the root: an unknown property there (every body is a closed object).
      return unknownKey(Object.keys(schema.properties ?? {})).map((key): Mutated => ({
        body: withKey((body ?? {}) as Record<string, unknown>, key, 1),
        expect: { kind: "refused", field: key, what: `unknown property ${JSON.stringify(key)}`, itemCode: "unknown_field" }
      }))
    }
    return fc.oneof(...choices)
  })

/** A valid body with one unknown property added, at the root or in a closed nested object. */
export const withUnknownProperty = (schema: JsonSchema, options: GenOptions): fc.Arbitrary<Mutated> =>
  validValue(schema, options).chain((body) => {
    const objects: Array<{ path: ReadonlyArray<Segment>; schema: JsonSchema }> = [{ path: [], schema }]
    for (const site of sitesOf(schema, body)) {
      if (site.schema.type === "object" && site.schema.additionalProperties === false && site.value !== null && typeof site.value === "object" && !Array.isArray(site.value)) {
        objects.push({ path: site.path, schema: site.schema })
      }
    }
    return fc.tuple(fc.constantFrom(...objects), fc.constantFrom<unknown>("x", 0, null, false, {}, [1])).chain(([object, value]) =>
      unknownKey(Object.keys(object.schema.properties ?? {})).map((key): Mutated => ({
        body: setAt(body, object.path, (o) => withKey((o ?? {}) as Record<string, unknown>, key, value)),
        expect: { kind: "refused", field: fieldPath([...object.path, key]), what: `unknown property ${JSON.stringify(key)}`, itemCode: "unknown_field" }
      }))
    )
  })

/** Text PostgreSQL cannot store: U+0000 or a UTF-16 surrogate without its pair. */
export const unstorableText: fc.Arbitrary<string> = fc
  .tuple(
    fc.string({ maxLength: 6, unit: "grapheme-ascii" }),
    fc.constantFrom("\u0000", "\ud800", "\udbff", "\udc00", "\udfff", "\u0000\u0000", "\ud83d", "\ude00\ud83d"),
    fc.string({ maxLength: 6, unit: "grapheme-ascii" })
  )
  .map(([a, bad, b]) => a + bad + b)

/** Dates RFC 3339 refuses though each field is in range: no such day in that month (and year). */
export const impossibleDates = ["2024-02-30T10:00:00Z", "2023-02-29T00:00:00Z", "2024-04-31T12:00:00+02:00", "2024-06-31T00:00:00.000Z", "2025-11-31T23:59:59Z"] as const

/** A valid body where one string (or one object key) holds unstorable text; the place the server must name. */
export const withUnstorableText = (schema: JsonSchema, options: GenOptions): fc.Arbitrary<Mutated> =>
  validValue(schema, options).chain((body) => {
    const strings = sitesOf(schema, body).filter((s) => typeof s.value === "string" || s.value instanceof Ref)
    const inString = strings.map((site) =>
      unstorableText.map((text): Mutated => ({
        body: setAt(body, site.path, () => text),
        expect: { kind: "refused", field: fieldPath(site.path), what: `unstorable text ${JSON.stringify(text)}`, itemCode: "invalid_value" }
      }))
    )
    const inKey = unstorableText.map((key): Mutated => ({
      body: withKey((body ?? {}) as Record<string, unknown>, key, "x"),
      expect: { kind: "refused", field: storableForm(key), what: `unstorable key ${JSON.stringify(key)}`, itemCode: "invalid_value" }
    }))
    return fc.oneof(...inString, inKey)
  })

/** How the contract names a place whose name holds unstorable text: those characters as U+FFFD. */
export const storableForm = (text: string): string =>
  text.replace(/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd")

export { BASE62 }
