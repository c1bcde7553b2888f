/**
 * `Records.aggregate` on PostgreSQL reads through the declared indexes: for each aggregate the
 * reports run (`@syllabus/core` reports/reports.ts), `EXPLAIN` of the very statement the store
 * runs (`aggregateStatement`) must not scan `records` and must use the index of the path the
 * reports declare (`reportsAccessPaths`), on a tenant of thousands of records among others.
 * The products and lessons reports read the figures kept for them (`reports/figures.ts`).
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { type AccessPath, type AggregateQuery, ENROLLMENT_FIGURES, LESSON_PROGRESS_FIGURES, listPath, Records, reportsAccessPaths, type Tenant } from "@syllabus/core"
import { Context, Effect, Layer } from "effect"
import { aggregateStatement, pgLayer } from "../../packages/pg/src/index.js"
import { freshPgDatabase } from "../support/pg.js"
import { indexOf, planOf } from "../support/pg-plans.js"

class TestDatabase extends Context.Tag("test/TestDatabase")<TestDatabase, { readonly url: string }>() {}

// Loading and analyzing every type's rows takes seconds on a busy machine: this test checks
// plans, not the API's deadlines (pg-deadlines.test.ts does), so its statements get a minute.
const LOADING_TIMEOUTS = { statementMs: 60_000, queryMs: 90_000 }
const DatabaseLive = Layer.scoped(TestDatabase, freshPgDatabase)
const StoresLive = Layer.unwrapEffect(Effect.map(TestDatabase, ({ url }) => pgLayer(url, { timeouts: LOADING_TIMEOUTS }))).pipe(Layer.provideMerge(DatabaseLive))

const tenant: Tenant = { accountId: "acc_reports", environment: "production" }
const others: ReadonlyArray<Tenant> = [
  { accountId: "acc_reports", environment: "sandbox" },
  { accountId: "acc_other", environment: "production" }
]

const ROWS = 4_000
const PRODUCTS = 200
const pad = (n: number) => String(n).padStart(9, "0")

/** Rows of each type the reports aggregate, spread over many products, exams and days. */
const rowOf = (type: string, i: number): Record<string, string | number | boolean | null> => {
  const product = `prd_${pad(i % PRODUCTS)}`
  switch (type) {
    case "point_entry":
      return { user_id: `usr_${pad(i % 500)}`, product_id: product, points: 10 }
    case "enrollment":
      return { user_id: `usr_${pad(i)}`, product_id: product, status: i % 3 === 0 ? "canceled" : "active", progress_percent: i % 101, completed_at: null }
    case "lesson_progress":
      return { enrollment_id: `enr_${pad(i)}`, lesson_id: `les_${pad(i % PRODUCTS)}`, status: i % 2 === 0 ? "completed" : "in_progress", percent: i % 2 === 0 ? 100 : i % 100 }
    case "exam_attempt":
      return { exam_id: `exm_${pad(i % PRODUCTS)}`, product_id: product, grade: i % 101, passed: i % 2 === 0, deleted: false }
    default:
      return { user_id: `usr_${pad(i)}`, product_id: product, issued_at: new Date(Date.UTC(2025, 0, 1) + i * 3_600_000).toISOString() }
  }
}

// Enrollments and progress keep their figures as they are written (the store's `keepingFigures`).
const types = ["point_entry", "enrollment", "lesson_progress", "exam_attempt", "certificate"] as const


const declared = (path: AccessPath): AccessPath => {
  const key = JSON.stringify(path)
  const found = reportsAccessPaths.find((p) => JSON.stringify(p) === key)
  if (found === undefined) throw new Error(`not a path of the reports: ${key}`)
  return found
}

const cases: ReadonlyArray<{
  readonly name: string
  readonly type: string
  readonly query: AggregateQuery
  readonly path: AccessPath
  readonly alsoServedBy?: AccessPath
}> = [
  {
    name: "rankings by products: the ledger of some products, summed per learner, a page by the sum",
    type: "point_entry",
    query: {
      where: [{ field: "product_id", op: "in", values: [`prd_${pad(3)}`, `prd_${pad(7)}`] }],
      groupBy: ["user_id"],
      measures: [{ kind: "sum", field: "points" }],
      order: { measure: 0, direction: "desc" },
      after: { value: 50, key: [`usr_${pad(100)}`] },
      limit: 51
    },
    path: declared(listPath("point_entry", ["product_id"], [{ field: "user_id", kind: "text" }]))
  },
  {
    name: "products: the figures kept for the enrollments of a page of products, summed over their shards",
    type: ENROLLMENT_FIGURES.type,
    query: {
      where: [{ field: "product_id", op: "in", values: [`prd_${pad(1)}`, `prd_${pad(2)}`] }],
      groupBy: ["product_id"],
      measures: Object.keys(ENROLLMENT_FIGURES.measures).map((field) => ({ kind: "sum", field }) as const)
    },
    path: declared(listPath(ENROLLMENT_FIGURES.type, ["product_id"], [{ field: "id", kind: "text" }]))
  },
  {
    name: "lessons: the figures kept for the progress of a page of lessons, summed over their shards",
    type: LESSON_PROGRESS_FIGURES.type,
    query: {
      where: [{ field: "lesson_id", op: "in", values: [`les_${pad(1)}`, `les_${pad(2)}`, `les_${pad(3)}`] }],
      groupBy: ["lesson_id"],
      measures: Object.keys(LESSON_PROGRESS_FIGURES.measures).map((field) => ({ kind: "sum", field }) as const)
    },
    path: declared(listPath(LESSON_PROGRESS_FIGURES.type, ["lesson_id"], [{ field: "id", kind: "text" }]))
  },
  {
    name: "exams: the attempts of a page of exams",
    type: "exam_attempt",
    query: {
      where: [{ field: "exam_id", op: "in", values: [`exm_${pad(5)}`] }],
      groupBy: ["exam_id"],
      measures: [{ kind: "count" }, { kind: "count", filter: [{ field: "passed", op: "eq", value: true }] }, { kind: "avg", field: "grade" }]
    },
    // The attempts' own path (their list under an exam) serves it, or their list by exam and
    // user, which leads with the exam as well.
    path: listPath("exam_attempt", ["exam_id", "deleted"], [{ field: "id", kind: "text" }]),
    alsoServedBy: listPath("exam_attempt", ["exam_id", "deleted", "user_id"], [{ field: "id", kind: "text" }])
  },
  {
    name: "certificates: those issued in a range, per product",
    type: "certificate",
    query: {
      where: [
        { field: "issued_at", op: "gte", value: "2025-01-02T00:00:00.000Z" },
        { field: "issued_at", op: "lt", value: "2025-01-03T00:00:00.000Z" }
      ],
      groupBy: ["product_id"],
      measures: [{ kind: "count" }],
      limit: 51
    },
    path: declared(listPath("certificate", [], [{ field: "issued_at", kind: "text" }]))
  }
]

layer(StoresLive, { excludeTestServices: true, timeout: "120 seconds" })("pg aggregates", (it) => {
  describe("Records.aggregate reads through the reports' indexes", () => {
    it.effect("seed", () =>
      Effect.gen(function*() {
        const records = yield* Records
        const sql = yield* SqlClient.SqlClient
        for (const type of types) {
          for (const t of [tenant, ...others]) {
            const rows = Array.from({ length: t === tenant ? ROWS : ROWS / 4 }, (_, i) => ({ id: `${type}_${pad(i)}`, data: rowOf(type, i) }))
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
          const serving = [c.path, ...(c.alsoServedBy ? [c.alsoServedBy] : [])].map(indexOf)
          expect(plan.indexes.some((name) => serving.includes(name)), plan.text).toBe(true)
          // And it answers: the figures of the tenant only.
          const records = yield* Records
          const rows = yield* records.aggregate(tenant, c.type, c.query)
          expect(rows.length).toBeGreaterThan(0)
        }))
    }
  })
})
