/**
 * The PostgreSQL store behind a real PgBouncer in transaction mode (issue 27), with two server
 * connections for many clients, so that consecutive transactions of one client connection land
 * on different server sessions: nothing of a session may be relied on (`pgLayer`'s `pooler:
 * "transaction"`, `ConnectionMode` in packages/pg/src/pool.ts). The contract suite also runs
 * whole through the suite's PgBouncer (the `pgbouncer` store, test/support/stores.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { ChangeRelay, Records, type Tenant, UnitOfWork } from "@syllabus/core"
import { pgLayer, type PgLayerOptions } from "@syllabus/pg"
import { Cause, Context, Effect, Exit, Layer, Option, Stream } from "effect"
import { afterAll, beforeAll, inject } from "vitest"
import { showcaseOrder } from "../support/contention.js"
import { freshPgDatabase, sentDuring } from "../support/pg.js"
import { type RunningPgBouncer, startPgBouncer } from "../support/pgbouncer.js"

const tenant: Tenant = { accountId: "acc_pooled", environment: "production" }


let bouncer: RunningPgBouncer
beforeAll(async () => {
  bouncer = await startPgBouncer(inject("databaseUrl"), { poolSize: 2 })
}, 30_000)
afterAll(async () => {
  await bouncer?.stop()
})

/** A fresh database, and the store on it through the pooler (its direct URL for LISTEN and migrations). */
const pooled = (options: PgLayerOptions = {}) =>
  Effect.gen(function*() {
    const { url } = yield* freshPgDatabase
    return { url, layer: pgLayer(bouncer.urlOf(url), { maxConnections: 10, background: false, pooler: "transaction", listenUrl: url, ...options }) }
  })

describe("the PostgreSQL store through PgBouncer in transaction mode [postgresql]", () => {
  it.live("a pool that sends a session's parameters is refused by the pooler: the pooler must be named", () =>
    Effect.gen(function*() {
      const { url } = yield* freshPgDatabase
      // Migrated directly first, so that only the pool's own connections meet the pooler.
      yield* Layer.build(pgLayer(url, { maxConnections: 2, background: false }))
      const exit = yield* Effect.exit(Layer.build(pgLayer(bouncer.urlOf(url), { maxConnections: 2, background: false })))
      expect(Exit.isFailure(exit)).toBe(true)
      const refusal = Exit.isFailure(exit) ? Cause.squash(exit.cause) as { readonly cause?: { readonly message?: string } } : undefined
      expect(refusal?.cause?.message).toMatch(/unsupported startup parameter/)
    }).pipe(Effect.scoped), 30_000)

  it.live("`pooler: \"transaction\"` without a direct connection fails at once, naming listenUrl", () =>
    Effect.gen(function*() {
      const { url } = yield* freshPgDatabase
      const exit = yield* Effect.exit(Layer.build(pgLayer(bouncer.urlOf(url), { pooler: "transaction" })))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(JSON.stringify(exit)).toMatch(/listenUrl/)
    }).pipe(Effect.scoped), 30_000)

  it.live("a unit of work runs under the server's deadlines, sent with its BEGIN", () =>
    Effect.gen(function*() {
      const { layer } = yield* pooled({ timeouts: { statementMs: 4321, lockMs: 1234, idleInTransactionMs: 9876 } })
      const context = yield* Layer.build(layer)
      const sql = Context.get(context, SqlClient.SqlClient)
      const settings = yield* Context.get(context, UnitOfWork).transaction(
        sql<{ s: string; l: string; i: string }>`SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l, current_setting('idle_in_transaction_session_timeout') AS i`
      )
      expect(settings[0]).toEqual({ s: "4321ms", l: "1234ms", i: "9876ms" })
    }).pipe(Effect.scoped), 30_000)

  it.live("200 units of work of 10 client connections on 2 server sessions: every one commits", () =>
    Effect.gen(function*() {
      const { layer } = yield* pooled()
      const context = yield* Layer.build(layer)
      const records = Context.get(context, Records)
      const uow = Context.get(context, UnitOfWork)
      const ids = Array.from({ length: 200 }, (_, n) => `prd_${String(n).padStart(6, "0")}`)
      yield* Effect.forEach(
        ids,
        (id) =>
          uow.transaction(Effect.gen(function*() {
            yield* records.insert(tenant, "product", id, { name: id, deleted: false })
            const read = yield* records.get(tenant, "product", id)
            yield* records.update(tenant, "product", id, { ...read!.data, name: `${id}!` }, { expectedRevision: read!.revision })
          })),
        { concurrency: 20 }
      )
      const all = yield* records.getMany(tenant, "product", ids)
      expect(all).toHaveLength(200)
      expect(all.every((record) => String(record.data.name).endsWith("!"))).toBe(true)
    }).pipe(Effect.scoped), 60_000)

  it.live("the same with statements prepared per connection fails: the pooler's sessions do not keep them", () =>
    Effect.gen(function*() {
      const { layer } = yield* pooled({ preparedStatements: true })
      const context = yield* Layer.build(layer)
      const records = Context.get(context, Records)
      const exits = yield* Effect.forEach(
        Array.from({ length: 100 }, (_, n) => `prd_${n}`),
        (id) => Effect.exit(records.insert(tenant, "product", id, { name: id })),
        { concurrency: 20 }
      )
      expect(exits.some(Exit.isFailure)).toBe(true)
    }).pipe(Effect.scoped), 60_000)

  it.live("40 appends to one order from two processes, contending: every one commits, the positions dense", () =>
    Effect.gen(function*() {
      const { layer } = yield* pooled({ maxConnections: 5 })
      // Two processes: the second builds on the database the first migrated.
      const processes = yield* Effect.all([Layer.build(layer), Layer.build(Layer.fresh(layer))])
      const orders = processes.map((context) => showcaseOrder(context, tenant, "shw_1"))
      yield* Effect.forEach(
        Array.from({ length: 40 }, (_, n) => n),
        (n) => orders[n % 2]!.append(`prd_${String(n).padStart(9, "0")}`),
        { concurrency: "unbounded" }
      )
      const rows = yield* Context.get(processes[0], Records).list(tenant, "product", {
        where: [{ field: "showcase_id", op: "eq", value: "shw_1" }],
        sort: { field: "position", kind: "number", direction: "asc" },
        limit: 100
      })
      expect(rows.map((row) => row.data.position)).toEqual(Array.from({ length: 40 }, (_, n) => n + 1))
    }).pipe(Effect.scoped), 90_000)

  it.live("a unit that lost a race on a key reruns queued in its process, with no advisory lock a pooled session would keep", () =>
    Effect.gen(function*() {
      const { layer } = yield* pooled({ maxConnections: 5 })
      const context = yield* Layer.build(layer)
      // A loses a race to B on the key and runs again, queued on it.
      let aRuns = 0
      const sent = yield* sentDuring(Effect.map(showcaseOrder(context, tenant, "shw_race").loseARace("prd_a", "prd_b"), (runs) => (aRuns = runs)))
      expect(aRuns).toBe(2)
      expect(sent.filter((text) => text.includes("pg_advisory"))).toEqual([])
      const placed = yield* Context.get(context, Records).getMany(tenant, "product", ["prd_a", "prd_b"])
      expect(placed.map((record) => [record.id, record.data.position]).sort()).toEqual([["prd_a", 2], ["prd_b", 1]])
    }).pipe(Effect.scoped), 60_000)

  it.live("a commit published through one process's pool is heard by another's LISTEN on its direct connection", () =>
    Effect.gen(function*() {
      const { layer } = yield* pooled({ changeRelay: { heartbeatMs: 200 } })
      const [a, b] = yield* Effect.all([Layer.build(layer), Layer.build(Layer.fresh(layer))])
      const heard = Context.get(b, ChangeRelay).received.pipe(
        Stream.filter((change) => change._tag === "Committed" && change.tenants.some((t) => t.accountId === tenant.accountId)),
        Stream.runHead
      )
      // B's LISTEN may not be in place yet: A publishes until B hears it.
      const publishing = Effect.forever(Effect.zipRight(Context.get(a, ChangeRelay).publish([tenant]), Effect.sleep(100)))
      const first = yield* Effect.race(heard, publishing).pipe(Effect.timeout(10_000))
      expect(Option.isSome(first)).toBe(true)
    }).pipe(Effect.scoped), 30_000)
})
