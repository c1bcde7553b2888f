/**
 * Products (§2.3 shape, §3 states, §4.3 `POST /products`, 3.3.0 replicas): positions within a
 * showcase, `external_id` uniqueness, the showcase order, publication through an operation
 * (copies in replicated accounts included) and the rules of `status`.
 */
import { createHash } from "node:crypto"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { expectError } from "../support/expect.js"

type Product = { id: string; name: string; position: number; status: string; revision: string; [key: string]: unknown }

const api = (h: Harness, secret = h.live) => ({
  get: (path: string) => h.request("GET", `/api/v3${path}`, { secret }),
  post: (path: string, json?: unknown, options: { idempotencyKey?: string | null } = {}) =>
    h.request("POST", `/api/v3${path}`, { secret, ...(json !== undefined ? { json } : {}), ...options }),
  put: (path: string, json: unknown) => h.request("PUT", `/api/v3${path}`, { secret, json }),
  patch: (path: string, json: unknown) => h.request("PATCH", `/api/v3${path}`, { secret, json }),
  del: (path: string) => h.request("DELETE", `/api/v3${path}`, { secret })
})

const secretOf = (account: { credentials: ReadonlyArray<{ environment: string; secret: string }> }) =>
  account.credentials.find((c) => c.environment === "production")!.secret

let counter = 0
const unique = (label: string) => `${label}-${Date.now()}-${++counter}`

const newShowcase = async (h: Harness, secret = h.live): Promise<string> => {
  const res = await api(h, secret).post("/showcases", { name: unique("Shelf") })
  expect(res.status).toBe(201)
  return res.body.data.id
}

const newProduct = async (h: Harness, showcaseId: string, extra: Record<string, unknown> = {}, secret = h.live): Promise<Product> => {
  const res = await api(h, secret).post("/products", { format: "course", name: unique("Product"), showcase_id: showcaseId, ...extra })
  expect(res.status).toBe(201)
  return res.body.data
}

/** The showcase's products as `[id, position]`, in position order. */
const shelf = async (h: Harness, showcaseId: string, secret = h.live) => {
  const res = await api(h, secret).get(`/products?showcase_id=${showcaseId}&sort=position&limit=200`)
  expect(res.status).toBe(200)
  return res.body.data.map((p: Product) => [p.id, p.position])
}

const read = async (h: Harness, id: string, secret = h.live): Promise<Product> => (await api(h, secret).get(`/products/${id}`)).body.data

/** Follow an operation until it finishes. */
const settled = async (h: Harness, id: string, secret = h.live) => {
  for (let i = 0; i < 100; i++) {
    const op = await api(h, secret).get(`/operations/${id}`)
    if (op.body.data.status === "succeeded" || op.body.data.status === "failed") return op.body.data
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`operation ${id} did not finish`)
}

const publish = async (h: Harness, id: string, secret = h.live) => {
  const started = await api(h, secret).post(`/products/${id}/publications`)
  expect(started.status).toBe(202)
  return settled(h, started.body.data.id, secret)
}

const auditActions = async (h: Harness, resourceId: string, secret = h.live): Promise<Array<string>> =>
  (await api(h, secret).get(`/audit-entries?resource_id=${resourceId}&limit=200`)).body.data.map((e: { action: string }) => e.action)

const tenantOf = (h: Harness, accountId = h.account.account.id) => ({ accountId, environment: "production" as const })

const uploadPng = async (h: Harness, purpose: string) => {
  const bytes = Buffer.alloc(2048, 1)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const session = await api(h).post("/uploads", { purpose, filename: "p.png", size: bytes.length, content_type: "image/png", sha256 })
  await h.request("PUT", session.body.data.upload_urls[0].url, { secret: h.live, raw: bytes, headers: { "content-type": "application/octet-stream" } })
  return (await api(h).post(`/uploads/${session.body.data.id}/completions`)).body.data.id as string
}

eachStore("products", (h) => {
  // -- §2.3 shape and §4.3 create ---------------------------------------------------------

  it("POST /products answers 201 with Location and every field of §2.3, created as draft (§3)", async () => {
    const showcaseId = await newShowcase(h())
    const res = await api(h()).post("/products", { format: "course", name: "Algebra", showcase_id: showcaseId })
    expect(res.status).toBe(201)
    const product = res.body.data
    expect(product.id).toMatch(/^prd_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/products/${product.id}`)
    expect(res.headers.get("etag")).toBe(`W/"product:${product.id}:1"`)
    expect(Object.keys(product)).toEqual([
      "object", "id", "name", "image", "external_id", "showcase_id", "format", "status", "position", "lessons_count",
      "modules_count", "display", "definitions", "offer", "created_at", "updated_at", "deleted", "revision"
    ])
    expect(product).toMatchObject({
      object: "product",
      name: "Algebra",
      image: null,
      external_id: null,
      showcase_id: showcaseId,
      format: "course",
      status: "draft",
      position: 1,
      lessons_count: 0,
      modules_count: 0,
      display: { hide_module_bar: false, show_progress: true },
      definitions: { alias_product_id: null },
      offer: {
        embed: { dynamic: false, url: null },
        expected_delivery_id: null,
        free: { class_id: null, duration: null, duration_type: null, enabled: false },
        url: null
      },
      deleted: false,
      revision: "1"
    })
    expect((await api(h()).get(`/products/${product.id}`)).body.data).toEqual(product)
  })

  it("format, name and showcase_id are required; format is an enum; status cannot be sent on create (§4.3)", async () => {
    const missing = await api(h()).post("/products", {})
    expectError(missing, 422, "validation_failed", { field: "format", code: "required" })
    expect(missing.body.error.details.map((d: { field: string; code: string }) => [d.field, d.code]).sort()).toEqual([
      ["format", "required"],
      ["name", "required"],
      ["showcase_id", "required"]
    ])
    const showcaseId = await newShowcase(h())
    const badFormat = await api(h()).post("/products", { format: "podcast", name: "X", showcase_id: showcaseId })
    expectError(badFormat, 422, "validation_failed", { field: "format", code: "invalid_value" })
    const withStatus = await api(h()).post("/products", { format: "blog", name: "X", showcase_id: showcaseId, status: "published" })
    expect(withStatus.status).toBe(422)
    expect(withStatus.body.error.code).toBe("unknown_field")
  })

  it("the showcase must exist in the account: malformed is `invalid`, unknown or trashed is 422 on showcase_id", async () => {
    const malformed = await api(h()).post("/products", { format: "course", name: "X", showcase_id: "shw_?" })
    expectError(malformed, 422, "validation_failed", { field: "showcase_id", code: "invalid" })
    const unknown = await api(h()).post("/products", { format: "course", name: "X", showcase_id: "shw_000000001" })
    expectError(unknown, 422, "validation_failed", { field: "showcase_id", reason: "not_found" })
    const sandboxShowcase = await newShowcase(h(), h().test)
    const foreign = await api(h()).post("/products", { format: "course", name: "X", showcase_id: sandboxShowcase })
    expectError(foreign, 422, "validation_failed", { field: "showcase_id", reason: "not_found" })
    const trashed = await newShowcase(h())
    await api(h()).del(`/showcases/${trashed}`)
    const onTrashed = await api(h()).post("/products", { format: "course", name: "X", showcase_id: trashed })
    expectError(onTrashed, 422, "validation_failed", { field: "showcase_id", reason: "not_found" })
  })

  it("external_id is unique among non-trashed products: 409 already_exists on external_id; trashing frees it (§4.3)", async () => {
    const showcaseId = await newShowcase(h())
    const externalId = unique("ext")
    const first = await newProduct(h(), showcaseId, { external_id: externalId })
    const duplicate = await api(h()).post("/products", { format: "course", name: "Dup", showcase_id: showcaseId, external_id: externalId })
    expect(duplicate.status).toBe(409)
    expect(duplicate.body.error).toMatchObject({ code: "already_exists", details: [{ field: "external_id", code: "already_exists" }] })
    const other = await newProduct(h(), showcaseId)
    const patched = await api(h()).patch(`/products/${other.id}`, { external_id: externalId })
    expectError(patched, 409, "already_exists", { field: "external_id" })
    await api(h()).del(`/products/${first.id}`)
    const reused = await api(h()).post("/products", { format: "course", name: "Reuse", showcase_id: showcaseId, external_id: externalId })
    expect(reused.status).toBe(201)
    // Restoring the first would take the identifier again: refused while another holds it.
    const restore = await api(h()).patch(`/products/${first.id}`, { deleted: false })
    expectError(restore, 409, "already_exists", { field: "external_id" })
  })

  // -- Positions -------------------------------------------------------------------------

  it("position is 1-based: by default last; a given one shifts the others; above the count is last (§3)", async () => {
    const showcaseId = await newShowcase(h())
    const a = await newProduct(h(), showcaseId)
    const b = await newProduct(h(), showcaseId)
    expect([a.position, b.position]).toEqual([1, 2])
    const first = await newProduct(h(), showcaseId, { position: 1 })
    expect(first.position).toBe(1)
    const far = await newProduct(h(), showcaseId, { position: 99 })
    expect(far.position).toBe(4)
    expect(await shelf(h(), showcaseId)).toEqual([[first.id, 1], [a.id, 2], [b.id, 3], [far.id, 4]])
    const zero = await api(h()).post("/products", { format: "course", name: "Zero", showcase_id: showcaseId, position: 0 })
    expectError(zero, 422, "validation_failed", { field: "position", code: "out_of_range" })
  })

  it("a product shifted by another gets a new revision and its product.reordered entry", async () => {
    const showcaseId = await newShowcase(h())
    const a = await newProduct(h(), showcaseId)
    await newProduct(h(), showcaseId, { position: 1 })
    const shifted = await api(h()).get(`/products/${a.id}`)
    expect(shifted.body.data).toMatchObject({ position: 2, revision: "2" })
    expect(shifted.headers.get("etag")).toBe(`W/"product:${a.id}:2"`)
    expect(await auditActions(h(), a.id)).toContain("product.reordered")
  })

  it("PATCH position moves within the showcase and keeps positions dense; above the count is last", async () => {
    const showcaseId = await newShowcase(h())
    const [a, b, c, d] = [await newProduct(h(), showcaseId), await newProduct(h(), showcaseId), await newProduct(h(), showcaseId), await newProduct(h(), showcaseId)]
    const moved = await api(h()).patch(`/products/${d!.id}`, { position: 2 })
    expect(moved.status).toBe(200)
    expect(moved.body.data.position).toBe(2)
    expect(await shelf(h(), showcaseId)).toEqual([[a!.id, 1], [d!.id, 2], [b!.id, 3], [c!.id, 4]])
    const down = await api(h()).patch(`/products/${a!.id}`, { position: 50 })
    expect(down.body.data.position).toBe(4)
    expect(await shelf(h(), showcaseId)).toEqual([[d!.id, 1], [b!.id, 2], [c!.id, 3], [a!.id, 4]])
  })

  it("moving to another showcase keeps both dense: last there, or at the position sent; an unknown showcase is 422", async () => {
    const from = await newShowcase(h())
    const to = await newShowcase(h())
    const [a, b, c] = [await newProduct(h(), from), await newProduct(h(), from), await newProduct(h(), from)]
    const x = await newProduct(h(), to)
    const y = await newProduct(h(), to)
    const last = await api(h()).patch(`/products/${a!.id}`, { showcase_id: to })
    expect(last.status).toBe(200)
    expect(last.body.data).toMatchObject({ showcase_id: to, position: 3 })
    expect(await shelf(h(), from)).toEqual([[b!.id, 1], [c!.id, 2]])
    const placed = await api(h()).patch(`/products/${c!.id}`, { showcase_id: to, position: 2 })
    expect(placed.body.data.position).toBe(2)
    expect(await shelf(h(), from)).toEqual([[b!.id, 1]])
    expect(await shelf(h(), to)).toEqual([[x.id, 1], [c!.id, 2], [y.id, 3], [a!.id, 4]])
    const unknown = await api(h()).patch(`/products/${b!.id}`, { showcase_id: "shw_000000001" })
    expectError(unknown, 422, "validation_failed", { field: "showcase_id", reason: "not_found" })
    expect(await shelf(h(), from)).toEqual([[b!.id, 1]])
  })

  it("trashing closes the gap; restoring puts the product last in its showcase (§3)", async () => {
    const showcaseId = await newShowcase(h())
    const [a, b, c] = [await newProduct(h(), showcaseId), await newProduct(h(), showcaseId), await newProduct(h(), showcaseId)]
    const trashed = await api(h()).del(`/products/${a!.id}`)
    expect(trashed.status).toBe(200)
    expect(trashed.body.data.deleted).toBe(true)
    expect(await shelf(h(), showcaseId)).toEqual([[b!.id, 1], [c!.id, 2]])
    const listed = await api(h()).get(`/products?deleted=true&showcase_id=${showcaseId}`)
    expect(listed.body.data.map((p: Product) => p.id)).toEqual([a!.id])
    const restored = await api(h()).patch(`/products/${a!.id}`, { deleted: false })
    expect(restored.status).toBe(200)
    expect(restored.body.data).toMatchObject({ deleted: false, position: 3 })
    expect(await shelf(h(), showcaseId)).toEqual([[b!.id, 1], [c!.id, 2], [a!.id, 3]])
  })

  // -- Reorder ---------------------------------------------------------------------------

  it("PUT /showcases/{id}/products/order reorders and answers the collection in the new order", async () => {
    const showcaseId = await newShowcase(h())
    const [a, b, c] = [await newProduct(h(), showcaseId), await newProduct(h(), showcaseId), await newProduct(h(), showcaseId)]
    const res = await api(h()).put(`/showcases/${showcaseId}/products/order`, { ids: [c!.id, a!.id, b!.id] })
    expect(res.status).toBe(200)
    expect(res.body.data.map((p: Product) => [p.id, p.position])).toEqual([[c!.id, 1], [a!.id, 2], [b!.id, 3]])
    expect(res.body.data[0].object).toBe("product")
    expect(res.body.page).toEqual({ limit: 3, next_cursor: null, prev_cursor: null })
    expect(await shelf(h(), showcaseId)).toEqual([[c!.id, 1], [a!.id, 2], [b!.id, 3]])
    expect(await auditActions(h(), c!.id)).toContain("product.reordered")
  })

  it("the order must hold exactly the non-trashed products of the showcase, else 422 order_set_mismatch and nothing changes", async () => {
    const showcaseId = await newShowcase(h())
    const [a, b, c] = [await newProduct(h(), showcaseId), await newProduct(h(), showcaseId), await newProduct(h(), showcaseId)]
    const elsewhere = await newProduct(h(), await newShowcase(h()))
    await api(h()).del(`/products/${c!.id}`)
    const before = await shelf(h(), showcaseId)
    for (const ids of [[b!.id], [b!.id, a!.id, c!.id], [b!.id, a!.id, elsewhere.id], [b!.id, b!.id, a!.id], [b!.id, a!.id, "prd_000000001"]]) {
      const res = await api(h()).put(`/showcases/${showcaseId}/products/order`, { ids })
      expect(res.status).toBe(422)
      expect(res.body.error.code).toBe("order_set_mismatch")
    }
    expect(await shelf(h(), showcaseId)).toEqual(before)
    const ok = await api(h()).put(`/showcases/${showcaseId}/products/order`, { ids: [b!.id, a!.id] })
    expect(ok.status).toBe(200)
  })

  it("reordering an unknown or trashed showcase is 404; a malformed ID is 422 invalid", async () => {
    expectError(await api(h()).put(`/showcases/shw_000000001/products/order`, { ids: [] }), 404, "not_found")
    const trashed = await newShowcase(h())
    await api(h()).del(`/showcases/${trashed}`)
    expectError(await api(h()).put(`/showcases/${trashed}/products/order`, { ids: [] }), 404, "not_found")
    const showcaseId = await newShowcase(h())
    const malformed = await api(h()).put(`/showcases/${showcaseId}/products/order`, { ids: ["nope"] })
    expectError(malformed, 422, "validation_failed", { field: "ids[0]", code: "invalid" })
  })

  it("a credential limited to some products cannot reorder a showcase holding others (404)", async () => {
    const showcaseId = await newShowcase(h())
    const [a, b] = [await newProduct(h(), showcaseId), await newProduct(h(), showcaseId)]
    const limited = (
      await api(h()).post("/credentials", { name: "one product", policies: [{ capabilities: ["products.update"], resources: [a!.id] }] })
    ).body.data.secret.value
    const res = await api(h(), limited).put(`/showcases/${showcaseId}/products/order`, { ids: [b!.id, a!.id] })
    expectError(res, 404, "not_found")
    expect(await shelf(h(), showcaseId)).toEqual([[a!.id, 1], [b!.id, 2]])
  })

  // -- Publication and status ------------------------------------------------------------

  it("POST /products/{id}/publications answers 202 with Location of an operation; the worker publishes (§3, §4.3)", async () => {
    const product = await newProduct(h(), await newShowcase(h()))
    const res = await api(h()).post(`/products/${product.id}/publications`)
    expect(res.status).toBe(202)
    const operation = res.body.data
    expect(operation).toMatchObject({ object: "operation", status: "queued", progress: { done: 0, failed: 0, total: 1 } })
    expect(res.headers.get("location")).toBe(`/api/v3/operations/${operation.id}`)
    const done = await settled(h(), operation.id)
    expect(done).toMatchObject({ status: "succeeded", progress: { done: 1, failed: 0, total: 1 } })
    expect((await read(h(), product.id)).status).toBe("published")
    expect(await auditActions(h(), product.id)).toContain("product.published")
  })

  it("a publication needs an Idempotency-Key, takes no body, and is 404 for a trashed product", async () => {
    const product = await newProduct(h(), await newShowcase(h()))
    const noKey = await api(h()).post(`/products/${product.id}/publications`, undefined, { idempotencyKey: null })
    expect(noKey.status).toBe(422)
    expect(noKey.body.error.code).toBe("idempotency_key_required")
    const withBody = await api(h()).post(`/products/${product.id}/publications`, { status: "published" })
    expectError(withBody, 422, "unknown_field", { field: "status", code: "unknown_field" })
    await api(h()).del(`/products/${product.id}`)
    expectError(await api(h()).post(`/products/${product.id}/publications`), 404, "not_found")
    expectError(await api(h()).post(`/products/prd_000000001/publications`), 404, "not_found")
  })

  it("publishing needs products.publish (403 permission_denied)", async () => {
    const product = await newProduct(h(), await newShowcase(h()))
    const editor = (
      await api(h()).post("/credentials", { name: "editor", policies: [{ capabilities: ["products.read", "products.update"] }] })
    ).body.data.secret.value
    const res = await api(h(), editor).post(`/products/${product.id}/publications`)
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("permission_denied")
  })

  it("PATCH status: draft unpublishes; published is 422 invalid_transition (reason use_publications)", async () => {
    const product = await newProduct(h(), await newShowcase(h()))
    const direct = await api(h()).patch(`/products/${product.id}`, { status: "published" })
    expect(direct.status).toBe(422)
    expect(direct.body.error).toMatchObject({ code: "invalid_transition", details: [{ field: "status", reason: "use_publications" }] })
    expect((await read(h(), product.id)).status).toBe("draft")
    await publish(h(), product.id)
    const unpublished = await api(h()).patch(`/products/${product.id}`, { status: "draft" })
    expect(unpublished.status).toBe(200)
    expect(unpublished.body.data.status).toBe("draft")
  })

  it("publishing also publishes the copies in replicated accounts, one item per product (3.3.0)", async () => {
    const source = await newProduct(h(), await newShowcase(h()))
    const other = await h().openAccount(unique("replica"))
    const otherSecret = secretOf(other)
    const copy = await newProduct(h(), await newShowcase(h(), otherSecret), {}, otherSecret)
    await h().patchRecord(tenantOf(h(), other.account.id), "product", copy.id, {
      replica_of: { account_id: h().account.account.id, environment: "production", id: source.id }
    })
    await h().patchRecord(tenantOf(h()), "product", source.id, {
      replicas: [{ account_id: other.account.id, environment: "production", id: copy.id }]
    })
    const done = await publish(h(), source.id)
    expect(done).toMatchObject({ status: "succeeded", progress: { done: 2, failed: 0, total: 2 } })
    const items = await api(h()).get(`/operations/${done.id}/items`)
    expect(items.body.data.map((i: { status: string }) => i.status)).toEqual(["succeeded", "succeeded"])
    expect((await read(h(), source.id)).status).toBe("published")
    expect((await read(h(), copy.id, otherSecret)).status).toBe("published")
    expect(await auditActions(h(), copy.id, otherSecret)).toContain("product.published")
  })

  it("a copy that does not name the product as its origin is not touched: its item fails", async () => {
    const source = await newProduct(h(), await newShowcase(h()))
    const other = await h().openAccount(unique("stranger"))
    const otherSecret = secretOf(other)
    const stranger = await newProduct(h(), await newShowcase(h(), otherSecret), {}, otherSecret)
    await h().patchRecord(tenantOf(h()), "product", source.id, {
      replicas: [{ account_id: other.account.id, environment: "production", id: stranger.id }]
    })
    const done = await publish(h(), source.id)
    expect(done).toMatchObject({ status: "succeeded", progress: { done: 1, failed: 1, total: 2 } })
    expect(done.error).toBeNull()
    const items = (await api(h()).get(`/operations/${done.id}/items`)).body.data
    expect(items.filter((i: any) => i.status === "failed").map((i: any) => i.error.code)).toEqual(["not_found"])
    expect((await read(h(), stranger.id, otherSecret)).status).toBe("draft")
  })

  it("a replicated product is read-only except status: 403 replica_readonly; status may be set; it may be published (3.3.0)", async () => {
    const showcaseId = await newShowcase(h())
    const replica = await newProduct(h(), showcaseId)
    await h().patchRecord(tenantOf(h()), "product", replica.id, {
      replica_of: { account_id: "acc_000000001", environment: "production", id: "prd_000000001" }
    })
    for (const body of [{ name: "Renamed" }, { position: 1 }, { display: { show_progress: false } }, { status: "draft", name: "Both" }]) {
      const res = await api(h()).patch(`/products/${replica.id}`, body)
      expect(res.status).toBe(403)
      expect(res.body.error.code).toBe("replica_readonly")
    }
    const trashed = await api(h()).del(`/products/${replica.id}`)
    expect(trashed.status).toBe(403)
    expect(trashed.body.error.code).toBe("replica_readonly")
    const published = await api(h()).patch(`/products/${replica.id}`, { status: "published" })
    expect(published.status).toBe(200)
    expect(published.body.data.status).toBe("published")
    expect(await auditActions(h(), replica.id)).toContain("product.published")
    expect((await api(h()).patch(`/products/${replica.id}`, { status: "draft" })).body.data.status).toBe("draft")
    const done = await publish(h(), replica.id)
    expect(done.status).toBe("succeeded")
    expect((await read(h(), replica.id)).status).toBe("published")
  })

  // -- Other fields ----------------------------------------------------------------------

  it("format cannot change after creation (422 unknown_field)", async () => {
    const product = await newProduct(h(), await newShowcase(h()))
    const res = await api(h()).patch(`/products/${product.id}`, { format: "blog" })
    expectError(res, 422, "unknown_field", { field: "format", code: "unknown_field" })
  })

  it("display, definitions and offer change only in the sub-fields sent; nested unknown fields are 422", async () => {
    const product = await newProduct(h(), await newShowcase(h()))
    const res = await api(h()).patch(`/products/${product.id}`, {
      display: { hide_module_bar: true },
      offer: { url: "https://shop.example/algebra", free: { enabled: true, duration: 30, duration_type: "days" } }
    })
    expect(res.status).toBe(200)
    expect(res.body.data.display).toEqual({ hide_module_bar: true, show_progress: true })
    expect(res.body.data.offer).toEqual({
      embed: { dynamic: false, url: null },
      expected_delivery_id: null,
      free: { class_id: null, duration: 30, duration_type: "days", enabled: true },
      url: "https://shop.example/algebra"
    })
    const again = await api(h()).patch(`/products/${product.id}`, { offer: { free: { enabled: false } } })
    expect(again.body.data.offer.free).toEqual({ class_id: null, duration: 30, duration_type: "days", enabled: false })
    expect(again.body.data.offer.url).toBe("https://shop.example/algebra")
    const cleared = await api(h()).patch(`/products/${product.id}`, { offer: { url: null } })
    expect(cleared.body.data.offer.url).toBeNull()
    const unknown = await api(h()).patch(`/products/${product.id}`, { display: { color: "red" } })
    expectError(unknown, 422, "unknown_field", { field: "display.color", code: "unknown_field" })
    const badUrl = await api(h()).patch(`/products/${product.id}`, { offer: { embed: { url: "javascript:alert(1)" } } })
    expectError(badUrl, 422, "validation_failed", { field: "offer.embed.url" })
  })

  it("definitions.alias_product_id names another product of the account (422 not_found or self_reference)", async () => {
    const showcaseId = await newShowcase(h())
    const product = await newProduct(h(), showcaseId)
    const target = await newProduct(h(), showcaseId)
    const ok = await api(h()).patch(`/products/${product.id}`, { definitions: { alias_product_id: target.id } })
    expect(ok.status).toBe(200)
    expect(ok.body.data.definitions).toEqual({ alias_product_id: target.id })
    const self = await api(h()).patch(`/products/${product.id}`, { definitions: { alias_product_id: product.id } })
    expectError(self, 422, "validation_failed", { field: "definitions.alias_product_id", reason: "self_reference" })
    const missing = await api(h()).patch(`/products/${product.id}`, { definitions: { alias_product_id: "prd_000000001" } })
    expectError(missing, 422, "validation_failed", { field: "definitions.alias_product_id", reason: "not_found" })
  })

  it("image takes a file of purpose image; another purpose is 422 purpose_mismatch; null removes it", async () => {
    const product = await newProduct(h(), await newShowcase(h()))
    const image = await uploadPng(h(), "image")
    const set = await api(h()).patch(`/products/${product.id}`, { image })
    expect(set.status).toBe(200)
    expect(set.body.data.image).toBe(image)
    const editorFile = await uploadPng(h(), "editor")
    const wrong = await api(h()).patch(`/products/${product.id}`, { image: editorFile })
    expectError(wrong, 422, "validation_failed", { field: "image", reason: "purpose_mismatch" })
    expect((await api(h()).patch(`/products/${product.id}`, { image: null })).body.data.image).toBeNull()
  })

  // -- List ------------------------------------------------------------------------------

  it("lists filter by status, format, showcase_id and external_id, search name and external_id with q, and sort", async () => {
    const showcaseId = await newShowcase(h())
    const tag = unique("zq").replaceAll("-", "")
    const b = await newProduct(h(), showcaseId, { name: `${tag} b`, external_id: `${tag}-ext-b` })
    const a = (await api(h()).post("/products", { format: "blog", name: `${tag} a`, showcase_id: showcaseId, position: 1 })).body.data
    const c = await newProduct(h(), showcaseId, { name: `${tag} c` })
    await publish(h(), c.id)
    const ids = async (query: string) => (await api(h()).get(`/products?${query}`)).body.data.map((p: Product) => p.id)
    expect(await ids(`showcase_id=${showcaseId}`)).toEqual([c.id, a.id, b.id])
    expect(await ids(`showcase_id=${showcaseId}&sort=name`)).toEqual([a.id, b.id, c.id])
    expect(await ids(`showcase_id=${showcaseId}&sort=-position`)).toEqual([c.id, b.id, a.id])
    expect(await ids(`showcase_id=${showcaseId}&status=published`)).toEqual([c.id])
    expect(await ids(`showcase_id=${showcaseId}&format=blog`)).toEqual([a.id])
    expect(await ids(`external_id=${tag}-ext-b`)).toEqual([b.id])
    expect(await ids(`q=${tag.toUpperCase()}-EXT`)).toEqual([b.id])
    expect(await ids(`q=${tag}&sort=name&limit=2`)).toEqual([a.id, b.id])
    expectError(await api(h()).get(`/products?status=archived`), 422, "validation_failed", { parameter: "status" })
    expectError(await api(h()).get(`/products?sort=status`), 422, "validation_failed", { parameter: "sort" })
  })
})
