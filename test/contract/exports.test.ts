/**
 * Exports (`/exports`, release 3.2.0, docs/exports.md): a collection written to a CSV or JSON
 * lines file by an operation, the file read back through `/files`, personal columns only with
 * `users.read_personal`, validation, permissions, idempotency, the lifecycle, expiry by the
 * clock, paging through a collection larger than one store page, and `GET /reports/exports`.
 * Each test that counts starts from an empty sandbox.
 */
import { EXPORT_PAGE, runDueOperations } from "@syllabus/core"
import { expect, it } from "vitest"
import { eachStore, freshKey, type Harness } from "../support/harness.js"
import { api, created, credentialWith } from "../support/api.js"
import { expectError } from "../support/expect.js"

const DAY = 24 * 3600 * 1000

/** The sandbox, emptied: its client. */
const fresh = async (h: Harness) => {
  expect((await api(h, h.test).post("/sandbox/resets")).status).toBeLessThan(300)
  return api(h, h.test)
}

type Client = ReturnType<typeof api>

/** The export once its operation has finished. */
const finished = async (client: Client, id: string, tries = 200) => {
  for (let i = 0; i < tries; i++) {
    const res = await client.get(`/exports/${id}`)
    expect(res.status, res.text).toBe(200)
    if (res.body.data.status !== "queued") return res.body.data
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`export ${id} did not finish`)
}

/** Start an export and wait for it. */
const exported = async (client: Client, body: Record<string, unknown>) => {
  const res = await client.post("/exports", body)
  expect(res.status, res.text).toBe(202)
  return finished(client, res.body.data.id)
}

/** A batch of creates (`POST /operations`), waited for until it has succeeded. */
const batchCreated = async (client: Client, type: string, items: ReadonlyArray<Record<string, unknown>>) => {
  const batch = await client.post("/operations", { type, items })
  expect(batch.status, batch.text).toBe(202)
  for (let i = 0; i < 400; i++) {
    const operation = (await client.get(`/operations/${batch.body.data.id}`)).body.data
    if (operation.status === "succeeded") return
    expect(operation.status).not.toBe("failed")
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`the batch ${batch.body.data.id} did not finish`)
}

/** The bytes of a file, as text. */
const download = async (h: Harness, secret: string, fileId: string) => {
  const res = await fetch(`${h.baseUrl}/api/v3/files/${fileId}/content`, { headers: { authorization: `Bearer ${secret}` } })
  return { status: res.status, type: res.headers.get("content-type"), text: Buffer.from(await res.arrayBuffer()).toString("utf8") }
}

const jsonLines = (text: string) => text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))

/** Users made through the API; their representations as `POST /users` answered. */
const makeUsers = async (client: Client, users: ReadonlyArray<Record<string, unknown>>) => {
  const out = []
  for (const user of users) out.push(await created(client.post("/users", user)))
  return out
}

eachStore("exports", (h) => {
  it("JSON lines of users with filters: 202 queued, then succeeded; each line the representation GET answers, oldest first; the file is fil_ of purpose export", async () => {
    const client = await fresh(h())
    const [ana, , carla] = await makeUsers(client, [
      { name: "Ana", email: "ana@example.com", document: "123", phone: "+5511999990000", status: "blocked" },
      { name: "Bruno", email: "bruno@example.com" },
      { name: "Carla", email: "carla@example.com", status: "blocked" }
    ])
    const start = await client.post("/exports", { resource_type: "users", format: "jsonl", filters: { status: "blocked" } })
    expect(start.status, start.text).toBe(202)
    const queued = start.body.data
    expect(Object.keys(queued)).toEqual([
      "object", "id", "resource_type", "format", "filters", "raw_values", "byte_order_mark", "status", "personal_data", "row_count", "size", "file_id", "operation_id", "error", "created_at", "completed_at", "expires_at"
    ])
    expect(queued).toMatchObject({ object: "export", resource_type: "users", format: "jsonl", filters: { status: "blocked" }, status: "queued", personal_data: true, row_count: null, file_id: null })
    expect(queued.id).toMatch(/^exp_[0-9A-Za-z]{9}$/)
    expect(start.headers.get("location")).toBe(`/api/v3/exports/${queued.id}`)

    const done = await finished(client, queued.id)
    expect(done).toMatchObject({ status: "succeeded", row_count: 2, error: null })
    expect(done.file_id).toMatch(/^fil_/)
    expect(Date.parse(done.expires_at) - Date.parse(done.completed_at)).toBe(7 * DAY)
    const operation = (await client.get(`/operations/${done.operation_id}`)).body.data
    expect(operation).toMatchObject({ type: "export", status: "succeeded", progress: { done: 1, failed: 0, total: 1 } })

    const file = (await client.get(`/files/${done.file_id}`)).body.data
    expect(file).toMatchObject({ purpose: "export", filename: `users-${done.id}.jsonl`, content_type: "application/x-ndjson", size: done.size, expires_at: done.expires_at })
    const content = await download(h(), h().test, done.file_id)
    expect(content.status).toBe(200)
    expect(Buffer.byteLength(content.text)).toBe(done.size)
    expect(content.text.endsWith("\n")).toBe(true)
    const listed = (await client.get("/users?status=blocked&sort=created_at")).body.data
    expect(jsonLines(content.text)).toEqual(listed)
    expect(jsonLines(content.text).map((u: any) => u.id)).toEqual([ana!.id, carla!.id])
    expect(jsonLines(content.text)[0]).toMatchObject({ email: "ana@example.com", document: "123", phone: "+5511999990000" })

    const events = (await client.get(`/events?resource_id=${done.id}`)).body.data.map((e: any) => e.type).sort()
    expect(events).toEqual(["export.completed", "export.created"])
    const listedExports = (await client.get("/exports")).body.data
    expect(listedExports.map((e: any) => e.id)).toEqual([done.id])
    expect((await client.get("/exports?status=failed")).body.data).toEqual([])
    expect((await client.get("/exports?resource_type=users&status=succeeded")).body.data.map((e: any) => e.id)).toEqual([done.id])
  })

  it("an export longer than a page holds every row once, in the export's order (tags by name), across its pages", async () => {
    const client = await fresh(h())
    // Names in the reverse of creation order: the order by name is not the order by ID.
    const count = 2 * EXPORT_PAGE + 50
    const items = Array.from({ length: count }, (_, i) => ({ key: `t${i}`, name: `tag ${String(count - i).padStart(4, "0")}` }))
    await batchCreated(client, "tags.create", items)
    const done = await exported(client, { resource_type: "tags", format: "jsonl" })
    expect(done).toMatchObject({ status: "succeeded", row_count: count })
    const names = jsonLines((await download(h(), h().test, done.file_id)).text).map((tag: any) => tag.name)
    expect(names).toEqual(items.map((item) => item.name).reverse())
  })

  it("CSV: a header of the representation's fields, CRLF, quoting of commas and quotes, nested values as JSON, null as an empty cell; q filters as on the list", async () => {
    const client = await fresh(h())
    const tag = await created(client.post("/tags", { name: "VIP" }))
    const [odd] = await makeUsers(client, [{ name: 'Silva, "Zé"', email: "ze@example.com" }, { name: "Other", email: "other@example.com" }])
    expect((await client.put(`/users/${odd!.id}/tags`, { ids: [tag.id] })).status).toBe(200)
    const done = await exported(client, { resource_type: "users", format: "csv", filters: { q: "Silva" } })
    expect(done).toMatchObject({ status: "succeeded", row_count: 1 })
    const file = (await client.get(`/files/${done.file_id}`)).body.data
    expect(file).toMatchObject({ filename: `users-${done.id}.csv`, content_type: "text/csv" })
    const content = await download(h(), h().test, done.file_id)
    const user = (await client.get(`/users/${odd!.id}`)).body.data
    const lines = content.text.split("\r\n")
    expect(lines).toHaveLength(3)
    expect(lines[2]).toBe("")
    expect(lines[0]).toBe(Object.keys(user).join(","))
    const cell = (v: unknown) => {
      if (v === null) return ""
      const text = typeof v === "object" ? JSON.stringify(v) : String(v)
      return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
    }
    expect(lines[1]).toBe(Object.values(user).map(cell).join(","))
    expect(lines[1]).toContain('"Silva, ""Zé"""')
    expect(lines[1]).toContain(`"[""${tag.id}""]"`)
    expect(lines[1]).toContain(",,") // document and phone are null: empty cells
  })

  it("personal columns only with users.read_personal of the credential that started the export; the email filter needs it too", async () => {
    const client = api(h())
    const email = `p-${freshKey()}@example.com`.toLowerCase()
    const user = await created(client.post("/users", { name: "Personal", email, document: "999", phone: "+1555" }))
    const base = ["exports.create", "exports.read", "users.read", "files.read", "operations.read"]
    const without = api(h(), await credentialWith(h(), base))
    const withPersonal = api(h(), await credentialWith(h(), [...base, "users.read_personal"]))

    const hidden = await exported(without, { resource_type: "users", format: "jsonl", filters: { q: "Personal" } })
    expect(hidden).toMatchObject({ status: "succeeded", personal_data: false })
    const hiddenRows = jsonLines((await download(h(), h().live, hidden.file_id)).text)
    const row = hiddenRows.find((u: any) => u.id === user.id)
    expect(row).toMatchObject({ name: "Personal", email: null, document: null, phone: null })

    const shown = await exported(withPersonal, { resource_type: "users", format: "csv", filters: { email } })
    expect(shown).toMatchObject({ status: "succeeded", personal_data: true, row_count: 1 })
    const csv = (await download(h(), h().live, shown.file_id)).text
    expect(csv).toContain(email)
    expect(csv).toContain("999")

    expectError(await without.post("/exports", { resource_type: "users", format: "csv", filters: { email } }), 403, "permission_denied")
  })

  it("a resource type that cannot be exported is 422 unsupported_resource on resource_type", async () => {
    const client = api(h())
    for (const type of ["webhooks", "administrators", "credentials", "nope"]) {
      const error = expectError(await client.post("/exports", { resource_type: type, format: "csv" }), 422, "unsupported_resource", {
        field: "resource_type",
        code: "unsupported_resource"
      })
      expect(error.details[0]!.allowed).toContain("users")
    }
  })

  it("validation: format, filters of the resource's list itemized under filters.<name>, a nested resource's parent required and existing; nothing is started", async () => {
    const client = await fresh(h())
    expectError(await client.post("/exports", { resource_type: "users" }), 422, "validation_failed", { field: "format", code: "required" })
    expectError(await client.post("/exports", { resource_type: "users", format: "xml" }), 422, "validation_failed", { field: "format" })
    expectError(await client.post("/exports", { format: "csv" }), 422, "validation_failed", { field: "resource_type", code: "required" })
    expectError(await client.post("/exports", { resource_type: "users", format: "csv", extra: 1 }), 422, "unknown_field", { field: "extra" })
    const bad = expectError(await client.post("/exports", { resource_type: "users", format: "csv", filters: { status: "gone", colour: "red" } }), 422, "validation_failed")
    expect(bad.details.map((d) => [d.field, d.code]).sort()).toEqual([["filters.colour", "unknown_field"], ["filters.status", "invalid_value"]])
    expectError(await client.post("/exports", { resource_type: "modules", format: "csv" }), 422, "validation_failed", { field: "filters.product_id", code: "required" })
    expectError(await client.post("/exports", { resource_type: "modules", format: "csv", filters: { product_id: "prd_000000001" } }), 422, "validation_failed", {
      field: "filters.product_id",
      reason: "not_found"
    })
    expectError(await client.post("/exports", { resource_type: "users", format: "csv" }, { idempotencyKey: null }), 422, "idempotency_key_required")
    expect((await client.get("/exports")).body.data).toEqual([])
    expect((await client.get("/operations?type=export")).body.data).toEqual([])
  })

  it("a nested resource: the modules of one product, in their order", async () => {
    const client = await fresh(h())
    const showcase = await created(client.post("/showcases", { name: "Shelf" }))
    const product = await created(client.post("/products", { format: "course", name: "Course", showcase_id: showcase.id }))
    const other = await created(client.post("/products", { format: "course", name: "Other", showcase_id: showcase.id }))
    const first = await created(client.post(`/products/${product.id}/modules`, { name: "One" }))
    const second = await created(client.post(`/products/${product.id}/modules`, { name: "Two" }))
    await created(client.post(`/products/${other.id}/modules`, { name: "Elsewhere" }))
    const done = await exported(client, { resource_type: "modules", format: "jsonl", filters: { product_id: product.id } })
    expect(done).toMatchObject({ status: "succeeded", row_count: 2 })
    const rows = jsonLines((await download(h(), h().test, done.file_id)).text)
    expect(rows.map((m: any) => m.id)).toEqual([first.id, second.id])
    expect(rows).toEqual((await client.get(`/products/${product.id}/modules`)).body.data)
  })

  it("permissions: exports.create and the resource's read to start, exports.read to read, files.read to download", async () => {
    const noCreate = api(h(), await credentialWith(h(), ["exports.read", "users.read"]))
    expectError(await noCreate.post("/exports", { resource_type: "users", format: "csv" }), 403, "permission_denied")
    const noResource = api(h(), await credentialWith(h(), ["exports.create", "exports.read"]))
    expectError(await noResource.post("/exports", { resource_type: "users", format: "csv" }), 403, "permission_denied")
    const creator = api(h(), await credentialWith(h(), ["exports.create", "exports.read", "tags.read"]))
    const done = await exported(creator, { resource_type: "tags", format: "csv" })
    expect(done.status).toBe("succeeded")
    const noRead = api(h(), await credentialWith(h(), ["exports.create", "tags.read"]))
    expectError(await noRead.get(`/exports/${done.id}`), 403, "permission_denied")
    expectError(await noRead.get("/exports"), 403, "permission_denied")
    expectError(await creator.get(`/files/${done.file_id}`), 403, "permission_denied")
    expectError(await api(h()).get("/exports/exp_000000001"), 404, "not_found")
    // The catalogs: the events, and a template that exports everything but personal data.
    const types = (await api(h()).get("/event-types")).body.data.map((t: any) => t.type)
    expect(types).toEqual(expect.arrayContaining(["export.created", "export.completed", "export.failed"]))
    const template = (await api(h()).get("/policy-templates")).body.data.find((t: any) => t.id === "data_exporter")
    expect(template.capabilities).toEqual(expect.arrayContaining(["exports.create", "exports.read", "users.read", "files.read"]))
    expect(template.capabilities).not.toContain("users.read_personal")
  })

  it("idempotency: the same key and body replay the same export; another body with the key is 422 idempotency_key_reused", async () => {
    const client = api(h())
    const key = freshKey()
    const first = await client.post("/exports", { resource_type: "tags", format: "csv" }, { idempotencyKey: key })
    expect(first.status, first.text).toBe(202)
    const again = await client.post("/exports", { resource_type: "tags", format: "csv" }, { idempotencyKey: key })
    expect(again.status).toBe(202)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    expectError(await client.post("/exports", { resource_type: "tags", format: "jsonl" }, { idempotencyKey: key }), 422, "idempotency_key_reused")
    await finished(client, first.body.data.id)
  })

  it("expiry: the file is readable for 7 days after completion, then 404 and the export reads expired", async () => {
    const client = await fresh(h())
    await makeUsers(client, [{ name: "Expiring", email: "expiring@example.com" }])
    const done = await exported(client, { resource_type: "users", format: "csv" })
    h().advance(6 * DAY)
    try {
      await h().housekeeping()
      expect((await client.get(`/files/${done.file_id}`)).status).toBe(200)
      expect((await client.get(`/exports/${done.id}`)).body.data.status).toBe("succeeded")
      h().advance(DAY + 60_000)
      await h().housekeeping()
      expectError(await client.get(`/files/${done.file_id}`), 404, "not_found")
      expect((await download(h(), h().test, done.file_id)).status).toBe(404)
      const expired = (await client.get(`/exports/${done.id}`)).body.data
      expect(expired).toMatchObject({ status: "expired", file_id: done.file_id, row_count: 1 })
      expect((await client.get("/exports?status=expired")).body.data.map((e: any) => e.id)).toEqual([done.id])
    } finally {
      h().advance(-(7 * DAY + 60_000))
    }
  })

  it("a collection larger than a store page (250 users) is exported whole, each once, oldest first", async () => {
    const client = await fresh(h())
    const items = Array.from({ length: 250 }, (_, i) => ({ key: `u${i}`, name: `User ${String(i).padStart(3, "0")}`, email: `user${i}@example.com` }))
    await batchCreated(client, "users.create", items)
    const done = await exported(client, { resource_type: "users", format: "jsonl" })
    expect(done).toMatchObject({ status: "succeeded", row_count: 250 })
    const rows = jsonLines((await download(h(), h().test, done.file_id)).text)
    expect(rows).toHaveLength(250)
    const ids = rows.map((u: any) => u.id)
    expect(new Set(ids).size).toBe(250)
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(rows.map((u: any) => u.email))).toEqual(new Set(items.map((i) => i.email)))
  })

  it("GET /reports/exports: per resource type and status, the exports, rows and bytes the store sums; filters and validation", async () => {
    const client = await fresh(h())
    await makeUsers(client, [{ name: "A", email: "a@example.com" }, { name: "B", email: "b@example.com" }, { name: "C", email: "c@example.com" }])
    await created(client.post("/tags", { name: "T" }))
    const u1 = await exported(client, { resource_type: "users", format: "csv" })
    const u2 = await exported(client, { resource_type: "users", format: "jsonl", filters: { q: "A" } })
    const t1 = await exported(client, { resource_type: "tags", format: "jsonl" })
    const report = await client.get("/reports/exports")
    expect(report.status, report.text).toBe(200)
    expect(report.body.data).toEqual([
      { resource_type: "tags", status: "succeeded", exports: 1, rows: 1, bytes: t1.size },
      { resource_type: "users", status: "succeeded", exports: 2, rows: 3 + 1, bytes: u1.size + u2.size }
    ])
    expect((await client.get("/reports/exports?resource_type=tags")).body.data).toEqual([report.body.data[0]])
    const paged = await client.get("/reports/exports?limit=1")
    expect(paged.body.data).toEqual([report.body.data[0]])
    const next = await client.get(`/reports/exports?limit=1&cursor=${encodeURIComponent(paged.body.page.next_cursor)}`)
    expect(next.body.data).toEqual([report.body.data[1]])
    expect(next.body.page.next_cursor).toBeNull()
    const future = new Date(Date.now() + 365 * DAY).toISOString()
    expect((await client.get(`/reports/exports?created_after=${future}`)).body.data).toEqual([])
    expectError(await client.get(`/reports/exports?created_after=${future}&created_before=2020-01-01T00:00:00Z`), 422, "validation_failed", {
      parameter: "created_before",
      reason: "empty_range"
    })
    expect((await client.get("/reports")).body.data.map((r: any) => r.id)).toContain("exports")
  })

  it("a storage outage: the operation and the export fail with storage_unavailable (export.failed); resuming the operation writes the file", async () => {
    const client = await fresh(h())
    await makeUsers(client, [{ name: "Outage", email: "outage@example.com" }])
    h().fail("storage")
    let failed: any
    try {
      failed = await exported(client, { resource_type: "users", format: "jsonl" })
    } finally {
      h().fail("storage", false)
    }
    expect(failed).toMatchObject({ status: "failed", file_id: null, row_count: null, error: { code: "storage_unavailable" } })
    expect((await client.get(`/operations/${failed.operation_id}`)).body.data).toMatchObject({ status: "failed", error: { code: "storage_unavailable" } })
    expect((await client.get(`/events?resource_id=${failed.id}&type=export.failed`)).body.data).toHaveLength(1)
    expect((await client.get("/reports/exports")).body.data).toEqual([{ resource_type: "users", status: "failed", exports: 1, rows: 0, bytes: 0 }])
    const resumed = await client.post(`/operations/${failed.operation_id}/resumptions`)
    expect(resumed.status, resumed.text).toBeLessThan(300)
    let done: any
    for (let i = 0; i < 200 && done?.status !== "succeeded"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      done = (await client.get(`/exports/${failed.id}`)).body.data
    }
    expect(done).toMatchObject({ status: "succeeded", row_count: 1, error: null })
    expect(jsonLines((await download(h(), h().test, done.file_id)).text)).toHaveLength(1)
  })

  it("sandbox reset: the exports of the sandbox are gone", async () => {
    const client = await fresh(h())
    const done = await exported(client, { resource_type: "tags", format: "csv" })
    expect((await client.get("/exports")).body.data.map((e: any) => e.id)).toEqual([done.id])
    await fresh(h())
    expect((await client.get("/exports")).body.data).toEqual([])
    expectError(await client.get(`/exports/${done.id}`), 404, "not_found")
  })
})

/** Rows per export in the concurrency test: each export's reads span many pages of the store. */
const ROWS = 500

// Ten operation slots, all for one account: the ten exports run at once.
eachStore(
  "exports at once",
  (h) => {
    it("ten exports started at once all succeed, each with its own complete file (issue 23: 2 of 10 failed audit_unavailable)", async () => {
      const client = await fresh(h())
      const batch = await client.post("/operations", { type: "users.create", items: Array.from({ length: ROWS }, (_, i) => ({ key: `u${i}`, name: `Many ${i}`, email: `many${i}@example.com` })) })
      expect(batch.status, batch.text).toBe(202)
      for (let i = 0; i < 600 && (await client.get(`/operations/${batch.body.data.id}`)).body.data.status !== "succeeded"; i++) await new Promise((r) => setTimeout(r, 100))
      const started = await Promise.all(
        Array.from({ length: 10 }, (_, i) => client.post("/exports", { resource_type: "users", format: i % 2 === 0 ? "jsonl" : "csv" }))
      )
      for (const res of started) expect(res.status, res.text).toBe(202)
      const done = await Promise.all(started.map((res) => finished(client, res.body.data.id, 2400)))
      for (const one of done) expect(one).toMatchObject({ status: "succeeded", row_count: ROWS, error: null })
      expect(new Set(done.map((one) => one.file_id)).size).toBe(10)
      for (const one of done) {
        const content = await download(h(), h().test, one.file_id)
        expect(content.status).toBe(200)
        const lines = one.format === "csv" ? content.text.split("\r\n").filter((l) => l !== "").length - 1 : jsonLines(content.text).length
        expect(lines).toBe(ROWS)
      }
    }, 180_000)
  },
  { background: { concurrency: 40, perAccount: 10 } }
)

eachStore(
  "exports whose one item is refused",
  (h) => {
    it("an export whose item was refused reads failed with the item's error (its operation ran its one item: succeeded, progress.failed 1)", async () => {
      const client = await fresh(h())
      const started = await client.post("/exports", { resource_type: "users", format: "csv" })
      expect(started.status, started.text).toBe(202)
      const operationId = started.body.data.operation_id as string
      const [item] = (await client.get(`/operations/${operationId}/items`)).body.data
      // The item names an export that does not exist: refused (404), not an outage.
      const tenant = { accountId: h().account.account.id, environment: "sandbox" as const }
      const stored = await h().storedRecord(tenant, "operation_item", item.id)
      await h().patchRecord(tenant, "operation_item", item.id, { payload: { ...stored!.payload, export_id: "exp_000000001" } })
      await h().runUseCase(runDueOperations())
      expect((await client.get(`/operations/${operationId}`)).body.data).toMatchObject({ status: "succeeded", progress: { done: 0, failed: 1, total: 1 } })
      const read = (await client.get(`/exports/${started.body.data.id}`)).body.data
      expect(read).toMatchObject({ status: "failed", file_id: null, error: { code: "not_found" } })
    })
  },
  { workers: false }
)
