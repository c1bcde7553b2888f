/**
 * The PostgreSQL stores against a fresh database: the shared conformance suite, then what
 * only a real database can get wrong (SQL, collation, concurrent writers, several processes).
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Exit, Layer } from "effect"
import {
  IdLane,
  Idempotency,
  RateLimitStore,
  Records,
  type SortSpec,
  type StoredRecord,
  type Tenant,
  UnitOfWork,
  type Where
} from "@syllabus/core"
import { pgLayer } from "../../packages/pg/src/index.js"
import { freshPgDatabase } from "../support/pg.js"
import { storeConformance } from "./conformance.js"

class TestDatabase extends Context.Tag("test/TestDatabase")<TestDatabase, { readonly url: string }>() {}

const DatabaseLive = Layer.scoped(TestDatabase, freshPgDatabase)
const StoresLive = Layer.unwrapEffect(Effect.map(TestDatabase, ({ url }) => pgLayer(url))).pipe(
  Layer.provideMerge(DatabaseLive)
)

storeConformance("pg", StoresLive)

let tenants = 0
/** Every test works in its own tenant of the shared test database. */
const newTenant = (environment: Tenant["environment"] = "production"): Tenant => ({
  accountId: `acc_${process.pid}_${++tenants}`,
  environment
})

const ids = (records: ReadonlyArray<StoredRecord>) => records.map((record) => record.id)
const byId: SortSpec = { field: "id", kind: "text", direction: "asc" }
const range = (n: number) => Array.from({ length: n }, (_, i) => i)

layer(StoresLive, { excludeTestServices: true, timeout: "60 seconds" })("PgStore", (it) => {
  describe("Records: findUniqueWithAccount", () => {
    it.effect("the record of a key and its account's home record, in one read; none, or no account, as findUnique and get would say", () =>
      Effect.gen(function*() {
        const records = yield* Records
        const tenant = newTenant("sandbox")
        const owner = { type: "account", environment: "production" } as const
        const key = { name: "secret_hash", value: `h-${tenant.accountId}`, global: true } as const
        yield* records.insert(tenant, "credential", "crd_1", { name: "one" }, [key])
        const found = yield* records.findUniqueWithAccount!("global", "credential", key, owner)
        expect(found?.record).toMatchObject({ id: "crd_1", tenant, data: { name: "one" } })
        expect(found?.account).toBeUndefined()
        // Its account at home (production), not in the credential's own environment.
        yield* records.insert({ ...tenant, environment: "sandbox" }, "account", tenant.accountId, { status: "wrong place" })
        yield* records.insert({ ...tenant, environment: "production" }, "account", tenant.accountId, { status: "active" })
        const again = yield* records.findUniqueWithAccount!("global", "credential", key, owner)
        expect(again?.account).toEqual(yield* records.get({ ...tenant, environment: "production" }, "account", tenant.accountId))
        expect(yield* records.findUniqueWithAccount!("global", "credential", { name: "secret_hash", value: "nobody" }, owner)).toBeUndefined()
        expect(yield* records.findUniqueWithAccount!(tenant, "credential", key, owner)).toBeUndefined()
      }))
  })

  describe("Records: SQL", () => {
    // Bytewise order, values of another kind than the field's, JSON null and missing values.
    const fixture: ReadonlyArray<readonly [string, Record<string, string | number | boolean | null>]> = [
      ["a1", { title: "alpha", score: 10 }],
      ["B2", { title: "Zeta", score: 2 }],
      ["c3", { title: "beta", score: "10" }],
      ["d4", { title: null, score: 2.5 }],
      ["E5", { title: 42, score: -1 }],
      ["f6", { title: "äpfel" }],
      ["g7", { title: "Zeta", score: null }]
    ]

    it.effect("values and field names never become SQL", () =>
      Effect.gen(function*() {
        const records = yield* Records
        const tenant = newTenant()
        for (const [id, data] of fixture) yield* records.insert(tenant, "item", id, data)
        const list = (where: ReadonlyArray<Where>) => Effect.map(records.list(tenant, "item", { where, sort: byId, limit: 100 }), ids)

        expect(yield* list([{ field: "title", op: "eq", value: "x' OR '1'='1" }])).toEqual([])
        expect(yield* list([{ field: "title", op: "in", values: ["alpha", "\"quoted\\\"", "{braces,comma}"] }])).toEqual(["a1"])
        yield* records.insert(tenant, "item", "h8", { title: "\"quoted\\\"" })
        expect(yield* list([{ field: "title", op: "in", values: ["\"quoted\\\"", "{braces,comma}"] }])).toEqual(["h8"])
        for (const field of ["title'--", "Title", "1st", "a-b", "data"]) {
          const exit = yield* Effect.exit(list([{ field, op: "eq", value: "x" }]))
          expect(field !== "data" ? Exit.isFailure(exit) : Exit.isSuccess(exit)).toBe(true)
        }
        const badSort = yield* Effect.exit(
          records.list(tenant, "item", { where: [], sort: { field: "x; DROP TABLE records", kind: "text", direction: "asc" }, limit: 1 })
        )
        expect(Exit.isFailure(badSort)).toBe(true)
        expect(yield* records.count(tenant, "item", [], [])).toEqual([{ key: [], count: 8 }])
      }))

    it.effect("comparisons and sorts: bytewise text, numbers only among numbers", () =>
      Effect.gen(function*() {
        const records = yield* Records
        const tenant = newTenant()
        for (const [id, data] of fixture) yield* records.insert(tenant, "item", id, data)
        const list = (where: ReadonlyArray<Where>, sort: SortSpec = byId) =>
          Effect.map(records.list(tenant, "item", { where, sort, limit: 100 }), ids)

        expect(yield* list([])).toEqual(["B2", "E5", "a1", "c3", "d4", "f6", "g7"])
        // "Zeta" < "alpha" < "beta" < "äpfel"; the number 42 is not text.
        expect(yield* list([{ field: "title", op: "lt", value: "alpha" }])).toEqual(["B2", "g7"])
        expect(yield* list([{ field: "title", op: "gte", value: "beta" }])).toEqual(["c3", "f6"])
        // The string "10" is not the number 10.
        expect(yield* list([{ field: "score", op: "gte", value: 10 }])).toEqual(["a1"])
        expect(yield* list([{ field: "score", op: "eq", value: 10 }])).toEqual(["a1"])
        expect(yield* list([{ field: "score", op: "eq", value: "10" }])).toEqual(["c3"])
        expect(yield* list([{ field: "title", op: "eq", value: 42 }])).toEqual(["E5"])

        expect(yield* list([], { field: "title", kind: "text", direction: "asc" })).toEqual(["E5", "d4", "B2", "g7", "a1", "c3", "f6"])
        expect(yield* list([], { field: "score", kind: "number", direction: "desc" })).toEqual(["a1", "d4", "B2", "E5", "g7", "f6", "c3"])
        // A position of the wrong kind is a null position.
        const after = yield* Effect.map(
          records.list(tenant, "item", { where: [], sort: { field: "score", kind: "number", direction: "asc" }, after: { value: "2", id: "c3" }, limit: 100 }),
          ids
        )
        expect(after).toEqual(["f6", "g7", "E5", "B2", "d4", "a1"])
      }))

    it.effect("large documents and unicode survive the round trip", () =>
      Effect.gen(function*() {
        const records = yield* Records
        const tenant = newTenant()
        const data = { text: "x".repeat(200_000), emoji: "🎓 ünïcødé", nested: { deep: [[[{ n: 1e21 }]]] } }
        yield* records.insert(tenant, "doc", "d1", data)
        expect((yield* records.get(tenant, "doc", "d1"))?.data).toEqual(data)
      }))
  })

  describe("UnitOfWork: serializable", () => {
    it.effect("concurrent count-then-insert keeps its invariant (no write skew)", () =>
      Effect.gen(function*() {
        const records = yield* Records
        const { transaction } = yield* UnitOfWork
        const tenant = newTenant()
        // Each unit adds a seat only while fewer than 3 exist: serial execution gives exactly 3.
        const results = yield* Effect.forEach(
          range(12),
          (i) =>
            transaction(Effect.gen(function*() {
              const [{ count } = { count: 0 }] = yield* records.count(tenant, "seat", [], [])
              if (count >= 3) return false
              yield* records.insert(tenant, "seat", `seat_${i}`, {})
              return true
            })),
          { concurrency: "unbounded" }
        )
        expect(results.filter(Boolean)).toHaveLength(3)
        expect(yield* records.count(tenant, "seat", [], [])).toEqual([{ key: [], count: 3 }])
      }))

    it.effect("a rate-limit hit inside a failed unit of work still counts", () =>
      Effect.gen(function*() {
        const limiter = yield* RateLimitStore
        const { transaction } = yield* UnitOfWork
        const checks = [{ scope: "key", key: `key:${newTenant().accountId}`, limit: 5 }] as const
        const exit = yield* Effect.exit(transaction(Effect.zipRight(limiter.hit(checks, 0, 60_000, () => true), Effect.fail("boom"))))
        expect(exit).toEqual(Exit.fail("boom"))
        expect((yield* limiter.hit(checks, 0, 60_000, () => false)).counts).toEqual([{ previous: 0, current: 1 }])
      }))

    it.effect("a unit of work whose failed statement was caught does not commit: its COMMIT fails, nothing is kept", () =>
      Effect.gen(function*() {
        const records = yield* Records
        const { transaction } = yield* UnitOfWork
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        const tenant = newTenant()
        const exit = yield* Effect.exit(transaction(Effect.gen(function*() {
          yield* records.insert(tenant, "item", "kept_not", { n: 1 })
          // A failure the caller swallows, with no savepoint to undo it: PostgreSQL aborted the
          // transaction, and would answer COMMIT with a ROLLBACK that reads as a success.
          yield* Effect.ignore(sql`SELECT 1 / 0`)
        })))
        expect(Exit.isFailure(exit)).toBe(true)
        expect(yield* records.get(tenant, "item", "kept_not")).toBeUndefined()
        // The connection went back to the pool clean: the next unit of work commits.
        yield* transaction(records.insert(tenant, "item", "kept", { n: 2 }))
        expect((yield* records.get(tenant, "item", "kept"))?.data).toEqual({ n: 2 })
      }))
  })

  describe("RateLimitStore", () => {
    it.effect("50 concurrent hits naming overlapping keys in different orders: no deadlock, exactly 10 admitted", () =>
      Effect.gen(function*() {
        const limiter = yield* RateLimitStore
        const checks = [
          { scope: "origin", key: `origin:${newTenant().accountId}`, limit: 10 },
          { scope: "key", key: `key:${newTenant().accountId}`, limit: 10 }
        ] as const
        const windowStart = 1_700_000_040_000
        const hits = yield* Effect.forEach(
          range(50),
          (i) => limiter.hit(i % 2 === 0 ? checks : [...checks].reverse(), windowStart, 60_000, (c) => (c[0]?.current ?? 0) < 10),
          { concurrency: "unbounded" }
        )
        expect(hits.filter((hit) => hit.admitted)).toHaveLength(10)
        const after = yield* limiter.hit(checks, windowStart, 60_000, () => false)
        expect(after.counts).toEqual([{ previous: 0, current: 10 }, { previous: 0, current: 10 }])
      }))
  })

  describe("several processes on one database", () => {
    it.effect("two pools migrate at once, then race claims, rate limits and updates", () =>
      Effect.gen(function*() {
        const { url } = yield* freshPgDatabase
        // Two independent pools, as two server processes have, both migrating on start.
        const [one, two] = yield* Effect.all([Layer.build(pgLayer(url)), Layer.build(pgLayer(url))], { concurrency: 2 })
        const onEither = (i: number) => Effect.provide(i % 2 === 0 ? one : two)
        const tenant = newTenant()
        const now = Date.now()
        // Each process has its own lane of IDs (no two make one ID in the same millisecond).
        expect(Context.get(one, IdLane)).not.toBe(Context.get(two, IdLane))

        const claims = yield* Effect.forEach(
          range(50),
          (i) =>
            Effect.flatMap(Idempotency, (idempotency) =>
              idempotency.claim(tenant, "shared", { operationId: "op", fingerprint: "fp", token: `t${i}`, now, staleBefore: now - 60_000, expiresAt: now + 60_000 })
            ).pipe(onEither(i)),
          { concurrency: "unbounded" }
        )
        expect(claims.filter((claim) => claim._tag === "Claimed")).toHaveLength(1)

        const checks = [{ scope: "origin", key: "origin:203.0.113.9", limit: 10 }] as const
        const windowStart = now - (now % 60_000)
        const hits = yield* Effect.forEach(
          range(50),
          (i) =>
            Effect.flatMap(RateLimitStore, (limiter) => limiter.hit(checks, windowStart, 60_000, (c) => (c[0]?.current ?? 0) < 10)).pipe(
              onEither(i)
            ),
          { concurrency: "unbounded" }
        )
        expect(hits.filter((hit) => hit.admitted)).toHaveLength(10)

        yield* Effect.flatMap(Records, (records) => records.insert(tenant, "lesson", "les_1", { n: 0 })).pipe(onEither(0))
        const updates = yield* Effect.forEach(
          range(50),
          (i) =>
            Effect.flatMap(Records, (records) => records.update(tenant, "lesson", "les_1", { n: i }, { expectedRevision: 1 })).pipe(
              Effect.either,
              onEither(i)
            ),
          { concurrency: "unbounded" }
        )
        expect(updates.filter((update) => update._tag === "Right")).toHaveLength(1)

        // A later start finds nothing left to migrate.
        yield* Layer.build(pgLayer(url))
      }).pipe(Effect.scoped))
  })
})
