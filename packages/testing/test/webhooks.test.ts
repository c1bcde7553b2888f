/**
 * Webhook capture: deliveries reach the in-process receiver signed as the network sender signs
 * them (Standard Webhooks, verified here with the `standardwebhooks` package), and a receiver
 * that is down gets the delivery again on the retry schedule when the clock moves.
 */
import { createTestApi, type TestApi, WebhookVerificationFailed } from "@syllabus/testing"
import { Webhook, WebhookVerificationError } from "standardwebhooks"
import { afterEach, beforeEach, describe, expect, it } from "vitest"

let api: TestApi
beforeEach(async () => {
  api = await createTestApi()
})
afterEach(() => api.close())

describe("webhook capture", () => {
  it("captures a delivery with Standard Webhooks headers that verify with the webhook's secret", async () => {
    const hook = await api.seed.webhook({ event_types: ["product.created"] })
    const product = await api.seed.product({ name: "Signed" })
    const received = await api.webhooks.waitFor("product.created", { match: { id: product.id } })
    expect(received.url).toBe(hook.url)
    expect(received.headers["webhook-id"]).toBe(received.event.id)
    expect(received.headers["content-type"]).toBe("application/json")

    const verified = new Webhook(hook.secret.value).verify(received.body, received.headers) as { type: string; data: { object: { name: string } } }
    expect(verified.type).toBe("product.created")
    expect(verified.data.object.name).toBe("Signed")
    // The signature covers the bytes: another body, or another secret, does not verify.
    expect(() => new Webhook(hook.secret.value).verify(received.body.replace("Signed", "Forged"), received.headers)).toThrow(WebhookVerificationError)
    const other = await api.seed.webhook()
    expect(() => new Webhook(other.secret.value).verify(received.body, received.headers)).toThrow(WebhookVerificationError)
  })

  it("after the clock moved, a delivery carries the moved time: standardwebhooks' verify (the machine's clock) refuses it, api.webhooks.verify (the test clock) accepts it", async () => {
    const hook = await api.seed.webhook({ event_types: ["product.created"] })
    await api.clock.advance("1h")
    const product = await api.seed.product({ name: "Later" })
    const received = await api.webhooks.waitFor("product.created", { match: { id: product.id } })
    expect(() => new Webhook(hook.secret.value).verify(received.body, received.headers)).toThrow(WebhookVerificationError)
    expect(api.webhooks.verify(received, hook.secret.value).data.object.name).toBe("Later")
    // Still a verification: another secret, another body, or a stale delivery fail.
    const other = await api.seed.webhook()
    expect(() => api.webhooks.verify(received, other.secret.value)).toThrow(WebhookVerificationFailed)
    expect(() => api.webhooks.verify({ ...received, body: received.body.replace("Later", "Forged") }, hook.secret.value)).toThrow(WebhookVerificationFailed)
    await api.clock.advance("6m")
    expect(() => api.webhooks.verify(received, hook.secret.value)).toThrow(/more than 300 s/)
  })

  it("filters what arrived by type and destination, and forgets on clear()", async () => {
    const a = await api.seed.webhook({ event_types: ["showcase.created"] })
    const b = await api.seed.webhook({ event_types: ["product.created"] })
    await api.seed.product()
    await api.webhooks.waitFor("product.created")
    await api.webhooks.waitFor("showcase.created")
    expect(api.webhooks.received({ url: a.url }).map((w) => w.type)).toEqual(["showcase.created"])
    expect(api.webhooks.received({ url: b.url }).map((w) => w.type)).toEqual(["product.created"])
    expect(api.webhooks.received({ type: "user.created" })).toEqual([])
    api.webhooks.clear()
    expect(api.webhooks.received()).toEqual([])
    await expect(api.webhooks.waitFor("user.created", { timeoutMs: 50 })).rejects.toThrow(/no user.created webhook arrived/)
  })

  it("retries a delivery the receiver refused once the clock reaches the retry (5 s later)", async () => {
    const hook = await api.seed.webhook({ event_types: ["product.created"] })
    api.faults.receiver(true)
    const product = await api.seed.product()
    const deliveries = `/webhooks/${hook.id}/deliveries`
    // The first attempt fails: recorded, nothing received.
    let delivery: any
    for (let i = 0; i < 200 && !(delivery?.attempt_count >= 1); i++) {
      delivery = (await api.request("GET", deliveries)).body.data[0]
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect(delivery.attempt_count).toBe(1)
    expect(delivery.status).toBe("pending")
    const attempts = (await api.request("GET", `${deliveries}/${delivery.id}/attempts`)).body.data
    expect(attempts[0].transport_error).toBe("connection_failed")
    expect(api.webhooks.received()).toEqual([])

    api.faults.receiver(false)
    // Not before its time: the retry waits for the clock (well under 5 s of real time here).
    await expect(api.webhooks.waitFor("product.created", { timeoutMs: 300 })).rejects.toThrow()
    await api.clock.advance("5s")
    const received = await api.webhooks.waitFor("product.created", { timeoutMs: 1000 })
    expect(received.event.data.object.id).toBe(product.id)
    const after = (await api.request("GET", `${deliveries}/${delivery.id}`)).body.data
    expect(after.status).toBe("succeeded")
    expect(after.attempt_count).toBe(2)
  })

  it("keeps one destination down while the others receive", async () => {
    const down = await api.seed.webhook({ event_types: ["showcase.created"] })
    const up = await api.seed.webhook({ event_types: ["showcase.created"] })
    api.faults.receiver(true, down.url)
    await api.seed.showcase()
    await api.webhooks.waitFor("showcase.created", { url: up.url })
    await api.clock.advance("1s")
    expect(api.webhooks.received({ url: down.url })).toEqual([])
  })
})
