import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { Records, UnitOfWork } from "@syllabus/core"
import { MemoryStore } from "../../packages/memory/src/index.js"
import { storeConformance } from "./conformance.js"

storeConformance("memory", MemoryStore)

describe("MemoryStore", () => {
  const tenant = { accountId: "acc_1", environment: "sandbox" } as const

  it.scoped("every build of the layer starts empty and keeps its own state", () =>
    Effect.gen(function* () {
      const one = yield* Layer.build(MemoryStore)
      const two = yield* Layer.build(MemoryStore)
      yield* Effect.flatMap(Records, (r) => r.insert(tenant, "course", "crs_1", {})).pipe(Effect.provide(one))
      expect(yield* Effect.flatMap(Records, (r) => r.get(tenant, "course", "crs_1")).pipe(Effect.provide(two))).toBeUndefined()
    }))

  it.scoped("a transaction of one store does not capture the writes of another", () =>
    Effect.gen(function* () {
      const one = yield* Layer.build(MemoryStore)
      const two = yield* Layer.build(MemoryStore)
      const insertInTwo = Effect.flatMap(Records, (r) => r.insert(tenant, "course", "crs_2", {})).pipe(Effect.provide(two))
      const exit = yield* Effect.flatMap(UnitOfWork, (uow) =>
        uow.transaction(Effect.zipRight(insertInTwo, Effect.fail("boom" as const)))
      ).pipe(Effect.provide(one), Effect.exit)
      expect(exit).toEqual(Exit.fail("boom"))
      expect(yield* Effect.flatMap(Records, (r) => r.get(tenant, "course", "crs_2")).pipe(Effect.provide(two))).toBeDefined()
    }))
})
