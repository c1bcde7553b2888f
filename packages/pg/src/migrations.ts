/**
 * The schema of the PostgreSQL stores, applied with the `@effect/sql` Migrator.
 *
 * Migrations are keyed `<id>_<name>`; add new ones with a higher id, never edit a shipped one.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { defaultRecordPartition, syncAccessPathIndexes, syncRecordPartitions } from "./access-paths.js"
import { syncStreamPartitions } from "./streams.js"

const initial = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Records: one JSON document per (tenant, type, id). Ids compare bytewise (COLLATE "C")
  // so that keyset pagination agrees with the in-memory store.
  yield* sql`
    CREATE TABLE records (
      account_id  text NOT NULL,
      environment text NOT NULL,
      type        text NOT NULL,
      id          text COLLATE "C" NOT NULL,
      revision    integer NOT NULL,
      data        jsonb NOT NULL,
      PRIMARY KEY (account_id, environment, type, id)
    )`
  // Retention (`prune`) works on one type across all tenants.
  yield* sql`CREATE INDEX records_type ON records (type)`
  // Named unique keys of records. A key is unique within (tenant, type, name) unless it is
  // global, then within (type, name) across all tenants: two partial unique indexes, so a
  // plain `ON CONFLICT DO NOTHING` detects either kind of conflict.
  yield* sql`
    CREATE TABLE record_keys (
      account_id  text NOT NULL,
      environment text NOT NULL,
      type        text NOT NULL,
      id          text COLLATE "C" NOT NULL,
      name        text NOT NULL,
      value       text NOT NULL,
      global      boolean NOT NULL,
      FOREIGN KEY (account_id, environment, type, id) REFERENCES records ON DELETE CASCADE
    )`
  yield* sql`CREATE UNIQUE INDEX record_keys_tenant ON record_keys (account_id, environment, type, name, value) WHERE NOT global`
  yield* sql`CREATE UNIQUE INDEX record_keys_global ON record_keys (type, name, value) WHERE global`
  yield* sql`CREATE INDEX record_keys_record ON record_keys (account_id, environment, type, id)`

  // Idempotency receipts. Times are epoch milliseconds, as the port speaks them.
  yield* sql`
    CREATE TABLE idempotency_receipts (
      account_id   text NOT NULL,
      environment  text NOT NULL,
      key          text NOT NULL,
      operation_id text NOT NULL,
      fingerprint  text NOT NULL,
      state        text NOT NULL CHECK (state IN ('in_progress', 'completed')),
      response     jsonb,
      token        text NOT NULL,
      claimed_at   bigint NOT NULL,
      expires_at   bigint NOT NULL,
      PRIMARY KEY (account_id, environment, key)
    )`
  yield* sql`CREATE INDEX idempotency_receipts_expires_at ON idempotency_receipts (expires_at)`

  // Fixed-window rate-limit counters; `window_ms` lets the sweep tell when a row is useless.
  yield* sql`
    CREATE TABLE rate_limit_windows (
      key          text NOT NULL,
      window_start bigint NOT NULL,
      window_ms    bigint NOT NULL,
      count        integer NOT NULL,
      PRIMARY KEY (key, window_start)
    )`
  yield* sql`CREATE INDEX rate_limit_windows_end ON rate_limit_windows ((window_start + 2 * window_ms))`
})

/**
 * What the access-path indexes need (`access-paths.ts`): trigram indexes for `contains`, and
 * the btree operator classes of GIN for the tenant columns beside them. Both are trusted
 * extensions: the database's owner may create them. The indexes themselves are not
 * migrations: they follow the resource descriptions, at every start.
 */
const accessPathExtensions = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`
  yield* sql`CREATE EXTENSION IF NOT EXISTS btree_gin`
})

/**
 * `records` partitioned by type (`access-paths.ts` says why): the table of `1_initial` is
 * replaced by a partitioned one with the same columns and key, with a partition for each type
 * of the release's access paths and a default one for the others, and its rows are copied in.
 * The unique keys' foreign key follows the new table.
 */
const recordsByType = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const foreignKeys = yield* sql<{ readonly name: string }>`
    SELECT conname AS name FROM pg_constraint WHERE conrelid = 'record_keys'::regclass AND contype = 'f'`
  for (const { name } of foreignKeys) yield* sql`ALTER TABLE record_keys DROP CONSTRAINT ${sql(name)}`
  yield* sql`ALTER TABLE records RENAME TO records_unpartitioned`
  yield* sql`ALTER INDEX records_pkey RENAME TO records_unpartitioned_pkey`
  yield* sql`
    CREATE TABLE records (
      account_id  text NOT NULL,
      environment text NOT NULL,
      type        text NOT NULL,
      id          text COLLATE "C" NOT NULL,
      revision    integer NOT NULL,
      data        jsonb NOT NULL,
      PRIMARY KEY (account_id, environment, type, id)
    ) PARTITION BY LIST (type)`
  yield* sql`CREATE TABLE ${sql(defaultRecordPartition)} PARTITION OF records DEFAULT`
  // Retention (`prune`) of a type without a partition reads its rows across tenants.
  yield* sql`CREATE INDEX records_default_type ON ${sql(defaultRecordPartition)} (type)`
  yield* syncRecordPartitions()
  yield* sql`
    INSERT INTO records (account_id, environment, type, id, revision, data)
    SELECT account_id, environment, type, id, revision, data FROM records_unpartitioned`
  yield* sql`DROP TABLE records_unpartitioned`
  yield* sql`
    ALTER TABLE record_keys ADD FOREIGN KEY (account_id, environment, type, id) REFERENCES records ON DELETE CASCADE`
})

/** The lanes of the processes' IDs (`IdLane` of `@syllabus/core`): one value per process started. */
const idLanes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE SEQUENCE syllabus_id_lanes`
})

/**
 * Room on each page of the idempotency receipts for the receipt's completion (state and
 * response): an update that fits beside its row adds no index entry (a HOT update), so it does
 * not write into the index pages that concurrent units of work read (SERIALIZABLE: a write
 * into a page another unit read fails one of them). Applies to the pages written from now on.
 */
const roomToUpdate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE idempotency_receipts SET (fillfactor = 50)`
})

/**
 * The unique keys without a foreign key to their record. Its check read the record's primary
 * key page in every unit of work that inserts a record with keys: under SERIALIZABLE, a read of
 * the page the concurrent inserts of the same type write into (IDs grow with time, so they all
 * write the last page), and most of 50 concurrent creates of credentials failed and ran again.
 * Every delete of records deletes their keys itself (`records.ts`), as the cascade did.
 */
const keysWithoutForeignKey = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const foreignKeys = yield* sql<{ readonly name: string }>`
    SELECT conname AS name FROM pg_constraint
    WHERE conrelid = 'record_keys'::regclass AND contype = 'f' AND conparentid = 0`
  // The constraints PostgreSQL made for each partition of \`records\` go with the one they derive from.
  for (const { name } of foreignKeys) yield* sql`ALTER TABLE record_keys DROP CONSTRAINT ${sql(name)}`
})

/** The migrations of `@syllabus/pg`, for `Migrator.fromRecord`. */
export const PgMigrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "1_initial": initial,
  "2_access_path_extensions": accessPathExtensions,
  "3_records_by_type": recordsByType,
  "4_id_lanes": idLanes,
  "5_room_to_update": roomToUpdate,
  "6_keys_without_foreign_key": keysWithoutForeignKey
}

/** The table the Migrator records applied migrations in. */
export const migrationsTable = "syllabus_migrations"

// Any fixed bigint; it only has to be the same in every process.
const migrationLockKey = 7_305_512_001

const runMigrator = Migrator.make({})

/**
 * Apply the pending migrations, then bring the partitions of `records` and the access-path
 * indexes in step with the resource descriptions (`syncRecordPartitions`, `syncAccessPathIndexes`),
 * and the streams' weeks with the clock (`syncStreamPartitions`).
 * Several processes may start at once on one database: the Migrator's own bootstrap (create its table if missing) is not safe against
 * that, so the whole run holds a session-level advisory lock on a reserved connection. The
 * Migrator runs on other connections of the pool, which therefore needs at least two.
 */
export const migrate: Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  Migrator.MigrationError | SqlError,
  SqlClient.SqlClient
> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const lockConnection = yield* sql.reserve
  yield* Effect.acquireRelease(
    lockConnection.executeUnprepared("SELECT pg_advisory_lock($1)", [migrationLockKey], undefined),
    () => Effect.ignore(lockConnection.executeUnprepared("SELECT pg_advisory_unlock($1)", [migrationLockKey], undefined))
  )
  const applied = yield* runMigrator({ loader: Migrator.fromRecord(PgMigrations), table: migrationsTable })
  yield* syncRecordPartitions()
  yield* syncStreamPartitions()
  yield* syncAccessPathIndexes()
  return applied
}).pipe(Effect.scoped, Effect.withSpan("PgMigrations.migrate"))
