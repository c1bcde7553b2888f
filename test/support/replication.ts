/**
 * A real PostgreSQL primary with streaming standbys, started by the test that needs it (issue 27:
 * read replicas, read-your-writes, failover). The binaries are PostgreSQL 15's
 * (`/usr/lib/postgresql/15/bin`; `PG_BIN` names another directory): `initdb` for the primary,
 * `pg_basebackup -R -X stream` for each standby, `pg_ctl` to start, stop and promote them.
 *
 * Everything lives in one temp dir (data directories, the servers' logs, their Unix sockets) that
 * `stop()` removes. Each server listens on a free port of 127.0.0.1, with `trust` for every user
 * and for replication on the loopback. Durability is left at PostgreSQL's defaults (fsync on),
 * since the failover tests kill the primary. PostgreSQL refuses to run as root: as root, every
 * command runs as the `postgres` OS user, which owns the temp dir.
 */
import { execFile } from "node:child_process"
import { appendFileSync, chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { postgresUser } from "./postgres-user.js"

export const pgBin = process.env["PG_BIN"] ?? "/usr/lib/postgresql/15/bin"

const pg = createRequire(createRequire(import.meta.url).resolve("@syllabus/pg"))("pg") as {
  Client: new(config: { connectionString: string }) => {
    connect: () => Promise<void>
    query: (text: string) => Promise<{ rows: Array<Record<string, unknown>> }>
    end: () => Promise<void>
    on: (event: "error", listener: (error: Error) => void) => void
  }
}

export interface ReplicatedClusterOptions {
  /** How many standbys (default 1), each `standby<i+1>` as its `application_name`. */
  readonly standbys?: number
  /** The first standby (`standby1`) is synchronous: `synchronous_standby_names = 'standby1'`, `synchronous_commit = on`. */
  readonly synchronous?: boolean
  /** `recovery_min_apply_delay` on every standby. */
  readonly applyDelayMs?: number
}

export interface ReplicatedCluster {
  readonly primaryUrl: string
  readonly standbyUrls: ReadonlyArray<string>
  /** `pg_ctl stop -m <mode>`: `immediate` is a crash (no shutdown checkpoint), `fast` a clean stop. */
  readonly stopPrimary: (mode: "immediate" | "fast") => Promise<void>
  /** `pg_ctl promote -w` on standby `i` (from 0): resolves once it accepts writes. */
  readonly promote: (i: number) => Promise<void>
  /** `pg_last_wal_replay_lsn()` of standby `i` (from 0), e.g. `0/3000148`. */
  readonly replayLsn: (i: number) => Promise<string>
  /** Stops every server (`-m immediate`) and removes the temp dir; safe to call again. */
  readonly stop: () => Promise<void>
}


const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const urlOf = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`

export const startReplicatedCluster = async (options: ReplicatedClusterOptions = {}): Promise<ReplicatedCluster> => {
  if (!existsSync(join(pgBin, "pg_ctl"))) {
    throw new Error(`replication tests need PostgreSQL's binaries in ${pgBin} (PG_BIN names another directory)`)
  }
  const standbyCount = options.standbys ?? 1
  const as = postgresUser()
  const root = mkdtempSync(join(tmpdir(), "syllabus-replication-"))
  chmodSync(root, 0o700)
  if (as !== undefined) chownSync(root, as.uid, as.gid)

  /** The servers (by directory name) that may be running, stopped by `stop()`. */
  const started = new Set<string>()
  const logOf = (name: string) => join(root, `${name}.log`)
  const logs = () =>
    ["primary", ...Array.from({ length: standbyCount }, (_, i) => `standby${i + 1}`)]
      .filter((name) => existsSync(logOf(name)))
      .map((name) => `--- ${name}.log (last lines) ---\n${readFileSync(logOf(name), "utf8").split("\n").slice(-40).join("\n")}`)
      .join("\n")

  const run = (binary: string, args: ReadonlyArray<string>, timeoutMs = 60_000) =>
    new Promise<string>((resolve, reject) => {
      execFile(
        join(pgBin, binary),
        args,
        { cwd: root, timeout: timeoutMs, encoding: "utf8", env: { ...process.env, LC_ALL: "C", LANG: "C" }, ...(as ? { uid: as.uid, gid: as.gid } : {}) },
        (error, stdout) => {
          if (error) reject(new Error(`${error.message.trim()}\n${stdout.trim()}`.trim()))
          else resolve(stdout)
        }
      )
    })

  const conf = (dataDir: string, lines: ReadonlyArray<string>) =>
    appendFileSync(join(dataDir, "postgresql.auto.conf"), `${lines.join("\n")}\n`)

  /** `pg_ctl start -w` on a free port; another free port when the one chosen was taken meanwhile. */
  const startServer = async (name: string): Promise<number> => {
    const dataDir = join(root, name)
    for (let attempt = 1; ; attempt++) {
      const port = await freePort()
      try {
        started.add(name)
        await run("pg_ctl", ["-D", dataDir, "-l", logOf(name), "-o", `-p ${port}`, "-w", "-t", "60", "start"], 90_000)
        return port
      } catch (error) {
        const log = existsSync(logOf(name)) ? readFileSync(logOf(name), "utf8") : ""
        if (attempt < 3 && /could not bind|Address already in use/.test(log)) continue
        throw error
      }
    }
  }

  const stopServer = async (name: string, mode: "immediate" | "fast") => {
    if (!started.has(name)) return
    await run("pg_ctl", ["-D", join(root, name), "-m", mode, "-w", "-t", "60", "stop"]).catch((error: Error) => {
      // Not running any more (already stopped, or never came up): nothing to stop.
      if (!existsSync(join(root, name, "postmaster.pid"))) return
      throw error
    })
    started.delete(name)
  }

  let stopping: Promise<void> | undefined
  const stop = () =>
    (stopping ??= (async () => {
      const names = [...started.keys()].reverse()
      const results = await Promise.allSettled(names.map((name) => stopServer(name, "immediate")))
      rmSync(root, { recursive: true, force: true })
      const failed = results.find((result): result is PromiseRejectedResult => result.status === "rejected")
      if (failed) throw failed.reason
    })())

  try {
    const primaryDir = join(root, "primary")
    await run("initdb", ["-D", primaryDir, "--auth=trust", "-U", "postgres", "-E", "UTF8", "--locale=C"])
    conf(primaryDir, [
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${root}'`,
      "shared_buffers = 16MB",
      "max_connections = 40",
      "wal_level = replica",
      "max_wal_senders = 10",
      "max_replication_slots = 10",
      "wal_keep_size = '128MB'",
      "hot_standby = on",
      ...(options.synchronous ? ["synchronous_standby_names = 'standby1'", "synchronous_commit = on"] : [])
    ])
    appendFileSync(
      join(primaryDir, "pg_hba.conf"),
      "host replication all 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 trust\n"
    )
    const primaryPort = await startServer("primary")

    const standbyPorts: Array<number> = []
    for (let i = 1; i <= standbyCount; i++) {
      const name = `standby${i}`
      const dataDir = join(root, name)
      mkdirSync(dataDir, { mode: 0o700 })
      if (as !== undefined) chownSync(dataDir, as.uid, as.gid)
      await run("pg_basebackup", ["-R", "-X", "stream", "-h", "127.0.0.1", "-p", String(primaryPort), "-U", "postgres", "-D", dataDir])
      // Appended after what pg_basebackup -R wrote, so these win. A standby does not wait for
      // standbys of its own: once promoted, it must commit alone.
      conf(dataDir, [
        `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres application_name=${name}'`,
        "synchronous_standby_names = ''",
        ...(options.applyDelayMs !== undefined ? [`recovery_min_apply_delay = '${options.applyDelayMs}ms'`] : [])
      ])
      standbyPorts.push(await startServer(name))
    }

    const standbyUrls = standbyPorts.map(urlOf)
    const standbyName = (i: number) => {
      if (!Number.isInteger(i) || i < 0 || i >= standbyCount) throw new Error(`no standby ${i} (there are ${standbyCount})`)
      return `standby${i + 1}`
    }
    return {
      primaryUrl: urlOf(primaryPort),
      standbyUrls,
      stopPrimary: (mode) => stopServer("primary", mode),
      promote: async (i) => {
        await run("pg_ctl", ["-D", join(root, standbyName(i)), "-w", "-t", "60", "promote"], 90_000)
      },
      replayLsn: async (i) => {
        standbyName(i)
        const client = new pg.Client({ connectionString: standbyUrls[i]! })
        client.on("error", () => {})
        await client.connect()
        try {
          const { rows } = await client.query("SELECT pg_last_wal_replay_lsn()::text AS lsn")
          return String(rows[0]?.["lsn"])
        } finally {
          await client.end()
        }
      },
      stop
    }
  } catch (error) {
    const message = `${error instanceof Error ? error.message : String(error)}\n${logs()}`
    await stop().catch(() => {})
    throw new Error(`the replicated cluster did not start: ${message}`)
  }
}
