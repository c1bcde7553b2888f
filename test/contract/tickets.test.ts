/**
 * Support tickets (§2.3 `ticket`, §4.3 `POST /support/tickets`, release 3.2.0) and their
 * messages: the shape, the opening message attributed to the credential, the scope of the
 * user, department and product named (422 on the field), anonymous tickets, personal data,
 * the status moves, replies keeping `replies_count` and `last_reply_at`, support switched off,
 * idempotency, `If-Match`, §8.2 limits, filters, permissions, batches and the sandbox reset.
 * Decisions: docs/support.md.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith, credentialWithPolicies, newProduct, settle } from "../support/api.js"
import { expectError } from "../support/expect.js"

let counter = 0
const unique = () => `${Date.now()}-${++counter}`

const newUser = (h: Harness, secret = h.live) =>
  created(api(h, secret).post("/users", { name: "Requester", email: `requester-${unique()}@example.com` }))
const newDepartment = (h: Harness, secret = h.live) => created(api(h, secret).post("/support/departments", { name: `Billing ${unique()}` }))

const openTicket = async (h: Harness, fields: Record<string, unknown> = {}, secret = h.live) => {
  const user = await newUser(h, secret)
  const ticket = await created(api(h, secret).post("/support/tickets", { subject: "Cannot log in", user_id: user.id, message: { text: "<p>Help</p>" }, ...fields }))
  return { user, ticket, path: `/support/tickets/${ticket.id}` }
}

const currentCredentialId = async (h: Harness, secret = h.live) => (await api(h, secret).get("/credentials/current")).body.data.id as string

const setSupport = async (h: Harness, enabled: boolean | null) => {
  const res = await api(h).patch("/settings/support", { enabled })
  expect(res.status, res.text).toBe(200)
}

eachStore("support tickets", (h) => {
  it("create: every field of §2.3, tkt_ ID, Location, ETag; the opening message is the credential's; events ticket.created and ticket_message.created", async () => {
    const user = await newUser(h())
    const department = await newDepartment(h())
    const product = await newProduct(h())
    const res = await api(h()).post("/support/tickets", {
      subject: "Refund",
      user_id: user.id,
      message: { text: "<p>I want my money back</p>" },
      department_id: department.id,
      product_id: product.id
    })
    expect(res.status, res.text).toBe(201)
    const ticket = res.body.data
    expect(Object.keys(ticket)).toEqual([
      "object", "id", "department_id", "product_id", "subject", "status", "replies_count", "last_reply_at", "user", "anonymous", "created_at", "updated_at", "deleted", "revision"
    ])
    expect(ticket).toMatchObject({
      object: "ticket",
      department_id: department.id,
      product_id: product.id,
      subject: "Refund",
      status: "open",
      replies_count: 0,
      last_reply_at: null,
      user: { id: user.id, name: "Requester", email: user.email },
      anonymous: null,
      deleted: false,
      revision: "1"
    })
    expect(ticket.id).toMatch(/^tkt_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/support/tickets/${ticket.id}`)
    expect(res.headers.get("etag")).toBe(`W/"ticket:${ticket.id}:1"`)
    expect(res.text).not.toContain("first_reply_seconds")
    const read = await api(h()).get(`/support/tickets/${ticket.id}`)
    expect(read.body.data).toEqual(ticket)

    const messages = (await api(h()).get(`/support/tickets/${ticket.id}/messages`)).body.data
    expect(messages).toHaveLength(1)
    expect(Object.keys(messages[0])).toEqual(["object", "id", "ticket_id", "text", "author", "opening", "created_at", "updated_at", "revision"])
    expect(messages[0]).toMatchObject({
      object: "ticket_message",
      ticket_id: ticket.id,
      text: "<p>I want my money back</p>",
      author: { object: "credential", id: await currentCredentialId(h()) },
      opening: true
    })
    expect(messages[0].id).toMatch(/^tkm_[0-9A-Za-z]{9}$/)
    // In the documented order on every store, nested objects too.
    expect(Object.keys(messages[0].author)).toEqual(["object", "id"])
    expect((await api(h()).get(`/events?resource_id=${ticket.id}&type=ticket.created`)).body.data).toHaveLength(1)
    expect((await api(h()).get(`/events?resource_id=${messages[0].id}&type=ticket_message.created`)).body.data).toHaveLength(1)
  })

  it("subject, user_id and message.text are required; §8.2: the message at most 512 KiB, the subject at most 250 characters; malformed IDs are 422 invalid", async () => {
    const user = await newUser(h())
    expectError(await api(h()).post("/support/tickets", { user_id: user.id, message: { text: "x" } }), 422, "validation_failed", { field: "subject", code: "required" })
    expectError(await api(h()).post("/support/tickets", { subject: "s", message: { text: "x" } }), 422, "validation_failed", { field: "user_id", code: "required" })
    expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: user.id }), 422, "validation_failed", { field: "message", code: "required" })
    expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: user.id, message: {} }), 422, "validation_failed", { field: "message.text", code: "required" })
    // A string where an object is expected: the item says which object.
    const plain = await api(h()).post("/support/tickets", { subject: "s", user_id: user.id, message: "hello" })
    expectError(plain, 422, "validation_failed", { field: "message", code: "invalid_type" })
    expect(plain.body.error.details[0].message).toContain("an object { text }")
    const big = "a".repeat(512 * 1024 + 1)
    expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: user.id, message: { text: big } }), 422, "validation_failed", { field: "message.text" })
    const fits = await api(h()).post("/support/tickets", { subject: "s", user_id: user.id, message: { text: "a".repeat(512 * 1024) } })
    expect(fits.status, fits.text.slice(0, 200)).toBe(201)
    expectError(await api(h()).post("/support/tickets", { subject: "s".repeat(251), user_id: user.id, message: { text: "x" } }), 422, "validation_failed", { field: "subject" })
    expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: "usr_!", message: { text: "x" } }), 422, "validation_failed", { field: "user_id", code: "invalid" })
    expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: user.id, message: { text: "x" }, colour: "red" }), 422, "unknown_field", { field: "colour" })
    expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: user.id, message: { text: "x" }, status: "solved" }), 422, "unknown_field", { field: "status" })
  })

  it("a user, department or product out of the credential's reach is 422 on that field (missing, trashed, or not readable with it); nothing is written", async () => {
    const user = await newUser(h())
    const department = await newDepartment(h())
    const product = await newProduct(h())
    const base = { subject: "s", user_id: user.id, message: { text: "x" } }
    expectError(await api(h()).post("/support/tickets", { ...base, user_id: "usr_000000001" }), 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expectError(await api(h()).post("/support/tickets", { ...base, department_id: "dpt_000000001" }), 422, "validation_failed", { field: "department_id", reason: "not_found" })
    expectError(await api(h()).post("/support/tickets", { ...base, product_id: "prd_000000001" }), 422, "validation_failed", { field: "product_id", reason: "not_found" })
    const trashed = await newDepartment(h())
    expect((await api(h()).del(`/support/departments/${trashed.id}`)).status).toBe(200)
    expectError(await api(h()).post("/support/tickets", { ...base, department_id: trashed.id }), 422, "validation_failed", { field: "department_id", reason: "not_found" })

    // A credential reading only another user, another department and another product.
    const otherUser = await newUser(h())
    const otherDepartment = await newDepartment(h())
    const otherProduct = await newProduct(h())
    const limited = await credentialWithPolicies(h(), [
      { capabilities: ["tickets.create", "tickets.read"] },
      { capabilities: ["users.read"], resources: [otherUser.id] },
      { capabilities: ["departments.read"], resources: [otherDepartment.id] },
      { capabilities: ["products.read"], resources: [otherProduct.id] }
    ])
    const refused = await api(h(), limited).post("/support/tickets", { ...base, department_id: department.id, product_id: product.id })
    expectError(refused, 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expectError(refused, 422, "validation_failed", { field: "department_id", reason: "not_found" })
    expectError(refused, 422, "validation_failed", { field: "product_id", reason: "not_found" })
    const allowed = await api(h(), limited).post("/support/tickets", { ...base, user_id: otherUser.id, department_id: otherDepartment.id, product_id: otherProduct.id })
    expect(allowed.status, allowed.text).toBe(201)
    // Without users.read at all, no user can be named.
    const noUsers = await credentialWith(h(), ["tickets.create"])
    expectError(await api(h(), noUsers).post("/support/tickets", base), 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expect((await api(h()).get(`/support/tickets?user_id=${user.id}`)).body.data).toEqual([])
  })

  it("anonymous tickets: user_id null with the visitor's contact; anonymous is required without a user and refused with one", async () => {
    const anonymous = { name: "Visitor", email: "visitor@example.com", whatsapp: "+5511999990000" }
    const res = await api(h()).post("/support/tickets", { subject: "Before buying", user_id: null, message: { text: "Is there a trial?" }, anonymous })
    expect(res.status, res.text).toBe(201)
    expect(res.body.data).toMatchObject({ user: null, anonymous: { document: null, email: "visitor@example.com", name: "Visitor", whatsapp: "+5511999990000" } })
    expect(JSON.stringify(res.body.data.anonymous)).toBe(JSON.stringify({ document: null, email: "visitor@example.com", name: "Visitor", whatsapp: "+5511999990000" }))
    expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: null, message: { text: "x" } }), 422, "validation_failed", {
      field: "anonymous",
      reason: "required_without_user"
    })
    const user = await newUser(h())
    expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: user.id, message: { text: "x" }, anonymous }), 422, "validation_failed", {
      field: "anonymous",
      reason: "conflicts_with_user"
    })
    expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: null, message: { text: "x" }, anonymous: { name: "V", email: "nope" } }), 422, "validation_failed", {
      field: "anonymous.email"
    })
    // The visitor's own message is by `visitor`.
    const reply = await api(h()).post(`/support/tickets/${res.body.data.id}/messages`, { text: "Thanks", from: "requester" })
    expect(reply.status, reply.text).toBe(201)
    expect(reply.body.data.author).toEqual({ object: "visitor", id: null })
  })

  it("personal data as on users: user.email and the visitor's email, document and whatsapp only with users.read_personal; names shown", async () => {
    const { ticket, user } = await openTicket(h())
    const visitor = await created(
      api(h()).post("/support/tickets", { subject: "s", user_id: null, message: { text: "x" }, anonymous: { name: "V", email: "v@example.com", document: "123" } })
    )
    const reader = await credentialWith(h(), ["tickets.read"])
    const plain = (await api(h(), reader).get(`/support/tickets/${ticket.id}`)).body.data
    expect(plain.user).toEqual({ id: user.id, name: "Requester", email: null })
    const hidden = (await api(h(), reader).get(`/support/tickets/${visitor.id}`)).body.data
    expect(hidden.anonymous).toEqual({ document: null, email: null, name: "V", whatsapp: null })
    const listed = (await api(h(), reader).get(`/support/tickets?limit=200`)).body.data
    expect(listed.find((t: any) => t.id === ticket.id).user).toEqual({ id: user.id, name: "Requester", email: null })
    const personal = await credentialWith(h(), ["tickets.read", "users.read_personal"])
    expect((await api(h(), personal).get(`/support/tickets/${ticket.id}`)).body.data.user).toEqual({ id: user.id, name: "Requester", email: user.email })
    expect((await api(h(), personal).get(`/support/tickets/${visitor.id}`)).body.data.anonymous).toMatchObject({ name: "V", email: "v@example.com", document: "123" })
    // Limited to another user: this requester stays hidden, and a visitor too.
    const other = await newUser(h())
    const limited = await credentialWithPolicies(h(), [{ capabilities: ["tickets.read"] }, { capabilities: ["users.read_personal"], resources: [other.id] }])
    expect((await api(h(), limited).get(`/support/tickets/${ticket.id}`)).body.data.user).toEqual({ id: user.id, name: "Requester", email: null })
    expect((await api(h(), limited).get(`/support/tickets/${visitor.id}`)).body.data.anonymous.email).toBeNull()
    // The ticket shows the user as they are now.
    expect((await api(h()).patch(`/users/${user.id}`, { name: "Renamed" })).status).toBe(200)
    expect((await api(h()).get(`/support/tickets/${ticket.id}`)).body.data.user.name).toBe("Renamed")
  })

  it("status moves: open ↔ pending → solved → open → closed; others are 422 invalid_transition; a closed ticket takes no change (409); If-Match", async () => {
    const { path } = await openTicket(h())
    const move = (status: string) => api(h()).patch(path, { status })
    expect((await move("pending")).body.data.status).toBe("pending")
    expect((await move("open")).body.data.status).toBe("open")
    expect((await move("solved")).body.data.status).toBe("solved")
    expectError(await move("pending"), 422, "invalid_transition", { field: "status", reason: "from_solved" })
    expect((await move("open")).body.data.status).toBe("open")
    expectError(await move("reopened"), 422, "validation_failed", { field: "status" })
    const stale = (await api(h()).get(path)).headers.get("etag")!
    expect((await move("solved")).status).toBe(200)
    expectError(await api(h()).patch(path, { status: "closed" }, { "if-match": stale }), 412, "revision_mismatch")
    const current = (await api(h()).get(path)).headers.get("etag")!
    const closed = await api(h()).patch(path, { status: "closed" }, { "if-match": current })
    expect(closed.status, closed.text).toBe(200)
    expect(closed.body.data.status).toBe("closed")
    expectError(await move("open"), 409, "state_conflict", { reason: "ticket_closed" })
    expectError(await api(h()).patch(path, { subject: "new" }), 409, "state_conflict", { reason: "ticket_closed" })
    // Trash and restore still work.
    expect((await api(h()).del(path)).body.data.deleted).toBe(true)
    expect((await api(h()).patch(path, { deleted: false })).body.data).toMatchObject({ deleted: false, status: "closed" })
    const events = (await api(h()).get(`/events?resource_id=${closed.body.data.id}&type=ticket.updated`)).body.data
    expect(events.length).toBeGreaterThanOrEqual(6)
  })

  it("PATCH subject, department and product; a department out of reach is 422 on department_id", async () => {
    const { path } = await openTicket(h())
    const department = await newDepartment(h())
    const product = await newProduct(h())
    const res = await api(h()).patch(path, { subject: "Renamed", department_id: department.id, product_id: product.id })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toMatchObject({ subject: "Renamed", department_id: department.id, product_id: product.id })
    expectError(await api(h()).patch(path, { department_id: "dpt_000000001" }), 422, "validation_failed", { field: "department_id", reason: "not_found" })
    expect((await api(h()).patch(path, { department_id: null })).body.data.department_id).toBeNull()
    expectError(await api(h()).patch(path, { user_id: "usr_000000001" }), 422, "unknown_field", { field: "user_id" })
  })

  it("replies: replies_count and last_reply_at kept with each message, a new ticket revision; a requester's message reopens a pending ticket; closed: 409", async () => {
    const { ticket, user, path } = await openTicket(h())
    const reply = await api(h()).post(`${path}/messages`, { text: "<p>Try again</p>" })
    expect(reply.status, reply.text).toBe(201)
    expect(reply.headers.get("location")).toBe(`/api/v3${path}/messages/${reply.body.data.id}`)
    expect(reply.body.data).toMatchObject({ ticket_id: ticket.id, opening: false, author: { object: "credential", id: await currentCredentialId(h()) } })
    const after = (await api(h()).get(path)).body.data
    expect(after).toMatchObject({ replies_count: 1, last_reply_at: reply.body.data.created_at, revision: "2", status: "open" })
    expect((await api(h()).patch(path, { status: "pending" })).status).toBe(200)
    const back = await api(h()).post(`${path}/messages`, { text: "Still broken", from: "requester" })
    expect(back.body.data.author).toEqual({ object: "user", id: user.id })
    const reopened = (await api(h()).get(path)).body.data
    expect(reopened).toMatchObject({ replies_count: 2, last_reply_at: back.body.data.created_at, status: "open" })
    expect((await api(h()).get(`/events?resource_id=${ticket.id}&type=ticket.updated`)).body.data[0].data.object.status).toBe("open")
    // Oldest first; -created_at newest first.
    const messages = (await api(h()).get(`${path}/messages`)).body.data
    expect(messages.map((m: any) => m.opening)).toEqual([true, false, false])
    expect((await api(h()).get(`${path}/messages?sort=-created_at`)).body.data[0].id).toBe(back.body.data.id)
    expect((await api(h()).get(`${path}/messages/${back.body.data.id}`)).body.data).toEqual(back.body.data)
    // Limits and shape.
    expectError(await api(h()).post(`${path}/messages`, { text: "a".repeat(512 * 1024 + 1) }), 422, "validation_failed", { field: "text" })
    expectError(await api(h()).post(`${path}/messages`, {}), 422, "validation_failed", { field: "text", code: "required" })
    expectError(await api(h()).post(`${path}/messages`, { text: "x", from: "bot" }), 422, "validation_failed", { field: "from" })
    expectError(await api(h()).post(`${path}/messages`, { text: "x" }, { idempotencyKey: null }), 422, "idempotency_key_required")
    // Messages are never edited nor removed.
    expect((await api(h()).patch(`${path}/messages/${back.body.data.id}`, { text: "y" })).status).toBe(405)
    expect((await api(h()).del(`${path}/messages/${back.body.data.id}`)).status).toBe(405)
    // Closed: no more messages, nothing changes.
    expect((await api(h()).patch(path, { status: "closed" })).status).toBe(200)
    expectError(await api(h()).post(`${path}/messages`, { text: "x" }), 409, "state_conflict", { reason: "ticket_closed" })
    expect((await api(h()).get(path)).body.data.replies_count).toBe(2)
  })

  it("a trashed ticket and its messages are not found; restored, they are back", async () => {
    const { path } = await openTicket(h())
    expect((await api(h()).del(path)).body.data.deleted).toBe(true)
    expectError(await api(h()).get(path), 404, "not_found")
    expectError(await api(h()).get(`${path}/messages`), 404, "not_found")
    expectError(await api(h()).post(`${path}/messages`, { text: "x" }), 404, "not_found")
    expect((await api(h()).get("/support/tickets?deleted=true&limit=200")).body.data.map((t: any) => t.id)).toContain(path.split("/").at(-1))
    expect((await api(h()).patch(path, { deleted: false })).status).toBe(200)
    expect((await api(h()).get(`${path}/messages`)).body.data).toHaveLength(1)
  })

  it("support switched off: opening a ticket and replying are 409 feature_disabled, nothing written; status changes still work", async () => {
    const { path } = await openTicket(h())
    const user = await newUser(h())
    const group = (await api(h()).get("/settings/support")).body.data
    expect(group).toMatchObject({ object: "settings", id: "support", group: "support", enabled: true, defaults: { enabled: true } })
    expectError(await api(h()).patch("/settings/support", { enabled: "no" }), 422, "validation_failed", { field: "enabled" })
    await setSupport(h(), false)
    try {
      expect((await api(h()).get("/settings/support")).body.data).toMatchObject({ group: "support", enabled: false })
      expectError(await api(h()).post("/support/tickets", { subject: "s", user_id: user.id, message: { text: "x" } }), 409, "feature_disabled")
      expectError(await api(h()).post(`${path}/messages`, { text: "x" }), 409, "feature_disabled")
      expect((await api(h()).patch(path, { status: "solved" })).status).toBe(200)
      expect((await api(h()).get(`/support/tickets?user_id=${user.id}`)).body.data).toEqual([])
      expect((await api(h()).get(path)).body.data.replies_count).toBe(0)
    } finally {
      await setSupport(h(), null)
    }
    expect((await api(h()).get("/settings/support")).body.data.enabled).toBe(true)
    expect((await api(h()).post(`${path}/messages`, { text: "x" })).status).toBe(201)
  })

  it("idempotency: the key is required; a replay answers the same ticket and writes nothing more", async () => {
    const user = await newUser(h())
    const body = { subject: "Once", user_id: user.id, message: { text: "x" } }
    expectError(await api(h()).post("/support/tickets", body, { idempotencyKey: null }), 422, "idempotency_key_required")
    const key = `tkt-${unique()}`
    const first = await api(h()).post("/support/tickets", body, { idempotencyKey: key })
    expect(first.status).toBe(201)
    const again = await api(h()).post("/support/tickets", body, { idempotencyKey: key })
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    expectError(await api(h()).post("/support/tickets", { ...body, subject: "Twice" }, { idempotencyKey: key }), 422, "idempotency_key_reused")
    expect((await api(h()).get(`/support/tickets?user_id=${user.id}`)).body.data).toHaveLength(1)
    expect((await api(h()).get(`/support/tickets/${first.body.data.id}/messages`)).body.data).toHaveLength(1)
  })

  it("list: newest first, filters by status, department, user and product, q on the subject, cursor pages", async () => {
    const department = await newDepartment(h())
    const product = await newProduct(h())
    const user = await newUser(h())
    const make = (subject: string, fields: Record<string, unknown> = {}) =>
      created(api(h()).post("/support/tickets", { subject, user_id: user.id, message: { text: "x" }, ...fields }))
    const a = await make("Alpha zebra", { department_id: department.id })
    const b = await make("Beta", { product_id: product.id })
    const c = await make("Gamma zebra", { department_id: department.id, product_id: product.id })
    expect((await api(h()).patch(`/support/tickets/${b.id}`, { status: "pending" })).status).toBe(200)
    const ids = (query: string) => api(h()).get(`/support/tickets?${query}`).then((r) => r.body.data.map((t: any) => t.id))
    expect(await ids(`user_id=${user.id}`)).toEqual([c.id, b.id, a.id])
    expect(await ids(`user_id=${user.id}&sort=created_at`)).toEqual([a.id, b.id, c.id])
    expect(await ids(`department_id=${department.id}`)).toEqual([c.id, a.id])
    expect(await ids(`product_id=${product.id}`)).toEqual([c.id, b.id])
    expect(await ids(`user_id=${user.id}&status=pending`)).toEqual([b.id])
    expect(await ids(`user_id=${user.id}&q=ZEBRA`)).toEqual([c.id, a.id])
    const first = await api(h()).get(`/support/tickets?user_id=${user.id}&limit=2`)
    expect(first.body.data.map((t: any) => t.id)).toEqual([c.id, b.id])
    const next = await api(h()).get(`/support/tickets?user_id=${user.id}&limit=2&cursor=${encodeURIComponent(first.body.page.next_cursor)}`)
    expect(next.body.data.map((t: any) => t.id)).toEqual([a.id])
    expect(next.body.page.next_cursor).toBeNull()
    expectError(await api(h()).get(`/support/tickets?status=new`), 422, "validation_failed", { parameter: "status" })
    expectError(await api(h()).get(`/support/tickets?colour=red`), 400, "unknown_parameter", { parameter: "colour" })
  })

  it("permissions: tickets.create, ticket_messages.create and tickets.update are each required; a policy limited to tickets sees only those; the support agent template", async () => {
    const { ticket, path, user } = await openTicket(h())
    const reader = await credentialWith(h(), ["tickets.read", "users.read"])
    expectError(await api(h(), reader).post("/support/tickets", { subject: "s", user_id: user.id, message: { text: "x" } }), 403, "permission_denied")
    expectError(await api(h(), reader).post(`${path}/messages`, { text: "x" }), 403, "permission_denied")
    expectError(await api(h(), reader).patch(path, { status: "solved" }), 403, "permission_denied")
    expectError(await api(h(), reader).del(path), 403, "permission_denied")
    const other = await openTicket(h())
    const scoped = await credentialWithPolicies(h(), [{ capabilities: ["tickets.read", "ticket_messages.read"], resources: [ticket.id] }])
    expect((await api(h(), scoped).get(path)).status).toBe(200)
    expect((await api(h(), scoped).get(`${path}/messages`)).status).toBe(200)
    expectError(await api(h(), scoped).get(other.path), 404, "not_found")
    expectError(await api(h(), scoped).get(`${other.path}/messages`), 404, "not_found")
    expect((await api(h(), scoped).get("/support/tickets?limit=200")).body.data.map((t: any) => t.id)).toEqual([ticket.id])
    const agent = await credentialWithPolicies(h(), [{ template: "support_agent" }])
    const made = await api(h(), agent).post("/support/tickets", { subject: "s", user_id: user.id, message: { text: "x" } })
    expect(made.status, made.text).toBe(201)
    expect((await api(h(), agent).post(`/support/tickets/${made.body.data.id}/messages`, { text: "y" })).status).toBe(201)
    const templates = (await api(h()).get("/policy-templates")).body.data
    expect(templates.find((t: any) => t.id === "support_agent").capabilities).toEqual(
      expect.arrayContaining(["tickets.create", "tickets.update", "ticket_messages.create", "departments.update", "faqs.create"])
    )
  })

  it("a batch of tickets.create writes each ticket with its opening message", async () => {
    const user = await newUser(h())
    const started = await api(h()).post("/operations", {
      type: "tickets.create",
      items: [{ key: "one", subject: "From batch", user_id: user.id, message: { text: "x" } }, { key: "two", subject: "Bad", user_id: "usr_000000001", message: { text: "x" } }]
    })
    expect(started.status, started.text).toBe(202)
    const op = await settle(h(), started.body.data.id)
    expect(op.progress).toMatchObject({ done: 1, failed: 1 })
    const made = (await api(h()).get(`/support/tickets?user_id=${user.id}`)).body.data
    expect(made).toHaveLength(1)
    expect((await api(h()).get(`/support/tickets/${made[0].id}/messages`)).body.data[0]).toMatchObject({ opening: true, text: "x" })
  })

  it("a sandbox reset empties the sandbox's tickets and their messages", async () => {
    const { path } = await openTicket(h(), {}, h().test)
    expect((await api(h(), h().test).get(path)).status).toBe(200)
    expect((await api(h(), h().test).post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await api(h(), h().test).get(path), 404, "not_found")
  })
})
