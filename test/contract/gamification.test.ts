/**
 * Gamification (release 3.2.0; open-points `/gamification/rules`, `/users/{user_id}/points`,
 * docs/gamification.md): the rules' CRUD, checks, events and permissions; a learner's balance
 * and ledger. Points are awarded by the learning use cases through `awardPoints` in their own
 * unit of work: here it runs on the server's own store (the operator handle), as they run it,
 * and the reads go over HTTP.
 */
import { awardPoints, type PointsAward } from "@syllabus/core"
import { expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith, newProduct, runAsAccount } from "../support/api.js"

type Secret = string

let counter = 0
/** A new product's ID. */
const newProductId = async (h: Harness, secret: string = h.live) => String((await newProduct(h, secret)).id)

const unique = () => `${Date.now()}-${++counter}`

const newUser = async (h: Harness, secret: Secret = h.live) =>
  (await created(api(h, secret).post("/users", { name: "Learner", email: `learner-${unique()}@example.com` }))).id as string

const newRule = async (h: Harness, body: Record<string, unknown>, secret: Secret = h.live) =>
  created(api(h, secret).post("/gamification/rules", { name: "Rule", ...body }))

/** Award points as a learning use case would: in a unit of work, for a caller of the environment. */
const award = (h: Harness, input: Partial<PointsAward> & { userId: string; productId: string | null }, environment: "production" | "sandbox" = "production") => {
  const full: PointsAward = { trigger: "lesson_completed", sourceType: "lesson", sourceId: `les_${String(++counter).padStart(9, "0")}`, ...input }
  return runAsAccount(h, awardPoints(full), environment) as Promise<ReadonlyArray<Record<string, any>>>
}

const ids = (res: { body: any }) => res.body.data.map((x: { id: string }) => x.id)

/** The block's tests share one account: an award test first pauses the rules the others made. */
const pauseAllRules = async (h: Harness) => {
  for (;;) {
    const active = await api(h).get("/gamification/rules?status=active&limit=200")
    if (active.body.data.length === 0) return
    for (const rule of active.body.data) expect((await api(h).patch(`/gamification/rules/${rule.id}`, { status: "inactive" })).status).toBe(200)
  }
}

eachStore("gamification", (h) => {
  it("create a rule: every field, gmr_ ID, Location and ETag, defaults; read it back; event gamification_rule.created", async () => {
    const res = await api(h()).post("/gamification/rules", { name: "Lesson done", trigger: "lesson_completed", points: 10 })
    expect(res.status, res.text).toBe(201)
    const data = res.body.data
    expect(Object.keys(data)).toEqual(["object", "id", "name", "trigger", "points", "product_id", "status", "created_at", "updated_at", "revision"])
    expect(data).toMatchObject({ object: "gamification_rule", name: "Lesson done", trigger: "lesson_completed", points: 10, product_id: null, status: "active", revision: "1" })
    expect(data.id).toMatch(/^gmr_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/gamification/rules/${data.id}`)
    expect(res.headers.get("etag")).toBe(`W/"gamification_rule:${data.id}:1"`)
    const read = await api(h()).get(`/gamification/rules/${data.id}`)
    expect(read.status).toBe(200)
    expect(read.body.data).toEqual(data)
    expect(read.headers.get("etag")).toBe(`W/"gamification_rule:${data.id}:1"`)
    const productId = await newProductId(h())
    const scoped = await newRule(h(), { trigger: "exam_passed", points: 10_000, product_id: productId, status: "inactive" })
    expect(scoped).toMatchObject({ trigger: "exam_passed", points: 10_000, product_id: productId, status: "inactive" })
    const events = (await api(h()).get(`/events?resource_id=${data.id}`)).body.data
    expect(events.map((e: { type: string }) => e.type)).toEqual(["gamification_rule.created"])
    expect(events[0].data.object).toEqual(data)
    const audit = (await api(h()).get(`/audit-entries?resource_id=${data.id}`)).body.data.map((e: { action: string }) => e.action)
    expect(audit).toEqual(["gamification_rule.created"])
  })

  it("create: points 1 to 10,000, a trigger of the list, a product of the account, §8.2 text limits, strict body, an Idempotency-Key", async () => {
    const path = "/gamification/rules"
    const base = { name: "Rule", trigger: "lesson_completed", points: 5 }
    expectError(await api(h()).post(path, { ...base, points: 0 }), 422, "validation_failed", { field: "points", code: "out_of_range" })
    expectError(await api(h()).post(path, { ...base, points: 10_001 }), 422, "validation_failed", { field: "points", code: "out_of_range" })
    expectError(await api(h()).post(path, { ...base, points: 2.5 }), 422, "validation_failed", { field: "points", code: "invalid_type" })
    const trigger = await api(h()).post(path, { ...base, trigger: "login" })
    expectError(trigger, 422, "validation_failed", { field: "trigger", code: "invalid_value" })
    expect(trigger.body.error.details[0].allowed).toEqual(["lesson_completed", "exam_passed", "enrollment_completed", "certificate_issued"])
    expectError(await api(h()).post(path, { ...base, product_id: "prd_000000001" }), 422, "validation_failed", { field: "product_id", reason: "not_found" })
    expectError(await api(h()).post(path, { ...base, product_id: "shw_000000001" }), 422, "validation_failed", { field: "product_id", code: "invalid" })
    expectError(await api(h()).post(path, { ...base, name: "" }), 422, "validation_failed", { field: "name" })
    expectError(await api(h()).post(path, { ...base, name: "x".repeat(201) }), 422, "validation_failed", { field: "name", code: "too_long" })
    expectError(await api(h()).post(path, { ...base, status: "paused" }), 422, "validation_failed", { field: "status", code: "invalid_value" })
    expectError(await api(h()).post(path, { trigger: "lesson_completed" }), 422, "validation_failed", { field: "points", code: "required" })
    expectError(await api(h()).post(path, { ...base, color: "gold" }), 422, "unknown_field", { field: "color", code: "unknown_field" })
    expectError(await api(h()).post(path, base, { idempotencyKey: null }), 422, "idempotency_key_required")
    // A trashed product is not one a rule can name.
    const productId = await newProductId(h())
    expect((await api(h()).del(`/products/${productId}`)).status).toBe(200)
    expectError(await api(h()).post(path, { ...base, product_id: productId }), 422, "validation_failed", { field: "product_id", reason: "not_found" })
  })

  it("the same Idempotency-Key replays the rule made, and makes no second one", async () => {
    const key = `gmr-${unique()}`
    const body = { name: "Replayed", trigger: "enrollment_completed", points: 50 }
    const first = await api(h()).post("/gamification/rules", body, { idempotencyKey: key })
    const again = await api(h()).post("/gamification/rules", body, { idempotencyKey: key })
    expect(first.status).toBe(201)
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data).toEqual(first.body.data)
    expect((await api(h()).get(`/events?resource_id=${first.body.data.id}`)).body.data).toHaveLength(1)
  })

  it("PATCH: partial, If-Match, product check; DELETE removes (204) for good; events updated and deleted", async () => {
    const productId = await newProductId(h())
    const rule = await newRule(h(), { trigger: "lesson_completed", points: 10 })
    const path = `/gamification/rules/${rule.id}`
    expectError(await api(h()).patch(path, { points: 20 }, { "if-match": `W/"gamification_rule:${rule.id}:9"` }), 412, "revision_mismatch")
    const changed = await api(h()).patch(path, { points: 20, product_id: productId }, { "if-match": `W/"gamification_rule:${rule.id}:1"` })
    expect(changed.status, changed.text).toBe(200)
    expect(changed.body.data).toMatchObject({ name: "Rule", trigger: "lesson_completed", points: 20, product_id: productId, status: "active", revision: "2" })
    expect(changed.headers.get("etag")).toBe(`W/"gamification_rule:${rule.id}:2"`)
    const global = await api(h()).patch(path, { product_id: null, status: "inactive", trigger: "exam_passed", name: "Renamed" })
    expect(global.body.data).toMatchObject({ name: "Renamed", trigger: "exam_passed", product_id: null, status: "inactive", revision: "3" })
    expectError(await api(h()).patch(path, { product_id: "prd_000000001" }), 422, "validation_failed", { field: "product_id", reason: "not_found" })
    expectError(await api(h()).patch(path, { points: null }), 422, "validation_failed", { field: "points" })
    expectError(await api(h()).patch(path, { deleted: false }), 422, "unknown_field", { field: "deleted" })
    const updated = (await api(h()).get(`/events?resource_id=${rule.id}&type=gamification_rule.updated`)).body.data
    expect(updated.map((e: { previous_attributes: unknown }) => e.previous_attributes)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ points: 10, product_id: null }),
        expect.objectContaining({ product_id: productId, status: "active", trigger: "lesson_completed", name: "Rule" })
      ])
    )
    const removed = await api(h()).del(path)
    expect(removed.status).toBe(204)
    expectError(await api(h()).get(path), 404, "not_found")
    expectError(await api(h()).patch(path, { points: 3 }), 404, "not_found")
    expectError(await api(h()).del(path), 404, "not_found")
    expect((await api(h()).get(`/events?resource_id=${rule.id}&type=gamification_rule.deleted`)).body.data).toHaveLength(1)
  })

  it("list: oldest first, sort, filters by trigger, status and product; bad parameters", async () => {
    const productId = await newProductId(h())
    const a = await newRule(h(), { trigger: "certificate_issued", points: 1, product_id: productId })
    const b = await newRule(h(), { trigger: "certificate_issued", points: 2, status: "inactive" })
    const c = await newRule(h(), { trigger: "certificate_issued", points: 3 })
    const mine = (res: { body: any }) => ids(res).filter((id: string) => [a.id, b.id, c.id].includes(id))
    expect(mine(await api(h()).get("/gamification/rules?trigger=certificate_issued&limit=200"))).toEqual([a.id, b.id, c.id])
    expect(mine(await api(h()).get("/gamification/rules?trigger=certificate_issued&sort=-created_at&limit=200"))).toEqual([c.id, b.id, a.id])
    expect(mine(await api(h()).get("/gamification/rules?trigger=certificate_issued&status=inactive"))).toEqual([b.id])
    expect(ids(await api(h()).get(`/gamification/rules?product_id=${productId}`))).toEqual([a.id])
    const page = await api(h()).get("/gamification/rules?trigger=certificate_issued&limit=2")
    expect(page.body.page.next_cursor).not.toBeNull()
    const next = await api(h()).get(`/gamification/rules?trigger=certificate_issued&limit=2&cursor=${encodeURIComponent(page.body.page.next_cursor)}`)
    expect([...ids(page), ...ids(next)]).toEqual(mine(await api(h()).get("/gamification/rules?trigger=certificate_issued&limit=200")))
    expectError(await api(h()).get("/gamification/rules?trigger=login"), 422, "validation_failed", { parameter: "trigger" })
    expectError(await api(h()).get("/gamification/rules?product_id=nope"), 422, "validation_failed", { parameter: "product_id" })
    expectError(await api(h()).get("/gamification/rules?sort=points"), 422, "validation_failed", { parameter: "sort" })
    expectError(await api(h()).get("/gamification/rules?deleted=true"), 400, "unknown_parameter", { parameter: "deleted" })
  })

  it("awards: the active rules of the trigger, the product's and the global ones, once per source; the balance and the ledger follow", async () => {
    await pauseAllRules(h())
    const productId = await newProductId(h())
    const otherProduct = await newProductId(h())
    const userId = await newUser(h())
    const global = await newRule(h(), { trigger: "exam_passed", points: 5 })
    const own = await newRule(h(), { trigger: "exam_passed", points: 20, product_id: productId })
    await newRule(h(), { trigger: "exam_passed", points: 1000, product_id: otherProduct })
    await newRule(h(), { trigger: "exam_passed", points: 1000, product_id: productId, status: "inactive" })
    await newRule(h(), { trigger: "lesson_completed", points: 1000, product_id: productId })

    const fresh = await api(h()).get(`/users/${userId}/points`)
    expect(fresh.status, fresh.text).toBe(200)
    expect(fresh.body.data).toEqual({ object: "user_points", user_id: userId, balance: 0, updated_at: null })

    const source = { trigger: "exam_passed" as const, sourceType: "exam_attempt", sourceId: "exa_000000001" }
    const first = await award(h(), { userId, productId, ...source })
    expect(first.map((e) => [e.rule_id, e.points, e.ending_balance])).toEqual([
      [global.id, 5, 5],
      [own.id, 20, 25]
    ])
    // A repeated report of the same attempt awards nothing more.
    expect(await award(h(), { userId, productId, ...source })).toEqual([])

    const balance = await api(h()).get(`/users/${userId}/points`)
    expect(balance.body.data).toMatchObject({ object: "user_points", user_id: userId, balance: 25 })
    expect(typeof balance.body.data.updated_at).toBe("string")

    const ledger = await api(h()).get(`/users/${userId}/points/entries`)
    expect(ledger.status, ledger.text).toBe(200)
    expect(ledger.body.data).toEqual([...first].reverse())
    expect(Object.keys(ledger.body.data[0])).toEqual([
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
    expect(ledger.body.data[0]).toMatchObject({
      object: "point_entry",
      user_id: userId,
      product_id: productId,
      trigger: "exam_passed",
      source: { type: "exam_attempt", id: "exa_000000001" }
    })
    expect(ledger.body.data[0].id).toMatch(/^pte_[0-9A-Za-z]{9}$/)

    const entry = await api(h()).get(`/users/${userId}/points/entries/${first[0]!.id}`)
    expect(entry.status).toBe(200)
    expect(entry.body.data).toEqual(first[0])
    expect(entry.headers.get("etag")).toBe(`W/"point_entry:${first[0]!.id}:1"`)

    const events = (await api(h()).get(`/events?resource_id=${first[1]!.id}`)).body.data
    expect(events.map((e: { type: string }) => e.type)).toEqual(["point_entry.created"])
    expect(events[0].data.object).toEqual(first[1])
    expect((await api(h()).get(`/audit-entries?resource_id=${first[1]!.id}`)).body.data.map((e: { action: string }) => e.action)).toEqual([
      "point_entry.created"
    ])
  })

  it("the ledger: newest first, pages, sort, filters by product and trigger; another user's entry is 404", async () => {
    await pauseAllRules(h())
    const p1 = await newProductId(h())
    const p2 = await newProductId(h())
    const userId = await newUser(h())
    const otherUser = await newUser(h())
    await newRule(h(), { trigger: "lesson_completed", points: 2, product_id: p1 })
    await newRule(h(), { trigger: "lesson_completed", points: 3, product_id: p2 })
    await newRule(h(), { trigger: "enrollment_completed", points: 7, product_id: p1 })
    const written = [
      ...(await award(h(), { userId, productId: p1 })),
      ...(await award(h(), { userId, productId: p2 })),
      ...(await award(h(), { userId, productId: p1, trigger: "enrollment_completed", sourceType: "enrollment", sourceId: "enr_000000001" })),
      ...(await award(h(), { userId, productId: p1 }))
    ]
    expect(written.map((e) => e.ending_balance)).toEqual([2, 5, 12, 14])
    const path = `/users/${userId}/points/entries`
    const newest = written.map((e) => e.id).reverse()
    expect(ids(await api(h()).get(path))).toEqual(newest)
    expect(ids(await api(h()).get(`${path}?sort=created_at`))).toEqual([...newest].reverse())
    const first = await api(h()).get(`${path}?limit=3`)
    expect(ids(first)).toEqual(newest.slice(0, 3))
    expect(first.body.page.prev_cursor).toBeNull()
    const second = await api(h()).get(`${path}?limit=3&cursor=${encodeURIComponent(first.body.page.next_cursor)}`)
    expect(ids(second)).toEqual(newest.slice(3))
    expect(second.body.page.next_cursor).toBeNull()
    const back = await api(h()).get(`${path}?limit=3&cursor=${encodeURIComponent(second.body.page.prev_cursor)}`)
    expect(ids(back)).toEqual(newest.slice(0, 3))
    // A cursor is bound to its collection: another user's ledger refuses it.
    expectError(await api(h()).get(`/users/${otherUser}/points/entries?cursor=${encodeURIComponent(first.body.page.next_cursor)}`), 400, "invalid_cursor")
    expect(ids(await api(h()).get(`${path}?product_id=${p2}`))).toEqual([written[1]!.id])
    expect(ids(await api(h()).get(`${path}?trigger=enrollment_completed`))).toEqual([written[2]!.id])
    expect(ids(await api(h()).get(`${path}?product_id=${p1}&trigger=lesson_completed`))).toEqual([written[3]!.id, written[0]!.id])
    expect((await api(h()).get(`/users/${userId}/points`)).body.data.balance).toBe(14)
    expect((await api(h()).get(`/users/${otherUser}/points/entries`)).body.data).toEqual([])
    expect((await api(h()).get(`/users/${otherUser}/points`)).body.data.balance).toBe(0)
    expectError(await api(h()).get(`/users/${otherUser}/points/entries/${written[0]!.id}`), 404, "not_found")
    expectError(await api(h()).get(`${path}?trigger=login`), 422, "validation_failed", { parameter: "trigger" })
    expectError(await api(h()).get(`${path}?sort=points`), 422, "validation_failed", { parameter: "sort" })
    expectError(await api(h()).get(`${path}?user_id=${userId}`), 400, "unknown_parameter", { parameter: "user_id" })
  })

  it("a rule's change applies from then on; removing it leaves its entries and the balance", async () => {
    await pauseAllRules(h())
    const productId = await newProductId(h())
    const userId = await newUser(h())
    const rule = await newRule(h(), { trigger: "certificate_issued", points: 10, product_id: productId })
    const [first] = await award(h(), { userId, productId, trigger: "certificate_issued", sourceType: "certificate", sourceId: "crt_000000001" })
    expect((await api(h()).patch(`/gamification/rules/${rule.id}`, { points: 40 })).status).toBe(200)
    const [second] = await award(h(), { userId, productId, trigger: "certificate_issued", sourceType: "certificate", sourceId: "crt_000000002" })
    expect([first!.points, second!.points, second!.ending_balance]).toEqual([10, 40, 50])
    expect((await api(h()).patch(`/gamification/rules/${rule.id}`, { status: "inactive" })).status).toBe(200)
    expect(await award(h(), { userId, productId, trigger: "certificate_issued", sourceType: "certificate", sourceId: "crt_000000003" })).toEqual([])
    expect((await api(h()).del(`/gamification/rules/${rule.id}`)).status).toBe(204)
    const ledger = await api(h()).get(`/users/${userId}/points/entries`)
    expect(ledger.body.data.map((e: { rule_id: string; points: number }) => [e.rule_id, e.points])).toEqual([
      [rule.id, 40],
      [rule.id, 10]
    ])
    expect((await api(h()).get(`/users/${userId}/points`)).body.data.balance).toBe(50)
  })

  it("concurrent awards: one source is awarded once, different sources all count, the balance is their sum", async () => {
    await pauseAllRules(h())
    const productId = await newProductId(h())
    const userId = await newUser(h())
    await newRule(h(), { trigger: "lesson_completed", points: 3, product_id: productId })
    // The learner's first awards: their balance record is made by one of them.
    const different = await Promise.all(Array.from({ length: 5 }, (_, i) => award(h(), { userId, productId, sourceId: `lpr_00000080${i}` })))
    expect(different.flat()).toHaveLength(5)
    const same = await Promise.all(Array.from({ length: 5 }, () => award(h(), { userId, productId, sourceId: "lpr_000000777" })))
    expect(same.flat()).toHaveLength(1)
    const ledger = (await api(h()).get(`/users/${userId}/points/entries`)).body.data
    expect(ledger.map((e: { ending_balance: number }) => e.ending_balance)).toEqual([18, 15, 12, 9, 6, 3])
    expect((await api(h()).get(`/users/${userId}/points`)).body.data.balance).toBe(18)
  })

  it("points of a missing, malformed, trashed or other environment's user are 404; the ledger has no create, update or delete", async () => {
    await pauseAllRules(h())
    const userId = await newUser(h())
    const productId = await newProductId(h())
    await newRule(h(), { trigger: "enrollment_completed", points: 1 })
    const [entry] = await award(h(), { userId, productId, trigger: "enrollment_completed", sourceType: "enrollment", sourceId: "enr_000000002" })
    expectError(await api(h()).get("/users/usr_000000001/points"), 404, "not_found")
    expectError(await api(h()).get("/users/nope/points"), 404, "not_found")
    expectError(await api(h()).get("/users/usr_000000001/points/entries"), 404, "not_found")
    expectError(await api(h(), h().test).get(`/users/${userId}/points`), 404, "not_found")
    expectError(await api(h(), h().test).get(`/users/${userId}/points/entries/${entry!.id}`), 404, "not_found")
    expectError(await api(h()).get(`/users/${userId}/points/entries/pte_000000001`), 404, "not_found")
    expectError(await api(h()).get(`/users/${userId}/points/entries/gmr_000000001`), 404, "not_found")
    expectError(await api(h()).post(`/users/${userId}/points/entries`, { points: 5 }), 405, "method_not_allowed")
    expectError(await api(h()).patch(`/users/${userId}/points/entries/${entry!.id}`, { points: 5 }), 405, "method_not_allowed")
    expectError(await api(h()).del(`/users/${userId}/points/entries/${entry!.id}`), 405, "method_not_allowed")
    expectError(await api(h()).patch(`/users/${userId}/points`, { balance: 5 }), 405, "method_not_allowed")
    expect((await api(h()).del(`/users/${userId}`)).status).toBe(200)
    expectError(await api(h()).get(`/users/${userId}/points`), 404, "not_found")
    expectError(await api(h()).get(`/users/${userId}/points/entries`), 404, "not_found")
  })

  it("permissions: gamification_rules.* for the rules, points.read for balances and ledgers (limited to users by a policy); read_only has both reads", async () => {
    const userId = await newUser(h())
    const otherUser = await newUser(h())
    const rule = await newRule(h(), { trigger: "lesson_completed", points: 1 })
    const rulesReader = await credentialWith(h(), ["gamification_rules.read"])
    expect((await api(h(), rulesReader).get(`/gamification/rules/${rule.id}`)).status).toBe(200)
    expect((await api(h(), rulesReader).get("/gamification/rules")).status).toBe(200)
    expectError(await api(h(), rulesReader).post("/gamification/rules", { name: "No", trigger: "lesson_completed", points: 1 }), 403, "permission_denied")
    expectError(await api(h(), rulesReader).patch(`/gamification/rules/${rule.id}`, { points: 2 }), 403, "permission_denied")
    expectError(await api(h(), rulesReader).del(`/gamification/rules/${rule.id}`), 403, "permission_denied")
    expectError(await api(h(), rulesReader).get(`/users/${userId}/points`), 403, "permission_denied")
    expectError(await api(h(), rulesReader).get(`/users/${userId}/points/entries`), 403, "permission_denied")

    const pointsReader = await credentialWith(h(), ["points.read"])
    expect((await api(h(), pointsReader).get(`/users/${userId}/points`)).status).toBe(200)
    expect((await api(h(), pointsReader).get(`/users/${userId}/points/entries`)).status).toBe(200)
    expectError(await api(h(), pointsReader).get("/gamification/rules"), 403, "permission_denied")

    const oneUser = await credentialWith(h(), ["points.read"], [userId])
    expect((await api(h(), oneUser).get(`/users/${userId}/points`)).status).toBe(200)
    expectError(await api(h(), oneUser).get(`/users/${otherUser}/points`), 404, "not_found")
    expectError(await api(h(), oneUser).get(`/users/${otherUser}/points/entries`), 404, "not_found")

    const oneRule = await credentialWith(h(), ["gamification_rules.read"], [rule.id])
    expect(ids(await api(h(), oneRule).get("/gamification/rules"))).toEqual([rule.id])

    const readOnly = (await created(api(h()).post("/credentials", { name: "ro", policies: [{ template: "read_only" }] }))).secret.value as string
    expect((await api(h(), readOnly).get(`/users/${userId}/points`)).status).toBe(200)
    expect((await api(h(), readOnly).get(`/gamification/rules/${rule.id}`)).status).toBe(200)
    expectError(await api(h(), readOnly).post("/gamification/rules", { name: "No", trigger: "lesson_completed", points: 1 }), 403, "permission_denied")
  })

  it("the catalogs: capabilities, event types and the batch types name gamification", async () => {
    const templates = (await api(h()).get("/policy-templates")).body.data
    const readOnly = templates.find((t: { id: string }) => t.id === "read_only")
    expect(readOnly.capabilities).toEqual(expect.arrayContaining(["points.read", "gamification_rules.read"]))
    const types = (await api(h()).get("/event-types")).body.data.map((e: { type: string }) => e.type)
    expect(types).toEqual(expect.arrayContaining(["gamification_rule.created", "gamification_rule.updated", "gamification_rule.deleted", "point_entry.created"]))
    expect(types).not.toContain("point_entry.updated")
    const batch = await api(h()).post("/operations", { type: "gamification_rules.create", items: [{ key: "one", name: "Batched", trigger: "exam_passed", points: 3 }] })
    expect(batch.status, batch.text).toBe(202)
  })

  it("a sandbox reset empties the sandbox's rules, ledger and balances; production keeps its own", async () => {
    await pauseAllRules(h())
    const sandboxUser = await newUser(h(), h().test)
    const sandboxProduct = await newProductId(h(), h().test)
    const rule = await newRule(h(), { trigger: "lesson_completed", points: 6 }, h().test)
    const [entry] = await award(h(), { userId: sandboxUser, productId: sandboxProduct }, "sandbox")
    expect(entry).toMatchObject({ points: 6, ending_balance: 6 })
    expect((await api(h(), h().test).get(`/users/${sandboxUser}/points`)).body.data.balance).toBe(6)
    const liveUser = await newUser(h())
    const liveRule = await newRule(h(), { trigger: "lesson_completed", points: 8 })
    const liveEntries = await award(h(), { userId: liveUser, productId: null })
    expect(liveEntries.map((e) => e.rule_id)).toContain(liveRule.id)
    expect(liveEntries.map((e) => e.rule_id)).not.toContain(rule.id)

    expect((await h().request("POST", "/api/v3/sandbox/resets", { secret: h().test })).status).toBe(201)
    const sandbox = { accountId: h().account.account.id, environment: "sandbox" as const }
    expectError(await api(h(), h().test).get(`/gamification/rules/${rule.id}`), 404, "not_found")
    expect((await api(h(), h().test).get("/gamification/rules")).body.data).toEqual([])
    expect(await h().storedRecord(sandbox, "point_entry", entry!.id)).toBeUndefined()
    expect(await h().storedRecord(sandbox, "point_balance", sandboxUser)).toBeUndefined()
    expect((await api(h()).get(`/gamification/rules/${liveRule.id}`)).status).toBe(200)
    expect((await api(h()).get(`/users/${liveUser}/points`)).body.data.balance).toBe(8)
  })
})
