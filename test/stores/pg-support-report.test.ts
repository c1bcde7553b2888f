/**
 * The aggregates of `GET /reports/support` (`@syllabus/core` reports/support-report.ts) read
 * through indexes on PostgreSQL: `EXPLAIN` of the very statements the store runs
 * (`aggregateStatement`) must not scan `records` and must use the index of the path that
 * serves them (the tickets' own list path, the replies' path the report declares), on a tenant
 * of thousands of tickets and messages among others. docs/reports.md, "Support".
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { type AccessPath, type AggregateQuery, Records, supportReportAccessPaths, type Tenant } from "@syllabus/core"
import { Context, Effect, Layer } from "effect"
import { aggregateStatement, pgLayer } from "../../packages/pg/src/index.js"
import { freshPgDatabase } from "../support/pg.js"
import { indexOf, planOf } from "../support/pg-plans.js"

class TestDatabase extends Context.Tag("test/SupportReportDatabase")<TestDatabase, { readonly url: string }>() {}

const LOADING_TIMEOUTS = { statementMs: 60_000, queryMs: 90_000 }
const DatabaseLive = Layer.scoped(TestDatabase, freshPgDatabase)
const StoresLive = Layer.unwrapEffect(Effect.map(TestDatabase, ({ url }) => pgLayer(url, { timeouts: LOADING_TIMEOUTS }))).pipe(Layer.provideMerge(DatabaseLive))

const tenant: Tenant = { accountId: "acc_support", environment: "production" }
// Other tenants hold most of the tickets, as on a shared database: a read must select the tenant by index.
const others: ReadonlyArray<Tenant> = [
  { accountId: "acc_support", environment: "sandbox" },
  { accountId: "acc_other", environment: "production" },
  { accountId: "acc_third", environment: "production" },
  { accountId: "acc_fourth", environment: "production" }
]

const ROWS = 4_000
const DEPARTMENTS = 20
const pad = (n: number) => String(n).padStart(9, "0")
const day = (i: number) => new Date(Date.UTC(2025, 0, 1) + i * 600_000).toISOString()
const statuses = ["open", "pending", "solved", "closed"] as const

const rowOf = (type: "ticket" | "ticket_message", i: number): Record<string, string | number | boolean | null> =>
  type === "ticket"
    ? {
        department_id: i % 5 === 0 ? null : `dpt_${pad(i % DEPARTMENTS)}`,
        status: statuses[i % 4]!,
        created_at: day(i),
        solved_at: i % 4 >= 2 ? day(i + 10) : null,
        first_reply_seconds: i % 3 === 0 ? null : i % 7200,
        deleted: i % 50 === 0
      }
    : { ticket_id: `tkt_${pad(i % 1000)}`, department_id: i % 5 === 0 ? null : `dpt_${pad(i % DEPARTMENTS)}`, opening: i % 4 === 0, created_at: day(i) }


const period: ReadonlyArray<{ readonly field: string; readonly op: "gte" | "lt"; readonly value: string }> = [
  { field: "created_at", op: "gte", value: day(100) },
  { field: "created_at", op: "lt", value: day(900) }
]

const cases: ReadonlyArray<{ readonly name: string; readonly type: string; readonly query: AggregateQuery; readonly path: AccessPath }> = [
  {
    name: "the tickets per department: counts by status, in the period, the average first reply; a page of groups",
    type: "ticket",
    query: {
      where: [{ field: "deleted", op: "eq", value: false }],
      groupBy: ["department_id"],
      measures: [
        { kind: "count", filter: [{ field: "status", op: "eq", value: "open" }] },
        { kind: "count", filter: period },
        { kind: "count", filter: [{ field: "solved_at", op: "gte", value: day(100) }] },
        { kind: "avg", field: "first_reply_seconds", filter: period }
      ],
      after: { value: 0, key: [`dpt_${pad(3)}`] },
      limit: 51
    },
    path: supportReportAccessPaths[0]!
  },
  {
    name: "the replies of a page's departments in the period",
    type: "ticket_message",
    query: {
      where: [
        { field: "department_id", op: "in", values: [`dpt_${pad(1)}`, `dpt_${pad(2)}`] },
        { field: "opening", op: "eq", value: false },
        ...period
      ],
      groupBy: ["department_id"],
      measures: [{ kind: "count" }]
    },
    path: supportReportAccessPaths[1]!
  },
  {
    name: "the replies of the tickets routed to no department in the period",
    type: "ticket_message",
    query: {
      where: [{ field: "department_id", op: "eq", value: null }, { field: "opening", op: "eq", value: false }, ...period],
      groupBy: [],
      measures: [{ kind: "count" }]
    },
    path: supportReportAccessPaths[1]!
  }
]

layer(StoresLive, { excludeTestServices: true, timeout: "120 seconds" })("pg support report", (it) => {
  describe("the support report's aggregates read through indexes", () => {
    it.effect("seed", () =>
      Effect.gen(function*() {
        const records = yield* Records
        const sql = yield* SqlClient.SqlClient
        for (const type of ["ticket", "ticket_message"] as const) {
          for (const t of [tenant, ...others]) {
            const prefix = type === "ticket" ? "tkt" : "tkm"
            const rows = Array.from({ length: ROWS }, (_, i) => ({ id: `${prefix}_${pad(i)}`, data: rowOf(type, i) }))
            yield* records.insertMany(t, type, rows)
          }
        }
        yield* sql`ANALYZE records`
      }), 180_000)

    for (const c of cases) {
      it.effect(c.name, () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const plan = yield* planOf(yield* aggregateStatement(sql, tenant, c.type, c.query))
          expect(plan.seqScans).toBe(0)
          expect(plan.indexes).toContain(indexOf(c.path))
          const records = yield* Records
          const rows = yield* records.aggregate(tenant, c.type, c.query)
          expect(rows.length).toBeGreaterThan(0)
        }))
    }
  })
})
