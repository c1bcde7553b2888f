/**
 * Webhook delivery (§2.3 `webhook_delivery_attempt`, §4.3, §6, §8.3, open-points "Events and
 * webhooks"): every matching event reaches an active destination, signed with the Standard
 * Webhooks scheme (checked with the `standardwebhooks` package), as the JSON recorded in the
 * pinned payload version; failures are retried with back-off until `dead`; `health` counts
 * what happened; deliveries and attempts are readable and kept 30 days; replays send what was
 * recorded; destinations are checked when connecting.
 *
 * Receivers are local HTTP servers, so the webhooks are sandbox ones (production needs
 * public https). Tests share one server per store and its clock: each test subscribes its
 * own webhook to its own event type and switches it off at the end.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net"
import { Effect } from "effect"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeNodeWebhookSender } from "../../packages/http/src/webhook-sender.js"
import { eachStore, freshKey, type Harness, listenLocalReceiver, startHarness } from "../support/harness.js"
import { expectError } from "../support/expect.js"
import { eventually } from "../support/eventually.js"

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const RETRY_DELAYS = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]

// ---------------------------------------------------------------------------------------
// A local receiver

interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

interface Answer {
  readonly status: number
  readonly body?: string
  readonly delayMs?: number
}

interface Receiver {
  readonly url: string
  readonly port: number
  readonly received: Array<Received>
  close(): Promise<void>
}

/** An HTTP receiver on 127.0.0.1; `answer(n)` says how to answer the n-th request (0-based). */
const receiver = async (answer: (n: number) => Answer = () => ({ status: 200, body: "ok" }), port = 0): Promise<Receiver> => {
  const received: Array<Received> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const n = received.length
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") })
      const { status, body = "", delayMs = 0 } = answer(n)
      setTimeout(() => {
        if (!res.destroyed) res.writeHead(status, { "content-type": "text/plain" }).end(body)
      }, delayMs)
    })
  })
  await listenLocalReceiver(server, port)
  const bound = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}


const headersOf = (r: Received) => ({
  "webhook-id": String(r.headers["webhook-id"]),
  "webhook-timestamp": String(r.headers["webhook-timestamp"]),
  "webhook-signature": String(r.headers["webhook-signature"])
})

/** The `v1,` entries of the request's `webhook-signature`. */
const signaturesOf = (r: Received) => String(r.headers["webhook-signature"]).split(" ")

/**
 * Whether one of the request's signatures is by `secret` (the package's HMAC; its `verify` would
 * also refuse a timestamp far from the real clock, which the test clock may be after `advance`).
 */
const signedBy = (secret: string, r: Received) =>
  signaturesOf(r).includes(new Webhook(secret).sign(String(r.headers["webhook-id"]), new Date(Number(r.headers["webhook-timestamp"]) * 1000), r.body))

// ---------------------------------------------------------------------------------------
// The API

const api = (h: Harness, secret: string) => ({
  get: (path: string) => h.request("GET", `/api/v3${path}`, { secret }),
  post: (path: string, json?: unknown, idempotencyKey?: string | null) =>
    h.request("POST", `/api/v3${path}`, { secret, json, ...(idempotencyKey !== undefined ? { idempotencyKey } : {}) }),
  patch: (path: string, json: unknown) => h.request("PATCH", `/api/v3${path}`, { secret, json }),
  del: (path: string) => h.request("DELETE", `/api/v3${path}`, { secret })
})

const sandbox = (h: Harness) => api(h, h.test)

interface Hook {
  readonly id: string
  readonly secret: string
}

const createHook = async (h: Harness, fields: Record<string, unknown>, secret = h.test): Promise<Hook> => {
  const res = await api(h, secret).post("/webhooks", fields)
  expect(res.status).toBe(201)
  return { id: res.body.data.id, secret: res.body.data.secret.value }
}

/** The end of a test: the webhook stops receiving (its pending deliveries wait). */
const switchOff = async (h: Harness, hook: Hook, secret = h.test) => {
  await api(h, secret).patch(`/webhooks/${hook.id}`, { status: "inactive" })
}

const deliveriesOf = async (h: Harness, hook: Hook, query = "", secret = h.test) => {
  const res = await api(h, secret).get(`/webhooks/${hook.id}/deliveries?limit=200${query}`)
  expect(res.status).toBe(200)
  return res.body.data as Array<Record<string, any>>
}

const attemptsOf = async (h: Harness, hook: Hook, deliveryId: string, secret = h.test) => {
  const res = await api(h, secret).get(`/webhooks/${hook.id}/deliveries/${deliveryId}/attempts`)
  expect(res.status).toBe(200)
  return res.body.data as Array<Record<string, any>>
}

const healthOf = async (h: Harness, hook: Hook, secret = h.test) => (await api(h, secret).get(`/webhooks/${hook.id}`)).body.data.health

const eventOf = async (h: Harness, resourceId: string, type: string, secret = h.test) => {
  const res = await api(h, secret).get(`/events?resource_id=${resourceId}&type=${type}`)
  expect(res.body.data).toHaveLength(1)
  return res.body.data[0] as Record<string, any>
}

// ---------------------------------------------------------------------------------------

eachStore("webhook delivery", (h) => {
  /** Kept by the first test for the retention test, which runs last. */
  let kept: { hook: Hook; delivery: string; attempt: string } | undefined

  it("every matching event reaches the receiver once, signed (Standard Webhooks), as the recorded JSON in the pinned version", async () => {
    const rx = await receiver(() => ({ status: 200, body: "thanks: token sk_live_1234567890abcdef for ops@example.com" }))
    try {
      const hook = await createHook(h(), { url: rx.url, event_types: ["showcase.created"] })
      const ids: Array<string> = []
      for (const name of ["One", "Two"]) ids.push((await sandbox(h()).post("/showcases", { name })).body.data.id)
      // Not subscribed: never sent.
      await sandbox(h()).post("/tags", { name: `not-sent-${Date.now()}` })
      const events = await Promise.all(ids.map((id) => eventOf(h(), id, "showcase.created")))
      await eventually(async () => expect(rx.received).toHaveLength(2))
      const verifier = new Webhook(hook.secret)
      for (const r of rx.received) {
        expect(() => verifier.verify(r.body, headersOf(r))).not.toThrow()
        expect(r.headers["content-type"]).toBe("application/json")
      }
      const byId = new Map(rx.received.map((r) => [String(r.headers["webhook-id"]), r]))
      for (const event of events) {
        // webhook-id is the event ID; the body is the event as GET /events/{id} shows it, version 1.
        const body = JSON.parse(byId.get(event.id)!.body)
        expect(body).toEqual(event)
        expect(body.version).toBe(1)
      }
      const deliveries = await eventually(async () => {
        const list = await deliveriesOf(h(), hook)
        expect(list.map((d) => d.status)).toEqual(["succeeded", "succeeded"])
        return list
      })
      // Newest first; each names its webhook and event.
      expect(deliveries.map((d) => d.event_id)).toEqual([events[1]!.id, events[0]!.id])
      const first = deliveries[1]!
      expect(first).toMatchObject({ object: "webhook_delivery", webhook_id: hook.id, event_type: "showcase.created", payload_version: 1, origin: "automatic", attempt_count: 1, next_attempt_at: null })
      expect(first.id).toMatch(/^whd_[0-9A-Za-z]{9}$/)
      expect((await sandbox(h()).get(`/webhooks/${hook.id}/deliveries/${first.id}`)).body.data).toEqual(first)
      const attempts = await attemptsOf(h(), hook, first.id)
      expect(attempts).toHaveLength(1)
      const attempt = attempts[0]!
      expect(attempt.id).toMatch(/^wha_[0-9A-Za-z]{9}$/)
      expect(attempt).toMatchObject({ object: "webhook_delivery_attempt", number: 1, origin: "automatic", http_status: 200, transport_error: null, next_attempt_at: null })
      expect(attempt.duration_ms).toBeGreaterThanOrEqual(0)
      expect(Date.parse(attempt.finished_at)).toBeGreaterThanOrEqual(Date.parse(attempt.started_at))
      const one = await sandbox(h()).get(`/webhooks/${hook.id}/deliveries/${first.id}/attempts/${attempt.id}`)
      expect(one.status).toBe(200)
      expect(one.body.data).toEqual(attempt)
      // What a local service answers is never kept (masking is tested in process, packages/testing).
      expect(attempt.response_excerpt).toBeNull()
      await eventually(async () =>
        expect(await healthOf(h(), hook)).toMatchObject({ delivered_24h: 2, pending: 0, failed_24h: 0, consecutive_failures: 0, dead_24h: 0, last_failure_at: null })
      )
      expect(typeof (await healthOf(h(), hook)).last_success_at).toBe("string")
      kept = { hook, delivery: first.id, attempt: attempt.id }
      await switchOff(h(), hook)
    } finally {
      await rx.close()
    }
  })

  it("deliveries and attempts of another webhook, of another environment or unknown are 404; the list filters by status", async () => {
    const other = await createHook(h(), { url: "http://127.0.0.1:9/none", event_types: ["nothing.happened"], status: "inactive" })
    const { hook, delivery, attempt } = kept!
    expectError(await sandbox(h()).get(`/webhooks/${other.id}/deliveries/${delivery}`), 404, "not_found")
    expectError(await sandbox(h()).get(`/webhooks/${other.id}/deliveries/${delivery}/attempts/${attempt}`), 404, "not_found")
    expectError(await sandbox(h()).get(`/webhooks/${hook.id}/deliveries/whd_000000001`), 404, "not_found")
    expectError(await sandbox(h()).get(`/webhooks/${hook.id}/deliveries/${delivery}/attempts/wha_000000001`), 404, "not_found")
    expectError(await api(h(), h().live).get(`/webhooks/${hook.id}/deliveries/${delivery}`), 404, "not_found")
    expectError(await api(h(), h().live).get(`/webhooks/${hook.id}/deliveries`), 404, "not_found")
    expect(await deliveriesOf(h(), hook, "&status=dead")).toEqual([])
    expect((await deliveriesOf(h(), hook, "&status=succeeded")).length).toBe(2)
    expect((await deliveriesOf(h(), other)).length).toBe(0)
  })

  it("a receiver answering 500 then 200: both attempts recorded, the retry 5 s later, health true at each step", async () => {
    const rx = await receiver((n) => (n === 0 ? { status: 500, body: "boom" } : { status: 200 }))
    try {
      const hook = await createHook(h(), { url: rx.url, event_types: ["showcase.updated"] })
      const showcase = (await sandbox(h()).post("/showcases", { name: "Before" })).body.data.id
      await sandbox(h()).patch(`/showcases/${showcase}`, { name: "After" })
      const [delivery] = await eventually(async () => {
        const list = await deliveriesOf(h(), hook)
        expect(list).toHaveLength(1)
        expect(list[0]!.attempt_count).toBe(1)
        return list
      })
      expect(delivery!.status).toBe("pending")
      const [failed] = await attemptsOf(h(), hook, delivery!.id)
      expect(failed).toMatchObject({ number: 1, http_status: 500, transport_error: null, response_excerpt: null })
      expect(Date.parse(failed!.next_attempt_at) - Date.parse(failed!.finished_at)).toBe(5 * SECOND)
      expect(delivery!.next_attempt_at).toBe(failed!.next_attempt_at)
      await eventually(async () =>
        expect(await healthOf(h(), hook)).toMatchObject({ consecutive_failures: 1, failed_24h: 1, delivered_24h: 0, pending: 1, last_failure_at: failed!.finished_at, last_success_at: null })
      )
      // Not before it is due.
      await new Promise((r) => setTimeout(r, 600))
      expect(rx.received).toHaveLength(1)
      h().advance(5 * SECOND)
      await eventually(async () => expect((await deliveriesOf(h(), hook))[0]!.status).toBe("succeeded"))
      const attempts = await attemptsOf(h(), hook, delivery!.id)
      expect(attempts.map((a) => [a.number, a.http_status])).toEqual([
        [1, 500],
        [2, 200]
      ])
      expect(attempts[1]!.next_attempt_at).toBeNull()
      expect(Date.parse(attempts[1]!.started_at)).toBeGreaterThanOrEqual(Date.parse(failed!.next_attempt_at))
      // Both requests are the same message: same id, same body, each validly signed.
      expect(rx.received).toHaveLength(2)
      expect(rx.received[1]!.body).toBe(rx.received[0]!.body)
      expect(rx.received[1]!.headers["webhook-id"]).toBe(rx.received[0]!.headers["webhook-id"])
      for (const r of rx.received) expect(() => new Webhook(hook.secret).verify(r.body, headersOf(r))).not.toThrow()
      await eventually(async () =>
        expect(await healthOf(h(), hook)).toMatchObject({
          consecutive_failures: 0,
          failed_24h: 1,
          delivered_24h: 1,
          pending: 0,
          dead_24h: 0,
          last_failure_at: failed!.finished_at,
          last_success_at: attempts[1]!.finished_at
        })
      )
      await switchOff(h(), hook)
    } finally {
      await rx.close()
    }
  })

  it("a receiver that is down for a while receives every event once it is back (at least once)", async () => {
    const down = await receiver()
    const port = down.port
    await down.close()
    // An allowed local port with nothing behind it: a failed connection, told apart from nothing else.
    const hook = await createHook(h(), { url: `http://127.0.0.1:${port}/hook`, event_types: ["tag.created"] })
    const groups: Array<string> = []
    for (let i = 0; i < 3; i++) groups.push((await sandbox(h()).post("/tags", { name: `down-${Date.now()}-${i}` })).body.data.id)
    const eventIds = await Promise.all(groups.map(async (id) => (await eventOf(h(), id, "tag.created")).id as string))
    const deliveries = await eventually(async () => {
      const list = await deliveriesOf(h(), hook)
      expect(list).toHaveLength(3)
      expect(list.every((d) => d.attempt_count >= 1)).toBe(true)
      return list
    })
    const [refused] = await attemptsOf(h(), hook, deliveries[0]!.id)
    expect(refused).toMatchObject({ http_status: null, transport_error: "connection_failed" })
    expect((await healthOf(h(), hook)).pending).toBe(3)
    const back = await receiver(() => ({ status: 204 }), port)
    try {
      h().advance(5 * SECOND)
      await eventually(async () => expect((await deliveriesOf(h(), hook)).map((d) => d.status)).toEqual(["succeeded", "succeeded", "succeeded"]))
      expect(back.received.map((r) => String(r.headers["webhook-id"])).sort()).toEqual([...eventIds].sort())
      // Each delivery failed at least once while the receiver was down; how many times depends
      // on the real time the machine took, so the failures counted are the ones recorded.
      const failedAttempts = async () => {
        let failed = 0
        for (const delivery of await deliveriesOf(h(), hook)) {
          const attempts = await attemptsOf(h(), hook, delivery.id)
          failed += attempts.filter((a) => a.transport_error !== null || a.http_status < 200 || a.http_status > 299).length
        }
        return failed
      }
      await eventually(async () =>
        expect(await healthOf(h(), hook)).toMatchObject({ pending: 0, delivered_24h: 3, failed_24h: await failedAttempts(), consecutive_failures: 0 })
      )
      expect(await failedAttempts()).toBeGreaterThanOrEqual(3)
      await switchOff(h(), hook)
    } finally {
      await back.close()
    }
  })

  it("an inactive webhook receives nothing, and a webhook receives only events recorded after it was created", async () => {
    const rx = await receiver()
    try {
      const before = (await sandbox(h()).post("/tags", { name: `before-${Date.now()}` })).body.data.id
      const beforeEvent = await eventOf(h(), before, "tag.created")
      const inactive = await createHook(h(), { url: rx.url, event_types: ["tag.created"], status: "inactive" })
      const active = await createHook(h(), { url: rx.url, event_types: ["tag.created"] })
      const after = (await sandbox(h()).post("/tags", { name: `after-${Date.now()}` })).body.data.id
      const afterEvent = await eventOf(h(), after, "tag.created")
      await eventually(async () => expect(rx.received).toHaveLength(1))
      await new Promise((r) => setTimeout(r, 600))
      expect(rx.received.map((r) => r.headers["webhook-id"])).toEqual([afterEvent.id])
      expect(rx.received.map((r) => r.headers["webhook-id"])).not.toContain(beforeEvent.id)
      expect(await deliveriesOf(h(), inactive)).toEqual([])
      expect((await deliveriesOf(h(), active)).map((d) => d.event_id)).toEqual([afterEvent.id])
      await switchOff(h(), active)
    } finally {
      await rx.close()
    }
  })

  it("max_per_second paces the requests to one destination", async () => {
    const rx = await receiver()
    const hook = await createHook(h(), { url: rx.url, event_types: ["tag.created"], max_per_second: 1 })
    try {
      for (let i = 0; i < 3; i++) await sandbox(h()).post("/tags", { name: `paced-${Date.now()}-${i}` })
      await eventually(async () => expect(rx.received).toHaveLength(3))
      // The last attempt is recorded once its answer is in, a moment after the receiver had it.
      const attempts = await eventually(async () => {
        const all = (await Promise.all((await deliveriesOf(h(), hook)).map((d) => attemptsOf(h(), hook, d.id)))).flat()
        expect(all).toHaveLength(3)
        return all
      })
      const starts = attempts.map((a) => Date.parse(a.started_at)).sort((a, b) => a - b)
      expect(starts[2]! - starts[0]!).toBeGreaterThanOrEqual(1900)
      await switchOff(h(), hook)
    } finally {
      await rx.close()
    }
  })

  it("timeout_ms is respected: a receiver slower than it is a failed attempt with transport_error timeout", async () => {
    const rx = await receiver(() => ({ status: 200, delayMs: 4000 }))
    try {
      const hook = await createHook(h(), { url: rx.url, event_types: ["showcase.created"], timeout_ms: 1000 })
      await sandbox(h()).post("/showcases", { name: "Slow" })
      const [delivery] = await eventually(async () => {
        const list = await deliveriesOf(h(), hook)
        expect(list[0]?.attempt_count).toBe(1)
        return list
      })
      const [attempt] = await attemptsOf(h(), hook, delivery!.id)
      expect(attempt).toMatchObject({ http_status: null, transport_error: "timeout", response_excerpt: null })
      expect(attempt!.duration_ms).toBeGreaterThanOrEqual(1000)
      expect(attempt!.duration_ms).toBeLessThan(3000)
      expect(delivery!.status).toBe("pending")
      await switchOff(h(), hook)
    } finally {
      await rx.close()
    }
  })

  it("a production webhook whose name resolves to a loopback address is refused when connecting (a failed attempt, transport_error)", async () => {
    const rx = await receiver()
    try {
      const hook = await createHook(h(), { url: "https://hooks.example.com/in", event_types: ["showcase.created"] }, h().live)
      // The name now points at this machine, as a DNS answer could change after registration.
      await h().patchRecord({ accountId: h().account.account.id, environment: "production" }, "webhook", hook.id, {
        url: `https://localhost:${rx.port}/hook`
      })
      await api(h(), h().live).post("/showcases", { name: "Refused" })
      const [delivery] = await eventually(async () => {
        const list = await deliveriesOf(h(), hook, "", h().live)
        expect(list[0]?.attempt_count).toBe(1)
        return list
      })
      const [attempt] = await attemptsOf(h(), hook, delivery!.id, h().live)
      expect(attempt).toMatchObject({ http_status: null, transport_error: "destination_not_allowed" })
      expect(rx.received).toHaveLength(0)
      await eventually(async () => expect(await healthOf(h(), hook, h().live)).toMatchObject({ failed_24h: 1, consecutive_failures: 1 }))
      await switchOff(h(), hook, h().live)
    } finally {
      await rx.close()
    }
  })

  it("a sandbox webhook reaches only the loopback ports the operator allows: any other is refused when connecting, by every spelling", async () => {
    // A local service the operator did not list (bound without `listenLocalReceiver`).
    const service = createServer((_, res) => res.writeHead(200).end("internal admin page"))
    await new Promise<void>((resolve) => service.listen(0, "127.0.0.1", resolve))
    const port = (service.address() as AddressInfo).port
    let reached = 0
    service.on("request", () => reached++)
    try {
      for (const url of [`http://127.0.0.1:${port}/admin`, `http://localhost:${port}/admin`, `http://127.1:${port}/admin`]) {
        const hook = await createHook(h(), { url, event_types: ["showcase.created"] })
        await sandbox(h()).post("/showcases", { name: "Probe" })
        const [delivery] = await eventually(async () => {
          const list = await deliveriesOf(h(), hook)
          expect(list[0]?.attempt_count).toBe(1)
          return list
        })
        const [attempt] = await attemptsOf(h(), hook, delivery!.id)
        expect([url, attempt]).toMatchObject([url, { http_status: null, transport_error: "destination_not_allowed", response_excerpt: null }])
        await switchOff(h(), hook)
      }
      expect(reached).toBe(0)
    } finally {
      await new Promise<void>((resolve) => service.close(() => resolve()))
    }
  })

  it("replays (Idempotency-Key required) send again what was recorded, by event IDs or by range; 202 with the queued deliveries", async () => {
    const rx = await receiver()
    try {
      const hook = await createHook(h(), { url: rx.url, event_types: ["showcase.created"] })
      const showcase = (await sandbox(h()).post("/showcases", { name: "Recorded" })).body.data
      const event = await eventOf(h(), showcase.id, "showcase.created")
      await eventually(async () => expect(rx.received).toHaveLength(1))
      // The resource changes afterwards; a replay still sends the event as recorded.
      await sandbox(h()).patch(`/showcases/${showcase.id}`, { name: "Changed since" })
      const noKey = await sandbox(h()).post(`/webhooks/${hook.id}/replays`, { event_ids: [event.id] }, null)
      expect(noKey.status).toBe(422)
      expect(noKey.body.error.code).toBe("idempotency_key_required")
      const key = freshKey()
      const replay = await sandbox(h()).post(`/webhooks/${hook.id}/replays`, { event_ids: [event.id] }, key)
      expect(replay.status).toBe(202)
      expect(replay.body.data).toHaveLength(1)
      expect(replay.body.data[0]).toMatchObject({ object: "webhook_delivery", event_id: event.id, origin: "replay", status: "pending", attempt_count: 0 })
      const again = await sandbox(h()).post(`/webhooks/${hook.id}/replays`, { event_ids: [event.id] }, key)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(again.body).toEqual(replay.body)
      await eventually(async () => expect(rx.received).toHaveLength(2))
      expect(rx.received[1]!.body).toBe(rx.received[0]!.body)
      expect(JSON.parse(rx.received[1]!.body)).toEqual(event)
      expect(JSON.parse(rx.received[1]!.body).data.object.name).toBe("Recorded")
      expect(() => new Webhook(hook.secret).verify(rx.received[1]!.body, headersOf(rx.received[1]!))).not.toThrow()
      const replayed = await eventually(async () => {
        const one = (await sandbox(h()).get(`/webhooks/${hook.id}/deliveries/${replay.body.data[0].id}`)).body.data
        expect(one.status).toBe("succeeded")
        return one
      })
      expect((await attemptsOf(h(), hook, replayed.id))[0]).toMatchObject({ origin: "replay", number: 1, http_status: 200 })
      // A range: every event of it the webhook receives.
      const range = await sandbox(h()).post(`/webhooks/${hook.id}/replays`, {
        created_after: new Date(Date.parse(event.created_at) - 1).toISOString(),
        created_before: new Date(Date.parse(event.created_at) + 1).toISOString()
      })
      expect(range.status).toBe(202)
      expect(range.body.data.map((d: { event_id: string }) => d.event_id)).toEqual([event.id])
      await eventually(async () => expect(rx.received).toHaveLength(3))
      expect(rx.received[2]!.body).toBe(rx.received[0]!.body)
      await switchOff(h(), hook)
    } finally {
      await rx.close()
    }
  })

  it("replays refuse events the webhook does not receive, unknown events, both forms at once, or neither (422)", async () => {
    const hook = await createHook(h(), { url: "http://127.0.0.1:9/none", event_types: ["showcase.created"], status: "inactive" })
    const group = (await sandbox(h()).post("/tags", { name: `other-${Date.now()}` })).body.data.id
    const other = await eventOf(h(), group, "tag.created")
    const details = (res: { body: { error: { details: Array<Record<string, unknown>> } } }) =>
      res.body.error.details.map((d) => [d.field, d.code, d.reason])
    const notReceived = await sandbox(h()).post(`/webhooks/${hook.id}/replays`, { event_ids: [other.id, "evt_000000001"] })
    expectError(notReceived, 422, "validation_failed", { field: "event_ids[0]", reason: "not_subscribed" })
    expect(details(notReceived)).toEqual([
      ["event_ids[0]", "invalid_value", "not_subscribed"],
      ["event_ids[1]", "invalid_value", "event_not_found"]
    ])
    const both = await sandbox(h()).post(`/webhooks/${hook.id}/replays`, { event_ids: [other.id], created_after: other.created_at })
    expectError(both, 422, "validation_failed", { reason: "event_ids_or_range" })
    const neither = await sandbox(h()).post(`/webhooks/${hook.id}/replays`, {})
    expectError(neither, 422, "validation_failed", { field: "event_ids", code: "required", reason: "event_ids_or_range" })
    expect(details(neither)).toEqual([["event_ids", "required", "event_ids_or_range"]])
    expectError(await sandbox(h()).post(`/webhooks/whk_000000001/replays`, { event_ids: [other.id] }), 404, "not_found")
    expect(await deliveriesOf(h(), hook)).toEqual([])
  })

  it("delivery health is not an edit: after deliveries the revision and ETag are unchanged, and a PATCH with the ETag read before succeeds", async () => {
    const rx = await receiver()
    try {
      const hook = await createHook(h(), { url: rx.url, event_types: ["showcase.created"] })
      const before = await sandbox(h()).get(`/webhooks/${hook.id}`)
      const etag = before.headers.get("etag")!
      for (const name of ["One", "Two", "Three"]) await sandbox(h()).post("/showcases", { name })
      await eventually(async () => expect(await healthOf(h(), hook)).toMatchObject({ delivered_24h: 3, pending: 0 }))
      const after = await sandbox(h()).get(`/webhooks/${hook.id}`)
      expect(after.headers.get("etag")).toBe(etag)
      expect(after.body.data.revision).toBe(before.body.data.revision)
      expect(after.body.data.updated_at).toBe(before.body.data.updated_at)
      // No webhook.updated event either: the health of a delivery changes nothing a client wrote.
      expect((await sandbox(h()).get(`/events?resource_id=${hook.id}&type=webhook.updated`)).body.data).toEqual([])
      const patched = await h().request("PATCH", `/api/v3/webhooks/${hook.id}`, { secret: h().test, json: { description: "busy" }, headers: { "if-match": etag } })
      expect(patched.status).toBe(200)
      expect(patched.body.data).toMatchObject({ description: "busy", revision: before.body.data.revision + 1, health: { delivered_24h: 3 } })
      // The edit kept the health, and the next deliveries count on.
      await sandbox(h()).post("/showcases", { name: "Four" })
      await eventually(async () => expect(await healthOf(h(), hook)).toMatchObject({ delivered_24h: 4, pending: 0 }))
      expect((await sandbox(h()).get(`/webhooks/${hook.id}`)).headers.get("etag")).toBe(patched.headers.get("etag"))
      await switchOff(h(), hook)
    } finally {
      await rx.close()
    }
  })

  it("a secret rotation keeps the previous secret valid 24 hours: deliveries are signed by both meanwhile, then by the new one only", async () => {
    const rx = await receiver()
    try {
      const hook = await createHook(h(), { url: rx.url, event_types: ["tag.updated"] })
      const tag = (await sandbox(h()).post("/tags", { name: `rotated-${Date.now()}` })).body.data.id
      const touch = async (n: number) => {
        await sandbox(h()).patch(`/tags/${tag}`, { name: `rotated-${Date.now()}-${n}` })
        await eventually(async () => expect(rx.received).toHaveLength(n))
        return rx.received[n - 1]!
      }
      const rotation = await sandbox(h()).post(`/webhooks/${hook.id}/secret-rotations`, {})
      expect(rotation.status).toBe(200)
      const next = rotation.body.data.secret.value as string
      expect(next).not.toBe(hook.secret)
      // The answer says until when the previous secret is valid: 24 hours after the rotation.
      const expiresAt = Date.parse(rotation.body.data.previous_secret_expires_at)
      expect(Math.abs(expiresAt - Date.parse(rotation.body.data.updated_at) - DAY)).toBeLessThan(SECOND)
      expect((await sandbox(h()).get(`/webhooks/${hook.id}`)).body.data.previous_secret_expires_at).toBe(rotation.body.data.previous_secret_expires_at)
      // During the grace period: two signatures, and a receiver with either secret accepts the request.
      const during = await touch(1)
      expect(signaturesOf(during)).toHaveLength(2)
      expect(() => new Webhook(hook.secret).verify(during.body, headersOf(during))).not.toThrow()
      expect(() => new Webhook(next).verify(during.body, headersOf(during))).not.toThrow()
      // After it: the new secret's signature only.
      h().advance(DAY)
      const after = await touch(2)
      expect(signaturesOf(after)).toHaveLength(1)
      expect([signedBy(next, after), signedBy(hook.secret, after)]).toEqual([true, false])
      // Two rotations in a row: the first secret rotated out is dropped (at most two are valid).
      const second = (await sandbox(h()).post(`/webhooks/${hook.id}/secret-rotations`, {})).body.data.secret.value as string
      const third = (await sandbox(h()).post(`/webhooks/${hook.id}/secret-rotations`, { previous_secret_expires_in: 3600 })).body.data.secret.value as string
      const twice = await touch(3)
      expect([signedBy(third, twice), signedBy(second, twice), signedBy(next, twice), signaturesOf(twice).length]).toEqual([true, true, false, 2])
      // `0` ends the previous secret at once (a leaked secret).
      const ended = await sandbox(h()).post(`/webhooks/${hook.id}/secret-rotations`, { previous_secret_expires_in: 0 })
      expect(ended.body.data.previous_secret_expires_at).toBeNull()
      const last = await touch(4)
      expect([signedBy(ended.body.data.secret.value, last), signedBy(third, last), signaturesOf(last).length]).toEqual([true, false, 1])
      await switchOff(h(), hook)
    } finally {
      await rx.close()
    }
  })

  it("a webhook subscribed to patterns (`tag.*`, `*.trashed`) receives every event they match, and only those", async () => {
    const rx = await receiver()
    try {
      const hook = await createHook(h(), { url: rx.url, event_types: ["tag.*", "*.trashed"] })
      const tag = (await sandbox(h()).post("/tags", { name: `pattern-${Date.now()}` })).body.data.id
      await sandbox(h()).patch(`/tags/${tag}`, { name: `pattern-${Date.now()}-2` })
      const showcase = (await sandbox(h()).post("/showcases", { name: "Matched when trashed" })).body.data.id
      await sandbox(h()).del(`/showcases/${showcase}`)
      const expected = [
        (await eventOf(h(), tag, "tag.created")).id,
        (await eventOf(h(), tag, "tag.updated")).id,
        (await eventOf(h(), showcase, "showcase.trashed")).id
      ]
      await eventually(async () => expect(rx.received).toHaveLength(3))
      await new Promise((r) => setTimeout(r, 600))
      expect(rx.received.map((r) => String(r.headers["webhook-id"])).sort()).toEqual([...expected].sort())
      expect(rx.received.map((r) => JSON.parse(r.body).type).sort()).toEqual(["showcase.trashed", "tag.created", "tag.updated"])
      await switchOff(h(), hook)
    } finally {
      await rx.close()
    }
  })

  it("after the last retry (at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h) the delivery is dead and counted in dead_24h", async () => {
    const rx = await receiver(() => ({ status: 503, body: "unavailable" }))
    try {
      const hook = await createHook(h(), { url: rx.url, event_types: ["showcase.trashed"] })
      const showcase = (await sandbox(h()).post("/showcases", { name: "Doomed" })).body.data.id
      await sandbox(h()).del(`/showcases/${showcase}`)
      for (let n = 1; n <= RETRY_DELAYS.length + 1; n++) {
        const [delivery] = await eventually(async () => {
          const list = await deliveriesOf(h(), hook)
          expect(list[0]?.attempt_count).toBe(n)
          return list
        })
        const attempts = await attemptsOf(h(), hook, delivery!.id)
        const last = attempts[n - 1]!
        expect(last.number).toBe(n)
        // The receiver's own answer, as recorded in the attempt: its status and its body, no transport error.
        expect(last).toMatchObject({ http_status: 503, transport_error: null, response_excerpt: null })
        if (n <= RETRY_DELAYS.length) {
          expect(delivery!.status).toBe("pending")
          expect(Date.parse(last.next_attempt_at) - Date.parse(last.finished_at)).toBe(RETRY_DELAYS[n - 1])
          h().advance(RETRY_DELAYS[n - 1]!)
        } else {
          expect(delivery!.status).toBe("dead")
          expect(delivery!.next_attempt_at).toBeNull()
          expect(last.next_attempt_at).toBeNull()
        }
      }
      expect(rx.received).toHaveLength(8)
      // 27 h 35 min passed: the last three failures are within 24 hours.
      await eventually(async () =>
        expect(await healthOf(h(), hook)).toMatchObject({ dead_24h: 1, pending: 0, consecutive_failures: 8, failed_24h: 3, delivered_24h: 0 })
      )
      // Dead is final: no more attempts.
      h().advance(DAY)
      await new Promise((r) => setTimeout(r, 600))
      expect(rx.received).toHaveLength(8)
      await switchOff(h(), hook)
    } finally {
      await rx.close()
    }
  })

  it("24-hour health counts leave their window as time passes", async () => {
    const { hook } = kept!
    // The dead-letter test moved the clock more than a day past this webhook's deliveries.
    await eventually(async () => expect(await healthOf(h(), hook)).toMatchObject({ delivered_24h: 0, failed_24h: 0, pending: 0 }))
    expect(typeof (await healthOf(h(), hook)).last_success_at).toBe("string")
  })

  it("§8.3: deliveries and attempts are kept 30 days, then 404", async () => {
    const { hook, delivery, attempt } = kept!
    expect((await sandbox(h()).get(`/webhooks/${hook.id}/deliveries/${delivery}`)).status).toBe(200)
    h().advance(31 * DAY)
    expectError(await sandbox(h()).get(`/webhooks/${hook.id}/deliveries/${delivery}`), 404, "not_found")
    expectError(await sandbox(h()).get(`/webhooks/${hook.id}/deliveries/${delivery}/attempts`), 404, "not_found")
    expectError(await sandbox(h()).get(`/webhooks/${hook.id}/deliveries/${delivery}/attempts/${attempt}`), 404, "not_found")
    expect(await deliveriesOf(h(), hook)).toEqual([])
  })
})

describe("webhook delivery across processes [postgresql]", () => {
  // `owner` holds the database and runs no worker; the others are server processes on it.
  let owner: Harness
  const started: Array<Harness> = []
  const serverProcess = async () => {
    const server = await startHarness("postgresql", { databaseUrl: owner.databaseUrl!, account: owner.account })
    started.push(server)
    return server
  }
  beforeAll(async () => {
    owner = await startHarness("postgresql", { workers: false })
  }, 60_000)
  afterAll(async () => {
    for (const server of started.reverse()) await server.close()
    await owner?.close()
  }, 60_000)

  it("a server restart loses no pending delivery, and two processes send each event once", async () => {
    const down = await receiver()
    const port = down.port
    await down.close()
    const first = await serverProcess()
    const hook = await createHook(owner, { url: `http://127.0.0.1:${port}/hook`, event_types: ["tag.created"] })
    const groups: Array<string> = []
    for (let i = 0; i < 4; i++) groups.push((await sandbox(owner).post("/tags", { name: `restart-${Date.now()}-${i}` })).body.data.id)
    const eventIds = await Promise.all(groups.map(async (id) => (await eventOf(owner, id, "tag.created")).id as string))
    await eventually(async () => {
      const list = await deliveriesOf(owner, hook)
      expect(list.map((d) => d.attempt_count)).toEqual([1, 1, 1, 1])
    })
    // The process stops with every delivery pending; the receiver comes back; two new processes start.
    await first.close()
    started.splice(started.indexOf(first), 1)
    const back = await receiver(() => ({ status: 200 }), port)
    try {
      const [second, third] = [await serverProcess(), await serverProcess()]
      second.advance(5 * SECOND)
      third.advance(5 * SECOND)
      await eventually(async () => expect((await deliveriesOf(owner, hook)).map((d) => d.status)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]))
      expect(back.received.map((r) => String(r.headers["webhook-id"])).sort()).toEqual([...eventIds].sort())
      for (const d of await deliveriesOf(owner, hook)) expect((await attemptsOf(owner, hook, d.id)).map((a) => a.number)).toEqual([1, 2])
      await switchOff(owner, hook)
    } finally {
      await back.close()
    }
  })
})

describe("webhook sender (Node)", () => {
  const request = (url: string, secret: string, environment: "production" | "sandbox" = "production") => ({
    url,
    environment,
    body: JSON.stringify({ object: "event", id: "evt_000000001" }),
    messageId: "evt_000000001",
    timestamp: Math.floor(Date.now() / 1000),
    secrets: [secret],
    timeoutMs: 2000
  })
  const secret = `whsec_${Buffer.from("0123456789abcdef0123456789").toString("base64")}`

  it("refuses a public name that resolves to a loopback or metadata address, and never connects", async () => {
    const rx = await receiver()
    try {
      for (const address of ["127.0.0.1", "169.254.169.254", "10.0.0.7"]) {
        const sender = makeNodeWebhookSender({ resolve: async () => [{ address, family: 4 }] })
        const res = await Effect.runPromise(sender.send(request(`https://hooks.example.com:${rx.port}/hook`, secret)))
        expect([address, res.httpStatus, res.transportError]).toEqual([address, null, "destination_not_allowed"])
      }
      expect(rx.received).toHaveLength(0)
    } finally {
      await rx.close()
    }
  })

  it("to an allowed local port, a closed port, a port that resets and one that answers garbage fail alike (connection_failed)", async () => {
    const closed = await receiver()
    await closed.close()
    const sockets: Array<Socket> = []
    const reset = createNetServer((socket) => socket.destroy())
    const garbage = createNetServer((socket) => {
      sockets.push(socket)
      socket.end("SSH-2.0-OpenSSH_9.6\r\n")
    })
    const ports = [closed.port]
    for (const server of [reset, garbage]) {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      ports.push((server.address() as AddressInfo).port)
    }
    try {
      const sender = makeNodeWebhookSender({ localPorts: new Set(ports) })
      const errors = []
      for (const port of ports) errors.push((await Effect.runPromise(sender.send(request(`http://127.0.0.1:${port}/`, secret, "sandbox")))).transportError)
      expect(errors).toEqual(["connection_failed", "connection_failed", "connection_failed"])
    } finally {
      for (const socket of sockets) socket.destroy()
      for (const server of [reset, garbage]) await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  it("a sandbox name that resolves to loopback is held to the allowed ports; an allowed local receiver's answer is not kept", async () => {
    const rx = await receiver(() => ({ status: 200, body: "local secret page" }))
    try {
      const toLoopback = async () => [{ address: "127.0.0.1", family: 4 }]
      const refused = await Effect.runPromise(
        makeNodeWebhookSender({ resolve: toLoopback }).send(request(`http://dev.example.com:${rx.port}/hook`, secret, "sandbox"))
      )
      expect(refused).toMatchObject({ httpStatus: null, transportError: "destination_not_allowed" })
      expect(rx.received).toHaveLength(0)
      const allowed = await Effect.runPromise(
        makeNodeWebhookSender({ resolve: toLoopback, localPorts: new Set([rx.port]) }).send(request(`http://dev.example.com:${rx.port}/hook`, secret, "sandbox"))
      )
      expect(allowed).toMatchObject({ httpStatus: 200, transportError: null, responseText: null })
      expect(rx.received).toHaveLength(1)
    } finally {
      await rx.close()
    }
  })

  it("with allowLocalWebhooks, a production webhook reaches a local http receiver, signed; redirects are not followed", async () => {
    const rx = await receiver((n) => (n === 0 ? { status: 200 } : { status: 302 }))
    try {
      const sender = makeNodeWebhookSender({ allowLocal: true })
      const sent = request(rx.url, secret)
      const res = await Effect.runPromise(sender.send(sent))
      expect(res.httpStatus).toBe(200)
      expect(() => new Webhook(secret).verify(rx.received[0]!.body, headersOf(rx.received[0]!))).not.toThrow()
      const redirected = await Effect.runPromise(sender.send(sent))
      expect(redirected.httpStatus).toBe(302)
      expect(rx.received).toHaveLength(2)
      // Without the flag, production refuses http.
      const refused = await Effect.runPromise(makeNodeWebhookSender().send(sent))
      expect(refused.transportError).toBe("destination_not_allowed")
      expect(rx.received).toHaveLength(2)
    } finally {
      await rx.close()
    }
  })
})
