/**
 * Building blocks for request schemas. Each refinement carries its contract item code (and
 * message parameters) in its message annotation, `code|key=value|…`, so that a decode failure
 * turns into itemized `details` without guessing from English text (see `detailsOf`).
 */
import { Option, ParseResult, Schema, SchemaAST } from "effect"
import type { DetailCode, DetailItem } from "../errors/errors.js"
import { idPrefixes, type IdKind, isId } from "./ids.js"
import { parseTimestamp } from "./time.js"

const coded = (code: DetailCode, params: Record<string, string | number> = {}) =>
  [code, ...Object.entries(params).map(([k, v]) => `${k}=${v}`)].join("|")

/** §8.2: plain text fields hold at most 64 KiB, rich text 512 KiB: sizes, in bytes of UTF-8. */
export const PLAIN_TEXT_MAX = 64 * 1024
export const RICH_TEXT_MAX = 512 * 1024
/** §8.2: arrays hold at most 1,000 items. */
export const ARRAY_MAX = 1000

/**
 * The size of a string once encoded in UTF-8, counted without encoding it (a lone surrogate
 * counts as the 3 bytes of the U+FFFD that replaces it).
 */
export const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

/** Whether a string fits in `maxBytes` of UTF-8; one UTF-16 unit never takes more than 3 bytes, so most strings need no count. */
export const fitsUtf8 = (text: string, maxBytes: number): boolean => text.length * 3 <= maxBytes || utf8Length(text) <= maxBytes

/**
 * The item of a text over a size limit of §8.2: `too_long` with reason `utf8_bytes`, so that
 * its message says bytes, not characters.
 */
export const tooLarge = (maxBytes: number) => coded("too_long", { max: maxBytes, reason: "utf8_bytes" })

/**
 * A text field. With `max`, a length of our own in characters (a name, a URL). Without it, a
 * plain text field of §8.2 (`sizeInBytes` for another size, as rich text): at most that many
 * bytes of UTF-8, whatever the script (`maxLength` in the description is the same figure, a
 * bound no accepted value exceeds in characters; `x-max-utf8-bytes` says the rule).
 */
export const Text = (options: { readonly min?: number; readonly max?: number; readonly sizeInBytes?: number } = {}) => {
  const min = options.min ?? 0
  const string = Schema.String.annotations({ message: () => coded("invalid_type", { expected: "string" }) }).pipe(
    Schema.filter((s) => s.length >= min || coded(min === 1 ? "required" : "too_short", { min }))
  )
  if (options.max !== undefined) {
    const max = options.max
    return string.pipe(
      Schema.filter((s) => s.length <= max || coded("too_long", { max })),
      Schema.annotations({ jsonSchema: { minLength: min, maxLength: max } })
    )
  }
  const maxBytes = options.sizeInBytes ?? PLAIN_TEXT_MAX
  return string.pipe(
    Schema.filter((s) => fitsUtf8(s, maxBytes) || tooLarge(maxBytes)),
    Schema.annotations({ jsonSchema: { minLength: min, maxLength: maxBytes, "x-max-utf8-bytes": maxBytes } })
  )
}

/** Control characters: C0 (CR, LF, tab…), DEL, C1, and the line and paragraph separators. */
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/**
 * Text of one line with no control character: an identifier another system gives us (a
 * gateway's event ID) that may end up in a header, a log line or a CSV cell. 422
 * `invalid_value`, reason `invalid_characters`, as unstorable text.
 */
export const SingleLineText = (options: { readonly min?: number; readonly max?: number } = {}) =>
  Text(options).pipe(Schema.filter((s) => !CONTROL_CHARACTERS.test(s) || coded("invalid_value", { reason: "invalid_characters" })))

/** A rich-text field (HTML or serialized blocks): at most 512 KiB (§8.2). */
export const RichText = (options: { readonly min?: number } = {}) => Text({ min: options.min ?? 0, sizeInBytes: RICH_TEXT_MAX })

export const Integer = (options: { readonly min: number; readonly max: number }) =>
  Schema.Number.annotations({ message: () => coded("invalid_type", { expected: "integer" }) }).pipe(
    Schema.filter((n) => Number.isInteger(n) || coded("invalid_type", { expected: "integer" })),
    Schema.filter((n) => (n >= options.min && n <= options.max) || coded("out_of_range", options)),
    Schema.annotations({ jsonSchema: { type: "integer", minimum: options.min, maximum: options.max } })
  )

export const Bool = Schema.Boolean.annotations({ message: () => coded("invalid_type", { expected: "boolean" }) })

export const Enum = <const L extends ReadonlyArray<string>>(...values: L) =>
  // `override`: the message of the union, not one per literal it failed to be.
  Schema.Literal(...values).annotations({ message: () => ({ message: coded("invalid_value", { allowed: values.join(", ") }), override: true }) })

/**
 * A public ID of one kind in a body: malformed (wrong prefix, not 9 base62 characters, or a
 * number out of range, such as `shw_000000000`: open-points) is the item code `invalid`, whose
 * message names the expected form.
 */
export const PublicId = (kind: IdKind) =>
  Schema.String.annotations({ message: () => coded("invalid", { prefix: `${idPrefixes[kind]}_` }) }).pipe(
    Schema.filter((s) => isId(kind, s) || coded("invalid", { prefix: `${idPrefixes[kind]}_` })),
    Schema.annotations({ jsonSchema: { type: "string", pattern: "^[a-z]{2,3}_[0-9A-Za-z]{9}$" } })
  )

/** An RFC 3339 date-time with any offset. */
export const Timestamp = Schema.String.annotations({ message: () => coded("invalid_type", { expected: "date-time" }) }).pipe(
  Schema.filter((s) => Option.isSome(parseTimestamp(s)) || coded("invalid_value", { expected: "date-time" })),
  Schema.annotations({ jsonSchema: { type: "string", format: "date-time" } })
)

export const List = <A, I, R>(item: Schema.Schema<A, I, R>, max = ARRAY_MAX) =>
  Schema.Array(item).annotations({ message: () => coded("invalid_type", { expected: "array" }) }).pipe(
    Schema.filter((items) => items.length <= max || coded("too_many_items", { max })),
    Schema.annotations({ jsonSchema: { maxItems: max } })
  )

/** Decode options that make unknown fields an error and report every problem. */
export const strict = { onExcessProperty: "error", errors: "all" } as const

const pathText = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`),
    ""
  )

const parseCoded = (message: string): { code: DetailCode; params: Record<string, string | number> } | undefined => {
  const [code, ...pairs] = message.split("|")
  if (code === undefined || !/^[a-z_]+$/.test(code)) return undefined
  const params: Record<string, string | number> = {}
  for (const pair of pairs) {
    const eq = pair.indexOf("=")
    if (eq > 0) params[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return { code: code as DetailCode, params }
}

/** The accepted values of a union of literals (a bare `Schema.Literal`, maybe optional); `undefined` for any other schema. */
const literalValues = (ast: SchemaAST.AST): ReadonlyArray<string> | undefined => {
  const members: ReadonlyArray<SchemaAST.AST> = SchemaAST.isUnion(ast) ? ast.types : [ast]
  const literals = members.filter((m): m is SchemaAST.Literal => SchemaAST.isLiteral(m))
  const others = members.filter((m) => !SchemaAST.isLiteral(m) && !SchemaAST.isUndefinedKeyword(m))
  return literals.length > 0 && others.length === 0 ? literals.map((l) => String(l.literal)) : undefined
}

/**
 * The object a schema expects, as a client reads it (`an object { text }`, its required fields
 * first), when the schema is one (maybe optional or nullable); `undefined` for any other.
 */
const expectedObject = (ast: SchemaAST.AST): string | undefined => {
  const members: ReadonlyArray<SchemaAST.AST> = SchemaAST.isUnion(ast) ? ast.types : [ast]
  const objects = members.filter((m): m is SchemaAST.TypeLiteral => SchemaAST.isTypeLiteral(m))
  const others = members.filter((m) => !SchemaAST.isTypeLiteral(m) && !SchemaAST.isUndefinedKeyword(m) && !(SchemaAST.isLiteral(m) && m.literal === null))
  const [object] = objects
  if (object === undefined || objects.length > 1 || others.length > 0 || object.propertySignatures.length === 0) return undefined
  const names = [...object.propertySignatures]
    .sort((a, b) => Number(a.isOptional) - Number(b.isOptional))
    .map((p) => `${String(p.name)}${p.isOptional ? "?" : ""}`)
  return `an object { ${names.join(", ")} }`
}

/** What the schema at each failing path expected: the values of a union of literals, or the shape of an object. */
interface Expected {
  readonly allowed: Map<string, ReadonlyArray<string>>
  readonly objects: Map<string, string>
}

const expectedByPath = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>, out: Expected) => {
  switch (issue._tag) {
    case "Pointer":
      expectedByPath(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path as PropertyKey])], out)
      return
    case "Composite":
    case "Type": {
      const where = pathText(path)
      const values = literalValues(issue.ast)
      if (values !== undefined && !out.allowed.has(where)) out.allowed.set(where, values)
      // A value that is not an object where one is expected (not a problem inside one).
      const object = issue._tag === "Type" || SchemaAST.isUnion(issue.ast) ? expectedObject(issue.ast) : undefined
      if (object !== undefined && (issue.actual === null || typeof issue.actual !== "object" || Array.isArray(issue.actual)) && !out.objects.has(where)) {
        out.objects.set(where, object)
      }
      if (issue._tag === "Composite") {
        for (const inner of Array.isArray(issue.issues) ? issue.issues : [issue.issues as ParseResult.ParseIssue]) expectedByPath(inner, path, out)
      }
      return
    }
    case "Refinement":
    case "Transformation":
      expectedByPath(issue.issue, path, out)
      return
    default:
      return
  }
}

/**
 * Itemize a decode failure. `location` says whether the paths are body fields or query
 * parameters. One item per path: the most specific problem wins.
 */
export const detailsOf = (error: ParseResult.ParseError, location: "field" | "parameter"): ReadonlyArray<DetailItem> => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const expected: Expected = { allowed: new Map(), objects: new Map() }
  expectedByPath(error.issue, [], expected)
  const seen = new Set<string>()
  const items: Array<DetailItem> = []
  for (const issue of issues) {
    const where = pathText(issue.path)
    if (seen.has(where)) continue
    seen.add(where)
    const decoded =
      issue._tag === "Missing"
        ? { code: "required" as const, params: {} }
        : issue._tag === "Unexpected"
          ? { code: location === "field" ? ("unknown_field" as const) : ("unknown_parameter" as const), params: {} }
          : (parseCoded(issue.message) ??
            (expected.objects.has(where)
              ? { code: "invalid_type" as const, params: { expected: expected.objects.get(where) ?? "an object" } }
              : { code: "invalid_value" as const, params: {} }))
    // The accepted values travel as a list of their own (`allowed`), from the annotation or the schema; a `reason` as the item's own.
    const { allowed: annotated, reason, ...params } = decoded.params
    const values = annotated !== undefined ? String(annotated).split(", ") : decoded.code === "invalid_value" ? expected.allowed.get(where) : undefined
    const item: DetailItem = {
      ...(location === "field" ? { field: where || "body" } : { parameter: where }),
      code: decoded.code,
      ...(reason !== undefined ? { reason: String(reason) } : {}),
      ...(Object.keys(params).length > 0 ? { params } : {}),
      ...(values !== undefined ? { allowed: values } : {})
    }
    items.push(item)
  }
  // A problem inside a field also fails the alternatives around it (`optional`, `NullOr`):
  // only the innermost problem of a path is the client's to fix.
  return items.filter((item) => {
    const at = item.field ?? item.parameter ?? ""
    return !items.some((other) => {
      const inner = other.field ?? other.parameter ?? ""
      return inner !== at && at !== "" && (inner.startsWith(`${at}.`) || inner.startsWith(`${at}[`))
    })
  })
}
