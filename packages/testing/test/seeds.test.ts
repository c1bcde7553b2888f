/** Seed helpers and event assertions: records made through the API, and the events they recorded. */
import { createTestApi, matches, type TestApi } from "@syllabus/testing"
import { afterEach, beforeEach, describe, expect, it } from "vitest"

let api: TestApi
beforeEach(async () => {
  api = await createTestApi()
})
afterEach(() => api.close())

describe("seed helpers", () => {
  it("create products (in a showcase of their own unless given), users, webhooks, and answer them as the API does", async () => {
    const product = await api.seed.product({ name: "Geometry" })
    expect(product).toMatchObject({ object: "product", name: "Geometry", status: "draft", format: "course" })
    const again = await api.seed.product()
    expect(again.showcase_id).toBe(product.showcase_id)
    const shelf = await api.seed.showcase({ name: "Elsewhere" })
    expect((await api.seed.product({ showcase_id: shelf.id })).showcase_id).toBe(shelf.id)
    expect((await api.request("GET", `/products/${product.id}`)).body.data).toEqual(product)

    const user = await api.seed.user({ name: "Ada" })
    expect(user).toMatchObject({ object: "user", name: "Ada", status: "active" })
    expect((await api.seed.user()).email).not.toBe(user.email)

    const hook = await api.seed.webhook()
    expect(hook.event_types).toEqual(["*"])
    expect(hook.secret.value).toMatch(/^whsec_/)
  })

  it("publish a product through its operation", async () => {
    const product = await api.seed.product()
    const published = await api.seed.publish(product.id)
    expect(published.status).toBe("published")
    await api.events.expect("product.published", { match: { id: product.id } })
  })

  it("say what the API refused", async () => {
    await expect(api.seed.product({ format: "hologram" })).rejects.toThrow(/POST \/products answered 422 validation_failed/)
  })

  it("use the live credential when the instance is made with credential: \"live\"", async () => {
    const live = await createTestApi({ credential: "live" })
    try {
      await live.seed.showcase({ name: "Live" })
      expect((await live.request("GET", "/showcases", { credential: "live" })).body.data).toHaveLength(1)
      expect((await live.request("GET", "/showcases", { credential: "test" })).body.data).toHaveLength(0)
    } finally {
      await live.close()
    }
  })
})

describe("event assertions", () => {
  it("find the recorded event of a type whose resource matches", async () => {
    await api.seed.product({ name: "First" })
    const second = await api.seed.product({ name: "Second" })
    const event = await api.events.expect("product.created", { match: { name: "Second" } })
    expect(event.data.object.id).toBe(second.id)
    expect(event.environment).toBe("sandbox")
    expect((await api.events.list({ type: "product.created" })).map((e) => e.data.object.name)).toEqual(["Second", "First"])
  })

  it("fail with what was recorded when no event matches", async () => {
    await api.seed.product({ name: "Only" })
    await expect(api.events.expect("product.created", { match: { name: "Other" }, timeoutMs: 50 })).rejects.toThrow(
      /no product.created event matching \{"name":"Other"\} was recorded \(1 of that type; recorded types: product.created, showcase.created\)/
    )
    await expect(api.events.expect("product.created", { credential: "live", timeoutMs: 50 })).rejects.toThrow(/recorded types: none/)
  })

  it("match deeply and partially", () => {
    const resource = { id: "prd_1", display: { show_progress: true, hide_module_bar: false }, tags: ["a", "b"] }
    expect(matches(resource, { display: { show_progress: true } })).toBe(true)
    expect(matches(resource, { display: { show_progress: false } })).toBe(false)
    expect(matches(resource, { tags: ["a", "b"] })).toBe(true)
    expect(matches(resource, { tags: ["a"] })).toBe(false)
    expect(matches(resource, { missing: null })).toBe(false)
  })
})
