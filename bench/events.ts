/**
 * Integration throughput (issue 5): webhook deliveries per second to a local receiver, and
 * the latency from a write to its event on a Server-Sent Events stream. The servers run in
 * child processes; the receiver and the clients run here.
 *
 * Stream latency is measured (issue 10) with the stream and the writes in one server process
 * on the in-memory store and on PostgreSQL, then across two server processes on one
 * PostgreSQL database (stream on A, writes through B): with the change relay
 * (`LISTEN/NOTIFY`, in every `pgLayer`), and without it (the 200 ms poll alone), for
 * comparison. PostgreSQL parts use a fresh database on `DATABASE_URL` (default the local
 * server), dropped afterwards.
 *
 *   node --import tsx bench/events.ts                 # 500 events, every part
 *   BENCH_EVENTS=2000 node --import tsx bench/events.ts
 *   BENCH_PARTS=cross,cross-poll BENCH_LATENCY_SAMPLES=200 node --import tsx bench/events.ts
 *
 * Parts (`BENCH_PARTS`, comma-separated, default all): `webhooks`, `memory`, `pg`, `cross`, `cross-poll`.
 */
import { fork } from "node:child_process"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import type { StoreServices } from "@syllabus/http"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { freshDatabase } from "./pg.js"

const EVENTS = Number(process.env["BENCH_EVENTS"] ?? 500)
const LATENCY_SAMPLES = Number(process.env["BENCH_LATENCY_SAMPLES"] ?? 50)
/** Samples taken first and not counted (connections, the relays' first LISTEN). */
const WARM_UP = 5
const PARTS = new Set((process.env["BENCH_PARTS"] ?? "webhooks,memory,pg,cross,cross-poll").split(","))

if (process.argv[2] === "--server") {
  // --server <memory | database URL> [--open] [--no-relay]
  const store = process.argv[3]!
  const open = process.argv.includes("--open")
  const { createServer: createHttpServer } = await import("node:http")
  const { makeNodeListener } = await import("@syllabus/http")
  const { MemoryStore } = await import("@syllabus/memory")
  const { MemoryFileStorage } = await import("@syllabus/storage")
  const { ChangeRelay } = await import("@syllabus/core")
  const { pgLayer } = await import("@syllabus/pg")
  const pg = () => pgLayer(store, { maxConnections: 10 })
  const storeLayer: Layer.Layer<StoreServices, unknown> =
    store === "memory"
      ? MemoryStore
      : process.argv.includes("--no-relay")
        ? // As before the relay: the same store, its ChangeRelay left out.
          Layer.effectContext(Effect.map(Effect.context<Layer.Layer.Success<ReturnType<typeof pg>>>(), Context.omit(ChangeRelay))).pipe(
            Layer.provide(pg())
          )
        : pg()
  const app = await makeNodeListener({ store: storeLayer, storage: MemoryFileStorage, rateLimits: "off", allowLocalWebhooks: true })
  const opened = open
    ? await app.openAccount({
      name: "Bench",
      subdomain: `bench${Date.now()}`,
      administrator: { email: "bench@bench.example", name: "Bench", password: "bench password" }
    })
    : undefined
  const server = createHttpServer(app.listener)
  server.listen(0, "127.0.0.1", () => {
    process.send?.({
      port: (server.address() as AddressInfo).port,
      secret: opened?.credentials.find((c) => c.environment === "sandbox")!.secret ?? null
    })
  })
  process.on("message", () => process.exit(0))
} else {
  interface Child {
    readonly base: string
    readonly secret: string | null
    stop(): void
  }
  const startServer = async (store: string, ...flags: Array<string>): Promise<Child> => {
    const child = fork(new URL(import.meta.url).pathname, ["--server", store, ...flags], { execArgv: ["--import", "tsx"] })
    const { port, secret } = await new Promise<{ port: number; secret: string | null }>((resolve) => child.once("message", resolve as never))
    return { base: `http://127.0.0.1:${port}/api/v3`, secret, stop: () => child.send("stop") }
  }
  const caller = (base: string, secret: string) => async (method: string, path: string, body?: unknown, key?: string) => {
    const res = await fetch(base + path, {
      method,
      headers: {
        authorization: `Bearer ${secret}`,
        ...(body ? { "content-type": "application/json" } : {}),
        ...(method === "POST" ? { "idempotency-key": key ?? `${Date.now()}-${Math.random()}` } : {})
      },
      ...(body ? { body: JSON.stringify(body) } : {})
    })
    return { status: res.status, json: (await res.json()) as { data: Record<string, unknown> } }
  }

  // --- webhook deliveries per second -------------------------------------------------------
  if (PARTS.has("webhooks")) {
    const server = await startServer("memory", "--open")
    const call = caller(server.base, server.secret!)
    let received = 0
    let lastAt = 0
    const receiver = createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        received++
        lastAt = performance.now()
        res.writeHead(200).end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
    const hook = await call("POST", "/webhooks", {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
      event_types: ["tag.created"],
      max_per_second: 100
    })
    if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${JSON.stringify(hook.json)}`)
    const started = performance.now()
    for (let i = 0; i < EVENTS; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, EVENTS - i) }, (_, j) => call("POST", "/tags", { name: `g-${i + j}` })))
    }
    const written = performance.now()
    while (received < EVENTS && performance.now() - started < 300_000) await new Promise((r) => setTimeout(r, 50))
    const deliverySeconds = (lastAt - started) / 1000
    console.log(
      `webhooks: ${received}/${EVENTS} events delivered in ${deliverySeconds.toFixed(1)} s from the first write ` +
        `(writes took ${((written - started) / 1000).toFixed(1)} s): ${(received / deliverySeconds).toFixed(0)} deliveries/s ` +
        `(max_per_second ${100} per webhook caps it)`
    )
    receiver.close()
    server.stop()
  }

  // --- write-to-stream latency -------------------------------------------------------------
  /** Stream on `reader`, writes through `writer`, one at a time; p50/p90/p95/max. */
  const latency = async (label: string, reader: Child, writer: Child, secret: string) => {
    const read = caller(reader.base, secret)
    const write = caller(writer.base, secret)
    const stream = await read("POST", "/event-streams", { start: "now", filters: { event_types: ["showcase.created"] } })
    const res = await fetch(`${reader.base}/event-streams/${String(stream.json.data.id)}/events`, {
      headers: { authorization: `Bearer ${secret}`, accept: "text/event-stream" }
    })
    const body = res.body!.getReader()
    const decoder = new TextDecoder()
    let buffer = ""
    const nextEvent = async (): Promise<void> => {
      for (;;) {
        const frame = buffer.indexOf("\n\n")
        if (frame >= 0) {
          const message = buffer.slice(0, frame)
          buffer = buffer.slice(frame + 2)
          if (message.startsWith("id:") || message.includes("\nevent:")) return
          continue
        }
        const { value, done } = await body.read()
        if (done) throw new Error("stream ended")
        buffer += decoder.decode(value, { stream: true })
      }
    }
    const latencies: Array<number> = []
    /** How long the write itself took to answer, and how long the event came after that answer (the stream's part). */
    const answers: Array<number> = []
    const afterAnswer: Array<number> = []
    for (let i = 0; i < WARM_UP + LATENCY_SAMPLES; i++) {
      const t0 = performance.now()
      const waiting = nextEvent()
      const written = await write("POST", "/showcases", { name: `s-${i}` })
      if (written.status !== 201) throw new Error(`write: ${written.status} ${JSON.stringify(written.json)}`)
      const answered = performance.now() - t0
      await waiting
      if (i >= WARM_UP) {
        latencies.push(performance.now() - t0)
        answers.push(answered)
        afterAnswer.push(performance.now() - t0 - answered)
      }
    }
    await body.cancel()
    const quantile = (values: Array<number>) => {
      const sorted = [...values].sort((a, b) => a - b)
      return (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(0)
    }
    const at = quantile(latencies)
    const after = quantile(afterAnswer)
    console.log(
      `stream, ${label}: write to event on the stream, ${LATENCY_SAMPLES} samples: ` +
        `p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, p95 ${at(0.95)} ms, max ${at(1)} ms; ` +
        `the write's own answer p50 ${quantile(answers)(0.5)} ms; the event after the answer p50 ${after(0.5)} ms, p95 ${after(0.95)} ms`
    )
  }

  if (PARTS.has("memory")) {
    const server = await startServer("memory", "--open")
    await latency("memory, one process (woken by its own commit)", server, server, server.secret!)
    server.stop()
  }
  /** Two server processes on one fresh database, A opening the account. */
  const onPostgres = async (run: (a: Child, b: Child, secret: string) => Promise<void>, ...flags: Array<string>) => {
    const scope = Effect.runSync(Scope.make())
    try {
      const { url } = await Effect.runPromise(Scope.extend(freshDatabase, scope))
      const a = await startServer(url, "--open", ...flags)
      const b = await startServer(url, ...flags)
      try {
        await run(a, b, a.secret!)
      } finally {
        a.stop()
        b.stop()
      }
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
  if (PARTS.has("pg")) {
    await onPostgres((a, _b, secret) => latency("PostgreSQL, one process (woken by its own commit)", a, a, secret))
  }
  if (PARTS.has("cross")) {
    await onPostgres((a, b, secret) => latency("PostgreSQL, stream on A, writes through B (LISTEN/NOTIFY relay)", a, b, secret))
  }
  if (PARTS.has("cross-poll")) {
    await onPostgres(
      (a, b, secret) => latency("PostgreSQL, stream on A, writes through B, no relay (the 200 ms poll)", a, b, secret),
      "--no-relay"
    )
  }
}
