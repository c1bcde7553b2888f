/**
 * Integration throughput (issue 5): webhook deliveries per second to a local receiver, and
 * the latency from a write to its event on a Server-Sent Events stream. The server runs in a
 * child process (in-memory store unless DATABASE_URL is given as BENCH_DATABASE_URL); the
 * receiver and the clients run here.
 *
 *   node --import tsx bench/events.ts                 # 500 events
 *   BENCH_EVENTS=2000 node --import tsx bench/events.ts
 */
import { fork } from "node:child_process"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const EVENTS = Number(process.env["BENCH_EVENTS"] ?? 500)
const LATENCY_SAMPLES = Number(process.env["BENCH_LATENCY_SAMPLES"] ?? 50)

if (process.argv[2] === "--server") {
  const { createServer: createHttpServer } = await import("node:http")
  const { makeNodeListener } = await import("@syllabus/http")
  const { MemoryStore } = await import("@syllabus/memory")
  const { MemoryFileStorage } = await import("@syllabus/storage")
  const app = await makeNodeListener({ store: MemoryStore, storage: MemoryFileStorage, rateLimits: "off", allowLocalWebhooks: true })
  const opened = await app.openAccount({
    name: "Bench",
    subdomain: "bench",
    administrator: { email: "bench@bench.example", name: "Bench", password: "bench password" }
  })
  const server = createHttpServer(app.listener)
  server.listen(0, "127.0.0.1", () => {
    process.send?.({ port: (server.address() as AddressInfo).port, secret: opened.credentials.find((c) => c.environment === "sandbox")!.secret })
  })
  process.on("message", () => process.exit(0))
} else {
  const child = fork(new URL(import.meta.url).pathname, ["--server"], { execArgv: ["--import", "tsx"] })
  const { port, secret } = await new Promise<{ port: number; secret: string }>((resolve) => child.once("message", resolve as never))
  const base = `http://127.0.0.1:${port}/api/v3`
  const call = async (method: string, path: string, body?: unknown, key?: string) => {
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
    event_types: ["tag_group.created"],
    max_per_second: 100
  })
  if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${JSON.stringify(hook.json)}`)
  const started = performance.now()
  for (let i = 0; i < EVENTS; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, EVENTS - i) }, (_, j) => call("POST", "/tag-groups", { name: `g-${i + j}` })))
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

  // --- write-to-stream latency -------------------------------------------------------------
  const stream = await call("POST", "/event-streams", { start: "now", filters: { event_types: ["showcase.created"] } })
  const res = await fetch(`${base}/event-streams/${String(stream.json.data.id)}/events`, {
    headers: { authorization: `Bearer ${secret}`, accept: "text/event-stream" }
  })
  const reader = res.body!.getReader()
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
      const { value, done } = await reader.read()
      if (done) throw new Error("stream ended")
      buffer += decoder.decode(value, { stream: true })
    }
  }
  const latencies: Array<number> = []
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const t0 = performance.now()
    const waiting = nextEvent()
    await call("POST", "/showcases", { name: `s-${i}` })
    await waiting
    latencies.push(performance.now() - t0)
  }
  await reader.cancel()
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!.toFixed(0)
  console.log(`stream: write to event on the stream, ${LATENCY_SAMPLES} samples: p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${at(1)} ms (a commit in the server process wakes the stream; it also polls the store every 200 ms for other processes)`)
  child.send("stop")
}
