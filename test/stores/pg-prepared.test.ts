/**
 * Statements by key are prepared once per connection (packages/pg/src/pool.ts): the session
 * keeps them, and after a few calls PostgreSQL reuses one generic plan instead of planning each
 * call. Lists and reports, whose plan depends on their values, stay unnamed. Off with
 * `preparedStatements: false` (a pooler in transaction mode).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Records, type Tenant, UnitOfWork } from "@syllabus/core"
import { pgLayer, PREPARED } from "@syllabus/pg"
import { freshPgDatabase } from "../support/pg.js"

const tenant: Tenant = { accountId: "acc_prepared", environment: "production" }

interface Prepared {
  readonly statement: string
  readonly generic_plans: number | string
  readonly custom_plans: number | string
}

/** The stores, and `session`: a unit of work, whose statements (and the read of the prepared ones) share its connection. */
const onOneConnection = (preparedStatements: boolean) =>
  Effect.gen(function*() {
    const { url } = yield* freshPgDatabase
    const context = yield* Layer.build(pgLayer(url, { maxConnections: 2, background: false, preparedStatements }))
    const records = Context.get(context, Records)
    const sql = Context.get(context, SqlClient.SqlClient)
    const session = <A, E>(effect: Effect.Effect<A, E>) => Context.get(context, UnitOfWork).transaction(effect)
    return { records, sql, session }
  })

describe("statements by key, prepared once per connection [postgresql]", () => {
  it.live("a read by key is prepared and planned once for many calls; a list is not prepared", () =>
    Effect.gen(function*() {
      const { records, sql, session } = yield* onOneConnection(true)
      const statements = yield* session(Effect.gen(function*() {
        // Ten records, each read once: a unit of work does not ask twice for a record it read (`UnitState.reads`).
        for (let i = 0; i < 10; i++) yield* records.insert(tenant, "product", `prd_00000000${i}`, { name: `Product ${i}` })
        for (let i = 0; i < 10; i++) expect((yield* records.get(tenant, "product", `prd_00000000${i}`))?.data).toEqual({ name: `Product ${i}` })
        yield* records.list(tenant, "product", { where: [], sort: { field: "id", kind: "text", direction: "asc" }, limit: 10 })
        return yield* sql<Prepared>`SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`
      }))
      const byKey = statements.filter((s) => s.statement.startsWith(PREPARED) && s.statement.includes("SELECT") && !s.statement.includes("INSERT"))
      expect(byKey).toHaveLength(1)
      // Five custom plans, then the generic one for every later call.
      expect(Number(byKey[0]!.generic_plans)).toBeGreaterThanOrEqual(5)
      expect(statements.some((s) => s.statement.includes("INSERT INTO records"))).toBe(true)
      expect(statements.filter((s) => !s.statement.startsWith(PREPARED))).toEqual([])
      expect(statements.some((s) => s.statement.includes("LIMIT"))).toBe(false)
    }).pipe(Effect.scoped), 30_000)

  it.live("with preparedStatements: false, nothing is prepared", () =>
    Effect.gen(function*() {
      const { records, sql, session } = yield* onOneConnection(false)
      const statements = yield* session(Effect.gen(function*() {
        yield* records.insert(tenant, "product", "prd_000000001", { name: "One" })
        for (let i = 0; i < 3; i++) yield* records.get(tenant, "product", "prd_000000001")
        return yield* sql<Prepared>`SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`
      }))
      expect(statements).toEqual([])
    }).pipe(Effect.scoped), 30_000)
})
