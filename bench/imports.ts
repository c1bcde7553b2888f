/**
 * Imports (issue 16): a CSV imported through `POST /imports`, timed from the 202 to the import's
 * end, with the server's resident memory sampled all along. A server child process runs the real
 * app (its operations worker included) on PostgreSQL (a fresh database on `DATABASE_URL`,
 * dropped afterwards; `BENCH_STORE=memory` for the in-memory store, whose records themselves
 * grow memory) and the local file storage; this process generates the CSV on the fly (never
 * whole in memory), uploads it part by part, starts the import and polls it.
 *
 * Two figures, as the issue asks:
 * - throughput: `IMPORT_ROWS` rows (default 1,000,000) of users (`name,email`), rows per second
 *   from the 202 to the end (reading the file, recording an item per row, running each row's
 *   create), and the baseline of the same run: a `users.create` batch of 1,000 items through
 *   `POST /operations` (the same writes, items given in the request), per item.
 * - memory: with `IMPORT_PAD_BYTES`, each row carries an unmapped column of that many bytes, so
 *   a file of `IMPORT_MIB` MiB (e.g. 1024) streams through the parser with few rows: the server's
 *   RSS before, its peak while the worker reads the file and records the rows (before any row
 *   runs: the parse's own memory), its peak during the whole import (the in-memory store's
 *   records included), and file size / growth. Compare two sizes for flatness.
 *
 *   node --import tsx bench/imports.ts                                            # 1,000,000 users
 *   IMPORT_ROWS=100000 node --import tsx bench/imports.ts
 *   IMPORT_MIB=1024 IMPORT_PAD_BYTES=65536 node --import tsx bench/imports.ts      # a 1 GiB file
 */
import { fork } from "node:child_process"
import { jsonCaller, uploadBlocks } from "./shared.js"
import { readFileSync } from "node:fs"

const MIB = 1024 * 1024
const padBytes = Number(process.env["IMPORT_PAD_BYTES"] ?? 0)
const rowsWanted = process.env["IMPORT_MIB"]
  ? Math.ceil((Number(process.env["IMPORT_MIB"]) * MIB) / (padBytes + 48))
  : Number(process.env["IMPORT_ROWS"] ?? 1_000_000)

if (process.argv[2] === "--server") {
  const { serveFileBench } = await import("./file-server.js")
  await serveFileBench(process.env["BENCH_STORE"] === "memory" ? "memory" : "postgresql", "import")
} else {
  const child = fork(new URL(import.meta.url).pathname, ["--server"], { execArgv: ["--import", "tsx"] })
  const ready = await new Promise<{ port: number; secret: string }>((resolve) => child.once("message", resolve as never))
  const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) * 1024
  const base = `http://127.0.0.1:${ready.port}/api/v3`
  const call = jsonCaller(base, ready.secret)

  // The CSV, generated in 1 MiB-ish blocks of whole rows, the same bytes each time it is read.
  const padding = "x".repeat(padBytes)
  const header = padBytes > 0 ? "name,email,note\n" : "name,email\n"
  const row = (i: number) => (padBytes > 0 ? `User ${i},u${i}@bench.example,${padding}\n` : `User ${i},u${i}@bench.example\n`)
  function* blocks(): Generator<Buffer> {
    let lines: Array<string> = [header]
    let bytes = header.length
    for (let i = 0; i < rowsWanted; i++) {
      const line = row(i)
      lines.push(line)
      bytes += line.length
      if (bytes >= MIB) {
        yield Buffer.from(lines.join(""))
        lines = []
        bytes = 0
      }
    }
    if (lines.length > 0) yield Buffer.from(lines.join(""))
  }
  const { id: fileId, size } = await uploadBlocks(ready.port, ready.secret, { filename: "users.csv", contentType: "text/csv", purpose: "import" }, blocks)

  // The baseline of this run: a batch of 1,000 user creates, the same writes given in the request.
  const batchItems = Array.from({ length: 1000 }, (_, i) => ({ key: `b${i}`, name: `Batch ${i}`, email: `b${i}@batch.example` }))
  const batchStarted = performance.now()
  const batch = await call("POST", "/operations", { type: "users.create", items: batchItems })
  for (;;) {
    const op = (await call("GET", `/operations/${batch.json.data.id}`)).json.data
    if (op.status !== "queued" && op.status !== "running") break
    await new Promise((r) => setTimeout(r, 50))
  }
  const batchPerItemMs = (performance.now() - batchStarted) / 1000

  await new Promise((r) => setTimeout(r, 500))
  const before = rss()
  let peak = before
  // While no row has run yet, the worker is reading the file and recording its rows: the parse's own memory.
  let reading = true
  let peakReading = before
  const sampler = setInterval(() => {
    const now = rss()
    peak = Math.max(peak, now)
    if (reading) peakReading = Math.max(peakReading, now)
  }, 50)
  const started = performance.now()
  const created = await call("POST", "/imports", { file_id: fileId, target: "users", mapping: { name: "name", email: "email" } })
  if (created.status !== 202) throw new Error(`import: ${created.status} ${JSON.stringify(created.json)}`)
  let last = created.json.data
  let lastReport = performance.now()
  while (last.completed_at === null) {
    await new Promise((r) => setTimeout(r, 500))
    last = (await call("GET", `/imports/${last.id}`)).json.data
    if (last.valid_rows + last.failed_rows > 0) reading = false
    if (performance.now() - lastReport > 30_000) {
      lastReport = performance.now()
      console.log(`  … ${last.rows} rows read, ${last.valid_rows} written, ${((performance.now() - started) / 1000).toFixed(0)} s, RSS ${(rss() / MIB).toFixed(0)} MiB`)
    }
  }
  clearInterval(sampler)
  const seconds = (performance.now() - started) / 1000
  const mib = (n: number) => (n / MIB).toFixed(0)
  console.log(
    `store ${process.env["BENCH_STORE"] ?? "postgresql"}: import of ${last.rows} rows (${mib(size)} MiB of CSV), status ${last.status}, ${last.valid_rows} written, ${last.failed_rows} failed: ${seconds.toFixed(1)} s, ${(last.rows / seconds).toFixed(0)} rows/s, ${((seconds * 1000) / last.rows).toFixed(2)} ms per row`
  )
  console.log(`baseline: a users.create batch of 1,000 items, ${batchPerItemMs.toFixed(2)} ms per item; import / batch per row = ${((seconds * 1000) / last.rows / batchPerItemMs).toFixed(2)}`)
  console.log(`server RSS before ${mib(before)} MiB, peak while reading the file (before any row ran) ${mib(peakReading)} MiB, growth ${mib(peakReading - before)} MiB`)
  console.log(`server RSS before ${mib(before)} MiB, peak during the import ${mib(peak)} MiB, growth ${mib(peak - before)} MiB (${(peak / before).toFixed(2)}x); file size / growth = ${(size / Math.max(1, peak - before)).toFixed(1)}`)
  child.send("stop")
}
