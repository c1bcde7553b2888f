/**
 * A sale end to end (issue 15, "Done when"): over HTTP only, a product, a delivery of it, a
 * buyer, a payment gateway (its signing secret) and a webhook subscription to a local receiver;
 * then the gateway's signed `approved` notification → the buyer has an active enrollment with
 * the delivery's `delivery_id`, and `sales_event.recorded` and `enrollment.created` reach the
 * webhook (signed, checked with the `standardwebhooks` package); the signed `refunded`
 * notification → the enrollment is canceled, and its events reach the webhook; a forged and a
 * replayed notification change nothing: no sales event, no enrollment change, no event, no
 * delivery. Receivers are local HTTP servers, so the account is the sandbox (production needs
 * public https destinations).
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"
import { expect, it } from "vitest"
import { api, created, newProduct } from "../support/api.js"
import { eachStore, type Harness, listenLocalReceiver } from "../support/harness.js"
import { expectError } from "../support/expect.js"
import { eventually } from "../support/eventually.js"

interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/** A webhook receiver on 127.0.0.1 answering 200 to everything. */
const receiver = async () => {
  const received: Array<Received> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") })
      res.writeHead(200, { "content-type": "text/plain" }).end("ok")
    })
  })
  await listenLocalReceiver(server)
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

/** The gateway's side: a Standard Webhooks signed POST to the notification path. */
const notify = (h: Harness, path: string, secret: string, payload: Record<string, unknown>) => {
  const text = JSON.stringify(payload)
  const messageId = `msg_${payload.id}_${Math.random().toString(36).slice(2)}`
  const at = new Date()
  return h.request("POST", path, {
    raw: text,
    idempotencyKey: null,
    headers: {
      "content-type": "application/json",
      "webhook-id": messageId,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new Webhook(secret).sign(messageId, at, text)
    }
  })
}

eachStore("a sale end to end", (h) => {
  it("approved → enrolled through the delivery, events delivered; refunded → enrollment canceled, events delivered; forged and replayed notifications change nothing", async () => {
    const client = api(h(), h().test)
    expect((await client.post("/sandbox/resets")).status).toBeLessThan(300)
    const rx = await receiver()
    try {
      // The account sets up what it sells.
      const product = await newProduct(h(), h().test)
      const delivery = await created(client.post("/sales/deliveries", { name: "Course for a year", products: [{ product_id: product.id, duration_days: 365 }] }))
      const buyer = await created(client.post("/users", { name: "Ana Buyer", email: "ana.buyer@example.com" }))
      const gateway = await created(client.post("/sales/gateways", { kind: "stripe", name: "Stripe", credentials: { secret_key: "sk_test_e2e_0000" } }))
      const gatewaySecret = gateway.secret.value as string
      const hook = await created(
        client.post("/webhooks", { url: rx.url, event_types: ["sales_event.recorded", "enrollment.created", "enrollment.canceled", "gateway.updated"] })
      )
      const verifier = new Webhook(hook.secret.value)
      const delivered = () =>
        rx.received.map((r) => {
          // Every delivery is signed with the webhook's secret.
          verifier.verify(r.body, {
            "webhook-id": String(r.headers["webhook-id"]),
            "webhook-timestamp": String(r.headers["webhook-timestamp"]),
            "webhook-signature": String(r.headers["webhook-signature"])
          })
          return JSON.parse(r.body) as Record<string, any>
        })

      // 1. The gateway reports the payment.
      const sale = {
        id: "evt_1PaymentApproved",
        type: "approved",
        occurred_at: new Date().toISOString(),
        sale_id: "pi_3PaymentIntent",
        delivery_id: delivery.id,
        user_id: buyer.id,
        amount: 49700,
        currency: "USD"
      }
      const approved = await notify(h(), gateway.notification_path, gatewaySecret, sale)
      expect(approved.status, approved.text).toBe(200)
      const approvedEvent = approved.body.data
      expect(approvedEvent).toMatchObject({ object: "sales_event", type: "approved", gateway_event_id: sale.id, product_ids: [product.id] })
      const enrollments = (await client.get(`/enrollments?user_id=${buyer.id}`)).body.data
      expect(enrollments).toHaveLength(1)
      const enrollment = enrollments[0]
      expect(enrollment).toMatchObject({ product_id: product.id, status: "active", delivery_id: delivery.id })
      await eventually(async () => {
        const events = delivered()
        expect(events.map((e) => e.type).sort()).toEqual(["enrollment.created", "sales_event.recorded"])
        expect(events.find((e) => e.type === "sales_event.recorded")!.data.object).toEqual(approvedEvent)
        expect(events.find((e) => e.type === "enrollment.created")!.data.object).toMatchObject({ id: enrollment.id, delivery_id: delivery.id })
      })

      // 2. The gateway reports the refund.
      const refund = { ...sale, id: "evt_1PaymentRefunded", type: "refunded", occurred_at: new Date().toISOString() }
      const refunded = await notify(h(), gateway.notification_path, gatewaySecret, refund)
      expect(refunded.status, refunded.text).toBe(200)
      expect(refunded.body.data).toMatchObject({ type: "refunded", delivery_id: delivery.id, user_id: buyer.id })
      expect((await client.get(`/enrollments/${enrollment.id}`)).body.data.status).toBe("canceled")
      await eventually(async () => {
        const events = delivered()
        expect(events.map((e) => e.type).sort()).toEqual(["enrollment.canceled", "enrollment.created", "sales_event.recorded", "sales_event.recorded"])
        expect(events.find((e) => e.type === "enrollment.canceled")!.data.object).toMatchObject({ id: enrollment.id, status: "canceled" })
      })

      // 3. A forged approval (signed with another secret) and a replay of the approval change nothing.
      const forged = await notify(h(), gateway.notification_path, "whsec_" + Buffer.from("forged-secret-forged-sec").toString("base64"), {
        ...sale,
        id: "evt_1Forged"
      })
      expect(expectError(forged, 401, "unauthenticated").reason).toBe("signature_invalid")
      const replayed = await notify(h(), gateway.notification_path, gatewaySecret, sale)
      expect(replayed.status).toBe(200)
      expect(replayed.headers.get("idempotent-replayed")).toBe("true")
      expect(replayed.body.data).toEqual(approvedEvent)
      expect((await client.get("/sales/events")).body.data.map((e: any) => e.id).sort()).toEqual([approvedEvent.id, refunded.body.data.id].sort())
      expect((await client.get(`/enrollments?user_id=${buyer.id}`)).body.data.map((e: any) => [e.id, e.status])).toEqual([[enrollment.id, "canceled"]])
      expect((await client.get("/events?type=sales_event.recorded")).body.data).toHaveLength(2)
      // A marker event after them: once it is delivered, nothing else was.
      expect((await client.patch(`/sales/gateways/${gateway.id}`, { name: "Stripe (marker)" })).status).toBe(200)
      await eventually(async () => expect(delivered().map((e) => e.type)).toContain("gateway.updated"))
      expect(delivered().map((e) => e.type).sort()).toEqual([
        "enrollment.canceled",
        "enrollment.created",
        "gateway.updated",
        "sales_event.recorded",
        "sales_event.recorded"
      ])
      // The webhook's payloads never held the gateway's credentials or secret.
      for (const r of rx.received) {
        expect(r.body).not.toContain("sk_test_e2e_0000")
        expect(r.body).not.toContain(gatewaySecret)
      }
      await client.patch(`/webhooks/${hook.id}`, { status: "inactive" })
    } finally {
      await rx.close()
    }
  })
})
