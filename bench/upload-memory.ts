/**
 * Memory while a large file streams through an upload session (issue: "memory use stays flat
 * while a 1 GiB upload streams"). A server child process runs the real app on the in-memory
 * record store and the local file storage; this process sends a file of `UPLOAD_MIB` MiB
 * (default 1024) part by part, generated on the fly, and samples the server's resident memory
 * (VmRSS) every 50 ms. Figures: the server's RSS before the upload, its peak during it, and
 * the ratio peak / before.
 *
 *   node --import tsx bench/upload-memory.ts            # 1 GiB
 *   UPLOAD_MIB=256 node --import tsx bench/upload-memory.ts
 */
import { fork } from "node:child_process"
import { serveBenchAccount } from "./shared.js"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { request } from "node:http"

const MIB = 1024 * 1024
const size = Number(process.env["UPLOAD_MIB"] ?? 1024) * MIB

if (process.argv[2] === "--server") {
  // The child: the standalone app on memory records and local files.
  const { mkdtempSync } = await import("node:fs")
  const { tmpdir } = await import("node:os")
  const { join } = await import("node:path")
  const { makeNodeListener } = await import("@syllabus/http")
  const { MemoryStore } = await import("@syllabus/memory")
  const { LocalFileStorage } = await import("@syllabus/storage")
  const directory = mkdtempSync(join(tmpdir(), "syllabus-upload-bench-"))
  const app = await makeNodeListener({ store: MemoryStore, storage: LocalFileStorage({ directory }), rateLimits: "off" })
  await serveBenchAccount(app, { extra: { directory } })
  process.on("message", async () => {
    const { rmSync } = await import("node:fs")
    rmSync(directory, { recursive: true, force: true })
    process.exit(0)
  })
} else {
  const child = fork(new URL(import.meta.url).pathname, ["--server"], { execArgv: ["--import", "tsx"] })
  const ready = await new Promise<{ port: number; secret: string }>((resolve) => child.once("message", resolve as never))
  const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) * 1024

  /** Deterministic bytes of the file, chunk `i` of 1 MiB. */
  const chunk = (i: number): Buffer => {
    const buffer = Buffer.alloc(MIB, i % 251)
    buffer.writeUInt32BE(i, 0)
    if (i === 0) buffer.write("%PDF-1.7\n", 0)
    return buffer
  }
  const hash = createHash("sha256")
  for (let i = 0; i < size / MIB; i++) hash.update(chunk(i))
  const sha256 = hash.digest("hex")

  const call = (method: string, path: string, body?: unknown, key?: string) =>
    new Promise<{ status: number; json: any }>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body)
      const req = request(
        {
          host: "127.0.0.1",
          port: ready.port,
          method,
          path,
          headers: {
            authorization: `Bearer ${ready.secret}`,
            ...(payload ? { "content-type": "application/json" } : {}),
            ...(key ? { "idempotency-key": key } : {})
          }
        },
        (res) => {
          let text = ""
          res.on("data", (d) => (text += d))
          res.on("end", () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }))
        }
      )
      req.on("error", reject)
      req.end(payload)
    })

  /** Stream one part from the generator, a chunk at a time, waiting for the socket to drain. */
  const sendPart = (url: string, first: number, chunks: number) =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: "127.0.0.1",
          port: ready.port,
          method: "PUT",
          path: url,
          headers: { authorization: `Bearer ${ready.secret}`, "content-type": "application/octet-stream", "content-length": chunks * MIB }
        },
        (res) => {
          res.resume()
          res.on("end", () => resolve(res.statusCode ?? 0))
        }
      )
      req.on("error", reject)
      let i = 0
      const write = () => {
        while (i < chunks) {
          const ok = req.write(chunk(first + i++))
          if (!ok) return void req.once("drain", write)
        }
        req.end()
      }
      write()
    })

  await new Promise((r) => setTimeout(r, 500))
  const before = rss()
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50)
  const started = Date.now()

  const session = await call("POST", "/api/v3/uploads", { purpose: "pdf", filename: "big.pdf", size, content_type: "application/pdf", sha256 }, "bench-upload")
  if (session.status !== 201) throw new Error(`session: ${session.status} ${JSON.stringify(session.json)}`)
  const upload = session.json.data
  const chunksPerPart = upload.part_size / MIB
  for (const url of upload.upload_urls) {
    const status = await sendPart(url.url, (url.part_number - 1) * chunksPerPart, url.size / MIB)
    if (status !== 200) throw new Error(`part ${url.part_number}: ${status}`)
  }
  const done = await call("POST", `/api/v3/uploads/${upload.id}/completions`, undefined, "bench-complete")
  clearInterval(sampler)
  peak = Math.max(peak, rss())
  const seconds = (Date.now() - started) / 1000
  if (done.status !== 201 || done.json.data.sha256 !== sha256) throw new Error(`completion: ${done.status} ${JSON.stringify(done.json)}`)

  const mib = (n: number) => (n / MIB).toFixed(0)
  console.log(`upload of ${mib(size)} MiB in ${upload.parts_count} parts of ${mib(upload.part_size)} MiB: ${seconds.toFixed(1)} s (${(size / MIB / seconds).toFixed(0)} MiB/s)`)
  console.log(`server RSS before ${mib(before)} MiB, peak during the upload ${mib(peak)} MiB, growth ${mib(peak - before)} MiB (${(peak / before).toFixed(2)}x); file size / growth = ${(size / Math.max(1, peak - before)).toFixed(0)}`)
  child.send("stop")
}
