/**
 * Legal terms (release 3.2.0; open-points routes `/legal-terms`, `/legal-terms/{id}`): the
 * platform's term and each product's, one per scope; versions (a change of the text publishes
 * a new, immutable version, readable at `/legal-terms/{id}/versions`); the trash; §8.2 limits;
 * events, audit, idempotency, permissions and templates; the sandbox reset. Acceptances are in
 * term-acceptances.test.ts. Decisions: docs/legal.md.
 */
import { createHash } from "node:crypto"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith, credentialWithPolicies, newProduct } from "../support/api.js"
import { expectError } from "../support/expect.js"

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

const newTerm = (h: Harness, fields: Record<string, unknown> = {}, secret: string = h.live) =>
  created(api(h, secret).post("/legal-terms", { kind: "platform", title: "Terms of use", text: "<p>Be kind.</p>", ...fields }))

/** The account has one platform term at most: trash the one a previous test left, if any. */
const freePlatformScope = async (h: Harness, secret: string = h.live) => {
  for (const term of (await api(h, secret).get("/legal-terms?kind=platform")).body.data) await api(h, secret).del(`/legal-terms/${term.id}`)
}

eachStore("legal terms", (h) => {
  it("a platform term is created as version 1 with every field; its version is kept at /versions", async () => {
    await freePlatformScope(h())
    const res = await api(h()).post("/legal-terms", { kind: "platform", title: "Terms of use", text: "<p>Be kind.</p>" })
    expect(res.status, res.text).toBe(201)
    const term = res.body.data
    expect(term.id).toMatch(/^lgt_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/legal-terms/${term.id}`)
    expect(res.headers.get("etag")).toBe(`W/"legal_term:${term.id}:1"`)
    expect(Object.keys(term)).toEqual([
      "object", "id", "kind", "product_id", "title", "text", "current_version", "version_published_at", "text_sha256", "created_at", "updated_at", "deleted", "revision"
    ])
    expect(term).toMatchObject({
      object: "legal_term",
      kind: "platform",
      product_id: null,
      title: "Terms of use",
      text: "<p>Be kind.</p>",
      current_version: 1,
      text_sha256: sha256("<p>Be kind.</p>"),
      deleted: false,
      revision: "1"
    })
    expect(term.version_published_at).toBe(term.created_at)
    expect((await api(h()).get(`/legal-terms/${term.id}`)).body.data).toEqual(term)

    const versions = await api(h()).get(`/legal-terms/${term.id}/versions`)
    expect(versions.status).toBe(200)
    expect(versions.body.data).toHaveLength(1)
    const [v1] = versions.body.data
    expect(v1.id).toMatch(/^ltv_[0-9A-Za-z]{9}$/)
    expect(v1).toMatchObject({
      object: "legal_term_version",
      legal_term_id: term.id,
      version: 1,
      title: "Terms of use",
      text: "<p>Be kind.</p>",
      text_sha256: term.text_sha256,
      published_at: term.version_published_at
    })
    expect((await api(h()).get(`/legal-terms/${term.id}/versions/${v1.id}`)).body.data).toEqual(v1)
  })

  it("a product term names a product of the account; kind and product_id must agree (422 itemized)", async () => {
    const product = await newProduct(h())
    const term = await newTerm(h(), { kind: "product", product_id: product.id, title: "Course terms" })
    expect(term).toMatchObject({ kind: "product", product_id: product.id, current_version: 1 })

    expectError(await api(h()).post("/legal-terms", { kind: "product", title: "t", text: "x" }), 422, "validation_failed", { field: "product_id", code: "required" })
    expectError(await api(h()).post("/legal-terms", { kind: "product", product_id: "prd_000000001", title: "t", text: "x" }), 422, "validation_failed", {
      field: "product_id",
      reason: "not_found"
    })
    expectError(await api(h()).post("/legal-terms", { kind: "product", product_id: "nope", title: "t", text: "x" }), 422, "validation_failed", { field: "product_id", code: "invalid" })
    expectError(await api(h()).post("/legal-terms", { kind: "platform", product_id: product.id, title: "t", text: "x" }), 422, "validation_failed", {
      field: "product_id",
      reason: "platform_term"
    })
    expectError(await api(h()).post("/legal-terms", { kind: "privacy", title: "t", text: "x" }), 422, "validation_failed", { field: "kind", code: "invalid_value" })
    const missing = await api(h()).post("/legal-terms", {})
    for (const field of ["kind", "title", "text"]) expectError(missing, 422, "validation_failed", { field, code: "required" })
    expectError(await api(h()).post("/legal-terms", { kind: "platform", title: "t", text: "x", version: 2 }), 422, "unknown_field", { field: "version" })
    // A trashed product takes no new term.
    const gone = await newProduct(h())
    expect((await api(h()).del(`/products/${gone.id}`)).status).toBe(200)
    expectError(await api(h()).post("/legal-terms", { kind: "product", product_id: gone.id, title: "t", text: "x" }), 422, "validation_failed", {
      field: "product_id",
      reason: "not_found"
    })
  })

  it("one non-trashed term per scope: 409 already_exists on kind (platform) or product_id; the trash frees the scope; a restore needs it free", async () => {
    await freePlatformScope(h())
    const platform = await newTerm(h())
    expectError(await api(h()).post("/legal-terms", { kind: "platform", title: "Another", text: "x" }), 409, "already_exists", { field: "kind" })
    const product = await newProduct(h())
    await newTerm(h(), { kind: "product", product_id: product.id })
    expectError(await api(h()).post("/legal-terms", { kind: "product", product_id: product.id, title: "t", text: "x" }), 409, "already_exists", { field: "product_id" })
    // Another product has a scope of its own.
    const other = await newProduct(h())
    expect((await api(h()).post("/legal-terms", { kind: "product", product_id: other.id, title: "t", text: "x" })).status).toBe(201)

    const trashed = await api(h()).del(`/legal-terms/${platform.id}`)
    expect(trashed.status).toBe(200)
    expect(trashed.body.data.deleted).toBe(true)
    const successor = await newTerm(h(), { title: "New terms" })
    expectError(await api(h()).patch(`/legal-terms/${platform.id}`, { deleted: false }), 409, "already_exists", { field: "kind" })
    expect((await api(h()).del(`/legal-terms/${successor.id}`)).status).toBe(200)
    const restored = await api(h()).patch(`/legal-terms/${platform.id}`, { deleted: false })
    expect(restored.status).toBe(200)
    expect(restored.body.data.deleted).toBe(false)
  })

  it("a change of text publishes a new version; title alone or the same text publishes nothing; earlier versions never change", async () => {
    await freePlatformScope(h())
    const term = await newTerm(h(), { text: "<p>v1</p>" })
    h().advance(1000)
    const changed = await api(h()).patch(`/legal-terms/${term.id}`, { text: "<p>v2</p>" })
    expect(changed.status, changed.text).toBe(200)
    const v2 = changed.body.data
    expect(v2).toMatchObject({ text: "<p>v2</p>", current_version: 2, text_sha256: sha256("<p>v2</p>"), revision: "2" })
    expect(Date.parse(v2.version_published_at)).toBeGreaterThan(Date.parse(term.version_published_at))

    const titled = (await api(h()).patch(`/legal-terms/${term.id}`, { title: "Terms of service" })).body.data
    expect(titled).toMatchObject({ title: "Terms of service", current_version: 2, version_published_at: v2.version_published_at })
    const same = (await api(h()).patch(`/legal-terms/${term.id}`, { text: "<p>v2</p>" })).body.data
    expect(same.current_version).toBe(2)
    const v3 = (await api(h()).patch(`/legal-terms/${term.id}`, { text: "<p>v3</p>", title: "Terms" })).body.data
    expect(v3.current_version).toBe(3)

    const versions = (await api(h()).get(`/legal-terms/${term.id}/versions`)).body.data
    expect(versions.map((v: any) => [v.version, v.text, v.title])).toEqual([
      [3, "<p>v3</p>", "Terms"],
      [2, "<p>v2</p>", "Terms of use"],
      [1, "<p>v1</p>", "Terms of use"]
    ])
    expect(versions.map((v: any) => v.text_sha256)).toEqual([sha256("<p>v3</p>"), sha256("<p>v2</p>"), sha256("<p>v1</p>")])
    const oldest = (await api(h()).get(`/legal-terms/${term.id}/versions?sort=version&limit=1`)).body
    expect(oldest.data[0].version).toBe(1)
    expect(oldest.page.next_cursor).not.toBeNull()
    // Versions are read-only: no route writes one.
    const versionPath = `/legal-terms/${term.id}/versions/${versions[0].id}`
    expectError(await api(h()).patch(versionPath, { text: "x" }), 405, "method_not_allowed")
    expectError(await api(h()).del(versionPath), 405, "method_not_allowed")
    expectError(await api(h()).post(`/legal-terms/${term.id}/versions`, { text: "x" }), 405, "method_not_allowed")
  })

  it("kind and product_id never change (422 unknown_field); PATCH honours If-Match (412, nothing saved)", async () => {
    await freePlatformScope(h())
    const term = await newTerm(h())
    expectError(await api(h()).patch(`/legal-terms/${term.id}`, { kind: "product" }), 422, "unknown_field", { field: "kind" })
    expectError(await api(h()).patch(`/legal-terms/${term.id}`, { product_id: null }), 422, "unknown_field", { field: "product_id" })
    expectError(await api(h()).patch(`/legal-terms/${term.id}`, { current_version: 5 }), 422, "unknown_field", { field: "current_version" })
    const stale = `W/"legal_term:${term.id}:1"`
    expect((await api(h()).patch(`/legal-terms/${term.id}`, { title: "A" }, { "if-match": stale })).status).toBe(200)
    expectError(await api(h()).patch(`/legal-terms/${term.id}`, { text: "<p>new</p>" }, { "if-match": stale }), 412, "revision_mismatch")
    const now = (await api(h()).get(`/legal-terms/${term.id}`)).body.data
    expect(now).toMatchObject({ title: "A", current_version: 1 })
    expect((await api(h()).get(`/legal-terms/${term.id}/versions`)).body.data).toHaveLength(1)
  })

  it("§8.2 limits: text is rich text (1 character to 512 KiB); title plain text, 1 to 200 characters", async () => {
    await freePlatformScope(h())
    expectError(await api(h()).post("/legal-terms", { kind: "platform", title: "t", text: "x".repeat(512 * 1024 + 1) }), 422, "validation_failed", {
      field: "text",
      code: "too_long"
    })
    expectError(await api(h()).post("/legal-terms", { kind: "platform", title: "t", text: "" }), 422, "validation_failed", { field: "text", code: "required" })
    expectError(await api(h()).post("/legal-terms", { kind: "platform", title: "t".repeat(201), text: "x" }), 422, "validation_failed", { field: "title", code: "too_long" })
    const big = await newTerm(h(), { text: "x".repeat(512 * 1024) })
    expect(big.text).toHaveLength(512 * 1024)
    expectError(await api(h()).patch(`/legal-terms/${big.id}`, { text: "y".repeat(512 * 1024 + 1) }), 422, "validation_failed", { field: "text", code: "too_long" })
  })

  it("list: filters kind and product_id, sort created_at or title, q on the title, the trash with deleted=true", async () => {
    await freePlatformScope(h())
    const platform = await newTerm(h(), { title: "Alpha platform terms" })
    const product = await newProduct(h())
    const ofProduct = await newTerm(h(), { kind: "product", product_id: product.id, title: "Beta course terms" })
    const byProduct = (await api(h()).get(`/legal-terms?product_id=${product.id}`)).body.data
    expect(byProduct.map((t: any) => t.id)).toEqual([ofProduct.id])
    const platforms = (await api(h()).get("/legal-terms?kind=platform")).body.data
    expect(platforms.map((t: any) => t.id)).toEqual([platform.id])
    expect((await api(h()).get("/legal-terms?q=beta course")).body.data.map((t: any) => t.id)).toEqual([ofProduct.id])
    const all = (await api(h()).get("/legal-terms?limit=200")).body.data.map((t: any) => t.id)
    expect(all.indexOf(platform.id)).toBeLessThan(all.indexOf(ofProduct.id))
    expectError(await api(h()).get("/legal-terms?kind=other"), 422, "validation_failed", { parameter: "kind" })
    expectError(await api(h()).get("/legal-terms?sort=version"), 422, "validation_failed", { parameter: "sort" })
    expectError(await api(h()).get("/legal-terms?user_id=usr_000000001"), 400, "unknown_parameter", { parameter: "user_id" })
    await api(h()).del(`/legal-terms/${platform.id}`)
    expect((await api(h()).get("/legal-terms?kind=platform")).body.data).toEqual([])
    expect((await api(h()).get("/legal-terms?kind=platform&deleted=true")).body.data.map((t: any) => t.id)).toContain(platform.id)
    expectError(await api(h()).get(`/legal-terms/${platform.id}`), 404, "not_found")
    expectError(await api(h()).get(`/legal-terms/${platform.id}/versions`), 404, "not_found")
  })

  it("events legal_term.created/updated/trashed and legal_term_version.created, with their audit entries", async () => {
    await freePlatformScope(h())
    const term = await newTerm(h())
    await api(h()).patch(`/legal-terms/${term.id}`, { text: "<p>Second</p>" })
    await api(h()).del(`/legal-terms/${term.id}`)
    const types = (await api(h()).get(`/events?resource_id=${term.id}&limit=50`)).body.data.map((e: any) => e.type)
    expect(types).toEqual(expect.arrayContaining(["legal_term.created", "legal_term.updated", "legal_term.trashed"]))
    const updated = (await api(h()).get(`/events?resource_id=${term.id}&type=legal_term.updated`)).body.data[0]
    expect(updated.data.object.current_version).toBe(2)
    expect(updated.previous_attributes).toMatchObject({ current_version: 1 })
    const versions = (await api(h()).get(`/events?type=legal_term_version.created&limit=200`)).body.data.filter(
      (e: any) => e.data.object.legal_term_id === term.id
    )
    expect(versions.map((e: any) => e.data.object.version).sort()).toEqual([1, 2])
    const audit = (await api(h()).get(`/audit-entries?resource_id=${term.id}&limit=50`)).body.data.map((e: any) => e.action)
    expect(audit).toEqual(expect.arrayContaining(["legal_term.created", "legal_term.updated", "legal_term.trashed"]))
    const catalog = (await api(h()).get("/event-types")).body.data.map((e: any) => e.type)
    expect(catalog).toEqual(expect.arrayContaining(["legal_term.created", "legal_term.updated", "legal_term.trashed", "legal_term.restored", "legal_term_version.created"]))
    expect(catalog).not.toContain("legal_term_version.updated")
  })

  it("idempotency (§4.1): a create needs a key; the same key and body replays the term, another body is 422 idempotency_key_reused", async () => {
    await freePlatformScope(h())
    expectError(await api(h()).post("/legal-terms", { kind: "platform", title: "t", text: "x" }, { idempotencyKey: null }), 422, "idempotency_key_required")
    const body = { kind: "platform", title: "t", text: "x" }
    const first = await api(h()).post("/legal-terms", body, { idempotencyKey: "legal-create-1" })
    expect(first.status).toBe(201)
    const again = await api(h()).post("/legal-terms", body, { idempotencyKey: "legal-create-1" })
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    expectError(await api(h()).post("/legal-terms", { ...body, title: "u" }, { idempotencyKey: "legal-create-1" }), 422, "idempotency_key_reused")
  })

  it("permissions: legal_terms.read reads terms and versions but writes nothing; a policy limited to a term sees no other; templates", async () => {
    await freePlatformScope(h())
    const term = await newTerm(h())
    const reader = await credentialWith(h(), ["legal_terms.read"])
    expect((await api(h(), reader).get(`/legal-terms/${term.id}`)).status).toBe(200)
    expect((await api(h(), reader).get(`/legal-terms/${term.id}/versions`)).status).toBe(200)
    expectError(await api(h(), reader).post("/legal-terms", { kind: "platform", title: "t", text: "x" }), 403, "permission_denied")
    expectError(await api(h(), reader).patch(`/legal-terms/${term.id}`, { title: "x" }), 403, "permission_denied")
    expectError(await api(h(), reader).del(`/legal-terms/${term.id}`), 403, "permission_denied")
    const none = await credentialWith(h(), ["users.read"])
    expectError(await api(h(), none).get(`/legal-terms/${term.id}/versions`), 403, "permission_denied")

    const product = await newProduct(h())
    const other = await newTerm(h(), { kind: "product", product_id: product.id })
    const limited = await credentialWith(h(), ["legal_terms.read"], [other.id])
    expect((await api(h(), limited).get(`/legal-terms/${other.id}`)).status).toBe(200)
    expectError(await api(h(), limited).get(`/legal-terms/${term.id}`), 404, "not_found")
    expectError(await api(h(), limited).get(`/legal-terms/${term.id}/versions`), 404, "not_found")
    expect((await api(h(), limited).get("/legal-terms")).body.data.map((t: any) => t.id)).toEqual([other.id])

    const templates = (await api(h()).get("/policy-templates")).body.data
    const readOnly = templates.find((t: any) => t.id === "read_only")
    expect(readOnly.capabilities).toEqual(expect.arrayContaining(["legal_terms.read", "term_acceptances.read"]))
    expect(readOnly.capabilities).not.toContain("legal_terms.read_proof")
    const manager = templates.find((t: any) => t.id === "legal_manager")
    expect(manager.capabilities).toEqual(
      expect.arrayContaining(["legal_terms.create", "legal_terms.update", "legal_terms.delete", "legal_terms.read_proof", "term_acceptances.create", "term_acceptances.read"])
    )
    const viaTemplate = await credentialWithPolicies(h(), [{ template: "legal_manager" }])
    expect((await api(h(), viaTemplate).patch(`/legal-terms/${other.id}`, { title: "Managed" })).status).toBe(200)
  })

  it("a sandbox reset empties the sandbox's legal terms and their versions", async () => {
    await freePlatformScope(h(), h().test)
    const term = await newTerm(h(), {}, h().test)
    expect((await api(h(), h().test).get(`/legal-terms/${term.id}`)).status).toBe(200)
    expectError(await api(h()).get(`/legal-terms/${term.id}`), 404, "not_found")
    expect((await api(h(), h().test).post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await api(h(), h().test).get(`/legal-terms/${term.id}`), 404, "not_found")
    expect((await api(h(), h().test).get("/legal-terms?deleted=true")).body.data).toEqual([])
  })
})
