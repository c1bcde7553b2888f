/**
 * What the at-scale benchmarks (`bench/scale.ts`, `bench/learning.ts`) share: the log line, one
 * request at a time over keep-alive HTTP, quantiles, the server child (`bench/scale-server.ts`)
 * with its cursor signing over IPC, accounts opened through the product on a fresh PostgreSQL
 * database, a one-connection SQL runtime for the bulk load, and a canonical JSON for comparing
 * generated records with the API's.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { openAccount } from "@syllabus/core"
import { syllabusLayer } from "@syllabus/http"
import { pgLayer } from "@syllabus/pg"
import { type Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { type ChildProcess, fork } from "node:child_process"
import { Agent, request } from "node:http"
import { fileURLToPath } from "node:url"
import type { ScaleServerMessage } from "./scale-server.js"

export const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`)

/** `x` with 3 significant digits at most, for tables. */
export const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0))

// ---------------------------------------------------------------------------------------
// HTTP, one request at a time

export const agent = new Agent({ keepAlive: true, maxSockets: 1 })

export interface Response {
  readonly status: number
  readonly ms: number
  readonly body: any
}

/** One request on the shared keep-alive connection; `json` is sent as the body. */
export const send = (
  port: number,
  method: string,
  path: string,
  secret: string,
  json?: unknown,
  headers: Readonly<Record<string, string>> = {}
): Promise<Response> =>
  new Promise((resolve, reject) => {
    const payload = json === undefined ? undefined : Buffer.from(JSON.stringify(json), "utf8")
    const t0 = performance.now()
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method,
        agent,
        headers: {
          authorization: `Bearer ${secret}`,
          ...(payload ? { "content-type": "application/json", "content-length": String(payload.length) } : {}),
          ...headers
        }
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => {
          const ms = performance.now() - t0
          let body: Response["body"] = null
          try {
            body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
          } catch {
            body = null
          }
          resolve({ status: res.statusCode ?? 0, ms, body })
        })
        res.on("error", reject)
      }
    )
    req.on("error", reject)
    req.end(payload)
  })

export const get = (port: number, path: string, secret: string): Promise<Response> => send(port, "GET", path, secret)

export const nextCursorOf = (body: Response["body"]): string | null => body?.page?.next_cursor ?? body?.next_cursor ?? null

export const quantile = (sorted: ReadonlyArray<number>, q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!

/** A cursor the server issued, moved to another position and signed again by the server (`Child.sign`). */
export const movedCursor = async (cursor: string, position: Readonly<Record<string, unknown>>, sign: (body: string) => Promise<string>) => {
  const [body] = cursor.split(".")
  const payload = JSON.parse(Buffer.from(body!, "base64url").toString("utf8")) as Record<string, unknown>
  const moved = Buffer.from(JSON.stringify({ ...payload, ...position }), "utf8").toString("base64url")
  return `${moved}.${await sign(moved)}`
}

// ---------------------------------------------------------------------------------------
// The server child

export interface Child {
  readonly process: ChildProcess
  readonly ready: Extract<ScaleServerMessage, { type: "ready" }>
  readonly sign: (body: string) => Promise<string>
  readonly stop: () => Promise<void>
}

/** `bench/scale-server.ts` as a child process, once it is ready. */
export const startChild = (argv: ReadonlyArray<string>, execArgv: ReadonlyArray<string> = []): Promise<Child> =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL("./scale-server.ts", import.meta.url)), [...argv], {
      execArgv: ["--import", "tsx", ...execArgv],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    const waiting = new Map<string, (signature: string) => void>()
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    child.on("message", (message: ScaleServerMessage) => {
      if (message.type === "progress") log(`  ${message.text}`)
      if (message.type === "failed") reject(new Error(message.error))
      if (message.type === "signed") waiting.get(message.body)?.(message.signature)
      if (message.type === "ready") {
        resolve({
          process: child,
          ready: message,
          sign: (body) =>
            new Promise((done) => {
              waiting.set(body, done)
              child.send({ type: "sign", body })
            }),
          stop: async () => {
            if (child.exitCode === null) child.send({ type: "stop" })
            await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))])
            if (child.exitCode === null) child.kill("SIGKILL")
          }
        })
      }
    })
    child.once("exit", (code) => reject(new Error(`the server exited (${code}) before it was ready`)))
  })

// ---------------------------------------------------------------------------------------
// PostgreSQL

export interface OpenedAccount {
  readonly accountId: string
  /** The production secret. */
  readonly secret: string
}

/** `count` accounts opened through the product (`openAccount`) on the database of `url` (migrated on the way). */
export const openAccounts = async (url: string, count: number, name = "Scale Academy"): Promise<ReadonlyArray<OpenedAccount>> => {
  const product = ManagedRuntime.make(syllabusLayer({ store: pgLayer(url), rateLimits: "off", workers: false }))
  const opened: Array<OpenedAccount> = []
  try {
    for (let a = 0; a < count; a++) {
      const subdomain = `scale-${a}-${Date.now().toString(36)}`
      const account = await product.runPromise(
        openAccount({
          name: `${name} ${a}`,
          subdomain,
          administrator: { email: `admin@${subdomain}.example`, name: "Bench Admin", password: "correct horse battery" }
        }) as Effect.Effect<Effect.Effect.Success<ReturnType<typeof openAccount>>, unknown, never>
      )
      opened.push({ accountId: account.account.id, secret: account.credentials.find((c) => c.environment === "production")!.secret })
    }
  } finally {
    await product.dispose()
  }
  return opened
}

/** One connection to the database of `url`, for the bulk load and `EXPLAIN`. */
export const sqlRuntime = (url: string, applicationName: string) =>
  ManagedRuntime.make(
    Layer.orDie(PgClient.layer({ url: Redacted.make(url), maxConnections: 1, applicationName }))
  ) as unknown as ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>

/** JSON with object keys sorted, to compare a generated record with a stored one. */
export const canonical = (value: unknown): string =>
  value === null || typeof value !== "object"
    ? JSON.stringify(value)
    : Array.isArray(value)
      ? `[${value.map(canonical).join(",")}]`
      : `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`
