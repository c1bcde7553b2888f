/**
 * The OpenAPI 3.1 description (§9, open-points: "the final word for clients"), built from
 * the operation list: valid for a third-party validator, complete, and saying what the
 * pipeline does.
 */
import { Validator } from "@seriousme/openapi-schema-validator"
import { detailOnlyCodes, errorCodes, errorStatus, type ErrorCode, idPrefixes } from "@syllabus/core"
import { createRequire } from "node:module"
import { describe, expect, it } from "vitest"
import { operations } from "../src/api.js"
import { openApiDocument } from "../src/openapi.js"
import { hasWrittenTagDescription, resourceTagOf } from "../src/openapi-tags.js"

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

const httpMethods = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"])

/** Every operation of every path item (a path item's other fields, e.g. its own `servers`, aside). */
const operationsOf = (document: any): Array<{ path: string; method: string; op: any }> =>
  Object.entries(document.paths).flatMap(([path, item]: [string, any]) =>
    Object.entries(item).filter(([method]) => httpMethods.has(method)).map(([method, op]) => ({ path, method, op }))
  )

const find = (document: any, id: string): any => operationsOf(document).find((entry) => entry.op.operationId === id)!.op

const parameter = (op: any, name: string, where: string): any =>
  op.parameters.map(deref).find((p: any) => p.name === name && p.in === where)

/**
 * §7: `credential_revoked` is 401, and 422 on credential management operations; `http_error` is
 * "as response": 400, 408 for a body that does not arrive, 416 for a range past a file's end.
 */
const statusesOf = (code: ErrorCode): Array<number> =>
  code === "credential_revoked" ? [401, 422] : code === "http_error" ? [400, 408, 416] : [errorStatus[code]]

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
    // The routes, and the one outside `/api/v3` on a server of its own: a gateway's notification.
    expect(documented.map((e) => e.op.operationId).sort()).toEqual([...operations.map((o) => o.id), "gateway_notifications.receive"].sort())
    expect(doc.paths["/gateways/{gateway_id}/notifications"].servers).toEqual([expect.objectContaining({ url: "/" })])
    expect(doc.paths["/gateways/{gateway_id}/notifications"].post.security).toEqual([])
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
    expect(deref(op.responses["403"])["x-error-codes"]).toContain("delegation_limit_exceeded")
    expect(deref(op.responses["409"])["x-error-codes"]).toContain("secret_not_replayable")
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
      // A gateway's notification is named by its `webhook-id`, not by a client's request ID.
      if (op.operationId === "gateway_notifications.receive") {
        expect(parameter(op, "webhook-id", "header")?.required).toBe(true)
        expect(parameter(op, "Accept-Language", "header")?.required).toBe(false)
        continue
      }
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
      for (const [status, shared] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400) continue
        const response = deref(shared)
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
    const codes = (status: number) => deref(op.responses[String(status)])?.["x-error-codes"] ?? []
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
      expect(deref(responses["422"])["x-error-codes"], id).toContain("credential_revoked")
      expect(deref(responses["401"])["x-error-codes"], id).toContain("credential_revoked")
    }
    expect(deref(doc.paths["/credentials/current"].get.responses["422"])["x-error-codes"]).not.toContain("credential_revoked")
  })

  it("lists permission_denied only where a capability is required (§5)", () => {
    expect(deref(doc.paths["/capabilities"].get.responses["403"])["x-error-codes"]).not.toContain("permission_denied")
    expect(deref(doc.paths["/credentials"].get.responses["403"])["x-error-codes"]).toContain("permission_denied")
  })

  it("documents the 429 body and Retry-After (§8.1)", () => {
    const tooMany = deref(doc.paths["/credentials"].get.responses["429"])
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
    expect(Object.keys(item.properties).sort()).toEqual(["allowed", "code", "field", "message", "parameter", "reason"])
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
    // Resolved in the document of the deprecation: its shared responses are its own.
    const response410 = op.responses["410"].$ref === undefined
      ? op.responses["410"]
      : deprecated.components.responses[op.responses["410"].$ref.split("/").at(-1)]
    expect(response410["x-error-codes"]).toEqual(["operation_sunset"])
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

/** Every schema of the document, with where it is: components, parameters, bodies, responses. */
const everySchema = (): Array<[string, any]> => {
  const found: Array<[string, any]> = []
  const visit = (schema: any, where: string) => {
    if (schema === null || typeof schema !== "object") return
    found.push([where, schema])
    for (const [name, child] of Object.entries<any>(schema.properties ?? {})) visit(child, `${where}.${name}`)
    for (const list of [schema.anyOf, schema.oneOf, schema.allOf, schema.prefixItems]) for (const child of list ?? []) visit(child, where)
    visit(schema.items, `${where}[]`)
    if (typeof schema.additionalProperties === "object") visit(schema.additionalProperties, `${where}{}`)
  }
  for (const [name, schema] of Object.entries<any>(doc.components.schemas)) visit(schema, name)
  for (const [key, value] of walk(doc.paths)) if (key === "schema") visit(value, "(operation)")
  for (const [name, parameter] of Object.entries<any>(doc.components.parameters)) visit(parameter.schema, name)
  for (const [name, header] of Object.entries<any>(doc.components.headers)) visit(header.schema, name)
  return found
}

describe("OpenAPI description: shared components (issue 12)", () => {
  // Before shared components, 142 operations weighed 1,185,293 characters, about 8,350 each; the
  // release grows by operations, so the budget is per operation: at most half that.
  it("weighs under half per operation what it did when every response repeated its blocks", () => {
    const operations = operationsOf(doc).length
    expect(operations).toBeGreaterThan(100)
    expect(JSON.stringify(doc).length / operations).toBeLessThan(4_200)
  })

  it("describes an error response used by several operations once, in components/responses", () => {
    const inline = new Map<string, Array<string>>()
    for (const { op } of operationsOf(doc)) {
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400 || response.$ref !== undefined) continue
        const key = JSON.stringify(response)
        inline.set(key, [...(inline.get(key) ?? []), op.operationId])
      }
    }
    expect([...inline.values()].filter((ids) => ids.length > 1)).toEqual([])
    expect(doc.components.responses.NotFound["x-error-codes"]).toEqual(["not_found"])
    expect(doc.paths["/products"].get.responses["403"]).toEqual({ $ref: "#/components/responses/ForbiddenPermissionDenied" })
  })

  it("refers to the error envelope and to each resource's shape, never repeating them inline", () => {
    const envelopes = [...walk(doc.paths)].filter(([, value]) => value?.properties?.error?.properties?.code !== undefined)
    expect(envelopes).toEqual([])
    const product = doc.paths["/products/{product_id}"].get.responses["200"].content["application/json"].schema
    expect(product.properties.data).toEqual({ $ref: "#/components/schemas/Product" })
  })

  it("shares a parameter described alike by several operations (a parent's ID, limit, cursor)", () => {
    expect(doc.components.parameters.ProductId).toMatchObject({ name: "product_id", in: "path", schema: { pattern: "^prd_[0-9A-Za-z]{9}$" } })
    expect(doc.paths["/products/{product_id}/modules"].get.parameters).toContainEqual({ $ref: "#/components/parameters/ProductId" })
    expect(doc.components.parameters.Limit).toMatchObject({ name: "limit", in: "query" })
  })
})

describe("OpenAPI description: written for people (issue 12)", () => {
  it("has no title Effect generated (int, maxLength(200), unknown, never…)", () => {
    const titled = everySchema().filter(([, schema]) => typeof schema.title === "string").map(([where, schema]) => `${where}: ${schema.title}`)
    expect(titled).toEqual([])
  })

  it("gives every operation a summary of at most 120 characters, without backticks", () => {
    const bad = operations.filter((o) => o.summary.length === 0 || o.summary.length > 120 || o.summary.includes("`")).map((o) => o.id)
    expect(bad).toEqual([])
    for (const { op } of operationsOf(doc)) expect(typeof op.description).toBe("string")
  })

  it("keeps the detail of a long summary in the description", () => {
    const create = doc.paths["/operations"].post
    expect(create.summary).toBe("Start a batch of creates, updates or deletes")
    expect(create.description).toContain("up to 1,000 items")
  })
})

describe("OpenAPI description: tags (3.3.1, 3.3.2)", () => {
  it("tags each operation with the resource it acts on", () => {
    for (const { op } of operationsOf(doc)) expect(op.tags, op.operationId).toHaveLength(1)
    const tagOf = (id: string) => find(doc, id).tags[0]
    expect([tagOf("products.list"), tagOf("products.publications.create"), tagOf("modules.create"), tagOf("lessons.content.replace")]).toEqual([
      "Products",
      "Products",
      "Modules",
      "Lessons"
    ])
    expect([tagOf("showcases.get"), tagOf("users.tags.replace"), tagOf("tags.list"), tagOf("webhooks.replays.create")]).toEqual([
      "Showcases",
      "Users",
      "Tags",
      "Webhooks"
    ])
    expect([tagOf("events.list"), tagOf("operations.get"), tagOf("uploads.create"), tagOf("credentials.update")]).toEqual([
      "Events",
      "Operations",
      "Uploads",
      "Credentials"
    ])
  })

  it("describes every tag, with text a person wrote", () => {
    for (const tag of doc.tags) expect(tag.description, tag.name).toEqual(expect.any(String))
    expect(operations.filter((operation) => !hasWrittenTagDescription(operation)).map((o) => o.id)).toEqual([])
  })

  it("groups every tag in exactly one x-tagGroups group, by area", () => {
    const grouped = doc["x-tagGroups"].flatMap((group: any) => group.tags)
    expect([...grouped].sort()).toEqual(doc.tags.map((t: any) => t.name).sort())
    expect(new Set(grouped).size).toBe(grouped.length)
    const groupOf = (tag: string) => doc["x-tagGroups"].find((group: any) => group.tags.includes(tag))?.name
    expect(["Products", "Modules", "Lessons", "Showcases"].map(groupOf)).toEqual(Array(4).fill("Catalog and content"))
    expect(["Users", "Tags", "Administrators"].map(groupOf)).toEqual(Array(3).fill("People"))
    expect(groupOf("Credentials")).toBe("Access")
    expect(["Webhooks", "Events", "Operations", "Uploads"].map(groupOf)).toEqual(Array(4).fill("Integration"))
  })

  it("derives the tag of a route it has never seen from its operation ID", () => {
    const route = { ...operations[0]!, id: "gift_cards.create", tag: "Sales" }
    expect(resourceTagOf(route)).toBe("Gift cards")
    const withRoute: any = openApiDocument([...operations, { ...route, path: "/gift-cards" }])
    expect(withRoute.paths["/gift-cards"].post.tags).toEqual(["Gift cards"])
    expect(withRoute["x-tagGroups"].find((g: any) => g.name === "Sales").tags).toContain("Gift cards")
  })
})

describe("OpenAPI description: enums, codes, IDs, closed objects (§9, §7, §2.2, §2.1)", () => {
  it("marks every enum x-extensible true or false", () => {
    const unmarked = everySchema()
      .filter(([, schema]) => Array.isArray(schema.enum) && typeof schema["x-extensible"] !== "boolean")
      .map(([where]) => where)
    expect(unmarked).toEqual([])
  })

  it("closes the enums §9 names closed and leaves the others open", () => {
    const s = doc.components.schemas
    expect({
      credentialStatus: s.Credential.properties.status["x-extensible"],
      productStatus: s.Product.properties.status["x-extensible"],
      format: s.Product.properties.format["x-extensible"],
      operationStatus: s.Operation.properties.status["x-extensible"],
      lessonStatus: s.Lesson.properties.status["x-extensible"],
      object: s.Product.properties.object["x-extensible"]
    }).toEqual({ credentialStatus: false, productStatus: false, format: false, operationStatus: false, lessonStatus: false, object: false })
    expect({
      itemStatus: s.OperationItem.properties.status["x-extensible"],
      deliveryStatus: s.WebhookDelivery.properties.status["x-extensible"],
      errorCode: s.ErrorCode["x-extensible"],
      sort: parameter(doc.paths["/webhooks"].get, "sort", "query").schema["x-extensible"]
    }).toEqual({ itemStatus: true, deliveryStatus: true, errorCode: true, sort: true })
    // A filter is classified as the field it filters.
    expect(parameter(doc.paths["/operations"].get, "status", "query").schema["x-extensible"]).toBe(false)
  })

  it("makes error.code an enum of the whole catalog, and items' code the catalog plus the item codes", () => {
    expect(doc.components.schemas.ErrorCode.enum).toEqual([...errorCodes])
    expect(doc.components.schemas.Error.properties.error.properties.code).toEqual({ $ref: "#/components/schemas/ErrorCode" })
    expect(doc.components.schemas.RateLimitError.properties.error.properties.code).toEqual({ $ref: "#/components/schemas/ErrorCode" })
    expect(doc.components.schemas.DetailCode.enum).toEqual([...errorCodes, ...detailOnlyCodes])
  })

  it("gives each error response an example per code it lists, with that code", () => {
    for (const { op } of operationsOf(doc)) {
      for (const [status, shared] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400) continue
        const response = deref(shared)
        const examples = response.content["application/json"].examples
        expect(Object.keys(examples), `${op.operationId} ${status}`).toEqual(response["x-error-codes"])
        for (const [code, example] of Object.entries<any>(examples)) {
          expect(deref(example).value.error.code).toBe(code)
          expect(statusesOf(code as ErrorCode)).toContain(Number(status))
        }
      }
    }
  })

  it("gives public IDs the pattern of their prefix: ids, <kind>_id fields and path parameters", () => {
    const s = doc.components.schemas
    expect(s.Product.properties.id.pattern).toBe("^prd_[0-9A-Za-z]{9}$")
    expect(s.Module.properties.product_id.pattern).toBe("^prd_[0-9A-Za-z]{9}$")
    expect(s.Lesson.properties.id.pattern).toBe(`^${idPrefixes.lesson}_[0-9A-Za-z]{9}$`)
    expect(s.Event.properties.request_id.pattern).toBe("^req_[0-9A-Za-z]{9}$")
    // `operation_id` of the request log is an OpenAPI operation ID, not an `op_` ID.
    expect(JSON.stringify(s.Request.properties.operation_id)).not.toContain("pattern")
    expect(parameter(doc.paths["/products/{product_id}/modules/{module_id}"].get, "module_id", "path").schema.pattern).toBe("^mod_[0-9A-Za-z]{9}$")
  })

  it("closes every object of every success response (§2.1: every field listed), maps aside", () => {
    const open = operationsOf(doc)
      .flatMap(({ op }) =>
        Object.entries<any>(op.responses)
          .filter(([status, response]) => Number(status) < 300 && response.content?.["application/json"]?.schema?.properties)
          .flatMap(([, response]) => reachableSchemas(response.content["application/json"].schema).map((s) => [op.operationId, s]))
      )
      .filter(([, schema]) => schema.type === "object" && Object.keys(schema.properties ?? {}).length > 0 && schema.additionalProperties !== false)
    expect(open).toEqual([])
    expect(doc.components.schemas.Error.additionalProperties).toBe(false)
    // A map stays open: its keys are data (an event's object, an audit entry's changes).
    expect(doc.components.schemas.Event.properties.data.properties.object.additionalProperties).toEqual({})
  })
})

describe("OpenAPI description: examples (issue 12)", () => {
  it("has an example for every request body and every success response", () => {
    for (const { op } of operationsOf(doc)) {
      for (const media of Object.values<any>(op.requestBody?.content ?? {})) {
        expect(media.example !== undefined || Object.keys(media.examples ?? {}).length > 0, op.operationId).toBe(true)
      }
      const [status, success] = Object.entries<any>(op.responses).find(([s]) => Number(s) < 300)!
      if (status === "204") continue
      for (const media of Object.values<any>(success.content)) {
        expect(media.example !== undefined || Object.keys(media.examples ?? {}).length > 0, op.operationId).toBe(true)
      }
    }
  })

  it("gives examples that match their schemas (Ajv, JSON Schema 2020-12)", () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
    addFormats(ajv)
    ajv.addSchema({ ...doc, $id: "https://syllabus.test/openapi.json" })
    const failures: Array<string> = []
    for (const { path, method, op } of operationsOf(doc)) {
      // Each media type with the pointer to it, a response shared in components validated through its own schema.
      const media: Array<[Array<string>, any]> = [
        ...Object.entries<any>(op.requestBody?.content ?? {}).map(([type, m]): [Array<string>, any] => [
          ["paths", path, method, "requestBody", "content", type],
          m
        ]),
        ...Object.entries<any>(op.responses).flatMap(([status, r]) => {
          const base = r.$ref ? r.$ref.slice(2).split("/") : ["paths", path, method, "responses", status]
          return Object.entries<any>(deref(r).content ?? {}).map(([type, m]): [Array<string>, any] => [[...base, "content", type], m])
        })
      ]
      for (const [where, m] of media) {
        if (m.schema?.$ref === undefined && m.schema?.properties === undefined && m.schema?.anyOf === undefined) continue
        const pointer = [...where, "schema"].map((p) => p.replaceAll("~", "~0").replaceAll("/", "~1")).join("/")
        const validate = ajv.compile({ $ref: `https://syllabus.test/openapi.json#/${pointer}` })
        const values = m.example !== undefined ? [m.example] : Object.values<any>(m.examples ?? {}).map((e) => deref(e).value)
        for (const value of values) if (!validate(value)) failures.push(`${op.operationId} ${pointer}: ${ajv.errorsText(validate.errors)}`)
      }
    }
    expect(failures).toEqual([])
    // Compiling a validator per example of 160-odd operations: ~20 s alone, past 30 s on a busy machine.
  }, 120_000)
})

describe("OpenAPI description: no text Effect generated", () => {
  it("has no description Effect writes for a refinement (a string at most 200 character(s) long…)", () => {
    const generated = [...walk(doc)].filter(([key, value]) => key === "description" && typeof value === "string" && /^an? [a-z]/.test(value))
    expect(generated).toEqual([])
    expect(parameter(doc.paths["/products"].get, "q", "query").description).toMatch(/^Text searched for/)
  })

  it("ends no summary with a period: they are sidebar lines", () => {
    expect(operationsOf(doc).filter(({ op }) => op.summary.endsWith(".")).map(({ op }) => op.operationId)).toEqual([])
  })
})
