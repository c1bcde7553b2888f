/**
 * Fair background work (issue 11, part 4): webhook delivery, operations and the housekeeping
 * share a bounded budget per process, fair across accounts; delivery claims come from a
 * due-time queue per tenant; health is recomputed coalesced, not per attempt; the workers give
 * the event loop a turn after each unit of work; on PostgreSQL they run on a pool of their own.
 *
 * Receivers are local: a "dead" one accepts connections and never answers (each attempt holds
 * its slot until the webhook's `timeout_ms`), a live one answers 200. Tests assert on counts
 * (requests in flight at the dead receiver, health recomputations per attempt, attempts per
 * turn of the event loop), and on a delivery arriving within a bound far below what the
 * backlog ahead of it would take.
 */
import {
  BackgroundStore,
  DEFAULT_BACKGROUND_PER_ACCOUNT,
  Idempotency,
  makeBackgroundBudget,
  RateLimitStore,
  Records,
  UnitOfWork,
  WEBHOOK_ATTEMPT_TYPE,
  WEBHOOK_QUEUE_TYPE,
  WebhookSender
} from "@syllabus/core"
import { makeFetchHandler } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { BACKGROUND_APPLICATION_NAME, pgLayer } from "@syllabus/pg"
import { MemoryFileStorage } from "@syllabus/storage"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { createServer, type Server } from "node:http"
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net"
import { describe, expect, it } from "vitest"
import { eachStore, type Harness, listenLocalReceiver } from "../support/harness.js"
import { eventually } from "../support/eventually.js"
import { freshPgDatabase } from "../support/pg.js"

// ---------------------------------------------------------------------------------------
// Receivers

interface DeadReceiver {
  url(path: string): string
  /** Requests received and not answered (their connection still open), in all and by path. */
  inFlight(path?: string): number
  /** The most ever in flight at once, in all and by path. */
  max(path?: string): number
  close(): Promise<void>
}

/** Accepts, reads the request line, never answers. */
const deadReceiver = async (): Promise<DeadReceiver> => {
  const sockets = new Set<Socket>()
  const open = new Map<string, number>()
  const most = new Map<string, number>()
  const bump = (key: string, by: number) => {
    const n = (open.get(key) ?? 0) + by
    open.set(key, n)
    most.set(key, Math.max(most.get(key) ?? 0, n))
  }
  const server = createTcpServer((socket) => {
    sockets.add(socket)
    let head = ""
    let path: string | undefined
    socket.on("data", (chunk: Buffer) => {
      if (path !== undefined) return
      head += chunk.toString("latin1")
      const line = /^POST (\S+) HTTP/.exec(head)
      if (line === null) return
      path = line[1]!
      bump("", 1)
      bump(path, 1)
    })
    socket.on("close", () => {
      sockets.delete(socket)
      if (path === undefined) return
      bump("", -1)
      bump(path, -1)
    })
    socket.on("error", () => undefined)
  })
  await listenLocalReceiver(server)
  const port = (server.address() as AddressInfo).port
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    inFlight: (path = "") => open.get(path) ?? 0,
    max: (path = "") => most.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}

/** Answers 200 to everything; counts what it got. */
const liveReceiver = async () => {
  const received: Array<string> = []
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      received.push(String(req.headers["webhook-id"]))
      res.writeHead(200).end("ok")
    })
  })
  await listenLocalReceiver(server)
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

// ---------------------------------------------------------------------------------------
// The API

const api = (h: Harness, secret: string) => ({
  post: (path: string, json?: unknown) => h.request("POST", `/api/v3${path}`, { secret, json }),
  patch: (path: string, json: unknown) => h.request("PATCH", `/api/v3${path}`, { secret, json })
})

const sandboxSecret = (account: { readonly credentials: ReadonlyArray<{ readonly environment: string; readonly secret: string }> }) =>
  account.credentials.find((c) => c.environment === "sandbox")!.secret

let subdomains = 0
const freshSubdomain = (prefix: string) => `${prefix}-${Date.now()}-${++subdomains}`

/** A webhook of the account (sandbox) on `tag.created`; the tags written with it. */
const hookAndWrites = async (h: Harness, secret: string, url: string, writes: number, fields: Record<string, unknown> = {}) => {
  const client = api(h, secret)
  const hook = await client.post("/webhooks", { url, event_types: ["tag.created"], max_per_second: 100, ...fields })
  expect(hook.status).toBe(201)
  for (let i = 0; i < writes; i++) {
    const group = await client.post("/tags", { name: `g-${Date.now()}-${i}` })
    expect(group.status).toBe(201)
  }
  return { id: hook.body.data.id as string, off: () => client.patch(`/webhooks/${hook.body.data.id}`, { status: "inactive" }) }
}

// ---------------------------------------------------------------------------------------

eachStore("fair background work: accounts in turn", (h) => {
  it("an account's backlog at a dead receiver holds its share of the budget, and another account's first delivery arrives at once", async () => {
    const dead = await deadReceiver()
    const live = await liveReceiver()
    const hooks: Array<{ off: () => Promise<unknown> }> = []
    try {
      // Account A: 24 deliveries to a receiver that never answers, each holding its slot 30 s.
      hooks.push(await hookAndWrites(h(), h().test, dead.url("/a"), 24, { timeout_ms: 30_000 }))
      // A holds its share of the budget, no more: the rest of its backlog waits.
      await eventually(async () => expect(dead.inFlight("/a")).toBe(DEFAULT_BACKGROUND_PER_ACCOUNT), 20_000)
      // Account B: one delivery to a live receiver.
      const b = await h().openAccount(freshSubdomain("fair-b"))
      const started = Date.now()
      hooks.push(await hookAndWrites(h(), sandboxSecret(b), live.url, 1))
      // A's backlog would take 24 × 30 s serially, and 30 s before any slot of A's frees up:
      // B's delivery comes well before either.
      await eventually(async () => expect(live.received).toHaveLength(1), 15_000)
      expect(Date.now() - started).toBeLessThan(15_000)
      expect(dead.max("/a")).toBe(DEFAULT_BACKGROUND_PER_ACCOUNT)
    } finally {
      for (const hook of hooks) await hook.off()
      await dead.close()
      await live.close()
    }
  }, 90_000)
})

const budgetOptions = { concurrency: 6, perAccount: 2 }

eachStore(
  "fair background work: the budget",
  (h) => {
    it("never more sends in flight than the budget allows, nor more than its share for one account", async () => {
      const dead = await deadReceiver()
      const hooks: Array<{ off: () => Promise<unknown> }> = []
      const budget = makeBackgroundBudget(budgetOptions)
      try {
        // Five accounts, three deliveries each, to a receiver that never answers: 15 could be sent at once.
        hooks.push(await hookAndWrites(h(), h().test, dead.url("/0"), 3, { timeout_ms: 30_000 }))
        for (let n = 1; n < 5; n++) {
          const account = await h().openAccount(freshSubdomain(`budget-${n}`))
          hooks.push(await hookAndWrites(h(), sandboxSecret(account), dead.url(`/${n}`), 3, { timeout_ms: 30_000 }))
        }
        // The deliveries' share of the budget fills up…
        await eventually(async () => expect(dead.inFlight()).toBe(budget.capOf("delivery")), 20_000)
        // …and stays there: nothing more starts while every slot hangs.
        await new Promise((r) => setTimeout(r, 1500))
        expect(dead.max()).toBe(budget.capOf("delivery"))
        expect(dead.max()).toBeLessThanOrEqual(budgetOptions.concurrency)
        for (let n = 0; n < 5; n++) expect(dead.max(`/${n}`)).toBeLessThanOrEqual(budgetOptions.perAccount)
      } finally {
        for (const hook of hooks) await hook.off()
        await dead.close()
      }
    }, 90_000)
  },
  { background: budgetOptions }
)

// ---------------------------------------------------------------------------------------
// Coalesced health, turns of the event loop, the workers' own store (memory, counted)

describe("fair background work: coalesced health, a turn per attempt, the workers' store [memory]", () => {
  it("health is recomputed far less often than attempts finish; the worker yields the event loop between attempts; it works on BackgroundStore", async () => {
    // Turns of the event loop, counted by a chain of macrotasks.
    let turn = 0
    let ticking = true
    const tick = () => {
      turn++
      if (ticking) setImmediate(tick)
    }
    setImmediate(tick)
    // A sender that answers 500 at once, without I/O: whatever yields, the worker does.
    const sends: Array<number> = []
    const sender = Layer.succeed(WebhookSender, {
      send: () =>
        Effect.sync(() => {
          sends.push(turn)
          return { httpStatus: 500, transportError: null, responseText: "down", durationMs: 1 }
        })
    })
    // One memory store, reached by the requests through one Records and by the workers through another.
    const calls = { request: new Map<string, number>(), background: new Map<string, number>() }
    const counted = (records: Records["Type"], into: Map<string, number>): Records["Type"] => ({
      ...records,
      count: (tenant, type, where, groupBy) => {
        into.set(`count ${type}`, (into.get(`count ${type}`) ?? 0) + 1)
        return records.count(tenant, type, where, groupBy)
      },
      scan: (type, where, limit) => {
        into.set(`scan ${type}`, (into.get(`scan ${type}`) ?? 0) + 1)
        return records.scan(type, where, limit)
      }
    })
    const store = Layer.effectContext(
      Effect.gen(function* () {
        const ports = yield* Effect.context<Records | UnitOfWork | Idempotency | RateLimitStore>()
        const records = Context.get(ports, Records)
        const background = Context.add(ports, Records, counted(records, calls.background))
        return Context.add(ports, Records, counted(records, calls.request)).pipe(Context.add(BackgroundStore, background))
      })
    ).pipe(Layer.provide(MemoryStore))
    const app = await makeFetchHandler({ store, storage: MemoryFileStorage, rateLimits: "off", webhookSender: sender })
    try {
      const secret = sandboxSecret(
        await app.openAccount({
          name: "Counted",
          subdomain: freshSubdomain("counted"),
          administrator: { email: "admin@counted.example", name: "Admin", password: "correct horse battery" }
        })
      )
      const call = async (method: string, path: string, json?: unknown) => {
        const res = await app.handler(
          new Request(`http://localhost/api/v3${path}`, {
            method,
            headers: {
              authorization: `Bearer ${secret}`,
              "content-type": "application/json",
              ...(method === "POST" ? { "idempotency-key": `k-${Math.random()}` } : {})
            },
            ...(json === undefined ? {} : { body: JSON.stringify(json) })
          })
        )
        return { status: res.status, body: (await res.json()) as { data: Record<string, unknown> } }
      }
      const hook = await call("POST", "/webhooks", { url: "http://127.0.0.1:9/hook", event_types: ["tag.created"], max_per_second: 100 })
      expect(hook.status).toBe(201)
      const writes = 150
      for (let i = 0; i < writes; i++) expect((await call("POST", "/tags", { name: `c-${i}` })).status).toBe(201)
      // Every delivery's first attempt (the retries wait 5 s).
      await eventually(async () => expect(sends.length).toBeGreaterThanOrEqual(writes), 20_000)
      const attempts = sends.length
      // A recomputation counts the webhook's failed attempts twice (consecutive, last 24 h).
      const recomputed = (calls.background.get(`count ${WEBHOOK_ATTEMPT_TYPE}`) ?? 0) / 2
      
      expect(recomputed).toBeGreaterThan(0)
      expect(recomputed).toBeLessThanOrEqual(attempts / 10)
      // Attempts per turn of the event loop: never a run of them without one.
      const perTurn = new Map<number, number>()
      for (const t of sends) perTurn.set(t, (perTurn.get(t) ?? 0) + 1)
      expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(DEFAULT_BACKGROUND_PER_ACCOUNT)
      // The workers read the due-time queue through their own store, never the requests'.
      expect(calls.background.get(`scan ${WEBHOOK_QUEUE_TYPE}`) ?? 0).toBeGreaterThan(0)
      expect(calls.request.get(`scan ${WEBHOOK_QUEUE_TYPE}`) ?? 0).toBe(0)
      expect(calls.request.get(`count ${WEBHOOK_ATTEMPT_TYPE}`) ?? 0).toBe(0)
      await call("PATCH", `/webhooks/${String(hook.body.data.id)}`, { status: "inactive" })
    } finally {
      ticking = false
      await app.dispose()
    }
  }, 60_000)
})

// ---------------------------------------------------------------------------------------
// PostgreSQL: the workers' pool

describe("fair background work: the workers' own pool [postgresql]", () => {
  it("pgLayer gives the workers a pool of their own: busy to its last connection, it leaves the requests' pool free", async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const { url } = await Effect.runPromise(Scope.extend(freshPgDatabase, scope))
      const context = await Effect.runPromise(
        Scope.extend(Layer.build(pgLayer(url, { maxConnections: 4, background: { maxConnections: 2 } })), scope)
      )
      const background = Context.get(context, BackgroundStore)
      const workerRecords = Context.get(background, Records)
      const workerUow = Context.get(background, UnitOfWork)
      const requestRecords = Context.get(context, Records)
      expect(workerRecords).not.toBe(requestRecords)
      const tenant = { accountId: "acc_pool", environment: "sandbox" as const }
      // Four units of work of the workers, each holding its connection for a while: two run, two wait.
      const hold = workerUow.transaction(Effect.zipRight(workerRecords.get(tenant, "thing", "x"), Effect.sleep("1500 millis")))
      const holding = Effect.runFork(Effect.all([hold, hold, hold, hold], { concurrency: "unbounded", discard: true }))
      const admin = Context.get(
        await Effect.runPromise(Scope.extend(Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 1, applicationName: "test-admin" })), scope)),
        PgClient.PgClient
      )
      const inTransaction = () =>
        Effect.runPromise(admin<{ readonly name: string; readonly n: number }>`
          SELECT application_name AS name, count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND state = 'idle in transaction' GROUP BY application_name`)
      await eventually(async () => expect(await inTransaction()).toEqual([{ name: BACKGROUND_APPLICATION_NAME, n: 2 }]), 5_000)
      // Meanwhile a request's write does not wait for the workers: it has a pool of its own.
      const read = Effect.runPromise(requestRecords.insert(tenant, "thing", "y", { id: "y" }))
      const first = await Promise.race([read.then(() => "request"), new Promise((r) => setTimeout(() => r("workers"), 1000))])
      expect(first).toBe("request")
      await Effect.runPromise(Effect.fromFiber(holding))
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 60_000)
})

// ---------------------------------------------------------------------------------------
// Operations in time slices (issue 23, finding 6): one account's long operations never keep
// another account's short one waiting beyond about one time slice.

/** Two operation slots (a quarter of 8), one account's share of them 1 while another waits; a slice ends at every chunk. */
const slicedOptions = { concurrency: 8, perAccount: 4, timeSliceMs: 0 }

eachStore(
  "fair background work: operations in time slices",
  (h) => {
    it("another account's one-item operation finishes while the long operations of the first are all still running", async () => {
      const budget = makeBackgroundBudget(slicedOptions)
      expect(budget.capOf("operation")).toBe(2)
      expect(budget.shareOf("operation")).toBe(1)
      const a = api(h(), h().test)
      const opOf = async (secret: string, id: string) =>
        (await h().request("GET", `/api/v3/operations/${id}`, { secret })).body.data as {
          status: string
          progress: { done: number; total: number }
          finished_at: string | null
        }
      // Account B, opened first: opening it (a password hashed) takes longer than a slice of A's work.
      const b = await h().openAccount(freshSubdomain("sliced-b"))
      const bSecret = sandboxSecret(b)
      // Account A: three operations of 1,000 items each, enough for every slot and one in line.
      const long: Array<string> = []
      for (let n = 0; n < 3; n++) {
        const items = Array.from({ length: 1_000 }, (_, i) => ({ key: `k${i}`, name: `long ${n} ${i}` }))
        const started = await a.post("/operations", { type: "showcases.create", items })
        expect(started.status).toBe(202)
        long.push(started.body.data.id)
      }
      // A's operations hold the slots and have begun their items.
      await eventually(async () => {
        const states = await Promise.all(long.map((id) => opOf(h().test, id)))
        expect(states.filter((s) => s.status === "running" && s.progress.done > 0).length).toBeGreaterThan(0)
      }, 20_000)
      // Account B: one item.
      const short = await api(h(), bSecret).post("/operations", { type: "showcases.create", items: [{ key: "one", name: "short" }] })
      expect(short.status).toBe(202)
      await eventually(async () => expect((await opOf(bSecret, short.body.data.id)).status).toBe("succeeded"), 60_000)
      // B's operation finished before any of A's did: B did not wait for a long one to end. (By
      // their finish times, not by what a later poll sees: A's may end while the poll looks.)
      const finished = Date.parse((await opOf(bSecret, short.body.data.id)).finished_at!)
      const states = await Promise.all(long.map((id) => opOf(h().test, id)))
      for (const state of states) {
        if (state.finished_at === null) expect(["queued", "running"]).toContain(state.status)
        else expect(Date.parse(state.finished_at)).toBeGreaterThan(finished)
      }
      // A's operations go on to the end.
      for (const id of long) await eventually(async () => expect((await opOf(h().test, id)).status).toBe("succeeded"), 120_000)
    }, 240_000)
  },
  { background: slicedOptions }
)
