/**
 * The generic call: `syllabus get|post|patch|delete <path>` for any operation of the
 * description, with query parameters, a JSON body (whole, or field by field),
 * `Idempotency-Key` (§3: generated for every POST unless given) and `If-Match` (given, or
 * the ETag of a GET of the same path just before). The answer's JSON goes to stdout; an
 * error answer prints `error.code: message` (and its details) on stderr and exits 1.
 */
import { Effect, Option } from "effect"
import { randomBytes } from "node:crypto"
import { CliError, err, out } from "./context.js"
import { checkOperation } from "./description.js"
import { call, errorOf } from "./http.js"

export type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE"

export interface CallOptions {
  readonly method: Method
  readonly path: string
  /** `name=value`, repeatable; a repeated name is an array (`status=a`, `status=b`). */
  readonly params: ReadonlyArray<string>
  /** One JSON document, or fields `name=value` (text) and `name:=json` (any JSON), `a.b=…` nests, `a[]=…` appends. */
  readonly data: ReadonlyArray<string>
  readonly idempotencyKey: Option.Option<string>
  readonly ifMatch: Option.Option<string>
  readonly autoIfMatch: boolean
}

const invalid = (code: string, message: string) => new CliError({ code, message })

/** `/api/v3/products?x=1` and `products` are both `/products`: paths are relative to `/api/v3`. */
export const apiPath = (path: string) => {
  const withSlash = path.startsWith("/") ? path : `/${path}`
  return withSlash.replace(/^\/api\/v3(?=\/|$)/, "") || "/"
}

/** The path with the `--param`s added to its query string. */
export const withParams = (path: string, params: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const queryAt = path.indexOf("?")
    const [base, existing] = queryAt === -1 ? [path, ""] : [path.slice(0, queryAt), path.slice(queryAt + 1)]
    const query = new URLSearchParams(existing)
    for (const param of params) {
      const equals = param.indexOf("=")
      if (equals <= 0) return yield* Effect.fail(invalid("invalid_param", `--param ${param}: expected name=value`))
      query.append(param.slice(0, equals), param.slice(equals + 1))
    }
    const text = query.toString()
    return text === "" ? base : `${base}?${text}`
  })

type JsonObject = { [key: string]: unknown }

/** Set `value` at a dotted name (`a.b.c`, `tags[]` appends) inside `target`. */
const assign = (target: JsonObject, name: string, value: unknown): boolean => {
  const keys = name.split(".")
  let node = target
  for (const [i, raw] of keys.entries()) {
    const append = raw.endsWith("[]")
    const key = append ? raw.slice(0, -2) : raw
    if (key === "") return false
    const last = i === keys.length - 1
    if (last) {
      if (append) {
        const list = node[key]
        if (list === undefined) node[key] = [value]
        else if (Array.isArray(list)) list.push(value)
        else return false
      } else node[key] = value
      return true
    }
    if (append) return false
    const next = node[key]
    if (next === undefined) node[key] = {}
    else if (typeof next !== "object" || next === null || Array.isArray(next)) return false
    node = node[key] as JsonObject
  }
  return true
}

/** The JSON body of `--data`, or `undefined` when none was given. */
export const bodyOf = (data: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (data.length === 0) return undefined
    const first = data[0]!.trimStart()
    if (data.length === 1 && (first.startsWith("{") || first.startsWith("["))) {
      return yield* Effect.try({
        try: () => JSON.parse(data[0]!) as unknown,
        catch: (cause) => invalid("invalid_data", `--data is not valid JSON: ${cause instanceof Error ? cause.message : String(cause)}`)
      })
    }
    const body: JsonObject = {}
    for (const field of data) {
      const match = /^([^=:]+)(:?=)([\s\S]*)$/.exec(field)
      if (!match) return yield* Effect.fail(invalid("invalid_data", `--data ${field}: expected name=text, name:=json or one JSON document`))
      const [, name, operator, raw] = match as unknown as [string, string, string, string]
      let value: unknown = raw
      if (operator === ":=") {
        const parsed = Option.liftThrowable(JSON.parse)(raw)
        if (Option.isNone(parsed)) return yield* Effect.fail(invalid("invalid_data", `--data ${field}: the value after := is not JSON`))
        value = parsed.value
      }
      if (!assign(body, name, value)) return yield* Effect.fail(invalid("invalid_data", `--data ${field}: ${name} conflicts with another field`))
    }
    return body
  })

export const newIdempotencyKey = () => `cli-${randomBytes(16).toString("hex")}`

/** The ETag of a GET of `path`, for `--auto-if-match`. */
const currentEtag = (path: string) =>
  Effect.gen(function* () {
    const result = yield* call({ method: "GET", path })
    if (result.status >= 400) return yield* Effect.fail(errorOf(result))
    const etag = result.headers.get("etag")
    if (etag === null) return yield* Effect.fail(invalid("no_etag", `GET ${path} answered no ETag: this resource takes no If-Match`))
    return etag
  })

/** The whole generic call: check the operation, send it, print the answer. */
export const genericCall = (options: CallOptions) =>
  Effect.gen(function* () {
    const path = yield* withParams(apiPath(options.path), options.params)
    yield* checkOperation(options.method, path)
    if (options.autoIfMatch && Option.isSome(options.ifMatch)) {
      return yield* Effect.fail(invalid("invalid_options", "give --if-match or --auto-if-match, not both"))
    }
    const body = yield* bodyOf(options.data)
    const headers: Record<string, string> = {}
    const idempotencyKey = Option.orElse(options.idempotencyKey, () => (options.method === "POST" ? Option.some(newIdempotencyKey()) : Option.none()))
    if (Option.isSome(idempotencyKey)) headers["idempotency-key"] = idempotencyKey.value
    const ifMatch = options.autoIfMatch ? Option.some(yield* currentEtag(path.split("?")[0]!)) : options.ifMatch
    if (Option.isSome(ifMatch)) headers["if-match"] = ifMatch.value

    const result = yield* call({ method: options.method, path, headers, ...(body !== undefined ? { body } : {}) }).pipe(
      Effect.tapError(() =>
        // No answer: the outcome is unknown (§7), and the same key makes a retry safe.
        Option.isSome(idempotencyKey) ? err(`To retry safely: --idempotency-key ${idempotencyKey.value}\n`) : Effect.void
      )
    )
    if (result.status >= 400) {
      if (result.status >= 500 && Option.isSome(idempotencyKey)) yield* err(`To retry safely: --idempotency-key ${idempotencyKey.value}\n`)
      return yield* Effect.fail(errorOf(result))
    }
    if (result.body !== undefined) yield* out(JSON.stringify(result.body, null, 2) + "\n")
  })
