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

/** §8.2: plain text fields hold at most 64 KiB, rich text 512 KiB. */
export const PLAIN_TEXT_MAX = 64 * 1024
export const RICH_TEXT_MAX = 512 * 1024
/** §8.2: arrays hold at most 1,000 items. */
export const ARRAY_MAX = 1000

export const Text = (options: { readonly min?: number; readonly max?: number } = {}) => {
  const min = options.min ?? 0
  const max = options.max ?? PLAIN_TEXT_MAX
  return Schema.String.annotations({ message: () => coded("invalid_type", { expected: "string" }) }).pipe(
    Schema.filter((s) => s.length >= min || coded(min === 1 ? "required" : "too_short", { min })),
    Schema.filter((s) => s.length <= max || coded("too_long", { max })),
    Schema.annotations({ jsonSchema: { minLength: min, maxLength: max } })
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
export const RichText = (options: { readonly min?: number } = {}) => Text({ min: options.min ?? 0, max: RICH_TEXT_MAX })

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

/** For every path where a value failed a union of literals, the values it could have been. */
const allowedByPath = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>, out: Map<string, ReadonlyArray<string>>) => {
  switch (issue._tag) {
    case "Pointer":
      allowedByPath(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path as PropertyKey])], out)
      return
    case "Composite":
    case "Type": {
      const values = literalValues(issue.ast)
      if (values !== undefined && !out.has(pathText(path))) out.set(pathText(path), values)
      if (issue._tag === "Composite") {
        for (const inner of Array.isArray(issue.issues) ? issue.issues : [issue.issues as ParseResult.ParseIssue]) allowedByPath(inner, path, out)
      }
      return
    }
    case "Refinement":
    case "Transformation":
      allowedByPath(issue.issue, path, out)
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
  const allowed = new Map<string, ReadonlyArray<string>>()
  allowedByPath(error.issue, [], allowed)
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
          : (parseCoded(issue.message) ?? { code: "invalid_value" as const, params: {} })
    // The accepted values travel as a list of their own (`allowed`), from the annotation or the schema; a `reason` as the item's own.
    const { allowed: annotated, reason, ...params } = decoded.params
    const values = annotated !== undefined ? String(annotated).split(", ") : decoded.code === "invalid_value" ? allowed.get(where) : undefined
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
