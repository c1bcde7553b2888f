/**
 * `awardPoints` (learning/gamification.ts) on the memory store: the active rules of the trigger
 * (the product's and the global ones) each write one ledger entry, once per learner, rule and
 * source, and the learner's balance record follows in the same unit of work, with an event
 * and an audit entry per entry; the rules are read through their index, never all of them.
 */
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import {
  awardPoints,
  Caller,
  type CallerInfo,
  createResource,
  formatId,
  gamificationRules,
  getUserPoints,
  type JsonObject,
  type PointsAward,
  Records,
  updateResource
} from "@syllabus/core"
import { atomically, caller, insert, run, tenant } from "./support.js"
import { instrumentation } from "@syllabus/memory"


const P1 = "prd_000000001"
const P2 = "prd_000000002"
const U1 = "usr_000000001"
const U2 = "usr_000000002"

const products = Effect.all([P1, P2].map((id) => insert("product", id, { object: "product", id, name: `Course ${id}`, deleted: false })))
const users = Effect.all([U1, U2].map((id) => insert("user", id, { object: "user", id, name: `Learner ${id}`, deleted: false })))

// A rule's product must be readable by the caller that writes it (requireReference).
const readsProducts: CallerInfo = { ...caller, grant: new Map([["products.read", "all"]]) }

const rule = (body: { name?: string; trigger: string; points: number; product_id?: string | null; status?: string }) =>
  atomically(createResource(gamificationRules, {}, { name: "Rule", ...body })).pipe(
    Effect.map((record) => record.id),
    Effect.provideService(Caller, readsProducts)
  )

const award = (over: Partial<PointsAward> = {}) =>
  atomically(
    awardPoints({ userId: U1, productId: P1, trigger: "lesson_completed", sourceType: "lesson_progress", sourceId: "lpr_000000001", ...over })
  )

const recordsOf = (type: string) =>
  Effect.flatMap(Records, (records) => records.list(tenant, type, { where: [], sort: { field: "id", kind: "text", direction: "asc" }, limit: 1000 }))

describe("awardPoints", () => {
  it("without a matching rule awards nothing and makes no balance", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* products
        yield* users
        const none = yield* award()
        yield* rule({ trigger: "exam_passed", points: 10 })
        yield* rule({ trigger: "lesson_completed", points: 10, product_id: P2 })
        const otherTriggerOrProduct = yield* award()
        return { none, otherTriggerOrProduct, entries: yield* recordsOf("point_entry"), balances: yield* recordsOf("point_balance") }
      })
    )
    expect(result).toEqual({ none: [], otherTriggerOrProduct: [], entries: [], balances: [] })
  })

  it("each active rule of the trigger, the product's and the global ones, writes one entry; the balance is their sum", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* products
        yield* users
        const global = yield* rule({ trigger: "lesson_completed", points: 5 })
        const own = yield* rule({ trigger: "lesson_completed", points: 20, product_id: P1 })
        yield* rule({ trigger: "lesson_completed", points: 100, product_id: P1, status: "inactive" })
        yield* rule({ trigger: "lesson_completed", points: 100, product_id: P2 })
        yield* rule({ trigger: "exam_passed", points: 100, product_id: P1 })
        const entries = yield* award()
        return {
          global,
          own,
          entries,
          balance: yield* getUserPoints(U1),
          other: yield* getUserPoints(U2),
          events: yield* recordsOf("event"),
          audit: yield* recordsOf("audit_entry")
        }
      })
    )
    expect(result.entries).toEqual([
      expect.objectContaining({
        object: "point_entry",
        user_id: U1,
        rule_id: result.global,
        product_id: P1,
        trigger: "lesson_completed",
        source: { type: "lesson_progress", id: "lpr_000000001" },
        points: 5,
        ending_balance: 5,
        revision: "1"
      }),
      expect.objectContaining({ rule_id: result.own, points: 20, ending_balance: 25 })
    ])
    expect(Object.keys(result.entries[0]!)).toEqual([
      "object",
      "id",
      "user_id",
      "rule_id",
      "product_id",
      "trigger",
      "source",
      "points",
      "ending_balance",
      "created_at",
      "updated_at",
      "revision"
    ])
    for (const entry of result.entries) expect(String(entry.id)).toMatch(/^pte_[0-9A-Za-z]{9}$/)
    expect(result.balance).toEqual({ object: "user_points", user_id: U1, balance: 25, updated_at: result.entries[0]!.created_at })
    expect(result.other).toEqual({ object: "user_points", user_id: U2, balance: 0, updated_at: null })
    const created = result.events.filter((e) => e.data.type === "point_entry.created")
    expect(created.map((e) => (e.data.data as JsonObject).object)).toEqual(result.entries)
    expect(result.audit.filter((e) => e.data.action === "point_entry.created").map((e) => e.data.resource_id)).toEqual(
      result.entries.map((e) => e.id)
    )
  })

  it("once per learner, rule and source: a repeated or replayed award writes nothing; another source or learner does", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* products
        yield* users
        yield* rule({ trigger: "lesson_completed", points: 7 })
        const first = yield* award()
        const again = yield* award()
        const otherSource = yield* award({ sourceId: "lpr_000000002" })
        const otherLearner = yield* award({ userId: U2 })
        return {
          first,
          again,
          otherSource,
          otherLearner,
          u1: yield* getUserPoints(U1),
          u2: yield* getUserPoints(U2),
          entries: yield* recordsOf("point_entry"),
          balances: yield* recordsOf("point_balance")
        }
      })
    )
    expect(result.first).toHaveLength(1)
    expect(result.again).toEqual([])
    expect(result.otherSource).toEqual([expect.objectContaining({ points: 7, ending_balance: 14 })])
    expect(result.otherLearner).toEqual([expect.objectContaining({ user_id: U2, ending_balance: 7 })])
    expect(result.u1.balance).toBe(14)
    expect(result.u2.balance).toBe(7)
    expect(result.entries).toHaveLength(3)
    // One balance record per learner, its ID the user's.
    expect(result.balances.map((b) => [b.id, b.data.balance])).toEqual([
      [U1, 14],
      [U2, 7]
    ])
  })

  it("a rule made after an award awards the same source once more (its own once); a changed rule awards its new points, entries stay", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* products
        yield* users
        const first = yield* rule({ trigger: "exam_passed", points: 10, product_id: P1 })
        const before = yield* award({ trigger: "exam_passed", sourceType: "exam_attempt", sourceId: "exa_000000001" })
        yield* rule({ trigger: "exam_passed", points: 3 })
        const replay = yield* award({ trigger: "exam_passed", sourceType: "exam_attempt", sourceId: "exa_000000001" })
        yield* atomically(updateResource(gamificationRules, {}, first, { points: 50 }, undefined))
        const changed = yield* award({ trigger: "exam_passed", sourceType: "exam_attempt", sourceId: "exa_000000002" })
        yield* atomically(updateResource(gamificationRules, {}, first, { status: "inactive" }, undefined))
        const paused = yield* award({ trigger: "exam_passed", sourceType: "exam_attempt", sourceId: "exa_000000003" })
        const stored = yield* Effect.flatMap(Records, (records) => records.get(tenant, "point_entry", String(before[0]!.id)))
        return { before, replay, changed, paused, stored: stored?.data, balance: (yield* getUserPoints(U1)).balance }
      })
    )
    expect(result.before.map((e) => e.points)).toEqual([10])
    expect(result.replay.map((e) => [e.points, e.ending_balance])).toEqual([[3, 13]])
    expect(result.changed.map((e) => [e.points, e.ending_balance])).toEqual([
      [50, 63],
      [3, 66]
    ])
    expect(result.paused.map((e) => [e.points, e.ending_balance])).toEqual([[3, 69]])
    expect(result.stored).toMatchObject({ points: 10, ending_balance: 10 })
    expect(result.balance).toBe(69)
  })

  it("without a product only the global rules apply", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* products
        yield* users
        yield* rule({ trigger: "certificate_issued", points: 30, product_id: P1 })
        const global = yield* rule({ trigger: "certificate_issued", points: 4 })
        const entries = yield* award({ productId: null, trigger: "certificate_issued", sourceType: "certificate", sourceId: "crt_000000001" })
        return { global, entries }
      })
    )
    expect(result.entries).toEqual([expect.objectContaining({ rule_id: result.global, product_id: null, points: 4 })])
  })

  it("rolls back with the caller's unit of work: no entry, no balance", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* products
        yield* users
        yield* rule({ trigger: "lesson_completed", points: 9 })
        const failed = yield* atomically(
          Effect.zipRight(
            awardPoints({ userId: U1, productId: P1, trigger: "lesson_completed", sourceType: "lesson_progress", sourceId: "lpr_000000009" }),
            Effect.fail("the change that earned them failed")
          )
        ).pipe(Effect.flip)
        return { failed, entries: yield* recordsOf("point_entry"), balance: yield* getUserPoints(U1) }
      })
    )
    expect(result.failed).toBe("the change that earned them failed")
    expect(result.entries).toEqual([])
    expect(result.balance.balance).toBe(0)
  })

  it("reads the rules of its trigger through their index, not every rule", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* products
        yield* users
        // 3,000 rules of other triggers (straight into the store: their events do not matter here).
        const records = yield* Records
        const rows = Array.from({ length: 3000 }, (_, i) => {
          const id = formatId("gamification_rule", 1_000_000 + i)
          return {
            id,
            data: {
              object: "gamification_rule",
              id,
              name: `Rule ${i}`,
              trigger: i % 2 === 0 ? "exam_passed" : "enrollment_completed",
              points: 1,
              product_id: i % 3 === 0 ? P1 : null,
              status: "active",
              deleted: false
            }
          }
        })
        yield* records.insertMany(tenant, "gamification_rule", rows)
        yield* rule({ trigger: "lesson_completed", points: 2 })
        yield* rule({ trigger: "lesson_completed", points: 3, product_id: P1 })
        const before = instrumentation.visited
        const entries = yield* award()
        return { entries, visited: instrumentation.visited - before }
      })
    )
    expect(result.entries.map((e) => e.points)).toEqual([2, 3])
    expect(result.visited).toBeLessThan(300)
  })
})

describe("gamification rules", () => {
  it("a product_id must name a product of the account: 422 not_found on the field", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* products
        const missing = yield* Effect.flip(rule({ trigger: "lesson_completed", points: 1, product_id: "prd_000000009" }))
        const id = yield* rule({ trigger: "lesson_completed", points: 1, product_id: P1 })
        const moved = yield* Effect.flip(
          atomically(updateResource(gamificationRules, {}, id, { product_id: "prd_000000009" }, undefined)).pipe(Effect.provideService(Caller, readsProducts))
        )
        return { missing, moved }
      })
    )
    for (const error of [result.missing, result.moved]) {
      expect(error).toMatchObject({ code: "validation_failed", details: [{ field: "product_id", code: "validation_failed", reason: "not_found" }] })
    }
  })
})
