/**
 * Read replicas (issue 27, packages/pg/src/replicas.ts) on a real primary and streaming standby
 * (test/support/replication.ts): lists, counts and reports outside a unit of work go to a replica
 * that holds every commit answered before them; reads by key and units of work stay on the
 * primary; a replica delayed on purpose (`recovery_min_apply_delay`) is passed over, so a read
 * never shows older state than a write already answered; a replica that does not answer, or is
 * not in recovery, leaves the reads to the primary. Which server each statement reached is read
 * off the driver (`statementsDuring`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Records, StoreReplicas, type Tenant, UnitOfWork } from "@syllabus/core"
import { makeNodeListener } from "@syllabus/http"
import { pgLayer } from "@syllabus/pg"
import { MemoryFileStorage } from "@syllabus/storage"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer } from "effect"
import { afterAll, beforeAll } from "vitest"
import { type SentStatement, statementsDuring } from "../support/pg.js"
import { type ReplicatedCluster, startReplicatedCluster } from "../support/replication.js"

const tenant: Tenant = { accountId: "acc_replicas", environment: "production" }
const portOf = (url: string) => Number(new URL(url).port)
const isList = (statement: SentStatement) => /FROM records/.test(statement.text) && /ORDER BY/.test(statement.text)

let plain: ReplicatedCluster
let delayed: ReplicatedCluster
beforeAll(async () => {
  ;[plain, delayed] = await Promise.all([startReplicatedCluster(), startReplicatedCluster({ applyDelayMs: 2_000 })])
}, 120_000)
afterAll(async () => {
  await Promise.all([plain?.stop(), delayed?.stop()])
})

const storesOn = (cluster: ReplicatedCluster, replicaUrls: ReadonlyArray<string>) =>
  Effect.map(Layer.build(pgLayer(cluster.primaryUrl, { maxConnections: 5, background: false, replicaUrls })), (context) => ({
    records: Context.get(context, Records),
    uow: Context.get(context, UnitOfWork),
    replicas: Context.unsafeGet(context, StoreReplicas)
  }))

const page = (records: Context.Tag.Service<typeof Records>, showcase: string) =>
  records.list(tenant, "product", {
    where: [{ field: "showcase_id", op: "eq", value: showcase }],
    sort: { field: "position", kind: "number", direction: "asc" },
    limit: 100
  })

describe("read replicas [postgresql]", () => {
  it.live("a page outside a unit of work is read on the replica once it holds the commits before it; reads by key and units on the primary", () =>
    Effect.gen(function*() {
      const { records, uow } = yield* storesOn(plain, plain.standbyUrls)
      yield* uow.transaction(records.insert(tenant, "product", "prd_1", { showcase_id: "shw_1", position: 1 }))
      const sent = yield* statementsDuring(Effect.gen(function*() {
        expect((yield* page(records, "shw_1")).map((record) => record.id)).toEqual(["prd_1"])
        expect((yield* records.count(tenant, "product", [{ field: "showcase_id", op: "eq", value: "shw_1" }], []))[0]!.count).toBe(1)
        expect(yield* records.get(tenant, "product", "prd_1")).toBeDefined()
        yield* uow.transaction(page(records, "shw_1"))
      }))
      const primary = portOf(plain.primaryUrl)
      const standby = portOf(plain.standbyUrls[0]!)
      // The primary's position, then the replica's, then the page on the replica.
      expect(sent.find((s) => s.text.includes("pg_current_wal_insert_lsn"))?.port).toBe(primary)
      expect(sent.find((s) => s.text.includes("pg_last_wal_replay_lsn"))?.port).toBe(standby)
      const lists = sent.filter(isList)
      expect(lists.map((s) => s.port)).toEqual([standby, primary])
      expect(sent.find((s) => s.text.startsWith("SELECT count(*)"))?.port).toBe(standby)
      const byKey = sent.filter((s) => /\bid = \$\d+/.test(s.text) && !isList(s))
      expect(byKey.length).toBeGreaterThan(0)
      expect(byKey.map((s) => s.port)).toEqual(byKey.map(() => primary))
    }).pipe(Effect.scoped), 60_000)

  it.live("with the replica 2 s behind: 30 writes each read back at once, none stale (the primary answers); then the replica, once it has caught up", () =>
    Effect.gen(function*() {
      const { records, uow } = yield* storesOn(delayed, delayed.standbyUrls)
      const primary = portOf(delayed.primaryUrl)
      const standby = portOf(delayed.standbyUrls[0]!)
      let stale = 0
      const sent = yield* statementsDuring(Effect.forEach(Array.from({ length: 30 }, (_, n) => n + 1), (n) =>
        Effect.gen(function*() {
          yield* uow.transaction(records.insert(tenant, "product", `prd_${n}`, { showcase_id: "shw_2", position: n }))
          if ((yield* page(records, "shw_2")).length !== n) stale++
        })))
      expect(stale).toBe(0)
      expect(sent.filter(isList).map((s) => s.port)).toEqual(Array.from({ length: 30 }, () => primary))
      // No write since: after the delay the replica holds them all, and the page is read there.
      yield* Effect.sleep(2_500)
      const later = yield* statementsDuring(page(records, "shw_2"))
      expect(later.filter(isList).map((s) => s.port)).toEqual([standby])
    }).pipe(Effect.scoped), 60_000)

  it.live("a replica that does not answer, or is not in recovery, leaves the reads to the primary", () =>
    Effect.gen(function*() {
      const nobody = "postgres://postgres@127.0.0.1:1/postgres"
      const { records, replicas, uow } = yield* storesOn(plain, [nobody, plain.primaryUrl])
      yield* uow.transaction(records.insert(tenant, "product", "prd_3", { showcase_id: "shw_3", position: 1 }))
      const sent = yield* statementsDuring(page(records, "shw_3"))
      expect(sent.filter(isList).map((s) => s.port)).toEqual([portOf(plain.primaryUrl)])
      expect((yield* replicas.check).map((replica) => replica.state)).toEqual(["failing", "not-a-replica"])
    }).pipe(Effect.scoped), 60_000)

  it.live("GET /readyz reports each replica's state: ready, degraded while one fails", () =>
    Effect.gen(function*() {
      const app = yield* Effect.promise(() =>
        makeNodeListener({
          store: pgLayer(plain.primaryUrl, { maxConnections: 5, background: false, replicaUrls: [plain.standbyUrls[0]!, "postgres://postgres@127.0.0.1:1/postgres"] }),
          storage: MemoryFileStorage,
          rateLimits: "off",
          workers: false
        })
      )
      const server = createServer(app.listener)
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
        () => Effect.promise(async () => {
          await new Promise((resolve) => server.close(resolve))
          await app.dispose()
        })
      )
      const response = yield* Effect.promise(() => fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`))
      const body = yield* Effect.promise(() => response.json() as Promise<any>)
      expect(response.status).toBe(200)
      expect(body.status).toBe("ready")
      expect(body.degraded).toEqual(["replicas"])
      expect(body.checks.replicas.status).toBe("degraded")
      expect(body.checks.replicas.replicas.map((replica: { state: string }) => replica.state)).toEqual(["ok", "failing"])
      expect(typeof body.checks.replicas.replicas[0].lagBytes).toBe("number")
    }).pipe(Effect.scoped), 60_000)
})
