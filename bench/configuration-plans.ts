/**
 * Configuration plans (issue 23, finding 13): a plan of `PLAN_CHANGES` changes (default 9,005,
 * as in the finding: creates of one showcase, 9 products and 8,995 modules, at most 1,000 per
 * product as the manifest allows) computed by `POST /configuration/plans` and applied by
 * `POST /configuration/plans/{id}/applications`, on PostgreSQL (a fresh database on
 * `DATABASE_URL`, dropped afterwards) and the in-memory store. Figures: the plan's request,
 * the application's request (what the client waits for before its 202: the finding was a 503
 * after ~21 s), and the operation from the 202 to its end.
 *
 *   node --import tsx bench/configuration-plans.ts
 *   PLAN_CHANGES=2000 BENCH_STORES=postgresql node --import tsx bench/configuration-plans.ts
 *   PLAN_WAIT=0 node --import tsx bench/configuration-plans.ts     # the requests only, not the operation's run
 *   PLAN_SHAPE=updates PLAN_CHANGES=2002 node --import tsx bench/configuration-plans.ts
 *
 * `PLAN_SHAPE=updates`: the manifest is applied first (waited for), then planned again with
 * every module's description changed: the timed plan updates them all, so its application's
 * check reads every record the plan read (the shape where one read per change costs most).
 */
import { makeNodeListener } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { Effect, Exit, Scope } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { freshDatabase } from "./pg.js"
import { jsonCaller } from "./shared.js"

const CHANGES = Number(process.env["PLAN_CHANGES"] ?? 9005)
const stores = (process.env["BENCH_STORES"] ?? "postgresql,memory").split(",")

const run = async (store: string) => {
  const scope = Effect.runSync(Scope.make())
  const layer = store === "memory" ? MemoryStore : pgLayer((await Effect.runPromise(Scope.extend(freshDatabase, scope))).url)
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
  const call = jsonCaller(base, secret)
  const timed = async <A>(f: () => Promise<A>): Promise<[A, number]> => {
    const started = performance.now()
    const value = await f()
    return [value, (performance.now() - started) / 1000]
  }
  // One showcase, then products of up to 1,000 modules each: 1 + products + modules = CHANGES.
  const productCount = Math.max(1, Math.ceil((CHANGES - 1) / 1001))
  const moduleCount = CHANGES - 1 - productCount
  const products = Array.from({ length: productCount }, (_, p) => ({
    external_id: `bench-${p}`,
    name: `Bench ${p}`,
    format: "course",
    showcase: "Bench",
    modules: Array.from({ length: Math.min(1000, moduleCount - p * 1000) }, (_, m) => ({ name: `Module ${p}-${m}` }))
  }))
  const manifest = { showcases: [{ name: "Bench" }], products }
  if (process.env["PLAN_SHAPE"] === "updates") {
    const first = await call("POST", "/configuration/plans", { manifest })
    let operation = (await call("POST", `/configuration/plans/${first.json.data.id}/applications`)).json.data
    while (operation.status === "queued" || operation.status === "running") {
      await new Promise((r) => setTimeout(r, 250))
      operation = (await call("GET", `/operations/${operation.id}`)).json.data
    }
    if (operation.status !== "succeeded") throw new Error(`first application ${String(operation.status)}`)
    for (const product of products) for (const module of product.modules) Object.assign(module, { description: "changed" })
  }
  const [plan, planSeconds] = await timed(() => call("POST", "/configuration/plans", { manifest }))
  if (plan.status !== 201) throw new Error(`plan: ${plan.status} ${JSON.stringify(plan.json.error)}`)
  const [applied, applySeconds] = await timed(() => call("POST", `/configuration/plans/${plan.json.data.id}/applications`))
  console.log(`${store}: plan of ${CHANGES} changes ${plan.status} in ${planSeconds.toFixed(2)} s; application ${applied.status} ${applied.json.error?.code ?? ""} in ${applySeconds.toFixed(2)} s`)
  if (applied.status === 202 && process.env["PLAN_WAIT"] !== "0") {
  const started = performance.now()
  let operation = applied.json.data
  while (operation.status === "queued" || operation.status === "running") {
    await new Promise((r) => setTimeout(r, 250))
    operation = (await call("GET", `/operations/${operation.id}`)).json.data
  }
  const seconds = (performance.now() - started) / 1000
  console.log(`  operation ${operation.status} in ${seconds.toFixed(1)} s (${Math.round(CHANGES / seconds)} changes/s), progress ${JSON.stringify(operation.progress)}`)
  }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await app.dispose()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}

for (const store of stores) await run(store)
