/**
 * The request log of the memory store (issue 25): what one call's entry costs to append, and a
 * page of `GET /requests?credential_id=…` on a log of `--entries` entries, in CPU per operation.
 * The log is kept in a structure made for an append-only stream (`packages/memory/src/log.ts`);
 * run it on an older commit (a git worktree) to compare with the bucket it replaced.
 *
 *   node --import tsx bench/request-log.ts [--entries 100000]
 */
import { Records, REQUEST_TYPE } from "@syllabus/core"
import { MemoryStore } from "@syllabus/memory"
import { Effect } from "effect"
import { parseArgs } from "node:util"

const { values } = parseArgs({ args: process.argv.slice(2).filter((arg) => arg !== "--"), options: { entries: { type: "string", default: "100000" } } })
const N = Number(values.entries)
const WARM = 20_000
const PAGES = 1_000

const tenant = { accountId: "acc_bench", environment: "production" } as const

/** The entry of call `i`, as the pipeline writes it (IDs in creation order, seven credentials). */
const entryOf = (i: number) => ({
  object: "request",
  id: `req_${String(i).padStart(9, "0")}`,
  method: "GET",
  path: "/credentials/current",
  operation_id: "credentials.current",
  status: 200,
  outcome: "success",
  error_code: null,
  credential_id: `crd_${i % 7}`,
  administrator_id: null,
  client_request_id: null,
  idempotency_key: null,
  idempotent_replayed: false,
  duration_ms: 1,
  environment: "production",
  created_at: new Date(1_700_000_000_000 + i).toISOString()
})

const cpuPer = (before: NodeJS.CpuUsage, count: number) => {
  const used = process.cpuUsage(before)
  return (used.user + used.system) / count
}

const program = Effect.gen(function* () {
  const records = yield* Records
  const entries = Array.from({ length: WARM + N }, (_, i) => entryOf(i))
  for (let i = 0; i < WARM; i++) yield* records.insert(tenant, REQUEST_TYPE, entries[i]!.id, entries[i]!)
  const appended = process.cpuUsage()
  for (let i = WARM; i < WARM + N; i++) yield* records.insert(tenant, REQUEST_TYPE, entries[i]!.id, entries[i]!)
  console.log(`append: ${cpuPer(appended, N).toFixed(1)} µs CPU per entry (${N.toLocaleString("en")} after ${WARM.toLocaleString("en")})`)
  const paged = process.cpuUsage()
  for (let i = 0; i < PAGES; i++) {
    yield* records.list(tenant, REQUEST_TYPE, {
      where: [{ field: "credential_id", op: "eq", value: `crd_${i % 7}` }],
      sort: { field: "id", kind: "text", direction: "desc" },
      limit: 25
    })
  }
  console.log(`page of 25 by credential, newest first: ${cpuPer(paged, PAGES).toFixed(1)} µs CPU`)
})

await Effect.runPromise(Effect.provide(program, MemoryStore))
