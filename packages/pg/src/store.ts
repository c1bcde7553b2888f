/** The store ports on one `SqlClient`: the PostgreSQL adapter of `@syllabus/core`. */
import * as SqlClient from "@effect/sql/SqlClient"
import { Idempotency, RateLimitStore, Records, StoreUnavailable, UnitOfWork } from "@syllabus/core"
import { Context, Effect, Exit, Layer, Option } from "effect"
import { makeIdempotency } from "./idempotency.js"
import { makePg, type Pg, shouldRetry, type UnitState } from "./internal.js"
import { makeRateLimitStore } from "./rateLimit.js"
import { makeRecords } from "./records.js"

/** Runs of one unit of work that lost races before giving up with `StoreUnavailable`. */
const maxAttempts = 30

/**
 * Units of work are SERIALIZABLE transactions, so that they behave as if run one at a time
 * (as the memory store runs them): a read-modify-write, or a count-then-insert, cannot lose
 * a concurrent update. The price of serializability in PostgreSQL is that a transaction may
 * lose a race (serialization failure, deadlock); it is then rolled back and run again, which
 * is safe because nothing of it was committed. Nested units join the outer one as savepoints.
 */
const makeUnitOfWork = ({ serializable, transaction, unit }: Pg): Context.Tag.Service<typeof UnitOfWork> => {
  const once = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      const state: UnitState = { conflict: false }
      return serializable(effect).pipe(
        Effect.locally(unit, state),
        Effect.exit,
        Effect.map((exit) => [exit, state] as const)
      )
    })

  const outermost = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreUnavailable, R> =>
    Effect.gen(function*() {
      for (let attempt = 1;; attempt++) {
        const [exit, state] = yield* once(effect)
        if (Exit.isSuccess(exit) || attempt >= maxAttempts || !shouldRetry(exit.cause, state)) return yield* exit
        yield* Effect.annotateCurrentSpan("syllabus.transaction.retries", attempt)
      }
    })

  return {
    transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.flatMap(
        Effect.serviceOption(SqlClient.TransactionConnection),
        (outer): Effect.Effect<A, E | StoreUnavailable, R> =>
          Option.isSome(outer) ? transaction(effect) : outermost(effect)
      ).pipe(Effect.withSpan("PgUnitOfWork.transaction"))
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
    Effect.map(makePg, (pg) =>
      Context.make(Records, makeRecords(pg)).pipe(
        Context.add(UnitOfWork, makeUnitOfWork(pg)),
        Context.add(Idempotency, makeIdempotency(pg)),
        Context.add(RateLimitStore, makeRateLimitStore(pg))
      ))
  )
