/**
 * Certificate rendering and the other tenants (issue 23, finding 5): what heavy certificate
 * previews cost another account's requests. A server child process runs the real app on the
 * in-memory store; account A's product has a template whose content is one 64 KiB word without
 * spaces (seconds of pdfkit's line breaking); account B sends a trivial request
 * (`GET /products?limit=1`), one at a time, `BENCH_SAMPLES` times (default 100):
 *
 * - baseline: nothing else runs;
 * - storm: meanwhile A keeps `BENCH_PREVIEWS` heavy previews in flight (default 2), one after
 *   the other each; the previews made and their outcomes are counted.
 *
 * B's latency p50/p95/max in each. `BENCH_RENDERER=inline` draws in the request's thread (as
 * before issue 23: `renderCertificatePdf`), `pool` (default) in the render pool.
 *
 *   node --import tsx bench/render-storm.ts
 *   BENCH_RENDERER=inline node --import tsx bench/render-storm.ts
 */
import { fork } from "node:child_process"
import { request } from "node:http"
import { serveBenchAccount } from "./shared.js"

const SAMPLES = Number(process.env["BENCH_SAMPLES"] ?? 100)
const PREVIEWS = Number(process.env["BENCH_PREVIEWS"] ?? 2)
const RENDERER = process.env["BENCH_RENDERER"] ?? "pool"

if (process.argv[2] === "--server") {
  const { Layer } = await import("effect")
  const { CertificateRenderer } = await import("@syllabus/core")
  const { makeNodeListener, renderCertificatePdf } = await import("@syllabus/http")
  const { MemoryStore } = await import("@syllabus/memory")
  const { MemoryFileStorage } = await import("@syllabus/storage")
  const app = await makeNodeListener({
    store: MemoryStore,
    storage: MemoryFileStorage,
    rateLimits: "off",
    ...(RENDERER === "inline" ? { certificateRenderer: Layer.succeed(CertificateRenderer, { render: renderCertificatePdf }) } : {})
  })
  const other = await app.openAccount({
    name: "Other",
    subdomain: "other",
    administrator: { email: "other@bench.example", name: "Other", password: "bench password" }
  })
  await serveBenchAccount(app, { extra: { other: other.credentials.find((c) => c.environment === "production")!.secret } })
  process.on("message", async () => {
    await app.dispose()
    process.exit(0)
  })
} else {
  const child = fork(new URL(import.meta.url).pathname, ["--server"], { execArgv: ["--import", "tsx"] })
  // The server goes with this process, however it ends.
  process.on("exit", () => child.kill())
  const ready = await new Promise<{ port: number; secret: string; other: string }>((resolve) => child.once("message", resolve as never))
  let keys = 0
  const call = (secret: string, method: string, path: string, body?: unknown) =>
    new Promise<{ status: number; json: any }>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body)
      const req = request(
        {
          host: "127.0.0.1",
          port: ready.port,
          method,
          path: `/api/v3${path}`,
          headers: {
            authorization: `Bearer ${secret}`,
            ...(payload ? { "content-type": "application/json" } : {}),
            ...(method === "POST" ? { "idempotency-key": `bench-${++keys}` } : {})
          }
        },
        (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (d: Buffer) => chunks.push(d))
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8")
            resolve({ status: res.statusCode ?? 0, json: text.startsWith("{") ? JSON.parse(text) : undefined })
          })
        }
      )
      req.on("error", reject)
      req.end(payload)
    })
  const must = async (p: Promise<{ status: number; json: any }>, status: number) => {
    const res = await p
    if (res.status !== status) throw new Error(`${res.status} ${JSON.stringify(res.json)}`)
    return res.json.data
  }

  const showcase = await must(call(ready.secret, "POST", "/showcases", { name: "Shelf" }), 201)
  const product = await must(call(ready.secret, "POST", "/products", { format: "course", name: "Heavy", showcase_id: showcase.id }), 201)
  await must(call(ready.secret, "PUT", `/products/${product.id}/certificate-template`, { enabled: true, texts: { content: "W".repeat(64 * 1024) } }), 200)

  const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
  /** B's GETs one after the other; a failed one (reset, timeout, not 200) counts with its time. */
  const sample = async () => {
    const times: Array<number> = []
    let failed = 0
    for (let i = 0; i < SAMPLES; i++) {
      const started = performance.now()
      const ok = await call(ready.other, "GET", "/products?limit=1").then((res) => res.status === 200, () => false)
      if (!ok) failed++
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    return { p50: percentile(times, 50), p95: percentile(times, 95), max: times.at(-1)!, failed }
  }
  const show = (label: string, s: { p50: number; p95: number; max: number; failed: number }) =>
    console.log(
      `${label}: B's GET p50 ${s.p50.toFixed(1)} ms, p95 ${s.p95.toFixed(1)} ms, max ${s.max.toFixed(1)} ms (${SAMPLES} samples, ${s.failed} failed)`
    )

  await sample() // warm-up
  show("baseline", await sample())

  let storming = true
  const outcomes = new Map<number, number>()
  const previews = Array.from({ length: PREVIEWS }, async () => {
    while (storming) {
      const status = await call(ready.secret, "POST", `/products/${product.id}/certificate-template/previews`, {}).then((res) => res.status, () => 0)
      outcomes.set(status, (outcomes.get(status) ?? 0) + 1)
    }
  })
  // The first previews are on their way before B starts.
  await new Promise((r) => setTimeout(r, 200))
  const storm = await sample()
  storming = false
  await Promise.all(previews)
  show(`storm (${PREVIEWS} heavy previews in flight, renderer ${RENDERER})`, storm)
  console.log(`previews answered: ${[...outcomes].map(([status, n]) => `${n} × ${status === 0 ? "connection reset" : status}`).join(", ")}`)
  child.send("stop")
}
