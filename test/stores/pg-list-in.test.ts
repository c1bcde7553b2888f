/**
 * A list filtered by an `in` of several values on a field an access path holds as an equality
 * column (`GET /enrollments?product_id[]=a&product_id[]=b&status=active`) reads one ordered page
 * per value on PostgreSQL (`pagedIn` in packages/pg/src/access-paths.ts, `list` in records.ts):
 * each value an index scan of the path that stops at its page, the pages merged. `= ANY(…)` on
 * that column would read every matching row and sort them (docs/benchmarks.md, "Learning at
 * scale"). On thousands of rows per tenant, seeded in SQL and analyzed, `EXPLAIN` of the very
 * statement `Records.list` runs must scan the path's index once per value (and per range of a
 * keyset position: the values are joined LATERAL to the page, so the plan holds one scan per
 * range, run once per value), each scan under its page's `LIMIT` with no sort between, where the first
 * page written with `= ANY` (as the store wrote it before) reads every matching row and sorts
 * them (the data is such that the planner does). The pages are those of the list as the memory
 * store computes it (`reference`), page after page in both directions.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Statement } from "@effect/sql/Statement"
import { type AccessPath, type Json, type JsonObject, type ListQuery, listPath, type SortSpec, type StoredRecord, type Tenant, Records } from "@syllabus/core"
import { Context, Effect, Layer } from "effect"
import { accessPathIndexes, listStatement, pgLayer } from "../../packages/pg/src/index.js"
import { orderExpr } from "../../packages/pg/src/expressions.js"
import { makeRecordStatements } from "../../packages/pg/src/records.js"
import { freshPgDatabase } from "../support/pg.js"
import { reference } from "./list-reference.js"

class TestDatabase extends Context.Tag("test/TestDatabase")<TestDatabase, { readonly url: string }>() {}

// Loading and analyzing takes seconds on a busy machine: this test checks plans, not deadlines.
const LOADING_TIMEOUTS = { statementMs: 60_000, queryMs: 90_000 }
const DatabaseLive = Layer.scoped(TestDatabase, freshPgDatabase)
const StoresLive = Layer.unwrapEffect(Effect.map(TestDatabase, ({ url }) => pgLayer(url, { timeouts: LOADING_TIMEOUTS }))).pipe(
  Layer.provideMerge(DatabaseLive)
)

const tenant: Tenant = { accountId: "acc_in", environment: "production" }
const other: Tenant = { accountId: "acc_other", environment: "production" }

/** 100 products of 200 rows each: two products are 1% of a type, over the page of 51. */
const ROWS = 20_000
const PRODUCTS = 100
const product = (n: number) => `prd_${String(n).padStart(3, "0")}`

const load = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const [t, rows] of [[tenant, ROWS], [other, ROWS / 4]] as const) {
    // Enrollments: one in 19 canceled.
    yield* sql`
      INSERT INTO records (account_id, environment, type, id, revision, data)
      SELECT ${t.accountId}, ${t.environment}, 'enrollment', 'enr_' || lpad(i::text, 8, '0'), 1,
        jsonb_build_object('object', 'enrollment', 'deleted', false,
          'product_id', 'prd_' || lpad((i % ${PRODUCTS})::text, 3, '0'),
          'status', CASE WHEN i % 19 = 0 THEN 'canceled' ELSE 'active' END, 'user_id', 'usr_' || i)
      FROM generate_series(1, ${rows}) AS i`
    // Modules: one in 10 in the trash, one name in 7 null (nulls first ascending, last descending).
    yield* sql`
      INSERT INTO records (account_id, environment, type, id, revision, data)
      SELECT ${t.accountId}, ${t.environment}, 'module', 'mod_' || lpad(i::text, 8, '0'), 1,
        jsonb_build_object('object', 'module', 'deleted', i % 10 = 0,
          'product_id', 'prd_' || lpad((i % ${PRODUCTS})::text, 3, '0'),
          'name', CASE WHEN i % 7 = 0 THEN NULL ELSE md5(i::text) END, 'position', i)
      FROM generate_series(1, ${rows}) AS i`
  }
  yield* sql`ANALYZE records`
})

// ---------------------------------------------------------------------------------------
// Plans

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Actual Loops"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** Each node with the nearest `Limit` or `Sort` above it (what bounds or reorders its rows). */
const walk = (node: PlanNode, above: string | undefined = undefined): ReadonlyArray<{ readonly node: PlanNode; readonly above: string | undefined }> => {
  const type = node["Node Type"]
  const next = type === "Limit" || type === "Sort" || type === "Incremental Sort" ? type : above
  return [{ node, above }, ...(node.Plans ?? []).flatMap((child) => walk(child, next))]
}

/** The plan of `statement`, run (`ANALYZE`: each node's loops). */
const planOf = (statement: Statement<unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PlanNode }> }>`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`
    const plan = rows[0]!["QUERY PLAN"][0]!.Plan
    const nodes = walk(plan)
    // The reads of `records`: its scans, and the index scans under a bitmap scan of it.
    const scans = nodes.filter(({ node }) => node["Relation Name"] === "records" || node["Index Name"] !== undefined)
    return {
      text: JSON.stringify(plan),
      seqScans: scans.filter(({ node }) => node["Node Type"] === "Seq Scan").length,
      /** The loops of each scan of `index`: one per value, when the values are joined to the page. */
      loopsOf: (index: string) => scans.filter(({ node }) => node["Index Name"] === index).map(({ node }) => node["Actual Loops"]),
      /** Reads whose rows are sorted before any `LIMIT`: every matching row read, then sorted. */
      sortedReads: scans.filter(({ above }) => above !== "Limit").length
    }
  })

const indexOf = (path: AccessPath): string => accessPathIndexes([path])[0]!.name

/** The same list with the `in` as one `= ANY(…)`: what the store wrote before, for comparison. */
const anyStatement = (type: string, query: ListQuery) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { columns, filter } = makeRecordStatements(sql)
    const value = sql.literal(orderExpr(query.sort.field, query.sort.kind))
    const order = query.sort.field === "id"
      ? sql.literal(query.sort.direction === "asc" ? "id ASC" : "id DESC")
      : query.sort.direction === "asc"
      ? sql`${value} ASC NULLS FIRST, id ASC`
      : sql`${value} DESC NULLS LAST, id DESC`
    return sql`SELECT ${columns} FROM records WHERE ${filter(tenant, type, query.where)} ORDER BY ${order} LIMIT ${query.limit}`
  })

/** Every record of the tenant's `type`, for the reference list. */
const everything = (type: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ readonly id: string; readonly data: JsonObject }>`
      SELECT id, data FROM records WHERE account_id = ${tenant.accountId} AND environment = ${tenant.environment} AND type = ${type}`
    return rows.map((row): StoredRecord => ({ type, id: row.id, tenant, revision: 1, data: row.data }))
  })

const positionOf = (record: StoredRecord, sort: SortSpec): NonNullable<ListQuery["after"]> => {
  if (sort.field === "id") return { value: record.id, id: record.id }
  const value: Json | undefined = record.data[sort.field]
  return { value: typeof value === "string" || typeof value === "number" ? value : null, id: record.id }
}

interface Case {
  readonly name: string
  readonly type: string
  readonly query: ListQuery
  /** The path whose index serves each value's page. */
  readonly path: AccessPath
  /** Pages per value: the ranges of the keyset position (`afterRanges` in records.ts). */
  readonly ranges: number
  /**
   * Whether the planner sorts the rows of the `= ANY` read (its first page). With three products
   * (3% of the rows) it walks the `status` index in order instead, filtering the products.
   */
  readonly anySorts: boolean
}

const enrollmentsByProduct = listPath("enrollment", ["deleted", "product_id"], [{ field: "id", kind: "text" }])
const modulesByName = listPath("module", ["product_id", "deleted"], [{ field: "name", kind: "text" }, { field: "id", kind: "text" }])
const active = { field: "status", op: "eq", value: "active" } as const
const live = { field: "deleted", op: "eq", value: false } as const
const newestFirst: SortSpec = { field: "id", kind: "text", direction: "desc" }
const byName: SortSpec = { field: "name", kind: "text", direction: "asc" }

const cases: ReadonlyArray<Case> = [
  {
    name: "GET /enrollments?product_id[]=a&product_id[]=b&status=active: newest first",
    type: "enrollment",
    query: { where: [live, { field: "product_id", op: "in", values: [product(3), product(7)] }, active], sort: newestFirst, limit: 51 },
    path: enrollmentsByProduct,
    ranges: 1,
    // Two products of a hundred: with the statistics of the type's own partition, the planner
    // walks the `status` index in order for the `= ANY` read too, as for three.
    anySorts: false
  },
  {
    name: "three products, oldest first, after a position",
    type: "enrollment",
    query: {
      where: [live, { field: "product_id", op: "in", values: [product(3), product(7), product(11)] }, active],
      sort: { ...newestFirst, direction: "asc" },
      after: { value: null, id: "enr_00005000" },
      limit: 51
    },
    path: enrollmentsByProduct,
    ranges: 1,
    anySorts: false
  },
  {
    name: "the most values read one page each (100 products), newest first",
    type: "enrollment",
    query: {
      where: [live, { field: "product_id", op: "in", values: Array.from({ length: PRODUCTS }, (_, i) => product(i)) }, active],
      sort: newestFirst,
      limit: 51
    },
    path: enrollmentsByProduct,
    ranges: 1,
    anySorts: false
  },
  {
    name: "modules of two products by name, after a null name (the nulls after it, then every name)",
    type: "module",
    query: {
      where: [{ field: "product_id", op: "in", values: [product(3), product(7)] }, live],
      sort: byName,
      after: { value: null, id: "mod_00010000" },
      limit: 51
    },
    path: modulesByName,
    ranges: 2,
    anySorts: true
  },
  {
    name: "modules of two products by name descending, after a name (the names before it, then the nulls)",
    type: "module",
    query: {
      where: [{ field: "product_id", op: "in", values: [product(3), product(7)] }, live],
      sort: { ...byName, direction: "desc" },
      after: { value: "8", id: "mod_00010000" },
      limit: 51
    },
    path: modulesByName,
    ranges: 2,
    anySorts: true
  }
]

layer(StoresLive, { excludeTestServices: true, timeout: "180 seconds" })("PostgreSQL: an `in` of several values", (it) => {
  describe("one ordered page per value, merged", () => {
    it.effect("rows of two types in two tenants, analyzed", () => load, 180_000)

    for (const c of cases) {
      it.effect(`${c.name}: the path's index once per value (and range), each page limited, nothing sorted below it`, () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const plan = yield* planOf(yield* listStatement(sql, tenant, c.type, c.query))
          const values = c.query.where.find((w) => w.op === "in")!
          const label = plan.text
          expect(plan.seqScans, label).toBe(0)
          // One scan of the path's index per range of the position, run once per value.
          const count = values.op === "in" ? values.values.length : 0
          expect(plan.loopsOf(indexOf(c.path)), label).toEqual(Array.from({ length: c.ranges }, () => count))
          expect(plan.sortedReads, label).toBe(0)
          // The planner would sort every matching row of the `= ANY` read.
          if (c.anySorts) {
            const before = yield* planOf(yield* anyStatement(c.type, c.query))
            expect(before.sortedReads, before.text).toBeGreaterThan(0)
          }
        }), 120_000)
    }

    it.effect("the pages are those of the list, paged both ways, nulls and ties by id", () =>
      Effect.gen(function*() {
        const records = yield* Records
        for (const c of cases) {
          const all = yield* everything(c.type)
          for (const direction of ["asc", "desc"] as const) {
            const sort: SortSpec = { ...c.query.sort, direction }
            let after: ListQuery["after"] = undefined
            for (let page = 0; page < 6; page++) {
              const query: ListQuery = { ...c.query, sort, after }
              const got = (yield* records.list(tenant, c.type, query)).map((r) => r.id)
              expect(got, `${c.name} ${direction} page ${page}`).toEqual(reference(all, query).map((r) => r.id))
              expect(got.length).toBe(c.query.limit)
              after = positionOf(all.find((r) => r.id === got[got.length - 1])!, sort)
            }
          }
        }
      }), 180_000)
  })
})
