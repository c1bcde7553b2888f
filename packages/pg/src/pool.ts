/**
 * The connection pool under the stores: `pg`'s `Pool`, built here rather than by
 * `@effect/sql-pg`, so that its connections prepare the statements whose plan does not
 * depend on their parameters once each, instead of having PostgreSQL parse and plan them
 * on every call.
 *
 * A statement asks for it by starting with `PREPARED` (`records.ts`, `idempotency.ts`,
 * `rateLimit.ts`: reads and writes by key, inserts). Its text gets a name, the same in every
 * connection of the process; each connection sends its `Parse` once, then only `Bind` and
 * `Execute`, and PostgreSQL keeps the plan with the session (a generic plan once it is no
 * worse than the custom ones: for a read by key, from the sixth call). Lists and reports, whose
 * best plan depends on the values (a tenant's size, a filter's selectivity), are left
 * unnamed and planned per call. A pooler in transaction mode cannot keep a session's
 * statements: `preparedStatements: false` turns this off.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import pg from "pg"

/**
 * How the pool's connections reach PostgreSQL. `session`: each connection is a session of its
 * own, directly or through a pooler in session mode. `transaction`: through a pooler in
 * transaction mode (PgBouncer's `pool_mode = transaction`), which may give each transaction
 * another server connection, so nothing of a session outlives a transaction: no prepared
 * statements, no session parameters (`localDeadlines`: the server's deadlines are sent with
 * each unit of work's `BEGIN`), no session-level advisory locks (units of work queue on a
 * contended key within their process only), and `LISTEN` and the migrations' lock on a direct
 * connection of their own (`pgLayer`'s `listenUrl`). Read when `PgStore` is built.
 */
export type PoolerMode =
  | { readonly mode: "session" }
  | { readonly mode: "transaction"; readonly localDeadlines: string }

export class ConnectionMode extends Context.Reference<ConnectionMode>()("@syllabus/pg/ConnectionMode", {
  defaultValue: (): PoolerMode => ({ mode: "session" })
}) {}

/** The mark of a statement to prepare: a comment, so the text stays valid SQL. */
export const PREPARED = "/* prepared */ "

/**
 * Names given so far, by statement text. Texts come from the stores' code (a literal record
 * type at most), so they are few; past this many, a new text runs unnamed.
 */
const MAX_NAMES = 5_000
const names = new Map<string, string>()

const nameOf = (text: string): string | undefined => {
  const known = names.get(text)
  if (known !== undefined || names.size >= MAX_NAMES) return known
  const name = `syllabus_${names.size + 1}`
  names.set(text, name)
  return name
}

/**
 * `pg`'s client, which names the marked statements (the form `@effect/sql-pg` sends: text,
 * values, callback). Typed `never`: one signature that stands for every overload of `query`.
 */
class PreparingClient extends pg.Client {
  override query(config: unknown, values?: unknown, callback?: unknown): never {
    const name = typeof config === "string" && config.startsWith(PREPARED) ? nameOf(config) : undefined
    const query = super.query as (config: unknown, values?: unknown, callback?: unknown) => never
    return name === undefined
      ? query.call(this, config, values, callback)
      : query.call(this, { name, text: config, values }, callback)
  }
}

/**
 * Whether a statement is still outstanding on the client. `_activeQuery` and `_queryQueue` are
 * private to `pg` (8.x): where they are missing, no client is taken to be busy.
 */
export const hasOutstandingStatement = (client: unknown): boolean => {
  const state = client as { readonly _activeQuery?: unknown; readonly _queryQueue?: ReadonlyArray<unknown> }
  return state._activeQuery != null || (state._queryQueue?.length ?? 0) > 0
}

export interface PoolOptions extends Omit<PgClient.PgClientConfig, "url"> {
  readonly url: string
  /** Prepare the marked statements once per connection (default: true). */
  readonly preparedStatements?: boolean
}

/**
 * The pool under a client of `pgClientLayer`. The stores send their statements on it (outside a
 * unit of work) without the client's per-statement machinery (`internal.ts`); with a client
 * built elsewhere there is none, and they go through the client.
 */
export class PgPool extends Context.Tag("@syllabus/pg/PgPool")<PgPool, pg.Pool>() {}

/**
 * A `PgClient` on a pool of ours, configured as `PgClient.layer` configures its own (the same
 * options), with the first connection opened and checked within `connectTimeout`; the pool
 * itself as `PgPool`.
 */
export const pgClientLayer = (
  options: PoolOptions
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | PgPool, SqlError> => {
  const millis = (duration: Duration.DurationInput | undefined) => duration === undefined ? undefined : Duration.toMillis(duration)
  const acquire = Effect.acquireRelease(
    Effect.suspend(() => {
      const pool = new pg.Pool({
        connectionString: options.url,
        user: options.username,
        host: options.host,
        database: options.database,
        password: options.password === undefined ? undefined : Redacted.value(options.password),
        ssl: options.ssl,
        port: options.port,
        ...(options.stream ? { stream: options.stream } : {}),
        connectionTimeoutMillis: millis(options.connectTimeout),
        idleTimeoutMillis: millis(options.idleTimeout),
        max: options.maxConnections,
        min: options.minConnections,
        maxLifetimeSeconds: options.connectionTTL === undefined ? undefined : Duration.toSeconds(options.connectionTTL),
        application_name: options.applicationName ?? "syllabus",
        types: options.types,
        ...(options.preparedStatements === false ? {} : { Client: PreparingClient })
      } as pg.PoolConfig)
      // A connection lost while idle: the pool drops it and opens another when asked.
      pool.on("error", () => undefined)
      // A connection handed back with a statement still outstanding (one `query_timeout` gave
      // up on: the server has not answered it) is closed, not pooled: whatever is sent next on
      // it would wait behind that statement. An ending client is what the pool then removes.
      pool.on("release", (_error: Error | undefined, client: pg.PoolClient) => {
        if (hasOutstandingStatement(client)) client.end().catch(() => undefined)
      })
      return Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: options.connectTimeout ?? Duration.seconds(5),
          onTimeout: () => new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        }),
        Effect.tapError(() => Effect.promise(() => pool.end().catch(() => undefined))),
        Effect.as(pool)
      )
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )
  // The pool is the layer's (ended with it); the client is made on it.
  const client = Layer.unwrapEffect(Effect.map(PgPool, (pool) =>
    PgClient.layerFromPool({
      acquire: Effect.succeed(pool),
      applicationName: options.applicationName,
      spanAttributes: options.spanAttributes,
      transformResultNames: options.transformResultNames,
      transformQueryNames: options.transformQueryNames,
      transformJson: options.transformJson,
      types: options.types
    })))
  return Layer.provideMerge(client, Layer.scoped(PgPool, acquire))
}
