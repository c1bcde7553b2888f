import { makeNodeListener } from "@syllabus/http"
import { pgLayer } from "@syllabus/pg"
import { Effect, Exit, Scope } from "effect"
import { createRequire } from "node:module"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { freshDatabase } from "./pg.js"
const log: Array<string> = []
let on = false
const pg = createRequire(import.meta.resolve("@effect/sql-pg"))("pg") as any
const query = pg.Client.prototype.query
pg.Client.prototype.query = function(this: any, ...args: Array<any>) {
  const first = args[0]
  const text = (typeof first === "string" ? first : first?.text ?? "?").replace(/\s+/g, " ").slice(0, 110)
  const params = typeof first === "string" ? args[1] : first?.values
  const t0 = performance.now()
  const cb = args.at(-1)
  if (on && typeof cb === "function") args[args.length - 1] = (...r: any[]) => { log.push(`${(t0 - base0).toFixed(2).padStart(7)} +${(performance.now() - t0).toFixed(2)} [${this.processID}] ${text} ${Array.isArray(params) ? JSON.stringify(params.slice(0, 4)).slice(0, 80) : ""}`); return cb(...r) }
  return query.apply(this, args)
}
let base0 = 0
const scope = Effect.runSync(Scope.make())
const app = await makeNodeListener({ store: pgLayer((await Effect.runPromise(Scope.extend(freshDatabase, scope))).url), rateLimits: "off" })
const opened = await app.openAccount({ name: "B", subdomain: `b${Date.now()}`, administrator: { email: "b@b.example", name: "B", password: "bench password" } })
const secret = opened.credentials.find((c: any) => c.environment === "production")!.secret
const server = createServer(app.listener)
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3`
const mode = process.argv[2] ?? "create"
const sc = await (await fetch(url + "/showcases", { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": "sc" }, body: JSON.stringify({ name: "S" }) })).json() as any
for (let i = 0; i < 4; i++) {
  if (i === 3) { on = true; base0 = performance.now() }
  const res = mode === "product" ? await fetch(url + "/products", { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": `p${i}` }, body: JSON.stringify({ format: "course", name: `p${i}`, showcase_id: sc.data.id }) }) : mode === "create" ? await fetch(url + "/credentials", { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": `k${i}` }, body: JSON.stringify({ name: `c${i}`, purpose: "b" }) }) : await fetch(url + "/credentials/current", { headers: { authorization: `Bearer ${secret}` } })
  await res.text()
  if (i === 3) console.log("status", res.status, "total", (performance.now() - base0).toFixed(2))
}
await new Promise((r) => setTimeout(r, 300))
on = false
console.log(log.join("\n"))
server.close(); await app.dispose(); await Effect.runPromise(Scope.close(scope, Exit.void))
