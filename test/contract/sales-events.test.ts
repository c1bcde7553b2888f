/**
 * Sales events and the gateways' notification endpoint (`POST /gateways/{gateway_id}/notifications`,
 * outside `/api/v3`; `GET /sales/events`): notifications signed with the Standard Webhooks
 * scheme (signed here with the `standardwebhooks` package, as a gateway adapter would), each
 * way a notification is refused with nothing recorded (forged, stale or future, unsigned,
 * unknown, trashed or disabled gateway, a body that is not a notification, too large), the
 * repeat of an event ID (sequential and concurrent) changing nothing, access granted and
 * revoked in the unit of work of the record, the rotation's grace period, sales switched off,
 * the list's filters, permissions and the sandbox reset. Decisions: docs/sales.md.
 */
import { Webhook } from "standardwebhooks"
import { expect, it } from "vitest"
import { eachStore, type Harness, type Response } from "../support/harness.js"
import { api, created, credentialWith, newProduct } from "../support/api.js"
import { expectError } from "../support/expect.js"

interface Sale {
  readonly client: ReturnType<typeof api>
  readonly product: Record<string, any>
  readonly delivery: Record<string, any>
  readonly user: Record<string, any>
  readonly gateway: Record<string, any>
  /** The gateway's signing secret. */
  readonly secret: string
}

/** An empty sandbox with a product, a delivery of it for 30 days, a buyer and a Stripe gateway. */
const setup = async (h: Harness): Promise<Sale> => {
  const client = api(h, h.test)
  expect((await client.post("/sandbox/resets")).status).toBeLessThan(300)
  const product = await newProduct(h, h.test)
  const delivery = await created(client.post("/sales/deliveries", { name: "Course, 30 days", products: [{ product_id: product.id, duration_days: 30 }] }))
  const user = await created(client.post("/users", { name: "Buyer", email: `buyer-${Math.random().toString(36).slice(2)}@example.com` }))
  const gateway = await created(client.post("/sales/gateways", { kind: "stripe", name: "Stripe" }))
  return { client, product, delivery, user, gateway, secret: gateway.secret.value }
}

let counter = 0
const eventId = () => `evt_gw_${Date.now()}_${++counter}`

/** A notification's body for the sale. */
const body = (sale: Sale, fields: Record<string, unknown> = {}) => ({
  id: eventId(),
  type: "approved",
  occurred_at: new Date().toISOString(),
  sale_id: "ch_3Nxyz",
  delivery_id: sale.delivery.id,
  user_id: sale.user.id,
  amount: 19900,
  currency: "BRL",
  ...fields
})

interface Signing {
  /** Sign with this secret instead of the gateway's. */
  readonly secret?: string
  /** Sign at this instant (default now). */
  readonly at?: Date
  /** Send these headers instead of the signature's. */
  readonly headers?: Record<string, string>
  /** Sign this text but send the body. */
  readonly signed?: string
}

/** POST a notification, signed as a Standard Webhooks sender signs (`webhook-id`, `-timestamp`, `-signature`). */
const notify = (h: Harness, gatewayId: string, secret: string, payload: unknown, signing: Signing = {}): Promise<Response> => {
  const text = typeof payload === "string" ? payload : JSON.stringify(payload)
  const at = signing.at ?? new Date()
  const messageId = `msg_${++counter}`
  const signature = new Webhook(signing.secret ?? secret).sign(messageId, at, signing.signed ?? text)
  const headers = signing.headers ?? {
    "content-type": "application/json",
    "webhook-id": messageId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signature
  }
  return h.request("POST", `/gateways/${gatewayId}/notifications`, { raw: text, headers, idempotencyKey: null })
}

const salesEventsOf = async (sale: Sale, query = "") => {
  const res = await sale.client.get(`/sales/events${query}`)
  expect(res.status, res.text).toBe(200)
  return res.body.data as Array<Record<string, any>>
}

const enrollmentsOf = async (sale: Sale) => (await sale.client.get(`/enrollments?user_id=${sale.user.id}`)).body.data as Array<Record<string, any>>

/** Nothing was recorded: no sales event, no enrollment, no sales_event.recorded event. */
const expectNothingRecorded = async (sale: Sale) => {
  expect(await salesEventsOf(sale)).toEqual([])
  expect(await enrollmentsOf(sale)).toEqual([])
  expect((await sale.client.get("/events?type=sales_event.recorded")).body.data).toEqual([])
}

eachStore("sales events and gateway notifications", (h) => {
  it("an approved notification: 200 with the sales event, recorded with the delivery's products; the buyer enrolled through the delivery; sales_event.recorded and its audit entry by the gateway", async () => {
    const sale = await setup(h())
    const sent = body(sale, { funnel_id: null })
    const res = await notify(h(), sale.gateway.id, sale.secret, sent)
    expect(res.status, res.text).toBe(200)
    expect(res.headers.get("x-request-id")).toMatch(/^req_/)
    expect(res.headers.get("idempotent-replayed")).toBeNull()
    const event = res.body.data
    expect(Object.keys(event)).toEqual([
      "object", "id", "gateway_id", "gateway_event_id", "type", "sale_id", "delivery_id", "product_ids", "user_id", "funnel_id",
      "funnel_step_id", "amount", "currency", "occurred_at", "created_at", "updated_at", "revision"
    ])
    expect(event).toMatchObject({
      object: "sales_event",
      gateway_id: sale.gateway.id,
      gateway_event_id: sent.id,
      type: "approved",
      sale_id: "ch_3Nxyz",
      delivery_id: sale.delivery.id,
      product_ids: [sale.product.id],
      user_id: sale.user.id,
      funnel_id: null,
      funnel_step_id: null,
      amount: 19900,
      currency: "BRL",
      occurred_at: new Date(sent.occurred_at).toISOString()
    })
    expect(event.id).toMatch(/^sev_[0-9A-Za-z]{9}$/)
    expect((await sale.client.get(`/sales/events/${event.id}`)).body.data).toEqual(event)
    const [enrollment, ...others] = await enrollmentsOf(sale)
    expect(others).toEqual([])
    expect(enrollment).toMatchObject({ product_id: sale.product.id, status: "active", source: "delivery", delivery_id: sale.delivery.id })
    const recorded = (await sale.client.get(`/events?type=sales_event.recorded&resource_id=${event.id}`)).body.data
    expect(recorded).toHaveLength(1)
    expect(recorded[0].data.object).toEqual(event)
    expect(recorded[0].request_id).toBe(res.headers.get("x-request-id"))
    const audit = (await sale.client.get(`/audit-entries?resource_id=${event.id}`)).body.data
    expect(audit.map((e: any) => [e.action, e.actor.kind, e.actor.credential_id])).toEqual([["sales_event.recorded", "gateway", sale.gateway.id]])
    const enrolled = (await sale.client.get(`/audit-entries?resource_id=${enrollment!.id}`)).body.data
    expect(enrolled.map((e: any) => [e.action, e.actor.kind, e.actor.credential_id])).toEqual([["enrollment.created", "gateway", sale.gateway.id]])
  })

  it("a repeated event ID changes nothing and answers the first's sales event (Idempotent-Replayed), even with another body; a concurrent twin too", async () => {
    const sale = await setup(h())
    const sent = body(sale)
    const first = await notify(h(), sale.gateway.id, sale.secret, sent)
    expect(first.status).toBe(200)
    const again = await notify(h(), sale.gateway.id, sale.secret, { ...sent, type: "refunded", amount: 1 })
    expect(again.status, again.text).toBe(200)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data).toEqual(first.body.data)
    expect(await salesEventsOf(sale)).toHaveLength(1)
    expect((await enrollmentsOf(sale)).map((e) => e.status)).toEqual(["active"])
    expect((await sale.client.get("/events?type=sales_event.recorded")).body.data).toHaveLength(1)
    // Five copies of a new event at once: one sales event, every answer names it.
    const twin = body(sale, { type: "subscription_renewed" })
    const answers = await Promise.all(Array.from({ length: 5 }, () => notify(h(), sale.gateway.id, sale.secret, twin)))
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
    expect(new Set(answers.map((r) => r.body.data.id)).size).toBe(1)
    expect(answers.filter((r) => r.headers.get("idempotent-replayed") === null)).toHaveLength(1)
    expect(await salesEventsOf(sale, "?type=subscription_renewed")).toHaveLength(1)
    // The same event ID at another gateway is another event.
    const other = await created(sale.client.post("/sales/gateways", { kind: "generic", name: "Other" }))
    const elsewhere = await notify(h(), other.id, other.secret.value, sent)
    expect(elsewhere.status).toBe(200)
    expect(elsewhere.body.data.id).not.toBe(first.body.data.id)
  })

  it("refused with nothing recorded: a forged signature, a body changed after signing, no signature, a stale or future timestamp (401 unauthenticated with the reason)", async () => {
    const sale = await setup(h())
    const forged = await notify(h(), sale.gateway.id, sale.secret, body(sale), { secret: "whsec_" + Buffer.from("x".repeat(24)).toString("base64") })
    expect(expectError(forged, 401, "unauthenticated").reason).toBe("signature_invalid")
    const sent = body(sale)
    const tampered = await notify(h(), sale.gateway.id, sale.secret, { ...sent, amount: 1 }, { signed: JSON.stringify(sent) })
    expect(expectError(tampered, 401, "unauthenticated").reason).toBe("signature_invalid")
    // The raw bytes are verified before they are parsed: a forged body that is not even JSON is a 401, not a 400.
    const forgedJunk = await notify(h(), sale.gateway.id, sale.secret, "{not json", { secret: "whsec_" + Buffer.from("y".repeat(24)).toString("base64") })
    expect(expectError(forgedJunk, 401, "unauthenticated").reason).toBe("signature_invalid")
    const unsigned = await notify(h(), sale.gateway.id, sale.secret, body(sale), { headers: { "content-type": "application/json" } })
    expect(expectError(unsigned, 401, "unauthenticated").reason).toBe("signature_missing")
    const stale = await notify(h(), sale.gateway.id, sale.secret, body(sale), { at: new Date(Date.now() - 6 * 60 * 1000) })
    expect(expectError(stale, 401, "unauthenticated").reason).toBe("timestamp_out_of_window")
    const future = await notify(h(), sale.gateway.id, sale.secret, body(sale), { at: new Date(Date.now() + 6 * 60 * 1000) })
    expect(expectError(future, 401, "unauthenticated").reason).toBe("timestamp_out_of_window")
    // Within the window either way: accepted.
    expect((await notify(h(), sale.gateway.id, sale.secret, body(sale, { type: "canceled" }), { at: new Date(Date.now() - 4 * 60 * 1000) })).status).toBe(200)
    expect(await salesEventsOf(sale, "?type=approved")).toEqual([])
    expect(await enrollmentsOf(sale)).toEqual([])
  })

  it("refused with nothing recorded: an unknown, malformed or trashed gateway answers as a bad signature (401 signature_invalid), a disabled one 409 gateway_disabled; another method 405; a query parameter 400", async () => {
    const sale = await setup(h())
    // Whoever does not hold the secret cannot tell a gateway that exists from one that does not.
    const answerOf = async (gatewayId: string, options: Parameters<typeof notify>[4] = {}) => {
      const res = await notify(h(), gatewayId, sale.secret, body(sale), options)
      return [res.status, res.body.error?.code, res.body.error?.reason]
    }
    const otherSecret = { secret: "whsec_" + Buffer.from("z".repeat(24)).toString("base64") }
    const badSignature = await answerOf(sale.gateway.id, otherSecret)
    expect(badSignature).toEqual([401, "unauthenticated", "signature_invalid"])
    for (const unknown of ["gtw_000000001", "not-a-gateway"]) {
      expect([unknown, await answerOf(unknown, otherSecret)]).toEqual([unknown, badSignature])
      // Even signed with a real gateway's secret, another gateway's path is not that gateway.
      expect([unknown, await answerOf(unknown)]).toEqual([unknown, badSignature])
      expect([unknown, await answerOf(unknown, { headers: { "content-type": "application/json" } })]).toEqual([
        unknown,
        await answerOf(sale.gateway.id, { headers: { "content-type": "application/json" } })
      ])
    }
    expect((await sale.client.patch(`/sales/gateways/${sale.gateway.id}`, { status: "disabled" })).status).toBe(200)
    expectError(await notify(h(), sale.gateway.id, sale.secret, body(sale)), 409, "state_conflict", { reason: "gateway_disabled" })
    // A disabled gateway tells an unsigned caller nothing about its state.
    expect(expectError(await notify(h(), sale.gateway.id, sale.secret, body(sale), { secret: "whsec_AAAA" }), 401, "unauthenticated").reason).toBe("signature_invalid")
    expect((await sale.client.patch(`/sales/gateways/${sale.gateway.id}`, { status: "active" })).status).toBe(200)
    expect((await sale.client.del(`/sales/gateways/${sale.gateway.id}`)).status).toBe(200)
    expect(expectError(await notify(h(), sale.gateway.id, sale.secret, body(sale)), 401, "unauthenticated").reason).toBe("signature_invalid")
    await expectNothingRecorded(sale)
    const get = await h().request("GET", `/gateways/${sale.gateway.id}/notifications`)
    expectError(get, 405, "method_not_allowed")
    expect(get.headers.get("allow")).toBe("POST")
    const query = await h().request("POST", `/gateways/${sale.gateway.id}/notifications?debug=1`, { raw: "{}", headers: { "content-type": "application/json" }, idempotencyKey: null })
    expectError(query, 400, "unknown_parameter", { parameter: "debug" })
  })

  it("a signed body that is not a notification: 400 for JSON that is not an object, 415 for another type, 413 past 1 MiB, 422 itemized for fields; unknown delivery, user or funnel 422 not_found; nothing recorded", async () => {
    const sale = await setup(h())
    expectError(await notify(h(), sale.gateway.id, sale.secret, "not json"), 400, "malformed_json")
    expectError(await notify(h(), sale.gateway.id, sale.secret, "[1,2]"), 400, "malformed_json")
    const text = JSON.stringify(body(sale))
    const typed = await notify(h(), sale.gateway.id, sale.secret, text, {
      headers: { "content-type": "text/plain", "webhook-id": "m", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": new Webhook(sale.secret).sign("m", new Date(), text) }
    })
    expectError(typed, 415, "unsupported_media_type")
    expectError(await notify(h(), sale.gateway.id, sale.secret, { ...body(sale), note: "x".repeat(1024 * 1024) }), 413, "payload_too_large")
    const fields = expectError(await notify(h(), sale.gateway.id, sale.secret, { id: "", type: "paid", amount: -1, currency: "brl" }), 422, "validation_failed")
    expect(fields.details.map((d) => d.field).sort()).toEqual(["amount", "currency", "delivery_id", "id", "occurred_at", "sale_id", "type", "user_id"])
    expectError(await notify(h(), sale.gateway.id, sale.secret, { ...body(sale), extra: 1 }), 422, "unknown_field", { field: "extra" })
    // The gateway's IDs are one line: no CR, LF or other control character (they reach CSV exports and logs).
    for (const [field, value] of [["id", "evt-1\r\nX-Injected: 1"], ["id", "evt\u0000"], ["sale_id", "sale\n2"], ["id", "evt\u2028"], ["sale_id", "tab\there"]] as const) {
      const refused = await notify(h(), sale.gateway.id, sale.secret, body(sale, { [field]: value }))
      expectError(refused, 422, "validation_failed", { field, code: "invalid_value", reason: "invalid_characters" })
    }
    const refs = expectError(
      await notify(h(), sale.gateway.id, sale.secret, body(sale, { delivery_id: "dlv_000000001", user_id: "usr_000000001", funnel_id: "fnl_000000001" })),
      422,
      "validation_failed"
    )
    expect(refs.details.map((d) => [d.field, d.reason])).toEqual([["delivery_id", "not_found"], ["user_id", "not_found"], ["funnel_id", "not_found"]])
    expectError(await notify(h(), sale.gateway.id, sale.secret, body(sale, { funnel_step_id: "fst_000000001" })), 422, "validation_failed", { field: "funnel_step_id", reason: "requires_funnel_id" })
    expectError(
      await notify(h(), sale.gateway.id, sale.secret, body(sale, { occurred_at: new Date(Date.now() + 60 * 60 * 1000).toISOString() })),
      422,
      "validation_failed",
      { field: "occurred_at", reason: "in_future" }
    )
    await expectNothingRecorded(sale)
  })

  it("access follows the sale: refunded and chargeback cancel the delivery's enrollment; subscription_renewed grants again and extends; subscription_expired cancels", async () => {
    const sale = await setup(h())
    const approvedAt = new Date(Date.now() - 10 * 24 * 60 * 60 * 1000)
    expect((await notify(h(), sale.gateway.id, sale.secret, body(sale, { occurred_at: approvedAt.toISOString() }))).status).toBe(200)
    const [granted] = await enrollmentsOf(sale)
    expect(Date.parse(granted!.expires_at)).toBe(approvedAt.getTime() + 30 * 24 * 60 * 60 * 1000)
    const renewedAt = new Date()
    expect((await notify(h(), sale.gateway.id, sale.secret, body(sale, { type: "subscription_renewed", occurred_at: renewedAt.toISOString() }))).status).toBe(200)
    const [extended, ...none] = await enrollmentsOf(sale)
    expect(none).toEqual([])
    expect(extended).toMatchObject({ id: granted!.id, status: "active" })
    expect(Date.parse(extended!.expires_at)).toBe(renewedAt.getTime() + 30 * 24 * 60 * 60 * 1000)
    expect((await notify(h(), sale.gateway.id, sale.secret, body(sale, { type: "chargeback" }))).status).toBe(200)
    expect((await enrollmentsOf(sale)).map((e) => e.status)).toEqual(["canceled"])
    expect((await notify(h(), sale.gateway.id, sale.secret, body(sale, { type: "subscription_renewed" }))).status).toBe(200)
    expect((await enrollmentsOf(sale)).filter((e) => e.status === "active")).toHaveLength(1)
    expect((await notify(h(), sale.gateway.id, sale.secret, body(sale, { type: "subscription_expired" }))).status).toBe(200)
    expect((await enrollmentsOf(sale)).filter((e) => e.status === "active")).toEqual([])
    expect((await salesEventsOf(sale)).map((e) => e.type).sort()).toEqual(["approved", "chargeback", "subscription_expired", "subscription_renewed", "subscription_renewed"])
  })

  it("two sales of one delivery to one buyer: refunding one leaves the access the other paid for; refunding both ends it", async () => {
    const sale = await setup(h())
    const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString()
    for (const saleId of ["order-1", "order-2"]) {
      expect((await notify(h(), sale.gateway.id, sale.secret, body(sale, { sale_id: saleId, occurred_at: minutesAgo(10) }))).status).toBe(200)
    }
    expect((await enrollmentsOf(sale)).map((e) => e.status)).toEqual(["active"])
    expect((await notify(h(), sale.gateway.id, sale.secret, body(sale, { sale_id: "order-1", type: "refunded", occurred_at: minutesAgo(5) }))).status).toBe(200)
    expect((await enrollmentsOf(sale)).map((e) => e.status)).toEqual(["active"])
    expect((await notify(h(), sale.gateway.id, sale.secret, body(sale, { sale_id: "order-2", type: "chargeback", occurred_at: minutesAgo(1) }))).status).toBe(200)
    expect((await enrollmentsOf(sale)).map((e) => e.status)).toEqual(["canceled"])
  })

  it("after a rotation the previous secret is accepted during its grace period, not after; with 0 at once never", async () => {
    const sale = await setup(h())
    const rotated = (await sale.client.post(`/sales/gateways/${sale.gateway.id}/secret-rotations`)).body.data.secret.value as string
    expect((await notify(h(), sale.gateway.id, sale.secret, body(sale))).status).toBe(200)
    expect((await notify(h(), sale.gateway.id, rotated, body(sale, { type: "canceled" }))).status).toBe(200)
    h().advance(24 * 60 * 60 * 1000 + 1000)
    try {
      // The server's clock moved a day: sign at its time.
      const at = new Date(Date.now() + 24 * 60 * 60 * 1000 + 1000)
      expect(expectError(await notify(h(), sale.gateway.id, sale.secret, body(sale, { occurred_at: at.toISOString() }), { at }), 401, "unauthenticated").reason).toBe("signature_invalid")
      expect((await notify(h(), sale.gateway.id, rotated, body(sale, { type: "canceled", occurred_at: at.toISOString() }), { at })).status).toBe(200)
    } finally {
      h().advance(-(24 * 60 * 60 * 1000 + 1000))
    }
    const now = (await sale.client.post(`/sales/gateways/${sale.gateway.id}/secret-rotations`, { previous_secret_expires_in: 0 })).body.data.secret.value as string
    expect(expectError(await notify(h(), sale.gateway.id, rotated, body(sale)), 401, "unauthenticated").reason).toBe("signature_invalid")
    expect((await notify(h(), sale.gateway.id, now, body(sale, { type: "canceled" }))).status).toBe(200)
  })

  it("sales switched off: a notification is still recorded and still grants access", async () => {
    const sale = await setup(h())
    expect((await sale.client.patch("/settings/sales", { enabled: false })).status).toBe(200)
    try {
      const res = await notify(h(), sale.gateway.id, sale.secret, body(sale))
      expect(res.status, res.text).toBe(200)
      expect((await enrollmentsOf(sale)).map((e) => e.status)).toEqual(["active"])
    } finally {
      await sale.client.patch("/settings/sales", { enabled: true })
    }
  })

  it("GET /sales/events: newest first by occurred_at; type, gateway_id, delivery_id, user_id, occurred_after/before filters; bad filters 422", async () => {
    const sale = await setup(h())
    const base = Date.now() - 3 * 60 * 60 * 1000
    const at = (hours: number) => new Date(base + hours * 60 * 60 * 1000).toISOString()
    const a = (await notify(h(), sale.gateway.id, sale.secret, body(sale, { occurred_at: at(0) }))).body.data
    const b = (await notify(h(), sale.gateway.id, sale.secret, body(sale, { type: "refunded", occurred_at: at(2) }))).body.data
    const c = (await notify(h(), sale.gateway.id, sale.secret, body(sale, { type: "approved", occurred_at: at(1) }))).body.data
    const ids = (list: Array<Record<string, any>>) => list.map((e) => e.id)
    expect(ids(await salesEventsOf(sale))).toEqual([b.id, c.id, a.id])
    expect(ids(await salesEventsOf(sale, "?sort=occurred_at"))).toEqual([a.id, c.id, b.id])
    expect(ids(await salesEventsOf(sale, "?sort=created_at"))).toEqual([a.id, b.id, c.id])
    expect(ids(await salesEventsOf(sale, "?type=approved"))).toEqual([c.id, a.id])
    expect(ids(await salesEventsOf(sale, `?gateway_id=${sale.gateway.id}`))).toHaveLength(3)
    expect(ids(await salesEventsOf(sale, "?gateway_id=gtw_000000001"))).toEqual([])
    expect(ids(await salesEventsOf(sale, `?delivery_id=${sale.delivery.id}&type=refunded`))).toEqual([b.id])
    expect(ids(await salesEventsOf(sale, `?user_id=${sale.user.id}`))).toHaveLength(3)
    expect(ids(await salesEventsOf(sale, `?occurred_after=${encodeURIComponent(at(1))}`))).toEqual([b.id, c.id])
    expect(ids(await salesEventsOf(sale, `?occurred_before=${encodeURIComponent(at(1))}`))).toEqual([a.id])
    expect(ids(await salesEventsOf(sale, "?limit=1"))).toEqual([b.id])
    expectError(await sale.client.get("/sales/events?type=paid"), 422, "validation_failed", { parameter: "type" })
    expectError(await sale.client.get("/sales/events?user_id=nope"), 422, "validation_failed", { parameter: "user_id" })
    expectError(await sale.client.get("/sales/events?occurred_after=yesterday"), 422, "validation_failed", { parameter: "occurred_after" })
    expectError(await sale.client.get("/sales/events/sev_000000001"), 404, "not_found")
  })

  it("read-only with sales_events.read; no route writes a sales event; a sandbox reset empties them and the gateway's notifications are then refused (401, as an unknown gateway)", async () => {
    const sale = await setup(h())
    const event = (await notify(h(), sale.gateway.id, sale.secret, body(sale))).body.data
    const reader = await credentialWith(h(), ["sales_events.read"])
    expect((await api(h(), reader).get("/sales/events")).status).toBe(200)
    const noRead = await credentialWith(h(), ["gateways.read"])
    expectError(await api(h(), noRead).get("/sales/events"), 403, "permission_denied")
    expect((await sale.client.post("/sales/events", body(sale))).status).toBe(405)
    expect((await sale.client.del(`/sales/events/${event.id}`)).status).toBe(405)
    expect((await sale.client.post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await sale.client.get(`/sales/events/${event.id}`), 404, "not_found")
    expect(expectError(await notify(h(), sale.gateway.id, sale.secret, body(sale)), 401, "unauthenticated").reason).toBe("signature_invalid")
  })
})

eachStore(
  "gateway notifications under the origin's rate limit",
  (h) => {
    it("the origin's rate limit of §8.1 is consulted first: a limiter that cannot answer is 503 rate_limiter_unavailable, nothing recorded", async () => {
      const sale = await setup(h())
      h().fail("rate_limits")
      try {
        expectError(await notify(h(), sale.gateway.id, sale.secret, body(sale)), 503, "rate_limiter_unavailable")
      } finally {
        h().fail("rate_limits", false)
      }
      await expectNothingRecorded(sale)
      expect((await notify(h(), sale.gateway.id, sale.secret, body(sale))).status).toBe(200)
    })
  },
  { rateLimits: "on" }
)
