/**
 * `records` is partitioned by type on PostgreSQL (packages/pg/src/access-paths.ts): each type
 * with access paths has its own partition with only its own indexes and statistics, so what a
 * statement costs to plan does not grow with the number of types and paths of the release.
 *
 * - on a database migrated with the whole release, every type with paths has its partition, a
 *   partition holds exactly the indexes of its type's paths (and its key), and the plan of a
 *   primary-key read touches one relation: its type's partition;
 * - a database of the layout before (one table, `1_initial`), with rows and unique keys, keeps
 *   every row and key through the migration, each row in its type's partition;
 * - a type that gains its first path after its rows were written (they sit in the default
 *   partition) gets a partition, and its rows and their keys move into it.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { accessPaths } from "@syllabus/core"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import {
  accessPathIndexes,
  defaultRecordPartition,
  migrate,
  migrationsTable,
  partitionOf,
  PgMigrations,
  syncRecordPartitions
} from "../../packages/pg/src/index.js"
import { freshPgDatabase } from "../support/pg.js"
import { planOf } from "../support/pg-plans.js"

class TestDatabase extends Context.Tag("test/TestDatabase")<TestDatabase, { readonly url: string }>() {}

const DatabaseLive = Layer.scoped(TestDatabase, freshPgDatabase)
const ClientLive = Layer.unwrapEffect(
  Effect.map(TestDatabase, ({ url }) => PgClient.layer({ url: Redacted.make(url), maxConnections: 3 }))
).pipe(Layer.provideMerge(DatabaseLive))

const partitionOfRows = (type: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly relation: string; readonly rows: number }>`
      SELECT tableoid::regclass::text AS relation, count(*)::int AS rows FROM records WHERE type = ${type} GROUP BY 1`)

const keysOf = (type: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly id: string; readonly value: string }>`SELECT id, value FROM record_keys WHERE type = ${type} ORDER BY id`)

describe("records partitioned by type [postgresql]", () => {
  layer(ClientLive, { timeout: 120_000 })((it) => {
    it.effect("an old layout's rows and unique keys survive the migration, each row in its type's partition", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // The layout before: the first two migrations only.
        const before = { "1_initial": PgMigrations["1_initial"]!, "2_access_path_extensions": PgMigrations["2_access_path_extensions"]! }
        yield* Migrator.make({})({ loader: Migrator.fromRecord(before), table: migrationsTable })
        yield* sql`
          INSERT INTO records (account_id, environment, type, id, revision, data)
          SELECT 'acc_1', 'production', t.type, t.type || '_' || i, 1, jsonb_build_object('name', 'n' || i)
          FROM generate_series(1, 50) AS i, (VALUES ('product'), ('credential')) AS t(type)`
        yield* sql`
          INSERT INTO record_keys (account_id, environment, type, id, name, value, global)
          SELECT 'acc_1', 'production', 'product', 'product_' || i, 'slug', 's' || i, false FROM generate_series(1, 50) AS i`

        yield* migrate

        expect(yield* partitionOfRows("product")).toEqual([{ relation: partitionOf("product"), rows: 50 }])
        expect(yield* partitionOfRows("credential")).toEqual([{ relation: defaultRecordPartition, rows: 50 }])
        expect((yield* keysOf("product")).length).toBe(50)
        // No foreign key from the keys to their record any more (migration 6): the store deletes
        // a record's keys with it (the conformance tests of remove, purge and prune check that).
        const foreignKeys = yield* sql`SELECT conname FROM pg_constraint WHERE conrelid = 'record_keys'::regclass AND contype = 'f'`
        expect(foreignKeys).toEqual([])
      }))

    it.effect("each partition holds its own type's indexes only; a primary-key read plans on one partition", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const paths = accessPaths()
        const types = [...new Set(paths.map((path) => path.type))]
        const partitions = new Set(
          (yield* sql<{ readonly name: string }>`
            SELECT c.relname AS name FROM pg_inherits JOIN pg_class c ON c.oid = inhrelid
            WHERE inhparent = 'records'::regclass`).map((row) => row.name)
        )
        for (const type of types) expect(partitions.has(partitionOf(type)), type).toBe(true)
        expect(partitions.has(defaultRecordPartition)).toBe(true)

        const indexes = yield* sql<{ readonly relation: string; readonly name: string }>`
          SELECT t.relname AS relation, c.relname AS name
          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
          WHERE t.relname LIKE 'records\\_%' AND NOT i.indisprimary`
        for (const type of types) {
          const own = accessPathIndexes(paths.filter((path) => path.type === type)).map((index) => index.name).sort()
          const held = indexes.filter((index) => index.relation === partitionOf(type)).map((index) => index.name).sort()
          expect(held, type).toEqual(own)
        }

        for (const type of ["product", "credential"]) {
          const plan = yield* planOf(
            sql`SELECT id FROM records WHERE account_id = 'acc_1' AND environment = 'production' AND type = ${type} AND id = 'x'`
          )
          const relations = new Set(plan.nodes.flatMap((node) => (node["Relation Name"] === undefined ? [] : [node["Relation Name"]])))
          expect([...relations], type).toEqual([type === "product" ? partitionOf(type) : defaultRecordPartition])
        }
      }))

    it.effect("a type that gains a partition after its rows were written takes its rows and their keys along", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`
          INSERT INTO records (account_id, environment, type, id, revision, data)
          SELECT 'acc_1', 'production', 'late_type', 'late_' || i, 1, '{}'::jsonb FROM generate_series(1, 20) AS i`
        yield* sql`
          INSERT INTO record_keys (account_id, environment, type, id, name, value, global)
          SELECT 'acc_1', 'production', 'late_type', 'late_' || i, 'code', 'c' || i, false FROM generate_series(1, 20) AS i`
        expect(yield* partitionOfRows("late_type")).toEqual([{ relation: defaultRecordPartition, rows: 20 }])

        expect(yield* syncRecordPartitions(["late_type"])).toEqual({ created: [partitionOf("late_type")] })

        expect(yield* partitionOfRows("late_type")).toEqual([{ relation: partitionOf("late_type"), rows: 20 }])
        expect((yield* keysOf("late_type")).length).toBe(20)
        // Again: nothing to do.
        expect(yield* syncRecordPartitions(["late_type"])).toEqual({ created: [] })
      }))
  })
})
