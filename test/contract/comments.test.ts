/**
 * Comments on lessons (§2.3 `comment`, §3, §4.3 `GET /support/comments`, open-points
 * `/support/comments` (+ `/{id}`, `/{id}/replies`), docs/support.md): the shape, the
 * moderation queue (`pending` by default, newest first, `sort=id` oldest first, top-level only,
 * across the accessible products), moderation moves, one level of replies keeping
 * `replies_count`, personal data, limits, events, idempotency and permissions.
 */
import { expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith, credentialWithPolicies, newProduct } from "../support/api.js"

/** A product with a lesson, and a learner. */
const setup = async (h: Harness, secret: string = h.live) => {
  const product = await newProduct(h, secret)
  const module = await created(api(h, secret).post(`/products/${product.id}/modules`, { name: "Part 1" }))
  const lesson = await created(api(h, secret).post(`/products/${product.id}/lessons`, { name: "Intro", module_id: module.id }))
  const user = await created(api(h, secret).post("/users", { name: "Bea Learner", email: `bea-${Math.random().toString(36).slice(2)}@example.com` }))
  return { productId: product.id as string, lessonId: lesson.id as string, userId: user.id as string }
}

const comment = (h: Harness, s: { lessonId: string; userId: string }, text = "Great lesson", secret?: string) =>
  api(h, secret).post("/support/comments", { user_id: s.userId, lesson_id: s.lessonId, text })

const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((c) => c.id)

eachStore("comments", (h) => {
  it("create: the §2.3 shape (with parent_id), cmt_ ID, pending, product of the lesson; GET answers the same; event comment.created", async () => {
    const s = await setup(h())
    const res = await comment(h(), s)
    expect(res.status, res.text).toBe(201)
    const data = res.body.data
    expect(Object.keys(data)).toEqual([
      "object", "id", "parent_id", "product_id", "lesson_id", "text", "status", "pinned", "replies_count", "user", "created_at", "updated_at", "revision"
    ])
    expect(data).toMatchObject({
      object: "comment",
      parent_id: null,
      product_id: s.productId,
      lesson_id: s.lessonId,
      text: "Great lesson",
      status: "pending",
      pinned: false,
      replies_count: 0,
      user: { id: s.userId, name: "Bea Learner" },
      revision: "1"
    })
    expect(data.id).toMatch(/^cmt_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/support/comments/${data.id}`)
    const read = await api(h()).get(`/support/comments/${data.id}`)
    expect(read.body.data).toEqual(data)
    expect(read.headers.get("etag")).toBe(`W/"comment:${data.id}:1"`)
    expect((await api(h()).get(`/events?resource_id=${data.id}&type=comment.created`)).body.data).toHaveLength(1)
    expectError(await api(h()).get("/support/comments/cmt_000000001"), 404, "not_found")
    expectError(await api(h()).get("/support/comments/qst_000000001"), 404, "not_found")
  })

  it("create: user and lesson must exist; text plain, at most 64 KiB; Idempotency-Key required and replayed", async () => {
    const s = await setup(h())
    expectError(await comment(h(), { ...s, lessonId: "les_000000001" }), 422, "validation_failed", { field: "lesson_id", reason: "not_found" })
    expectError(await comment(h(), { ...s, userId: "usr_000000001" }), 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expectError(await comment(h(), s, ""), 422, "validation_failed", { field: "text", code: "required" })
    expectError(await comment(h(), s, "x".repeat(64 * 1024 + 1)), 422, "validation_failed", { field: "text", code: "too_long" })
    expect((await comment(h(), s, "x".repeat(64 * 1024))).status).toBe(201)
    expectError(await api(h()).post("/support/comments", { user_id: s.userId, lesson_id: s.lessonId, text: "x", status: "approved" }), 422, "unknown_field", { field: "status" })
    expectError(await api(h()).post("/support/comments", { user_id: s.userId, lesson_id: s.lessonId, text: "x" }, { idempotencyKey: null }), 422, "idempotency_key_required")
    const first = await api(h()).post("/support/comments", { user_id: s.userId, lesson_id: s.lessonId, text: "once" }, { idempotencyKey: "cmt-key-1" })
    const again = await api(h()).post("/support/comments", { user_id: s.userId, lesson_id: s.lessonId, text: "once" }, { idempotencyKey: "cmt-key-1" })
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
  })

  it("GET /support/comments: pending by default, newest first, sort=id oldest first, status filter, cursors, top-level only", async () => {
    const s = await setup(h())
    const before = ids(await api(h()).get("/support/comments?limit=200"))
    const a = (await comment(h(), s, "a")).body.data
    const b = (await comment(h(), s, "b")).body.data
    const c = (await comment(h(), s, "c")).body.data
    await api(h()).post(`/support/comments/${a.id}/replies`, { text: "learner reply", user_id: s.userId })
    const pending = ids(await api(h()).get("/support/comments?limit=200")).filter((id) => !before.includes(id))
    expect(pending).toEqual([c.id, b.id, a.id])
    const oldest = ids(await api(h()).get("/support/comments?sort=id&limit=200")).filter((id) => !before.includes(id))
    expect(oldest).toEqual([a.id, b.id, c.id])
    expect((await api(h()).patch(`/support/comments/${b.id}`, { status: "approved" })).status).toBe(200)
    expect(ids(await api(h()).get("/support/comments?status=approved&limit=200"))).toContain(b.id)
    expect(ids(await api(h()).get("/support/comments?limit=200"))).not.toContain(b.id)
    const first = await api(h()).get("/support/comments?limit=1")
    expect(first.body.data).toHaveLength(1)
    const next = await api(h()).get(`/support/comments?limit=1&cursor=${encodeURIComponent(first.body.page.next_cursor)}`)
    expect(next.body.data[0].id).not.toBe(first.body.data[0].id)
    expectError(await api(h()).get(`/support/comments?status=approved&cursor=${encodeURIComponent(first.body.page.next_cursor)}`), 400, "invalid_cursor")
    expectError(await api(h()).get("/support/comments?status=spam"), 422, "validation_failed", { parameter: "status" })
    expectError(await api(h()).get("/support/comments?sort=created_at"), 422, "validation_failed", { parameter: "sort" })
    expectError(await api(h()).get("/support/comments?product_id=x"), 400, "unknown_parameter")
  })

  it("moderation: pending → approved / hidden, hidden ↔ approved, never back to pending (422 invalid_transition); text never changes; If-Match; pinned", async () => {
    const s = await setup(h())
    const c = (await comment(h(), s)).body.data
    const path = `/support/comments/${c.id}`
    expectError(await api(h()).patch(path, { text: "edited" }), 422, "unknown_field", { field: "text", code: "unknown_field" })
    expectError(await api(h()).patch(path, { status: "approved" }, { "if-match": `W/"comment:${c.id}:9"` }), 412, "revision_mismatch")
    const approved = await api(h()).patch(path, { status: "approved" }, { "if-match": `W/"comment:${c.id}:1"` })
    expect(approved.status, approved.text).toBe(200)
    expect(approved.body.data).toMatchObject({ status: "approved", revision: "2", text: "Great lesson" })
    expect(approved.headers.get("etag")).toBe(`W/"comment:${c.id}:2"`)
    const events = (await api(h()).get(`/events?resource_id=${c.id}&type=comment.updated`)).body.data
    expect(events[0].previous_attributes).toMatchObject({ status: "pending" })
    expectError(await api(h()).patch(path, { status: "pending" }), 422, "invalid_transition", { field: "status", reason: "from_approved" })
    expect((await api(h()).patch(path, { status: "hidden" })).body.data.status).toBe("hidden")
    expect((await api(h()).patch(path, { status: "approved" })).body.data.status).toBe("approved")
    expect((await api(h()).patch(path, { pinned: true })).body.data.pinned).toBe(true)
    const other = (await comment(h(), s)).body.data
    expect((await api(h()).patch(`/support/comments/${other.id}`, { status: "hidden" })).body.data.status).toBe("hidden")
  })

  it("replies: one level deep (422 hierarchy_violation), the account's approved at once, a learner's pending; replies_count counts approved replies", async () => {
    const s = await setup(h())
    const c = (await comment(h(), s)).body.data
    const path = `/support/comments/${c.id}`
    const staff = await api(h()).post(`${path}/replies`, { text: "Thanks!" })
    expect(staff.status, staff.text).toBe(201)
    expect(staff.body.data).toMatchObject({ object: "comment", parent_id: c.id, product_id: s.productId, lesson_id: s.lessonId, status: "approved", user: null })
    expect(staff.headers.get("location")).toBe(`/api/v3/support/comments/${staff.body.data.id}`)
    expect((await api(h()).get(path)).body.data).toMatchObject({ replies_count: 1, revision: "2" })
    const learner = (await api(h()).post(`${path}/replies`, { text: "You're welcome", user_id: s.userId })).body.data
    expect(learner).toMatchObject({ status: "pending", user: { id: s.userId, name: "Bea Learner" } })
    expect((await api(h()).get(path)).body.data.replies_count).toBe(1)
    expect((await api(h()).patch(`/support/comments/${learner.id}`, { status: "approved" })).status).toBe(200)
    expect((await api(h()).get(path)).body.data.replies_count).toBe(2)
    expect((await api(h()).patch(`/support/comments/${learner.id}`, { status: "hidden" })).status).toBe(200)
    expect((await api(h()).get(path)).body.data.replies_count).toBe(1)
    expect(ids(await api(h()).get(`${path}/replies`))).toEqual([staff.body.data.id, learner.id])
    expect(ids(await api(h()).get(`${path}/replies?sort=-id`))).toEqual([learner.id, staff.body.data.id])
    expect(ids(await api(h()).get(`${path}/replies?status=hidden`))).toEqual([learner.id])
    expectError(await api(h()).post(`/support/comments/${learner.id}/replies`, { text: "deeper" }), 422, "hierarchy_violation", { reason: "reply_to_reply" })
    expectError(await api(h()).post(`${path}/replies`, { text: "x", user_id: "usr_000000001" }), 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expectError(await api(h()).post(`${path}/replies`, { text: "x" }, { idempotencyKey: null }), 422, "idempotency_key_required")
    expectError(await api(h()).post("/support/comments/cmt_000000001/replies", { text: "x" }), 404, "not_found")
    const removed = await api(h()).del(`/support/comments/${staff.body.data.id}`)
    expect(removed.status).toBe(204)
    expect((await api(h()).get(path)).body.data.replies_count).toBe(0)
  })

  it("DELETE removes a comment with its replies (204, event comment.deleted)", async () => {
    const s = await setup(h())
    const c = (await comment(h(), s)).body.data
    const reply = (await api(h()).post(`/support/comments/${c.id}/replies`, { text: "Thanks!" })).body.data
    expect((await api(h()).del(`/support/comments/${c.id}`)).status).toBe(204)
    expectError(await api(h()).get(`/support/comments/${c.id}`), 404, "not_found")
    expectError(await api(h()).get(`/support/comments/${reply.id}`), 404, "not_found")
    expect((await api(h()).get(`/events?resource_id=${c.id}&type=comment.deleted`)).body.data).toHaveLength(1)
    expectError(await api(h()).del(`/support/comments/${c.id}`), 404, "not_found")
  })

  it("access follows the product: a limited credential lists, reads and moderates its products' comments only; user.name shown (not personal data, as on users)", async () => {
    const mine = await setup(h())
    const theirs = await setup(h())
    const a = (await comment(h(), mine)).body.data
    const b = (await comment(h(), theirs)).body.data
    // Its learners are named by comments: reading users is granted apart, for every user.
    const limited = await credentialWithPolicies(h(), [
      { capabilities: ["comments.read", "comments.update", "comments.create", "comments.delete"], resources: [mine.productId] },
      { capabilities: ["users.read"] }
    ])
    const listed = ids(await api(h(), limited).get("/support/comments?limit=200"))
    expect(listed).toContain(a.id)
    expect(listed).not.toContain(b.id)
    expect((await api(h(), limited).get(`/support/comments/${a.id}`)).status).toBe(200)
    expectError(await api(h(), limited).get(`/support/comments/${b.id}`), 404, "not_found")
    expectError(await api(h(), limited).patch(`/support/comments/${b.id}`, { status: "approved" }), 404, "not_found")
    expectError(await api(h(), limited).del(`/support/comments/${b.id}`), 404, "not_found")
    expectError(await api(h(), limited).post(`/support/comments/${b.id}/replies`, { text: "x" }), 404, "not_found")
    expectError(await api(h(), limited).get(`/support/comments/${b.id}/replies`), 404, "not_found")
    expectError(await comment(h(), theirs, "x", limited), 422, "validation_failed", { field: "lesson_id", reason: "not_found" })
    expect((await comment(h(), mine, "ok", limited)).status).toBe(201)
    expect((await api(h(), limited).get(`/support/comments/${a.id}`)).body.data.user).toEqual({ id: mine.userId, name: "Bea Learner" })
    const reader = await credentialWith(h(), ["comments.read"])
    expectError(await api(h(), reader).patch(`/support/comments/${a.id}`, { status: "approved" }), 403, "permission_denied")
    expectError(await comment(h(), mine, "x", reader), 403, "permission_denied")
    expectError(await api(h(), reader).del(`/support/comments/${a.id}`), 403, "permission_denied")
    const none = await credentialWith(h(), ["products.read"])
    expectError(await api(h(), none).get("/support/comments"), 403, "permission_denied")
  })

  it("capabilities and event types; the sandbox reset empties comments", async () => {
    const capabilities = (await api(h()).get("/capabilities")).body.data.capabilities as Array<string>
    expect(capabilities).toEqual(expect.arrayContaining(["comments.read", "comments.create", "comments.update", "comments.delete"]))
    const types = ((await api(h()).get("/event-types")).body.data as Array<{ type: string }>).map((t) => t.type)
    expect(types).toEqual(expect.arrayContaining(["comment.created", "comment.updated", "comment.deleted"]))
    const s = await setup(h(), h().test)
    const c = await comment(h(), s, "sandbox", h().test)
    expect(c.status, c.text).toBe(201)
    expect((await api(h(), h().test).post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await api(h(), h().test).get(`/support/comments/${c.body.data.id}`), 404, "not_found")
    expect((await api(h(), h().test).get("/support/comments")).body.data).toEqual([])
  })
})
