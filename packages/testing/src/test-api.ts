/**
 * `createTestApi`: the whole API in process, on its own in-memory store, clock and ports, with
 * an account ready. Nothing here imports a test runner: it works under vitest, jest and
 * node:test alike. README.md tells how to use it.
 */
import {
  Crypto,
  FileStorage,
  OPERATION_TYPE,
  openAccount,
  housekeepingPass,
  Records,
  type Tenant,
  WEBHOOK_DELIVERY_TYPE
} from "@syllabus/core"
import {
  API_PREFIX,
  type CryptoKeys,
  ephemeralKeys,
  makeNodeEdge,
  type ServerSettingsShape,
  standardWebhookSignature,
  type StoreServices,
  syllabusLayer,
  webHandlerOf
} from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { MemoryFileStorage } from "@syllabus/storage"
import { Context, Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { timingSafeEqual } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { AdjustableClock, type DurationLike, toMilliseconds } from "./clock.js"
import { type FaultyPort, storageWithFaults, storePorts, withFaults } from "./faults.js"

// ---------------------------------------------------------------------------------------
// What the double offers

export interface TestApiOptions {
  /** The credential `api.request` and the seed helpers use unless told otherwise: `"test"` (sandbox, default) or `"live"`. */
  readonly credential?: "test" | "live"
  /** The account's name and subdomain (default: unique ones). */
  readonly account?: { readonly name?: string; readonly subdomain?: string }
  /** The administrator (default: `admin@<subdomain>.example`, password `correct horse battery staple`). */
  readonly administrator?: { readonly email?: string; readonly name?: string; readonly password?: string }
  /** Run the background workers (operations, webhook delivery, housekeeping); default yes. */
  readonly workers?: boolean
  /** The rate limits of §8.1; default `"off"` (a test suite is not a client to throttle). */
  readonly rateLimits?: "on" | "off"
  /** File storage for uploads: `"memory"` (default) or `"none"` (uploads answer 503 `storage_unavailable`). */
  readonly storage?: "memory" | "none"
  /** Server settings (deadlines, deprecations, …), as `syllabusLayer` takes them. */
  readonly settings?: Partial<ServerSettingsShape>
  /**
   * Your webhook endpoint, in process: each delivery is captured, then handed to it as the
   * signed `Request` a destination gets, and its `Response` decides the attempt (2xx
   * succeeded; anything else, or a throw, is retried on the schedule). Default: every
   * delivery is accepted (204).
   */
  readonly receiver?: (request: Request) => Response | Promise<Response>
  /** The server's own log lines, at this level and above; default `"none"` (quiet). */
  readonly logLevel?: "none" | "error" | "warning" | "info" | "debug"
}

/** A response of `api.request`: the status, the headers and the parsed JSON body. */
export interface ApiResponse {
  readonly status: number
  readonly headers: Headers
  /** The parsed JSON body (`undefined` when the body is empty or not JSON). */
  readonly body: any
}

export interface RequestOptions {
  /** A JSON body. */
  readonly json?: unknown
  /** Which credential authenticates the call (default: the instance's `credential` option); `"none"`: no `Authorization`. */
  readonly credential?: "test" | "live" | "none"
  readonly headers?: Record<string, string>
  /** `Idempotency-Key` of a POST: a fresh one unless given; `null` sends none. */
  readonly idempotencyKey?: string | null
}

/** A webhook delivery that reached the in-process receiver (while up), exactly as a destination gets it. */
export interface ReceivedWebhook {
  /** The webhook's destination URL. */
  readonly url: string
  /** Lower-case header names: `webhook-id`, `webhook-timestamp`, `webhook-signature`, `content-type`, `user-agent`. */
  readonly headers: Readonly<Record<string, string>>
  /** The raw body, as signed (verify signatures on this, not on a re-serialization). */
  readonly body: string
  /** The body parsed: the event. */
  readonly event: any
  /** The event type (`event.type`). */
  readonly type: string
  /** When it arrived, on the test clock (epoch milliseconds). */
  readonly receivedAt: number
  /** What the receiver answered: 204 without a `receiver` option, else its status (`null`: it threw). Not 2xx: retried. */
  readonly status: number | null
}

export interface TestApi {
  /** `http://syllabus.test/api/v3`: what `api.fetch` resolves relative paths against (no socket behind it). */
  readonly baseUrl: string
  readonly account: { readonly id: string; readonly name: string; readonly subdomain: string }
  /** The full-access secrets: `live` (production) and `test` (sandbox). */
  readonly secrets: { readonly live: string; readonly test: string }
  /** The credentials behind them (`crd_…` IDs). */
  readonly credentials: { readonly live: { readonly id: string; readonly secret: string }; readonly test: { readonly id: string; readonly secret: string } }
  readonly administrator: { readonly id: string; readonly email: string; readonly password: string }
  /**
   * Web `fetch`, in process. A relative path is under the API (`"/products"` and `"products"`
   * reach `/api/v3/products`; a path that starts with `/api/` is kept); an absolute URL keeps
   * its path. Nothing is added: send your own `Authorization`.
   */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>
  /** Serve the same instance on 127.0.0.1 (for SDKs that need a URL); answers its API base URL, `http://127.0.0.1:<port>/api/v3`. */
  listen(): Promise<string>
  /** A JSON call with a credential (default: the `credential` option) and, for a POST, a fresh `Idempotency-Key`. */
  request(method: string, path: string, options?: RequestOptions): Promise<ApiResponse>
  readonly clock: TestClock
  readonly webhooks: WebhookCapture
  readonly events: EventLog
  readonly faults: Faults
  readonly seed: Seeds
  /** Stop the workers, the socket if any, and drop the store. */
  close(): Promise<void>
}

export interface TestClock {
  /** The server's time (epoch milliseconds). */
  now(): number
  /**
   * Move the server's time forward (`5000`, `"30s"`, `"1h"`, `"2d"`) and run what it does on
   * its schedule: waits that end are over (webhook retries, workers' next looks), the
   * housekeeping runs (upload expiry, retention, receipts), and the call returns once the
   * webhook deliveries and operations that became due were picked up (up to 2 s).
   */
  advance(duration: DurationLike): Promise<void>
}

export interface WebhookCapture {
  /** What arrived so far, oldest first, optionally of one event type or destination URL. */
  received(filter?: { readonly type?: string; readonly url?: string }): ReadonlyArray<ReceivedWebhook>
  /**
   * The first delivery of `type` (optionally matching `match` on its resource, `event.data.object`),
   * once the receiver answered it, waiting for it up to `timeoutMs` (default 5,000).
   */
  waitFor(type: string, options?: { readonly match?: Record<string, unknown>; readonly url?: string; readonly timeoutMs?: number }): Promise<ReceivedWebhook>
  /** Forget what arrived. */
  clear(): void
  /**
   * Verify a delivery as a Standard Webhooks receiver does: one of `webhook-signature`'s
   * signatures made with `secret` over `webhook-id`, `webhook-timestamp` and the body, and a
   * timestamp within `toleranceSeconds` (default 300) of now, on this instance's clock. A
   * delivery sent after `api.clock.advance` carries the moved time, which `standardwebhooks`'
   * own `verify` (reading the machine's clock) refuses; this one does not. Answers the event;
   * throws `WebhookVerificationFailed` otherwise.
   */
  verify(delivery: ReceivedWebhook, secret: string, options?: { readonly toleranceSeconds?: number }): any
}

/** A delivery that does not verify (`api.webhooks.verify`): the reason is the message. */
export class WebhookVerificationFailed extends Error {
  override readonly name = "WebhookVerificationFailed"
}

export interface EventLog {
  /** The recorded events (`GET /events`), newest first, optionally of one type. */
  list(filter?: { readonly type?: string; readonly credential?: "test" | "live" }): Promise<ReadonlyArray<any>>
  /**
   * The newest recorded event of `type` whose resource (`event.data.object`) has the fields of
   * `match` (compared deeply; nested objects partially). Waits up to `timeoutMs` (default
   * 2,000) for it, for events that background work records; throws an `Error` that lists what
   * was recorded otherwise.
   */
  expect(type: string, options?: { readonly match?: Record<string, unknown>; readonly credential?: "test" | "live"; readonly timeoutMs?: number }): Promise<any>
}

export interface Faults {
  /** The record store is down (`true`) or back (`false`): requests answer 503 in the envelope. */
  store(down?: boolean): void
  /** The file storage is down or back: uploads answer 503 `storage_unavailable`. */
  storage(down?: boolean): void
  /** Webhook destinations refuse connections (`connection_failed`), every one or only `url`; retried on the schedule. */
  receiver(down?: boolean, url?: string): void
}

/** Records created through the API (with the default credential); each answers the created resource (`data`). */
export interface Seeds {
  showcase(fields?: Record<string, unknown>): Promise<any>
  /** A draft course product; in a showcase made for it unless `showcase_id` is given. */
  product(fields?: Record<string, unknown>): Promise<any>
  /** Publish a product (an operation) and wait until it finished; answers the product. */
  publish(productId: string): Promise<any>
  user(fields?: Record<string, unknown>): Promise<any>
  /** A webhook to `https://hooks.example.com/<n>` for every event (`["*"]`) unless given; its `secret` is in the answer. */
  webhook(fields?: Record<string, unknown>): Promise<any>
}

// ---------------------------------------------------------------------------------------
// Shared by the instances of a process (read-only once made)

const ORIGIN = "http://syllabus.test"
const DEFAULT_PASSWORD = "correct horse battery staple"

/** One pair of keys per process: every instance's store is its own, so sharing them leaks nothing. */
let processKeys: CryptoKeys | undefined

/**
 * The records a server makes for itself on its first start (its token-signing keys, an RSA
 * key pair that takes tens of milliseconds to make): made by the first instance of the
 * process, copied into the store of every later one.
 */
const systemRecords = new Map<string, { readonly tenant: Tenant; readonly type: string; readonly id: string; readonly data: any }>()
let systemRecordsKnown = false

/** A memory store that starts with the system records known, and learns them while they are not. */
const seededMemoryStore: Layer.Layer<StoreServices> = Layer.effectContext(
  Effect.gen(function* () {
    const records = yield* Records
    for (const r of systemRecords.values()) yield* records.insert(r.tenant, r.type, r.id, r.data)
    const context = yield* Effect.context<StoreServices>()
    if (systemRecordsKnown) return context
    return Context.add(context, Records, {
      ...records,
      insert: (tenant, type, id, data, uniques) =>
        Effect.tap(records.insert(tenant, type, id, data, uniques), () =>
          Effect.sync(() => {
            if (tenant.accountId === "system" && !systemRecordsKnown) systemRecords.set(`${type}/${id}`, { tenant, type, id, data })
          })
        )
    })
  }).pipe(Effect.orDie)
).pipe(Layer.provide(MemoryStore))

/** scrypt takes ~30 ms: each distinct administrator password is hashed once per process. */
const passwordHashes = new Map<string, string>()

const logLevels = {
  none: LogLevel.None,
  error: LogLevel.Error,
  warning: LogLevel.Warning,
  info: LogLevel.Info,
  debug: LogLevel.Debug
} as const

let instances = 0

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** `actual` has every field of `expected`, deeply (objects partially, arrays and scalars exactly). */
export const matches = (actual: unknown, expected: unknown): boolean => {
  if (expected !== null && typeof expected === "object" && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return false
    return Object.entries(expected).every(([key, value]) => matches((actual as Record<string, unknown>)[key], value))
  }
  return JSON.stringify(actual) === JSON.stringify(expected)
}

// ---------------------------------------------------------------------------------------
// An instance

/** A fresh API with an account, both credentials and an administrator; see `TestApi`. */
export const createTestApi = async (options: TestApiOptions = {}): Promise<TestApi> => {
  const n = ++instances
  const clock = new AdjustableClock()
  const failing = new Set<FaultyPort>()
  const receiversDown = new Set<string>()
  let everyReceiverDown = false
  const received: Array<ReceivedWebhook> = []
  const arrivals = new Set<() => void>()

  const onWebhook = async (request: Request): Promise<Response> => {
    if (everyReceiverDown || receiversDown.has(request.url)) {
      throw Object.assign(new Error(`receiver ${request.url} is down`), { code: "ECONNREFUSED" })
    }
    const body = await request.text()
    const event = JSON.parse(body)
    const headers: Record<string, string> = {}
    request.headers.forEach((value, name) => (headers[name] = value))
    const arrived = { url: request.url, headers, body, event, type: String(event.type), receivedAt: clock.unsafeCurrentTimeMillis() }
    const record = (status: number | null) => {
      received.push({ ...arrived, status })
      for (const notify of [...arrivals]) notify()
    }
    if (options.receiver === undefined) {
      record(204)
      return new Response(null, { status: 204 })
    }
    try {
      const response = await options.receiver(new Request(request.url, { method: "POST", headers, body }))
      record(response.status)
      return response
    } catch (error) {
      record(null)
      throw error
    }
  }

  const workers = options.workers ?? true
  const runsOn = Layer.merge(Layer.setClock(clock), Logger.minimumLogLevel(logLevels[options.logLevel ?? "none"]))
  const storage: Layer.Layer<FileStorage> | undefined =
    (options.storage ?? "memory") === "memory" ? storageWithFaults(MemoryFileStorage, failing) : undefined
  const layer = Layer.merge(
    syllabusLayer({
      store: withFaults(seededMemoryStore, failing),
      ...(storage ? { storage } : {}),
      keys: (processKeys ??= ephemeralKeys()),
      rateLimits: options.rateLimits ?? "off",
      workers,
      onWebhook,
      ...(options.settings ? { settings: options.settings } : {})
      // The workers forked while the layer is built run on the test clock too.
    }).pipe(Layer.provide(runsOn)),
    runsOn
  )
  const runtime = ManagedRuntime.make(layer)
  const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect as Effect.Effect<A, E, never>)
  const subdomain = options.account?.subdomain ?? `test-${process.pid}-${n}-${Math.floor(Math.random() * 1e6)}`
  const email = options.administrator?.email ?? `admin@${subdomain}.example`
  const password = options.administrator?.password ?? DEFAULT_PASSWORD
  const started = async () => {
    const handler = await webHandlerOf(runtime)
    systemRecordsKnown = true
    const opened = await run(
      Effect.flatMap(Crypto, (crypto) =>
        openAccount({
          name: options.account?.name ?? `Test account ${n}`,
          subdomain,
          administrator: { email, name: options.administrator?.name ?? "Test Administrator", password }
        }).pipe(
          Effect.provideService(Crypto, {
            ...crypto,
            hashPassword: (plain) => {
              let hash = passwordHashes.get(plain)
              if (hash === undefined) passwordHashes.set(plain, (hash = crypto.hashPassword(plain)))
              return hash
            }
          })
        )
      )
    )
    return { handler, opened }
  }
  // An instance that cannot start leaves nothing running.
  const { handler, opened } = await started().catch(async (error: unknown) => {
    await runtime.dispose()
    throw error
  })
  const credentialOf = (environment: "production" | "sandbox") => {
    const found = opened.credentials.find((c) => c.environment === environment)!
    return { id: found.id, secret: found.secret }
  }
  const credentials = { live: credentialOf("production"), test: credentialOf("sandbox") }
  const defaultCredential = options.credential ?? "test"

  // -------------------------------------------------------------------------------------
  // Requests

  const resolve = (path: string): string =>
    /^[a-z][a-z0-9+.-]*:/i.test(path) ? path : ORIGIN + (path.startsWith(`${API_PREFIX}/`) || path === API_PREFIX ? path : `${API_PREFIX}${path.startsWith("/") ? "" : "/"}${path}`)

  const apiFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request =
      input instanceof Request ? (init === undefined ? input : new Request(input, init)) : new Request(input instanceof URL ? input.href : resolve(input), init)
    return handler(request)
  }

  let keyCounter = 0
  const request = async (method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse> => {
    const headers = new Headers(opts.headers)
    const credential = opts.credential ?? defaultCredential
    if (credential !== "none" && !headers.has("authorization")) headers.set("authorization", `Bearer ${credentials[credential].secret}`)
    if (opts.json !== undefined && !headers.has("content-type")) headers.set("content-type", "application/json")
    if (method.toUpperCase() === "POST" && opts.idempotencyKey !== null && !headers.has("idempotency-key")) {
      headers.set("idempotency-key", opts.idempotencyKey ?? `test-${n}-${++keyCounter}-${Date.now()}`)
    }
    const res = await apiFetch(path, { method, headers, ...(opts.json !== undefined ? { body: JSON.stringify(opts.json) } : {}) })
    const text = await res.text()
    let body: unknown
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: res.status, headers: res.headers, body }
  }

  /** `data` of a 2xx answer; otherwise an error that says what the API answered. */
  const created = async (method: string, path: string, json?: unknown): Promise<any> => {
    const res = await request(method, path, json === undefined ? {} : { json })
    if (res.status < 200 || res.status > 299) {
      throw new Error(`${method} ${path} answered ${res.status} ${res.body?.error?.code ?? ""}: ${res.body?.error?.message ?? ""}`.trim())
    }
    return res.body?.data
  }

  // -------------------------------------------------------------------------------------
  // A socket, on demand

  let listening: Promise<{ server: Server; url: string }> | undefined
  const listen = async (): Promise<string> => {
    listening ??= (async () => {
      const edge = await run(makeNodeEdge())
      const server = createServer({ ...edge.serverOptions, requireHostHeader: false }, edge.listener)
      edge.attach(server)
      await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
      return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${API_PREFIX}` }
    })()
    return (await listening).url
  }

  // -------------------------------------------------------------------------------------
  // Time

  /** Whether work that is due has not been picked up yet: deliveries due or in flight, operations queued or with a lapsed lease. */
  const workDue = Effect.gen(function* () {
    const records = yield* Records
    const now = clock.unsafeCurrentTimeMillis()
    const lists = yield* Effect.all([
      records.scan(WEBHOOK_DELIVERY_TYPE, [{ field: "status", op: "eq", value: "pending" }, { field: "due_at", op: "lte", value: now }], 1),
      records.scan(WEBHOOK_DELIVERY_TYPE, [{ field: "status", op: "eq", value: "sending" }], 1),
      records.scan(OPERATION_TYPE, [{ field: "status", op: "eq", value: "queued" }], 1),
      records.scan(OPERATION_TYPE, [{ field: "status", op: "eq", value: "running" }, { field: "lease_until", op: "lt", value: now }], 1)
    ])
    return lists.some((list) => list.length > 0)
  }).pipe(Effect.orElseSucceed(() => false))

  const testClock: TestClock = {
    now: () => clock.unsafeCurrentTimeMillis(),
    advance: async (duration) => {
      clock.advance(toMilliseconds(duration))
      if (!workers) return
      // The housekeeping's passes, awaited here rather than left to its own fiber.
      await run(housekeepingPass().pipe(Effect.ignore))
      for (let waited = 0; waited < 2000 && (await run(workDue)); waited += 10) await realSleep(10)
    }
  }

  // -------------------------------------------------------------------------------------
  // Webhooks and events

  const webhookFilter = (filter: { readonly type?: string | undefined; readonly url?: string | undefined }) => (w: ReceivedWebhook) =>
    (filter.type === undefined || w.type === filter.type) && (filter.url === undefined || w.url === filter.url)

  const webhooks: WebhookCapture = {
    received: (filter = {}) => received.filter(webhookFilter(filter)),
    waitFor: (type, opts = {}) =>
      new Promise<ReceivedWebhook>((resolvePromise, reject) => {
        const wanted = (w: ReceivedWebhook) =>
          webhookFilter({ type, url: opts.url })(w) && (opts.match === undefined || matches(w.event?.data?.object, opts.match))
        const check = () => {
          const found = received.find(wanted)
          if (found === undefined) return
          arrivals.delete(check)
          clearTimeout(timer)
          resolvePromise(found)
        }
        const timeoutMs = opts.timeoutMs ?? 5000
        const timer = setTimeout(() => {
          arrivals.delete(check)
          reject(new Error(`no ${type} webhook arrived within ${timeoutMs} ms; arrived: ${received.map((w) => w.type).join(", ") || "none"}`))
        }, timeoutMs)
        arrivals.add(check)
        check()
      }),
    clear: () => {
      received.length = 0
    },
    verify: (delivery, secret, opts = {}) => {
      const id = delivery.headers["webhook-id"]
      const timestamp = Number(delivery.headers["webhook-timestamp"])
      if (id === undefined || !Number.isInteger(timestamp)) throw new WebhookVerificationFailed("missing webhook-id or webhook-timestamp")
      const nowSeconds = Math.floor(clock.unsafeCurrentTimeMillis() / 1000)
      const tolerance = opts.toleranceSeconds ?? 300
      if (Math.abs(nowSeconds - timestamp) > tolerance) {
        throw new WebhookVerificationFailed(`timestamp ${timestamp} is more than ${tolerance} s from the test clock's ${nowSeconds}`)
      }
      const expected = Buffer.from(standardWebhookSignature(secret, id, timestamp, delivery.body))
      const signed = (delivery.headers["webhook-signature"] ?? "").split(" ").some((given) => {
        const bytes = Buffer.from(given)
        return bytes.length === expected.length && timingSafeEqual(bytes, expected)
      })
      if (!signed) throw new WebhookVerificationFailed("no signature of this secret matches")
      return delivery.event
    }
  }

  const listEvents = async (filter: { readonly type?: string | undefined; readonly credential?: "test" | "live" | undefined } = {}) => {
    const query = new URLSearchParams({ limit: "200", ...(filter.type !== undefined ? { type: filter.type } : {}) })
    const res = await request("GET", `/events?${query}`, { credential: filter.credential ?? defaultCredential })
    if (res.status !== 200) throw new Error(`GET /events answered ${res.status} ${res.body?.error?.code ?? ""}`.trim())
    return res.body.data as ReadonlyArray<any>
  }

  const events: EventLog = {
    list: (filter) => listEvents(filter),
    expect: async (type, opts = {}) => {
      const deadline = Date.now() + (opts.timeoutMs ?? 2000)
      for (;;) {
        const recorded = await listEvents({ type, credential: opts.credential })
        const found = recorded.find((event) => opts.match === undefined || matches(event?.data?.object, opts.match))
        if (found !== undefined) return found
        if (Date.now() >= deadline) {
          const all = await listEvents({ credential: opts.credential })
          throw new Error(
            `no ${type} event${opts.match ? ` matching ${JSON.stringify(opts.match)}` : ""} was recorded` +
              ` (${recorded.length} of that type; recorded types: ${[...new Set(all.map((e) => e.type))].join(", ") || "none"})`
          )
        }
        await realSleep(20)
      }
    }
  }

  const faults: Faults = {
    store: (down = true) => {
      for (const port of storePorts) down ? failing.add(port) : failing.delete(port)
    },
    storage: (down = true) => {
      down ? failing.add("storage") : failing.delete("storage")
    },
    receiver: (down = true, url) => {
      if (url === undefined) {
        everyReceiverDown = down
        if (!down) receiversDown.clear()
      } else down ? receiversDown.add(url) : receiversDown.delete(url)
    }
  }

  // -------------------------------------------------------------------------------------
  // Seeds

  let seeded = 0
  let defaultShowcase: Promise<string> | undefined
  const seed: Seeds = {
    showcase: (fields = {}) => created("POST", "/showcases", { name: `Showcase ${++seeded}`, ...fields }),
    product: async (fields = {}) => {
      const showcaseId = fields["showcase_id"] ?? (await (defaultShowcase ??= seed.showcase().then((s) => String(s.id))))
      return created("POST", "/products", { format: "course", name: `Product ${++seeded}`, showcase_id: showcaseId, ...fields })
    },
    publish: async (productId) => {
      const operation = await created("POST", `/products/${productId}/publications`)
      for (let i = 0; ; i++) {
        const current = await created("GET", `/operations/${operation.id}`)
        // An operation that ran every item succeeded even if some failed: a seed wants them all.
        const failedItems = Number((current.progress as { failed?: number } | undefined)?.failed ?? 0)
        if (current.status === "succeeded" && failedItems === 0) return created("GET", `/products/${productId}`)
        if (current.status === "succeeded") throw new Error(`publishing ${productId}: ${failedItems} of its items failed (GET /operations/${operation.id}/items)`)
        if (current.status === "failed" || current.status === "canceled") {
          throw new Error(`publishing ${productId} ${current.status}: ${JSON.stringify(current.error ?? current)}`)
        }
        if (i >= 500) throw new Error(`publishing ${productId}: operation ${operation.id} still ${current.status} after 5 s${workers ? "" : " (workers are off)"}`)
        await realSleep(10)
      }
    },
    user: (fields = {}) => {
      const k = ++seeded
      return created("POST", "/users", { name: `User ${k}`, email: `user${k}@${subdomain}.example`, ...fields })
    },
    webhook: (fields = {}) => created("POST", "/webhooks", { url: `https://hooks.example.com/${++seeded}`, event_types: ["*"], ...fields })
  }

  return {
    baseUrl: ORIGIN + API_PREFIX,
    account: { id: opened.account.id, name: opened.account.name, subdomain },
    secrets: { live: credentials.live.secret, test: credentials.test.secret },
    credentials,
    administrator: { id: opened.administrator.id, email: email.toLowerCase(), password },
    fetch: apiFetch,
    listen,
    request,
    clock: testClock,
    webhooks,
    events,
    faults,
    seed,
    close: async () => {
      if (listening !== undefined) {
        const { server } = await listening
        const closed = new Promise<void>((done) => server.close(() => done()))
        // Clients keep connections alive: the server closes only once they are gone.
        server.closeAllConnections()
        await closed
      }
      await runtime.dispose()
    }
  }
}
