/**
 * The test clock: advancing it makes what depends on time happen (§8.2 cursor validity 24 h,
 * §8.3 idempotency receipts 48 h and retention, upload session expiry).
 */
import { AdjustableClock, createTestApi, toMilliseconds, type TestApi } from "@syllabus/testing"
import { Effect, Fiber } from "effect"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { declare, png } from "./upload.js"

let api: TestApi
beforeEach(async () => {
  api = await createTestApi()
})
afterEach(() => api.close())

describe("the test clock", () => {
  it("reads durations as numbers of milliseconds or unit strings", () => {
    expect(toMilliseconds(1500)).toBe(1500)
    expect(toMilliseconds("90s")).toBe(90_000)
    expect(toMilliseconds("1h30m")).toBe(5_400_000)
    expect(toMilliseconds("2d")).toBe(172_800_000)
    expect(toMilliseconds("1m250ms")).toBe(60_250)
    expect(() => toMilliseconds("soon")).toThrow(RangeError)
    expect(() => toMilliseconds(-1)).toThrow(RangeError)
  })

  it("AdjustableClock: shift moves the time only, advance also ends the waits it passes", async () => {
    const clock = new AdjustableClock()
    const hourLong = Effect.runFork(clock.sleep("1 hour"))
    const before = clock.unsafeCurrentTimeMillis()
    clock.shift(2 * 3_600_000)
    expect(clock.unsafeCurrentTimeMillis() - before).toBeGreaterThanOrEqual(2 * 3_600_000)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(hourLong.unsafePoll()).toBeNull()
    // A wait begun now ends an hour of the clock's time from now: advancing 59 minutes is not enough.
    const next = Effect.runFork(clock.sleep("1 hour"))
    clock.advance(59 * 60_000)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(next.unsafePoll()).toBeNull()
    clock.advance(60_000)
    await Fiber.join(next)
    // The first wait began before the shift: its end is passed too.
    await Fiber.join(hourLong)
  })

  it("moves the server's time: now() and the records' timestamps", async () => {
    const before = api.clock.now()
    await api.clock.advance("3h")
    expect(api.clock.now() - before).toBeGreaterThanOrEqual(3 * 3_600_000)
    const showcase = await api.seed.showcase()
    expect(Date.parse(showcase.created_at)).toBeGreaterThanOrEqual(before + 3 * 3_600_000)
  })

  it("expires a cursor after 24 hours: 400 invalid_cursor", async () => {
    await api.seed.product()
    await api.seed.product()
    const first = await api.request("GET", "/products?limit=1")
    const cursor = first.body.page.next_cursor as string
    expect(typeof cursor).toBe("string")
    const next = `/products?limit=1&cursor=${encodeURIComponent(cursor)}`
    expect((await api.request("GET", next)).status).toBe(200)
    await api.clock.advance("23h")
    expect((await api.request("GET", next)).status).toBe(200)
    await api.clock.advance("1h1m")
    const expired = await api.request("GET", next)
    expect(expired.status).toBe(400)
    expect(expired.body.error.code).toBe("invalid_cursor")
  })

  it("expires an idempotency receipt after 48 hours: the same key then makes a new record", async () => {
    const create = () => api.request("POST", "/showcases", { json: { name: "Once" }, idempotencyKey: "same-key" })
    const first = await create()
    expect(first.status).toBe(201)
    const replayed = await create()
    expect(replayed.headers.get("idempotent-replayed")).toBe("true")
    expect(replayed.body.data.id).toBe(first.body.data.id)
    await api.clock.advance("47h")
    expect((await create()).body.data.id).toBe(first.body.data.id)
    await api.clock.advance("1h1m")
    const after = await create()
    expect(after.status).toBe(201)
    expect(after.headers.get("idempotent-replayed")).toBeNull()
    expect(after.body.data.id).not.toBe(first.body.data.id)
  })

  it("ends upload sessions at their expiry and events at the end of their retention", async () => {
    const session = (await declare(api, png())).body.data
    await api.seed.showcase()
    await api.clock.advance("1d1m")
    expect((await api.request("GET", `/uploads/${session.id}`)).body.data.status).toBe("expired")
    const event = await api.events.expect("showcase.created")
    expect((await api.request("GET", `/events/${event.id}`)).status).toBe(200)
    await api.clock.advance("30d")
    const gone = await api.request("GET", `/events/${event.id}`)
    expect(gone.status).toBe(404)
    expect(gone.body.error.code).toBe("not_found")
  })

  it("expires an enrollment at its expires_at: status expired, event enrollment.expired", async () => {
    const user = await api.seed.user()
    const product = await api.seed.product()
    const expiresAt = new Date(api.clock.now() + 2 * 86_400_000).toISOString()
    const created = await api.request("POST", "/enrollments", { json: { user_id: user.id, product_id: product.id, expires_at: expiresAt } })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const id = created.body.data.id as string
    await api.clock.advance("1d")
    expect((await api.request("GET", `/enrollments/${id}`)).body.data.status).toBe("active")
    await api.clock.advance("1d1m")
    expect((await api.request("GET", `/enrollments/${id}`)).body.data.status).toBe("expired")
    const event = await api.events.expect("enrollment.expired")
    expect(event.data.object.id).toBe(id)
  })
})
