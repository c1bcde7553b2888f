/**
 * The append-only streams in weekly partitions (`streamTypes` of `@syllabus/core`: the request
 * log, the audit entries, events and webhook attempts). Their IDs lead with their creation
 * time, so the partition of such a type (`records_t_<type>`) is itself partitioned by range of
 * `id`, a week per partition (`<partition>_w<yyyymmdd>`, from Monday 00:00 UTC), plus:
 *
 * - a default partition for IDs outside every week (an ID not made by the store's clock), kept
 *   small and pruned row by row as before;
 * - after the migration of a database written by the layout before, that layout's table as the
 *   partition of every ID below the first week (`<partition>_legacy`).
 *
 * Retention (§8.3) then drops whole weeks: once every ID a week can hold is older than the
 * cutoff, the week is detached and dropped, instead of its rows being deleted one by one
 * (which leaves the table to vacuum, and takes longer the more a school writes). Rows past
 * their time in a week still in retention stay until their week goes; every read already hides
 * them. The weeks to come are created ahead (this one and the next two) at every start and at
 * every retention pass.
 *
 * The DDL takes a short lock of the type's partition (detaching or creating a week): it waits
 * at most `maintenanceLockMs`, and a pass that cannot have it leaves the work to the next one;
 * one process at a time does it (an advisory lock).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { firstIdAt, streamTypes } from "@syllabus/core"
import { Effect, Option } from "effect"
import { partitionOf, weekIndexName } from "./access-paths.js"

export const WEEK_MS = 7 * 86_400_000
const DAY_MS = 86_400_000

/** Weeks created ahead of the current one. */
const WEEKS_AHEAD = 2

/** How long the maintenance waits for its lock on a stream's partition before leaving the work to the next pass. */
const maintenanceLockMs = 500

// Any fixed bigint, the same in every process.
const maintenanceLockKey = 7_305_512_024

/** Monday 00:00 UTC of the week of `ms` (1970-01-01 was a Thursday). */
export const weekStart = (ms: number): number => {
  const day = Math.floor(ms / DAY_MS)
  return (day - ((day + 3) % 7)) * DAY_MS
}

/** The stream declaration of `type`, if it is one. */
export const streamOf = (type: string) => streamTypes.find((stream) => stream.type === type)

/** `<partition>_<suffix>`, within PostgreSQL's 63 bytes (the partition's name cut as needed). */
const leafName = (type: string, suffix: string) => `${partitionOf(type).slice(0, 62 - suffix.length)}_${suffix}`

export const streamDefaultLeaf = (type: string) => leafName(type, "default")
export const streamLegacyLeaf = (type: string) => leafName(type, "legacy")
export const streamWeekLeaf = (type: string, weekMs: number) =>
  leafName(type, `w${new Date(weekMs).toISOString().slice(0, 10).replaceAll("-", "")}`)

const quoted = (text: string) => `'${text.replaceAll("'", "''")}'`

/** How the partition of `type` is kept: `r` a plain table, `p` partitioned, or none yet. */
const relkindOf = (sql: SqlClient.SqlClient, relation: string) =>
  Effect.map(
    sql<{ readonly relkind: string }>`SELECT relkind FROM pg_class WHERE relname = ${relation} AND relnamespace = current_schema()::regnamespace`,
    (rows) => Option.fromNullable(rows[0]?.relkind)
  )

/** The partitions of a partitioned table, with the upper bound of each range (null: the default, or MAXVALUE). */
const leavesOf = (sql: SqlClient.SqlClient, parent: string) =>
  Effect.map(
    sql<{ readonly name: string; readonly bound: string }>`
      SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = ${parent}::regclass`,
    (rows) => rows.map((row) => ({ name: row.name, upper: /TO \('((?:[^']|'')*)'\)/.exec(row.bound)?.[1]?.replaceAll("''", "'") ?? null }))
  )

/** Make the partition of a stream type, partitioned by week, with its default partition. */
const createStreamPartition = (sql: SqlClient.SqlClient, type: string) =>
  Effect.gen(function*() {
    yield* sql.unsafe(`CREATE TABLE ${partitionOf(type)} PARTITION OF records FOR VALUES IN (${quoted(type)}) PARTITION BY RANGE (id)`)
    yield* sql.unsafe(`CREATE TABLE ${streamDefaultLeaf(type)} PARTITION OF ${partitionOf(type)} DEFAULT`)
  })

/**
 * A stream type's partition as the layout before kept it (a plain table) becomes partitioned
 * by week, its rows staying where they are: the table becomes the partition of every ID below
 * the next week. A CHECK constraint validated first (without blocking writers) spares the
 * attachment its scan, so that `records` is locked only for the renames. A table holding an ID
 * at or past that bound (one not made by a clock) is left as it is: its rows are pruned one
 * by one, as before. Its access-path indexes are renamed to what `syncAccessPathIndexes` names
 * a week's index, so that they are attached, not built again; its statistics go (the
 * partitioned table gets its own).
 */
const convertToStream = (sql: SqlClient.SqlClient, type: string, now: number) =>
  Effect.gen(function*() {
    const stream = streamOf(type)!
    const partition = partitionOf(type)
    const legacy = streamLegacyLeaf(type)
    const bound = firstIdAt(stream.idKind, weekStart(now) + WEEK_MS)
    const [beyond] = yield* sql<{ readonly beyond: boolean }>`SELECT EXISTS (SELECT 1 FROM ${sql(partition)} WHERE id >= ${bound}) AS beyond`
    if (beyond?.beyond) return false
    yield* sql.unsafe(`ALTER TABLE ${partition} DROP CONSTRAINT IF EXISTS ${legacy}_bound`)
    yield* sql.unsafe(`ALTER TABLE ${partition} ADD CONSTRAINT ${legacy}_bound CHECK (id < ${quoted(bound)}) NOT VALID`)
    yield* sql.unsafe(`ALTER TABLE ${partition} VALIDATE CONSTRAINT ${legacy}_bound`)
    const indexes = yield* sql<{ readonly name: string }>`
      SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = ${partition}::regclass AND NOT i.indisprimary`
    const statistics = yield* sql<{ readonly name: string }>`SELECT stxname AS name FROM pg_statistic_ext WHERE stxrelid = ${partition}::regclass`
    yield* sql.withTransaction(Effect.gen(function*() {
      // The unique keys of the type's records point at `records`: they leave while it is detached.
      yield* sql`CREATE TEMPORARY TABLE moving_keys ON COMMIT DROP AS SELECT * FROM record_keys WHERE type = ${type}`
      yield* sql`DELETE FROM record_keys WHERE type = ${type}`
      yield* sql.unsafe(`ALTER TABLE records DETACH PARTITION ${partition}`)
      const [held] = yield* sql<{ readonly held: boolean }>`SELECT EXISTS (SELECT 1 FROM ${sql(partition)}) AS held`
      if (!held?.held) {
        // Nothing to keep (a new database): the partition by week from its first week on.
        yield* sql.unsafe(`DROP TABLE ${partition}`)
        yield* createStreamPartition(sql, type)
        yield* sql`INSERT INTO record_keys SELECT * FROM moving_keys`
        return
      }
      yield* sql.unsafe(`ALTER TABLE ${partition} RENAME TO ${legacy}`)
      yield* sql.unsafe(`ALTER INDEX IF EXISTS ${partition}_pkey RENAME TO ${legacy}_pkey`)
      for (const { name } of indexes) yield* sql.unsafe(`ALTER INDEX ${name} RENAME TO ${weekIndexName(legacy, name)}`)
      for (const { name } of statistics) yield* sql.unsafe(`DROP STATISTICS IF EXISTS ${name}`)
      yield* createStreamPartition(sql, type)
      yield* sql.unsafe(`ALTER TABLE ${partition} ATTACH PARTITION ${legacy} FOR VALUES FROM (MINVALUE) TO (${quoted(bound)})`)
      yield* sql.unsafe(`ALTER TABLE ${legacy} DROP CONSTRAINT ${legacy}_bound`)
      yield* sql`INSERT INTO record_keys SELECT * FROM moving_keys`
    }))
    return true
  })

/**
 * The weeks of `type` from the current one to `WEEKS_AHEAD` ahead. A week that overlaps an
 * older partition (the legacy table) or whose IDs the default partition already holds is left
 * to the default partition (PostgreSQL refuses it; the next weeks are made).
 */
const ensureWeeks = (sql: SqlClient.SqlClient, type: string, now: number) =>
  Effect.gen(function*() {
    const stream = streamOf(type)!
    const leaves = yield* leavesOf(sql, partitionOf(type))
    const existing = new Set(leaves.map((leaf) => leaf.name))
    // The layout before's table holds every ID below its bound: no week starts under it.
    const legacyUpper = leaves.find((leaf) => leaf.name === streamLegacyLeaf(type))?.upper ?? null
    const created: Array<string> = []
    for (let week = 0; week <= WEEKS_AHEAD; week++) {
      const from = weekStart(now) + week * WEEK_MS
      const leaf = streamWeekLeaf(type, from)
      if (existing.has(leaf) || (legacyUpper !== null && firstIdAt(stream.idKind, from) < legacyUpper)) continue
      // In a transaction of its own, or a savepoint of the caller's: a refusal undoes only this week.
      const made = yield* sql.withTransaction(sql.unsafe(
        `CREATE TABLE IF NOT EXISTS ${leaf} PARTITION OF ${partitionOf(type)} ` +
          `FOR VALUES FROM (${quoted(firstIdAt(stream.idKind, from))}) TO (${quoted(firstIdAt(stream.idKind, from + WEEK_MS))})`
      )).pipe(
        Effect.as(true),
        // 42P17: it overlaps another partition; 23514: the default partition holds some of its IDs.
        Effect.catchIf((error) => ["42P17", "23514"].includes(codeOf(error)), () => Effect.succeed(false))
      )
      if (made) created.push(leaf)
    }
    return created
  })

const codeOf = (error: SqlError): string => {
  const cause = error.cause as { readonly code?: unknown } | undefined
  return typeof cause?.code === "string" ? cause.code : ""
}

/**
 * Give every stream type its partition by week (creating it, or converting the layout
 * before's table), and its weeks ahead. Run by `migrate` under its lock, after
 * `syncRecordPartitions` and before `syncAccessPathIndexes`.
 */
export const syncStreamPartitions = (
  now: number = Date.now()
): Effect.Effect<{ readonly converted: ReadonlyArray<string>; readonly weeks: ReadonlyArray<string> }, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const converted: Array<string> = []
    const weeks: Array<string> = []
    for (const { type } of streamTypes) {
      const kind = yield* relkindOf(sql, partitionOf(type))
      if (Option.isNone(kind)) yield* sql.withTransaction(createStreamPartition(sql, type))
      else if (kind.value === "r") {
        if (yield* convertToStream(sql, type, now)) converted.push(type)
        else continue
      }
      weeks.push(...(yield* ensureWeeks(sql, type, now)))
    }
    return { converted, weeks }
  }).pipe(Effect.withSpan("PgStreams.sync"))

/**
 * A retention pass over a stream type, inside the caller's transaction (which should wait for
 * locks no longer than `maintenanceLockMs`, `SET LOCAL` here): its weeks to come made, and the
 * weeks whose every ID is older than `before` (epoch ms) detached and dropped, by one process at
 * a time (the others skip). The rows gone, as PostgreSQL last counted them (`reltuples`: a
 * dropped week is not counted row by row). `None`: the type's partition is not partitioned by
 * week (nothing done).
 */
export const maintainStream = (
  type: string,
  before: number,
  now: number = Date.now()
): Effect.Effect<Option.Option<number>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const stream = streamOf(type)
    if (stream === undefined) return Option.none()
    const partition = partitionOf(type)
    if (Option.getOrUndefined(yield* relkindOf(sql, partition)) !== "p") return Option.none()
    const [locked] = yield* sql<{ readonly locked: boolean }>`SELECT pg_try_advisory_xact_lock(${maintenanceLockKey}) AS locked`
    if (!locked?.locked) return Option.some(0)
    yield* sql.unsafe(`SET LOCAL lock_timeout = ${maintenanceLockMs}`)
    yield* ensureWeeks(sql, type, now)
    const cutoff = firstIdAt(stream.idKind, before)
    let removed = 0
    for (const leaf of yield* leavesOf(sql, partition)) {
      if (leaf.upper === null || leaf.upper > cutoff) continue
      const [count] = yield* sql<{ readonly n: number | string }>`
        SELECT GREATEST(reltuples, 0)::bigint AS n FROM pg_class WHERE relname = ${leaf.name}`
      yield* sql.unsafe(`ALTER TABLE ${partition} DETACH PARTITION ${leaf.name}`)
      yield* sql.unsafe(`DROP TABLE ${leaf.name}`)
      removed += Number(count?.n ?? 0)
    }
    return Option.some(removed)
  }).pipe(Effect.withSpan("PgStreams.maintain"))
