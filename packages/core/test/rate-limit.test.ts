import { describe, expect, it } from "vitest"
import { Effect, TestClock, TestContext } from "effect"
import { admit, decide, RateLimitStore, rateLimitHeaders, slidingCount } from "@syllabus/core"

const start = 1_000_000 * 60_000

describe("sliding window", () => {
  it("weights the previous window by how much of it the sliding window still covers", () => {
    expect(slidingCount({ previous: 100, current: 10 }, start, start)).toBe(110)
    expect(slidingCount({ previous: 100, current: 10 }, start + 30_000, start)).toBe(60)
    expect(slidingCount({ previous: 100, current: 10 }, start + 59_999, start)).toBe(10)
  })

  it("reports the blocked scope with a positive retry delay and the tightest line for the headers", () => {
    const checks = [
      { scope: "instance" as const, key: "i", limit: 1000 },
      { scope: "key" as const, key: "k", limit: 300 }
    ]
    const decision = decide(checks, [{ previous: 0, current: 10 }, { previous: 0, current: 300 }], start + 20_000, start, false)
    expect(decision.admitted).toBe(false)
    expect(decision.lines[0]!.retry_after_seconds).toBe(0)
    expect(decision.lines[1]!.retry_after_seconds).toBe(40)
    expect(decision.tightest?.scope).toBe("key")
  })

  it("counts the admitted request in `remaining`", () => {
    const decision = decide([{ scope: "key", key: "k", limit: 300 }], [{ previous: 0, current: 0 }], start, start, true)
    expect(decision.lines[0]!.remaining).toBe(299)
  })
})

describe("retry delays and headers", () => {
  const key = (limit: number) => ({ scope: "key" as const, key: "k", limit })
  const instance = (limit: number) => ({ scope: "instance" as const, key: "i", limit })

  it("a scope full by the previous window's share is free as soon as that share has shrunk enough, not at the window's end", () => {
    // 400 of the previous window + 100 now = 500 of 300; at +30 s the share is 200 (300: still full), at +31 s 193.
    const decision = decide([key(300)], [{ previous: 400, current: 100 }], start, start, false)
    expect(decision.lines[0]!.retry_after_seconds).toBe(31)
    expect(rateLimitHeaders(decision)).toEqual({ "ratelimit-limit": "300", "ratelimit-remaining": "0", "ratelimit-reset": "31" })
  })

  it("the headers name the scope with the fewest calls left, wherever it is in the list, and reset at the window's end", () => {
    const decision = decide([key(300), instance(1000)], [{ previous: 0, current: 290 }, { previous: 0, current: 10 }], start + 20_000, start, true)
    expect(decision.tightest?.scope).toBe("key")
    expect(decision.resetSeconds).toBe(40)
    expect(rateLimitHeaders(decision)).toEqual({ "ratelimit-limit": "300", "ratelimit-remaining": "9", "ratelimit-reset": "40" })
    const reversed = decide([instance(1000), key(300)], [{ previous: 0, current: 10 }, { previous: 0, current: 290 }], start + 20_000, start, true)
    expect(reversed.tightest?.scope).toBe("key")
  })

  it("a refused call names every scope that blocks it, no other, and waits for the longest of their delays", async () => {
    const checks = [instance(1000), { scope: "origin" as const, key: "o", limit: 500 }, key(300)]
    const counts = [{ previous: 0, current: 10 }, { previous: 1000, current: 0 }, { previous: 0, current: 300 }]
    const store = RateLimitStore.of({ hit: (_checks, _windowStart, _windowMs, allow) => Effect.succeed({ admitted: allow(counts), counts }) })
    const refused = Effect.zipRight(TestClock.setTime(start), Effect.flip(admit(checks)))
    const error = await Effect.runPromise(refused.pipe(Effect.provideService(RateLimitStore, store), Effect.provide(TestContext.TestContext)))
    expect(error).toMatchObject({ code: "rate_limit_exceeded", rateLimit: { retry_after_seconds: 60, blocked_by: ["origin", "key"] } })
    expect(error.headers).toMatchObject({ "retry-after": "60", "ratelimit-limit": "300", "ratelimit-reset": "60" })
  })
})
