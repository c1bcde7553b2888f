/**
 * The contract suite's server: the real HTTP app on a real socket, on one store, with a
 * demo account. Tests talk to it over HTTP only; the few things a client cannot do (move
 * time, make a port fail, block an account) go through the operator handle, as an operator
 * or an outage would.
 */
import {
  type AccountStatus,
  type BackgroundOptions,
  type CertificateRenderer,
  type DnsResolver,
  type Mailer,
  environments,
  eventTypeCatalog,
  openAccount,
  type OpenedAccount,
  Records,
  housekeepingPass,
  setAccountStatus
} from "@syllabus/core"
import { type EdgeLimits, makeMemoryDns, makeNodeEdge, type ServerSettingsShape, type StoreServices, syllabusLayer } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer, type PgLayerOptions } from "@syllabus/pg"
import { LocalFileStorage, MemoryFileStorage } from "@syllabus/storage"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer, type LogLevel, Logger, ManagedRuntime, Scope } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, inject } from "vitest"
import { AdjustableClock, type FaultyPort, Stalls, storageWithFaults, withFaults } from "@syllabus/testing"
import { freshPgDatabase } from "./pg.js"
import { onLocalPort } from "./postgres-user.js"
import { type StoreName, stores } from "./stores.js"

export { stores } from "./stores.js"

// The operator's clock (`shift`: waits keep their real duration) and the port fault wrappers
// are the ones the in-process double uses: one place for each.
export type { FaultyPort } from "@syllabus/testing"

// ---------------------------------------------------------------------------------------
// The server

export interface Response {
  readonly status: number
  readonly headers: Headers
  /** The parsed JSON body (`undefined` when empty). */
  readonly body: any
  readonly text: string
}

export interface RequestOptions {
  /** Autonomous mode: sent as `Authorization: Bearer <secret>`. */
  readonly secret?: string
  readonly headers?: Record<string, string>
  /** A JSON body (serialized, `Content-Type: application/json`). */
  readonly json?: unknown
  /** Raw bytes or text, with the headers given. */
  readonly raw?: string | Uint8Array
  /** `Idempotency-Key`: a fresh one is made for POSTs unless given or `null`. */
  readonly idempotencyKey?: string | null
}

export interface Harness {
  readonly store: StoreName
  readonly baseUrl: string
  /** PostgreSQL only: the database this server uses (its direct URL, with the `pgbouncer` store too). */
  readonly databaseUrl: string | undefined
  readonly account: OpenedAccount
  readonly live: string
  readonly test: string
  request(method: string, path: string, options?: RequestOptions): Promise<Response>
  /** Open another account (tenancy tests). */
  openAccount(subdomain: string): Promise<OpenedAccount>
  setAccountStatus(accountId: string, status: AccountStatus): Promise<void>
  /** Move the server's clock forward (a negative `ms` puts it back, after a test moved it). */
  advance(ms: number): void
  /**
   * Operator: merge fields into a stored record, as another part of the platform would
   * (e.g. mark a record as a replica of another account's record, which release 3.2.0 syncs).
   */
  patchRecord(tenant: { accountId: string; environment: "production" | "sandbox" }, type: string, id: string, fields: Record<string, unknown>): Promise<void>
  /**
   * Operator: run a use case of the core on this server's services (its store, IDs, crypto), as
   * another part of the platform would (e.g. issue the certificate a progress change earned).
   */
  runUseCase<A>(effect: Effect.Effect<A, unknown, any>): Promise<A>
  /** Run the housekeeping the server does on its own schedule (expiry sweeps, retention). */
  housekeeping(): Promise<void>
  /**
   * Operator: the data of a record as the store holds it (`undefined` when it is not stored),
   * whatever reads show; e.g. to see that retention removed what reads already hide.
   */
  storedRecord(tenant: { accountId: string; environment: "production" | "sandbox" }, type: string, id: string): Promise<Record<string, any> | undefined>
  /** Operator: the types of the events the store holds for the account, in both environments. */
  eventTypesRecorded(): Promise<ReadonlySet<string>>
  /** The directory of the local file storage (PostgreSQL runs); the memory runs keep files in memory. */
  readonly storageDirectory: string | undefined
  fail(port: FaultyPort, failing?: boolean): void
  /** Make a port hang until called again with `false` (then its calls go on), as a frozen database or a stuck bucket does. */
  stall(port: FaultyPort, stalled?: boolean): void
  /** Stop the server. `keepDatabase`: leave its PostgreSQL database for another server (then `dropDatabase` later). */
  close(options?: { readonly keepDatabase?: boolean }): Promise<void>
  dropDatabase(): Promise<void>
}

export interface HarnessOptions {
  readonly rateLimits?: "on" | "off"
  readonly settings?: Partial<ServerSettingsShape>
  /** PostgreSQL: serve an existing database (a second server process of one service) instead of a fresh one. */
  readonly databaseUrl?: string
  /** Use this account instead of opening one (with `databaseUrl`). */
  readonly account?: OpenedAccount
  /** Run the workers of asynchronous operations (default: yes). */
  readonly workers?: boolean
  /** The workers' budget (units in flight, of one account); default `syllabusLayer`'s. */
  readonly background?: BackgroundOptions
  /** PostgreSQL: options of the pool (its deadlines, `timeouts`, among them). */
  readonly pg?: PgLayerOptions
  /** The server's least log level (default: all); e.g. `"None"` for a test whose outage would log every request. */
  readonly logLevel?: LogLevel.LogLevel
  /** The Node edge's limits (caps on unfinished requests, drain, timeouts); default `defaultEdgeLimits`. */
  readonly edge?: Partial<EdgeLimits>
  /** Where the outbox's mail goes (e.g. `SmtpMailer` to a test's SMTP server); default `syllabusLayer`'s in-memory outbox. */
  readonly mailer?: Layer.Layer<Mailer>
  /** Where custom domains' TXT records are read (a test's `makeMemoryDns().layer`); default an in-memory DNS with no record. */
  readonly dns?: Layer.Layer<DnsResolver>
  /** The platform's own host (no custom domain under it); default `syllabusLayer`'s. */
  readonly platformHost?: string
  /** How certificates are drawn (e.g. a render pool with a short time budget); default `syllabusLayer`'s. */
  readonly certificateRenderer?: Layer.Layer<CertificateRenderer>
}

/**
 * The loopback ports sandbox webhooks of every harness may reach (`localWebhookPorts`): a
 * test's local receiver allows its own port once it is bound; no other local port is reachable.
 */
const localReceiverPorts = new Set<number>()
export const allowLocalReceiver = (port: number): void => {
  localReceiverPorts.add(port)
}

/** Binds a test's webhook receiver on 127.0.0.1 (`port`, default any free one) and allows its port; answers the port. */
export const listenLocalReceiver = async (server: import("node:net").Server, port = 0): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  const bound = (server.address() as import("node:net").AddressInfo).port
  allowLocalReceiver(bound)
  return bound
}

let keyCounter = 0
export const freshKey = (): string => `k-${process.pid}-${Date.now()}-${++keyCounter}`

/**
 * The PostgreSQL store on `databaseUrl`: directly, or (`pgbouncer`) through the suite's PgBouncer
 * in transaction mode, with `LISTEN` and the migrations on the direct connection.
 */
const pgStoreLayer = (store: "postgresql" | "pgbouncer", databaseUrl: string, options: PgLayerOptions | undefined) =>
  store === "pgbouncer"
    ? pgLayer(throughPgBouncer(databaseUrl), { maxConnections: 20, pooler: "transaction", listenUrl: databaseUrl, ...options })
    : pgLayer(databaseUrl, { maxConnections: 20, ...options })

const throughPgBouncer = (databaseUrl: string): string => {
  const port = inject("pgbouncerPort")
  if (!port) throw new Error("the pgbouncer store runs only when the global setup started PgBouncer (SYLLABUS_TEST_STORES names it, or is unset)")
  return onLocalPort(databaseUrl, port)
}

export const startHarness = async (
  store: StoreName,
  options: HarnessOptions = {}
): Promise<Harness> => {
  const scope = Effect.runSync(Scope.make())
  const databaseUrl =
    store === "memory"
      ? undefined
      : (options.databaseUrl ?? (await Effect.runPromise(Scope.extend(freshPgDatabase, scope))).url)
  const storeLayer: Layer.Layer<StoreServices, unknown> =
    databaseUrl === undefined || store === "memory" ? MemoryStore : pgStoreLayer(store, databaseUrl, options.pg)
  const clock = new AdjustableClock()
  const failing = new Set<FaultyPort>()
  const stalled = new Stalls()
  // The storage adapter is chosen apart from the record store: memory with memory, local files with PostgreSQL.
  const storageDirectory = store === "memory" ? undefined : mkdtempSync(join(tmpdir(), "syllabus-files-"))
  const storage = storageDirectory === undefined ? MemoryFileStorage : LocalFileStorage({ directory: storageDirectory })
  const runsOn = Layer.merge(Layer.setClock(clock), options.logLevel === undefined ? Layer.empty : Logger.minimumLogLevel(options.logLevel))
  const layer = Layer.merge(
    syllabusLayer({
      store: withFaults(storeLayer, failing, stalled),
      storage: storageWithFaults(storage, failing, stalled),
      rateLimits: options.rateLimits ?? "off",
      workers: options.workers ?? true,
      ...(options.background ? { background: options.background } : {}),
      ...(options.settings ? { settings: options.settings } : {}),
      ...(options.mailer ? { mailer: options.mailer } : {}),
      // Tests never reach a real resolver: an in-memory DNS with no record unless a test brings its own.
      dns: options.dns ?? makeMemoryDns().layer,
      localWebhookPorts: localReceiverPorts,
      ...(options.platformHost ? { platformHost: options.platformHost } : {}),
      ...(options.certificateRenderer ? { certificateRenderer: options.certificateRenderer } : {})
      // The workers forked while the layer is built must run on the operator's clock too.
    }).pipe(Layer.provide(runsOn)),
    runsOn
  )
  const runtime = ManagedRuntime.make(layer)
  const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect as Effect.Effect<A, E, never>)
  // As the standalone server builds it: the app behind the Node edge (caps, drain, timeouts,
  // parser errors in the envelope); the platform's request span only if `traceRequests` is on.
  const edge = await run(makeNodeEdge(options.edge))
  const server: Server = createServer({ ...edge.serverOptions, requireHostHeader: false }, edge.listener)
  edge.attach(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const open = (subdomain: string) =>
    run(
      openAccount({
        name: `Account ${subdomain}`,
        subdomain,
        administrator: { email: `admin@${subdomain}.example`, name: "Admin", password: "correct horse battery" }
      })
    )
  const account = options.account ?? (await open(`acct-${Date.now()}-${Math.floor(Math.random() * 1e6)}`))
  const secretOf = (env: "production" | "sandbox") => account.credentials.find((c) => c.environment === env)!.secret

  const request = async (method: string, path: string, opts: RequestOptions = {}): Promise<Response> => {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.secret !== undefined) headers["authorization"] = `Bearer ${opts.secret}`
    let body: string | Uint8Array | undefined = opts.raw
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json)
      headers["content-type"] ??= "application/json"
    }
    if (method === "POST" && opts.idempotencyKey !== null && !("idempotency-key" in lower(headers))) {
      headers["idempotency-key"] = opts.idempotencyKey ?? freshKey()
    }
    const res = await fetch(baseUrl + path, { method, headers, ...(body !== undefined ? { body: body as BodyInit } : {}) })
    const text = await res.text()
    let parsed: unknown
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      parsed = undefined
    }
    return { status: res.status, headers: res.headers, body: parsed, text }
  }

  return {
    store,
    baseUrl,
    databaseUrl,
    account,
    live: secretOf("production"),
    test: secretOf("sandbox"),
    request,
    openAccount: open,
    setAccountStatus: async (accountId, status) => {
      await run(setAccountStatus(accountId, status))
    },
    advance: (ms) => {
      if (ms < 0) clock.rewind(-ms)
      else clock.shift(ms)
    },
    patchRecord: async (tenant, type, id, fields) => {
      await run(
        Effect.gen(function* () {
          const records = yield* Records
          const record = yield* records.get(tenant, type, id)
          if (!record) return yield* Effect.dieMessage(`no ${type} ${id}`)
          yield* records.update(tenant, type, id, { ...record.data, ...(fields as Record<string, never>) })
        })
      )
    },
    runUseCase: (effect) => run(effect),
    housekeeping: async () => {
      await run(housekeepingPass())
    },
    storedRecord: (tenant, type, id) =>
      run(Effect.flatMap(Records, (records) => records.get(tenant, type, id)).pipe(Effect.map((record) => record?.data))),
    eventTypesRecorded: () =>
      run(
        Effect.gen(function* () {
          const records = yield* Records
          const types = new Set<string>()
          for (const environment of environments) {
            const tenant = { accountId: account.account.id, environment }
            let after: { value: string; id: string } | undefined
            for (;;) {
              const page = yield* records.list(tenant, "event", { where: [], sort: { field: "id", kind: "text", direction: "asc" }, after, limit: 500 })
              for (const event of page) types.add(String(event.data.type))
              const last = page.at(-1)
              if (page.length < 500 || last === undefined) break
              after = { value: last.id, id: last.id }
            }
          }
          return types
        })
      ),
    storageDirectory,
    fail: (port, on = true) => {
      if (on) failing.add(port)
      else failing.delete(port)
    },
    stall: (port, on = true) => stalled.set(port, on),
    close: async (closeOptions = {}) => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeAllConnections?.()
      await runtime.dispose()
      if (!closeOptions.keepDatabase) await Effect.runPromise(Scope.close(scope, Exit.void))
      if (storageDirectory !== undefined) rmSync(storageDirectory, { recursive: true, force: true })
    },
    dropDatabase: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const lower = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))

/**
 * Run a block of contract tests once per store, each on its own server (and, on
 * PostgreSQL, its own database). `h()` is the running harness.
 */
export const eachStore = (title: string, body: (h: () => Harness) => void, options: HarnessOptions = {}) => {
  for (const store of stores) {
    describe(`${title} [${store}]`, () => {
      let harness: Harness | undefined
      beforeAll(async () => {
        harness = await startHarness(store, options)
      }, 60_000)
      afterAll(async () => {
        try {
          // Every event the block's tests made must be in the catalog of GET /event-types (§6).
          if (harness !== undefined) {
            const catalog = new Set(eventTypeCatalog.map((entry) => entry.type))
            const missing = [...(await harness.eventTypesRecorded())].filter((type) => !catalog.has(type))
            if (missing.length > 0) throw new Error(`events missing from GET /event-types: ${missing.join(", ")}`)
          }
        } finally {
          await harness?.close()
        }
      }, 60_000)
      body(() => harness!)
    })
  }
}
