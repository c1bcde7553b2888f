/**
 * The anatomy of one request: what the pipeline does per request, counted rather than timed,
 * so the figures do not depend on how busy the machine is. For the bare Effect route and
 * the scenarios of bench/run.ts:
 *
 * - Effect instructions run and fibers started (a supervisor with op supervision on);
 * - tracing spans opened, by name;
 * - calls to the store ports, by port and method;
 * - SQL statements sent to PostgreSQL, by statement.
 *
 *   node --import tsx bench/anatomy.ts [--requests 200] [--no-pg] [--trace-sql]
 *
 * Requests go one at a time over a real socket to a `node:http` server in this process,
 * assembled as in bench/server.ts. Counting slows the server down: never time anything here.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Idempotency, openAccount, RateLimitStore, Records, UnitOfWork } from "@syllabus/core"
import { app, type StoreServices, syllabusLayer } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { Context, Effect, Exit, Layer, ManagedRuntime, RuntimeFlags, Scope, Supervisor, Tracer } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { parseArgs } from "node:util"
import { freshDatabase } from "./pg.js"
import { BASELINE_BODY, BASELINE_PATH } from "./shared.js"

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== "--"),
  options: {
    requests: { type: "string", default: "200" },
    "no-pg": { type: "boolean", default: false },
    // Every statement as it is sent, in order (with --requests 1: what one request sends, and where its transaction begins and ends).
    "trace-sql": { type: "boolean", default: false }
  }
})
const N = Number(values.requests)

// ---------------------------------------------------------------------------------------
// Counters

let counting = false
const tally = {
  instructions: 0,
  fibers: 0,
  spans: new Map<string, number>(),
  ports: new Map<string, number>(),
  sql: new Map<string, number>()
}
const bump = (map: Map<string, number>, key: string) => {
  if (counting) map.set(key, (map.get(key) ?? 0) + 1)
}
const reset = () => {
  tally.instructions = 0
  tally.fibers = 0
  tally.spans.clear()
  tally.ports.clear()
  tally.sql.clear()
}

class Counting extends Supervisor.AbstractSupervisor<void> {
  get value() {
    return Effect.void
  }
  override onStart() {
    if (counting) tally.fibers++
  }
  override onEffect() {
    if (counting) tally.instructions++
  }
}

/** The default tracer, counting the spans it opens. */
const countingTracer = Layer.unwrapEffect(
  Effect.map(Effect.tracer, (tracer) =>
    Layer.setTracer(
      Tracer.make({
        span: (name, ...rest) => {
          bump(tally.spans, name)
          return tracer.span(name, ...rest)
        },
        context: tracer.context
      })
    )
  )
)

const instrumentation = Layer.mergeAll(
  Supervisor.addSupervisor(new Counting()),
  RuntimeFlags.enableOpSupervision,
  countingTracer
)

/** Each store port, counting its calls. */
const countingStore = (store: Layer.Layer<StoreServices, unknown>): Layer.Layer<StoreServices, unknown> => {
  const wrap = <S extends object>(port: string, service: S): S =>
    Object.fromEntries(
      Object.entries(service).map(([method, f]) => [
        method,
        typeof f === "function"
          ? (...args: Array<unknown>) => {
              bump(tally.ports, `${port}.${method}`)
              return (f as (...a: Array<unknown>) => unknown)(...args)
            }
          : f
      ])
    ) as S
  return Layer.effectContext(
    Effect.map(Effect.context<StoreServices>(), (context) =>
      Context.make(Records, wrap("Records", Context.get(context, Records))).pipe(
        Context.add(UnitOfWork, wrap("UnitOfWork", Context.get(context, UnitOfWork))),
        Context.add(Idempotency, wrap("Idempotency", Context.get(context, Idempotency))),
        Context.add(RateLimitStore, wrap("RateLimitStore", Context.get(context, RateLimitStore)))
      )
    )
  ).pipe(Layer.provide(store))
}

/** Every statement the `pg` driver sends (the one `@effect/sql-pg` uses). */
const countSql = () => {
  const pg = createRequire(import.meta.resolve("@effect/sql-pg"))("pg") as {
    Client: { prototype: { query: (...args: Array<unknown>) => unknown } }
  }
  const query = pg.Client.prototype.query
  pg.Client.prototype.query = function (this: unknown, ...args: Array<unknown>) {
    const first = args[0] as string | { text?: string } | undefined
    const text = typeof first === "string" ? first : (first?.text ?? "?")
    bump(tally.sql, text.replace(/\s+/g, " ").trim().slice(0, 80))
    if (counting && values["trace-sql"]) console.log(`  SQL ${text.replace(/\s+/g, " ").trim().slice(0, 400)}`)
    return query.apply(this, args)
  }
}

// ---------------------------------------------------------------------------------------
// Servers and requests

type Listener = (req: IncomingMessage, res: ServerResponse) => void

const listen = async (listener: Listener) => {
  const server = createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

interface Probe {
  readonly label: string
  readonly status: number
  readonly send: (base: string, n: number) => Promise<Response>
}

const measure = async (base: string, probe: Probe) => {
  for (let n = 0; n < 20; n++) await (await probe.send(base, -n)).text()
  reset()
  counting = true
  for (let n = 1; n <= N; n++) {
    const response = await probe.send(base, n)
    await response.text()
    if (response.status !== probe.status) throw new Error(`${probe.label}: ${response.status} instead of ${probe.status}`)
  }
  counting = false
  const per = (count: number) => (count / N).toFixed(1).replace(/\.0$/, "")
  // Background work (workers polling the store) lands here too; below 0.05 per request it is left out.
  const listing = (map: Map<string, number>) =>
    [...map.entries()]
      .filter(([, count]) => count / N >= 0.05)
      .sort((a, b) => b[1] - a[1])
      .map(([name, count]) => `${per(count)} × ${name}`)
  const sum = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0)
  console.log(`\n${probe.label}`)
  console.log(`  Effect instructions: ${per(tally.instructions)}, fibers started: ${per(tally.fibers)}`)
  console.log(`  spans: ${per(sum(tally.spans))}${tally.spans.size ? ` (${listing(tally.spans).join(", ")})` : ""}`)
  if (tally.ports.size) console.log(`  store calls: ${per(sum(tally.ports))} (${listing(tally.ports).join(", ")})`)
  if (tally.sql.size) {
    console.log(`  SQL statements: ${per(sum(tally.sql))}`)
    for (const line of listing(tally.sql)) console.log(`    ${line}`)
  }
}

const bare = async () => {
  const runtime = ManagedRuntime.make(instrumentation)
  const router = HttpRouter.empty.pipe(HttpRouter.get(BASELINE_PATH, HttpServerResponse.unsafeJson(BASELINE_BODY)))
  const server = await listen(await runtime.runPromise(NodeHttpServer.makeHandler(router) as Effect.Effect<Listener>))
  await measure(server.base, { label: "bare Effect route: GET /x", status: 200, send: (base) => fetch(`${base}${BASELINE_PATH}`) })
  await server.close()
  await runtime.dispose()
}

const product = async (store: "memory" | "postgresql") => {
  const scope = Effect.runSync(Scope.make())
  const storeLayer =
    store === "memory"
      ? MemoryStore
      : pgLayer((await Effect.runPromise(Scope.extend(freshDatabase, scope))).url)
  const runtime = ManagedRuntime.make(
    Layer.merge(syllabusLayer({ store: countingStore(storeLayer), rateLimits: "off" }), instrumentation)
  )
  const server = await listen(await runtime.runPromise(NodeHttpServer.makeHandler(app) as Effect.Effect<Listener>))
  const opened = await runtime.runPromise(
    openAccount({
      name: "Anatomy Academy",
      subdomain: `anatomy-${Date.now().toString(36)}`,
      administrator: { email: "admin@anatomy.example", name: "Admin", password: "correct horse battery" }
    }) as unknown as Effect.Effect<{ credentials: ReadonlyArray<{ environment: string; secret: string }> }>
  )
  const secret = opened.credentials.find((c) => c.environment === "production")!.secret
  const authorization = `Bearer ${secret}`
  await measure(server.base, {
    label: `GET /api/v3/credentials/current, ${store}`,
    status: 200,
    send: (base) => fetch(`${base}/api/v3/credentials/current`, { headers: { authorization } })
  })
  /** A create with a new Idempotency-Key each time: `POST <path>` with the body made for call `n`. */
  const create = (path: string, body: (n: number) => object) => (base: string, n: number) =>
    fetch(`${base}/api/v3${path}`, {
      method: "POST",
      headers: { authorization, "content-type": "application/json", "idempotency-key": `anatomy-${path.slice(1)}-${Date.now()}-${n}` },
      body: JSON.stringify(body(n))
    })
  await measure(server.base, {
    label: `POST /api/v3/credentials (new Idempotency-Key), ${store}`,
    status: 201,
    send: create("/credentials", (n) => ({ name: `Anatomy ${n}`, purpose: "benchmark" }))
  })
  // As bench/run.ts's `product-postgresql`: a new product appended to one showcase.
  const showcase = await create("/showcases", () => ({ name: "Anatomy showcase" }))(server.base, 0)
  const showcaseId = ((await showcase.json()) as { data: { id: string } }).data.id
  await measure(server.base, {
    label: `POST /api/v3/products (new Idempotency-Key), ${store}`,
    status: 201,
    send: create("/products", (n) => ({ format: "course", name: `Anatomy product ${n}`, showcase_id: showcaseId }))
  })
  await server.close()
  await runtime.dispose()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}

console.log(`Per request, averaged over ${N} sequential requests (after 20 unmeasured ones):`)
countSql()
await bare()
await product("memory")
if (!values["no-pg"]) await product("postgresql")
