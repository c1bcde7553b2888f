/**
 * The deadlines of the PostgreSQL pool (docs/reliability.md, "Fail closed on a stalled
 * database"): the session parameters reach the server, a statement past them fails, and a unit
 * of work whose statement is given up on the client side (a server that does not answer) is
 * rolled back with its connection closed, never handed to the next unit of work mid-transaction.
 * A server that does not answer is played by `pg_sleep` past the client-side `queryMs`; the
 * frozen server itself is in test/chaos.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Fiber, Layer, Option } from "effect"
import { BackgroundStore, Records, type Tenant, UnitOfWork } from "@syllabus/core"
import { pgLayer, type PgTimeouts, withDeadlines } from "@syllabus/pg"
import { freshPgDatabase } from "../support/pg.js"

const tenant: Tenant = { accountId: "acc_deadlines", environment: "production" }

/** The stores on a fresh database, with these deadlines, on a small pool (whose idle connection is the one reused). */
const stores = (timeouts: Partial<PgTimeouts>) =>
  Effect.flatMap(freshPgDatabase, ({ url }) =>
    Layer.build(pgLayer(url, { maxConnections: 2, timeouts }))
  )

const backendPid = Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ readonly pid: number }>`SELECT pg_backend_pid() AS pid`).pipe(
  Effect.map((rows) => rows[0]!.pid)
)

describe("withDeadlines", () => {
  it("adds the defaults, keeps what the URL names, lets the options win, leaves out what is off", () => {
    const url = new URL(withDeadlines("postgres://u@h:5432/db"))
    expect(Object.fromEntries(url.searchParams)).toEqual({
      statement_timeout: "5000",
      lock_timeout: "2000",
      idle_in_transaction_session_timeout: "10000",
      query_timeout: "7000"
    })
    const named = new URL(withDeadlines("postgres://u@h/db?statement_timeout=100&query_timeout=0&sslmode=require", { lockMs: 0 }))
    expect(Object.fromEntries(named.searchParams)).toEqual({
      statement_timeout: "100",
      sslmode: "require",
      idle_in_transaction_session_timeout: "10000"
    })
    expect(new URL(withDeadlines("postgres://u@h/db?statement_timeout=100", { statementMs: 250 })).searchParams.get("statement_timeout")).toBe("250")
    expect(withDeadlines("not a url")).toBe("not a url")
  })
})

describe("the pool's deadlines [postgresql]", () => {
  it.live("reach every session, and a statement past statement_timeout fails at once", () =>
    Effect.gen(function*() {
      const context = yield* stores({ statementMs: 300, lockMs: 200, idleInTransactionMs: 4_000, queryMs: 5_000 })
      const sql = Context.get(context, SqlClient.SqlClient)
      const show = (name: string) => Effect.map(sql.unsafe<Record<string, string>>(`SHOW ${name}`), (rows) => Object.values(rows[0]!)[0])
      expect(yield* show("statement_timeout")).toBe("300ms")
      expect(yield* show("lock_timeout")).toBe("200ms")
      expect(yield* show("idle_in_transaction_session_timeout")).toBe("4s")
      const started = Date.now()
      const slow = yield* Effect.exit(sql`SELECT pg_sleep(3)`)
      expect(Exit.isFailure(slow)).toBe(true)
      expect(Date.now() - started).toBeLessThan(2_500)
    }).pipe(Effect.scoped), 30_000)

  it.live("a unit of work given up on is rolled back and its connection closed, never reused mid-transaction", () =>
    Effect.gen(function*() {
      const context = yield* stores({ statementMs: 0, queryMs: 300 })
      const provide = Effect.provide(context)
      const uow = Context.get(context, UnitOfWork)
      const records = Context.get(context, Records)

      // The statement after the insert is not answered within queryMs: the unit fails on the client side.
      const started = Date.now()
      const stalled = yield* Effect.exit(
        uow.transaction(
          Effect.zipRight(records.insert(tenant, "item", "given_up", { n: 1 }), Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_sleep(1)`))
        ).pipe(provide)
      )
      expect(Exit.isFailure(stalled)).toBe(true)
      expect(Exit.isFailure(stalled) && JSON.stringify(stalled.cause)).toContain("StoreUnavailable")
      expect(Date.now() - started).toBeLessThan(2_500)

      // Once the server has answered the abandoned statement, a connection handed on mid-transaction
      // would be idle in it, and the next unit's COMMIT would commit the first one's insert too.
      yield* Effect.sleep(1_500)
      yield* uow.transaction(records.insert(tenant, "item", "next", { n: 2 })).pipe(provide)
      expect(yield* records.get(tenant, "item", "next")).toBeDefined()
      expect(yield* records.get(tenant, "item", "given_up")).toBeUndefined()
      const sql = Context.get(context, SqlClient.SqlClient)
      const open = yield* sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND state LIKE 'idle in transaction%'`
      expect(open[0]!.n).toBe(0)
    }).pipe(Effect.scoped), 30_000)

  it.live("a statement given up on outside a unit of work closes its connection: the next one does not wait behind it", () =>
    Effect.gen(function*() {
      // Two connections: one for the unit of work that holds a row lock, one for the rest.
      const context = yield* stores({ statementMs: 0, lockMs: 0, queryMs: 300 })
      const provide = Effect.provide(context)
      const uow = Context.get(context, UnitOfWork)
      const records = Context.get(context, Records)
      yield* records.insert(tenant, "item", "locked", { n: 0 }).pipe(provide)
      yield* records.insert(tenant, "item", "free", { n: 0 }).pipe(provide)
      const holder = yield* Effect.fork(
        uow.transaction(Effect.zipRight(records.update(tenant, "item", "locked", { n: 1 }), Effect.sleep(2_000))).pipe(provide)
      )
      yield* Effect.sleep(300)
      // Waits for the lock on the server, past the client's deadline: the server never answers in time.
      const waiting = yield* Effect.exit(records.update(tenant, "item", "locked", { n: 2 }).pipe(provide))
      expect(Exit.isFailure(waiting)).toBe(true)
      // On the other connection, or on a new one: not queued behind the update still waiting.
      const started = Date.now()
      expect((yield* records.get(tenant, "item", "free").pipe(provide))?.data).toEqual({ n: 0 })
      expect(Date.now() - started).toBeLessThan(1_500)
      yield* Fiber.join(holder)
    }).pipe(Effect.scoped), 30_000)

  it.live("a statement interrupted while it waits for a connection leaves the pool whole", () =>
    Effect.gen(function*() {
      // Two connections, both held by units of work; statements queue for them and their
      // callers go away (a client that closed its socket). Each connection handed to a caller
      // that is gone must go back to the pool: else the pool shrinks by one per such wait.
      const context = yield* stores({ connectMs: 1_000 })
      const provide = Effect.provide(context)
      const uow = Context.get(context, UnitOfWork)
      const records = Context.get(context, Records)
      yield* records.insert(tenant, "item", "read", { n: 0 }).pipe(provide)
      const holders = yield* Effect.forEach([1, 2], () => Effect.fork(uow.transaction(Effect.sleep(400)).pipe(provide)))
      yield* Effect.sleep(100)
      const waiting = yield* Effect.forEach([1, 2, 3, 4], () => Effect.fork(records.get(tenant, "item", "read").pipe(provide)))
      yield* Effect.sleep(100)
      yield* Effect.forEach(waiting, Fiber.interrupt)
      yield* Effect.forEach(holders, Fiber.join)
      // Both connections are free again: two statements at once, each within the acquire deadline.
      const reads = yield* Effect.all([1, 2, 3].map(() => records.get(tenant, "item", "read").pipe(provide)), { concurrency: "unbounded" })
      expect(reads.map((read) => read?.data)).toEqual([{ n: 0 }, { n: 0 }, { n: 0 }])
    }).pipe(Effect.scoped), 30_000)

  it.live("statements interrupted while the server runs them free their connections without a connection to cancel them", () =>
    Effect.gen(function*() {
      // Callers go away while their statements run on every connection of the pool and more
      // wait for one (clients that closed their sockets under load). Were each to cancel its
      // statement through the pool, they would wait for a free connection that only they could
      // give, and the pool would stand still until its acquire deadline (5 s here).
      const context = yield* stores({ connectMs: 5_000 })
      const provide = Effect.provide(context)
      const records = Context.get(context, Records)
      yield* records.insert(tenant, "item", "read", { n: 0 }).pipe(provide)
      const readers = yield* Effect.forEach(Array.from({ length: 20 }), () =>
        Effect.fork(Effect.forever(records.get(tenant, "item", "read").pipe(provide))))
      yield* Effect.sleep(300)
      const started = Date.now()
      yield* Effect.forEach(readers, Fiber.interrupt, { concurrency: "unbounded" })
      expect((yield* records.get(tenant, "item", "read").pipe(provide))?.data).toEqual({ n: 0 })
      expect(Date.now() - started).toBeLessThan(4_000)
    }).pipe(Effect.scoped), 30_000)

  it.live("a unit of work past its deadline is rolled back, on the request pool and on the workers' pool", () =>
    Effect.gen(function*() {
      const context = yield* stores({ transactionMs: 500 })
      const sql = Context.get(context, SqlClient.SqlClient)
      for (const [pool, store] of [["requests", context], ["workers", Context.get(context, BackgroundStore)]] as const) {
        const uow = Context.get(store, UnitOfWork)
        const records = Context.get(store, Records)
        // Many short statements, none past a statement deadline: only the unit's own deadline ends it.
        let inserted = 0
        const long = uow.transaction(
          Effect.forever(Effect.zipRight(
            Effect.suspend(() => records.insert(tenant, "item", `${pool}_${inserted++}`, { n: inserted })),
            Effect.sleep(50)
          ))
        )
        const exit = yield* Effect.exit(long)
        expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("StoreUnavailable")
        expect(inserted).toBeGreaterThan(2)
        // Nothing of it committed, and no session is left inside a transaction.
        const kept = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM records WHERE id LIKE ${pool + "_%"}`
        expect(kept[0]!.n).toBe(0)
        const open = yield* sql<{ readonly n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND state LIKE 'idle in transaction%'`
        expect(open[0]!.n).toBe(0)
      }
    }).pipe(Effect.scoped), 30_000)

  it.live("a unit of work that fails with an answer from the server keeps its connection", () =>
    Effect.gen(function*() {
      const context = yield* stores({})
      const provide = Effect.provide(context)
      const uow = Context.get(context, UnitOfWork)
      const inUnit = uow.transaction(backendPid).pipe(provide)
      const before = yield* inUnit
      const failed = yield* Effect.exit(uow.transaction(Effect.zipRight(backendPid, Effect.fail("rule"))).pipe(provide))
      expect(Exit.isFailure(failed) && Cause.failureOption(failed.cause)).toEqual(Option.some("rule"))
      expect(yield* inUnit).toBe(before)
    }).pipe(Effect.scoped), 30_000)
})
