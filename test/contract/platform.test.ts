/**
 * The platform rules every operation shares, over HTTP on both stores: idempotency (§4.1, §7),
 * concurrency control (If-Match), rate limits (§8.1), failing closed (§1.5), the audit trail
 * and account usage (§4.5, §8.3), the sandbox, and the self-description and deprecation
 * machinery (§4.5, §9).
 */
import { expect, it } from "vitest"
import { eachStore, freshKey, type Harness, type Response } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const API = "/api/v3"
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

type H = () => Harness

/** Issue a credential in the environment of `secret` (the production demo secret by default). */
const issue = async (h: H, options: { secret?: string; name?: string; key?: string } = {}) => {
  const res = await h().request("POST", `${API}/credentials`, {
    secret: options.secret ?? h().live,
    json: { name: options.name ?? `platform ${freshKey()}` },
    ...(options.key !== undefined ? { idempotencyKey: options.key } : {})
  })
  expect(res.status, res.text).toBe(201)
  return { id: res.body.data.id as string, secret: res.body.data.secret.value as string, res }
}

const getCredential = async (h: H, id: string, secret = h().live) => {
  const res = await h().request("GET", `${API}/credentials/${id}`, { secret })
  expect(res.status, res.text).toBe(200)
  return res
}

/** Every credential of the environment (the blocks make far fewer than 200). */
const listCredentialIds = async (h: H, secret = h().live): Promise<Array<string>> => {
  const res = await h().request("GET", `${API}/credentials?limit=200`, { secret })
  expect(res.status, res.text).toBe(200)
  expect(res.body.page.next_cursor).toBeNull()
  return res.body.data.map((c: { id: string }) => c.id)
}

const intHeader = (res: Response, name: string): number => {
  const value = res.headers.get(name)
  expect(value, `${name} header`).toMatch(/^\d+$/)
  return Number(value)
}

/** Run `count` calls, `chunk` at a time. */
const inChunks = async <A>(count: number, chunk: number, call: (i: number) => Promise<A>): Promise<Array<A>> => {
  const out: Array<A> = []
  for (let start = 0; start < count; start += chunk) {
    const batch = Array.from({ length: Math.min(chunk, count - start) }, (_, j) => call(start + j))
    out.push(...(await Promise.all(batch)))
  }
  return out
}

const linkAdmin = (h: H, credentialId: string, key: string, administratorId = h().account.administrator.id) =>
  h().request("POST", `${API}/credentials/${credentialId}/administrators`, {
    secret: h().live,
    json: { administrator_id: administratorId },
    idempotencyKey: key
  })

const patchCredential = (h: H, credentialId: string, json: unknown, headers: Record<string, string> = {}) =>
  h().request("PATCH", `${API}/credentials/${credentialId}`, { secret: h().live, json, headers })

// ---------------------------------------------------------------------------------------
// Idempotency and concurrency control (§4.1, §7)

eachStore("idempotency", (h) => {
  it("same key and same body replays the stored result with Idempotent-Replayed: true and executes nothing again", async () => {
    const { id } = await issue(h)
    const key = freshKey()
    const first = await linkAdmin(h, id, key)
    expect(first.status, first.text).toBe(201)
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    const revisionAfterFirst = (await getCredential(h, id)).body.data.revision

    const replay = await linkAdmin(h, id, key)
    expect(replay.status, replay.text).toBe(201)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.body).toEqual(first.body)
    // Executed again, the link would already exist (409) or the revision would move.
    expect((await getCredential(h, id)).body.data.revision).toBe(revisionAfterFirst)
    const links = await h().request("GET", `${API}/credentials/${id}/administrators`, { secret: h().live })
    expect(links.body.data).toHaveLength(1)
  })

  it("after a sandbox reset, a key used before it is 409 result_not_replayable (what it recorded is gone); a new key runs; the reset's own key replays", async () => {
    const post = (key: string, name: string) =>
      h().request("POST", `${API}/showcases`, { secret: h().test, json: { name }, idempotencyKey: key })
    const key = freshKey()
    const first = await post(key, "Before the reset")
    expect(first.status, first.text).toBe(201)
    expect((await post(key, "Before the reset")).headers.get("idempotent-replayed")).toBe("true")
    const resetKey = freshKey()
    const reset = await h().request("POST", `${API}/sandbox/resets`, { secret: h().test, idempotencyKey: resetKey })
    expect(reset.status, reset.text).toBeLessThan(300)
    // Replaying would answer a showcase that no longer exists.
    expectError(await post(key, "Before the reset"), 409, "result_not_replayable")
    expect((await h().request("GET", `${API}/showcases/${first.body.data.id}`, { secret: h().test })).status).toBe(404)
    const again = await post(freshKey(), "Before the reset")
    expect(again.status, again.text).toBe(201)
    const replayedReset = await h().request("POST", `${API}/sandbox/resets`, { secret: h().test, idempotencyKey: resetKey })
    expect(replayedReset.status, replayedReset.text).toBe(reset.status)
    expect(replayedReset.headers.get("idempotent-replayed")).toBe("true")
    // Production's receipts are another tenant's: untouched.
    const liveKey = freshKey()
    expect((await h().request("POST", `${API}/showcases`, { secret: h().live, json: { name: "Live" }, idempotencyKey: liveKey })).status).toBe(201)
    await h().request("POST", `${API}/sandbox/resets`, { secret: h().test, idempotencyKey: freshKey() })
    const liveReplay = await h().request("POST", `${API}/showcases`, { secret: h().live, json: { name: "Live" }, idempotencyKey: liveKey })
    expect(liveReplay.headers.get("idempotent-replayed")).toBe("true")
  })

  it("an optional key on PATCH replays too, and the revision does not move", async () => {
    const { id } = await issue(h)
    const key = freshKey()
    const first = await patchCredential(h, id, { name: "renamed once" }, { "idempotency-key": key })
    expect(first.status, first.text).toBe(200)
    const replay = await patchCredential(h, id, { name: "renamed once" }, { "idempotency-key": key })
    expect(replay.status, replay.text).toBe(200)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.body).toEqual(first.body)
    expect((await getCredential(h, id)).body.data.revision).toBe(first.body.data.revision)
  })

  it("same key with a different body is 422 idempotency_key_reused, reason different_body, and changes nothing", async () => {
    const { id } = await issue(h)
    const key = freshKey()
    const first = await patchCredential(h, id, { name: "first body" }, { "idempotency-key": key })
    expect(first.status, first.text).toBe(200)
    const reused = await patchCredential(h, id, { name: "second body" }, { "idempotency-key": key })
    expectError(reused, 422, "idempotency_key_reused", { reason: "different_body" })
    const now = await getCredential(h, id)
    expect(now.body.data.name).toBe("first body")
    expect(now.body.data.revision).toBe(first.body.data.revision)
  })

  it("same key on another operation is 422 idempotency_key_reused, reason different_resource, and executes nothing", async () => {
    const { id } = await issue(h)
    const key = freshKey()
    const first = await linkAdmin(h, id, key)
    expect(first.status, first.text).toBe(201)
    const reused = await h().request("POST", `${API}/credentials/${id}/revocations`, { secret: h().live, idempotencyKey: key })
    expectError(reused, 422, "idempotency_key_reused", { reason: "different_resource" })
    expect((await getCredential(h, id)).body.data.status).toBe("active")
  })

  it("same key and body on the same operation of another resource is idempotency_key_reused, reason different_resource", async () => {
    const a = await issue(h)
    const b = await issue(h)
    const key = freshKey()
    const first = await linkAdmin(h, a.id, key)
    expect(first.status, first.text).toBe(201)
    const reused = await linkAdmin(h, b.id, key)
    expectError(reused, 422, "idempotency_key_reused", { reason: "different_resource" })
    const links = await h().request("GET", `${API}/credentials/${b.id}/administrators`, { secret: h().live })
    expect(links.body.data).toHaveLength(0)
  })

  it("a request that fails validation consumes no key: the same key with a valid body then succeeds (§7)", async () => {
    const before = await listCredentialIds(h)
    const key = freshKey()
    const invalid = await h().request("POST", `${API}/credentials`, { secret: h().live, json: {}, idempotencyKey: key })
    expectError(invalid, 422, "validation_failed")
    const valid = await h().request("POST", `${API}/credentials`, {
      secret: h().live,
      json: { name: "after a failed attempt" },
      idempotencyKey: key
    })
    expect(valid.status, valid.text).toBe(201)
    expect(valid.headers.get("idempotent-replayed")).toBeNull()
    expect(await listCredentialIds(h)).toHaveLength(before.length + 1)
  })

  it("a request rejected by the use case consumes no key either", async () => {
    const { id } = await issue(h)
    const key = freshKey()
    // Well formed, but no such administrator: rejected after the key was looked at.
    const rejected = await linkAdmin(h, id, key, "adm_000000001")
    expectError(rejected, 422, "validation_failed", { field: "administrator_id" })
    const retried = await linkAdmin(h, id, key)
    expect(retried.status, retried.text).toBe(201)
    expect(retried.headers.get("idempotent-replayed")).toBeNull()
    expect(retried.body.data.id).toBe(h().account.administrator.id)
  })

  it("50 parallel POST /credentials with one key and one body create exactly one credential", async () => {
    const before = await listCredentialIds(h)
    const key = freshKey()
    const body = { name: `concurrent ${key}` }
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => h().request("POST", `${API}/credentials`, { secret: h().live, json: body, idempotencyKey: key }))
    )
    const created = answers.filter((r) => r.status === 201)
    expect(created).toHaveLength(1)
    const createdId = created[0]!.body.data.id
    for (const answer of answers) {
      if (answer.status === 201) expect(answer.body.data.id).toBe(createdId)
      else {
        expect(answer.status, answer.text).toBe(409)
        expect(["idempotency_in_progress", "secret_not_replayable"]).toContain(answer.body.error.code)
      }
    }
    const after = await listCredentialIds(h)
    expect(after).toHaveLength(before.length + 1)
    expect(after).toContain(createdId)
  })

  it("50 parallel PATCH with the same If-Match: exactly one 200, the rest 412 revision_mismatch, revision moves by one", async () => {
    const { id } = await issue(h)
    const current = await getCredential(h, id)
    const etag = current.headers.get("etag")!
    expect(etag).toBeTruthy()
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => patchCredential(h, id, { name: `writer ${i}` }, { "if-match": etag }))
    )
    const ok = answers.filter((r) => r.status === 200)
    expect(ok).toHaveLength(1)
    for (const answer of answers.filter((r) => r.status !== 200)) expectError(answer, 412, "revision_mismatch")
    const final = await getCredential(h, id)
    expect(final.body.data.revision).toBe(current.body.data.revision + 1)
    expect(final.body.data.name).toBe(ok[0]!.body.data.name)
  })
})

// ---------------------------------------------------------------------------------------
// Time passing: receipts kept 48 hours, the audit trail 30 days (§8.3)

eachStore("as time passes", (h) => {
  it("an idempotency receipt is kept 48 hours, then the same key executes again (§8.3)", async () => {
    const { id } = await issue(h)
    const key = freshKey()
    const first = await patchCredential(h, id, { name: "kept 48h" }, { "idempotency-key": key })
    expect(first.status, first.text).toBe(200)

    h().advance(47 * HOUR)
    const stillReplayed = await patchCredential(h, id, { name: "kept 48h" }, { "idempotency-key": key })
    expect(stillReplayed.status, stillReplayed.text).toBe(200)
    expect(stillReplayed.headers.get("idempotent-replayed")).toBe("true")
    expect(stillReplayed.body.data.revision).toBe(first.body.data.revision)

    h().advance(HOUR + MINUTE)
    const executed = await patchCredential(h, id, { name: "kept 48h" }, { "idempotency-key": key })
    expect(executed.status, executed.text).toBe(200)
    expect(executed.headers.get("idempotent-replayed")).toBeNull()
    expect((await getCredential(h, id)).body.data.revision).toBe(first.body.data.revision + 1)
  })

  it("the request log and audit entries are kept 30 days, then gone (§8.3)", async () => {
    const call = await h().request("GET", `${API}/credentials/current`, { secret: h().live })
    const requestId = call.headers.get("x-request-id")!
    const { id, res: created } = await issue(h)
    const createRequestId = created.headers.get("x-request-id")!
    const kept = await h().request("GET", `${API}/requests/${requestId}`, { secret: h().live })
    expect(kept.status, kept.text).toBe(200)

    h().advance(31 * DAY)
    const gone = await h().request("GET", `${API}/requests/${requestId}`, { secret: h().live })
    expectError(gone, 404, "not_found")
    const goneCreate = await h().request("GET", `${API}/requests/${createRequestId}`, { secret: h().live })
    expectError(goneCreate, 404, "not_found")
    const entries = await h().request("GET", `${API}/audit-entries?resource_id=${id}`, { secret: h().live })
    expect(entries.status, entries.text).toBe(200)
    expect(entries.body.data).toEqual([])
    const requests = await h().request("GET", `${API}/requests?limit=200`, { secret: h().live })
    expect(requests.body.data.map((r: { id: string }) => r.id)).not.toContain(requestId)
  })
})

// ---------------------------------------------------------------------------------------
// Rate limits (§8.1)

eachStore(
  "rate limits",
  (h) => {
    // The server's clock is the wall clock plus what this block moved it by.
    let moved = 0
    const advance = (ms: number) => {
      moved += ms
      h().advance(ms)
    }
    /**
     * Move to the start of a minute of the server's clock that follows a minute without calls:
     * a burst then has the limiter to itself, whatever its window arithmetic.
     */
    const toQuietMinute = () => advance(2 * MINUTE - ((Date.now() + moved) % MINUTE) + 50)

    /** A fresh credential that has made its 300 calls of the minute. */
    const exhaustedCredential = async () => {
      const fresh = await issue(h)
      toQuietMinute()
      const admitted = await inChunks(300, 50, () => h().request("GET", `${API}/capabilities`, { secret: fresh.secret }))
      expect(admitted.map((r) => r.status)).toEqual(Array(300).fill(200))
      expect(Math.min(...admitted.map((r) => Number(r.headers.get("ratelimit-remaining"))))).toBe(0)
      return fresh
    }
    const capabilities = (secret: string) => h().request("GET", `${API}/capabilities`, { secret })
    const line = (res: Response, scope: string) => res.body.error.limits.find((l: { scope: string }) => l.scope === scope)

    it("an authenticated response carries RateLimit-* of the credential scope: 300 for production", async () => {
      const res = await capabilities(h().live)
      expect(res.status, res.text).toBe(200)
      expect(intHeader(res, "ratelimit-limit")).toBe(300)
      const remaining = intHeader(res, "ratelimit-remaining")
      expect(remaining).toBeLessThan(300)
      expect(remaining).toBeGreaterThanOrEqual(290)
      const reset = intHeader(res, "ratelimit-reset")
      expect(reset).toBeGreaterThanOrEqual(0)
      expect(reset).toBeLessThanOrEqual(60)
    })

    it("a sandbox credential's limit is 150", async () => {
      const res = await capabilities(h().test)
      expect(res.status, res.text).toBe(200)
      expect(intHeader(res, "ratelimit-limit")).toBe(150)
      expect(intHeader(res, "ratelimit-remaining")).toBeLessThan(150)
    })

    // Kept by the next test for the one after it: a 429 is costly to produce.
    let refusal: Response | undefined

    it("after 300 calls in a minute the next is 429 rate_limit_exceeded with retry_after_seconds, blocked_by and limits", async () => {
      const fresh = await exhaustedCredential()
      const refused = await capabilities(fresh.secret)
      refusal = refused
      expectError(refused, 429, "rate_limit_exceeded")
      const error = refused.body.error
      expect(Number.isInteger(error.retry_after_seconds)).toBe(true)
      expect(error.retry_after_seconds).toBeGreaterThanOrEqual(1)
      expect(error.retry_after_seconds).toBeLessThanOrEqual(60)
      expect(error.blocked_by).toContain("key")
      expect(error.limits.map((l: { scope: string }) => l.scope)).toEqual(expect.arrayContaining(["instance", "key"]))
      for (const item of error.limits) {
        expect(Object.keys(item).sort()).toEqual(["limit", "remaining", "retry_after_seconds", "scope", "window_seconds"])
        expect(item.window_seconds).toBe(60)
        expect(Number.isInteger(item.retry_after_seconds)).toBe(true)
      }
      expect(line(refused, "key")).toMatchObject({ limit: 300, remaining: 0 })
      expect(line(refused, "key").retry_after_seconds).toBeGreaterThanOrEqual(1)
      expect(line(refused, "instance").limit).toBe(1000)

      // The scopes are independent: the account's other credential is not blocked.
      const other = await capabilities(h().live)
      expect(other.status, other.text).toBe(200)
    })

    it("a 429 carries Retry-After and the RateLimit-* headers of the scope that refused it", () => {
      expect(refusal, "the 429 of the previous test").toBeDefined()
      const refused = refusal!
      expect(refused.headers.get("retry-after")).toBe(String(refused.body.error.retry_after_seconds))
      expect(intHeader(refused, "ratelimit-limit")).toBe(300)
      expect(intHeader(refused, "ratelimit-remaining")).toBe(0)
      expect(intHeader(refused, "ratelimit-reset")).toBeGreaterThanOrEqual(1)
    })

    it("a refused call counts against no window, and once the minute has passed the credential works again (§7)", async () => {
      const fresh = await exhaustedCredential()
      const refused = await inChunks(20, 10, () => capabilities(fresh.secret))
      for (const res of refused) expectError(res, 429, "rate_limit_exceeded")
      // Had the refused calls been counted, the account's remaining would shrink with each of them.
      const remainings = refused.map((res) => line(res, "instance").remaining as number)
      expect(Math.min(...remainings)).toBeGreaterThanOrEqual(Math.max(...remainings) - 1)

      advance(61_000)
      const again = await capabilities(fresh.secret)
      expect(again.status, again.text).toBe(200)
    })

    it("when the limiter cannot answer: 503 rate_limiter_unavailable, never access (§1.5)", async () => {
      toQuietMinute()
      const before = await listCredentialIds(h)
      h().fail("rate_limits")
      try {
        const read = await h().request("GET", `${API}/capabilities`, { secret: h().live })
        expectError(read, 503, "rate_limiter_unavailable")
        const write = await h().request("POST", `${API}/credentials`, { secret: h().live, json: { name: "not while blind" } })
        expectError(write, 503, "rate_limiter_unavailable")
      } finally {
        h().fail("rate_limits", false)
      }
      expect(await listCredentialIds(h)).toEqual(before)
    })
  },
  { rateLimits: "on" }
)

// ---------------------------------------------------------------------------------------
// Failing closed, the audit trail, usage, sandbox, capabilities

eachStore("platform", (h) => {
  it("openAccount() answers public views: the account and its administrator without password hash or TOTP secret, each credential's secret once", async () => {
    const opened = await h().openAccount(`public-view-${process.pid}-${Date.now()}`)
    expect(Object.keys(opened.administrator).sort()).toEqual(["created_at", "email", "id", "name", "object", "status"])
    expect(Object.keys(opened.account).sort()).toEqual(["created_at", "id", "name", "object", "status", "subdomain"])
    const printed = JSON.stringify(opened)
    expect(printed).not.toMatch(/password|totp|hash/i)
    expect(opened.credentials.map((c) => c.secret.length > 20)).toEqual([true, true])
  })

  it("capabilities: object, release 3.4.7 and no deprecated operation, only the deprecated product_id of rankings (§4.4, §4.5, §9)", async () => {
    const res = await h().request("GET", `${API}/capabilities`, { secret: h().live })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.object).toBe("capabilities")
    expect(res.body.data.release).toBe("3.4.7")
    // §9: no operation is deprecated; the alias parameter of rankings is listed apart, so a client reading `deprecations[]` sees none.
    expect(res.body.data.deprecations).toEqual([])
    expect(res.body.data.deprecated_parameters).toEqual([
      { operation_id: "reports.rankings.get", parameter: "product_id", replacement: "product_id[]", deprecated_at: expect.any(String), sunset_at: expect.any(String) }
    ])
    expect(res.headers.get("x-service-release")).toBe("3.4.7")
    expect(res.headers.get("deprecation")).toBeNull()
  })

  it("when credential state cannot be read: 503 credential_state_unverifiable, never access (§1.5)", async () => {
    h().fail("records")
    try {
      const res = await h().request("GET", `${API}/credentials/current`, { secret: h().live })
      expectError(res, 503, "credential_state_unverifiable")
      expect(res.body.data).toBeUndefined()
    } finally {
      h().fail("records", false)
    }
    const back = await h().request("GET", `${API}/credentials/current`, { secret: h().live })
    expect(back.status, back.text).toBe(200)
  })

  it("every authenticated call is in the request log under its X-Request-Id", async () => {
    const fresh = await issue(h)
    const ok = await h().request("GET", `${API}/capabilities`, { secret: fresh.secret })
    expect(ok.status, ok.text).toBe(200)
    const denied = await h().request("GET", `${API}/credentials`, { secret: fresh.secret })
    expectError(denied, 403, "permission_denied")
    const okId = ok.headers.get("x-request-id")!
    const deniedId = denied.headers.get("x-request-id")!

    const one = await h().request("GET", `${API}/requests/${okId}`, { secret: h().live })
    expect(one.status, one.text).toBe(200)
    expect(one.body.data).toMatchObject({
      object: "request",
      id: okId,
      method: "GET",
      path: `${API}/capabilities`,
      status: 200,
      outcome: "success",
      credential_id: fresh.id,
      operation_id: "capabilities.get"
    })

    const list = await h().request("GET", `${API}/requests?credential_id=${fresh.id}`, { secret: h().live })
    expect(list.status, list.text).toBe(200)
    expect(list.body.data.map((r: { id: string }) => r.id).sort()).toEqual([okId, deniedId].sort())
    const deniedEntry = list.body.data.find((r: { id: string }) => r.id === deniedId)
    expect(deniedEntry).toMatchObject({
      method: "GET",
      path: `${API}/credentials`,
      status: 403,
      outcome: "client_error",
      credential_id: fresh.id,
      operation_id: "credentials.list"
    })
  })

  it("the request log filters by credential_id and outcome", async () => {
    const fresh = await issue(h)
    await h().request("GET", `${API}/capabilities`, { secret: fresh.secret })
    const denied = await h().request("GET", `${API}/credentials`, { secret: fresh.secret })
    const errors = await h().request("GET", `${API}/requests?credential_id=${fresh.id}&outcome=client_error`, { secret: h().live })
    expect(errors.status, errors.text).toBe(200)
    expect(errors.body.data.map((r: { id: string }) => r.id)).toEqual([denied.headers.get("x-request-id")])
    const all = await h().request("GET", `${API}/requests?outcome=success`, { secret: h().live })
    expect(all.body.data.length).toBeGreaterThan(0)
    for (const entry of all.body.data) expect(entry.outcome).toBe("success")
  })

  it("a create leaves an audit entry credential.created with its resource_id and request_id", async () => {
    const { id, res } = await issue(h)
    const requestId = res.headers.get("x-request-id")!
    const entries = await h().request("GET", `${API}/audit-entries?resource_id=${id}`, { secret: h().live })
    expect(entries.status, entries.text).toBe(200)
    expect(entries.body.data).toHaveLength(1)
    expect(entries.body.data[0]).toMatchObject({ action: "credential.created", resource_id: id, request_id: requestId })
    const one = await h().request("GET", `${API}/audit-entries/${entries.body.data[0].id}`, { secret: h().live })
    expect(one.status, one.text).toBe(200)
    expect(one.body.data.id).toBe(entries.body.data[0].id)
    const byRequest = await h().request("GET", `${API}/requests/${requestId}`, { secret: h().live })
    expect(byRequest.body.data).toMatchObject({ method: "POST", status: 201, operation_id: "credentials.create" })
  })

  it("audit entries filter by action", async () => {
    const { id } = await issue(h)
    await patchCredential(h, id, { name: "for the action filter" })
    const created = await h().request("GET", `${API}/audit-entries?action=credential.created&limit=200`, { secret: h().live })
    expect(created.status, created.text).toBe(200)
    for (const entry of created.body.data) expect(entry.action).toBe("credential.created")
    expect(created.body.data.map((e: { resource_id: string }) => e.resource_id)).toContain(id)
    const updated = await h().request("GET", `${API}/audit-entries?action=credential.updated&resource_id=${id}`, { secret: h().live })
    expect(updated.body.data).toHaveLength(1)
  })

  it("when the audit trail cannot be written, a write is 503 audit_unavailable and nothing is created; the key is not consumed", async () => {
    const before = await listCredentialIds(h)
    const key = freshKey()
    h().fail("unit_of_work")
    try {
      const res = await h().request("POST", `${API}/credentials`, { secret: h().live, json: { name: "unrecorded" }, idempotencyKey: key })
      expectError(res, 503, "audit_unavailable")
    } finally {
      h().fail("unit_of_work", false)
    }
    expect(await listCredentialIds(h)).toEqual(before)
    const retry = await h().request("POST", `${API}/credentials`, { secret: h().live, json: { name: "unrecorded" }, idempotencyKey: key })
    expect(retry.status, retry.text).toBe(201)
    expect(await listCredentialIds(h)).toHaveLength(before.length + 1)
  })

  it("account usage counts exactly the calls made, per window, per credential and per outcome (§4.5)", async () => {
    const fresh = await issue(h)
    const usage = () => h().request("GET", `${API}/account/usage`, { secret: h().live })
    const before = await usage()
    expect(before.status, before.text).toBe(200)
    expect(before.body.data.windows.map((w: { window: string }) => w.window)).toEqual(["1h", "24h", "7d", "30d"])

    for (let i = 0; i < 3; i++) {
      const res = await h().request("GET", `${API}/capabilities`, { secret: fresh.secret })
      expect(res.status).toBe(200)
    }
    const failing = await h().request("GET", `${API}/capabilities?unknown=1`, { secret: fresh.secret })
    expectError(failing, 400, "unknown_parameter")

    const after = await usage()
    expect(after.status, after.text).toBe(200)
    for (const window of after.body.data.windows) {
      const previous = before.body.data.windows.find((w: { window: string }) => w.window === window.window)
      // The fresh credential's four calls, and the first usage read.
      expect(window.requests).toBe(previous.requests + 5)
      expect(window.by_outcome.client_error).toBe(previous.by_outcome.client_error + 1)
      expect(window.by_outcome.success).toBe(previous.by_outcome.success + 4)
      const mine = window.by_credential.find((c: { credential_id: string }) => c.credential_id === fresh.id)
      expect(mine).toMatchObject({ requests: 4, by_outcome: { success: 3, client_error: 1 } })
    }
  })

  it("account usage gives the limits in effect for the environment (§8.1)", async () => {
    const production = await h().request("GET", `${API}/account/usage`, { secret: h().live })
    expect(production.body.data.limits).toMatchObject({ instance: 1000, key: 300 })
    const sandbox = await h().request("GET", `${API}/account/usage`, { secret: h().test })
    expect(sandbox.status, sandbox.text).toBe(200)
    expect(sandbox.body.data.limits).toMatchObject({ instance: 500, key: 150 })
  })

  it("POST /sandbox/resets with a production credential is 403 sandbox_only", async () => {
    const res = await h().request("POST", `${API}/sandbox/resets`, { secret: h().live })
    expectError(res, 403, "sandbox_only")
  })

  it("a sandbox reset keeps the sandbox's credentials: its secret and credentials made there still work", async () => {
    const made = await issue(h, { secret: h().test })
    const res = await h().request("POST", `${API}/sandbox/resets`, { secret: h().test })
    expect(res.status, res.text).toBe(201)
    const self = await h().request("GET", `${API}/credentials/current`, { secret: h().test })
    expect(self.status, self.text).toBe(200)
    const madeSelf = await h().request("GET", `${API}/credentials/current`, { secret: made.secret })
    expect(madeSelf.status, madeSelf.text).toBe(200)
    expect(madeSelf.body.data.id).toBe(made.id)
    expect(await listCredentialIds(h, h().test)).toContain(made.id)
  })
})

// ---------------------------------------------------------------------------------------
// Deprecation (§9)

const deprecatedAt = Date.parse("2026-01-01T00:00:00Z")
const sunsetAt = Date.now() + HOUR

eachStore(
  "deprecation",
  (h) => {
    it("a deprecated operation works until Sunset and says so: Deprecation, Sunset and Link headers", async () => {
      const res = await h().request("GET", `${API}/policy-templates`, { secret: h().live })
      expect(res.status, res.text).toBe(200)
      expect(res.headers.get("deprecation")).toBe(`@${Math.floor(deprecatedAt / 1000)}`)
      const sunset = res.headers.get("sunset")!
      expect(sunset).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/)
      expect(Date.parse(sunset)).toBe(Math.floor(sunsetAt / 1000) * 1000)
      expect(res.headers.get("link")).toMatch(/^<[^>]*\/deprecations>; rel="deprecation"$/)
    })

    it("GET /capabilities lists the deprecation", async () => {
      const res = await h().request("GET", `${API}/capabilities`, { secret: h().live })
      expect(res.status, res.text).toBe(200)
      // Each entry exactly as §4.5 shapes it.
      expect(res.body.data.deprecations).toEqual([
        { operation_id: "policy_templates.list", deprecated_at: new Date(deprecatedAt).toISOString(), sunset_at: new Date(sunsetAt).toISOString() }
      ])
      // The release's own deprecated parameter, apart.
      expect(res.body.data.deprecated_parameters).toEqual([expect.objectContaining({ operation_id: "reports.rankings.get", parameter: "product_id" })])
    })

    it("other operations carry no Deprecation header", async () => {
      const res = await h().request("GET", `${API}/credentials/current`, { secret: h().live })
      expect(res.status).toBe(200)
      expect(res.headers.get("deprecation")).toBeNull()
      expect(res.headers.get("sunset")).toBeNull()
    })

    it("after Sunset the operation is 410 operation_sunset", async () => {
      h().advance(2 * HOUR)
      const res = await h().request("GET", `${API}/policy-templates`, { secret: h().live })
      expectError(res, 410, "operation_sunset")
    })
  },
  {
    settings: {
      deprecations: new Map([["policy_templates.list", { deprecatedAt, sunsetAt }]])
    }
  }
)
