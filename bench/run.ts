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
 *   pnpm bench -- --only current-postgresql,current-postgresql-2proc,pgbench-tpcb
 *                                                the PostgreSQL pipeline, on one and two server processes, against pgbench
 *
 * Every flag has an environment twin: BENCH_DURATION, BENCH_WARMUP, BENCH_ROUNDS, BENCH_CONNECTIONS,
 * BENCH_PIPELINING, BENCH_ONLY, BENCH_TRACING, BENCH_EXPERIMENT, BENCH_CPU_PROF, BENCH_JSON. PostgreSQL is
 * `DATABASE_URL` (default postgres://postgres@127.0.0.1:5432/test); each PostgreSQL scenario
 * gets a fresh database, dropped afterwards. BENCH_PG_POOL sizes the server's pool.
 *
 * Each server runs in its own child process (bench/server.ts) on the packages' build, as users
 * run them (`builtChildArgv`: built first); autocannon runs here. The
 * `-2proc` scenarios run two server processes on one database and load both at once. The
 * `pgbench-*` scenarios run PostgreSQL's own pgbench (PGBENCH names the binary, default
 * `pgbench`) on a fresh database: the floor of issue 10 for the PostgreSQL scenarios.
 */
import autocannon from "autocannon"
import { Effect, Exit, Scope } from "effect"
import { type ChildProcess, execFile, fork } from "node:child_process"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { availableParallelism, cpus, loadavg, totalmem } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { type RunningPgBouncer, startPgBouncer } from "../test/support/pgbouncer.js"
import { freshDatabase } from "./pg.js"
import { formatSummary, readProfile, summarize } from "./profile.js"
import { BASELINE_PATH, builtChildArgv, type Experiment, isTracing, type ServerKind, type ServerMessage, type Tracing } from "./shared.js"

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
  /** A showcase of the demo account, for the scenarios that create products (`prepare`). */
  readonly showcaseId?: string
}

/** autocannon against the server process(es) of `bench/server.ts`. */
interface HttpScenario {
  readonly kind: "http"
  readonly id: string
  readonly title: string
  readonly server: ServerKind
  /** Server processes on one database, loaded at once (PostgreSQL only); 1 unless given. */
  readonly processes?: number
  /** PostgreSQL through a PgBouncer in transaction mode that the bench starts (issue 27). */
  readonly pooled?: boolean
  /** The status of every answer; a mixed scenario's: one per request of its loop. */
  readonly expected: number | ReadonlyArray<number>
  /** What the requests need that the demo account lacks, made once before the probe (on the first process). */
  readonly prepare?: (target: Target) => Promise<Target>
  /** The requests autocannon sends, in a loop, on each connection. */
  readonly requests: (target: Target) => Array<autocannon.Request>
}

/** The statuses a scenario expects. */
const statusesOf = (scenario: HttpScenario): ReadonlyArray<number> =>
  typeof scenario.expected === "number" ? [scenario.expected] : scenario.expected

/** pgbench on a fresh database of its own: what PostgreSQL itself does on this machine. */
interface PgbenchScenario {
  readonly kind: "pgbench"
  readonly id: string
  readonly title: string
  /** pgbench's flags for its built-in script: none for TPC-B, `-S` for select-only. */
  readonly script: ReadonlyArray<string>
}

type Scenario = HttpScenario | PgbenchScenario

const runTag = `${process.pid.toString(36)}${Date.now().toString(36)}`
let createCounter = 0

const getCurrent = (target: Target): Array<autocannon.Request> => [
  { method: "GET", path: "/api/v3/credentials/current", headers: { authorization: `Bearer ${target.secret}` } }
]

/**
 * A `POST` to `path` of a new resource per request (`body` of the request's number), each with
 * its own Idempotency-Key, and so a fresh execution, never a replay.
 */
const createEach = (target: Target, path: string, body: (n: number) => unknown): autocannon.Request => ({
  method: "POST",
  path,
  headers: { authorization: `Bearer ${target.secret}`, "content-type": "application/json" },
  setupRequest: (request) => {
    const n = ++createCounter
    return { ...request, headers: { ...request.headers, "idempotency-key": `bench-${runTag}-${n}` }, body: JSON.stringify(body(n)) }
  }
})

/** A new credential per request. */
const createCredential = (target: Target): Array<autocannon.Request> => [
  createEach(target, "/api/v3/credentials", (n) => ({ name: `Bench credential ${n}`, purpose: "benchmark" }))
]

/** The demo account's showcase for `createProduct`. */
const withShowcase = async (target: Target): Promise<Target> => {
  const response = await fetch(`http://127.0.0.1:${target.port}/api/v3/showcases`, {
    method: "POST",
    headers: { authorization: `Bearer ${target.secret}`, "content-type": "application/json", "idempotency-key": `bench-${runTag}-showcase` },
    body: JSON.stringify({ name: "Bench showcase" })
  })
  const body = (await response.json()) as { readonly data?: { readonly id?: string } }
  if (response.status !== 201 || typeof body.data?.id !== "string") throw new Error(`showcase: ${response.status} ${JSON.stringify(body)}`)
  return { ...target, showcaseId: body.data.id }
}

/** A new product per request, appended to the showcase (a write with its event, audit entry, place and plan count). */
const createProduct = (target: Target): autocannon.Request =>
  createEach(target, "/api/v3/products", (n) => ({ format: "course", name: `Bench product ${n}`, showcase_id: target.showcaseId }))

/** Reads and writes interleaved on every connection: who am I, a page of products, a new product. */
const mixed = (target: Target): Array<autocannon.Request> => [
  ...getCurrent(target),
  { method: "GET", path: "/api/v3/products?limit=20", headers: { authorization: `Bearer ${target.secret}` } },
  createProduct(target)
]

const baseline = (): Array<autocannon.Request> => [{ method: "GET", path: BASELINE_PATH }]

const scenarios: ReadonlyArray<Scenario> = [
  { kind: "http", id: "raw", title: "baseline A: node:http, fixed JSON", server: "raw", expected: 200, requests: baseline },
  { kind: "http", id: "effect", title: "baseline B: bare Effect route", server: "effect", expected: 200, requests: baseline },
  {
    kind: "http",
    id: "current-memory",
    title: "GET /credentials/current, memory",
    server: "memory",
    expected: 200,
    requests: getCurrent
  },
  {
    kind: "http",
    id: "current-postgresql",
    title: "GET /credentials/current, PostgreSQL",
    server: "postgresql",
    expected: 200,
    requests: getCurrent
  },
  {
    kind: "http",
    id: "current-postgresql-2proc",
    title: "GET /credentials/current, PostgreSQL, 2 server processes",
    server: "postgresql",
    processes: 2,
    expected: 200,
    requests: getCurrent
  },
  {
    kind: "http",
    id: "current-pgbouncer-2proc",
    title: "GET /credentials/current, PostgreSQL through PgBouncer (transaction mode), 2 server processes",
    server: "postgresql",
    processes: 2,
    pooled: true,
    expected: 200,
    requests: getCurrent
  },
  {
    kind: "http",
    id: "create-memory",
    title: "POST /credentials (idempotent), memory",
    server: "memory",
    expected: 201,
    requests: createCredential
  },
  {
    kind: "http",
    id: "create-postgresql",
    title: "POST /credentials (idempotent), PostgreSQL",
    server: "postgresql",
    expected: 201,
    requests: createCredential
  },
  {
    kind: "http",
    id: "create-postgresql-2proc",
    title: "POST /credentials (idempotent), PostgreSQL, 2 server processes",
    server: "postgresql",
    processes: 2,
    expected: 201,
    requests: createCredential
  },
  {
    kind: "http",
    id: "create-pgbouncer-2proc",
    title: "POST /credentials (idempotent), PostgreSQL through PgBouncer (transaction mode), 2 server processes",
    server: "postgresql",
    processes: 2,
    pooled: true,
    expected: 201,
    requests: createCredential
  },
  {
    kind: "http",
    id: "product-postgresql",
    title: "POST /products (idempotent), PostgreSQL",
    server: "postgresql",
    expected: 201,
    prepare: withShowcase,
    requests: (target) => [createProduct(target)]
  },
  {
    kind: "http",
    id: "mixed-postgresql-2proc",
    title: "GET current, GET /products, POST /products in turn, PostgreSQL, 2 server processes",
    server: "postgresql",
    processes: 2,
    expected: [200, 200, 201],
    prepare: withShowcase,
    requests: mixed
  },
  { kind: "pgbench", id: "pgbench-tpcb", title: "pgbench TPC-B (sort of), 10 clients", script: [] },
  { kind: "pgbench", id: "pgbench-select", title: "pgbench select-only (-S), 10 clients", script: ["-S"] }
]

/** The single-process scenario a `-2proc` one is compared with. */
const singleProcessOf: Record<string, string> = {
  "current-postgresql-2proc": "current-postgresql",
  "create-postgresql-2proc": "create-postgresql"
}

/** The direct scenario a pooled one is compared with. */
const directOf: Record<string, string> = {
  "current-pgbouncer-2proc": "current-postgresql-2proc",
  "create-pgbouncer-2proc": "create-postgresql-2proc"
}

/** The PgBouncer of the pooled scenarios, started once for the run (`pooler`), stopped at its end. */
let pgbouncer: RunningPgBouncer | undefined
const pooler = async (): Promise<RunningPgBouncer> => {
  pgbouncer ??= await startPgBouncer(process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test", { poolSize: 20 })
  return pgbouncer
}

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

const processCount = (scenario: HttpScenario) => scenario.processes ?? 1

/** The profile of each server process of the scenario: `<id>.cpuprofile`, then `<id>-2.cpuprofile`… */
const profileFiles = (scenario: HttpScenario): Array<string> =>
  settings.cpuProf
    ? Array.from({ length: processCount(scenario) }, (_, i) =>
      join(resolve(settings.cpuProf!), `${scenario.id}${i === 0 ? "" : `-${i + 1}`}.cpuprofile`))
    : []

/** Start one server child; with `joinDatabase`, on the database (and account) of another one. */
const startServer = (scenario: HttpScenario, profile: string | undefined, joinDatabase?: string, pooledPort?: number): Promise<RunningServer> =>
  new Promise((resolvePromise, reject) => {
    // Source maps only when profiling: they map the profile back to the TypeScript sources.
    const execArgv = [...builtChildArgv(), ...(profile ? ["--enable-source-maps"] : [])]
    const args = [scenario.server, "--tracing", settings.tracing, "--experiment", settings.experiment]
    if (profile) args.push("--profile", profile)
    if (joinDatabase !== undefined) args.push("--join-database", joinDatabase)
    if (pooledPort !== undefined) args.push("--pgbouncer-port", String(pooledPort))
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

/**
 * Stop the servers, those that joined the first one's database before the first one, which
 * drops it. The CPU time each used over the measured run (µs), in the order given; the first
 * one's includes the few idle seconds the others take to stop.
 */
const stopServers = async (servers: ReadonlyArray<RunningServer>): Promise<Array<number | undefined>> => {
  const [first, ...joined] = servers
  const joinedCpu = await Promise.all(joined.map((server) => server.stop()))
  const firstCpu = first ? await first.stop() : undefined
  return [firstCpu, ...joinedCpu]
}

/** The scenario's server processes: the first creates the database and the account, the others join it. */
const startServers = async (scenario: HttpScenario): Promise<Array<RunningServer>> => {
  const profiles = profileFiles(scenario)
  const port = scenario.pooled ? (await pooler()).port : undefined
  const first = await startServer(scenario, profiles[0], undefined, port)
  const servers = [first]
  try {
    for (let i = 1; i < processCount(scenario); i++) {
      if (first.database === null) throw new Error(`${scenario.id}: several processes need a PostgreSQL server`)
      servers.push(await startServer(scenario, profiles[i], first.database, port))
    }
  } catch (error) {
    await stopServers(servers)
    throw error
  }
  return servers
}

// ---------------------------------------------------------------------------------------
// Measuring

interface Measured {
  readonly kind: "http"
  readonly id: string
  readonly title: string
  readonly requestsPerSecond: number
  readonly requestsTotal: number
  readonly latencyP50: number
  readonly latencyP99: number
  readonly latencyMean: number
  /** The expected statuses, `/`-separated. */
  readonly expectedStatus: string
  readonly expectedCount: number
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  readonly statusCodes: Record<string, number>
  /** CPU time of the server process(es) per completed request (µs), user + system. */
  readonly serverCpuMicrosPerRequest: number | undefined
  /** CPU time of each server process over the measured run (µs): how the load split between them. */
  readonly serverCpuMicros: ReadonlyArray<number | undefined>
}

interface PgbenchMeasured {
  readonly kind: "pgbench"
  readonly id: string
  readonly title: string
  /** pgbench's `tps = … (without initial connection time)`. */
  readonly transactionsPerSecond: number
  readonly transactions: number
  readonly failedTransactions: number
  readonly latencyAverage: number
  /** The measured run's flags (the database left out). */
  readonly command: string
}

interface Failed {
  readonly kind: "failed"
  readonly id: string
  readonly title: string
  readonly error: string
}

type Result = Measured | PgbenchMeasured | Failed

/** Requests per second, or transactions per second for pgbench: what rounds are ranked by. */
const perSecond = (r: Measured | PgbenchMeasured) => (r.kind === "http" ? r.requestsPerSecond : r.transactionsPerSecond)

const probe = async (scenario: HttpScenario, target: Target): Promise<void> => {
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
  if (response.status !== statusesOf(scenario)[0]) {
    throw new Error(`probe answered ${response.status} instead of ${statusesOf(scenario)[0]}: ${text.slice(0, 500)}`)
  }
}

/**
 * One autocannon run against every target at once. Given several URLs, autocannon opens its
 * connections round-robin over them (25 each of 50 on two servers) and reports them together;
 * its typings only declare one URL.
 */
const cannon = (targets: ReadonlyArray<Target>, scenario: HttpScenario, duration: number) => {
  const urls = targets.map((target) => `http://127.0.0.1:${target.port}`)
  return autocannon({
    url: (urls.length === 1 ? urls[0]! : urls) as string,
    connections: settings.connections,
    pipelining: settings.pipelining,
    duration,
    requests: scenario.requests(targets[0]!),
    timeout: 10
  })
}

const measureHttp = async (scenario: HttpScenario): Promise<Measured> => {
  let servers: Array<RunningServer> = []
  try {
    servers = await startServers(scenario)
    // Every process answers with the first one's secret: the account is in the shared database.
    const secret = servers[0]!.secret
    const first = { port: servers[0]!.port, secret }
    const prepared = scenario.prepare === undefined ? first : await scenario.prepare(first)
    const targets = servers.map((server) => ({ ...prepared, port: server.port }))
    for (const target of targets) await probe(scenario, target)
    if (settings.warmup > 0) await cannon(targets, scenario, settings.warmup)
    await Promise.all(servers.map((server) => server.beginMeasure()))
    const result = await cannon(targets, scenario, settings.duration)
    const cpuMicros = await stopServers(servers)
    const statusCodes: Record<string, number> = {}
    for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stats.count ?? 0
    const allMeasured = cpuMicros.every((micros) => micros !== undefined)
    const totalCpuMicros = cpuMicros.reduce((sum: number, micros) => sum + (micros ?? 0), 0)
    return {
      kind: "http",
      id: scenario.id,
      title: scenario.title,
      requestsPerSecond: result.requests.mean,
      requestsTotal: result.requests.total,
      latencyP50: result.latency.p50,
      latencyP99: result.latency.p99,
      latencyMean: result.latency.mean,
      expectedStatus: statusesOf(scenario).join("/"),
      expectedCount: [...new Set(statusesOf(scenario))].reduce((n, status) => n + (statusCodes[String(status)] ?? 0), 0),
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statusCodes,
      serverCpuMicrosPerRequest: allMeasured ? totalCpuMicros / Math.max(1, result.requests.total) : undefined,
      serverCpuMicros: cpuMicros
    }
  } finally {
    await stopServers(servers)
  }
}

/**
 * pgbench as commonly run: scale 10 (1,000,000 accounts), 10 clients (as many as the
 * product's pool has connections), 2 threads (the machine's 2 cores), prepared statements
 * (the product's driver prepares its statements too).
 */
const PGBENCH_SCALE = 10
const PGBENCH_CLIENTS = 10
const PGBENCH_THREADS = 2
const pgbenchBinary = process.env["PGBENCH"] ?? "pgbench"

/** pgbench's `-T` takes whole seconds. */
const pgbenchSeconds = (seconds: number) => Math.max(1, Math.round(seconds))

/** Run pgbench on the database at `url` (kept out of error messages: it may hold a password); its standard output. */
const runPgbench = (args: ReadonlyArray<string>, url: string): Promise<string> =>
  new Promise((resolvePromise, reject) => {
    execFile(pgbenchBinary, [...args, url], { maxBuffer: 16 * 2 ** 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${pgbenchBinary} ${args.join(" ")} failed: ${stderr.trim() || error.message}`))
      else resolvePromise(stdout)
    })
  })

/** One figure of pgbench's report; `fallback` when an older pgbench does not print it. */
const pgbenchFigure = (output: string, pattern: RegExp, fallback?: number): number => {
  const match = pattern.exec(output)
  if (match) return Number(match[1])
  if (fallback !== undefined) return fallback
  throw new Error(`pgbench's report has no ${pattern.source}:\n${output}`)
}

const measurePgbench = async (scenario: PgbenchScenario): Promise<PgbenchMeasured> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const { url } = await Effect.runPromise(Scope.extend(freshDatabase, scope))
    await runPgbench(["--initialize", "--scale", String(PGBENCH_SCALE), "--quiet"], url)
    const run = ["--client", String(PGBENCH_CLIENTS), "--jobs", String(PGBENCH_THREADS), "--protocol", "prepared", ...scenario.script]
    // The warm-up fills PostgreSQL's caches with the tables, as the other scenarios' warm-up does the JIT.
    if (settings.warmup > 0) await runPgbench([...run, "--time", String(pgbenchSeconds(settings.warmup))], url)
    const measured = [...run, "--time", String(pgbenchSeconds(settings.duration))]
    const report = await runPgbench(measured, url)
    return {
      kind: "pgbench",
      id: scenario.id,
      title: scenario.title,
      transactionsPerSecond: pgbenchFigure(report, /^tps = ([\d.]+) \(without initial connection time\)$/m),
      transactions: pgbenchFigure(report, /^number of transactions actually processed: (\d+)/m),
      failedTransactions: pgbenchFigure(report, /^number of failed transactions: (\d+)/m, 0),
      latencyAverage: pgbenchFigure(report, /^latency average = ([\d.]+) ms$/m),
      command: `pgbench ${measured.join(" ")}`
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const measure = async (scenario: Scenario): Promise<Result> => {
  try {
    return scenario.kind === "http" ? await measureHttp(scenario) : await measurePgbench(scenario)
  } catch (error) {
    return { kind: "failed", id: scenario.id, title: scenario.title, error: String((error as Error)?.message ?? error) }
  }
}

// ---------------------------------------------------------------------------------------
// Reporting

const isMeasured = (r: Result): r is Measured | PgbenchMeasured => r.kind !== "failed"

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`
/** A throughput with its unit: req/s for the servers, TPS for pgbench. */
const rate = (r: Measured | PgbenchMeasured) => `${fmt(perSecond(r))} ${r.kind === "http" ? "req/s" : "TPS"}`

const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, right: ReadonlyArray<boolean>) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) =>
    `| ${cells.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(" | ")} |`
  const rule = `|${widths.map((w, i) => (right[i] ? `${"-".repeat(w + 1)}:` : `${"-".repeat(w + 2)}`)).join("|")}|`
  return [line(header), rule, ...rows.map(line)].join("\n")
}

const loadLine = () => loadavg().map((n) => n.toFixed(2)).join(" ")

const progressLine = (result: Result): string => {
  if (result.kind === "failed") return `FAILED: ${result.error}`
  if (result.kind === "pgbench") {
    return `${fmt(result.transactionsPerSecond)} TPS, latency average ${result.latencyAverage} ms, ${fmt(result.transactions)} transactions` +
      (result.failedTransactions > 0 ? `, ${result.failedTransactions} failed` : "")
  }
  const cpu = result.serverCpuMicros
  const cpuTotal = cpu.reduce((sum: number, micros) => sum + (micros ?? 0), 0)
  return `${fmt(result.requestsPerSecond)} req/s, p50 ${result.latencyP50} ms, p99 ${result.latencyP99} ms` +
    (result.serverCpuMicrosPerRequest === undefined ? "" : `, ${fmt(result.serverCpuMicrosPerRequest)} µs CPU/req`) +
    // How the load split between the processes, by the CPU each used.
    (cpu.length > 1 && cpuTotal > 0 ? `, CPU split ${cpu.map((micros) => pct((micros ?? 0) / cpuTotal)).join(" / ")}` : "") +
    (result.non2xx + result.errors > 0 ? `, non-2xx ${result.non2xx}, errors ${result.errors}` : "")
}

const main = async () => {
  const cpu = cpus()[0]?.model ?? "unknown CPU"
  console.log(
    `Syllabus benchmarks: ${selected.length} scenario(s), ${settings.duration} s each after ${settings.warmup} s warm-up` +
      (settings.rounds > 1 ? `, ${settings.rounds} rounds (median kept), ` : ", ") +
      `${settings.connections} connections, pipelining ${settings.pipelining}, tracing ${settings.tracing}` +
      (settings.experiment === "none" ? "" : `, EXPERIMENT ${settings.experiment} (not the product)`)
  )
  if (selected.some((s) => s.kind === "pgbench")) {
    console.log(
      `pgbench: scale ${PGBENCH_SCALE}, ${PGBENCH_CLIENTS} clients, ${PGBENCH_THREADS} threads, prepared statements, ` +
        `${pgbenchSeconds(settings.duration)} s` +
        (settings.warmup > 0 ? ` after an unmeasured ${pgbenchSeconds(settings.warmup)} s run` : "") +
        " (whole seconds), on a fresh database of its own"
    )
  }
  console.log(
    `Machine: ${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}/${process.arch}, ` +
      `load average ${loadLine()} (other work on the machine skews every figure)`
  )
  if (settings.cpuProf) mkdirSync(resolve(settings.cpuProf), { recursive: true })

  // With several rounds, each round runs every scenario once, so that a neighbour's load
  // spreads over all of them; each scenario then keeps its median round (by req/s or TPS).
  const rounds: Array<Array<Result>> = []
  for (let round = 1; round <= settings.rounds; round++) {
    if (settings.rounds > 1) console.log(`Round ${round} of ${settings.rounds}`)
    const runs: Array<Result> = []
    for (const scenario of selected) {
      process.stdout.write(`- ${scenario.id.padEnd(24)} ${scenario.title} … `)
      const result = await measure(scenario)
      runs.push(result)
      console.log(progressLine(result))
    }
    rounds.push(runs)
  }
  const results: Array<Result> = selected.map((scenario, i) => {
    const runs = rounds.map((runs) => runs[i]!)
    const failed = runs.find((r) => !isMeasured(r))
    if (failed) return failed
    const sorted = runs.filter(isMeasured).sort((a, b) => perSecond(a) - perSecond(b))
    return sorted[Math.floor((sorted.length - 1) / 2)]!
  })

  const measured = new Map(results.filter(isMeasured).map((r) => [r.id, r]))
  const http = (id: string) => {
    const r = measured.get(id)
    return r?.kind === "http" ? r : undefined
  }
  const raw = http("raw")
  const bare = http("effect")
  const tpcb = measured.get("pgbench-tpcb")

  console.log(
    "\nSummary (req/s: mean of autocannon's per-second samples; latency in ms; CPU µs/req: user + system time of the server process(es) per response;" +
      " pgbench rows: TPS without initial connection time, transactions, failed transactions under errors)\n"
  )
  const serverOnPostgresql = (id: string) => selected.some((s) => s.id === id && s.kind === "http" && s.server === "postgresql")
  console.log(
    table(
      [
        "scenario",
        "req/s",
        "p50",
        "p99",
        "expected",
        "non-2xx",
        "errors",
        "CPU µs/req",
        "vs bare Effect",
        "vs raw node",
        ...(tpcb ? ["vs pgbench TPC-B"] : [])
      ],
      results.map((r) => {
        const vsTpcb = tpcb ? [r.kind === "http" && serverOnPostgresql(r.id) ? pct(r.requestsPerSecond / perSecond(tpcb)) : ""] : []
        if (r.kind === "failed") return [r.id, "failed", "", "", "", "", "", "", "", "", ...vsTpcb]
        if (r.kind === "pgbench") {
          return [r.id, fmt(r.transactionsPerSecond), "", "", `${fmt(r.transactions)} tx`, "", String(r.failedTransactions), "", "", "", ...vsTpcb]
        }
        return [
          r.id,
          fmt(r.requestsPerSecond),
          String(r.latencyP50),
          String(r.latencyP99),
          `${fmt(r.expectedCount)} × ${r.expectedStatus}`,
          String(r.non2xx),
          String(r.errors),
          r.serverCpuMicrosPerRequest === undefined ? "" : fmt(r.serverCpuMicrosPerRequest),
          bare && r.id !== "effect" && r.id !== "raw" ? pct(r.requestsPerSecond / bare.requestsPerSecond) : "",
          raw && r.id !== "raw" ? pct(r.requestsPerSecond / raw.requestsPerSecond) : "",
          ...vsTpcb
        ]
      }),
      [false, true, true, true, true, true, true, true, true, true, true]
    )
  )
  console.log(`Load average at the end: ${loadLine()}`)
  for (const r of results) {
    if (r.kind === "http" && Object.keys(r.statusCodes).some((c) => !r.expectedStatus.split("/").includes(c))) {
      console.log(`  ${r.id}: status codes ${JSON.stringify(r.statusCodes)}`)
    }
  }
  for (const r of results) if (r.kind === "failed") console.log(`  ${r.id} failed: ${r.error}`)

  /** A goal: `id`'s throughput against `floorId`'s in this run; said to be unmeasured when only one of them ran. */
  const goal = (label: string, id: string, floorId: string, target: number): number | undefined => {
    const value = measured.get(id)
    const floor = measured.get(floorId)
    if (!selected.some((s) => s.id === id || s.id === floorId)) return undefined
    if (!value || !floor) {
      const missing = [id, floorId].filter((x) => !measured.has(x))
      console.log(`- ${label} ≥ ${target * 100}%: not measured (${missing.join(" and ")} did not run or failed)`)
      return undefined
    }
    const ratio = perSecond(value) / perSecond(floor)
    console.log(`- ${label} ≥ ${target * 100}%: ${pct(ratio)} (${rate(value)} ÷ ${rate(floor)}) — ${ratio >= target ? "met" : "NOT met"}`)
    return ratio
  }
  /** The same ratio for a `-2proc` scenario, as a note under its goal. */
  const withTwoProcesses = (id: string, floorId: string) => {
    const value = measured.get(id)
    const floor = measured.get(floorId)
    if (value && floor) console.log(`    with 2 server processes: ${pct(perSecond(value) / perSecond(floor))} (${rate(value)})`)
  }

  console.log("\nGoals (ratios of throughput within this run):")
  const memoryRatio = goal(
    "issue 2: GET /credentials/current on the memory store, share of the bare Effect route",
    "current-memory",
    "effect",
    0.6
  )
  const current = http("current-memory")
  if (memoryRatio !== undefined && current?.serverCpuMicrosPerRequest && bare?.serverCpuMicrosPerRequest) {
    console.log(
      `    by server CPU per request (less sensitive to a busy machine): ` +
        `${fmt(bare.serverCpuMicrosPerRequest)} µs vs ${fmt(current.serverCpuMicrosPerRequest)} µs = ` +
        pct(bare.serverCpuMicrosPerRequest / current.serverCpuMicrosPerRequest)
    )
  }
  goal("issue 10: GET /credentials/current on PostgreSQL, share of pgbench TPC-B", "current-postgresql", "pgbench-tpcb", 0.5)
  withTwoProcesses("current-postgresql-2proc", "pgbench-tpcb")
  goal("issue 10: idempotent POST /credentials on PostgreSQL, share of pgbench TPC-B", "create-postgresql", "pgbench-tpcb", 0.3)
  withTwoProcesses("create-postgresql-2proc", "pgbench-tpcb")
  goal("issue 24: idempotent POST /products on PostgreSQL, share of pgbench TPC-B", "product-postgresql", "pgbench-tpcb", 0.2)
  const mixedRun = http("mixed-postgresql-2proc")
  if (mixedRun !== undefined) {
    console.log(`- issue 24: mixed reads and writes on 2 server processes answer no 503: ${mixedRun.statusCodes["503"] ?? 0} × 503 of ${fmt(mixedRun.requestsTotal)} — ${(mixedRun.statusCodes["503"] ?? 0) === 0 && mixedRun.non2xx === 0 ? "met" : "NOT met"}`)
  }

  /** Each scenario of `pairs` against the one it is compared with, when both ran. */
  const compare = (heading: string, pairs: Record<string, string>) => {
    const ran = Object.entries(pairs).filter(([id, against]) => http(id) && http(against))
    if (ran.length > 0) console.log(`\n${heading}`)
    for (const [id, againstId] of ran) {
      const one = http(id)!
      const against = http(againstId)!
      console.log(
        `- ${id}: ${rate(one)} = ${pct(one.requestsPerSecond / against.requestsPerSecond)} of ${againstId}'s ${rate(against)}` +
          (one.serverCpuMicrosPerRequest && against.serverCpuMicrosPerRequest
            ? `; server CPU ${fmt(one.serverCpuMicrosPerRequest)} µs/req against ${fmt(against.serverCpuMicrosPerRequest)}`
            : "")
      )
    }
  }
  compare("Two server processes on one database, against one (same run):", singleProcessOf)
  compare("Through PgBouncer in transaction mode, against direct connections (same run):", directOf)
  await pgbouncer?.stop()

  if (settings.cpuProf) {
    for (const scenario of selected) {
      if (scenario.kind !== "http") continue
      for (const [i, file] of profileFiles(scenario).entries()) {
        if (!existsSync(file)) continue
        const which = processCount(scenario) > 1 ? ` (process ${i + 1})` : ""
        console.log(`\nCPU profile of the ${scenario.id} server${which}, measured run only (${file}):`)
        console.log(formatSummary(summarize(readProfile(file), 15)))
      }
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
