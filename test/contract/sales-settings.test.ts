/**
 * Switching sales off (`GET|PATCH /settings/sales`, release 3.2.0): the group's shape and
 * defaults, and the writes that answer 409 `feature_disabled` with the switch's `reason` while
 * it is off — funnels (`funnels_enabled` or `enabled`), deliveries and gateways (`enabled`) —
 * and what stays available: reads, the trash, a restore, and the gateways' notifications. Decisions: docs/sales.md ("Switching sales off").
 */
import { Webhook } from "standardwebhooks"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, newProduct } from "../support/api.js"
import { expectError } from "../support/expect.js"

const setSales = async (h: Harness, values: { readonly enabled?: boolean | null; readonly funnels_enabled?: boolean | null }) => {
  const res = await api(h).patch("/settings/sales", values)
  expect(res.status, res.text).toBe(200)
  return res.body.data
}

/** Run `body` with these switches, then restore the defaults (every test starts with sales on). */
const withSales = async (h: Harness, values: { readonly enabled?: boolean; readonly funnels_enabled?: boolean }, body: () => Promise<void>) => {
  await setSales(h, values)
  try {
    await body()
  } finally {
    await setSales(h, { enabled: null, funnels_enabled: null })
  }
}

const setup = async (h: Harness) => {
  const product = await newProduct(h)
  const delivery = await created(api(h).post("/sales/deliveries", { name: "Delivery", products: [{ product_id: product.id, duration_days: null }] }))
  const steps = [{ kind: "offer", name: "Offer", delivery_id: delivery.id }]
  const funnel = await created(api(h).post("/sales/funnels", { name: "Funnel", steps }))
  return { product, delivery, funnel, steps }
}

/** A gateway's signed notification of an approved sale (Standard Webhooks, as sales-events.test.ts sends them). */
const notifyApproved = (h: Harness, gateway: Record<string, any>, fields: Record<string, unknown>) => {
  const text = JSON.stringify({ id: `evt_off_${Date.now()}`, type: "approved", occurred_at: new Date().toISOString(), sale_id: "ch_off", amount: 100, currency: "USD", ...fields })
  const at = new Date()
  const messageId = `msg_off_${Date.now()}`
  return h.request("POST", `/gateways/${gateway.id}/notifications`, {
    raw: text,
    idempotencyKey: null,
    headers: {
      "content-type": "application/json",
      "webhook-id": messageId,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new Webhook(gateway.secret.value).sign(messageId, at, text)
    }
  })
}

eachStore("sales settings", (h) => {
  it("GET /settings/sales: enabled and funnels_enabled, both true by default; PATCH changes them, null restores the default; a non-boolean is 422", async () => {
    const group = await api(h()).get("/settings/sales")
    expect(group.status, group.text).toBe(200)
    expect(group.body.data).toMatchObject({
      object: "settings",
      id: "sales",
      group: "sales",
      enabled: true,
      funnels_enabled: true,
      defaults: { enabled: true, funnels_enabled: true },
      revision: "0"
    })
    expect(group.headers.get("etag")).toBe('W/"settings:sales:0"')
    expectError(await api(h()).patch("/settings/sales", { enabled: "no" }), 422, "validation_failed", { field: "enabled" })
    expectError(await api(h()).patch("/settings/sales", { checkout_enabled: false }), 422, "unknown_field", { field: "checkout_enabled" })
    await withSales(h(), { funnels_enabled: false }, async () => {
      expect((await api(h()).get("/settings/sales")).body.data).toMatchObject({ enabled: true, funnels_enabled: false })
    })
    expect((await api(h()).get("/settings/sales")).body.data).toMatchObject({ enabled: true, funnels_enabled: true })
    expect((await api(h()).get("/events?type=settings.updated&limit=100")).body.data.some((e: any) => e.data.object.id === "sales")).toBe(true)
  })

  it("funnels_enabled false: creating and changing a funnel are 409 feature_disabled (funnels_disabled); reads, the trash and a restore stay; deliveries are not affected", async () => {
    const { delivery, funnel, steps } = await setup(h())
    const trashable = await created(api(h()).post("/sales/funnels", { name: "To trash", steps }))
    await withSales(h(), { funnels_enabled: false }, async () => {
      const a = api(h())
      expectError(await a.post("/sales/funnels", { name: "New", steps }), 409, "feature_disabled", { reason: "funnels_disabled" })
      expectError(await a.patch(`/sales/funnels/${funnel.id}`, { name: "Changed" }), 409, "feature_disabled", { reason: "funnels_disabled" })
      const read = await a.get(`/sales/funnels/${funnel.id}`)
      expect(read.status).toBe(200)
      expect(read.body.data).toMatchObject({ name: "Funnel", revision: "1" })
      expect((await a.get("/sales/funnels?limit=100")).status).toBe(200)
      expect((await a.del(`/sales/funnels/${trashable.id}`)).status).toBe(200)
      const restored = await a.patch(`/sales/funnels/${trashable.id}`, { deleted: false })
      expect(restored.status, restored.text).toBe(200)
      // A restore that changes something is a change: refused.
      expect((await a.del(`/sales/funnels/${trashable.id}`)).status).toBe(200)
      expectError(await a.patch(`/sales/funnels/${trashable.id}`, { deleted: false, name: "Back" }), 409, "feature_disabled", { reason: "funnels_disabled" })
      // Deliveries only answer to `enabled`.
      expect((await a.patch(`/sales/deliveries/${delivery.id}`, { name: "Renamed delivery" })).status).toBe(200)
    })
    expect((await api(h()).patch(`/sales/funnels/${funnel.id}`, { name: "Changed" })).status).toBe(200)
  })

  it("enabled false: funnel, delivery and gateway writes are 409 feature_disabled (sales_disabled), even with funnels_enabled true; reads stay; a gateway's notification is still recorded and counted", async () => {
    const { product, delivery, funnel, steps } = await setup(h())
    const gateway = await created(api(h()).post("/sales/gateways", { kind: "stripe", name: "Stripe" }))
    await withSales(h(), { enabled: false }, async () => {
      const a = api(h())
      expectError(await a.post("/sales/funnels", { name: "New", steps }), 409, "feature_disabled", { reason: "sales_disabled" })
      expectError(await a.patch(`/sales/funnels/${funnel.id}`, { name: "Changed" }), 409, "feature_disabled", { reason: "sales_disabled" })
      expectError(await a.post("/sales/deliveries", { name: "New", products: [{ product_id: product.id, duration_days: 30 }] }), 409, "feature_disabled", {
        reason: "sales_disabled"
      })
      expectError(await a.patch(`/sales/deliveries/${delivery.id}`, { name: "Changed" }), 409, "feature_disabled", { reason: "sales_disabled" })
      expectError(await a.post(`/sales/deliveries/${delivery.id}/tags/applications`), 409, "feature_disabled", { reason: "sales_disabled" })
      expect((await a.get(`/sales/funnels/${funnel.id}`)).status).toBe(200)
      expect((await a.get(`/sales/deliveries/${delivery.id}`)).status).toBe(200)
      expectError(await a.post("/sales/gateways", { kind: "stripe", name: "Off" }), 409, "feature_disabled", { reason: "sales_disabled" })
      expectError(await a.patch(`/sales/gateways/${gateway.id}`, { name: "Changed" }), 409, "feature_disabled", { reason: "sales_disabled" })
      // A payment that happened is still recorded, and still counts on the funnel's step.
      const user = await created(a.post("/users", { name: "Buyer", email: `off-buyer-${Date.now()}@example.com` }))
      const recorded = await notifyApproved(h(), gateway, { delivery_id: delivery.id, user_id: user.id, funnel_id: funnel.id, funnel_step_id: funnel.steps[0].id })
      expect(recorded.status, recorded.text).toBeLessThan(300)
      expect((await a.get(`/sales/events?user_id=${user.id}`)).body.data).toHaveLength(1)
      expect((await a.get(`/sales/funnels/${funnel.id}`)).body.data.steps[0].conversions).toBe(1)
    })
    // Switched on again: the same writes succeed.
    expect((await api(h()).post("/sales/funnels", { name: "New", steps })).status).toBe(201)
  })

  it("batches: a funnel batch item while funnels are off fails with feature_disabled; nothing is created", async () => {
    const { steps } = await setup(h())
    await withSales(h(), { funnels_enabled: false }, async () => {
      const started = await api(h()).post("/operations", { type: "funnels.create", items: [{ key: "one", name: "Batched off", steps }] })
      expect(started.status, started.text).toBe(202)
      let op = started.body.data
      for (let i = 0; i < 100 && op.status !== "succeeded" && op.status !== "failed"; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        op = (await api(h()).get(`/operations/${op.id}`)).body.data
      }
      const [item] = (await api(h()).get(`/operations/${op.id}/items`)).body.data
      expect(item.error).toMatchObject({ code: "feature_disabled", reason: "funnels_disabled" })
    })
    expect((await api(h()).get("/sales/funnels?q=Batched%20off")).body.data).toEqual([])
  })
})
