/**
 * Enrollments (release 3.2.0, open-points routes `/enrollments`, docs/learning.md): create,
 * one active per user and product, list filters, PATCH transitions, cancellation, expiry by
 * the clock through the housekeeping, permissions and idempotency.
 */
import { expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"
import { api, credentialWith } from "../support/api.js"

let counter = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now()}-${++counter}`

const user = async (h: Harness) => {
  const res = await api(h).post("/users", { name: "Ada", email: `${unique("u")}@example.com` })
  expect(res.status, res.text).toBe(201)
  return res.body.data.id as string
}

const product = async (h: Harness) => {
  const showcase = await api(h).post("/showcases", { name: "Shelf" })
  const res = await api(h).post("/products", { format: "course", name: "Course", showcase_id: showcase.body.data.id })
  expect(res.status, res.text).toBe(201)
  return res.body.data.id as string
}

const enroll = async (h: Harness, fields: Record<string, unknown>) => {
  const res = await api(h).post("/enrollments", fields)
  expect(res.status, res.text).toBe(201)
  return res.body.data as Record<string, any>
}

const eventsOf = async (h: Harness, id: string, type: string) =>
  (await api(h).get(`/events?resource_id=${id}&type=${type}`)).body.data as Array<Record<string, any>>

const ids = (res: { body: { data: ReadonlyArray<{ id: string }> } }) => res.body.data.map((e) => e.id)

eachStore("enrollments", (h) => {
  it("create: every field, active, manual, no expiry; enr_ ID, Location, ETag; the hidden key is not shown; event enrollment.created", async () => {
    const userId = await user(h())
    const productId = await product(h())
    const res = await api(h()).post("/enrollments", { user_id: userId, product_id: productId })
    expect(res.status, res.text).toBe(201)
    const data = res.body.data
    expect(Object.keys(data)).toEqual([
      "object", "id", "user_id", "product_id", "status", "source", "starts_at", "expires_at", "completed_at",
      "progress_percent", "canceled_at", "delivery_id", "created_at", "updated_at", "revision"
    ])
    expect(data).toMatchObject({
      object: "enrollment", user_id: userId, product_id: productId, status: "active", source: "manual",
      expires_at: null, completed_at: null, progress_percent: 0, canceled_at: null, revision: "1"
    })
    expect(data.starts_at).toBe(data.created_at)
    expect(data.id).toMatch(/^enr_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/enrollments/${data.id}`)
    expect(res.headers.get("etag")).toBe(`W/"enrollment:${data.id}:1"`)
    const read = await api(h()).get(`/enrollments/${data.id}`)
    expect(read.status).toBe(200)
    expect(read.body.data).toEqual(data)
    expect(read.text).not.toContain("active_key")
    expect(await eventsOf(h(), data.id, "enrollment.created")).toHaveLength(1)
  })

  it("create: starts_at, expires_at (normalized to UTC) and an open source", async () => {
    const data = await enroll(h(), {
      user_id: await user(h()),
      product_id: await product(h()),
      source: "partner_import",
      starts_at: "2026-01-01T00:00:00-03:00",
      expires_at: "2099-01-01T00:00:00+00:00"
    })
    expect(data).toMatchObject({ source: "partner_import", starts_at: "2026-01-01T03:00:00.000Z", expires_at: "2099-01-01T00:00:00.000Z" })
  })

  it("create: the user and the product must exist (422 not_found on the field); IDs, dates and source are checked", async () => {
    const userId = await user(h())
    const productId = await product(h())
    expectError(await api(h()).post("/enrollments", { user_id: "usr_000000001", product_id: productId }), 422, "validation_failed", {
      field: "user_id",
      reason: "not_found"
    })
    expectError(await api(h()).post("/enrollments", { user_id: userId, product_id: "prd_000000001" }), 422, "validation_failed", {
      field: "product_id",
      reason: "not_found"
    })
    expectError(await api(h()).post("/enrollments", { user_id: "prd_000000001", product_id: productId }), 422, "validation_failed", {
      field: "user_id",
      code: "invalid"
    })
    expectError(await api(h()).post("/enrollments", { product_id: productId }), 422, "validation_failed", { field: "user_id", code: "required" })
    expectError(await api(h()).post("/enrollments", { user_id: userId, product_id: productId, source: "Not A Word" }), 422, "validation_failed", {
      field: "source"
    })
    expectError(
      await api(h()).post("/enrollments", { user_id: userId, product_id: productId, starts_at: "2099-01-02T00:00:00Z", expires_at: "2099-01-01T00:00:00Z" }),
      422,
      "validation_failed",
      { field: "expires_at", reason: "not_after_start" }
    )
    expectError(await api(h()).post("/enrollments", { user_id: userId, product_id: productId, expires_at: "2001-01-01T00:00:00Z" }), 422, "validation_failed", {
      field: "expires_at",
      reason: "not_after_start"
    })
    expectError(await api(h()).post("/enrollments", { user_id: userId, product_id: productId, status: "expired" }), 422, "unknown_field", {
      field: "status",
      code: "unknown_field"
    })
    // Nothing was made.
    expect((await api(h()).get(`/enrollments?user_id=${userId}`)).body.data).toEqual([])
  })

  it("one ACTIVE enrollment per user and product: 409 already_exists on product_id; another product, or after a cancellation, is fine", async () => {
    const userId = await user(h())
    const productId = await product(h())
    const first = await enroll(h(), { user_id: userId, product_id: productId })
    const again = await api(h()).post("/enrollments", { user_id: userId, product_id: productId, source: "delivery" })
    expectError(again, 409, "already_exists", { field: "product_id", code: "already_exists", reason: "active_enrollment" })
    await enroll(h(), { user_id: userId, product_id: await product(h()) })
    await enroll(h(), { user_id: await user(h()), product_id: productId })
    expect((await api(h()).post(`/enrollments/${first.id}/cancellations`)).status).toBe(200)
    const second = await enroll(h(), { user_id: userId, product_id: productId })
    expect(second.id).not.toBe(first.id)
  })

  it("Idempotency-Key is required on create; the same key and body replays the enrollment", async () => {
    const userId = await user(h())
    const productId = await product(h())
    expectError(await api(h()).post("/enrollments", { user_id: userId, product_id: productId }, { idempotencyKey: null }), 422, "idempotency_key_required")
    const key = unique("k")
    const first = await api(h()).post("/enrollments", { user_id: userId, product_id: productId }, { idempotencyKey: key })
    expect(first.status).toBe(201)
    const replay = await api(h()).post("/enrollments", { user_id: userId, product_id: productId }, { idempotencyKey: key })
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.body.data.id).toBe(first.body.data.id)
    expect(ids(await api(h()).get(`/enrollments?user_id=${userId}`))).toEqual([first.body.data.id])
  })

  it("list: newest first; filters user_id, product_id[], status and date ranges; sorts; unknown parameter 400", async () => {
    const userId = await user(h())
    const [p1, p2, p3] = [await product(h()), await product(h()), await product(h())]
    const a = await enroll(h(), { user_id: userId, product_id: p1, starts_at: "2030-01-01T00:00:00Z", expires_at: "2090-01-01T00:00:00Z" })
    const b = await enroll(h(), { user_id: userId, product_id: p2, starts_at: "2031-01-01T00:00:00Z" })
    const c = await enroll(h(), { user_id: userId, product_id: p3, starts_at: "2032-01-01T00:00:00Z", expires_at: "2095-01-01T00:00:00Z" })
    await api(h()).post(`/enrollments/${b.id}/cancellations`)
    expect(ids(await api(h()).get(`/enrollments?user_id=${userId}`))).toEqual([c.id, b.id, a.id])
    expect(ids(await api(h()).get(`/enrollments?user_id=${userId}&sort=created_at`))).toEqual([a.id, b.id, c.id])
    expect(ids(await api(h()).get(`/enrollments?product_id[]=${p1}&product_id[]=${p3}&sort=created_at`))).toEqual([a.id, c.id])
    expect(ids(await api(h()).get(`/enrollments?product_id[]=${p2}`))).toEqual([b.id])
    expect(ids(await api(h()).get(`/enrollments?user_id=${userId}&status=canceled`))).toEqual([b.id])
    expect(ids(await api(h()).get(`/enrollments?user_id=${userId}&status=active&sort=created_at`))).toEqual([a.id, c.id])
    expect(ids(await api(h()).get(`/enrollments?user_id=${userId}&sort=-starts_at`))).toEqual([c.id, b.id, a.id])
    const startsRange = await api(h()).get(`/enrollments?product_id[]=${p1}&product_id[]=${p2}&product_id[]=${p3}&starts_after=2031-01-01T00:00:00Z&starts_before=2032-01-01T00:00:00Z`)
    expect(ids(startsRange)).toEqual([b.id])
    const expiring = await api(h()).get(`/enrollments?product_id[]=${p1}&product_id[]=${p3}&expires_before=2091-01-01T00:00:00Z`)
    expect(ids(expiring)).toEqual([a.id])
    expect(ids(await api(h()).get(`/enrollments?product_id[]=${p3}&expires_after=2091-01-01T00:00:00Z`))).toEqual([c.id])
    expect(ids(await api(h()).get(`/enrollments?product_id[]=${p1}&created_after=${encodeURIComponent(a.created_at)}`))).toEqual([a.id])
    expect(ids(await api(h()).get(`/enrollments?product_id[]=${p1}&created_before=${encodeURIComponent(a.created_at)}`))).toEqual([])
    // A page of one, then the next.
    const page = await api(h()).get(`/enrollments?user_id=${userId}&limit=1`)
    expect(ids(page)).toEqual([c.id])
    const next = await api(h()).get(`/enrollments?user_id=${userId}&limit=1&cursor=${encodeURIComponent(page.body.page.next_cursor)}`)
    expect(ids(next)).toEqual([b.id])
    expectError(await api(h()).get(`/enrollments?product=${p1}`), 400, "unknown_parameter", { parameter: "product" })
    expectError(await api(h()).get(`/enrollments?status=paused`), 422, "validation_failed", { parameter: "status" })
    expectError(await api(h()).get(`/enrollments?product_id[]=usr_000000001`), 422, "validation_failed", { parameter: "product_id[][0]", code: "invalid" })
    expectError(await api(h()).get(`/enrollments?starts_after=yesterday`), 422, "validation_failed", { parameter: "starts_after" })
  })

  it("PATCH expires_at; If-Match; a past expiry is 422; null clears it", async () => {
    const data = await enroll(h(), { user_id: await user(h()), product_id: await product(h()) })
    const path = `/enrollments/${data.id}`
    expectError(await api(h()).patch(path, { expires_at: "2099-01-01T00:00:00Z" }, { "if-match": `W/"enrollment:${data.id}:9"` }), 412, "revision_mismatch")
    const set = await api(h()).patch(path, { expires_at: "2099-01-01T00:00:00Z" }, { "if-match": `W/"enrollment:${data.id}:1"` })
    expect(set.status, set.text).toBe(200)
    expect(set.body.data).toMatchObject({ expires_at: "2099-01-01T00:00:00.000Z", status: "active", revision: "2" })
    expect(set.headers.get("etag")).toBe(`W/"enrollment:${data.id}:2"`)
    expectError(await api(h()).patch(path, { expires_at: "2001-01-01T00:00:00Z" }), 422, "validation_failed", { field: "expires_at", reason: "not_after_start" })
    expect((await api(h()).patch(path, { expires_at: null })).body.data.expires_at).toBeNull()
    expectError(await api(h()).patch(path, { user_id: "usr_000000001" }), 422, "unknown_field", { field: "user_id" })
    expect(await eventsOf(h(), data.id, "enrollment.updated")).toHaveLength(2)
  })

  it("PATCH status: active → expired ends access now (event enrollment.expired); expired → active reactivates; canceled is 422 invalid_transition", async () => {
    const userId = await user(h())
    const productId = await product(h())
    const data = await enroll(h(), { user_id: userId, product_id: productId })
    const path = `/enrollments/${data.id}`
    expectError(await api(h()).patch(path, { status: "canceled" }), 422, "invalid_transition", { field: "status", reason: "use_cancellations" })
    const ended = await api(h()).patch(path, { status: "expired" })
    expect(ended.status, ended.text).toBe(200)
    expect(ended.body.data.status).toBe("expired")
    expect(ended.body.data.expires_at).not.toBeNull()
    expect(await eventsOf(h(), data.id, "enrollment.expired")).toHaveLength(1)
    // Expired: a new active enrollment may be made; then this one cannot come back.
    const other = await enroll(h(), { user_id: userId, product_id: productId })
    expectError(await api(h()).patch(path, { status: "active", expires_at: null }), 409, "already_exists", { field: "product_id", reason: "active_enrollment" })
    // Its expiry has passed: reactivation needs a new one.
    await api(h()).post(`/enrollments/${other.id}/cancellations`)
    expectError(await api(h()).patch(path, { status: "active" }), 409, "state_conflict", { reason: "expires_at_passed" })
    const back = await api(h()).patch(path, { status: "active", expires_at: null })
    expect(back.status, back.text).toBe(200)
    expect(back.body.data).toMatchObject({ status: "active", expires_at: null })
    expect(await eventsOf(h(), data.id, "enrollment.reactivated")).toHaveLength(1)
    expectError(await api(h()).patch(path, { status: "paused" }), 422, "validation_failed", { field: "status" })
  })

  it("cancellation: canceled and canceled_at, event enrollment.canceled; then final (409); Idempotency-Key required and replayed; 404 unknown", async () => {
    const data = await enroll(h(), { user_id: await user(h()), product_id: await product(h()) })
    const path = `/enrollments/${data.id}/cancellations`
    expectError(await api(h()).post(path, undefined, { idempotencyKey: null }), 422, "idempotency_key_required")
    const key = unique("cancel")
    const res = await api(h()).post(path, undefined, { idempotencyKey: key })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toMatchObject({ status: "canceled", revision: "2" })
    expect(res.body.data.canceled_at).not.toBeNull()
    const replay = await api(h()).post(path, undefined, { idempotencyKey: key })
    expect(replay.status).toBe(200)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expectError(await api(h()).post(path), 409, "state_conflict", { reason: "enrollment_canceled" })
    expectError(await api(h()).patch(`/enrollments/${data.id}`, { expires_at: null }), 409, "state_conflict", { reason: "enrollment_canceled" })
    expectError(await api(h()).patch(`/enrollments/${data.id}`, { status: "active" }), 409, "state_conflict", { reason: "enrollment_canceled" })
    const events = await eventsOf(h(), data.id, "enrollment.canceled")
    expect(events).toHaveLength(1)
    expect(events[0]!.data.object).toMatchObject({ id: data.id, status: "canceled" })
    expect(events[0]!.previous_attributes).toMatchObject({ status: "active", canceled_at: null })
    const audit = (await api(h()).get(`/audit-entries?resource_id=${data.id}`)).body.data.map((e: { action: string }) => e.action)
    expect(audit).toContain("enrollment.canceled")
    expectError(await api(h()).post(`/enrollments/enr_000000001/cancellations`), 404, "not_found")
    expectError(await api(h()).get(`/enrollments/enr_000000001`), 404, "not_found")
    expectError(await api(h()).get(`/enrollments/prd_000000001`), 404, "not_found")
  })

  it("no DELETE: an enrollment is canceled, never removed (405)", async () => {
    const data = await enroll(h(), { user_id: await user(h()), product_id: await product(h()) })
    expectError(await api(h()).del(`/enrollments/${data.id}`), 405, "method_not_allowed")
  })

  it("a batch may create enrollments but never delete one: no enrollments.delete batch type or capability", async () => {
    const data = await enroll(h(), { user_id: await user(h()), product_id: await product(h()) })
    expectError(await api(h()).post("/operations", { type: "enrollments.delete", items: [{ key: "one", id: data.id }] }), 422, "operation_type_unknown", {
      field: "type"
    })
    const catalog = (await api(h()).get("/capabilities")).body.data as { capabilities: ReadonlyArray<string> }
    expect(catalog.capabilities).toEqual(expect.arrayContaining(["enrollments.read", "enrollments.create", "enrollments.update"]))
    expect(catalog.capabilities).not.toContain("enrollments.delete")
    expect((await api(h()).get(`/enrollments/${data.id}`)).body.data.status).toBe("active")
  })

  it("the sandbox reset empties the sandbox's enrollments", async () => {
    const test = (path: string, json?: unknown) => h().request("POST", `/api/v3${path}`, { secret: h().test, ...(json === undefined ? {} : { json }) })
    const userId = (await test("/users", { name: "Sandy", email: `${unique("s")}@example.com` })).body.data.id
    const showcase = (await test("/showcases", { name: "Shelf" })).body.data.id
    const productId = (await test("/products", { format: "course", name: "Course", showcase_id: showcase })).body.data.id
    const made = await test("/enrollments", { user_id: userId, product_id: productId })
    expect(made.status, made.text).toBe(201)
    expect((await test("/sandbox/resets")).status).toBe(201)
    expectError(await api(h(), h().test).get(`/enrollments/${made.body.data.id}`), 404, "not_found")
    expect((await api(h(), h().test).get(`/enrollments`)).body.data).toEqual([])
  })

  it("permissions: enrollments.read reads but cannot create, change or cancel (403 permission_denied)", async () => {
    const data = await enroll(h(), { user_id: await user(h()), product_id: await product(h()) })
    const reader = await credentialWith(h(), ["enrollments.read"])
    expect((await api(h(), reader).get(`/enrollments/${data.id}`)).status).toBe(200)
    expect((await api(h(), reader).get(`/enrollments`)).status).toBe(200)
    expectError(await api(h(), reader).post("/enrollments", { user_id: data.user_id, product_id: data.product_id }), 403, "permission_denied")
    expectError(await api(h(), reader).patch(`/enrollments/${data.id}`, { expires_at: null }), 403, "permission_denied")
    expectError(await api(h(), reader).post(`/enrollments/${data.id}/cancellations`), 403, "permission_denied")
    const none = await credentialWith(h(), ["products.read"])
    expectError(await api(h(), none).get(`/enrollments/${data.id}`), 403, "permission_denied")
    expectError(await api(h(), none).get(`/enrollments`), 403, "permission_denied")
  })

  it("tenancy: another account's enrollment is 404; the sandbox is another environment", async () => {
    const data = await enroll(h(), { user_id: await user(h()), product_id: await product(h()) })
    expectError(await api(h(), h().test).get(`/enrollments/${data.id}`), 404, "not_found")
    expect(ids(await api(h(), h().test).get(`/enrollments?user_id=${data.user_id}`))).toEqual([])
  })
})

eachStore("enrollments over time", (h) => {
  let offset = 0
  const advance = (ms: number) => {
    offset += ms
    h().advance(ms)
  }
  const serverNow = () => Date.now() + offset
  const HOUR = 3600_000

  it("a due expiry: the housekeeping turns active → expired with enrollment.expired; then a new enrollment may be made", async () => {
    const userId = await user(h())
    const productId = await product(h())
    const lasting = await enroll(h(), { user_id: await user(h()), product_id: productId })
    const data = await enroll(h(), { user_id: userId, product_id: productId, expires_at: new Date(serverNow() + HOUR).toISOString() })
    await h().housekeeping()
    expect((await api(h()).get(`/enrollments/${data.id}`)).body.data.status).toBe("active")
    advance(HOUR + 60_000)
    await h().housekeeping()
    const read = await api(h()).get(`/enrollments/${data.id}`)
    expect(read.body.data).toMatchObject({ status: "expired", revision: "2" })
    expect((await api(h()).get(`/enrollments/${lasting.id}`)).body.data.status).toBe("active")
    const events = await eventsOf(h(), data.id, "enrollment.expired")
    expect(events).toHaveLength(1)
    expect(events[0]!.previous_attributes).toMatchObject({ status: "active" })
    expect(ids(await api(h()).get(`/enrollments?user_id=${userId}&status=expired`))).toEqual([data.id])
    // A second pass changes nothing more.
    await h().housekeeping()
    expect(await eventsOf(h(), data.id, "enrollment.expired")).toHaveLength(1)
    const renewed = await enroll(h(), { user_id: userId, product_id: productId })
    expect(renewed.status).toBe("active")
  })
})
