/**
 * Imports over HTTP (release 3.2.0, issue 16; docs/imports.md): an uploaded file of purpose
 * `import` (CSV, JSON lines, XLSX) written into the account by an operation of one item per
 * row, each row the create its route makes (the same codes, every problem itemized), a dry run
 * that keeps nothing, rows never written twice, and the errors of the request itself.
 */
import { createHash } from "node:crypto"
import ExcelJS from "exceljs"
import { expect, it } from "vitest"
import { api, credentialWith } from "../support/api.js"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"

const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

let counter = 0
/** A value no other test of the run uses (emails and names are unique per account). */
const unique = (tag: string) => `${tag}-${process.pid}-${Date.now()}-${++counter}`

/** Upload `bytes` as a file of `purpose` (one part), answering its ID. */
const upload = async (h: Harness, bytes: Buffer, contentType: string, options: { purpose?: string; secret?: string } = {}) => {
  const secret = options.secret ?? h.live
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const session = await h.request("POST", "/api/v3/uploads", {
    secret,
    json: { purpose: options.purpose ?? "import", filename: "rows", size: bytes.length, content_type: contentType, sha256 }
  })
  if (session.status !== 201) throw new Error(session.text)
  await h.request("PUT", session.body.data.upload_urls[0].url, { secret, raw: bytes, headers: { "content-type": "application/octet-stream" } })
  const file = await h.request("POST", `/api/v3/uploads/${session.body.data.id}/completions`, { secret })
  if (file.status !== 201) throw new Error(file.text)
  return file.body.data.id as string
}

/** The import once its operation has finished (succeeded, failed or canceled). */
const settledImport = async (h: Harness, importId: string, secret: string = h.live) => {
  for (let i = 0; i < 200; i++) {
    const imp = (await api(h, secret).get(`/imports/${importId}`)).body.data
    if (imp.completed_at !== null) return imp
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`import ${importId} did not finish`)
}

/** Start an import and wait for it. */
const runImport = async (h: Harness, body: Record<string, unknown>, secret: string = h.live) => {
  const started = await api(h, secret).post("/imports", body)
  if (started.status !== 202) throw new Error(`${started.status} ${started.text}`)
  expect(started.body.data).toMatchObject({ object: "import", status: "queued", target: body.target })
  expect(started.body.data.id).toMatch(/^imp_/)
  return settledImport(h, started.body.data.id, secret)
}

/** Every item of an operation, by key (the row number). */
const itemsByRow = async (h: Harness, operationId: string, secret: string = h.live) => {
  const items = (await api(h, secret).get(`/operations/${operationId}/items?limit=200`)).body.data as Array<Record<string, any>>
  return new Map(items.map((item) => [item.key as string, item]))
}

/** The users of the account with this email, as the list answers (personal data readable with the account's key). */
const usersWithEmail = async (h: Harness, email: string, secret: string = h.live) =>
  (await api(h, secret).get(`/users?email=${encodeURIComponent(email)}`)).body.data as Array<Record<string, any>>

const tagsNamed = async (h: Harness, name: string, secret: string = h.live) =>
  ((await api(h, secret).get(`/tags?limit=200`)).body.data as Array<Record<string, any>>).filter((t) => t.name === name)

eachStore("imports", (h) => {
  it("a CSV of users with a mapping: valid rows created, an invalid email fails its row with validation_failed on email", async () => {
    const [a, b, c] = [unique("ana"), unique("bad"), unique("caio")]
    const csv = [
      "Full name,E-mail,Ignored column,Document",
      `Ana Lima,${a}@example.com,whatever,123`,
      `Bruno,${b}-not-an-email,x,`,
      `"Caio, Jr.",${c}@example.com,,`
    ].join("\r\n")
    const fileId = await upload(h(), Buffer.from(csv), "text/csv")
    const done = await runImport(h(), { file_id: fileId, target: "users", mapping: { "Full name": "name", "E-mail": "email", Document: "document" } })
    // 1 of 3 rows failed: the import ran every row, so it succeeded; the row carries its failure.
    expect(done).toMatchObject({ status: "succeeded", format: "csv", dry_run: false, rows: 3, valid_rows: 2, failed_rows: 1 })
    const rows = await itemsByRow(h(), done.operation_id)
    expect([...rows.keys()].sort()).toEqual(["2", "3", "4"])
    expect(rows.get("2")).toMatchObject({ status: "succeeded", result: { row: 2 } })
    expect(rows.get("3")).toMatchObject({ status: "failed", error: { code: "validation_failed", field: "email" } })
    expect(rows.get("3")!.error.details).toEqual([expect.objectContaining({ field: "email" })])
    const [ana] = await usersWithEmail(h(), `${a}@example.com`)
    expect(ana).toMatchObject({ name: "Ana Lima", document: "123" })
    expect(rows.get("2")!.result.id).toBe(ana!.id)
    expect((await usersWithEmail(h(), `${c}@example.com`))[0]).toMatchObject({ name: "Caio, Jr." })
    const operation = (await api(h()).get(`/operations/${done.operation_id}`)).body.data
    expect(operation).toMatchObject({ type: "import", status: "succeeded", progress: { done: 2, failed: 1, total: 3 } })
  })

  it("a row with several problems itemizes each; a row the route would refuse fails with the route's code", async () => {
    const taken = unique("taken")
    expect((await api(h()).post("/users", { name: "Already", email: `${taken}@example.com` })).status).toBe(201)
    const csv = ["name,email,status", `,${unique("x")},frozen`, `Dup,${taken}@example.com,active`].join("\n")
    const done = await runImport(h(), { file_id: await upload(h(), Buffer.from(csv), "text/csv"), target: "users" })
    expect(done).toMatchObject({ rows: 2, valid_rows: 0, failed_rows: 2 })
    const rows = await itemsByRow(h(), done.operation_id)
    expect(rows.get("2")!.error.code).toBe("validation_failed")
    expect(rows.get("2")!.error.details.map((d: { field: string }) => d.field).sort()).toEqual(["email", "name", "status"])
    expect(rows.get("3")!.error).toMatchObject({ code: "already_exists" })
  })

  it("JSON lines of tags: each line an object; a blank line is skipped, a line that is not JSON fails its row on file_id", async () => {
    const [one, two] = [unique("tag-one"), unique("tag-two")]
    const lines = [JSON.stringify({ name: one }), "", "{not json", JSON.stringify({ name: two, id: "tag_000000001", object: "tag", users_count: 4 })].join("\n")
    const done = await runImport(h(), { file_id: await upload(h(), Buffer.from(lines), "application/json"), target: "tags" })
    expect(done).toMatchObject({ format: "jsonl", rows: 3, valid_rows: 2, failed_rows: 1 })
    const rows = await itemsByRow(h(), done.operation_id)
    expect(rows.get("3")).toMatchObject({ status: "failed", error: { code: "validation_failed", field: "file_id", reason: "unreadable_row" } })
    // The representation's read-only fields (an export's `id`, `object`, counts) are left out.
    expect(rows.get("4")).toMatchObject({ status: "succeeded" })
    expect(await tagsNamed(h(), one)).toHaveLength(1)
    const [made] = await tagsNamed(h(), two)
    expect(made!.id).not.toBe("tag_000000001")
  })

  it("a CSV record with another number of fields than the header fails its row; a quote never closed ends the file with a failed row", async () => {
    const [one, two] = [unique("csv-one"), unique("csv-two")]
    const csv = ["name", one, `${unique("extra")},surplus`, "", `"${two}`, "\"unterminated"].join("\n")
    const done = await runImport(h(), { file_id: await upload(h(), Buffer.from(csv), "text/csv"), target: "tags" })
    const rows = await itemsByRow(h(), done.operation_id)
    expect(rows.get("2")).toMatchObject({ status: "succeeded" })
    expect(rows.get("3")).toMatchObject({ status: "failed", error: { code: "validation_failed", field: "file_id", reason: "unreadable_row" } })
    const last = [...rows.values()].at(-1)!
    expect(last).toMatchObject({ status: "failed", error: { field: "file_id", reason: "unreadable_row" } })
    expect(done).toMatchObject({ valid_rows: 1, failed_rows: 2 })
    expect(await tagsNamed(h(), one)).toHaveLength(1)
  })

  it("an XLSX of users (first worksheet, header row 1) imports as a CSV does", async () => {
    const [a, b] = [unique("xl-a"), unique("xl-b")]
    const workbook = new ExcelJS.Workbook()
    const sheet = workbook.addWorksheet("People")
    sheet.addRow(["Name", "Email", "Status"])
    sheet.addRow(["Xavier", `${a}@example.com`, "blocked"])
    sheet.addRow(["Yara", `${b}@example.com`, null])
    sheet.addRow(["Zé", "nope", "active"])
    const bytes = Buffer.from(await workbook.xlsx.writeBuffer())
    const done = await runImport(h(), {
      file_id: await upload(h(), bytes, XLSX),
      target: "users",
      mapping: { Name: "name", Email: "email", Status: "status" }
    })
    expect(done).toMatchObject({ format: "xlsx", rows: 3, valid_rows: 2, failed_rows: 1 })
    expect((await usersWithEmail(h(), `${a}@example.com`))[0]).toMatchObject({ name: "Xavier", status: "blocked" })
    expect((await usersWithEmail(h(), `${b}@example.com`))[0]).toMatchObject({ name: "Yara", status: "active" })
    const rows = await itemsByRow(h(), done.operation_id)
    expect(rows.get("4")).toMatchObject({ status: "failed", error: { code: "validation_failed", field: "email" } })
  })

  it("a dry run checks every row and keeps nothing", async () => {
    const [a, b] = [unique("dry-a"), unique("dry-b")]
    const tag = unique("dry-tag")
    const csv = ["name,email", `Dry A,${a}@example.com`, `Dry B,${b}`].join("\n")
    const fileId = await upload(h(), Buffer.from(csv), "text/csv")
    const done = await runImport(h(), { file_id: fileId, target: "users", dry_run: true })
    expect(done).toMatchObject({ dry_run: true, rows: 2, valid_rows: 1, failed_rows: 1 })
    const rows = await itemsByRow(h(), done.operation_id)
    expect(rows.get("2")).toMatchObject({ status: "succeeded", result: { row: 2, valid: true } })
    expect(rows.get("3")).toMatchObject({ status: "failed", error: { code: "validation_failed", field: "email" } })
    expect(await usersWithEmail(h(), `${a}@example.com`)).toEqual([])
    const tags = await runImport(h(), { file_id: await upload(h(), Buffer.from(JSON.stringify({ name: tag })), "application/json"), target: "tags", dry_run: true })
    expect(tags).toMatchObject({ status: "succeeded", valid_rows: 1 })
    expect(await tagsNamed(h(), tag)).toEqual([])
    // The same file for real: the row that was valid is written now.
    const real = await runImport(h(), { file_id: fileId, target: "users" })
    expect(real).toMatchObject({ dry_run: false, valid_rows: 1, failed_rows: 1 })
    expect(await usersWithEmail(h(), `${a}@example.com`)).toHaveLength(1)
  })

  it("a resumed import runs again only the rows an outage failed: no row is written twice", async () => {
    const names = [unique("res-1"), unique("res-2"), unique("res-3")]
    const lines = names.map((name) => JSON.stringify({ name })).join("\n")
    const done = await runImport(h(), { file_id: await upload(h(), Buffer.from(lines), "application/json"), target: "tags" })
    expect(done).toMatchObject({ status: "succeeded", rows: 3, valid_rows: 3 })
    // An outage during row 2 (its write rolled back, as a failed item's always is): the tag is
    // not there and the item failed with `storage_unavailable`, the operation failed.
    const rows = await itemsByRow(h(), done.operation_id)
    const second = rows.get("2")!
    expect((await api(h()).del(`/tags/${second.result.id}`)).status).toBeLessThan(300)
    const tenant = { accountId: h().account.account.id, environment: "production" as const }
    const outage = { code: "storage_unavailable", message: "The storage is unavailable.", field: null, reason: null, resource_id: null }
    await h().patchRecord(tenant, "operation_item", second.id, { status: "failed", error: outage, result: null })
    await h().patchRecord(tenant, "operation", done.operation_id, { status: "failed", progress: { done: 2, failed: 1, total: 3 }, error: outage })
    const resumed = await api(h()).post(`/operations/${done.operation_id}/resumptions`)
    expect(resumed.status).toBe(200)
    for (let i = 0; i < 100; i++) {
      const op = (await api(h()).get(`/operations/${done.operation_id}`)).body.data
      if (op.status === "succeeded" || (op.status === "failed" && op.attempt.status === "failed")) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const operation = (await api(h()).get(`/operations/${done.operation_id}`)).body.data
    expect(operation).toMatchObject({ status: "succeeded", progress: { done: 3, failed: 0, total: 3 } })
    for (const name of names) expect(await tagsNamed(h(), name)).toHaveLength(1)
  })

  it("tag applications: a user's tag from each row, never twice; a missing user or tag fails on its field", async () => {
    const user = (await api(h()).post("/users", { name: "Tagged", email: `${unique("tagged")}@example.com` })).body.data
    const tag = (await api(h()).post("/tags", { name: unique("applied") })).body.data
    const csv = ["user_id,tag_id", `${user.id},${tag.id}`, `${user.id},${tag.id}`, `usr_000000001,tag_000000001`].join("\n")
    const done = await runImport(h(), { file_id: await upload(h(), Buffer.from(csv), "text/csv"), target: "tag_applications" })
    expect(done).toMatchObject({ rows: 3, valid_rows: 2, failed_rows: 1 })
    const rows = await itemsByRow(h(), done.operation_id)
    expect(rows.get("2")!.result).toMatchObject({ tag_ids_added: [tag.id] })
    expect(rows.get("3")!.result).toMatchObject({ tag_ids_added: [] })
    expect(rows.get("4")!.error.details.map((d: { field: string }) => d.field).sort()).toEqual(["tag_id", "user_id"])
    expect((await api(h()).get(`/users/${user.id}`)).body.data.tags).toEqual([tag.id])
  })

  it("an unsupported target is 422 unsupported_resource on target; a file of another purpose or environment is 422 on file_id", async () => {
    const fileId = await upload(h(), Buffer.from("name\nx"), "text/csv")
    expectError(await api(h()).post("/imports", { file_id: fileId, target: "webhooks" }), 422, "unsupported_resource", { field: "target" })
    const document = await upload(h(), Buffer.from("name\nx"), "text/csv", { purpose: "document" })
    expectError(await api(h()).post("/imports", { file_id: document, target: "tags" }), 422, "validation_failed", { field: "file_id", reason: "purpose_mismatch" })
    const sandboxFile = await upload(h(), Buffer.from("name\nx"), "text/csv", { secret: h().test })
    expectError(await api(h()).post("/imports", { file_id: sandboxFile, target: "tags" }), 422, "validation_failed", { field: "file_id", reason: "not_found" })
    expectError(await api(h()).post("/imports", { file_id: "nope", target: "tags" }), 422, "validation_failed", { field: "file_id" })
    expectError(await api(h()).post("/imports", { file_id: fileId, target: "tags", mapping: { name: "Not A Field!" } }), 422, "validation_failed", {
      field: "mapping.name"
    })
    const listed = (await api(h()).get("/imports?limit=200")).body.data as Array<{ file_id: string }>
    expect(listed.some((i) => i.file_id === document || i.file_id === sandboxFile)).toBe(false)
  })

  it("permissions: imports.create to start, imports.read to read, and the target's own write for the rows", async () => {
    const fileId = await upload(h(), Buffer.from(JSON.stringify({ name: unique("perm") })), "application/json")
    const importsOnly = await credentialWith(h(), ["imports.create", "imports.read"])
    expectError(await api(h(), importsOnly).post("/imports", { file_id: fileId, target: "tags" }), 403, "permission_denied")
    const writerOnly = await credentialWith(h(), ["tags.create"])
    expectError(await api(h(), writerOnly).post("/imports", { file_id: fileId, target: "tags" }), 403, "permission_denied")
    const importer = await credentialWith(h(), ["imports.create", "tags.create"])
    const started = await api(h(), importer).post("/imports", { file_id: fileId, target: "tags" })
    expect(started.status).toBe(202)
    expectError(await api(h(), importer).get(`/imports/${started.body.data.id}`), 403, "permission_denied")
    const reader = await credentialWith(h(), ["imports.read"])
    expect((await api(h(), reader).get(`/imports/${started.body.data.id}`)).status).toBe(200)
    expect((await api(h(), reader).get("/imports")).body.data.map((i: { id: string }) => i.id)).toContain(started.body.data.id)
    await settledImport(h(), started.body.data.id)
  })

  it("idempotency: the same key answers the same import, and only one is made", async () => {
    const fileId = await upload(h(), Buffer.from(JSON.stringify({ name: unique("idem") })), "application/json")
    const key = unique("import-key")
    const first = await api(h()).post("/imports", { file_id: fileId, target: "tags" }, { idempotencyKey: key })
    const again = await api(h()).post("/imports", { file_id: fileId, target: "tags" }, { idempotencyKey: key })
    expect(first.status).toBe(202)
    expect(again.status).toBe(202)
    expect(again.body.data.id).toBe(first.body.data.id)
    const mine = ((await api(h()).get("/imports?limit=200")).body.data as Array<{ file_id: string }>).filter((i) => i.file_id === fileId)
    expect(mine).toHaveLength(1)
    expectError(await api(h()).post("/imports", { file_id: fileId, target: "tags" }, { idempotencyKey: null }), 422, "idempotency_key_required")
    const done = await settledImport(h(), first.body.data.id)
    const events = (await api(h()).get("/events?limit=200")).body.data as Array<{ type: string; data: { object: { id: string } } }>
    const about = events.filter((e) => e.data.object.id === first.body.data.id).map((e) => e.type).sort()
    expect(about).toEqual(["import.completed", "import.created"])
    expect(done).toMatchObject({ status: "succeeded", valid_rows: 1 })
  })
})

/** The bytes of a file. */
const download = async (h: Harness, secret: string, fileId: string) => {
  const res = await fetch(`${h.baseUrl}/api/v3/files/${fileId}/content`, { headers: { authorization: `Bearer ${secret}` } })
  expect(res.status).toBe(200)
  return Buffer.from(await res.arrayBuffer())
}

/** An export of `resourceType` in `format`, finished: its file's bytes. */
const exportBytes = async (h: Harness, secret: string, resourceType: string, format: "jsonl" | "csv") => {
  const started = await api(h, secret).post("/exports", { resource_type: resourceType, format })
  expect(started.status, started.text).toBe(202)
  for (let i = 0; i < 200; i++) {
    const exp = (await api(h, secret).get(`/exports/${started.body.data.id}`)).body.data
    if (exp.status === "succeeded") return download(h, secret, exp.file_id)
    expect(exp.status).toBe("queued")
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error("export did not finish")
}

const userFields = (u: Record<string, any>) => ({ name: u.name, email: u.email, document: u.document, phone: u.phone, status: u.status, custom_fields: u.custom_fields })

eachStore("imports: the round trip with exports, a worker restart", (h) => {
  it("users and tags exported from the sandbox, the sandbox reset, the files imported: the same records, new IDs", async () => {
    const sandbox = api(h(), h().test)
    expect((await sandbox.post("/sandbox/resets")).status).toBeLessThan(300)
    const madeUsers: Array<Record<string, any>> = []
    for (const user of [
      { name: "Ana", email: "ana@example.com", document: "123", phone: "+5511999990000", status: "blocked" },
      { name: "Bruno, \"B\"", email: "bruno@example.com" },
      { name: "Carla", email: "carla@example.com", phone: "+5511888880000" }
    ]) madeUsers.push((await sandbox.post("/users", user)).body.data)
    const madeTags: Array<Record<string, any>> = []
    for (const name of ["gold", "silver"]) madeTags.push((await sandbox.post("/tags", { name })).body.data)
    const usersJsonl = await exportBytes(h(), h().test, "users", "jsonl")
    const usersCsv = await exportBytes(h(), h().test, "users", "csv")
    const tagsJsonl = await exportBytes(h(), h().test, "tags", "jsonl")

    for (const [bytes, contentType] of [[usersJsonl, "application/json"], [usersCsv, "text/csv"]] as const) {
      expect((await sandbox.post("/sandbox/resets")).status).toBeLessThan(300)
      expect((await sandbox.get("/users")).body.data).toEqual([])
      const fileId = await upload(h(), bytes, contentType, { secret: h().test })
      const done = await runImport(h(), { file_id: fileId, target: "users" }, h().test)
      expect(done, JSON.stringify(done)).toMatchObject({ status: "succeeded", rows: 3, valid_rows: 3, failed_rows: 0 })
      const now = (await sandbox.get("/users?sort=created_at")).body.data as Array<Record<string, any>>
      expect(now.map(userFields)).toEqual(madeUsers.map(userFields))
      expect(now.map((u) => u.id).filter((id) => madeUsers.some((m) => m.id === id))).toEqual([])
    }

    const tagsFile = await upload(h(), tagsJsonl, "application/json", { secret: h().test })
    const tags = await runImport(h(), { file_id: tagsFile, target: "tags" }, h().test)
    expect(tags).toMatchObject({ status: "succeeded", rows: 2, valid_rows: 2 })
    const nowTags = (await sandbox.get("/tags")).body.data as Array<Record<string, any>>
    expect(nowTags.map((t) => t.name).sort()).toEqual(["gold", "silver"])
    expect(nowTags.map((t) => t.id).filter((id) => madeTags.some((m) => m.id === id))).toEqual([])
  })

  it("a worker that dies while recording the rows: the next one goes on after the rows recorded, each row once", async () => {
    const names = [unique("crash-1"), unique("crash-2"), unique("crash-3")]
    const fileId = await upload(h(), Buffer.from(names.map((name) => JSON.stringify({ name })).join("\n")), "application/json")
    const done = await runImport(h(), { file_id: fileId, target: "tags" })
    expect(done).toMatchObject({ status: "succeeded", rows: 3 })
    // As if its worker died after recording every row and running row 1 only: rows 2 and 3 not
    // written (their tags gone, their items queued), the enumeration not marked done, the lease run out.
    const rows = await itemsByRow(h(), done.operation_id)
    const tenant = { accountId: h().account.account.id, environment: "production" as const }
    for (const key of ["2", "3"]) {
      expect((await api(h()).del(`/tags/${rows.get(key)!.result.id}`)).status).toBeLessThan(300)
      await h().patchRecord(tenant, "operation_item", rows.get(key)!.id, { status: "queued", result: null, finished_at: null })
    }
    await h().patchRecord(tenant, "import", done.id, { status: "running", completed_at: null })
    await h().patchRecord(tenant, "operation", done.operation_id, {
      status: "running",
      attempt: { number: 1, status: "running" },
      enumerated: false,
      progress: { done: 1, failed: 0, total: 3 },
      finished_at: null,
      lease_owner: "worker_dead",
      lease_until: 0
    })
    const again = await settledImport(h(), done.id)
    expect(again).toMatchObject({ status: "succeeded", rows: 3, valid_rows: 3, failed_rows: 0 })
    const items = (await api(h()).get(`/operations/${done.operation_id}/items?limit=200`)).body.data as Array<{ key: string }>
    expect(items.map((i) => i.key).sort()).toEqual(["1", "2", "3"])
    for (const name of names) expect(await tagsNamed(h(), name)).toHaveLength(1)
  })
})
