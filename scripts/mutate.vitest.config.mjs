/**
 * Vitest's configuration for mutation runs (`pnpm mutate`, docs/mutation-testing.md): the
 * suite's own, with
 * - the test files `scripts/mutate.mjs` names for the area (`SYLLABUS_MUTATE_TESTS`);
 * - `@syllabus/*` read from the sources next to this file: in Stryker's sandbox (a copy of the
 *   tree whose node_modules are links to the real ones) the workspace links would otherwise
 *   lead back to the unmutated sources.
 */
import { readdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import base from "../vitest.config.ts"

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const packages = readdirSync(join(root, "packages"))

export default defineConfig({
  ...base,
  resolve: {
    alias: packages.map((name) => ({ find: new RegExp(`^@syllabus/${name}$`), replacement: join(root, "packages", name, "src", "index.ts") }))
  },
  test: {
    ...base.test,
    include: (process.env["SYLLABUS_MUTATE_TESTS"] ?? "").split(",").filter((file) => file !== "")
  }
})
