/**
 * The server of `bench/scale.ts`, run as its child process so that the HTTP client never
 * shares the server's event loop (as `bench/server.ts` does for `bench/run.ts`).
 *
 *   node --import tsx bench/scale-server.ts postgresql --url <database url>
 *   node --import tsx bench/scale-server.ts memory --products N --users N --others 9x100000 --unit 20000
 *
 * - `postgresql`: the database is already loaded (by the parent). Starting is what the
 *   standalone server does at start: `pgLayer(url)` migrates and syncs the access-path indexes
 *   (creating the missing ones `CONCURRENTLY`, then `ANALYZE`); `startupMs` is that time.
 * - `memory`: opens the accounts, then inserts the records through `Records`, in units of
 *   work of `--unit` records; `loadMs` is that time.
 *
 * The product is assembled as an embedding would (`syllabusLayer` with `rateLimits: "off"`,
 * `app`, `NodeHttpServer.makeHandler` without the `http.server` span, a `node:http` server on
 * 127.0.0.1). Over IPC it sends `ready` (port, and for memory the secret and account), and
 * answers `sign` with the server's own cursor signature of a payload (`Crypto.signCursor`):
 * the parent builds a cursor deep in an order from one the server issued, moving only its
 * position. It stops on `stop` or when the parent goes away.
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Crypto, openAccount, Records, type Tenant, UnitOfWork } from "@syllabus/core"
import { app, syllabusLayer } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { Effect, ManagedRuntime } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { parseArgs } from "node:util"
import { parseOthers, productData, productId, productKeys, userData, userId, userKeys } from "./scale-data.js"

export type ScaleServerMessage =
  | {
      readonly type: "ready"
      readonly port: number
      readonly startupMs: number
      readonly loadMs: number | null
      readonly secret: string | null
      readonly accountId: string | null
      readonly heapMiB: number
    }
  | { readonly type: "failed"; readonly error: string }
  | { readonly type: "signed"; readonly body: string; readonly signature: string }
  | { readonly type: "progress"; readonly text: string }

type Listener = (req: IncomingMessage, res: ServerResponse) => void

const main = async () => {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      url: { type: "string" },
      products: { type: "string", default: "1000000" },
      users: { type: "string", default: "1000000" },
      others: { type: "string", default: "9x100000" },
      unit: { type: "string", default: "20000" }
    }
  })
  const send = (message: ScaleServerMessage) => {
    if (process.connected) process.send?.(message)
  }
  const store = positionals[0]
  const started = performance.now()
  const runtime = ManagedRuntime.make(
    syllabusLayer({ store: store === "postgresql" ? pgLayer(values.url!) : MemoryStore, rateLimits: "off" })
  )
  const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect as Effect.Effect<A, E, never>)
  let listener: Listener
  let loadMs: number | null = null
  let secret: string | null = null
  let accountId: string | null = null
  let startupMs = 0
  try {
    // As `makeNodeListener` builds it with `traceRequests` off: no `http.server` span.
    listener = await run(HttpMiddleware.withTracerDisabledWhenEffect(NodeHttpServer.makeHandler(app) as Effect.Effect<Listener>, () => true))
    startupMs = performance.now() - started
    if (store === "memory") {
      const loadStarted = performance.now()
      const others = parseOthers(values.others!)
      const unit = Number(values.unit)
      const accounts = [{ products: Number(values.products), users: Number(values.users) }]
      for (let a = 0; a < others.count; a++) accounts.push({ products: others.size, users: others.size })
      for (const [a, sizes] of accounts.entries()) {
        const subdomain = `scale-${a}-${Date.now().toString(36)}`
        const opened = await run(
          openAccount({
            name: `Scale Academy ${a}`,
            subdomain,
            administrator: { email: `admin@${subdomain}.example`, name: "Bench Admin", password: "correct horse battery" }
          })
        )
        if (a === 0) {
          secret = opened.credentials.find((c) => c.environment === "production")!.secret
          accountId = opened.account.id
        }
        const tenant: Tenant = { accountId: opened.account.id, environment: "production" }
        for (const [type, n, id, data, keys] of [
          ["product", sizes.products, productId, productData, productKeys],
          ["user", sizes.users, userId, userData, userKeys]
        ] as const) {
          for (let from = 0; from < n; from += unit) {
            const to = Math.min(n, from + unit)
            await run(
              Effect.gen(function* () {
                const records = yield* Records
                const uow = yield* UnitOfWork
                yield* uow.transaction(
                  Effect.gen(function* () {
                    for (let i = from; i < to; i++) {
                      const d = data(i, a)
                      yield* records.insert(tenant, type, id(i, a), d, keys(d))
                    }
                  })
                )
              })
            )
          }
          send({ type: "progress", text: `account ${a}: ${n.toLocaleString("en")} ${type}s (${((performance.now() - loadStarted) / 1000).toFixed(0)} s)` })
        }
      }
      loadMs = performance.now() - loadStarted
    }
  } catch (error) {
    send({ type: "failed", error: String((error as Error)?.stack ?? error) })
    await runtime.dispose().catch(() => {})
    process.exit(1)
  }
  const server = createServer({ keepAliveTimeout: 60_000 }, listener)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
    await runtime.dispose().catch(() => {})
    process.exit(0)
  }
  process.on("message", (message: { type?: string; body?: string }) => {
    if (message?.type === "stop") void stop()
    if (message?.type === "sign" && typeof message.body === "string") {
      const body = message.body
      void run(Effect.map(Crypto, (crypto) => crypto.signCursor(body))).then((signature) => send({ type: "signed", body, signature }))
    }
  })
  process.on("disconnect", () => void stop())
  process.on("SIGTERM", () => void stop())
  process.on("SIGINT", () => void stop())
  send({
    type: "ready",
    port: (server.address() as AddressInfo).port,
    startupMs,
    loadMs,
    secret,
    accountId,
    heapMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20)
  })
}

void main()
