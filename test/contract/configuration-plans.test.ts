/**
 * Declarative configuration plans (release 3.2.0; docs/configuration-plans.md): a manifest
 * planned against the account (`POST /configuration/plans`), applied as an operation
 * (`POST /configuration/plans/{plan_id}/applications`), the account exported as a manifest
 * (`GET /configuration/manifest`); convergence (a second plan is empty, here and in another
 * account), the update diff, the delete rule (`prune`), and the errors `plan_invalid`,
 * `plan_stale`, `plan_expired`, `state_conflict` (`plan_already_applied`), permissions and
 * idempotency, and (without a worker) the check each item makes as it runs. Each test starts
 * from an emptied sandbox.
 */
import { runDueOperations } from "@syllabus/core"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, credentialWith } from "../support/api.js"
import { expectError } from "../support/expect.js"

type Client = ReturnType<typeof api>

/** The sandbox, emptied: its client. */
const fresh = async (h: Harness) => {
  expect((await api(h, h.test).post("/sandbox/resets")).status).toBeLessThan(300)
  return api(h, h.test)
}

let subdomains = 0
const freshSubdomain = (prefix: string) => `${prefix}-${process.pid}-${Date.now()}-${++subdomains}`

/** The operation once finished, read with the client of its account. */
const settled = async (client: Client, operationId: string, polls = 150) => {
  for (let i = 0; i < polls; i++) {
    const op = (await client.get(`/operations/${operationId}`)).body.data
    if (op.status === "succeeded" || op.status === "failed") return op
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`operation ${operationId} did not finish`)
}

const plan = async (client: Client, manifest: unknown) => {
  const res = await client.post("/configuration/plans", { manifest })
  expect(res.status, res.text).toBe(201)
  return res.body.data
}

/** Plan and apply: the finished operation. */
const apply = async (client: Client, manifest: unknown) => {
  const planned = await plan(client, manifest)
  const res = await client.post(`/configuration/plans/${planned.id}/applications`)
  expect(res.status, res.text).toBe(202)
  const op = await settled(client, res.body.data.id)
  expect(op.status, JSON.stringify(op)).toBe("succeeded")
  return { planned, op }
}

const manifest = {
  showcases: [{ name: "Main", description: "The main shelf", status: "active" }],
  tags: [{ name: "vip" }, { name: "beta" }],
  custom_fields: [{ key: "company", label: "Company", type: "text", required: false }],
  webhooks: [{ url: "https://hooks.example.com/syllabus", description: "CRM", event_types: ["product.created"], status: "active" }],
  settings: { appearance: { primary_color: "#112233" } },
  products: [
    { external_id: "course-1", name: "Course one", format: "course", showcase: "Main", modules: [{ name: "Intro", description: null }, { name: "Deep dive" }] }
  ]
}

const byName = (list: ReadonlyArray<any>, name: string) => list.find((item) => item.name === name)

eachStore("configuration plans", (h) => {
  it("a fresh manifest plans creates in dependency order; applied, the resources exist; the same manifest again plans nothing", async () => {
    const client = await fresh(h())
    const res = await client.post("/configuration/plans", { manifest })
    expect(res.status, res.text).toBe(201)
    const planned = res.body.data
    expect(planned.id).toMatch(/^pln_[0-9A-Za-z]+$/)
    expect(res.headers.get("location")).toBe(`/api/v3/configuration/plans/${planned.id}`)
    expect(Object.keys(planned)).toEqual(["object", "id", "status", "summary", "changes", "operation_id", "created_at", "expires_at", "applied_at"])
    expect(planned).toMatchObject({ object: "configuration_plan", status: "planned", summary: { create: 8, update: 1, delete: 0 }, operation_id: null, applied_at: null })
    expect(planned.changes.map((c: any) => [c.action, c.resource_type, c.key])).toEqual([
      ["create", "showcase", "Main"],
      ["create", "tag", "vip"],
      ["create", "tag", "beta"],
      ["create", "custom_field", "company"],
      ["create", "webhook", "https://hooks.example.com/syllabus"],
      ["update", "settings", "appearance"],
      ["create", "product", "course-1"],
      ["create", "module", "Intro"],
      ["create", "module", "Deep dive"]
    ])
    expect(planned.changes[0].fields.name).toEqual({ before: null, after: "Main" })
    expect(planned.changes[5].fields.primary_color).toEqual({ before: "#2563eb", after: "#112233" })
    expect(planned.changes[7].parent_key).toBe("course-1")
    // Planning writes nothing but the plan.
    expect((await client.get("/showcases")).body.data).toEqual([])
    expect((await client.get(`/configuration/plans/${planned.id}`)).body.data).toEqual(planned)

    const applied = await client.post(`/configuration/plans/${planned.id}/applications`)
    expect(applied.status, applied.text).toBe(202)
    expect(applied.headers.get("location")).toBe(`/api/v3/operations/${applied.body.data.id}`)
    expect(applied.body.data.type).toBe("configuration_plan_application")
    const op = await settled(client, applied.body.data.id)
    expect(op).toMatchObject({ status: "succeeded", progress: { done: 9, failed: 0, total: 9 } })
    const items = (await client.get(`/operations/${op.id}/items`)).body.data
    expect(items.map((i: any) => i.status)).toEqual(Array(9).fill("succeeded"))

    const showcase = byName((await client.get("/showcases")).body.data, "Main")
    expect(showcase).toMatchObject({ description: "The main shelf", status: "active" })
    const product = (await client.get("/products?external_id=course-1")).body.data[0]
    expect(product).toMatchObject({ name: "Course one", format: "course", showcase_id: showcase.id, modules_count: 2 })
    expect((await client.get(`/products/${product.id}/modules`)).body.data.map((m: any) => m.name)).toEqual(["Intro", "Deep dive"])
    expect((await client.get("/tags?sort=name")).body.data.map((t: any) => t.name)).toEqual(["beta", "vip"])
    expect((await client.get("/custom-fields")).body.data[0]).toMatchObject({ key: "company", label: "Company", type: "text" })
    expect((await client.get("/webhooks")).body.data[0]).toMatchObject({ url: "https://hooks.example.com/syllabus", event_types: ["product.created"] })
    expect((await client.get("/settings/appearance")).body.data.primary_color).toBe("#112233")

    const read = (await client.get(`/configuration/plans/${planned.id}`)).body.data
    expect(read).toMatchObject({ status: "applied", operation_id: op.id })
    expect(read.applied_at).not.toBeNull()
    expect((await client.get(`/events?type=configuration_plan.created`)).body.data).toHaveLength(1)
    expect((await client.get(`/events?type=configuration_plan.applied`)).body.data).toHaveLength(1)
    const audit = (await client.get(`/audit-entries?resource_id=${planned.id}`)).body.data.map((e: { action: string }) => e.action)
    expect(audit.sort()).toEqual(["configuration_plan.applied", "configuration_plan.created"])

    const again = await plan(client, manifest)
    expect(again.changes).toEqual([])
    expect(again.summary).toEqual({ create: 0, update: 0, delete: 0 })
  })

  it("an update lists each changed field, before and after; fields an entry leaves out are not managed", async () => {
    const client = await fresh(h())
    await apply(client, manifest)
    const showcase = byName((await client.get("/showcases")).body.data, "Main")
    await client.post("/showcases", { name: "Second" })
    const changed = await plan(client, {
      showcases: [{ name: "Main", description: "Renewed" }, { name: "Second" }],
      products: [{ external_id: "course-1", name: "Course one, second edition", format: "course", showcase: "Second" }]
    })
    expect(changed.changes).toEqual([
      { action: "update", resource_type: "showcase", key: "Main", parent_key: null, resource_id: showcase.id, fields: { description: { before: "The main shelf", after: "Renewed" } } },
      {
        action: "update",
        resource_type: "product",
        key: "course-1",
        parent_key: null,
        resource_id: expect.stringMatching(/^prd_/),
        fields: { name: { before: "Course one", after: "Course one, second edition" }, showcase: { before: "Main", after: "Second" } }
      }
    ])
    const res = await client.post(`/configuration/plans/${changed.id}/applications`)
    expect(res.status, res.text).toBe(202)
    expect((await settled(client, res.body.data.id)).status).toBe("succeeded")
    const second = byName((await client.get("/showcases")).body.data, "Second")
    expect((await client.get("/products?external_id=course-1")).body.data[0]).toMatchObject({ name: "Course one, second edition", showcase_id: second.id })
    expect((await client.get(`/showcases/${showcase.id}`)).body.data).toMatchObject({ description: "Renewed", status: "active" })
  })

  it("deletes only with prune: true, only records of the listed types that no entry names", async () => {
    const client = await fresh(h())
    await apply(client, manifest)
    await client.post("/tags", { name: "stray" })
    await client.post("/showcases", { name: "Unlisted" })
    const keep = { tags: [{ name: "vip" }, { name: "beta" }] }
    expect((await plan(client, keep)).changes).toEqual([])

    const pruned = await plan(client, { ...keep, prune: true })
    expect(pruned.changes.map((c: any) => [c.action, c.resource_type, c.key])).toEqual([["delete", "tag", "stray"]])
    expect(pruned.changes[0].fields).toEqual({ name: { before: "stray", after: null } })
    const res = await client.post(`/configuration/plans/${pruned.id}/applications`)
    expect((await settled(client, res.body.data.id)).status).toBe("succeeded")
    expect((await client.get("/tags?sort=name")).body.data.map((t: any) => t.name)).toEqual(["beta", "vip"])
    // Showcases were not listed: untouched.
    expect((await client.get("/showcases")).body.data.map((s: any) => s.name).sort()).toEqual(["Main", "Unlisted"])

    // A product's modules are pruned when its entry lists `modules`; deletes run modules first.
    const fewer = await plan(client, { prune: true, products: [{ ...manifest.products[0]!, modules: [{ name: "Intro", description: null }] }] })
    expect(fewer.changes.map((c: any) => [c.action, c.resource_type, c.key, c.parent_key])).toEqual([["delete", "module", "Deep dive", "course-1"]])
  })

  it("422 plan_invalid: each problem itemized by its path in the manifest; nothing recorded", async () => {
    const client = await fresh(h())
    await apply(client, manifest)
    const res = await client.post("/configuration/plans", {
      manifest: {
        showcases: [{ name: "Main" }],
        tags: [{ name: "a" }, { name: "a" }],
        products: [
          { external_id: "course-1", name: "Course one", format: "blog", showcase: "Main" },
          { external_id: "course-2", name: "Two", format: "course", showcase: "Nowhere" },
          { external_id: "course-3", format: "course", showcase: "Main" }
        ]
      }
    })
    expectError(res, 422, "plan_invalid", { field: "manifest.products[2].name", code: "required" })
    const invalid = await client.post("/configuration/plans", {
      manifest: {
        showcases: [{ name: "Main" }],
        tags: [{ name: "a" }, { name: "a" }],
        products: [
          { external_id: "course-1", name: "Course one", format: "blog", showcase: "Main" },
          { external_id: "course-2", name: "Two", format: "course", showcase: "Nowhere" }
        ]
      }
    })
    expectError(invalid, 422, "plan_invalid", { field: "manifest.tags[1].name", reason: "duplicate_key" })
    expectError(invalid, 422, "plan_invalid", { field: "manifest.products[1].showcase", reason: "not_found" })
    expectError(invalid, 422, "plan_invalid", { field: "manifest.products[0].format", reason: "immutable" })
    expectError(await client.post("/configuration/plans", { manifest: { widgets: [] } }), 422, "plan_invalid", { field: "manifest.widgets" })
    // The body's shape is the route's: not an object, or missing, is 422 validation_failed on `manifest`.
    expectError(await client.post("/configuration/plans", { manifest: "tags" }), 422, "validation_failed", { field: "manifest" })
    expectError(await client.post("/configuration/plans", {}), 422, "validation_failed", { field: "manifest", code: "required" })
    expectError(await client.post("/configuration/plans", { manifest: { tags: [{ name: "" }] } }), 422, "plan_invalid", { field: "manifest.tags[0].name" })
    expectError(
      await client.post("/configuration/plans", { manifest: { tags: Array.from({ length: 1001 }, (_, i) => ({ name: `t${i}` })) } }),
      422,
      "plan_invalid",
      { field: "manifest.tags" }
    )
    // At most 10,000 changes in one plan.
    const modules = Array.from({ length: 1000 }, (_, i) => ({ name: `m${i}` }))
    const products = Array.from({ length: 10 }, (_, i) => ({ external_id: `bulk-${i}`, name: `Bulk ${i}`, format: "course", showcase: "Main", modules }))
    expectError(await client.post("/configuration/plans", { manifest: { products } }), 422, "plan_invalid", { field: "manifest", code: "too_many_items" })
    expect((await client.get("/events?type=configuration_plan.created")).body.data).toHaveLength(1)
  })

  it("409 plan_stale: a record the plan read changed, or a key it creates was taken, since; nothing applied", async () => {
    const client = await fresh(h())
    await apply(client, manifest)
    const showcase = byName((await client.get("/showcases")).body.data, "Main")
    const planned = await plan(client, { showcases: [{ name: "Main", description: "From the plan" }], tags: [{ name: "new-tag" }] })
    expect((await client.patch(`/showcases/${showcase.id}`, { status: "inactive" })).status).toBe(200)
    expectError(await client.post(`/configuration/plans/${planned.id}/applications`), 409, "plan_stale")
    expect((await client.get(`/showcases/${showcase.id}`)).body.data.description).toBe("The main shelf")
    expect((await client.get(`/configuration/plans/${planned.id}`)).body.data.status).toBe("planned")

    const creating = await plan(client, { tags: [{ name: "late" }] })
    expect((await client.post("/tags", { name: "late" })).status).toBe(201)
    expectError(await client.post(`/configuration/plans/${creating.id}/applications`), 409, "plan_stale", { field: "changes[0]", reason: "exists" })
  })

  it("a plan of 1,000 changes is checked in bulk at its application: a read changed on any page, or a key taken under a product, is 409 plan_stale; else 202", async () => {
    const client = await fresh(h())
    const modules = (count: number, description: string) => Array.from({ length: count }, (_, i) => ({ name: `Module ${i}`, description }))
    const big = (count: number, description: string) => ({ showcases: [{ name: "Big" }], products: [{ external_id: "big-1", name: "Big", format: "course", showcase: "Big", modules: modules(count, description) }] })
    const first = await plan(client, big(600, "first"))
    const started = await client.post(`/configuration/plans/${first.id}/applications`)
    expect(started.status, started.text).toBe(202)
    expect((await settled(client, started.body.data.id, 1200)).status).toBe("succeeded")
    const product = (await client.get("/products?external_id=big-1")).body.data[0] ?? byName((await client.get("/products")).body.data, "Big")
    const all: Array<any> = []
    for (let cursor: string | null = null; ; ) {
      const page: any = (await client.get(`/products/${product.id}/modules?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)).body
      all.push(...page.data)
      cursor = page.page.next_cursor
      if (!cursor) break
    }
    expect(all).toHaveLength(600)
    // 600 updates (reads past the first page of 500) and 400 creates.
    const second = await plan(client, big(1000, "second"))
    expect(second.summary).toMatchObject({ create: 400, update: 600 })
    const late = all.find((m) => m.name === "Module 580")!
    expect((await client.patch(`/products/${product.id}/modules/${late.id}`, { description: "changed meanwhile" })).status).toBe(200)
    expectError(await client.post(`/configuration/plans/${second.id}/applications`), 409, "plan_stale")
    expect((await client.get(`/products/${product.id}/modules/${late.id}`)).body.data.description).toBe("changed meanwhile")
    // 1,000 creates, the last one's key taken since: found among the kind's keys, read once.
    const tags = await plan(client, { tags: Array.from({ length: 1000 }, (_, i) => ({ name: `bulk-${i}` })) })
    expect((await client.post("/tags", { name: "bulk-999" })).status).toBe(201)
    expectError(await client.post(`/configuration/plans/${tags.id}/applications`), 409, "plan_stale", { field: "changes[999]", reason: "exists" })
    expect((await client.get(`/configuration/plans/${tags.id}`)).body.data.status).toBe("planned")
  }, 180_000)

  it("409 plan_expired one hour after the plan, by the clock; its status reads expired; the housekeeping removes it a day later", async () => {
    const client = await fresh(h())
    const planned = await plan(client, { tags: [{ name: "later" }] })
    const hour = 60 * 60 * 1000
    h().advance(hour - 1000)
    let moved = hour - 1000
    try {
      expect((await client.get(`/configuration/plans/${planned.id}`)).body.data.status).toBe("planned")
      h().advance(2000)
      moved += 2000
      expect((await client.get(`/configuration/plans/${planned.id}`)).body.data.status).toBe("expired")
      expectError(await client.post(`/configuration/plans/${planned.id}/applications`), 409, "plan_expired")
      expect((await client.get("/tags")).body.data).toEqual([])
      await h().housekeeping()
      expect((await client.get(`/configuration/plans/${planned.id}`)).status).toBe(200)
      h().advance(24 * hour)
      moved += 24 * hour
      await h().housekeeping()
      expectError(await client.get(`/configuration/plans/${planned.id}`), 404, "not_found")
    } finally {
      h().advance(-moved)
    }
  })

  it("409 state_conflict plan_already_applied on a second application", async () => {
    const client = await fresh(h())
    const { planned } = await apply(client, { tags: [{ name: "once" }] })
    expectError(await client.post(`/configuration/plans/${planned.id}/applications`), 409, "state_conflict", { reason: "plan_already_applied" })
    expect((await client.get("/tags")).body.data).toHaveLength(1)
    expectError(await client.post("/configuration/plans/pln_000000000/applications"), 404, "not_found")
  })

  it("a manifest exported from one account, planned and applied in another, converges in one plan", async () => {
    const source = await fresh(h())
    await apply(source, manifest)
    const exported = await source.get("/configuration/manifest")
    expect(exported.status, exported.text).toBe(200)
    const data = exported.body.data
    expect(Object.keys(data)).toEqual(["showcases", "tags", "custom_fields", "webhooks", "settings", "products"])
    expect(data.products).toEqual([
      {
        external_id: "course-1",
        name: "Course one",
        format: "course",
        showcase: "Main",
        modules: [
          { name: "Intro", description: null },
          { name: "Deep dive", description: null }
        ]
      }
    ])
    expect(data.settings).toEqual({ appearance: { primary_color: "#112233" } })
    // The source itself: nothing to do.
    expect((await plan(source, data)).changes).toEqual([])

    const other = await h().openAccount(freshSubdomain("cfg"))
    const target = api(h(), other.credentials.find((c) => c.environment === "sandbox")!.secret)
    const first = await apply(target, data)
    expect(first.planned.summary).toEqual({ create: 8, update: 1, delete: 0 })
    expect((await plan(target, data)).changes).toEqual([])
    expect((await target.get("/configuration/manifest")).body.data).toEqual(data)
  })

  it("permissions: planning needs configuration_plans.create and the listed types' read; applying needs configuration_plans.apply and each change's write", async () => {
    await fresh(h())
    const suffix = `${process.pid}-${Date.now()}`
    const tagsManifest = { tags: [{ name: `perm-${suffix}` }] }
    const readOnly = api(h(), await credentialWith(h(), ["configuration_plans.read", "tags.read"]))
    expectError(await readOnly.post("/configuration/plans", { manifest: tagsManifest }), 403, "permission_denied")
    expect((await readOnly.get("/configuration/manifest")).status).toBe(200)

    const noRead = api(h(), await credentialWith(h(), ["configuration_plans.create"]))
    expectError(await noRead.post("/configuration/plans", { manifest: tagsManifest }), 403, "permission_denied")

    const planner = api(h(), await credentialWith(h(), ["configuration_plans.create", "configuration_plans.read", "configuration_plans.apply", "tags.read"]))
    const planned = await plan(planner, tagsManifest)
    expectError(await planner.post(`/configuration/plans/${planned.id}/applications`), 403, "permission_denied")
    expectError(await api(h(), await credentialWith(h(), ["tags.create"])).get(`/configuration/plans/${planned.id}`), 403, "permission_denied")

    const applier = api(h(), await credentialWith(h(), ["configuration_plans.apply", "tags.create", "operations.read"]))
    const res = await applier.post(`/configuration/plans/${planned.id}/applications`)
    expect(res.status, res.text).toBe(202)
    expect((await settled(applier, res.body.data.id)).status).toBe("succeeded")
    // The template holds them all.
    const templates = (await api(h()).get("/policy-templates")).body.data
    const template = templates.find((t: any) => t.id === "configuration_manager")
    expect(template.capabilities).toEqual(expect.arrayContaining(["configuration_plans.create", "configuration_plans.apply", "tags.create", "settings.update"]))
  })

  it("idempotency: POST /configuration/plans and applications require a key; a replay answers the recorded plan", async () => {
    const client = await fresh(h())
    expectError(await client.post("/configuration/plans", { manifest: {} }, { idempotencyKey: null }), 422, "idempotency_key_required")
    const key = `cfg-${process.pid}-${Date.now()}`
    const first = await client.post("/configuration/plans", { manifest: { tags: [{ name: "x" }] } }, { idempotencyKey: key })
    const replay = await client.post("/configuration/plans", { manifest: { tags: [{ name: "x" }] } }, { idempotencyKey: key })
    expect(first.status).toBe(201)
    expect(replay.status).toBe(201)
    expect(replay.body.data.id).toBe(first.body.data.id)
    expectError(await client.post(`/configuration/plans/${first.body.data.id}/applications`, undefined, { idempotencyKey: null }), 422, "idempotency_key_required")
    const applyKey = `${key}-apply`
    const applied = await client.post(`/configuration/plans/${first.body.data.id}/applications`, undefined, { idempotencyKey: applyKey })
    const again = await client.post(`/configuration/plans/${first.body.data.id}/applications`, undefined, { idempotencyKey: applyKey })
    expect(applied.status).toBe(202)
    expect(again.status).toBe(202)
    expect(again.body.data.id).toBe(applied.body.data.id)
  })

  it("the sandbox reset removes the plans", async () => {
    const client = await fresh(h())
    const planned = await plan(client, { tags: [{ name: "gone" }] })
    await fresh(h())
    expectError(await client.get(`/configuration/plans/${planned.id}`), 404, "not_found")
  })
})

eachStore(
  "configuration plans without a worker",
  (h) => {
    it("each item checks its record again as it runs: a compared field changed since fails it with plan_stale; another change does not", async () => {
      const client = await fresh(h())
      const main = (await client.post("/showcases", { name: "Main" })).body.data
      const other = (await client.post("/showcases", { name: "Other" })).body.data
      const planned = await plan(client, {
        showcases: [
          { name: "Main", description: "From the plan" },
          { name: "Other", description: "From the plan" }
        ],
        tags: [{ name: "t2" }]
      })
      const res = await client.post(`/configuration/plans/${planned.id}/applications`)
      expect(res.status, res.text).toBe(202)
      // After the application's start, before its items run:
      expect((await client.patch(`/showcases/${main.id}`, { status: "inactive" })).status).toBe(200)
      expect((await client.patch(`/showcases/${other.id}`, { description: "Someone else's" })).status).toBe(200)
      expect((await client.post("/tags", { name: "t2" })).status).toBe(201)
      await h().runUseCase(runDueOperations())
      const op = (await client.get(`/operations/${res.body.data.id}`)).body.data
      expect(op).toMatchObject({ status: "succeeded", progress: { done: 1, failed: 2, total: 3 } })
      const items = (await client.get(`/operations/${op.id}/items`)).body.data
      expect(items.map((i: any) => [i.status, i.error?.code ?? null])).toEqual([
        ["succeeded", null],
        ["failed", "plan_stale"],
        ["failed", "plan_stale"]
      ])
      expect((await client.get(`/showcases/${main.id}`)).body.data).toMatchObject({ description: "From the plan", status: "inactive" })
      expect((await client.get(`/showcases/${other.id}`)).body.data.description).toBe("Someone else's")
      expect((await client.get("/tags")).body.data).toHaveLength(1)
    })
  },
  { workers: false }
)
