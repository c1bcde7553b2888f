/**
 * Commits relayed between server processes. First `ChangeSignals` on a relay of its own making
 * (what it publishes, what it wakes). Then the PostgreSQL relay (`PgChangeRelay`, in every
 * `pgLayer`): two server instances on one database, their event streams polling only once a
 * minute, so that an event arriving in seconds can only have come through the relay's hint;
 * the relay losing its LISTEN connection (it subscribes again); and a relay whose database does
 * not answer at all (writes do not notice).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { ChangeRelay, ChangeSignals, type RelayedChange, type Tenant } from "@syllabus/core"
import type { StoreServices } from "@syllabus/http"
import { makeNodeListener } from "@syllabus/http"
import { PgChangeRelay, type PgChangeRelayOptions, pgLayer } from "@syllabus/pg"
import { MemoryFileStorage } from "@syllabus/storage"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Queue, Redacted, Scope, Stream } from "effect"
import { createServer, type Server } from "node:http"
import { type AddressInfo, createServer as createTcpServer, connect as tcpConnect, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { encodeChangePayloads, decodeChangePayload } from "../../packages/pg/src/change-relay.js"
import { freshPgDatabase } from "../support/pg.js"

/** A stream polls once a minute: anything sooner came through a wake-up. */
const POLL_MS = 60_000
/** How long a test waits for an event: far less than the poll. */
const WITHIN_MS = 10_000
const HEARTBEAT: PgChangeRelayOptions = { heartbeatMs: 200, reconnect: { initialMs: 50, maxMs: 500 } }

const waitFor = async (what: string, predicate: () => boolean | Promise<boolean>, timeoutMs = WITHIN_MS): Promise<void> => {
  const until = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

interface Instance {
  readonly baseUrl: string
  request(method: string, path: string, secret: string, json?: unknown): Promise<{ status: number; body: any }>
  close(): Promise<void>
}

let keys = 0

const startInstance = async (store: Layer.Layer<StoreServices, unknown>): Promise<Instance & { openAccount(): Promise<string> }> => {
  const app = await makeNodeListener({
    store,
    storage: MemoryFileStorage,
    rateLimits: "off",
    workers: false,
    settings: { eventStreamPollMs: POLL_MS }
  })
  const server: Server = createServer(app.listener)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    baseUrl,
    request: async (method, path, secret, json) => {
      const res = await fetch(`${baseUrl}/api/v3${path}`, {
        method,
        headers: {
          authorization: `Bearer ${secret}`,
          ...(json !== undefined ? { "content-type": "application/json" } : {}),
          ...(method === "POST" ? { "idempotency-key": `relay-${process.pid}-${++keys}` } : {})
        },
        ...(json !== undefined ? { body: JSON.stringify(json) } : {})
      })
      const text = await res.text()
      return { status: res.status, body: text === "" ? undefined : JSON.parse(text) }
    },
    openAccount: async () => {
      const subdomain = `relay-${Date.now()}-${Math.floor(Math.random() * 1e6)}`
      const opened = await app.openAccount({
        name: `Account ${subdomain}`,
        subdomain,
        administrator: { email: `admin@${subdomain}.example`, name: "Admin", password: "correct horse battery" }
      })
      return opened.credentials.find((c) => c.environment === "production")!.secret
    },
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeAllConnections?.()
      await app.dispose()
    }
  }
}

/** A stream opened on `instance` (`start: now`), read in the background. */
const openStream = async (instance: Instance, secret: string) => {
  const created = await instance.request("POST", "/event-streams", secret, { start: "now" })
  expect(created.status).toBe(201)
  const abort = new AbortController()
  const res = await fetch(`${instance.baseUrl}/api/v3/event-streams/${created.body.data.id}/events`, {
    headers: { authorization: `Bearer ${secret}`, accept: "text/event-stream" },
    signal: abort.signal
  })
  expect(res.status).toBe(200)
  let text = ""
  void (async () => {
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        text += decoder.decode(value, { stream: true })
      }
    } catch {
      // closed by the test
    }
  })()
  await waitFor("the connection", () => text.includes(": connected"))
  return {
    /** Resolves once the event of the showcase is on the stream. */
    received: (showcaseId: string) =>
      waitFor(`the event of ${showcaseId}`, () => text.includes("event: showcase.created") && text.includes(showcaseId)),
    close: () => abort.abort()
  }
}

const newShowcase = async (instance: Instance, secret: string, name: string) => {
  const res = await instance.request("POST", "/showcases", secret, { name })
  expect(res.status).toBe(201)
  return res.body.data.id as string
}

/** The database of this file, and an administrator's connection to it. */
let databaseUrl: string
let admin: PgClient.PgClient
const scope = Effect.runSync(Scope.make())

/** The backends of the database that hold a LISTEN (one per relay subscribed), of one application if named. */
const listeners = (applicationName?: string) =>
  Effect.runPromise(
    admin<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%' ${
      applicationName === undefined ? admin`` : admin`AND application_name = ${applicationName}`
    }`.pipe(
      Effect.map((rows) => rows.map((row) => Number(row.pid)).sort())
    )
  )

beforeAll(async () => {
  databaseUrl = (await Effect.runPromise(Scope.extend(freshPgDatabase, scope))).url
  admin = Context.get(
    await Effect.runPromise(Scope.extend(Layer.build(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })), scope)),
    PgClient.PgClient
  )
}, 60_000)

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

describe("ChangeSignals on a relay", () => {
  const tenant = (accountId: string): Tenant => ({ accountId, environment: "production" })

  it("a burst of commits goes out as one publication of its distinct tenants, and no commit waits for it", () =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const published: Array<ReadonlyArray<string>> = []
          const release = yield* Deferred.make<void>()
          const relay = ChangeRelay.of({
            // The first publication hangs until released: the commits meanwhile must not wait.
            publish: (tenants) =>
              Effect.suspend(() => {
                published.push(tenants.map((t) => t.accountId))
                return published.length === 1 ? Deferred.await(release) : Effect.void
              }),
            received: Stream.never
          })
          const signals = Context.get(
            yield* Layer.build(ChangeSignals.live.pipe(Layer.provide(Layer.succeed(ChangeRelay, relay)))),
            ChangeSignals
          )
          yield* signals.committed(tenant("first"))
          while (published.length === 0) yield* Effect.sleep(5)
          for (let i = 0; i < 300; i++) yield* signals.committed(tenant(`burst-${i % 3}`))
          expect(published).toEqual([["first"]])
          yield* Deferred.succeed(release, undefined)
          while (published.length < 2) yield* Effect.sleep(5)
          yield* Effect.sleep(50)
          expect(published).toHaveLength(2)
          expect([...published[1]!].sort()).toEqual(["burst-0", "burst-1", "burst-2"])
        })
      )
    ))

  it("what the relay hears wakes the watchers of those tenants; `Missed` wakes every watcher", () =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const heard = yield* Queue.unbounded<RelayedChange>()
          const relay = ChangeRelay.of({ publish: () => Effect.void, received: Stream.fromQueue(heard) })
          const signals = Context.get(
            yield* Layer.build(ChangeSignals.live.pipe(Layer.provide(Layer.succeed(ChangeRelay, relay)))),
            ChangeSignals
          )
          const one = yield* Effect.fork(Effect.flatten(signals.watch(tenant("one"))))
          const two = yield* Effect.fork(Effect.flatten(signals.watch(tenant("two"))))
          const three = yield* Effect.fork(Effect.flatten(signals.watch(tenant("three"))))
          yield* Queue.offer(heard, { _tag: "Committed", tenants: [tenant("one")] })
          yield* Fiber.join(one)
          yield* Effect.sleep(50)
          expect(Option.isNone(yield* Fiber.poll(two))).toBe(true)
          yield* Queue.offer(heard, { _tag: "Missed" })
          yield* Fiber.join(two)
          yield* Fiber.join(three)
        })
      )
    ))
})

describe("payloads", () => {
  it("many tenants are cut into payloads under PostgreSQL's 8000 bytes, each read back whole", () => {
    const tenants = Array.from({ length: 1000 }, (_, i) => ({ accountId: `acct_${String(i).padStart(20, "0")}`, environment: "production" as const }))
    const payloads = encodeChangePayloads("process-1", tenants)
    expect(payloads.length).toBeGreaterThan(1)
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThan(8000)
    expect(payloads.flatMap((payload) => decodeChangePayload(payload)!.tenants)).toEqual(tenants)
    expect(decodeChangePayload("not json")).toBeUndefined()
  })
})

describe("two instances on one database, streams polling once a minute [postgresql]", () => {
  let a: Instance
  let b: Instance
  let secret: string
  beforeAll(async () => {
    const startedA = await startInstance(pgLayer(databaseUrl, { maxConnections: 5, changeRelay: HEARTBEAT }))
    a = startedA
    b = await startInstance(pgLayer(databaseUrl, { maxConnections: 5, changeRelay: HEARTBEAT }))
    secret = await startedA.openAccount()
  }, 60_000)
  afterAll(async () => {
    await b?.close()
    await a?.close()
  })

  it("an event written through B reaches a stream open on A long before A's poll", async () => {
    const stream = await openStream(a, secret)
    // Both relays listen (each instance's ChangeSignals subscribed when it started).
    await waitFor("both relays to listen", async () => (await listeners()).length === 2)
    const id = await newShowcase(b, secret, "across")
    await stream.received(id)
    stream.close()
  })

  it("an idle relay keeps its LISTEN connection: its own ping, heard while it is sent, counts", async () => {
    await waitFor("both relays to listen", async () => (await listeners()).length === 2)
    const before = await listeners()
    // Thirty heartbeats without a write: each silent heartbeat pings the relay itself, and a
    // ping heard at once must not be taken for silence (a new backend would say it was).
    await new Promise((resolve) => setTimeout(resolve, 30 * (HEARTBEAT.heartbeatMs ?? 0)))
    expect(await listeners()).toEqual(before)
  })

  it("a relay whose LISTEN backend is terminated subscribes again: later writes through B still wake A's stream", async () => {
    const stream = await openStream(a, secret)
    await waitFor("both relays to listen", async () => (await listeners()).length === 2)
    const before = await listeners()
    await Effect.runPromise(
      admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`
    )
    // Written while the relays may still be deaf: the relay says it may have missed some
    // once it hears again, and the stream looks.
    const during = await newShowcase(b, secret, "while deaf")
    await stream.received(during)
    await waitFor("both relays to listen again, on new backends", async () => {
      const now = await listeners()
      return now.length === 2 && now.every((pid) => !before.includes(pid))
    })
    const after = await newShowcase(b, secret, "after reconnect")
    await stream.received(after)
    stream.close()
  })
})

/** A TCP proxy to PostgreSQL that can be made a black hole: connections accepted, never answered. */
const blackHoleProxy = async (target: URL) => {
  const sockets = new Set<Socket>()
  let cut = false
  const server = createTcpServer((client) => {
    sockets.add(client)
    client.on("close", () => sockets.delete(client))
    client.on("error", () => {})
    if (cut) return
    const upstream = tcpConnect({ host: target.hostname, port: Number(target.port || 5432) })
    sockets.add(upstream)
    upstream.on("close", () => sockets.delete(upstream))
    upstream.on("error", () => client.destroy())
    client.on("error", () => upstream.destroy())
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = new URL(target)
  url.hostname = "127.0.0.1"
  url.port = String((server.address() as AddressInfo).port)
  return {
    url: url.toString(),
    /** From now on the database is unreachable and silent. */
    cut: () => {
      cut = true
      for (const socket of sockets) socket.destroy()
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

describe("a relay whose database does not answer [postgresql]", () => {
  it("writes answer as usual and wake this instance's streams: the relay is a hint only", async () => {
    const proxy = await blackHoleProxy(new URL(databaseUrl))
    // The stores on the database; the relay alone through the proxy.
    const relay = PgChangeRelay(HEARTBEAT).pipe(Layer.provide(PgClient.layer({ url: Redacted.make(proxy.url), maxConnections: 2, applicationName: "relay-via-proxy" })))
    const instance = await startInstance(Layer.merge(pgLayer(databaseUrl, { maxConnections: 5 }), relay))
    try {
      const secret = await instance.openAccount()
      const stream = await openStream(instance, secret)
      await waitFor("the relay to listen", async () => (await listeners("relay-via-proxy")).length === 1)
      proxy.cut()
      for (let i = 0; i < 10; i++) {
        const started = Date.now()
        const id = await newShowcase(instance, secret, `unrelayed ${i}`)
        // A write that waited for the relay would wait for ever here (its database is silent).
        expect(Date.now() - started).toBeLessThan(5000)
        await stream.received(id)
      }
      stream.close()
    } finally {
      // The proxy first: the relay's pool and LISTEN client hang on it until it lets go.
      await proxy.close()
      await instance.close()
    }
  })
})
