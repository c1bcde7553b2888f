/**
 * `docs/openapi.json` is the description the server generates (issue 12): committed so that
 * integrators and tools can read it without a server, and kept in step by this test.
 */
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { operations } from "../src/api.js"
import { openApiFileText } from "../src/openapi.js"

const committed = join(dirname(fileURLToPath(import.meta.url)), "../../../docs/openapi.json")

describe("docs/openapi.json", () => {
  it("is the description the server generates (else run `npx -y pnpm@10.34.8 openapi:write`)", () => {
    const generated = openApiFileText(operations)
    const text = readFileSync(committed, "utf8")
    if (text !== generated) {
      const [before, after] = [text.split("\n"), generated.split("\n")]
      const line = before.findIndex((content, i) => content !== after[i])
      throw new Error(
        `docs/openapi.json differs from the generated description from line ${line + 1} ` +
          `(committed: ${JSON.stringify(before[line])}, generated: ${JSON.stringify(after[line])}). ` +
          "Regenerate it with `npx -y pnpm@10.34.8 openapi:write` and commit it."
      )
    }
    expect(text).toBe(generated)
  })
})
