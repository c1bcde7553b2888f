/**
 * Several server processes on one PostgreSQL database act as one service: the same
 * credentials, one idempotency record per key, one rate-limit window per scope.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshKey, type Harness, startHarness } from "../support/harness.js"

describe("two servers on one database [postgresql]", () => {
  let a: Harness
  let b: Harness
  beforeAll(async () => {
    a = await startHarness("postgresql", { rateLimits: "on" })
    b = await startHarness("postgresql", { rateLimits: "on", databaseUrl: a.databaseUrl!, account: a.account })
  }, 60_000)
  afterAll(async () => {
    await b?.close()
    await a?.close()
  })

  it("a secret issued through one server authenticates on the other", async () => {
    const created = await a.request("POST", "/api/v3/credentials", { secret: a.live, json: { name: "shared" } })
    expect(created.status).toBe(201)
    const current = await b.request("GET", "/api/v3/credentials/current", { secret: created.body.data.secret.value })
    expect(current.status).toBe(200)
    expect(current.body.data.id).toBe(created.body.data.id)
  })

  it("a key used on one server is the same key on the other: one record, no second write", async () => {
    const key = freshKey()
    const credential = (await a.request("POST", "/api/v3/credentials", { secret: a.live, json: { name: "target" } })).body.data
    const revokeOn = (server: Harness) =>
      server.request("POST", `/api/v3/credentials/${credential.id}/revocations`, { secret: server.live, idempotencyKey: key })
    const first = await revokeOn(a)
    const again = await revokeOn(b)
    expect(first.status).toBe(200)
    expect(again.status).toBe(200)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body).toEqual(first.body)
  })

  it("a credential's rate window is shared: calls through both servers count against one limit", async () => {
    const sandbox = a.test
    const calls = async (server: Harness, n: number) => {
      const statuses: Array<number> = []
      for (let i = 0; i < n; i += 25) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(25, n - i) }, () => server.request("GET", "/api/v3/capabilities", { secret: sandbox }))
        )
        statuses.push(...batch.map((r) => r.status))
      }
      return statuses
    }
    // Start at the beginning of a minute on both servers' clocks, so the window does not slide during the test.
    const toNextMinute = 60_000 - (Date.now() % 60_000) + 100
    a.advance(toNextMinute)
    b.advance(toNextMinute)
    // 150 per minute for a sandbox credential (§8.1): 80 through each server leaves 10 refused.
    const both = [...(await calls(a, 80)), ...(await calls(b, 80))]
    const refused = both.filter((s) => s === 429).length
    const served = both.filter((s) => s === 200).length
    expect(served).toBeLessThanOrEqual(150)
    expect(refused).toBeGreaterThanOrEqual(10)
    expect(served + refused).toBe(160)
  })
})

describe("a worker killed mid-operation [postgresql]", () => {
  it("another process finishes the operation once the lease runs out, every item done exactly once", async () => {
    const first = await startHarness("postgresql")
    const items = Array.from({ length: 400 }, (_, i) => ({ key: `k${i}`, name: `killed-${i}` }))
    const started = await first.request("POST", "/api/v3/operations", { secret: first.live, json: { type: "tags.create", items } })
    expect(started.status).toBe(202)
    const id = started.body.data.id
    // Let the worker get going, then stop the process under it.
    for (let i = 0; i < 200; i++) {
      const progress = (await first.request("GET", `/api/v3/operations/${id}`, { secret: first.live })).body.data.progress
      if (progress.done > 0) break
      await new Promise((r) => setTimeout(r, 20))
    }
    await first.close({ keepDatabase: true })
    const second = await startHarness("postgresql", { databaseUrl: first.databaseUrl!, account: first.account })
    try {
      const halfway = (await second.request("GET", `/api/v3/operations/${id}`, { secret: second.live })).body.data
      expect(halfway.status).toBe("running")
      expect(halfway.progress.done).toBeLessThan(400)
      // The dead worker's lease runs out; the second process claims the operation.
      second.advance(31_000)
      let done = halfway
      for (let i = 0; i < 600 && done.status === "running"; i++) {
        await new Promise((r) => setTimeout(r, 50))
        done = (await second.request("GET", `/api/v3/operations/${id}`, { secret: second.live })).body.data
      }
      expect(done).toMatchObject({ status: "succeeded", progress: { done: 400, failed: 0, total: 400 } })
      expect(done.attempt.number).toBe(2)
      const names: Array<string> = []
      let cursor: string | null = null
      do {
        const page: { body: { data: Array<{ name: string }>; page: { next_cursor: string | null } } } = await second.request(
          "GET",
          `/api/v3/tags?q=killed-&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
          { secret: second.live }
        )
        names.push(...page.body.data.map((g) => g.name))
        cursor = page.body.page.next_cursor
      } while (cursor)
      expect(names).toHaveLength(400)
      expect(new Set(names).size).toBe(400)
    } finally {
      await second.close()
      await first.dropDatabase()
    }
  }, 60_000)
})
