/**
 * Hostile import files (issue 23, findings 1 and 4): the server's memory while it refuses them.
 * A server child process runs the real app (its operations worker included) on the in-memory
 * store (`BENCH_STORE=pg` for PostgreSQL on `DATABASE_URL`) and the local file storage; this
 * process generates each file on the fly (never whole in memory), uploads it part by part,
 * starts an import of tags and polls it, sampling the child's RSS every 20 ms. Scenarios, each
 * the issue's own figure:
 *
 * - `bomb`: an XLSX whose sheet inflates to `BOMB_MIB` (default 1,450) MiB of identical rows;
 * - `line`: a CSV whose second line is `LINE_MIB` (default 300) MiB long;
 * - `cell`: an XLSX whose one inline cell holds `CELL_MIB` (default 400) MiB of text.
 *
 * For each: the file's size, the import's outcome (status, the operation's error reason, its
 * item count), the server's RSS before and its peak during the import (the growth is what the
 * file cost), and the time from the 202 to the end.
 *
 *   node --import tsx bench/hostile-imports.ts            # every scenario
 *   node --import tsx bench/hostile-imports.ts line       # one
 */
import { fork } from "node:child_process"
import { readFileSync } from "node:fs"
import { Zip, ZipDeflate } from "fflate"
import { jsonCaller, uploadBlocks } from "./shared.js"

const MIB = 1024 * 1024
const scenarios = ["bomb", "line", "cell"] as const
type Scenario = (typeof scenarios)[number]

if (process.argv[2] === "--server") {
  const { serveFileBench } = await import("./file-server.js")
  await serveFileBench(process.env["BENCH_STORE"] === "pg" ? "postgresql" : "memory", "hostile")
} else {
  const wanted = (process.argv[2] as Scenario | undefined) ? [process.argv[2] as Scenario] : [...scenarios]
  const child = fork(new URL(import.meta.url).pathname, ["--server"], { execArgv: ["--import", "tsx"] })
  const ready = await new Promise<{ port: number; secret: string }>((resolve) => child.once("message", resolve as never))
  const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) * 1024
  const base = `http://127.0.0.1:${ready.port}/api/v3`
  const call = jsonCaller(base, ready.secret)

  /** An XLSX (zip) of a first worksheet whose XML is `sheet`'s chunks, deflated as they come. */
  const xlsxOf = (sheet: () => Iterable<Uint8Array>): Buffer => {
    const out: Array<Uint8Array> = []
    const zip = new Zip((error, chunk) => {
      if (error) throw error
      out.push(chunk)
    })
    const add = (name: string, chunks: Iterable<Uint8Array>) => {
      const file = new ZipDeflate(name, { level: 6 })
      zip.add(file)
      for (const chunk of chunks) file.push(chunk)
      file.push(new Uint8Array(0), true)
    }
    add("[Content_Types].xml", [Buffer.from(`<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)])
    add("xl/worksheets/sheet1.xml", sheet())
    zip.end()
    return Buffer.concat(out)
  }
  const sheetHead = Buffer.from(`<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>name</t></is></c></row>`)
  const sheetTail = Buffer.from(`</sheetData></worksheet>`)

  /** Each scenario's file: its content type and its bytes, as blocks (generated twice: to hash, to upload). */
  const files: Record<Scenario, () => { contentType: string; blocks: () => Iterable<Buffer> }> = {
    bomb: () => {
      const mib = Number(process.env["BOMB_MIB"] ?? 1450)
      const rows = Buffer.from(`<row><c t="inlineStr"><is><t>boom</t></is></c></row>`.repeat(20_000))
      const bytes = xlsxOf(function* () {
        yield sheetHead
        for (let n = 0; n < mib * MIB; n += rows.length) yield rows
        yield sheetTail
      })
      return { contentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", blocks: () => [bytes] }
    },
    cell: () => {
      const mib = Number(process.env["CELL_MIB"] ?? 400)
      const block = Buffer.alloc(MIB, "x")
      const bytes = xlsxOf(function* () {
        yield sheetHead
        yield Buffer.from(`<row r="2"><c r="A2" t="inlineStr"><is><t>`)
        for (let n = 0; n < mib; n++) yield block
        yield Buffer.from(`</t></is></c></row>`)
        yield sheetTail
      })
      return { contentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", blocks: () => [bytes] }
    },
    line: () => {
      const mib = Number(process.env["LINE_MIB"] ?? 300)
      const block = Buffer.alloc(MIB, "a")
      return {
        contentType: "text/csv",
        blocks: function* () {
          yield Buffer.from("name\nfirst\n")
          for (let n = 0; n < mib; n++) yield block
          yield Buffer.from("\nlast\n")
        }
      }
    }
  }

  const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`
  for (const scenario of wanted) {
    const { contentType, blocks } = files[scenario]()
    const file = await uploadBlocks(ready.port, ready.secret, { filename: "hostile", contentType, purpose: "import" }, blocks)
    await new Promise((r) => setTimeout(r, 1000))
    const before = rss()
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20)
    const started = performance.now()
    const created = await call("POST", "/imports", { file_id: file.id, target: "tags" })
    if (created.status !== 202) throw new Error(`import: ${created.status} ${JSON.stringify(created.json)}`)
    let imp = created.json.data
    while (imp.completed_at === null) {
      await new Promise((r) => setTimeout(r, 50))
      imp = (await call("GET", `/imports/${imp.id}`)).json.data
    }
    const seconds = (performance.now() - started) / 1000
    clearInterval(sampler)
    const operation = (await call("GET", `/operations/${imp.operation_id}`)).json.data
    console.log(
      `${scenario.padEnd(5)} file ${mib(file.size).padStart(10)}  ${imp.status} (${operation.error?.reason ?? operation.error?.code ?? "-"}), items ${operation.progress.total}` +
        `  RSS before ${mib(before)}, peak ${mib(peak)} (+${mib(peak - before)})  ${seconds.toFixed(2)} s`
    )
  }
  child.send("stop")
}
