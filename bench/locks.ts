/**
 * What one tenant's largest operation leaves to the others on PostgreSQL (issue 24): an import
 * of `LOCKS_ROWS` users (default 500,000, the cap of one file) is recorded, run for
 * `LOCKS_RUN_S` seconds, then canceled (its queued items canceled a page per unit of work),
 * while another tenant of the same database (the account's sandbox) creates products
 * without pause, and the cluster's locks are sampled every 200 ms:
 *
 * - the predicate locks (`SIReadLock` in `pg_locks`), shared by every database of the cluster:
 *   their most at one time;
 * - the oldest open transaction of the server's pools (requests and workers): its age at most;
 * - the other tenant's writes: how many, their statuses, their p50/p99.
 *
 *   node --import tsx bench/locks.ts
 *   LOCKS_ROWS=100000 LOCKS_RUN_S=20 node --import tsx bench/locks.ts
 */
import { fork } from "node:child_process"
import { createRequire } from "node:module"
import { defaultDatabaseUrl, jsonCaller, uploadBlocks } from "./shared.js"

const ROWS = Number(process.env["LOCKS_ROWS"] ?? 500_000)
const RUN_S = Number(process.env["LOCKS_RUN_S"] ?? 60)

if (process.argv[2] === "--server") {
  const { serveFileBench } = await import("./file-server.js")
  await serveFileBench("postgresql", "locks")
} else {
  const child = fork(new URL(import.meta.url).pathname, ["--server"], { execArgv: ["--import", "tsx"] })
  const ready = await new Promise<{ port: number; secret: string; sandboxSecret: string; database: string }>((resolve) =>
    child.once("message", resolve as never)
  )
  const base = `http://127.0.0.1:${ready.port}/api/v3`
  const call = jsonCaller(base, ready.secret)
  const other = jsonCaller(base, ready.sandboxSecret)

  interface MonitorClient {
    connect(): Promise<void>
    query<R>(text: string, values?: ReadonlyArray<unknown>): Promise<{ readonly rows: ReadonlyArray<R> }>
    end(): Promise<void>
  }
  const pg = createRequire(import.meta.resolve("@syllabus/pg"))("pg") as { readonly Client: new (config: { connectionString: string }) => MonitorClient }
  const monitor = new pg.Client({ connectionString: process.env["DATABASE_URL"] ?? defaultDatabaseUrl })
  await monitor.connect()

  function* csv(): Generator<Buffer> {
    let lines: Array<string> = ["name,email\n"]
    for (let i = 0; i < ROWS; i++) {
      lines.push(`User ${i},u${i}@bench.example\n`)
      if (lines.length >= 20_000) {
        yield Buffer.from(lines.join(""))
        lines = []
      }
    }
    if (lines.length > 0) yield Buffer.from(lines.join(""))
  }
  const { id: fileId } = await uploadBlocks(ready.port, ready.secret, { filename: "users.csv", contentType: "text/csv", purpose: "import" }, csv)

  // The cluster's locks and the server's oldest transaction, every 200 ms.
  const samples: Array<{ readonly at: number; readonly predicate: number; readonly oldestMs: number }> = []
  let sampling = true
  const started = performance.now()
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await monitor.query<{ predicate: string; oldest_ms: string | null }>(`
        SELECT (SELECT count(*) FROM pg_locks WHERE mode = 'SIReadLock') AS predicate,
               (SELECT max(extract(epoch FROM now() - xact_start) * 1000) FROM pg_stat_activity
                WHERE datname = $1 AND application_name LIKE 'syllabus%' AND xact_start IS NOT NULL) AS oldest_ms`, [ready.database])
      samples.push({ at: performance.now() - started, predicate: Number(rows[0]!.predicate), oldestMs: Number(rows[0]!.oldest_ms ?? 0) })
      await new Promise((r) => setTimeout(r, 200))
    }
  })()

  // The other tenant writes all along: four clients, each creating products one after another.
  const showcase = await other("POST", "/showcases", { name: "Other tenant" })
  const writes: Array<{ readonly status: number; readonly ms: number }> = []
  let writing = true
  const writer = async (n: number) => {
    for (let i = 0; writing; i++) {
      const t = performance.now()
      const res = await other("POST", "/products", { format: "course", name: `Other ${n}.${i}`, showcase_id: showcase.json.data.id })
      writes.push({ status: res.status, ms: performance.now() - t })
    }
  }
  const writers = Promise.all([0, 1, 2, 3].map(writer))

  const imported = await call("POST", "/imports", { file_id: fileId, target: "users", mapping: { name: "name", email: "email" } })
  if (imported.status !== 202) throw new Error(`import: ${imported.status} ${JSON.stringify(imported.json)}`)
  const importId = imported.json.data.id
  const operationId = imported.json.data.operation_id
  const read = async () => (await call("GET", `/imports/${importId}`)).json.data
  let state = await read()
  // Recorded: every row read into an item; then the run for RUN_S seconds.
  while (state.rows < ROWS && state.completed_at === null) {
    await new Promise((r) => setTimeout(r, 1000))
    state = await read()
  }
  const recordedAt = performance.now() - started
  console.log(`recorded ${state.rows} rows in ${(recordedAt / 1000).toFixed(1)} s`)
  await new Promise((r) => setTimeout(r, RUN_S * 1000))
  state = await read()
  console.log(`ran ${RUN_S} s: ${state.valid_rows} written, ${state.failed_rows} failed`)
  const cancel = await call("POST", `/operations/${operationId}/cancellations`)
  console.log(`cancel: ${cancel.status}`)
  const canceledAt = performance.now() - started
  while (state.completed_at === null) {
    await new Promise((r) => setTimeout(r, 1000))
    state = await read()
  }
  const endedAt = performance.now() - started
  console.log(`ended ${state.status} ${((endedAt - canceledAt) / 1000).toFixed(1)} s after the cancellation`)
  writing = false
  await writers
  sampling = false
  await sampler
  await monitor.end()

  const phase = (from: number, to: number) => samples.filter((s) => s.at >= from && s.at < to)
  const most = (list: ReadonlyArray<{ predicate: number; oldestMs: number }>) => ({
    predicate: Math.max(0, ...list.map((s) => s.predicate)),
    oldestMs: Math.round(Math.max(0, ...list.map((s) => s.oldestMs)))
  })
  console.log("the cluster's predicate locks (most at one time) and the server's oldest open transaction (ms), by phase:")
  console.log(`  recording ${JSON.stringify(most(phase(0, recordedAt)))}`)
  console.log(`  running   ${JSON.stringify(most(phase(recordedAt, canceledAt)))}`)
  console.log(`  canceling ${JSON.stringify(most(phase(canceledAt, endedAt)))}`)
  const statuses: Record<string, number> = {}
  for (const w of writes) statuses[w.status] = (statuses[w.status] ?? 0) + 1
  const sorted = writes.map((w) => w.ms).sort((a, b) => a - b)
  const pct = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0)
  console.log(`the other tenant: ${writes.length} product creates, statuses ${JSON.stringify(statuses)}, p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms`)
  child.send("stop")
}
