// The installed `syllabus` command (the package's `bin`): the build (dist/main.js) bundled with
// its dependencies into dist/bin/, one file per part: main.js holds what every run needs (the
// command tree, @effect/cli), and each command's own module is a chunk loaded when it runs.
// Node then reads a handful of files at start instead of about 600 modules (docs/benchmarks.md,
// "The CLI's start"). Run after `tsc -b` (root `pnpm build`) and before packing (`prepack`).
import { build } from "esbuild"
import { rmSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
rmSync(`${root}dist/bin`, { recursive: true, force: true })
await build({
  entryPoints: [`${root}dist/main.js`],
  outdir: `${root}dist/bin`,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  logLevel: "warning",
  // Some dependencies of @effect/cli are CommonJS and `require` Node's modules.
  banner: { js: "import { createRequire as __syllabusRequire } from 'node:module'; const require = __syllabusRequire(import.meta.url);" }
})
