/**
 * The example integration (examples/integration) passes its own node:test suite against this
 * package, run here from the sources (the consumer check runs it again from packed tarballs).
 */
import { execFile } from "node:child_process"
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../..", import.meta.url))
const testDir = join(root, "examples/integration/test")

describe("examples/integration", () => {
  it("passes its node:test suite", async () => {
    const files = readdirSync(testDir).filter((f) => f.endsWith(".test.ts")).map((f) => join(testDir, f))
    expect(files.length).toBeGreaterThanOrEqual(3)
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = execFile(process.execPath, ["--import", "tsx", "--test", ...files], { cwd: root, timeout: 120_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr })
      )
      child.stdin?.end()
    })
    expect(output, output).toMatch(/# fail 0/)
    expect(code, output).toBe(0)
    expect(output).toMatch(/# pass [1-9]/)
  }, 150_000)
})
