/**
 * The in-process double (issue 12): requests per second and time to a fresh instance of
 * `@syllabus/testing`, of the standalone server (packages/server, in-memory store) over HTTP,
 * and of Prism's mock server (`@stoplight/prism-cli@5 mock`) on the same description. See
 * docs/benchmarks.md, "The in-process double".
 *
 *   node --import tsx bench/double.ts                      every target
 *   node --import tsx bench/double.ts --duration 3 --fresh 50 --only double,server
 *
 * The same request mix for each target, sent by the same client loop (`concurrency` requests
 * in flight): list products, read one product, create a showcase (with an Idempotency-Key),
 * list events. In process the loop calls `api.fetch`; over HTTP, Node's `fetch`. "Fresh
 * instance": from asking to the first answered request, with an account and its secrets
 * ready (the double: `createTestApi()` after 20 others; a server or Prism: from spawning the
 * process until it answers). Ratios are against the standalone server, measured in the same run.
 */
import { createTestApi, type TestApi } from "@syllabus/testing"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { cpus, loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string", default: "5" },
    concurrency: { type: "string", default: "8" },
    fresh: { type: "string", default: "100" },
    "fresh-processes": { type: "string", default: "3" },
    only: { type: "string", default: "double,server,prism" },
    /** `build` (default when the packages are built) or `source` (through tsx). */
    server: { type: "string" },
    rounds: { type: "string", default: "3" }
  }
})
const DURATION_MS = Number(flags.duration) * 1000
const CONCURRENCY = Number(flags.concurrency)
const FRESH = Number(flags.fresh)
const FRESH_PROCESSES = Number(flags["fresh-processes"])
/** Instances of the double made (and closed) before the measured ones. */
const WARMUP_INSTANCES = 20
const ONLY = new Set(flags.only.split(","))
const ROUNDS = Number(flags.rounds)
const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)))

// ---------------------------------------------------------------------------------------
// The request mix and the client loop

type Send = (path: string, init?: RequestInit) => Promise<Response>

interface Mix {
  readonly productId: string
}

const mixRequests = (secret: string, mix: Mix): Array<readonly [string, RequestInit]> => {
  const auth = { authorization: `Bearer ${secret}` }
  return [
    ["/products?limit=10", { headers: auth }],
    [`/products/${mix.productId}`, { headers: auth }],
    ["/showcases", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ name: "Bench shelf" }) }],
    ["/events?limit=5", { headers: auth }]
  ]
}

interface Throughput {
  readonly requestsPerSecond: number
  readonly statuses: Record<string, number>
}

/** `CONCURRENCY` loops sending the mix in turn for `DURATION_MS`; every answer is read whole. */
const throughput = async (send: Send, secret: string, mix: Mix): Promise<Throughput> => {
  const requests = mixRequests(secret, mix)
  const statuses: Record<string, number> = {}
  let done = 0
  let key = 0
  const until = performance.now() + DURATION_MS
  const started = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, lane) => {
      for (let i = lane; performance.now() < until; i++) {
        const [path, init] = requests[i % requests.length]!
        const headers = { ...(init.headers as Record<string, string>) }
        if (init.method === "POST") headers["idempotency-key"] = `bench-${process.pid}-${++key}`
        const res = await send(path, { ...init, headers })
        await res.arrayBuffer()
        statuses[res.status] = (statuses[res.status] ?? 0) + 1
        done++
      }
    })
  )
  return { requestsPerSecond: done / ((performance.now() - started) / 1000), statuses }
}

const quantile = (sorted: ReadonlyArray<number>, q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

interface Fresh {
  readonly medianMs: number
  readonly p90Ms: number
  readonly samples: number
  /** In process only: the CPU time this process spent (less sensitive to other work on the machine than the wall time). */
  readonly cpuMedianMs?: number
}

const freshSummary = (times: Array<number>, cpuTimes?: Array<number>): Fresh => {
  const sorted = [...times].sort((a, b) => a - b)
  const summary = { medianMs: quantile(sorted, 0.5), p90Ms: quantile(sorted, 0.9), samples: sorted.length }
  return cpuTimes ? { ...summary, cpuMedianMs: quantile([...cpuTimes].sort((a, b) => a - b), 0.5) } : summary
}

// ---------------------------------------------------------------------------------------
// Targets

/** A target after its fresh-instance runs: its figure, and instances kept running for the throughput rounds. */
interface Prepared {
  readonly fresh: Fresh | string
  readonly loads: ReadonlyArray<{ readonly target: string; readonly send: Send; readonly secret: string; readonly mix: Mix }>
  readonly stop: () => Promise<void>
}

const seedProduct = async (send: Send, secret: string): Promise<Mix> => {
  const post = (path: string, body: unknown, key: string) =>
    send(path, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify(body)
    }).then((res) => res.json() as Promise<any>)
  const showcase = await post("/showcases", { name: "Bench" }, `seed-s-${Date.now()}`)
  const product = await post("/products", { format: "course", name: "Bench product", showcase_id: showcase.data.id }, `seed-p-${Date.now()}`)
  return { productId: String(product.data.id) }
}

const double = async (): Promise<Prepared> => {
  // The first instance of a process pays for what later ones share (keys, modules); the
  // next ones run while the JIT compiles. A suite makes many: the steady state is the figure.
  for (let i = 0; i < WARMUP_INSTANCES; i++) await (await createTestApi()).close()
  const times: Array<number> = []
  const cpuTimes: Array<number> = []
  for (let i = 0; i < FRESH; i++) {
    const started = performance.now()
    const cpu = process.cpuUsage()
    const api = await createTestApi()
    const res = await api.fetch("/credentials/current", { headers: { authorization: `Bearer ${api.secrets.test}` } })
    await res.arrayBuffer()
    times.push(performance.now() - started)
    const used = process.cpuUsage(cpu)
    cpuTimes.push((used.user + used.system) / 1000)
    if (res.status !== 200) throw new Error(`fresh instance answered ${res.status}`)
    await api.close()
  }
  const api: TestApi = await createTestApi()
  const send: Send = (path, init) => api.fetch(path, init)
  const mix = await seedProduct(send, api.secrets.test)
  // The same instance over its socket too: what HTTP adds, apart from the process.
  const base = await api.listen()
  return {
    fresh: freshSummary(times, cpuTimes),
    loads: [
      { target: "@syllabus/testing, in process (api.fetch)", send, secret: api.secrets.test, mix },
      { target: "@syllabus/testing, over its socket (api.listen())", send: (path, init) => fetch(base + path, init), secret: api.secrets.test, mix }
    ],
    stop: () => api.close()
  }
}

const freePort = () =>
  new Promise<number>((resolvePort) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const port = (probe.address() as { port: number }).port
      probe.close(() => resolvePort(port))
    })
  })

interface Spawned {
  readonly child: ChildProcess
  readonly output: () => string
}

/** Every process group this run spawned and that is still running: killed when the run ends, however it ends. */
const running = new Set<ChildProcess>()
process.on("exit", () => {
  for (const child of running) {
    try {
      process.kill(-child.pid!, "SIGKILL")
    } catch {
      // Already gone.
    }
  }
})

const spawnProcess = (command: string, args: ReadonlyArray<string>, env: Record<string, string>): Spawned => {
  // No DATABASE_URL: the server keeps its records in memory.
  const { DATABASE_URL: _database, ...inherited } = process.env
  // A process group of its own: `npx` runs Prism as its child, and a signal to npx alone leaves Prism running.
  const child = spawn(command, args, { cwd: ROOT, env: { ...inherited, ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true })
  running.add(child)
  child.once("exit", () => running.delete(child))
  let output = ""
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  return { child, output: () => output }
}

/** Signal the spawned process's whole group (the process and its children). */
const signal = (spawned: Spawned, name: NodeJS.Signals) => {
  try {
    process.kill(-spawned.child.pid!, name)
  } catch {
    // Already gone.
  }
}

/** Stop the spawned process and its children: SIGTERM, then SIGKILL after 5 s. */
const stop = (spawned: Spawned) =>
  new Promise<void>((done) => {
    const kill = setTimeout(() => signal(spawned, "SIGKILL"), 5000)
    const finish = () => {
      clearTimeout(kill)
      // The children may outlive their parent: the group goes too.
      signal(spawned, "SIGKILL")
      done()
    }
    if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) return finish()
    spawned.child.once("exit", finish)
    signal(spawned, "SIGTERM")
  })

/** Poll `probe` until it holds (every 20 ms), or stop the process and fail after `timeoutMs` with its output. */
const until = async (spawned: Spawned, probe: () => Promise<boolean>, timeoutMs: number) => {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    if (spawned.child.exitCode !== null) {
      await stop(spawned)
      throw new Error(`exited (${spawned.child.exitCode}): ${spawned.output().slice(-2000)}`)
    }
    if (await probe().catch(() => false)) return
    if (performance.now() > deadline) {
      await stop(spawned)
      throw new Error(`not ready within ${timeoutMs} ms: ${spawned.output().slice(-2000)}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** The standalone server from its build when the packages are built (`tsc -b`), else from the sources through tsx. */
const serverCommand = (): [string, Array<string>] => {
  const built =
    flags.server !== "source" &&
    ["server/dist/main.js", "http/dist/index.js", "core/dist/index.js", "memory/dist/index.js"].every((f) => existsSync(join(ROOT, "packages", f)))
  return built
    ? [process.execPath, ["--conditions=@syllabus/built", join(ROOT, "packages/server/dist/main.js")]]
    : [process.execPath, ["--import", "tsx", join(ROOT, "packages/server/src/main.ts")]]
}

const startServer = async () => {
  const port = await freePort()
  const [command, args] = serverCommand()
  const spawned = spawnProcess(command, args, {
    PORT: String(port),
    HOST: "127.0.0.1",
    RATE_LIMITS: "off",
    FILE_STORAGE: "memory",
    REQUEST_LOG: "off"
  })
  const base = `http://127.0.0.1:${port}/api/v3`
  let secret = ""
  await until(
    spawned,
    async () => {
      const found = spawned.output().match(/sandbox\s+crd_\S+\s+(\S+)/)
      if (!found) return false
      secret = found[1]!
      return (await fetch(`${base}/credentials/current`, { headers: { authorization: `Bearer ${secret}` } })).status === 200
    },
    60_000
  )
  return { spawned, base, secret }
}

const server = async (): Promise<Prepared> => {
  const times: Array<number> = []
  for (let i = 0; i < FRESH_PROCESSES; i++) {
    const started = performance.now()
    const running = await startServer()
    times.push(performance.now() - started)
    await stop(running.spawned)
  }
  const running = await startServer()
  const send: Send = (path, init) => fetch(running.base + path, init)
  const mix = await seedProduct(send, running.secret)
  const from = serverCommand()[1].at(-1)!.endsWith(".js") ? "its build" : "sources through tsx"
  return {
    fresh: freshSummary(times),
    loads: [{ target: `standalone server (${from}), memory store, over HTTP`, send, secret: running.secret, mix }],
    stop: () => stop(running.spawned)
  }
}

/** Prism on the description the API serves, saved to a file. */
const prism = async (): Promise<Prepared> => {
  const api = await createTestApi()
  const res = await api.fetch("/openapi.json", { headers: { authorization: `Bearer ${api.secrets.test}` } })
  const description = await res.text()
  await api.close()
  if (res.status !== 200) return { fresh: `GET /api/v3/openapi.json answered ${res.status}`, loads: [], stop: async () => {} }
  const file = join(mkdtempSync(join(tmpdir(), "syllabus-prism-")), "openapi.json")
  writeFileSync(file, description)
  const start = async () => {
    const port = await freePort()
    const spawned = spawnProcess("npx", ["-y", "@stoplight/prism-cli@5", "mock", file, "-h", "127.0.0.1", "-p", String(port)], {})
    const origin = `http://127.0.0.1:${port}`
    await until(spawned, async () => (await fetch(`${origin}/products`, { headers: { authorization: "Bearer sk_test_x" } })).status > 0, 120_000)
    // Prism serves the description's paths at its root when the server URL is relative (`/api/v3`); under it otherwise.
    const atRoot = (await fetch(`${origin}/products`, { headers: { authorization: "Bearer sk_test_x" } })).status !== 404
    return { spawned, base: atRoot ? origin : `${origin}/api/v3` }
  }
  // The first start installs Prism into npx's cache; it is not counted.
  try {
    await stop((await start()).spawned)
  } catch (error) {
    return { fresh: `did not start: ${String(error).slice(0, 500)}`, loads: [], stop: async () => {} }
  }
  const times: Array<number> = []
  for (let i = 0; i < FRESH_PROCESSES; i++) {
    const started = performance.now()
    const running = await start()
    times.push(performance.now() - started)
    await stop(running.spawned)
  }
  const running = await start()
  const send: Send = (path, init) => fetch(running.base + path, init)
  return {
    fresh: freshSummary(times),
    // Prism keeps no state: any well-formed ID is answered.
    loads: [{ target: "Prism 5 (mock), over HTTP", send, secret: "sk_test_bench", mix: { productId: "prd_000000001" } }],
    stop: () => stop(running.spawned)
  }
}

// ---------------------------------------------------------------------------------------

const prepared = new Map<string, Prepared>()
for (const [name, prepare] of [["server", server], ["double", double], ["prism", prism]] as const) {
  if (!ONLY.has(name)) continue
  try {
    prepared.set(name, await prepare())
  } catch (error) {
    prepared.set(name, { fresh: `failed: ${String(error).slice(0, 500)}`, loads: [], stop: async () => {} })
  }
}

// Throughput in rounds, the targets in turn within each, so that a change of the machine's
// load falls on every target alike; each target's median round is kept.
const loads = [...prepared.values()].flatMap((p) => p.loads)
const rounds = new Map<string, Array<Throughput>>(loads.map((l) => [l.target, []]))
try {
  // Round -1 warms each target up (a server process starts cold: its JIT has compiled nothing) and is not kept.
  for (let round = -1; round < ROUNDS; round++) {
    for (const load of loads) {
      const measured = await throughput(load.send, load.secret, load.mix)
      if (round >= 0) rounds.get(load.target)!.push(measured)
    }
  }
} finally {
  for (const p of prepared.values()) await p.stop()
}

const medianRound = (all: ReadonlyArray<Throughput>): Throughput => [...all].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)[Math.floor(all.length / 2)]!

const baselineFresh = prepared.get("server")?.fresh
const baselineLoad = prepared.get("server")?.loads[0]
const baselineRps = baselineLoad ? medianRound(rounds.get(baselineLoad.target)!).requestsPerSecond : undefined
const ratio = (value: number, base: number | undefined) => (base === undefined ? "" : ` (${(value / base).toFixed(2)}×)`)
console.log(`# ${new Date().toISOString()}  ${cpus().length} × ${cpus()[0]?.model ?? "?"}  load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`)
console.log(
  `# throughput: ${ROUNDS} rounds of ${DURATION_MS / 1000} s per target after one to warm up, ${CONCURRENCY} in flight, median round; fresh instances: ${FRESH} (double, after ${WARMUP_INSTANCES}), ${FRESH_PROCESSES} (processes)`
)
for (const [name, p] of prepared) {
  console.log(`\n${name}`)
  if (typeof p.fresh === "string") console.log(`  fresh instance: ${p.fresh}`)
  else {
    const base = baselineFresh && typeof baselineFresh !== "string" ? baselineFresh.medianMs : undefined
    const cpu = p.fresh.cpuMedianMs === undefined ? "" : `; CPU median ${p.fresh.cpuMedianMs.toFixed(1)} ms`
    console.log(`  fresh instance: median ${p.fresh.medianMs.toFixed(1)} ms${ratio(p.fresh.medianMs, base)}, p90 ${p.fresh.p90Ms.toFixed(1)} ms (${p.fresh.samples} samples)${cpu}`)
  }
  for (const load of p.loads) {
    const all = rounds.get(load.target)!
    const median = medianRound(all)
    console.log(
      `  ${load.target}: ${median.requestsPerSecond.toFixed(0)} requests/s${ratio(median.requestsPerSecond, baselineRps)}` +
        ` (rounds ${all.map((r) => r.requestsPerSecond.toFixed(0)).join(", ")}); statuses ${JSON.stringify(median.statuses)}`
    )
  }
}
process.exit(0)
