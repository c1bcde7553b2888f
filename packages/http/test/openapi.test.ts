/**
 * The OpenAPI 3.1 description (§9, open-points: "the final word for clients"), built from
 * the operation list: valid for a third-party validator, complete, and saying what the
 * pipeline does.
 */
import { Validator } from "@seriousme/openapi-schema-validator"
import { errorStatus, type ErrorCode } from "@syllabus/core"
import { createRequire } from "node:module"
import { describe, expect, it } from "vitest"
import { operations } from "../src/api.js"
import { openApiDocument } from "../src/openapi.js"

// The document as plain JSON, the way a client reads it.
const load = (deprecations?: Parameters<typeof openApiDocument>[1]): any =>
  JSON.parse(JSON.stringify(openApiDocument(operations, deprecations)))

const doc = load()

/** Ajv for JSON Schema 2020-12, as shipped with the validator. */
const fromValidator = createRequire(createRequire(import.meta.url).resolve("@seriousme/openapi-schema-validator"))
const Ajv2020 = fromValidator("ajv/dist/2020.js").default
const addFormats = fromValidator("ajv-formats").default

const resolve = (pointer: string): any => {
  if (!pointer.startsWith("#/")) return undefined
  let node: any = doc
  for (const part of pointer.slice(2).split("/")) {
    node = node?.[part.replaceAll("~1", "/").replaceAll("~0", "~")]
  }
  return node
}

const deref = (node: any): any => (node && typeof node.$ref === "string" ? deref(resolve(node.$ref)) : node)

/** Every value under `node`, depth first, with the key it was found under. */
const walk = function* (node: unknown, key = ""): Generator<[string, any]> {
  yield [key, node]
  if (Array.isArray(node)) for (const item of node) yield* walk(item, key)
  else if (node !== null && typeof node === "object") for (const [k, v] of Object.entries(node)) yield* walk(v, k)
}

/** Every (sub)schema reachable from a schema, following `$ref`s. */
const reachableSchemas = (root: any): Array<any> => {
  const seen = new Set<any>()
  const visit = (schema: any) => {
    if (schema === null || typeof schema !== "object" || seen.has(schema)) return
    seen.add(schema)
    if (typeof schema.$ref === "string") visit(resolve(schema.$ref))
    for (const child of Object.values(schema.properties ?? {})) visit(child)
    for (const list of [schema.anyOf, schema.oneOf, schema.allOf, schema.prefixItems]) for (const child of list ?? []) visit(child)
    visit(schema.items)
    visit(schema.additionalProperties)
  }
  visit(root)
  return [...seen].filter((schema) => schema.$ref === undefined)
}

const operationsOf = (document: any): Array<{ path: string; method: string; op: any }> =>
  Object.entries(document.paths).flatMap(([path, item]: [string, any]) =>
    Object.entries(item).map(([method, op]) => ({ path, method, op }))
  )

const find = (document: any, id: string): any => operationsOf(document).find((entry) => entry.op.operationId === id)!.op

const parameter = (op: any, name: string, where: string): any =>
  op.parameters.map(deref).find((p: any) => p.name === name && p.in === where)

/** §7: `credential_revoked` is 401, and 422 on credential management operations. */
const statusesOf = (code: ErrorCode): Array<number> => (code === "credential_revoked" ? [401, 422] : [errorStatus[code]])

describe("OpenAPI description", () => {
  it("validates against the OpenAPI 3.1 schema (@seriousme/openapi-schema-validator)", async () => {
    const result = await new Validator().validate(doc)
    if (!result.valid) console.error(JSON.stringify(result.errors, null, 2))
    expect(result.valid).toBe(true)
  })

  it("has schemas that are valid JSON Schema 2020-12", () => {
    const ajv = new Ajv2020({ strict: false })
    addFormats(ajv)
    const invalid = [...walk(doc)]
      .filter(([key, value]) => key === "schema" || (key === "schemas" && value === doc.components.schemas))
      .flatMap(([key, value]) => (key === "schemas" ? Object.entries(value) : [["(inline)", value]]))
      .filter(([, schema]) => !ajv.validateSchema(schema))
      .map(([name]) => name)
    expect(invalid).toEqual([])
  })

  it("is OpenAPI 3.1.0 of release 3.4.7, served under /api/v3 (§9)", () => {
    expect(doc.openapi).toBe("3.1.0")
    expect(doc.info.version).toBe("3.4.7")
    expect(doc.info.title).toEqual(expect.any(String))
    expect(doc.info.description).toEqual(expect.any(String))
    expect(doc.servers).toEqual([{ url: "/api/v3" }])
  })

  it("documents every operation exactly once, under its operationId, method and path", () => {
    const documented = operationsOf(doc)
    expect(documented.map((e) => e.op.operationId).sort()).toEqual(operations.map((o) => o.id).sort())
    for (const operation of operations) {
      expect(doc.paths[operation.path]?.[operation.method.toLowerCase()]?.operationId).toBe(operation.id)
    }
  })

  it("declares every tag it uses", () => {
    const declared = doc.tags.map((t: any) => t.name)
    for (const { op } of operationsOf(doc)) for (const tag of op.tags) expect(declared).toContain(tag)
  })

  it("resolves every $ref inside the document", () => {
    const refs = [...walk(doc)].filter(([key, value]) => key === "$ref" && typeof value === "string").map(([, value]) => value)
    expect(refs.length).toBeGreaterThan(0)
    expect(refs.filter((ref) => resolve(ref) === undefined)).toEqual([])
  })

  it("documents POST /credentials: Idempotency-Key required, 201, 403 delegation_limit_exceeded, 409 secret_not_replayable (§4.3)", () => {
    const op = doc.paths["/credentials"].post
    const key = parameter(op, "Idempotency-Key", "header")
    expect(key.required).toBe(true)
    expect(key.schema.pattern).toBe("^[A-Za-z0-9._:-]{1,128}$")
    expect(op.responses["201"]).toBeDefined()
    expect(op.responses["201"].headers.Location).toBeDefined()
    expect(op.responses["403"]["x-error-codes"]).toContain("delegation_limit_exceeded")
    expect(op.responses["409"]["x-error-codes"]).toContain("secret_not_replayable")
    expect(op.requestBody.required).toBe(true)
  })

  it("marks Idempotency-Key optional where the operation accepts it without requiring it (§4.1)", () => {
    const key = parameter(doc.paths["/credentials/{credential_id}"].patch, "Idempotency-Key", "header")
    expect(key.required).toBe(false)
    expect(parameter(doc.paths["/credentials/{credential_id}"].get, "Idempotency-Key", "header")).toBeUndefined()
  })

  it("documents If-Match exactly on the operations that honour it (§4.1)", () => {
    for (const operation of operations) {
      const ifMatch = parameter(find(doc, operation.id), "If-Match", "header")
      expect([operation.id, ifMatch !== undefined]).toEqual([operation.id, operation.ifMatch !== undefined])
    }
  })

  it("documents X-Client-Request-Id and Accept-Language on every operation (§1, §4.1)", () => {
    for (const { op } of operationsOf(doc)) {
      expect(parameter(op, "X-Client-Request-Id", "header")?.required).toBe(false)
      expect(parameter(op, "Accept-Language", "header")?.required).toBe(false)
    }
  })

  it("gives path parameters the pattern of their public ID (open-points: Public IDs)", () => {
    const id = parameter(doc.paths["/credentials/{credential_id}/administrators/{administrator_id}"].delete, "administrator_id", "path")
    expect(id.required).toBe(true)
    expect(id.schema.pattern).toBe("^adm_[0-9A-Za-z]{9}$")
    expect(parameter(doc.paths["/requests/{request_id}"].get, "request_id", "path").schema.pattern).toBe("^req_[0-9A-Za-z]{9}$")
  })

  it("documents the query parameters of collections as optional, with limit 1 to 200 (§4.2)", () => {
    const op = doc.paths["/credentials"].get
    const limit = parameter(op, "limit", "query")
    expect(limit).toMatchObject({ required: false, schema: { type: "integer", minimum: 1, maximum: 200, default: 50 } })
    expect(parameter(op, "cursor", "query").required).toBe(false)
    expect(parameter(op, "sort", "query").schema.enum).toEqual(["created_at", "-created_at"])
    expect(parameter(op, "status", "query").schema.enum).toEqual(expect.arrayContaining(["active", "revoked"]))
  })

  it("closes every object of every request body: an unknown field is 422 unknown_field (§2.1)", () => {
    const open = operationsOf(doc)
      .filter(({ op }) => op.requestBody?.content["application/json"])
      .flatMap(({ op }) => reachableSchemas(op.requestBody.content["application/json"].schema).map((s) => [op.operationId, s]))
      // A map (`additionalProperties` a schema, no declared properties) is open by design: its keys are data.
      .filter(
        ([, schema]) =>
          schema.type === "object" &&
          Object.keys(schema.properties ?? {}).length > 0 &&
          schema.additionalProperties !== false
      )
    expect(open).toEqual([])
  })

  it("documents the items of every array of every request body (policies are PolicyInput)", () => {
    const bare = operationsOf(doc)
      .filter(({ op }) => op.requestBody?.content["application/json"])
      .flatMap(({ op }) => reachableSchemas(op.requestBody.content["application/json"].schema).map((s) => [op.operationId, s]))
      .filter(([, schema]) => schema.type === "array" && schema.items === undefined)
    expect(bare).toEqual([])
    expect(deref(doc.components.schemas.CreateCredentialBody).properties.policies.items).toEqual({
      $ref: "#/components/schemas/PolicyInput"
    })
  })

  it("requires a request body only where an absent one is rejected", () => {
    expect(doc.paths["/credentials/{credential_id}/administrators"].post.requestBody.required).toBe(true)
    expect(doc.paths["/credentials/{credential_id}/secret-rotations"].post.requestBody.required).toBe(false)
    expect(doc.paths["/credentials/{credential_id}"].patch.requestBody.required).toBe(false)
  })

  it("wraps a resource in { data } and a collection in { data, page } (§2.1)", () => {
    const single = doc.paths["/credentials/current"].get.responses["200"].content["application/json"].schema
    expect(single.required).toEqual(["data"])
    expect(single.properties.data).toEqual({ $ref: "#/components/schemas/Credential" })
    const collection = doc.paths["/credentials"].get.responses["200"].content["application/json"].schema
    expect(collection.required).toEqual(["data", "page"])
    expect(collection.properties.data).toEqual({ type: "array", items: { $ref: "#/components/schemas/Credential" } })
    expect(collection.properties.page).toEqual({ $ref: "#/components/schemas/Page" })
    expect(doc.components.schemas.Page.required).toEqual(["limit", "next_cursor", "prev_cursor"])
  })

  it("answers 204 without content", () => {
    const removed = doc.paths["/credentials/{credential_id}"].delete.responses["204"]
    expect(removed).toBeDefined()
    expect(removed.content).toBeUndefined()
  })

  it("documents X-Request-Id, X-Service-Release and RateLimit-* on success, ETag where declared (§1, §8.1)", () => {
    for (const operation of operations) {
      const headers = find(doc, operation.id).responses[String(operation.success.status)].headers
      for (const name of ["X-Request-Id", "X-Service-Release", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]) {
        expect(headers[name], `${operation.id} ${name}`).toBeDefined()
      }
      for (const name of operation.success.headers ?? []) expect(headers[name], `${operation.id} ${name}`).toBeDefined()
      expect(headers["Idempotent-Replayed"] !== undefined).toBe(operation.idempotency !== "none")
    }
  })

  it("files each error code under its HTTP status, with the Error envelope, and lists every declared code (§7)", () => {
    for (const operation of operations) {
      const op = find(doc, operation.id)
      const listed: Array<string> = []
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400) continue
        expect(response["x-error-codes"].length).toBeGreaterThan(0)
        for (const code of response["x-error-codes"] as Array<ErrorCode>) {
          expect([operation.id, code, statusesOf(code)]).toEqual([operation.id, code, expect.arrayContaining([Number(status)])])
          expect(response.description).toContain(`\`${code}\``)
        }
        listed.push(...response["x-error-codes"])
        const schema = response.content["application/json"].schema
        const refs = schema.anyOf ? schema.anyOf.map((s: any) => s.$ref) : [schema.$ref]
        expect(refs).toContain(status === "429" ? "#/components/schemas/RateLimitError" : "#/components/schemas/Error")
      }
      for (const code of operation.errors) expect(listed, operation.id).toContain(code)
    }
  })

  it("lists the errors every operation can answer (§7, §8.1)", () => {
    const op = doc.paths["/capabilities"].get
    const codes = (status: number) => op.responses[String(status)]?.["x-error-codes"] ?? []
    expect(codes(400)).toEqual(expect.arrayContaining(["malformed_json", "json_too_deep", "invalid_utf8", "unknown_parameter"]))
    expect(codes(401)).toEqual(expect.arrayContaining(["unauthenticated", "credential_revoked", "invalid_access_token"]))
    expect(codes(403)).toEqual(expect.arrayContaining(["instance_blocked", "instance_unavailable"]))
    expect(codes(404)).toContain("not_found")
    for (const [status, code] of [[405, "method_not_allowed"], [406, "not_acceptable"], [413, "payload_too_large"], [415, "unsupported_media_type"], [429, "rate_limit_exceeded"], [500, "internal_error"]] as const) {
      expect(codes(status)).toContain(code)
    }
    expect(codes(422)).toEqual(expect.arrayContaining(["validation_failed", "unknown_field"]))
    expect(codes(503)).toEqual(expect.arrayContaining(["credential_state_unverifiable", "rate_limiter_unavailable", "audit_unavailable"]))
  })

  it("lists credential_revoked under 422 on credential management and under 401 everywhere (§7)", () => {
    for (const id of ["credentials.update", "credentials.revocations.create", "credentials.secret_rotations.create"]) {
      const responses = find(doc, id).responses
      expect(responses["422"]["x-error-codes"], id).toContain("credential_revoked")
      expect(responses["401"]["x-error-codes"], id).toContain("credential_revoked")
    }
    expect(doc.paths["/credentials/current"].get.responses["422"]["x-error-codes"]).not.toContain("credential_revoked")
  })

  it("lists permission_denied only where a capability is required (§5)", () => {
    expect(doc.paths["/capabilities"].get.responses["403"]["x-error-codes"]).not.toContain("permission_denied")
    expect(doc.paths["/credentials"].get.responses["403"]["x-error-codes"]).toContain("permission_denied")
  })

  it("documents the 429 body and Retry-After (§8.1)", () => {
    const tooMany = doc.paths["/credentials"].get.responses["429"]
    expect(tooMany.headers["Retry-After"]).toBeDefined()
    expect(tooMany.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/RateLimitError" })
    const error = doc.components.schemas.RateLimitError.properties.error
    expect(error.required).toEqual(expect.arrayContaining(["code", "message", "request_id", "details", "retry_after_seconds", "blocked_by", "limits"]))
    expect(deref(error.properties.limits.items).required).toEqual(["scope", "limit", "window_seconds", "remaining", "retry_after_seconds"])
  })

  it("documents the error envelope of §7", () => {
    const error = doc.components.schemas.Error.properties.error
    expect(error.required).toEqual(["code", "message", "request_id", "details"])
    expect(Object.keys(error.properties)).toContain("reason")
    const item = deref(error.properties.details.items)
    expect(item.required).toEqual(["code", "message"])
    expect(Object.keys(item.properties).sort()).toEqual(["code", "field", "message", "parameter", "reason"])
  })

  it("offers autonomous mode or human mode as alternative security requirements (§5)", () => {
    const schemes = doc.components.securitySchemes
    expect(doc.security).toEqual([{ CredentialSecret: [] }, { CredentialKey: [], AdministratorToken: [] }])
    expect(schemes.CredentialSecret).toMatchObject({ type: "http", scheme: "bearer" })
    expect(schemes.CredentialKey).toMatchObject({ type: "apiKey", in: "header", name: "X-API-Key" })
    expect(schemes.AdministratorToken).toMatchObject({ type: "http", scheme: "bearer", bearerFormat: "JWT" })
  })

  it("names the capability each operation requires in x-required-capability", () => {
    for (const operation of operations) expect(find(doc, operation.id)["x-required-capability"]).toBe(operation.capability)
  })

  it("marks closed enums x-extensible: false (§9)", () => {
    const credential = doc.components.schemas.Credential.properties
    for (const field of ["status", "auth_mode", "environment"]) expect(credential[field]["x-extensible"]).toBe(false)
  })

  it("marks a deprecated operation deprecated, with its announcement and sunset dates and 410 (§9)", async () => {
    const deprecatedAt = Date.UTC(2026, 0, 15)
    const sunsetAt = Date.UTC(2026, 6, 15)
    const deprecated = load(new Map([["credentials.list", { deprecatedAt, sunsetAt }]]))
    const op = deprecated.paths["/credentials"].get
    expect(op.deprecated).toBe(true)
    expect(op["x-deprecated-at"]).toBe("2026-01-15T00:00:00.000Z")
    expect(op["x-sunset"]).toBe("2026-07-15T00:00:00.000Z")
    expect(op.responses["410"]["x-error-codes"]).toEqual(["operation_sunset"])
    expect(Object.keys(op.responses["200"].headers)).toEqual(expect.arrayContaining(["Deprecation", "Sunset", "Link"]))
    expect(deprecated.paths["/credentials"].post.deprecated).toBeUndefined()
    expect(doc.paths["/credentials"].get.deprecated).toBeUndefined()
    expect((await new Validator().validate(deprecated)).valid).toBe(true)
  })
})

describe("raw-body operations", () => {
  it("document application/octet-stream as the only content of a part upload, and JSON everywhere else", () => {
    const doc = openApiDocument(operations) as any
    const put = doc.paths["/uploads/{upload_id}/parts/{part_number}"].put
    expect(Object.keys(put.requestBody.content)).toEqual(["application/octet-stream"])
    const post = doc.paths["/uploads"].post
    expect(Object.keys(post.requestBody.content)).toEqual(["application/json"])
  })
})

describe("streamed operations", () => {
  it("document text/event-stream as the success content of an event stream connection", () => {
    const doc = openApiDocument(operations) as any
    const connect = doc.paths["/event-streams/{event_stream_id}/events"].get
    expect(Object.keys(connect.responses["200"].content)).toEqual(["text/event-stream"])
  })
})
