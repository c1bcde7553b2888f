/**
 * Access paths are indexes (docs/architecture.md): every access path of the release
 * (`accessPaths` of `@syllabus/core`: the lists the resource descriptions declare, and the
 * housekeeping reads) is a partial index of `records` on the type, over the expressions the
 * statements use (`expressions.ts`).
 *
 * - `ordered`: a btree on `(account_id, environment, <equals…>, <order…>)` for a tenant's
 *   lists (`<order…>` ends with `id`, the keyset tie-break), on `(<equals…>, <order…>)` for
 *   housekeeping across tenants;
 * - `search`: a GIN on `(account_id, environment, lower(<field>) gin_trgm_ops)` (`btree_gin`
 *   for the tenant columns), which answers `contains`.
 *
 * Beside the indexes, statistics: PostgreSQL ignores the expression statistics of partial
 * indexes, and without any it guesses 0.5% for `(data -> 'deleted') = false` or a search, and
 * a plan built on such guesses walks a whole tenant. So each expression of a path has its
 * extended statistics (`CREATE STATISTICS … ON (<expr>)`), and the tenant columns with the
 * type theirs (a tenant's share of a type is not the product of the two shares).
 *
 * The indexes carry a reserved prefix and a hash of their definition in their name:
 * `syncAccessPathIndexes` (run by `migrate`, under its lock) creates those missing and drops
 * those of the prefix that no path asks for any more. So a description and its indexes never
 * drift: adding a filter, a sort or a resource adds its index at the next start.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { type AccessPath, accessPaths, type SortSpec, type Where } from "@syllabus/core"
import { Effect } from "effect"
import { jsonExpr, orderExpr, searchExpr, typeCondition } from "./expressions.js"

/** The names of the indexes this module owns; no other index of `records` may start with it. */
export const accessPathIndexPrefix = "records_ap_"

export interface AccessPathIndex {
  /** `records_ap_<type>_<hash of the definition>`, at most 63 characters. */
  readonly name: string
  /** What follows `CREATE INDEX <name>`: `ON records … WHERE type = '<type>'`. */
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

const definitionOf = (path: AccessPath): string => {
  const tenant = path.scope === "tenant" ? ["account_id", "environment"] : []
  if (path.kind === "search") {
    return `ON records USING gin (${[...tenant, `(${searchExpr(path.field)}) gin_trgm_ops`].join(", ")}) WHERE ${
      typeCondition(path.type)
    }`
  }
  const columns = [
    ...tenant,
    ...path.equals.map((field) => `(${jsonExpr(field)})`),
    // NULLS FIRST: the order of `Records.list` ascending (and, read backwards, descending).
    ...path.order.map(({ field, kind }) => field === "id" ? "id" : `${orderExpr(field, kind)} NULLS FIRST`)
  ]
  return `ON records (${columns.join(", ")}) WHERE ${typeCondition(path.type)}`
}

const expressionsOf = (path: AccessPath): ReadonlyArray<string> =>
  path.kind === "search"
    ? [searchExpr(path.field)]
    : [
      ...path.equals.map(jsonExpr),
      ...path.order.flatMap(({ field, kind }) => field === "id" ? [] : [orderExpr(field, kind)])
    ]

/** The statistics objects of `paths`: one per distinct expression, and the tenant with the type. */
export const accessPathStatistics = (paths: ReadonlyArray<AccessPath> = accessPaths()): ReadonlyArray<AccessPathIndex> => {
  const byName = new Map<string, AccessPathIndex>()
  const add = (definition: string) => {
    const name = `${accessPathStatisticsPrefix}${hash(definition)}`
    byName.set(name, { name, definition })
  }
  add("(mcv, dependencies) ON account_id, environment, type FROM records")
  for (const path of paths) for (const expression of expressionsOf(path)) add(`ON (${expression}) FROM records`)
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
    const existing = yield* sql<{ readonly name: string; readonly valid: boolean }>`
      SELECT c.relname AS name, i.indisvalid AS valid
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = 'records'::regclass AND starts_with(c.relname, ${accessPathIndexPrefix})`
    const wanted = new Set(indexes.map((index) => index.name))
    const empty = (yield* sql<{ readonly empty: boolean }>`SELECT NOT EXISTS (SELECT 1 FROM records) AS empty`)[0]?.empty ?? false
    const concurrently = empty ? "" : " CONCURRENTLY"
    const dropped = existing.filter((index) => !wanted.has(index.name) || !index.valid).map((index) => index.name)
    for (const name of dropped) yield* sql.unsafe(`DROP INDEX${concurrently} IF EXISTS ${name}`)
    const present = new Set(existing.filter((index) => !dropped.includes(index.name)).map((index) => index.name))
    const created = indexes.filter((index) => !present.has(index.name))
    for (const index of created) {
      yield* sql.unsafe(`CREATE INDEX${concurrently} IF NOT EXISTS ${index.name} ${index.definition}`)
    }
    const existingStatistics = yield* sql<{ readonly name: string }>`
      SELECT stxname AS name FROM pg_statistic_ext
      WHERE stxrelid = 'records'::regclass AND starts_with(stxname, ${accessPathStatisticsPrefix})`
    const wantedStatistics = new Set(statistics.map((s) => s.name))
    for (const { name } of existingStatistics) {
      if (!wantedStatistics.has(name)) yield* sql.unsafe(`DROP STATISTICS IF EXISTS ${name}`)
    }
    const presentStatistics = new Set(existingStatistics.map((s) => s.name))
    const newStatistics = statistics.filter((s) => !presentStatistics.has(s.name))
    for (const s of newStatistics) yield* sql.unsafe(`CREATE STATISTICS IF NOT EXISTS ${s.name} ${s.definition}`)
    if (created.length > 0 || newStatistics.length > 0) yield* sql`ANALYZE records`
    return { created: created.map((index) => index.name), dropped }
  }).pipe(Effect.withSpan("PgAccessPaths.sync"))
