/**
 * Failing closed on a store that hangs (docs/reliability.md), on both stores: the request
 * deadline (`requestDeadlineMs`) answers the contract's 503 with the envelope and leaves nothing
 * written, and the operators' probes outside `/api/v3` (`/livez`, `/readyz`). A hang is made
 * by the harness (`stall`: a port that never answers); a frozen PostgreSQL is in test/chaos.
 * Timings are never asserted tightly: only "answered before the bound plus a margin".
 */
import { expect, it } from "vitest"
import { eachStore, freshKey } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const API = "/api/v3"
const REQUEST_DEADLINE_MS = 600
const READINESS_DEADLINE_MS = 400
/** Generous: a loaded machine is slow, a hang is forever. */
const MARGIN_MS = 4_000

const timed = async <A>(f: () => Promise<A>): Promise<{ readonly value: A; readonly ms: number }> => {
  const started = performance.now()
  const value = await f()
  return { value, ms: performance.now() - started }
}

eachStore(
  "a store that hangs",
  (h) => {
    it("GET /livez answers 200 while the process serves, whatever the store does", async () => {
      h().stall("records")
      try {
        const { value: res, ms } = await timed(() => h().request("GET", "/livez"))
        expect(res.status, res.text).toBe(200)
        expect(res.body).toEqual({ status: "ok" })
        expect(ms).toBeLessThan(MARGIN_MS)
      } finally {
        h().stall("records", false)
      }
    })

    it("GET /readyz answers 200 when the store answers, 503 naming it when it fails or hangs", async () => {
      const ready = await h().request("GET", "/readyz")
      expect(ready.status, ready.text).toBe(200)
      expect(ready.body).toMatchObject({ status: "ready", failing: [], checks: { store: { status: "ok" } } })
      expect(ready.headers.get("cache-control")).toBe("no-store")

      h().fail("records")
      try {
        const failed = await h().request("GET", "/readyz")
        expect(failed.status, failed.text).toBe(503)
        expect(failed.body).toMatchObject({ status: "unavailable", failing: ["store"], checks: { store: { status: "unavailable", reason: "error" } } })
      } finally {
        h().fail("records", false)
      }

      h().stall("records")
      try {
        const { value: hung, ms } = await timed(() => h().request("GET", "/readyz"))
        expect(hung.status, hung.text).toBe(503)
        expect(hung.body).toMatchObject({ status: "unavailable", failing: ["store"], checks: { store: { status: "unavailable", reason: "timeout" } } })
        expect(ms).toBeLessThan(READINESS_DEADLINE_MS + MARGIN_MS)
      } finally {
        h().stall("records", false)
      }
      expect((await h().request("GET", "/readyz")).status).toBe(200)
      // Not an operation of the API: other methods are refused, and the description leaves them out.
      expect((await h().request("POST", "/readyz", { idempotencyKey: null })).status).toBe(405)
    })

    it("a read whose store hangs answers 503 credential_state_unverifiable within the deadline", async () => {
      h().stall("records")
      try {
        const { value: res, ms } = await timed(() => h().request("GET", `${API}/showcases`, { secret: h().live }))
        expectError(res, 503, "credential_state_unverifiable")
        expect(ms).toBeLessThan(REQUEST_DEADLINE_MS + MARGIN_MS)
      } finally {
        h().stall("records", false)
      }
    })

    it("a request without a credential is decided within the deadline while the rate limiter hangs", async () => {
      h().stall("rate_limits")
      try {
        const { value: res, ms } = await timed(() => h().request("GET", `${API}/showcases`))
        expectError(res, 503, "credential_state_unverifiable")
        expect(ms).toBeLessThan(REQUEST_DEADLINE_MS + MARGIN_MS)
      } finally {
        h().stall("rate_limits", false)
      }
    })

    it("a write whose unit of work hangs answers 503 audit_unavailable, writes nothing, and its key runs once after", async () => {
      const key = freshKey()
      const name = `hung ${key}`
      h().stall("unit_of_work")
      try {
        const { value: res, ms } = await timed(() =>
          h().request("POST", `${API}/showcases`, { secret: h().live, json: { name }, idempotencyKey: key })
        )
        expectError(res, 503, "audit_unavailable")
        expect(ms).toBeLessThan(REQUEST_DEADLINE_MS + MARGIN_MS)
      } finally {
        h().stall("unit_of_work", false)
      }
      const named = async () => {
        const list = await h().request("GET", `${API}/showcases?limit=100&q=${encodeURIComponent(key)}`, { secret: h().live })
        expect(list.status, list.text).toBe(200)
        return (list.body.data as Array<{ name: string }>).filter((showcase) => showcase.name === name)
      }
      expect(await named()).toHaveLength(0)
      // The key was given back (in the background, once the interrupted write let go of it).
      let retried = await h().request("POST", `${API}/showcases`, { secret: h().live, json: { name }, idempotencyKey: key })
      for (let i = 0; i < 50 && retried.status === 409; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        retried = await h().request("POST", `${API}/showcases`, { secret: h().live, json: { name }, idempotencyKey: key })
      }
      expect(retried.status, retried.text).toBe(201)
      expect(await named()).toHaveLength(1)
    })

    // The request log (every authenticated call, §8.3): a read whose entry cannot be written
    // fails closed; a write that committed keeps its answer, which a client must not retry blind.
    for (const outage of ["fails", "hangs"] as const) {
      it(`while the request log ${outage}, a read answers 503 audit_unavailable and a committed write keeps its 201, within the deadline`, async () => {
        const set = (on: boolean) => (outage === "fails" ? h().fail("request_log", on) : h().stall("request_log", on))
        const name = `logged ${freshKey()}`
        set(true)
        try {
          const { value: read, ms: readMs } = await timed(() => h().request("GET", `${API}/credentials/current`, { secret: h().live }))
          expectError(read, 503, "audit_unavailable")
          expect(readMs).toBeLessThan(REQUEST_DEADLINE_MS + MARGIN_MS)
          const { value: write, ms: writeMs } = await timed(() =>
            h().request("POST", `${API}/showcases`, { secret: h().live, json: { name }, idempotencyKey: freshKey() })
          )
          expect(write.status, write.text).toBe(201)
          expect(write.body.data.name).toBe(name)
          expect(writeMs).toBeLessThan(REQUEST_DEADLINE_MS + MARGIN_MS)
        } finally {
          set(false)
        }
        const list = await h().request("GET", `${API}/showcases?limit=100&q=${encodeURIComponent(name)}`, { secret: h().live })
        expect(list.status, list.text).toBe(200)
        expect((list.body.data as Array<{ name: string }>).filter((showcase) => showcase.name === name)).toHaveLength(1)
      })
    }
  },
  { rateLimits: "on", settings: { requestDeadlineMs: REQUEST_DEADLINE_MS, readinessDeadlineMs: READINESS_DEADLINE_MS } }
)
