/**
 * The standalone server as an operator runs it (issue 12, "Defects found along the way"), as
 * processes: its access log on stdout (one JSON line per request, never a secret),
 * `create-account` refused without a database or with a password the API would refuse, and
 * `start --demo` on a database reusing the demo account of an earlier start.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { createServer } from "node:net"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPgDatabase } from "../support/pg.js"

const main = "packages/server/src/main.ts"
const root = new URL("../..", import.meta.url).pathname

/** The server's environment: only what the test sets (no DATABASE_URL inherited from the shell). */
const environment = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const { DATABASE_URL: _ignored, ...rest } = process.env
  const env: NodeJS.ProcessEnv = { ...rest, FILE_STORAGE: "memory", RATE_LIMITS: "off", HOST: "127.0.0.1", ...extra }
  // An empty value unsets the variable (the server's default).
  for (const [name, value] of Object.entries(env)) if (value === "") delete env[name]
  return env
}

interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Run a command of the server to its end. */
const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Finished> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", main, ...args], { cwd: root, env: environment(env) })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      probe.close(() => resolve(port))
    })
  })

interface Running {
  readonly baseUrl: string
  /** Everything written to stdout so far. */
  stdout(): string
  stop(): Promise<void>
}

/** Start the server and wait until it serves. */
const start = async (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Running> => {
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", main, ...args], {
    cwd: root,
    env: environment({ ...env, PORT: String(port) })
  })
  let stdout = ""
  let stderr = ""
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()))
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${stdout}\n${stderr}`)), 45_000)
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
      if (stdout.includes("Syllabus serving")) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once("close", () => reject(new Error(`the server exited:\n${stdout}\n${stderr}`)))
  })
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    stdout: () => stdout,
    stop: async () => {
      child.kill("SIGTERM")
      await closed
    }
  }
}

/** The secrets a command printed (`ck_live_…`, `ck_test_…`), by environment. */
const secretsIn = (output: string) => ({
  production: /\bproduction\s+crd_\S+\s+(ck_live_\S+)/.exec(output)?.[1],
  sandbox: /\bsandbox\s+crd_\S+\s+(ck_test_\S+)/.exec(output)?.[1]
})

const current = (baseUrl: string, secret: string) =>
  fetch(`${baseUrl}/api/v3/credentials/current`, { headers: { authorization: `Bearer ${secret}` } })

/** The JSON lines of an output (the access log), leaving out the plain lines of the banner. */
const jsonLines = (output: string): Array<Record<string, unknown>> =>
  output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)

// ---------------------------------------------------------------------------------------


/** A database of its own for the enclosing `describe`, dropped after it. */
const useFreshDatabase = (): (() => string) => {
  const scope = Effect.runSync(Scope.make())
  let url: string | undefined
  beforeAll(async () => {
    url = (await Effect.runPromise(Scope.extend(freshPgDatabase, scope))).url
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  return () => {
    if (url === undefined) throw new Error("the database is not made yet")
    return url
  }
}
describe("files of the in-memory server", () => {
  it("without DATABASE_URL nor FILE_STORAGE, files go to a temporary directory removed when the server stops", async () => {
    const server = await start([], { FILE_STORAGE: "" })
    let directory: string | undefined
    try {
      directory = /^files: (\S+) \(temporary/m.exec(server.stdout())?.[1]
      expect(directory, server.stdout()).toBeDefined()
      expect(directory!.startsWith(tmpdir())).toBe(true)
      const secret = secretsIn(server.stdout()).production!
      const bytes = Buffer.from("name,email\nAda,ada@example.com\n")
      const call = (method: string, path: string, body?: string, contentType = "application/json") =>
        fetch(`${server.baseUrl}/api/v3${path}`, {
          method,
          headers: { authorization: `Bearer ${secret}`, "idempotency-key": `k-${Math.random()}`, "content-type": contentType },
          ...(body === undefined ? {} : { body })
        })
      const declaration = { purpose: "import", filename: "people.csv", size: bytes.length, content_type: "text/csv", sha256: createHash("sha256").update(bytes).digest("hex") }
      const session = (await (await call("POST", "/uploads", JSON.stringify(declaration))).json()) as { data: { id: string } }
      expect((await call("PUT", `/uploads/${session.data.id}/parts/1`, bytes.toString("utf8"), "application/octet-stream")).status).toBe(200)
      expect((await call("POST", `/uploads/${session.data.id}/completions`)).status).toBe(201)
      // The bytes are in that directory, not under ./.syllabus/files.
      expect(readdirSync(directory!, { recursive: true }).length).toBeGreaterThan(0)
    } finally {
      await server.stop()
    }
    expect(existsSync(directory!)).toBe(false)
  }, 60_000)
})

describe("the access log of the standalone server", () => {
  let server: Running
  let secret: string
  beforeAll(async () => {
    server = await start([])
    secret = secretsIn(server.stdout()).production!
    expect(secret, server.stdout()).toMatch(/^ck_live_/)
  }, 60_000)
  afterAll(() => server?.stop())

  it("writes one JSON line per request on stdout: who, what, how it ended, how long; never a secret nor the query", async () => {
    const before = jsonLines(server.stdout()).length
    const ok = await fetch(`${server.baseUrl}/api/v3/products?limit=5&q=s3cr3t-query`, {
      headers: { authorization: `Bearer ${secret}`, "x-client-request-id": "trace-1", cookie: "session=cookie-value" }
    })
    expect(ok.status).toBe(200)
    const refused = await fetch(`${server.baseUrl}/api/v3/products`, { headers: { "x-api-key": "ck_live_not-a-real-secret-at-all" } })
    expect(refused.status).toBe(401)
    const probe = await fetch(`${server.baseUrl}/livez`)
    expect(probe.status).toBe(200)
    // The lines are written as the answers go out; give the last one a moment to reach the pipe.
    for (let i = 0; i < 50 && jsonLines(server.stdout()).length < before + 3; i++) await new Promise((r) => setTimeout(r, 50))

    const lines = jsonLines(server.stdout()).slice(before)
    expect(lines).toHaveLength(3)
    const [first, second, third] = lines
    const whoami = await (await current(server.baseUrl, secret)).json() as { data: { id: string } }
    expect(first).toMatchObject({
      level: "info",
      msg: "request",
      request_id: ok.headers.get("x-request-id"),
      method: "GET",
      path: "/api/v3/products",
      operation_id: "products.list",
      status: 200,
      error_code: null,
      credential_id: whoami.data.id,
      environment: "production",
      client_request_id: "trace-1"
    })
    expect(first!["account_id"]).toMatch(/^acc_/)
    expect(typeof first!["duration_ms"]).toBe("number")
    expect(Date.parse(String(first!["time"]))).not.toBeNaN()
    expect(second).toMatchObject({ request_id: refused.headers.get("x-request-id"), status: 401, error_code: "unauthenticated", credential_id: null, account_id: null })
    expect(third).toMatchObject({ method: "GET", path: "/livez", status: 200 })

    const logged = lines.map((line) => JSON.stringify(line)).join("\n")
    for (const secretText of [secret, "ck_live_not-a-real-secret-at-all", "s3cr3t-query", "cookie-value", "Bearer"]) {
      expect(logged).not.toContain(secretText)
    }
  })
})

describe("the access log switched off", () => {
  it("REQUEST_LOG=off writes no line", async () => {
    const server = await start([], { REQUEST_LOG: "off" })
    try {
      const res = await fetch(`${server.baseUrl}/livez`)
      expect(res.status).toBe(200)
      await new Promise((r) => setTimeout(r, 200))
      expect(jsonLines(server.stdout())).toEqual([])
    } finally {
      await server.stop()
    }
  }, 60_000)
})

describe("create-account", () => {
  const account = (subdomain: string, password: string) => [
    "create-account",
    "--name",
    "Acme",
    "--subdomain",
    subdomain,
    "--admin-email",
    `admin@${subdomain}.example`,
    "--admin-name",
    "Admin",
    "--admin-password",
    password
  ]

  it("without DATABASE_URL is refused: a non-zero exit, the reason, and no secret printed", async () => {
    const result = await run(account("nodb", "correct horse battery"))
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("DATABASE_URL")
    expect(result.stdout + result.stderr).not.toMatch(/ck_(live|test)_/)
  }, 60_000)

  describe("on a database", () => {
    const database = useFreshDatabase()

    it("refuses a password the API would refuse (under 12 characters), and opens nothing", async () => {
      const refused = await run(account("acme", "x"), { DATABASE_URL: database() })
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toMatch(/12/)
      expect(refused.stdout).not.toMatch(/ck_(live|test)_/)
      const eleven = await run(account("acme", "a".repeat(11)), { DATABASE_URL: database() })
      expect(eleven.code).not.toBe(0)
      // The subdomain is still free: the refusals opened nothing.
      const opened = await run(account("acme", "a".repeat(12)), { DATABASE_URL: database() })
      expect(opened.code, opened.stderr).toBe(0)
      expect(secretsIn(opened.stdout).production).toMatch(/^ck_live_/)
    }, 90_000)
  })
})

describe("start --demo on a database", () => {
  const database = useFreshDatabase()

  it("opens the demo account once; a restart reuses it, says so, prints no secret, and tells how to get new ones", async () => {
    const first = await start(["--demo"], { DATABASE_URL: database() })
    const firstOutput = first.stdout()
    const { production } = secretsIn(firstOutput)
    expect(production, firstOutput).toMatch(/^ck_live_/)
    const accountId = /\((acc_[0-9A-Za-z]+), subdomain demo\)/.exec(firstOutput)?.[1]
    expect(accountId, firstOutput).toBeDefined()
    await first.stop()

    const second = await start(["--demo"], { DATABASE_URL: database() })
    try {
      const output = second.stdout()
      expect(output).not.toMatch(/ck_(live|test)_/)
      expect(output).toContain(`(${accountId}, subdomain demo) already exists`)
      expect(output).toContain("issue-credentials --subdomain demo")
      // The same account: the secret of the first start still works.
      expect((await current(second.baseUrl, production!)).status).toBe(200)
    } finally {
      await second.stop()
    }

    // The command it names gives working secrets of that same account.
    const issued = await run(["issue-credentials", "--subdomain", "demo"], { DATABASE_URL: database() })
    expect(issued.code, issued.stderr).toBe(0)
    expect(issued.stdout).toContain(accountId)
    const fresh = secretsIn(issued.stdout)
    expect(fresh.production).toMatch(/^ck_live_/)
    expect(fresh.sandbox).toMatch(/^ck_test_/)
    const third = await start([], { DATABASE_URL: database() })
    try {
      const res = await current(third.baseUrl, fresh.sandbox!)
      expect(res.status).toBe(200)
    } finally {
      await third.stop()
    }
  }, 180_000)
})
