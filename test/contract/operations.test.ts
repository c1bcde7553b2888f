/** Asynchronous operations and batches (§2.3 operation, §3, §7, §8.2, open-points "Operations"). */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"

const post = (h: Harness, path: string, json?: unknown, secret = h.live) => h.request("POST", `/api/v3${path}`, { secret, ...(json ? { json } : {}) })
const get = (h: Harness, path: string) => h.request("GET", `/api/v3${path}`, { secret: h.live })

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

  it("a failed operation's error is its first failed item; several failures are items_failed", async () => {
    const one = await post(h(), "/operations", { type: "showcases.update", items: [{ key: "x", id: "shw_000000001", name: "Nope" }] })
    const failed = await settled(h(), one.body.data.id)
    expect(failed.status).toBe("failed")
    expect(failed.error).toMatchObject({ code: "not_found", resource_id: "shw_000000001" })
    expect(typeof failed.error.message).toBe("string")
    const two = await post(h(), "/operations", {
      type: "showcases.delete",
      items: [{ key: "x", id: "shw_000000001" }, { key: "y", id: "shw_000000002" }]
    })
    const both = await settled(h(), two.body.data.id)
    expect(both).toMatchObject({ status: "failed", progress: { done: 0, failed: 2, total: 2 } })
    expect(both.error.code).toBe("items_failed")
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
    const ok = await post(h(), "/operations", { type: "tag_groups.create", items: [{ key: "a", name: `g-${Date.now()}` }] })
    await settled(h(), ok.body.data.id)
    const cancel = await post(h(), `/operations/${ok.body.data.id}/cancellations`)
    expect(cancel.status).toBe(422)
    expect(cancel.body.error.code).toBe("operation_not_cancelable")
    const resumeSucceeded = await post(h(), `/operations/${ok.body.data.id}/resumptions`)
    expect(resumeSucceeded.status).toBe(422)
    expect(resumeSucceeded.body.error.code).toBe("operation_not_resumable")
    const refused = await post(h(), "/operations", { type: "showcases.delete", items: [{ key: "x", id: "shw_000000003" }] })
    await settled(h(), refused.body.data.id)
    const resumeRefused = await post(h(), `/operations/${refused.body.data.id}/resumptions`)
    expect(resumeRefused.status).toBe(422)
    expect(resumeRefused.body.error).toMatchObject({ code: "operation_not_resumable", reason: "no_recoverable_items" })
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
        const res = await post(h(), "/operations", { type: "tag_groups.create", items: [{ key: "a", name: `q${i}` }] })
        expect(res.status).toBe(202)
      }
      const over = await post(h(), "/operations", { type: "tag_groups.create", items: [{ key: "a", name: "one too many" }] })
      expect(over.status).toBe(422)
      expect(over.body.error.code).toBe("operation_backlog_exceeded")
      // The other environment has its own backlog.
      expect((await post(h(), "/operations", { type: "tag_groups.create", items: [{ key: "a", name: "sandbox" }] }, h().test)).status).toBe(202)
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
