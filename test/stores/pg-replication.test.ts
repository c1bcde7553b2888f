/**
 * The groundwork of issue 27 (replicas and failover): a real primary with streaming standbys
 * (test/support/replication.ts), checked on PostgreSQL itself before the server relies on it.
 * A row committed on the primary reaches the standby; a delayed standby
 * (`recovery_min_apply_delay`) shows it only after the delay; a synchronous standby promoted after
 * the primary is killed has every row the primary committed, and takes writes.
 */
import { createRequire } from "node:module"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/eventually.js"
import { type ReplicatedCluster, startReplicatedCluster } from "../support/replication.js"

interface Client {
  connect: () => Promise<void>
  query: (text: string, values?: ReadonlyArray<unknown>) => Promise<{ rows: Array<Record<string, unknown>> }>
  end: () => Promise<void>
  on: (event: "error", listener: (error: Error) => void) => void
}
const pg = createRequire(createRequire(import.meta.url).resolve("@syllabus/pg"))("pg") as {
  Client: new(config: { connectionString: string }) => Client
}

/** Run `f` on a fresh connection to `url`, closed afterwards. */
const withClient = async <A>(url: string, f: (client: Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: url })
  // A server killed under a connection emits `error` on it: not a failure of the test process.
  client.on("error", () => {})
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end().catch(() => {})
  }
}
const query = (url: string, text: string, values: ReadonlyArray<unknown> = []) =>
  withClient(url, (client) => client.query(text, values).then(({ rows }) => rows))
const inRecovery = async (url: string) => (await query(url, "SELECT pg_is_in_recovery() AS r"))[0]?.["r"]
const notes = async (url: string) => (await query(url, "SELECT body FROM notes ORDER BY id")).map((row) => row["body"])

const applyDelayMs = 2000
let synchronous: ReplicatedCluster | undefined
let delayed: ReplicatedCluster | undefined

beforeAll(async () => {
  ;[synchronous, delayed] = await Promise.all([
    startReplicatedCluster({ standbys: 1, synchronous: true }),
    startReplicatedCluster({ standbys: 1, applyDelayMs })
  ])
}, 120_000)
afterAll(async () => {
  await Promise.allSettled([synchronous?.stop(), delayed?.stop()])
}, 60_000)

describe("streaming replication, a delayed standby and failover on a real cluster [postgresql]", () => {
  it("a row committed on the primary is read on the synchronous standby; only the primary is out of recovery", async () => {
    const cluster = synchronous!
    const standby = cluster.standbyUrls[0]!
    await query(cluster.primaryUrl, "CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL)")
    await query(cluster.primaryUrl, "INSERT INTO notes VALUES (1, 'replicated')")
    // synchronous_commit = on waits for the standby's flush, not its replay: the row shows shortly after.
    await eventually(async () => expect(await notes(standby)).toEqual(["replicated"]), 15_000)
    expect(await inRecovery(standby)).toBe(true)
    expect(await inRecovery(cluster.primaryUrl)).toBe(false)
    const synced = await query(cluster.primaryUrl, "SELECT application_name, sync_state FROM pg_stat_replication")
    expect(synced).toEqual([{ application_name: "standby1", sync_state: "sync" }])
    expect(await cluster.replayLsn(0)).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/)
    await expect(query(standby, "INSERT INTO notes VALUES (2, 'refused')")).rejects.toThrow(/read-only transaction/)
  }, 60_000)

  it("a standby with recovery_min_apply_delay shows a committed row only after the delay", async () => {
    const cluster = delayed!
    const standby = cluster.standbyUrls[0]!
    await query(cluster.primaryUrl, "CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL)")
    // The table itself arrives after the delay too.
    await eventually(async () => expect(await notes(standby)).toEqual([]), 20_000)
    const lsnBefore = await cluster.replayLsn(0)
    const committedAt = Date.now()
    await query(cluster.primaryUrl, "INSERT INTO notes VALUES (1, 'late')")
    expect(await notes(cluster.primaryUrl)).toEqual(["late"])
    expect(await notes(standby)).toEqual([])
    expect(Date.now() - committedAt).toBeLessThan(applyDelayMs)
    await eventually(async () => expect(await notes(standby)).toEqual(["late"]), 20_000)
    // recovery_min_apply_delay is measured from the commit's timestamp on the primary (same clock here).
    expect(Date.now() - committedAt).toBeGreaterThanOrEqual(applyDelayMs - 100)
    expect(await cluster.replayLsn(0)).not.toBe(lsnBefore)
  }, 60_000)

  it("with the primary killed, the promoted synchronous standby has every committed row and takes writes", async () => {
    const cluster = synchronous!
    const standby = cluster.standbyUrls[0]!
    // Committed only once the synchronous standby has flushed it; not yet necessarily replayed there.
    await query(cluster.primaryUrl, "INSERT INTO notes VALUES (3, 'before the crash')")
    await cluster.stopPrimary("immediate")
    await expect(query(cluster.primaryUrl, "SELECT 1")).rejects.toThrow()
    expect(await inRecovery(standby)).toBe(true)
    await cluster.promote(0)
    expect(await inRecovery(standby)).toBe(false)
    expect(await notes(standby)).toEqual(["replicated", "before the crash"])
    await query(standby, "INSERT INTO notes VALUES (4, 'after the promotion')")
    expect(await notes(standby)).toEqual(["replicated", "before the crash", "after the promotion"])
  }, 120_000)

  it("stop() is safe to call twice", async () => {
    const cluster = delayed!
    await cluster.stop()
    await cluster.stop()
    await expect(query(cluster.primaryUrl, "SELECT 1")).rejects.toThrow()
  }, 60_000)
})
