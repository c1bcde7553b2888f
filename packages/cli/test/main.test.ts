/**
 * The installed command (`bin` → src/main.ts) as a real process: output streams and exit
 * codes as a shell sees them.
 */
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type Harness, startHarness } from "../../../test/support/harness.js"
import { user } from "./support.js"

const root = resolve(import.meta.dirname, "../../..")
const main = resolve(import.meta.dirname, "../src/main.ts")

let h: Harness
beforeAll(async () => {
  h = await startHarness("memory")
}, 60_000)
afterAll(async () => {
  await h?.close()
})

/** The command with its output piped, as a shell script or CI runs it; `imports` are more `--import`s for node. */
const syllabus = (env: Record<string, string>, ...argv: ReadonlyArray<string>) => syllabusWith([], env, ...argv)

const syllabusWith = (imports: ReadonlyArray<string>, env: Record<string, string>, ...argv: ReadonlyArray<string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    const flags = ["tsx", ...imports].flatMap((module) => ["--import", module])
    execFile(process.execPath, [...flags, main, ...argv], { cwd: root, env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr })
    )
  })

const ESC = "\u001b"

it("`node --import tsx packages/cli/src/main.ts`: results on stdout with exit 0, `error.code: message` on stderr with exit 1", async () => {
  const env = { SYLLABUS_CONFIG_DIR: join(mkdtempSync(join(tmpdir(), "syllabus-main-")), "config") }
  expect((await user({ env }).cli("configure", "--base-url", h.baseUrl, "--api-key", h.live)).code).toBe(0)
  const listed = await syllabus(env, "credentials", "list", "--json")
  expect(listed.code, listed.stderr).toBe(0)
  expect((JSON.parse(listed.stdout) as Array<{ object: string }>).every((c) => c.object === "credential")).toBe(true)
  const missing = await syllabus(env, "credentials", "get", "crd_missing00")
  expect(missing.code).toBe(1)
  expect(missing.stdout).toBe("")
  expect(missing.stderr).toMatch(/^[a-z_]+: .+\n$/)
}, 30_000)

it("a pipe is no terminal: `operations get --wait` shows plain progress lines, no bar", async () => {
  const env = { SYLLABUS_CONFIG_DIR: join(mkdtempSync(join(tmpdir(), "syllabus-main-")), "config") }
  expect((await user({ env }).cli("configure", "--base-url", h.baseUrl, "--api-key", h.live)).code).toBe(0)
  const showcase = await h.request("POST", "/api/v3/showcases", { secret: h.live, json: { name: "Piped" } })
  const product = await h.request("POST", "/api/v3/products", { secret: h.live, json: { format: "course", name: "Piped", showcase_id: showcase.body.data.id } })
  const started = await h.request("POST", `/api/v3/products/${product.body.data.id}/publications`, { secret: h.live })
  const waited = await syllabus(env, "operations", "get", String(started.body.data.id), "--wait")
  expect(waited.code, waited.stderr).toBe(0)
  expect(waited.stderr).toMatch(/^progress 1\/1 succeeded$/m)
  expect(waited.stderr).not.toContain("\r")
}, 30_000)

it("Ctrl-C (SIGINT) ends `events tail` with exit 130, after deleting the stream it made", async () => {
  const env = { SYLLABUS_CONFIG_DIR: join(mkdtempSync(join(tmpdir(), "syllabus-main-")), "config") }
  expect((await user({ env }).cli("configure", "--base-url", h.baseUrl, "--api-key", h.test)).code).toBe(0)
  const child = spawn(process.execPath, ["--import", "tsx", main, "events", "tail"], { cwd: root, env: { ...process.env, ...env } })
  let stderr = ""
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  for (let i = 0; i < 400 && !stderr.includes("Waiting for events"); i++) await new Promise((r) => setTimeout(r, 25))
  expect(stderr).toContain("Waiting for events")
  const streams = async () => (await h.request("GET", "/api/v3/event-streams", { secret: h.test })).body.data as Array<unknown>
  expect(await streams()).toHaveLength(1)
  child.kill("SIGINT")
  expect(await exited).toBe(130)
  expect(await streams()).toEqual([])
}, 30_000)

it("piped, the help and a usage error carry no colour codes", async () => {
  const env = { SYLLABUS_CONFIG_DIR: join(mkdtempSync(join(tmpdir(), "syllabus-main-")), "config") }
  const help = await syllabus(env, "--help")
  expect(help.code, help.stderr).toBe(0)
  expect(help.stdout).toContain("USAGE")
  expect(help.stdout).not.toContain(ESC)
  const usage = await syllabus(env, "frobnicate")
  expect(usage.code).toBe(1)
  expect(usage.stderr).toContain("Invalid subcommand")
  expect(usage.stderr).not.toContain(ESC)
}, 30_000)

it("`syllabus --help` loads the command tree only: no command's own module, not the `effect` barrel", async () => {
  const log = join(mkdtempSync(join(tmpdir(), "syllabus-modules-")), "loaded.txt")
  const help = await syllabusWith([resolve(import.meta.dirname, "module-log.mjs")], { MODULE_LOG: log }, "--help")
  expect(help.code, help.stderr).toBe(0)
  const loaded = readFileSync(log, "utf8").split("\n").filter(Boolean)
  const ours = loaded.filter((url) => url.includes("/packages/cli/src/")).map((url) => url.replace(/^.*\/packages\/cli\/src\//, "")).sort()
  expect(ours).toEqual(["commands.ts", "context.ts", "index.ts", "main.ts"])
  // The barrel (`effect/dist/esm/index.js`) would load every module of the library.
  expect(loaded.filter((url) => /\/effect\/dist\/esm\/index\.js$/.test(url))).toEqual([])
}, 30_000)

it("on a terminal the help keeps its colours, unless NO_COLOR is set", async () => {
  const config = join(mkdtempSync(join(tmpdir(), "syllabus-main-")), "config")
  const coloured = await user({ env: { SYLLABUS_CONFIG_DIR: config }, stdoutIsTerminal: true }).cli("--help")
  expect(coloured.code).toBe(0)
  expect(coloured.stdout).toContain(ESC)
  const plain = await user({ env: { SYLLABUS_CONFIG_DIR: config, NO_COLOR: "1" }, stdoutIsTerminal: true }).cli("--help")
  expect(plain.code).toBe(0)
  expect(plain.stdout).toContain("USAGE")
  expect(plain.stdout).not.toContain(ESC)
})
