/**
 * Sales deliveries (`/sales/deliveries`, release 3.2.0): the shape, validation (itemized: the
 * products and tags must exist, each once, 1..50 products), not_found, the trash, PATCH,
 * idempotency, permissions, sales switched off (409 `feature_disabled`), the sandbox reset,
 * and the enrollments' `delivery_id` (shown and filterable). Each test starts from an empty
 * sandbox. Decisions: docs/sales.md.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith, newProduct } from "../support/api.js"
import { expectError } from "../support/expect.js"
import { grantDelivery } from "@syllabus/core"
import { runAsAccount } from "../support/api.js"

/** The sandbox, emptied: its client. */
const fresh = async (h: Harness) => {
  expect((await api(h, h.test).post("/sandbox/resets")).status).toBeLessThan(300)
  return api(h, h.test)
}

type Client = ReturnType<typeof api>

const product = async (h: Harness) => (await newProduct(h, h.test)).id as string
const tag = async (client: Client, name: string) => (await created(client.post("/tags", { name }))).id as string

const setSales = async (client: Client, enabled: boolean) => {
  const res = await client.patch("/settings/sales", { enabled })
  expect(res.status, res.text).toBe(200)
}

eachStore("sales deliveries", (h) => {
  it("create: every field, dlv_ ID, Location and ETag; duration null by default; event delivery.created", async () => {
    const client = await fresh(h())
    const [p1, p2] = [await product(h()), await product(h())]
    const t1 = await tag(client, "Buyers")
    const res = await client.post("/sales/deliveries", { name: "Course bundle", products: [{ product_id: p1, duration_days: 365 }, { product_id: p2 }], tag_ids: [t1] })
    expect(res.status, res.text).toBe(201)
    const data = res.body.data
    expect(Object.keys(data)).toEqual(["object", "id", "name", "products", "tag_ids", "created_at", "updated_at", "deleted", "revision"])
    expect(data).toMatchObject({
      object: "delivery",
      name: "Course bundle",
      products: [{ product_id: p1, duration_days: 365 }, { product_id: p2, duration_days: null }],
      tag_ids: [t1],
      deleted: false,
      revision: "1"
    })
    expect(data.id).toMatch(/^dlv_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/sales/deliveries/${data.id}`)
    const read = await client.get(`/sales/deliveries/${data.id}`)
    expect(read.body.data).toEqual(data)
    expect(read.headers.get("etag")).toBe(`W/"delivery:${data.id}:1"`)
    const bare = await created(client.post("/sales/deliveries", { name: "Single", products: [{ product_id: p1, duration_days: null }] }))
    expect(bare.tag_ids).toEqual([])
    expect((await client.get(`/events?resource_id=${data.id}&type=delivery.created`)).body.data).toHaveLength(1)
    const types = ((await client.get("/event-types")).body.data as Array<{ type: string }>).map((t) => t.type)
    expect(types).toEqual(expect.arrayContaining(["delivery.created", "delivery.updated", "delivery.trashed", "delivery.restored"]))
    const list = await client.get("/sales/deliveries")
    expect(list.body.data.map((d: any) => d.name)).toEqual(["Single", "Course bundle"])
    expect((await client.get("/sales/deliveries?sort=name")).body.data.map((d: any) => d.name)).toEqual(["Course bundle", "Single"])
    expect((await client.get("/sales/deliveries?q=BUNDLE")).body.data.map((d: any) => d.id)).toEqual([data.id])
  })

  it("validation: each problem itemized, nothing saved — required fields, 1..50 products, duration 1..36,500, IDs well formed", async () => {
    const client = await fresh(h())
    const p = await product(h())
    const missing = expectError(await client.post("/sales/deliveries", {}), 422, "validation_failed")
    expect(missing.details.map((d) => [d.field, d.code]).sort()).toEqual([["name", "required"], ["products", "required"]])
    expectError(await client.post("/sales/deliveries", { name: "x", products: [] }), 422, "validation_failed", { field: "products", code: "too_short" })
    const many = Array.from({ length: 51 }, () => ({ product_id: p }))
    expectError(await client.post("/sales/deliveries", { name: "x", products: many }), 422, "too_many_items", { field: "products", code: "too_many_items" })
    expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: p, duration_days: 0 }] }), 422, "validation_failed", { field: "products[0].duration_days" })
    expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: p, duration_days: 36_501 }] }), 422, "validation_failed", { field: "products[0].duration_days" })
    expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: p, duration_days: 1.5 }] }), 422, "validation_failed", { field: "products[0].duration_days" })
    expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: "tag_000000001" }] }), 422, "validation_failed", { field: "products[0].product_id", code: "invalid" })
    expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: p }], tag_ids: ["prd_000000001"] }), 422, "validation_failed", { field: "tag_ids[0]", code: "invalid" })
    expectError(await client.post("/sales/deliveries", { name: "", products: [{ product_id: p }] }), 422, "validation_failed", { field: "name" })
    expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: p, price: 1 }] }), 422, "unknown_field", { field: "products[0].price" })
    expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: p }], status: "active" }), 422, "unknown_field", { field: "status" })
    const tooManyTags = Array.from({ length: 51 }, (_, i) => `tag_${String(i + 1).padStart(9, "0")}`)
    expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: p }], tag_ids: tooManyTags }), 422, "too_many_items", { field: "tag_ids", code: "too_many_items" })
    expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: p }] }, { idempotencyKey: null }), 422, "idempotency_key_required")
    expect((await client.get("/sales/deliveries")).body.data).toEqual([])
  })

  it("references: products and tags of the account, non-trashed, each once — 422 on each field (reason not_found / duplicate), nothing saved", async () => {
    const client = await fresh(h())
    const p = await product(h())
    const trashedProduct = await product(h())
    expect((await client.del(`/products/${trashedProduct}`)).status).toBe(200)
    const t = await tag(client, "Buyers")
    // Another account's (here: production's) product is not the sandbox's.
    const elsewhere = (await newProduct(h())).id
    const res = await client.post("/sales/deliveries", {
      name: "x",
      products: [{ product_id: p }, { product_id: "prd_000000001" }, { product_id: p }, { product_id: trashedProduct }, { product_id: elsewhere }],
      tag_ids: [t, "tag_000000001", t]
    })
    const error = expectError(res, 422, "validation_failed")
    expect(error.details.map((d) => [d.field, d.reason])).toEqual([
      ["products[1].product_id", "not_found"],
      ["products[2].product_id", "duplicate"],
      ["products[3].product_id", "not_found"],
      ["products[4].product_id", "not_found"],
      ["tag_ids[1]", "not_found"],
      ["tag_ids[2]", "duplicate"]
    ])
    expect((await client.get("/sales/deliveries")).body.data).toEqual([])
  })

  it("PATCH: name, products and tags replaced whole and checked only when sent; If-Match; event delivery.updated", async () => {
    const client = await fresh(h())
    const [p1, p2] = [await product(h()), await product(h())]
    const t = await tag(client, "Buyers")
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: p1 }] }))
    const res = await client.patch(`/sales/deliveries/${d.id}`, { name: "Bundle 2", products: [{ product_id: p2, duration_days: 30 }], tag_ids: [t] })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toMatchObject({ name: "Bundle 2", products: [{ product_id: p2, duration_days: 30 }], tag_ids: [t], revision: "2" })
    expect((await client.get(`/events?resource_id=${d.id}&type=delivery.updated`)).body.data).toHaveLength(1)
    expectError(await client.patch(`/sales/deliveries/${d.id}`, { name: "x" }, { "if-match": `W/"delivery:${d.id}:1"` }), 412, "revision_mismatch")
    expectError(await client.patch(`/sales/deliveries/${d.id}`, { products: [] }), 422, "validation_failed", { field: "products", code: "too_short" })
    expectError(await client.patch(`/sales/deliveries/${d.id}`, { tag_ids: ["tag_000000001"] }), 422, "validation_failed", { field: "tag_ids[0]", reason: "not_found" })
    // A product trashed since does not block a change that does not send `products`.
    expect((await client.del(`/products/${p2}`)).status).toBe(200)
    const renamed = await client.patch(`/sales/deliveries/${d.id}`, { name: "Bundle 3" })
    expect(renamed.status, renamed.text).toBe(200)
    expectError(await client.patch(`/sales/deliveries/${d.id}`, { products: [{ product_id: p2 }] }), 422, "validation_failed", { field: "products[0].product_id", reason: "not_found" })
    expect((await client.get(`/sales/deliveries/${d.id}`)).body.data).toMatchObject({ name: "Bundle 3", revision: "3" })
  })

  it("trash: DELETE answers deleted: true, the delivery is not found, deleted=true lists it, PATCH deleted=false restores; events and audit entries", async () => {
    const client = await fresh(h())
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: await product(h()) }] }))
    const trashed = await client.del(`/sales/deliveries/${d.id}`)
    expect(trashed.status, trashed.text).toBe(200)
    expect(trashed.body.data).toMatchObject({ id: d.id, deleted: true })
    expectError(await client.get(`/sales/deliveries/${d.id}`), 404, "not_found")
    expectError(await client.del(`/sales/deliveries/${d.id}`), 404, "not_found")
    expect((await client.get("/sales/deliveries")).body.data).toEqual([])
    expect((await client.get("/sales/deliveries?deleted=true")).body.data.map((x: any) => x.id)).toEqual([d.id])
    expectError(await client.patch(`/sales/deliveries/${d.id}`, { deleted: true }), 422, "validation_failed", { field: "deleted" })
    const restored = await client.patch(`/sales/deliveries/${d.id}`, { deleted: false })
    expect(restored.status, restored.text).toBe(200)
    expect(restored.body.data.deleted).toBe(false)
    expect((await client.get(`/events?resource_id=${d.id}&type=delivery.trashed`)).body.data).toHaveLength(1)
    expect((await client.get(`/events?resource_id=${d.id}&type=delivery.restored`)).body.data).toHaveLength(1)
    const audit = (await client.get(`/audit-entries?resource_id=${d.id}`)).body.data.map((e: { action: string }) => e.action)
    expect(audit.sort()).toEqual(["delivery.created", "delivery.restored", "delivery.trashed"])
  })

  it("not_found: an unknown, malformed or another environment's delivery is 404", async () => {
    const client = await fresh(h())
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: await product(h()) }] }))
    expectError(await client.get("/sales/deliveries/dlv_000000001"), 404, "not_found")
    expectError(await client.get("/sales/deliveries/not-an-id"), 404, "not_found")
    expectError(await client.patch("/sales/deliveries/dlv_000000001", { name: "x" }), 404, "not_found")
    expectError(await client.post("/sales/deliveries/dlv_000000001/tags/applications"), 404, "not_found")
    expectError(await api(h()).get(`/sales/deliveries/${d.id}`), 404, "not_found")
  })

  it("idempotency: a repeated create answers the stored result; the same key with another body is 422 idempotency_key_reused", async () => {
    const client = await fresh(h())
    const body = { name: "Bundle", products: [{ product_id: await product(h()) }] }
    const key = `dlv-${Date.now()}`
    const first = await client.post("/sales/deliveries", body, { idempotencyKey: key })
    expect(first.status).toBe(201)
    const again = await client.post("/sales/deliveries", body, { idempotencyKey: key })
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    expectError(await client.post("/sales/deliveries", { ...body, name: "Other" }, { idempotencyKey: key }), 422, "idempotency_key_reused")
    expect((await client.get("/sales/deliveries")).body.data).toHaveLength(1)
  })

  it("permissions: deliveries.read reads; writes and tag applications need deliveries.create/update/delete; without deliveries.* 403", async () => {
    const client = await fresh(h())
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: await product(h()) }] }))
    const none = api(h(), await credentialWith(h(), ["products.read"]))
    expectError(await none.get("/sales/deliveries"), 403, "permission_denied")
    expectError(await none.post("/sales/deliveries", { name: "x", products: [] }), 403, "permission_denied")
    const reader = api(h(), await credentialWith(h(), ["deliveries.read"]))
    expect((await reader.get("/sales/deliveries")).status).toBe(200)
    expectError(await reader.post("/sales/deliveries", { name: "x", products: [] }), 403, "permission_denied")
    expectError(await reader.patch(`/sales/deliveries/dlv_000000001`, { name: "x" }), 403, "permission_denied")
    expectError(await reader.del(`/sales/deliveries/dlv_000000001`), 403, "permission_denied")
    expectError(await reader.post(`/sales/deliveries/dlv_000000001/tags/applications`), 403, "permission_denied")
    const templates = (await client.get("/policy-templates")).body.data
    const sales = templates.find((t: any) => t.id === "sales_manager")
    expect(sales.capabilities).toEqual(expect.arrayContaining(["deliveries.read", "deliveries.create", "deliveries.update", "deliveries.delete"]))
    expect(d.id).toMatch(/^dlv_/)
  })

  it("sales switched off: create, change and tag applications answer 409 feature_disabled (reason sales_disabled); reads, trash and restore stay", async () => {
    const client = await fresh(h())
    const p = await product(h())
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: p }] }))
    const other = await created(client.post("/sales/deliveries", { name: "Other", products: [{ product_id: p }] }))
    await setSales(client, false)
    try {
      expectError(await client.post("/sales/deliveries", { name: "x", products: [{ product_id: p }] }), 409, "feature_disabled", { reason: "sales_disabled" })
      expectError(await client.patch(`/sales/deliveries/${d.id}`, { name: "x" }), 409, "feature_disabled", { reason: "sales_disabled" })
      expectError(await client.post(`/sales/deliveries/${d.id}/tags/applications`), 409, "feature_disabled", { reason: "sales_disabled" })
      expect((await client.get(`/sales/deliveries/${d.id}`)).body.data.name).toBe("Bundle")
      expect((await client.del(`/sales/deliveries/${other.id}`)).status).toBe(200)
      expect((await client.patch(`/sales/deliveries/${other.id}`, { deleted: false })).status).toBe(200)
      expect((await client.get("/operations")).body.data).toEqual([])
    } finally {
      await setSales(client, true)
    }
    expect((await client.patch(`/sales/deliveries/${d.id}`, { name: "Bundle 2" })).status).toBe(200)
  })

  it("sandbox reset empties the deliveries", async () => {
    const client = await fresh(h())
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: await product(h()) }] }))
    expect((await client.post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await client.get(`/sales/deliveries/${d.id}`), 404, "not_found")
    expect((await client.get("/sales/deliveries?deleted=true")).body.data).toEqual([])
  })

  it("enrollments show delivery_id (null when made another way) and filter by it", async () => {
    const client = await fresh(h())
    const p = await product(h())
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: p }] }))
    const buyer = await created(client.post("/users", { name: "Buyer", email: "buyer@example.com" }))
    const other = await created(client.post("/users", { name: "Other", email: "other@example.com" }))
    const manual = await created(client.post("/enrollments", { user_id: other.id, product_id: p }))
    expect(manual.delivery_id).toBeNull()
    expect(Object.keys(manual)).toContain("delivery_id")
    expectError(await client.post("/enrollments", { user_id: buyer.id, product_id: p, delivery_id: d.id }), 422, "unknown_field", { field: "delivery_id" })
    await runAsAccount(h(), grantDelivery({ delivery_id: d.id, user_id: buyer.id, sales_event_id: "sev_000000001", at: Date.now() }), "sandbox")
    const through = await client.get(`/enrollments?delivery_id=${d.id}`)
    expect(through.status, through.text).toBe(200)
    expect(through.body.data.map((e: any) => [e.user_id, e.product_id, e.source, e.delivery_id])).toEqual([[buyer.id, p, "delivery", d.id]])
    expectError(await client.get("/enrollments?delivery_id=nope"), 422, "validation_failed", { parameter: "delivery_id" })
  })
})
