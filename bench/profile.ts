/**
 * A summary of a V8 `.cpuprofile` (from `node --cpu-prof`): the functions with the most self
 * time, the functions with the most total time (self + callees), and self time per package.
 *
 *   node --import tsx bench/profile.ts <file.cpuprofile> [--top 20]
 *
 * `bench/run.ts --cpu-prof <dir>` prints the same summary for each server it profiled.
 */
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
  readonly startTime: number
  readonly endTime: number
}

export interface Row {
  readonly name: string
  readonly where: string
  readonly ms: number
  readonly share: number
}

export interface ProfileSummary {
  readonly totalMs: number
  /** Samples where the thread was idle (waiting on I/O). */
  readonly idleMs: number
  readonly self: ReadonlyArray<Row>
  readonly total: ReadonlyArray<Row>
  readonly packages: ReadonlyArray<Row>
  /**
   * Each sample by what is on its stack: a frame of ours (packages/*), or else the leaf's
   * area. Effect interprets our generators from its own run loop, so much of the pipeline's
   * cost shows up as "effect" with no frame of ours above it.
   */
  readonly stacks: ReadonlyArray<Row>
}

/** Where a script lives: an npm package, one of ours, Node itself, or V8's pseudo-frames. */
export const areaOf = (url: string, functionName: string): string => {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)"
  const pnpm = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (pnpm) return pnpm[1]!
  const plain = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (plain) return plain[1]!
  const ours = /\/packages\/([^/]+)\/src\//.exec(url)
  if (ours) return `@syllabus/${ours[1]}`
  if (url.startsWith("node:")) return "node (internals)"
  if (/\/bench\//.test(url)) return "bench"
  return url
}

const shortUrl = (url: string): string => {
  if (url === "") return ""
  const ours = /\/(packages\/[^/]+\/src\/.*)$/.exec(url)
  if (ours) return ours[1]!
  const dep = /node_modules\/\.pnpm\/[^/]+\/node_modules\/(.*)$/.exec(url)
  if (dep) return dep[1]!
  return url.replace(/^file:\/\//, "")
}

const sources = new Map<string, ReadonlyArray<string> | undefined>()

/** The source line a frame points at (trimmed), to name anonymous functions. */
const snippet = (url: string, line: number): string => {
  if (!url.startsWith("file://")) return ""
  if (!sources.has(url)) {
    const path = fileURLToPath(url)
    sources.set(url, existsSync(path) ? readFileSync(path, "utf8").split("\n") : undefined)
  }
  const text = sources.get(url)?.[line]?.trim() ?? ""
  return text.length > 70 ? `${text.slice(0, 69)}…` : text
}

export const summarize = (profile: CpuProfile, top = 20): ProfileSummary => {
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  const keyOf = (frame: CallFrame) => `${frame.functionName || "(anonymous)"}\u0000${frame.url}\u0000${frame.lineNumber}`
  const self = new Map<string, number>()
  const total = new Map<string, number>()
  const packages = new Map<string, number>()
  const stacks = new Map<string, number>()
  const frames = new Map<string, CallFrame>()
  let totalMs = 0
  let idleMs = 0
  for (let i = 0; i < profile.samples.length; i++) {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000
    const node = byId.get(profile.samples[i]!)
    if (!node) continue
    totalMs += ms
    if (node.callFrame.functionName === "(idle)") {
      idleMs += ms
      continue
    }
    const key = keyOf(node.callFrame)
    frames.set(key, node.callFrame)
    self.set(key, (self.get(key) ?? 0) + ms)
    const area = areaOf(node.callFrame.url, node.callFrame.functionName)
    packages.set(area, (packages.get(area) ?? 0) + ms)
    let ours = false
    for (let id: number | undefined = node.id; id !== undefined && !ours; id = parent.get(id)) {
      ours = areaOf(byId.get(id)!.callFrame.url, "").startsWith("@syllabus/")
    }
    const stack = ours ? "a frame of @syllabus/* on the stack" : `none of ours on the stack: ${area}`
    stacks.set(stack, (stacks.get(stack) ?? 0) + ms)
    // Total time: each function once per sample, however deep it recurses.
    const seen = new Set<string>()
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame
      if (frame.functionName === "(root)") continue
      const k = keyOf(frame)
      if (seen.has(k)) continue
      seen.add(k)
      frames.set(k, frame)
      total.set(k, (total.get(k) ?? 0) + ms)
    }
  }
  const busy = totalMs - idleMs || 1
  const rows = (map: Map<string, number>, name: (key: string) => Row["name"], where: (key: string) => string) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([key, ms]) => ({ name: name(key), where: where(key), ms, share: ms / busy }))
  const fnName = (key: string) => frames.get(key)!.functionName || "(anonymous)"
  const fnWhere = (key: string) => {
    const frame = frames.get(key)!
    if (frame.url === "") return ""
    const code = /\.ts$/.test(frame.url) ? snippet(frame.url, frame.lineNumber) : ""
    return `${shortUrl(frame.url)}:${frame.lineNumber + 1}${code ? `  «${code}»` : ""}`
  }
  return {
    totalMs,
    idleMs,
    self: rows(self, fnName, fnWhere),
    total: rows(total, fnName, fnWhere),
    packages: rows(packages, (k) => k, () => ""),
    stacks: rows(stacks, (k) => k, () => "").slice(0, 6)
  }
}

export const readProfile = (file: string): CpuProfile => JSON.parse(readFileSync(file, "utf8")) as CpuProfile

const pct = (share: number) => `${(share * 100).toFixed(1).padStart(5)}%`

export const formatSummary = (summary: ProfileSummary): string => {
  const lines: Array<string> = []
  const busy = summary.totalMs - summary.idleMs
  lines.push(
    `  profiled ${(summary.totalMs / 1000).toFixed(1)} s, busy ${(busy / 1000).toFixed(1)} s (${pct(busy / (summary.totalMs || 1)).trim()}); shares below are of busy time`
  )
  lines.push("  self time by package:")
  for (const row of summary.packages) lines.push(`    ${pct(row.share)}  ${row.name}`)
  lines.push("  samples by stack:")
  for (const row of summary.stacks) lines.push(`    ${pct(row.share)}  ${row.name}`)
  lines.push("  top functions, self time:")
  for (const row of summary.self) lines.push(`    ${pct(row.share)}  ${row.name}  ${row.where}`)
  lines.push("  top functions, total time (self + callees):")
  for (const row of summary.total) lines.push(`    ${pct(row.share)}  ${row.name}  ${row.where}`)
  return lines.join("\n")
}

const isMain = process.argv[1] !== undefined && /bench[\\/]profile\.ts$/.test(process.argv[1])
if (isMain) {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { top: { type: "string", default: "20" } } })
  for (const file of positionals) {
    console.log(file)
    console.log(formatSummary(summarize(readProfile(file), Number(values.top))))
  }
}
