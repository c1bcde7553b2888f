/**
 * The description passes `redocly lint` (issue 12) with the rules of `redocly.yaml`, which
 * turns off only what it says why: any error or warning fails this test, with the findings.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { operations } from "../src/api.js"
import { openApiDocument } from "../src/openapi.js"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")
const redocly = join(dirname(createRequire(join(root, "package.json")).resolve("@redocly/cli/package.json")), "bin/cli.js")
const work = mkdtempSync(join(tmpdir(), "syllabus-lint-"))
afterAll(() => rmSync(work, { recursive: true, force: true }))

interface Problem {
  readonly ruleId: string
  readonly severity: "error" | "warn"
  readonly message: string
  readonly location: ReadonlyArray<{ readonly pointer?: string }>
}

/** `redocly lint` of a document, its findings as JSON. */
const lint = (document: unknown): { totals: { errors: number; warnings: number }; problems: ReadonlyArray<Problem> } => {
  const file = join(work, `openapi-${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(file, JSON.stringify(document, null, 2))
  const run = spawnSync(process.execPath, [redocly, "lint", file, "--config", join(root, "redocly.yaml"), "--format", "json"], {
    encoding: "utf8",
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
    maxBuffer: 64 * 1024 * 1024
  })
  const start = run.stdout.indexOf("{")
  if (start < 0) throw new Error(`redocly lint printed no report (exit ${run.status}):\n${run.stdout}\n${run.stderr}`)
  return JSON.parse(run.stdout.slice(start))
}

const findings = (problems: ReadonlyArray<Problem>) =>
  problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} (${p.location[0]?.pointer ?? "?"})`)

describe("redocly lint", () => {
  it("finds no error and no warning in the description the server generates", () => {
    const report = lint(openApiDocument(operations))
    expect(findings(report.problems)).toEqual([])
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
  }, 60_000)

  it("finds no error and no warning with a deprecated operation", () => {
    const deprecations = new Map([["credentials.list", { deprecatedAt: Date.UTC(2026, 0, 15), sunsetAt: Date.UTC(2026, 6, 15) }]])
    expect(findings(lint(openApiDocument(operations, deprecations)).problems)).toEqual([])
  }, 60_000)

  it("fails a description with a defect (the lint is really run with these rules)", () => {
    const broken: any = JSON.parse(JSON.stringify(openApiDocument(operations)))
    delete broken.paths["/products"].get.summary
    broken.paths["/products"].get.responses["200"].content["application/json"].examples = { success: { value: { data: "not a page" } } }
    const rules = lint(broken).problems.map((p) => p.ruleId)
    expect(rules).toEqual(expect.arrayContaining(["operation-summary", "no-invalid-media-type-examples"]))
  }, 60_000)
})
