/**
 * The packages as a consumer gets them. What this proves:
 *
 * - `pnpm build` (tsc -b tsconfig.build.json) builds every folder of packages/, and
 *   `pnpm pack` of each gives a tarball whose package.json (with its `publishConfig`
 *   applied) points only at files it contains (`exports`, `main`, `types`, `bin`), at
 *   JavaScript and declarations, never at sources, with no `workspace:` range left. A new
 *   package without the build wiring (docs/architecture.md, "Packages as published") fails.
 * - A scratch project outside the workspace (under os.tmpdir()) installs the tarballs with
 *   npm, type-checks with a consumer's plain settings (`strict` alone, `skipLibCheck` off:
 *   every declaration we ship is checked) and runs: it embeds the API in node:http on the
 *   memory store and answers a request (test/consumer/scratch).
 * - The two binaries run from the build, without tsx (not installed there): `syllabus-server`
 *   serves, with the files it reads at run time from other packages, `syllabus --help` answers.
 * - examples/integration, copied next to it with its `@syllabus/*` dependencies (`workspace:*`,
 *   a placeholder: it is not a project of the workspace) rewritten to the tarballs, installs,
 *   builds with its own tsc settings and passes its own tests (node --test).
 *
 * Any failing step fails a test with the command's whole output. It needs the npm registry
 * (or npm's cache) for the third-party dependencies. A run takes about 70 s on a quiet
 * machine (the build is incremental, both installs run side by side from npm's cache).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "../..")
const pnpm = ["npx", "-y", "pnpm@10.34.8"] as const
const minutes = (n: number) => n * 60_000

interface Manifest {
  readonly name: string
  readonly version: string
  readonly private?: boolean
  readonly license?: string
  readonly publishConfig?: { readonly access?: string }
  readonly peerDependencies?: Record<string, string>
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
  readonly main?: string
  readonly types?: string
  readonly bin?: Record<string, string>
  readonly exports?: unknown
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
}

/**
 * The environment of the commands we run: ours without the `npm_*` variables a `pnpm test`
 * sets for its scripts (among them `npm_config_local_prefix`, the workspace, and pnpm's
 * global rc file: npm would take them as its own). npm reads the user's ~/.npmrc itself;
 * the registry is kept, for a registry given only in the environment.
 */
const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_") || key.toLowerCase() === "npm_config_registry")
  )

/** Runs a command; a non-zero exit throws with the command, its directory and its whole output. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string): Promise<string> =>
  new Promise((resolvePromise, reject) => {
    execFile(command, args, { cwd, env: cleanEnv(), maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`\`${command} ${args.join(" ")}\` in ${cwd} failed (${error.code ?? error.signal}):\n${stdout}\n${stderr}`))
      else resolvePromise(stdout)
    })
  })

const packageDirs = readdirSync(join(root, "packages"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(root, "packages", entry.name, "package.json")))
  .map((entry) => join(root, "packages", entry.name))

/** Every file path a packed manifest points at. */
const targetsOf = (manifest: Manifest): Array<string> => {
  const targets: Array<string> = []
  const walk = (value: unknown): void => {
    if (typeof value === "string") targets.push(value)
    else if (value && typeof value === "object") Object.values(value).forEach(walk)
  }
  walk(manifest.exports)
  walk(manifest.bin)
  if (manifest.main) targets.push(manifest.main)
  if (manifest.types) targets.push(manifest.types)
  return targets.map((target) => target.replace(/^\.\//, ""))
}

/** Dependencies on our packages become the tarballs; `overrides` does the same for the packages' own dependencies on each other. */
const pointAtTarballs = (manifest: Manifest, tarballs: Map<string, string>): Manifest => {
  const rewrite = (dependencies: Record<string, string> | undefined) =>
    dependencies &&
    Object.fromEntries(Object.entries(dependencies).map(([name, range]) => [name, tarballs.has(name) ? `file:${tarballs.get(name)}` : range]))
  const dependencies = rewrite(manifest.dependencies)
  const devDependencies = rewrite(manifest.devDependencies)
  return {
    ...manifest,
    ...(dependencies ? { dependencies } : {}),
    ...(devDependencies ? { devDependencies } : {}),
    overrides: Object.fromEntries([...tarballs].map(([name, file]) => [name, `file:${file}`]))
  } as Manifest
}

/** The server on the memory store, whatever DATABASE_URL the suite runs with. */
const withoutDatabase = ({ DATABASE_URL: _ignored, ...env }: NodeJS.ProcessEnv): NodeJS.ProcessEnv => env

const freePort = (): Promise<number> =>
  new Promise((resolvePromise, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => (address && typeof address === "object" ? resolvePromise(address.port) : reject(new Error("no port"))))
    })
  })

describe("the packed packages in a project outside the workspace", () => {
  const scratch = mkdtempSync(join(tmpdir(), "syllabus-consumer-"))
  const tarballDir = join(scratch, "tarballs")
  /** Package name → its tarball. */
  const tarballs = new Map<string, string>()
  const packed = new Map<string, { manifest: Manifest; files: Array<string> }>()
  const children: Array<ChildProcess> = []
  const consumer = join(scratch, "consumer")
  const example = join(root, "examples/integration")
  const integration = join(scratch, "integration")
  /** The two projects' `npm install`, run side by side; each test awaits its own (a failure is its failure). */
  let consumerInstalled: Promise<void>
  let integrationInstalled: Promise<void>

  /** Copies a project next to the tarballs, points its `@syllabus/*` dependencies at them and installs it with npm. */
  const install = async (from: string, to: string, adjust: (manifest: Manifest) => Manifest = (manifest) => manifest) => {
    cpSync(from, to, { recursive: true, filter: (path) => !/[/\\](node_modules|dist)$/.test(path) })
    const manifest = JSON.parse(readFileSync(join(to, "package.json"), "utf8")) as Manifest
    writeFileSync(join(to, "package.json"), JSON.stringify(pointAtTarballs(adjust(manifest), tarballs), null, 2))
    await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], to)
  }

  beforeAll(async () => {
    await run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b", "tsconfig.build.json"], root)
    mkdirSync(tarballDir)
    await run(pnpm[0], [...pnpm.slice(1), "--recursive", "--filter", "./packages/*", "pack", "--pack-destination", tarballDir], root)
    for (const file of readdirSync(tarballDir).filter((name) => name.endsWith(".tgz"))) {
      const tarball = join(tarballDir, file)
      const manifest = JSON.parse(await run("tar", ["-xOzf", tarball, "package/package.json"], root)) as Manifest
      const files = (await run("tar", ["-tzf", tarball], root)).split("\n").filter(Boolean).map((path) => path.replace(/^package\//, ""))
      tarballs.set(manifest.name, tarball)
      packed.set(manifest.name, { manifest, files })
    }
    // The scratch consumer depends on every package, to read all their declarations.
    const everyPackage = Object.fromEntries([...packed].map(([name, { manifest }]) => [name, manifest.version]))
    consumerInstalled = install(join(root, "test/consumer/scratch"), consumer, (manifest) => ({ ...manifest, dependencies: everyPackage }))
    integrationInstalled = existsSync(join(example, "package.json"))
      ? install(example, integration)
      : Promise.reject(new Error("examples/integration/package.json is missing"))
    await Promise.allSettled([consumerInstalled, integrationInstalled])
  }, minutes(8))

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL")
    rmSync(scratch, { recursive: true, force: true })
  })

  it("builds every package: tsconfig.build.json references each folder of packages/", () => {
    const build = JSON.parse(readFileSync(join(root, "tsconfig.build.json"), "utf8")) as { references: Array<{ path: string }> }
    const referenced = build.references.map((reference) => resolve(root, reference.path)).sort()
    expect(referenced).toEqual([...packageDirs].sort())
  })

  it("packs every package with a manifest that points only at its build", () => {
    expect(packed.size).toBe(packageDirs.length)
    for (const [name, { manifest, files }] of packed) {
      const targets = targetsOf(manifest)
      expect(targets.length, `${name} exports nothing`).toBeGreaterThan(0)
      for (const target of targets) {
        expect(files, `${name}: ${target} is not in the tarball (built? in "files"?)`).toContain(target)
        expect(target, `${name} points at a source`).toMatch(/^dist\/.*\.(js|d\.ts)$|^package\.json$/)
      }
      const ranges = Object.values({ ...manifest.dependencies })
      expect(ranges.filter((range) => range.startsWith("workspace:")), `${name} keeps a workspace: range`).toEqual([])
      // A library entry ships its declarations next to its JavaScript.
      if (manifest.main) expect(files).toContain(manifest.main.replace(/^\.\//, "").replace(/\.js$/, ".d.ts"))
    }
  })

  it("each tarball is publishable: not private, licensed (LICENSE inside), public, and `npm publish --dry-run` accepts it", async () => {
    for (const [name, { manifest, files }] of packed) {
      expect(manifest.private, `${name} is private`).toBeUndefined()
      expect(manifest.license, name).toBe("MIT")
      expect(files, `${name} ships no LICENSE`).toContain("LICENSE")
      expect(manifest.publishConfig?.access, name).toBe("public")
      const dryRun = JSON.parse(await run("npm", ["publish", "--dry-run", "--json", tarballs.get(name)!], scratch)) as Record<string, { name: string }>
      expect(Object.values(dryRun).map((entry) => entry.name)).toEqual([name])
    }
  }, minutes(2))

  it("what only the server needs (XLSX, PDF and fonts, SMTP) is an optional peer of @syllabus/http, a dependency of the server, and not in the double's tree", async () => {
    const serverOnly = ["exceljs", "pdfkit", "qrcode-generator", "wawoff2", "nodemailer", "@fontsource/noto-sans"]
    const http = packed.get("@syllabus/http")!.manifest
    const server = packed.get("@syllabus/server")!.manifest
    for (const name of serverOnly) {
      expect(Object.keys(http.dependencies ?? {}), `@syllabus/http depends on ${name}`).not.toContain(name)
      expect(http.peerDependenciesMeta?.[name]?.optional, `${name} is not an optional peer of @syllabus/http`).toBe(true)
      expect(Object.keys(server.dependencies ?? {}), `the server lacks ${name}`).toContain(name)
    }
    // examples/integration depends on @syllabus/testing and @syllabus/http, not on the server.
    await integrationInstalled
    for (const name of serverOnly) expect(existsSync(join(integration, "node_modules", name)), `${name} installed for the double`).toBe(false)
  }, minutes(5))

  describe("a scratch consumer (test/consumer/scratch)", () => {
    const project = consumer

    it("type-checks with plain strict and skipLibCheck off, and runs embedded in node:http", async () => {
      await consumerInstalled
      await run("npm", ["run", "build"], project)
      expect(await run("npm", ["start", "--silent"], project)).toContain("embedded: 200 sandbox")
    }, minutes(3))

    it("runs the CLI from its build, without tsx", async () => {
      await consumerInstalled
      expect(existsSync(join(project, "node_modules/tsx"))).toBe(false)
      expect(await run(join(project, "node_modules/.bin/syllabus"), ["--help"], project)).toContain("syllabus")
    }, minutes(1))

    it("runs the server binary from its build: it serves /livez, /docs and a tag's reference page with its script", async () => {
      await consumerInstalled
      const port = await freePort()
      const server = spawn(join(project, "node_modules/.bin/syllabus-server"), [], {
        cwd: project,
        env: { ...withoutDatabase(cleanEnv()), PORT: String(port), HOST: "127.0.0.1", FILE_STORAGE: "memory" }
      })
      children.push(server)
      let output = ""
      const serving = new Promise<void>((resolvePromise, reject) => {
        const onData = (chunk: Buffer) => {
          output += chunk.toString()
          if (output.includes("Syllabus serving")) resolvePromise()
        }
        server.stdout.on("data", onData)
        server.stderr.on("data", onData)
        server.once("exit", (code) => reject(new Error(`syllabus-server exited (${code}) before serving:\n${output}`)))
      })
      await serving
      const base = `http://127.0.0.1:${port}`
      const live = await fetch(`${base}/livez`)
      expect(live.status, output).toBe(200)
      // A reference page's script is a file of another package, read at run time: it must
      // resolve from the installed packages too, not only from the workspace.
      const docs = await fetch(`${base}/docs`)
      expect(docs.status).toBe(200)
      const tagPage = /href="(\/docs\/reference\/[a-z0-9-]+)"/.exec(await docs.text())?.[1]
      expect(tagPage, "/docs links no reference page").toBeDefined()
      const page = await fetch(new URL(tagPage!, base))
      expect(page.status, `GET ${tagPage}`).toBe(200)
      const script = /<script src="([^"]+)"/.exec(await page.text())?.[1]
      expect(script, `${tagPage} loads no script`).toBeDefined()
      expect((await fetch(new URL(script!, base))).status, `GET ${script}`).toBe(200)
      server.kill("SIGTERM")
    }, minutes(1))
  })

  describe("examples/integration against the tarballs", () => {
    const project = integration

    it("installs, builds with tsc and passes its own tests", async () => {
      await integrationInstalled
      await run("npm", ["run", "build"], project)
      const tests = await run("npm", ["test"], project)
      // node --test exits 0 when it finds no test at all: some must have run and passed.
      expect(tests, tests).toMatch(/^(#|ℹ) pass [1-9]/m)
      expect(tests, tests).toMatch(/^(#|ℹ) fail 0$/m)
    }, minutes(5))
  })
})
