import { describe, expect, it } from "vitest"
import { bearerOf } from "@syllabus/core"

describe("Authorization: Bearer", () => {
  it("takes the one token after the scheme, case-insensitively", () => {
    expect(bearerOf("Bearer abc.def")).toBe("abc.def")
    expect(bearerOf("bearer   tok")).toBe("tok")
    expect(bearerOf("Basic abc")).toBeUndefined()
    expect(bearerOf("Bearer a b")).toBeUndefined()
    expect(bearerOf("Bearer")).toBeUndefined()
  })

  it("answers at once on hostile input (a pattern that backtracked took seconds on 30 characters)", () => {
    const hostile = `Bearer ${"a".repeat(5000)} x`
    expect(bearerOf(hostile)).toBeUndefined()
  })
})
