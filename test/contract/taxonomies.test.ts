/**
 * Taxonomies and terms of a product (§2.3, §4.3, open-points routes) and the terms of a
 * blog's lessons (open-points: `GET|PUT /products/{product_id}/lessons/{lesson_id}/terms`,
 * blog products only, else 409 `format_unsupported`).
 */
import { createHash } from "node:crypto"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const api = (h: Harness, secret = h.live) => ({
  get: (path: string) => h.request("GET", `/api/v3${path}`, { secret }),
  post: (path: string, json: unknown) => h.request("POST", `/api/v3${path}`, { secret, json }),
  patch: (path: string, json: unknown, headers: Record<string, string> = {}) =>
    h.request("PATCH", `/api/v3${path}`, { secret, json, headers }),
  put: (path: string, json: unknown, headers: Record<string, string> = {}) => h.request("PUT", `/api/v3${path}`, { secret, json, headers }),
  del: (path: string) => h.request("DELETE", `/api/v3${path}`, { secret })
})

const product = async (h: Harness, format: "blog" | "course" = "blog") => {
  const showcase = await api(h).post("/showcases", { name: "Shelf" })
  const created = await api(h).post("/products", { format, name: `A ${format}`, showcase_id: showcase.body.data.id })
  expect(created.status).toBe(201)
  return created.body.data.id as string
}

const taxonomy = async (h: Harness, productId: string, name = "Category", plural_name = "Categories") => {
  const created = await api(h).post(`/products/${productId}/taxonomies`, { name, plural_name })
  expect(created.status).toBe(201)
  return created.body.data as { id: string; revision: string }
}

const term = async (h: Harness, productId: string, taxonomyId: string, name: string) => {
  const created = await api(h).post(`/products/${productId}/taxonomies/${taxonomyId}/terms`, { name })
  expect(created.status).toBe(201)
  return created.body.data.id as string
}

const upload = async (h: Harness, purpose: "image" | "pdf" = "image") => {
  const bytes = Buffer.alloc(2048, 1)
  Buffer.from(purpose === "image" ? [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] : [...Buffer.from("%PDF-")]).copy(bytes)
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const content_type = purpose === "image" ? "image/png" : "application/pdf"
  const session = await api(h).post("/uploads", { purpose, filename: "f", size: bytes.length, content_type, sha256 })
  await h.request("PUT", session.body.data.upload_urls[0].url, { secret: h.live, raw: bytes, headers: { "content-type": "application/octet-stream" } })
  const file = await api(h).post(`/uploads/${session.body.data.id}/completions`, {})
  return file.body.data.id as string
}

/** A lesson (in a new module) of the product. */
const lesson = async (h: Harness, productId: string) => {
  const module = await api(h).post(`/products/${productId}/modules`, { name: "Part" })
  const created = await api(h).post(`/products/${productId}/lessons`, { name: "Post", module_id: module.body.data.id })
  expect(created.status).toBe(201)
  return created.body.data.id as string
}

const termIds = (res: { body: { data: ReadonlyArray<{ id: string }> } }) => res.body.data.map((t) => t.id)

const markReplica = (h: Harness, type: string, id: string) =>
  h.patchRecord({ accountId: h.account.account.id, environment: "production" }, type, id, {
    replica_of: { account_id: "acc_000000001", environment: "production", id: "prd_000000001" }
  })

eachStore("taxonomies and terms", (h) => {
  it("a taxonomy has every field of §2.3, terms_count 0, a string revision; Location and ETag", async () => {
    const productId = await product(h())
    const res = await api(h()).post(`/products/${productId}/taxonomies`, { name: "Category", plural_name: "Categories" })
    expect(res.status).toBe(201)
    const created = res.body.data
    expect(Object.keys(created)).toEqual(["object", "id", "product_id", "name", "plural_name", "terms_count", "created_at", "updated_at", "revision"])
    expect(created).toMatchObject({ object: "taxonomy", product_id: productId, name: "Category", plural_name: "Categories", terms_count: 0, revision: "1" })
    expect(created.id).toMatch(/^tax_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/products/${productId}/taxonomies/${created.id}`)
    const read = await api(h()).get(`/products/${productId}/taxonomies/${created.id}`)
    expect(read.status).toBe(200)
    expect(read.headers.get("etag")).toBe(`W/"taxonomy:${created.id}:1"`)
    const listed = await api(h()).get(`/products/${productId}/taxonomies`)
    expect(listed.body.data.map((t: { id: string }) => t.id)).toEqual([created.id])
  })

  it("name and plural_name are required on create; terms_count cannot be written", async () => {
    const productId = await product(h())
    const missing = await api(h()).post(`/products/${productId}/taxonomies`, { name: "Category" })
    expectError(missing, 422, "validation_failed", { field: "plural_name", code: "required" })
    expect(missing.body.error.details).toMatchObject([{ field: "plural_name", code: "required" }])
    const counted = await api(h()).post(`/products/${productId}/taxonomies`, { name: "Tag", plural_name: "Tags", terms_count: 3 })
    expectError(counted, 422, "unknown_field", { field: "terms_count", code: "unknown_field" })
    expect(counted.body.error.details).toMatchObject([{ field: "terms_count", code: "unknown_field" }])
  })

  it("a taxonomy lives under its product: another product's path is 404; so is a missing product", async () => {
    const productId = await product(h())
    const other = await product(h())
    const created = await taxonomy(h(), productId)
    expectError(await api(h()).get(`/products/${other}/taxonomies/${created.id}`), 404, "not_found")
    expectError(await api(h()).patch(`/products/${other}/taxonomies/${created.id}`, { name: "X" }), 404, "not_found")
    expectError(await api(h()).del(`/products/${other}/taxonomies/${created.id}`), 404, "not_found")
    expect((await api(h()).get(`/products/${other}/taxonomies`)).body.data).toEqual([])
    expectError(await api(h()).post(`/products/prd_000000001/taxonomies`, { name: "A", plural_name: "As" }), 404, "not_found")
  })

  it("PATCH takes name and plural_name; omitted fields stay; other fields are 422 (§4.3)", async () => {
    const productId = await product(h())
    const created = await taxonomy(h(), productId, "Tag", "Tags")
    const path = `/products/${productId}/taxonomies/${created.id}`
    const renamed = await api(h()).patch(path, { name: "Label" })
    expect(renamed.status).toBe(200)
    expect(renamed.body.data).toMatchObject({ name: "Label", plural_name: "Tags", revision: "2" })
    const plural = await api(h()).patch(path, { plural_name: "Labels" })
    expect(plural.body.data).toMatchObject({ name: "Label", plural_name: "Labels", revision: "3" })
    const nulled = await api(h()).patch(path, { name: null })
    expectError(nulled, 422, "validation_failed", { field: "name" })
    const moved = await api(h()).patch(path, { product_id: await product(h()) })
    expectError(moved, 422, "unknown_field", { field: "product_id", code: "unknown_field" })
    expect(moved.body.error.details).toMatchObject([{ field: "product_id", code: "unknown_field" }])
    expect((await api(h()).get(path)).body.data).toMatchObject({ name: "Label", plural_name: "Labels", product_id: productId })
  })

  it("PATCH of a taxonomy or a term honours If-Match with its own ETag (§4.1): current applies, stale is 412", async () => {
    const productId = await product(h())
    const tax = await taxonomy(h(), productId)
    const taxPath = `/products/${productId}/taxonomies/${tax.id}`
    const current = await api(h()).patch(taxPath, { name: "Section" }, { "if-match": `W/"taxonomy:${tax.id}:1"` })
    expect(current.status).toBe(200)
    const stale = await api(h()).patch(taxPath, { name: "Old" }, { "if-match": `W/"taxonomy:${tax.id}:1"` })
    expect(stale.status).toBe(412)
    expect(stale.body.error.code).toBe("revision_mismatch")
    const termId = await term(h(), productId, tax.id, "News")
    const termPath = `${taxPath}/terms/${termId}`
    expect((await api(h()).patch(termPath, { name: "Updates" }, { "if-match": `W/"taxonomy_term:${termId}:1"` })).status).toBe(200)
    expectError(await api(h()).patch(termPath, { name: "Old" }, { "if-match": `W/"taxonomy_term:${termId}:1"` }), 412, "revision_mismatch")
    expect((await api(h()).get(termPath)).body.data.name).toBe("Updates")
  })

  it("a taxonomy name is unique within its product (409 already_exists on name), not across products", async () => {
    const productId = await product(h())
    await taxonomy(h(), productId, "Category")
    const second = await taxonomy(h(), productId, "Series", "Series")
    const duplicate = await api(h()).post(`/products/${productId}/taxonomies`, { name: "Category", plural_name: "More" })
    expect(duplicate.status).toBe(409)
    expect(duplicate.body.error).toMatchObject({ code: "already_exists", details: [{ field: "name", code: "already_exists" }] })
    const rename = await api(h()).patch(`/products/${productId}/taxonomies/${second.id}`, { name: "Category" })
    expectError(rename, 409, "already_exists", { field: "name" })
    expect((await api(h()).patch(`/products/${productId}/taxonomies/${second.id}`, { name: "Series", plural_name: "Serieses" })).status).toBe(200)
    expect((await api(h()).post(`/products/${await product(h())}/taxonomies`, { name: "Category", plural_name: "Categories" })).status).toBe(201)
  })

  it("DELETE removes a taxonomy for good (204), then it is 404", async () => {
    const productId = await product(h())
    const created = await taxonomy(h(), productId)
    const removed = await api(h()).del(`/products/${productId}/taxonomies/${created.id}`)
    expect(removed.status).toBe(204)
    expectError(await api(h()).get(`/products/${productId}/taxonomies/${created.id}`), 404, "not_found")
    expect((await api(h()).get(`/products/${productId}/taxonomies`)).body.data).toEqual([])
  })

  it("a term has every field of §2.3, image null, lessons_count 0; its taxonomy counts it (terms_count)", async () => {
    const productId = await product(h())
    const tax = await taxonomy(h(), productId)
    const res = await api(h()).post(`/products/${productId}/taxonomies/${tax.id}/terms`, { name: "News" })
    expect(res.status).toBe(201)
    const created = res.body.data
    expect(Object.keys(created)).toEqual(["object", "id", "taxonomy_id", "name", "image", "lessons_count", "created_at", "updated_at", "revision"])
    expect(created).toMatchObject({ object: "taxonomy_term", taxonomy_id: tax.id, name: "News", image: null, lessons_count: 0, revision: "1" })
    expect(created.id).toMatch(/^ttm_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/products/${productId}/taxonomies/${tax.id}/terms/${created.id}`)
    const read = await api(h()).get(`/products/${productId}/taxonomies/${tax.id}/terms/${created.id}`)
    expect(read.headers.get("etag")).toBe(`W/"taxonomy_term:${created.id}:1"`)
    await term(h(), productId, tax.id, "Reviews")
    const counted = await api(h()).get(`/products/${productId}/taxonomies/${tax.id}`)
    expect(counted.body.data.terms_count).toBe(2)
    expect(counted.headers.get("etag")).not.toBe(`W/"taxonomy:${tax.id}:1"`)
    expect((await api(h()).del(`/products/${productId}/taxonomies/${tax.id}/terms/${created.id}`)).status).toBe(204)
    expect((await api(h()).get(`/products/${productId}/taxonomies/${tax.id}`)).body.data.terms_count).toBe(1)
    expectError(await api(h()).get(`/products/${productId}/taxonomies/${tax.id}/terms/${created.id}`), 404, "not_found")
  })

  it("a term lives under its taxonomy and product: any other path is 404", async () => {
    const productId = await product(h())
    const other = await product(h())
    const tax = await taxonomy(h(), productId)
    const sibling = await taxonomy(h(), productId, "Tag", "Tags")
    const termId = await term(h(), productId, tax.id, "News")
    expectError(await api(h()).get(`/products/${productId}/taxonomies/${sibling.id}/terms/${termId}`), 404, "not_found")
    expectError(await api(h()).get(`/products/${other}/taxonomies/${tax.id}/terms/${termId}`), 404, "not_found")
    expectError(await api(h()).get(`/products/${other}/taxonomies/${tax.id}/terms`), 404, "not_found")
    expectError(await api(h()).post(`/products/${other}/taxonomies/${tax.id}/terms`, { name: "Sneaky" }), 404, "not_found")
    const listed = await api(h()).get(`/products/${productId}/taxonomies/${tax.id}/terms`)
    expect(listed.body.data.map((t: { id: string }) => t.id)).toEqual([termId])
  })

  it("term PATCH takes name and image; omitted fields stay; image null removes it (§4.3)", async () => {
    const productId = await product(h())
    const tax = await taxonomy(h(), productId)
    const termId = await term(h(), productId, tax.id, "News")
    const path = `/products/${productId}/taxonomies/${tax.id}/terms/${termId}`
    const image = await upload(h())
    const withImage = await api(h()).patch(path, { image })
    expect(withImage.status).toBe(200)
    expect(withImage.body.data).toMatchObject({ name: "News", image, revision: "2" })
    const renamed = await api(h()).patch(path, { name: "Updates" })
    expect(renamed.body.data).toMatchObject({ name: "Updates", image })
    const cleared = await api(h()).patch(path, { image: null })
    expect(cleared.body.data).toMatchObject({ name: "Updates", image: null })
    const counted = await api(h()).patch(path, { lessons_count: 5 })
    expectError(counted, 422, "unknown_field", { field: "lessons_count", code: "unknown_field" })
    expect(counted.body.error.details).toMatchObject([{ field: "lessons_count", code: "unknown_field" }])
  })

  it("a term image must be an uploaded image of the account: unknown or other purpose is 422 on image", async () => {
    const productId = await product(h())
    const tax = await taxonomy(h(), productId)
    const termId = await term(h(), productId, tax.id, "News")
    const path = `/products/${productId}/taxonomies/${tax.id}/terms/${termId}`
    const unknown = await api(h()).patch(path, { image: "fil_000000001" })
    expectError(unknown, 422, "validation_failed", { field: "image", reason: "not_found" })
    expect(unknown.body.error.details).toMatchObject([{ field: "image", reason: "not_found" }])
    const pdf = await upload(h(), "pdf")
    const wrongPurpose = await api(h()).post(`/products/${productId}/taxonomies/${tax.id}/terms`, { name: "Docs", image: pdf })
    expectError(wrongPurpose, 422, "validation_failed", { field: "image", reason: "purpose_mismatch" })
    expect(wrongPurpose.body.error.details).toMatchObject([{ field: "image", reason: "purpose_mismatch" }])
    const malformed = await api(h()).patch(path, { image: "nope" })
    expectError(malformed, 422, "validation_failed", { field: "image", code: "invalid" })
    expect(malformed.body.error.details).toMatchObject([{ field: "image", code: "invalid" }])
    expect((await api(h()).get(path)).body.data).toMatchObject({ image: null, revision: "1" })
  })

  it("a term name is unique within its taxonomy, not across taxonomies", async () => {
    const productId = await product(h())
    const tax = await taxonomy(h(), productId)
    const other = await taxonomy(h(), productId, "Tag", "Tags")
    await term(h(), productId, tax.id, "News")
    const duplicate = await api(h()).post(`/products/${productId}/taxonomies/${tax.id}/terms`, { name: "News" })
    expectError(duplicate, 409, "already_exists", { field: "name", code: "already_exists" })
    expect(duplicate.body.error.details).toMatchObject([{ field: "name", code: "already_exists" }])
    await term(h(), productId, other.id, "News")
  })

  it("a replicated product's taxonomies and terms are read-only: 403 replica_readonly on every write (§4.3)", async () => {
    const productId = await product(h())
    const tax = await taxonomy(h(), productId)
    const termId = await term(h(), productId, tax.id, "News")
    await markReplica(h(), "product", productId)
    const taxPath = `/products/${productId}/taxonomies/${tax.id}`
    const termPath = `${taxPath}/terms/${termId}`
    const writes = [
      await api(h()).post(`/products/${productId}/taxonomies`, { name: "Tag", plural_name: "Tags" }),
      await api(h()).patch(taxPath, { name: "Renamed" }),
      await api(h()).post(`${taxPath}/terms`, { name: "Reviews" }),
      await api(h()).patch(termPath, { name: "Renamed" }),
      await api(h()).del(termPath),
      await api(h()).del(taxPath)
    ]
    expect(writes.map((r) => [r.status, r.body.error.code])).toEqual(Array(6).fill([403, "replica_readonly"]))
    expect((await api(h()).get(taxPath)).body.data).toMatchObject({ name: "Category", terms_count: 1 })
    expect((await api(h()).get(termPath)).body.data.name).toBe("News")
  })

  it("deleting a taxonomy removes its terms", async () => {
    const productId = await product(h())
    const tax = await taxonomy(h(), productId)
    const termId = await term(h(), productId, tax.id, "News")
    expect((await api(h()).del(`/products/${productId}/taxonomies/${tax.id}`)).status).toBe(204)
    expectError(await api(h()).get(`/products/${productId}/taxonomies/${tax.id}/terms/${termId}`), 404, "not_found")
    const entries = await api(h()).get(`/audit-entries?resource_id=${termId}`)
    expect(entries.body.data.map((e: { action: string }) => e.action)).toEqual(["taxonomy_term.deleted", "taxonomy_term.created"])
  })

  it("every change leaves its audit entry, counters included", async () => {
    const productId = await product(h())
    const tax = await taxonomy(h(), productId)
    const termId = await term(h(), productId, tax.id, "News")
    await api(h()).patch(`/products/${productId}/taxonomies/${tax.id}`, { name: "Section" })
    const entries = await api(h()).get(`/audit-entries?resource_type=taxonomy&resource_id=${tax.id}`)
    // Newest first: the rename, the count the new term moved, the creation.
    expect(entries.body.data.map((e: { action: string }) => e.action)).toEqual(["taxonomy.updated", "taxonomy.updated", "taxonomy.created"])
    const termEntries = await api(h()).get(`/audit-entries?resource_id=${termId}`)
    expect(termEntries.body.data.map((e: { action: string }) => e.action)).toEqual(["taxonomy_term.created"])
  })

  it("every change emits its event with the resource as recorded; a counter's change shows in previous_attributes", async () => {
    const productId = await product(h(), "blog")
    const tax = await taxonomy(h(), productId)
    const news = await term(h(), productId, tax.id, "News")
    const lessonId = await lesson(h(), productId)
    await api(h()).put(`/products/${productId}/lessons/${lessonId}/terms`, { ids: [news] })
    const events = async (id: string) =>
      (await api(h()).get(`/events?resource_id=${id}`)).body.data.map((e: { type: string; data: { object: Record<string, unknown> }; previous_attributes: Record<string, unknown> | null }) => [
        e.type,
        e.data.object.object,
        e.previous_attributes
      ])
    expect(await events(tax.id)).toEqual([
      ["taxonomy.updated", "taxonomy", expect.objectContaining({ terms_count: 0, revision: "1" })],
      ["taxonomy.created", "taxonomy", null]
    ])
    expect(await events(news)).toEqual([
      ["taxonomy_term.updated", "taxonomy_term", expect.objectContaining({ lessons_count: 0 })],
      ["taxonomy_term.created", "taxonomy_term", null]
    ])
    expect((await events(lessonId))[0]).toEqual(["lesson.updated", "lesson", expect.objectContaining({ revision: "1" })])
    await api(h()).del(`/products/${productId}/taxonomies/${tax.id}`)
    expect((await events(news))[0]).toEqual(["taxonomy_term.deleted", "taxonomy_term", null])
    expect((await events(tax.id))[0]).toEqual(["taxonomy.deleted", "taxonomy", null])
  })

  it("permissions: terms are guarded by taxonomy_terms.* (reading does not allow writing)", async () => {
    const productId = await product(h())
    const tax = await taxonomy(h(), productId)
    const readOnly = (await api(h()).post("/credentials", { name: "ro", policies: [{ capabilities: ["taxonomy_terms.read"] }] })).body.data.secret.value
    expect((await api(h(), readOnly).get(`/products/${productId}/taxonomies/${tax.id}/terms`)).status).toBe(200)
    const denied = await api(h(), readOnly).post(`/products/${productId}/taxonomies/${tax.id}/terms`, { name: "No" })
    expect(denied.status).toBe(403)
    expect(denied.body.error.code).toBe("permission_denied")
  })

  it("lesson terms: PUT replaces the set, GET lists it, all at once with every term field (open-points)", async () => {
    const productId = await product(h(), "blog")
    const tax = await taxonomy(h(), productId)
    const [news, reviews, guides] = [await term(h(), productId, tax.id, "News"), await term(h(), productId, tax.id, "Reviews"), await term(h(), productId, tax.id, "Guides")]
    const lessonId = await lesson(h(), productId)
    const path = `/products/${productId}/lessons/${lessonId}/terms`
    expect((await api(h()).get(path)).body).toMatchObject({ data: [], page: { next_cursor: null } })
    const first = await api(h()).put(path, { ids: [reviews, news] })
    expect(first.status).toBe(200)
    expect(termIds(first)).toEqual([news, reviews])
    expect(first.body.page.next_cursor).toBeNull()
    expect(Object.keys(first.body.data[0])).toEqual(["object", "id", "taxonomy_id", "name", "image", "lessons_count", "created_at", "updated_at", "revision"])
    expect(first.body.data[0]).toMatchObject({ object: "taxonomy_term", name: "News", lessons_count: 1 })
    const replaced = await api(h()).put(path, { ids: [guides, reviews, guides] })
    expect(termIds(replaced)).toEqual([reviews, guides])
    expect(termIds(await api(h()).get(path))).toEqual([reviews, guides])
    const cleared = await api(h()).put(path, { ids: [] })
    expect(cleared.body.data).toEqual([])
    expect((await api(h()).get(path)).body.data).toEqual([])
  })

  it("lesson terms keep lessons_count of each term true", async () => {
    const productId = await product(h(), "blog")
    const tax = await taxonomy(h(), productId)
    const news = await term(h(), productId, tax.id, "News")
    const reviews = await term(h(), productId, tax.id, "Reviews")
    const [a, b] = [await lesson(h(), productId), await lesson(h(), productId)]
    await api(h()).put(`/products/${productId}/lessons/${a}/terms`, { ids: [news, reviews] })
    await api(h()).put(`/products/${productId}/lessons/${b}/terms`, { ids: [news] })
    const count = async (termId: string) =>
      (await api(h()).get(`/products/${productId}/taxonomies/${tax.id}/terms/${termId}`)).body.data.lessons_count
    expect([await count(news), await count(reviews)]).toEqual([2, 1])
    await api(h()).put(`/products/${productId}/lessons/${a}/terms`, { ids: [reviews] })
    expect([await count(news), await count(reviews)]).toEqual([1, 1])
    const entries = await api(h()).get(`/audit-entries?resource_id=${news}`)
    expect(entries.body.data.map((e: { action: string }) => e.action)).toEqual(["taxonomy_term.updated", "taxonomy_term.updated", "taxonomy_term.updated", "taxonomy_term.created"])
  })

  it("lesson terms exist only for blog products: other formats are 409 format_unsupported", async () => {
    const productId = await product(h(), "course")
    const lessonId = await lesson(h(), productId)
    const path = `/products/${productId}/lessons/${lessonId}/terms`
    const read = await api(h()).get(path)
    expect(read.status).toBe(409)
    expect(read.body.error.code).toBe("format_unsupported")
    const write = await api(h()).put(path, { ids: [] })
    expect(write.status).toBe(409)
    expect(write.body.error.code).toBe("format_unsupported")
  })

  it("lesson terms take only terms of the product's taxonomies: others are 422 on ids[i]; malformed is invalid", async () => {
    const productId = await product(h(), "blog")
    const other = await product(h(), "blog")
    const own = await term(h(), productId, (await taxonomy(h(), productId)).id, "News")
    const foreign = await term(h(), other, (await taxonomy(h(), other)).id, "News")
    const lessonId = await lesson(h(), productId)
    const path = `/products/${productId}/lessons/${lessonId}/terms`
    const refused = await api(h()).put(path, { ids: [own, foreign, "ttm_000000001"] })
    expect(refused.status).toBe(422)
    expect(refused.body.error.code).toBe("validation_failed")
    expect(refused.body.error.details.map((d: { field: string }) => d.field)).toEqual(["ids[1]", "ids[2]"])
    const malformed = await api(h()).put(path, { ids: ["tax_000000001"] })
    expectError(malformed, 422, "validation_failed", { field: "ids[0]", code: "invalid" })
    expect(malformed.body.error.details).toMatchObject([{ field: "ids[0]", code: "invalid" }])
    expect((await api(h()).get(path)).body.data).toEqual([])
  })

  it("lesson terms live under the lesson's product: another product or a missing lesson is 404", async () => {
    const productId = await product(h(), "blog")
    const other = await product(h(), "blog")
    const lessonId = await lesson(h(), productId)
    expectError(await api(h()).get(`/products/${other}/lessons/${lessonId}/terms`), 404, "not_found")
    expectError(await api(h()).put(`/products/${other}/lessons/${lessonId}/terms`, { ids: [] }), 404, "not_found")
    expectError(await api(h()).get(`/products/${productId}/lessons/les_000000001/terms`), 404, "not_found")
  })

  it("a PUT of lesson terms is a write of the lesson: If-Match takes the lesson's ETag, and a change moves its revision", async () => {
    const productId = await product(h(), "blog")
    const news = await term(h(), productId, (await taxonomy(h(), productId)).id, "News")
    const lessonId = await lesson(h(), productId)
    const lessonPath = `/products/${productId}/lessons/${lessonId}`
    const etag = (await api(h()).get(lessonPath)).headers.get("etag")!
    const applied = await api(h()).put(`${lessonPath}/terms`, { ids: [news] }, { "if-match": etag })
    expect(applied.status).toBe(200)
    const after = await api(h()).get(lessonPath)
    expect(after.headers.get("etag")).not.toBe(etag)
    const stale = await api(h()).put(`${lessonPath}/terms`, { ids: [] }, { "if-match": etag })
    expect(stale.status).toBe(412)
    expect(stale.body.error.code).toBe("revision_mismatch")
    expect(termIds(await api(h()).get(`${lessonPath}/terms`))).toEqual([news])
  })

  it("lesson terms of a replicated product are read-only: PUT is 403 replica_readonly, GET still reads", async () => {
    const productId = await product(h(), "blog")
    const news = await term(h(), productId, (await taxonomy(h(), productId)).id, "News")
    const lessonId = await lesson(h(), productId)
    await markReplica(h(), "product", productId)
    const path = `/products/${productId}/lessons/${lessonId}/terms`
    const refused = await api(h()).put(path, { ids: [news] })
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe("replica_readonly")
    expect((await api(h()).get(path)).status).toBe(200)
  })

  it("deleting a term removes its lesson links; deleting a taxonomy removes its terms' links", async () => {
    const productId = await product(h(), "blog")
    const tax = await taxonomy(h(), productId)
    const other = await taxonomy(h(), productId, "Tag", "Tags")
    const [news, reviews, tagged] = [await term(h(), productId, tax.id, "News"), await term(h(), productId, tax.id, "Reviews"), await term(h(), productId, other.id, "Hot")]
    const lessonId = await lesson(h(), productId)
    const path = `/products/${productId}/lessons/${lessonId}/terms`
    await api(h()).put(path, { ids: [news, reviews, tagged] })
    expect((await api(h()).del(`/products/${productId}/taxonomies/${tax.id}/terms/${news}`)).status).toBe(204)
    expect(termIds(await api(h()).get(path))).toEqual([reviews, tagged])
    expect((await api(h()).del(`/products/${productId}/taxonomies/${other.id}`)).status).toBe(204)
    expect(termIds(await api(h()).get(path))).toEqual([reviews])
    // A new term of the same name starts with no lessons.
    const again = await term(h(), productId, tax.id, "News")
    expect((await api(h()).get(`/products/${productId}/taxonomies/${tax.id}/terms/${again}`)).body.data.lessons_count).toBe(0)
  })

  it("a trashed lesson leaves its terms: their lessons_count drops (§3: dependent links removed)", async () => {
    const productId = await product(h(), "blog")
    const tax = await taxonomy(h(), productId)
    const news = await term(h(), productId, tax.id, "News")
    const lessonId = await lesson(h(), productId)
    await api(h()).put(`/products/${productId}/lessons/${lessonId}/terms`, { ids: [news] })
    expect((await api(h()).del(`/products/${productId}/lessons/${lessonId}`)).status).toBe(200)
    const read = await api(h()).get(`/products/${productId}/taxonomies/${tax.id}/terms/${news}`)
    expect(read.body.data.lessons_count).toBe(0)
  })

  it("a lesson moved to another product leaves the terms of its old product", async () => {
    const productId = await product(h(), "blog")
    const tax = await taxonomy(h(), productId)
    const news = await term(h(), productId, tax.id, "News")
    const lessonId = await lesson(h(), productId)
    await api(h()).put(`/products/${productId}/lessons/${lessonId}/terms`, { ids: [news] })
    const target = await product(h(), "blog")
    const module = await api(h()).post(`/products/${target}/modules`, { name: "Elsewhere" })
    const moved = await api(h()).patch(`/products/${productId}/lessons/${lessonId}`, { module_id: module.body.data.id })
    expect(moved.status).toBe(200)
    expect((await api(h()).get(`/products/${target}/lessons/${lessonId}/terms`)).body.data).toEqual([])
    expect((await api(h()).get(`/products/${productId}/taxonomies/${tax.id}/terms/${news}`)).body.data.lessons_count).toBe(0)
  })

  it("permissions: lesson terms are read with lessons.read and replaced with lessons.update", async () => {
    const productId = await product(h(), "blog")
    const lessonId = await lesson(h(), productId)
    const path = `/products/${productId}/lessons/${lessonId}/terms`
    const reader = (await api(h()).post("/credentials", { name: "r", policies: [{ capabilities: ["lessons.read"] }] })).body.data.secret.value
    expect((await api(h(), reader).get(path)).status).toBe(200)
    const denied = await api(h(), reader).put(path, { ids: [] })
    expect(denied.status).toBe(403)
    expect(denied.body.error.code).toBe("permission_denied")
  })
})
