/**
 * The store ports in memory: the embedded default, and the store of tests and embeddings.
 * State lives as long as the layer; every build starts empty.
 */
import { Context, Effect, Layer } from "effect"
import { Idempotency, RateLimitStore, Records, UnitOfWork } from "@syllabus/core"
import { makeIdempotency } from "./idempotency.js"
import { makeRateLimitStore } from "./rate-limit.js"
import { makeRecords } from "./records.js"
import { makeStore } from "./state.js"

/** Counters of the store's work (nodes visited by index reads; lock waits and lost races), for tests. */
export { instrumentation } from "./btree.js"
export { lockCounters } from "./state.js"

export const MemoryStore: Layer.Layer<Records | UnitOfWork | Idempotency | RateLimitStore> = Layer.scopedContext(
  Effect.gen(function* () {
    const store = yield* makeStore
    const rateLimits = yield* makeRateLimitStore
    return Context.make(Records, makeRecords(store)).pipe(
      Context.add(UnitOfWork, UnitOfWork.of({ transaction: store.transaction })),
      Context.add(Idempotency, makeIdempotency(store)),
      Context.add(RateLimitStore, rateLimits)
    )
  })
)
