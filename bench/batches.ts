/**
 * Batch throughput (issue 10): a `products.create` batch of `BENCH_ITEMS` items through
 * `POST /operations`, timed from the 202 to the operation's end, on the in-memory store and
 * on PostgreSQL (a fresh database on `DATABASE_URL`, dropped afterwards). The worker runs
 * `OPERATION_CHUNK_ITEMS` items per unit of work.
 *
 *   node --import tsx bench/batches.ts
 *   BENCH_ITEMS=1000 BENCH_STORES=postgresql node --import tsx bench/batches.ts
 *   BENCH_COUNT_SQL=1 BENCH_ITEMS=100 BENCH_STORES=postgresql node --import tsx bench/batches.ts   # SQL per item
 *   BENCH_ROUNDS=5 BENCH_STORES=memory node --cpu-prof --import tsx bench/batches.ts               # a profile of the worker, not of the start
 */
import { makeNodeListener } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { Effect, Exit, Scope } from "effect"
import { createServer } from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { freshDatabase } from "./pg.js"

const ITEMS = Number(process.env["BENCH_ITEMS"] ?? 1000)
const stores = (process.env["BENCH_STORES"] ?? "memory,postgresql").split(",")
/** Batches one after another on the same server (each of new products): the first pays the warm-up. */
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 1)

/** With `BENCH_COUNT_SQL=1`: every statement the `pg` driver sends, by its first 100 characters, and the ms until its answer. */
const statements = new Map<string, number>()
const waited = new Map<string, number>()
if (process.env["BENCH_COUNT_SQL"] === "1") {
  const pg = createRequire(import.meta.resolve("@effect/sql-pg"))("pg") as {
    Client: { prototype: { query: (...args: Array<unknown>) => unknown } }
  }
  const query = pg.Client.prototype.query
  pg.Client.prototype.query = function(this: unknown, ...args: Array<unknown>) {
    const first = args[0] as string | { text?: string } | undefined
    const params = (typeof first === "string" ? args[1] : (first as { values?: unknown })?.values) as Array<unknown> | undefined
    // The record type: named in the text (`type = 'product'`), or the third parameter (an insert).
    const raw = typeof first === "string" ? first : (first?.text ?? "?")
    const named = /type = '([a-z_]+)'/.exec(raw)?.[1] ?? (Array.isArray(params) && typeof params[2] === "string" && /^[a-z_]+$/.test(params[2]) ? params[2] : undefined)
    const type = named === undefined ? "" : `[${named}] `
    const text = type + raw.replace(/\s+/g, " ").trim().slice(0, 90)
    statements.set(text, (statements.get(text) ?? 0) + 1)
    const callback = args.at(-1)
    if (typeof callback === "function") {
      const sent = performance.now()
      args[args.length - 1] = (...result: Array<unknown>) => {
        waited.set(text, (waited.get(text) ?? 0) + performance.now() - sent)
        return callback(...result)
      }
    }
    return query.apply(this, args)
  }
}

const run = async (store: string) => {
  const scope = Effect.runSync(Scope.make())
  const layer =
    store === "memory" ? MemoryStore : pgLayer((await Effect.runPromise(Scope.extend(freshDatabase, scope))).url)
  const app = await makeNodeListener({ store: layer, rateLimits: "off" })
  const opened = await app.openAccount({
    name: "Bench",
    subdomain: `bench${Date.now()}`,
    administrator: { email: "bench@bench.example", name: "Bench", password: "bench password" }
  })
  const secret = opened.credentials.find((c) => c.environment === "production")!.secret
  const server = createServer(app.listener)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3`
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": `k${Math.random()}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return (await res.json()) as { data: Record<string, unknown> }
  }
  const showcase = (await call("POST", "/showcases", { name: "Bench" })).data.id
  for (let round = 0; round < ROUNDS; round++) {
    const items = Array.from({ length: ITEMS }, (_, i) => ({ key: `r${round}p${i}`, format: "course", name: `Product ${round}.${i}`, showcase_id: showcase }))
    statements.clear()
    waited.clear()
    const started = performance.now()
    const operation = (await call("POST", "/operations", { type: "products.create", items })).data
    let status = String(operation.status)
    while (status === "queued" || status === "running") {
      await new Promise((r) => setTimeout(r, 100))
      status = String((await call("GET", `/operations/${operation.id}`)).data.status)
    }
    const seconds = (performance.now() - started) / 1000
    const label = ROUNDS === 1 ? store : `${store}, round ${round + 1}`
    console.log(`${label}: ${ITEMS} products.create items ${status} in ${seconds.toFixed(1)} s: ${Math.round(ITEMS / seconds)} items/s`)
    if (statements.size > 0) {
      const total = Array.from(statements.values()).reduce((a, b) => a + b, 0)
      console.log(`  SQL statements: ${(total / ITEMS).toFixed(1)} per item (polls of the status included)`)
      console.log("  per item  ms each  statement")
      for (const [text, n] of [...statements].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
        const ms = (waited.get(text) ?? 0) / n
        console.log(`  ${(n / ITEMS).toFixed(2).padStart(8)}  ${ms.toFixed(2).padStart(7)}  ${text}`)
      }
    }
  }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await app.dispose()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}

for (const store of stores) await run(store)
