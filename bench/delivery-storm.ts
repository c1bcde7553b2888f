/**
 * Fair background work (issue 11, part 4): what a webhook storm costs the requests of an idle
 * server. One account registers `BENCH_HOOKS` sandbox webhooks (default 20) pointing at dead
 * receivers (half at a closed port, half at a port that accepts and never answers) and makes
 * `BENCH_WRITES` writes (default 1,000), so `hooks × writes` deliveries retry. Once every
 * delivery is made (the fan-out done) and `BENCH_SETTLE_MS` later, measured in the same server
 * process, before the storm and during it:
 *
 * - the latency of a trivial request (`GET /credentials/current`, one at a time, p50/p95);
 * - the server's CPU while no client sends anything (`process.cpuUsage` over `BENCH_IDLE_MS`);
 * - the attempts made meanwhile, and the CPU per attempt;
 * - on PostgreSQL, the connections of the server busy meanwhile (`pg_stat_activity`, by pool).
 *
 *   node --import tsx bench/delivery-storm.ts                     # memory and PostgreSQL
 *   BENCH_STORES=memory BENCH_WRITES=200 node --import tsx bench/delivery-storm.ts
 *   BENCH_CPU_PROF=/tmp/storm node --import tsx bench/delivery-storm.ts   # profile each server
 *
 * `BENCH_RECEIVERS`: `mixed` (default), `refused` (every webhook at the closed port) or `silent`.
 *
 * PostgreSQL: a fresh database on `DATABASE_URL` (default the local server), dropped afterwards.
 * The server runs in a child process (as `syllabus-server` would, workers on); the receivers
 * and the client run here.
 */
import { fork } from "node:child_process"
import { mkdirSync, readdirSync } from "node:fs"
import { createServer as createHttpServer } from "node:http"
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net"
import type { AddressInfo } from "node:net"
import { join, resolve } from "node:path"
import { Effect, Exit, Scope } from "effect"
import { freshDatabase } from "./pg.js"
import { formatSummary, readProfile, summarize } from "./profile.js"

const HOOKS = Number(process.env["BENCH_HOOKS"] ?? 20)
const WRITES = Number(process.env["BENCH_WRITES"] ?? 1000)
const SAMPLES = Number(process.env["BENCH_SAMPLES"] ?? 200)
const IDLE_MS = Number(process.env["BENCH_IDLE_MS"] ?? 10_000)
/** How long the storm runs before it is measured (the first attempts of every delivery start). */
const SETTLE_MS = Number(process.env["BENCH_SETTLE_MS"] ?? 3_000)
/** How long the fan-out of the writes (a delivery per webhook and write) is waited for at most. */
const FANOUT_WAIT_MS = Number(process.env["BENCH_FANOUT_WAIT_MS"] ?? 120_000)
const STORES = (process.env["BENCH_STORES"] ?? "memory,pg").split(",")
const CPU_PROF = process.env["BENCH_CPU_PROF"]
/** The dead receivers: `mixed` (every other webhook at each), `refused` or `silent` only. */
const RECEIVERS = process.env["BENCH_RECEIVERS"] ?? "mixed"

type ToServer = { readonly type: "cpu" } | { readonly type: "stats" } | { readonly type: "stop" }
type FromServer =
  | { readonly type: "ready"; readonly port: number; readonly secret: string }
  | { readonly type: "cpu"; readonly micros: number }
  | { readonly type: "stats"; readonly attempts: number; readonly pending: number; readonly deliveries: number }

if (process.argv[2] === "--server") {
  // --server <memory | database URL>
  const store = process.argv[3]!
  const { Records, openAccount } = await import("@syllabus/core")
  const { syllabusLayer, app } = await import("@syllabus/http")
  const { honouringTraceRequests } = await import("../packages/http/src/embed.js")
  const NodeHttpServer = await import("@effect/platform-node/NodeHttpServer")
  const { MemoryStore } = await import("@syllabus/memory")
  const { MemoryFileStorage } = await import("@syllabus/storage")
  const { ManagedRuntime } = await import("effect")
  const pg = await import("@syllabus/pg")
  const storeLayer = store === "memory" ? MemoryStore : pg.pgLayer(store)
  const runtime = ManagedRuntime.make(
    syllabusLayer({ store: storeLayer, storage: MemoryFileStorage, rateLimits: "off", allowLocalWebhooks: true })
  )
  const listener = await runtime.runPromise(honouringTraceRequests(NodeHttpServer.makeHandler(app)))
  const opened = await runtime.runPromise(
    openAccount({
      name: "Storm",
      subdomain: `storm${Date.now()}`,
      administrator: { email: "storm@storm.example", name: "Storm", password: "storm password" }
    })
  )
  const tenant = { accountId: opened.account.id, environment: "sandbox" as const }
  const server = createHttpServer(listener as never)
  let cpuFrom = process.cpuUsage()
  const send = (message: FromServer) => process.send?.(message)
  process.on("message", (message: ToServer) => {
    if (message.type === "cpu") {
      const used = process.cpuUsage(cpuFrom)
      cpuFrom = process.cpuUsage()
      send({ type: "cpu", micros: used.user + used.system })
    } else if (message.type === "stats") {
      void runtime
        .runPromise(
          Effect.gen(function* () {
            const records = yield* Records
            const attempts = yield* records.count(tenant, "webhook_delivery_attempt", [], [])
            const deliveries = yield* records.count(tenant, "webhook_delivery", [], [])
            const pending = yield* records.count(tenant, "webhook_delivery", [{ field: "status", op: "in", values: ["pending", "sending"] }], [])
            return { attempts: attempts[0]?.count ?? 0, pending: pending[0]?.count ?? 0, deliveries: deliveries[0]?.count ?? 0 }
          })
        )
        .then((stats) => send({ type: "stats", ...stats }))
    } else {
      server.close()
      // Exit now (the profile, if any, is written on exit): the workers hold sockets open.
      process.exit(0)
    }
  })
  server.listen(0, "127.0.0.1", () => {
    send({ type: "ready", port: (server.address() as AddressInfo).port, secret: opened.credentials.find((c) => c.environment === "sandbox")!.secret })
  })
} else {
  const quantile = (values: ReadonlyArray<number>, q: number) => {
    const sorted = [...values].sort((a, b) => a - b)
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
  }
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

  interface Child {
    readonly base: string
    readonly secret: string
    ask<T extends FromServer["type"]>(message: ToServer & { type: T }): Promise<Extract<FromServer, { type: T }>>
    stop(): Promise<void>
  }

  const startServer = async (store: string, label: string): Promise<Child> => {
    const profileDir = CPU_PROF === undefined ? undefined : resolve(CPU_PROF, label)
    if (profileDir) mkdirSync(profileDir, { recursive: true })
    const child = fork(new URL(import.meta.url).pathname, ["--server", store], {
      execArgv: ["--import", "tsx", ...(profileDir ? ["--enable-source-maps", "--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [])],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    const ready = await new Promise<Extract<FromServer, { type: "ready" }>>((done, fail) => {
      child.once("message", (m: FromServer) => (m.type === "ready" ? done(m) : fail(new Error(`unexpected ${m.type}`))))
      child.once("exit", (code) => fail(new Error(`server exited (${code})`)))
    })
    return {
      base: `http://127.0.0.1:${ready.port}/api/v3`,
      secret: ready.secret,
      ask: (message) =>
        new Promise((done) => {
          const on = (m: FromServer) => {
            if (m.type !== message.type) return
            child.off("message", on)
            done(m as never)
          }
          child.on("message", on)
          child.send(message)
        }),
      stop: async () => {
        child.send({ type: "stop" })
        await exited
        if (profileDir) {
          for (const file of readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile"))) {
            console.log(`\nprofile ${join(profileDir, file)}\n${formatSummary(summarize(readProfile(join(profileDir, file)), 15))}`)
          }
        }
      }
    }
  }

  // Dead receivers: a closed port (connection refused), and one that accepts and never answers.
  const closedPort = await new Promise<number>((done) => {
    const s = createTcpServer()
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as AddressInfo).port
      s.close(() => done(port))
    })
  })
  const sockets = new Set<Socket>()
  const silent: TcpServer = createTcpServer((socket) => {
    sockets.add(socket)
    socket.on("error", () => undefined)
    socket.on("close", () => sockets.delete(socket))
    socket.resume()
  })
  await new Promise<void>((done) => silent.listen(0, "127.0.0.1", done))
  const silentPort = (silent.address() as AddressInfo).port

  const caller = (child: Child) => async (method: string, path: string, body?: unknown) => {
    const res = await fetch(child.base + path, {
      method,
      headers: {
        authorization: `Bearer ${child.secret}`,
        ...(body ? { "content-type": "application/json" } : {}),
        ...(method === "POST" ? { "idempotency-key": `${Date.now()}-${Math.random()}` } : {})
      },
      ...(body ? { body: JSON.stringify(body) } : {})
    })
    const text = await res.text()
    return { status: res.status, text }
  }

  /** `SAMPLES` trivial requests one at a time: p50/p95/max in ms. */
  const trivial = async (child: Child) => {
    const call = caller(child)
    for (let i = 0; i < 20; i++) await call("GET", "/credentials/current")
    const times: Array<number> = []
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = performance.now()
      const res = await call("GET", "/credentials/current")
      times.push(performance.now() - t0)
      if (res.status !== 200) throw new Error(`GET /credentials/current: ${res.status} ${res.text}`)
    }
    return { p50: quantile(times, 0.5), p95: quantile(times, 0.95), max: quantile(times, 1) }
  }

  /** The server's CPU (% of one core) over `IDLE_MS` with no client traffic; on PostgreSQL, its busy connections meanwhile. */
  const idle = async (child: Child, busy?: () => Promise<Record<string, number>>) => {
    await child.ask({ type: "cpu" })
    const started = performance.now()
    const samples: Array<Record<string, number>> = []
    while (performance.now() - started < IDLE_MS) {
      await sleep(500)
      if (busy) samples.push(await busy())
    }
    const { micros } = await child.ask({ type: "cpu" })
    const cpu = (micros / 1000 / (performance.now() - started)) * 100
    const pools = new Set(samples.flatMap((s) => Object.keys(s)))
    const connections = Object.fromEntries(
      [...pools].map((pool) => [pool, { mean: samples.reduce((a, s) => a + (s[pool] ?? 0), 0) / samples.length, max: Math.max(...samples.map((s) => s[pool] ?? 0)) }])
    )
    return { cpu, connections }
  }

  const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1))

  const run = async (label: string, store: string, busy?: () => Promise<Record<string, number>>) => {
    const child = await startServer(store, label)
    const call = caller(child)
    try {
      const quiet = await trivial(child)
      const quietIdle = await idle(child, busy)
      for (let i = 0; i < HOOKS; i++) {
        const port = RECEIVERS === "refused" || (RECEIVERS === "mixed" && i % 2 === 0) ? closedPort : silentPort
        const res = await call("POST", "/webhooks", { url: `http://127.0.0.1:${port}/hook`, event_types: ["tag.created"] })
        if (res.status !== 201) throw new Error(`webhook: ${res.status} ${res.text}`)
      }
      const writesStarted = performance.now()
      for (let i = 0; i < WRITES; i += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, WRITES - i) }, async (_, j) => {
            const res = await call("POST", "/tags", { name: `storm-${i + j}` })
            if (res.status !== 201) throw new Error(`write: ${res.status} ${res.text}`)
          })
        )
      }
      const writesMs = performance.now() - writesStarted
      // The storm proper: every delivery made (fan-out done, up to FANOUT_WAIT_MS), then a moment.
      const fanOutStarted = performance.now()
      while ((await child.ask({ type: "stats" })).deliveries < HOOKS * WRITES && performance.now() - fanOutStarted < FANOUT_WAIT_MS) await sleep(250)
      const fanOutMs = performance.now() - fanOutStarted
      await sleep(SETTLE_MS)
      const before = await child.ask({ type: "stats" })
      const stormIdle = await idle(child, busy)
      const during = (await child.ask({ type: "stats" })).attempts - before.attempts
      const storm = await trivial(child)
      const stats = await child.ask({ type: "stats" })
      console.log(
        `\n${label}: ${HOOKS} dead webhooks × ${WRITES} writes (writes took ${(writesMs / 1000).toFixed(1)} s, ` +
          `every delivery made ${(fanOutMs / 1000).toFixed(1)} s later; ${stats.deliveries} made); ` +
          `${stats.attempts} attempts made, ${stats.pending} deliveries pending at the end`
      )
      console.log(`| ${label} | quiet | storm | ratio |`)
      console.log(`|---|---|---|---|`)
      console.log(`| GET /credentials/current p50 | ${fmt(quiet.p50)} ms | ${fmt(storm.p50)} ms | ${(storm.p50 / quiet.p50).toFixed(2)} |`)
      console.log(`| GET /credentials/current p95 | ${fmt(quiet.p95)} ms | ${fmt(storm.p95)} ms | ${(storm.p95 / quiet.p95).toFixed(2)} |`)
      console.log(`| GET /credentials/current max | ${fmt(quiet.max)} ms | ${fmt(storm.max)} ms | |`)
      console.log(`| server CPU, no client traffic (${IDLE_MS / 1000} s) | ${fmt(quietIdle.cpu)} % | ${fmt(stormIdle.cpu)} % | |`)
      console.log(
        `| attempts in that time (per second; CPU per attempt) | | ${during} (${fmt(during / (IDLE_MS / 1000))}/s; ${
          during === 0 ? "-" : `${fmt((stormIdle.cpu / 100) * IDLE_MS / during)} ms`
        }) | |`
      )
      for (const pool of new Set([...Object.keys(quietIdle.connections), ...Object.keys(stormIdle.connections)])) {
        const q = quietIdle.connections[pool]
        const s = stormIdle.connections[pool]
        console.log(
          `| busy connections \`${pool}\` (mean / max) | ${q ? `${q.mean.toFixed(1)} / ${q.max}` : "0 / 0"} | ${s ? `${s.mean.toFixed(1)} / ${s.max}` : "0 / 0"} | |`
        )
      }
    } finally {
      await child.stop()
    }
  }

  try {
    if (STORES.includes("memory")) await run("memory", "memory")
    if (STORES.includes("pg")) {
      const scope = Effect.runSync(Scope.make())
      try {
        const { url, name } = await Effect.runPromise(Scope.extend(freshDatabase, scope))
        const { PgClient } = await import("@effect/sql-pg")
        const { Layer, Context, Redacted } = await import("effect")
        const admin = Context.get(
          await Effect.runPromise(Scope.extend(Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), scope)),
          PgClient.PgClient
        )
        /** Connections of the server (by application name) running a statement or inside a transaction. */
        const busy = () =>
          Effect.runPromise(
            admin<{ readonly pool: string; readonly n: number }>`
              SELECT application_name AS pool, count(*)::int AS n FROM pg_stat_activity
              WHERE datname = ${name} AND pid <> pg_backend_pid() AND state IS NOT NULL AND state <> 'idle'
              GROUP BY application_name`
          ).then((rows) => Object.fromEntries(rows.map((r) => [r.pool, r.n])))
        await run("postgresql", url, busy)
      } finally {
        await Effect.runPromise(Scope.close(scope, Exit.void))
      }
    }
  } finally {
    for (const socket of sockets) socket.destroy()
    silent.close()
  }
}
