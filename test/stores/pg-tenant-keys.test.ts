/**
 * Every key leads with the tenant (DESIGN.md, "Postgres"; docs/scaling.md), so that sharding by
 * tenant stays a deployment choice. Citus's rule for a distributed table: each of its unique
 * keys (primary keys, unique constraints and indexes, partial ones too; exclusion constraints)
 * includes the distribution column, since a shard can only check what it holds. We would
 * distribute by the tenant; the house rule is stricter than Citus's and asks that the key
 * *lead* with the tenant columns: `(account_id, environment)`, or `account_id` alone for a table
 * without `environment`.
 *
 * On a database migrated with the whole release, the catalog is read for every table of the
 * schema (ordinary tables, partitioned parents, and each partition at every level, whose keys
 * are the parent's keys attached, or a unique index of the partition's own) and each key is
 * checked. What does not lead with the tenant must be in `exceptions` below, each with why;
 * the set of non-conforming keys must equal the exceptions' set, so that a new table or key
 * that neither leads with the tenant nor is listed fails, and so does an exception no longer
 * needed. A table without the tenant columns must have its keys listed (a new table without
 * them and without any key fails too).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { migrationsTable, pgLayer } from "@syllabus/pg"
import { Context, Effect, Layer } from "effect"
import { freshPgDatabase } from "../support/pg.js"

/** A key that legitimately does not lead with the tenant: its table, its index, its columns and predicate as the catalog gives them, and why. */
interface Exception {
  readonly table: string
  readonly index: string
  readonly columns: ReadonlyArray<string>
  readonly predicate: string | null
  readonly why: string
}

const exceptions: ReadonlyArray<Exception> = [
  {
    table: "record_keys",
    index: "record_keys_global",
    columns: ["type", "name", "value"],
    predicate: "global",
    why:
      "keys unique across all accounts (a secret's hash, an account's subdomain, a verified domain, a replica invitation's token, a gateway's route), " +
      "looked up before the tenant is known: under Citus a directory of its own (a reference table, or a table on the coordinator), key → tenant"
  },
  {
    table: "rate_limit_windows",
    index: "rate_limit_windows_pkey",
    columns: ["key", "window_start"],
    predicate: null,
    why:
      "counters by key (`origin:<address>` before any credential is read, `instance:<account>:<env>`, `key:<credential>`), not by tenant: " +
      "under Citus a table on the coordinator (or a store of its own), never joined with the tenants' tables"
  },
  {
    table: migrationsTable,
    index: `${migrationsTable}_pkey`,
    columns: ["migration_id"],
    predicate: null,
    why: "the Migrator's own list of applied migrations: the schema's, not a tenant's; on the coordinator"
  }
]

const keyOf = (table: string, index: string) => `${table}.${index}`

interface TableRow {
  readonly table: string
  readonly kind: string
  readonly partition: boolean
  readonly root: string
  readonly has_account: boolean
  readonly has_environment: boolean
}

interface KeyRow {
  readonly table: string
  readonly index: string
  readonly root_table: string
  readonly root_index: string
  readonly columns: ReadonlyArray<string>
  readonly predicate: string | null
}

/** Every table of `public`: ordinary (`r`) and partitioned (`p`), partitions included (`partition`), each with the root of its tree. */
const tablesOf = (sql: SqlClient.SqlClient) =>
  sql<TableRow>`
    SELECT c.relname AS table, c.relkind::text AS kind, c.relispartition AS partition,
           COALESCE(pg_partition_root(c.oid), c.oid)::regclass::text AS root,
           EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'account_id' AND a.attnum > 0 AND NOT a.attisdropped) AS has_account,
           EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'environment' AND a.attnum > 0 AND NOT a.attisdropped) AS has_environment
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
    ORDER BY 1`

/**
 * Every unique key of those tables (primary keys, unique constraints and unique indexes, partial
 * ones included, and exclusion constraints): its key columns in order (an expression as
 * `(expression)`; `INCLUDE` columns are not part of the key), its predicate, and the key of the
 * tree's root it is attached to (itself when it is not attached to a parent's).
 */
const keysOf = (sql: SqlClient.SqlClient) =>
  sql<KeyRow>`
    SELECT t.relname AS table, i.relname AS index,
           COALESCE(pg_partition_root(t.oid), t.oid)::regclass::text AS root_table,
           COALESCE(pg_partition_root(i.oid), i.oid)::regclass::text AS root_index,
           ARRAY(
             SELECT COALESCE(a.attname::text, '(expression)')
             FROM generate_series(0, x.indnkeyatts - 1) AS k(n)
             LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[k.n] AND x.indkey[k.n] <> 0
             ORDER BY k.n
           ) AS columns,
           pg_get_expr(x.indpred, x.indrelid) AS predicate
    FROM pg_index x
    JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = 'public' AND t.relkind IN ('r', 'p') AND (x.indisunique OR x.indisexclusion)
    ORDER BY 1, 2`

describe("every key leads with the tenant [postgresql]", () => {
  it.live("each primary and unique key of every table and partition leads with (account_id, environment), or is a listed exception", () =>
    Effect.gen(function*() {
      const { url } = yield* freshPgDatabase
      const context = yield* Layer.build(pgLayer(url, { maxConnections: 3, background: false }))
      const sql = Context.get(context, SqlClient.SqlClient)
      const tables = yield* tablesOf(sql)
      const keys = yield* keysOf(sql)
      const tableOf = new Map(tables.map((table) => [table.table, table]))

      /** The tenant columns of a table: both, `account_id` alone, or none (a table that is no tenant's). */
      const tenantColumns = (table: string): ReadonlyArray<string> => {
        const row = tableOf.get(table)
        if (row === undefined || !row.has_account) return []
        return row.has_environment ? ["account_id", "environment"] : ["account_id"]
      }
      const leadsWithTenant = (key: KeyRow) => {
        const tenant = tenantColumns(key.table)
        return tenant.length > 0 && tenant.every((column, i) => key.columns[i] === column)
      }
      const excepted = new Map(exceptions.map((exception) => [keyOf(exception.table, exception.index), exception]))

      // Not vacuous: the listing found the tables and keys of the release, partitions included,
      // and the rule recognizes the keys that do lead with the tenant.
      const roots = tables.filter((table) => !table.partition)
      const partitions = tables.filter((table) => table.partition)
      expect(roots.map((table) => table.table)).toEqual(
        expect.arrayContaining(["records", "record_keys", "idempotency_receipts", "rate_limit_windows", migrationsTable])
      )
      expect(partitions.length).toBeGreaterThan(20)
      expect(tables.filter((table) => table.kind === "p").length).toBeGreaterThan(1)
      expect(keys.length).toBeGreaterThan(partitions.length)
      const conforming = keys.filter(leadsWithTenant).map((key) => keyOf(key.table, key.index))
      expect(conforming).toEqual(expect.arrayContaining([
        "records.records_pkey",
        "record_keys.record_keys_tenant",
        "idempotency_receipts.idempotency_receipts_pkey"
      ]))
      // Every partition, at every level, has its keys checked: each holds the key of `records` attached.
      const partitionsWithRecordsKey = new Set(keys.filter((key) => key.root_index === "records_pkey").map((key) => key.table))
      expect(partitions.filter((table) => !partitionsWithRecordsKey.has(table.table)).map((table) => table.table)).toEqual([])

      // The rule. A partition's key attached to an excepted key of its root is that exception;
      // any other key of a partition (its own unique index) is checked on its own.
      const nonConforming = keys
        .filter((key) => !leadsWithTenant(key))
        .filter((key) => !(key.table !== key.root_table && key.index !== key.root_index && excepted.has(keyOf(key.root_table, key.root_index))))
        .map((key) => ({ key: keyOf(key.table, key.index), columns: key.columns, predicate: key.predicate }))
      const show = (key: { readonly key: string; readonly columns: ReadonlyArray<string>; readonly predicate: string | null }) =>
        `${key.key} (${key.columns.join(", ")})${key.predicate === null ? "" : ` WHERE ${key.predicate}`}`
      expect(
        nonConforming.map(show).sort(),
        "keys that do not lead with the tenant: lead with it, or list the key in `exceptions` with why"
      ).toEqual(
        exceptions.map((exception) => show({ key: keyOf(exception.table, exception.index), columns: exception.columns, predicate: exception.predicate })).sort()
      )

      // A table that is no tenant's has every key listed, and at least one: a new such table
      // without any key would otherwise pass unseen.
      const tenantless = roots.filter((table) => tenantColumns(table.table).length === 0).map((table) => table.table)
      expect(
        tenantless.filter((table) => !exceptions.some((exception) => exception.table === table)),
        "tables without the tenant columns: add them, or list the table's keys in `exceptions` with why"
      ).toEqual([])
      // Partitions have their root's columns; none lacks the tenant columns its root has.
      expect(partitions.filter((table) => tenantColumns(table.table).length !== tenantColumns(table.root).length).map((table) => table.table)).toEqual([])
    }).pipe(Effect.scoped), 120_000)
})
