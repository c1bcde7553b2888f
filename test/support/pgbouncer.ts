/**
 * A real PgBouncer in transaction mode in front of the suite's PostgreSQL server (issue 27): the
 * contract suite's `pgbouncer` store runs through it, as a deployment behind a transaction
 * pooler does. Debian's package (`apt-get install pgbouncer`, which `.ci/run` does when it is
 * missing); `PGBOUNCER` names another binary.
 *
 * Every database of the server is reachable through it (`* =`), so each test file's fresh
 * database is too. The pooler's own authentication is `trust` on the loopback; it logs in to
 * PostgreSQL as the server URL says.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { onLocalPort, postgresUser } from "./postgres-user.js"

export const pgbouncerBinary = process.env["PGBOUNCER"] ?? "/usr/sbin/pgbouncer"

export interface RunningPgBouncer {
  /** `serverUrl` with the pooler's host and port instead of the server's. */
  readonly urlOf: (serverUrl: string) => string
  readonly port: number
  readonly stop: () => Promise<void>
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: "127.0.0.1", port })
    socket.once("connect", () => {
      socket.end()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })


export const startPgBouncer = async (serverUrl: string, options: { readonly poolSize?: number } = {}): Promise<RunningPgBouncer> => {
  if (!existsSync(pgbouncerBinary)) {
    throw new Error(
      `the pgbouncer store needs PgBouncer at ${pgbouncerBinary} (Debian: apt-get install pgbouncer; PGBOUNCER names another binary), or SYLLABUS_TEST_STORES=memory,postgresql`
    )
  }
  const server = new URL(serverUrl)
  const user = decodeURIComponent(server.username || "postgres")
  const password = decodeURIComponent(server.password)
  const dir = mkdtempSync(join(tmpdir(), "syllabus-pgbouncer-"))
  const port = 56_000 + Math.floor(Math.random() * 4_000)
  const login = [`host=${server.hostname}`, `port=${server.port || "5432"}`, `user=${user}`, ...(password ? [`password=${password}`] : [])]
  writeFileSync(join(dir, "users.txt"), `"${user}" ""\n`)
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `* = ${login.join(" ")}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "users.txt")}`,
      "pool_mode = transaction",
      "max_client_conn = 5000",
      `default_pool_size = ${options.poolSize ?? 20}`,
      "max_db_connections = 0",
      // A server connection is given back to the pool at the end of each transaction; nothing is
      // reset between clients (transaction mode does not run server_reset_query).
      `logfile = ${join(dir, "pgbouncer.log")}`,
      `pidfile = ${join(dir, "pgbouncer.pid")}`,
      "admin_users = postgres",
      ""
    ].join("\n")
  )
  const as = postgresUser()
  if (as !== undefined) {
    chownSync(dir, as.uid, as.gid)
    for (const file of ["users.txt", "pgbouncer.ini"]) chownSync(join(dir, file), as.uid, as.gid)
  }
  chmodSync(dir, 0o700)
  const child: ChildProcess = spawn(pgbouncerBinary, [...(as ? ["-u", as.user] : []), join(dir, "pgbouncer.ini")], { stdio: "ignore" })
  let exited = false
  child.once("exit", () => {
    exited = true
  })
  const startedBy = Date.now() + 10_000
  while (!(await listening(port))) {
    if (exited || Date.now() > startedBy) {
      const log = existsSync(join(dir, "pgbouncer.log")) ? readFileSync(join(dir, "pgbouncer.log"), "utf8") : ""
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`PgBouncer did not start on port ${port}:\n${log}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    port,
    urlOf: (url) => onLocalPort(url, port),
    stop: async () => {
      if (!exited) {
        const gone = new Promise((resolve) => child.once("exit", resolve))
        child.kill("SIGINT")
        await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 3000))])
        if (!exited) child.kill("SIGKILL")
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
