/**
 * `@syllabus/pg`: the store ports of `@syllabus/core` on PostgreSQL via `@effect/sql-pg`.
 *
 * - `PgStore`: the ports on a `SqlClient` whose schema is migrated
 * - `migrate` / `PgMigrations`: the schema, safe to apply from several processes at once
 * - `pgLayer(url)`: client, migrations, stores and change relay, ready to use
 * - `PgChangeRelay`: `ChangeRelay` with `LISTEN/NOTIFY`, so processes on one database wake each other's event streams
 * - `accessPathIndexes` / `syncAccessPathIndexes`: the indexes of the access paths (run by `migrate`)
 * - `listStatement`, `scanStatement`, `pruneStatement`, `aggregateStatement`: the SQL `Records` runs, for `EXPLAIN`
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Duration, Effect, Layer, Redacted } from "effect"
import {
  BackgroundStore,
  type ChangeRelay,
  type Idempotency,
  IdLane,
  idLaneOf,
  type RateLimitStore,
  type Records,
  type UnitOfWork
} from "@syllabus/core"
import { BACKGROUND_APPLICATION_NAME, DEFAULT_BACKGROUND_CONNECTIONS, pgBackgroundStore } from "./background.js"
import { ListenClient, PgChangeRelay, type PgChangeRelayOptions } from "./change-relay.js"
import { defaultPgTimeouts, localDeadlines, type PgTimeouts, withDeadlines } from "./deadlines.js"
import { migrate } from "./migrations.js"
import { ConnectionMode, pgClientLayer, type PgPool } from "./pool.js"
import { ReadReplicas, readReplicasLayer, type ReplicaOptions } from "./replicas.js"
import { PgStore, UnitOfWorkDeadline } from "./store.js"

export {
  accessPathIndexes,
  type AccessPathIndex,
  accessPathStatistics,
  accessPathIndexPrefix,
  defaultRecordPartition,
  partitionOf,
  syncAccessPathIndexes,
  syncRecordPartitions
} from "./access-paths.js"
export { CHANGE_CHANNEL, ListenClient, makePgChangeRelay, PgChangeRelay, type PgChangeRelayOptions } from "./change-relay.js"
export { defaultPgTimeouts, localDeadlines, type PgTimeouts, withDeadlines } from "./deadlines.js"
export { migrate, migrationsTable, PgMigrations } from "./migrations.js"
export { aggregateStatement, listStatement, pruneStatement, scanStatement } from "./records.js"
export { lsnValue, ReadReplicas, readReplicasLayer, type ReplicaOptions, type ReplicaRouter } from "./replicas.js"
export { PgStore, UnitOfWorkDeadline } from "./store.js"
export { maintainStream, syncStreamPartitions } from "./streams.js"
export { ConnectionMode, PREPARED, pgClientLayer, type PoolerMode, type PoolOptions } from "./pool.js"
export { BACKGROUND_APPLICATION_NAME, DEFAULT_BACKGROUND_CONNECTIONS, pgBackgroundStore } from "./background.js"

/**
 * Options of the connection pool (see `PgClientConfig`); the URL is given separately. The
 * pool needs at least two connections: migrations hold one for their lock and run on another.
 * `changeRelay`: options of the `LISTEN/NOTIFY` relay. `timeouts`: the deadlines of the
 * pool's connections (`defaultPgTimeouts` for what is not given; `connectTimeout`, when given,
 * wins over `timeouts.connectMs`).
 */
export type PgLayerOptions = Omit<PgClient.PgClientConfig, "url"> & {
  readonly changeRelay?: PgChangeRelayOptions
  readonly timeouts?: Partial<PgTimeouts>
  /** The background workers' own pool (`BackgroundStore`): its size (default 3), or `false` for none (workers use this pool). */
  readonly background?: false | { readonly maxConnections?: number }
  /**
   * Statements by key prepared once per connection (`pool.ts`; default: true, unless `pooler`
   * is `"transaction"`, which does not keep a session's prepared statements).
   */
  readonly preparedStatements?: boolean
  /**
   * `"transaction"`: `url` is a pooler in transaction mode (PgBouncer's `pool_mode =
   * transaction`), which gives each transaction whichever server connection is free; nothing
   * of a session is relied on (`ConnectionMode`). It needs `listenUrl`. Default `"session"`.
   */
  readonly pooler?: "session" | "transaction"
  /**
   * A direct connection to the same database, not through the pooler, for what needs a
   * session: the change relay's `LISTEN` and the migrations (their advisory lock is held across
   * transactions). Default: `url`.
   */
  readonly listenUrl?: Redacted.Redacted<string> | string
  /**
   * Read replicas of the database (streaming standbys): lists, counts and reports outside a
   * unit of work are read there when a replica holds every commit answered before the read,
   * else on the primary (`replicas.ts`). Their pools have `maxConnections` each.
   */
  readonly replicaUrls?: ReadonlyArray<Redacted.Redacted<string> | string>
  /** How reads wait for a replica and leave a failing one alone (`ReplicaOptions`). */
  readonly replicas?: ReplicaOptions
}

/** The stores' schema, applied when the layer is built. */
export const PgMigrationsLayer: Layer.Layer<never, Migrator.MigrationError | SqlError, SqlClient.SqlClient> = Layer
  .effectDiscard(migrate)

/**
 * A pool on `url`, the schema migrated, the stores on it, and the `ChangeRelay` that carries
 * commits between the processes of the database (`LISTEN` holds one connection besides the
 * pool, opened when a `ChangeSignals` first listens). The client is part of the output for the
 * other PostgreSQL-backed parts of the service (queues, event streams).
 *
 * The pool's connections have deadlines (`PgTimeouts`), so that a stalled database fails
 * store calls (503) rather than holding them. Migrations run before, on a pool of their own
 * without the statement and lock deadlines: building an index on a large table, or waiting
 * for another process's migration, takes the time it takes.
 *
 * Counts and epoch-millisecond columns are bigints, which `pg` returns as strings: the
 * stores convert them, so no type-parser configuration is needed.
 */
export const pgLayer = (
  url: Redacted.Redacted<string> | string,
  options: PgLayerOptions = {}
): Layer.Layer<
  Records | UnitOfWork | Idempotency | RateLimitStore | ChangeRelay | BackgroundStore | IdLane | ReadReplicas | PgClient.PgClient | SqlClient.SqlClient,
  Migrator.MigrationError | SqlError
> => {
  const { changeRelay, timeouts = {}, background = {}, pooler = "session", listenUrl, replicaUrls = [], replicas, ...pool } = options
  const pooled = pooler === "transaction"
  const preparedStatements = options.preparedStatements ?? !pooled
  const plain = typeof url === "string" ? url : Redacted.value(url)
  const direct = listenUrl === undefined ? undefined : typeof listenUrl === "string" ? listenUrl : Redacted.value(listenUrl)
  if (pooled && direct === undefined) {
    return Layer.fail(new SqlError({
      cause: new Error("pooler: \"transaction\" needs listenUrl"),
      message: "A pooler in transaction mode needs a direct connection to PostgreSQL (listenUrl, DATABASE_LISTEN_URL) for LISTEN and migrations"
    }))
  }
  const connectTimeout = pool.connectTimeout ?? ((timeouts.connectMs ?? defaultPgTimeouts.connectMs) || undefined)
  const client = (target: string) => pgClientLayer({ applicationName: "syllabus", ...pool, preparedStatements, connectTimeout, url: target })
  // Migrations and LISTEN hold a session: on the direct connection when there is one.
  const session = (target: string, size: number) =>
    pgClientLayer({ applicationName: "syllabus", ...pool, maxConnections: size, preparedStatements: false, connectTimeout, url: target })
  const noDeadlines = { statementMs: 0, lockMs: 0, idleInTransactionMs: 0, queryMs: 0 }
  const migrations = Layer.effectDiscard(
    Effect.provide(migrate, direct === undefined ? client(withDeadlines(plain, noDeadlines)) : session(withDeadlines(direct, noDeadlines), 2))
  )
  const relay = direct === undefined
    ? PgChangeRelay(changeRelay)
    : PgChangeRelay(changeRelay).pipe(
      Layer.provide(Layer.effect(ListenClient, PgClient.PgClient).pipe(Layer.provide(session(withDeadlines(direct, timeouts), 1))))
    )
  // `BackgroundStore`: the workers' pool, with the same deadlines, so that background work
  // never takes the requests' connections (issue 11); with `background: false`, this pool.
  const workers: Layer.Layer<BackgroundStore, SqlError, SqlClient.SqlClient> = background === false
    ? Layer.effect(BackgroundStore, Effect.context<Records | UnitOfWork | Idempotency>()).pipe(Layer.provide(PgStore))
    : pgBackgroundStore(withDeadlines(plain, timeouts, pooled), {
    ...pool,
    preparedStatements,
    connectTimeout,
    maxConnections: background.maxConnections ?? DEFAULT_BACKGROUND_CONNECTIONS,
    applicationName: pool.applicationName === undefined ? BACKGROUND_APPLICATION_NAME : `${pool.applicationName}-workers`
  })
  // This process's lane of IDs, apart from the other processes' on the database (`IdLane`).
  const idLane = Layer.effect(
    IdLane,
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ readonly n: string }>`SELECT nextval('syllabus_id_lanes')::text AS n`).pipe(
      Effect.map((rows) => idLaneOf(Number(rows[0]!.n)))
    )
  )
  // Every pool's units of work, the workers' included, end by their deadline.
  const unitOfWorkDeadline = Layer.succeed(UnitOfWorkDeadline, timeouts.transactionMs ?? defaultPgTimeouts.transactionMs)
  const connectionMode = Layer.succeed(
    ConnectionMode,
    pooled ? { mode: "transaction", localDeadlines: localDeadlines(plain, timeouts) } : { mode: "session" }
  )
  // With replicas, `StoreReplicas` too (core's optional port: `GET /readyz` reports them).
  const readReplicas: Layer.Layer<ReadReplicas, never, PgPool> = replicaUrls.length === 0
    ? Layer.succeed(ReadReplicas, undefined)
    : readReplicasLayer(
    replicaUrls.map((replica) => withDeadlines(typeof replica === "string" ? replica : Redacted.value(replica), timeouts, pooled)),
    { maxConnections: pool.maxConnections, connectTimeoutMs: connectTimeout === undefined ? undefined : Duration.toMillis(connectTimeout), applicationName: pool.applicationName },
    replicas
  )
  return Layer.mergeAll(PgStore, migrations, relay, workers, Layer.provide(idLane, migrations)).pipe(
    Layer.provide(Layer.merge(unitOfWorkDeadline, connectionMode)),
    // Their states stay in the output: what the operator and `GET /readyz` see of the replicas.
    Layer.provideMerge(readReplicas),
    Layer.provideMerge(client(withDeadlines(plain, timeouts, pooled)))
  )
}
