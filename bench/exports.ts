/**
 * Exports at scale (issue 16: "streamed from the store, never held whole in memory"). A server
 * child process runs the real app on the in-memory record store and the local file storage;
 * this process fills it with `BENCH_ROWS` users (default 100,000, through batches of 1,000),
 * then measures in the same run:
 *
 * - the baseline: reading the same users through `GET /users?limit=200`, page after page (the
 *   list route over the same store and indexes);
 * - a JSON lines export and a CSV export of them: from `POST /exports` to `succeeded`, in rows
 *   per second, against the baseline's; the server's resident memory (VmRSS, every 50 ms)
 *   before each export and its peak during it.
 *
 * `BENCH_STORE=postgresql` runs the server on a fresh database on `DATABASE_URL` (the local
 * server by default), dropped afterwards.
 *
 *   node --import tsx bench/exports.ts                  # 100,000 users, in-memory records
 *   BENCH_ROWS=20000 node --import tsx bench/exports.ts
 *   BENCH_STORE=postgresql node --import tsx bench/exports.ts
 */
import { fork } from "node:child_process"
import { serveBenchAccount } from "./shared.js"
import { readFileSync } from "node:fs"
import { request } from "node:http"

const MIB = 1024 * 1024
const rows = Number(process.env["BENCH_ROWS"] ?? 100_000)

if (process.argv[2] === "--server") {
  const { mkdtempSync } = await import("node:fs")
  const { tmpdir } = await import("node:os")
  const { join } = await import("node:path")
  const { makeNodeListener } = await import("@syllabus/http")
  const { MemoryStore } = await import("@syllabus/memory")
  const { LocalFileStorage } = await import("@syllabus/storage")
  const { Effect, Exit, Scope } = await import("effect")
  const directory = mkdtempSync(join(tmpdir(), "syllabus-export-bench-"))
  const scope = Effect.runSync(Scope.make())
  let store = MemoryStore
  if (process.env["BENCH_STORE"] === "postgresql") {
    const { pgLayer } = await import("@syllabus/pg")
    const { freshDatabase } = await import("./pg.js")
    store = pgLayer((await Effect.runPromise(Scope.extend(freshDatabase, scope))).url) as never
  }
  const app = await makeNodeListener({ store, storage: LocalFileStorage({ directory }), rateLimits: "off" })
  await serveBenchAccount(app)
  process.on("message", async () => {
    const { rmSync } = await import("node:fs")
    // The app (and its workers) first, then its database.
    await app.dispose()
    rmSync(directory, { recursive: true, force: true })
    await Effect.runPromise(Scope.close(scope, Exit.void))
    process.exit(0)
  })
} else {
  const child = fork(new URL(import.meta.url).pathname, ["--server"], { execArgv: ["--import", "tsx"] })
  const ready = await new Promise<{ port: number; secret: string }>((resolve) => child.once("message", resolve as never))
  const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) * 1024
  let keys = 0

  const call = (method: string, path: string, body?: unknown) =>
    new Promise<{ status: number; json: any; bytes: number }>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body)
      const req = request(
        {
          host: "127.0.0.1",
          port: ready.port,
          method,
          path: `/api/v3${path}`,
          headers: {
            authorization: `Bearer ${ready.secret}`,
            ...(payload ? { "content-type": "application/json" } : {}),
            ...(method === "POST" ? { "idempotency-key": `bench-${++keys}` } : {})
          }
        },
        (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (d: Buffer) => chunks.push(d))
          res.on("end", () => {
            const text = Buffer.concat(chunks)
            const json = (res.headers["content-type"] ?? "").startsWith("application/json") ? JSON.parse(text.toString("utf8")) : undefined
            resolve({ status: res.statusCode ?? 0, json, bytes: text.length })
          })
        }
      )
      req.on("error", reject)
      req.end(payload)
    })
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

  // The users, 1,000 a batch.
  const seedStarted = Date.now()
  for (let start = 0; start < rows; start += 1000) {
    const items = Array.from({ length: Math.min(1000, rows - start) }, (_, i) => ({
      key: `u${start + i}`,
      name: `User ${start + i}, "bench"`,
      email: `user${start + i}@bench.example`,
      document: String(100_000_000 + start + i),
      custom_fields: {}
    }))
    const batch = await call("POST", "/operations", { type: "users.create", items })
    if (batch.status !== 202) throw new Error(`batch: ${batch.status} ${JSON.stringify(batch.json)}`)
    for (;;) {
      const op = (await call("GET", `/operations/${batch.json.data.id}`)).json.data
      if (op.status === "succeeded") break
      if (op.status === "failed") throw new Error(`batch failed: ${JSON.stringify(op.error)}`)
      await sleep(50)
    }
  }
  console.log(`seeded ${rows} users in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s`)

  // Baseline: the list route, page after page.
  const listStarted = Date.now()
  let listed = 0
  let cursor: string | null = null
  do {
    const page = await call("GET", `/users?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)
    listed += page.json.data.length
    cursor = page.json.page.next_cursor
  } while (cursor)
  const listSeconds = (Date.now() - listStarted) / 1000
  if (listed !== rows) throw new Error(`listed ${listed} of ${rows}`)
  const listRate = rows / listSeconds
  console.log(`baseline GET /users?limit=200: ${rows} rows in ${listSeconds.toFixed(2)} s (${listRate.toFixed(0)} rows/s)`)

  for (const format of ["jsonl", "csv"] as const) {
    await sleep(500)
    const before = rss()
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50)
    const started = Date.now()
    const start = await call("POST", "/exports", { resource_type: "users", format })
    if (start.status !== 202) throw new Error(`export: ${start.status} ${JSON.stringify(start.json)}`)
    let done: any
    for (;;) {
      done = (await call("GET", `/exports/${start.json.data.id}`)).json.data
      if (done.status !== "queued") break
      await sleep(20)
    }
    const seconds = (Date.now() - started) / 1000
    clearInterval(sampler)
    peak = Math.max(peak, rss())
    if (done.status !== "succeeded" || done.row_count !== rows) throw new Error(`export ended ${JSON.stringify(done)}`)
    const content = await call("GET", `/files/${done.file_id}/content`)
    if (content.bytes !== done.size) throw new Error(`downloaded ${content.bytes} of ${done.size} bytes`)
    const rate = rows / seconds
    console.log(
      `export ${format}: ${rows} rows, ${(done.size / MIB).toFixed(1)} MiB in ${seconds.toFixed(2)} s (${rate.toFixed(0)} rows/s, ${(rate / listRate).toFixed(2)} × the list route); ` +
        `server RSS ${(before / MIB).toFixed(0)} MiB before, peak ${(peak / MIB).toFixed(0)} MiB (+${((peak - before) / MIB).toFixed(0)} MiB)`
    )
  }
  child.send("stop")
}
