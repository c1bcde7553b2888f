/**
 * Exams (§2.3 `exam`, §4.3; release 3.2.0): the shape and its settings, the link to lessons
 * (`lesson_ids` kept by the lessons' writes), the trash, idempotency, `If-Match`, the text
 * limits of §8.2, permissions, the sandbox reset. Questions: exam-questions.test.ts;
 * attempts: exam-attempts.test.ts. Decisions: docs/exams.md.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWithPolicies, newProduct, settle } from "../support/api.js"
import { expectError } from "../support/expect.js"

/** A product with one module, and an exam in it. */
const setup = async (h: Harness, secret = h.live) => {
  const product = await newProduct(h, secret)
  const module = await created(api(h, secret).post(`/products/${product.id}/modules`, { name: "Module" }))
  const exam = await created(api(h, secret).post(`/products/${product.id}/exams`, { title: "Final exam" }))
  const examPath = `/products/${product.id}/exams/${exam.id}`
  const newLesson = (json: object = {}) => created(api(h, secret).post(`/products/${product.id}/lessons`, { name: "Lesson", module_id: module.id, ...json }))
  return { product, module, exam, examPath, newLesson }
}

const defaultSettings = {
  duration_minutes: 0,
  min_grade: 70,
  questions_count: 0,
  retake: { allowed: true, only_if_failed: false, wait_minutes: 0 },
  show_answer_key: { approved: false, failed: false },
  show_answers: true,
  show_grade: true,
  shuffle_alternatives: false,
  shuffle_questions: false
}

eachStore("exams", (h) => {
  it("an exam is created in its product attached to no lesson, with every field of §2.3 and the default settings", async () => {
    const product = await newProduct(h())
    const res = await api(h()).post(`/products/${product.id}/exams`, { title: "Final exam" })
    expect(res.status).toBe(201)
    const exam = res.body.data
    expect(res.headers.get("location")).toBe(`/api/v3/products/${product.id}/exams/${exam.id}`)
    expect(res.headers.get("etag")).toBe(`W/"exam:${exam.id}:1"`)
    expect(Object.keys(exam)).toEqual([
      "object", "id", "product_id", "title", "description", "lesson_ids", "attempts_count", "questions_count", "settings", "created_at", "updated_at", "deleted", "revision"
    ])
    expect(exam).toMatchObject({
      object: "exam", product_id: product.id, title: "Final exam", description: null, lesson_ids: [], attempts_count: 0, questions_count: 0,
      settings: defaultSettings, deleted: false, revision: "1"
    })
    expect(exam.id).toMatch(/^exm_[0-9A-Za-z]{9}$/)
    const read = await api(h()).get(`/products/${product.id}/exams/${exam.id}`)
    expect(read.status).toBe(200)
    expect(read.body.data).toEqual(exam)
    // In the documented order on every store, nested objects too.
    expect(JSON.stringify(read.body.data.settings)).toBe(JSON.stringify(defaultSettings))
  })

  it("settings sent at creation replace their defaults; a PATCH merges only the sub-fields sent", async () => {
    const product = await newProduct(h())
    const exam = await created(
      api(h()).post(`/products/${product.id}/exams`, { title: "Quiz", settings: { min_grade: 50.5, retake: { allowed: false } } })
    )
    expect(exam.settings).toEqual({ ...defaultSettings, min_grade: 50.5, retake: { ...defaultSettings.retake, allowed: false } })
    const res = await api(h()).patch(`/products/${product.id}/exams/${exam.id}`, { settings: { retake: { wait_minutes: 30 }, show_grade: false } })
    expect(res.status).toBe(200)
    expect(res.body.data.settings).toEqual({
      ...defaultSettings, min_grade: 50.5, show_grade: false, retake: { allowed: false, only_if_failed: false, wait_minutes: 30 }
    })
    expect(res.body.data.revision).toBe("2")
  })

  it("title is required; settings are checked field by field (422 itemized); unknown fields are 422", async () => {
    const product = await newProduct(h())
    const path = `/products/${product.id}/exams`
    expectError(await api(h()).post(path, {}), 422, "validation_failed", { field: "title", code: "required" })
    const bad = await api(h()).post(path, { title: "x", settings: { min_grade: 101, duration_minutes: -1, retake: { wait_minutes: "5" } } })
    expectError(bad, 422, "validation_failed", { field: "settings.min_grade", code: "out_of_range" })
    expectError(bad, 422, "validation_failed", { field: "settings.duration_minutes", code: "out_of_range" })
    expectError(bad, 422, "validation_failed", { field: "settings.retake.wait_minutes", code: "invalid_type" })
    expectError(await api(h()).post(path, { title: "x", settings: { retake: { forever: true } } }), 422, "unknown_field", {
      field: "settings.retake.forever",
      code: "unknown_field"
    })
    expectError(await api(h()).post(path, { title: "x", lesson_ids: [] }), 422, "unknown_field", { field: "lesson_ids", code: "unknown_field" })
    expectError(await api(h()).post(path, { title: "x", attempts_count: 3 }), 422, "unknown_field", { field: "attempts_count" })
  })

  it("text limits of §8.2: title at most 200, description (rich text) at most 512 KiB", async () => {
    const product = await newProduct(h())
    const path = `/products/${product.id}/exams`
    expectError(await api(h()).post(path, { title: "t".repeat(201) }), 422, "validation_failed", { field: "title", code: "too_long" })
    expectError(await api(h()).post(path, { title: "t", description: "d".repeat(512 * 1024 + 1) }), 422, "validation_failed", {
      field: "description",
      code: "too_long"
    })
    const rich = await api(h()).post(path, { title: "t", description: "<p>" + "d".repeat(100 * 1024) + "</p>" })
    expect(rich.status).toBe(201)
  })

  it("create needs an Idempotency-Key (§4.1); the same key and body replays the same exam", async () => {
    const product = await newProduct(h())
    const path = `/products/${product.id}/exams`
    expectError(await api(h()).post(path, { title: "x" }, { idempotencyKey: null }), 422, "idempotency_key_required")
    const first = await api(h()).post(path, { title: "x" }, { idempotencyKey: "exam-once" })
    const again = await api(h()).post(path, { title: "x" }, { idempotencyKey: "exam-once" })
    expect(first.status).toBe(201)
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    expectError(await api(h()).post(path, { title: "y" }, { idempotencyKey: "exam-once" }), 422, "idempotency_key_reused", { reason: "different_body" })
  })

  it("PATCH honours If-Match: a stale revision is 412 and changes nothing", async () => {
    const { exam, examPath } = await setup(h())
    expectError(await api(h()).patch(examPath, { title: "Late" }, { "if-match": `W/"exam:${exam.id}:7"` }), 412, "revision_mismatch")
    const res = await api(h()).patch(examPath, { title: "Now" }, { "if-match": `W/"exam:${exam.id}:1"` })
    expect(res.status).toBe(200)
    expect(res.headers.get("etag")).toBe(`W/"exam:${exam.id}:2"`)
    expectError(await api(h()).patch(examPath, { title: "x" }, { "if-match": "exam-1" }), 400, "if_match_invalid")
    expect((await api(h()).get(examPath)).body.data.title).toBe("Now")
  })

  it("an exam of another product, or of none, is 404 under this product", async () => {
    const { exam } = await setup(h())
    const other = await newProduct(h())
    expectError(await api(h()).get(`/products/${other.id}/exams/${exam.id}`), 404, "not_found")
    expectError(await api(h()).get(`/products/${other.id}/exams/exm_000000001`), 404, "not_found")
    expectError(await api(h()).get(`/products/${other.id}/exams/les_000000001`), 404, "not_found")
    expectError(await api(h()).post(`/products/prd_000000001/exams`, { title: "x" }), 404, "not_found")
  })

  // -------------------------------------------------------------------------------------
  // Lessons link exams

  it("lesson_ids follows the lessons linking the exam: create, change, unlink, trash and restore of a lesson", async () => {
    const { exam, examPath, newLesson, product } = await setup(h())
    const a = await newLesson({ exam_id: exam.id })
    const linked = (await api(h()).get(examPath)).body.data
    expect(linked.lesson_ids).toEqual([a.id])
    // A kept field: the exam's revision and updated_at change with it.
    expect(linked.revision).toBe("2")
    const b = await newLesson()
    await api(h()).patch(`/products/${product.id}/lessons/${b.id}`, { exam_id: exam.id })
    expect((await api(h()).get(examPath)).body.data.lesson_ids).toEqual([a.id, b.id].sort())
    await api(h()).patch(`/products/${product.id}/lessons/${a.id}`, { exam_id: null })
    expect((await api(h()).get(examPath)).body.data.lesson_ids).toEqual([b.id])
    expect((await api(h()).del(`/products/${product.id}/lessons/${b.id}`)).status).toBe(200)
    expect((await api(h()).get(examPath)).body.data.lesson_ids).toEqual([])
    expect((await api(h()).patch(`/products/${product.id}/lessons/${b.id}`, { deleted: false })).status).toBe(200)
    expect((await api(h()).get(examPath)).body.data.lesson_ids).toEqual([b.id])
  })

  it("a lesson moving to another exam leaves the first; moving to another product unlinks it; a copy in the product links too", async () => {
    const { exam, examPath, newLesson, product } = await setup(h())
    const second = await created(api(h()).post(`/products/${product.id}/exams`, { title: "Second" }))
    const lesson = await newLesson({ exam_id: exam.id })
    await api(h()).patch(`/products/${product.id}/lessons/${lesson.id}`, { exam_id: second.id })
    expect((await api(h()).get(examPath)).body.data.lesson_ids).toEqual([])
    expect((await api(h()).get(`/products/${product.id}/exams/${second.id}`)).body.data.lesson_ids).toEqual([lesson.id])

    const copy = await api(h()).post(`/products/${product.id}/lessons/${lesson.id}/copies`, { target_product_id: product.id })
    expect(copy.status).toBe(202)
    const op = await settle(h(), copy.body.data.id)
    expect(op.status).toBe("succeeded")
    const items = (await api(h()).get(`/operations/${op.id}/items`)).body.data
    const copyId = items[0].result.id
    expect((await api(h()).get(`/products/${product.id}/exams/${second.id}`)).body.data.lesson_ids).toEqual([lesson.id, copyId].sort())

    const elsewhere = await newProduct(h())
    const otherModule = await created(api(h()).post(`/products/${elsewhere.id}/modules`, { name: "M" }))
    const moved = await api(h()).patch(`/products/${product.id}/lessons/${lesson.id}`, { module_id: otherModule.id })
    expect(moved.status).toBe(200)
    expect(moved.body.data.exam_id).toBeNull()
    expect((await api(h()).get(`/products/${product.id}/exams/${second.id}`)).body.data.lesson_ids).toEqual([copyId])
  })

  it("a lesson links only an exam of its product that is not trashed (422 on exam_id)", async () => {
    const { exam, examPath, module, product } = await setup(h())
    const other = await setup(h())
    const foreign = await api(h()).post(`/products/${other.product.id}/lessons`, { name: "x", module_id: other.module.id, exam_id: exam.id })
    expectError(foreign, 422, "validation_failed", { field: "exam_id", reason: "not_found" })
    expect((await api(h()).del(examPath)).status).toBe(200)
    const trashed = await api(h()).post(`/products/${product.id}/lessons`, { name: "x", module_id: module.id, exam_id: exam.id })
    expectError(trashed, 422, "validation_failed", { field: "exam_id", reason: "not_found" })
  })

  // -------------------------------------------------------------------------------------
  // The trash

  it("DELETE trashes (200, deleted: true); it is 404 then, listed with deleted=true; PATCH deleted=false restores", async () => {
    const { exam, examPath, product } = await setup(h())
    const res = await api(h()).del(examPath)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ id: exam.id, deleted: true })
    expectError(await api(h()).get(examPath), 404, "not_found")
    expectError(await api(h()).del(examPath), 404, "not_found")
    expect((await api(h()).get(`/products/${product.id}/exams`)).body.data.map((e: any) => e.id)).not.toContain(exam.id)
    expect((await api(h()).get(`/products/${product.id}/exams?deleted=true`)).body.data.map((e: any) => e.id)).toEqual([exam.id])
    expectError(await api(h()).patch(examPath, { deleted: true }), 422, "validation_failed", { field: "deleted" })
    const restored = await api(h()).patch(examPath, { deleted: false })
    expect(restored.status).toBe(200)
    expect(restored.body.data.deleted).toBe(false)
    const types = (await api(h()).get(`/events?resource_id=${exam.id}&limit=50`)).body.data.map((e: any) => e.type)
    expect(types).toEqual(expect.arrayContaining(["exam.created", "exam.trashed", "exam.restored"]))
    const actions = (await api(h()).get(`/audit-entries?resource_id=${exam.id}&limit=50`)).body.data.map((e: any) => e.action)
    expect(actions).toEqual(expect.arrayContaining(["exam.created", "exam.trashed", "exam.restored"]))
  })

  it("an exam a lesson links cannot be trashed: 409 state_conflict, reason exam_linked", async () => {
    const { exam, examPath, newLesson, product } = await setup(h())
    const lesson = await newLesson({ exam_id: exam.id })
    expectError(await api(h()).del(examPath), 409, "state_conflict", { reason: "exam_linked" })
    await api(h()).patch(`/products/${product.id}/lessons/${lesson.id}`, { exam_id: null })
    expect((await api(h()).del(examPath)).status).toBe(200)
  })

  // -------------------------------------------------------------------------------------
  // Lists

  it("lists page by cursor, sort by title both ways, search by q", async () => {
    const product = await newProduct(h())
    for (const title of ["Beta", "Alpha", "Gamma"]) await created(api(h()).post(`/products/${product.id}/exams`, { title }))
    const path = `/products/${product.id}/exams`
    const first = await api(h()).get(`${path}?limit=2`)
    expect(first.body.data.map((e: any) => e.title)).toEqual(["Beta", "Alpha"])
    const next = await api(h()).get(`${path}?limit=2&cursor=${encodeURIComponent(first.body.page.next_cursor)}`)
    expect(next.body.data.map((e: any) => e.title)).toEqual(["Gamma"])
    expect(next.body.page.next_cursor).toBeNull()
    expect((await api(h()).get(`${path}?sort=title`)).body.data.map((e: any) => e.title)).toEqual(["Alpha", "Beta", "Gamma"])
    expect((await api(h()).get(`${path}?sort=-title`)).body.data.map((e: any) => e.title)).toEqual(["Gamma", "Beta", "Alpha"])
    expect((await api(h()).get(`${path}?q=amm`)).body.data.map((e: any) => e.title)).toEqual(["Gamma"])
    expectError(await api(h()).get(`${path}?sort=position`), 422, "validation_failed", { parameter: "sort" })
    expectError(await api(h()).get(`${path}?colour=red`), 400, "unknown_parameter", { parameter: "colour" })
  })

  // -------------------------------------------------------------------------------------
  // Permissions and the sandbox

  it("without exams.create: 403 permission_denied; read_only reads exams but creates none", async () => {
    const product = await newProduct(h())
    const reader = await credentialWithPolicies(h(), [{ capabilities: ["exams.read"] }])
    expectError(await api(h(), reader).post(`/products/${product.id}/exams`, { title: "x" }), 403, "permission_denied")
    const readOnly = await credentialWithPolicies(h(), [{ template: "read_only" }])
    const exam = await created(api(h()).post(`/products/${product.id}/exams`, { title: "x" }))
    expect((await api(h(), readOnly).get(`/products/${product.id}/exams/${exam.id}`)).status).toBe(200)
    expectError(await api(h(), readOnly).patch(`/products/${product.id}/exams/${exam.id}`, { title: "y" }), 403, "permission_denied")
    expectError(await api(h(), readOnly).del(`/products/${product.id}/exams/${exam.id}`), 403, "permission_denied")
    // A policy limited to another product: this product's exams do not exist for it.
    const other = await newProduct(h())
    const scoped = await credentialWithPolicies(h(), [{ capabilities: ["exams.read"], resources: [other.id] }])
    expectError(await api(h(), scoped).get(`/products/${product.id}/exams/${exam.id}`), 404, "not_found")
  })

  it("the catalog editor template edits exams and questions but does not read answer keys", async () => {
    const templates = (await api(h()).get("/policy-templates")).body.data
    const editor = templates.find((t: any) => t.id === "catalog_editor")
    expect(editor.capabilities).toEqual(expect.arrayContaining(["exams.create", "exams.update", "exam_questions.create", "exam_questions.update"]))
    expect(editor.capabilities).not.toContain("exams.read_answer_key")
    const readOnly = templates.find((t: any) => t.id === "read_only")
    expect(readOnly.capabilities).toEqual(expect.arrayContaining(["exams.read", "exam_questions.read", "exam_attempts.read"]))
    expect(readOnly.capabilities).not.toContain("exams.read_answer_key")
  })

  it("a sandbox reset empties the sandbox's exams", async () => {
    const { exam, examPath } = await setup(h(), h().test)
    expect((await api(h(), h().test).get(examPath)).body.data.id).toBe(exam.id)
    expect((await api(h(), h().test).post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await api(h(), h().test).get(examPath), 404, "not_found")
  })
})
