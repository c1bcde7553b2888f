/**
 * The outbox is durable and sends a mail once (issue 14; docs/email.md), PostgreSQL (several
 * server processes on one database; the in-memory store lives and dies with its one process):
 * a mail queued by a server that stops before sending it is sent after the restart, once, even
 * with two servers' workers competing for it; a worker that dies mid-send leaves its claim, and
 * another server sends the mail once its lease has run out, not before. Mail goes through a real
 * SMTP server (the `smtp-server` package).
 */
import { Mailer, type MailMessage } from "@syllabus/core"
import { SmtpMailer } from "@syllabus/http"
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { api, created } from "../support/api.js"
import { eventually } from "../support/eventually.js"
import { type Harness, startHarness } from "../support/harness.js"
import { type SmtpTestServer, startSmtpServer } from "../support/smtp.js"

const MINUTE = 60_000

let smtp: SmtpTestServer
beforeAll(async () => {
  smtp = await startSmtpServer()
})
afterAll(async () => {
  await smtp.close()
})

const mailer = Layer.suspend(() => SmtpMailer({ host: "127.0.0.1", port: smtp.port, tls: "off", from: "school@example.test" }))

let counter = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now()}-${++counter}@example.test`

const statusOf = async (h: Harness, userId: string, emailId: string) =>
  (await api(h).get(`/users/${userId}/access-emails/${emailId}`)).body.data

describe("the mail outbox across restarts and servers [postgresql]", () => {
  it("mail queued by a server that stops before sending is sent after the restart, exactly once, with two servers' workers competing", async () => {
    const first = await startHarness("postgresql", { workers: false, mailer })
    const queued: Array<{ email: string; userId: string; emailId: string }> = []
    try {
      for (let i = 0; i < 6; i++) {
        const email = unique("restart")
        const user = await created(api(first).post("/users", { name: `Learner ${i}`, email }))
        const res = await api(first).post(`/users/${user.id}/access-emails`, {})
        expect(res.status, res.text).toBe(202)
        queued.push({ email, userId: user.id, emailId: res.body.data.id })
      }
      await new Promise((r) => setTimeout(r, 500))
      // No worker ran: nothing left.
      for (const q of queued) expect(smtp.arrivedFor(q.email)).toEqual([])
    } finally {
      await first.close({ keepDatabase: true })
    }
    const second = await startHarness("postgresql", { databaseUrl: first.databaseUrl!, account: first.account, mailer })
    const third = await startHarness("postgresql", { databaseUrl: first.databaseUrl!, account: first.account, mailer })
    try {
      for (const q of queued) {
        await eventually(async () => expect((await statusOf(second, q.userId, q.emailId)).status).toBe("sent"))
      }
      await new Promise((r) => setTimeout(r, 800))
      for (const q of queued) {
        expect(smtp.arrivedFor(q.email), q.email).toHaveLength(1)
        expect(smtp.arrivedFor(q.email)[0]!.messageId).toBe(`<${q.emailId}@syllabus>`)
        expect((await statusOf(third, q.userId, q.emailId)).attempt_count).toBe(1)
      }
    } finally {
      await third.close({ keepDatabase: true })
      await second.close({ keepDatabase: true })
      await first.dropDatabase()
    }
  }, 120_000)

  it("a worker that dies mid-send keeps its claim until its lease runs out; then another server sends the mail, once", async () => {
    const handed: Array<MailMessage> = []
    // The first server's mail server never answers: its worker is stuck mid-send when it stops.
    const hanging = Layer.succeed(Mailer, { send: (message) => Effect.zipRight(Effect.sync(() => handed.push(message)), Effect.never) })
    const first = await startHarness("postgresql", { mailer: hanging })
    const email = unique("midsend")
    let userId = ""
    let emailId = ""
    try {
      const user = await created(api(first).post("/users", { name: "Mid Send", email }))
      const res = await api(first).post(`/users/${user.id}/access-emails`, {})
      expect(res.status, res.text).toBe(202)
      userId = user.id
      emailId = res.body.data.id
      await eventually(async () => expect(handed.map((m) => m.messageId)).toEqual([`${emailId}@syllabus`]))
    } finally {
      await first.close({ keepDatabase: true })
    }
    const second = await startHarness("postgresql", { databaseUrl: first.databaseUrl!, account: first.account, mailer })
    try {
      // The claim holds for its lease (2 minutes): not sent meanwhile, still `queued` to a client.
      await new Promise((r) => setTimeout(r, 1000))
      expect(smtp.arrivedFor(email)).toEqual([])
      expect((await statusOf(second, userId, emailId)).status).toBe("queued")
      second.advance(2 * MINUTE + 1000)
      await eventually(async () => expect((await statusOf(second, userId, emailId)).status).toBe("sent"))
      await new Promise((r) => setTimeout(r, 500))
      expect(smtp.arrivedFor(email)).toHaveLength(1)
    } finally {
      await second.close({ keepDatabase: true })
      await first.dropDatabase()
    }
  }, 120_000)
})
