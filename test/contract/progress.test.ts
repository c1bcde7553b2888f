/**
 * Per-lesson progress of an enrollment (release 3.2.0, open-points routes
 * `GET /enrollments/{id}/progress`, `PUT /enrollments/{id}/progress/lessons/{lesson_id}`,
 * docs/learning.md): the rules of a PUT, the enrollment's derived percent and completion in
 * the same unit of work, the read in course order with availability from release rules.
 */
import { expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"
import { api, credentialWith } from "../support/api.js"

let counter = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now()}-${++counter}`

const lesson = async (h: Harness, productId: string, moduleId: string, name: string, options: { position?: number; published?: boolean } = {}) => {
  const res = await api(h).post(`/products/${productId}/lessons`, { name, module_id: moduleId, ...(options.position ? { position: options.position } : {}) })
  expect(res.status, res.text).toBe(201)
  if (options.published !== false) expect((await api(h).patch(`/products/${productId}/lessons/${res.body.data.id}`, { status: "published" })).status).toBe(200)
  return res.body.data.id as string
}

/**
 * A course whose order differs from creation: module B (made second, placed first) holds b1;
 * module A holds a2 (placed first) and a1; `draft` is an unpublished lesson of A.
 * Course order: b1, a2, a1.
 */
const course = async (h: Harness) => {
  const showcase = await api(h).post("/showcases", { name: "Shelf" })
  const productId = (await api(h).post("/products", { format: "course", name: "Course", showcase_id: showcase.body.data.id })).body.data.id as string
  const moduleA = (await api(h).post(`/products/${productId}/modules`, { name: "A" })).body.data.id as string
  const moduleB = (await api(h).post(`/products/${productId}/modules`, { name: "B", position: 1 })).body.data.id as string
  const a1 = await lesson(h, productId, moduleA, "a1")
  const a2 = await lesson(h, productId, moduleA, "a2", { position: 1 })
  const b1 = await lesson(h, productId, moduleB, "b1")
  const draft = await lesson(h, productId, moduleA, "draft", { published: false })
  const userId = (await api(h).post("/users", { name: "Ada", email: `${unique("u")}@example.com` })).body.data.id as string
  const enrollment = await api(h).post("/enrollments", { user_id: userId, product_id: productId })
  expect(enrollment.status, enrollment.text).toBe(201)
  return { productId, moduleA, moduleB, a1, a2, b1, draft, userId, enrollment: enrollment.body.data as Record<string, any> }
}

const progressPath = (enrollmentId: string, lessonId: string) => `/enrollments/${enrollmentId}/progress/lessons/${lessonId}`

const eventsOf = async (h: Harness, id: string, type: string) =>
  (await api(h).get(`/events?resource_id=${id}&type=${type}`)).body.data as Array<Record<string, any>>

eachStore("lesson progress", (h) => {
  it("PUT completes a lesson: the row; the enrollment's percent in the same write; events lesson_progress.updated and enrollment.updated", async () => {
    const c = await course(h())
    const res = await api(h()).put(progressPath(c.enrollment.id, c.a1), { status: "completed" })
    expect(res.status, res.text).toBe(200)
    const row = res.body.data
    expect(Object.keys(row)).toEqual(["object", "id", "enrollment_id", "lesson_id", "module_id", "status", "percent", "completed_at", "updated_at", "revision", "available", "available_at"])
    expect(row).toMatchObject({ object: "lesson_progress", enrollment_id: c.enrollment.id, lesson_id: c.a1, module_id: c.moduleA, status: "completed", percent: 100, available: true, available_at: null })
    expect(row.id).toMatch(/^lpr_[0-9A-Za-z]{9}$/)
    expect(row.completed_at).not.toBeNull()
    const enrollment = (await api(h()).get(`/enrollments/${c.enrollment.id}`)).body.data
    // One of three published lessons (the draft does not count).
    expect(enrollment).toMatchObject({ progress_percent: 33, completed_at: null, revision: "2" })
    expect(await eventsOf(h(), row.id, "lesson_progress.updated")).toHaveLength(1)
    expect(await eventsOf(h(), c.enrollment.id, "enrollment.updated")).toHaveLength(1)
    const audit = (await api(h()).get(`/audit-entries?resource_id=${row.id}`)).body.data.map((e: { action: string }) => e.action)
    expect(audit).toEqual(["lesson_progress.updated"])
  })

  it("percent alone: in_progress below 100, completed at 100; the same PUT again records nothing; completing every lesson completes the enrollment once", async () => {
    const c = await course(h())
    const half = await api(h()).put(progressPath(c.enrollment.id, c.b1), { percent: 40 })
    expect(half.body.data).toMatchObject({ status: "in_progress", percent: 40, completed_at: null })
    const again = await api(h()).put(progressPath(c.enrollment.id, c.b1), { percent: 40 })
    expect(again.status).toBe(200)
    expect(await eventsOf(h(), half.body.data.id, "lesson_progress.updated")).toHaveLength(1)
    expect((await api(h()).put(progressPath(c.enrollment.id, c.b1), { percent: 100 })).body.data).toMatchObject({ status: "completed", percent: 100 })
    await api(h()).put(progressPath(c.enrollment.id, c.a2), { status: "completed", completed_at: "2026-01-01T00:00:00-03:00" })
    expect((await api(h()).get(`/enrollments/${c.enrollment.id}`)).body.data.progress_percent).toBe(66)
    const last = await api(h()).put(progressPath(c.enrollment.id, c.a1), { status: "completed" })
    expect(last.status).toBe(200)
    const done = (await api(h()).get(`/enrollments/${c.enrollment.id}`)).body.data
    expect(done.progress_percent).toBe(100)
    expect(done.completed_at).not.toBeNull()
    const completed = await eventsOf(h(), c.enrollment.id, "enrollment.completed")
    expect(completed).toHaveLength(1)
    expect(completed[0]!.data.object).toMatchObject({ id: c.enrollment.id, progress_percent: 100 })
    // Going back on a lesson lowers the percent; completed_at stays.
    const back = await api(h()).put(progressPath(c.enrollment.id, c.a1), { status: "not_started" })
    expect(back.body.data).toMatchObject({ status: "not_started", percent: 0, completed_at: null })
    const after = (await api(h()).get(`/enrollments/${c.enrollment.id}`)).body.data
    expect(after).toMatchObject({ progress_percent: 66, completed_at: done.completed_at })
    await api(h()).put(progressPath(c.enrollment.id, c.a1), { status: "completed" })
    expect(await eventsOf(h(), c.enrollment.id, "enrollment.completed")).toHaveLength(1)
    const a2 = (await api(h()).get(`/enrollments/${c.enrollment.id}/progress`)).body.data.lessons[1]
    expect(a2).toMatchObject({ lesson_id: c.a2, completed_at: "2026-01-01T03:00:00.000Z" })
  })

  it("revision and If-Match (§2.1, §4.1): each write of a lesson's progress a new revision and ETag; a stale If-Match, another row's, or one before any progress is 412 and writes nothing", async () => {
    const c = await course(h())
    const path = progressPath(c.enrollment.id, c.a1)
    // Never recorded: the row shows no revision, and no If-Match can match it.
    const before = (await api(h()).get(`/enrollments/${c.enrollment.id}/progress`)).body.data.lessons.find((l: any) => l.lesson_id === c.a1)
    expect(before).toMatchObject({ id: null, revision: null })
    expectError(await api(h()).put(path, { percent: 10 }, { "if-match": `W/"lesson_progress:lpr_000000001:1"` }), 412, "revision_mismatch")
    const first = await api(h()).put(path, { percent: 10 })
    expect(first.status, first.text).toBe(200)
    expect(first.body.data.revision).toBe("1")
    const etag = first.headers.get("etag")
    expect(etag).toBe(`W/"lesson_progress:${first.body.data.id}:1"`)
    const second = await api(h()).put(path, { percent: 20 }, { "if-match": etag! })
    expect(second.status, second.text).toBe(200)
    expect(second.body.data.revision).toBe("2")
    expect(second.headers.get("etag")).toBe(`W/"lesson_progress:${first.body.data.id}:2"`)
    // The first ETag is stale now: 412, and nothing changes.
    expectError(await api(h()).put(path, { percent: 90 }, { "if-match": etag! }), 412, "revision_mismatch")
    // Another lesson's ETag, at the same revision, does not match this one.
    const other = await api(h()).put(progressPath(c.enrollment.id, c.a2), { percent: 5 })
    await api(h()).put(progressPath(c.enrollment.id, c.a2), { percent: 6 })
    expectError(await api(h()).put(path, { percent: 90 }, { "if-match": `W/"lesson_progress:${other.body.data.id}:2"` }), 412, "revision_mismatch")
    expectError(await api(h()).put(path, { percent: 90 }, { "if-match": "not-an-etag" }), 400, "if_match_invalid")
    const row = (await api(h()).get(`/enrollments/${c.enrollment.id}/progress`)).body.data.lessons.find((l: any) => l.lesson_id === c.a1)
    expect(row).toMatchObject({ percent: 20, revision: "2" })
    // `*` matches any recorded progress.
    expect((await api(h()).put(path, { percent: 30 }, { "if-match": "*" })).body.data.revision).toBe("3")
  })

  it("the body is checked: percent 0..100, status and percent agree, completed_at only when completed and not in the future", async () => {
    const c = await course(h())
    const path = progressPath(c.enrollment.id, c.a1)
    expectError(await api(h()).put(path, { percent: 101 }), 422, "validation_failed", { field: "percent" })
    expectError(await api(h()).put(path, { status: "finished" }), 422, "validation_failed", { field: "status" })
    expectError(await api(h()).put(path, { status: "not_started", percent: 10 }), 422, "validation_failed", { field: "percent", reason: "inconsistent_with_status" })
    expectError(await api(h()).put(path, { status: "completed", percent: 50 }), 422, "validation_failed", { field: "percent", reason: "inconsistent_with_status" })
    expectError(await api(h()).put(path, { status: "in_progress", percent: 100 }), 422, "validation_failed", { field: "percent", reason: "inconsistent_with_status" })
    expectError(await api(h()).put(path, { status: "in_progress", completed_at: "2026-01-01T00:00:00Z" }), 422, "validation_failed", {
      field: "completed_at",
      reason: "requires_completed"
    })
    expectError(await api(h()).put(path, { status: "completed", completed_at: "2999-01-01T00:00:00Z" }), 422, "validation_failed", {
      field: "completed_at",
      reason: "in_the_future"
    })
    expectError(await api(h()).put(path, { status: "completed", note: "x" }), 422, "unknown_field", { field: "note" })
    expect((await api(h()).get(`/enrollments/${c.enrollment.id}`)).body.data.revision).toBe("1")
  })

  it("the lesson must be a published lesson of the enrollment's product (404, 409 lesson_not_published); the enrollment must be active (409 enrollment_not_active)", async () => {
    const c = await course(h())
    const other = await course(h())
    expectError(await api(h()).put(progressPath(c.enrollment.id, other.a1), { status: "completed" }), 404, "not_found")
    expectError(await api(h()).put(progressPath(c.enrollment.id, "les_000000001"), { status: "completed" }), 404, "not_found")
    expectError(await api(h()).put(progressPath("enr_000000001", c.a1), { status: "completed" }), 404, "not_found")
    const unpublished = await api(h()).put(progressPath(c.enrollment.id, c.draft), { status: "completed" })
    expectError(unpublished, 409, "state_conflict", { reason: "lesson_not_published" })
    // The message says how a lesson gets published: with its module.
    expect(unpublished.body.error.message).toContain("/modules/<module_id>/publications")
    expect((await api(h()).post(`/enrollments/${c.enrollment.id}/cancellations`)).status).toBe(200)
    expectError(await api(h()).put(progressPath(c.enrollment.id, c.a1), { status: "completed" }), 409, "state_conflict", { reason: "enrollment_not_active" })
    expectError(await api(h()).put(progressPath(other.enrollment.id, other.a1), { status: "completed" }, { "idempotency-key": "not a key!" }), 422, "idempotency_key_invalid")
    const key = unique("progress")
    const first = await api(h()).put(progressPath(other.enrollment.id, other.a1), { status: "completed" }, { "idempotency-key": key })
    expect(first.status).toBe(200)
    const replay = await api(h()).put(progressPath(other.enrollment.id, other.a1), { status: "completed" }, { "idempotency-key": key })
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.body).toEqual(first.body)
  })

  it("GET progress: the enrollment's percent and its published lessons in course order, not_started without a record; pages by cursor", async () => {
    const c = await course(h())
    await api(h()).put(progressPath(c.enrollment.id, c.a2), { percent: 10 })
    const res = await api(h()).get(`/enrollments/${c.enrollment.id}/progress`)
    expect(res.status, res.text).toBe(200)
    const data = res.body.data
    expect(data).toMatchObject({ object: "enrollment_progress", enrollment_id: c.enrollment.id, status: "active", progress_percent: 0, completed_at: null })
    expect(data.lessons.map((l: { lesson_id: string }) => l.lesson_id)).toEqual([c.b1, c.a2, c.a1])
    expect(data.lessons[0]).toEqual({
      object: "lesson_progress", id: null, enrollment_id: c.enrollment.id, lesson_id: c.b1, module_id: c.moduleB,
      status: "not_started", percent: 0, completed_at: null, updated_at: null, revision: null, available: true, available_at: null
    })
    expect(data.lessons[1]).toMatchObject({ status: "in_progress", percent: 10 })
    expect(data.page).toEqual({ limit: 50, next_cursor: null, prev_cursor: null })
    const seen: Array<string> = []
    let cursor: string | null = null
    do {
      const page: any = await api(h()).get(`/enrollments/${c.enrollment.id}/progress?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)
      expect(page.status, page.text).toBe(200)
      seen.push(...page.body.data.lessons.map((l: { lesson_id: string }) => l.lesson_id))
      cursor = page.body.data.page.next_cursor
    } while (cursor !== null && seen.length < 10)
    expect(seen).toEqual([c.b1, c.a2, c.a1])
    const first = (await api(h()).get(`/enrollments/${c.enrollment.id}/progress?limit=2`)).body.data.page.next_cursor as string
    expectError(await api(h()).get(`/enrollments/${c.enrollment.id}/progress?cursor=${encodeURIComponent(first.slice(0, -2))}`), 400, "invalid_cursor")
    const other = await course(h())
    expectError(await api(h()).get(`/enrollments/${other.enrollment.id}/progress?cursor=${encodeURIComponent(first)}`), 400, "invalid_cursor")
    expectError(await api(h()).get(`/enrollments/${c.enrollment.id}/progress?limit=0`), 422, "validation_failed", { parameter: "limit" })
    expectError(await api(h()).get(`/enrollments/${c.enrollment.id}/progress?sort=position`), 400, "unknown_parameter", { parameter: "sort" })
    expectError(await api(h()).get(`/enrollments/enr_000000001/progress`), 404, "not_found")
  })

  it("availability: a module's after_enrollment rule and a lesson's on_date rule give available_at; after_module_completed opens on completion", async () => {
    const c = await course(h())
    const rules = `/products/${c.productId}/release-rules`
    expect((await api(h()).post(rules, { target: { kind: "module", id: c.moduleB }, kind: "after_enrollment", days: 10 })).status).toBe(201)
    expect((await api(h()).post(rules, { target: { kind: "lesson", id: c.a2 }, kind: "on_date", date: "2020-01-01T00:00:00Z" })).status).toBe(201)
    expect((await api(h()).post(rules, { target: { kind: "lesson", id: c.a1 }, kind: "after_module_completed", module_id: c.moduleB })).status).toBe(201)
    const read = async () => (await api(h()).get(`/enrollments/${c.enrollment.id}/progress`)).body.data.lessons as Array<Record<string, any>>
    const [b1, a2, a1] = await read()
    const opens = new Date(Date.parse(c.enrollment.starts_at) + 10 * 86_400_000).toISOString()
    expect(b1).toMatchObject({ lesson_id: c.b1, available: false, available_at: opens })
    expect(a2).toMatchObject({ lesson_id: c.a2, available: true, available_at: "2020-01-01T00:00:00.000Z" })
    expect(a1).toMatchObject({ lesson_id: c.a1, available: false, available_at: null })
    // Recording progress does not depend on availability (integrations report what happened).
    const put = await api(h()).put(progressPath(c.enrollment.id, c.b1), { status: "completed" })
    expect(put.body.data).toMatchObject({ available: false, available_at: opens })
    expect((await read())[2]).toMatchObject({ lesson_id: c.a1, available: true, available_at: null })
  })

  it("permissions: enrollments.read reads progress but cannot record it (403); a credential without enrollments.read cannot read it", async () => {
    const c = await course(h())
    const reader = await credentialWith(h(), ["enrollments.read"])
    expect((await api(h(), reader).get(`/enrollments/${c.enrollment.id}/progress`)).status).toBe(200)
    expectError(await api(h(), reader).put(progressPath(c.enrollment.id, c.a1), { status: "completed" }), 403, "permission_denied")
    const writer = await credentialWith(h(), ["enrollments.update"])
    expect((await api(h(), writer).put(progressPath(c.enrollment.id, c.a1), { status: "completed" })).status).toBe(200)
    expectError(await api(h(), writer).get(`/enrollments/${c.enrollment.id}/progress`), 403, "permission_denied")
  })
})

eachStore("lesson progress over time", (h) => {
  it("an enrollment past its expiry refuses progress before the housekeeping records it (409 enrollment_not_active)", async () => {
    const c = await course(h())
    const expiring = await api(h()).post("/enrollments", {
      user_id: (await api(h()).post("/users", { name: "Bo", email: `${unique("u")}@example.com` })).body.data.id,
      product_id: c.productId,
      expires_at: new Date(Date.parse(c.enrollment.created_at) + 3600_000).toISOString()
    })
    expect(expiring.status, expiring.text).toBe(201)
    expect((await api(h()).put(progressPath(expiring.body.data.id, c.a1), { percent: 10 })).status).toBe(200)
    h().advance(3600_000 + 60_000)
    expect((await api(h()).get(`/enrollments/${expiring.body.data.id}`)).body.data.status).toBe("active")
    expectError(await api(h()).put(progressPath(expiring.body.data.id, c.a1), { percent: 20 }), 409, "state_conflict", { reason: "enrollment_not_active" })
    await h().housekeeping()
    expect((await api(h()).get(`/enrollments/${expiring.body.data.id}`)).body.data.status).toBe("expired")
    expect((await api(h()).put(progressPath(c.enrollment.id, c.a1), { percent: 20 })).status).toBe(200)
  })
})
