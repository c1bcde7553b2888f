/**
 * `@syllabus/pg`: the store ports of `@syllabus/core` on PostgreSQL via `@effect/sql-pg`.
 *
 * - `PgStore`: the ports on a `SqlClient` whose schema is migrated
 * - `migrate` / `PgMigrations`: the schema, safe to apply from several processes at once
 * - `pgLayer(url)`: client, migrations and stores, ready to use
 * - `accessPathIndexes` / `syncAccessPathIndexes`: the indexes of the access paths (run by `migrate`)
 * - `listStatement`, `scanStatement`, `pruneStatement`: the SQL `Records` runs, for `EXPLAIN`
 */
import type * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Layer, Redacted } from "effect"
import type { Idempotency, RateLimitStore, Records, UnitOfWork } from "@syllabus/core"
import { migrate } from "./migrations.js"
import { PgStore } from "./store.js"

export {
  accessPathIndexes,
  type AccessPathIndex,
  accessPathStatistics,
  accessPathIndexPrefix,
  syncAccessPathIndexes
} from "./access-paths.js"
export { migrate, migrationsTable, PgMigrations } from "./migrations.js"
export { listStatement, pruneStatement, scanStatement } from "./records.js"
export { PgStore } from "./store.js"

/**
 * Options of the connection pool (see `PgClientConfig`); the URL is given separately. The
 * pool needs at least two connections: migrations hold one for their lock and run on another.
 */
export type PgLayerOptions = Omit<PgClient.PgClientConfig, "url">

/** The stores' schema, applied when the layer is built. */
export const PgMigrationsLayer: Layer.Layer<never, Migrator.MigrationError | SqlError, SqlClient.SqlClient> = Layer
  .effectDiscard(migrate)

/**
 * A pool on `url`, the schema migrated, and the stores on it. The client is part of the
 * output for the other PostgreSQL-backed parts of the service (queues, event streams).
 *
 * Counts and epoch-millisecond columns are bigints, which `pg` returns as strings: the
 * stores convert them, so no type-parser configuration is needed.
 */
export const pgLayer = (
  url: Redacted.Redacted<string> | string,
  options: PgLayerOptions = {}
): Layer.Layer<
  Records | UnitOfWork | Idempotency | RateLimitStore | PgClient.PgClient | SqlClient.SqlClient,
  Migrator.MigrationError | SqlError
> =>
  Layer.merge(PgStore, PgMigrationsLayer).pipe(
    Layer.provideMerge(
      PgClient.layer({
        applicationName: "syllabus",
        ...options,
        url: typeof url === "string" ? Redacted.make(url) : url
      })
    )
  )
