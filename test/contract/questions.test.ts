/**
 * Lesson questions and their replies (§2.3 `question`, §3, §4.3 PATCH, open-points
 * `/products/{product_id}/questions`, docs/support.md): the shape, the learner's create, the
 * moves of the PATCH with `questions.reopen` and `questions.pin`, `If-Match`, replies keeping
 * `replies_count`, `has_draft` and the status, the settings (`enabled`, `moderation_enabled`,
 * `min_length`), personal data, limits, events, idempotency and permissions.
 */
import { expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith, credentialWithPolicies, newProduct } from "../support/api.js"

const text = (t: string) => ({ blocks: [{ type: "paragraph", text: t }] })

/** A product with a lesson, and a learner. */
const setup = async (h: Harness) => {
  const product = await newProduct(h)
  const module = await created(api(h).post(`/products/${product.id}/modules`, { name: "Part 1" }))
  const lesson = await created(api(h).post(`/products/${product.id}/lessons`, { name: "Intro", module_id: module.id }))
  const user = await created(api(h).post("/users", { name: "Ana Learner", email: `ana-${Math.random().toString(36).slice(2)}@example.com` }))
  return { productId: product.id as string, moduleId: module.id as string, lessonId: lesson.id as string, userId: user.id as string }
}

const ask = (h: Harness, s: { productId: string; lessonId: string; userId: string }, body = text("How do I start?"), secret?: string) =>
  api(h, secret).post(`/products/${s.productId}/questions`, { user_id: s.userId, lesson_id: s.lessonId, body })

/** Change the lesson question settings for the duration of `run`, then restore the defaults. */
const withSettings = async (h: Harness, values: Record<string, unknown>, run: () => Promise<void>) => {
  const set = await api(h).patch("/settings/support/questions", values)
  expect(set.status, set.text).toBe(200)
  try {
    await run()
  } finally {
    const reset = await api(h).patch("/settings/support/questions", Object.fromEntries(Object.keys(values).map((k) => [k, null])))
    expect(reset.status, reset.text).toBe(200)
  }
}

eachStore("lesson questions", (h) => {
  it("create: the §2.3 shape exactly, qst_ ID, open, Location and ETag; GET answers the same; event question.created", async () => {
    const s = await setup(h())
    const res = await ask(h(), s)
    expect(res.status, res.text).toBe(201)
    const data = res.body.data
    expect(Object.keys(data)).toEqual([
      "object", "id", "product_id", "lesson_id", "body", "status", "pinned", "has_draft", "replies_count", "user", "created_at", "updated_at", "revision"
    ])
    expect(data).toMatchObject({
      object: "question",
      product_id: s.productId,
      lesson_id: s.lessonId,
      body: text("How do I start?"),
      status: "open",
      pinned: false,
      has_draft: false,
      replies_count: 0,
      user: { id: s.userId, name: "Ana Learner" },
      revision: "1"
    })
    expect(data.id).toMatch(/^qst_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/products/${s.productId}/questions/${data.id}`)
    const read = await api(h()).get(`/products/${s.productId}/questions/${data.id}`)
    expect(read.status).toBe(200)
    expect(read.body.data).toEqual(data)
    expect(read.headers.get("etag")).toBe(`W/"question:${data.id}:1"`)
    expect(read.text).not.toContain("drafts_count")
    expect((await api(h()).get(`/events?resource_id=${data.id}&type=question.created`)).body.data).toHaveLength(1)
    const audit = (await api(h()).get(`/audit-entries?resource_id=${data.id}`)).body.data
    expect(audit.map((e: { action: string }) => e.action)).toContain("question.created")
  })

  it("create: user and lesson must exist (the lesson in the product), body required and rich (512 KiB), Idempotency-Key required and replayed", async () => {
    const s = await setup(h())
    const other = await setup(h())
    const path = `/products/${s.productId}/questions`
    expectError(await ask(h(), { ...s, lessonId: other.lessonId }), 422, "validation_failed", { field: "lesson_id", reason: "not_found" })
    expectError(await ask(h(), { ...s, userId: "usr_000000001" }), 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expectError(await api(h()).post(path, { user_id: "nope", lesson_id: s.lessonId, body: text("x") }), 422, "validation_failed", { field: "user_id", code: "invalid" })
    expectError(await api(h()).post(path, { user_id: s.userId, lesson_id: s.lessonId }), 422, "validation_failed", { field: "body", code: "required" })
    expectError(await ask(h(), s, { blocks: [] }), 422, "validation_failed", { field: "body" })
    expectError(await ask(h(), s, { blocks: [{ type: "raw", text: "<script>" }] }), 422, "validation_failed", { field: "body.blocks[0].type" })
    expectError(await ask(h(), s, text("x".repeat(600 * 1024))), 422, "validation_failed", { field: "body.blocks[0].text", code: "too_long" })
    expectError(await api(h()).post(path, { user_id: s.userId, lesson_id: s.lessonId, body: text("x"), status: "closed" }), 422, "unknown_field", { field: "status" })
    expectError(await api(h()).post(`/products/prd_000000001/questions`, { user_id: s.userId, lesson_id: s.lessonId, body: text("x") }), 404, "not_found")
    expectError(await api(h()).post(path, { user_id: s.userId, lesson_id: s.lessonId, body: text("x") }, { idempotencyKey: null }), 422, "idempotency_key_required")
    const first = await api(h()).post(path, { user_id: s.userId, lesson_id: s.lessonId, body: text("same") }, { idempotencyKey: "qst-key-1" })
    const again = await api(h()).post(path, { user_id: s.userId, lesson_id: s.lessonId, body: text("same") }, { idempotencyKey: "qst-key-1" })
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    expect((await api(h()).get(path)).body.data).toHaveLength(1)
  })

  it("PATCH: text never changes (422 unknown_field); moves of §3 with invalid_transition; If-Match 412; event question.updated", async () => {
    const s = await setup(h())
    const q = (await ask(h(), s)).body.data
    const path = `/products/${s.productId}/questions/${q.id}`
    expectError(await api(h()).patch(path, { body: text("changed") }), 422, "unknown_field", { field: "body", code: "unknown_field" })
    expectError(await api(h()).patch(path, { status: "answered" }), 422, "invalid_transition", { field: "status", reason: "from_open" })
    expectError(await api(h()).patch(path, { status: "pending" }), 422, "invalid_transition", { field: "status" })
    expectError(await api(h()).patch(path, { status: "solved" }), 422, "validation_failed", { field: "status" })
    expectError(await api(h()).patch(path, { status: "closed" }, { "if-match": `W/"question:${q.id}:7"` }), 412, "revision_mismatch")
    const closed = await api(h()).patch(path, { status: "closed" }, { "if-match": `W/"question:${q.id}:1"` })
    expect(closed.status, closed.text).toBe(200)
    expect(closed.body.data).toMatchObject({ status: "closed", revision: "2", body: text("How do I start?") })
    expect(closed.headers.get("etag")).toBe(`W/"question:${q.id}:2"`)
    const events = (await api(h()).get(`/events?resource_id=${q.id}&type=question.updated`)).body.data
    expect(events).toHaveLength(1)
    expect(events[0].previous_attributes).toMatchObject({ status: "open" })
    const hidden = await api(h()).patch(path, { status: "hidden" })
    expect(hidden.body.data.status).toBe("hidden")
    expectError(await api(h()).patch(path, { status: "closed" }), 422, "invalid_transition", { field: "status", reason: "from_hidden" })
    expect((await api(h()).patch(path, { status: "hidden" })).status).toBe(200)
  })

  it("reopen needs questions.reopen and pinned needs questions.pin (403, nothing saved); reopening returns to the queue with published replies visible", async () => {
    const s = await setup(h())
    const q = (await ask(h(), s)).body.data
    const path = `/products/${s.productId}/questions/${q.id}`
    const reply = await api(h()).post(`${path}/replies`, { body: text("Press start.") })
    expect(reply.status, reply.text).toBe(201)
    expect((await api(h()).get(path)).body.data).toMatchObject({ status: "answered", replies_count: 1 })
    const updater = await credentialWith(h(), ["questions.read", "questions.update"])
    expectError(await api(h(), updater).patch(path, { status: "open" }), 403, "permission_denied")
    expectError(await api(h(), updater).patch(path, { pinned: true }), 403, "permission_denied")
    expect((await api(h()).get(path)).body.data).toMatchObject({ status: "answered", pinned: false })
    // Closing needs questions.update only.
    expect((await api(h(), updater).patch(path, { status: "closed" })).body.data.status).toBe("closed")
    const reopener = await credentialWith(h(), ["questions.read", "questions.update", "questions.reopen"])
    const reopened = await api(h(), reopener).patch(path, { status: "open" })
    expect(reopened.status, reopened.text).toBe(200)
    expect(reopened.body.data).toMatchObject({ status: "open", replies_count: 1 })
    const queue = (await api(h()).get(`/products/${s.productId}/questions?status=open`)).body.data
    expect(queue.map((x: { id: string }) => x.id)).toEqual([q.id])
    const replies = (await api(h()).get(`${path}/replies`)).body.data
    expect(replies).toHaveLength(1)
    expect(replies[0]).toMatchObject({ status: "published", body: text("Press start.") })
    const pinner = await credentialWith(h(), ["questions.read", "questions.update", "questions.pin"])
    const pinned = await api(h(), pinner).patch(path, { pinned: true })
    expect(pinned.body.data.pinned).toBe(true)
    expect((await api(h()).get(`/products/${s.productId}/questions?pinned=true`)).body.data.map((x: { id: string }) => x.id)).toEqual([q.id])
    expect((await api(h()).get(`/products/${s.productId}/questions?pinned=false`)).body.data).toEqual([])
    // Without questions.update nothing changes at all.
    const pinOnly = await credentialWith(h(), ["questions.read", "questions.pin"])
    expectError(await api(h(), pinOnly).patch(path, { pinned: false }), 403, "permission_denied")
  })

  it("replies: qrp_ shape, drafts set has_draft, publishing counts; a learner's follow-up reopens an answered question; a published reply stays published", async () => {
    const s = await setup(h())
    const q = (await ask(h(), s)).body.data
    const path = `/products/${s.productId}/questions/${q.id}`
    const draft = await api(h()).post(`${path}/replies`, { body: text("Working on it"), status: "draft" })
    expect(draft.status, draft.text).toBe(201)
    expect(Object.keys(draft.body.data)).toEqual(["object", "id", "question_id", "product_id", "body", "status", "user", "published_at", "created_at", "updated_at", "revision"])
    expect(draft.body.data).toMatchObject({ object: "question_reply", question_id: q.id, product_id: s.productId, status: "draft", user: null, published_at: null })
    expect(draft.body.data.id).toMatch(/^qrp_[0-9A-Za-z]{9}$/)
    expect(draft.headers.get("location")).toBe(`/api/v3${path}/replies/${draft.body.data.id}`)
    expect((await api(h()).get(path)).body.data).toMatchObject({ status: "open", has_draft: true, replies_count: 0, revision: "2" })
    const published = await api(h()).patch(`${path}/replies/${draft.body.data.id}`, { status: "published" })
    expect(published.status, published.text).toBe(200)
    expect(typeof published.body.data.published_at).toBe("string")
    expect((await api(h()).get(path)).body.data).toMatchObject({ status: "answered", has_draft: false, replies_count: 1 })
    expectError(await api(h()).patch(`${path}/replies/${draft.body.data.id}`, { status: "draft" }), 422, "invalid_transition", { field: "status", reason: "from_published" })
    const followUp = await api(h()).post(`${path}/replies`, { body: text("Still stuck"), user_id: s.userId })
    expect(followUp.body.data.user).toEqual({ id: s.userId, name: "Ana Learner" })
    expect((await api(h()).get(path)).body.data).toMatchObject({ status: "open", replies_count: 2 })
    expect((await api(h()).get(`${path}/replies?status=draft`)).body.data).toEqual([])
    expect((await api(h()).get(`${path}/replies`)).body.data.map((r: { id: string }) => r.id)).toEqual([draft.body.data.id, followUp.body.data.id])
    const removed = await api(h()).del(`${path}/replies/${followUp.body.data.id}`)
    expect(removed.status).toBe(204)
    expect((await api(h()).get(path)).body.data.replies_count).toBe(1)
    expect((await api(h()).get(`/events?resource_id=${followUp.body.data.id}&type=question_reply.deleted`)).body.data).toHaveLength(1)
    expectError(await api(h()).post(`${path}/replies`, { body: text("x"), user_id: "usr_000000001" }), 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expectError(await api(h()).get(`/products/${s.productId}/questions/qst_000000001/replies`), 404, "not_found")
  })

  it("DELETE removes the question and its replies (204, event question.deleted)", async () => {
    const s = await setup(h())
    const q = (await ask(h(), s)).body.data
    const path = `/products/${s.productId}/questions/${q.id}`
    const reply = (await api(h()).post(`${path}/replies`, { body: text("Answer") })).body.data
    const removed = await api(h()).del(path)
    expect(removed.status).toBe(204)
    expectError(await api(h()).get(path), 404, "not_found")
    expectError(await api(h()).get(`${path}/replies/${reply.id}`), 404, "not_found")
    expect(await h().storedRecord({ accountId: h().account.account.id, environment: "production" }, "question_reply", reply.id)).toBeUndefined()
    expect((await api(h()).get(`/events?resource_id=${q.id}&type=question.deleted`)).body.data).toHaveLength(1)
    expectError(await api(h()).del(path), 404, "not_found")
  })

  it("settings: enabled false makes asking, a learner's reply and reopening 409 feature_disabled; moderation_enabled starts pending; min_length", async () => {
    const s = await setup(h())
    const q = (await ask(h(), s)).body.data
    const path = `/products/${s.productId}/questions/${q.id}`
    await withSettings(h(), { enabled: false }, async () => {
      expectError(await ask(h(), s), 409, "feature_disabled")
      expectError(await api(h()).post(`${path}/replies`, { body: text("me too"), user_id: s.userId }), 409, "feature_disabled")
      expect((await api(h()).post(`${path}/replies`, { body: text("Answer from the team") })).status).toBe(201)
      expect((await api(h()).patch(path, { status: "closed" })).status).toBe(200)
      expect((await api(h()).patch(path, { pinned: true })).status).toBe(200)
      expectError(await api(h()).patch(path, { status: "open" }), 409, "feature_disabled")
    })
    await withSettings(h(), { moderation_enabled: true, min_length: 10 }, async () => {
      expectError(await ask(h(), s, text("<b>short</b>")), 422, "validation_failed", { field: "body", reason: "below_min_length" })
      const pending = await ask(h(), s, text("A question long enough"))
      expect(pending.body.data.status).toBe("pending")
      const q2 = `/products/${s.productId}/questions/${pending.body.data.id}`
      expectError(await api(h()).patch(q2, { status: "closed" }), 422, "invalid_transition", { field: "status", reason: "from_pending" })
      expect((await api(h()).get(`/products/${s.productId}/questions?status=pending`)).body.data.map((x: { id: string }) => x.id)).toEqual([pending.body.data.id])
      expect((await api(h()).patch(q2, { status: "open" })).body.data.status).toBe("open")
    })
  })

  it("list: newest first, sort=created_at oldest first, filters and cursors; product scope; user.name shown with questions.read (not personal data, as on users)", async () => {
    const s = await setup(h())
    const lesson2 = await created(api(h()).post(`/products/${s.productId}/lessons`, { name: "Two", module_id: s.moduleId }))
    const a = (await ask(h(), s)).body.data
    const b = (await ask(h(), { ...s, lessonId: lesson2.id })).body.data
    const c = (await ask(h(), s)).body.data
    const path = `/products/${s.productId}/questions`
    expect((await api(h()).get(path)).body.data.map((x: { id: string }) => x.id)).toEqual([c.id, b.id, a.id])
    expect((await api(h()).get(`${path}?sort=created_at`)).body.data.map((x: { id: string }) => x.id)).toEqual([a.id, b.id, c.id])
    expect((await api(h()).get(`${path}?lesson_id=${lesson2.id}`)).body.data.map((x: { id: string }) => x.id)).toEqual([b.id])
    expect((await api(h()).get(`${path}?user_id=${s.userId}&limit=2`)).body.data).toHaveLength(2)
    const first = await api(h()).get(`${path}?limit=2`)
    const next = await api(h()).get(`${path}?limit=2&cursor=${encodeURIComponent(first.body.page.next_cursor)}`)
    expect(next.body.data.map((x: { id: string }) => x.id)).toEqual([a.id])
    expectError(await api(h()).get(`${path}?sort=status`), 422, "validation_failed", { parameter: "sort" })
    expectError(await api(h()).get(`${path}?text=x`), 400, "unknown_parameter")
    const reader = await credentialWith(h(), ["questions.read"])
    const read = await api(h(), reader).get(`${path}/${a.id}`)
    expect(read.body.data.user).toEqual({ id: s.userId, name: "Ana Learner" })
    expect((await api(h(), reader).get(path)).body.data[0].user.name).toBe("Ana Learner")
    const other = await setup(h())
    // The learner asking is named by the question: reading users is granted apart, for every user.
    const limited = await credentialWithPolicies(h(), [{ capabilities: ["questions.read", "questions.create"], resources: [other.productId] }, { capabilities: ["users.read"] }])
    expectError(await api(h(), limited).get(`${path}/${a.id}`), 404, "not_found")
    expectError(await api(h(), limited).get(path), 404, "not_found")
    expect((await ask(h(), other, text("Mine"), limited)).status).toBe(201)
    const none = await credentialWith(h(), ["products.read"])
    expectError(await api(h(), none).get(path), 403, "permission_denied")
    expectError(await ask(h(), s, text("x"), reader), 403, "permission_denied")
    expectError(await api(h(), reader).del(`${path}/${a.id}`), 403, "permission_denied")
  })

  it("capabilities, policy templates, event types; the sandbox reset empties questions", async () => {
    const capabilities = (await api(h()).get("/capabilities")).body.data.capabilities as Array<string>
    for (const name of ["questions.read", "questions.create", "questions.update", "questions.delete", "questions.reopen", "questions.pin"]) {
      expect(capabilities).toContain(name)
    }
    expect(capabilities.filter((c) => c.startsWith("question_replies."))).toEqual([])
    const agent = ((await api(h()).get("/policy-templates")).body.data as Array<{ id: string; capabilities: Array<string> }>).find((t) => t.id === "support_agent")!
    expect(agent.capabilities).toEqual(expect.arrayContaining(["questions.reopen", "questions.pin", "questions.update"]))
    const types = ((await api(h()).get("/event-types")).body.data as Array<{ type: string }>).map((t) => t.type)
    expect(types).toEqual(expect.arrayContaining(["question.created", "question.updated", "question.deleted", "question_reply.created", "question_reply.updated", "question_reply.deleted"]))
    const s = await setupIn(h(), h().test)
    const q = await ask(h(), s, text("sandbox question"), h().test)
    expect(q.status, q.text).toBe(201)
    expect((await api(h(), h().test).post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await api(h(), h().test).get(`/products/${s.productId}/questions/${q.body.data.id}`), 404, "not_found")
  })
})

/** `setup` in the environment of `secret`. */
const setupIn = async (h: Harness, secret: string) => {
  const product = await newProduct(h, secret)
  const module = await created(api(h, secret).post(`/products/${product.id}/modules`, { name: "Part 1" }))
  const lesson = await created(api(h, secret).post(`/products/${product.id}/lessons`, { name: "Intro", module_id: module.id }))
  const user = await created(api(h, secret).post("/users", { name: "Sandy", email: `s-${Math.random().toString(36).slice(2)}@example.com` }))
  return { productId: product.id as string, lessonId: lesson.id as string, userId: user.id as string }
}
