/**
 * `GET /api/v3/openapi.json` (§4.5, §9): the served description is valid OpenAPI 3.1 of the
 * release served, reflects the server's deprecations, and the answers of the server match it.
 */
import { Validator } from "@seriousme/openapi-schema-validator"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { at, descriptionValidator } from "../support/json-schema.js"

const deprecatedAt = Date.UTC(2026, 0, 15)
const sunsetAt = Date.UTC(2099, 0, 1)

/** Whether a body matches the schema the document gives for this response. */
const conformance = (doc: any, path: string, method: string, status: number, body: unknown) => {
  // A response shared in `components/responses` is validated through its own schema.
  const response = doc.paths[path][method].responses[String(status)]
  const base = response?.$ref ? response.$ref.slice(2).split("/") : ["paths", path, method, "responses", String(status)]
  return descriptionValidator(doc)(at(...base, "content", "application/json", "schema"), body)
}

/** The documented response of an operation at a status, following a `$ref` to `components/responses`. */
const responseOf = (doc: any, path: string, method: string, status: number): any => {
  const response = doc.paths[path][method].responses[String(status)]
  return response?.$ref ? doc.components.responses[response.$ref.split("/").pop()] : response
}

/** Headers of HTTP itself, not of the API. */
const transportHeaders = new Set(["content-type", "content-length", "date", "connection", "keep-alive", "transfer-encoding"])

/** The headers of a response that its documented response does not name. */
const undocumentedHeaders = (doc: any, path: string, method: string, status: number, headers: Headers) => {
  const documented = new Set(Object.keys(responseOf(doc, path, method, status).headers ?? {}).map((n) => n.toLowerCase()))
  const sent: Array<string> = []
  headers.forEach((_value, name) => sent.push(name))
  return sent.filter((name) => !transportHeaders.has(name) && !documented.has(name))
}

eachStore(
  "openapi.json",
  (h) => {
    let cached: any
    const description = async (harness: Harness) => {
      if (cached) return cached
      const res = await harness.request("GET", "/api/v3/openapi.json", { secret: harness.live })
      expect(res.status).toBe(200)
      cached = res.body
      return cached
    }

    it("serves OpenAPI 3.1.0 whose info.version is the release served (§9)", async () => {
      const res = await h().request("GET", "/api/v3/openapi.json", { secret: h().live })
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toMatch(/^application\/json/)
      expect(res.body.openapi).toBe("3.1.0")
      expect(res.body.info.version).toBe("3.4.7")
      expect(res.headers.get("x-service-release")).toBe(res.body.info.version)
    })

    it("serves a description that a third-party validator accepts", async () => {
      const result = await new Validator().validate(await description(h()))
      if (!result.valid) console.error(JSON.stringify(result.errors, null, 2))
      expect(result.valid).toBe(true)
    })

    it("serves the same description to a sandbox credential", async () => {
      const res = await h().request("GET", "/api/v3/openapi.json", { secret: h().test })
      expect(res.status).toBe(200)
      expect(res.body).toEqual(await description(h()))
    })

    it("requires a credential like every /api/v3 call (§5)", async () => {
      const res = await h().request("GET", "/api/v3/openapi.json")
      expect(res.status).toBe(401)
      expect(res.body.error.code).toBe("unauthenticated")
    })

    it("marks the operations the server deprecates, with their dates (§9)", async () => {
      const op = (await description(h())).paths["/policy-templates"].get
      expect(op.deprecated).toBe(true)
      expect(op["x-deprecated-at"]).toBe(new Date(deprecatedAt).toISOString())
      expect(op["x-sunset"]).toBe(new Date(sunsetAt).toISOString())
      expect((await description(h())).paths["/credentials"].get.deprecated).toBeUndefined()
    })

    it("describes the credential the server answers on GET /credentials/current", async () => {
      const res = await h().request("GET", "/api/v3/credentials/current", { secret: h().live })
      expect(res.status).toBe(200)
      expect(conformance(await description(h()), "/credentials/current", "get", 200, res.body)).toEqual({ valid: true, errors: [] })
    })

    it("describes the credential with its secret answered by POST /credentials", async () => {
      const res = await h().request("POST", "/api/v3/credentials", { secret: h().live, json: { name: "described" } })
      expect(res.status).toBe(201)
      expect(conformance(await description(h()), "/credentials", "post", 201, res.body)).toEqual({ valid: true, errors: [] })
    })

    it("describes the page of credentials answered by GET /credentials", async () => {
      const res = await h().request("GET", "/api/v3/credentials?limit=2", { secret: h().live })
      expect(res.status).toBe(200)
      expect(conformance(await description(h()), "/credentials", "get", 200, res.body)).toEqual({ valid: true, errors: [] })
    })

    it("describes the error envelope the server answers, under a status listing its code (§7)", async () => {
      const res = await h().request("GET", "/api/v3/credentials/crd_000000000", { secret: h().live })
      expect(res.status).toBe(404)
      const doc = await description(h())
      expect(responseOf(doc, "/credentials/{credential_id}", "get", 404)["x-error-codes"]).toContain(res.body.error.code)
      expect(conformance(doc, "/credentials/{credential_id}", "get", 404, res.body)).toEqual({ valid: true, errors: [] })
    })

    it("documents every header the server sends with a success", async () => {
      const doc = await description(h())
      const current = await h().request("GET", "/api/v3/credentials/current", { secret: h().live })
      const created = await h().request("POST", "/api/v3/credentials", { secret: h().live, json: { name: "headers" } })
      const id = created.body.data.id
      const rotated = await h().request("POST", `/api/v3/credentials/${id}/secret-rotations`, { secret: h().live })
      const revoked = await h().request("POST", `/api/v3/credentials/${id}/revocations`, { secret: h().live })
      expect({
        current: undocumentedHeaders(doc, "/credentials/current", "get", current.status, current.headers),
        created: undocumentedHeaders(doc, "/credentials", "post", created.status, created.headers),
        rotated: undocumentedHeaders(doc, "/credentials/{credential_id}/secret-rotations", "post", rotated.status, rotated.headers),
        revoked: undocumentedHeaders(doc, "/credentials/{credential_id}/revocations", "post", revoked.status, revoked.headers)
      }).toEqual({ current: [], created: [], rotated: [], revoked: [] })
    })

    it("documents the 422 credential_revoked that credential management answers (§7)", async () => {
      const created = await h().request("POST", "/api/v3/credentials", { secret: h().live, json: { name: "to revoke" } })
      const id = created.body.data.id
      expect((await h().request("POST", `/api/v3/credentials/${id}/revocations`, { secret: h().live })).status).toBe(200)
      const res = await h().request("PATCH", `/api/v3/credentials/${id}`, { secret: h().live, json: { name: "renamed" } })
      expect([res.status, res.body.error.code]).toEqual([422, "credential_revoked"])
      const doc = await description(h())
      expect(responseOf(doc, "/credentials/{credential_id}", "patch", 422)["x-error-codes"]).toContain("credential_revoked")
      expect(conformance(doc, "/credentials/{credential_id}", "patch", 422, res.body)).toEqual({ valid: true, errors: [] })
    })

    it("describes every field the server answers and no other, IDs with their prefix (§2.1, §2.2)", async () => {
      const doc = await description(h())
      const call = (method: string, path: string, json?: unknown) => h().request(method, `/api/v3${path}`, { secret: h().live, json })
      const showcase = await call("POST", "/showcases", { name: `Described ${Date.now()}` })
      const product = await call("POST", "/products", { format: "course", name: "Described", showcase_id: showcase.body.data.id })
      const productId = product.body.data.id
      const module = await call("POST", `/products/${productId}/modules`, { name: "Module" })
      const lesson = await call("POST", `/products/${productId}/lessons`, { name: "Lesson", module_id: module.body.data.id })
      const tag = await call("POST", "/tags", { name: `Described ${Date.now()}` })
      const user = await call("POST", "/users", { name: "Ada", email: `ada-${Date.now()}@example.com` })
      const hook = await call("POST", "/webhooks", { url: "https://example.com/hook", event_types: ["product.created"] })
      const answers: Array<[string, string, number, { status: number; body: unknown }]> = [
        ["/showcases", "post", 201, showcase],
        ["/products", "post", 201, product],
        ["/products/{product_id}/modules", "post", 201, module],
        ["/products/{product_id}/lessons", "post", 201, lesson],
        ["/tags", "post", 201, tag],
        ["/users", "post", 201, user],
        ["/webhooks", "post", 201, hook],
        ["/products", "get", 200, await call("GET", "/products")],
        ["/products/{product_id}", "get", 200, await call("GET", `/products/${productId}`)],
        ["/products/{product_id}/lessons/{lesson_id}/content", "get", 200, await call("GET", `/products/${productId}/lessons/${lesson.body.data.id}/content`)],
        ["/users", "get", 200, await call("GET", "/users")],
        ["/webhooks", "get", 200, await call("GET", "/webhooks")],
        ["/events", "get", 200, await call("GET", "/events?limit=20")],
        ["/event-types", "get", 200, await call("GET", "/event-types")],
        ["/audit-entries", "get", 200, await call("GET", "/audit-entries?limit=20")],
        ["/requests", "get", 200, await call("GET", "/requests?limit=20")],
        ["/capabilities", "get", 200, await call("GET", "/capabilities")],
        ["/account/usage", "get", 200, await call("GET", "/account/usage")],
        ["/settings/appearance", "get", 200, await call("GET", "/settings/appearance")],
        ["/products/{product_id}/publications", "post", 202, await call("POST", `/products/${productId}/publications`)],
        ["/products", "post", 422, await call("POST", "/products", { format: "course" })],
        ["/products", "get", 422, await call("GET", "/products?sort=nope")]
      ]
      const failures = answers
        .map(([path, method, status, res]) => ({ path, method, status, got: res.status, ...conformance(doc, path, method, status, res.body) }))
        .filter((result) => result.got !== result.status || !result.valid)
      expect(failures).toEqual([])
    })
  },
  { settings: { deprecations: new Map([["policy_templates.list", { deprecatedAt, sunsetAt }]]) } }
)

eachStore("openapi.json: error headers", (h) => {
  it("documents every header the server sends with an error (Content-Language among them)", async () => {
    const doc = (await h().request("GET", "/api/v3/openapi.json", { secret: h().live })).body
    const missing = await h().request("GET", "/api/v3/credentials/crd_000000000", { secret: h().live, headers: { "accept-language": "fr-FR" } })
    expect(missing.status).toBe(404)
    expect(missing.headers.get("content-language")).toBe("fr-FR")
    expect(undocumentedHeaders(doc, "/credentials/{credential_id}", "get", 404, missing.headers)).toEqual([])
    const invalid = await h().request("POST", "/api/v3/products", { secret: h().live, json: {} })
    expect(invalid.status).toBe(422)
    expect(undocumentedHeaders(doc, "/products", "post", 422, invalid.headers)).toEqual([])
  })
})
