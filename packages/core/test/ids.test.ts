import { Context, Effect, Layer, Option, TestClock, TestContext } from "effect"
import { describe, expect, it } from "vitest"
import { encodeIdBody, formatId, ID_MAX, IdLane, idLaneOf, Ids, nextIdNumber, parseId } from "@syllabus/core"

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

  it("two processes on their lanes make no common ID, a few IDs per millisecond each, nor in a burst of hundreds", async () => {
    const made = await Effect.runPromise(
      Effect.gen(function*() {
        const process = (n: number) =>
          Effect.map(Layer.build(Ids.live.pipe(Layer.provide(Layer.succeed(IdLane, idLaneOf(n))))), (context) => Context.get(context, Ids))
        const [a, b] = [yield* process(1), yield* process(2)]
        const ids = { a: new Set<string>(), b: new Set<string>() }
        for (let ms = 0; ms < 1_500; ms++) {
          yield* TestClock.setTime(Date.UTC(2026, 10, 29) + ms)
          // A burst now and then (a batch's items), a few IDs otherwise.
          const count = ms % 500 === 0 ? 300 : 1 + (ms % 4)
          for (let i = 0; i < count; i++) ids.a.add(yield* a.next("request"))
          for (let i = 0; i < 1 + (ms % 3); i++) ids.b.add(yield* b.next("request"))
        }
        return ids
      }).pipe(Effect.scoped, Effect.provide(TestContext.TestContext))
    )
    expect(made.a.size).toBeGreaterThan(4_000)
    expect([...made.a].filter((id) => made.b.has(id))).toEqual([])
    // Each process's IDs still grow.
    const inOrder = [...made.a]
    expect([...inOrder].sort()).toEqual(inOrder)
  })
})
