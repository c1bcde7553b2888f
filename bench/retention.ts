/**
 * Retention of a stream on PostgreSQL: a request log past its time removed by dropping its
 * weeks (packages/pg/src/streams.ts), against the same rows removed row by row, in one run.
 *
 *   BENCH_ROWS=1000000 node --import tsx bench/retention.ts
 *
 * A fresh database, migrated with the whole release. Six weeks of request-log entries
 * (`BENCH_ROWS` in all, IDs of their time) go into their weeks; the same number with IDs no
 * clock made (so into the default partition, which retention prunes row by row, as every table
 * was before) are the baseline. Then `Records.prune` by `created_at` with the cutoff 30 days
 * back, called as the retention pass calls it (batches of 1,000 until a batch comes back short),
 * times each, and reads the size of the request log's partitions before and after.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { firstIdAt, Records, REQUEST_TYPE, RETENTION_BATCH, type Tenant } from "@syllabus/core"
import { pgLayer, syncStreamPartitions } from "@syllabus/pg"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { freshDatabase } from "./pg.js"

const ROWS = Number(process.env["BENCH_ROWS"] ?? 200_000)
const DAY_MS = 86_400_000
const WEEK_MS = 7 * DAY_MS
const tenant: Tenant = { accountId: "acc_retention", environment: "production" }

const program = Effect.gen(function*() {
  const { url } = yield* freshDatabase
  const context = yield* Layer.build(pgLayer(url, { background: false, timeouts: { statementMs: 120_000, queryMs: 180_000 } }))
  const records = Context.get(context, Records)
  const sql = Context.get(context, SqlClient.SqlClient)
  const now = Date.now()
  for (let week = 6; week >= 0; week -= 2) yield* Effect.provideService(syncStreamPartitions(now - week * WEEK_MS), SqlClient.SqlClient, sql)

  // Six weeks, newest first; the baseline's IDs sort in no week.
  const span = 42 * DAY_MS
  const rowAt = (n: number) => now - Math.floor((n / ROWS) * span)
  const loadStarted = performance.now()
  for (let start = 0; start < ROWS; start += 5_000) {
    const n = Math.min(5_000, ROWS - start)
    const chunk = Array.from({ length: n }, (_, i) => {
      const at = rowAt(start + i)
      return { at, data: { created_at: new Date(at).toISOString(), method: "GET", path: "/api/v3/credentials/current", status: 200 } }
    })
    yield* records.insertMany(tenant, REQUEST_TYPE, chunk.map((row, i) => ({ id: `${firstIdAt("request", row.at)}${String(start + i).padStart(7, "0")}`, data: row.data })))
    yield* records.insertMany(tenant, REQUEST_TYPE, chunk.map((row, i) => ({ id: `baseline_${String(start + i).padStart(9, "0")}`, data: row.data })))
  }
  yield* sql`ANALYZE records`
  console.log(`loaded ${ROWS.toLocaleString("en")} entries in weeks and as many in the default partition in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`)

  const sizes = sql<{ readonly relation: string; readonly rows: number; readonly mb: number }>`
    SELECT c.relname AS relation, c.reltuples::bigint AS rows, round(pg_total_relation_size(c.oid) / 1048576.0, 1) AS mb
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'records_t_request'::regclass ORDER BY 1`
  console.log("before:", JSON.stringify(yield* sizes))

  const before = new Date(now - 30 * DAY_MS).toISOString()
  // The pass as `pruneCreatedBefore` runs it: batches until one comes back short. Weeks first
  // (the first call drops them, then deletes the default partition's rows)...
  let calls = 0
  let removed = 0
  const started = performance.now()
  let firstCallMs = 0
  for (;;) {
    const t = performance.now()
    const n = yield* records.prune(REQUEST_TYPE, "created_at", before, RETENTION_BATCH)
    if (calls === 0) firstCallMs = performance.now() - t
    calls++
    removed += n
    if (n < RETENTION_BATCH) break
  }
  const totalMs = performance.now() - started
  console.log("after:", JSON.stringify(yield* sizes))
  const expectedPerSide = Array.from({ length: ROWS }, (_, n) => rowAt(n)).filter((at) => at < now - 30 * DAY_MS).length
  console.log(
    `prune: ${calls} calls, ${removed.toLocaleString("en")} counted as removed, ${(totalMs / 1000).toFixed(2)} s in all:\n` +
      `  the first call (the weeks past the cutoff detached and dropped, then one batch of ${RETENTION_BATCH} from the default partition): ${firstCallMs.toFixed(0)} ms\n` +
      `  the other ${calls - 1} calls (the baseline's rows past the cutoff deleted ${RETENTION_BATCH} at a time): ${((totalMs - firstCallMs) / 1000).toFixed(2)} s`
  )
  const left = yield* sql<{ readonly weeks: number; readonly baseline: number }>`
    SELECT count(*) FILTER (WHERE id NOT LIKE 'baseline_%')::int AS weeks, count(*) FILTER (WHERE id LIKE 'baseline_%')::int AS baseline
    FROM records WHERE type = ${REQUEST_TYPE}`
  console.log(`past the cutoff on each side: ${expectedPerSide.toLocaleString("en")}; left: ${JSON.stringify(left[0])} of ${ROWS.toLocaleString("en")} each`)
})

const scope = Effect.runSync(Scope.make())
await Effect.runPromise(Scope.extend(program, scope)).finally(() => Effect.runPromise(Scope.close(scope, Exit.void)))
