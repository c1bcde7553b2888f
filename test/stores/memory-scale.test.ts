/**
 * The memory store at a school's volume: what a test can prove without a clock. Tenants never
 * wait on each other; a page costs O(log n + limit) through an ordered index; housekeeping reads
 * one type; the index order is PostgreSQL's (checked against the plain sort it replaces).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber } from "effect"
import {
  type ListQuery,
  Records,
  type SortSpec,
  type StoredRecord,
  type Tenant,
  UniqueViolation,
  UnitOfWork,
  type Where
} from "@syllabus/core"
import { instrumentation, lockCounters, MemoryStore, memoryStore } from "../../packages/memory/src/index.js"
import { random, reference } from "./list-reference.js"

const tenantA: Tenant = { accountId: "acc_a", environment: "production" }
const tenantB: Tenant = { accountId: "acc_b", environment: "production" }

/** Many scheduler turns, then done: enough for any short write that is not blocked. */
const turns = (n = 2_000) => Effect.repeatN(Effect.yieldNow(), n)

const ids = (records: ReadonlyArray<StoredRecord>) => records.map((r) => r.id)

describe("memory store: no lock shared by tenants", () => {
  it.live("a unit of work of tenant A blocked on a Deferred does not block a commit of tenant B", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const aDone = yield* Deferred.make<void>()
      const a = yield* Effect.fork(
        uow.transaction(
          Effect.gen(function* () {
            yield* records.insert(tenantA, "course", "crs_a", {}, [{ name: "secret", value: "h_a", global: true }])
            yield* records.list(tenantA, "course", { where: [], sort: { field: "id", kind: "text", direction: "asc" }, limit: 10 })
            yield* Deferred.succeed(started, undefined)
            yield* Deferred.await(release)
          })
        ).pipe(Effect.ensuring(Deferred.succeed(aDone, undefined)))
      )
      yield* Deferred.await(started)
      // A's unit of work is released only after many turns: if B waited for it, A would finish first.
      yield* Effect.fork(Effect.zipRight(turns(), Deferred.succeed(release, undefined)))
      const b = Effect.gen(function* () {
        yield* records.insert(tenantB, "course", "crs_b", {}, [{ name: "secret", value: "h_b", global: true }])
        yield* uow.transaction(
          Effect.gen(function* () {
            yield* records.update(tenantB, "course", "crs_b", { n: 1 })
            yield* records.insert(tenantB, "course", "crs_b2", {})
          })
        )
        // A's tenant, another type: another bucket, no wait either.
        yield* records.insert(tenantA, "visit", "vis_1", {})
      })
      const first = yield* Effect.race(
        Effect.as(b, "B committed" as const),
        Effect.as(Deferred.await(aDone), "A finished first" as const)
      )
      expect(first).toBe("B committed")
      expect((yield* records.get(tenantB, "course", "crs_b"))?.revision).toBe(2)
      // Meanwhile A's writes stay invisible outside it.
      expect(yield* records.get(tenantA, "course", "crs_a")).toBeUndefined()
      yield* Fiber.join(a)
      expect(yield* records.get(tenantA, "course", "crs_a")).toBeDefined()
    }).pipe(Effect.provide(MemoryStore)))

  it.live("a plain write to a bucket a running unit of work holds waits for it, and sees its outcome", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const a = yield* Effect.fork(
        uow.transaction(
          Effect.gen(function* () {
            yield* records.insert(tenantA, "course", "crs_1", { by: "uow" })
            yield* Deferred.succeed(started, undefined)
            yield* Deferred.await(release)
          })
        )
      )
      yield* Deferred.await(started)
      const plain = yield* Effect.fork(Effect.either(records.insert(tenantA, "course", "crs_1", { by: "plain" })))
      yield* turns()
      expect(plain.unsafePoll()).toBeNull()
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(a)
      const result = yield* Fiber.join(plain)
      expect(Either.isLeft(result) && result.left).toEqual(new UniqueViolation({ name: "id" }))
    }).pipe(Effect.provide(MemoryStore)))

  it.live("a global key taken by a running unit of work of another tenant: the second waits, then sees it taken", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const key = [{ name: "secret", value: "same-hash", global: true }] as const
      const a = yield* Effect.fork(
        uow.transaction(
          Effect.gen(function* () {
            yield* records.insert(tenantA, "credential", "crd_a", {}, key)
            yield* Deferred.succeed(started, undefined)
            yield* Deferred.await(release)
          })
        )
      )
      yield* Deferred.await(started)
      const b = yield* Effect.fork(Effect.either(records.insert(tenantB, "credential", "crd_b", {}, key)))
      yield* turns()
      expect(b.unsafePoll()).toBeNull()
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(a)
      const result = yield* Fiber.join(b)
      expect(Either.isLeft(result) && result.left).toEqual(new UniqueViolation({ name: "secret" }))
      expect((yield* records.findUnique("global", "credential", key[0]))?.tenant).toEqual(tenantA)
    }).pipe(Effect.provide(MemoryStore)))

  it.live("a global key freed by a rolled-back unit of work goes to the one that waited", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const key = [{ name: "secret", value: "h", global: true }] as const
      const a = yield* Effect.fork(
        Effect.either(uow.transaction(
          Effect.gen(function* () {
            yield* records.insert(tenantA, "credential", "crd_a", {}, key)
            yield* Deferred.succeed(started, undefined)
            yield* Deferred.await(release)
            return yield* Effect.fail("boom" as const)
          })
        ))
      )
      yield* Deferred.await(started)
      const b = yield* Effect.fork(records.insert(tenantB, "credential", "crd_b", {}, key))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(a)
      yield* Fiber.join(b)
      expect((yield* records.findUnique("global", "credential", key[0]))?.id).toBe("crd_b")
    }).pipe(Effect.provide(MemoryStore)))

  it.live("crossing units of work do not deadlock: one loses the race, runs again, and both commit", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      yield* records.insert(tenantA, "x", "x_1", { n: 0 })
      yield* records.insert(tenantA, "y", "y_1", { n: 0 })
      const oneHoldsX = yield* Deferred.make<void>()
      const twoHoldsY = yield* Deferred.make<void>()
      let runs = 0
      const bump = (type: string, id: string) =>
        Effect.flatMap(records.get(tenantA, type, id), (r) =>
          records.update(tenantA, type, id, { n: (r?.data["n"] as number) + 1 }))
      const lostBefore = lockCounters.lostRaces
      const one = uow.transaction(
        Effect.gen(function* () {
          runs++
          yield* bump("x", "x_1")
          yield* Deferred.succeed(oneHoldsX, undefined)
          yield* Deferred.await(twoHoldsY)
          yield* bump("y", "y_1")
        })
      )
      const two = uow.transaction(
        Effect.gen(function* () {
          runs++
          yield* bump("y", "y_1")
          yield* Deferred.succeed(twoHoldsY, undefined)
          yield* Deferred.await(oneHoldsX)
          yield* bump("x", "x_1")
        })
      )
      yield* Effect.all([one, two], { concurrency: "unbounded" })
      expect((yield* records.get(tenantA, "x", "x_1"))?.data).toEqual({ n: 2 })
      expect((yield* records.get(tenantA, "y", "y_1"))?.data).toEqual({ n: 2 })
      expect(runs).toBeGreaterThanOrEqual(3)
      expect(lockCounters.lostRaces).toBeGreaterThan(lostBefore)
    }).pipe(Effect.provide(MemoryStore)))

  it.live("purge resets one tenant and leaves the others, and their locks, alone", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      for (const t of [tenantA, tenantB]) {
        yield* records.insert(t, "course", "crs_1", {}, [{ name: "secret", value: `${t.accountId}`, global: true }])
        yield* records.insert(t, "account", "acc_1", {})
      }
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const b = yield* Effect.fork(uow.transaction(
        Effect.zipRight(records.insert(tenantB, "course", "crs_2", {}), Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(release)))
      ))
      yield* Deferred.await(started)
      expect(yield* records.purge(tenantA, ["account"])).toBe(1)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(b)
      expect(yield* records.get(tenantA, "course", "crs_1")).toBeUndefined()
      expect(yield* records.findUnique("global", "course", { name: "secret", value: "acc_a" })).toBeUndefined()
      expect(yield* records.get(tenantA, "account", "acc_1")).toBeDefined()
      expect(ids(yield* records.list(tenantB, "course", { where: [], sort: { field: "id", kind: "text", direction: "asc" }, limit: 10 })))
        .toEqual(["crs_1", "crs_2"])
    }).pipe(Effect.provide(MemoryStore)))
})

// --- The order of an index is the order of the plain sort it replaces -------------------------


describe("memory store: ordered indexes", () => {
  it.effect("pages through every index agree with the plain sort (nulls, mixed kinds, code-unit order, ties, eq/in)", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const next = random(7)
      const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)]!
      const titles = ["a", "B", "b", "é", "Z", "ab", "a b", "", "𝔘", "\uffff"]
      const all: Array<StoredRecord> = []
      for (let i = 0; i < 600; i++) {
        const data: Record<string, unknown> = {}
        const title = pick([...titles, null, undefined, 3, { x: 1 }])
        if (title !== undefined) data["title"] = title
        const rank = pick([1, 2, -1.5, 100, 0, null, undefined, "7"])
        if (rank !== undefined) data["rank"] = rank
        const status = pick(["open", "closed", "draft", null, undefined, true, 1])
        if (status !== undefined) data["status"] = status
        const id = `r_${pick(["", "A", "a", "_"])}${Math.floor(next() * 1e6).toString(36)}_${i}`
        all.push(yield* records.insert(tenantA, "item", id, data as never))
      }
      // Changes after the indexes exist are kept by them.
      yield* records.list(tenantA, "item", { where: [], sort: { field: "title", kind: "text", direction: "asc" }, limit: 1 })
      for (let i = 0; i < 100; i++) {
        const victim = all[i * 5]!
        if (i % 2 === 0) {
          yield* records.remove(tenantA, "item", victim.id)
          all.splice(i * 5, 1, { ...victim, id: "" })
        } else {
          const updated = yield* records.update(tenantA, "item", victim.id, { ...victim.data, title: pick(titles), status: "open" })
          all.splice(i * 5, 1, updated)
        }
      }
      const live = all.filter((r) => r.id !== "")
      const sorts: ReadonlyArray<SortSpec> = [
        { field: "id", kind: "text", direction: "asc" },
        { field: "id", kind: "text", direction: "desc" },
        { field: "title", kind: "text", direction: "asc" },
        { field: "title", kind: "text", direction: "desc" },
        { field: "rank", kind: "number", direction: "asc" },
        { field: "rank", kind: "number", direction: "desc" }
      ]
      const filters: ReadonlyArray<ReadonlyArray<Where>> = [
        [],
        [{ field: "status", op: "eq", value: "open" }],
        [{ field: "status", op: "eq", value: null }],
        [{ field: "status", op: "eq", value: true }],
        [{ field: "status", op: "in", values: ["open", "draft", "open"] }],
        [{ field: "status", op: "in", values: [] }],
        [{ field: "status", op: "eq", value: "closed" }, { field: "rank", op: "gte", value: 1 }],
        [{ field: "title", op: "contains", value: "B" }],
        // Range conditions on the sort field bound the walk; of the other kind they match nothing.
        [{ field: "rank", op: "gt", value: 0 }, { field: "rank", op: "lte", value: 100 }],
        [{ field: "rank", op: "gte", value: -1.5 }, { field: "rank", op: "lt", value: 2 }, { field: "status", op: "eq", value: "open" }],
        [{ field: "title", op: "gte", value: "B" }, { field: "title", op: "lt", value: "b" }],
        [{ field: "title", op: "gt", value: "a" }],
        [{ field: "rank", op: "lte", value: "7" }],
        [{ field: "title", op: "gt", value: 3 }]
      ]
      for (const sort of sorts) {
        for (const where of filters) {
          // Walk all pages by keyset, as a client does, and compare each with the reference.
          let after: ListQuery["after"] = undefined
          for (let pages = 0; pages < 100; pages++) {
            const query: ListQuery = { where, sort, after, limit: 37 }
            const got = yield* records.list(tenantA, "item", query)
            expect(ids(got)).toEqual(ids(reference(live, query)))
            const last = got[got.length - 1]
            if (got.length < 37 || last === undefined) break
            const value = sort.field === "id" ? last.id : last.data[sort.field]
            after = { value: typeof value === "string" || typeof value === "number" ? value : null, id: last.id }
          }
          // Positions of the wrong kind or missing from the set are positions too.
          for (const value of ["b", 2, null, "zz"]) {
            const query: ListQuery = { where, sort, after: { value, id: "r_a" }, limit: 20 }
            expect(ids(yield* records.list(tenantA, "item", query))).toEqual(ids(reference(live, query)))
          }
        }
      }
      const counted = yield* records.count(tenantA, "item", [{ field: "status", op: "in", values: ["open", "closed"] }], ["status"])
      const expected = new Map<string, number>()
      for (const r of live) {
        const s = r.data["status"]
        if (s === "open" || s === "closed") expected.set(s, (expected.get(s) ?? 0) + 1)
      }
      expect(Object.fromEntries(counted.map((g) => [g.key[0], g.count]))).toEqual(Object.fromEntries(expected))
    }).pipe(Effect.provide(MemoryStore)))

  const N = 50_000

  it.effect(`at ${N.toLocaleString("en")} records a page visits O(limit) entries, first page or deep`, () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      const statuses = ["draft", "published", "archived"]
      yield* uow.transaction(Effect.forEach(Array.from({ length: N }, (_, i) => i), (i) =>
        records.insert(tenantA, "product", `prod_${String(i).padStart(8, "0")}`, {
          name: `Product ${(i * 7_919) % N}`,
          status: statuses[i % 3]!,
          position: i
        }), { discard: true }))
      yield* records.insert(tenantB, "product", "prod_b", { name: "Other", status: "draft", position: 0 })
      const byName: SortSpec = { field: "name", kind: "text", direction: "asc" }
      const published: ReadonlyArray<Where> = [{ field: "status", op: "eq", value: "published" }]
      const queries: ReadonlyArray<ListQuery> = [
        { where: [], sort: byName, limit: 50 },
        { where: [], sort: byName, after: { value: "Product 5", id: "prod_00025000" }, limit: 50 },
        { where: [], sort: { ...byName, direction: "desc" }, after: { value: "Product 5", id: "prod_00025000" }, limit: 50 },
        { where: published, sort: byName, after: { value: "Product 5", id: "prod_00025000" }, limit: 50 },
        { where: published, sort: { field: "id", kind: "text", direction: "desc" }, limit: 50 },
        { where: [], sort: { field: "id", kind: "text", direction: "asc" }, after: { value: "prod_00037500", id: "prod_00037500" }, limit: 50 },
        { where: [{ field: "status", op: "in", values: ["draft", "archived"] }], sort: { field: "position", kind: "number", direction: "desc" }, limit: 50 },
        // A range on the sort field starts at its bound (how a product is placed: from its position on).
        { where: [{ field: "position", op: "gte", value: 40_000 }], sort: { field: "position", kind: "number", direction: "asc" }, limit: 50 },
        { where: [{ field: "position", op: "lte", value: 10_000 }], sort: { field: "position", kind: "number", direction: "desc" }, limit: 50 },
        { where: [{ field: "status", op: "eq", value: "draft" }, { field: "position", op: "gt", value: 45_000 }], sort: { field: "position", kind: "number", direction: "asc" }, limit: 50 }
      ]
      for (const query of queries) {
        yield* records.list(tenantA, "product", query) // builds the index on first use
        const before = instrumentation.visited
        const page = yield* records.list(tenantA, "product", query)
        const visited = instrumentation.visited - before
        expect(page).toHaveLength(50)
        // 50 entries, plus the path down (a handful of nodes) and the leaves crossed.
        expect(visited).toBeLessThan(200)
      }
      // The index is kept by writes, not rebuilt: a write then a page still visit O(log n + limit).
      yield* records.update(tenantA, "product", "prod_00000001", { name: "AAA first", status: "published", position: 1 })
      const before = instrumentation.visited
      const first = yield* records.list(tenantA, "product", { where: [], sort: byName, limit: 50 })
      expect(instrumentation.visited - before).toBeLessThan(200)
      expect(first[0]?.id).toBe("prod_00000001")

      // A count of an equality is read from the index's subtree sizes.
      yield* records.count(tenantA, "product", published, [])
      const beforeCount = instrumentation.visited
      expect(yield* records.count(tenantA, "product", published, [])).toEqual([{ key: [], count: Math.ceil((N - 1) / 3) }])
      expect(instrumentation.visited - beforeCount).toBeLessThan(20)

      // Housekeeping by type reads the type's index, not the 50,000 products.
      yield* records.insert(tenantB, "operation", "op_1", { status: "queued" })
      yield* records.insert(tenantA, "operation", "op_2", { status: "done" })
      yield* records.scan("operation", [{ field: "status", op: "eq", value: "queued" }], 10)
      const beforeScan = instrumentation.visited
      expect(ids(yield* records.scan("operation", [{ field: "status", op: "eq", value: "queued" }], 10))).toEqual(["op_1"])
      expect(instrumentation.visited - beforeScan).toBeLessThan(20)
    }).pipe(Effect.provide(MemoryStore)), 120_000)

  it.effect("a housekeeping scan bounded on its path's order (due before now) reads the due records, not the whole group", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      // 20,000 active enrollments: most without an expiry (null, lowest in the order), some later, three due.
      yield* uow.transaction(Effect.forEach(Array.from({ length: 20_000 }, (_, i) => i), (i) =>
        records.insert(tenantA, "enrollment", `enr_${String(i).padStart(9, "0")}`, {
          status: "active",
          expires_at: i % 4 === 0 ? `2027-0${1 + (i % 9)}-01T00:00:00.000Z` : null
        }), { discard: true }))
      for (const [n, at] of [[1, "2026-01-01T00:00:00.000Z"], [2, "2026-02-01T00:00:00.000Z"], [3, "2026-03-01T00:00:00.000Z"]] as const) {
        yield* records.insert(tenantB, "enrollment", `enr_due_${n}`, { status: "active", expires_at: at })
      }
      const due: ReadonlyArray<Where> = [
        { field: "status", op: "eq", value: "active" },
        { field: "expires_at", op: "lte", value: "2026-06-01T00:00:00.000Z" }
      ]
      const before = instrumentation.visited
      expect(ids(yield* records.scan("enrollment", due, 200))).toEqual(["enr_due_1", "enr_due_2", "enr_due_3"])
      expect(instrumentation.visited - before).toBeLessThan(200)
    }).pipe(Effect.provide(MemoryStore)), 120_000)

  describe("the declared access paths are indexes from the first record", () => {
    const M = 60_000
    const live: ReadonlyArray<Where> = [{ field: "deleted", op: "eq", value: false }]
    const byName: SortSpec = { field: "name", kind: "text", direction: "asc" }
    const statuses = ["draft", "published", "archived"]
    /** M products and M/3 lessons under 100 products, as `createResource` stores them (the fields the paths read). */
    const load = Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      yield* uow.transaction(Effect.forEach(Array.from({ length: M }, (_, i) => i), (i) =>
        records.insert(tenantA, "product", `prod_${String(i).padStart(8, "0")}`, {
          name: `Product ${(i * 7_919) % M}`,
          status: statuses[i % 3]!,
          external_id: `ext-${i}`,
          position: i,
          deleted: i % 50 === 0
        }), { discard: true }))
      yield* uow.transaction(Effect.forEach(Array.from({ length: M / 3 }, (_, i) => i), (i) =>
        records.insert(tenantA, "lesson", `les_${String(i).padStart(8, "0")}`, {
          product_id: `prod_${String(i % 100).padStart(8, "0")}`,
          name: `Lesson ${i}`,
          position: i,
          deleted: false
        }), { discard: true }))
    })
    /** Lists as the machinery builds them (`deleted`, then the parent, then filters), each read once. */
    const queries: ReadonlyArray<readonly [string, ListQuery]> = [
      ["products sort=name", { where: live, sort: byName, limit: 50 }],
      ["products sort=-position, deep", {
        where: live,
        sort: { field: "position", kind: "number", direction: "desc" },
        after: { value: 30_000, id: "prod_00030000" },
        limit: 50
      }],
      ["products status=published", {
        where: [...live, { field: "status", op: "eq", value: "published" }],
        sort: { field: "id", kind: "text", direction: "desc" },
        limit: 50
      }],
      ["products external_id=ext-12345", {
        where: [...live, { field: "external_id", op: "eq", value: "ext-12345" }],
        sort: { field: "id", kind: "text", direction: "desc" },
        limit: 50
      }],
      ["lessons of one product, by position", {
        where: [...live, { field: "product_id", op: "eq", value: "prod_00000007" }],
        sort: { field: "position", kind: "number", direction: "asc" },
        limit: 50
      }]
    ]

    it.effect(`at ${M.toLocaleString("en")} records, the first read of each declared list visits O(limit) entries: no build`, () =>
      Effect.gen(function* () {
        const records = yield* Records
        yield* load
        for (const [label, query] of queries) {
          const before = instrumentation.visited
          const page = yield* records.list(tenantA, label.startsWith("lessons") ? "lesson" : "product", query)
          // 50 entries, the path down and the leaves crossed (and, for a filter, the sizes of
          // the candidate ranges): O(log n + limit), where a build would visit every record.
          expect(instrumentation.visited - before, label).toBeLessThan(200)
          expect(page.length, label).toBe(label.includes("external_id") ? 1 : 50)
        }
        // A read of no declared path still works: its index is built on first use, then kept.
        const undeclared: ListQuery = { where: live, sort: { field: "external_id", kind: "text", direction: "asc" }, limit: 50 }
        const before = instrumentation.visited
        expect(yield* records.list(tenantA, "product", undeclared)).toHaveLength(50)
        expect(instrumentation.visited - before).toBeGreaterThan(M)
        const again = instrumentation.visited
        yield* records.list(tenantA, "product", undeclared)
        expect(instrumentation.visited - again).toBeLessThan(200)
      }).pipe(Effect.provide(MemoryStore)), 120_000)

    it.effect("without the declarations, the first read builds its index (what the counter would show)", () =>
      Effect.gen(function* () {
        const records = yield* Records
        yield* load
        const before = instrumentation.visited
        yield* records.list(tenantA, "product", queries[0]![1])
        expect(instrumentation.visited - before).toBeGreaterThan(M)
      }).pipe(Effect.provide(memoryStore([]))), 120_000)
  })

  it.effect("prune removes through the timestamp index, in every tenant, and only the type", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      const stamp = (i: number) => `2024-01-${String(1 + (i % 28)).padStart(2, "0")}T00:00:00Z`
      yield* uow.transaction(Effect.forEach(Array.from({ length: 20_000 }, (_, i) => i), (i) =>
        records.insert(tenantA, "visit", `vis_${i}`, { created_at: stamp(i) }), { discard: true }))
      yield* records.insert(tenantB, "visit", "vis_b_old", { created_at: "2023-12-31T00:00:00Z" })
      yield* records.insert(tenantB, "visit", "vis_b_new", { created_at: "2025-01-01T00:00:00Z" })
      yield* records.insert(tenantB, "visit", "vis_b_null", { created_at: null })
      yield* records.insert(tenantB, "audit", "aud_old", { created_at: "2000-01-01T00:00:00Z" })
      yield* records.prune("visit", "created_at", "2000-01-01T00:00:00Z", 1_000_000) // builds the index
      const before = instrumentation.visited
      const removed = yield* records.prune("visit", "created_at", "2024-01-02T00:00:00Z", 1_000_000)
      const expectedRemoved = Array.from({ length: 20_000 }, (_, i) => i).filter((i) => i % 28 === 0).length + 1
      expect(removed).toBe(expectedRemoved)
      expect(instrumentation.visited - before).toBeLessThan(expectedRemoved + 100)
      expect(yield* records.get(tenantB, "visit", "vis_b_new")).toBeDefined()
      expect(yield* records.get(tenantB, "visit", "vis_b_null")).toBeDefined()
      expect(yield* records.get(tenantB, "audit", "aud_old")).toBeDefined()
      expect((yield* records.count(tenantA, "visit", [], []))[0]?.count).toBe(20_000 - expectedRemoved + 1)
    }).pipe(Effect.provide(MemoryStore)), 60_000)
})
