/**
 * `GET /reports/support` (§4.4): the support desk per department, computed by the store, checked
 * against tickets, statuses and replies the test makes in an emptied sandbox: counts by status,
 * opened, solved and replies in a period, the average first-reply time (the server's clock moved
 * forward between opening and replying), pages, the catalog entry, the empty range, permissions.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith } from "../support/api.js"
import { expectError } from "../support/expect.js"

let counter = 0

const desk = async (h: Harness) => {
  const client = api(h, h.test)
  expect((await client.post("/sandbox/resets")).status).toBeLessThan(300)
  const user = await created(client.post("/users", { name: "Requester", email: `r-${Date.now()}-${++counter}@example.com` }))
  const a = await created(client.post("/support/departments", { name: "Billing" }))
  const b = await created(client.post("/support/departments", { name: "Technical" }))
  const open = (department: string | null) =>
    created(client.post("/support/tickets", { subject: "s", user_id: user.id, message: { text: "x" }, ...(department ? { department_id: department } : {}) }))
  return { client, user, a, b, open }
}

eachStore("support report", (h) => {
  it("per department: counts by status now, opened, solved and replies in the period, the average first agent reply; trashed tickets left out", async () => {
    const { client, a, b, open } = await desk(h())
    const start = new Date(Date.now() - 60_000).toISOString()
    const t1 = await open(a.id)
    const t2 = await open(a.id)
    const t3 = await open(null)
    const t4 = await open(b.id)
    const t5 = await open(a.id)
    let moved = 0
    try {
      h().advance(100_000)
      moved += 100_000
      const r1 = await created(client.post(`/support/tickets/${t1.id}/messages`, { text: "agent" }))
      h().advance(100_000)
      moved += 100_000
      const r2 = await created(client.post(`/support/tickets/${t2.id}/messages`, { text: "agent" }))
      expect((await client.post(`/support/tickets/${t3.id}/messages`, { text: "me again", from: "requester" })).status).toBe(201)
      expect((await client.post(`/support/tickets/${t5.id}/messages`, { text: "agent" })).status).toBe(201)
      expect((await client.patch(`/support/tickets/${t1.id}`, { status: "solved" })).status).toBe(200)
      expect((await client.patch(`/support/tickets/${t1.id}`, { status: "closed" })).status).toBe(200)
      expect((await client.patch(`/support/tickets/${t2.id}`, { status: "solved" })).status).toBe(200)
      expect((await client.patch(`/support/tickets/${t4.id}`, { status: "pending" })).status).toBe(200)
      expect((await client.del(`/support/tickets/${t5.id}`)).status).toBe(200)

      const res = await client.get("/reports/support")
      expect(res.status, res.text).toBe(200)
      const rows = res.body.data
      expect(rows.map((r: any) => r.department_id)).toEqual([null, a.id, b.id])
      expect(Object.keys(rows[0])).toEqual([
        "department_id", "department_name", "open", "pending", "solved", "closed", "opened", "solved_in_period", "replies", "average_first_reply_seconds"
      ])
      expect(rows[0]).toEqual({
        department_id: null, department_name: null, open: 1, pending: 0, solved: 0, closed: 0, opened: 1, solved_in_period: 0, replies: 1, average_first_reply_seconds: null
      })
      const { average_first_reply_seconds: average, ...billing } = rows[1]
      // Replies are the work done in the period: the reply to t5, trashed since, still counts.
      expect(billing).toEqual({ department_id: a.id, department_name: "Billing", open: 0, pending: 0, solved: 1, closed: 1, opened: 2, solved_in_period: 2, replies: 3 })
      // t1 answered after about 100 s, t2 after about 200 s (the trashed t5 does not count).
      const seconds = (ticket: any, reply: any) => Math.round((Date.parse(reply.created_at) - Date.parse(ticket.created_at)) / 1000)
      expect(average).toBe((seconds(t1, r1) + seconds(t2, r2)) / 2)
      expect(average).toBeGreaterThanOrEqual(150)
      expect(rows[2]).toEqual({
        department_id: b.id, department_name: "Technical", open: 0, pending: 1, solved: 0, closed: 0, opened: 1, solved_in_period: 0, replies: 0, average_first_reply_seconds: null
      })
      expect(res.body.page).toEqual({ limit: 50, next_cursor: null, prev_cursor: null })

      // A period after everything: only the counts by status remain.
      const later = new Date(Date.now() + moved + 3_600_000).toISOString()
      const empty = (await client.get(`/reports/support?occurred_after=${encodeURIComponent(later)}`)).body.data
      expect(empty[1]).toMatchObject({ solved: 1, closed: 1, opened: 0, solved_in_period: 0, replies: 0, average_first_reply_seconds: null })
      // A period holding the openings but ending before the replies and solutions.
      const beforeReplies = new Date(Date.now() + 50_000).toISOString()
      const early = (await client.get(`/reports/support?occurred_after=${encodeURIComponent(start)}&occurred_before=${encodeURIComponent(beforeReplies)}`)).body.data
      expect(early[1]).toMatchObject({ opened: 2, solved_in_period: 0, replies: 0 })
      expect(early[0]).toMatchObject({ opened: 1, replies: 0 })
      // A reopened ticket's solution is no longer counted.
      expect((await client.patch(`/support/tickets/${t2.id}`, { status: "open" })).status).toBe(200)
      expect((await client.get("/reports/support")).body.data[1]).toMatchObject({ open: 1, solved: 0, solved_in_period: 1 })
    } finally {
      h().advance(-moved)
    }
  })

  it("pages by department, forward only; a cursor bound to its period; an empty period is 422; the catalog lists the report", async () => {
    const { client, a, b, open } = await desk(h())
    await open(null)
    await open(a.id)
    await open(b.id)
    const first = await client.get("/reports/support?limit=1")
    expect(first.body.data.map((r: any) => r.department_id)).toEqual([null])
    const second = await client.get(`/reports/support?limit=1&cursor=${encodeURIComponent(first.body.page.next_cursor)}`)
    expect(second.body.data.map((r: any) => r.department_id)).toEqual([a.id])
    const third = await client.get(`/reports/support?limit=1&cursor=${encodeURIComponent(second.body.page.next_cursor)}`)
    expect(third.body.data.map((r: any) => r.department_id)).toEqual([b.id])
    expect(third.body.page.next_cursor).toBeNull()
    expectError(
      await client.get(`/reports/support?limit=1&occurred_after=2020-01-01T00:00:00Z&cursor=${encodeURIComponent(first.body.page.next_cursor)}`),
      400,
      "invalid_cursor"
    )
    expectError(
      await client.get("/reports/support?occurred_after=2030-01-01T00:00:00Z&occurred_before=2029-01-01T00:00:00Z"),
      422,
      "validation_failed",
      { parameter: "occurred_before", reason: "empty_range" }
    )
    expectError(await client.get("/reports/support?occurred_after=yesterday"), 422, "validation_failed", { parameter: "occurred_after" })
    expectError(await client.get("/reports/support?status=open"), 400, "unknown_parameter", { parameter: "status" })
    const catalog = (await client.get("/reports")).body.data
    const entry = catalog.find((r: any) => r.id === "support")
    expect(entry).toMatchObject({ path: "/reports/support", freshness: "live", paginated: true, source: ["ticket", "ticket_message", "department"] })
    expect(entry.columns.map((c: any) => c.name)).toEqual([
      "department_id", "department_name", "open", "pending", "solved", "closed", "opened", "solved_in_period", "replies", "average_first_reply_seconds"
    ])
    expect(entry.filters.map((f: any) => f.name)).toEqual(["occurred_after", "occurred_before", "limit", "cursor"])
  })

  it("needs reports.read", async () => {
    const agent = await credentialWith(h(), ["tickets.read"])
    expectError(await api(h(), agent).get("/reports/support"), 403, "permission_denied")
    const reporter = await credentialWith(h(), ["reports.read"])
    expect((await api(h(), reporter).get("/reports/support")).status).toBe(200)
  })
})
