/** What the PostgreSQL stores share: the client, error mapping, transactions. */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { type Environment, StoreUnavailable, type Tenant } from "@syllabus/core"
import { Cause, Context, Effect, FiberRef, Option, Scope } from "effect"

/** The mutable state of one running unit of work, seen by every statement made inside it. */
export interface UnitState {
  /** A statement failed because of a concurrent transaction: the unit is worth running again. */
  conflict: boolean
}

export interface Pg {
  /** The client, without the application's name transforms: columns and JSON as stored. */
  readonly sql: SqlClient.SqlClient
  /** Map a statement's `SqlError` to `StoreUnavailable`, noting conflicts for the unit of work. */
  readonly run: <A, R>(self: Effect.Effect<A, SqlError, R>) => Effect.Effect<A, StoreUnavailable, R>
  /** A transaction of a store operation: joins the caller's unit of work (as a savepoint), if any. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreUnavailable, R>
  /** An outermost SERIALIZABLE transaction (a savepoint inside one), begun in one statement. */
  readonly serializable: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreUnavailable, R>
  /** Run outside of the caller's unit of work, on a connection of its own. */
  readonly detached: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The state of the unit of work the fiber runs in, if any. */
  readonly unit: FiberRef.FiberRef<UnitState | undefined>
}

// serialization_failure, deadlock_detected: the transaction lost a race and may simply be retried.
const retryableCodes: ReadonlySet<string> = new Set(["40001", "40P01"])

/** Whether `error` is a `SqlError` caused by a PostgreSQL error worth retrying the transaction for. */
export const isRetryable = (error: unknown): boolean => {
  const cause = error instanceof StoreUnavailable ? error.cause : error
  if (!(cause instanceof SqlError)) return false
  const code: unknown = typeof cause.cause === "object" && cause.cause !== null && "code" in cause.cause
    ? cause.cause.code
    : undefined
  return typeof code === "string" && retryableCodes.has(code)
}

/**
 * The client dies, rather than fails, when COMMIT or ROLLBACK fails: that is a store failure
 * too, and a failed COMMIT of a serializable transaction is the usual way to lose a race.
 */
export const commitFailures = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreUnavailable, R> =>
  Effect.catchSomeDefect(self, (defect) =>
    defect instanceof SqlError ? Option.some(Effect.fail(new StoreUnavailable({ cause: defect }))) : Option.none())

/** Whether a failed unit of work may be run again: it lost a race, and nothing of it was committed. */
export const shouldRetry = (cause: Cause.Cause<unknown>, state: UnitState): boolean =>
  !Cause.isInterrupted(cause) &&
  (state.conflict || Cause.failureOption(cause).pipe(Option.exists(isRetryable)) ||
    Cause.dieOption(cause).pipe(Option.exists(isRetryable)))

export const makePg: Effect.Effect<Pg, never, SqlClient.SqlClient | Scope.Scope> = Effect.gen(function*() {
  // Whatever transforms the application configured on its client, our column names and JSON
  // documents must reach us as stored.
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  // One per store, so that two stores in one program never share a unit of work's state.
  const unit = yield* FiberRef.make<UnitState | undefined>(undefined)

  const noteConflict = (error: unknown) =>
    Effect.flatMap(FiberRef.get(unit), (state) =>
      Effect.sync(() => {
        if (state !== undefined && isRetryable(error)) state.conflict = true
      }))

  const run = <A, R>(self: Effect.Effect<A, SqlError, R>): Effect.Effect<A, StoreUnavailable, R> =>
    self.pipe(
      Effect.tapError(noteConflict),
      Effect.mapError((cause) => new StoreUnavailable({ cause }))
    )

  // `sql.withTransaction` as the client builds it, but opening with
  // `BEGIN ISOLATION LEVEL SERIALIZABLE`: one round trip instead of `BEGIN` then
  // `SET TRANSACTION …`. It provides the client's `TransactionConnection`, so every statement
  // and nested transaction inside joins it exactly as with `sql.withTransaction`.
  const withSerializableTransaction = SqlClient.makeWithTransaction({
    transactionTag: SqlClient.TransactionConnection,
    spanAttributes: [],
    acquireConnection: Effect.flatMap(Scope.make(), (scope) =>
      Effect.map(Scope.extend(sql.reserve, scope), (conn) => [scope, conn] as const)),
    begin: (conn) => conn.executeUnprepared("BEGIN ISOLATION LEVEL SERIALIZABLE", [], undefined),
    savepoint: (conn, id) => conn.executeUnprepared(`SAVEPOINT effect_sql_${id}`, [], undefined),
    commit: (conn) => conn.executeUnprepared("COMMIT", [], undefined),
    rollback: (conn) => conn.executeUnprepared("ROLLBACK", [], undefined),
    rollbackSavepoint: (conn, id) => conn.executeUnprepared(`ROLLBACK TO SAVEPOINT effect_sql_${id}`, [], undefined)
  })

  const inTransaction = (withTransaction: typeof sql.withTransaction) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreUnavailable, R> =>
    withTransaction(effect).pipe(
      Effect.tapError((error) => error instanceof SqlError ? noteConflict(error) : Effect.void),
      Effect.mapError((error): E | StoreUnavailable =>
        error instanceof SqlError ? new StoreUnavailable({ cause: error }) : error
      ),
      commitFailures
    )
  const transaction = inTransaction(sql.withTransaction)
  const serializable = inTransaction(withSerializableTransaction)

  const detached = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    effect.pipe(
      Effect.locallyWith(FiberRef.currentContext, Context.omit(SqlClient.TransactionConnection)),
      Effect.locally(unit, undefined)
    )

  return { sql, run, transaction, serializable, detached, unit }
})

/** A bigint column read back: a string by default in `pg`, a number if the client parses it. */
export const toNumber = (value: unknown): number => typeof value === "number" ? value : Number(value)

export const toEnvironment = (value: string): Environment => value === "sandbox" ? "sandbox" : "production"

export const tenantOf = (row: { readonly account_id: string; readonly environment: string }): Tenant => ({
  accountId: row.account_id,
  environment: toEnvironment(row.environment)
})
