/**
 * One benchmark server, run as a child process of `bench/run.ts` so that the load generator
 * never shares the server's event loop.
 *
 *   node --import tsx bench/server.ts <raw | effect | memory | postgresql>
 *     [--tracing shipped|on|http-off|off] [--experiment none|skip-request-log] [--profile file]
 *     [--join-database name] [--pgbouncer-port port]
 *
 * It listens on 127.0.0.1 (a free port), then sends `{ type: "ready", port, secret }` over
 * the IPC channel. On `{ type: "stop" }` (or when the parent goes away) it closes the
 * socket, disposes the runtime, drops its PostgreSQL database, and exits.
 *
 * `{ type: "measure-start" }` marks the start of the measured run (after the warm-up): the
 * child answers `measuring`, and on `stop` reports the CPU time it used since (`cpu`).
 * With `--profile <file>` it also profiles its main thread over that run (not start-up or
 * warm-up) and writes a `.cpuprofile` whose positions are mapped back to the TypeScript
 * sources (run it with `--enable-source-maps`: tsx emits each module on one line, so
 * unmapped positions say nothing).
 *
 * Servers are assembled from the public API only, the way an embedding would:
 * `syllabusLayer` + `app` from `@syllabus/http`, `NodeHttpServer.makeHandler`, and a
 * `node:http` server; the demo account is opened with `openAccount` from `@syllabus/core`.
 *
 * `--join-database <name>` (postgresql only) makes a second server process on the database of
 * a first one: it neither creates nor drops the database and opens no account (its `ready`
 * carries no secret). The first process's secret works on it, since the server keys that hash
 * secrets are kept in the store and shared by every process on one database.
 *
 * `--pgbouncer-port <port>` (postgresql only): the store goes through the PgBouncer (transaction
 * mode) listening there, with `LISTEN` and the migrations on the direct connection (issue 27).
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { openAccount, Records, REQUEST_TYPE } from "@syllabus/core"
import { app, ServerSettings, type StoreServices, syllabusLayer } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { Context, Effect, Exit, Layer, ManagedRuntime, Scope } from "effect"
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { findSourceMap } from "node:module"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { onLocalPort } from "../test/support/postgres-user.js"
import { databaseUrl, freshDatabase } from "./pg.js"
import { BASELINE_BODY, BASELINE_PATH, type ServerKind, type Experiment, isTracing, type ServerMessage, type Tracing } from "./shared.js"

type Listener = (req: IncomingMessage, res: ServerResponse) => void


interface Built {
  readonly listener: Listener
  readonly secret: string | null
  readonly database: string | null
  /** How long abandoned requests get to finish before `dispose`. */
  readonly drainMs: number
  readonly dispose: () => Promise<void>
}

/**
 * Tracing, as the handler's runtime sees it:
 * - `shipped`: each server as shipped: the bare route with the platform's `http.server` span
 *   (the default of `makeHandler`), the product as its `ServerSettings.traceRequests` says
 *   (off by default, so no `http.server` span);
 * - `on`: the platform's `http.server` span per request and every `Effect.fn` span;
 * - `http-off`: no `http.server` span (`HttpMiddleware.currentTracerDisabledWhen`), the others kept;
 * - `off`: the tracer disabled altogether (`Effect.withTracerEnabled(false)`): spans are no-ops.
 * The handler captures the runtime it is made in, so a setting made around `makeHandler` holds
 * for every request.
 */
const makeHandler = (httpApp: Parameters<typeof NodeHttpServer.makeHandler>[0], tracing: Tracing) => {
  const handler = NodeHttpServer.makeHandler(httpApp) as Effect.Effect<Listener, never, never>
  return tracing === "on" || tracing === "shipped"
    ? handler
    : tracing === "http-off"
      ? handler.pipe(Effect.locally(HttpMiddleware.currentTracerDisabledWhen, () => true))
      : handler.pipe(Effect.locally(HttpMiddleware.currentTracerDisabledWhen, () => true), Effect.withTracerEnabled(false))
}

/** Baseline A: the floor, `node:http` answering a fixed body. */
const rawServer = (): Built => {
  const body = JSON.stringify(BASELINE_BODY)
  const length = String(Buffer.byteLength(body))
  return {
    listener: (req, res) => {
      if (req.url === BASELINE_PATH) {
        res.writeHead(200, { "content-type": "application/json", "content-length": length })
        res.end(body)
      } else {
        res.writeHead(404, { "content-length": "0" })
        res.end()
      }
    },
    secret: null,
    database: null,
    drainMs: 0,
    dispose: async () => {}
  }
}

/** Baseline B: a bare Effect route on the same platform stack as the product. */
const effectServer = async (tracing: Tracing): Promise<Built> => {
  const router = HttpRouter.empty.pipe(HttpRouter.get(BASELINE_PATH, HttpServerResponse.unsafeJson(BASELINE_BODY)))
  const runtime = ManagedRuntime.make(Layer.empty)
  const listener = await runtime.runPromise(makeHandler(router, tracing))
  return { listener, secret: null, database: null, drainMs: 0, dispose: () => runtime.dispose() }
}

/** See `Experiment`: the store as given, or with request-log inserts dropped. */
const withExperiment = (store: Layer.Layer<StoreServices, unknown>, experiment: Experiment): Layer.Layer<StoreServices, unknown> =>
  experiment === "none"
    ? store
    : Layer.effectContext(
        Effect.map(Effect.context<StoreServices>(), (context) => {
          const records = Context.get(context, Records)
          return Context.add(
            context,
            Records,
            Records.of({
              ...records,
              insert: (tenant, type, id, data, uniques) =>
                type === REQUEST_TYPE
                  ? Effect.succeed({ type, id, tenant, revision: 1, data })
                  : records.insert(tenant, type, id, data, uniques)
            })
          )
        })
      ).pipe(Layer.provide(store))

/**
 * The product: the whole pipeline on one store, with a demo account; or, given `joinDatabase`,
 * on the database (and account) of another server process.
 */
const syllabusServer = async (
  store: "memory" | "postgresql",
  tracing: Tracing,
  experiment: Experiment,
  joinDatabase: string | undefined,
  pgbouncerPort: number | undefined
): Promise<Built> => {
  if (joinDatabase !== undefined && store !== "postgresql") throw new Error("--join-database needs the postgresql server")
  const scope = Effect.runSync(Scope.make())
  let database: string | null = null
  let storeLayer: Layer.Layer<StoreServices, unknown> = MemoryStore
  if (store === "postgresql") {
    // A joined database belongs to the process that created it: it is not added to this scope, so not dropped here.
    const { name, url } = joinDatabase !== undefined
      ? { name: joinDatabase, url: databaseUrl(joinDatabase) }
      : await Effect.runPromise(Scope.extend(freshDatabase, scope))
    database = name
    const pool = process.env["BENCH_PG_POOL"]
    // The pool of the standalone server (`pgLayer(url)`, the driver's default size) unless told otherwise;
    // through the bench's PgBouncer in transaction mode, with LISTEN and migrations on the direct URL.
    const sized = pool ? { maxConnections: Number(pool) } : {}
    storeLayer = pgbouncerPort === undefined
      ? pgLayer(url, sized)
      : pgLayer(onLocalPort(url, pgbouncerPort), { ...sized, pooler: "transaction", listenUrl: url })
  }
  const runtime = ManagedRuntime.make(
    syllabusLayer({
      store: withExperiment(storeLayer, experiment),
      rateLimits: "off",
      // `shipped` keeps the default (`traceRequests: false`); `on` asks for the request span.
      ...(tracing === "on" ? { settings: { traceRequests: true } } : {})
    })
  )
  const dispose = async () => {
    await runtime.dispose()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> =>
    runtime.runPromise(effect as Effect.Effect<A, E, never>)
  try {
    // As an embedding builds it (`makeNodeListener`): the request span only if `traceRequests` is on.
    const shipped = Effect.flatMap(ServerSettings, (settings) =>
      settings.traceRequests
        ? makeHandler(app, "on")
        : HttpMiddleware.withTracerDisabledWhenEffect(makeHandler(app, "on"), () => true)
    )
    const listener = await run(tracing === "shipped" ? shipped : makeHandler(app, tracing))
    // The first process opened the account; opening another here would give a different secret.
    if (joinDatabase !== undefined) return { listener, secret: null, database, drainMs: 3_000, dispose }
    const subdomain = `bench-${Date.now().toString(36)}`
    const opened = await run(
      openAccount({
        name: "Benchmark Academy",
        subdomain,
        administrator: { email: `admin@${subdomain}.example`, name: "Bench Admin", password: "correct horse battery" }
      })
    )
    const secret = opened.credentials.find((c) => c.environment === "production")!.secret
    return { listener, secret, database, drainMs: 3_000, dispose }
  } catch (error) {
    // Drop the database even when the server could not start.
    await dispose()
    throw error
  }
}

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
  columnNumber: number
}

/** Rewrite each frame to its position in the original source, where a source map knows it. */
const mapToSources = (profile: { nodes: Array<{ callFrame: CallFrame }> }) => {
  for (const { callFrame } of profile.nodes) {
    if (!callFrame.url.startsWith("file://") || callFrame.lineNumber < 0) continue
    const map = findSourceMap(callFrame.url) ?? findSourceMap(fileURLToPath(callFrame.url))
    const entry = map?.findEntry(callFrame.lineNumber, callFrame.columnNumber) as
      | { originalSource?: string; originalLine?: number; originalColumn?: number; name?: string }
      | undefined
    if (!entry?.originalSource || entry.originalLine === undefined) continue
    callFrame.url = entry.originalSource
    callFrame.lineNumber = entry.originalLine
    callFrame.columnNumber = entry.originalColumn ?? 0
    if (callFrame.functionName === "" && entry.name) callFrame.functionName = entry.name
  }
  return profile
}

/** The V8 profiler on this thread, started and stopped by the parent. */
const makeProfiler = (file: string) => {
  const session = new Session()
  session.connect()
  return {
    start: async () => {
      await session.post("Profiler.enable")
      await session.post("Profiler.setSamplingInterval", { interval: 500 })
      await session.post("Profiler.start")
    },
    stop: async () => {
      const { profile } = (await session.post("Profiler.stop")) as { profile: { nodes: Array<{ callFrame: CallFrame }> } }
      writeFileSync(file, JSON.stringify(mapToSources(profile)))
      session.disconnect()
    }
  }
}

const main = async () => {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      tracing: { type: "string", default: "shipped" },
      profile: { type: "string" },
      experiment: { type: "string", default: "none" },
      "join-database": { type: "string" },
      "pgbouncer-port": { type: "string" }
    }
  })
  const profiler = values.profile ? makeProfiler(values.profile) : undefined
  let measuring: NodeJS.CpuUsage | undefined
  const kind = positionals[0] as ServerKind | undefined
  const tracing: Tracing = isTracing(values.tracing) ? values.tracing : "shipped"
  const send = (message: ServerMessage) => {
    if (process.connected) process.send?.(message)
  }
  let built: Built
  try {
    built =
      kind === "raw"
        ? rawServer()
        : kind === "effect"
          ? await effectServer(tracing)
          : kind === "memory" || kind === "postgresql"
            ? await syllabusServer(
              kind,
              tracing,
              values.experiment === "skip-request-log" ? "skip-request-log" : "none",
              values["join-database"],
              values["pgbouncer-port"] === undefined ? undefined : Number(values["pgbouncer-port"])
            )
            : (() => {
                throw new Error(`unknown server kind: ${kind ?? "(none)"}`)
              })()
  } catch (error) {
    send({ type: "failed", error: String((error as Error)?.stack ?? error) })
    process.exitCode = 1
    process.disconnect?.()
    return
  }
  const server: Server = createServer({ keepAliveTimeout: 60_000 }, built.listener)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))

  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    if (measuring) {
      const used = process.cpuUsage(measuring)
      send({ type: "cpu", userMicros: used.user, systemMicros: used.system })
      await profiler?.stop()
    }
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
    // Requests the load generator abandoned when it stopped keep running in their fibers: let
    // them end before the runtime (and its connection pool) goes, or they fail noisily.
    await new Promise((resolve) => setTimeout(resolve, built.drainMs))
    await built.dispose()
    process.exit(0)
  }
  process.on("message", (message: { type?: string }) => {
    if (message?.type === "stop") void stop()
    if (message?.type === "measure-start" && !measuring) {
      void (profiler?.start() ?? Promise.resolve()).then(() => {
        measuring = process.cpuUsage()
        send({ type: "measuring" })
      })
    }
  })
  process.on("disconnect", () => void stop())
  process.on("SIGTERM", () => void stop())
  process.on("SIGINT", () => void stop())

  send({ type: "ready", port: (server.address() as AddressInfo).port, secret: built.secret, database: built.database })
}

void main()
