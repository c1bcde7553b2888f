/**
 * Email, for real (issue 14; docs/email.md): the access email of `POST /users/{user_id}/access-emails`
 * and the ticket reply notification go through a REAL SMTP server started here (the
 * `smtp-server` package), on the server's `SmtpMailer` (nodemailer); what arrived (recipient,
 * subject, body, Message-ID) is read from it. A 5xx of that server is a bounce in
 * `GET /reports/email-bounces`; a 4xx is retried; the same email within the window is 409
 * `email_recently_sent`; permissions, validation, idempotency, sandbox reset.
 *
 * Each test uses addresses of its own; the SMTP server's answer is chosen by the address:
 * `bounce-…` is refused with 550 5.1.1, an address in `deferred` with 451 4.3.0.
 */
import { SmtpMailer } from "@syllabus/http"
import { Layer } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { api, created, credentialWith, credentialWithPolicies, newProduct } from "../support/api.js"
import { eventually } from "../support/eventually.js"
import { expectError } from "../support/expect.js"
import { eachStore, freshKey, type Harness } from "../support/harness.js"
import { type SmtpTestServer, startSmtpServer } from "../support/smtp.js"

const MINUTE = 60_000

// ---------------------------------------------------------------------------------------
// A real SMTP server

const deferred = new Set<string>()
let smtp: SmtpTestServer

beforeAll(async () => {
  smtp = await startSmtpServer((to) =>
    to.startsWith("bounce-")
      ? { code: 550, message: `5.1.1 <${to}>: Recipient address rejected: User unknown` }
      : deferred.has(to)
        ? { code: 451, message: "4.3.0 Mailbox temporarily unavailable, try again later" }
        : undefined
  )
})

afterAll(async () => {
  await smtp.close()
})

/** The server's mailer: SMTP to the test's server, plain (a local relay), built when the harness starts. */
const mailer = Layer.suspend(() => SmtpMailer({ host: "127.0.0.1", port: smtp.port, tls: "off", from: "Syllabus School <school@example.test>" }))

const arrivedFor = (address: string) => smtp.arrivedFor(address)

let counter = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now()}-${++counter}@example.test`

const newUser = async (h: Harness, email: string, secret: string = h.live, name = "Ana Lima") =>
  created(api(h, secret).post("/users", { name, email }))

/** The message once it has left `queued`. */
const settled = async (h: Harness, userId: string, emailId: string, secret: string = h.live) =>
  eventually(async () => {
    const res = await api(h, secret).get(`/users/${userId}/access-emails/${emailId}`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.status).not.toBe("queued")
    return res.body.data
  })

eachStore(
  "email through a real SMTP server",
  (h) => {
    it("POST /users/{user_id}/access-emails: 202 with the queued message and Location; the mail arrives (recipient, subject, body, Message-ID); the status becomes sent", async () => {
      const email = unique("learner")
      const user = await newUser(h(), email)
      const product = await newProduct(h(), h().live, { name: "Watercolor Basics" })
      const res = await api(h()).post(`/users/${user.id}/access-emails`, { product_id: product.id })
      expect(res.status, res.text).toBe(202)
      expect(res.headers.get("location")).toBe(`/api/v3/users/${user.id}/access-emails/${res.body.data.id}`)
      expect(res.body.data).toMatchObject({
        object: "email_message",
        kind: "access",
        user_id: user.id,
        product_id: product.id,
        ticket_id: null,
        to: email,
        subject: "Your access to Watercolor Basics",
        status: "queued",
        attempt_count: 0,
        sent_at: null
      })
      expect(res.body.data.id).toMatch(/^eml_/)
      const done = await settled(h(), user.id, res.body.data.id)
      expect(done).toMatchObject({ status: "sent", attempt_count: 1, last_error: null, next_attempt_at: null })
      expect(typeof done.sent_at).toBe("string")
      const [mail, ...more] = arrivedFor(email)
      expect(more).toEqual([])
      expect(mail!.to).toEqual([email])
      expect(mail!.from).toBe("school@example.test")
      expect(mail!.subject).toBe("Your access to Watercolor Basics")
      expect(mail!.messageId).toBe(`<${res.body.data.id}@syllabus>`)
      expect(mail!.body).toContain("Hello Ana Lima,")
      expect(mail!.body).toContain("You have access to Watercolor Basics")
      // Events: queued, then sent; never the address.
      const events = (await api(h()).get(`/events?resource_id=${res.body.data.id}`)).body.data
      expect(events.map((e: any) => e.type).sort()).toEqual(["email_message.queued", "email_message.sent"])
      for (const event of events) expect(event.data.object.to).toBeNull()
    })

    it("the same email to the same address within 10 minutes is 409 email_recently_sent; after the window it goes again", async () => {
      const email = unique("again")
      const user = await newUser(h(), email)
      const first = await api(h()).post(`/users/${user.id}/access-emails`, {})
      expect(first.status, first.text).toBe(202)
      expect(first.body.data.subject).toMatch(/^Your access to /)
      // Whatever the product: the same kind to the same address.
      const product = await newProduct(h())
      expectError(await api(h()).post(`/users/${user.id}/access-emails`, { product_id: product.id }), 409, "email_recently_sent", { reason: "resend_window" })
      // Another user (another address) is not held back.
      const other = await newUser(h(), unique("other"))
      expect((await api(h()).post(`/users/${other.id}/access-emails`, {})).status).toBe(202)
      await settled(h(), user.id, first.body.data.id)
      h().advance(10 * MINUTE + 1000)
      try {
        const again = await api(h()).post(`/users/${user.id}/access-emails`, {})
        expect(again.status, again.text).toBe(202)
        await settled(h(), user.id, again.body.data.id)
        expect(arrivedFor(email)).toHaveLength(2)
      } finally {
        h().advance(-(10 * MINUTE + 1000))
      }
    })

    it("two concurrent sends of the same email: one is queued, the other is 409 email_recently_sent; one mail arrives", async () => {
      const email = unique("race")
      const user = await newUser(h(), email)
      const answers = await Promise.all([0, 1, 2].map(() => api(h()).post(`/users/${user.id}/access-emails`, {})))
      const statuses = answers.map((r) => r.status).sort()
      expect(statuses, answers.map((r) => r.text).join("\n")).toEqual([202, 409, 409])
      for (const r of answers.filter((a) => a.status === 409)) expectError(r, 409, "email_recently_sent")
      const queued = answers.find((r) => r.status === 202)!
      await settled(h(), user.id, queued.body.data.id)
      await new Promise((r) => setTimeout(r, 300))
      expect(arrivedFor(email)).toHaveLength(1)
    })

    it("idempotency: a retry with the same key answers the same message (Idempotent-Replayed) and one mail arrives; no key is 422", async () => {
      const email = unique("idem")
      const user = await newUser(h(), email)
      const key = freshKey()
      const first = await api(h()).post(`/users/${user.id}/access-emails`, {}, { idempotencyKey: key })
      expect(first.status, first.text).toBe(202)
      const replay = await api(h()).post(`/users/${user.id}/access-emails`, {}, { idempotencyKey: key })
      expect(replay.status, replay.text).toBe(202)
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
      expect(replay.body.data.id).toBe(first.body.data.id)
      expectError(await api(h()).post(`/users/${user.id}/access-emails`, { product_id: "prd_000000001" }, { idempotencyKey: key }), 422, "idempotency_key_reused")
      expectError(await api(h()).post(`/users/${user.id}/access-emails`, {}, { idempotencyKey: null }), 422, "idempotency_key_required")
      await settled(h(), user.id, first.body.data.id)
      await new Promise((r) => setTimeout(r, 500))
      expect(arrivedFor(email)).toHaveLength(1)
    })

    it("a 5xx answer is a bounce: the message bounced, the bounce in GET /reports/email-bounces, the address suppressed until the bounce is ignored", async () => {
      const email = unique("bounce")
      const user = await newUser(h(), email)
      const sent = await api(h()).post(`/users/${user.id}/access-emails`, {})
      expect(sent.status, sent.text).toBe(202)
      const done = await settled(h(), user.id, sent.body.data.id)
      expect(done).toMatchObject({ status: "bounced", attempt_count: 1, sent_at: null, next_attempt_at: null })
      expect(done.last_error).toMatchObject({ smtp_code: 550, enhanced_code: "5.1.1" })
      // The server's answer is kept masked: no address in it.
      expect(done.last_error.message).not.toContain("@example.test")
      expect(done.bounce_id).toMatch(/^ebn_/)
      expect(arrivedFor(email)).toEqual([])

      const report = await api(h()).get("/reports/email-bounces?status=active")
      expect(report.status, report.text).toBe(200)
      const row = report.body.data.find((b: any) => b.id === done.bounce_id)
      expect(row).toMatchObject({
        object: "email_bounce",
        email_id: sent.body.data.id,
        kind: "access",
        user_id: user.id,
        email,
        smtp_code: 550,
        enhanced_code: "5.1.1",
        status: "active",
        ignored_at: null,
        revision: "1"
      })
      expect(typeof row.bounced_at).toBe("string")
      // Suppressed: the address is not mailed again while the bounce is active.
      h().advance(10 * MINUTE + 1000)
      try {
        expectError(await api(h()).post(`/users/${user.id}/access-emails`, {}), 409, "state_conflict", { reason: "recipient_bounced" })
        // Ignore it (If-Match: a stale revision is 412).
        expectError(await api(h()).patch(`/reports/email-bounces/${row.id}`, { status: "ignored" }, { "if-match": `W/"email_bounce:${row.id}:99"` }), 412, "revision_mismatch")
        // The ETag is built from what the representation shows (§2.1: an editable resource carries `revision`).
        const ignored = await api(h()).patch(`/reports/email-bounces/${row.id}`, { status: "ignored" }, { "if-match": `W/"email_bounce:${row.id}:${row.revision}"` })
        expect(ignored.status, ignored.text).toBe(200)
        expect(ignored.body.data).toMatchObject({ id: row.id, status: "ignored", revision: "2" })
        expect(typeof ignored.body.data.ignored_at).toBe("string")
        expect(ignored.headers.get("etag")).toBe(`W/"email_bounce:${row.id}:2"`)
        // Again: no change (the same bounce, the same ETag), no second event.
        const ignoredAgain = await api(h()).patch(`/reports/email-bounces/${row.id}`, { status: "ignored" })
        expect(ignoredAgain.status, ignoredAgain.text).toBe(200)
        expect(ignoredAgain.body.data).toEqual(ignored.body.data)
        expect(ignoredAgain.headers.get("etag")).toBe(`W/"email_bounce:${row.id}:2"`)
        const events = (await api(h()).get(`/events?resource_id=${row.id}`)).body.data.map((e: any) => e.type).sort()
        expect(events).toEqual(["email_bounce.created", "email_bounce.ignored"])
        expect((await api(h()).get("/reports/email-bounces?status=active")).body.data.some((b: any) => b.id === row.id)).toBe(false)
        expect((await api(h()).get("/reports/email-bounces?status=ignored")).body.data.some((b: any) => b.id === row.id)).toBe(true)
        // Mail may go to the address again (and bounces again: a new bounce).
        const retry = await api(h()).post(`/users/${user.id}/access-emails`, {})
        expect(retry.status, retry.text).toBe(202)
        const again = await settled(h(), user.id, retry.body.data.id)
        expect(again.status).toBe("bounced")
        expect(again.bounce_id).not.toBe(row.id)
      } finally {
        h().advance(-(10 * MINUTE + 1000))
      }
    })

    it("a 4xx answer is retried with back-off (1 min, then 5 min) and never a bounce; once the server takes it, it is sent", async () => {
      const email = unique("later")
      deferred.add(email)
      const user = await newUser(h(), email)
      const res = await api(h()).post(`/users/${user.id}/access-emails`, {})
      expect(res.status, res.text).toBe(202)
      const id = res.body.data.id
      const firstTry = await eventually(async () => {
        const data = (await api(h()).get(`/users/${user.id}/access-emails/${id}`)).body.data
        expect(data.attempt_count).toBe(1)
        return data
      })
      expect(firstTry).toMatchObject({ status: "queued", bounce_id: null })
      expect(firstTry.last_error).toMatchObject({ smtp_code: 451, enhanced_code: "4.3.0" })
      expect(Date.parse(firstTry.next_attempt_at) - Date.parse(firstTry.updated_at)).toBe(MINUTE)
      // Not before its time.
      await new Promise((r) => setTimeout(r, 600))
      expect((await api(h()).get(`/users/${user.id}/access-emails/${id}`)).body.data.attempt_count).toBe(1)
      let moved = 0
      try {
        h().advance(MINUTE + 1000)
        moved += MINUTE + 1000
        const secondTry = await eventually(async () => {
          const data = (await api(h()).get(`/users/${user.id}/access-emails/${id}`)).body.data
          expect(data.attempt_count).toBe(2)
          return data
        })
        expect(Date.parse(secondTry.next_attempt_at) - Date.parse(secondTry.updated_at)).toBe(5 * MINUTE)
        deferred.delete(email)
        h().advance(5 * MINUTE + 1000)
        moved += 5 * MINUTE + 1000
        const done = await settled(h(), user.id, id)
        expect(done).toMatchObject({ status: "sent", attempt_count: 3, last_error: null })
        expect(arrivedFor(email)).toHaveLength(1)
        expect((await api(h()).get("/reports/email-bounces")).body.data.some((b: any) => b.email_id === id)).toBe(false)
      } finally {
        deferred.delete(email)
        h().advance(-moved)
      }
    })

    it("a reply of an agent to a ticket is emailed to the requester; the requester's own message is not", async () => {
      const email = unique("requester")
      const user = await newUser(h(), email, h().live, "Bruno Costa")
      const ticket = await created(api(h()).post("/support/tickets", { subject: "Cannot open lesson 3", user_id: user.id, message: { text: "<p>It stays blank.</p>" } }))
      await created(api(h()).post(`/support/tickets/${ticket.id}/messages`, { text: "<p>Fixed it &amp; reloaded.</p><p>Try again now.</p>" }))
      await created(api(h()).post(`/support/tickets/${ticket.id}/messages`, { text: "<p>Thanks!</p>", from: "requester" }))
      const [mail, ...more] = await eventually(async () => {
        const arrived = arrivedFor(email)
        expect(arrived.length).toBeGreaterThan(0)
        return arrived
      })
      await new Promise((r) => setTimeout(r, 500))
      expect(more).toEqual([])
      expect(arrivedFor(email)).toHaveLength(1)
      expect(mail!.subject).toBe(`Re: Cannot open lesson 3 [${ticket.id}]`)
      expect(mail!.body).toContain("Hello Bruno Costa,")
      expect(mail!.body).toContain("Fixed it & reloaded.")
      expect(mail!.body).toContain("Try again now.")
      expect(mail!.body).not.toContain("<p>")
      expect(mail!.body).not.toContain("Thanks!")
      const queued = (await api(h()).get(`/events?type=email_message.queued`)).body.data.find((e: any) => e.data.object.ticket_id === ticket.id)
      expect(queued.data.object).toMatchObject({ kind: "ticket_reply", user_id: user.id, to: null })
    })

    it("permissions: access_emails.create to send, access_emails.read to read, reports.read for the report, email_bounces.update to ignore; addresses only with users.read_personal; a credential limited to users reaches theirs only", async () => {
      const user = await newUser(h(), unique("perm"))
      const bounced = await newUser(h(), unique("bounce-perm"))
      const readOnly = await credentialWith(h(), ["users.read", "reports.read", "access_emails.read"])
      expectError(await api(h(), readOnly).post(`/users/${user.id}/access-emails`, {}), 403, "permission_denied")
      const sender = await credentialWith(h(), ["access_emails.create", "access_emails.read"])
      const sent = await api(h(), sender).post(`/users/${bounced.id}/access-emails`, {})
      expect(sent.status, sent.text).toBe(202)
      // Without users.read_personal the address is null, in the answer and when read.
      expect(sent.body.data.to).toBeNull()
      const done = await settled(h(), bounced.id, sent.body.data.id, sender)
      expect(done.to).toBeNull()
      expectError(await api(h(), sender).get("/reports/email-bounces"), 403, "permission_denied")
      const report = await api(h(), readOnly).get("/reports/email-bounces")
      expect(report.status, report.text).toBe(200)
      const row = report.body.data.find((b: any) => b.id === done.bounce_id)
      expect(row.email).toBeNull()
      expectError(await api(h(), readOnly).patch(`/reports/email-bounces/${row.id}`, { status: "ignored" }), 403, "permission_denied")
      expectError(await api(h(), sender).get(`/users/${user.id}/access-emails/${sent.body.data.id}`), 404, "not_found")
      const noRead = await credentialWith(h(), ["access_emails.create"])
      expectError(await api(h(), noRead).get(`/users/${bounced.id}/access-emails/${sent.body.data.id}`), 403, "permission_denied")
      // The catalog lists the report; its personal column only with users.read_personal.
      const catalog = (await api(h(), readOnly).get("/reports")).body.data.find((r: any) => r.id === "email-bounces")
      expect(catalog).toMatchObject({ path: "/reports/email-bounces", paginated: true, source: ["email_bounce"] })
      expect(catalog.columns.some((c: any) => c.name === "email")).toBe(false)
      const full = (await api(h()).get("/reports")).body.data.find((r: any) => r.id === "email-bounces")
      expect(full.columns.find((c: any) => c.name === "email")).toMatchObject({ personal: true })
      // A policy limited to one user reaches that user only (another is 404, as if missing).
      const limited = await credentialWithPolicies(h(), [{ capabilities: ["access_emails.create", "access_emails.read"], resources: [user.id] }])
      expectError(await api(h(), limited).post(`/users/${bounced.id}/access-emails`, {}), 404, "not_found")
      expect((await api(h(), limited).post(`/users/${user.id}/access-emails`, {})).status).toBe(202)
      // The support agent template sends access emails and ignores bounces.
      const templates = (await api(h()).get("/policy-templates")).body.data
      const agent = templates.find((t: any) => t.id === "support_agent")
      expect(agent.capabilities).toEqual(expect.arrayContaining(["access_emails.create", "access_emails.read", "email_bounces.update"]))
    })

    it("bad input: 422 itemized, 404 for a missing or trashed user, 422 for a trashed product, nothing queued", async () => {
      const user = await newUser(h(), unique("input"))
      expectError(await api(h()).post(`/users/${user.id}/access-emails`, { product_id: "nope" }), 422, "validation_failed", { field: "product_id", code: "invalid" })
      expectError(await api(h()).post(`/users/${user.id}/access-emails`, { product_id: "prd_000000001" }), 422, "validation_failed", { field: "product_id", reason: "not_found" })
      expectError(await api(h()).post(`/users/${user.id}/access-emails`, { subject: "x" }), 422, "unknown_field", { field: "subject" })
      expectError(await api(h()).post("/users/usr_000000001/access-emails", {}), 404, "not_found")
      expectError(await api(h()).get(`/users/${user.id}/access-emails/eml_000000001`), 404, "not_found")
      expectError(await api(h()).get("/reports/email-bounces?status=gone"), 422, "validation_failed", { parameter: "status" })
      expectError(await api(h()).get("/reports/email-bounces?cursor=abc"), 400, "invalid_cursor")
      expectError(await api(h()).patch("/reports/email-bounces/ebn_000000001", { status: "ignored" }), 404, "not_found")
      // A blocked user is not mailed.
      const blocked = await created(api(h()).post("/users", { name: "B", email: unique("blocked"), status: "blocked" }))
      expectError(await api(h()).post(`/users/${blocked.id}/access-emails`, {}), 409, "state_conflict", { reason: "user_blocked" })
      // A user or a product in the trash is as good as missing.
      const trashed = await newUser(h(), unique("trashed"))
      expect((await api(h()).del(`/users/${trashed.id}`)).status).toBe(200)
      expectError(await api(h()).post(`/users/${trashed.id}/access-emails`, {}), 404, "not_found")
      const gone = await newProduct(h(), h().live, { name: "Gone" })
      expect((await api(h()).del(`/products/${gone.id}`)).status).toBe(200)
      expectError(await api(h()).post(`/users/${user.id}/access-emails`, { product_id: gone.id }), 422, "validation_failed", { field: "product_id", reason: "not_found" })
      // Nothing was queued by the failures: the first real send passes the resend window.
      const sent = await api(h()).post(`/users/${user.id}/access-emails`, {})
      expect(sent.status, sent.text).toBe(202)
      // Without a product, the mail is about the school's courses.
      expect(sent.body.data.subject).toBe(`Your access to ${h().account.account.name}`)
      // Another user's path does not reach it.
      expectError(await api(h()).get(`/users/${trashed.id}/access-emails/${sent.body.data.id}`), 404, "not_found")
    })

    it("GET /reports/email-bounces pages newest first with signed cursors; a PATCH of another status is 422", async () => {
      const ids: Array<string> = []
      for (let i = 0; i < 3; i++) {
        const user = await newUser(h(), unique("bounce-page"))
        const res = await api(h()).post(`/users/${user.id}/access-emails`, {})
        ids.push((await settled(h(), user.id, res.body.data.id)).bounce_id)
      }
      const first = await api(h()).get("/reports/email-bounces?limit=2")
      expect(first.status, first.text).toBe(200)
      expect(first.body.data).toHaveLength(2)
      expect(first.body.data[0].id > first.body.data[1].id).toBe(true)
      expect(first.body.data[0].id).toBe(ids[2])
      const next = await api(h()).get(`/reports/email-bounces?limit=2&cursor=${encodeURIComponent(first.body.page.next_cursor)}`)
      expect(next.body.data[0].id).toBe(ids[0])
      // A cursor with another filter is refused.
      expectError(await api(h()).get(`/reports/email-bounces?status=active&limit=2&cursor=${encodeURIComponent(first.body.page.next_cursor)}`), 400, "invalid_cursor")
      const active = await api(h()).get("/reports/email-bounces?status=active&limit=2")
      expect(typeof active.body.page.next_cursor).toBe("string")
      expectError(await api(h()).get(`/reports/email-bounces?status=ignored&limit=2&cursor=${encodeURIComponent(active.body.page.next_cursor)}`), 400, "invalid_cursor")
      expectError(await api(h()).patch(`/reports/email-bounces/${ids[0]}`, { status: "active" }), 422, "validation_failed", { field: "status" })
    })

    it("sandbox: mail of the sandbox is its own; a reset empties its messages and bounces", async () => {
      const user = await newUser(h(), unique("bounce-sandbox"), h().test)
      const res = await api(h(), h().test).post(`/users/${user.id}/access-emails`, {})
      expect(res.status, res.text).toBe(202)
      const done = await settled(h(), user.id, res.body.data.id, h().test)
      expect((await api(h(), h().test).get("/reports/email-bounces")).body.data.map((b: any) => b.id)).toContain(done.bounce_id)
      // Production does not see it.
      expect((await api(h()).get("/reports/email-bounces")).body.data.map((b: any) => b.id)).not.toContain(done.bounce_id)
      expect((await api(h(), h().test).post("/sandbox/resets", {})).status).toBe(201)
      expect((await api(h(), h().test).get("/reports/email-bounces")).body.data).toEqual([])
    })
  },
  { mailer }
)
