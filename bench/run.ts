/**
 * The benchmarks of issue 2: the product's request pipeline against two floors, over a real
 * socket on 127.0.0.1, with autocannon. See docs/benchmarks.md.
 *
 *   pnpm bench                                   every scenario, 10 s each, 50 connections
 *   pnpm bench -- --duration 3 --warmup 1        a quick run
 *   pnpm bench -- --only effect,current-memory   some scenarios
 *   pnpm bench -- --rounds 3                     every scenario 3 times (interleaved), median kept
 *   pnpm bench -- --tracing on                   the platform's per-request span in both Effect servers
 *   pnpm bench -- --tracing http-off             without the platform's per-request span
 *   pnpm bench -- --tracing off                  with the tracer disabled altogether
 *   pnpm bench -- --experiment skip-request-log  what-if: the product minus its request-log writes
 *   pnpm bench -- --cpu-prof /tmp/profiles       profile each server's measured run, print its hot spots
 *
 * Every flag has an environment twin: BENCH_DURATION, BENCH_WARMUP, BENCH_ROUNDS, BENCH_CONNECTIONS,
 * BENCH_PIPELINING, BENCH_ONLY, BENCH_TRACING, BENCH_EXPERIMENT, BENCH_CPU_PROF, BENCH_JSON. PostgreSQL is
 * `DATABASE_URL` (default postgres://postgres@127.0.0.1:5432/test); each PostgreSQL scenario
 * gets a fresh database, dropped afterwards. BENCH_PG_POOL sizes the server's pool.
 *
 * Each server runs in its own child process (bench/server.ts); autocannon runs here.
 */
import autocannon from "autocannon"
import { type ChildProcess, fork } from "node:child_process"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { availableParallelism, cpus, loadavg, totalmem } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { formatSummary, readProfile, summarize } from "./profile.js"
import { BASELINE_PATH, type Experiment, isTracing, type ServerKind, type ServerMessage, type Tracing } from "./shared.js"

// ---------------------------------------------------------------------------------------
// Settings

const { values: flags } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== "--"),
  options: {
    duration: { type: "string" },
    warmup: { type: "string" },
    rounds: { type: "string" },
    connections: { type: "string" },
    pipelining: { type: "string" },
    only: { type: "string" },
    tracing: { type: "string" },
    experiment: { type: "string" },
    "cpu-prof": { type: "string" },
    json: { type: "string" },
    help: { type: "boolean", short: "h" }
  }
})

if (flags.help) {
  const source = fileURLToPath(import.meta.url)
  console.log(`usage: node --import tsx ${source} [--duration s] [--warmup s] [--rounds n] [--connections n] [--pipelining n]`)
  console.log("       [--only id,id] [--tracing shipped|on|http-off|off] [--experiment none|skip-request-log] [--cpu-prof dir] [--json file]")
  process.exit(0)
}

const setting = (flag: string | undefined, env: string, fallback: string): string => flag ?? process.env[env] ?? fallback
const positive = (text: string, name: string): number => {
  const n = Number(text)
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${text}`)
  return n
}

const settings = {
  duration: positive(setting(flags.duration, "BENCH_DURATION", "10"), "duration"),
  warmup: positive(setting(flags.warmup, "BENCH_WARMUP", "3"), "warmup"),
  rounds: Math.max(1, Math.floor(positive(setting(flags.rounds, "BENCH_ROUNDS", "1"), "rounds"))),
  connections: positive(setting(flags.connections, "BENCH_CONNECTIONS", "50"), "connections"),
  pipelining: positive(setting(flags.pipelining, "BENCH_PIPELINING", "1"), "pipelining"),
  tracing: ((): Tracing => {
    const value = setting(flags.tracing, "BENCH_TRACING", "shipped")
    if (!isTracing(value)) throw new Error(`tracing must be shipped, on, http-off or off, got ${value}`)
    return value
  })(),
  experiment: ((): Experiment => {
    const value = setting(flags.experiment, "BENCH_EXPERIMENT", "none")
    if (value !== "none" && value !== "skip-request-log") throw new Error(`experiment must be none or skip-request-log, got ${value}`)
    return value
  })(),
  cpuProf: flags["cpu-prof"] ?? process.env["BENCH_CPU_PROF"],
  json: flags.json ?? process.env["BENCH_JSON"]
}

// ---------------------------------------------------------------------------------------
// Scenarios

interface Target {
  readonly port: number
  readonly secret: string | null
}

interface Scenario {
  readonly id: string
  readonly title: string
  readonly server: ServerKind
  readonly expected: number
  /** The requests autocannon sends, in a loop, on each connection. */
  readonly requests: (target: Target) => Array<autocannon.Request>
}

const runTag = `${process.pid.toString(36)}${Date.now().toString(36)}`
let createCounter = 0

const getCurrent = (target: Target): Array<autocannon.Request> => [
  { method: "GET", path: "/api/v3/credentials/current", headers: { authorization: `Bearer ${target.secret}` } }
]

/** A new credential per request, each with its own Idempotency-Key (and so a fresh execution, not a replay). */
const createCredential = (target: Target): Array<autocannon.Request> => [
  {
    method: "POST",
    path: "/api/v3/credentials",
    headers: { authorization: `Bearer ${target.secret}`, "content-type": "application/json" },
    setupRequest: (request) => {
      const n = ++createCounter
      return {
        ...request,
        headers: { ...request.headers, "idempotency-key": `bench-${runTag}-${n}` },
        body: JSON.stringify({ name: `Bench credential ${n}`, purpose: "benchmark" })
      }
    }
  }
]

const baseline = (): Array<autocannon.Request> => [{ method: "GET", path: BASELINE_PATH }]

const scenarios: ReadonlyArray<Scenario> = [
  { id: "raw", title: "baseline A: node:http, fixed JSON", server: "raw", expected: 200, requests: baseline },
  { id: "effect", title: "baseline B: bare Effect route", server: "effect", expected: 200, requests: baseline },
  { id: "current-memory", title: "GET /credentials/current, memory", server: "memory", expected: 200, requests: getCurrent },
  {
    id: "current-postgresql",
    title: "GET /credentials/current, PostgreSQL",
    server: "postgresql",
    expected: 200,
    requests: getCurrent
  },
  { id: "create-memory", title: "POST /credentials (idempotent), memory", server: "memory", expected: 201, requests: createCredential },
  {
    id: "create-postgresql",
    title: "POST /credentials (idempotent), PostgreSQL",
    server: "postgresql",
    expected: 201,
    requests: createCredential
  }
]

const selected = (() => {
  const only = setting(flags.only, "BENCH_ONLY", "")
  if (only === "") return scenarios
  const ids = only.split(",").map((s) => s.trim()).filter((s) => s !== "")
  const unknown = ids.filter((id) => !scenarios.some((s) => s.id === id))
  if (unknown.length > 0) {
    throw new Error(`unknown scenario(s): ${unknown.join(", ")}; known: ${scenarios.map((s) => s.id).join(", ")}`)
  }
  return scenarios.filter((s) => ids.includes(s.id))
})()

// ---------------------------------------------------------------------------------------
// Server children

const serverScript = fileURLToPath(new URL("./server.ts", import.meta.url))

interface RunningServer extends Target {
  readonly child: ChildProcess
  readonly database: string | null
  /** The measured run starts now (CPU accounting, profiler). */
  beginMeasure(): Promise<void>
  /** Stop the child; the CPU time it used over the measured run (µs), if it was measured. */
  stop(): Promise<number | undefined>
}

const profileFile = (scenario: Scenario) =>
  settings.cpuProf ? join(resolve(settings.cpuProf), `${scenario.id}.cpuprofile`) : undefined

const startServer = (scenario: Scenario): Promise<RunningServer> =>
  new Promise((resolvePromise, reject) => {
    const profile = profileFile(scenario)
    // Source maps only when profiling: they map the profile back to the TypeScript sources.
    const execArgv = ["--import", "tsx", ...(profile ? ["--enable-source-maps"] : [])]
    const args = [scenario.server, "--tracing", settings.tracing, "--experiment", settings.experiment]
    if (profile) args.push("--profile", profile)
    const child = fork(serverScript, args, { execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] })
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    const onExit = (code: number | null) => reject(new Error(`server ${scenario.server} exited (${code}) before it was ready`))
    child.once("exit", onExit)
    child.once("message", (message: ServerMessage) => {
      child.off("exit", onExit)
      if (message.type !== "ready") {
        reject(new Error(`server ${scenario.server} failed to start:\n${message.type === "failed" ? message.error : message.type}`))
        return
      }
      resolvePromise({
        child,
        port: message.port,
        secret: message.secret,
        database: message.database,
        beginMeasure: () =>
          new Promise<void>((done) => {
            const onMessage = (m: ServerMessage) => {
              if (m.type !== "measuring") return
              child.off("message", onMessage)
              done()
            }
            child.on("message", onMessage)
            child.send({ type: "measure-start" })
          }),
        stop: async () => {
          let cpuMicros: number | undefined
          child.on("message", (m: ServerMessage) => {
            if (m.type === "cpu") cpuMicros = m.userMicros + m.systemMicros
          })
          if (child.exitCode === null && child.signalCode === null) {
            child.send({ type: "stop" })
            const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
            await exited
            clearTimeout(timer)
          }
          return cpuMicros
        }
      })
    })
  })

// ---------------------------------------------------------------------------------------
// Measuring

interface Measured {
  readonly id: string
  readonly title: string
  readonly requestsPerSecond: number
  readonly requestsTotal: number
  readonly latencyP50: number
  readonly latencyP99: number
  readonly latencyMean: number
  readonly expectedStatus: number
  readonly expectedCount: number
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  readonly statusCodes: Record<string, number>
  /** CPU time of the server process per completed request (µs), user + system. */
  readonly serverCpuMicrosPerRequest: number | undefined
}

interface Failed {
  readonly id: string
  readonly title: string
  readonly error: string
}

const probe = async (scenario: Scenario, target: Target): Promise<void> => {
  // One request by hand first: a wrong status now would make the figures meaningless.
  const [request] = scenario.requests(target)
  const setup = request!.setupRequest
  const prepared = typeof setup === "function" ? setup({ ...request! }, {}) : request!
  const headers = Object.fromEntries(
    Object.entries(prepared.headers ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === "string")
  )
  const response = await fetch(`http://127.0.0.1:${target.port}${prepared.path}`, {
    method: prepared.method ?? "GET",
    headers,
    ...(prepared.body !== undefined ? { body: String(prepared.body) } : {})
  })
  const text = await response.text()
  if (response.status !== scenario.expected) {
    throw new Error(`probe answered ${response.status} instead of ${scenario.expected}: ${text.slice(0, 500)}`)
  }
}

const cannon = (target: Target, scenario: Scenario, duration: number) =>
  autocannon({
    url: `http://127.0.0.1:${target.port}`,
    connections: settings.connections,
    pipelining: settings.pipelining,
    duration,
    requests: scenario.requests(target),
    timeout: 10
  })

const measure = async (scenario: Scenario): Promise<Measured | Failed> => {
  let server: RunningServer | undefined
  try {
    server = await startServer(scenario)
    await probe(scenario, server)
    if (settings.warmup > 0) await cannon(server, scenario, settings.warmup)
    await server.beginMeasure()
    const result = await cannon(server, scenario, settings.duration)
    const cpuMicros = await server.stop()
    const statusCodes: Record<string, number> = {}
    for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stats.count ?? 0
    return {
      id: scenario.id,
      title: scenario.title,
      requestsPerSecond: result.requests.mean,
      requestsTotal: result.requests.total,
      latencyP50: result.latency.p50,
      latencyP99: result.latency.p99,
      latencyMean: result.latency.mean,
      expectedStatus: scenario.expected,
      expectedCount: statusCodes[String(scenario.expected)] ?? 0,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statusCodes,
      serverCpuMicrosPerRequest: cpuMicros === undefined ? undefined : cpuMicros / Math.max(1, result.requests.total)
    }
  } catch (error) {
    return { id: scenario.id, title: scenario.title, error: String((error as Error)?.message ?? error) }
  } finally {
    await server?.stop()
  }
}

// ---------------------------------------------------------------------------------------
// Reporting

const isMeasured = (r: Measured | Failed): r is Measured => "requestsPerSecond" in r

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`

const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, right: ReadonlyArray<boolean>) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) =>
    `| ${cells.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(" | ")} |`
  const rule = `|${widths.map((w, i) => (right[i] ? `${"-".repeat(w + 1)}:` : `${"-".repeat(w + 2)}`)).join("|")}|`
  return [line(header), rule, ...rows.map(line)].join("\n")
}

const loadLine = () => loadavg().map((n) => n.toFixed(2)).join(" ")

const main = async () => {
  const cpu = cpus()[0]?.model ?? "unknown CPU"
  console.log(
    `Syllabus benchmarks: ${selected.length} scenario(s), ${settings.duration} s each after ${settings.warmup} s warm-up` +
      (settings.rounds > 1 ? `, ${settings.rounds} rounds (median kept), ` : ", ") +
      `${settings.connections} connections, pipelining ${settings.pipelining}, tracing ${settings.tracing}` +
      (settings.experiment === "none" ? "" : `, EXPERIMENT ${settings.experiment} (not the product)`)
  )
  console.log(
    `Machine: ${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}/${process.arch}, ` +
      `load average ${loadLine()} (other work on the machine skews every figure)`
  )
  if (settings.cpuProf) mkdirSync(resolve(settings.cpuProf), { recursive: true })

  // With several rounds, each round runs every scenario once, so that a neighbour's load
  // spreads over all of them; each scenario then keeps its median round (by req/s).
  const rounds: Array<Array<Measured | Failed>> = []
  for (let round = 1; round <= settings.rounds; round++) {
    if (settings.rounds > 1) console.log(`Round ${round} of ${settings.rounds}`)
    const runs: Array<Measured | Failed> = []
    for (const scenario of selected) {
      process.stdout.write(`- ${scenario.id.padEnd(18)} ${scenario.title} … `)
      const result = await measure(scenario)
      runs.push(result)
      if (isMeasured(result)) {
        console.log(
          `${fmt(result.requestsPerSecond)} req/s, p50 ${result.latencyP50} ms, p99 ${result.latencyP99} ms` +
            (result.serverCpuMicrosPerRequest === undefined ? "" : `, ${fmt(result.serverCpuMicrosPerRequest)} µs CPU/req`) +
            (result.non2xx + result.errors > 0 ? `, non-2xx ${result.non2xx}, errors ${result.errors}` : "")
        )
      } else {
        console.log(`FAILED: ${result.error}`)
      }
    }
    rounds.push(runs)
  }
  const results: Array<Measured | Failed> = selected.map((scenario, i) => {
    const runs = rounds.map((runs) => runs[i]!)
    const failed = runs.find((r) => !isMeasured(r))
    if (failed) return failed
    const sorted = (runs as Array<Measured>).slice().sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)
    return sorted[Math.floor((sorted.length - 1) / 2)]!
  })

  const measured = new Map(results.filter(isMeasured).map((r) => [r.id, r]))
  const raw = measured.get("raw")
  const bare = measured.get("effect")

  console.log(
    "\nSummary (req/s: mean of autocannon's per-second samples; latency in ms; CPU µs/req: user + system time of the server process per response)\n"
  )
  console.log(
    table(
      ["scenario", "req/s", "p50", "p99", "expected", "non-2xx", "errors", "CPU µs/req", "vs bare Effect", "vs raw node"],
      results.map((r) =>
        isMeasured(r)
          ? [
              r.id,
              fmt(r.requestsPerSecond),
              String(r.latencyP50),
              String(r.latencyP99),
              `${fmt(r.expectedCount)} × ${r.expectedStatus}`,
              String(r.non2xx),
              String(r.errors),
              r.serverCpuMicrosPerRequest === undefined ? "" : fmt(r.serverCpuMicrosPerRequest),
              bare && r.id !== "effect" && r.id !== "raw" ? pct(r.requestsPerSecond / bare.requestsPerSecond) : "",
              raw && r.id !== "raw" ? pct(r.requestsPerSecond / raw.requestsPerSecond) : ""
            ]
          : [r.id, "failed", "", "", "", "", "", "", "", ""]
      ),
      [false, true, true, true, true, true, true, true, true, true]
    )
  )
  console.log(`Load average at the end: ${loadLine()}`)
  const odd = results.filter(isMeasured).filter((r) => Object.keys(r.statusCodes).some((c) => c !== String(r.expectedStatus)))
  for (const r of odd) console.log(`  ${r.id}: status codes ${JSON.stringify(r.statusCodes)}`)
  for (const r of results.filter((x): x is Failed => !isMeasured(x))) console.log(`  ${r.id} failed: ${r.error}`)

  const current = measured.get("current-memory")
  if (current && bare) {
    const ratio = current.requestsPerSecond / bare.requestsPerSecond
    console.log(
      `\nGoal of issue 2: the full pipeline on the memory store keeps ≥ 60% of the bare Effect route's throughput: ` +
        `${pct(ratio)} — ${ratio >= 0.6 ? "met" : "NOT met"}`
    )
    if (current.serverCpuMicrosPerRequest && bare.serverCpuMicrosPerRequest) {
      console.log(
        `  by server CPU per request (less sensitive to a busy machine): ` +
          `${fmt(bare.serverCpuMicrosPerRequest)} µs vs ${fmt(current.serverCpuMicrosPerRequest)} µs = ` +
          pct(bare.serverCpuMicrosPerRequest / current.serverCpuMicrosPerRequest)
      )
    }
  }

  if (settings.cpuProf) {
    for (const scenario of selected) {
      const file = profileFile(scenario)!
      if (!existsSync(file)) continue
      console.log(`\nCPU profile of the ${scenario.id} server, measured run only (${file}):`)
      console.log(formatSummary(summarize(readProfile(file), 15)))
    }
  }

  if (settings.json) {
    writeFileSync(
      settings.json,
      JSON.stringify({ settings, machine: { cores: availableParallelism(), cpu, node: process.version, loadAtEnd: loadavg() }, results }, null, 2)
    )
  }
  if (results.some((r) => !isMeasured(r))) process.exitCode = 1
}

await main()
