/**
 * Announcing published products from webhooks: the double delivers signed webhooks to the
 * app's own endpoint in process, and retries them on its schedule when the endpoint fails.
 */
import { createTestApi, type TestApi } from "@syllabus/testing"
import assert from "node:assert/strict"
import { afterEach, describe, it } from "node:test"
import { announcer } from "../src/announcements.js"
import { syllabusClient } from "../src/client.js"

describe("announcements", () => {
  let api: TestApi | undefined
  afterEach(() => api?.close())

  /** An API whose webhook deliveries go to the app's endpoint (made once the webhook's secret is known). */
  const setUp = async () => {
    let endpoint: ((request: Request) => Promise<Response>) | undefined
    api = await createTestApi({ receiver: (request) => endpoint?.(request) ?? new Response(null, { status: 503 }) })
    const hook = await api.seed.webhook({ event_types: ["product.published"] })
    const app = announcer({
      webhookSecret: hook.secret.value,
      client: syllabusClient({ baseUrl: api.baseUrl, secret: api.secrets.test, fetch: api.fetch })
    })
    endpoint = app.handle
    return { api, app, hook }
  }

  it("announces a product when it is published", async () => {
    const { api, app } = await setUp()
    const product = await api.seed.product({ name: "Calculus" })
    await api.seed.publish(product.id)
    await api.webhooks.waitFor("product.published")
    assert.deepEqual(
      app.announcements().map((a) => [a.productId, a.title]),
      [[product.id, "New course: Calculus"]]
    )
  })

  it("refuses a delivery whose signature does not verify", async () => {
    const { api, app } = await setUp()
    const product = await api.seed.product()
    await api.seed.publish(product.id)
    const delivery = await api.webhooks.waitFor("product.published")
    const forged = await app.handle(
      new Request("https://school.example/hooks", { method: "POST", headers: delivery.headers, body: delivery.body.replace(product.id, "prd_forged") })
    )
    assert.equal(forged.status, 400)
  })

  it("gets a delivery its endpoint missed while down, once the retry is due", async () => {
    const { api, app, hook } = await setUp()
    const product = await api.seed.product({ name: "Statistics" })
    api.faults.receiver(true)
    await api.seed.publish(product.id)
    const firstAttempt = async () => {
      for (let i = 0; i < 200; i++) {
        const [delivery] = (await api.request("GET", `/webhooks/${hook.id}/deliveries`)).body.data
        if (delivery?.attempt_count >= 1) return delivery
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      throw new Error("no attempt was made")
    }
    const delivery = await firstAttempt()
    api.faults.receiver(false)
    assert.deepEqual(app.announcements(), [])
    // The first retry is 5 seconds after the failed attempt: on the test clock, at once.
    await api.clock.advance("5s")
    const received = await api.webhooks.waitFor("product.published", { timeoutMs: 2000 })
    assert.equal(received.status, 204)
    assert.deepEqual(app.announcements().map((a) => a.title), ["New course: Statistics"])
    const after = (await api.request("GET", `/webhooks/${hook.id}/deliveries/${delivery.id}`)).body.data
    assert.deepEqual([after.status, after.attempt_count], ["succeeded", 2])
  })
})
