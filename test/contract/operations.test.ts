/** Asynchronous operations and batches (§2.3 operation, §3, §7, §8.2, open-points "Operations"). */
import { scryptSync } from "node:crypto"
import { expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"

const post = (h: Harness, path: string, json?: unknown, secret = h.live) => h.request("POST", `/api/v3${path}`, { secret, ...(json ? { json } : {}) })
const get = (h: Harness, path: string, secret = h.live) => h.request("GET", `/api/v3${path}`, { secret })

/** Poll until the operation has finished. */
const settled = async (h: Harness, id: string) => {
  for (let i = 0; i < 200; i++) {
    const res = await get(h, `/operations/${id}`)
    if (["succeeded", "failed", "canceled"].includes(res.body.data.status)) return res.body.data
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`operation ${id} did not finish`)
}

eachStore("operations", (h) => {
  it("a batch answers 202 with Location and runs every item: progress, items with their results", async () => {
    const started = await post(h(), "/operations", {
      type: "showcases.create",
      items: [{ key: "a", name: "Batch A" }, { key: "b", name: "Batch B" }, { key: "c", name: "Batch C" }]
    })
    expect(started.status).toBe(202)
    const operation = started.body.data
    expect(started.headers.get("location")).toBe(`/api/v3/operations/${operation.id}`)
    expect(operation).toMatchObject({ object: "operation", type: "showcases.create", status: "queued", progress: { done: 0, failed: 0, total: 3 } })
    expect(Date.parse(operation.expires_at) - Date.parse(operation.created_at)).toBe(30 * 24 * 3600 * 1000)
    const done = await settled(h(), operation.id)
    expect(done).toMatchObject({ status: "succeeded", progress: { done: 3, failed: 0, total: 3 }, error: null })
    expect(done.started_at).not.toBeNull()
    expect(done.finished_at).not.toBeNull()
    const items = await get(h(), `/operations/${operation.id}/items`)
    expect(items.body.data.map((i: { key: string; status: string }) => [i.key, i.status])).toEqual([["a", "succeeded"], ["b", "succeeded"], ["c", "succeeded"]])
    const made = items.body.data[0].result.id
    expect((await get(h(), `/showcases/${made}`)).body.data.name).toBe("Batch A")
    const listed = await get(h(), `/operations?status=succeeded`)
    expect(listed.body.data.map((o: { id: string }) => o.id)).toContain(operation.id)
  })

  it("items run in chunks, yet one failing item fails alone: the rest of its chunk and the others succeed, each with its own result", async () => {
    const created = await post(h(), "/operations", {
      type: "showcases.create",
      items: Array.from({ length: 60 }, (_, i) => ({ key: `s${i}`, name: `Chunked ${i}` }))
    })
    const made = await settled(h(), created.body.data.id)
    expect(made).toMatchObject({ status: "succeeded", progress: { done: 60, failed: 0, total: 60 } })
    const createdItems = await get(h(), `/operations/${created.body.data.id}/items?limit=100`)
    const ids = createdItems.body.data.map((i: { result: { id: string } }) => i.result.id) as Array<string>
    expect(new Set(ids).size).toBe(60)
    // Item 31 (in the second chunk) names a showcase that does not exist.
    const items = ids.map((id, i) => ({ key: `u${i}`, id: i === 31 ? "shw_000000001" : id, name: `Renamed ${i}` }))
    const updated = await post(h(), "/operations", { type: "showcases.update", items })
    const done = await settled(h(), updated.body.data.id)
    // Every item ran: succeeded, the refusal counted and carried by its item.
    expect(done).toMatchObject({ status: "succeeded", progress: { done: 59, failed: 1, total: 60 }, error: null })
    const listed = await get(h(), `/operations/${updated.body.data.id}/items?limit=100`)
    const statuses = listed.body.data.map((i: { key: string; status: string }) => [i.key, i.status])
    expect(statuses.filter(([, status]: [string, string]) => status === "failed")).toEqual([["u31", "failed"]])
    expect(listed.body.data.find((i: { key: string }) => i.key === "u31").error).toMatchObject({ code: "not_found", resource_id: "shw_000000001" })
    expect((await get(h(), `/showcases/${ids[30]}`)).body.data.name).toBe("Renamed 30")
    expect((await get(h(), `/showcases/${ids[32]}`)).body.data.name).toBe("Renamed 32")
    expect((await get(h(), `/showcases/${ids[31]}`)).body.data.name).toBe("Chunked 31")
  })

  it("an operation that ran every item succeeded, even when every item was refused: progress.failed counts them, each item carries its error (one reading for every type)", async () => {
    const one = await post(h(), "/operations", { type: "showcases.update", items: [{ key: "x", id: "shw_000000001", name: "Nope" }] })
    const ran = await settled(h(), one.body.data.id)
    expect(ran).toMatchObject({ status: "succeeded", progress: { done: 0, failed: 1, total: 1 }, error: null })
    const [item] = (await get(h(), `/operations/${one.body.data.id}/items`)).body.data
    expect(item.error).toMatchObject({ code: "not_found", resource_id: "shw_000000001" })
    expect(typeof item.error.message).toBe("string")
    const two = await post(h(), "/operations", {
      type: "showcases.delete",
      items: [{ key: "x", id: "shw_000000001" }, { key: "y", id: "shw_000000002" }]
    })
    const both = await settled(h(), two.body.data.id)
    expect(both).toMatchObject({ status: "succeeded", progress: { done: 0, failed: 2, total: 2 }, error: null })
    // Its event says it completed.
    const events = (await get(h(), `/events?resource_id=${two.body.data.id}`)).body.data.map((e: { type: string }) => e.type)
    expect(events).toContain("operation.completed")
    const items = await get(h(), `/operations/${two.body.data.id}/items`)
    expect(items.body.data.map((i: { status: string; error: { code: string } }) => [i.status, i.error.code])).toEqual([
      ["failed", "not_found"],
      ["failed", "not_found"]
    ])
  })

  it("a batch is checked whole before anything is queued (§7)", async () => {
    const unknown = await post(h(), "/operations", { type: "spaceships.create", items: [{ key: "a" }] })
    expect(unknown.status).toBe(422)
    expect(unknown.body.error.code).toBe("operation_type_unknown")
    const duplicate = await post(h(), "/operations", { type: "showcases.create", items: [{ key: "a", name: "1" }, { key: "a", name: "2" }] })
    expect(duplicate.body.error).toMatchObject({ code: "duplicate_item_key", details: [{ field: "items[1].key", code: "duplicate_item_key" }] })
    const invalid = await post(h(), "/operations", { type: "showcases.create", items: [{ key: "a", name: "ok" }, { key: "b", colour: "red" }] })
    expect(invalid.status).toBe(422)
    expect(invalid.body.error.code).toBe("item_invalid")
    expect(invalid.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(["items[1].colour", "items[1].name"])
    const tooMany = await post(h(), "/operations", {
      type: "showcases.create",
      items: Array.from({ length: 1001 }, (_, i) => ({ key: `k${i}`, name: `n${i}` }))
    })
    expect(tooMany.status).toBe(422)
    expect(tooMany.body.error.code).toBe("too_many_items")
    const before = await get(h(), "/operations?limit=200")
    expect(before.body.data.every((o: { type: string }) => o.type !== "spaceships.create")).toBe(true)
  })

  it("a batch needs the capability of its writes (403 permission_denied)", async () => {
    const reader = (await post(h(), "/credentials", { name: "ops only", policies: [{ capabilities: ["operations.create", "operations.read"] }] })).body.data.secret.value
    const res = await post(h(), "/operations", { type: "showcases.create", items: [{ key: "a", name: "x" }] }, reader)
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("permission_denied")
  })

  it("a finished operation cannot be canceled (422 operation_not_cancelable) nor resumed unless it failed with outages (422 operation_not_resumable)", async () => {
    const ok = await post(h(), "/operations", { type: "tags.create", items: [{ key: "a", name: `g-${Date.now()}` }] })
    await settled(h(), ok.body.data.id)
    const cancel = await post(h(), `/operations/${ok.body.data.id}/cancellations`)
    expect(cancel.status).toBe(422)
    expect(cancel.body.error.code).toBe("operation_not_cancelable")
    const resumeSucceeded = await post(h(), `/operations/${ok.body.data.id}/resumptions`)
    expect(resumeSucceeded.status).toBe(422)
    expect(resumeSucceeded.body.error).toMatchObject({ code: "operation_not_resumable", reason: "no_failed_run" })
    const refused = await post(h(), "/operations", { type: "showcases.delete", items: [{ key: "x", id: "shw_000000003" }] })
    await settled(h(), refused.body.data.id)
    const resumeRefused = await post(h(), `/operations/${refused.body.data.id}/resumptions`)
    expect(resumeRefused.status).toBe(422)
    // Its refusal was the item's outcome: the operation ran, succeeded, and has nothing to run again.
    expect(resumeRefused.body.error).toMatchObject({ code: "operation_not_resumable", reason: "no_failed_run" })
  })
})

eachStore(
  "operations without a worker",
  (h) => {
    it("a queued operation is canceled at once, its items too", async () => {
      const started = await post(h(), "/operations", { type: "showcases.create", items: [{ key: "a", name: "never" }] })
      const canceled = await post(h(), `/operations/${started.body.data.id}/cancellations`)
      expect(canceled.status).toBe(200)
      expect(canceled.body.data).toMatchObject({ status: "canceled", cancellation_requested: true })
      const items = await get(h(), `/operations/${started.body.data.id}/items`)
      expect(items.body.data[0].status).toBe("canceled")
    })

    it("at most 100 queued or running operations per account and environment (422 operation_backlog_exceeded)", async () => {
      const open = (await get(h(), "/operations?status=queued&limit=200")).body.data.length
      for (let i = open; i < 100; i++) {
        const res = await post(h(), "/operations", { type: "tags.create", items: [{ key: "a", name: `q${i}` }] })
        expect(res.status).toBe(202)
      }
      const over = await post(h(), "/operations", { type: "tags.create", items: [{ key: "a", name: "one too many" }] })
      expect(over.status).toBe(422)
      expect(over.body.error.code).toBe("operation_backlog_exceeded")
      // The other environment has its own backlog.
      expect((await post(h(), "/operations", { type: "tags.create", items: [{ key: "a", name: "sandbox" }] }, h().test)).status).toBe(202)
    })
  },
  { workers: false }
)

eachStore("operations and scoped policies", (h) => {
  it("a batch reaches only the resources of a resource-limited policy (out of scope: item_invalid, not_found)", async () => {
    const mine = (await post(h(), "/showcases", { name: "Mine" })).body.data.id
    const other = (await post(h(), "/showcases", { name: "Other" })).body.data.id
    const limited = (
      await post(h(), "/credentials", {
        name: "one showcase",
        policies: [{ capabilities: ["showcases.update"], resources: [mine] }, { capabilities: ["operations.create", "operations.read"] }]
      })
    ).body.data.secret.value
    const refused = await post(h(), "/operations", { type: "showcases.update", items: [{ key: "a", id: other, name: "Hijacked" }] }, limited)
    expect(refused.status).toBe(422)
    expect(refused.body.error).toMatchObject({ code: "item_invalid", details: [{ field: "items[0].id", code: "not_found" }] })
    const allowed = await post(h(), "/operations", { type: "showcases.update", items: [{ key: "a", id: mine, name: "Renamed" }] }, limited)
    expect(allowed.status).toBe(202)
    expect((await settled(h(), allowed.body.data.id)).status).toBe("succeeded")
    expect((await get(h(), `/showcases/${other}`)).body.data.name).toBe("Other")
  })
})

/** An item of `GET /operations/{id}/items`. */
interface Item {
  readonly id: string
  readonly key: string
  readonly status: string
  readonly error: { readonly code: string; readonly field: string | null; readonly reason: string | null } | null
  readonly result: { readonly id: string; readonly object?: Record<string, any> } | null
}

let counter = 0
const unique = (prefix: string) => `${prefix}${Date.now().toString(36)}${++counter}`

eachStore("batches of resources with use cases of their own", (h) => {
  /** A production credential holding exactly these capabilities. */
  const credentialWith = async (capabilities: ReadonlyArray<string>) => {
    const res = await post(h(), "/credentials", { name: unique("cap"), policies: [{ capabilities }] })
    expect(res.status, res.text).toBe(201)
    return res.body.data.secret.value as string
  }
  /** Start a batch, wait for it, answer the operation and its items by key. */
  const run = async (type: string, items: ReadonlyArray<Record<string, unknown>>, secret = h().live) => {
    const started = await post(h(), "/operations", { type, items }, secret)
    expect(started.status, started.text).toBe(202)
    const operation = await settled(h(), started.body.data.id)
    const listed = await get(h(), `/operations/${operation.id}/items`, secret)
    expect(listed.status, listed.text).toBe(200)
    return { operation, items: Object.fromEntries((listed.body.data as ReadonlyArray<Item>).map((i) => [i.key, i])) as Record<string, Item> }
  }

  it("the batch types of users, tags, webhooks and administrators exist, and POST /operations counts them", async () => {
    const openapi = await h().request("GET", "/api/v3/openapi.json", { secret: h().live })
    const description: string = openapi.body.paths["/operations"].post.description
    const count = Number(/Types: (\d+)/.exec(description)?.[1])
    // A resource has the batch types of the writes its routes serve (some only `create`).
    expect(count).toBeGreaterThan(12)
    for (const type of ["users.create", "users.update", "users.delete", "tags.create", "tags.delete", "webhooks.create", "administrators.create", "administrators.delete"]) {
      const res = await post(h(), "/operations", { type, items: [{ key: "a", nope: 1 }] })
      expectError(res, 422, "item_invalid", { field: "items[0].nope", code: "unknown_field" })
    }
  })

  it("users.create: each item runs the route's use case (409 already_exists on a duplicate email, custom fields checked); personal data only with users.read_personal", async () => {
    const taken = `${unique("taken")}@example.com`
    expect((await post(h(), "/users", { name: "First", email: taken })).status).toBe(201)
    const without = await credentialWith(["users.create", "users.read", "operations.create", "operations.read"])
    const withPersonal = await credentialWith(["users.create", "users.read", "users.read_personal", "operations.create", "operations.read"])
    const batch = () => [
      { key: "ada", name: "Ada", email: `${unique("Ada")}@Example.com`, document: "123", phone: "+44 1" },
      { key: "dup", name: "Dup", email: taken.toUpperCase() },
      { key: "grace", name: "Grace", email: `${unique("grace")}@example.com` },
      { key: "field", name: "Field", email: `${unique("field")}@example.com`, custom_fields: { no_such_field: "x" } }
    ]

    const hidden = await run("users.create", batch(), without)
    expect(hidden.operation).toMatchObject({ status: "succeeded", progress: { done: 2, failed: 2, total: 4 }, error: null })
    expect(hidden.items.dup).toMatchObject({ status: "failed", result: null, error: { code: "already_exists", field: "email" } })
    expect(hidden.items.field).toMatchObject({ status: "failed", error: { code: "validation_failed", field: "custom_fields.no_such_field" } })
    for (const key of ["ada", "grace"]) {
      expect(hidden.items[key]!.status).toBe("succeeded")
      expect(hidden.items[key]!.result!.object).toMatchObject({ object: "user", id: hidden.items[key]!.result!.id, email: null, document: null, phone: null })
    }
    expect(hidden.items.ada!.result!.object!.name).toBe("Ada")
    // The users exist, with their personal data, as the route would have made them.
    const made = await get(h(), `/users/${hidden.items.ada!.result!.id}`)
    expect(made.body.data).toMatchObject({ name: "Ada", document: "123", phone: "+44 1" })
    expect(made.body.data.email).toMatch(/^ada.*@example\.com$/)

    const shown = await run("users.create", batch(), withPersonal)
    expect(shown.items.dup).toMatchObject({ status: "failed", error: { code: "already_exists", field: "email" } })
    const ada = shown.items.ada!.result!.object!
    expect(ada).toMatchObject({ object: "user", document: "123", phone: "+44 1", status: "active", tags: [], custom_fields: {} })
    expect(ada.email).toMatch(/^ada.*@example\.com$/)
    // Read by a caller without users.read_personal, the same results hide it.
    const other = await get(h(), `/operations/${shown.operation.id}/items`, without)
    const seen = (other.body.data as ReadonlyArray<Item>).find((i) => i.key === "ada")!
    expect(seen.result!.object).toMatchObject({ id: ada.id, name: "Ada", email: null, document: null, phone: null })

    // An item that is not a user is refused before anything is queued.
    const invalid = await post(h(), "/operations", { type: "users.create", items: [{ key: "a", name: "X", email: "not-an-email" }] }, withPersonal)
    expectError(invalid, 422, "item_invalid", { field: "items[0].email", code: "invalid_value" })
    // users.create needs users.create.
    const reader = await credentialWith(["operations.create", "operations.read"])
    expectError(await post(h(), "/operations", { type: "users.create", items: [{ key: "a", name: "X", email: `${unique("x")}@example.com` }] }, reader), 403, "permission_denied")
  })

  it("users.update and users.delete run the route's use cases (the trash, unique email)", async () => {
    const a = (await post(h(), "/users", { name: "A", email: `${unique("a")}@example.com` })).body.data
    const b = (await post(h(), "/users", { name: "B", email: `${unique("b")}@example.com` })).body.data
    const updated = await run("users.update", [
      { key: "rename", id: a.id, name: "A2" },
      { key: "steal", id: b.id, email: a.email }
    ])
    expect(updated.items.rename).toMatchObject({ status: "succeeded", result: { id: a.id, object: { name: "A2", email: a.email } } })
    expect(updated.items.steal).toMatchObject({ status: "failed", error: { code: "already_exists", field: "email" } })
    const deleted = await run("users.delete", [{ key: "a", id: a.id }])
    expect(deleted.items.a).toMatchObject({ status: "succeeded", result: { id: a.id, object: { deleted: true } } })
    expectError(await get(h(), `/users/${a.id}`), 404, "not_found")
  })

  it("tags.create and tags.delete run the tags' use cases (409 tag_in_use on a tag a user holds)", async () => {
    const names = [unique("tag "), unique("tag ")]
    const created = await run("tags.create", [
      { key: "one", name: names[0] },
      { key: "two", name: names[1] },
      { key: "again", name: names[0] }
    ])
    expect(created.items.one).toMatchObject({ status: "succeeded", result: { object: { object: "tag", name: names[0], users_count: 0 } } })
    expect(created.items.two!.status).toBe("succeeded")
    expect(created.items.again).toMatchObject({ status: "failed", error: { code: "already_exists", field: "name" } })
    const [one, two] = [created.items.one!.result!.id, created.items.two!.result!.id]
    const user = (await post(h(), "/users", { name: "Holder", email: `${unique("h")}@example.com` })).body.data
    expect((await h().request("PUT", `/api/v3/users/${user.id}/tags`, { secret: h().live, json: { ids: [one] } })).status).toBe(200)
    const deleted = await run("tags.delete", [{ key: "held", id: one }, { key: "free", id: two }])
    expect(deleted.items.held).toMatchObject({ status: "failed", error: { code: "tag_in_use" } })
    expect(deleted.items.free).toMatchObject({ status: "succeeded", result: { id: two } })
    expect((await get(h(), `/tags/${one}`)).status).toBe(200)
    expectError(await get(h(), `/tags/${two}`), 404, "not_found")
  })

  it("webhooks.create runs createWebhook: a secret is made but never in a result; the destination is checked per item", async () => {
    const created = await run("webhooks.create", [
      { key: "ok", url: "https://hooks.example.com/batch", event_types: ["product.created"] },
      { key: "http", url: "http://hooks.example.com/batch", event_types: ["*"] },
      { key: "local", url: "https://127.0.0.1/batch", event_types: ["*"] }
    ])
    expect(created.operation).toMatchObject({ status: "succeeded", progress: { done: 1, failed: 2, total: 3 } })
    expect(created.items.http).toMatchObject({ status: "failed", error: { code: "validation_failed", field: "url", reason: "https_required" } })
    expect(created.items.local).toMatchObject({ status: "failed", error: { code: "validation_failed", field: "url", reason: "host_not_public" } })
    const ok = created.items.ok!
    expect(ok.result!.object).toMatchObject({ object: "webhook", url: "https://hooks.example.com/batch", event_types: ["product.created"], revision: 1 })
    // No secret (`previous_secret_expires_at`, a time, says none is being replaced).
    expect(JSON.stringify(ok.result)).not.toMatch(/whsec_|"secret"|"previous_secret"/)
    expect(ok.result!.object).toMatchObject({ previous_secret_expires_at: null })
    // The webhook has a secret: a rotation shows a new one.
    const rotated = await post(h(), `/webhooks/${ok.result!.id}/secret-rotations`)
    expect(rotated.status, rotated.text).toBe(200)
    expect(rotated.body.data.secret.value).toMatch(/^whsec_/)
    // The sandbox takes http, as its route does.
    const sandbox = await post(h(), "/operations", { type: "webhooks.create", items: [{ key: "a", url: "http://localhost:3000/hook", event_types: ["*"] }] }, h().test)
    expect(sandbox.status).toBe(202)
    const settledSandbox = await (async () => {
      for (let i = 0; i < 200; i++) {
        const res = await get(h(), `/operations/${sandbox.body.data.id}`, h().test)
        if (["succeeded", "failed", "canceled"].includes(res.body.data.status)) return res.body.data
        await new Promise((r) => setTimeout(r, 50))
      }
    })()
    expect(settledSandbox.status).toBe("succeeded")
    // A payload_version cannot be changed, by a batch either.
    const pinned = await post(h(), "/operations", { type: "webhooks.update", items: [{ key: "a", id: ok.result!.id, payload_version: 1 }] })
    expectError(pinned, 422, "item_invalid", { field: "items[0].payload_version", code: "not_allowed" })
  })

  it("administrators.create and .delete run the administrators' use cases; an item never stores the password", async () => {
    const taken = `${unique("admin")}@example.com`
    expect((await post(h(), "/administrators", { email: taken, name: "Taken", password: "a long passphrase" })).status).toBe(201)
    const created = await run("administrators.create", [
      { key: "new", email: `${unique("New")}@Example.com`, name: "New", password: "another long passphrase" },
      { key: "dup", email: taken.toUpperCase(), name: "Dup", password: "another long passphrase" }
    ])
    expect(created.items.dup).toMatchObject({ status: "failed", error: { code: "already_exists", field: "email" } })
    const admin = created.items.new!
    expect(admin.result!.object).toMatchObject({ object: "administrator", name: "New", status: "active", two_factor: { enabled: false, enrolled_at: null } })
    expect(admin.result!.object!.email).toMatch(/^new.*@example\.com$/)
    expect(JSON.stringify(admin.result)).not.toMatch(/password|passphrase/)
    expect((await get(h(), `/administrators/${admin.result!.id}`)).body.data.name).toBe("New")
    const stored = await h().storedRecord({ accountId: h().account.account.id, environment: "production" }, "operation_item", admin.id)
    expect(stored).toBeDefined()
    expect(JSON.stringify(stored)).not.toContain("another long passphrase")
    // The administrator's password is the one sent (scrypt, as the route stores it).
    const made = await h().storedRecord({ accountId: h().account.account.id, environment: "production" }, "administrator", admin.result!.id)
    const [scheme, salt, hash] = String(made?.password_hash).split("$")
    expect(scheme).toBe("scrypt")
    expect(scryptSync("another long passphrase", Buffer.from(salt!, "base64url"), 32).toString("base64url")).toBe(hash)
    // A password that is too short is refused up front.
    const short = await post(h(), "/operations", { type: "administrators.create", items: [{ key: "a", email: `${unique("s")}@example.com`, name: "S", password: "short" }] })
    expectError(short, 422, "item_invalid", { field: "items[0].password" })
    const removed = await run("administrators.delete", [{ key: "a", id: admin.result!.id }])
    expect(removed.items.a).toMatchObject({ status: "succeeded", result: { id: admin.result!.id, object: { status: "removed" } } })
  })
})
