/**
 * The request log in group commits (`makeRequestLogWriter`, trail/audit.ts), on a store whose
 * commits are worth sharing (`Records.groupCommit`, PostgreSQL's): concurrent calls' entries are
 * written together, one `insertMany` per tenant while a write is in flight, and each
 * call returns only once its entry is stored; a failed write answers every waiter of its batch
 * with `audit_unavailable` (a read then fails closed).
 */
import { describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { makeRequestLogWriter, Records, REQUEST_TYPE, StoreUnavailable, type Tenant } from "@syllabus/core"
import { memoryStore } from "@syllabus/memory"
import { tenant } from "./support.js"

const other: Tenant = { accountId: "acc_000000002", environment: "production" }

const entry = (n: number, t: Tenant = tenant) => ({
  object: "request" as const,
  id: `req_${String(n).padStart(9, "0")}`,
  method: "GET",
  path: "/api/v3/credentials/current",
  operation_id: "credentials.current",
  status: 200,
  outcome: "success",
  error_code: null,
  credential_id: "crd_000000001",
  administrator_id: null,
  client_request_id: null,
  idempotency_key: null,
  idempotent_replayed: false,
  duration_ms: 1,
  environment: t.environment,
  created_at: "2026-11-28T00:00:00.000Z"
})

/** A memory store whose `insertMany` is counted, takes a few milliseconds, and fails when told (each call, or the first). */
const countingStore = (options: { readonly failing?: "always" | "first" } = {}) => {
  const calls: Array<number> = []
  const layer = Layer.effect(
    Records,
    Effect.map(Records, (records) =>
      Records.of({
        ...records,
        // As PostgreSQL's store says of itself.
        groupCommit: true,
        insertMany: (t, type, rows) =>
          Effect.sync(() => calls.push(rows.length)).pipe(
            Effect.zipRight(Effect.sleep("5 millis")),
            Effect.zipRight(
              Effect.suspend(() =>
                options.failing === "always" || (options.failing === "first" && calls.length === 1)
                  ? Effect.fail(new StoreUnavailable({ cause: "down" }))
                  : records.insertMany(t, type, rows)
              )
            )
          )
      })
    )
  ).pipe(Layer.provideMerge(memoryStore()))
  return { calls, layer }
}

describe("the request log in group commits", () => {
  it("100 concurrent calls of two tenants are written in a few statements, each entry stored once its call returns", async () => {
    const { calls, layer } = countingStore()
    const log = makeRequestLogWriter()
    const stored = await Effect.runPromise(
      Effect.gen(function* () {
        yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => log(i % 2 === 0 ? tenant : other, entry(i, i % 2 === 0 ? tenant : other)), {
          concurrency: "unbounded"
        })
        const records = yield* Records
        const sort = { field: "id", kind: "text", direction: "asc" } as const
        const mine = yield* records.list(tenant, REQUEST_TYPE, { where: [], sort, limit: 1000 })
        const theirs = yield* records.list(other, REQUEST_TYPE, { where: [], sort, limit: 1000 })
        return { mine: mine.length, theirs: theirs.length }
      }).pipe(Effect.provide(layer))
    )
    expect(stored).toEqual({ mine: 50, theirs: 50 })
    expect(calls.reduce((a, b) => a + b, 0)).toBe(100)
    // The first call writes alone; the others queue behind it and go in per-tenant batches.
    expect(calls.length).toBeLessThanOrEqual(5)
  })

  it("a failed write answers every waiter of its batch with audit_unavailable", async () => {
    const { layer } = countingStore({ failing: "always" })
    const log = makeRequestLogWriter()
    const outcomes = await Effect.runPromise(
      Effect.forEach(Array.from({ length: 20 }, (_, i) => i), (i) => Effect.flip(log(tenant, entry(i))), { concurrency: "unbounded" }).pipe(
        Effect.provide(layer)
      )
    )
    expect(outcomes.map((error) => error.code)).toEqual(Array.from({ length: 20 }, () => "audit_unavailable"))
  })

  it("an ID already taken (another process's, the same millisecond) fails its own call only, not its batch", async () => {
    const { layer } = countingStore()
    const log = makeRequestLogWriter()
    const outcomes = await Effect.runPromise(
      Effect.gen(function* () {
        const records = yield* Records
        yield* records.insert(tenant, REQUEST_TYPE, entry(7).id, { taken: true })
        return yield* Effect.forEach(Array.from({ length: 20 }, (_, i) => i), (i) => Effect.either(log(tenant, entry(i))), { concurrency: "unbounded" })
      }).pipe(Effect.provide(layer))
    )
    expect(outcomes.map((outcome, i) => [i, outcome._tag === "Left" ? outcome.left.code : "stored"]).filter(([, o]) => o !== "stored")).toEqual([
      [7, "audit_unavailable"]
    ])
  })

  it("a store in memory (no groupCommit) inserts each entry at once: no batch, no queue", async () => {
    const inserted: Array<string> = []
    const layer = Layer.effect(
      Records,
      Effect.map(Records, (records) =>
        Records.of({
          ...records,
          insert: (t, type, id, data, uniques) => Effect.zipRight(Effect.sync(() => inserted.push(id)), records.insert(t, type, id, data, uniques)),
          insertMany: () => Effect.die("a store in memory writes the request log one entry at a time")
        })
      )
    ).pipe(Layer.provideMerge(memoryStore()))
    const log = makeRequestLogWriter()
    await Effect.runPromise(
      Effect.forEach(Array.from({ length: 20 }, (_, i) => i), (i) => log(tenant, entry(i)), { concurrency: "unbounded" }).pipe(Effect.provide(layer))
    )
    expect(inserted.length).toBe(20)
  })

  it("after a failure the writer goes on: the next call is written", async () => {
    const { layer } = countingStore({ failing: "first" })
    const log = makeRequestLogWriter()
    const count = await Effect.runPromise(
      Effect.gen(function* () {
        const first = yield* Effect.flip(log(tenant, entry(1)))
        expect(first.code).toBe("audit_unavailable")
        yield* log(tenant, entry(2))
        const records = yield* Records
        return (yield* records.list(tenant, REQUEST_TYPE, { where: [], sort: { field: "id", kind: "text", direction: "asc" }, limit: 10 })).length
      }).pipe(Effect.provide(layer))
    )
    expect(count).toBe(1)
  })
})
