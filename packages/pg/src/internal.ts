/** What the PostgreSQL stores share: the client, error mapping, transactions. */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { type Environment, StoreUnavailable, type StoredRecord, type Tenant } from "@syllabus/core"
import { Cause, Context, Effect, FiberRef, Option, Scope } from "effect"
import { ConnectionMode, hasOutstandingStatement, PgPool, PREPARED } from "./pool.js"
import { ReadReplicas } from "./replicas.js"

/** A record of an append-only stream written by a unit of work, not sent yet (`Pg.appendLater`). */
export interface PendingAppend {
  readonly tenant: Tenant
  readonly type: string
  readonly id: string
  /** The document, as JSON text. */
  readonly data: string
}

/** The mutable state of one running unit of work, seen by every statement made inside it. */
export interface UnitState {
  /** A statement failed because of a concurrent transaction: the unit is worth running again. */
  conflict: boolean
  /** Where the unit says concurrent ones meet (`UnitOfWork.contends`): a rerun queues on them. */
  readonly contended: Set<string>
  /** Its appends not sent yet, in the order they were made. */
  appends: Array<PendingAppend>
  /**
   * Records it read by key (`undefined`: none there), by `readKey`. Its snapshot does not move
   * (SERIALIZABLE): a record read once reads the same again until the unit writes it, which
   * forgets it here (`records.ts`), as does a savepoint rolled back.
   */
  readonly reads: Map<string, StoredRecord | undefined>
}

export const newUnitState = (): UnitState => ({ conflict: false, contended: new Set(), appends: [], reads: new Map() })

/** The key of a record in `UnitState.reads`. */
export const readKey = (tenant: Tenant, type: string, id: string): string => `${tenant.accountId}\u0000${tenant.environment}\u0000${type}\u0000${id}`

export interface Pg {
  /** The client, without the application's name transforms: columns and JSON as stored. */
  readonly sql: SqlClient.SqlClient
  /**
   * Map a statement's `SqlError` to `StoreUnavailable`, noting conflicts for the unit of work.
   * Outside one, the statement has a connection of its own, closed if left unanswered. Not
   * interruptible: an interrupted caller waits for the answer (within the deadlines).
   */
  readonly run: <A, R>(self: Effect.Effect<A, SqlError, R>) => Effect.Effect<A, StoreUnavailable, R>
  /**
   * `run` for a read that needs no unit of work (a page, a count, a report): outside one, on a
   * read replica that holds every commit answered before it, when the store has replicas
   * (`replicas.ts`); inside one, or without replicas, as `run`.
   */
  readonly read: <A>(self: Statement.Statement<A>) => Effect.Effect<ReadonlyArray<A>, StoreUnavailable>
  /** A transaction of a store operation: joins the caller's unit of work (as a savepoint), if any. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreUnavailable, R>
  /** An outermost SERIALIZABLE transaction (a savepoint inside one), begun in one statement. */
  readonly serializable: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreUnavailable, R>
  /** Run outside of the caller's unit of work, on a connection of its own. */
  readonly detached: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The state of the unit of work the fiber runs in, if any. */
  readonly unit: FiberRef.FiberRef<UnitState | undefined>
  /**
   * Keys an outermost transaction begun in this fiber holds, across processes, from before its
   * `BEGIN` to after its end (session advisory locks on its connection): the units of work that
   * contend on them run one after another, each seeing the one before committed.
   */
  readonly queueOn: FiberRef.FiberRef<ReadonlyArray<string>>
  /**
   * Inside a unit of work, keep `append` to be sent with the unit's other appends in one
   * statement (true), before the first statement that reads its type, or at the end of the unit
   * (`sendAppends`); outside one, false (the caller writes it itself).
   */
  readonly appendLater: (append: PendingAppend) => Effect.Effect<boolean>
  /** Send the unit's pending appends (of `type` only if given; all of them when there is one of it). */
  readonly sendAppends: (type?: string) => Effect.Effect<void, StoreUnavailable>
  /**
   * For a statement that sends the pending appends with its own work (`insertAppends` as a
   * CTE of it): their rows, no longer pending; none pending: `undefined`.
   */
  readonly takeAppends: Effect.Effect<string | undefined>
  readonly insertAppends: (rows: string) => Statement.Fragment
}

// serialization_failure, deadlock_detected: the transaction lost a race and may simply be retried.
const retryableCodes: ReadonlySet<string> = new Set(["40001", "40P01"])

/** The SQLSTATE of the PostgreSQL error behind `error` (a `SqlError`, or a `StoreUnavailable` of one), if any. */
export const sqlStateOf = (error: unknown): string | undefined => {
  const cause = error instanceof StoreUnavailable ? error.cause : error
  if (!(cause instanceof SqlError)) return undefined
  const code: unknown = typeof cause.cause === "object" && cause.cause !== null && "code" in cause.cause
    ? cause.cause.code
    : undefined
  return typeof code === "string" ? code : undefined
}

/** Whether `error` is a `SqlError` caused by a PostgreSQL error worth retrying the transaction for. */
export const isRetryable = (error: unknown): boolean => {
  const code = sqlStateOf(error)
  return code !== undefined && retryableCodes.has(code)
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

/**
 * The `pg` client under a reserved connection of `@effect/sql-pg` (its `pg` field), as far as
 * the transaction guard below needs it. `_activeQuery` and `_queryQueue` are private to `pg`
 * (8.x): where they are missing, a connection is taken to be busy only when its end of
 * transaction went unanswered.
 */
interface PgClientLike {
  end(): Promise<void>
}

const pgClientOf = (conn: Connection): PgClientLike | undefined => {
  const client: unknown = (conn as { readonly pg?: unknown }).pg
  return typeof client === "object" && client !== null && typeof (client as { end?: unknown }).end === "function"
    ? (client as PgClientLike)
    : undefined
}

/**
 * A statement is still outstanding on the connection: one whose answer was given up on (the
 * client-side `query_timeout`, an interrupted fiber). Whatever is sent next waits behind it.
 */
const isBusy = (conn: Connection): boolean => {
  const client = pgClientOf(conn)
  return client !== undefined && hasOutstandingStatement(client)
}

/**
 * `sql.reserve`, not interruptible while it waits for the pool. The driver's reservation has
 * no canceler: a fiber interrupted in the pool's queue (a client that closed its socket) is
 * gone when the pool hands it a connection, which then never goes back, and the pool shrinks
 * by one for each such wait. Uninterruptible, the reservation ends with its release in the
 * caller's scope, and the interruption takes effect then, within the pool's acquire deadline.
 */
const reserveWhole = (sql: SqlClient.SqlClient) => Effect.uninterruptible(sql.reserve)

/** Close the connection instead of returning it to the pool: the server rolls back what it has open. */
const discard = (conn: Connection): void => {
  pgClientOf(conn)?.end().catch(() => undefined)
}

/** The server answered the statement (with a result or an error of its own): it was not lost on the way. */
const answered = (error: SqlError): boolean =>
  typeof error.cause === "object" && error.cause !== null && typeof (error.cause as { code?: unknown }).code === "string"

const aborted = new SqlError({
  cause: new Error("COMMIT of a transaction a failed statement aborted: rolled back"),
  message: "COMMIT refused"
})

const abandoned = (what: string) =>
  new SqlError({ cause: new Error(`${what}: a statement of the transaction is still outstanding`), message: `${what} skipped` })

/**
 * `SqlClient.makeWithTransaction` with a guard against returning a connection to the pool
 * mid-transaction. A transaction whose statement timed out on the client side (the server
 * stalled) or whose fiber was interrupted may still have that statement outstanding: a
 * ROLLBACK sent behind it would wait as long, and a connection released then would hand the
 * open transaction to its next user. So the end of a transaction is sent only on an idle
 * connection, and unless the server answered it (COMMIT or ROLLBACK, success or SQL error) the
 * connection is closed, not released: PostgreSQL rolls back the transaction of a closed
 * session. A COMMIT that went unanswered is an uncertain outcome (503; the idempotency
 * receipt, committed with the write or not at all, tells a retry which).
 */
const guardedTransaction = (
  sql: SqlClient.SqlClient,
  begin: string,
  /** The keys to take advisory locks on before `BEGIN` (none: `undefined`, behind a pooler in transaction mode). */
  queueOn: FiberRef.FiberRef<ReadonlyArray<string>> | undefined
) => {
  /** Connections whose transaction ended with an answer from the server. */
  const ended = new WeakSet<Connection>()
  /** Connections holding the advisory locks of `queueOn` for their transaction. */
  const locked = new WeakSet<Connection>()
  /** The locks go with the transaction; a connection whose unlock was not answered is closed, never pooled with them. */
  const unlock = (conn: Connection) =>
    Effect.suspend(() => {
      if (!locked.has(conn)) return Effect.void
      locked.delete(conn)
      return isBusy(conn)
        ? Effect.sync(() => ended.delete(conn))
        : conn.executeUnprepared("SELECT pg_advisory_unlock_all()", [], undefined).pipe(
          Effect.catchAll(() => Effect.sync(() => ended.delete(conn))),
          Effect.asVoid
        )
    })
  const end = (conn: Connection, statement: "COMMIT" | "ROLLBACK"): Effect.Effect<void, SqlError> =>
    Effect.suspend(() =>
      isBusy(conn)
        ? statement === "ROLLBACK" ? Effect.void : Effect.fail(abandoned(statement))
        : conn.executeRaw(statement, []).pipe(
          Effect.tap(() => Effect.sync(() => ended.add(conn))),
          // A statement of it failed and the caller went on (a store call whose failure was
          // caught, with no savepoint to undo it): PostgreSQL answers such a COMMIT with
          // ROLLBACK, no error. The transaction is over, and the unit of work failed.
          Effect.flatMap((result) =>
            (result as { readonly command?: unknown }).command === "ROLLBACK" && statement === "COMMIT" ? Effect.fail(aborted) : Effect.void
          ),
          Effect.tapError((error) => Effect.sync(() => answered(error) && ended.add(conn))),
          Effect.ensuring(unlock(conn)),
          Effect.asVoid
        )
    )
  // The locks before `BEGIN`: taken inside the transaction, they would be waited for with a
  // snapshot already taken, and the unit would still not see the one before it committed.
  const lockThenBegin = (conn: Connection) =>
    Effect.flatMap(queueOn === undefined ? Effect.succeed([]) : FiberRef.get(queueOn), (keys) =>
      keys.length === 0
        ? conn.executeUnprepared(begin, [], undefined)
        : conn.executeUnprepared(
          `SELECT ${keys.map((_, i) => `pg_advisory_lock(hashtextextended($${i + 1}, 0))`).join(", ")}`,
          keys,
          undefined
        ).pipe(
          Effect.tap(() => Effect.sync(() => locked.add(conn))),
          Effect.zipRight(conn.executeUnprepared(begin, [], undefined)),
          Effect.tapError(() => unlock(conn))
        ))
  return SqlClient.makeWithTransaction({
    transactionTag: SqlClient.TransactionConnection,
    spanAttributes: [],
    acquireConnection: Effect.flatMap(Scope.make(), (scope) =>
      Effect.flatMap(Scope.extend(reserveWhole(sql), scope), (conn) =>
        // Added after the reservation's own finalizer, so it runs before the release.
        Effect.as(
          Scope.addFinalizer(scope, Effect.sync(() => {
            if (!ended.has(conn) || isBusy(conn)) discard(conn)
          })),
          [scope, conn] as const
        ))),
    begin: lockThenBegin,
    savepoint: (conn, id) => conn.executeUnprepared(`SAVEPOINT effect_sql_${id}`, [], undefined),
    commit: (conn) => end(conn, "COMMIT"),
    rollback: (conn) => end(conn, "ROLLBACK"),
    // Skipping it would let the outer transaction go on (and commit) past the inner one's
    // writes: fail instead, which fails the outer transaction too.
    rollbackSavepoint: (conn, id) =>
      Effect.suspend(() =>
        isBusy(conn)
          ? Effect.fail(abandoned("ROLLBACK TO SAVEPOINT"))
          : conn.executeUnprepared(`ROLLBACK TO SAVEPOINT effect_sql_${id}`, [], undefined)
      )
  })
}

export const makePg: Effect.Effect<Pg, never, SqlClient.SqlClient | Scope.Scope> = Effect.gen(function*() {
  // Whatever transforms the application configured on its client, our column names and JSON
  // documents must reach us as stored.
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  // One per store, so that two stores in one program never share a unit of work's state.
  const unit = yield* FiberRef.make<UnitState | undefined>(undefined)
  const queueOn = yield* FiberRef.make<ReadonlyArray<string>>([])

  const noteConflict = (error: unknown) =>
    Effect.flatMap(FiberRef.get(unit), (state) =>
      Effect.sync(() => {
        if (state !== undefined && isRetryable(error)) state.conflict = true
      }))

  const pool = Option.getOrUndefined(yield* Effect.serviceOption(PgPool))
  /**
   * A statement sent as the driver would send it, without the client's machinery around each
   * one (a span, the statement's own run through the client's acquirer), which cost about as
   * much CPU as the driver itself: on the unit of work's connection, or on a connection of the
   * pool for it. Anything else (a statement of a client we did not build, an effect made of
   * several) runs as it is.
   */
  const direct = <A, R>(self: Effect.Effect<A, SqlError, R>): Effect.Effect<A, SqlError, R> => {
    if (!Statement.isFragment(self)) return self
    const statement = self as unknown as Statement.Statement<A>
    return Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) => {
      if (Option.isNone(outer) && pool === undefined) return self
      const [text, params] = statement.compile()
      if (Option.isSome(outer)) return outer.value[0].execute(text, params, undefined) as unknown as Effect.Effect<A, SqlError>
      return Effect.async<A, SqlError>((resume) => {
        pool!.query(text, params as Array<unknown>, (error: Error | undefined, result: { readonly rows: unknown }) => {
          resume(error ? Effect.fail(new SqlError({ cause: error, message: "Failed to execute statement" })) : Effect.succeed(result.rows as A))
        })
      })
    })
  }

  // A statement is not interruptible: an interrupted caller waits for its answer (bounded by
  // the deadlines), then its connection goes back to the pool. The driver's own interruption
  // sends `pg_cancel_backend` through the pool: with every connection held by an interrupted
  // statement (clients gone under load), each waited for a free one to cancel itself, and the
  // pool stood still until its acquire deadline. Outside a unit of work, the client takes a
  // connection from the pool for the statement and gives it back after; one the server did
  // not answer is closed instead (`pool.ts`), or every later statement on it would wait
  // behind the first, until the server answers, or the kernel gives up on a host that is gone.
  const run = <A, R>(self: Effect.Effect<A, SqlError, R>): Effect.Effect<A, StoreUnavailable, R> =>
    Effect.uninterruptible(direct(self)).pipe(
      Effect.tapError(noteConflict),
      Effect.mapError((cause) => new StoreUnavailable({ cause }))
    )

  const replicas = yield* ReadReplicas
  const read = <A>(self: Statement.Statement<A>): Effect.Effect<ReadonlyArray<A>, StoreUnavailable> => {
    const onPrimary = run(self as unknown as Effect.Effect<ReadonlyArray<A>, SqlError>)
    if (replicas === undefined) return onPrimary
    return Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) => {
      if (Option.isSome(outer)) return onPrimary
      const [text, params] = self.compile()
      return replicas.read(text, params, onPrimary)
    })
  }

  // Both open in one statement (`BEGIN ISOLATION LEVEL SERIALIZABLE`: one round trip instead
  // of `BEGIN` then `SET TRANSACTION …`) and provide the client's `TransactionConnection`, so
  // every statement and nested transaction inside joins them exactly as with
  // `sql.withTransaction`; both guard the end of a transaction (`guardedTransaction`).
  // Behind a pooler in transaction mode, the server's deadlines go with each `BEGIN` (one
  // message, one round trip), and no advisory lock is taken outside the transaction: the next
  // statement could reach another server connection, and the lock would stay on this one.
  const pooler = yield* ConnectionMode
  const beginning = (statement: string) => pooler.mode === "transaction" && pooler.localDeadlines !== "" ? `${statement}; ${pooler.localDeadlines}` : statement
  const lockedOn = pooler.mode === "transaction" ? undefined : queueOn
  const withPlainTransaction = guardedTransaction(sql, beginning("BEGIN"), lockedOn)
  const withSerializableTransaction = guardedTransaction(sql, beginning("BEGIN ISOLATION LEVEL SERIALIZABLE"), lockedOn)

  const appendLater = (append: PendingAppend): Effect.Effect<boolean> =>
    Effect.flatMap(FiberRef.get(unit), (state) =>
      state === undefined
        ? Effect.succeed(false)
        : Effect.map(Effect.serviceOption(SqlClient.TransactionConnection), (outer) => {
          if (Option.isNone(outer)) return false
          state.appends.push(append)
          return true
        }))

  /** The unit's pending appends as the rows of `insertAppends` (none pending: `undefined`), no longer pending. */
  const takeAppends: Effect.Effect<string | undefined> = Effect.map(FiberRef.get(unit), (state) => {
    if (state === undefined || state.appends.length === 0) return undefined
    const appends = state.appends
    state.appends = []
    return `[${
      appends.map((a) =>
        `{"a":${JSON.stringify(a.tenant.accountId)},"e":${JSON.stringify(a.tenant.environment)},"t":${JSON.stringify(a.type)},"id":${
          JSON.stringify(a.id)
        },"data":${a.data}}`
      ).join(",")
    }]`
  })

  /**
   * Appends in one statement, whatever their tenants and types (each row goes to its type's
   * partition). A taken ID fails it (`unique_violation`), and with it the unit of work.
   */
  const insertAppends = (rows: string) =>
    sql`INSERT INTO records (account_id, environment, type, id, revision, data)
      SELECT row.a, row.e, row.t, row.id, 1, row.data
      FROM jsonb_to_recordset(${rows}::jsonb) AS row(a text, e text, t text, id text, data jsonb)`

  const sendAppends = (type?: string): Effect.Effect<void, StoreUnavailable> =>
    Effect.flatMap(FiberRef.get(unit), (state) => {
      if (state === undefined || state.appends.length === 0) return Effect.void
      if (type !== undefined && !state.appends.some((append) => append.type === type)) return Effect.void
      return Effect.flatMap(takeAppends, (rows) => rows === undefined ? Effect.void : Effect.asVoid(run(sql`${sql.literal(PREPARED)}${insertAppends(rows)}`)))
    })

  const inTransaction = (withTransaction: typeof sql.withTransaction, outermost: boolean) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreUnavailable, R> =>
    Effect.flatMap(FiberRef.get(unit), (state) => {
      // A savepoint rolled back takes back what was appended since it was taken, and what it
      // sent of the appends made before it: they are pending again, as they were.
      const pending = state?.appends.slice()
      const body = outermost ? Effect.zipLeft(effect, sendAppends()) : effect
      return withTransaction(body).pipe(
        Effect.onError(() =>
          Effect.sync(() => {
            if (state === undefined || pending === undefined) return
            state.appends = pending
            // What it read may have been written inside the savepoint.
            state.reads.clear()
          })
        ),
        Effect.tapError((error) => error instanceof SqlError ? noteConflict(error) : Effect.void),
        Effect.mapError((error): E | StoreUnavailable => error instanceof SqlError ? new StoreUnavailable({ cause: error }) : error),
        commitFailures
      )
    })
  const transaction = inTransaction(withPlainTransaction, false)
  const serializable = inTransaction(withSerializableTransaction, true)

  const detached = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    effect.pipe(
      Effect.locallyWith(FiberRef.currentContext, Context.omit(SqlClient.TransactionConnection)),
      Effect.locally(unit, undefined),
      // On a connection of its own, the caller's keys would be waited for behind the caller itself.
      Effect.locally(queueOn, [])
    )

  return { sql, run, read, transaction, serializable, detached, unit, queueOn, appendLater, sendAppends, takeAppends, insertAppends }
})

/** A bigint column read back: a string by default in `pg`, a number if the client parses it. */
export const toNumber = (value: unknown): number => typeof value === "number" ? value : Number(value)

export const toEnvironment = (value: string): Environment => value === "sandbox" ? "sandbox" : "production"

export const tenantOf = (row: { readonly account_id: string; readonly environment: string }): Tenant => ({
  accountId: row.account_id,
  environment: toEnvironment(row.environment)
})
