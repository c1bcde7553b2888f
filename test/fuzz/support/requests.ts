/**
 * Generated requests: a described operation with generated path values, query, headers and
 * body. A request names fixtures symbolically (`Ref`), so one generated request can be sent
 * to each store with that store's IDs (the cross-store property).
 */
import fc from "fast-check"
import type { Harness, Response } from "../../support/harness.js"
import { sent } from "./config.js"
import type { DescribedOperation, Description, Parameter } from "./description.js"
import { allPrefixes, fieldFixture, type FixtureKind, type Fixtures, fixtureKinds, pathParamFixture } from "./fixtures.js"
import {
  idOf,
  intBetween,
  outOfRangeIdOf,
  printable,
  Ref,
  resolveRefs,
  unknownKey,
  validValue,
  violation,
  withUnknownProperty,
  withUnstorableText
} from "./schema-arbitraries.js"

export const API = "/api/v3"

// ---------------------------------------------------------------------------------------
// The model

export type PathValue =
  | { readonly kind: "fixture"; readonly fixture: FixtureKind }
  /** The fixture's ID with every character percent-encoded: the same resource. */
  | { readonly kind: "fixture-encoded"; readonly fixture: FixtureKind }
  /** Any text, percent-encoded when sent. */
  | { readonly kind: "text"; readonly text: string }
  /** Sent exactly as written (percent-encoding oddities). */
  | { readonly kind: "encoded"; readonly raw: string }

export interface QueryPart {
  readonly name: string
  readonly value: string | Ref
}

export type Body =
  | { readonly kind: "none" }
  | { readonly kind: "json"; readonly value: unknown }
  /** Bytes as written, for what JSON.stringify cannot produce (invalid UTF-8, truncated JSON, 1e309, ...). */
  | { readonly kind: "raw"; readonly label: string; readonly bytes: Uint8Array }

export type Auth = "live" | "sandbox" | "none" | "garbage-bearer" | "unknown-secret" | "basic" | "api-key-only" | "bearer-and-api-key"

export interface FuzzRequest {
  readonly operation: DescribedOperation
  readonly method: string
  readonly path: Readonly<Record<string, PathValue>>
  readonly query: ReadonlyArray<QueryPart>
  /** Appended to the query as written (malformed percent-encoding, empty names). */
  readonly rawQuery: string
  readonly auth: Auth
  /** Extra headers (Accept, Accept-Language, X-Client-Request-Id, If-Match). */
  readonly headers: Readonly<Record<string, string>>
  /** `undefined`: `application/json` for a JSON body, `application/octet-stream` for raw parts; `null`: none. */
  readonly contentType: string | null | undefined
  /** `undefined`: a fresh valid key on POST (as a well-behaved client sends); `null`: none. */
  readonly idempotencyKey: string | null | undefined
  readonly body: Body
}

export const baseRequest = (operation: DescribedOperation, path: Readonly<Record<string, PathValue>>): FuzzRequest => ({
  operation,
  method: operation.method,
  path,
  query: [],
  rawQuery: "",
  auth: "live",
  headers: {},
  contentType: undefined,
  idempotencyKey: undefined,
  body: { kind: "none" }
})

// ---------------------------------------------------------------------------------------
// Sending

const encodeAll = (text: string) => [...new TextEncoder().encode(text)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("")

export const pathOf = (request: FuzzRequest, fixtures: Fixtures): string =>
  API +
  request.operation.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const value = request.path[name]
    if (value === undefined) throw new Error(`no value for {${name}}`)
    switch (value.kind) {
      case "fixture":
        return fixtures[value.fixture]
      case "fixture-encoded":
        return encodeAll(fixtures[value.fixture])
      case "text":
        return encodeURIComponent(value.text)
      case "encoded":
        return value.raw
    }
  })

export const queryOf = (request: FuzzRequest, fixtures: Fixtures): string => {
  const parts = request.query.map(
    (p) => `${encodeURIComponent(p.name)}=${encodeURIComponent(p.value instanceof Ref ? fixtures[p.value.kind] : p.value)}`
  )
  if (request.rawQuery !== "") parts.push(request.rawQuery)
  return parts.length === 0 ? "" : `?${parts.join("&")}`
}

export const bodyBytes = (request: FuzzRequest, fixtures: Fixtures): Uint8Array | undefined => {
  switch (request.body.kind) {
    case "none":
      return undefined
    case "json":
      return new TextEncoder().encode(JSON.stringify(resolveRefs(request.body.value, fixtures)))
    case "raw":
      return request.body.bytes
  }
}

export interface Exchange {
  readonly request: FuzzRequest
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
  readonly response: Response
}

/** Send a generated request to one store's server, with that store's fixtures and secret. */
export const send = async (h: Harness, fixtures: Fixtures, request: FuzzRequest): Promise<Exchange> => {
  const url = pathOf(request, fixtures) + queryOf(request, fixtures)
  const headers: Record<string, string> = { ...request.headers }
  switch (request.auth) {
    case "live":
      headers["authorization"] = `Bearer ${h.live}`
      break
    case "sandbox":
      headers["authorization"] = `Bearer ${h.test}`
      break
    case "garbage-bearer":
      headers["authorization"] = "Bearer not-a-credential"
      break
    case "unknown-secret":
      headers["authorization"] = `Bearer ck_live_${"0123456789abcdefghijABCDEFGHIJ0123456789"}`
      break
    case "basic":
      headers["authorization"] = "Basic dXNlcjpwYXNz"
      break
    case "api-key-only":
      headers["x-api-key"] = h.live
      break
    case "bearer-and-api-key":
      headers["authorization"] = `Bearer ${h.live}`
      headers["x-api-key"] = h.live
      break
    case "none":
      break
  }
  const bytes = bodyBytes(request, fixtures)
  if (bytes !== undefined && request.contentType !== null) {
    headers["content-type"] = request.contentType ?? (request.body.kind === "raw" && request.operation.rawBody ? request.operation.rawBody : "application/json")
  }
  if (request.idempotencyKey !== undefined && request.idempotencyKey !== null) headers["idempotency-key"] = request.idempotencyKey
  sent.count++
  const response = await h.request(request.method, url, {
    headers,
    ...(bytes === undefined ? {} : { raw: bytes }),
    ...(request.idempotencyKey === null ? { idempotencyKey: null } : {})
  })
  const shown = bytes === undefined ? undefined : new TextDecoder("utf-8").decode(bytes.subarray(0, 600)) + (bytes.length > 600 ? `… (${bytes.length} bytes)` : "")
  return { request, method: request.method, url, headers, body: shown, response }
}

export const describeExchange = (exchange: Exchange, store?: string): string => {
  const res = exchange.response
  const headers = Object.entries(exchange.headers)
    .map(([k, v]) => `${k}: ${k === "authorization" || k === "x-api-key" ? v.replace(/ck_(live|test)_\w+/, "ck_…") : v}`)
    .join("; ")
  return [
    `${store ? `[${store}] ` : ""}${exchange.method} ${exchange.url}`,
    `  headers: ${headers || "(none)"}${exchange.request.idempotencyKey === undefined && exchange.method === "POST" ? "; idempotency-key: <fresh>" : ""}`,
    `  body: ${exchange.body === undefined ? "(none)" : JSON.stringify(exchange.body)}`,
    `  → ${res.status} ${res.text.slice(0, 700)}`
  ].join("\n")
}

// ---------------------------------------------------------------------------------------
// Path values

/** Percent-encodings that do not decode (not UTF-8, or not `%XX` at all). */
export const undecodableSegments = ["%", "%Z", "%ZZ", "%E0%A4%A", "%FF", "%C0%AF", "%ED%A0%80", "prd_%G00000001", "%%30"] as const

/** Decodable oddities: NUL, an encoded slash, percent, space, plus, a lone `%25`. */
const decodableOddities = ["%00", "%2F", "a%2Fb", "%25", "%20", "%3F", "%23", "+", "%2B", "%0A", "%E2%80%8B", "%F0%9F%99%82", "prd_000000001%00"] as const

const isDotSegment = (text: string) => /^(\.|%2e){1,2}$/i.test(text)

export const pathValue = (param: Parameter, description: Description): fc.Arbitrary<PathValue> => {
  const schema = param.schema
  if (schema.type === "integer") {
    return fc.oneof(
      { weight: 4, arbitrary: intBetween(schema.minimum ?? 1, 20).map((n): PathValue => ({ kind: "text", text: String(n) })) },
      { weight: 2, arbitrary: fc.constantFrom("0", "-1", "1.5", "01", "1e3", "abc", "99999999999999999999", " 1", "0x1").map((text): PathValue => ({ kind: "text", text })) }
    )
  }
  const prefix = /^\^([a-z]{2,3})_/.exec(schema.pattern ?? "")?.[1] ?? "xx"
  const fixture = pathParamFixture[param.name]
  const garbage = fc
    .oneof(fc.string({ minLength: 1, maxLength: 16, unit: "grapheme" }), fc.string({ minLength: 1, maxLength: 16, unit: "grapheme-ascii" }), fc.constantFrom("null", "undefined", "0", "-1", "true", "[]", "{}", prefix, `${prefix}_`, "a".repeat(300)))
    .filter((text) => text.trim() !== "" && !isDotSegment(text) && !description.literalSegments.has(text))
  return fc.oneof(
    ...(fixture
      ? [
          { weight: 8, arbitrary: fc.constant<PathValue>({ kind: "fixture", fixture }) },
          { weight: 1, arbitrary: fc.constant<PathValue>({ kind: "fixture-encoded", fixture }) }
        ]
      : []),
    { weight: 2, arbitrary: idOf(prefix).map((text): PathValue => ({ kind: "text", text })) },
    { weight: 1, arbitrary: outOfRangeIdOf(prefix).map((text): PathValue => ({ kind: "text", text })) },
    { weight: 1, arbitrary: fc.constantFrom(...allPrefixes.filter((p) => p !== prefix)).chain(idOf).map((text): PathValue => ({ kind: "text", text })) },
    { weight: 1, arbitrary: garbage.map((text): PathValue => ({ kind: "text", text })) },
    { weight: 1, arbitrary: fc.constantFrom(...decodableOddities).map((raw): PathValue => ({ kind: "encoded", raw })) }
  )
}

/** The fixtures every path parameter names (well-formed IDs: the body is read). */
export const fixturePath = (operation: DescribedOperation): Record<string, PathValue> =>
  Object.fromEntries(
    operation.pathParams.map((p): [string, PathValue] => {
      const fixture = pathParamFixture[p.name]
      if (fixture) return [p.name, { kind: "fixture", fixture }]
      if (p.schema.type === "integer") return [p.name, { kind: "text", text: "1" }]
      const prefix = /^\^([a-z]{2,3})_/.exec(p.schema.pattern ?? "")?.[1] ?? "xx"
      return [p.name, { kind: "text", text: `${prefix}_000000001` }]
    })
  )

export const pathValues = (operation: DescribedOperation, description: Description): fc.Arbitrary<Record<string, PathValue>> =>
  fc.record(Object.fromEntries(operation.pathParams.map((p) => [p.name, pathValue(p, description)])))

// ---------------------------------------------------------------------------------------
// Query

const kindOfFilter = (operationId: string, name: string): FixtureKind | undefined => fieldFixture(operationId, name) ?? pathParamFixture[name]

/** A value the description allows for a query parameter (a fixture's ID for an ID filter). */
export const goodQueryValue = (operation: DescribedOperation, param: Parameter): fc.Arbitrary<string | Ref> | undefined => {
  const schema = param.schema
  if (param.name === "cursor") return undefined
  if (schema.enum) return fc.constantFrom(...(schema.enum as Array<string>))
  if (schema.type === "integer") return intBetween(schema.minimum ?? 0, schema.maximum ?? 1000).map(String)
  if (schema.format === "date-time") return validValue(schema, { operationId: operation.id }) as fc.Arbitrary<string>
  const fixture = kindOfFilter(operation.id, param.name)
  if (fixture) return fc.oneof(fc.constant(new Ref(fixture)), idOf(fixtureKinds[fixture]))
  if (param.name === "email") return fc.constantFrom("fuzz@example.com", "nobody@example.org")
  return printable(0, schema.maxLength ?? 40)
}

/**
 * The operation's required query parameters (besides `cursor`), each with a value that is
 * accepted and names what exists (a fixture's ID): what a request carrying a cursor repeats
 * from its first page (§4.2, a cursor used with other filters is 400 `invalid_cursor`).
 */
export const requiredQuery = (operation: DescribedOperation): ReadonlyArray<QueryPart> =>
  operation.queryParams.flatMap((p): Array<QueryPart> => {
    if (!p.required || p.name === "cursor") return []
    const fixture = kindOfFilter(operation.id, p.name)
    if (fixture) return [{ name: p.name, value: new Ref(fixture) }]
    if (p.schema.enum) return [{ name: p.name, value: String((p.schema.enum as Array<string>)[0]) }]
    if (p.schema.type === "integer") return [{ name: p.name, value: String(p.schema.minimum ?? 1) }]
    throw new Error(`${operation.id}: no accepted value known for the required query parameter ${p.name}`)
  })

export interface BadQuery {
  readonly part: QueryPart
  /** What the contract answers: 422 `validation_failed` on the parameter, or 400 `invalid_cursor`. */
  readonly expect: { readonly status: 422; readonly code: "validation_failed" } | { readonly status: 400; readonly code: "invalid_cursor" }
  readonly what: string
}

/** A value the description refuses for a declared query parameter. */
export const badQueryValue = (param: Parameter): fc.Arbitrary<BadQuery> | undefined => {
  const schema = param.schema
  const invalid = (what: string, values: fc.Arbitrary<string>) =>
    values.map((value): BadQuery => ({ part: { name: param.name, value }, expect: { status: 422, code: "validation_failed" }, what }))
  if (param.name === "cursor") {
    return fc
      // Over 2048 characters has a property of its own (suite.ts, "long-cursor").
      .oneof(fc.constantFrom("abc", "0", "null", "eyJ9", "x".repeat(300), "x".repeat(2048), "%%%", " "), fc.string({ minLength: 1, maxLength: 40, unit: "grapheme-ascii" }))
      .map((value): BadQuery => ({ part: { name: "cursor", value }, expect: { status: 400, code: "invalid_cursor" }, what: "a cursor the server never issued" }))
  }
  if (schema.enum) {
    const allowed = schema.enum as Array<string>
    return invalid(
      "value outside the enum",
      fc.constantFrom(...allowed.flatMap((v) => [v.toUpperCase() + "X", ` ${v}`, `${v} `, `-${v}`, `${v},${v}`]), "", "other", "1").filter((v) => !allowed.includes(v))
    )
  }
  if (schema.type === "integer") {
    const max: number = schema.maximum ?? 2 ** 53
    const min: number = schema.minimum ?? -(2 ** 53)
    return invalid(
      `not an integer in [${min}, ${max}]`,
      fc.constantFrom(String(min - 1), String(max + 1), "1.5", "abc", "", "NaN", "Infinity", "-Infinity", "99999999999999999999", "1e2", " 5", "5 ", "0x10", "+5", "5abc", "١٢")
    )
  }
  if (schema.format === "date-time") {
    return invalid("not a date-time", fc.constantFrom("yesterday", "2024-13-01T00:00:00Z", "2024-01-01T25:00:00Z", "1704067200", "", "2024-01-01"))
  }
  if (schema.maxLength !== undefined) return invalid(`over maxLength ${schema.maxLength}`, fc.constant("q".repeat(schema.maxLength + 1)))
  return undefined
}

/** A name no operation declares: odd ones included. */
export const undeclaredName = (operation: DescribedOperation): fc.Arbitrary<string> => {
  const declared = new Set(operation.queryParams.map((p) => p.name))
  return fc
    .oneof(
      // `__proto__` has a property of its own (suite.ts, "proto-query").
      fc.constantFrom("page", "offset", "per_page", "expand", "fields", "include", "debug", "LIMIT", "Limit", "limit[]", "sort[]", "status[]", "q[]", "__proto__[]", "constructor", "toString", "a.b", "x y", "日本", "_", "deleted ", "foo"),
      fc.string({ minLength: 1, maxLength: 10, unit: "grapheme-ascii" })
    )
    .filter((name) => !declared.has(name) && name.trim() !== "")
}

export const queryParts = (operation: DescribedOperation): fc.Arbitrary<{ parts: Array<QueryPart>; raw: string }> => {
  const good = operation.queryParams.flatMap((p) => {
    const value = goodQueryValue(operation, p)
    return value ? [value.map((v): QueryPart => ({ name: p.name, value: v }))] : []
  })
  const bad = operation.queryParams.flatMap((p) => {
    const b = badQueryValue(p)
    return b ? [b.map((x) => x.part)] : []
  })
  const some = (arbs: Array<fc.Arbitrary<QueryPart>>, max: number) => (arbs.length === 0 ? fc.constant([]) : fc.array(fc.oneof(...arbs), { maxLength: max }))
  return fc.record({
    good: some(good, 3),
    bad: fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: some(bad, 1) }),
    undeclared: fc.oneof(
      { weight: 5, arbitrary: fc.constant([] as Array<QueryPart>) },
      { weight: 1, arbitrary: fc.tuple(undeclaredName(operation), fc.constantFrom("1", "", "x")).map(([name, value]) => [{ name, value }]) }
    ),
    raw: fc.oneof(
      { weight: 12, arbitrary: fc.constant("") },
      { weight: 1, arbitrary: fc.constantFrom("%ZZ=1", "a=%", "=x", "&&", "limit", "limit=", "%00=1", "a=%00", "a=b=c", "sort=%2Dcreated_at", ";", "a=%ED%A0%80") }
    )
  }).map(({ good, bad, undeclared, raw }) => ({ parts: [...good, ...bad, ...undeclared], raw }))
}

// ---------------------------------------------------------------------------------------
// Headers and auth

const headerText = (min: number, max: number) => fc.string({ minLength: min, maxLength: max, unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) })

export const accepts = fc.oneof(
  { weight: 10, arbitrary: fc.constant<string | undefined>(undefined) },
  {
    weight: 3,
    arbitrary: fc.constantFrom<string | undefined>(
      "application/json",
      "*/*",
      "application/*",
      "application/json; charset=utf-8",
      "application/problem+json",
      "text/html",
      "application/json;q=0",
      "text/event-stream",
      "application/xml, */*;q=0.1",
      "",
      "APPLICATION/JSON",
      "text/*"
    )
  }
)

export const contentTypes = fc.oneof(
  { weight: 10, arbitrary: fc.constant<string | null | undefined>(undefined) },
  {
    weight: 3,
    arbitrary: fc.constantFrom<string | null | undefined>(
      null,
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      'application/json;charset="UTF-8"',
      "application/json; charset=latin1",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/merge-patch+json",
      "application/octet-stream",
      "application/json, text/plain",
      ""
    )
  }
)

export const idempotencyKeys = (operation: DescribedOperation): fc.Arbitrary<string | null | undefined> => {
  const odd = fc.constantFrom("", " ", "a".repeat(129), "key with space", "cl\u00e9", "a,b", "k\tk", "fuzz-reused-1", "fuzz-reused-2", "a/b", "\"quoted\"")
  const valid = fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/)
  if (operation.method === "POST") {
    return fc.oneof({ weight: 10, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constant(null) }, { weight: 2, arbitrary: odd }, { weight: 1, arbitrary: valid })
  }
  return fc.oneof({ weight: 10, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: odd }, { weight: 1, arbitrary: valid })
}

const ifMatches = fc.oneof(
  { weight: 6, arbitrary: fc.constant<string | undefined>(undefined) },
  {
    weight: 3,
    arbitrary: fc.constantFrom<string | undefined>(
      "*",
      'W/"product:prd_000000001:1"',
      'W/"x:y:1"',
      "abc",
      '"1"',
      'W/""',
      'W/"a:b:99999999999999999999"',
      "*, *",
      'W/"a:b:1", W/"a:b:2"',
      'W/"product:prd_000000001:-1"',
      ""
    )
  }
)

const clientRequestIds = fc.oneof(
  { weight: 8, arbitrary: fc.constant<string | undefined>(undefined) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/) },
  { weight: 1, arbitrary: fc.constantFrom<string | undefined>("x".repeat(65), "has space", "a,b", "é") }
)

const languages = fc.oneof(
  { weight: 6, arbitrary: fc.constant<string | undefined>(undefined) },
  { weight: 2, arbitrary: fc.constantFrom<string | undefined>("pt-BR", "fr-FR", "es-ES", "en-US", "de-DE", "*", "pt-BR;q=0.1, fr-FR;q=0.9", "zz", "") },
  { weight: 1, arbitrary: headerText(0, 30) }
)

export const auths = fc.oneof(
  { weight: 30, arbitrary: fc.constant<Auth>("live") },
  { weight: 1, arbitrary: fc.constantFrom<Auth>("none", "garbage-bearer", "unknown-secret", "basic", "api-key-only", "bearer-and-api-key") }
)

export const extraHeaders = (operation: DescribedOperation): fc.Arbitrary<Record<string, string>> =>
  fc
    .record({ accept: accepts, "if-match": operation.ifMatch ? ifMatches : fc.constant(undefined), "x-client-request-id": clientRequestIds, "accept-language": languages })
    .map((h) => Object.fromEntries(Object.entries(h).filter((e): e is [string, string] => e[1] !== undefined)))

// ---------------------------------------------------------------------------------------
// Bodies

const utf8 = (text: string) => new TextEncoder().encode(text)
const concat = (...parts: Array<Uint8Array | Array<number>>) => Uint8Array.from(parts.flatMap((p) => [...p]))

/** Bodies JSON.stringify cannot make: broken JSON, broken UTF-8, too deep, too large. */
export const rawBodies: fc.Arbitrary<Body> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .constantFrom(
        "",
        " ",
        "{",
        '{"a":',
        "[]",
        "[1,2]",
        '"text"',
        "42",
        "null",
        "true",
        '{"a":1}{"b":2}',
        "{'a':1}",
        '{"a":1,}',
        '{"a":NaN}',
        '{"a":Infinity}',
        '{"name":1e309}',
        '{"name":-0}',
        "\ufeff{}",
        '{"name":"\\ud800"}',
        '{"name":"\\u0000"}',
        '{"\\u0000":1}',
        '{"name":"a","name":"b"}',
        '{"__proto__":{"admin":true}}',
        '{"a":' + '{"a":'.repeat(16) + "1" + "}".repeat(17),
        "[".repeat(17) + "]".repeat(17),
        '{"a":' + "[".repeat(5000) + "]".repeat(5000) + "}",
        '{"a":"\\x41"}',
        "{\"a\":\"unterminated}"
      )
      .map((text): Body => ({ kind: "raw", label: text.slice(0, 40), bytes: utf8(text) }))
  },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(
        { label: "invalid UTF-8 0xFF", bytes: concat([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]) },
        { label: "invalid UTF-8 C3 28", bytes: concat(utf8('{"name":"'), [0xc3, 0x28], utf8('"}')) },
        { label: "UTF-8 of a lone surrogate (ED A0 80)", bytes: concat(utf8('{"name":"'), [0xed, 0xa0, 0x80], utf8('"}')) },
        { label: "UTF-8 BOM", bytes: concat([0xef, 0xbb, 0xbf], utf8("{}")) },
        { label: "UTF-16LE", bytes: concat([0xff, 0xfe], [0x7b, 0, 0x7d, 0]) },
        { label: "overlong slash", bytes: concat(utf8('{"name":"'), [0xc0, 0xaf], utf8('"}')) }
      )
      .map(({ label, bytes }): Body => ({ kind: "raw", label, bytes }))
  },
  { weight: 1, arbitrary: fc.constant<Body>({ kind: "raw", label: "over 1 MiB", bytes: utf8(`{"name":"${"x".repeat(1024 * 1024)}"}`) }) }
)

/** Any body for an operation: valid-ish, one change the schema refuses, unknown fields, unstorable text, broken bytes, none. */
export const anyBody = (operation: DescribedOperation): fc.Arbitrary<Body> => {
  if (operation.method === "GET") return fc.constant({ kind: "none" })
  if (operation.rawBody) {
    return fc.oneof(
      { weight: 4, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 256 }).map((bytes): Body => ({ kind: "raw", label: `${bytes.length} bytes`, bytes })) },
      { weight: 1, arbitrary: fc.constant<Body>({ kind: "none" }) },
      { weight: 1, arbitrary: rawBodies }
    )
  }
  const schema = operation.body?.schema
  const json = (arb: fc.Arbitrary<unknown>) => arb.map((value): Body => ({ kind: "json", value }))
  if (!schema) {
    return fc.oneof(
      { weight: 8, arbitrary: fc.constant<Body>({ kind: "none" }) },
      { weight: 1, arbitrary: json(fc.constantFrom({}, { a: 1 }, { status: "published" }, { name: "x" })) },
      { weight: 1, arbitrary: rawBodies }
    )
  }
  const options = { operationId: operation.id }
  return fc.oneof(
    { weight: 5, arbitrary: json(validValue(schema, options)) },
    { weight: 5, arbitrary: json(violation(schema, options).map((m) => m.body)) },
    { weight: 1, arbitrary: json(withUnknownProperty(schema, options).map((m) => m.body)) },
    { weight: 1, arbitrary: json(withUnstorableText(schema, options).map((m) => m.body)) },
    { weight: 1, arbitrary: rawBodies },
    { weight: 1, arbitrary: fc.constant<Body>({ kind: "none" }) }
  )
}

/** Any request for an operation: the general property's generator. */
export const anyRequest = (operation: DescribedOperation, description: Description, options: { readonly reusedKeys?: boolean } = {}): fc.Arbitrary<FuzzRequest> =>
  fc
    .record({
      path: pathValues(operation, description),
      query: queryParts(operation),
      auth: auths,
      headers: extraHeaders(operation),
      contentType: contentTypes,
      idempotencyKey: idempotencyKeys(operation).filter((k) => options.reusedKeys !== false || !(typeof k === "string" && k.startsWith("fuzz-reused"))),
      body: anyBody(operation)
    })
    .map(
      ({ path, query, auth, headers, contentType, idempotencyKey, body }): FuzzRequest => ({
        ...baseRequest(operation, path),
        query: query.parts,
        rawQuery: query.raw,
        auth,
        headers,
        contentType,
        idempotencyKey,
        body
      })
    )

export { unknownKey }
