/**
 * Release rules of a product (drip content, release 3.2.0, open-points routes
 * `/products/{product_id}/release-rules`, docs/learning.md): targets of the product, one rule
 * per target, the parameter of each kind, CRUD, events and permissions. What a learner may
 * open is tested with progress (progress.test.ts).
 */
import { expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"
import { api, credentialWith } from "../support/api.js"

/** A product with a module and a lesson in it. */
const course = async (h: Harness) => {
  const showcase = await api(h).post("/showcases", { name: "Shelf" })
  const product = await api(h).post("/products", { format: "course", name: "Course", showcase_id: showcase.body.data.id })
  const productId = product.body.data.id as string
  const module = await api(h).post(`/products/${productId}/modules`, { name: "Part 1" })
  const other = await api(h).post(`/products/${productId}/modules`, { name: "Part 2" })
  const lesson = await api(h).post(`/products/${productId}/lessons`, { name: "Intro", module_id: module.body.data.id })
  expect(lesson.status, lesson.text).toBe(201)
  return { productId, moduleId: module.body.data.id as string, otherModuleId: other.body.data.id as string, lessonId: lesson.body.data.id as string }
}

eachStore("release rules", (h) => {
  it("create: every field, rrl_ ID, Location and ETag; only the kind's parameter is set; event release_rule.created", async () => {
    const c = await course(h())
    const res = await api(h()).post(`/products/${c.productId}/release-rules`, { target: { kind: "lesson", id: c.lessonId }, kind: "after_enrollment", days: 7 })
    expect(res.status, res.text).toBe(201)
    const data = res.body.data
    expect(Object.keys(data)).toEqual(["object", "id", "product_id", "target", "kind", "days", "date", "module_id", "created_at", "updated_at", "revision"])
    expect(data).toMatchObject({
      object: "release_rule",
      product_id: c.productId,
      target: { kind: "lesson", id: c.lessonId },
      kind: "after_enrollment",
      days: 7,
      date: null,
      module_id: null,
      revision: "1"
    })
    expect(data.id).toMatch(/^rrl_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/products/${c.productId}/release-rules/${data.id}`)
    const read = await api(h()).get(`/products/${c.productId}/release-rules/${data.id}`)
    expect(read.body.data).toEqual(data)
    expect(read.headers.get("etag")).toBe(`W/"release_rule:${data.id}:1"`)
    expect(read.text).not.toContain("target_id")
    const events = (await api(h()).get(`/events?resource_id=${data.id}&type=release_rule.created`)).body.data
    expect(events).toHaveLength(1)
  })

  it("on_date and after_module_completed; the date is normalized to UTC", async () => {
    const c = await course(h())
    const dated = await api(h()).post(`/products/${c.productId}/release-rules`, { target: { kind: "module", id: c.moduleId }, kind: "on_date", date: "2030-05-01T10:00:00+02:00" })
    expect(dated.status, dated.text).toBe(201)
    expect(dated.body.data).toMatchObject({ kind: "on_date", date: "2030-05-01T08:00:00.000Z", days: null, module_id: null })
    const after = await api(h()).post(`/products/${c.productId}/release-rules`, {
      target: { kind: "module", id: c.otherModuleId },
      kind: "after_module_completed",
      module_id: c.moduleId
    })
    expect(after.status, after.text).toBe(201)
    expect(after.body.data).toMatchObject({ kind: "after_module_completed", module_id: c.moduleId, days: null, date: null })
  })

  it("one rule per target: 409 already_exists on target; after a DELETE (204, event release_rule.deleted) it may be made again", async () => {
    const c = await course(h())
    const body = { target: { kind: "lesson", id: c.lessonId }, kind: "after_enrollment", days: 1 }
    const first = await api(h()).post(`/products/${c.productId}/release-rules`, body)
    expect(first.status).toBe(201)
    expectError(await api(h()).post(`/products/${c.productId}/release-rules`, { ...body, days: 3 }), 409, "already_exists", { field: "target", code: "already_exists" })
    const removed = await api(h()).del(`/products/${c.productId}/release-rules/${first.body.data.id}`)
    expect(removed.status).toBe(204)
    expectError(await api(h()).get(`/products/${c.productId}/release-rules/${first.body.data.id}`), 404, "not_found")
    expect((await api(h()).get(`/events?resource_id=${first.body.data.id}&type=release_rule.deleted`)).body.data).toHaveLength(1)
    expect((await api(h()).post(`/products/${c.productId}/release-rules`, body)).status).toBe(201)
  })

  it("the target and the module must belong to the product (422 not_found); IDs of the target's kind; the kind's parameter is required", async () => {
    const c = await course(h())
    const other = await course(h())
    const path = `/products/${c.productId}/release-rules`
    expectError(await api(h()).post(path, { target: { kind: "lesson", id: other.lessonId }, kind: "after_enrollment", days: 1 }), 422, "validation_failed", {
      field: "target.id",
      reason: "not_found"
    })
    expectError(await api(h()).post(path, { target: { kind: "module", id: c.lessonId }, kind: "after_enrollment", days: 1 }), 422, "validation_failed", {
      field: "target.id",
      code: "invalid"
    })
    expectError(await api(h()).post(path, { target: { kind: "chapter", id: c.lessonId }, kind: "after_enrollment", days: 1 }), 422, "validation_failed", {
      field: "target.kind"
    })
    expectError(await api(h()).post(path, { target: { kind: "lesson", id: c.lessonId }, kind: "after_enrollment" }), 422, "validation_failed", {
      field: "days",
      code: "required"
    })
    expectError(await api(h()).post(path, { target: { kind: "lesson", id: c.lessonId }, kind: "after_enrollment", days: -1 }), 422, "validation_failed", {
      field: "days"
    })
    expectError(await api(h()).post(path, { target: { kind: "lesson", id: c.lessonId }, kind: "on_date" }), 422, "validation_failed", { field: "date", code: "required" })
    expectError(
      await api(h()).post(path, { target: { kind: "lesson", id: c.lessonId }, kind: "after_module_completed", module_id: other.moduleId }),
      422,
      "validation_failed",
      { field: "module_id", reason: "not_found" }
    )
    expectError(
      await api(h()).post(path, { target: { kind: "module", id: c.moduleId }, kind: "after_module_completed", module_id: c.moduleId }),
      422,
      "validation_failed",
      { field: "module_id", reason: "self_reference" }
    )
    expectError(await api(h()).post(path, { target: { kind: "lesson", id: c.lessonId }, kind: "soon" }), 422, "validation_failed", { field: "kind" })
    expectError(await api(h()).post(`/products/prd_000000001/release-rules`, { target: { kind: "lesson", id: c.lessonId }, kind: "after_enrollment", days: 1 }), 404, "not_found")
    expect((await api(h()).get(path)).body.data).toEqual([])
  })

  it("PATCH: a new kind takes its own parameter and clears the others; the target is fixed; If-Match", async () => {
    const c = await course(h())
    const rule = (await api(h()).post(`/products/${c.productId}/release-rules`, { target: { kind: "lesson", id: c.lessonId }, kind: "after_enrollment", days: 2 })).body.data
    const path = `/products/${c.productId}/release-rules/${rule.id}`
    expectError(await api(h()).patch(path, { kind: "on_date" }), 422, "validation_failed", { field: "date", code: "required" })
    expectError(await api(h()).patch(path, { target: { kind: "module", id: c.moduleId } }), 422, "unknown_field", { field: "target" })
    expectError(await api(h()).patch(path, { days: 5 }, { "if-match": `W/"release_rule:${rule.id}:7"` }), 412, "revision_mismatch")
    const days = await api(h()).patch(path, { days: 5 }, { "if-match": `W/"release_rule:${rule.id}:1"` })
    expect(days.status, days.text).toBe(200)
    expect(days.body.data).toMatchObject({ kind: "after_enrollment", days: 5, revision: "2" })
    const dated = await api(h()).patch(path, { kind: "on_date", date: "2031-01-01T00:00:00Z" })
    expect(dated.body.data).toMatchObject({ kind: "on_date", date: "2031-01-01T00:00:00.000Z", days: null, module_id: null, target: { kind: "lesson", id: c.lessonId } })
    expectError(await api(h()).patch(path, { date: null }), 422, "validation_failed", { field: "date", code: "required" })
    expect((await api(h()).get(`/events?resource_id=${rule.id}&type=release_rule.updated`)).body.data).toHaveLength(2)
  })

  it("list: within the product, by target_id and kind; another product's path is 404", async () => {
    const c = await course(h())
    const a = (await api(h()).post(`/products/${c.productId}/release-rules`, { target: { kind: "lesson", id: c.lessonId }, kind: "after_enrollment", days: 2 })).body.data
    const b = (await api(h()).post(`/products/${c.productId}/release-rules`, { target: { kind: "module", id: c.moduleId }, kind: "on_date", date: "2031-01-01T00:00:00Z" })).body.data
    const path = `/products/${c.productId}/release-rules`
    expect((await api(h()).get(path)).body.data.map((r: { id: string }) => r.id)).toEqual([a.id, b.id])
    expect((await api(h()).get(`${path}?target_id=${c.moduleId}`)).body.data.map((r: { id: string }) => r.id)).toEqual([b.id])
    expect((await api(h()).get(`${path}?kind=after_enrollment`)).body.data.map((r: { id: string }) => r.id)).toEqual([a.id])
    const other = await course(h())
    expectError(await api(h()).get(`/products/${other.productId}/release-rules/${a.id}`), 404, "not_found")
  })

  it("permissions: release_rules.read reads, cannot write (403); the catalog editor template covers release rules", async () => {
    const c = await course(h())
    const rule = (await api(h()).post(`/products/${c.productId}/release-rules`, { target: { kind: "lesson", id: c.lessonId }, kind: "after_enrollment", days: 2 })).body.data
    const reader = await credentialWith(h(), ["release_rules.read"])
    expect((await api(h(), reader).get(`/products/${c.productId}/release-rules/${rule.id}`)).status).toBe(200)
    expectError(await api(h(), reader).post(`/products/${c.productId}/release-rules`, { target: { kind: "module", id: c.moduleId }, kind: "on_date", date: "2031-01-01T00:00:00Z" }), 403, "permission_denied")
    expectError(await api(h(), reader).patch(`/products/${c.productId}/release-rules/${rule.id}`, { days: 1 }), 403, "permission_denied")
    expectError(await api(h(), reader).del(`/products/${c.productId}/release-rules/${rule.id}`), 403, "permission_denied")
    const templates = (await api(h()).get("/policy-templates")).body.data as Array<{ id: string; capabilities: Array<string> }>
    const editor = templates.find((t) => t.id === "catalog_editor")!
    expect(editor.capabilities).toEqual(expect.arrayContaining(["release_rules.read", "release_rules.create", "release_rules.update", "release_rules.delete"]))
  })
})
