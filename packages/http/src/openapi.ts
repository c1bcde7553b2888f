/**
 * `GET /openapi.json`: the OpenAPI 3.1 description of the release, derived from the
 * operation list. One function per concern: the JSON Schemas of the Effect schemas, the
 * parameters, the request body, the success response, the error responses, and the
 * document that assembles them (with the deprecations the server is configured with, §9).
 */
import {
  type ErrorCode,
  errorCodes,
  errorStatus,
  formatTimestamp,
  type IdKind,
  idPrefixes,
  type Json,
  type JsonObject,
  languages,
  MAX_PAGE_LIMIT
} from "@syllabus/core"
import { Effect, Either, JSONSchema, Schema } from "effect"
import { type AnySchema, defineOperation, type Operation } from "./operation.js"
import { ErrorSchema, PageSchema, RateLimitErrorSchema } from "./schemas.js"
import { type Deprecation, RELEASE, ServerSettings } from "./services.js"

type JsonMap = { [key: string]: Json }
export type Deprecations = ReadonlyMap<string, Deprecation>
export type OpenApiDocument = JsonMap

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const ref = (kind: "schemas" | "parameters" | "headers", name: string): JsonMap => ({ $ref: `#/components/${kind}/${name}` })

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

/** Enums whose set of values is closed within v3 (§9): adding a value is a breaking change. */
const closedEnums: Readonly<Record<string, ReadonlyArray<string>>> = {
  Credential: ["status", "auth_mode", "environment"],
  CreateCredentialBody: ["auth_mode"],
  UpdateCredentialBody: ["status", "auth_mode"],
  Request: ["environment"],
  AuditEntry: ["environment"],
  AccountUsage: ["environment"]
}

const markClosedEnums = (name: string, schema: Json): Json => {
  const fields = closedEnums[name]
  if (fields === undefined || !isObject(schema) || !isObject(schema.properties)) return schema
  const properties: JsonMap = { ...schema.properties }
  for (const field of fields) {
    const property = properties[field]
    if (isObject(property) && Array.isArray(property.enum)) properties[field] = { ...property, "x-extensible": false }
  }
  return { ...schema, properties }
}

type Strategy = "strict" | "allow"

/**
 * JSON Schema 2020-12 of Effect schemas. A schema with an `identifier` becomes a component,
 * referenced as `#/components/schemas/<identifier>`. Request schemas are closed
 * (`additionalProperties: false`: an unknown body field is 422 `unknown_field`, §2.1);
 * response schemas are open, since a new response field is a compatible change (§9).
 */
const makeSchemaRegistry = () => {
  const definitions: Record<Strategy, Record<string, JSONSchema.JsonSchema7>> = { strict: {}, allow: {} }
  const convert = (schema: AnySchema, strategy: Strategy, topLevel: "keep" | "skip" = "keep"): Json =>
    toJson(
      JSONSchema.fromAST(schema.ast, {
        definitions: definitions[strategy],
        definitionPath: "#/components/schemas/",
        target: "openApi3.1",
        additionalPropertiesStrategy: strategy,
        topLevelReferenceStrategy: topLevel
      })
    )
  return {
    request: (schema: AnySchema) => convert(schema, "strict"),
    /** A query Struct, inlined, so that each property becomes one parameter. */
    query: (schema: AnySchema) => convert(schema, "strict", "skip"),
    response: (schema: AnySchema) => convert(schema, "allow"),
    /** Every named schema met so far; a name used for two different shapes is a bug. */
    components: (): JsonMap => {
      const out: JsonMap = {}
      for (const strategy of ["strict", "allow"] as const) {
        for (const [name, definition] of Object.entries(definitions[strategy])) {
          const schema = markClosedEnums(name, toJson(definition))
          const known = out[name]
          if (known !== undefined && JSON.stringify(known) !== JSON.stringify(schema)) {
            throw new Error(`Two schemas are named ${name}`)
          }
          out[name] = schema
        }
      }
      return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)))
    }
  }
}

type SchemaRegistry = ReturnType<typeof makeSchemaRegistry>

// ---------------------------------------------------------------------------------------
// Parameters

const idempotencyKeySchema: JsonMap = { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" }
const idempotencyKeyDescription =
  "1 to 128 characters from `[A-Za-z0-9._:-]` (§4.1). The same key with the same body returns the recorded " +
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
    return {
      name,
      in: "path",
      required: true,
      ...(kind === undefined
        ? { schema: name.endsWith("_number") ? { type: "integer", minimum: 1 } : { type: "string" } }
        : {
            description: `Public ID of the ${kind.replaceAll("_", " ")}. Malformed, of another kind or out of range: 404 \`not_found\`.`,
            schema: { type: "string", pattern: `^${idPrefixes[kind]}_[0-9A-Za-z]{9}$` }
          })
    }
  })

const queryDescriptions: Readonly<Record<string, string>> = {
  limit: `Page size, 1 to ${MAX_PAGE_LIMIT}. Another value: 422 \`validation_failed\`.`,
  cursor: "`page.next_cursor` or `page.prev_cursor` of the previous page; valid 24 hours, bound to the sort and filters (else 400 `invalid_cursor`).",
  sort: "Order of the collection; a leading `-` reverses. Only the values listed (else 422 `validation_failed`).",
  created_after: "Only entries created at or after this instant.",
  created_before: "Only entries created before this instant."
}

/** One parameter per property of the operation's query Struct. */
const queryParameters = (operation: Operation, schemas: SchemaRegistry): Array<Json> => {
  if (operation.query === undefined) return []
  const struct = schemas.query(operation.query)
  if (!isObject(struct) || !isObject(struct.properties)) throw new Error(`The query of ${operation.id} is not a Struct`)
  const required = new Set(Array.isArray(struct.required) ? struct.required : [])
  return Object.entries(struct.properties).map(([name, schema]) => {
    const description = (isObject(schema) && typeof schema.description === "string" ? schema.description : undefined) ?? queryDescriptions[name]
    return {
      name,
      in: "query",
      required: required.has(name),
      ...(description !== undefined ? { description } : {}),
      schema
    }
  })
}

const headerParameters = (operation: Operation): Array<Json> => [
  ...(operation.idempotency === "required" ? [ref("parameters", "IdempotencyKey")] : []),
  ...(operation.idempotency === "optional" ? [ref("parameters", "IdempotencyKeyOptional")] : []),
  ...(operation.ifMatch !== undefined ? [ref("parameters", "IfMatch")] : []),
  ref("parameters", "ClientRequestId"),
  ref("parameters", "AcceptLanguage")
]

// ---------------------------------------------------------------------------------------
// Request body

/** A body is required when the operation rejects an absent one (the pipeline decodes it as `{}`). */
const requestBody = (operation: Operation, schemas: SchemaRegistry): JsonMap | undefined => {
  if (operation.rawBody !== undefined) {
    return {
      required: true,
      description: "Raw bytes, not JSON; the JSON rules of §1 (1 MiB, UTF-8) do not apply to them.",
      content: { [operation.rawBody]: { schema: { type: "string", contentMediaType: operation.rawBody } } }
    }
  }
  if (operation.body === undefined) return undefined
  const acceptsEmpty = Either.isRight(Schema.decodeUnknownEither(operation.body)({}))
  return {
    required: !acceptsEmpty,
    content: { "application/json": { schema: schemas.request(operation.body) } }
  }
}

// ---------------------------------------------------------------------------------------
// Response headers

const integerHeader = (description: string): JsonMap => ({ description, schema: { type: "integer", minimum: 0 } })

const sharedHeaders: JsonMap = {
  "X-Request-Id": { description: "Server-generated ID of the call; `error.request_id` and the request log use it.", schema: { type: "string" } },
  "X-Service-Release": { description: "The contract release that served the call.", schema: { type: "string", examples: [RELEASE] } },
  "X-Client-Request-Id": { description: "The `X-Client-Request-Id` of the request, when it had one.", schema: { type: "string" } },
  "RateLimit-Limit": integerHeader("Limit of the most restricted scope, per 60-second window (§8.1)."),
  "RateLimit-Remaining": integerHeader("Calls left in that scope's window."),
  "RateLimit-Reset": integerHeader("Seconds until that scope admits calls again."),
  "Retry-After": integerHeader("Seconds to wait before retrying."),
  ETag: { description: "`W/\"<type>:<id>:<revision>\"`, for `If-Match`; opaque.", schema: { type: "string" } },
  Location: { description: "Path of the created resource.", schema: { type: "string" } },
  "Idempotent-Replayed": { description: "`true` when this is the recorded result of an earlier call with the same `Idempotency-Key`.", schema: { type: "string", enum: ["true"] } },
  Deprecation: { description: "`@<unix seconds>` of the deprecation announcement (§9).", schema: { type: "string" } },
  Sunset: { description: "HTTP date after which the operation answers 410 `operation_sunset`.", schema: { type: "string" } },
  Link: { description: "`<{docs_url}/deprecations>; rel=\"deprecation\"`.", schema: { type: "string" } },
  Allow: { description: "The methods the path supports.", schema: { type: "string" } }
}

const headerRefs = (names: ReadonlyArray<string>): JsonMap =>
  Object.fromEntries(names.map((name) => [name, name in sharedHeaders ? ref("headers", name) : { schema: { type: "string" } }]))

const envelopeHeaders = ["X-Request-Id", "X-Service-Release", "X-Client-Request-Id"]
const rateLimitHeaders = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]
const deprecationHeaders = ["Deprecation", "Sunset", "Link"]

// ---------------------------------------------------------------------------------------
// Success response

const successResponse = (operation: Operation, deprecated: boolean, schemas: SchemaRegistry): JsonMap => {
  const { status, description, schema, collection, headers = [] } = operation.success
  const headerNames = [
    ...envelopeHeaders,
    ...rateLimitHeaders,
    ...headers,
    ...(operation.idempotency !== "none" ? ["Idempotent-Replayed"] : []),
    ...(deprecated ? deprecationHeaders : [])
  ]
  const body: Json | undefined =
    status === 204
      ? undefined
      : schema === undefined
        ? { type: "object", description: "A JSON object, not in the `data` envelope." }
        : collection
          ? {
              type: "object",
              required: ["data", "page"],
              properties: { data: { type: "array", items: schemas.response(schema) }, page: ref("schemas", "Page") }
            }
          : { type: "object", required: ["data"], properties: { data: schemas.response(schema) } }
  return {
    [String(status)]: {
      description,
      headers: headerRefs(headerNames),
      ...(operation.produces !== undefined
        ? {
            content: {
              [operation.produces]: {
                schema: { type: "string", description: "`id:`, `event:` and `data:` lines per message; `: keep-alive` comments." }
              }
            }
          }
        : body !== undefined
          ? { content: { "application/json": { schema: body } } }
          : {})
    }
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
    ...pipelineErrors,
    ...(operation.capability !== "authenticated" ? (["permission_denied"] as const) : []),
    // An array of the body over its maximum, alone, is 422 `too_many_items` (§8.2).
    ...(operation.body !== undefined ? (["too_many_items"] as const) : []),
    ...(operation.sandboxOnly ? (["sandbox_only"] as const) : []),
    ...(operation.idempotency === "required" ? (["idempotency_key_required"] as const) : []),
    ...(operation.idempotency !== "none"
      ? (["idempotency_key_invalid", "idempotency_key_reused", "idempotency_in_progress"] as const)
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

const errorResponse = (status: number, codes: ReadonlyArray<ErrorCode>): JsonMap => {
  const rateLimited = codes.includes("rate_limit_exceeded")
  const others = codes.some((code) => code !== "rate_limit_exceeded")
  const schema = rateLimited
    ? others
      ? { anyOf: [ref("schemas", "RateLimitError"), ref("schemas", "Error")] }
      : ref("schemas", "RateLimitError")
    : ref("schemas", "Error")
  return {
    description: `${reasonPhrases[status] ?? `HTTP ${status}`}: ${backticked(codes)}.`,
    headers: headerRefs([
      ...envelopeHeaders,
      ...(status === 429 ? [...rateLimitHeaders, "Retry-After"] : []),
      ...(status === 405 ? ["Allow"] : [])
    ]),
    content: { "application/json": { schema } },
    "x-error-codes": [...codes]
  }
}

/** One response per status the operation can answer an error with, naming its codes. */
const errorResponses = (operation: Operation, deprecated: boolean): JsonMap =>
  Object.fromEntries(
    [...errorCodesByStatus(operation, deprecated)].map(([status, codes]) => [String(status), errorResponse(status, codes)])
  )

// ---------------------------------------------------------------------------------------
// Operations and the document

const idempotencyNote = {
  required: " `Idempotency-Key` required.",
  optional: " `Idempotency-Key` accepted.",
  none: ""
} as const

const operationObject = (operation: Operation, deprecation: Deprecation | undefined, schemas: SchemaRegistry): JsonMap => {
  const deprecated = deprecation !== undefined
  const body = requestBody(operation, schemas)
  const needs = operation.capability === "authenticated" ? "Any valid credential." : `Requires \`${operation.capability}\`.`
  return {
    operationId: operation.id,
    summary: operation.summary,
    description:
      needs +
      idempotencyNote[operation.idempotency] +
      (operation.ifMatch !== undefined ? " Honours `If-Match`." : "") +
      (operation.sandboxOnly ? " Sandbox only: with production credentials, 403 `sandbox_only`." : ""),
    tags: [operation.tag],
    parameters: [...pathParameters(operation), ...queryParameters(operation, schemas), ...headerParameters(operation)],
    ...(body !== undefined ? { requestBody: body } : {}),
    responses: { ...successResponse(operation, deprecated, schemas), ...errorResponses(operation, deprecated) },
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

const tagDescriptions: Readonly<Record<string, string>> = {
  Credentials: "API credentials, their access policies and the administrators that may use them in human mode.",
  Audit: "The request log and the audit trail, kept 30 days.",
  Account: "Usage of the account.",
  Sandbox: "The sandbox environment.",
  Service: "The service's description of itself."
}

const securitySchemes: JsonMap = {
  CredentialSecret: {
    type: "http",
    scheme: "bearer",
    description: "Autonomous mode (§5.1): `Authorization: Bearer <secret>`, a `ck_live_…` or `ck_test_…` credential secret."
  },
  CredentialKey: {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description: "Human mode (§5.2): the credential secret, together with an administrator's access token."
  },
  AdministratorToken: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "Human mode (§5.2): `Authorization: Bearer <access token>`, an RS256 JWT (`aud` `service-api-v3`) from the OAuth 2.0 PKCE flow."
  }
}

const description = [
  "Administration API of an online-course platform account.",
  "",
  "Bodies are JSON. A resource is answered as `{ data }`, a collection as `{ data, page }` with cursor pagination.",
  "Every error is the `Error` envelope; `error.code` is the only field to branch on, and each response lists the codes",
  "possible at its status (`x-error-codes`). Every response carries `X-Request-Id` and `X-Service-Release`.",
  "Operations require the capability named in `x-required-capability`. Enums marked `x-extensible: false` are closed",
  "within v3; deprecated operations carry `x-deprecated-at` and `x-sunset`."
].join("\n")

/** The OpenAPI 3.1 document of the operations, with the given operations marked deprecated. */
export const openApiDocument = (
  operations: ReadonlyArray<Operation>,
  deprecations: Deprecations = new Map()
): OpenApiDocument => {
  const schemas = makeSchemaRegistry()
  schemas.response(ErrorSchema)
  schemas.response(RateLimitErrorSchema)
  schemas.response(PageSchema)
  const paths: Record<string, JsonMap> = {}
  for (const operation of operations) {
    const item = (paths[operation.path] ??= {})
    item[operation.method.toLowerCase()] = operationObject(operation, deprecations.get(operation.id), schemas)
  }
  const tags = [...new Set(operations.map((operation) => operation.tag))]
  return {
    openapi: "3.1.0",
    info: { title: "Course-platform administration API", version: RELEASE, description },
    servers: [{ url: "/api/v3" }],
    tags: tags.map((name) => ({ name, ...(tagDescriptions[name] ? { description: tagDescriptions[name] } : {}) })),
    security: [{ CredentialSecret: [] }, { CredentialKey: [], AdministratorToken: [] }],
    paths,
    components: {
      schemas: schemas.components(),
      parameters: sharedParameters,
      headers: sharedHeaders,
      securitySchemes
    }
  }
}

export const openApiOperation = (operations: () => ReadonlyArray<Operation>) => {
  /** Built once per deprecation settings: the operation list does not change while serving. */
  const built = new WeakMap<Deprecations, OpenApiDocument>()
  const documentFor = (deprecations: Deprecations): OpenApiDocument => {
    const known = built.get(deprecations)
    if (known !== undefined) return known
    const document = openApiDocument(operations(), deprecations)
    built.set(deprecations, document)
    return document
  }
  return defineOperation({
    id: "openapi.get",
    method: "GET",
    path: "/openapi.json",
    summary: "This description, of the latest release.",
    tag: "Service",
    capability: "authenticated",
    idempotency: "none",
    success: { status: 200, description: "The OpenAPI 3.1 document." },
    errors: [],
    handler: () => Effect.map(ServerSettings, (settings) => ({ status: 200, body: documentFor(settings.deprecations) }))
  })
}
