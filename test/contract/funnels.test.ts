/**
 * Sales funnels (`/sales/funnels`, release 3.2.0): the shape, stable step IDs across a PATCH
 * that replaces the steps, the steps' validation and the funnel's rules (422
 * `domain_rule_violation` with a reason), the trash, idempotency, `If-Match`, permissions,
 * batches, the sandbox reset, and the conversion counts kept over sales events, shown on the
 * funnel's steps and per product in `/reports/products`. Switching funnels off:
 * sales-settings.test.ts. Decisions: docs/sales.md ("Funnels").
 *
 * The sales events are written through the core's `Records` of the server, in a unit of work,
 * as the gateways' notification endpoint writes them: the figures are kept by the store on
 * that write, and read over HTTP.
 */
import { Caller, figureId, figureShard, FUNNEL_STEP_FIGURES, Ids, Records } from "@syllabus/core"
import { Effect } from "effect"
import { Webhook } from "standardwebhooks"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith, newProduct, runAsAccount, settle } from "../support/api.js"
import { expectError } from "../support/expect.js"

const newDelivery = async (h: Harness, productIds: ReadonlyArray<string>, secret = h.live) =>
  created(api(h, secret).post("/sales/deliveries", { name: "Delivery", products: productIds.map((product_id) => ({ product_id, duration_days: 365 })) }))

/** A product and a delivery granting it. */
const sellable = async (h: Harness, secret = h.live) => {
  const product = await newProduct(h, secret)
  const delivery = await newDelivery(h, [product.id], secret)
  return { product, delivery }
}

/** A sales page, the offer, an upsell and the thank-you page. */
const classicSteps = (offer: string, upsell: string) => [
  { kind: "page", name: "Sales page" },
  { kind: "offer", name: "Main offer", delivery_id: offer },
  { kind: "upsell", name: "Upsell", delivery_id: upsell },
  { kind: "thank_you", name: "Thanks" }
]

interface Sale {
  readonly type: "approved" | "refunded" | "chargeback" | "canceled" | "subscription_renewed" | "subscription_expired"
  readonly deliveryId: string
  readonly productIds: ReadonlyArray<string>
  readonly funnelId?: string | null
  readonly stepId?: string | null
}

/** A sales event recorded as the notification endpoint records it (the shape of docs/sales.md). */
const recordSale = (h: Harness, sale: Sale, environment: "production" | "sandbox" = "production") =>
  runAsAccount(
    h,
    Effect.gen(function* () {
      const caller = yield* Caller
      const records = yield* Records
      const id = yield* (yield* Ids).next("sales_event")
      const now = new Date().toISOString()
      yield* records.insert(caller.tenant, "sales_event", id, {
        object: "sales_event",
        id,
        gateway_id: "gtw_000000001",
        gateway_event_id: `evt-${id}`,
        type: sale.type,
        sale_id: `order-${id}`,
        delivery_id: sale.deliveryId,
        product_ids: [...sale.productIds],
        user_id: "usr_000000001",
        funnel_id: sale.funnelId ?? null,
        funnel_step_id: sale.stepId ?? null,
        amount: 9700,
        currency: "USD",
        occurred_at: now,
        created_at: now
      })
      return id
    }),
    environment
  )

let notifications = 0

/** A gateway's signed notification (Standard Webhooks, as sales-events.test.ts sends them). */
const notify = (h: Harness, gateway: Record<string, any>, payload: Record<string, unknown>) => {
  const text = JSON.stringify(payload)
  const at = new Date()
  const messageId = `msg_funnel_${++notifications}`
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

const productRow = async (h: Harness, productId: string, secret = h.live) => {
  const res = await api(h, secret).get(`/reports/products?product_id[]=${productId}`)
  expect(res.status, res.text).toBe(200)
  return res.body.data[0]
}

eachStore("sales funnels", (h) => {
  it("create: every field, fnl_ and fst_ IDs, Location and ETag, counts at 0; event funnel.created without the counts", async () => {
    const { delivery } = await sellable(h())
    const upsell = await sellable(h())
    const res = await api(h()).post("/sales/funnels", { name: "Launch", steps: classicSteps(delivery.id, upsell.delivery.id) })
    expect(res.status, res.text).toBe(201)
    const funnel = res.body.data
    expect(Object.keys(funnel)).toEqual(["object", "id", "name", "steps", "created_at", "updated_at", "deleted", "revision"])
    expect(funnel).toMatchObject({ object: "funnel", name: "Launch", deleted: false, revision: "1" })
    expect(funnel.id).toMatch(/^fnl_[0-9A-Za-z]{9}$/)
    expect(funnel.steps.map((s: any) => [s.kind, s.name, s.delivery_id, s.conversions, s.refunds])).toEqual([
      ["page", "Sales page", null, 0, 0],
      ["offer", "Main offer", delivery.id, 0, 0],
      ["upsell", "Upsell", upsell.delivery.id, 0, 0],
      ["thank_you", "Thanks", null, 0, 0]
    ])
    for (const step of funnel.steps) expect(Object.keys(step)).toEqual(["id", "kind", "name", "delivery_id", "conversions", "refunds"])
    expect(new Set(funnel.steps.map((s: any) => s.id)).size).toBe(4)
    for (const step of funnel.steps) expect(step.id).toMatch(/^fst_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/sales/funnels/${funnel.id}`)
    const read = await api(h()).get(`/sales/funnels/${funnel.id}`)
    expect(read.body.data).toEqual(funnel)
    expect(read.headers.get("etag")).toBe(`W/"funnel:${funnel.id}:1"`)
    expect((await api(h()).get("/sales/funnels")).body.data.find((f: any) => f.id === funnel.id)).toEqual(funnel)
    const events = (await api(h()).get(`/events?resource_id=${funnel.id}&type=funnel.created`)).body.data
    expect(events).toHaveLength(1)
    expect(events[0].data.object.steps.map((s: any) => s.id)).toEqual(funnel.steps.map((s: any) => s.id))
    expect(events[0].data.object.steps[0]).not.toHaveProperty("conversions")
  })

  it("validation: every problem of the steps itemized, nothing written", async () => {
    const { delivery } = await sellable(h())
    const a = api(h())
    const before = (await a.get("/sales/funnels?limit=100")).body.data.length
    expectError(await a.post("/sales/funnels", { steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] }), 422, "validation_failed", { field: "name", code: "required" })
    expectError(await a.post("/sales/funnels", { name: "x".repeat(201), steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] }), 422, "validation_failed", { field: "name" })
    expectError(await a.post("/sales/funnels", { name: "F" }), 422, "validation_failed", { field: "steps", code: "required" })
    expectError(await a.post("/sales/funnels", { name: "F", steps: [] }), 422, "validation_failed", { field: "steps", code: "too_short" })
    const many = Array.from({ length: 21 }, (_, i) => ({ kind: "offer", name: `O${i}`, delivery_id: delivery.id }))
    expectError(await a.post("/sales/funnels", { name: "F", steps: many }), 422, "too_many_items", { field: "steps", code: "too_many_items" })
    expectError(await a.post("/sales/funnels", { name: "F", steps: [{ kind: "checkout", name: "C" }] }), 422, "validation_failed", { field: "steps[0].kind", code: "invalid_value" })
    expectError(await a.post("/sales/funnels", { name: "F", steps: [{ kind: "offer", name: "", delivery_id: delivery.id }] }), 422, "validation_failed", { field: "steps[0].name" })
    expectError(await a.post("/sales/funnels", { name: "F", steps: [{ kind: "offer", name: "O", delivery_id: "prd_000000001" }] }), 422, "validation_failed", { field: "steps[0].delivery_id", code: "invalid" })
    expectError(await a.post("/sales/funnels", { name: "F", steps: [{ kind: "offer", name: "O", delivery_id: delivery.id, price: 1 }] }), 422, "unknown_field", { field: "steps[0].price" })
    // The delivery by kind: required on a paid step, not allowed on a page; both itemized at once.
    const byKind = expectError(
      await a.post("/sales/funnels", { name: "F", steps: [{ kind: "page", name: "P", delivery_id: delivery.id }, { kind: "offer", name: "O" }] }),
      422,
      "validation_failed",
      { field: "steps[0].delivery_id", code: "not_allowed" }
    )
    expect(byKind.details.map((d: any) => [d.field, d.code])).toEqual([["steps[0].delivery_id", "not_allowed"], ["steps[1].delivery_id", "required"]])
    // A delivery that does not exist, or is trashed.
    expectError(await a.post("/sales/funnels", { name: "F", steps: [{ kind: "offer", name: "O", delivery_id: "dlv_000000001" }] }), 422, "validation_failed", {
      field: "steps[0].delivery_id",
      reason: "not_found"
    })
    const trashed = await sellable(h())
    expect((await a.del(`/sales/deliveries/${trashed.delivery.id}`)).status).toBe(200)
    expectError(await a.post("/sales/funnels", { name: "F", steps: [{ kind: "offer", name: "O", delivery_id: trashed.delivery.id }] }), 422, "validation_failed", {
      field: "steps[0].delivery_id",
      reason: "not_found"
    })
    // A step ID on a create names no step of this funnel.
    expectError(await a.post("/sales/funnels", { name: "F", steps: [{ id: "fst_000000001", kind: "offer", name: "O", delivery_id: delivery.id }] }), 422, "validation_failed", {
      field: "steps[0].id",
      reason: "not_found"
    })
    expectError(await a.post("/sales/funnels", { name: "F", steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] }, { idempotencyKey: null }), 422, "idempotency_key_required")
    expect((await a.get("/sales/funnels?limit=100")).body.data.length).toBe(before)
  })

  it("the funnel's rules: 422 domain_rule_violation with the reason, each broken rule itemized on its step", async () => {
    const { delivery } = await sellable(h())
    const a = api(h())
    const offer = { kind: "offer", name: "Offer", delivery_id: delivery.id }
    const upsell = { kind: "upsell", name: "Upsell", delivery_id: delivery.id }
    const downsell = { kind: "downsell", name: "Downsell", delivery_id: delivery.id }
    const page = { kind: "page", name: "Page" }
    const thanks = { kind: "thank_you", name: "Thanks" }
    const noOffer = expectError(await a.post("/sales/funnels", { name: "F", steps: [page, thanks] }), 422, "domain_rule_violation", { field: "steps", reason: "offer_required" })
    expect(noOffer.reason).toBe("offer_required")
    expectError(await a.post("/sales/funnels", { name: "F", steps: [upsell, offer] }), 422, "domain_rule_violation", { field: "steps[0].kind", reason: "upsell_before_offer" })
    expectError(await a.post("/sales/funnels", { name: "F", steps: [page, downsell, offer] }), 422, "domain_rule_violation", { field: "steps[1].kind", reason: "upsell_before_offer" })
    expectError(await a.post("/sales/funnels", { name: "F", steps: [offer, thanks, page] }), 422, "domain_rule_violation", { field: "steps[1].kind", reason: "thank_you_not_last" })
    const twice = expectError(await a.post("/sales/funnels", { name: "F", steps: [offer, thanks, thanks] }), 422, "domain_rule_violation", { field: "steps[2].kind", reason: "multiple_thank_you" })
    expect(twice.reason).toBe("multiple_thank_you")
    const several = expectError(await a.post("/sales/funnels", { name: "F", steps: [thanks, upsell] }), 422, "domain_rule_violation")
    expect(several.reason).toBe("offer_required")
    expect(several.details.map((d: any) => [d.field, d.reason])).toEqual([
      ["steps", "offer_required"],
      ["steps[1].kind", "upsell_before_offer"],
      ["steps[0].kind", "thank_you_not_last"]
    ])
    // Every rule kept: created; a PATCH breaking one is refused and changes nothing.
    const funnel = await created(a.post("/sales/funnels", { name: "F", steps: [page, offer, upsell, downsell, thanks] }))
    expectError(await a.patch(`/sales/funnels/${funnel.id}`, { steps: [page, thanks] }), 422, "domain_rule_violation", { reason: "offer_required" })
    expect((await a.get(`/sales/funnels/${funnel.id}`)).body.data.revision).toBe("1")
  })

  it("PATCH steps replaces the list: steps sent with their id keep it, new ones get one, those left out are gone; foreign or repeated IDs are 422", async () => {
    const { delivery } = await sellable(h())
    const other = await sellable(h())
    const a = api(h())
    const funnel = await created(a.post("/sales/funnels", { name: "F", steps: classicSteps(delivery.id, delivery.id) }))
    const [page, offer, upsell, thanks] = funnel.steps
    const res = await a.patch(`/sales/funnels/${funnel.id}`, {
      steps: [
        { id: offer.id, kind: "offer", name: "Offer, renamed", delivery_id: other.delivery.id },
        { kind: "downsell", name: "New downsell", delivery_id: delivery.id },
        { id: thanks.id, kind: "thank_you", name: "Thanks" }
      ]
    })
    expect(res.status, res.text).toBe(200)
    const steps = res.body.data.steps
    expect(steps.map((s: any) => [s.id === offer.id, s.name, s.delivery_id])).toEqual([
      [true, "Offer, renamed", other.delivery.id],
      [false, "New downsell", delivery.id],
      [false, "Thanks", null]
    ])
    expect(steps[2].id).toBe(thanks.id)
    expect(steps[1].id).toMatch(/^fst_/)
    expect(steps.map((s: any) => s.id)).not.toContain(page.id)
    expect(steps.map((s: any) => s.id)).not.toContain(upsell.id)
    expect(res.body.data.revision).toBe("2")
    const updated = (await a.get(`/events?resource_id=${funnel.id}&type=funnel.updated`)).body.data
    expect(updated).toHaveLength(1)
    // A step left out is gone: its ID no longer names a step of the funnel.
    expectError(await a.patch(`/sales/funnels/${funnel.id}`, { steps: [{ id: upsell.id, kind: "offer", name: "O", delivery_id: delivery.id }] }), 422, "validation_failed", {
      field: "steps[0].id",
      reason: "not_found"
    })
    // A step of another funnel.
    const another = await created(a.post("/sales/funnels", { name: "G", steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] }))
    expectError(await a.patch(`/sales/funnels/${funnel.id}`, { steps: [{ id: another.steps[0].id, kind: "offer", name: "O", delivery_id: delivery.id }] }), 422, "validation_failed", {
      field: "steps[0].id",
      reason: "not_found"
    })
    expectError(
      await a.patch(`/sales/funnels/${funnel.id}`, {
        steps: [
          { id: offer.id, kind: "offer", name: "O", delivery_id: delivery.id },
          { id: offer.id, kind: "upsell", name: "U", delivery_id: delivery.id }
        ]
      }),
      422,
      "validation_failed",
      { field: "steps[1].id", reason: "duplicate" }
    )
    // A name alone keeps the steps; a delivery trashed since it was named does not block it.
    expect((await a.del(`/sales/deliveries/${other.delivery.id}`)).status).toBe(200)
    const renamed = await a.patch(`/sales/funnels/${funnel.id}`, { name: "Renamed" })
    expect(renamed.status, renamed.text).toBe(200)
    expect(renamed.body.data.steps.map((s: any) => s.id)).toEqual(steps.map((s: any) => s.id))
    // If-Match at another revision: 412, unchanged.
    expectError(await a.patch(`/sales/funnels/${funnel.id}`, { name: "Late" }, { "if-match": `W/"funnel:${funnel.id}:1"` }), 412, "revision_mismatch")
    expect((await a.get(`/sales/funnels/${funnel.id}`)).body.data.name).toBe("Renamed")
  })

  it("trash and restore: a trashed funnel is not found, listed with deleted=true, restored with its steps; events funnel.trashed and funnel.restored", async () => {
    const { delivery } = await sellable(h())
    const a = api(h())
    const funnel = await created(a.post("/sales/funnels", { name: "Trash me", steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] }))
    const trashed = await a.del(`/sales/funnels/${funnel.id}`)
    expect(trashed.status, trashed.text).toBe(200)
    expect(trashed.body.data.deleted).toBe(true)
    expectError(await a.get(`/sales/funnels/${funnel.id}`), 404, "not_found")
    expect((await a.get("/sales/funnels?limit=100")).body.data.map((f: any) => f.id)).not.toContain(funnel.id)
    expect((await a.get("/sales/funnels?deleted=true&limit=100")).body.data.map((f: any) => f.id)).toContain(funnel.id)
    expectError(await a.patch(`/sales/funnels/${funnel.id}`, { name: "x" }), 404, "not_found")
    const restored = await a.patch(`/sales/funnels/${funnel.id}`, { deleted: false })
    expect(restored.status, restored.text).toBe(200)
    expect(restored.body.data).toMatchObject({ deleted: false, name: "Trash me", steps: [{ id: funnel.steps[0].id }] })
    expect((await a.get(`/events?resource_id=${funnel.id}&type=funnel.trashed`)).body.data).toHaveLength(1)
    expect((await a.get(`/events?resource_id=${funnel.id}&type=funnel.restored`)).body.data).toHaveLength(1)
  })

  it("list: newest first, sort=name, q searches the name", async () => {
    const t = api(h(), h().test)
    expect((await t.post("/sandbox/resets")).status).toBeLessThan(300)
    const { delivery } = await sellable(h(), h().test)
    const steps = [{ kind: "offer", name: "O", delivery_id: delivery.id }]
    const b = await created(t.post("/sales/funnels", { name: "Bravo", steps }))
    const c = await created(t.post("/sales/funnels", { name: "Charlie", steps }))
    const alpha = await created(t.post("/sales/funnels", { name: "Alpha", steps }))
    expect((await t.get("/sales/funnels")).body.data.map((f: any) => f.id)).toEqual([alpha.id, c.id, b.id])
    expect((await t.get("/sales/funnels?sort=name")).body.data.map((f: any) => f.name)).toEqual(["Alpha", "Bravo", "Charlie"])
    expect((await t.get("/sales/funnels?q=harl")).body.data.map((f: any) => f.id)).toEqual([c.id])
  })

  it("idempotency: a replay answers the same funnel; the key with another body is 422 idempotency_key_reused", async () => {
    const { delivery } = await sellable(h())
    const a = api(h())
    const body = { name: "Once", steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] }
    const key = `funnel-${Date.now()}`
    const first = await a.post("/sales/funnels", body, { idempotencyKey: key })
    expect(first.status, first.text).toBe(201)
    const replay = await a.post("/sales/funnels", body, { idempotencyKey: key })
    expect(replay.status).toBe(201)
    expect(replay.body.data.id).toBe(first.body.data.id)
    expectError(await a.post("/sales/funnels", { ...body, name: "Twice" }, { idempotencyKey: key }), 422, "idempotency_key_reused")
    expect((await a.get("/sales/funnels?q=Once&limit=100")).body.data.filter((f: any) => f.id === first.body.data.id)).toHaveLength(1)
  })

  it("permissions: funnels.read reads but cannot write (403); the templates, event types and batch types name funnels", async () => {
    const { delivery } = await sellable(h())
    const funnel = await created(api(h()).post("/sales/funnels", { name: "Guarded", steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] }))
    const reader = await credentialWith(h(), ["funnels.read"])
    expect((await api(h(), reader).get(`/sales/funnels/${funnel.id}`)).status).toBe(200)
    expectError(await api(h(), reader).post("/sales/funnels", { name: "No", steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] }), 403, "permission_denied")
    expectError(await api(h(), reader).patch(`/sales/funnels/${funnel.id}`, { name: "No" }), 403, "permission_denied")
    expectError(await api(h(), reader).del(`/sales/funnels/${funnel.id}`), 403, "permission_denied")
    const capabilities = (await api(h()).get("/capabilities")).body.data
    expect(JSON.stringify(capabilities)).toContain("funnels.create")
    const types = (await api(h()).get("/event-types")).body.data.map((e: { type: string }) => e.type)
    expect(types).toEqual(expect.arrayContaining(["funnel.created", "funnel.updated", "funnel.trashed", "funnel.restored"]))
  })

  it("batches: funnels.create runs the same rules, its result shows the steps with their counts", async () => {
    const { delivery } = await sellable(h())
    const started = await api(h()).post("/operations", {
      type: "funnels.create",
      items: [
        { key: "good", name: "Batched", steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] },
        { key: "bad", name: "Broken", steps: [{ kind: "page", name: "P" }] }
      ]
    })
    expect(started.status, started.text).toBe(202)
    const op = await settle(h(), started.body.data.id)
    expect(op.progress).toMatchObject({ done: 1, failed: 1 })
    const items = (await api(h()).get(`/operations/${op.id}/items`)).body.data
    const good = items.find((i: any) => i.key === "good")
    const bad = items.find((i: any) => i.key === "bad")
    expect(good.result.object.steps[0]).toMatchObject({ kind: "offer", conversions: 0, refunds: 0 })
    expect(bad.error).toMatchObject({ code: "domain_rule_violation", field: "steps", reason: "offer_required" })
  })

  it("conversions: approved sales naming a step count on it, refunds and chargebacks apart; per product in /reports/products; kept across a PATCH that keeps the step", async () => {
    const main = await sellable(h())
    const second = await newProduct(h())
    const bundle = await newDelivery(h(), [main.product.id, second.id])
    const a = api(h())
    const funnel = await created(a.post("/sales/funnels", { name: "Counted", steps: classicSteps(main.delivery.id, bundle.id) }))
    const [, offer, upsell] = funnel.steps
    const viaOffer = { deliveryId: main.delivery.id, productIds: [main.product.id], funnelId: funnel.id, stepId: offer.id }
    await recordSale(h(), { type: "approved", ...viaOffer })
    await recordSale(h(), { type: "approved", ...viaOffer })
    await recordSale(h(), { type: "approved", ...viaOffer })
    await recordSale(h(), { type: "refunded", ...viaOffer })
    await recordSale(h(), { type: "chargeback", ...viaOffer })
    // Neither a conversion nor a refund: a canceled (unpaid) sale, a renewal.
    await recordSale(h(), { type: "canceled", ...viaOffer })
    await recordSale(h(), { type: "subscription_renewed", ...viaOffer })
    // The upsell's delivery grants two products: the sale counts in each.
    await recordSale(h(), { type: "approved", deliveryId: bundle.id, productIds: [main.product.id, second.id], funnelId: funnel.id, stepId: upsell.id })
    // A sale outside any funnel.
    await recordSale(h(), { type: "approved", deliveryId: main.delivery.id, productIds: [main.product.id] })

    const read = (await a.get(`/sales/funnels/${funnel.id}`)).body.data
    expect(read.steps.map((s: any) => [s.kind, s.conversions, s.refunds])).toEqual([
      ["page", 0, 0],
      ["offer", 3, 2],
      ["upsell", 1, 0],
      ["thank_you", 0, 0]
    ])
    expect((await a.get("/sales/funnels?limit=100")).body.data.find((f: any) => f.id === funnel.id)).toEqual(read)
    // A sale changes a count, not the funnel: same revision, no funnel.updated.
    expect(read.revision).toBe("1")
    expect((await a.get(`/events?resource_id=${funnel.id}&type=funnel.updated`)).body.data).toHaveLength(0)

    expect(await productRow(h(), main.product.id)).toMatchObject({ sales_approved: 5, sales_refunded: 2, funnel_conversions: 4 })
    expect(await productRow(h(), second.id)).toMatchObject({ sales_approved: 1, sales_refunded: 0, funnel_conversions: 1 })

    // The offer kept by ID keeps its counts; a new step starts at 0.
    const patched = await a.patch(`/sales/funnels/${funnel.id}`, {
      steps: [
        { kind: "page", name: "New page" },
        { id: offer.id, kind: "offer", name: "Offer", delivery_id: main.delivery.id }
      ]
    })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body.data.steps.map((s: any) => [s.kind, s.conversions, s.refunds])).toEqual([
      ["page", 0, 0],
      ["offer", 3, 2]
    ])
    // The sandbox counts its own sales only.
    expect((await productRow(h(), main.product.id, h().test)) ?? null).toBeNull()
  })

  it("end to end: a gateway's approved notification naming a funnel step counts on it and its product; its refund counts apart", async () => {
    const { product, delivery } = await sellable(h())
    const a = api(h())
    const funnel = await created(a.post("/sales/funnels", { name: "Through the gateway", steps: [{ kind: "page", name: "Page" }, { kind: "offer", name: "Offer", delivery_id: delivery.id }] }))
    const offer = funnel.steps[1]
    const user = await created(a.post("/users", { name: "Buyer", email: `funnel-buyer-${Date.now()}@example.com` }))
    const gateway = await created(a.post("/sales/gateways", { kind: "stripe", name: "Stripe" }))
    const sale = { sale_id: `ch_${Date.now()}`, delivery_id: delivery.id, user_id: user.id, amount: 19900, currency: "BRL", funnel_id: funnel.id, funnel_step_id: offer.id }
    const approved = await notify(h(), gateway, { id: `evt_a_${Date.now()}`, type: "approved", occurred_at: new Date().toISOString(), ...sale })
    expect(approved.status, approved.text).toBeLessThan(300)
    expect((await a.get(`/sales/funnels/${funnel.id}`)).body.data.steps[1]).toMatchObject({ id: offer.id, conversions: 1, refunds: 0 })
    expect(await productRow(h(), product.id)).toMatchObject({ sales_approved: 1, sales_refunded: 0, funnel_conversions: 1 })
    const refunded = await notify(h(), gateway, { id: `evt_r_${Date.now()}`, type: "refunded", occurred_at: new Date().toISOString(), ...sale })
    expect(refunded.status, refunded.text).toBeLessThan(300)
    expect((await a.get(`/sales/funnels/${funnel.id}`)).body.data.steps[1]).toMatchObject({ conversions: 1, refunds: 1 })
    expect(await productRow(h(), product.id)).toMatchObject({ sales_approved: 1, sales_refunded: 1, funnel_conversions: 1 })
  })

  it("a sandbox reset empties the sandbox's funnels and their counts; production keeps its own", async () => {
    const t = api(h(), h().test)
    const { product, delivery } = await sellable(h(), h().test)
    const funnel = await created(t.post("/sales/funnels", { name: "Sandboxed", steps: [{ kind: "offer", name: "O", delivery_id: delivery.id }] }))
    const stepId = funnel.steps[0].id
    const sale = await recordSale(h(), { type: "approved", deliveryId: delivery.id, productIds: [product.id], funnelId: funnel.id, stepId }, "sandbox")
    const sandbox = { accountId: h().account.account.id, environment: "sandbox" as const }
    const figure = figureId(stepId, figureShard(sale, FUNNEL_STEP_FIGURES.shards))
    expect(await h().storedRecord(sandbox, FUNNEL_STEP_FIGURES.type, figure)).toMatchObject({ funnel_step_id: stepId, conversions: 1, refunds: 0 })
    expect((await t.get(`/sales/funnels/${funnel.id}`)).body.data.steps[0].conversions).toBe(1)
    expect(await productRow(h(), product.id, h().test)).toMatchObject({ sales_approved: 1, funnel_conversions: 1 })
    const live = await sellable(h())
    const liveFunnel = await created(api(h()).post("/sales/funnels", { name: "Live", steps: [{ kind: "offer", name: "O", delivery_id: live.delivery.id }] }))
    expect((await t.post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await t.get(`/sales/funnels/${funnel.id}`), 404, "not_found")
    expect((await t.get("/sales/funnels")).body.data).toEqual([])
    expect(await h().storedRecord(sandbox, FUNNEL_STEP_FIGURES.type, figure)).toBeUndefined()
    expect((await api(h()).get(`/sales/funnels/${liveFunnel.id}`)).status).toBe(200)
  })
})
