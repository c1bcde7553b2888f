/**
 * Support departments (`/support/departments`, release 3.2.0): the shape, the help centre's
 * order (`position`, `PUT /support/departments/order`, the trash closing the gap, a restored
 * one last), validation, idempotency, permissions and the sandbox reset. Each test starts from
 * an empty sandbox, so positions are exact. Decisions: docs/support.md.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith } from "../support/api.js"
import { expectError } from "../support/expect.js"

/** The sandbox, emptied: its client. */
const fresh = async (h: Harness) => {
  expect((await api(h, h.test).post("/sandbox/resets")).status).toBeLessThan(300)
  return api(h, h.test)
}

const names = (res: { body: any }) => res.body.data.map((d: any) => d.name)

eachStore("support departments", (h) => {
  it("create: every field, dpt_ ID, Location and ETag, last in the order; event department.created", async () => {
    const client = await fresh(h())
    const first = await client.post("/support/departments", { name: "Billing", description: "Payments and refunds", email: "billing@example.com" })
    expect(first.status, first.text).toBe(201)
    const data = first.body.data
    expect(Object.keys(data)).toEqual(["object", "id", "name", "description", "email", "position", "created_at", "updated_at", "deleted", "revision"])
    expect(data).toMatchObject({ object: "department", name: "Billing", description: "Payments and refunds", email: "billing@example.com", position: 1, deleted: false, revision: "1" })
    expect(data.id).toMatch(/^dpt_[0-9A-Za-z]{9}$/)
    expect(first.headers.get("location")).toBe(`/api/v3/support/departments/${data.id}`)
    const read = await client.get(`/support/departments/${data.id}`)
    expect(read.body.data).toEqual(data)
    expect(read.headers.get("etag")).toBe(`W/"department:${data.id}:1"`)
    const second = await created(client.post("/support/departments", { name: "Technical" }))
    expect(second).toMatchObject({ position: 2, description: null, email: null })
    expect((await client.get(`/events?resource_id=${data.id}&type=department.created`)).body.data).toHaveLength(1)
  })

  it("validation: name required, at most 200 characters; description plain text at most 2,000; email an address; no position in a body", async () => {
    const client = await fresh(h())
    expectError(await client.post("/support/departments", {}), 422, "validation_failed", { field: "name", code: "required" })
    expectError(await client.post("/support/departments", { name: "x".repeat(201) }), 422, "validation_failed", { field: "name" })
    expectError(await client.post("/support/departments", { name: "x", description: "d".repeat(2001) }), 422, "validation_failed", { field: "description" })
    expectError(await client.post("/support/departments", { name: "x", email: "nope" }), 422, "validation_failed", { field: "email" })
    expectError(await client.post("/support/departments", { name: "x", position: 1 }), 422, "unknown_field", { field: "position" })
    expectError(await client.post("/support/departments", { name: "x" }, { idempotencyKey: null }), 422, "idempotency_key_required")
    expect((await client.get("/support/departments")).body.data).toEqual([])
  })

  it("PUT /support/departments/order: the exact set, positions 1..n, department.reordered for each one moved; else 422 order_set_mismatch and nothing changes", async () => {
    const client = await fresh(h())
    const a = await created(client.post("/support/departments", { name: "A" }))
    const b = await created(client.post("/support/departments", { name: "B" }))
    const c = await created(client.post("/support/departments", { name: "C" }))
    const res = await client.put("/support/departments/order", { ids: [c.id, a.id, b.id] })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.map((d: any) => [d.name, d.position])).toEqual([["C", 1], ["A", 2], ["B", 3]])
    expect(res.body.page).toEqual({ limit: 3, next_cursor: null, prev_cursor: null })
    expect(names(await client.get("/support/departments"))).toEqual(["C", "A", "B"])
    expect(names(await client.get("/support/departments?sort=-position"))).toEqual(["B", "A", "C"])
    expect(names(await client.get("/support/departments?sort=name"))).toEqual(["A", "B", "C"])
    expect((await client.get(`/events?resource_id=${c.id}&type=department.reordered`)).body.data).toHaveLength(1)
    expectError(await client.put("/support/departments/order", { ids: [a.id, b.id] }), 422, "order_set_mismatch", { field: "ids", reason: "missing" })
    expectError(await client.put("/support/departments/order", { ids: [a.id, a.id, b.id, c.id] }), 422, "order_set_mismatch", { field: "ids[1]", reason: "duplicate" })
    expectError(await client.put("/support/departments/order", { ids: [a.id, b.id, c.id, "dpt_000000001"] }), 422, "order_set_mismatch", { field: "ids[3]", reason: "not_in_set" })
    expectError(await client.put("/support/departments/order", { ids: ["faq_000000001"] }), 422, "validation_failed", { field: "ids[0]", code: "invalid" })
    expect(names(await client.get("/support/departments"))).toEqual(["C", "A", "B"])
  })

  it("the trash closes the gap; a restored department comes last; trashed ones are listed with deleted=true", async () => {
    const client = await fresh(h())
    const a = await created(client.post("/support/departments", { name: "A" }))
    const b = await created(client.post("/support/departments", { name: "B" }))
    const c = await created(client.post("/support/departments", { name: "C" }))
    const trashed = await client.del(`/support/departments/${a.id}`)
    expect(trashed.status).toBe(200)
    expect(trashed.body.data.deleted).toBe(true)
    expect((await client.get("/support/departments")).body.data.map((d: any) => [d.name, d.position])).toEqual([["B", 1], ["C", 2]])
    expect((await client.get(`/events?resource_id=${b.id}&type=department.reordered`)).body.data).toHaveLength(1)
    expect(names(await client.get("/support/departments?deleted=true"))).toEqual(["A"])
    expectError(await client.get(`/support/departments/${a.id}`), 404, "not_found")
    // The order names the non-trashed set only.
    expectError(await client.put("/support/departments/order", { ids: [a.id, b.id, c.id] }), 422, "order_set_mismatch", { field: "ids[0]", reason: "not_in_set" })
    const restored = await client.patch(`/support/departments/${a.id}`, { deleted: false })
    expect(restored.status, restored.text).toBe(200)
    expect(restored.body.data).toMatchObject({ deleted: false, position: 3 })
    expect((await client.get(`/events?resource_id=${a.id}&type=department.restored`)).body.data).toHaveLength(1)
  })

  it("PATCH: name, description and email; null clears; q searches the name; If-Match", async () => {
    const client = await fresh(h())
    const d = await created(client.post("/support/departments", { name: "Sales", email: "sales@example.com" }))
    const res = await client.patch(`/support/departments/${d.id}`, { name: "Sales team", email: null })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ name: "Sales team", email: null, position: 1, revision: "2" })
    expectError(await client.patch(`/support/departments/${d.id}`, { name: "x" }, { "if-match": `W/"department:${d.id}:1"` }), 412, "revision_mismatch")
    expectError(await client.patch(`/support/departments/${d.id}`, { position: 3 }), 422, "unknown_field", { field: "position" })
    expect(names(await client.get("/support/departments?q=TEAM"))).toEqual(["Sales team"])
    expect((await client.get(`/events?resource_id=${d.id}&type=department.updated`)).body.data).toHaveLength(1)
  })

  it("permissions: departments.create and departments.update are required; a sandbox reset empties the departments", async () => {
    const client = await fresh(h())
    const d = await created(client.post("/support/departments", { name: "Sales" }))
    const reader = await credentialWith(h(), ["departments.read"])
    expect((await api(h(), reader).get("/support/departments")).status).toBe(200)
    expectError(await api(h(), reader).post("/support/departments", { name: "x" }), 403, "permission_denied")
    expectError(await api(h(), reader).put("/support/departments/order", { ids: [] }), 403, "permission_denied")
    expectError(await api(h(), reader).del("/support/departments/dpt_000000001"), 403, "permission_denied")
    expect((await client.post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await client.get(`/support/departments/${d.id}`), 404, "not_found")
  })
})
