/**
 * Where a request's CPU goes, by subtraction: the same in-process request path (the web
 * handler of `@effect/platform`, no socket) on variants that each stop earlier or skip a
 * part, one request at a time, CPU time per request (median of 5 rounds). And the cost of
 * one `Effect.fn` call, the traced functions the pipeline and the stores are made of.
 *
 *   node --import tsx bench/micro.ts [--requests 2000]
 *
 * The variants are built from the public API only (`makeApp` with one trivial operation,
 * `syllabusLayer` with a store whose request-log inserts are dropped). Absolute figures are
 * higher than over a socket (a web `Request`/`Response` per call); compare rows, not runs.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { openAccount, Records, REQUEST_TYPE } from "@syllabus/core"
import { app, defineOperation, makeApp, type StoreServices, syllabusLayer } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { Context, Effect, Layer, ManagedRuntime } from "effect"
import { parseArgs } from "node:util"
import { BASELINE_BODY, BASELINE_PATH } from "./shared.js"

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== "--"),
  options: { requests: { type: "string", default: "2000" } }
})
const N = Number(values.requests)
const ROUNDS = 5

const median = (xs: ReadonlyArray<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

// ---------------------------------------------------------------------------------------
// One Effect.fn call

const traced = Effect.fn("Micro.traced")(function* (n: number) {
  return n + 1
})
const untraced = Effect.fnUntraced(function* (n: number) {
  return n + 1
})

/** CPU time per run of `effect` (median of the rounds), in µs. */
const perCall = async (effect: Effect.Effect<unknown>, runtime: ManagedRuntime.ManagedRuntime<never, never>) => {
  const calls = 20_000
  const samples: Array<number> = []
  await runtime.runPromise(Effect.repeatN(effect, 2_000))
  for (let round = 0; round < ROUNDS; round++) {
    const before = process.cpuUsage()
    await runtime.runPromise(Effect.repeatN(effect, calls - 1))
    const used = process.cpuUsage(before)
    samples.push((used.user + used.system) / calls)
  }
  return median(samples)
}

const fnCosts = async () => {
  const live = ManagedRuntime.make(Layer.empty)
  const untracedRuntime = ManagedRuntime.make(Layer.setTracerEnabled(false))
  const loop = await perCall(Effect.void, live)
  const rows: Array<[string, number]> = [
    ["Effect.fnUntraced call", (await perCall(Effect.suspend(() => untraced(1)), live)) - loop],
    ["Effect.fn(name) call", (await perCall(Effect.suspend(() => traced(1)), live)) - loop],
    ["Effect.fn(name) call, tracer disabled", (await perCall(Effect.suspend(() => traced(1)), untracedRuntime)) - loop],
    ["Effect.withSpan alone", (await perCall(Effect.withSpan(Effect.void, "Micro.span"), live)) - loop]
  ]
  console.log(`One call, CPU time net of the loop (${loop.toFixed(1)} µs per iteration):`)
  for (const [label, micros] of rows) console.log(`  ${label.padEnd(40)} ${Math.max(0, micros).toFixed(1).padStart(6)} µs`)
  await live.dispose()
  await untracedRuntime.dispose()
}

// ---------------------------------------------------------------------------------------
// The request path, by subtraction

/** An authenticated operation that does nothing: the pipeline around a handler. */
const ping = defineOperation({
  id: "micro.ping",
  method: "GET",
  path: "/ping",
  summary: "Nothing.",
  tag: "Micro",
  capability: "authenticated",
  idempotency: "none",
  success: { status: 200, description: "Nothing." },
  errors: [],
  handler: () => Effect.succeed({ status: 200, body: { data: { ok: true } } })
})
const pingApp = makeApp([ping])

const withoutRequestLog = (store: Layer.Layer<StoreServices>): Layer.Layer<StoreServices> =>
  Layer.effectContext(
    Effect.map(Effect.context<StoreServices>(), (context) => {
      const records = Context.get(context, Records)
      return Context.add(context, Records, {
        ...records,
        insert: (tenant, type, id, data, uniques) =>
          type === REQUEST_TYPE ? Effect.succeed({ type, id, tenant, revision: 1, data }) : records.insert(tenant, type, id, data, uniques)
      })
    })
  ).pipe(Layer.provide(store))

type Handler = (request: Request) => Promise<Response>

const product = async (store: Layer.Layer<StoreServices>, tracing: boolean) => {
  const layer = syllabusLayer({ store, rateLimits: "off" })
  const runtime = ManagedRuntime.make(
    tracing ? layer : Layer.merge(HttpMiddleware.withTracerDisabledWhen(layer, () => true), Layer.setTracerEnabled(false))
  )
  const opened = (await runtime.runPromise(
    openAccount({
      name: "Micro Academy",
      subdomain: `micro-${Math.random().toString(36).slice(2, 8)}`,
      administrator: { email: "admin@micro.example", name: "Admin", password: "correct horse battery" }
    }) as unknown as Effect.Effect<{ credentials: ReadonlyArray<{ environment: string; secret: string }> }>
  ))
  const secret = opened.credentials.find((c) => c.environment === "production")!.secret
  const toHandler = HttpApp.toWebHandlerRuntime(await runtime.runtime())
  return {
    secret,
    app: toHandler(app) as Handler,
    ping: toHandler(pingApp) as Handler,
    dispose: () => runtime.dispose()
  }
}

const requestPath = async () => {
  const bare = HttpApp.toWebHandlerLayer(
    HttpRouter.empty.pipe(HttpRouter.get(BASELINE_PATH, HttpServerResponse.unsafeJson(BASELINE_BODY))),
    Layer.empty
  )
  const full = await product(MemoryStore, true)
  const noLog = await product(withoutRequestLog(MemoryStore), true)
  const untraced = await product(MemoryStore, false)
  const bearer = (secret: string) => ({ headers: { authorization: `Bearer ${secret}` } })
  const url = (path: string) => `http://bench.invalid${path}`
  const cases: ReadonlyArray<readonly [string, Handler, () => Request, number]> = [
    ["bare Effect route", bare.handler as Handler, () => new Request(url(BASELINE_PATH)), 200],
    ["pipeline, path outside /api/v3 (404)", full.app, () => new Request(url("/elsewhere")), 404],
    ["pipeline, no credential (401)", full.app, () => new Request(url("/api/v3/credentials/current")), 401],
    [
      "pipeline, unknown secret (401)",
      full.app,
      () => new Request(url("/api/v3/credentials/current"), bearer(`ck_live_${"x".repeat(40)}`)),
      401
    ],
    [
      "  unknown secret, tracing off",
      untraced.app,
      () => new Request(url("/api/v3/credentials/current"), bearer(`ck_live_${"x".repeat(40)}`)),
      401
    ],
    ["authenticated no-op operation (200)", full.ping, () => new Request(url("/api/v3/ping"), bearer(full.secret)), 200],
    ["  no-op, request log not written", noLog.ping, () => new Request(url("/api/v3/ping"), bearer(noLog.secret)), 200],
    ["GET /credentials/current (200)", full.app, () => new Request(url("/api/v3/credentials/current"), bearer(full.secret)), 200],
    [
      "  current, tracing off",
      untraced.app,
      () => new Request(url("/api/v3/credentials/current"), bearer(untraced.secret)),
      200
    ],
    [
      "  current, request log not written",
      noLog.app,
      () => new Request(url("/api/v3/credentials/current"), bearer(noLog.secret)),
      200
    ]
  ]
  if (new Set(cases.map(([label]) => label)).size !== cases.length) throw new Error("case labels must be unique")
  const samples = new Map<string, Array<number>>()
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [label, handler, make, status] of cases) {
      const count = round === 0 ? Math.min(N, 500) : N
      const before = process.cpuUsage()
      for (let i = 0; i < count; i++) {
        const response = await handler(make())
        await response.text()
        if (response.status !== status) throw new Error(`${label}: ${response.status} instead of ${status}`)
      }
      const used = process.cpuUsage(before)
      // Round 0 warms up.
      if (round > 0) samples.set(label, [...(samples.get(label) ?? []), (used.user + used.system) / count])
    }
  }
  console.log(`\nCPU per request, in process, one at a time (median of ${ROUNDS} rounds of ${N}):`)
  for (const [label, xs] of samples) console.log(`  ${label.padEnd(40)} ${median(xs).toFixed(0).padStart(6)} µs`)
  await bare.dispose()
  await full.dispose()
  await noLog.dispose()
  await untraced.dispose()
}

await fnCosts()
await requestPath()
