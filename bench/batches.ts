/**
 * Batch throughput (issue 10): a `products.create` batch of `BENCH_ITEMS` items through
 * `POST /operations`, timed from the 202 to the operation's end, on the in-memory store and
 * on PostgreSQL (a fresh database on `DATABASE_URL`, dropped afterwards). The worker runs
 * `OPERATION_CHUNK_ITEMS` items per unit of work.
 *
 *   node --import tsx bench/batches.ts
 *   BENCH_ITEMS=1000 BENCH_STORES=postgresql node --import tsx bench/batches.ts
 */
import { makeNodeListener } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { Effect, Exit, Scope } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { freshDatabase } from "./pg.js"

const ITEMS = Number(process.env["BENCH_ITEMS"] ?? 1000)
const stores = (process.env["BENCH_STORES"] ?? "memory,postgresql").split(",")

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
  const items = Array.from({ length: ITEMS }, (_, i) => ({ key: `p${i}`, format: "course", name: `Product ${i}`, showcase_id: showcase }))
  const started = performance.now()
  const operation = (await call("POST", "/operations", { type: "products.create", items })).data
  let status = String(operation.status)
  while (status === "queued" || status === "running") {
    await new Promise((r) => setTimeout(r, 100))
    status = String((await call("GET", `/operations/${operation.id}`)).data.status)
  }
  const seconds = (performance.now() - started) / 1000
  console.log(`${store}: ${ITEMS} products.create items ${status} in ${seconds.toFixed(1)} s: ${Math.round(ITEMS / seconds)} items/s`)
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await app.dispose()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}

for (const store of stores) await run(store)
