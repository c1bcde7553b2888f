/** What `bench/run.ts` and its server children agree on. */
import type { Embedding } from "@syllabus/http"
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { createServer, type RequestListener, type Server } from "node:http"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export type ServerKind = "raw" | "effect" | "memory" | "postgresql"

/**
 * Tracing in the Effect servers: `shipped`, each with its defaults (the bare route with the
 * platform's request span, the product without it since `traceRequests` is off by default);
 * `on`, both with the request span; `http-off`, neither; `off`, the tracer disabled.
 */
export type Tracing = "shipped" | "on" | "http-off" | "off"

export const isTracing = (value: string): value is Tracing =>
  value === "shipped" || value === "on" || value === "http-off" || value === "off"

/** Sent by a server child over the IPC channel. */
export type ServerMessage =
  | { readonly type: "ready"; readonly port: number; readonly secret: string | null; readonly database: string | null }
  | { readonly type: "failed"; readonly error: string }
  | { readonly type: "measuring" }
  /** CPU time the server used during the measured run (µs). */
  | { readonly type: "cpu"; readonly userMicros: number; readonly systemMicros: number }

/** The small fixed body of both baselines. */
export const BASELINE_BODY = { data: { object: "ping", ok: true, release: "bench" } } as const
export const BASELINE_PATH = "/x"

export const defaultDatabaseUrl = "postgres://postgres@127.0.0.1:5432/test"

/**
 * What-if experiments, to see what a part of the pipeline costs (not the product):
 * `skip-request-log` drops the request-log inserts in the store, as a log written off the
 * request path would cost the request nothing.
 */
export type Experiment = "none" | "skip-request-log"

/**
 * In a benchmark's server child: open a `bench` account on `app`, serve it on a free loopback
 * port, and send the parent `{ port, secret, ...extra }` (`secret`: the account's production
 * credential secret). Answers the server.
 */
export const serveBenchAccount = async (
  app: Embedding & { readonly listener: RequestListener },
  options: { readonly subdomain?: string; readonly extra?: Readonly<Record<string, unknown>> } = {}
): Promise<Server> => {
  const opened = await app.openAccount({
    name: "Bench",
    subdomain: options.subdomain ?? "bench",
    administrator: { email: "bench@bench.example", name: "Bench", password: "bench password" }
  })
  const server = createServer(app.listener)
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    process.send?.({
      port: typeof address === "object" && address ? address.port : 0,
      secret: opened.credentials.find((c) => c.environment === "production")!.secret,
      sandboxSecret: opened.credentials.find((c) => c.environment === "sandbox")?.secret,
      ...options.extra
    })
  })
  return server
}

let benchKeys = 0

/**
 * JSON calls to a benchmark server's API (`base`: `http://host:port/api/v3`) with `secret`'s
 * credential; every call carries a fresh `Idempotency-Key` (ignored where none is asked for).
 */
export const jsonCaller =
  (base: string, secret: string) =>
  async (method: string, path: string, body?: unknown): Promise<{ readonly status: number; readonly json: any }> => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": `bench-${process.pid}-${++benchKeys}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: res.status, json: await res.json() }
  }

/**
 * Upload a file made of `blocks` (a generator giving the same bytes each time it is called: it
 * is read twice, for its hash and for its parts) through `POST /uploads`, part by part; answers
 * the file's ID and size. `port` and `secret`: the benchmark server and its credential.
 */
export const uploadBlocks = async (
  port: number,
  secret: string,
  file: { readonly filename: string; readonly contentType: string; readonly purpose: string },
  blocks: () => Iterable<Buffer>
): Promise<{ readonly id: string; readonly size: number }> => {
  const call = jsonCaller(`http://127.0.0.1:${port}/api/v3`, secret)
  const hash = createHash("sha256")
  let size = 0
  for (const block of blocks()) {
    hash.update(block)
    size += block.length
  }
  const session = await call("POST", "/uploads", {
    purpose: file.purpose,
    filename: file.filename,
    size,
    content_type: file.contentType,
    sha256: hash.digest("hex")
  })
  if (session.status !== 201) throw new Error(`session: ${session.status} ${JSON.stringify(session.json)}`)
  const upload = session.json.data
  const partSize = Number(upload.part_size)
  let pending = Buffer.alloc(0)
  let part = 1
  const sendPart = async (bytes: Buffer) => {
    const res = await fetch(`http://127.0.0.1:${port}${upload.upload_urls[part - 1].url}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/octet-stream" },
      body: new Uint8Array(bytes)
    })
    if (res.status !== 200) throw new Error(`part ${part}: ${res.status} ${await res.text()}`)
    part++
  }
  for (const block of blocks()) {
    pending = Buffer.concat([pending, block])
    while (pending.length >= partSize) {
      await sendPart(pending.subarray(0, partSize))
      pending = Buffer.from(pending.subarray(partSize))
    }
  }
  if (pending.length > 0) await sendPart(pending)
  const completed = await call("POST", `/uploads/${upload.id}/completions`)
  if (completed.status !== 201) throw new Error(`completion: ${completed.status} ${JSON.stringify(completed.json)}`)
  return { id: String(completed.json.data.id), size }
}

/**
 * How a benchmark starts a server child that runs what users run: our packages' build
 * (`dist/`, through the `@syllabus/built` condition, as `pnpm start` and an installed package
 * do), built first (`tsc -b`: seconds when it is up to date). The child's own script stays
 * TypeScript (tsx); the sources of the packages are what the workspace's tests run, and tsx's
 * transform of them (every function named through a helper) costs a few % a request.
 */
export const builtChildArgv = (() => {
  let built = false
  return (): Array<string> => {
    if (!built) {
      const root = fileURLToPath(new URL("..", import.meta.url))
      execFileSync(join(root, "node_modules/.bin/tsc"), ["-b", "tsconfig.build.json"], { cwd: root, stdio: "inherit" })
      built = true
    }
    return ["--import", "tsx", "--conditions=@syllabus/built"]
  }
})()
