import { Option } from "effect"
import { describe, expect, it } from "vitest"
import { encodeIdBody, formatId, ID_MAX, nextIdNumber, parseId } from "@syllabus/core"

describe("public IDs", () => {
  it("round-trip through their prefix and fixed-width body", () => {
    for (const n of [1, 62, 12345678, ID_MAX]) {
      expect(Option.getOrThrow(parseId("credential", formatId("credential", n)))).toBe(n)
    }
  })

  it("refuse a wrong prefix, a malformed body, zero and values above 2^53 - 1", () => {
    expect(Option.isNone(parseId("credential", formatId("product", 5)))).toBe(true)
    expect(Option.isNone(parseId("credential", "crd_abc"))).toBe(true)
    expect(Option.isNone(parseId("credential", "crd_00000000!"))).toBe(true)
    expect(Option.isNone(parseId("credential", `crd_${encodeIdBody(0)}`))).toBe(true)
    expect(Option.isNone(parseId("credential", "crd_zzzzzzzzz"))).toBe(true)
  })

  it("sort as text in the order of their integers, which lead with creation time", () => {
    const a = nextIdNumber(Date.UTC(2026, 0, 1), 0, 7)
    const b = nextIdNumber(Date.UTC(2026, 0, 1), a, 3)
    const c = nextIdNumber(Date.UTC(2026, 0, 2), b, 0)
    expect(b).toBeGreaterThan(a)
    expect(c).toBeGreaterThan(b)
    expect([formatId("request", c), formatId("request", a), formatId("request", b)].sort()).toEqual([
      formatId("request", a),
      formatId("request", b),
      formatId("request", c)
    ])
  })
})
