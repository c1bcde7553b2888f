/**
 * The conformance suite of the store ports: what every store (memory, PostgreSQL) must do, seen
 * only through the ports. Stores may share state between tests (one database), so every test
 * works in its own tenant, on its own unique values, rate-limit keys and prunable type.
 */
import { randomUUID } from "node:crypto"
import { describe, expect, layer } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, type Layer } from "effect"
import {
  type Environment,
  Idempotency,
  LESSON_PROGRESS_FIGURES,
  SALES_PRODUCT_FIGURES,
  type IdempotencyClaim,
  NOT_REPLAYABLE_HEADER,
  RateLimitStore,
  type RateCheck,
  Records,
  RevisionConflict,
  type SortSpec,
  type StoredRecord,
  type Tenant,
  UniqueViolation,
  UnitOfWork,
  type Where,
  type WindowCounts
} from "@syllabus/core"

type Stores = Records | UnitOfWork | Idempotency | RateLimitStore

const newTenant = (environment: Environment = "sandbox"): Tenant => ({ accountId: `acc_${randomUUID()}`, environment })
const fresh = (prefix: string): string => `${prefix}_${randomUUID()}`

const ids = (records: ReadonlyArray<StoredRecord>): ReadonlyArray<string> => records.map((r) => r.id)

/** The keyset position of a record, as a caller builds it from a page's last item. */
const positionOf = (record: StoredRecord, sort: SortSpec): { value: string | number | null; id: string } => {
  if (sort.field === "id") return { value: record.id, id: record.id }
  const value = record.data[sort.field]
  return { value: typeof value === "string" || typeof value === "number" ? value : null, id: record.id }
}

const byId: SortSpec = { field: "id", kind: "text", direction: "asc" }

/**
 * Seven records covering the cases of filters and sorts: ties on the sort value, null and
 * missing values, upper and lower case (code-unit order), numbers that sort differently as text.
 */
const fixture = [
  { id: "r_a", data: { title: "banana", rank: 10, status: "open", flag: true } },
  { id: "r_b", data: { title: "Apple", rank: 2, status: "closed", flag: false } },
  { id: "r_c", data: { title: "apple", rank: 2, status: "open" } },
  { id: "r_d", data: { title: null, rank: null, status: "draft" } },
  { id: "r_e", data: { status: "open" } },
  { id: "r_f", data: { title: "cherry", rank: -1.5, status: "closed", flag: true } },
  { id: "r_g", data: { title: "banana", rank: 100, status: "open" } }
] as const

const claimAttempt = (token: string, overrides: Partial<{ now: number; staleBefore: number; expiresAt: number }> = {}) => ({
  operationId: "op_create_course",
  fingerprint: "fp_1",
  token,
  now: 1_000,
  staleBefore: 0,
  expiresAt: 100_000,
  ...overrides
})

const WINDOW_MS = 60_000
const W = 1_700_000_040_000
const admitAll = () => true
const refuseAll = () => false

export const storeConformance = (name: string, storeLayer: Layer.Layer<Stores, unknown>): void =>
  // One store for the whole suite (a database is costly to set up); no test services, so a
  // store that uses the clock internally runs on real time.
  layer(storeLayer, { excludeTestServices: true, timeout: "120 seconds" })(`${name} store conformance`, (it) => {
    const seed = (tenant: Tenant, type = "item") =>
      Effect.gen(function* () {
        const records = yield* Records
        for (const { id, data } of fixture) yield* records.insert(tenant, type, id, data)
      })

    describe("Records: insert, get, findUnique", () => {
      it.effect("insert stores the record at revision 1 and get reads it back", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          const data = { title: "Algebra", tags: ["a", "b"], meta: { level: 2, draft: false }, note: null }
          const inserted = yield* records.insert(tenant, "course", "crs_1", data)
          const expected = { type: "course", id: "crs_1", tenant, revision: 1, data }
          expect(inserted).toEqual(expected)
          expect(yield* records.get(tenant, "course", "crs_1")).toEqual(expected)
        }))

      it.effect("get is scoped by account, environment and type", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant("production")
          yield* records.insert(tenant, "course", "crs_1", { n: 1 })
          expect(yield* records.get(tenant, "course", "crs_2")).toBeUndefined()
          expect(yield* records.get(tenant, "lesson", "crs_1")).toBeUndefined()
          expect(yield* records.get({ ...tenant, environment: "sandbox" }, "course", "crs_1")).toBeUndefined()
          expect(yield* records.get(newTenant("production"), "course", "crs_1")).toBeUndefined()
        }))

      it.effect("an id is unique per tenant and type: a second insert fails with UniqueViolation(id)", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", { n: 1 })
          const error = yield* Effect.flip(records.insert(tenant, "course", "crs_1", { n: 2 }))
          expect(error).toEqual(new UniqueViolation({ name: "id" }))
          expect((yield* records.get(tenant, "course", "crs_1"))?.data).toEqual({ n: 1 })
          // The same id elsewhere is another record.
          yield* records.insert(tenant, "lesson", "crs_1", { n: 3 })
          yield* records.insert({ ...tenant, environment: "production" }, "course", "crs_1", { n: 4 })
          yield* records.insert(newTenant(), "course", "crs_1", { n: 5 })
        }))

      it.effect("insertMany stores every row at revision 1, in and out of a unit of work, over several statements", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          // More rows than one statement of the PostgreSQL store takes (500).
          const rows = Array.from({ length: 1_203 }, (_, i) => ({ id: `itm_${String(i).padStart(5, "0")}`, data: { n: i, note: "é\"'\\" } }))
          const inserted = yield* records.insertMany(tenant, "item", rows)
          expect(inserted).toHaveLength(rows.length)
          expect(yield* records.get(tenant, "item", "itm_01202")).toEqual({ type: "item", id: "itm_01202", tenant, revision: 1, data: { n: 1202, note: "é\"'\\" } })
          expect(yield* records.count(tenant, "item", [], [])).toEqual([{ key: [], count: 1_203 }])
          yield* uow.transaction(records.insertMany(tenant, "other", rows.slice(0, 3)))
          expect(ids(yield* records.list(tenant, "other", { where: [], sort: byId, limit: 10 }))).toEqual(["itm_00000", "itm_00001", "itm_00002"])
          expect(yield* records.insertMany(tenant, "other", [])).toEqual([])
        }))

      it.effect("insertMany is all or nothing: one id taken (in the store or twice in the call) keeps none of them", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* records.insert(tenant, "item", "itm_taken", { n: 0 })
          const rows = Array.from({ length: 700 }, (_, i) => ({ id: i === 650 ? "itm_taken" : `itm_${i}`, data: { n: i } }))
          expect(yield* Effect.flip(records.insertMany(tenant, "item", rows))).toEqual(new UniqueViolation({ name: "id" }))
          expect(yield* records.count(tenant, "item", [], [])).toEqual([{ key: [], count: 1 }])
          const twice = [{ id: "itm_x", data: {} }, { id: "itm_x", data: {} }]
          expect(yield* Effect.flip(records.insertMany(tenant, "item", twice))).toEqual(new UniqueViolation({ name: "id" }))
          // A few rows (one statement of the PostgreSQL store), one of them taken.
          const few = [{ id: "itm_a", data: {} }, { id: "itm_taken", data: {} }, { id: "itm_b", data: {} }]
          expect(yield* Effect.flip(records.insertMany(tenant, "item", few))).toEqual(new UniqueViolation({ name: "id" }))
          expect(yield* records.count(tenant, "item", [], [])).toEqual([{ key: [], count: 1 }])
          // Inside a unit of work, the refusal leaves the unit's other writes usable.
          const kept = yield* uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(tenant, "item", "itm_before", { n: 1 })
              const refused = yield* Effect.flip(records.insertMany(tenant, "item", rows))
              yield* records.insert(tenant, "item", "itm_after", { n: 2 })
              return refused
            })
          )
          expect(kept).toEqual(new UniqueViolation({ name: "id" }))
          expect(ids(yield* records.list(tenant, "item", { where: [], sort: byId, limit: 10 }))).toEqual(["itm_after", "itm_before", "itm_taken"])
        }))

      it.effect("tenant keys are unique within (tenant, type, name)", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", {}, [{ name: "slug", value: "algebra" }])
          const error = yield* Effect.flip(
            records.insert(tenant, "course", "crs_2", {}, [
              { name: "code", value: "MATH" },
              { name: "slug", value: "algebra" }
            ])
          )
          expect(error).toEqual(new UniqueViolation({ name: "slug" }))
          // Nothing of the failed insert was kept: neither the record nor its free key.
          expect(yield* records.get(tenant, "course", "crs_2")).toBeUndefined()
          expect(yield* records.findUnique(tenant, "course", { name: "code", value: "MATH" })).toBeUndefined()
          yield* records.insert(tenant, "course", "crs_3", {}, [{ name: "code", value: "MATH" }])
          // Same value under another name, in another type, environment or account: no conflict.
          yield* records.insert(tenant, "course", "crs_4", {}, [{ name: "title", value: "algebra" }])
          yield* records.insert(tenant, "lesson", "les_1", {}, [{ name: "slug", value: "algebra" }])
          yield* records.insert({ ...tenant, environment: "production" }, "course", "crs_1", {}, [
            { name: "slug", value: "algebra" }
          ])
          yield* records.insert(newTenant(), "course", "crs_1", {}, [{ name: "slug", value: "algebra" }])
        }))

      it.effect("inside a unit of work, an insert whose key is taken keeps nothing of itself, and the unit goes on", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", {}, [{ name: "slug", value: "algebra" }])
          const error = yield* uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(tenant, "course", "crs_0", {}, [{ name: "code", value: "ZERO" }])
              const refused = yield* Effect.flip(
                records.insert(tenant, "course", "crs_2", { n: 2 }, [
                  { name: "code", value: "MATH" },
                  { name: "slug", value: "algebra" }
                ])
              )
              // Within the unit too: neither the record nor its free key.
              expect(yield* records.get(tenant, "course", "crs_2")).toBeUndefined()
              expect(yield* records.findUnique(tenant, "course", { name: "code", value: "MATH" })).toBeUndefined()
              yield* records.insert(tenant, "course", "crs_3", {}, [{ name: "code", value: "MATH" }])
              return refused
            })
          )
          expect(error).toEqual(new UniqueViolation({ name: "slug" }))
          expect(yield* records.get(tenant, "course", "crs_2")).toBeUndefined()
          expect((yield* records.findUnique(tenant, "course", { name: "code", value: "MATH" }))?.id).toBe("crs_3")
          expect((yield* records.findUnique(tenant, "course", { name: "code", value: "ZERO" }))?.id).toBe("crs_0")
          expect((yield* records.findUnique(tenant, "course", { name: "slug", value: "algebra" }))?.id).toBe("crs_1")
          // An id taken inside a unit: UniqueViolation(id), the holder's keys untouched.
          const taken = yield* uow.transaction(Effect.flip(records.insert(tenant, "course", "crs_1", {}, [{ name: "slug", value: "other" }])))
          expect(taken).toEqual(new UniqueViolation({ name: "id" }))
          expect(yield* records.findUnique(tenant, "course", { name: "slug", value: "other" })).toBeUndefined()
          expect((yield* records.findUnique(tenant, "course", { name: "slug", value: "algebra" }))?.id).toBe("crs_1")
        }))

      it.effect("findUnique finds the holder of a tenant key, in its tenant only", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", { n: 1 }, [
            { name: "slug", value: "algebra" },
            { name: "code", value: "MATH" }
          ])
          expect((yield* records.findUnique(tenant, "course", { name: "slug", value: "algebra" }))?.id).toBe("crs_1")
          const byCode = yield* records.findUnique(tenant, "course", { name: "code", value: "MATH" })
          expect(byCode).toEqual({ type: "course", id: "crs_1", tenant, revision: 1, data: { n: 1 } })
          expect(yield* records.findUnique(tenant, "course", { name: "slug", value: "geometry" })).toBeUndefined()
          expect(yield* records.findUnique(tenant, "course", { name: "code", value: "algebra" })).toBeUndefined()
          expect(yield* records.findUnique(tenant, "lesson", { name: "slug", value: "algebra" })).toBeUndefined()
          expect(yield* records.findUnique(newTenant(), "course", { name: "slug", value: "algebra" })).toBeUndefined()
        }))

      it.effect("global keys are unique across tenants and found without a tenant", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const [one, two] = [newTenant(), newTenant("production")]
          const hash = fresh("hash")
          yield* records.insert(one, "credential", "crd_1", { n: 1 }, [{ name: "secret", value: hash, global: true }])
          const error = yield* Effect.flip(
            records.insert(two, "credential", "crd_2", {}, [{ name: "secret", value: hash, global: true }])
          )
          expect(error).toEqual(new UniqueViolation({ name: "secret" }))
          expect(yield* records.get(two, "credential", "crd_2")).toBeUndefined()
          const found = yield* records.findUnique("global", "credential", { name: "secret", value: hash })
          expect(found).toEqual({ type: "credential", id: "crd_1", tenant: one, revision: 1, data: { n: 1 } })
          expect(yield* records.findUnique("global", "credential", { name: "secret", value: fresh("hash") })).toBeUndefined()
          expect(yield* records.findUnique("global", "token", { name: "secret", value: hash })).toBeUndefined()
          // A global key of another type is another key.
          yield* records.insert(two, "token", "tok_1", {}, [{ name: "secret", value: hash, global: true }])
        }))

      it.effect("stored values are copies: mutating the input or the output changes nothing stored", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          const data = { list: [1, 2], nested: { a: "x" } }
          yield* records.insert(tenant, "course", "crs_1", data)
          data.list.push(3)
          data.nested.a = "changed"
          const read = yield* records.get(tenant, "course", "crs_1")
          expect(read?.data).toEqual({ list: [1, 2], nested: { a: "x" } })
          try {
            // A store may hand out frozen objects: then this throws, which is fine too.
            ;(read?.data["list"] as Array<number>).push(4)
          } catch {
            // frozen
          }
          expect((yield* records.get(tenant, "course", "crs_1"))?.data).toEqual({ list: [1, 2], nested: { a: "x" } })
        }))
    })

    describe("Records: update and remove", () => {
      it.effect("update replaces the data and adds one to the revision", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", { title: "A", extra: true })
          const updated = yield* records.update(tenant, "course", "crs_1", { title: "B" })
          expect(updated).toEqual({ type: "course", id: "crs_1", tenant, revision: 2, data: { title: "B" } })
          expect(yield* records.get(tenant, "course", "crs_1")).toEqual(updated)
          const again = yield* records.update(tenant, "course", "crs_1", { title: "C" }, { expectedRevision: 2 })
          expect(again.revision).toBe(3)
          expect((yield* records.get(tenant, "course", "crs_1"))?.data).toEqual({ title: "C" })
        }))

      it.effect("update with a stale expectedRevision fails with RevisionConflict(current) and changes nothing", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", { title: "A" }, [{ name: "slug", value: "a" }])
          yield* records.update(tenant, "course", "crs_1", { title: "B" })
          const error = yield* Effect.flip(
            records.update(tenant, "course", "crs_1", { title: "C" }, { expectedRevision: 1, uniques: [] })
          )
          expect(error).toEqual(new RevisionConflict({ current: 2 }))
          const current = yield* records.get(tenant, "course", "crs_1")
          expect(current?.revision).toBe(2)
          expect(current?.data).toEqual({ title: "B" })
          expect((yield* records.findUnique(tenant, "course", { name: "slug", value: "a" }))?.id).toBe("crs_1")
        }))

      it.effect("update of a missing record fails with RevisionConflict(null)", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          expect(yield* Effect.flip(records.update(tenant, "course", "crs_x", { n: 1 }))).toEqual(
            new RevisionConflict({ current: null })
          )
          expect(
            yield* Effect.flip(records.update(tenant, "course", "crs_x", { n: 1 }, { expectedRevision: 1 }))
          ).toEqual(new RevisionConflict({ current: null }))
          expect(yield* records.get(tenant, "course", "crs_x")).toBeUndefined()
        }))

      it.effect("update keeps the unique keys unless given, and replaces them when given", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          const hash = fresh("hash")
          yield* records.insert(tenant, "course", "crs_1", {}, [
            { name: "slug", value: "a" },
            { name: "secret", value: hash, global: true }
          ])
          yield* records.update(tenant, "course", "crs_1", { n: 1 })
          expect((yield* records.findUnique(tenant, "course", { name: "slug", value: "a" }))?.id).toBe("crs_1")
          expect((yield* records.findUnique("global", "course", { name: "secret", value: hash }))?.id).toBe("crs_1")

          yield* records.update(tenant, "course", "crs_1", { n: 2 }, { uniques: [{ name: "slug", value: "b" }] })
          expect((yield* records.findUnique(tenant, "course", { name: "slug", value: "b" }))?.id).toBe("crs_1")
          expect(yield* records.findUnique(tenant, "course", { name: "slug", value: "a" })).toBeUndefined()
          expect(yield* records.findUnique("global", "course", { name: "secret", value: hash })).toBeUndefined()
          // The freed keys can be taken by others.
          yield* records.insert(tenant, "course", "crs_2", {}, [
            { name: "slug", value: "a" },
            { name: "secret", value: hash, global: true }
          ])
          // Keeping a key one already holds is no conflict.
          const kept = yield* records.update(tenant, "course", "crs_1", { n: 3 }, { uniques: [{ name: "slug", value: "b" }] })
          expect(kept.revision).toBe(4)
        }))

      it.effect("update whose new keys are taken fails with UniqueViolation and changes nothing", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", { n: 1 }, [{ name: "slug", value: "a" }])
          yield* records.insert(tenant, "course", "crs_2", { n: 2 }, [{ name: "slug", value: "b" }])
          const error = yield* Effect.flip(
            records.update(tenant, "course", "crs_1", { n: 10 }, {
              expectedRevision: 1,
              uniques: [{ name: "code", value: "X" }, { name: "slug", value: "b" }]
            })
          )
          expect(error).toEqual(new UniqueViolation({ name: "slug" }))
          expect(yield* records.get(tenant, "course", "crs_1")).toEqual({
            type: "course",
            id: "crs_1",
            tenant,
            revision: 1,
            data: { n: 1 }
          })
          expect((yield* records.findUnique(tenant, "course", { name: "slug", value: "a" }))?.id).toBe("crs_1")
          expect(yield* records.findUnique(tenant, "course", { name: "code", value: "X" })).toBeUndefined()
        }))

      it.effect("remove tells whether the record existed and frees its keys and its id", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          const hash = fresh("hash")
          yield* records.insert(tenant, "course", "crs_1", { n: 1 }, [
            { name: "slug", value: "a" },
            { name: "secret", value: hash, global: true }
          ])
          yield* records.update(tenant, "course", "crs_1", { n: 2 })
          expect(yield* records.remove(tenant, "lesson", "crs_1")).toBe(false)
          expect(yield* records.remove(newTenant(), "course", "crs_1")).toBe(false)
          expect(yield* records.remove(tenant, "course", "crs_1")).toBe(true)
          expect(yield* records.remove(tenant, "course", "crs_1")).toBe(false)
          expect(yield* records.get(tenant, "course", "crs_1")).toBeUndefined()
          expect(yield* records.findUnique(tenant, "course", { name: "slug", value: "a" })).toBeUndefined()
          expect(yield* records.findUnique("global", "course", { name: "secret", value: hash })).toBeUndefined()
          const again = yield* records.insert(tenant, "course", "crs_1", { n: 3 }, [
            { name: "slug", value: "a" },
            { name: "secret", value: hash, global: true }
          ])
          expect(again.revision).toBe(1)
        }))

      it.effect("50 concurrent updates at the same expected revision: exactly one succeeds", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", { n: 0 })
          const results = yield* Effect.all(
            Array.from({ length: 50 }, (_, i) =>
              Effect.either(records.update(tenant, "course", "crs_1", { n: i + 1 }, { expectedRevision: 1 }))
            ),
            { concurrency: "unbounded" }
          )
          const won = results.filter((r) => r._tag === "Right")
          expect(won).toHaveLength(1)
          for (const r of results) {
            if (r._tag === "Left") expect(r.left).toEqual(new RevisionConflict({ current: 2 }))
          }
          const current = yield* records.get(tenant, "course", "crs_1")
          expect(current?.revision).toBe(2)
          expect(current?.data).toEqual(won[0]?._tag === "Right" ? won[0].right.data : undefined)
        }))
    })

    describe("Records: list", () => {
      const list = (tenant: Tenant, where: ReadonlyArray<Where>, sort: SortSpec = byId, limit = 100) =>
        Effect.flatMap(Records, (records) => records.list(tenant, "item", { where, sort, limit }))

      it.effect("filters with eq (null matches missing), in, and combined conditions", () =>
        Effect.gen(function* () {
          const tenant = newTenant()
          yield* seed(tenant)
          expect(ids(yield* list(tenant, [{ field: "status", op: "eq", value: "open" }]))).toEqual([
            "r_a",
            "r_c",
            "r_e",
            "r_g"
          ])
          expect(ids(yield* list(tenant, [{ field: "title", op: "eq", value: null }]))).toEqual(["r_d", "r_e"])
          expect(ids(yield* list(tenant, [{ field: "flag", op: "eq", value: true }]))).toEqual(["r_a", "r_f"])
          expect(ids(yield* list(tenant, [{ field: "flag", op: "eq", value: false }]))).toEqual(["r_b"])
          expect(ids(yield* list(tenant, [{ field: "rank", op: "eq", value: 2 }]))).toEqual(["r_b", "r_c"])
          expect(ids(yield* list(tenant, [{ field: "title", op: "eq", value: "apple" }]))).toEqual(["r_c"])
          expect(ids(yield* list(tenant, [{ field: "nothing", op: "eq", value: "x" }]))).toEqual([])
          expect(ids(yield* list(tenant, [{ field: "status", op: "in", values: ["draft", "closed"] }]))).toEqual([
            "r_b",
            "r_d",
            "r_f"
          ])
          expect(ids(yield* list(tenant, [{ field: "status", op: "in", values: [] }]))).toEqual([])
          expect(
            ids(
              yield* list(tenant, [
                { field: "status", op: "eq", value: "open" },
                { field: "rank", op: "gte", value: 10 }
              ])
            )
          ).toEqual(["r_a", "r_g"])
        }))

      it.effect("filters with gt/gte/lt/lte: numbers numerically, text by code unit, nulls never match", () =>
        Effect.gen(function* () {
          const tenant = newTenant()
          yield* seed(tenant)
          const range = (field: string, op: "gt" | "gte" | "lt" | "lte", value: string | number) =>
            Effect.map(list(tenant, [{ field, op, value }]), ids)
          expect(yield* range("rank", "gt", 2)).toEqual(["r_a", "r_g"])
          expect(yield* range("rank", "gte", 2)).toEqual(["r_a", "r_b", "r_c", "r_g"])
          expect(yield* range("rank", "lt", 2)).toEqual(["r_f"])
          expect(yield* range("rank", "lte", 2)).toEqual(["r_b", "r_c", "r_f"])
          expect(yield* range("rank", "gt", 9.5)).toEqual(["r_a", "r_g"])
          // "Apple" < "apple" < "banana" < "cherry" in code-unit order.
          expect(yield* range("title", "gt", "apple")).toEqual(["r_a", "r_f", "r_g"])
          expect(yield* range("title", "gte", "apple")).toEqual(["r_a", "r_c", "r_f", "r_g"])
          expect(yield* range("title", "lt", "apple")).toEqual(["r_b"])
          expect(yield* range("title", "lte", "banana")).toEqual(["r_a", "r_b", "r_c", "r_g"])
        }))

      const orders: ReadonlyArray<readonly [string, SortSpec, ReadonlyArray<string>]> = [
        // Nulls first ascending; ties (banana, rank 2) by id.
        ["text asc", { field: "title", kind: "text", direction: "asc" }, ["r_d", "r_e", "r_b", "r_c", "r_a", "r_g", "r_f"]],
        ["text desc", { field: "title", kind: "text", direction: "desc" }, ["r_f", "r_g", "r_a", "r_c", "r_b", "r_e", "r_d"]],
        ["number asc", { field: "rank", kind: "number", direction: "asc" }, ["r_d", "r_e", "r_f", "r_b", "r_c", "r_a", "r_g"]],
        ["number desc", { field: "rank", kind: "number", direction: "desc" }, ["r_g", "r_a", "r_c", "r_b", "r_f", "r_e", "r_d"]],
        ["id asc", { field: "id", kind: "text", direction: "asc" }, ["r_a", "r_b", "r_c", "r_d", "r_e", "r_f", "r_g"]],
        ["id desc", { field: "id", kind: "text", direction: "desc" }, ["r_g", "r_f", "r_e", "r_d", "r_c", "r_b", "r_a"]]
      ]

      for (const [label, sort, expected] of orders) {
        it.effect(`sorts (${label}) and pages by keyset without gaps or repeats`, () =>
          Effect.gen(function* () {
            const records = yield* Records
            const tenant = newTenant()
            yield* seed(tenant)
            expect(ids(yield* list(tenant, [], sort))).toEqual(expected)
            expect(ids(yield* list(tenant, [], sort, 3))).toEqual(expected.slice(0, 3))
            for (const limit of [1, 2, 3]) {
              const seen: Array<string> = []
              let after: { value: string | number | null; id: string } | undefined
              for (let page = 0; page < 10; page++) {
                const items = yield* records.list(tenant, "item", { where: [], sort, after, limit })
                seen.push(...ids(items))
                const last = items[items.length - 1]
                if (items.length < limit || last === undefined) break
                after = positionOf(last, sort)
              }
              expect(seen).toEqual(expected)
            }
          }))
      }

      it.effect("after is strictly after a position, null positions included, combined with filters", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* seed(tenant)
          const titleAsc: SortSpec = { field: "title", kind: "text", direction: "asc" }
          const titleDesc: SortSpec = { ...titleAsc, direction: "desc" }
          const page = (sort: SortSpec, after: { value: string | number | null; id: string }, where: ReadonlyArray<Where> = []) =>
            Effect.map(records.list(tenant, "item", { where, sort, after, limit: 100 }), ids)
          expect(yield* page(titleAsc, { value: "apple", id: "r_c" })).toEqual(["r_a", "r_g", "r_f"])
          expect(yield* page(titleAsc, { value: "banana", id: "r_a" })).toEqual(["r_g", "r_f"])
          expect(yield* page(titleAsc, { value: null, id: "r_d" })).toEqual(["r_e", "r_b", "r_c", "r_a", "r_g", "r_f"])
          expect(yield* page(titleDesc, { value: "Apple", id: "r_b" })).toEqual(["r_e", "r_d"])
          expect(yield* page(titleDesc, { value: null, id: "r_e" })).toEqual(["r_d"])
          // A position need not be a stored record.
          expect(yield* page(titleAsc, { value: "b", id: "r_z" })).toEqual(["r_a", "r_g", "r_f"])
          expect(
            yield* page({ field: "rank", kind: "number", direction: "asc" }, { value: 2, id: "r_b" }, [
              { field: "status", op: "eq", value: "open" }
            ])
          ).toEqual(["r_c", "r_a", "r_g"])
        }))

      // Types whose lists the release declares (`module` by product, ordered by name or by
      // position; `enrollment` by product, by id): an `in` of several products is read through
      // the path's index, which a store may do one value at a time (PostgreSQL reads a page per
      // value and merges them). The pages must be the list's, in order, nulls and ties included.
      const inFixture = [
        { id: "m_a", data: { product_id: "p1", deleted: false, name: "beta", position: 2 } },
        { id: "m_b", data: { product_id: "p2", deleted: false, name: "Alpha", position: 1 } },
        { id: "m_c", data: { product_id: "p1", deleted: false, name: null, position: null } },
        { id: "m_d", data: { product_id: "p3", deleted: false, name: "beta", position: 2 } },
        { id: "m_e", data: { product_id: "p2", deleted: false, position: 1.5 } },
        { id: "m_f", data: { product_id: "p1", deleted: false, name: "alpha", position: -1 } },
        { id: "m_g", data: { product_id: "p9", deleted: false, name: "aaa", position: 0 } },
        { id: "m_h", data: { product_id: "p2", deleted: true, name: "beta", position: 2 } },
        { id: "m_i", data: { product_id: "p3", deleted: false, name: 42, position: "3" } },
        { id: "m_j", data: { product_id: "p2", deleted: false, name: "gamma", position: 10 } }
      ] as const
      const byName = ["m_c", "m_e", "m_i", "m_b", "m_f", "m_a", "m_d", "m_j"]
      const byPosition = ["m_c", "m_i", "m_f", "m_b", "m_e", "m_a", "m_d", "m_j"]
      const byIds = ["m_a", "m_b", "m_c", "m_d", "m_e", "m_f", "m_i", "m_j"]
      const inOrders: ReadonlyArray<readonly [string, string, SortSpec, ReadonlyArray<string>]> = [
        ["text asc", "module", { field: "name", kind: "text", direction: "asc" }, byName],
        ["text desc", "module", { field: "name", kind: "text", direction: "desc" }, [...byName].reverse()],
        ["number asc", "module", { field: "position", kind: "number", direction: "asc" }, byPosition],
        ["number desc", "module", { field: "position", kind: "number", direction: "desc" }, [...byPosition].reverse()],
        ["id asc", "enrollment", { field: "id", kind: "text", direction: "asc" }, byIds],
        ["id desc", "enrollment", { field: "id", kind: "text", direction: "desc" }, [...byIds].reverse()]
      ]

      for (const [label, type, sort, expected] of inOrders) {
        it.effect(`an in of several values on an indexed field, sorted (${label}), pages by keyset as one list`, () =>
          Effect.gen(function* () {
            const records = yield* Records
            const tenant = newTenant()
            for (const { id, data } of inFixture) yield* records.insert(tenant, type, id, data)
            // Values repeated, and one that matches nothing, change nothing.
            const where: ReadonlyArray<Where> = [
              { field: "product_id", op: "in", values: ["p3", "p1", "p404", "p2", "p1"] },
              { field: "deleted", op: "eq", value: false }
            ]
            const page = (after: { value: string | number | null; id: string } | undefined, limit: number) =>
              records.list(tenant, type, { where, sort, after, limit })
            expect(ids(yield* page(undefined, 100))).toEqual(expected)
            for (const limit of [1, 2, 3, 5]) {
              const seen: Array<string> = []
              let after: { value: string | number | null; id: string } | undefined
              for (let n = 0; n < 10; n++) {
                const items = yield* page(after, limit)
                seen.push(...ids(items))
                const last = items[items.length - 1]
                if (items.length < limit || last === undefined) break
                after = positionOf(last, sort)
              }
              expect(seen).toEqual(expected)
            }
            // A position need not be a stored record; a null one is before every value ascending.
            if (sort.field !== "id") {
              const nulls = inFixture
                .filter(({ data }) => typeof (data as Record<string, unknown>)[sort.field] !== (sort.kind === "number" ? "number" : "string"))
                .map(({ id }) => id as string)
              expect(ids(yield* page({ value: null, id: "m_d" }, 100))).toEqual(
                sort.direction === "asc"
                  ? expected.filter((id) => !nulls.includes(id) || id > "m_d")
                  : expected.filter((id) => nulls.includes(id) && id < "m_d")
              )
            }
            // Two values, and one value, read the same way.
            expect(ids(yield* records.list(tenant, type, { where: [{ field: "product_id", op: "in", values: ["p2", "p3"] }, where[1]!], sort, limit: 100 })))
              .toEqual(expected.filter((id) => ["m_b", "m_d", "m_e", "m_i", "m_j"].includes(id)))
            expect(ids(yield* records.list(tenant, type, { where: [{ field: "product_id", op: "in", values: ["p1", "p1"] }, where[1]!], sort, limit: 100 })))
              .toEqual(expected.filter((id) => ["m_a", "m_c", "m_f"].includes(id)))
          }))
      }

      it.effect("contains: a case-insensitive substring of a text field, with LIKE characters taken literally", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* records.insert(tenant, "doc", "d_1", { title: "Intro to Effect" })
          yield* records.insert(tenant, "doc", "d_2", { title: "100% effective_ness" })
          yield* records.insert(tenant, "doc", "d_3", { title: 42 })
          yield* records.insert(tenant, "doc", "d_4", {})
          const search = (value: string) =>
            records
              .list(tenant, "doc", { where: [{ field: "title", op: "contains", value }], sort: { field: "id", kind: "text", direction: "asc" }, limit: 10 })
              .pipe(Effect.map(ids))
          expect(yield* search("EFFECT")).toEqual(["d_1", "d_2"])
          expect(yield* search("%")).toEqual(["d_2"])
          expect(yield* search("e_n")).toEqual(["d_2"])
          expect(yield* search("t_n")).toEqual([])
          expect(yield* search("4")).toEqual([])
        }))

      it.effect("scan: records of a type across every tenant, in id order", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const type = fresh("scanned")
          const [a, b] = [newTenant(), newTenant("production")]
          yield* records.insert(b, type, "s_2", { status: "open" })
          yield* records.insert(a, type, "s_1", { status: "open" })
          yield* records.insert(a, type, "s_3", { status: "closed" })
          const found = yield* records.scan(type, [{ field: "status", op: "eq", value: "open" }], 10)
          expect(found.map((r) => [r.id, r.tenant])).toEqual([
            ["s_1", a],
            ["s_2", b]
          ])
          expect(yield* records.scan(type, [], 1)).toHaveLength(1)
        }))

      it.effect("lists only the tenant's records of the type", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* seed(tenant)
          yield* records.insert(tenant, "other", "r_x", { status: "open" })
          yield* records.insert({ ...tenant, environment: "production" }, "item", "r_y", { status: "open" })
          yield* records.insert(newTenant(), "item", "r_z", { status: "open" })
          expect(ids(yield* list(tenant, []))).toEqual(fixture.map((f) => f.id))
          expect(yield* list(newTenant(), [])).toEqual([])
          expect(yield* list(tenant, [], byId, 0)).toEqual([])
          const [first] = yield* list(tenant, [], byId, 1)
          expect(first).toEqual({ type: "item", id: "r_a", tenant, revision: 1, data: fixture[0].data })
        }))
    })

    describe("Records: count", () => {
      const sorted = (groups: ReadonlyArray<{ readonly key: ReadonlyArray<unknown>; readonly count: number }>) =>
        [...groups].sort((a, b) => (JSON.stringify(a.key) < JSON.stringify(b.key) ? -1 : 1))

      it.effect("without groupBy: one row with key [], zero included", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          expect(yield* records.count(tenant, "item", [], [])).toEqual([{ key: [], count: 0 }])
          yield* seed(tenant)
          expect(yield* records.count(tenant, "item", [], [])).toEqual([{ key: [], count: 7 }])
          expect(yield* records.count(tenant, "item", [{ field: "rank", op: "gte", value: 2 }], [])).toEqual([
            { key: [], count: 4 }
          ])
          expect(yield* records.count(tenant, "item", [{ field: "status", op: "eq", value: "gone" }], [])).toEqual([
            { key: [], count: 0 }
          ])
        }))

      it.effect("with groupBy: one row per distinct combination, null for missing", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* seed(tenant)
          yield* records.insert(newTenant(), "item", "r_a", { status: "open" })
          expect(sorted(yield* records.count(tenant, "item", [], ["status"]))).toEqual(
            sorted([
              { key: ["open"], count: 4 },
              { key: ["closed"], count: 2 },
              { key: ["draft"], count: 1 }
            ])
          )
          expect(sorted(yield* records.count(tenant, "item", [], ["status", "flag"]))).toEqual(
            sorted([
              { key: ["open", true], count: 1 },
              { key: ["open", null], count: 3 },
              { key: ["closed", false], count: 1 },
              { key: ["closed", true], count: 1 },
              { key: ["draft", null], count: 1 }
            ])
          )
          expect(
            sorted(yield* records.count(tenant, "item", [{ field: "status", op: "in", values: ["open"] }], ["title"]))
          ).toEqual(
            sorted([
              { key: ["banana"], count: 2 },
              { key: ["apple"], count: 1 },
              { key: [null], count: 1 }
            ])
          )
          expect(yield* records.count(tenant, "item", [{ field: "status", op: "eq", value: "gone" }], ["status"])).toEqual(
            []
          )
        }))
    })

    describe("Records: getMany", () => {
      it.effect("the records of these IDs that exist, of this tenant and type only", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* seed(tenant)
          yield* records.insert(tenant, "other", "r_x", { title: "another type" })
          yield* records.insert(newTenant(), "item", "r_y", { title: "another tenant" })
          const found = yield* records.getMany(tenant, "item", ["r_c", "r_a", "missing", "r_x", "r_y", "r_a"])
          expect([...found].map((r) => r.id).sort()).toEqual(["r_a", "r_c"])
          expect(found.find((r) => r.id === "r_a")).toEqual(yield* records.get(tenant, "item", "r_a"))
          expect(yield* records.getMany(tenant, "item", [])).toEqual([])
        }))
    })

    describe("Records: aggregate", () => {
      // Scores as a ledger: users, products, points (numbers, a string, a null, a missing one).
      const ledger: ReadonlyArray<readonly [string, Record<string, string | number | boolean | null | ReadonlyArray<number>>]> = [
        ["e01", { user_id: "usr_b", product_id: "prd_1", points: 10, kind: "lesson" }],
        ["e02", { user_id: "usr_a", product_id: "prd_1", points: 5, kind: "exam" }],
        ["e03", { user_id: "usr_b", product_id: "prd_2", points: 2.5, kind: "lesson" }],
        ["e04", { user_id: "usr_c", product_id: "prd_2", points: 12.5, kind: "lesson" }],
        ["e05", { user_id: "usr_a", product_id: "prd_1", points: 7.5, kind: "lesson" }],
        ["e06", { user_id: "usr_c", product_id: "prd_3", points: "9", kind: "exam" }],
        ["e07", { user_id: "usr_d", product_id: "prd_3", points: null, kind: "exam" }],
        ["e08", { user_id: null, product_id: "prd_1", kind: "lesson" }],
        ["e09", { user_id: [1, 2], product_id: "prd_2", points: -1, kind: "lesson" }],
        ["e10", { user_id: 7, product_id: "prd_2", points: 0, kind: true }]
      ]
      const seedLedger = (tenant: Tenant) =>
        Effect.gen(function* () {
          const records = yield* Records
          for (const [id, data] of ledger) yield* records.insert(tenant, "entry", id, data)
          // Another tenant's entries never count.
          yield* records.insert(newTenant(), "entry", "e99", { user_id: "usr_a", product_id: "prd_1", points: 1000 })
        })
      const all = [
        { kind: "count" },
        { kind: "sum", field: "points" },
        { kind: "avg", field: "points" },
        { kind: "min", field: "points" },
        { kind: "max", field: "points" }
      ] as const

      it.effect("without groupBy: one group, null figures over no number, counts 0 over no record", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          const query = { where: [], groupBy: [], measures: all }
          expect(yield* records.aggregate(tenant, "entry", query)).toEqual([{ key: [], values: [0, null, null, null, null] }])
          yield* seedLedger(tenant)
          expect(yield* records.aggregate(tenant, "entry", query)).toEqual([
            { key: [], values: [10, 36.5, 36.5 / 7, -1, 12.5] }
          ])
          expect(
            yield* records.aggregate(tenant, "entry", { ...query, where: [{ field: "product_id", op: "eq", value: "prd_3" }] })
          ).toEqual([{ key: [], values: [2, null, null, null, null] }])
          expect(
            yield* records.aggregate(tenant, "entry", { ...query, where: [{ field: "product_id", op: "eq", value: "prd_9" }] })
          ).toEqual([{ key: [], values: [0, null, null, null, null] }])
        }))

      it.effect("groups ordered by key as text, null first; a non-scalar key is null; numbers stay numbers", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* seedLedger(tenant)
          const rows = yield* records.aggregate(tenant, "entry", { where: [], groupBy: ["user_id"], measures: all })
          expect(rows).toEqual([
            { key: [null], values: [2, -1, -1, -1, -1] },
            { key: [7], values: [1, 0, 0, 0, 0] },
            { key: ["usr_a"], values: [2, 12.5, 6.25, 5, 7.5] },
            { key: ["usr_b"], values: [2, 12.5, 6.25, 2.5, 10] },
            { key: ["usr_c"], values: [2, 12.5, 12.5, 12.5, 12.5] },
            { key: ["usr_d"], values: [1, null, null, null, null] }
          ])
          // Two keys; a boolean key; filtered by `in` on an indexed field.
          expect(
            yield* records.aggregate(tenant, "entry", {
              where: [{ field: "product_id", op: "in", values: ["prd_2", "prd_3"] }],
              groupBy: ["product_id", "kind"],
              measures: [{ kind: "count" }]
            })
          ).toEqual([
            { key: ["prd_2", "lesson"], values: [3] },
            { key: ["prd_2", true], values: [1] },
            { key: ["prd_3", "exam"], values: [2] }
          ])
          // No record matches: no group.
          expect(
            yield* records.aggregate(tenant, "entry", {
              where: [{ field: "product_id", op: "eq", value: "prd_9" }],
              groupBy: ["user_id"],
              measures: [{ kind: "count" }]
            })
          ).toEqual([])
        }))

      it.effect("a range without an equality (read through the range's field): values of another kind are out", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* seedLedger(tenant)
          expect(
            yield* records.aggregate(tenant, "entry", {
              where: [{ field: "points", op: "gte", value: 5 }],
              groupBy: ["product_id"],
              measures: [{ kind: "count" }, { kind: "sum", field: "points" }]
            })
          ).toEqual([
            { key: ["prd_1"], values: [3, 22.5] },
            { key: ["prd_2"], values: [1, 12.5] }
          ])
          expect(
            yield* records.aggregate(tenant, "entry", {
              where: [{ field: "user_id", op: "gte", value: "usr_b" }, { field: "user_id", op: "lt", value: "usr_d" }],
              groupBy: ["user_id"],
              measures: [{ kind: "count" }]
            })
          ).toEqual([
            { key: ["usr_b"], values: [2] },
            { key: ["usr_c"], values: [2] }
          ])
        }))

      it.effect("a measure's filter counts only its records (conditional counts in one read)", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* seedLedger(tenant)
          expect(
            yield* records.aggregate(tenant, "entry", {
              where: [{ field: "product_id", op: "in", values: ["prd_1", "prd_2"] }],
              groupBy: ["product_id"],
              measures: [
                { kind: "count" },
                { kind: "count", filter: [{ field: "kind", op: "eq", value: "lesson" }] },
                { kind: "sum", field: "points", filter: [{ field: "kind", op: "eq", value: "exam" }] },
                { kind: "avg", field: "points", filter: [{ field: "points", op: "gt", value: 0 }] }
              ]
            })
          ).toEqual([
            { key: ["prd_1"], values: [4, 3, 5, 7.5] },
            { key: ["prd_2"], values: [4, 3, null, 7.5] }
          ])
        }))

      it.effect("ordered by a measure (null as 0), ties by key in the same direction, paged after a group", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* seedLedger(tenant)
          const query = {
            where: [],
            groupBy: ["user_id"],
            measures: [{ kind: "sum", field: "points" }, { kind: "count" }] as const,
            order: { measure: 0, direction: "desc" } as const
          }
          const everything = yield* records.aggregate(tenant, "entry", query)
          expect(everything.map((row) => row.key[0])).toEqual(["usr_c", "usr_b", "usr_a", "usr_d", 7, null])
          const first = yield* records.aggregate(tenant, "entry", { ...query, limit: 2 })
          expect(first.map((row) => row.key[0])).toEqual(["usr_c", "usr_b"])
          const second = yield* records.aggregate(tenant, "entry", {
            ...query,
            limit: 3,
            after: { value: 12.5, key: ["usr_b"] }
          })
          expect(second.map((row) => row.key[0])).toEqual(["usr_a", "usr_d", 7])
          const last = yield* records.aggregate(tenant, "entry", { ...query, limit: 3, after: { value: 0, key: ["7"] } })
          expect(last).toEqual([{ key: [null], values: [-1, 2] }])
          // Ascending, after a null key.
          const ascending = yield* records.aggregate(tenant, "entry", {
            ...query,
            order: { measure: 0, direction: "asc" },
            after: { value: 0, key: [null] }
          })
          expect(ascending.map((row) => row.key[0])).toEqual([7, "usr_d", "usr_a", "usr_b", "usr_c"])
          // By key alone, paged.
          const byKey = yield* records.aggregate(tenant, "entry", {
            where: [],
            groupBy: ["user_id"],
            measures: [{ kind: "count" }],
            after: { value: 0, key: ["usr_a"] },
            limit: 2
          })
          expect(byKey).toEqual([{ key: ["usr_b"], values: [2] }, { key: ["usr_c"], values: [2] }])
        }))
    })

    describe("Records: increment and kept figures", () => {
      it.effect("increment makes the record from its fields and deltas, then adds to its numbers (a non-number counts as 0)", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* records.increment(tenant, "tally", "t_1", { group: "g" }, { a: 2, b: -1 })
          expect((yield* records.get(tenant, "tally", "t_1"))?.data).toEqual({ group: "g", a: 2, b: -1 })
          yield* records.update(tenant, "tally", "t_1", { group: "g", a: 2, b: -1, c: "text" })
          yield* records.increment(tenant, "tally", "t_1", { group: "ignored" }, { a: 3, c: 1, d: 5 })
          const record = yield* records.get(tenant, "tally", "t_1")
          expect(record?.data).toEqual({ group: "g", a: 5, b: -1, c: 1, d: 5 })
          expect(record?.revision).toBe(3)
        }))

      it.effect("concurrent increments of one record are all counted; a failed unit of work's are not", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* Effect.forEach(Array.from({ length: 20 }, (_, i) => i), (i) => records.increment(tenant, "tally", "t_1", {}, { n: 1, sum: i }), {
            concurrency: 10
          })
          yield* Effect.exit(uow.transaction(Effect.zipRight(records.increment(tenant, "tally", "t_1", {}, { n: 100 }), Effect.fail("boom"))))
          expect((yield* records.get(tenant, "tally", "t_1"))?.data).toEqual({ n: 20, sum: 190 })
        }))

      it.effect("the figures kept for lesson progress follow inserts, updates and removals, and equal an aggregate of the rows", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          const row = (lesson: string, status: string, percent: number) => ({ lesson_id: lesson, status, percent })
          yield* records.insert(tenant, LESSON_PROGRESS_FIGURES.of, "lpr_1", row("les_a", "in_progress", 40))
          yield* records.insert(tenant, LESSON_PROGRESS_FIGURES.of, "lpr_2", row("les_a", "completed", 100))
          yield* records.insertMany(tenant, LESSON_PROGRESS_FIGURES.of, [
            { id: "lpr_3", data: row("les_a", "not_started", 0) },
            { id: "lpr_4", data: row("les_b", "in_progress", 10) },
            { id: "lpr_5", data: { status: "completed", percent: 100 } }
          ])
          yield* records.update(tenant, LESSON_PROGRESS_FIGURES.of, "lpr_1", row("les_a", "completed", 100))
          yield* records.update(tenant, LESSON_PROGRESS_FIGURES.of, "lpr_3", row("les_a", "in_progress", 30))
          // A write that fails (a stale revision; a unit of work that fails) keeps nothing.
          yield* Effect.flip(records.update(tenant, LESSON_PROGRESS_FIGURES.of, "lpr_4", row("les_b", "completed", 100), { expectedRevision: 9 }))
          yield* Effect.exit(uow.transaction(Effect.zipRight(
            records.update(tenant, LESSON_PROGRESS_FIGURES.of, "lpr_4", row("les_b", "completed", 100)),
            Effect.fail("boom")
          )))
          yield* records.remove(tenant, LESSON_PROGRESS_FIGURES.of, "lpr_2")
          const kept = yield* records.aggregate(tenant, LESSON_PROGRESS_FIGURES.type, {
            where: [{ field: "lesson_id", op: "in", values: ["les_a", "les_b"] }],
            groupBy: ["lesson_id"],
            measures: ["started", "in_progress", "completed", "started_percent"].map((field) => ({ kind: "sum", field }) as const)
          })
          const started: ReadonlyArray<Where> = [{ field: "status", op: "in", values: ["in_progress", "completed"] }]
          const counted = yield* records.aggregate(tenant, LESSON_PROGRESS_FIGURES.of, {
            where: [{ field: "lesson_id", op: "in", values: ["les_a", "les_b"] }],
            groupBy: ["lesson_id"],
            measures: [
              { kind: "count", filter: started },
              { kind: "count", filter: [{ field: "status", op: "eq", value: "in_progress" }] },
              { kind: "count", filter: [{ field: "status", op: "eq", value: "completed" }] },
              { kind: "sum", field: "percent", filter: started }
            ]
          })
          expect(kept).toEqual([{ key: ["les_a"], values: [2, 1, 1, 130] }, { key: ["les_b"], values: [1, 1, 0, 10] }])
          expect(kept).toEqual(counted)
          // The group's figures are spread over shards: records of one lesson, never more than its shards.
          const shards = yield* records.list(tenant, LESSON_PROGRESS_FIGURES.type, {
            where: [{ field: "lesson_id", op: "eq", value: "les_a" }], sort: byId, limit: 100
          })
          expect(shards.length).toBeGreaterThan(0)
          expect(shards.length).toBeLessThanOrEqual(LESSON_PROGRESS_FIGURES.shards)
        }))

      it.effect("a record counted in several groups (a sales event in each of its products) moves each group's figures", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          const sale = (type: string, productIds: ReadonlyArray<string>, stepId: string | null) => ({ type, product_ids: [...productIds], funnel_step_id: stepId })
          yield* records.insert(tenant, SALES_PRODUCT_FIGURES.of, "sev_1", sale("approved", ["prd_a", "prd_b"], "fst_1"))
          yield* records.insert(tenant, SALES_PRODUCT_FIGURES.of, "sev_2", sale("approved", ["prd_a"], null))
          yield* records.insertMany(tenant, SALES_PRODUCT_FIGURES.of, [
            { id: "sev_3", data: sale("refunded", ["prd_a", "prd_a"], null) },
            { id: "sev_4", data: sale("canceled", ["prd_b"], null) }
          ])
          // An update moves every group the record leaves or joins; a removal takes it out of each.
          yield* records.update(tenant, SALES_PRODUCT_FIGURES.of, "sev_2", sale("approved", ["prd_b"], "fst_1"))
          yield* records.insert(tenant, SALES_PRODUCT_FIGURES.of, "sev_5", sale("chargeback", ["prd_b"], null))
          yield* records.remove(tenant, SALES_PRODUCT_FIGURES.of, "sev_5")
          const kept = yield* records.aggregate(tenant, SALES_PRODUCT_FIGURES.type, {
            where: [{ field: "product_id", op: "in", values: ["prd_a", "prd_b"] }],
            groupBy: ["product_id"],
            measures: ["sales_approved", "sales_refunded", "funnel_conversions"].map((field) => ({ kind: "sum", field }) as const)
          })
          // prd_a: sev_1 approved via a funnel, sev_3 refunded (its repeated product counted once).
          // prd_b: sev_1 and sev_2 approved via a funnel.
          expect(kept).toEqual([{ key: ["prd_a"], values: [1, 1, 1] }, { key: ["prd_b"], values: [2, 0, 2] }])
        }))
    })

    describe("Records: purge and prune", () => {
      it.effect("purge removes the tenant's records of other types, frees their keys, and nothing else", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          const production = { ...tenant, environment: "production" as const }
          const neighbour = newTenant()
          const hash = fresh("hash")
          yield* records.insert(tenant, "course", "crs_1", {}, [{ name: "slug", value: "a" }])
          yield* records.insert(tenant, "course", "crs_2", {}, [{ name: "secret", value: hash, global: true }])
          yield* records.insert(tenant, "lesson", "les_1", {})
          yield* records.insert(tenant, "account", "acc_1", {})
          yield* records.insert(tenant, "credential", "crd_1", {})
          yield* records.insert(production, "course", "crs_1", {})
          yield* records.insert(neighbour, "course", "crs_1", {})

          expect(yield* records.purge(tenant, ["account", "credential"])).toBe(3)
          expect(yield* records.get(tenant, "course", "crs_1")).toBeUndefined()
          expect(yield* records.get(tenant, "lesson", "les_1")).toBeUndefined()
          expect(yield* records.get(tenant, "account", "acc_1")).toBeDefined()
          expect(yield* records.get(tenant, "credential", "crd_1")).toBeDefined()
          expect(yield* records.get(production, "course", "crs_1")).toBeDefined()
          expect(yield* records.get(neighbour, "course", "crs_1")).toBeDefined()
          expect(yield* records.findUnique(tenant, "course", { name: "slug", value: "a" })).toBeUndefined()
          expect(yield* records.findUnique("global", "course", { name: "secret", value: hash })).toBeUndefined()
          yield* records.insert(tenant, "course", "crs_3", {}, [
            { name: "slug", value: "a" },
            { name: "secret", value: hash, global: true }
          ])
          expect(yield* records.purge(tenant, ["account", "credential", "course"])).toBe(0)
          expect(yield* records.purge(newTenant(), [])).toBe(0)
        }))

      it.effect("prune removes the records of a type whose timestamp field is before the bound, in every tenant", () =>
        Effect.gen(function* () {
          const records = yield* Records
          // A type of its own: prune is not tenant-scoped, and other tests may share the store.
          const type = fresh("log")
          const other = fresh("log")
          const [one, two] = [newTenant(), newTenant("production")]
          yield* records.insert(one, type, "l_1", { at: "2024-01-01T00:00:00.000Z" }, [{ name: "k", value: "1" }])
          yield* records.insert(one, type, "l_2", { at: "2024-03-01T00:00:00.000Z" })
          yield* records.insert(two, type, "l_3", { at: "2024-02-29T23:59:59.999Z" })
          yield* records.insert(two, type, "l_4", { at: "2024-03-01T00:00:00.001Z" })
          yield* records.insert(two, type, "l_5", { other: "2020-01-01T00:00:00.000Z" })
          yield* records.insert(one, other, "l_6", { at: "2020-01-01T00:00:00.000Z" })

          expect(yield* records.prune(type, "at", "2024-03-01T00:00:00.000Z", 100)).toBe(2)
          expect(yield* records.get(one, type, "l_1")).toBeUndefined()
          expect(yield* records.get(two, type, "l_3")).toBeUndefined()
          expect(yield* records.get(one, type, "l_2")).toBeDefined()
          expect(yield* records.get(two, type, "l_4")).toBeDefined()
          expect(yield* records.get(two, type, "l_5")).toBeDefined()
          expect(yield* records.get(one, other, "l_6")).toBeDefined()
          expect(yield* records.findUnique(one, type, { name: "k", value: "1" })).toBeUndefined()
          // Its key went with it: free for another record.
          yield* records.insert(one, type, "l_7", { at: "2024-03-02T00:00:00.000Z" }, [{ name: "k", value: "1" }])
          expect(yield* records.prune(type, "at", "2024-03-01T00:00:00.000Z", 100)).toBe(0)
        }))

      it.effect("prune removes at most `limit` records a call; calls until fewer than `limit` remove every due one", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const type = `pruned_batch_${Math.random().toString(36).slice(2, 8)}`
          const one = { accountId: "acc_batch_1", environment: "production" as const }
          const two = { accountId: "acc_batch_2", environment: "sandbox" as const }
          for (let i = 0; i < 7; i++) {
            yield* records.insert(i % 2 === 0 ? one : two, type, `b_${i}`, { at: `2024-01-0${i + 1}T00:00:00.000Z` })
          }
          yield* records.insert(one, type, "b_new", { at: "2024-06-01T00:00:00.000Z" })
          const before = "2024-03-01T00:00:00.000Z"
          expect(yield* records.prune(type, "at", before, 3)).toBe(3)
          expect(yield* records.prune(type, "at", before, 3)).toBe(3)
          expect(yield* records.prune(type, "at", before, 3)).toBe(1)
          expect(yield* records.prune(type, "at", before, 3)).toBe(0)
          for (let i = 0; i < 7; i++) expect(yield* records.get(i % 2 === 0 ? one : two, type, `b_${i}`)).toBeUndefined()
          expect(yield* records.get(one, type, "b_new")).toBeDefined()
        }))
    })

    describe("UnitOfWork", () => {
      it.effect("a transaction commits all its writes; inside, reads see them", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_old", { n: 0 })
          yield* records.insert(tenant, "course", "crs_gone", { n: 0 })
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1"))

          const result = yield* uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(tenant, "course", "crs_new", { n: 1 }, [{ name: "slug", value: "new" }])
              yield* records.update(tenant, "course", "crs_old", { n: 2 })
              yield* records.remove(tenant, "course", "crs_gone")
              yield* idempotency.complete(tenant, "key-1", "tok_1", { status: 201, headers: {}, body: { ok: true } })
              expect((yield* records.get(tenant, "course", "crs_new"))?.data).toEqual({ n: 1 })
              expect((yield* records.get(tenant, "course", "crs_old"))?.revision).toBe(2)
              expect(yield* records.get(tenant, "course", "crs_gone")).toBeUndefined()
              expect((yield* records.findUnique(tenant, "course", { name: "slug", value: "new" }))?.id).toBe("crs_new")
              expect(ids(yield* records.list(tenant, "course", { where: [], sort: byId, limit: 10 }))).toEqual([
                "crs_new",
                "crs_old"
              ])
              expect(yield* records.count(tenant, "course", [], [])).toEqual([{ key: [], count: 2 }])
              return "done" as const
            })
          )
          expect(result).toBe("done")
          expect((yield* records.get(tenant, "course", "crs_new"))?.data).toEqual({ n: 1 })
          expect((yield* records.get(tenant, "course", "crs_old"))?.data).toEqual({ n: 2 })
          expect(yield* records.get(tenant, "course", "crs_gone")).toBeUndefined()
          const claim = yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2"))
          expect(claim._tag === "Existing" && claim.receipt.state).toBe("completed")
        }))

      it.effect("writes of a running transaction are invisible outside it, and outside reads do not wait", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", { n: 1 })
          const go = yield* Deferred.make<void>()
          const seen = yield* Deferred.make<ReadonlyArray<unknown>>()
          // Forked before the transaction starts: this fiber is outside of it.
          const observer = yield* Effect.fork(
            Effect.gen(function* () {
              yield* Deferred.await(go)
              const observed = [
                yield* records.get(tenant, "course", "crs_2"),
                (yield* records.get(tenant, "course", "crs_1"))?.data,
                yield* records.findUnique(tenant, "course", { name: "slug", value: "two" }),
                (yield* records.list(tenant, "course", { where: [], sort: byId, limit: 10 })).length
              ]
              yield* Deferred.succeed(seen, observed)
            })
          )
          yield* uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(tenant, "course", "crs_2", {}, [{ name: "slug", value: "two" }])
              yield* records.update(tenant, "course", "crs_1", { n: 2 })
              yield* Deferred.succeed(go, undefined)
              expect(yield* Deferred.await(seen)).toEqual([undefined, { n: 1 }, undefined, 1])
            })
          )
          yield* Fiber.join(observer)
          expect(yield* records.get(tenant, "course", "crs_2")).toBeDefined()
          expect((yield* records.get(tenant, "course", "crs_1"))?.data).toEqual({ n: 2 })
        }))

      const rollbackCase = (
        label: string,
        end: Effect.Effect<never, "boom">,
        check: (exit: Exit.Exit<unknown, unknown>) => void
      ) =>
        it.effect(`a transaction that ${label} leaves nothing behind`, () =>
          Effect.gen(function* () {
            const records = yield* Records
            const uow = yield* UnitOfWork
            const idempotency = yield* Idempotency
            const tenant = newTenant()
            yield* records.insert(tenant, "course", "crs_old", { n: 0 }, [{ name: "slug", value: "old" }])
            yield* records.insert(tenant, "course", "crs_gone", { n: 0 })
            yield* records.insert(tenant, "lesson", "les_1", {})
            yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1"))

            const exit = yield* Effect.exit(
              uow.transaction(
                Effect.gen(function* () {
                  yield* records.insert(tenant, "course", "crs_new", {}, [{ name: "slug", value: "new" }])
                  yield* records.update(tenant, "course", "crs_old", { n: 1 }, { uniques: [] })
                  yield* records.remove(tenant, "course", "crs_gone")
                  yield* records.purge(tenant, ["course"])
                  yield* idempotency.complete(tenant, "key-1", "tok_1", { status: 200, headers: {}, body: null })
                  return yield* end
                })
              )
            )
            check(exit)
            expect(yield* records.get(tenant, "course", "crs_new")).toBeUndefined()
            expect(yield* records.get(tenant, "course", "crs_old")).toEqual({
              type: "course",
              id: "crs_old",
              tenant,
              revision: 1,
              data: { n: 0 }
            })
            expect((yield* records.findUnique(tenant, "course", { name: "slug", value: "old" }))?.id).toBe("crs_old")
            expect(yield* records.findUnique(tenant, "course", { name: "slug", value: "new" })).toBeUndefined()
            expect(yield* records.get(tenant, "course", "crs_gone")).toBeDefined()
            expect(yield* records.get(tenant, "lesson", "les_1")).toBeDefined()
            const claim = yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2"))
            expect(claim._tag === "Existing" && claim.receipt).toEqual({
              operationId: "op_create_course",
              fingerprint: "fp_1",
              state: "in_progress",
              response: null,
              expiresAt: 100_000,
              claimedAt: 1_000
            })
            // The store is usable afterwards, transactions included.
            yield* uow.transaction(records.insert(tenant, "course", "crs_new", {}, [{ name: "slug", value: "new" }]))
            yield* records.update(tenant, "course", "crs_old", { n: 2 })
          }))

      rollbackCase("fails", Effect.fail("boom"), (exit) => expect(exit).toEqual(Exit.fail("boom")))
      rollbackCase("dies", Effect.die("boom"), (exit) => {
        expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      })

      it.effect("a transaction interrupted while running leaves nothing behind", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          const ready = yield* Deferred.make<void>()
          const fiber = yield* Effect.fork(
            uow.transaction(
              Effect.gen(function* () {
                yield* records.insert(tenant, "course", "crs_1", {}, [{ name: "slug", value: "a" }])
                yield* Deferred.succeed(ready, undefined)
                return yield* Effect.never
              })
            )
          )
          yield* Deferred.await(ready)
          yield* Fiber.interrupt(fiber)
          expect(yield* records.get(tenant, "course", "crs_1")).toBeUndefined()
          yield* records.insert(tenant, "course", "crs_1", {}, [{ name: "slug", value: "a" }])
          yield* uow.transaction(records.update(tenant, "course", "crs_1", { n: 1 }))
        }))

      it.effect("a failed write inside a transaction can be recovered from; the rest commits", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(tenant, "course", "crs_1", {}, [{ name: "slug", value: "a" }])
              expect(yield* Effect.flip(records.insert(tenant, "course", "crs_2", {}, [{ name: "slug", value: "a" }]))).toEqual(
                new UniqueViolation({ name: "slug" })
              )
              expect(yield* Effect.flip(records.insert(tenant, "course", "crs_1", {}))).toEqual(
                new UniqueViolation({ name: "id" })
              )
              expect(
                yield* Effect.flip(records.update(tenant, "course", "crs_1", {}, { expectedRevision: 7 }))
              ).toEqual(new RevisionConflict({ current: 1 }))
              yield* records.insert(tenant, "course", "crs_3", {})
            })
          )
          expect(yield* records.get(tenant, "course", "crs_1")).toBeDefined()
          expect(yield* records.get(tenant, "course", "crs_2")).toBeUndefined()
          expect(yield* records.get(tenant, "course", "crs_3")).toBeDefined()
        }))

      it.effect("nested transactions join the outer one: they commit and roll back with it", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(tenant, "course", "crs_1", {})
              yield* uow.transaction(
                Effect.gen(function* () {
                  expect(yield* records.get(tenant, "course", "crs_1")).toBeDefined()
                  yield* records.insert(tenant, "course", "crs_2", {})
                  yield* uow.transaction(records.insert(tenant, "course", "crs_3", {}))
                })
              )
              expect(yield* records.get(tenant, "course", "crs_3")).toBeDefined()
            })
          )
          expect(ids(yield* records.list(tenant, "course", { where: [], sort: byId, limit: 10 }))).toEqual([
            "crs_1",
            "crs_2",
            "crs_3"
          ])

          const exit = yield* Effect.exit(
            uow.transaction(
              Effect.gen(function* () {
                yield* uow.transaction(records.insert(tenant, "course", "crs_4", {}))
                return yield* Effect.fail("boom" as const)
              })
            )
          )
          expect(exit).toEqual(Exit.fail("boom"))
          expect(yield* records.get(tenant, "course", "crs_4")).toBeUndefined()
        }))

      it.effect("a record written and read again inside a rolled-back nested transaction reads as it was before it", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* records.insert(tenant, "course", "crs_1", { title: "Before" })
          const seen = yield* uow.transaction(
            Effect.gen(function* () {
              expect((yield* records.get(tenant, "course", "crs_1"))?.data).toEqual({ title: "Before" })
              yield* Effect.exit(uow.transaction(
                Effect.gen(function* () {
                  yield* records.update(tenant, "course", "crs_1", { title: "Inside" })
                  yield* records.insert(tenant, "course", "crs_2", {})
                  expect((yield* records.get(tenant, "course", "crs_1"))?.data).toEqual({ title: "Inside" })
                  expect(yield* records.get(tenant, "course", "crs_2")).toBeDefined()
                  return yield* Effect.fail("boom" as const)
                })
              ))
              return [yield* records.get(tenant, "course", "crs_1"), yield* records.get(tenant, "course", "crs_2")] as const
            })
          )
          expect(seen[0]?.data).toEqual({ title: "Before" })
          expect(seen[0]?.revision).toBe(1)
          expect(seen[1]).toBeUndefined()
        }))

      it.effect("concurrent fibers inside one transaction write into it", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          const exit = yield* Effect.exit(
            uow.transaction(
              Effect.gen(function* () {
                yield* Effect.all(
                  Array.from({ length: 5 }, (_, i) => records.insert(tenant, "course", `crs_${i}`, {})),
                  { concurrency: "unbounded" }
                )
                expect(yield* records.count(tenant, "course", [], [])).toEqual([{ key: [], count: 5 }])
                return yield* Effect.fail("boom" as const)
              })
            )
          )
          expect(exit).toEqual(Exit.fail("boom"))
          expect(yield* records.count(tenant, "course", [], [])).toEqual([{ key: [], count: 0 }])
        }))

      it.effect("transactions are serialized: concurrent read-modify-write loses no update", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* records.insert(tenant, "counter", "cnt_1", { n: 0 })
          const increment = uow.transaction(
            Effect.gen(function* () {
              const current = yield* records.get(tenant, "counter", "cnt_1")
              const n = current?.data["n"]
              yield* Effect.yieldNow()
              yield* records.update(tenant, "counter", "cnt_1", { n: (typeof n === "number" ? n : 0) + 1 })
            })
          )
          yield* Effect.all(Array.from({ length: 20 }, () => increment), { concurrency: "unbounded" })
          const final = yield* records.get(tenant, "counter", "cnt_1")
          expect(final?.data).toEqual({ n: 20 })
          expect(final?.revision).toBe(21)
        }))

      it.effect("a plain write conflicting with a running transaction sees its outcome", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          const go = yield* Deferred.make<void>()
          const outside = yield* Effect.fork(
            Effect.zipRight(Deferred.await(go), Effect.either(records.insert(tenant, "course", "crs_1", { by: "plain" })))
          )
          yield* uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(tenant, "course", "crs_1", { by: "transaction" })
              yield* Deferred.succeed(go, undefined)
              // Give the plain write time to run into the transaction.
              yield* Effect.sleep("50 millis")
            })
          )
          const result = yield* Fiber.join(outside)
          expect(result._tag === "Left" && result.left).toEqual(new UniqueViolation({ name: "id" }))
          expect((yield* records.get(tenant, "course", "crs_1"))?.data).toEqual({ by: "transaction" })
        }))

      it.effect("a plain write of another tenant taking a global key a running transaction took sees its outcome", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const [one, two] = [newTenant(), newTenant()]
          const key = { name: "serial", value: `hash-${one.accountId}`, global: true } as const
          const go = yield* Deferred.make<void>()
          const outside = yield* Effect.fork(
            Effect.zipRight(Deferred.await(go), Effect.either(records.insert(two, "gadget", "gdg_2", {}, [key])))
          )
          yield* uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(one, "gadget", "gdg_1", {}, [key])
              yield* Deferred.succeed(go, undefined)
              yield* Effect.sleep("50 millis")
            })
          )
          const result = yield* Fiber.join(outside)
          expect(result._tag === "Left" && result.left).toEqual(new UniqueViolation({ name: "serial" }))
          expect((yield* records.findUnique("global", "gadget", key))?.id).toBe("gdg_1")
          expect(yield* records.get(two, "gadget", "gdg_2")).toBeUndefined()
        }))
    })

    /**
     * The request log (type `request`): on PostgreSQL a partition by week, in memory a log per
     * tenant (`packages/memory/src/log.ts`) rather than a bucket; every read and write of the port
     * behaves the same on both.
     */
    describe("Records: the request log", () => {
      // Each test's entries in a year of their own: retention runs over every tenant's log.
      const entry = (n: number, credential: string, outcome: string, extra: Record<string, string | null> = {}, year = 1990) => ({
        id: `req_${String(n).padStart(4, "0")}`,
        data: { credential_id: credential, outcome, created_at: `${year}-01-${String(n).padStart(2, "0")}T00:00:00.000Z`, ...extra }
      })
      const byIdDesc: SortSpec = { field: "id", kind: "text", direction: "desc" }
      const logOf = (tenant: Tenant, year = 1990) =>
        Effect.gen(function* () {
          const records = yield* Records
          yield* records.insertMany(tenant, "request", [
            entry(1, "crd_a", "success", {}, year),
            entry(2, "crd_b", "client_error", { client_request_id: "c-2" }, year),
            entry(3, "crd_a", "client_error", {}, year),
            entry(5, "crd_a", "success", { client_request_id: "c-5" }, year)
          ])
          // One made out of order (another process's lane): placed by its ID.
          yield* records.insert(tenant, "request", "req_0004", entry(4, "crd_b", "success", {}, year).data)
        })

      it.effect("stores, reads by ID, refuses a taken ID (alone or in a batch, keeping none of it)", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* logOf(tenant)
          expect((yield* records.get(tenant, "request", "req_0003"))?.data).toEqual(entry(3, "crd_a", "client_error").data)
          expect(yield* records.get(newTenant(), "request", "req_0003")).toBeUndefined()
          expect(ids(yield* records.getMany(tenant, "request", ["req_0005", "req_0001", "req_0009"])).slice().sort()).toEqual(["req_0001", "req_0005"])
          expect(yield* Effect.flip(records.insert(tenant, "request", "req_0002", {}))).toEqual(new UniqueViolation({ name: "id" }))
          expect(yield* Effect.flip(records.insertMany(tenant, "request", [entry(6, "crd_a", "success"), entry(1, "crd_a", "success")]))).toEqual(
            new UniqueViolation({ name: "id" })
          )
          expect(yield* records.get(tenant, "request", "req_0006")).toBeUndefined()
        }))

      it.effect("pages by ID both ways from a cursor, through a filter's field or not, null matching a missing value", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* logOf(tenant)
          const page = (where: ReadonlyArray<Where>, sort: SortSpec, after?: string, limit = 10) =>
            Effect.map(
              records.list(tenant, "request", { where, sort, limit, ...(after === undefined ? {} : { after: { value: after, id: after } }) }),
              ids
            )
          expect(yield* page([], byId)).toEqual(["req_0001", "req_0002", "req_0003", "req_0004", "req_0005"])
          expect(yield* page([], byIdDesc, undefined, 2)).toEqual(["req_0005", "req_0004"])
          expect(yield* page([], byIdDesc, "req_0004", 2)).toEqual(["req_0003", "req_0002"])
          const ofA: ReadonlyArray<Where> = [{ field: "credential_id", op: "eq", value: "crd_a" }]
          expect(yield* page(ofA, byId)).toEqual(["req_0001", "req_0003", "req_0005"])
          expect(yield* page(ofA, byId, "req_0001")).toEqual(["req_0003", "req_0005"])
          expect(yield* page(ofA, byIdDesc, "req_0005")).toEqual(["req_0003", "req_0001"])
          expect(yield* page([...ofA, { field: "outcome", op: "eq", value: "success" }], byIdDesc)).toEqual(["req_0005", "req_0001"])
          expect(yield* page([{ field: "client_request_id", op: "eq", value: null }], byId)).toEqual(["req_0001", "req_0003", "req_0004"])
          expect(yield* page([{ field: "created_at", op: "gte", value: "1990-01-03" }, { field: "outcome", op: "eq", value: "success" }], byId)).toEqual([
            "req_0004",
            "req_0005"
          ])
        }))

      it.effect("counts by groups over a time window", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* logOf(tenant)
          const groups = yield* records.count(tenant, "request", [{ field: "created_at", op: "gte", value: "1990-01-02" }], ["outcome", "credential_id"])
          expect(groups.slice().sort((a, b) => (JSON.stringify(a.key) < JSON.stringify(b.key) ? -1 : 1))).toEqual([
            { key: ["client_error", "crd_a"], count: 1 },
            { key: ["client_error", "crd_b"], count: 1 },
            { key: ["success", "crd_a"], count: 1 },
            { key: ["success", "crd_b"], count: 1 }
          ])
          expect(yield* records.count(tenant, "request", [{ field: "credential_id", op: "eq", value: "crd_b" }], [])).toEqual([{ key: [], count: 2 }])
        }))

      it.effect("an update moves an entry between its filters' values; a removed one is read by none", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* logOf(tenant)
          const updated = yield* records.update(tenant, "request", "req_0003", { ...entry(3, "crd_b", "success").data }, { expectedRevision: 1 })
          expect(updated.revision).toBe(2)
          expect(yield* Effect.flip(records.update(tenant, "request", "req_0003", {}, { expectedRevision: 1 }))).toEqual(new RevisionConflict({ current: 2 }))
          const ofCredential = (credential: string) =>
            Effect.map(records.list(tenant, "request", { where: [{ field: "credential_id", op: "eq", value: credential }], sort: byId, limit: 10 }), ids)
          expect(yield* ofCredential("crd_a")).toEqual(["req_0001", "req_0005"])
          expect(yield* ofCredential("crd_b")).toEqual(["req_0002", "req_0003", "req_0004"])
          expect(yield* records.remove(tenant, "request", "req_0002")).toBe(true)
          expect(yield* records.remove(tenant, "request", "req_0002")).toBe(false)
          expect(yield* ofCredential("crd_b")).toEqual(["req_0003", "req_0004"])
          expect(yield* records.count(tenant, "request", [], [])).toEqual([{ key: [], count: 4 }])
        }))

      it.effect("retention removes the oldest up to its limit, from every read; a purge keeps the log only if asked to", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const tenant = newTenant()
          yield* logOf(tenant, 1980)
          expect(yield* records.prune("request", "created_at", "1980-01-03T00:00:00.000Z", 1)).toBe(1)
          expect(yield* records.prune("request", "created_at", "1980-01-03T00:00:00.000Z", 10)).toBe(1)
          expect(yield* records.prune("request", "created_at", "1980-01-03T00:00:00.000Z", 10)).toBe(0)
          expect(ids(yield* records.list(tenant, "request", { where: [], sort: byId, limit: 10 }))).toEqual(["req_0003", "req_0004", "req_0005"])
          expect(ids(yield* records.list(tenant, "request", { where: [{ field: "outcome", op: "eq", value: "client_error" }], sort: byId, limit: 10 }))).toEqual([
            "req_0003"
          ])
          expect(yield* records.get(tenant, "request", "req_0001")).toBeUndefined()
          yield* records.purge(tenant, ["request"])
          expect(yield* records.count(tenant, "request", [], [])).toEqual([{ key: [], count: 3 }])
          expect(yield* records.purge(tenant, [])).toBe(3)
          expect(yield* records.count(tenant, "request", [], [])).toEqual([{ key: [], count: 0 }])
        }))
    })

    /**
     * Records of the append-only streams (audit entries, events: core's `streamTypes`) written by
     * a unit of work: PostgreSQL sends them together, late (with the unit's last statement);
     * every read of their type inside the unit sees them, and they commit and roll back with it.
     */
    describe("Records: appends of streams inside a unit of work", () => {
      const auditEntries = (tenant: Tenant) =>
        Effect.flatMap(Records, (records) => records.list(tenant, "audit_entry", { where: [], sort: byId, limit: 10 }))

      it.effect("every read of the type inside the unit sees them, and the unit commits them", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          const inside = yield* uow.transaction(
            Effect.gen(function* () {
              const stored = yield* records.insert(tenant, "audit_entry", "aud_1", { action: "created", n: 1 })
              yield* records.insert(tenant, "event", "evt_1", { type: "thing.created" })
              yield* records.insert(tenant, "audit_entry", "aud_2", { action: "updated" })
              return {
                stored,
                got: (yield* records.get(tenant, "audit_entry", "aud_1"))?.data,
                listed: ids(yield* auditEntries(tenant)),
                counted: yield* records.count(tenant, "event", [], []),
                updated: (yield* records.update(tenant, "audit_entry", "aud_2", { action: "changed" })).revision
              }
            })
          )
          expect(inside.stored).toMatchObject({ tenant, type: "audit_entry", id: "aud_1", revision: 1, data: { action: "created", n: 1 } })
          expect(inside.got).toEqual({ action: "created", n: 1 })
          expect(inside.listed).toEqual(["aud_1", "aud_2"])
          expect(inside.counted).toEqual([{ key: [], count: 1 }])
          expect(inside.updated).toBe(2)
          expect(ids(yield* auditEntries(tenant))).toEqual(["aud_1", "aud_2"])
          expect((yield* records.get(tenant, "audit_entry", "aud_2"))?.data).toEqual({ action: "changed" })
          expect(yield* records.get(tenant, "event", "evt_1")).toBeDefined()
        }))

      it.effect("a failed unit keeps none; a savepoint rolled back takes back its own, not those made before it", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(tenant, "audit_entry", "aud_1", {})
              const inner = yield* Effect.exit(uow.transaction(
                Effect.gen(function* () {
                  // A read of the type inside the savepoint: aud_1 is stored there, and must outlive its rollback.
                  expect(ids(yield* auditEntries(tenant))).toEqual(["aud_1"])
                  yield* records.insert(tenant, "audit_entry", "aud_2", {})
                  return yield* Effect.fail("boom" as const)
                })
              ))
              expect(inner).toEqual(Exit.fail("boom"))
              yield* records.insert(tenant, "audit_entry", "aud_3", {})
            })
          )
          expect(ids(yield* auditEntries(tenant))).toEqual(["aud_1", "aud_3"])

          const failed = yield* Effect.exit(uow.transaction(
            Effect.zipRight(records.insert(tenant, "audit_entry", "aud_4", {}), Effect.fail("boom" as const))
          ))
          expect(failed).toEqual(Exit.fail("boom"))
          expect(ids(yield* auditEntries(tenant))).toEqual(["aud_1", "aud_3"])
        }))

      it.effect("they commit with the receipt the unit completes, and go with it when it fails after", () =>
        Effect.gen(function* () {
          const records = yield* Records
          const idempotency = yield* Idempotency
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          const response = { status: 201, headers: {}, body: { id: "thing" } }
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1"))
          yield* uow.transaction(Effect.zipRight(
            records.insert(tenant, "audit_entry", "aud_1", {}),
            idempotency.complete(tenant, "key-1", "tok_1", response)
          ))
          expect(ids(yield* auditEntries(tenant))).toEqual(["aud_1"])
          const claimed = yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2"))
          expect(claimed._tag === "Existing" ? claimed.receipt.response : undefined).toEqual(response)

          yield* idempotency.claim(tenant, "key-2", claimAttempt("tok_3"))
          const failed = yield* Effect.exit(uow.transaction(
            Effect.gen(function* () {
              yield* records.insert(tenant, "audit_entry", "aud_2", {})
              yield* idempotency.complete(tenant, "key-2", "tok_3", response)
              return yield* Effect.fail("boom" as const)
            })
          ))
          expect(failed).toEqual(Exit.fail("boom"))
          expect(ids(yield* auditEntries(tenant))).toEqual(["aud_1"])
          const again = yield* idempotency.claim(tenant, "key-2", claimAttempt("tok_4"))
          expect(again._tag === "Existing" ? again.receipt.state : again._tag).toBe("in_progress")
        }))
    })

    describe("Idempotency", () => {
      const existing = (claim: IdempotencyClaim) => (claim._tag === "Existing" ? claim.receipt : undefined)

      it.effect("claim takes a free key; a second claim sees the receipt, without its token", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          expect(yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1"))).toEqual({
            _tag: "Claimed",
            token: "tok_1"
          })
          const second = yield* idempotency.claim(
            tenant,
            "key-1",
            { ...claimAttempt("tok_2", { now: 2_000 }), operationId: "op_other", fingerprint: "fp_2" }
          )
          expect(second).toEqual({
            _tag: "Existing",
            receipt: { operationId: "op_create_course", fingerprint: "fp_1", state: "in_progress", response: null, expiresAt: 100_000, claimedAt: 1_000 }
          })
          expect(JSON.stringify(second)).not.toContain("tok_1")
        }))

      it.effect("keys are per tenant", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1"))
          expect((yield* idempotency.claim(tenant, "key-2", claimAttempt("tok_2")))._tag).toBe("Claimed")
          expect(
            (yield* idempotency.claim({ ...tenant, environment: "production" }, "key-1", claimAttempt("tok_3")))._tag
          ).toBe("Claimed")
          expect((yield* idempotency.claim(newTenant(), "key-1", claimAttempt("tok_4")))._tag).toBe("Claimed")
        }))

      it.effect("voidCompleted: the tenant's completed receipts keep their status but no body, marked not replayable; claims in progress and other tenants untouched", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          const other = newTenant()
          const response = { status: 201, headers: { etag: '"1"' }, body: { id: "crs_1" } }
          for (const [where, key] of [[tenant, "done"], [other, "done"]] as const) {
            yield* idempotency.claim(where, key, claimAttempt(`tok_${key}`))
            yield* idempotency.complete(where, key, `tok_${key}`, response)
          }
          yield* idempotency.claim(tenant, "held", claimAttempt("tok_held"))
          yield* idempotency.voidCompleted(tenant)
          expect(existing(yield* idempotency.claim(tenant, "done", claimAttempt("tok_x")))?.response).toEqual({
            status: 201,
            headers: { [NOT_REPLAYABLE_HEADER]: "result" },
            body: null
          })
          expect(existing(yield* idempotency.claim(tenant, "held", claimAttempt("tok_y")))?.state).toBe("in_progress")
          expect(existing(yield* idempotency.claim(other, "done", claimAttempt("tok_z")))?.response).toEqual(response)
        }))

      it.effect("complete records the response for the holder of the token only", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1"))
          yield* idempotency.complete(tenant, "key-1", "tok_wrong", { status: 500, headers: {}, body: null })
          expect(existing(yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2")))?.state).toBe("in_progress")
          const response = { status: 201, headers: { "content-type": "application/json", etag: '"1"' }, body: { id: "crs_1", n: [1, 2] } }
          yield* idempotency.complete(tenant, "key-1", "tok_1", response)
          expect(existing(yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_3")))).toEqual({
            operationId: "op_create_course",
            fingerprint: "fp_1",
            state: "completed",
            response,
            expiresAt: 100_000,
            claimedAt: 1_000
          })
          // Completing a key nobody holds does nothing.
          yield* idempotency.complete(tenant, "key-9", "tok_1", response)
          expect((yield* idempotency.claim(tenant, "key-9", claimAttempt("tok_4")))._tag).toBe("Claimed")
        }))

      it.effect("release gives the key back, for the holder of the token only", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1"))
          yield* idempotency.release(tenant, "key-1", "tok_wrong")
          expect((yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2")))._tag).toBe("Existing")
          yield* idempotency.release(tenant, "key-1", "tok_1")
          expect(yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_3"))).toEqual({ _tag: "Claimed", token: "tok_3" })
          yield* idempotency.release(tenant, "key-404", "tok_1")
        }))

      it.effect("release leaves a completed receipt: it was committed with its write", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          const response = { status: 201, headers: {}, body: { ok: true } }
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1"))
          yield* idempotency.complete(tenant, "key-1", "tok_1", response)
          // A late release, as after a COMMIT whose answer was lost: the receipt still answers.
          yield* idempotency.release(tenant, "key-1", "tok_1")
          expect(existing(yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2")))?.response).toEqual(response)
        }))

      it.effect("an expired receipt (expiresAt <= now) is taken over, completed or not", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1", { now: 1_000, expiresAt: 5_000 }))
          yield* idempotency.complete(tenant, "key-1", "tok_1", { status: 200, headers: {}, body: null })
          expect((yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2", { now: 4_999 })))._tag).toBe("Existing")
          expect(yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_3", { now: 5_000, expiresAt: 9_000 }))).toEqual({
            _tag: "Claimed",
            token: "tok_3"
          })
          expect(existing(yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_4", { now: 6_000 })))).toEqual({
            operationId: "op_create_course",
            fingerprint: "fp_1",
            state: "in_progress",
            response: null,
            expiresAt: 9_000,
            // Taken over by the claim at 5,000.
            claimedAt: 5_000
          })
          yield* idempotency.claim(tenant, "key-2", claimAttempt("tok_5", { now: 1_000, expiresAt: 5_000 }))
          expect((yield* idempotency.claim(tenant, "key-2", claimAttempt("tok_6", { now: 7_000 })))._tag).toBe("Claimed")
        }))

      it.effect("an in-progress receipt claimed before staleBefore is taken over; its old holder loses it", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1", { now: 1_000 }))
          expect(
            (yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2", { now: 3_000, staleBefore: 1_000 })))._tag
          ).toBe("Existing")
          expect(
            yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_3", { now: 3_000, staleBefore: 1_001 }))
          ).toEqual({ _tag: "Claimed", token: "tok_3" })
          // The new claim counts from its own time.
          expect(
            (yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_4", { now: 3_500, staleBefore: 2_000 })))._tag
          ).toBe("Existing")
          // The former holder can neither complete nor release it.
          yield* idempotency.complete(tenant, "key-1", "tok_1", { status: 200, headers: {}, body: null })
          yield* idempotency.release(tenant, "key-1", "tok_1")
          expect(existing(yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_5", { now: 3_600 })))?.state).toBe(
            "in_progress"
          )
          yield* idempotency.complete(tenant, "key-1", "tok_3", { status: 201, headers: {}, body: { ok: true } })
          // A completed receipt is never stale, only expired.
          const late = yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_6", { now: 50_000, staleBefore: 49_000 }))
          expect(existing(late)?.response).toEqual({ status: 201, headers: {}, body: { ok: true } })
        }))

      it.effect("complete inside a transaction commits with it", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const uow = yield* UnitOfWork
          const tenant = newTenant()
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1"))
          yield* uow.transaction(idempotency.complete(tenant, "key-1", "tok_1", { status: 204, headers: {}, body: null }))
          expect(existing(yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2")))?.response).toEqual({
            status: 204,
            headers: {},
            body: null
          })
        }))

      it.effect("50 concurrent claims of one key: exactly one is Claimed", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          const claims = yield* Effect.all(
            Array.from({ length: 50 }, (_, i) => idempotency.claim(tenant, "key-1", claimAttempt(`tok_${i}`))),
            { concurrency: "unbounded" }
          )
          expect(claims.filter((c) => c._tag === "Claimed")).toHaveLength(1)
          expect(claims.filter((c) => c._tag === "Existing")).toHaveLength(49)
        }))
    })

    describe("RateLimitStore", () => {
      const check = (key: string, limit = 10): RateCheck => ({ scope: "key", key, limit })

      it.effect("counts admitted hits in the current window and reports the counts read before", () =>
        Effect.gen(function* () {
          const limiter = yield* RateLimitStore
          const c = check(fresh("key"))
          expect(yield* limiter.hit([c], W, WINDOW_MS, admitAll)).toEqual({
            admitted: true,
            counts: [{ previous: 0, current: 0 }]
          })
          expect(yield* limiter.hit([c], W, WINDOW_MS, admitAll)).toEqual({
            admitted: true,
            counts: [{ previous: 0, current: 1 }]
          })
          // A refused hit counts nothing.
          expect(yield* limiter.hit([c], W, WINDOW_MS, refuseAll)).toEqual({
            admitted: false,
            counts: [{ previous: 0, current: 2 }]
          })
          expect((yield* limiter.hit([c], W, WINDOW_MS, admitAll)).counts).toEqual([{ previous: 0, current: 2 }])
          // The next window sees this one as previous; the one after forgets it.
          expect((yield* limiter.hit([c], W + WINDOW_MS, WINDOW_MS, admitAll)).counts).toEqual([{ previous: 3, current: 0 }])
          expect((yield* limiter.hit([c], W + 2 * WINDOW_MS, WINDOW_MS, admitAll)).counts).toEqual([
            { previous: 1, current: 0 }
          ])
          expect((yield* limiter.hit([c], W + 4 * WINDOW_MS, WINDOW_MS, admitAll)).counts).toEqual([
            { previous: 0, current: 0 }
          ])
        }))

      it.effect("several checks: admit sees all their counts, in order; all or none are counted", () =>
        Effect.gen(function* () {
          const limiter = yield* RateLimitStore
          const [a, b] = [check(fresh("origin")), check(fresh("key"))]
          yield* limiter.hit([a], W, WINDOW_MS, admitAll)
          yield* limiter.hit([a], W, WINDOW_MS, admitAll)
          const seen: Array<ReadonlyArray<WindowCounts>> = []
          const refused = yield* limiter.hit([a, b], W, WINDOW_MS, (counts) => {
            seen.push(counts)
            return false
          })
          expect(refused).toEqual({ admitted: false, counts: [{ previous: 0, current: 2 }, { previous: 0, current: 0 }] })
          expect(seen).toEqual([[{ previous: 0, current: 2 }, { previous: 0, current: 0 }]])
          expect((yield* limiter.hit([b, a], W, WINDOW_MS, admitAll)).counts).toEqual([
            { previous: 0, current: 0 },
            { previous: 0, current: 2 }
          ])
          expect((yield* limiter.hit([a, b], W, WINDOW_MS, refuseAll)).counts).toEqual([
            { previous: 0, current: 3 },
            { previous: 0, current: 1 }
          ])
        }))

      it.effect("50 concurrent hits with room for 10: exactly 10 are admitted", () =>
        Effect.gen(function* () {
          const limiter = yield* RateLimitStore
          const c = check(fresh("key"))
          const results = yield* Effect.all(
            Array.from({ length: 50 }, () => limiter.hit([c], W, WINDOW_MS, (counts) => (counts[0]?.current ?? 0) < 10)),
            { concurrency: "unbounded" }
          )
          expect(results.filter((r) => r.admitted)).toHaveLength(10)
          expect((yield* limiter.hit([c], W, WINDOW_MS, refuseAll)).counts).toEqual([{ previous: 0, current: 10 }])
          // Every admitted hit read a distinct count: no two read the same state.
          expect(
            results
              .filter((r) => r.admitted)
              .map((r) => r.counts[0]?.current)
              .sort((x, y) => (x ?? 0) - (y ?? 0))
          ).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        }))
    })

    describe("Idempotency: prune (retention)", () => {
      const taken = (claim: IdempotencyClaim) => claim._tag === "Claimed"

      it.effect("prune removes receipts expired at `now`, in every tenant, at most `limit` per call; live ones stay", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const [one, two] = [newTenant(), newTenant("production")]
          yield* idempotency.claim(one, "done", claimAttempt("tok_1", { now: 1_000, expiresAt: 5_000 }))
          yield* idempotency.complete(one, "done", "tok_1", { status: 201, headers: {}, body: { id: "crs_1" } })
          yield* idempotency.claim(one, "held", claimAttempt("tok_2", { now: 1_000, expiresAt: 8_000 }))
          yield* idempotency.claim(two, "done", claimAttempt("tok_3", { now: 1_000, expiresAt: 10_000 }))
          yield* idempotency.claim(one, "live", claimAttempt("tok_4", { now: 1_000, expiresAt: 10_001 }))

          expect(yield* idempotency.prune(10_000, 0)).toBe(0)
          // Other tests' expired receipts may go too: the store is shared, prune is not per tenant.
          expect(yield* idempotency.prune(10_000, 1)).toBe(1)
          let rounds = 0
          for (;;) {
            const removed = yield* idempotency.prune(10_000, 2)
            expect(removed).toBeLessThanOrEqual(2)
            rounds++
            if (removed < 2) break
          }
          expect(rounds).toBeGreaterThanOrEqual(1)
          expect(yield* idempotency.prune(10_000, 100)).toBe(0)

          // Gone: claimed afresh even at a time their receipts were still live.
          expect(taken(yield* idempotency.claim(one, "done", claimAttempt("tok_5", { now: 2_000 })))).toBe(true)
          expect(taken(yield* idempotency.claim(one, "held", claimAttempt("tok_6", { now: 2_000 })))).toBe(true)
          expect(taken(yield* idempotency.claim(two, "done", claimAttempt("tok_7", { now: 2_000 })))).toBe(true)
          // Kept: expires after `now`.
          const live = yield* idempotency.claim(one, "live", claimAttempt("tok_8", { now: 2_000 }))
          expect(live._tag === "Existing" ? live.receipt.expiresAt : undefined).toBe(10_001)
        }))

      it.effect("a key claimed anew after it expired keeps its new receipt", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_1", { now: 1_000, expiresAt: 5_000 }))
          yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_2", { now: 6_000, expiresAt: 50_000 }))
          while ((yield* idempotency.prune(10_000, 100)) === 100) {
            // drain what other tests left expired
          }
          const kept = yield* idempotency.claim(tenant, "key-1", claimAttempt("tok_3", { now: 7_000 }))
          expect(kept._tag === "Existing" ? kept.receipt.expiresAt : undefined).toBe(50_000)
        }))

      it.effect("sweeps running at once remove every expired receipt once, without failing", () =>
        Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const tenant = newTenant()
          const keys = Array.from({ length: 30 }, (_, i) => `key-${i}`)
          for (const key of keys) yield* idempotency.claim(tenant, key, claimAttempt(`tok_${key}`, { now: 1_000, expiresAt: 3_000 }))
          const sweep = Effect.gen(function* () {
            let total = 0
            for (;;) {
              const removed = yield* idempotency.prune(10_000, 5)
              total += removed
              if (removed === 0) return total
            }
          })
          const totals = yield* Effect.all([sweep, sweep, sweep, sweep], { concurrency: "unbounded" })
          expect(totals.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(keys.length)
          expect(yield* idempotency.prune(10_000, 100)).toBe(0)
          for (const key of keys) {
            expect(taken(yield* idempotency.claim(tenant, key, claimAttempt(`tok_again_${key}`, { now: 2_000 })))).toBe(true)
          }
        }))
    })
  })
