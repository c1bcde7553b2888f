/**
 * Bounded work for hostile input (issue 23; docs/imports.md "Limits", docs/reliability.md
 * "Hostile files"): import files over a cap fail their import with the cap named, read no
 * further than the cap (no row recorded past it); an operation's runs and a cancellation's
 * transactions are bounded.
 */
import { createHash } from "node:crypto"
import { randomBytes } from "node:crypto"
import { CANCEL_PAGE, IMPORT_LIMITS, MAX_OPERATION_RUNS, Records, runDueOperations, UnitOfWork } from "@syllabus/core"
import { Effect } from "effect"
import ExcelJS from "exceljs"
import { Zip, ZipDeflate } from "fflate"
import { expect, it } from "vitest"
import { api } from "../support/api.js"
import { eachStore, type Harness } from "../support/harness.js"

const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

/** Upload `bytes` as a file of purpose `import` (one part), answering its ID. */
const upload = async (h: Harness, bytes: Buffer, contentType: string, secret = h.live) => {
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const session = await h.request("POST", "/api/v3/uploads", {
    secret,
    json: { purpose: "import", filename: "rows", size: bytes.length, content_type: contentType, sha256 }
  })
  if (session.status !== 201) throw new Error(session.text)
  await h.request("PUT", session.body.data.upload_urls[0].url, { secret, raw: bytes, headers: { "content-type": "application/octet-stream" } })
  const file = await h.request("POST", `/api/v3/uploads/${session.body.data.id}/completions`, { secret })
  if (file.status !== 201) throw new Error(file.text)
  return file.body.data.id as string
}

/** Start an import of `bytes` and wait for it; answers the import and its operation. */
const importOf = async (h: Harness, bytes: Buffer, contentType: string, target = "tags", secret = h.live) => {
  const started = await api(h, secret).post("/imports", { file_id: await upload(h, bytes, contentType, secret), target })
  if (started.status !== 202) throw new Error(`${started.status} ${started.text}`)
  for (let i = 0; i < 300; i++) {
    const imp = (await api(h, secret).get(`/imports/${started.body.data.id}`)).body.data
    if (imp.completed_at !== null) return { imp, operation: (await api(h, secret).get(`/operations/${imp.operation_id}`)).body.data }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error("the import did not finish")
}

/** The import failed on `file_id` with the cap named, having recorded no row. */
const expectRefused = (result: Awaited<ReturnType<typeof importOf>>, limit: string) => {
  expect(result.imp).toMatchObject({ status: "failed", rows: 0, valid_rows: 0 })
  expect(result.operation).toMatchObject({ status: "failed", progress: { total: 0 } })
  expect(result.operation.error).toMatchObject({ code: "validation_failed", field: "file_id", reason: `${limit}_exceeded` })
}

/** A ZIP archive of `parts`, each deflated as it is generated (`chunks` of one part are pushed one by one: never whole in memory). */
const zipOf = (parts: ReadonlyArray<{ name: string; chunks: () => Iterable<Uint8Array> }>): Buffer => {
  const out: Array<Uint8Array> = []
  const zip = new Zip((error, chunk) => {
    if (error) throw error
    out.push(chunk)
  })
  for (const part of parts) {
    const file = new ZipDeflate(part.name, { level: 9 })
    zip.add(file)
    for (const chunk of part.chunks()) file.push(chunk)
    file.push(new Uint8Array(0), true)
  }
  zip.end()
  return Buffer.concat(out)
}

const text = (s: string) => () => [Buffer.from(s)]

/** The parts around a first worksheet an XLSX reader looks for. */
const workbookParts = [
  {
    name: "[Content_Types].xml",
    chunks: text(
      `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`
    )
  },
  {
    name: "_rels/.rels",
    chunks: text(
      `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`
    )
  },
  {
    name: "xl/workbook.xml",
    chunks: text(
      `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="a" sheetId="1" r:id="rId1"/></sheets></workbook>`
    )
  },
  {
    name: "xl/_rels/workbook.xml.rels",
    chunks: text(
      `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`
    )
  }
]

/** The bomb: a sheet of identical rows, ~64 MiB of XML deflated to a few hundred KiB (the same rows, 12 M times, were 1.45 GB). */
const expansionBomb = () =>
  zipOf([
    ...workbookParts,
    {
      name: "xl/worksheets/sheet1.xml",
      chunks: function* () {
        yield Buffer.from(`<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
        yield Buffer.from(`<row r="1"><c r="A1" t="inlineStr"><is><t>name</t></is></c></row>`)
        const rows = Buffer.from(`<row><c t="inlineStr"><is><t>boom</t></is></c></row>`.repeat(16_384))
        for (let i = 0; i < 64 * 1024 * 1024; i += rows.length) yield rows
        yield Buffer.from(`</sheetData></worksheet>`)
      }
    }
  ])

/** A workbook (written by exceljs, with its shared strings) whose row 2 holds `value`. */
const workbookWith = async (value: string) => {
  const workbook = new ExcelJS.Workbook()
  const sheet = workbook.addWorksheet("rows")
  sheet.addRow(["name"])
  sheet.addRow([value])
  return Buffer.from(await workbook.xlsx.writeBuffer())
}

eachStore("bounded work for hostile input", (h) => {
  it("an XLSX expansion bomb fails its import with xlsx_expansion_ratio_exceeded, no row recorded", async () => {
    const bomb = expansionBomb()
    expect(bomb.length).toBeLessThan(1024 * 1024)
    const refused = await importOf(h(), bomb, XLSX)
    expectRefused(refused, "xlsx_expansion_ratio")
    // Its run failed, but on what the file is, not on an outage: nothing a resumption could re-run.
    const resumed = await api(h()).post(`/operations/${refused.operation.id}/resumptions`)
    expect(resumed.status).toBe(422)
    expect(resumed.body.error).toMatchObject({ code: "operation_not_resumable", reason: "no_recoverable_items" })
  })

  it("an XLSX shared string far longer than a cell may be is refused while inflating (cell_chars_exceeded)", async () => {
    // Random text: it hardly compresses, so the expansion ratio is not what stops it.
    const long = randomBytes(3 * 1024 * 1024).toString("base64")
    expectRefused(await importOf(h(), await workbookWith(long), XLSX), "cell_chars")
  })

  it("an XLSX cell just over cell_chars is refused as it is read (cell_chars_exceeded); one at the cap is a row", async () => {
    expectRefused(await importOf(h(), await workbookWith("x".repeat(IMPORT_LIMITS.cell_chars + 1)), XLSX), "cell_chars")
    const within = await importOf(h(), await workbookWith("y".repeat(IMPORT_LIMITS.cell_chars)), XLSX)
    // The tag's name is too long for a tag, but the row was read: its item fails on `name`.
    expect(within.imp).toMatchObject({ rows: 1, failed_rows: 1 })
  })

  it("a CSV line over line_bytes fails the import (line_bytes_exceeded) before any row is recorded", async () => {
    const csv = Buffer.concat([Buffer.from("name\r\nfirst\r\n"), Buffer.alloc(2 * IMPORT_LIMITS.line_bytes, "a"), Buffer.from("\r\nlast\r\n")])
    const result = await importOf(h(), csv, "text/csv")
    expect(result.operation.error).toMatchObject({ code: "validation_failed", field: "file_id", reason: "line_bytes_exceeded" })
    // Only the row before the long line could have been read; the enumeration stopped at the cap.
    expect(result.operation.progress.total).toBeLessThanOrEqual(1)
    expect(result.imp.status).toBe("failed")
  })

  it("a JSON line over line_bytes fails the import (line_bytes_exceeded); a long string within a line over cell_chars too", async () => {
    const line = Buffer.concat([Buffer.from('{"name":"'), Buffer.alloc(IMPORT_LIMITS.line_bytes, "b"), Buffer.from('"}\n')])
    expectRefused(await importOf(h(), line, "application/json"), "line_bytes")
    const cell = Buffer.from(JSON.stringify({ name: "c".repeat(IMPORT_LIMITS.cell_chars + 1) }) + "\n")
    expectRefused(await importOf(h(), cell, "application/json"), "cell_chars")
  })
})

/** An export of the sandbox's tags, finished; the text of its file. */
const exportedTags = async (h: Harness, options: Record<string, unknown>) => {
  const started = await api(h, h.test).post("/exports", { resource_type: "tags", format: "csv", ...options })
  if (started.status !== 202) throw new Error(`${started.status} ${started.text}`)
  for (let i = 0; i < 200; i++) {
    const exp = (await api(h, h.test).get(`/exports/${started.body.data.id}`)).body.data
    if (exp.status !== "queued") {
      expect(exp).toMatchObject({ status: "succeeded", raw_values: options.raw_values === true, byte_order_mark: options.byte_order_mark === true })
      const res = await fetch(`${h.baseUrl}/api/v3/files/${exp.file_id}/content`, { headers: { authorization: `Bearer ${h.test}` } })
      return Buffer.from(await res.arrayBuffer())
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error("the export did not finish")
}

eachStore("CSV formulas neutralized", (h) => {
  it("an export's CSV neutralizes formulas with a leading quote (raw_values: as they are), a BOM on demand; the import reads the values back", async () => {
    expect((await api(h(), h().test).post("/sandbox/resets")).status).toBeLessThan(300)
    // A quote and a trigger inside a text (not at its start) are text: written as they are.
    const names = ["=1+1", "+cmd", "-x", "@SUM(A1)", "'=quoted", "'plain quote", "plain", "x'=y"]
    for (const name of names) expect((await api(h(), h().test).post("/tags", { name })).status).toBe(201)
    const neutral = await exportedTags(h(), { byte_order_mark: true })
    expect([...neutral.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf])
    const text = neutral.toString("utf8")
    for (const cell of ["'=1+1", "'+cmd", "'-x", "'@SUM(A1)", "''=quoted", "'plain quote", "plain", "x'=y"]) expect(text).toContain(`,${cell},`)
    for (const formula of [",=1+1,", ",+cmd,", ",-x,", ",@SUM(A1),"]) expect(text).not.toContain(formula)
    const raw = (await exportedTags(h(), { raw_values: true })).toString("utf8")
    expect(raw.charCodeAt(0)).not.toBe(0xfeff)
    for (const name of names) expect(raw).toContain(`,${name},`)
    // The neutralized file, BOM and all, imported into the emptied sandbox: the same names.
    expect((await api(h(), h().test).post("/sandbox/resets")).status).toBeLessThan(300)
    const done = await importOf(h(), neutral, "text/csv", "tags", h().test)
    expect(done.imp).toMatchObject({ status: "succeeded", rows: names.length })
    const tags = (await api(h(), h().test).get("/tags?limit=200")).body.data as Array<{ name: string }>
    expect(tags.map((t) => t.name).sort()).toEqual([...names].sort())
  })

  it("raw_values and byte_order_mark are CSV only: 422 validation_failed, reason csv_only, on each", async () => {
    const res = await api(h()).post("/exports", { resource_type: "tags", format: "jsonl", raw_values: true, byte_order_mark: true })
    expect(res.status).toBe(422)
    expect(res.body.error.code).toBe("validation_failed")
    expect(res.body.error.details).toEqual([
      expect.objectContaining({ field: "raw_values", reason: "csv_only" }),
      expect.objectContaining({ field: "byte_order_mark", reason: "csv_only" })
    ])
  })
})

eachStore("reserved names in imports", (h) => {
  it("__proto__, constructor, prototype as a mapping column (unknown_field) or field (reason reserved_name): 422 validation_failed on mapping.<column>", async () => {
    const fileId = await upload(h(), Buffer.from("name\r\nx\r\n"), "text/csv")
    // Written as raw JSON: an object literal's `__proto__` would not be a key.
    const res = await h().request("POST", "/api/v3/imports", {
      secret: h().live,
      raw: `{"file_id":"${fileId}","target":"tags","mapping":{"__proto__":"name","name":"constructor","other":"custom_fields.prototype"}}`,
      headers: { "content-type": "application/json" }
    })
    expect(res.status).toBe(422)
    expect(res.body.error.code).toBe("validation_failed")
    const fields = (res.body.error.details as Array<{ field: string; code: string; reason?: string }>).map((d) => [d.field, d.code, d.reason])
    // A reserved column is a key the mapping cannot hold; a reserved field a value it refuses.
    expect(fields).toEqual(
      expect.arrayContaining([
        ["mapping.__proto__", "unknown_field", undefined],
        ["mapping.name", "invalid_value", "reserved_name"],
        ["mapping.other", "invalid_value", "reserved_name"]
      ])
    )
  })

  it("a JSON line's __proto__ (or a nested constructor) fails its row on that field, reason reserved_name; a CSV column named prototype too", async () => {
    const lines = ['{"name":"reserved-ok-' + Date.now() + '"}', '{"__proto__":{"name":"x"},"name":"y"}', '{"name":"z","custom_fields":{"constructor":"c"}}'].join("\n")
    const done = await importOf(h(), Buffer.from(lines), "application/json")
    expect(done.imp).toMatchObject({ status: "succeeded", rows: 3, valid_rows: 1, failed_rows: 2 })
    const items = (await api(h()).get(`/operations/${done.operation.id}/items`)).body.data as Array<Record<string, any>>
    const byKey = new Map(items.map((item) => [item.key, item]))
    expect(byKey.get("2")!.error).toMatchObject({ code: "validation_failed", field: "__proto__", reason: "reserved_name" })
    expect(byKey.get("3")!.error).toMatchObject({ code: "validation_failed", field: "custom_fields.constructor", reason: "reserved_name" })
    const csv = await importOf(h(), Buffer.from("name,prototype\r\nreserved-csv,1\r\n"), "text/csv")
    const [row] = (await api(h()).get(`/operations/${csv.operation.id}/items`)).body.data as Array<Record<string, any>>
    expect(row!.error).toMatchObject({ code: "validation_failed", field: "prototype", reason: "reserved_name" })
  })
})

eachStore("bounded runs of an operation", (h) => {
  it("an operation whose runs keep failing is not retried forever: the run after the last fails it (internal_error, run_attempts_exhausted)", async () => {
    const done = await importOf(h(), Buffer.from(JSON.stringify({ name: `budget-${Date.now()}` }) + "\n"), "application/json")
    expect(done.imp.status).toBe("succeeded")
    // As if its last allowed run had died (the lease ran out long ago) with its enumeration unfinished.
    const tenant = { accountId: h().account.account.id, environment: "production" as const }
    await h().patchRecord(tenant, "import", done.imp.id, { status: "running", completed_at: null })
    await h().patchRecord(tenant, "operation", done.operation.id, {
      status: "running",
      attempt: { number: MAX_OPERATION_RUNS, status: "running" },
      runs: MAX_OPERATION_RUNS,
      enumerated: false,
      finished_at: null,
      lease_owner: "worker_dead",
      lease_until: 0
    })
    let operation: Record<string, any> = {}
    for (let i = 0; i < 100 && operation.status !== "failed"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      operation = (await api(h()).get(`/operations/${done.operation.id}`)).body.data
    }
    expect(operation).toMatchObject({ status: "failed", attempt: { number: MAX_OPERATION_RUNS + 1, status: "failed" } })
    expect(operation.error).toMatchObject({ code: "internal_error", reason: "run_attempts_exhausted" })
    expect((await api(h()).get(`/imports/${done.imp.id}`)).body.data).toMatchObject({ status: "failed" })
  })
})

eachStore("a resumption starts the retry budget over", (h) => {
  it("an operation that used its runs, resumed by the client, runs again", async () => {
    const name = `resume-budget-${Date.now()}`
    const done = await importOf(h(), Buffer.from(JSON.stringify({ name }) + "\n"), "application/json")
    expect(done.imp.status).toBe("succeeded")
    // As if its only row had failed by an outage on the last run the budget allowed.
    const [item] = (await api(h()).get(`/operations/${done.operation.id}/items`)).body.data as Array<Record<string, any>>
    expect((await api(h()).del(`/tags/${item!.result.id}`)).status).toBeLessThan(300)
    const tenant = { accountId: h().account.account.id, environment: "production" as const }
    const outage = { code: "storage_unavailable", message: "The storage is unavailable.", field: null, reason: null, resource_id: null }
    await h().patchRecord(tenant, "operation_item", item!.id, { status: "failed", error: outage, result: null })
    await h().patchRecord(tenant, "operation", done.operation.id, {
      status: "failed",
      attempt: { number: MAX_OPERATION_RUNS, status: "failed" },
      runs: MAX_OPERATION_RUNS,
      progress: { done: 0, failed: 1, total: 1 },
      error: outage
    })
    expect((await api(h()).post(`/operations/${done.operation.id}/resumptions`)).status).toBe(200)
    let operation: Record<string, any> = {}
    for (let i = 0; i < 100 && !["succeeded", "failed"].includes(operation.status); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      operation = (await api(h()).get(`/operations/${done.operation.id}`)).body.data
    }
    expect(operation).toMatchObject({ status: "succeeded", error: null, progress: { done: 1, failed: 0 } })
  })
})

eachStore(
  "cancellation in short transactions",
  (h) => {
    it(`a queued operation of 1,000 items is canceled by its worker ${CANCEL_PAGE} items per unit of work, never in one`, async () => {
      const items = Array.from({ length: 1000 }, (_, i) => ({ key: `k${i}`, name: `never-${Date.now()}-${i}` }))
      const started = await api(h()).post("/operations", { type: "tags.create", items })
      expect(started.status).toBe(202)
      const asked = await api(h()).post(`/operations/${started.body.data.id}/cancellations`)
      expect(asked.status).toBe(200)
      // Too many items for the request's own unit of work: the request only asks.
      expect(asked.body.data).toMatchObject({ status: "queued", cancellation_requested: true })
      // The worker's pass, with its units of work counted: the items each one cancels.
      const perUnit = await h().runUseCase(
        Effect.gen(function* () {
          const records = yield* Records
          const uow = yield* UnitOfWork
          const counts: Array<number> = []
          let depth = 0
          let current = 0
          const counting = {
            transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
              Effect.suspend(() => {
                if (depth++ === 0) current = 0
                return uow.transaction(effect).pipe(
                  Effect.ensuring(
                    Effect.sync(() => {
                      if (--depth === 0) counts.push(current)
                    })
                  )
                )
              })
          }
          const countingRecords = {
            ...records,
            update: ((tenant, type, id, data, options) => {
              if (type === "operation_item" && data.status === "canceled") current++
              return records.update(tenant, type, id, data, options)
            }) as typeof records.update
          }
          yield* runDueOperations().pipe(Effect.provideService(UnitOfWork, counting), Effect.provideService(Records, countingRecords))
          return counts
        })
      )
      expect(perUnit.reduce((a, b) => a + b, 0)).toBe(1000)
      expect(Math.max(...perUnit)).toBeLessThanOrEqual(CANCEL_PAGE)
      const operation = (await api(h()).get(`/operations/${started.body.data.id}`)).body.data
      expect(operation).toMatchObject({ status: "canceled", progress: { done: 0, total: 1000 } })
      const page = (await api(h()).get(`/operations/${started.body.data.id}/items?limit=200`)).body.data as Array<{ status: string }>
      expect(page.every((item) => item.status === "canceled")).toBe(true)
    })
  },
  { workers: false }
)
