/**
 * Replica links (`/replicas`, release 3.2.0, on the replica rules of 3.3.0), across two
 * accounts: a source links a target by subdomain, the target accepts with the token and its
 * own credential, the products are copied (product, modules, lessons, content) by an
 * operation, publishing the source publishes the copies, the copies are read-only except
 * `status`, and unlinking (or leaving a product out) detaches them: writable again. Also the
 * errors, the token's expiry, events, idempotency, permissions and the sandbox resets of both
 * sides. Decisions: docs/replicas.md.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith } from "../support/api.js"
import { expectError } from "../support/expect.js"

type Env = "production" | "sandbox"
type Opened = Awaited<ReturnType<Harness["openAccount"]>>

let counter = 0
const unique = (label: string) => `${label}-${Date.now()}-${++counter}`

const secretOf = (account: Opened, environment: Env = "production") => account.credentials.find((c) => c.environment === environment)!.secret
const subdomainOf = (account: Opened) => String(account.account.subdomain)

/** The operation once it has finished, read with `secret`. */
const settled = async (h: Harness, secret: string, id: string) => {
  for (let i = 0; i < 150; i++) {
    const op = (await api(h, secret).get(`/operations/${id}`)).body.data
    if (op.status === "succeeded" || op.status === "failed") return op
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`operation ${id} did not finish`)
}

/** A course with one module of two lessons (the first with content), in a showcase of its own. */
const course = async (h: Harness, secret: string) => {
  const client = api(h, secret)
  const showcase = await created(client.post("/showcases", { name: unique("Shelf") }))
  const product = await created(client.post("/products", { format: "course", name: unique("Course"), showcase_id: showcase.id }))
  const module = await created(client.post(`/products/${product.id}/modules`, { name: "Module 1" }))
  const first = await created(client.post(`/products/${product.id}/lessons`, { name: "Lesson 1", module_id: module.id }))
  const second = await created(client.post(`/products/${product.id}/lessons`, { name: "Lesson 2", module_id: module.id }))
  const content = await client.put(`/products/${product.id}/lessons/${first.id}/content`, { body: { blocks: [{ type: "paragraph", text: "Hello" }] } })
  expect(content.status, content.text).toBe(200)
  return { showcase, product, module, lessons: [first, second] }
}

/** Source and target accounts in one environment, the source's course, the target's showcase. */
const pair = async (h: Harness, environment: Env = "production") => {
  const target = await h.openAccount(unique("target"))
  const source = environment === "production" ? h.live : h.test
  const theirs = secretOf(target, environment)
  const shelf = await created(api(h, theirs).post("/showcases", { name: "Shared with us" }))
  return { target, source, theirs, shelf, subdomain: subdomainOf(target), course: await course(h, source) }
}

type Pair = Awaited<ReturnType<typeof pair>>

/** Link `p.course.product` (and `more`) to the target, accept, and wait for the copies. */
const linked = async (h: Harness, p: Pair, more: ReadonlyArray<string> = []) => {
  const link = await api(h, p.source).post("/replicas", { target_subdomain: p.subdomain, product_ids: [p.course.product.id, ...more] })
  expect(link.status, link.text).toBe(201)
  const accepted = await api(h, p.theirs).post(`/replicas/${link.body.data.id}/acceptances`, { token: link.body.data.secret.value, showcase_id: p.shelf.id })
  expect(accepted.status, accepted.text).toBe(200)
  const op = await settled(h, p.source, accepted.body.data.operation_id)
  expect(op.status).toBe("succeeded")
  return { replica: accepted.body.data, operation: op }
}

/** The target's copies in its shelf, by name. */
const copiesIn = async (h: Harness, p: Pair) => (await api(h, p.theirs).get(`/products?showcase_id=${p.shelf.id}&sort=position`)).body.data as any

eachStore("replicas", (h) => {
  it("create: pending, rpl_ ID, Location, the acceptance token once (never on a read); event replica.created", async () => {
    const p = await pair(h())
    const res = await api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain.toUpperCase(), product_ids: [p.course.product.id] })
    expect(res.status, res.text).toBe(201)
    const data = res.body.data
    expect(Object.keys(data)).toEqual([
      "object", "id", "target", "status", "product_ids", "target_showcase_id", "acceptance_expires_at", "linked_at", "unlinked_at", "operation_id", "created_at", "updated_at", "revision", "secret"
    ])
    expect(data).toMatchObject({
      object: "replica",
      target: { account_id: p.target.account.id, subdomain: p.subdomain, environment: "production" },
      status: "pending",
      product_ids: [p.course.product.id],
      target_showcase_id: null,
      linked_at: null,
      operation_id: null
    })
    expect(data.id).toMatch(/^rpl_[0-9A-Za-z]{9}$/)
    expect(data.secret.value).toMatch(/^rplt_[0-9A-Za-z]{40}$/)
    expect(Date.parse(data.acceptance_expires_at) - Date.parse(data.created_at)).toBe(7 * 24 * 3600 * 1000)
    expect(res.headers.get("location")).toBe(`/api/v3/replicas/${data.id}`)
    const read = await api(h(), p.source).get(`/replicas/${data.id}`)
    expect(read.status).toBe(200)
    expect(read.body.data.secret).toBeUndefined()
    expect(read.text).not.toContain(data.secret.value)
    expect((await api(h(), p.source).get("/replicas?status=pending")).body.data.map((r: any) => r.id)).toContain(data.id)
    expect((await api(h(), p.source).get("/replicas?status=active")).body.data.map((r: any) => r.id)).not.toContain(data.id)
    expect((await api(h(), p.source).get(`/events?resource_id=${data.id}&type=replica.created`)).body.data).toHaveLength(1)
    // The target sees nothing of the source's link.
    expectError(await api(h(), p.theirs).get(`/replicas/${data.id}`), 404, "not_found")
    // Idempotency §4.1: a create needs its key; its token is never shown again, so a replay is refused.
    expectError(await api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain }, { idempotencyKey: null }), 422, "idempotency_key_required")
    const key = unique("key")
    const other = await h().openAccount(unique("other"))
    const once = await api(h(), p.source).post("/replicas", { target_subdomain: subdomainOf(other) }, { idempotencyKey: key })
    expect(once.status).toBe(201)
    expectError(await api(h(), p.source).post("/replicas", { target_subdomain: subdomainOf(other) }, { idempotencyKey: key }), 409, "secret_not_replayable")
    expect((await api(h(), p.source).get("/replicas?status=pending&limit=100")).body.data.filter((r: any) => r.target.account_id === other.account.id)).toHaveLength(1)
  })

  it("the target: itself is 422 domain_rule_violation, unknown 422 not_found, a second live link 409 already_exists", async () => {
    const p = await pair(h())
    expectError(await api(h(), p.source).post("/replicas", { target_subdomain: String(h().account.account.subdomain) }), 422, "domain_rule_violation", {
      field: "target_subdomain",
      reason: "self_target"
    })
    expectError(await api(h(), p.source).post("/replicas", { target_subdomain: unique("nobody") }), 422, "validation_failed", {
      field: "target_subdomain",
      reason: "not_found"
    })
    expectError(await api(h(), p.source).post("/replicas", {}), 422, "validation_failed", { field: "target_subdomain", code: "required" })
    const first = await created(api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain }))
    expectError(await api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain }), 409, "already_exists", { field: "target_subdomain" })
    // Unlinked, the target may be linked again.
    expect((await api(h(), p.source).del(`/replicas/${first.id}`)).status).toBe(200)
    expect((await api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain })).status).toBe(201)
  })

  it("product_ids: itemized 422 (not_found, duplicate, trashed, malformed), a replica 403 replica_readonly, one already copied there 409 already_exists; nothing is created", async () => {
    const p = await pair(h())
    const id = p.course.product.id
    const trashed = await created(api(h(), p.source).post("/products", { format: "course", name: "Old", showcase_id: p.course.showcase.id }))
    expect((await api(h(), p.source).del(`/products/${trashed.id}`)).status).toBe(200)
    const bad = await api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain, product_ids: [id, "prd_000000001", id, trashed.id] })
    expectError(bad, 422, "validation_failed", { field: "product_ids[1]", reason: "not_found" })
    expectError(bad, 422, "validation_failed", { field: "product_ids[2]", reason: "duplicate" })
    expectError(bad, 422, "validation_failed", { field: "product_ids[3]", reason: "not_found" })
    expectError(await api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain, product_ids: ["nope"] }), 422, "validation_failed", { field: "product_ids[0]" })
    // §8.2: at most 100 products a link.
    const many = Array.from({ length: 101 }, () => id)
    expectError(await api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain, product_ids: many }), 422, "too_many_items", { field: "product_ids", code: "too_many_items" })
    const copy = await created(api(h(), p.source).post("/products", { format: "course", name: "A copy", showcase_id: p.course.showcase.id }))
    await h().patchRecord({ accountId: h().account.account.id, environment: "production" }, "product", copy.id, {
      replica_of: { account_id: p.target.account.id, environment: "production", id: "prd_000000001" }
    })
    expectError(await api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain, product_ids: [copy.id] }), 403, "replica_readonly")
    await h().patchRecord({ accountId: h().account.account.id, environment: "production" }, "product", id, {
      replicas: [{ account_id: p.target.account.id, environment: "production", id: "prd_000000001" }]
    })
    expectError(await api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain, product_ids: [id] }), 409, "already_exists", { field: "product_ids[0]" })
    expect((await api(h(), p.source).get("/replicas?status=pending")).body.data.filter((r: any) => r.target.account_id === p.target.account.id)).toEqual([])
  })

  it("acceptance: a wrong token, another account, another environment or a used token are 404; a foreign showcase 422; then active, copies made by one operation", async () => {
    const p = await pair(h())
    const link = await created(api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain, product_ids: [p.course.product.id] }))
    const path = `/replicas/${link.id}/acceptances`
    const body = { token: link.secret.value, showcase_id: p.shelf.id }
    expectError(await api(h(), p.theirs).post(path, { ...body, token: `rplt_${"x".repeat(40)}` }), 404, "not_found")
    const stranger = await h().openAccount(unique("stranger"))
    const strangerShelf = await created(api(h(), secretOf(stranger)).post("/showcases", { name: "Theirs" }))
    expectError(await api(h(), secretOf(stranger)).post(path, { ...body, showcase_id: strangerShelf.id }), 404, "not_found")
    expectError(await api(h(), secretOf(p.target, "sandbox")).post(path, body), 404, "not_found")
    expectError(await api(h(), p.theirs).post(path, { ...body, showcase_id: p.course.showcase.id }), 422, "validation_failed", { field: "showcase_id", reason: "not_found" })
    expectError(await api(h(), p.theirs).post(path, { token: link.secret.value }), 422, "validation_failed", { field: "showcase_id", code: "required" })
    // The source itself cannot accept its own link.
    expectError(await api(h(), p.source).post(path, { ...body, showcase_id: p.course.showcase.id }), 404, "not_found")
    const accepted = await api(h(), p.theirs).post(path, body)
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.body.data).toMatchObject({ id: link.id, status: "active", target_showcase_id: p.shelf.id, acceptance_expires_at: null })
    expect(accepted.body.data.linked_at).not.toBeNull()
    expectError(await api(h(), p.theirs).post(path, body), 404, "not_found")
    const op = await settled(h(), p.source, accepted.body.data.operation_id)
    expect(op).toMatchObject({ type: "replica_sync", status: "succeeded", progress: { done: 1, failed: 0, total: 1 } })
    const [copy] = await copiesIn(h(), p)
    expect(copy).toMatchObject({ name: p.course.product.name, format: "course", status: "draft", modules_count: 1, lessons_count: 2 })
    const items = (await api(h(), p.source).get(`/operations/${op.id}/items`)).body.data
    expect(items[0].result).toMatchObject({ object: "product", id: p.course.product.id, copy: { account_id: p.target.account.id, environment: "production", id: copy.id } })
    const modules = (await api(h(), p.theirs).get(`/products/${copy.id}/modules`)).body.data
    expect(modules.map((m: any) => m.name)).toEqual(["Module 1"])
    const lessons = (await api(h(), p.theirs).get(`/products/${copy.id}/lessons?sort=position`)).body.data
    expect(lessons.map((l: any) => [l.name, l.module_id])).toEqual([["Lesson 1", modules[0].id], ["Lesson 2", modules[0].id]])
    const content = await api(h(), p.theirs).get(`/products/${copy.id}/lessons/${lessons[0].id}/content`)
    expect(content.status, content.text).toBe(200)
    expect(JSON.stringify(content.body.data)).toContain("Hello")
    // Events on both sides: the link in the source, the copies' creations in the target.
    expect((await api(h(), p.source).get(`/events?resource_id=${link.id}&type=replica.linked`)).body.data).toHaveLength(1)
    expect((await api(h(), p.theirs).get(`/events?resource_id=${copy.id}&type=product.created`)).body.data).toHaveLength(1)
    expect((await api(h(), p.source).get(`/audit-entries?resource_id=${link.id}`)).body.data.map((e: any) => e.action)).toContain("replica.linked")
    expect((await api(h(), p.theirs).get(`/audit-entries?resource_id=${link.id}`)).body.data.map((e: any) => e.action)).toContain("replica.accepted")
  })

  it("two acceptances at once: one wins (200), the other is 404; one copy only", async () => {
    const p = await pair(h())
    const link = await created(api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain, product_ids: [p.course.product.id] }))
    const body = { token: link.secret.value, showcase_id: p.shelf.id }
    const answers = await Promise.all([0, 1, 2].map(() => api(h(), p.theirs).post(`/replicas/${link.id}/acceptances`, body)))
    expect(answers.map((a) => a.status).sort()).toEqual([200, 404, 404])
    const winner = answers.find((a) => a.status === 200)!
    expect(await settled(h(), p.source, winner.body.data.operation_id)).toMatchObject({ status: "succeeded" })
    expect(await copiesIn(h(), p)).toHaveLength(1)
    expect((await api(h(), p.source).get(`/events?resource_id=${link.id}&type=replica.linked`)).body.data).toHaveLength(1)
  })

  it("across two accounts: the copy is read-only except status (403 replica_readonly); publishing the source publishes the copy, a module publication its module and lessons", async () => {
    const p = await pair(h())
    await linked(h(), p)
    const [copy] = await copiesIn(h(), p)
    const theirs = api(h(), p.theirs)
    expectError(await theirs.patch(`/products/${copy.id}`, { name: "Mine now" }), 403, "replica_readonly")
    expectError(await theirs.del(`/products/${copy.id}`), 403, "replica_readonly")
    expectError(await theirs.post(`/products/${copy.id}/modules`, { name: "Extra" }), 403, "replica_readonly")
    const [moduleCopy] = (await theirs.get(`/products/${copy.id}/modules`)).body.data
    expectError(await theirs.patch(`/products/${copy.id}/modules/${moduleCopy.id}`, { name: "Renamed" }), 403, "replica_readonly")
    const [lessonCopy] = (await theirs.get(`/products/${copy.id}/lessons?sort=position`)).body.data
    expectError(await theirs.patch(`/products/${copy.id}/lessons/${lessonCopy.id}`, { name: "Renamed" }), 403, "replica_readonly")
    expectError(await theirs.put(`/products/${copy.id}/lessons/${lessonCopy.id}/content`, { body: { blocks: [] } }), 403, "replica_readonly")
    // Publishing the source: one item for it, one for its copy in the other account.
    const started = await api(h(), p.source).post(`/products/${p.course.product.id}/publications`)
    expect(started.status).toBe(202)
    expect(await settled(h(), p.source, started.body.data.id)).toMatchObject({ status: "succeeded", progress: { done: 2, failed: 0, total: 2 } })
    expect((await theirs.get(`/products/${copy.id}`)).body.data.status).toBe("published")
    // The module's publication reaches the module copy and its lessons.
    const moduleStarted = await api(h(), p.source).post(`/products/${p.course.product.id}/modules/${p.course.module.id}/publications`)
    expect(await settled(h(), p.source, moduleStarted.body.data.id)).toMatchObject({ status: "succeeded", progress: { total: 4 } })
    expect((await theirs.get(`/products/${copy.id}/modules/${moduleCopy.id}`)).body.data.status).toBe("published")
    expect((await theirs.get(`/products/${copy.id}/lessons/${lessonCopy.id}`)).body.data.status).toBe("published")
    // Status alone may change on a copy.
    expect((await theirs.patch(`/products/${copy.id}`, { status: "draft" })).body.data.status).toBe("draft")
  })

  it("a product published before the link is copied published", async () => {
    const p = await pair(h())
    const started = await api(h(), p.source).post(`/products/${p.course.product.id}/publications`)
    await settled(h(), p.source, started.body.data.id)
    await linked(h(), p)
    const [copy] = await copiesIn(h(), p)
    expect(copy.status).toBe("published")
    expect((await api(h(), p.theirs).get(`/events?resource_id=${copy.id}&type=product.published`)).body.data).toHaveLength(1)
  })

  it("unlink: unlinked, event replica.unlinked, the copies detached (writable again, the source stops publishing them); again: unchanged; no more changes (409)", async () => {
    const p = await pair(h())
    const { replica } = await linked(h(), p)
    const [copy] = await copiesIn(h(), p)
    const res = await api(h(), p.source).del(`/replicas/${replica.id}`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toMatchObject({ id: replica.id, status: "unlinked" })
    expect(res.body.data.unlinked_at).not.toBeNull()
    expect(res.body.data.operation_id).not.toBe(replica.operation_id)
    expect(await settled(h(), p.source, res.body.data.operation_id)).toMatchObject({ status: "succeeded", progress: { done: 1, total: 1 } })
    expect((await api(h(), p.source).get(`/events?resource_id=${replica.id}&type=replica.unlinked`)).body.data).toHaveLength(1)
    const theirs = api(h(), p.theirs)
    const renamed = await theirs.patch(`/products/${copy.id}`, { name: "Ours now" })
    expect(renamed.status, renamed.text).toBe(200)
    const [lessonCopy] = (await theirs.get(`/products/${copy.id}/lessons?sort=position`)).body.data
    expect((await theirs.patch(`/products/${copy.id}/lessons/${lessonCopy.id}`, { name: "Ours" })).status).toBe(200)
    const [moduleCopy] = (await theirs.get(`/products/${copy.id}/modules`)).body.data
    expect((await theirs.post(`/products/${copy.id}/modules`, { name: "Extra" })).status).toBe(201)
    expect((await theirs.patch(`/products/${copy.id}/modules/${moduleCopy.id}`, { name: "Renamed" })).status).toBe(200)
    const published = await api(h(), p.source).post(`/products/${p.course.product.id}/publications`)
    expect(await settled(h(), p.source, published.body.data.id)).toMatchObject({ status: "succeeded", progress: { total: 1 } })
    expect((await theirs.get(`/products/${copy.id}`)).body.data.status).toBe("draft")
    const again = await api(h(), p.source).del(`/replicas/${replica.id}`)
    expect(again.status).toBe(200)
    expect(again.body.data.revision).toBe(res.body.data.revision)
    expectError(await api(h(), p.source).patch(`/replicas/${replica.id}`, { product_ids: [] }), 409, "state_conflict", { reason: "unlinked" })
  })

  it("PATCH product_ids on an active link: added products copied, those left out detached, in one operation; If-Match", async () => {
    const p = await pair(h())
    const second = await course(h(), p.source)
    const { replica } = await linked(h(), p)
    const [first] = await copiesIn(h(), p)
    expectError(await api(h(), p.source).patch(`/replicas/${replica.id}`, { product_ids: [second.product.id] }, { "if-match": `W/"replica:${replica.id}:1"` }), 412, "revision_mismatch")
    const res = await api(h(), p.source).patch(`/replicas/${replica.id}`, { product_ids: [second.product.id] })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.product_ids).toEqual([second.product.id])
    expect(await settled(h(), p.source, res.body.data.operation_id)).toMatchObject({ status: "succeeded", progress: { done: 2, total: 2 } })
    const copies = await copiesIn(h(), p)
    expect(copies.map((c: any) => c.name)).toEqual([p.course.product.name, second.product.name])
    expect((await api(h(), p.theirs).patch(`/products/${first.id}`, { name: "Detached" })).status).toBe(200)
    expectError(await api(h(), p.theirs).patch(`/products/${copies[1].id}`, { name: "Still a replica" }), 403, "replica_readonly")
    expect((await api(h(), p.source).get(`/events?resource_id=${replica.id}&type=replica.updated`)).body.data).toHaveLength(1)
  })

  it("a pending link only records its products; an expired token is 409 state_conflict (token_expired)", async () => {
    const p = await pair(h())
    const link = await created(api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain }))
    const changed = await api(h(), p.source).patch(`/replicas/${link.id}`, { product_ids: [p.course.product.id] })
    expect(changed.body.data).toMatchObject({ status: "pending", product_ids: [p.course.product.id], operation_id: null })
    h().advance(8 * 24 * 3600 * 1000)
    try {
      expectError(await api(h(), p.theirs).post(`/replicas/${link.id}/acceptances`, { token: link.secret.value, showcase_id: p.shelf.id }), 409, "state_conflict", {
        reason: "token_expired"
      })
    } finally {
      h().advance(-8 * 24 * 3600 * 1000)
    }
    // Unlinked while pending: its token no longer works.
    expect((await api(h(), p.source).del(`/replicas/${link.id}`)).body.data.status).toBe("unlinked")
    expectError(await api(h(), p.theirs).post(`/replicas/${link.id}/acceptances`, { token: link.secret.value, showcase_id: p.shelf.id }), 404, "not_found")
  })

  it("capabilities: replicas.read reads but neither creates, changes nor unlinks (403 permission_denied); accepting needs replicas.create", async () => {
    const p = await pair(h())
    const link = await created(api(h(), p.source).post("/replicas", { target_subdomain: p.subdomain }))
    const reader = await credentialWith(h(), ["replicas.read"])
    expect((await api(h(), reader).get(`/replicas/${link.id}`)).status).toBe(200)
    expectError(await api(h(), reader).post("/replicas", { target_subdomain: p.subdomain }), 403, "permission_denied")
    expectError(await api(h(), reader).patch(`/replicas/${link.id}`, { product_ids: [] }), 403, "permission_denied")
    expectError(await api(h(), reader).del(`/replicas/${link.id}`), 403, "permission_denied")
    const targetReader = (
      await created(api(h(), p.theirs).post("/credentials", { name: "reader", policies: [{ capabilities: ["replicas.read"] }] }))
    ).secret.value as string
    expectError(await api(h(), targetReader).post(`/replicas/${link.id}/acceptances`, { token: link.secret.value, showcase_id: p.shelf.id }), 403, "permission_denied")
    expect((await api(h()).get("/policy-templates")).body.data.map((t: any) => t.id)).toContain("replica_manager")
  })

  it("sandbox: a link joins the sandboxes; resetting the source's sandbox detaches the copies in the target's, which keeps them", async () => {
    const p = await pair(h(), "sandbox")
    const { replica } = await linked(h(), p)
    expect(replica.target.environment).toBe("sandbox")
    const [copy] = await copiesIn(h(), p)
    expectError(await api(h(), p.theirs).patch(`/products/${copy.id}`, { name: "Mine" }), 403, "replica_readonly")
    expect((await api(h(), p.source).post("/sandbox/resets")).status).toBeLessThan(300)
    // The detach runs in the target's sandbox, as an operation of its own.
    const ops = (await api(h(), p.theirs).get("/operations?limit=10")).body.data.filter((o: any) => o.type === "replica_sync")
    expect(ops).toHaveLength(1)
    expect(await settled(h(), p.theirs, ops[0].id)).toMatchObject({ status: "succeeded", progress: { done: 1, total: 1 } })
    const renamed = await api(h(), p.theirs).patch(`/products/${copy.id}`, { name: "Mine" })
    expect(renamed.status, renamed.text).toBe(200)
    // Nothing of the target's production changed.
    expect((await api(h(), secretOf(p.target)).get("/operations?limit=10")).body.data).toEqual([])
  })

  it("sandbox: resetting the target's sandbox unlinks the links into it; the source stops listing the copies", async () => {
    const p = await pair(h(), "sandbox")
    const { replica } = await linked(h(), p)
    expect((await api(h(), p.theirs).post("/sandbox/resets")).status).toBeLessThan(300)
    const after = (await api(h(), p.source).get(`/replicas/${replica.id}`)).body.data
    expect(after.status).toBe("unlinked")
    expect(await settled(h(), p.source, after.operation_id)).toMatchObject({ status: "succeeded" })
    const published = await api(h(), p.source).post(`/products/${p.course.product.id}/publications`)
    expect(await settled(h(), p.source, published.body.data.id)).toMatchObject({ status: "succeeded", progress: { total: 1 } })
  })
})
