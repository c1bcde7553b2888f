/**
 * The append-only streams by week on PostgreSQL (packages/pg/src/streams.ts): the request log,
 * audit entries, events and webhook attempts, whose IDs lead with their creation time, are kept
 * in a partition per week of their type's partition, so that retention drops whole weeks
 * instead of deleting rows.
 *
 * - a database migrated with the whole release has, for each stream type, a partition by week
 *   with this week and the next two, and a default one; a record written now lands in this week's;
 * - retention (`Records.prune` by `created_at`) drops every week whose IDs are all past the
 *   cutoff, keeps the others whole (a week that is partly past keeps its rows until it goes:
 *   reads hide them), and deletes the default partition's rows past the cutoff one by one;
 * - a database written by the layout before (the type's partition a plain table, with rows)
 *   migrates in place: its table becomes the partition of every ID below next week, with its
 *   indexes attached rather than built again, and every record and list page reads the same.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { firstIdAt, Records, REQUEST_TYPE, streamTypes, type Tenant } from "@syllabus/core"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import {
  migrate,
  migrationsTable,
  partitionOf,
  pgLayer,
  PgMigrations,
  syncAccessPathIndexes,
  syncRecordPartitions,
  syncStreamPartitions
} from "../../packages/pg/src/index.js"
import { streamDefaultLeaf, streamLegacyLeaf, streamWeekLeaf, WEEK_MS, weekStart } from "../../packages/pg/src/streams.js"
import { freshPgDatabase } from "../support/pg.js"

const tenant: Tenant = { accountId: "acc_streams", environment: "production" }
const DAY_MS = 86_400_000

/** The partitions of a stream type's partition, by name. */
const leavesOf = (sql: SqlClient.SqlClient, type: string) =>
  Effect.map(
    sql<{ readonly name: string }>`
      SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = ${partitionOf(type)}::regclass ORDER BY 1`,
    (rows) => rows.map((row) => row.name)
  )

const relationOf = (sql: SqlClient.SqlClient, type: string, id: string) =>
  Effect.map(
    sql<{ readonly relation: string }>`SELECT tableoid::regclass::text AS relation FROM records WHERE type = ${type} AND id = ${id}`,
    (rows) => rows[0]?.relation
  )

/** A request-log entry made at `ms`, with an ID of that time (as the store's clock makes them). */
const requestAt = (ms: number, n: number) => ({
  id: firstIdAt("request", ms),
  data: { created_at: new Date(ms).toISOString(), n }
})

describe("the streams by week [postgresql]", () => {
  it.live("each stream type is partitioned by week, this week and the next two made; a record written now lands in this week's", () =>
    Effect.gen(function*() {
      const { url } = yield* freshPgDatabase
      const context = yield* Layer.build(pgLayer(url, { maxConnections: 3, background: false }))
      const sql = Context.get(context, SqlClient.SqlClient)
      const now = Date.now()
      for (const { type } of streamTypes) {
        const weeks = [0, 1, 2].map((week) => streamWeekLeaf(type, weekStart(now) + week * WEEK_MS))
        expect(yield* leavesOf(sql, type), type).toEqual([streamDefaultLeaf(type), ...weeks].sort())
      }
      const entry = requestAt(now, 1)
      yield* Context.get(context, Records).insert(tenant, REQUEST_TYPE, entry.id, entry.data)
      expect(yield* relationOf(sql, REQUEST_TYPE, entry.id)).toBe(streamWeekLeaf(REQUEST_TYPE, weekStart(now)))
      // An ID no clock made goes to the default partition.
      yield* Context.get(context, Records).insert(tenant, REQUEST_TYPE, "req_manual", { created_at: new Date(now).toISOString() })
      expect(yield* relationOf(sql, REQUEST_TYPE, "req_manual")).toBe(streamDefaultLeaf(REQUEST_TYPE))
    }).pipe(Effect.scoped), 60_000)

  it.live("retention drops the weeks wholly past the cutoff, keeps the others whole, and prunes the default partition row by row", () =>
    Effect.gen(function*() {
      const { url } = yield* freshPgDatabase
      const context = yield* Layer.build(pgLayer(url, { maxConnections: 3, background: false }))
      const sql = Context.get(context, SqlClient.SqlClient)
      const records = Context.get(context, Records)
      const now = Date.now()
      // Six weeks of the request log: the weeks made as the days went by.
      for (let week = 6; week >= 0; week -= 2) yield* Effect.provideService(syncStreamPartitions(now - week * WEEK_MS), SqlClient.SqlClient, sql)
      const days = Array.from({ length: 42 }, (_, day) => now - day * DAY_MS)
      const entries = days.map((at, n) => requestAt(at, n))
      yield* records.insertMany(tenant, REQUEST_TYPE, entries)
      const stray = [{ id: "req_stray_old", data: { created_at: new Date(now - 40 * DAY_MS).toISOString() } }, {
        id: "req_stray_new",
        data: { created_at: new Date(now - DAY_MS).toISOString() }
      }]
      yield* records.insertMany(tenant, REQUEST_TYPE, stray)
      const weeksBefore = yield* leavesOf(sql, REQUEST_TYPE)

      const cutoff = now - 30 * DAY_MS
      const removed = yield* records.prune(REQUEST_TYPE, "created_at", new Date(cutoff).toISOString(), 1_000)
      expect(removed).toBeGreaterThanOrEqual(1)

      const weeksAfter = yield* leavesOf(sql, REQUEST_TYPE)
      const gone = weeksBefore.filter((week) => !weeksAfter.includes(week))
      // Exactly the weeks that end at or before the cutoff.
      const expectedGone = weeksBefore.filter((name) => {
        const match = /_w(\d{4})(\d{2})(\d{2})$/.exec(name)
        return match !== null && Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) + WEEK_MS <= cutoff
      })
      expect(expectedGone.length).toBeGreaterThan(0)
      expect(gone.sort()).toEqual(expectedGone.sort())

      const left = new Set((yield* sql<{ readonly id: string }>`SELECT id FROM records WHERE type = ${REQUEST_TYPE}`).map((row) => row.id))
      for (const [n, entry] of entries.entries()) {
        const at = days[n]!
        const weekGone = expectedGone.includes(streamWeekLeaf(REQUEST_TYPE, weekStart(at)))
        // A week still in retention keeps its rows, past the cutoff or not; a dropped week's are gone.
        expect(left.has(entry.id), `${entry.id} at ${new Date(at).toISOString()}`).toBe(!weekGone && weekStart(at) >= weekStart(now - 6 * WEEK_MS))
      }
      expect(left.has("req_stray_old")).toBe(false)
      expect(left.has("req_stray_new")).toBe(true)
    }).pipe(Effect.scoped), 60_000)

  it.live("a database of the layout before migrates in place: rows, pages and indexes kept, the old table the partition below next week", () =>
    Effect.gen(function*() {
      const { url } = yield* freshPgDatabase
      const stores = Effect.gen(function*() {
        const client = yield* Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 3 }))
        return Context.get(client, SqlClient.SqlClient)
      })
      const sql = yield* stores
      // The layout before: the migrations and partitions of the release before, no streams by week.
      yield* Effect.provideService(
        Effect.gen(function*() {
          yield* Migrator.make({})({ loader: Migrator.fromRecord(PgMigrations), table: migrationsTable })
          yield* syncRecordPartitions()
          yield* syncAccessPathIndexes()
        }),
        SqlClient.SqlClient,
        sql
      )
      expect((yield* sql<{ readonly relkind: string }>`SELECT relkind FROM pg_class WHERE relname = ${partitionOf(REQUEST_TYPE)}`)[0]?.relkind).toBe("r")
      const now = Date.now()
      const entries = Array.from({ length: 300 }, (_, n) => requestAt(now - n * 3_600_000, n))
      yield* sql`
        INSERT INTO records (account_id, environment, type, id, revision, data)
        SELECT ${tenant.accountId}, ${tenant.environment}, ${REQUEST_TYPE}, e.id, 1, e.data
        FROM jsonb_to_recordset(${JSON.stringify(entries)}::jsonb) AS e(id text, data jsonb)`
      const before = yield* sql<{ readonly id: string; readonly revision: number; readonly data: unknown }>`
        SELECT id, revision, data FROM records WHERE type = ${REQUEST_TYPE} ORDER BY id COLLATE "C"`
      const indexesBefore = yield* sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM pg_index WHERE indrelid = ${partitionOf(REQUEST_TYPE)}::regclass AND NOT indisprimary`

      yield* Effect.provideService(migrate, SqlClient.SqlClient, sql)

      const context = yield* Layer.build(pgLayer(url, { maxConnections: 3, background: false }))
      const records = Context.get(context, Records)
      expect((yield* sql<{ readonly relkind: string }>`SELECT relkind FROM pg_class WHERE relname = ${partitionOf(REQUEST_TYPE)}`)[0]?.relkind).toBe("p")
      const leaves = yield* leavesOf(sql, REQUEST_TYPE)
      expect(leaves).toContain(streamLegacyLeaf(REQUEST_TYPE))
      expect(leaves).toContain(streamWeekLeaf(REQUEST_TYPE, weekStart(now) + WEEK_MS))
      const after = yield* sql<{ readonly id: string; readonly revision: number; readonly data: unknown }>`
        SELECT id, revision, data FROM records WHERE type = ${REQUEST_TYPE} ORDER BY id COLLATE "C"`
      expect(after).toEqual(before)
      for (const entry of entries.slice(0, 5)) expect(yield* relationOf(sql, REQUEST_TYPE, entry.id)).toBe(streamLegacyLeaf(REQUEST_TYPE))
      // The old table's indexes are attached to the partitioned ones, not built again beside them.
      const legacyIndexes = yield* sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM pg_index WHERE indrelid = ${streamLegacyLeaf(REQUEST_TYPE)}::regclass AND NOT indisprimary`
      expect(legacyIndexes[0]!.n).toBe(indexesBefore[0]!.n)
      const invalid = yield* sql<{ readonly name: string }>`
        SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE NOT i.indisvalid`
      expect(invalid).toEqual([])
      // Every page of the list, newest first, as before.
      const ids = before.map((row) => row.id).reverse()
      let cursor: { readonly value: string; readonly id: string } | undefined
      const paged: Array<string> = []
      for (;;) {
        const page = yield* records.list(tenant, REQUEST_TYPE, { where: [], sort: { field: "id", kind: "text", direction: "desc" }, after: cursor, limit: 50 })
        paged.push(...page.map((record) => record.id))
        if (page.length < 50) break
        cursor = { value: page.at(-1)!.id, id: page.at(-1)!.id }
      }
      expect(paged).toEqual(ids)
      // A retention pass keeps the old table (some of its IDs are recent) and makes no week over it.
      expect(yield* records.prune(REQUEST_TYPE, "created_at", new Date(now - 30 * DAY_MS).toISOString(), 1_000)).toBe(0)
      expect(yield* leavesOf(sql, REQUEST_TYPE)).toEqual(leaves)
      // A new entry goes to its week, past the old table.
      const next = requestAt(weekStart(now) + WEEK_MS + 1_000, 999)
      yield* records.insert(tenant, REQUEST_TYPE, next.id, next.data)
      expect(yield* relationOf(sql, REQUEST_TYPE, next.id)).toBe(streamWeekLeaf(REQUEST_TYPE, weekStart(now) + WEEK_MS))
    }).pipe(Effect.scoped), 120_000)
})
