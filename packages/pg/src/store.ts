/** The store ports on one `SqlClient`: the PostgreSQL adapter of `@syllabus/core`. */
import * as SqlClient from "@effect/sql/SqlClient"
import { Idempotency, keepingFigures, keptFigures, RateLimitStore, Records, StoreUnavailable, UnitOfWork } from "@syllabus/core"
import { Cause, Clock, Context, Effect, Exit, FiberRef, Layer, Option, Random } from "effect"
import { defaultPgTimeouts } from "./deadlines.js"
import { makeIdempotency } from "./idempotency.js"
import { makePg, newUnitState, type Pg, shouldRetry } from "./internal.js"
import { makeRateLimitStore } from "./rateLimit.js"
import { makeRecords } from "./records.js"

/**
 * How long a unit of work that keeps losing races is run again before it gives up with
 * `StoreUnavailable`. A race has a winner, and the loser's next run decides from what the winner
 * committed (a 409, 412 or 404 of its own, or its write); only a store that cannot serve the
 * write in time (overloaded: dozens of writers of one row, each slow) loses for this long. A
 * request's deadline (30 s) comes later. It used to be 30 runs, one right after another: 60
 * concurrent writers of one row, or appending to one showcase (a count-then-insert), used them
 * up within a second or two, and a mere race was a 503 (18 and 31 of 180, docs/reliability.md).
 */
const retryForMs = 20_000

/**
 * Before its next run, a unit of work that lost a race waits a random pause of up to
 * 2^attempt ms, at most this long: rerun at once, the losers of one race meet again and lose
 * again, while spread out most reruns find the winner committed.
 */
const maxPauseMs = 1000

/**
 * How long after a unit of work of this process lost a race on a key (`contends`) the key is
 * taken to be busy: a unit that meets it on its first run stops there, before it reads what the
 * others write, and runs again queued on it, instead of running to its end to lose at COMMIT
 * (50 clients appending to one showcase lost about once each).
 */
const busyKeyMs = 1000

/** Keys remembered as busy at most; past it the oldest are forgotten. */
const maxBusyKeys = 10_000

/** The stop of a first run at a busy key: the unit runs again at once, queued on the key. */
class StoppedAtBusyKey extends Error {
  constructor(readonly key: string) {
    super(`a unit of work met a busy key (${key}) on its first run: it runs again queued on it`)
  }
}

/**
 * The deadline of a unit of work in ms (`PgTimeouts.transactionMs`; 0: none), read when
 * `PgStore` is built: `pgLayer` provides it from its timeouts, to the workers' pool too.
 */
export class UnitOfWorkDeadline extends Context.Reference<UnitOfWorkDeadline>()("@syllabus/pg/UnitOfWorkDeadline", {
  defaultValue: () => defaultPgTimeouts.transactionMs
}) {}

/**
 * Units of work are SERIALIZABLE transactions, so that they behave as if run one at a time
 * (as the memory store runs them): a read-modify-write, or a count-then-insert, cannot lose
 * a concurrent update. The price of serializability in PostgreSQL is that a transaction may
 * lose a race (serialization failure, deadlock); it is then rolled back and run again, which
 * is safe because nothing of it was committed. Nested units join the outer one as savepoints.
 */
const makeUnitOfWork = (
  { queueOn, serializable, transaction, unit }: Pg,
  deadlineMs: number
): Context.Tag.Service<typeof UnitOfWork> & { readonly join: Context.Tag.Service<typeof UnitOfWork>["transaction"] } => {
  /** Keys units of work of this process lost races on, until when they count as busy (`busyKeyMs`). */
  const busyUntil = new Map<string, number>()
  const noteBusy = (keys: Iterable<string>) => {
    const until = performance.now() + busyKeyMs
    for (const key of keys) {
      busyUntil.delete(key)
      busyUntil.set(key, until)
    }
    // In insertion order: the first are the oldest.
    for (const key of busyUntil.keys()) {
      if (busyUntil.size <= maxBusyKeys) break
      busyUntil.delete(key)
    }
  }
  const isBusyKey = (key: string) => (busyUntil.get(key) ?? 0) > performance.now()
  /** This process's queue per contended key (a semaphore of one, dropped when nobody waits). */
  const queues = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>()
  /**
   * `run` after every earlier run on `keys` in this process (so that one connection at most
   * waits for a key's advisory lock), then under the keys' advisory locks (`queueOn`), so that
   * it follows the other processes' too. Keys are taken in order: no two runs wait on each other.
   */
  const queued = <A, E, R>(keys: ReadonlyArray<string>, run: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    keys.reduceRight(
      (inner: Effect.Effect<A, E, R>, key) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            const queue = queues.get(key) ?? { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
            queue.users++
            queues.set(key, queue)
            return queue
          }),
          (queue) => queue.semaphore.withPermits(1)(inner),
          (queue) => Effect.sync(() => {
            if (--queue.users === 0) queues.delete(key)
          })
        ),
      Effect.locally(run, queueOn, keys)
    )
  /** A run past the deadline is interrupted, which rolls it back, and fails (not run again). */
  const inTime = <A, E, R>(run: Effect.Effect<A, E | StoreUnavailable, R>) =>
    deadlineMs <= 0 ? run : Effect.timeoutFail(run, {
      duration: deadlineMs,
      onTimeout: () => new StoreUnavailable({ cause: new Error(`a unit of work ran past its deadline of ${deadlineMs} ms: rolled back`) })
    })
  const once = <A, E, R>(effect: Effect.Effect<A, E, R>, keys: ReadonlyArray<string>) =>
    Effect.suspend(() => {
      const state = newUnitState()
      return queued(keys, inTime(serializable(effect))).pipe(
        Effect.locally(unit, state),
        Effect.exit,
        Effect.map((exit) => [exit, state] as const)
      )
    })

  const outermost = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreUnavailable, R> =>
    Effect.gen(function*() {
      const giveUpAt = (yield* Clock.currentTimeMillis) + retryForMs
      // The keys a lost run said it contends on: the next runs queue on them (no pause needed).
      let keys: ReadonlyArray<string> = []
      for (let attempt = 1;; attempt++) {
        const [exit, state] = yield* once(effect, keys)
        const stopped = Exit.isFailure(exit) && Cause.dieOption(exit.cause).pipe(Option.exists((defect) => defect instanceof StoppedAtBusyKey))
        if (Exit.isSuccess(exit) || !shouldRetry(exit.cause, state) || (yield* Clock.currentTimeMillis) >= giveUpAt) {
          return yield* (stopped ? Effect.fail(new StoreUnavailable({ cause: Cause.squash(exit.cause) })) : exit)
        }
        yield* Effect.annotateCurrentSpan("syllabus.transaction.retries", attempt)
        if (!stopped) noteBusy(state.contended)
        keys = [...new Set([...keys, ...state.contended])].sort()
        if (keys.length === 0) yield* Effect.sleep(yield* Random.nextIntBetween(0, Math.min(maxPauseMs, 2 ** attempt) + 1))
      }
    })

  return {
    transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.flatMap(
        Effect.serviceOption(SqlClient.TransactionConnection),
        (outer): Effect.Effect<A, E | StoreUnavailable, R> =>
          Option.isSome(outer) ? transaction(effect) : outermost(effect)
      ).pipe(Effect.withSpan("PgUnitOfWork.transaction")),
    /**
     * The effect in the running unit of work as it is, without a savepoint (one round trip
     * less; a failure of it is the unit's), or in a unit of work of its own outside one.
     */
    join: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.flatMap(
        Effect.serviceOption(SqlClient.TransactionConnection),
        (outer): Effect.Effect<A, E | StoreUnavailable, R> => Option.isSome(outer) ? effect : outermost(effect)
      ),
    contends: (key: string) =>
      Effect.flatMap(FiberRef.get(unit), (state) =>
        Effect.flatMap(FiberRef.get(queueOn), (queued) => {
          state?.contended.add(key)
          // A run not queued on a key others just lost on stops here: it would lose too.
          if (state === undefined || queued.includes(key) || !isBusyKey(key)) return Effect.void
          state.conflict = true
          return Effect.die(new StoppedAtBusyKey(key))
        }))
  }
}

/**
 * `Records`, `UnitOfWork`, `Idempotency` and `RateLimitStore` on the database of the given
 * client, whose schema `migrate` has brought up to date. Every `Records` and `Idempotency`
 * call made inside `UnitOfWork.transaction` runs on the transaction's connection;
 * `RateLimitStore.hit` never does (a hit is not undone with a failed write).
 *
 * Store calls made concurrently inside one unit of work share its connection and run one
 * after another; the writes that need a savepoint (those with unique keys) should not be
 * made concurrently there, as their savepoints would interleave.
 */
export const PgStore: Layer.Layer<Records | UnitOfWork | Idempotency | RateLimitStore, never, SqlClient.SqlClient> =
  Layer.scopedContext(
    Effect.map(Effect.zip(makePg, UnitOfWorkDeadline), ([pg, deadlineMs]) => {
      const unitOfWork = makeUnitOfWork(pg, deadlineMs)
      // Every write of a counted type keeps its figures (core's `keptFigures()`), in its unit of work.
      return Context.make(Records, keepingFigures(makeRecords(pg), unitOfWork.join, keptFigures())).pipe(
        Context.add(UnitOfWork, unitOfWork),
        Context.add(Idempotency, makeIdempotency(pg)),
        Context.add(RateLimitStore, makeRateLimitStore(pg))
      )
    })
  )
