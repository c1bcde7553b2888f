/**
 * Retention (§8.3), row by row: each item is there just before its time is over, and after it
 * reads as missing (404, absent from its list); the housekeeping then removes it from the
 * store (seen through the operator's `storedRecord`, as no read shows it any more), a stream's
 * record once its week is past (`STREAM_SLICE`).
 *
 * One server per store for the whole file: its clock only moves forward, so every test makes
 * its own data at the current time and moves the clock past that data's retention.
 */
import { randomUUID } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, freshKey, type Harness, listenLocalReceiver } from "../support/harness.js"
import { eventually } from "../support/eventually.js"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
/**
 * The streams (events, the request log, audit entries, webhook attempts) may be kept in slices
 * of a week (PostgreSQL: a partition per week, dropped whole): what is past its time reads as
 * missing at once, and leaves the store once its whole week is past.
 */
const STREAM_SLICE = 7 * DAY

type Env = "production" | "sandbox"

const secretOf = (h: Harness, env: Env) => (env === "production" ? h.live : h.test)
const tenantOf = (h: Harness, env: Env) => ({ accountId: h.account.account.id, environment: env })

const api = (h: Harness, env: Env = "production") => ({
  get: (path: string, headers: Record<string, string> = {}) => h.request("GET", `/api/v3${path}`, { secret: secretOf(h, env), headers }),
  post: (path: string, json?: unknown, idempotencyKey?: string) =>
    h.request("POST", `/api/v3${path}`, { secret: secretOf(h, env), json, ...(idempotencyKey !== undefined ? { idempotencyKey } : {}) }),
  patch: (path: string, json: unknown) => h.request("PATCH", `/api/v3${path}`, { secret: secretOf(h, env), json })
})

const idsOf = (res: { body: { data: ReadonlyArray<{ id: string }> } }) => res.body.data.map((item) => item.id)


/** Poll until the operation has finished. */
const settled = (h: Harness, id: string) =>
  eventually(async () => {
    const res = await api(h).get(`/operations/${id}`)
    expect(["succeeded", "failed", "canceled"]).toContain(res.body.data.status)
    return res.body.data
  })

/** A webhook receiver on 127.0.0.1 that answers 200. */
const receiver = async () => {
  let received = 0
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      received++
      res.writeHead(200, { "content-type": "text/plain" }).end("ok")
    })
  })
  await listenLocalReceiver(server)
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received: () => received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

eachStore("retention (§8.3)", (h) => {
  it("events: kept 30 days, then 404 and absent from the list; the housekeeping removes them", async () => {
    const showcase = (await api(h()).post("/showcases", { name: "Kept 30 days" })).body.data
    const events = await api(h()).get(`/events?resource_id=${showcase.id}&type=showcase.created`)
    expect(events.status, events.text).toBe(200)
    const [event] = idsOf(events)
    expect(event).toMatch(/^evt_/)

    h().advance(30 * DAY - MINUTE)
    expect((await api(h()).get(`/events/${event}`)).status).toBe(200)
    expect(idsOf(await api(h()).get(`/events?resource_id=${showcase.id}`))).toContain(event)
    await h().housekeeping()
    expect(await h().storedRecord(tenantOf(h(), "production"), "event", event!)).toBeDefined()

    h().advance(2 * MINUTE)
    expectError(await api(h()).get(`/events/${event}`), 404, "not_found")
    expect(idsOf(await api(h()).get(`/events?resource_id=${showcase.id}`))).not.toContain(event)
    h().advance(STREAM_SLICE)
    // A pass skips a row a worker holds at that moment (the fan-out marking it): the next takes it.
    await eventually(async () => {
      await h().housekeeping()
      expect(await h().storedRecord(tenantOf(h(), "production"), "event", event!)).toBeUndefined()
    })
    // The resource itself is not subject to retention.
    expect((await api(h()).get(`/showcases/${showcase.id}`)).status).toBe(200)
  })

  it("audit trail: a request-log entry and an audit entry are kept 30 days, then 404 and absent", async () => {
    const clientRequestId = randomUUID()
    const created = await h().request("POST", "/api/v3/showcases", {
      secret: h().live,
      json: { name: "Audited" },
      headers: { "x-client-request-id": clientRequestId }
    })
    expect(created.status, created.text).toBe(201)
    const requestId = created.headers.get("x-request-id")!
    const entries = await api(h()).get(`/audit-entries?resource_id=${created.body.data.id}`)
    expect(entries.status, entries.text).toBe(200)
    const [entry] = idsOf(entries)
    expect(entry).toMatch(/^aud_/)
    const requestsOf = async () => idsOf(await api(h()).get(`/requests?client_request_id=${clientRequestId}`))

    h().advance(30 * DAY - MINUTE)
    expect((await api(h()).get(`/requests/${requestId}`)).status).toBe(200)
    expect(await requestsOf()).toEqual([requestId])
    expect((await api(h()).get(`/audit-entries/${entry}`)).status).toBe(200)
    expect(idsOf(await api(h()).get(`/audit-entries?resource_id=${created.body.data.id}`))).toEqual([entry])

    h().advance(2 * MINUTE)
    expectError(await api(h()).get(`/requests/${requestId}`), 404, "not_found")
    expect(await requestsOf()).toEqual([])
    expectError(await api(h()).get(`/audit-entries/${entry}`), 404, "not_found")
    expect(idsOf(await api(h()).get(`/audit-entries?resource_id=${created.body.data.id}`))).toEqual([])
    h().advance(STREAM_SLICE)
    await h().housekeeping()
    expect(await h().storedRecord(tenantOf(h(), "production"), "request", requestId)).toBeUndefined()
    expect(await h().storedRecord(tenantOf(h(), "production"), "audit_entry", entry!)).toBeUndefined()
  })

  it("operations and their items: kept 30 days from creation, then 404 (items too) and absent from the list", async () => {
    const started = await api(h()).post("/operations", {
      type: "showcases.create",
      items: [{ key: "a", name: "Op A" }, { key: "b", name: "Op B" }]
    })
    expect(started.status, started.text).toBe(202)
    const operation = started.body.data
    expect(Date.parse(operation.expires_at) - Date.parse(operation.created_at)).toBe(30 * DAY)
    expect((await settled(h(), operation.id)).status).toBe("succeeded")
    const items = idsOf(await api(h()).get(`/operations/${operation.id}/items`))
    expect(items).toHaveLength(2)

    h().advance(29 * DAY)
    await h().housekeeping()
    expect((await api(h()).get(`/operations/${operation.id}`)).body.data).toMatchObject({ id: operation.id, status: "succeeded" })
    expect(idsOf(await api(h()).get(`/operations/${operation.id}/items`))).toEqual(items)
    expect(idsOf(await api(h()).get("/operations?limit=200"))).toContain(operation.id)

    h().advance(DAY - MINUTE)
    expect((await api(h()).get(`/operations/${operation.id}`)).status).toBe(200)
    h().advance(2 * MINUTE)
    expectError(await api(h()).get(`/operations/${operation.id}`), 404, "not_found")
    expectError(await api(h()).get(`/operations/${operation.id}/items`), 404, "not_found")
    expect(idsOf(await api(h()).get("/operations?limit=200"))).not.toContain(operation.id)
    expectError(await api(h()).post(`/operations/${operation.id}/cancellations`), 404, "not_found")

    await h().housekeeping()
    const tenant = tenantOf(h(), "production")
    expect(await h().storedRecord(tenant, "operation", operation.id)).toBeUndefined()
    for (const item of items) expect(await h().storedRecord(tenant, "operation_item", item)).toBeUndefined()
    expectError(await api(h()).get(`/operations/${operation.id}`), 404, "not_found")
    // What the operation made stays.
    const made = await api(h()).get("/showcases?limit=200")
    expect(made.body.data.map((s: { name: string }) => s.name)).toEqual(expect.arrayContaining(["Op A", "Op B"]))
  })

  it("webhook deliveries and attempts: kept 30 days, then 404 and absent from their lists", async () => {
    const rx = await receiver()
    try {
      const hookRes = await api(h(), "sandbox").post("/webhooks", { url: rx.url, event_types: ["showcase.created"] })
      expect(hookRes.status, hookRes.text).toBe(201)
      const hook = hookRes.body.data.id
      await api(h(), "sandbox").post("/showcases", { name: "Delivered" })
      const [delivery] = await eventually(async () => {
        const list = await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries`)
        expect(list.body.data.map((d: { status: string }) => d.status)).toEqual(["succeeded"])
        return idsOf(list)
      })
      const [attempt] = idsOf(await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries/${delivery}/attempts`))
      expect(attempt).toMatch(/^wha_/)
      await api(h(), "sandbox").patch(`/webhooks/${hook}`, { status: "inactive" })

      h().advance(30 * DAY - MINUTE)
      await h().housekeeping()
      expect((await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries/${delivery}`)).status).toBe(200)
      expect(idsOf(await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries`))).toEqual([delivery])
      expect(idsOf(await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries/${delivery}/attempts`))).toEqual([attempt])
      expect((await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries/${delivery}/attempts/${attempt}`)).status).toBe(200)

      h().advance(2 * MINUTE)
      expectError(await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries/${delivery}`), 404, "not_found")
      expect(idsOf(await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries`))).toEqual([])
      expectError(await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries/${delivery}/attempts`), 404, "not_found")
      expectError(await api(h(), "sandbox").get(`/webhooks/${hook}/deliveries/${delivery}/attempts/${attempt}`), 404, "not_found")
      h().advance(STREAM_SLICE)
      await h().housekeeping()
      const tenant = tenantOf(h(), "sandbox")
      expect(await h().storedRecord(tenant, "webhook_delivery", delivery!)).toBeUndefined()
      expect(await h().storedRecord(tenant, "webhook_delivery_attempt", attempt!)).toBeUndefined()
      // The webhook itself stays.
      expect((await api(h(), "sandbox").get(`/webhooks/${hook}`)).status).toBe(200)
    } finally {
      await rx.close()
    }
  })

  it("idempotency receipts: replayed at 47 h; after 48 h and the housekeeping the same key executes anew", async () => {
    const key = freshKey()
    const body = { name: "Once per key" }
    const first = await api(h()).post("/showcases", body, key)
    expect(first.status, first.text).toBe(201)
    expect(first.headers.get("idempotent-replayed")).toBeNull()

    h().advance(47 * HOUR)
    await h().housekeeping()
    const replayed = await api(h()).post("/showcases", body, key)
    expect(replayed.status, replayed.text).toBe(201)
    expect(replayed.headers.get("idempotent-replayed")).toBe("true")
    expect(replayed.body.data.id).toBe(first.body.data.id)

    h().advance(HOUR + MINUTE)
    await h().housekeeping()
    const again = await api(h()).post("/showcases", body, key)
    expect(again.status, again.text).toBe(201)
    expect(again.headers.get("idempotent-replayed")).toBeNull()
    expect(again.body.data.id).not.toBe(first.body.data.id)
    expect((await api(h()).get(`/showcases/${again.body.data.id}`)).status).toBe(200)
    // And the new receipt replays as the first did.
    const replayedAgain = await api(h()).post("/showcases", body, key)
    expect(replayedAgain.headers.get("idempotent-replayed")).toBe("true")
    expect(replayedAgain.body.data.id).toBe(again.body.data.id)
  })

  it("previous policy versions: kept 365 days (the active one always); the next write drops them from the credential", async () => {
    const created = await api(h()).post("/credentials", { name: "versions kept a year", policies: [{ template: "read_only" }] })
    expect(created.status, created.text).toBe(201)
    const id = created.body.data.id
    const patched = await api(h()).patch(`/credentials/${id}`, { policies: [{ template: "full_access" }] })
    expect(patched.status, patched.text).toBe(200)
    const versions = async () =>
      (await api(h()).get(`/credentials/${id}/policy-versions`)).body.data.map((v: { version: number; active: boolean }) => [v.version, v.active])

    h().advance(365 * DAY - MINUTE)
    await h().housekeeping()
    expect(await versions()).toEqual([
      [2, true],
      [1, false]
    ])

    h().advance(2 * MINUTE)
    expect(await versions()).toEqual([[2, true]])
    const stored = async () =>
      ((await h().storedRecord(tenantOf(h(), "production"), "credential", id))?.policy_versions as Array<{ version: number }>).map((v) => v.version)
    expect(await stored()).toEqual([1, 2])
    expect((await api(h()).patch(`/credentials/${id}`, { name: "renamed a year on" })).status).toBe(200)
    expect(await stored()).toEqual([2])
    expect(await versions()).toEqual([[2, true]])
  })
})

eachStore(
  "retention of operations whatever their status (§8.3: 30 days from creation)",
  (h) => {
    it("an operation still queued at 30 days goes too: 404, items gone", async () => {
      // No workers: the operation stays queued.
      const started = await api(h()).post("/operations", { type: "showcases.create", items: [{ key: "a", name: "Never run" }] })
      expect(started.status, started.text).toBe(202)
      const operation = started.body.data
      const [item] = idsOf(await api(h()).get(`/operations/${operation.id}/items`))
      h().advance(30 * DAY - MINUTE)
      expect((await api(h()).get(`/operations/${operation.id}`)).body.data.status).toBe("queued")
      h().advance(2 * MINUTE)
      expectError(await api(h()).get(`/operations/${operation.id}`), 404, "not_found")
      await h().housekeeping()
      const tenant = tenantOf(h(), "production")
      expect(await h().storedRecord(tenant, "operation", operation.id)).toBeUndefined()
      expect(await h().storedRecord(tenant, "operation_item", item!)).toBeUndefined()
    })
  },
  { workers: false }
)
