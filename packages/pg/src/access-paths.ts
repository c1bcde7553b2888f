/**
 * Access paths are indexes (docs/architecture.md): every access path of the release
 * (`accessPaths` of `@syllabus/core`: the lists the resource descriptions declare, and the
 * housekeeping reads) is an index of the records of its type, over the expressions the
 * statements use (`expressions.ts`).
 *
 * `records` is partitioned by type (`PARTITION BY LIST (type)`): each type with access paths has
 * a partition of its own (`records_t_<type>`) holding its own indexes and statistics, and every
 * other type shares the default partition (`records_default`), which has only its key. A
 * statement names its type as a literal, so the planner prunes to one partition and weighs only
 * that type's indexes: what a statement costs to plan does not grow with the number of types
 * and paths of the release (with every path a partial index of one table, it did: 240 indexes
 * weighed by a primary-key read).
 *
 * - `ordered`: a btree on `(account_id, environment, <equals…>, <order…>)` for a tenant's
 *   lists (`<order…>` ends with `id`, the keyset tie-break), on `(<equals…>, <order…>)` for
 *   housekeeping across tenants;
 * - `search`: a GIN on `(account_id, environment, lower(<field>) gin_trgm_ops)` (`btree_gin`
 *   for the tenant columns), which answers `contains`.
 *
 * Beside the indexes, statistics: without any, PostgreSQL guesses 0.5% for
 * `(data -> 'deleted') = false` or a search, and a plan built on such guesses walks a whole
 * tenant. So each expression of a path has its extended statistics on its partition
 * (`CREATE STATISTICS … ON (<expr>)`), and the tenant columns theirs (a tenant's share of a type
 * is not the product of the two shares).
 *
 * Partitions, indexes and statistics follow the resource descriptions at every start
 * (`syncRecordPartitions`, `syncAccessPathIndexes`, run by `migrate` under its lock): a new type
 * with paths gets its partition (its rows, if an older release left some in the default
 * partition, move into it); the indexes carry a reserved prefix and a hash of their definition
 * in their name, so those missing are created and those no path asks for any more are dropped.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { type AccessPath, accessPaths, keptFigures, PLAN_TYPE, type SortSpec, type Where } from "@syllabus/core"
import { Effect } from "effect"
import { isSqlName, jsonExpr, orderExpr, searchExpr } from "./expressions.js"

/** The names of the indexes this module owns; no other index of `records` may start with it. */
export const accessPathIndexPrefix = "records_ap_"

export interface AccessPathIndex {
  /** `records_ap_<type>_<hash of the definition>`, at most 63 characters. */
  readonly name: string
  /** What follows `CREATE INDEX <name>`: `ON records_t_<type> …`. */
  readonly definition: string
}

/** The names of the statistics objects this module owns. */
export const accessPathStatisticsPrefix = "records_ap_st_"

/** FNV-1a, 32 bits, as 8 hex digits: a name that changes when the definition does. */
const hash = (text: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, "0")
}

/**
 * The name of a partition's index attached to the partitioned access-path index `index` (the
 * weeks of a stream, streams.ts): not starting with `records_ap_`, which names the access-path
 * indexes of `records`' own partitions only.
 */
export const weekIndexName = (leaf: string, index: string): string => `records_apl_${hash(leaf)}_${hash(index)}`

/** The partition of the types without access paths (and of any type a release does not know). */
export const defaultRecordPartition = "records_default"

/** The partition of the records of `type` (a type with access paths; a SQL name). */
export const partitionOf = (type: string): string => {
  if (!isSqlName(type)) throw new Error(`Records: invalid record type ${JSON.stringify(type)}`)
  const name = `records_t_${type}`
  // PostgreSQL cuts names at 63 bytes: a longer type keeps a hash of its whole name.
  return name.length <= 63 ? name : `${name.slice(0, 54)}_${hash(type)}`
}

/**
 * Types with a partition of their own although they have no access path: the records that
 * concurrent writes of one school update (kept figures: a count every create adds to) or read
 * (the plan, read by every create of a limited type). In the default partition they shared
 * index pages with every type there; under SERIALIZABLE, a page one unit of work read (or the
 * whole partition, which a worker's scan of another type there locks) fails the concurrent
 * units that write into it, and they run again. Their partitions leave room on each page
 * (`fillfactor`), so that an update fits beside the row it replaces and adds no index entry.
 */
export const updatedInPlaceTypes = (): ReadonlyArray<string> => [...keptFigures().map((figures) => figures.type), PLAN_TYPE].sort()

/** The fill factor of the partitions of `updatedInPlaceTypes`: half of each page kept for updates. */
export const updatedInPlaceFillFactor = 50

/** The types that have a partition of their own: those with access paths and the types updated in place, in a stable order. */
export const partitionedTypes = (
  paths: ReadonlyArray<AccessPath> = accessPaths(),
  updatedInPlace: ReadonlyArray<string> = updatedInPlaceTypes()
): ReadonlyArray<string> => [...new Set([...paths.map((path) => path.type), ...updatedInPlace])].sort()

const definitionOf = (path: AccessPath): string => {
  const tenant = path.scope === "tenant" ? ["account_id", "environment"] : []
  if (path.kind === "search") {
    return `ON ${partitionOf(path.type)} USING gin (${[...tenant, `(${searchExpr(path.field)}) gin_trgm_ops`].join(", ")})`
  }
  const columns = [
    ...tenant,
    ...path.equals.map((field) => `(${jsonExpr(field)})`),
    // NULLS FIRST: the order of `Records.list` ascending (and, read backwards, descending).
    ...path.order.map(({ field, kind }) => field === "id" ? "id" : `${orderExpr(field, kind)} NULLS FIRST`)
  ]
  return `ON ${partitionOf(path.type)} (${columns.join(", ")})`
}

const expressionsOf = (path: AccessPath): ReadonlyArray<string> =>
  path.kind === "search"
    ? [searchExpr(path.field)]
    : [
      ...path.equals.map(jsonExpr),
      ...path.order.flatMap(({ field, kind }) => field === "id" ? [] : [orderExpr(field, kind)])
    ]

/**
 * The statistics objects of `paths`, each on its type's partition: one per distinct expression,
 * and the tenant columns (with the type, on the default partition).
 */
export const accessPathStatistics = (paths: ReadonlyArray<AccessPath> = accessPaths()): ReadonlyArray<AccessPathIndex> => {
  const byName = new Map<string, AccessPathIndex>()
  const add = (definition: string) => {
    const name = `${accessPathStatisticsPrefix}${hash(definition)}`
    byName.set(name, { name, definition })
  }
  add(`(mcv, dependencies) ON account_id, environment, type FROM ${defaultRecordPartition}`)
  for (const type of partitionedTypes(paths)) add(`(mcv, dependencies) ON account_id, environment FROM ${partitionOf(type)}`)
  for (const path of paths) for (const expression of expressionsOf(path)) add(`ON (${expression}) FROM ${partitionOf(path.type)}`)
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** The indexes of `paths`, one per distinct definition, in a stable order. */
export const accessPathIndexes = (paths: ReadonlyArray<AccessPath> = accessPaths()): ReadonlyArray<AccessPathIndex> => {
  const byName = new Map<string, AccessPathIndex>()
  for (const path of paths) {
    const definition = definitionOf(path)
    const name = `${accessPathIndexPrefix}${path.type}_${hash(definition)}`.slice(0, 63)
    byName.set(name, { name, definition })
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** The most values of an `in` read one page each (`pagedIn`); more are one `= ANY` read. */
export const maxPagedValues = 100

/** The distinct values of an `in`, in the order given. */
export const distinctValues = (values: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set(values)]

/** The release's ordered paths of a tenant's lists, by type (computed once). */
let listPathsByType: ReadonlyMap<string, ReadonlyArray<Extract<AccessPath, { kind: "ordered" }>>> | undefined
const listPathsOf = (type: string) => {
  if (listPathsByType === undefined) {
    const byType = new Map<string, Array<Extract<AccessPath, { kind: "ordered" }>>>()
    for (const path of accessPaths()) {
      if (path.kind !== "ordered" || path.scope !== "tenant") continue
      byType.set(path.type, [...(byType.get(path.type) ?? []), path])
    }
    listPathsByType = byType
  }
  return listPathsByType.get(type) ?? []
}

/**
 * The `in` of a tenant's list that the PostgreSQL store reads as one page per value
 * (`Records.list`, records.ts), or `undefined`: an `in` of 2 to `maxPagedValues` distinct values
 * on a field that an ordered path of the type (the release's, `accessPaths()`) holds as an
 * equality column, when that path's index gives the list's order once its value is fixed: its
 * other equality columns each have an equality in `where` (`eq`, or an `in` of one value) and
 * its order starts with the sort's field, of the sort's kind. PostgreSQL 15 reads
 * `field = ANY(…)` on such a column unordered (every matching row, then a sort); with the value
 * fixed, each page is an index scan that stops at the page. The first such `in` of `where`.
 */
export const pagedIn = (
  type: string,
  where: ReadonlyArray<Where>,
  sort: Pick<SortSpec, "field" | "kind">
): { readonly index: number; readonly field: string; readonly values: ReadonlyArray<string> } | undefined => {
  const candidates = listPathsOf(type)
  const fixed = (field: string) =>
    where.some((w) => w.field === field && (w.op === "eq" || (w.op === "in" && distinctValues(w.values).length === 1)))
  const inOrder = (path: Extract<AccessPath, { kind: "ordered" }>) => {
    const first = path.order[0]
    return first !== undefined && first.field === sort.field && (sort.field === "id" || first.kind === sort.kind)
  }
  for (const [index, w] of where.entries()) {
    if (w.op !== "in") continue
    const values = distinctValues(w.values)
    if (values.length < 2 || values.length > maxPagedValues) continue
    const served = candidates.some((path) =>
      path.equals.includes(w.field) && inOrder(path) && path.equals.every((field) => field === w.field || fixed(field))
    )
    if (served) return { index, field: w.field, values }
  }
  return undefined
}

/**
 * Bring the indexes of the prefix in step with `indexes`: drop what is no longer asked for
 * (and what a failed concurrent build left invalid), create what is missing. On a table with
 * rows, without blocking writers (`CONCURRENTLY`); on an empty one (a new database) directly.
 * Run by one process at a time (`migrate` holds its advisory lock), outside any transaction.
 */
export const syncAccessPathIndexes = (
  indexes: ReadonlyArray<AccessPathIndex> = accessPathIndexes(),
  statistics: ReadonlyArray<AccessPathIndex> = accessPathStatistics()
): Effect.Effect<{ readonly created: ReadonlyArray<string>; readonly dropped: ReadonlyArray<string> }, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const existing = yield* sql<{ readonly name: string; readonly valid: boolean; readonly partitioned: boolean }>`
      SELECT c.relname AS name, i.indisvalid AS valid, t.relkind = 'p' AS partitioned
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
      WHERE i.indrelid IN (${partitionsQuery(sql)}) AND starts_with(c.relname, ${accessPathIndexPrefix})`
    // The partitions that are themselves partitioned (the streams by week, streams.ts).
    const partitioned = new Set((yield* sql<{ readonly name: string }>`
      SELECT c.relname AS name FROM pg_class c WHERE c.oid IN (${partitionsQuery(sql)}) AND c.relkind = 'p'`).map((row) => row.name))
    const wanted = new Set(indexes.map((index) => index.name))
    const empty = (yield* sql<{ readonly empty: boolean }>`SELECT NOT EXISTS (SELECT 1 FROM records) AS empty`)[0]?.empty ?? false
    const concurrently = empty ? "" : " CONCURRENTLY"
    const dropped = existing.filter((index) => !wanted.has(index.name) || !index.valid)
    // An index of a partitioned table has no concurrent drop (it goes with its partitions' indexes).
    for (const index of dropped) yield* sql.unsafe(`DROP INDEX${index.partitioned ? "" : concurrently} IF EXISTS ${index.name}`)
    const present = new Set(existing.filter((index) => !dropped.includes(index)).map((index) => index.name))
    const created = indexes.filter((index) => !present.has(index.name))
    for (const index of created) {
      const table = /^ON (\S+)/.exec(index.definition)?.[1] ?? ""
      if (empty || !partitioned.has(table)) {
        yield* sql.unsafe(`CREATE INDEX${concurrently} IF NOT EXISTS ${index.name} ${index.definition}`)
      } else {
        yield* createPartitionedIndex(sql, index, table)
      }
    }
    const existingStatistics = yield* sql<{ readonly name: string }>`
      SELECT stxname AS name FROM pg_statistic_ext
      WHERE (stxrelid = 'records'::regclass OR stxrelid IN (${partitionsQuery(sql)}))
        AND starts_with(stxname, ${accessPathStatisticsPrefix})`
    const wantedStatistics = new Set(statistics.map((s) => s.name))
    for (const { name } of existingStatistics) {
      if (!wantedStatistics.has(name)) yield* sql.unsafe(`DROP STATISTICS IF EXISTS ${name}`)
    }
    const presentStatistics = new Set(existingStatistics.map((s) => s.name))
    const newStatistics = statistics.filter((s) => !presentStatistics.has(s.name))
    for (const s of newStatistics) yield* sql.unsafe(`CREATE STATISTICS IF NOT EXISTS ${s.name} ${s.definition}`)
    if (created.length > 0 || newStatistics.length > 0) yield* sql`ANALYZE records`
    return { created: created.map((index) => index.name), dropped: dropped.map((index) => index.name) }
  }).pipe(Effect.withSpan("PgAccessPaths.sync"))

/**
 * An access-path index of a partitioned partition (a stream by week) with rows, without
 * blocking its writers: the index on the partitioned table alone (`ON ONLY`, invalid until
 * complete), then each partition's own, built concurrently (or found: the layout before's
 * table keeps its index under the name `weekIndexName` gives it) and attached. Weeks made
 * later get it from the partitioned table.
 */
const createPartitionedIndex = (sql: SqlClient.SqlClient, index: AccessPathIndex, table: string) =>
  Effect.gen(function*() {
    yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${index.name} ${index.definition.replace(/^ON /, "ON ONLY ")}`)
    const leaves = yield* sql<{ readonly name: string; readonly attached: boolean }>`
      SELECT c.relname AS name, EXISTS (
        SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
        WHERE ii.inhparent = ${index.name}::regclass AND x.indrelid = c.oid
      ) AS attached
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = ${table}::regclass`
    for (const leaf of leaves) {
      if (leaf.attached) continue
      const name = weekIndexName(leaf.name, index.name)
      yield* sql.unsafe(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ${index.definition.replace(/^ON \S+/, `ON ${leaf.name}`)}`)
      yield* sql.unsafe(`ALTER INDEX ${index.name} ATTACH PARTITION ${name}`)
    }
  })

/** The partitions of `records`, as a subquery of their OIDs. */
const partitionsQuery = (sql: SqlClient.SqlClient) => sql`SELECT inhrelid FROM pg_inherits WHERE inhparent = 'records'::regclass`

/**
 * Give each type of `types` its partition of `records`. A type an older release kept in the
 * default partition has its rows (and their unique keys) moved into its new partition, in one
 * transaction: PostgreSQL refuses a partition for a value the default partition still holds;
 * the rows and their keys are deleted there and put back after the partition is made.
 * Run by one process at a time (`migrate` holds its advisory lock).
 */
export const syncRecordPartitions = (
  types: ReadonlyArray<string> = partitionedTypes()
): Effect.Effect<{ readonly created: ReadonlyArray<string> }, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const existing = new Set(
      (yield* sql<{ readonly name: string }>`SELECT c.relname AS name FROM pg_class c WHERE c.oid IN (${partitionsQuery(sql)})`)
        .map((row) => row.name)
    )
    const created: Array<string> = []
    const updatedInPlace = new Set(updatedInPlaceTypes())
    for (const type of types) {
      const partition = partitionOf(type)
      if (existing.has(partition)) continue
      yield* sql.withTransaction(Effect.gen(function*() {
        const [held] = yield* sql<{ readonly held: boolean }>`
          SELECT EXISTS (SELECT 1 FROM ${sql(defaultRecordPartition)} WHERE type = ${type}) AS held`
        if (held?.held) {
          yield* sql`CREATE TEMPORARY TABLE moving_records ON COMMIT DROP AS SELECT * FROM ${sql(defaultRecordPartition)} WHERE type = ${type}`
          yield* sql`CREATE TEMPORARY TABLE moving_keys ON COMMIT DROP AS SELECT * FROM record_keys WHERE type = ${type}`
          yield* sql`DELETE FROM ${sql(defaultRecordPartition)} WHERE type = ${type}`
          yield* sql`DELETE FROM record_keys WHERE type = ${type}`
        }
        const storage = updatedInPlace.has(type) ? ` WITH (fillfactor = ${updatedInPlaceFillFactor})` : ""
        yield* sql.unsafe(`CREATE TABLE ${partition} PARTITION OF records FOR VALUES IN ('${type}')${storage}`)
        if (held?.held) {
          yield* sql`INSERT INTO records SELECT * FROM moving_records`
          yield* sql`INSERT INTO record_keys SELECT * FROM moving_keys`
        }
      }))
      created.push(partition)
    }
    return { created }
  }).pipe(Effect.withSpan("PgAccessPaths.syncPartitions"))
