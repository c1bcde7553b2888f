/**
 * Writes `docs/openapi.json`, the committed copy of the description the server generates
 * (without deprecations), pretty-printed. `pnpm openapi:write` runs it; the test
 * packages/http/test/openapi-file.test.ts fails while the copy differs from the generated one.
 */
import { writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { operations } from "../src/api.js"
import { openApiFileText } from "../src/openapi.js"

const target = join(dirname(fileURLToPath(import.meta.url)), "../../../docs/openapi.json")
const text = openApiFileText(operations)
writeFileSync(target, text)
console.log(`wrote ${target} (${text.length} bytes)`)
