/**
 * A delivery's access and tags: `grantDelivery` / `revokeDelivery` (sales/delivery-access.ts,
 * called by the sales events; run here as the platform runs them) and
 * `POST /sales/deliveries/{delivery_id}/tags/applications` (§4.3): one item per user with
 * active access through the delivery, repeating never duplicates a tag, a user without access
 * when the item runs is an item failed with `state_conflict` reason `no_access`. Each test
 * starts from an empty sandbox. Decisions: docs/sales.md.
 */
import { createResource, grantDelivery, revokeDelivery, runDueOperations, users } from "@syllabus/core"
import { Effect } from "effect"
import { expect, it } from "vitest"
import { api, created, runAsAccount } from "../support/api.js"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"

const DAY = 86_400_000

/** The sandbox, emptied: its client. */
const fresh = async (h: Harness) => {
  expect((await api(h, h.test).post("/sandbox/resets")).status).toBeLessThan(300)
  return api(h, h.test)
}

type Client = ReturnType<typeof api>

let emails = 0
const newUser = async (client: Client, name: string) =>
  (await created(client.post("/users", { name, email: `u${++emails}-${Date.now()}@example.com` }))).id as string
const newTag = async (client: Client, name: string) => (await created(client.post("/tags", { name }))).id as string
const newProduct = async (client: Client) => {
  const showcase = await created(client.post("/showcases", { name: "Shelf" }))
  return (await created(client.post("/products", { format: "course", name: "Course", showcase_id: showcase.id }))).id as string
}

const grant = (h: Harness, deliveryId: string, userId: string, at = Date.now()) =>
  runAsAccount(h, grantDelivery({ delivery_id: deliveryId, user_id: userId, sales_event_id: "sev_000000001", at }), "sandbox")
const revoke = (h: Harness, deliveryId: string, userId: string) =>
  runAsAccount(h, revokeDelivery({ delivery_id: deliveryId, user_id: userId, sales_event_id: "sev_000000002" }), "sandbox")

/** The operation once it has finished, read with the sandbox client. */
const settle = async (client: Client, operationId: string) => {
  for (let i = 0; i < 150; i++) {
    const op = (await client.get(`/operations/${operationId}`)).body.data
    if (op.status === "succeeded" || op.status === "failed") return op
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`operation ${operationId} did not finish: ${JSON.stringify((await client.get(`/operations/${operationId}`)).body.data)}`)
}

const userTags = async (client: Client, userId: string) => (await client.get(`/users/${userId}`)).body.data.tags as Array<string>
const enrollmentsOf = async (client: Client, userId: string) =>
  (await client.get(`/enrollments?user_id=${userId}&sort=created_at`)).body.data as Array<Record<string, any>>

eachStore("delivery access and tag applications", (h) => {
  it("grantDelivery: an enrollment per product (source delivery, delivery_id, expiry from duration_days) and the tags, never twice", async () => {
    const client = await fresh(h())
    const [p1, p2] = [await newProduct(client), await newProduct(client)]
    const tag = await newTag(client, "Buyers")
    const buyer = await newUser(client, "Buyer")
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: p1, duration_days: 30 }, { product_id: p2 }], tag_ids: [tag] }))
    const at = Date.now()
    await grant(h(), d.id, buyer, at)
    const enrolled = await enrollmentsOf(client, buyer)
    expect(enrolled.map((e) => [e.product_id, e.status, e.source, e.delivery_id])).toEqual([
      [p1, "active", "delivery", d.id],
      [p2, "active", "delivery", d.id]
    ])
    expect(Date.parse(enrolled[0]!.expires_at)).toBe(at + 30 * DAY)
    expect(enrolled[1]!.expires_at).toBeNull()
    expect(await userTags(client, buyer)).toEqual([tag])
    // The same sale reported again: nothing doubled.
    await grant(h(), d.id, buyer, at)
    expect((await enrollmentsOf(client, buyer)).map((e) => e.id)).toEqual(enrolled.map((e) => e.id))
    expect(await userTags(client, buyer)).toEqual([tag])
    expect((await client.get(`/tags/${tag}`)).body.data.users_count).toBe(1)
    expect((await client.get(`/events?resource_id=${enrolled[0]!.id}&type=enrollment.created`)).body.data).toHaveLength(1)
  })

  it("grantDelivery extends an active enrollment of the product to the later expiry instead of duplicating it; revokeDelivery cancels what the delivery gave, tags stay", async () => {
    const client = await fresh(h())
    const [p1, p2] = [await newProduct(client), await newProduct(client)]
    const tag = await newTag(client, "Buyers")
    const buyer = await newUser(client, "Buyer")
    const soon = new Date(Date.now() + 2 * DAY).toISOString()
    const manual = await created(client.post("/enrollments", { user_id: buyer, product_id: p1, expires_at: soon }))
    const kept = await created(client.post("/enrollments", { user_id: buyer, product_id: p2 }))
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: p1, duration_days: 365 }, { product_id: p2, duration_days: 10 }], tag_ids: [tag] }))
    const at = Date.now()
    await grant(h(), d.id, buyer, at)
    const after = await enrollmentsOf(client, buyer)
    expect(after).toHaveLength(2)
    const extended = after.find((e) => e.id === manual.id)!
    expect(Date.parse(extended.expires_at)).toBe(at + 365 * DAY)
    expect(extended).toMatchObject({ status: "active", delivery_id: d.id, source: "manual" })
    expect((await client.get(`/events?resource_id=${manual.id}&type=enrollment.updated`)).body.data).toHaveLength(1)
    // No expiry is later than 10 days: the enrollment without one stays as it was, but the sale now owns it.
    const unlimited = after.find((e) => e.id === kept.id)!
    expect(unlimited).toMatchObject({ expires_at: null, delivery_id: d.id })

    const canceled = await revoke(h(), d.id, buyer)
    expect(canceled).toHaveLength(2)
    expect((await enrollmentsOf(client, buyer)).map((e) => e.status)).toEqual(["canceled", "canceled"])
    expect((await client.get(`/events?resource_id=${manual.id}&type=enrollment.canceled`)).body.data).toHaveLength(1)
    expect(await userTags(client, buyer)).toEqual([tag])
  })

  it("revokeDelivery leaves access another way alone", async () => {
    const client = await fresh(h())
    const [p1, p2] = [await newProduct(client), await newProduct(client)]
    const buyer = await newUser(client, "Buyer")
    const manual = await created(client.post("/enrollments", { user_id: buyer, product_id: p2 }))
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: p1 }] }))
    await grant(h(), d.id, buyer)
    await revoke(h(), d.id, buyer)
    const states = Object.fromEntries((await enrollmentsOf(client, buyer)).map((e) => [e.product_id, e.status]))
    expect(states).toEqual({ [p1]: "canceled", [p2]: "active" })
    expect((await client.get(`/enrollments/${manual.id}`)).body.data.delivery_id).toBeNull()
  })

  it("tag applications: 202 with Location, one item per user with active access (once per user), tags applied; repeating never duplicates", async () => {
    const client = await fresh(h())
    const [p1, p2] = [await newProduct(client), await newProduct(client)]
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: p1 }, { product_id: p2 }] }))
    const [ana, bea, carl, dora] = [await newUser(client, "Ana"), await newUser(client, "Bea"), await newUser(client, "Carl"), await newUser(client, "Dora")]
    await grant(h(), d.id, ana)
    await grant(h(), d.id, bea)
    await grant(h(), d.id, carl)
    await revoke(h(), d.id, carl)
    // Dora is enrolled, but not through the delivery.
    await created(client.post("/enrollments", { user_id: dora, product_id: p1 }))
    const [vip, old] = [await newTag(client, "VIP"), await newTag(client, "Old")]
    await client.put(`/users/${ana}/tags`, { ids: [old] })
    expect((await client.patch(`/sales/deliveries/${d.id}`, { tag_ids: [vip, old] })).status).toBe(200)

    const res = await client.post(`/sales/deliveries/${d.id}/tags/applications`)
    expect(res.status, res.text).toBe(202)
    expect(res.body.data).toMatchObject({ object: "operation", type: "delivery_tag_application", progress: { done: 0, failed: 0, total: 2 } })
    expect(res.headers.get("location")).toBe(`/api/v3/operations/${res.body.data.id}`)
    const op = await settle(client, res.body.data.id)
    expect(op).toMatchObject({ status: "succeeded", progress: { done: 2, failed: 0, total: 2 } })
    const items = (await client.get(`/operations/${op.id}/items`)).body.data
    expect(items.map((i: any) => i.key).sort()).toEqual([ana, bea].sort())
    const byUser = Object.fromEntries(items.map((i: any) => [i.key, i]))
    expect(byUser[ana].result).toEqual({ object: "user", id: ana, tag_ids_added: [vip] })
    expect(byUser[bea].result).toEqual({ object: "user", id: bea, tag_ids_added: [vip, old] })
    expect(await userTags(client, ana)).toEqual([old, vip])
    expect(await userTags(client, bea)).toEqual([vip, old])
    expect(await userTags(client, carl)).toEqual([])
    expect(await userTags(client, dora)).toEqual([])

    const again = await client.post(`/sales/deliveries/${d.id}/tags/applications`)
    expect(again.status, again.text).toBe(202)
    const second = await settle(client, again.body.data.id)
    expect(second.status).toBe("succeeded")
    const secondItems = (await client.get(`/operations/${second.id}/items`)).body.data
    expect(secondItems.map((i: any) => i.result.tag_ids_added)).toEqual([[], []])
    expect(await userTags(client, ana)).toEqual([old, vip])
    expect(await userTags(client, bea)).toEqual([vip, old])
    expect((await client.get(`/tags/${vip}`)).body.data.users_count).toBe(2)
    expect((await client.get(`/events?resource_id=${bea}&type=user.updated`)).body.data).toHaveLength(1)
  })

  it("tag applications over more than one enumeration page (100 enrollments): each user once, though their enrollments straddle pages", async () => {
    const client = await fresh(h())
    const showcase = await created(client.post("/showcases", { name: "Shelf" }))
    const products: Array<string> = []
    for (let i = 0; i < 34; i++) products.push((await created(client.post("/products", { format: "course", name: `Course ${i}`, showcase_id: showcase.id }))).id)
    const tag = await newTag(client, "Cohort")
    const d = await created(client.post("/sales/deliveries", { name: "Everything", products: products.map((product_id) => ({ product_id })) }))
    // 3 buyers of the 34 products: 102 enrollments, read 100 a page in user order (the third buyer's straddle the pages).
    const stamp = Date.now()
    const buyers = await runAsAccount(
      h(),
      Effect.forEach(Array.from({ length: 3 }, (_, i) => i), (i) =>
        Effect.flatMap(createResource(users, {}, { name: `Buyer ${i}`, email: `buyer-${i}-${stamp}@example.com` }), (user) =>
          Effect.as(grantDelivery({ delivery_id: d.id, user_id: user.id, sales_event_id: "sev_000000001", at: Date.now() }), user.id)
        )
      ),
      "sandbox"
    )
    expect((await client.patch(`/sales/deliveries/${d.id}`, { tag_ids: [tag] })).status).toBe(200)
    const res = await client.post(`/sales/deliveries/${d.id}/tags/applications`)
    expect(res.status, res.text).toBe(202)
    expect(res.body.data.progress.total).toBe(3)
    const op = await settle(client, res.body.data.id)
    expect(op).toMatchObject({ status: "succeeded", progress: { done: 3, failed: 0, total: 3 } })
    const items = (await client.get(`/operations/${op.id}/items?limit=200`)).body.data
    expect(items.map((i: any) => i.key).sort()).toEqual([...buyers].sort())
    expect((await client.get(`/tags/${tag}`)).body.data.users_count).toBe(3)
  }, 120_000)

  it("tag applications: Idempotency-Key required; a repeated key answers the same operation; a trashed delivery is 404", async () => {
    const client = await fresh(h())
    const d = await created(client.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: await newProduct(client) }] }))
    expectError(await client.post(`/sales/deliveries/${d.id}/tags/applications`, undefined, { idempotencyKey: null }), 422, "idempotency_key_required")
    const key = `tags-${Date.now()}`
    const first = await client.post(`/sales/deliveries/${d.id}/tags/applications`, undefined, { idempotencyKey: key })
    expect(first.status, first.text).toBe(202)
    // No user has access: an operation of no items, which succeeds.
    expect(first.body.data.progress.total).toBe(0)
    const replay = await client.post(`/sales/deliveries/${d.id}/tags/applications`, undefined, { idempotencyKey: key })
    expect(replay.status).toBe(202)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.body.data.id).toBe(first.body.data.id)
    expect((await settle(client, first.body.data.id)).status).toBe("succeeded")
    expect((await client.get("/operations")).body.data).toHaveLength(1)
    expect((await client.del(`/sales/deliveries/${d.id}`)).status).toBe(200)
    expectError(await client.post(`/sales/deliveries/${d.id}/tags/applications`), 404, "not_found")
  })

  it("tag applications: a user whose access has ended when the item runs is an item failed with state_conflict, reason no_access", async () => {
    const client = await fresh(h())
    const p = await newProduct(client)
    const tag = await newTag(client, "Buyers")
    const d = await created(client.post("/sales/deliveries", { name: "Trial", products: [{ product_id: p, duration_days: 1 }] }))
    const [lapsed, lasting] = [await newUser(client, "Lapsed"), await newUser(client, "Lasting")]
    await grant(h(), d.id, lapsed)
    // The other buyer's access lasts: granted later with a longer trial delivery's worth of days.
    await grant(h(), d.id, lasting, Date.now() + 3 * DAY)
    expect((await client.patch(`/sales/deliveries/${d.id}`, { tag_ids: [tag] })).status).toBe(200)
    // Two days on: the first buyer's enrollment is past its expiry, not yet recorded expired by the housekeeping.
    h().advance(2 * DAY)
    try {
      const res = await client.post(`/sales/deliveries/${d.id}/tags/applications`)
      expect(res.status, res.text).toBe(202)
      expect(res.body.data.progress.total).toBe(2)
      const op = await settle(client, res.body.data.id)
      // Every item ran: succeeded; the refused one carries its error.
      expect(op).toMatchObject({ status: "succeeded", progress: { done: 1, failed: 1, total: 2 }, error: null })
      const items = (await client.get(`/operations/${op.id}/items`)).body.data
      const failed = items.find((i: any) => i.key === lapsed)
      expect(failed).toMatchObject({ status: "failed", error: { code: "state_conflict", reason: "no_access", resource_id: lapsed } })
      expect(items.find((i: any) => i.key === lasting)).toMatchObject({ status: "succeeded" })
      expect(await userTags(client, lapsed)).toEqual([])
      expect(await userTags(client, lasting)).toEqual([tag])
    } finally {
      h().advance(-2 * DAY)
    }
  })
})

eachStore(
  "tag applications whose users lose access before their items run",
  (h) => {
    it("a user whose access was taken away (a refund revoked it) fails with reason revoked; one whose access lapsed with no_access (§7 state_conflict reasons)", async () => {
      const client = await fresh(h())
      const tag = await newTag(client, "Buyers")
      const d = await created(client.post("/sales/deliveries", { name: "Trial", products: [{ product_id: await newProduct(client), duration_days: 1 }] }))
      const [refunded, lapsed, kept] = [await newUser(client, "Refunded"), await newUser(client, "Lapsed"), await newUser(client, "Kept")]
      await grant(h(), d.id, refunded)
      await grant(h(), d.id, lapsed)
      await grant(h(), d.id, kept, Date.now() + 3 * DAY)
      expect((await client.patch(`/sales/deliveries/${d.id}`, { tag_ids: [tag] })).status).toBe(200)
      const res = await client.post(`/sales/deliveries/${d.id}/tags/applications`)
      expect(res.status, res.text).toBe(202)
      expect(res.body.data.progress.total).toBe(3)
      // Before the items run: a refund, and two days for the trial to lapse.
      await revoke(h(), d.id, refunded)
      h().advance(2 * DAY)
      try {
        await h().runUseCase(runDueOperations())
        const op = (await client.get(`/operations/${res.body.data.id}`)).body.data
        expect(op).toMatchObject({ status: "succeeded", progress: { done: 1, failed: 2, total: 3 } })
        const items = new Map((await client.get(`/operations/${op.id}/items`)).body.data.map((i: any) => [i.key, i]))
        expect(items.get(refunded)).toMatchObject({ status: "failed", error: { code: "state_conflict", reason: "revoked", resource_id: refunded } })
        expect(items.get(lapsed)).toMatchObject({ status: "failed", error: { code: "state_conflict", reason: "no_access", resource_id: lapsed } })
        expect(items.get(kept)).toMatchObject({ status: "succeeded" })
      } finally {
        h().advance(-2 * DAY)
      }
    })
  },
  { workers: false }
)
