/**
 * Memory under hostile connections (issue 11, part 3: "500 unfinished unauthenticated bodies
 * grew the server by 456 MB, not released afterwards"). A server child process runs the app as
 * embedders and the standalone server do (`makeNodeListener`: the edge, on the in-memory store);
 * this process keeps `HOSTILE_CONNECTIONS` (default 1,000) connections open against it, each
 * sending a POST whose body (declared 1 MiB) trickles in 16 KiB every 250 ms and never ends,
 * and opening a new one whenever the server closes it. Scenarios:
 *
 * - `unauthenticated`: no credential, from 127.0.0.1;
 * - `authenticated`: a valid credential, from 127.0.0.1 (one client address: the per-origin cap);
 * - `authenticated-spread`: a valid credential from 250 addresses (127.0.0.2–251: the total cap);
 * - `no-edge`: `authenticated-spread` against the bare platform handler (`NodeHttpServer.makeHandler`,
 *   no caps, no drain, Node's default timeouts): what the edge adds.
 *
 * The limiter of §8.1 is on, as shipped (`HOSTILE_RATE_LIMITS=off` to see the edge's caps
 * alone). For each scenario, on a fresh server: its RSS, V8 heap used and Buffers (bodies live
 * there) at rest, their peak during `HOSTILE_SECONDS` (default 20) of attack, and after each of
 * `HOSTILE_ROUNDS` (default 2) attacks, the attackers gone for 2 s and a full GC (the second
 * shows whether what stays is reused or grows); the answers the attackers got, by status; the
 * server's longest event-loop delay; and the latency of a legitimate call (the account's
 * sandbox credential, from 127.0.0.254) during the first attack.
 *
 *   node --import tsx bench/hostile.ts                       # every scenario
 *   node --import tsx bench/hostile.ts authenticated         # one
 *   HOSTILE_CONNECTIONS=500 HOSTILE_SECONDS=10 node --import tsx bench/hostile.ts
 */
import { fork } from "node:child_process"
import { request } from "node:http"
import { connect, type Socket } from "node:net"

const MIB = 1024 * 1024
const CONNECTIONS = Number(process.env["HOSTILE_CONNECTIONS"] ?? 1000)
const SECONDS = Number(process.env["HOSTILE_SECONDS"] ?? 20)
/** Attacks in a row on one server: memory after each shows whether what stays is reused or grows. */
const ROUNDS = Number(process.env["HOSTILE_ROUNDS"] ?? 2)
/** The limiter of §8.1, on as shipped; `off` to see the edge's caps alone. */
const RATE_LIMITS = process.env["HOSTILE_RATE_LIMITS"] === "off" ? "off" : "on"
const scenarios = ["unauthenticated", "authenticated", "authenticated-spread", "no-edge"] as const
type Scenario = (typeof scenarios)[number]

interface Memory {
  readonly rss: number
  readonly heapUsed: number
  /** Buffers (request bodies among them) live outside the V8 heap. */
  readonly arrayBuffers: number
  /** The server's event-loop delay, max since the last sample (ms). */
  readonly loopDelayMs: number
}
type ToServer = { readonly type: "memory"; readonly gc: boolean } | { readonly type: "stop" }
type FromServer =
  /** `secret`: the attackers' credential; `other`: the legitimate caller's (the account's sandbox one, under limits of its own). */
  | { readonly type: "ready"; readonly port: number; readonly secret: string; readonly other: string }
  | ({ readonly type: "memory" } & Memory)

if (process.argv[2] === "--server") {
  // The child: the app behind the edge (or, for `no-edge`, the bare platform handler).
  const { createServer } = await import("node:http")
  const { ManagedRuntime } = await import("effect")
  const NodeHttpServer = await import("@effect/platform-node/NodeHttpServer")
  const { app, makeNodeListener, syllabusLayer } = await import("@syllabus/http")
  const { openAccount } = await import("@syllabus/core")
  const { MemoryStore } = await import("@syllabus/memory")
  const bare = process.argv[3] === "no-edge"
  const rateLimits = process.argv[4] === "off" ? "off" : "on"
  const account = { name: "Hostile", subdomain: "hostile", administrator: { email: "ops@hostile.example", name: "Ops", password: "hostile password" } }
  let server: import("node:http").Server
  let secret: string
  let other: string
  if (bare) {
    const runtime = ManagedRuntime.make(syllabusLayer({ store: MemoryStore, rateLimits }))
    const handler = await runtime.runPromise(NodeHttpServer.makeHandler(app))
    const opened = await runtime.runPromise(openAccount(account))
    secret = opened.credentials.find((c) => c.environment === "production")!.secret
    other = opened.credentials.find((c) => c.environment === "sandbox")!.secret
    server = createServer(handler as never)
  } else {
    const syllabus = await makeNodeListener({ store: MemoryStore, rateLimits })
    const opened = await syllabus.openAccount(account)
    secret = opened.credentials.find((c) => c.environment === "production")!.secret
    other = opened.credentials.find((c) => c.environment === "sandbox")!.secret
    server = createServer({ ...syllabus.serverOptions, requireHostHeader: false }, syllabus.listener)
    syllabus.attach(server)
  }
  const gc = (globalThis as { gc?: () => void }).gc
  const { monitorEventLoopDelay } = await import("node:perf_hooks")
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    process.send?.({ type: "ready", port: typeof address === "object" && address ? address.port : 0, secret, other } satisfies FromServer)
  })
  process.on("disconnect", () => process.exit(0))
  process.on("message", (message: ToServer) => {
    if (message.type === "stop") {
      server.close(() => process.exit(0))
      server.closeAllConnections()
      setTimeout(() => process.exit(0), 1000)
      return
    }
    if (message.gc && gc) {
      gc()
      gc()
    }
    const usage = process.memoryUsage()
    process.send?.({ type: "memory", rss: usage.rss, heapUsed: usage.heapUsed, arrayBuffers: usage.arrayBuffers, loopDelayMs: loop.max / 1e6 } satisfies FromServer)
    loop.reset()
  })
} else {
  const chosen = process.argv.slice(2).filter((a): a is Scenario => (scenarios as ReadonlyArray<string>).includes(a))
  const results: Array<string> = []
  for (const scenario of chosen.length > 0 ? chosen : scenarios) results.push(await run(scenario))
  console.log(
    `\n${CONNECTIONS} hostile connections, ${SECONDS} s, rate limits ${RATE_LIMITS}; server memory in MiB (RSS / V8 heap used / buffers)\n\n` +
      "| scenario | at rest | peak during | after each attack (GC) | attackers' answers | server's event-loop delay (max) | a legitimate call during the first |\n|---|---|---|---|---|---|---|\n" +
      results.join("\n")
  )
}

async function run(scenario: Scenario): Promise<string> {
  const child = fork(new URL(import.meta.url).pathname, ["--server", scenario, RATE_LIMITS], {
    execArgv: ["--expose-gc", "--import", "tsx", ...(process.env["HOSTILE_PROFILE"] ? ["--cpu-prof", `--cpu-prof-dir=${process.env["HOSTILE_PROFILE"]}`] : [])],
    stdio: ["ignore", "ignore", "inherit", "ipc"]
  })
  const ready = await new Promise<{ port: number; secret: string; other: string }>((resolve) =>
    child.on("message", (m: FromServer) => m.type === "ready" && resolve(m))
  )
  const memory = (gc: boolean) =>
    new Promise<Memory>((resolve) => {
      const onMessage = (m: FromServer) => {
        if (m.type !== "memory") return
        child.off("message", onMessage)
        resolve(m)
      }
      child.on("message", onMessage)
      child.send({ type: "memory", gc } satisfies ToServer)
    })

  const rest = await memory(true)
  const answers = new Map<string, number>()
  const count = (what: string) => answers.set(what, (answers.get(what) ?? 0) + 1)
  let peak: Memory = { rss: 0, heapUsed: 0, arrayBuffers: 0, loopDelayMs: 0 }
  const legit: Array<string> = []
  const afters: Array<Memory> = []
  for (let round = 0; round < ROUNDS; round++) {
    const attack = await attackOnce(scenario, ready, memory, count, round === 0 ? legit : [])
    peak = maxOf(peak, attack)
    afters.push(await memory(true))
  }
  child.send({ type: "stop" } satisfies ToServer)

  const mib = (m: Memory) => `${(m.rss / MIB).toFixed(0)} / ${(m.heapUsed / MIB).toFixed(0)} / ${(m.arrayBuffers / MIB).toFixed(0)}`
  const tally = [...answers.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([what, n]) => `${what}: ${n}`).join(", ")
  const row = `| ${scenario} | ${mib(rest)} | ${mib(peak)} | ${afters.map(mib).join(" → ")} | ${tally} | ${peak.loopDelayMs.toFixed(0)} ms | ${legit.join("; ")} |`
  console.log(row)
  return row
}

/** One attack of `SECONDS`: the peak memory seen; the attackers gone and 2 s passed when it returns. */
async function attackOnce(
  scenario: Scenario,
  ready: { readonly port: number; readonly secret: string; readonly other: string },
  memory: (gc: boolean) => Promise<Memory>,
  count: (what: string) => void,
  legit: Array<string>
): Promise<Memory> {
  const sockets = new Set<Socket>()
  let attacking = true
  const authorization = scenario === "unauthenticated" ? "" : `Authorization: Bearer ${ready.secret}\r\n`
  const spread = scenario === "authenticated-spread" || scenario === "no-edge"
  const chunk = "a".repeat(16 * 1024)

  /** One hostile client: a slow body that never ends; again whenever the server lets go. */
  const attacker = (index: number) => {
    if (!attacking) return
    const socket = connect({ host: "127.0.0.1", port: ready.port, ...(spread ? { localAddress: `127.0.0.${2 + (index % 250)}` } : {}) })
    sockets.add(socket)
    let answered = false
    let sent = 0
    let timer: NodeJS.Timeout | undefined
    socket.on("connect", () => {
      socket.write(`POST /api/v3/credentials HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n${authorization}Content-Length: ${MIB}\r\n\r\n{"name":"`)
      timer = setInterval(() => {
        if (sent + chunk.length < MIB - 16) {
          socket.write(chunk)
          sent += chunk.length
        }
      }, 250)
    })
    socket.on("data", (data: Buffer) => {
      if (answered) return
      answered = true
      count(/^HTTP\/1\.1 (\d{3})/.exec(data.toString("latin1"))?.[1] ?? "?")
    })
    socket.on("error", () => undefined)
    socket.on("close", () => {
      clearInterval(timer)
      sockets.delete(socket)
      if (!answered && attacking) count("closed unanswered")
      if (attacking) setTimeout(() => attacker(index), 100)
    })
  }
  for (let i = 0; i < CONNECTIONS; i++) {
    attacker(i)
    if (i % 100 === 99) await new Promise((r) => setTimeout(r, 20))
  }

  let peak: Memory = { rss: 0, heapUsed: 0, arrayBuffers: 0, loopDelayMs: 0 }
  const until = Date.now() + SECONDS * 1000
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 500))
    const now = await memory(false)
    if (process.env["HOSTILE_DEBUG"]) console.error(new Date().toISOString(), sockets.size, JSON.stringify(now))
    peak = maxOf(peak, now)
    if (legit.length < 3 && Date.now() > until - SECONDS * 500) legit.push(await legitimate(ready.port, ready.other))
  }
  attacking = false
  for (const socket of sockets) socket.destroy()
  await new Promise((r) => setTimeout(r, 2_000))
  return peak
}

function maxOf(a: Memory, b: Memory): Memory {
  return {
    rss: Math.max(a.rss, b.rss),
    heapUsed: Math.max(a.heapUsed, b.heapUsed),
    arrayBuffers: Math.max(a.arrayBuffers, b.arrayBuffers),
    loopDelayMs: Math.max(a.loopDelayMs, b.loopDelayMs)
  }
}

/** A legitimate call from an address of its own: its status and how long it took. */
function legitimate(port: number, secret: string): Promise<string> {
  const started = Date.now()
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port, path: "/api/v3/credentials/current", localAddress: "127.0.0.254", agent: false, headers: { authorization: `Bearer ${secret}` } },
      (res) => {
        res.resume()
        res.on("end", () => resolve(`${res.statusCode} in ${Date.now() - started} ms`))
      }
    )
    req.setTimeout(10_000, () => {
      req.destroy()
      resolve("no answer in 10 s")
    })
    req.on("error", (e) => resolve(`error ${e.message}`))
    req.end()
  })
}
