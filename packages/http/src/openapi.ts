/**
 * `GET /openapi.json`: the OpenAPI 3.1 description of the release, derived from the
 * operation list. One function per concern: the JSON Schemas of the Effect schemas, the
 * parameters, the request body, the success response, the error responses, the components
 * they share, and the document that assembles them (with the deprecations the server is
 * configured with, §9). Beside it: the rules every schema follows (openapi-schema-rules.ts),
 * the tags (openapi-tags.ts), the examples (openapi-examples.ts). See docs/openapi.md.
 */
import {
  detailOnlyCodes,
  type ErrorCode,
  errorCodes,
  errorStatus,
  formatTimestamp,
  type IdKind,
  type Json,
  type JsonObject,
  languages,
  MAX_PAGE_LIMIT,
  NotificationBody
} from "@syllabus/core"
import { Effect, Either, JSONSchema, Schema } from "effect"
import { errorExample, sampleOf } from "./openapi-examples.js"
import { introductionMarkdown } from "./docs-introduction.js"
import { applySchemaRules, idPattern, parameterExtensible } from "./openapi-schema-rules.js"
import { tagsOf, resourceTagOf } from "./openapi-tags.js"
import { type AnySchema, defineOperation, type Operation } from "./operation.js"
import { ErrorSchema, PageSchema, RateLimitErrorSchema } from "./schemas.js"
import { deprecatedParametersOf } from "./deprecations.js"
import { type Deprecation, RELEASE, ServerSettings } from "./services.js"

type JsonMap = { [key: string]: Json }
export type Deprecations = ReadonlyMap<string, Deprecation>
export type OpenApiDocument = JsonMap

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const ref = (kind: "schemas" | "parameters" | "headers" | "responses" | "examples", name: string): JsonMap => ({
  $ref: `#/components/${kind}/${name}`
})

const schemaRefName = (schema: Json): string | undefined =>
  isObject(schema) && typeof schema.$ref === "string" && schema.$ref.startsWith("#/components/schemas/")
    ? schema.$ref.slice("#/components/schemas/".length)
    : undefined

const backticked = (values: ReadonlyArray<string>) => values.map((v) => `\`${v}\``).join(", ")

// ---------------------------------------------------------------------------------------
// Schemas

/**
 * Effect's JSON Schema output as plain JSON, without the internal markers it puts on
 * `unknown` / `any` / `never` (`$id: "/schemas/…"`, which would change the base URI of a
 * subschema) and without empty `required` lists.
 */
const toJson = (value: unknown): Json => {
  if (value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean") return value
  if (Array.isArray(value)) return value.map(toJson)
  if (typeof value === "object") {
    const out: JsonMap = {}
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined) continue
      if (key === "$id" && typeof item === "string" && item.startsWith("/schemas/")) continue
      if (key === "required" && Array.isArray(item) && item.length === 0) continue
      out[key] = toJson(item)
    }
    return out
  }
  throw new Error(`Not representable in JSON Schema: ${String(value)}`)
}

/**
 * JSON Schema 2020-12 of Effect schemas. A schema with an `identifier` becomes a component,
 * referenced as `#/components/schemas/<identifier>`. Every object is closed
 * (`additionalProperties: false`): a request body field not in the schema is 422
 * `unknown_field`, and a response includes every field of its schema and no other (§2.1).
 * A new response field in a later 3.x release is still a compatible change (§9): clients
 * ignore the fields they do not know (docs/openapi.md). Maps (`Record`) stay open.
 */
const makeSchemaRegistry = () => {
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const convert = (schema: AnySchema, topLevel: "keep" | "skip" = "keep"): Json =>
    toJson(
      JSONSchema.fromAST(schema.ast, {
        definitions,
        definitionPath: "#/components/schemas/",
        target: "openApi3.1",
        additionalPropertiesStrategy: "strict",
        topLevelReferenceStrategy: topLevel
      })
    )
  return {
    /** A body or a response's data: a `$ref` when the schema is named, else the schema inline. */
    schema: (schema: AnySchema, owner: string) => applySchemaRules(inlinePrimitives(convert(schema), definitions), owner),
    /** A query Struct, inlined, so that each property becomes one parameter. */
    query: (schema: AnySchema) => inlinePrimitives(convert(schema, "skip"), definitions),
    /** Every named schema met so far, with the description's rules applied. */
    components: (): JsonMap =>
      Object.fromEntries(
        Object.entries(definitions)
          .filter(([name]) => !isPrimitive(definitions[name]))
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([name, definition]) => [name, applySchemaRules(inlinePrimitives(toJson(definition), definitions), name)])
      )
  }
}

/**
 * A named schema that is only a refined primitive (Effect's `Int`, "an integer") is no shape
 * of the API: it is written in place, without Effect's description, rather than referred to.
 */
const isPrimitive = (definition: JSONSchema.JsonSchema7 | undefined): boolean =>
  definition !== undefined && "type" in definition && ["integer", "number", "string", "boolean"].includes(String(definition.type)) && !("enum" in definition)

const inlinePrimitives = (schema: Json, definitions: Record<string, JSONSchema.JsonSchema7>): Json => {
  if (Array.isArray(schema)) return schema.map((item) => inlinePrimitives(item, definitions))
  if (!isObject(schema)) return schema
  const name = typeof schema.$ref === "string" ? schema.$ref.slice("#/components/schemas/".length) : undefined
  if (name !== undefined && isPrimitive(definitions[name])) {
    const { description: _generated, ...primitive } = toJson(definitions[name]) as JsonObject
    const { $ref: _ref, ...rest } = schema
    return { ...primitive, ...rest }
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, inlinePrimitives(value, definitions)]))
}

type SchemaRegistry = ReturnType<typeof makeSchemaRegistry>

// ---------------------------------------------------------------------------------------
// Parameters

const idempotencyKeySchema: JsonMap = { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" }
const idempotencyKeyDescription =
  "1 to 128 characters from `[A-Za-z0-9._:-]`. The same key with the same body returns the recorded " +
  "result with `Idempotent-Replayed: true`; with another body or route, 422 `idempotency_key_reused`; still " +
  "processing, 409 `idempotency_in_progress`. Receipts are kept 48 hours."

/** The header parameters, shared by the operations through `components/parameters`. */
const sharedParameters: JsonMap = {
  IdempotencyKey: {
    name: "Idempotency-Key",
    in: "header",
    required: true,
    description: `Required: missing is 422 \`idempotency_key_required\`, malformed 422 \`idempotency_key_invalid\`. ${idempotencyKeyDescription}`,
    schema: idempotencyKeySchema
  },
  IdempotencyKeyOptional: {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description: `Optional; malformed when sent is 422 \`idempotency_key_invalid\`. ${idempotencyKeyDescription}`,
    schema: idempotencyKeySchema
  },
  IfMatch: {
    name: "If-Match",
    in: "header",
    required: false,
    description:
      "The `ETag` of the revision the change applies to, `W/\"<type>:<id>:<revision>\"`, or `*`. Changed since: " +
      "412 `revision_mismatch`, nothing saved. Malformed: 400 `if_match_invalid`. Omitted: the current revision.",
    schema: { type: "string" }
  },
  ClientRequestId: {
    name: "X-Client-Request-Id",
    in: "header",
    required: false,
    description: "Echoed in the response and recorded in the request log; never replaces `X-Request-Id`.",
    schema: { type: "string", pattern: "^[A-Za-z0-9._-]{1,64}$" }
  },
  AcceptLanguage: {
    name: "Accept-Language",
    in: "header",
    required: false,
    description: `Language of error messages: ${backticked(languages)}; default \`${languages[0]}\`. Error codes never vary.`,
    schema: { type: "string" }
  }
}

/** Every `{name}` of the path, with the pattern of the public ID it holds. */
const pathParameters = (operation: Operation): Array<Json> =>
  [...operation.path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map(([, name = ""]) => {
    const kind: IdKind | undefined = operation.params?.[name]
    const schema: JsonMap =
      kind === undefined
        ? name.endsWith("_number")
          ? { type: "integer", minimum: 1 }
          : { type: "string" }
        : { type: "string", pattern: idPattern(kind) }
    return {
      name,
      in: "path",
      required: true,
      ...(kind !== undefined
        ? { description: `Public ID of the ${kind.replaceAll("_", " ")}. Malformed, of another kind or out of range: 404 \`not_found\`.` }
        : {}),
      schema,
      example: sampleOf(schema, () => null, name)
    }
  })

const queryDescriptions: Readonly<Record<string, string>> = {
  limit: `Page size, 1 to ${MAX_PAGE_LIMIT}. Another value: 422 \`validation_failed\`.`,
  cursor: "`page.next_cursor` or `page.prev_cursor` of the previous page; valid 24 hours, bound to the sort and filters (else 400 `invalid_cursor`).",
  sort: "Order of the collection; a leading `-` reverses. Only the values listed (else 422 `validation_failed`, naming them).",
  q: "Text searched for in the collection's searchable fields, at most 200 characters.",
  created_after: "Only entries created at or after this instant.",
  created_before: "Only entries created before this instant."
}

/** One parameter per property of the operation's query Struct, its enums classified as the fields they filter. */
const queryParameters = (operation: Operation, schemas: SchemaRegistry, components: JsonObject): Array<Json> => {
  if (operation.query === undefined) return []
  const struct = schemas.query(operation.query)
  if (!isObject(struct) || !isObject(struct.properties)) throw new Error(`The query of ${operation.id} is not a Struct`)
  const required = new Set(Array.isArray(struct.required) ? struct.required : [])
  return Object.entries(struct.properties).map(([name, raw]) => {
    const ruled = applySchemaRules(raw, operation.id, name)
    const schema =
      isObject(ruled) && Array.isArray(ruled.enum)
        ? { ...ruled, "x-extensible": parameterExtensible(components, name, ruled.enum) ?? ruled["x-extensible"] ?? true }
        : ruled
    const description = (isObject(schema) && typeof schema.description === "string" ? schema.description : undefined) ?? queryDescriptions[name]
    const deprecation = deprecatedParametersOf(operation.id).get(name)
    return {
      name,
      in: "query",
      required: required.has(name),
      ...(description !== undefined ? { description } : {}),
      schema,
      // A required parameter shows a value, as a path parameter does (a typed client's call needs one).
      ...(required.has(name) ? { example: sampleOf(schema, () => null, name) } : {}),
      ...(deprecation !== undefined
        ? {
            deprecated: true,
            "x-deprecated-at": formatTimestamp(deprecation.deprecatedAt),
            "x-sunset": formatTimestamp(deprecation.sunsetAt)
          }
        : {})
    }
  })
}

/** The request headers of a download (`Operation.download`): the conditions and the range. */
const downloadParameters: ReadonlyArray<Json> = [
  {
    name: "Range",
    in: "header",
    required: false,
    description:
      "One byte range: `bytes=<first>-<last>` (both included; a last past the end is cut at it), `bytes=<first>-` (to the end) or `bytes=-<n>` (the last n bytes): 206 with `Content-Range`. A range starting past the end (or `bytes=-0`) is 416. Several ranges, another unit or a malformed value are ignored: the whole file, 200.",
    schema: { type: "string", examples: ["bytes=0-1023"] }
  },
  {
    name: "If-None-Match",
    in: "header",
    required: false,
    description: "ETags of a copy the client holds (or `*`): 304 without a body when the file's ETag is among them.",
    schema: { type: "string" }
  },
  {
    name: "If-Range",
    in: "header",
    required: false,
    description: "With `Range`: the range holds only while the file's ETag is this one; otherwise (another ETag, or a date) the whole file, 200.",
    schema: { type: "string" }
  }
]

const headerParameters = (operation: Operation): Array<Json> => [
  ...(operation.download === true ? downloadParameters : []),
  ...(operation.idempotency === "required" ? [ref("parameters", "IdempotencyKey")] : []),
  ...(operation.idempotency === "optional" ? [ref("parameters", "IdempotencyKeyOptional")] : []),
  ...(operation.ifMatch !== undefined ? [ref("parameters", "IfMatch")] : []),
  ref("parameters", "ClientRequestId"),
  ref("parameters", "AcceptLanguage")
]

// ---------------------------------------------------------------------------------------
// Examples

/**
 * The examples shared by several operations, in `components/examples`: one per named schema
 * (`<Schema>` as `{ data }`, `<Schema>Page` as a page, `request.<Schema>` as a request body),
 * one per error code (`error.<code>`). A schema without a name has its example in place.
 */
const makeExamples = (components: () => JsonObject) => {
  const examples: JsonMap = {}
  const resolve = (pointer: string): Json => {
    const name = pointer.slice("#/components/schemas/".length)
    return components()[name] ?? null
  }
  const sample = (schema: Json) => sampleOf(schema, resolve)
  /** `CreateProductBody` → "create product body". */
  const words = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase()
  /** A `$ref` to the shared example of a value, made on first use. */
  const shared = (name: string, summary: string, value: () => Json): JsonMap => {
    if (examples[name] === undefined) examples[name] = { summary, value: value() }
    return ref("examples", name)
  }
  const page = (item: Json): JsonMap => ({
    data: [item],
    page: { limit: 50, next_cursor: "eyJhZnRlciI6InByZF8wUmIza1g5c1QifQ", prev_cursor: null }
  })
  return {
    /** The example of a success body: `{ data }` or a page of `data`. */
    success: (data: Json, collection: boolean): JsonMap => {
      const name = schemaRefName(data)
      if (name === undefined) return { value: collection ? page(sample(data)) : { data: sample(data) } }
      return collection
        ? shared(`${name}Page`, `A page of ${words(name)} resources`, () => page(sample(data)))
        : shared(name, `A ${words(name)}`, () => ({ data: sample(data) }))
    },
    body: (schema: Json): JsonMap => {
      const name = schemaRefName(schema)
      return name === undefined ? { value: sample(schema) } : shared(`request.${name}`, `A ${words(name)}`, () => sample(schema))
    },
    error: (code: ErrorCode): JsonMap => shared(`error.${code}`, code, () => errorExample(code).value),
    all: () => Object.fromEntries(Object.entries(examples).sort(([a], [b]) => a.localeCompare(b)))
  }
}

type Examples = ReturnType<typeof makeExamples>

// ---------------------------------------------------------------------------------------
// Request body

/** A body is required when the operation rejects an absent one (the pipeline decodes it as `{}`). */
const requestBody = (operation: Operation, schemas: SchemaRegistry, examples: Examples): JsonMap | undefined => {
  if (operation.rawBody !== undefined) {
    return {
      required: true,
      description: "Raw bytes, not JSON; the rules of JSON bodies (1 MiB, UTF-8) do not apply to them.",
      content: { [operation.rawBody]: { schema: { type: "string", contentMediaType: operation.rawBody }, example: "(the part's bytes)" } }
    }
  }
  if (operation.body === undefined) return undefined
  const acceptsEmpty = Either.isRight(Schema.decodeUnknownEither(operation.body)({}))
  const schema = schemas.schema(operation.body, `${operation.id}.body`)
  return {
    required: !acceptsEmpty,
    content: { "application/json": { schema, examples: { request: examples.body(schema) } } }
  }
}

// ---------------------------------------------------------------------------------------
// Response headers

const integerHeader = (description: string): JsonMap => ({ description, schema: { type: "integer", minimum: 0 } })

const sharedHeaders: JsonMap = {
  "X-Request-Id": { description: "Server-generated ID of the call; `error.request_id` and the request log use it.", schema: { type: "string" } },
  "X-Service-Release": { description: "The contract release that served the call.", schema: { type: "string", examples: [RELEASE] } },
  "X-Client-Request-Id": { description: "The `X-Client-Request-Id` of the request, when it had one.", schema: { type: "string" } },
  "RateLimit-Limit": integerHeader("Limit of the most restricted scope, per 60-second window."),
  "RateLimit-Remaining": integerHeader("Calls left in that scope's window."),
  "RateLimit-Reset": integerHeader("Seconds until that scope admits calls again."),
  "Retry-After": integerHeader("Seconds to wait before retrying."),
  ETag: { description: "`W/\"<type>:<id>:<revision>\"`, for `If-Match`; opaque.", schema: { type: "string" } },
  Location: { description: "Path of the created resource.", schema: { type: "string" } },
  "Idempotent-Replayed": { description: "`true` when this is the recorded result of an earlier call with the same `Idempotency-Key`.", schema: { type: "string", enum: ["true"], "x-extensible": false } },
  Deprecation: { description: "`@<unix seconds>` of the deprecation announcement.", schema: { type: "string" } },
  Sunset: { description: "HTTP date after which the operation answers 410 `operation_sunset`.", schema: { type: "string" } },
  Link: { description: "`<{docs_url}/deprecations>; rel=\"deprecation\"`.", schema: { type: "string" } },
  Allow: { description: "The methods the path supports.", schema: { type: "string" } },
  "Content-Language": {
    description: "The language of the messages of the error, negotiated from `Accept-Language`.",
    schema: { type: "string", enum: [...languages], "x-extensible": true }
  }
}

const headerRefs = (names: ReadonlyArray<string>): JsonMap =>
  Object.fromEntries(names.map((name) => [name, name in sharedHeaders ? ref("headers", name) : { schema: { type: "string" } }]))

const envelopeHeaders = ["X-Request-Id", "X-Service-Release", "X-Client-Request-Id"]
const rateLimitHeaders = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]
const deprecationHeaders = ["Deprecation", "Sunset", "Link"]

// ---------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------
// Success response

const successResponse = (operation: Operation, deprecated: boolean, schemas: SchemaRegistry, examples: Examples): JsonMap => {
  const { status, description, schema, collection, headers = [] } = operation.success
  const headerNames = [
    ...envelopeHeaders,
    ...rateLimitHeaders,
    ...headers,
    ...(operation.idempotency !== "none" ? ["Idempotent-Replayed"] : []),
    ...(deprecated ? deprecationHeaders : [])
  ]
  const data = schema === undefined ? undefined : schemas.schema(schema, operation.id)
  if (operation.download === true) return downloadResponses(operation, headerNames)
  const content: JsonMap | undefined =
    status === 204
      ? undefined
      : operation.produces !== undefined
        ? {
            [operation.produces]: {
              schema: { type: "string", description: "`id:`, `event:` and `data:` lines per message; `: keep-alive` comments." },
              example: `id: evt_0Rb3kX9sT\nevent: product.created\ndata: {"object":"event","id":"evt_0Rb3kX9sT","type":"product.created"}\n\n`
            }
          }
        : data === undefined
          ? {
              "application/json": {
                schema: { type: "object", description: "A JSON object, not in the `data` envelope." },
                example: { openapi: "3.1.0", info: { title: documentTitle, version: RELEASE }, paths: {} }
              }
            }
          : {
              "application/json": {
                schema: collection
                  ? {
                      type: "object",
                      required: ["data", "page"],
                      properties: { data: { type: "array", items: data }, page: ref("schemas", "Page") },
                      additionalProperties: false
                    }
                  : { type: "object", required: ["data"], properties: { data }, additionalProperties: false },
                examples: { success: examples.success(data, collection === true) }
              }
            }
  return {
    [String(status)]: { description, headers: headerRefs(headerNames), ...(content !== undefined ? { content } : {}) }
  }
}

/** The headers of a file's bytes (206 adds `Content-Range`; 304 has the validators only). */
const downloadHeaders = {
  "Content-Length": { description: "Bytes in this answer: the file's size, or the range's.", schema: { type: "integer", minimum: 0 } },
  ETag: { description: "The file's SHA-256 in quotes, a strong validator (a file's bytes never change): for `If-None-Match` and `If-Range`.", schema: { type: "string" } },
  "Cache-Control": { description: "`private`: a browser may keep the bytes, a shared cache may not.", schema: { type: "string", enum: ["private"], "x-extensible": false } },
  "Content-Disposition": {
    description: "`attachment; filename=\"<ASCII fallback>\"; filename*=UTF-8''<percent-encoded name>` (RFC 6266, RFC 8187): the file's `filename`.",
    schema: { type: "string" }
  },
  "Accept-Ranges": { description: "`bytes`: one byte range may be asked for with `Range`.", schema: { type: "string", enum: ["bytes"], "x-extensible": false } },
  "X-Content-Type-Options": { description: "`nosniff`: the bytes are of the file's `content_type`, never guessed.", schema: { type: "string", enum: ["nosniff"], "x-extensible": false } }
} as const

const binaryContent = (description: string): JsonMap => ({
  "application/octet-stream": {
    schema: { type: "string", contentMediaType: "application/octet-stream", description },
    example: "(the file's bytes)"
  }
})

/** 200 (the whole file), 206 (one range) and 304 (the client's copy is current) of a download. */
const downloadResponses = (operation: Operation, headerNames: ReadonlyArray<string>): JsonMap => {
  const shared = headerRefs(headerNames)
  const { "Content-Length": length, ETag, "Cache-Control": cache, "Content-Disposition": disposition, "Accept-Ranges": ranges, "X-Content-Type-Options": nosniff } = downloadHeaders
  return {
    [String(operation.success.status)]: {
      description: operation.success.description,
      headers: { ...shared, "Content-Length": length, ETag, "Cache-Control": cache, "Content-Disposition": disposition, "Accept-Ranges": ranges, "X-Content-Type-Options": nosniff },
      content: binaryContent("The file's bytes; `Content-Type` is the file's `content_type`.")
    },
    "206": {
      description: "One range of the file's bytes (`Range`).",
      headers: {
        ...shared,
        "Content-Range": { description: "`bytes <first>-<last>/<size>`.", schema: { type: "string" } },
        "Content-Length": length,
        ETag,
        "Cache-Control": cache,
        "Content-Disposition": disposition,
        "Accept-Ranges": ranges,
        "X-Content-Type-Options": nosniff
      },
      content: binaryContent("The bytes of the range; `Content-Type` is the file's `content_type`.")
    },
    "304": {
      description: "Not modified: the file's ETag is one `If-None-Match` names. No body.",
      headers: { ...shared, ETag, "Cache-Control": cache }
    }
  }
}

/** The 416 of a download: a range past the end of the file. */
const rangeNotSatisfiable = (examples: Examples): JsonMap => {
  const response = errorResponse(416, ["http_error"], examples)
  return {
    ...response,
    description: "Range not satisfiable: `http_error` (reason `range_not_satisfiable`), a `Range` starting past the end of the file.",
    headers: { ...(response.headers as JsonMap), "Content-Range": { description: "`bytes */<size>`: the file's size.", schema: { type: "string" } } }
  }
}

// ---------------------------------------------------------------------------------------
// Error responses

const reasonPhrases: Readonly<Record<number, string>> = {
  400: "Bad request",
  401: "Unauthenticated",
  403: "Forbidden",
  404: "Not found",
  405: "Method not allowed",
  406: "Not acceptable",
  409: "Conflict",
  410: "Gone",
  412: "Precondition failed",
  413: "Payload too large",
  415: "Unsupported media type",
  416: "Range not satisfiable",
  422: "Unprocessable content",
  429: "Too many requests",
  500: "Internal error",
  503: "Service unavailable"
}

/** What any operation can answer: the pipeline's checks, in the order of DESIGN.md. */
const pipelineErrors: ReadonlyArray<ErrorCode> = [
  "malformed_json",
  "json_too_deep",
  "invalid_utf8",
  "payload_too_large",
  "not_acceptable",
  "unsupported_media_type",
  "method_not_allowed",
  "unauthenticated",
  "credential_revoked",
  "credential_suspended",
  "credential_expired",
  "ambiguous_credentials",
  "human_context_required",
  "invalid_access_token",
  "human_mode_not_allowed",
  "tenant_mismatch",
  "admin_not_eligible",
  "instance_blocked",
  "instance_unavailable",
  "credential_state_unverifiable",
  "rate_limit_exceeded",
  "rate_limiter_unavailable",
  "not_found",
  "unknown_parameter",
  "unknown_field",
  "validation_failed",
  "internal_error",
  "audit_unavailable"
]

/**
 * Codes the contract gives a second status when the operation itself answers them (§7):
 * `credential_revoked` is 401 when authenticating, 422 on credential management.
 */
const declaredStatus: Partial<Record<ErrorCode, number>> = { credential_revoked: 422 }

/** The codes an operation can answer, by status: the pipeline's, those its declaration implies, and its own. */
const errorCodesByStatus = (operation: Operation, deprecated: boolean): ReadonlyMap<number, ReadonlyArray<ErrorCode>> => {
  const implied: ReadonlyArray<ErrorCode> = [
    // A download answers whatever `Accept` says: never 406.
    ...pipelineErrors.filter((code) => code !== "not_acceptable" || operation.download !== true),
    ...(operation.capability !== "authenticated" ? (["permission_denied"] as const) : []),
    // An array of the body over its maximum, alone, is 422 `too_many_items` (§8.2).
    ...(operation.body !== undefined ? (["too_many_items"] as const) : []),
    ...(operation.sandboxOnly ? (["sandbox_only"] as const) : []),
    ...(operation.idempotency === "required" ? (["idempotency_key_required"] as const) : []),
    ...(operation.idempotency !== "none"
      ? (["idempotency_key_invalid", "idempotency_key_reused", "idempotency_in_progress", "result_not_replayable"] as const)
      : []),
    // Its handler keeps its own units of work: a retry after an attempt that died is told so.
    ...(operation.idempotency !== "none" && (operation.unitOfWork === "handler" || operation.rawBody !== undefined)
      ? (["result_uncertain"] as const)
      : []),
    ...(operation.ifMatch !== undefined ? (["revision_mismatch", "if_match_invalid"] as const) : []),
    ...(deprecated ? (["operation_sunset"] as const) : [])
  ]
  const byStatus = new Map<number, Set<ErrorCode>>()
  const add = (code: ErrorCode, status: number) => byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code))
  for (const code of implied) add(code, errorStatus[code])
  for (const code of operation.errors) add(code, declaredStatus[code] ?? errorStatus[code])
  return new Map(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, codes]) => [status, errorCodes.filter((code) => codes.has(code))])
  )
}


const errorHeaders = (status: number) =>
  headerRefs([
    ...envelopeHeaders,
    "Content-Language",
    ...(status === 429 ? [...rateLimitHeaders, "Retry-After"] : []),
    ...(status === 405 ? ["Allow"] : [])
  ])

/** An error response listing its codes (`x-error-codes`), each with its example. */
const errorResponse = (status: number, codes: ReadonlyArray<ErrorCode>, examples: Examples): JsonMap => {
  const rateLimited = codes.includes("rate_limit_exceeded")
  const others = codes.some((code) => code !== "rate_limit_exceeded")
  const schema = rateLimited
    ? others
      ? { anyOf: [ref("schemas", "RateLimitError"), ref("schemas", "Error")] }
      : ref("schemas", "RateLimitError")
    : ref("schemas", "Error")
  return {
    description: `${reasonPhrases[status] ?? `HTTP ${status}`}: ${backticked(codes)}.`,
    headers: errorHeaders(status),
    content: {
      "application/json": { schema, examples: Object.fromEntries(codes.map((code) => [code, examples.error(code)])) }
    },
    "x-error-codes": [...codes]
  }
}

const pascal = (text: string) => text.replace(/(^|[\s_])([a-z])/g, (_, __, c: string) => c.toUpperCase()).replace(/[\s_]/g, "")

/**
 * Codes that come together, named once in a shared response's name: the idempotency checks
 * of a write that accepts a key, and of one that requires it.
 */
const codeFamilies: ReadonlyArray<readonly [string, ReadonlyArray<ErrorCode>]> = [
  ["IdempotencyKeyRequired", ["idempotency_key_required", "idempotency_key_invalid", "idempotency_key_reused"]],
  ["IdempotencyKey", ["idempotency_key_invalid", "idempotency_key_reused"]]
]

/** The name of the codes a shared response adds: each code in PascalCase, a family by its name. */
const extraName = (codes: ReadonlyArray<ErrorCode>): string => {
  const parts: Array<string> = []
  let rest = [...codes]
  for (const code of codes) {
    if (!rest.includes(code)) continue
    const family = codeFamilies.find(([, members]) => members[0] === code && members.every((member) => rest.includes(member)))
    parts.push(family !== undefined ? family[0] : pascal(code))
    rest = rest.filter((other) => (family !== undefined ? !family[1].includes(other) : other !== code))
  }
  return parts.join("")
}

const codeSetKey = (status: number, codes: ReadonlyArray<ErrorCode>) => `${status}:${[...codes].sort().join(",")}`

/**
 * The error responses several operations share, in `components/responses`, so that none is
 * repeated: each set of codes at a status that more than one operation can answer. Its name
 * is the reason phrase, followed by the codes that set adds to those every operation can
 * answer at that status (`Forbidden` for the pipeline's 403, `ForbiddenPermissionDenied`
 * where a capability is required). A set of one operation only is described in place.
 */
const makeSharedErrors = (byOperation: ReadonlyArray<ReadonlyMap<number, ReadonlyArray<ErrorCode>>>, examples: Examples) => {
  const uses = new Map<string, { status: number; codes: ReadonlyArray<ErrorCode>; count: number }>()
  for (const codesByStatus of byOperation) {
    for (const [status, codes] of codesByStatus) {
      const key = codeSetKey(status, codes)
      const known = uses.get(key)
      uses.set(key, { status, codes, count: (known?.count ?? 0) + 1 })
    }
  }
  const everywhere = (status: number) =>
    new Set(errorCodes.filter((code) => byOperation.every((codes) => codes.get(status)?.includes(code) ?? false)))
  const names = new Map<string, string>()
  for (const [key, { status, codes, count }] of uses) {
    if (count < 2) continue
    const common = everywhere(status)
    const extra = codes.filter((code) => !common.has(code))
    names.set(key, pascal(reasonPhrases[status] ?? `Status ${status}`) + extraName(extra))
  }
  return {
    response: (status: number, codes: ReadonlyArray<ErrorCode>): JsonMap => {
      const name = names.get(codeSetKey(status, codes))
      return name !== undefined ? ref("responses", name) : errorResponse(status, codes, examples)
    },
    components: (): JsonMap =>
      Object.fromEntries(
        [...names.entries()]
          .map(([key, name]) => [name, errorResponse(uses.get(key)!.status, uses.get(key)!.codes, examples)] as const)
          .sort(([a], [b]) => a.localeCompare(b))
      )
  }
}

type SharedErrors = ReturnType<typeof makeSharedErrors>

// ---------------------------------------------------------------------------------------
// Operations and the document

const idempotencyNote = {
  required: " `Idempotency-Key` required.",
  optional: " `Idempotency-Key` accepted.",
  none: ""
} as const

interface Built {
  readonly schemas: SchemaRegistry
  readonly examples: Examples
  readonly errors: SharedErrors
  readonly components: () => JsonObject
}

/** Whether an answer of the operation may carry the deprecation headers (and 410 after a sunset): it, or one of its parameters, is deprecated. */
const meetsDeprecation = (operation: Operation, deprecation: Deprecation | undefined): boolean =>
  deprecation !== undefined || deprecatedParametersOf(operation.id).size > 0

const operationObject = (operation: Operation, deprecation: Deprecation | undefined, built: Built): JsonMap => {
  const deprecated = meetsDeprecation(operation, deprecation)
  const body = requestBody(operation, built.schemas, built.examples)
  const needs = operation.capability === "authenticated" ? "Any valid credential." : `Requires \`${operation.capability}\`.`
  const errors = errorCodesByStatus(operation, deprecated)
  return {
    operationId: operation.id,
    // A sidebar line: no final period.
    summary: operation.summary.replace(/\.$/, ""),
    description:
      (operation.description !== undefined ? `${operation.description}\n\n` : "") +
      needs +
      idempotencyNote[operation.idempotency] +
      (operation.ifMatch !== undefined ? " Honours `If-Match`." : "") +
      (operation.sandboxOnly ? " Sandbox only: with production credentials, 403 `sandbox_only`." : ""),
    tags: [resourceTagOf(operation)],
    parameters: [...pathParameters(operation), ...queryParameters(operation, built.schemas, built.components()), ...headerParameters(operation)],
    ...(body !== undefined ? { requestBody: body } : {}),
    responses: {
      ...successResponse(operation, deprecated, built.schemas, built.examples),
      ...Object.fromEntries([...errors].map(([status, codes]) => [String(status), built.errors.response(status, codes)])),
      ...(operation.download === true ? { "416": rangeNotSatisfiable(built.examples) } : {})
    },
    "x-required-capability": operation.capability,
    ...(operation.sandboxOnly ? { "x-sandbox-only": true } : {}),
    ...(deprecation !== undefined
      ? {
          deprecated: true,
          "x-deprecated-at": formatTimestamp(deprecation.deprecatedAt),
          "x-sunset": formatTimestamp(deprecation.sunsetAt)
        }
      : {})
  }
}

const securitySchemes: JsonMap = {
  CredentialSecret: {
    type: "http",
    scheme: "bearer",
    description: "Autonomous mode: `Authorization: Bearer <secret>`, a `ck_live_…` or `ck_test_…` credential secret."
  },
  CredentialKey: {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description: "Human mode: the credential secret, together with an administrator's access token."
  },
  AdministratorToken: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "Human mode: `Authorization: Bearer <access token>`, an RS256 JWT (`aud` `service-api-v3`) from the OAuth 2.0 PKCE flow."
  }
}

const documentTitle = "Course-platform administration API"

/** The introduction of `/docs`, then how to read the reference's extensions. */
const description = [
  introductionMarkdown(),
  "## Reading this description",
  "Responses include every field of their schema and no other (`additionalProperties: false`). Each response lists the error " +
    "codes possible at its status (`x-error-codes`), each with an example. Operations name the capability they require " +
    "(`x-required-capability`). Enums marked `x-extensible: false` are closed within v3, those marked `x-extensible: true` may " +
    "gain values; deprecated operations carry `x-deprecated-at` and `x-sunset`. Tags name resources; `x-tagGroups` gathers them by area."
].join("\n\n")

/** `code` of the envelope and of its items: the catalog of §7, open to new codes under a documented status (§9). */
const codeSchemas: JsonMap = {
  ErrorCode: {
    type: "string",
    description: "Stable machine code, the only field to branch on. An unknown code is handled by its HTTP status.",
    enum: [...errorCodes],
    "x-extensible": true
  },
  DetailCode: {
    type: "string",
    description: "The code of one itemized problem: an error code, or one of the codes only items carry.",
    enum: [...errorCodes, ...detailOnlyCodes],
    "x-extensible": true
  }
}

/** The envelopes with their `code` fields referring to the catalog. */
const withCodeCatalog = (schemas: JsonMap): JsonMap => {
  const out: JsonMap = { ...schemas, ...codeSchemas }
  for (const name of ["Error", "RateLimitError"]) {
    const envelope = out[name]
    if (!isObject(envelope) || !isObject(envelope.properties) || !isObject(envelope.properties.error)) continue
    const error = envelope.properties.error
    if (!isObject(error.properties)) continue
    out[name] = {
      ...envelope,
      properties: { ...envelope.properties, error: { ...error, properties: { ...error.properties, code: ref("schemas", "ErrorCode") } } }
    }
  }
  const detail = out.ErrorDetail
  if (isObject(detail) && isObject(detail.properties)) {
    out.ErrorDetail = { ...detail, properties: { ...detail.properties, code: ref("schemas", "DetailCode") } }
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)))
}

/**
 * The parameters several operations describe alike (a parent's ID in the path, `limit`,
 * `cursor`…) moved to `components/parameters`, each named after the parameter: only those
 * whose name has one description in the whole document, so the name says which it is.
 */
const shareParameters = (paths: Record<string, JsonMap>): JsonMap => {
  const inline = (parameter: Json): parameter is JsonObject => isObject(parameter) && typeof parameter.name === "string"
  const variants = new Map<string, Map<string, number>>()
  const everyParameter = function* () {
    for (const item of Object.values(paths)) {
      for (const op of Object.values(item)) if (isObject(op) && Array.isArray(op.parameters)) yield op as JsonMap
    }
  }
  for (const op of everyParameter()) {
    for (const parameter of op.parameters as Array<Json>) {
      if (!inline(parameter)) continue
      const key = `${String(parameter.in)}:${String(parameter.name)}`
      const byJson = variants.get(key) ?? new Map<string, number>()
      const json = JSON.stringify(parameter)
      variants.set(key, byJson.set(json, (byJson.get(json) ?? 0) + 1))
    }
  }
  const shared: JsonMap = {}
  const names = new Map<string, string>()
  for (const [key, byJson] of variants) {
    const [json, count] = [...byJson][0]!
    if (byJson.size !== 1 || count < 2) continue
    const [where = "", name = ""] = key.split(":")
    const component = pascal(name) + (where === "query" && variants.has(`path:${name}`) ? "Query" : "")
    shared[component] = JSON.parse(json) as Json
    names.set(json, component)
  }
  for (const op of everyParameter()) {
    op.parameters = (op.parameters as Array<Json>).map((parameter) => {
      const component = inline(parameter) ? names.get(JSON.stringify(parameter)) : undefined
      return component !== undefined ? ref("parameters", component) : parameter
    })
  }
  return shared
}

/** A payment gateway's notification, served outside `/api/v3` (`gateway-notifications.ts`). */
const GATEWAY_NOTIFICATIONS_PATH = "/gateways/{gateway_id}/notifications"

/**
 * The path item of a gateway's notification: on its own server (`/`, not `/api/v3`), with no
 * credential (`security: []`: the gateway's signature instead). It answers what
 * `GET /sales/events/{sales_event_id}` answers, so its 200 is that response; its gateway ID is the
 * gateways' path parameter. Described when the document has both (a whole release's).
 */
const gatewayNotificationsPathItem = (paths: Readonly<Record<string, JsonMap>>, built: Built): JsonMap | undefined => {
  const read = paths["/sales/events/{sales_event_id}"]?.get
  const gateway = paths["/sales/gateways/{gateway_id}"]?.get
  if (!isObject(read) || !isObject(gateway) || !isObject(read.responses) || !Array.isArray(gateway.parameters)) return undefined
  const gatewayId = gateway.parameters.find((p) => isObject(p) && p.name === "gateway_id" && p.in === "path")
  const signed = (name: string, description: string, schema: JsonMap): JsonMap => ({ name, in: "header", required: true, description, schema })
  const errors: ReadonlyArray<readonly [number, ReadonlyArray<ErrorCode>]> = [
    [400, ["malformed_json", "json_too_deep", "unknown_parameter"]],
    [401, ["unauthenticated"]],
    [405, ["method_not_allowed"]],
    [409, ["state_conflict"]],
    [413, ["payload_too_large"]],
    [415, ["unsupported_media_type"]],
    [422, ["validation_failed", "unknown_field"]],
    [429, ["rate_limit_exceeded"]],
    [503, ["audit_unavailable", "rate_limiter_unavailable"]]
  ]
  return {
    servers: [{ url: "/", description: "The service's root: this route is outside `/api/v3`." }],
    post: {
      operationId: "gateway_notifications.receive",
      summary: "Receive a payment gateway's notification of a sale",
      description: [
        "Called by the payment gateway, not by a client of the API: no credential, the gateway's signature instead, in the Standard Webhooks form",
        "(`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<raw body>\">`,",
        "keyed with the gateway's signing secret, or its previous one during a rotation's grace). The signature is checked over the raw bytes",
        "before the body is parsed, and the timestamp must be within 5 minutes of the server's clock either way; a notification that fails",
        "either is 401 `unauthenticated` (`reason` `signature_missing`, `timestamp_out_of_window` or `signature_invalid`) and records nothing.",
        "An unknown, malformed or trashed gateway ID answers as a bad signature (401 `signature_invalid`), so its existence is not told;",
        "a disabled gateway is 409 `state_conflict` (`reason` `gateway_disabled`), after the signature. The event and sale IDs are one line:",
        "a control character (CR, LF, tab…) is 422 on the field, `reason` `invalid_characters`.",
        "Success is 200 with the sales event, which acted on access in the same unit of work (`approved` and `subscription_renewed` grant",
        "the delivery, `refunded`, `chargeback`, `canceled` and `subscription_expired` end it); the same gateway event ID again changes",
        "nothing and answers the first sales event with `Idempotent-Replayed: true`. Recorded even when sales are switched off in the",
        "settings: a payment happened. Decisions: docs/sales.md."
      ].join(" "),
      tags: [gateway.tags !== undefined && Array.isArray(gateway.tags) ? gateway.tags[0]! : "Sales"],
      security: [],
      parameters: [
        ...(gatewayId !== undefined ? [gatewayId] : []),
        signed("webhook-id", "The notification's ID at the gateway (Standard Webhooks).", { type: "string", minLength: 1, maxLength: 255 }),
        signed("webhook-timestamp", "Seconds since the Unix epoch, within 5 minutes of the server's clock.", { type: "string", pattern: "^[0-9]{1,12}$" }),
        signed("webhook-signature", "`v1,<base64 signature>`, one or more separated by spaces.", { type: "string", minLength: 4 }),
        ref("parameters", "AcceptLanguage")
      ],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: built.schemas.schema(NotificationBody, "gateway_notifications.receive"),
            example: {
              id: "evt_1PqR7sT2uV",
              type: "approved",
              occurred_at: "2026-03-01T12:00:00Z",
              sale_id: "ord_20260301_0042",
              delivery_id: "dlv_0Rb3kX9sT",
              user_id: "usr_0Rb3kX9sT",
              amount: 19900,
              currency: "EUR"
            }
          }
        }
      },
      responses: {
        "200": read.responses["200"] as Json,
        ...Object.fromEntries(errors.map(([status, codes]) => [String(status), errorResponse(status, codes, built.examples)]))
      },
      "x-required-capability": "none"
    }
  }
}

/** The OpenAPI 3.1 document of the operations, with the given operations marked deprecated. */
export const openApiDocument = (
  operations: ReadonlyArray<Operation>,
  deprecations: Deprecations = new Map()
): OpenApiDocument => {
  const schemas = makeSchemaRegistry()
  schemas.schema(ErrorSchema, "Error")
  schemas.schema(RateLimitErrorSchema, "RateLimitError")
  schemas.schema(PageSchema, "Page")
  // Every schema of every operation is met first, so that examples and enum parameters see all components.
  for (const operation of operations) {
    if (operation.body !== undefined) schemas.schema(operation.body, operation.id)
    if (operation.success.schema !== undefined) schemas.schema(operation.success.schema, operation.id)
  }
  let known: JsonObject | undefined
  const components = () => (known ??= withCodeCatalog(schemas.components()))
  const examples = makeExamples(components)
  const codesByOperation = operations.map((operation) =>
    errorCodesByStatus(operation, meetsDeprecation(operation, deprecations.get(operation.id)))
  )
  const errors = makeSharedErrors(codesByOperation, examples)
  const built: Built = { schemas, examples, errors, components }
  const paths: Record<string, JsonMap> = {}
  for (const operation of operations) {
    const item = (paths[operation.path] ??= {})
    item[operation.method.toLowerCase()] = operationObject(operation, deprecations.get(operation.id), built)
  }
  const notifications = gatewayNotificationsPathItem(paths, built)
  if (notifications !== undefined) paths[GATEWAY_NOTIFICATIONS_PATH] = notifications
  const parameters = { ...sharedParameters, ...shareParameters(paths) }
  const sharedResponses = errors.components()
  // The response headers in use: those of deprecation only when an operation is deprecated.
  const used = new Set([...JSON.stringify([paths, sharedResponses]).matchAll(/"#\/components\/headers\/([^"]+)"/g)].map(([, name]) => name))
  const headers = Object.fromEntries(Object.entries(sharedHeaders).filter(([name]) => used.has(name)))
  const { tags, groups } = tagsOf(operations)
  return {
    openapi: "3.1.0",
    info: { title: documentTitle, version: RELEASE, description },
    servers: [{ url: "/api/v3" }],
    tags: tags.map((tag) => ({ ...tag })),
    "x-tagGroups": groups.map((group) => ({ name: group.name, tags: [...group.tags] })),
    security: [{ CredentialSecret: [] }, { CredentialKey: [], AdministratorToken: [] }],
    paths,
    components: {
      schemas: withCodeCatalog(schemas.components()),
      responses: sharedResponses,
      parameters,
      headers,
      examples: examples.all(),
      securitySchemes
    }
  }
}

/** The committed copy of the description (`docs/openapi.json`): pretty-printed, without deprecations. */
export const openApiFileText = (operations: ReadonlyArray<Operation>): string =>
  `${JSON.stringify(openApiDocument(operations), null, 2)}\n`

/**
 * The description the server serves, built once per deprecation settings (the operation list
 * does not change while serving): for `GET /api/v3/openapi.json` and its public copy at
 * `/docs/openapi.json`.
 */
export const makeDescription = (operations: () => ReadonlyArray<Operation>) => {
  const built = new WeakMap<Deprecations, OpenApiDocument>()
  return (deprecations: Deprecations): OpenApiDocument => {
    const known = built.get(deprecations)
    if (known !== undefined) return known
    const document = openApiDocument(operations(), deprecations)
    built.set(deprecations, document)
    return document
  }
}

export const openApiOperation = (documentFor: (deprecations: Deprecations) => OpenApiDocument) =>
  defineOperation({
    id: "openapi.get",
    method: "GET",
    path: "/openapi.json",
    summary: "Get this description, of the latest release",
    tag: "Service",
    capability: "authenticated",
    idempotency: "none",
    success: { status: 200, description: "The OpenAPI 3.1 document." },
    errors: [],
    handler: () => Effect.map(ServerSettings, (settings) => ({ status: 200, body: documentFor(settings.deprecations) }))
  })
