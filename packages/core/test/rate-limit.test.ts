import { describe, expect, it } from "vitest"
import { decide, slidingCount } from "@syllabus/core"

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
