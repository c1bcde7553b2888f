/**
 * The store ports in memory: the embedded default, and the store of tests and embeddings.
 * State lives as long as the layer; every build starts empty.
 */
import { Context, Effect, Layer } from "effect"
import { type AccessPath, accessPaths, Idempotency, keepingFigures, keptFigures, RateLimitStore, Records, UnitOfWork } from "@syllabus/core"
import { indexesOfPath } from "./bucket.js"
import { makeIdempotency } from "./idempotency.js"
import { makeRateLimitStore } from "./rate-limit.js"
import { logFields, makeLog, withLog } from "./log.js"
import { makeRecords } from "./records.js"
import { makeStore } from "./state.js"

/** Counters of the store's work (nodes visited by index reads; lock waits and lost races), for tests. */
export { instrumentation } from "./btree.js"
export { lockCounters } from "./state.js"

/**
 * The store ports in memory, keeping the indexes of `paths` (every access path of the release
 * by default: `accessPaths()`) in every bucket from its first record, so that no read of a
 * declared path builds one; an undeclared read builds its index on first use.
 */
export const memoryStore = (
  paths: ReadonlyArray<AccessPath> = accessPaths()
): Layer.Layer<Records | UnitOfWork | Idempotency | RateLimitStore> =>
  Layer.scopedContext(Effect.gen(function* () {
    const store = yield* makeStore(paths.flatMap((path) => indexesOfPath(path).map((spec) => ({ type: path.type, spec }))))
    const rateLimits = yield* makeRateLimitStore
    // Every write of a counted type keeps its figures (core's `keptFigures()`), in its unit of work.
    return Context.make(Records, keepingFigures(withLog(makeRecords(store), makeLog(logFields(paths))), store.join, keptFigures())).pipe(
      Context.add(UnitOfWork, UnitOfWork.of({ transaction: store.transaction, join: store.join })),
      Context.add(Idempotency, makeIdempotency(store)),
      Context.add(RateLimitStore, rateLimits)
    )
  }))

export const MemoryStore: Layer.Layer<Records | UnitOfWork | Idempotency | RateLimitStore> = memoryStore()
