/**
 * Credentials and access policies over HTTP (§2.3, §3, §4.3 POST /credentials, §5.1, §5.3,
 * §7, open-points "Credentials" routes and "Tenancy and environments").
 */
import { expect, it } from "vitest"
import { eachStore, freshKey, type Harness, type RequestOptions, type Response } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const P = "/api/v3"
const timestampPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
/** A well-formed credential ID that no test creates. */
const MISSING_CREDENTIAL = "crd_000000001"
const HOUR_MS = 3600_000

/** A token shaped like a JWT (RS256 header, payload, signature) that no issuer signed. */
const garbageJwt = [
  Buffer.from(JSON.stringify({ alg: "RS256", typ: "JWT", kid: "nope" })).toString("base64url"),
  Buffer.from(JSON.stringify({ sub: "adm_000000001", aud: "service-api-v3", exp: 4102444800 })).toString("base64url"),
  Buffer.from("not a signature").toString("base64url")
].join(".")

let subdomainCounter = 0
const freshSubdomain = (tag: string) => `${tag}-${process.pid}-${Date.now()}-${++subdomainCounter}`

interface Issued {
  readonly id: string
  readonly secret: string
  readonly res: Response
}

/** Client helpers over one harness. */
const client = (h: () => Harness) => {
  const call = (method: string, path: string, options: RequestOptions = {}) => h().request(method, P + path, options)
  const asLive = (method: string, path: string, options: RequestOptions = {}) =>
    call(method, path, { secret: h().live, ...options })

  /** Issue a credential (as `secret`, by default the demo production one); fails the test unless 201. */
  const issue = async (body: Record<string, unknown> = {}, secret: string = h().live): Promise<Issued> => {
    const res = await call("POST", "/credentials", { secret, json: { name: `c-${freshKey()}`, ...body } })
    expect(res.status, res.text).toBe(201)
    return { id: res.body.data.id, secret: res.body.data.secret.value, res }
  }

  /** Every item of a collection, walking `next_cursor`. */
  const listAll = async (path: string, secret: string = h().live): Promise<Array<any>> => {
    const items: Array<any> = []
    let cursor: string | null = null
    do {
      const sep = path.includes("?") ? "&" : "?"
      const res: Response = await call("GET", `${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
        secret
      })
      expect(res.status, res.text).toBe(200)
      items.push(...res.body.data)
      cursor = res.body.page.next_cursor
    } while (cursor !== null)
    return items
  }

  const currentWith = (secret: string) => call("GET", "/credentials/current", { secret })

  const etagOf = (id: string, revision: number) => `W/"credential:${id}:${revision}"`

  return { call, asLive, issue, listAll, currentWith, etagOf }
}

const secretOf = (opened: { readonly credentials: ReadonlyArray<{ environment: string; secret: string; id: string }> }, env: string) =>
  opened.credentials.find((c) => c.environment === env)!

// =======================================================================================

eachStore("credentials", (h) => {
  const { call, asLive, issue, listAll, currentWith, etagOf } = client(h)
  const liveId = () => secretOf(h().account, "production").id
  const testId = () => secretOf(h().account, "sandbox").id
  const adminId = () => h().account.administrator.id

  // ---------------------------------------------------------------------------------------
  // Create (§2.3, §4.3)

  it("create answers 201 with Location and every field of §2.3, explicit null where empty", async () => {
    const { id, res } = await issue({ name: "Shape check" })
    expect(res.headers.get("location")).toMatch(new RegExp(`/api/v3/credentials/${id}$`))
    const c = res.body.data
    expect(c.object).toBe("credential")
    expect(id).toMatch(/^crd_[0-9A-Za-z]{9}$/)
    expect(c.name).toBe("Shape check")
    expect(c.purpose).toBeNull()
    expect(["autonomous", "both", "human_required"]).toContain(c.auth_mode)
    expect(c.environment).toBe("production")
    expect(c.status).toBe("active")
    expect(c.created_at).toMatch(timestampPattern)
    expect(c.updated_at).toMatch(timestampPattern)
    expect(c).toHaveProperty("expires_at", null)
    expect(c).toHaveProperty("revoked_at", null)
    expect(c.created_by).toEqual({ id: expect.any(String), kind: expect.any(String) })
    expect(c).toHaveProperty("revoked_by", null)
    expect(c).toHaveProperty("human", null)
    expect(c.policy).toEqual({ active_version: expect.any(Number), auth_revision: expect.any(Number) })
    expect(Number.isInteger(c.revision)).toBe(true)
    const s = c.secret
    expect(s.configured).toBe(true)
    expect(s.issued_at).toMatch(timestampPattern)
    expect(s).toHaveProperty("rotated_at", null)
    expect(s).toHaveProperty("valid_until", null)
    expect(Number.isInteger(s.version)).toBe(true)
    expect(typeof s.value).toBe("string")
    expect(s.last4).toBe(s.value.slice(-4))
  })

  it("a production secret starts ck_live_, a sandbox secret ck_test_", async () => {
    const live = await issue()
    expect(live.secret).toMatch(/^ck_live_/)
    expect(live.res.body.data.environment).toBe("production")
    const test = await issue({}, h().test)
    expect(test.secret).toMatch(/^ck_test_/)
    expect(test.res.body.data.environment).toBe("sandbox")
  })

  it("the new secret authenticates at once", async () => {
    const { id, secret } = await issue()
    const res = await currentWith(secret)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.id).toBe(id)
    expect(res.body.data.secret).not.toHaveProperty("value")
  })

  it("the secret is shown only in the create response: never by retrieve nor list", async () => {
    const { id, secret } = await issue()
    const one = await asLive("GET", `/credentials/${id}`)
    expect(one.status).toBe(200)
    expect(one.body.data.secret).not.toHaveProperty("value")
    expect(one.body.data.secret.last4).toBe(secret.slice(-4))
    expect(one.text).not.toContain(secret)
    const list = await asLive("GET", "/credentials?limit=200")
    expect(list.status).toBe(200)
    expect(list.text).not.toContain(secret)
    for (const item of list.body.data) expect(item.secret).not.toHaveProperty("value")
    expect(list.body.data.map((c: any) => c.id)).toContain(id)
  })

  it("name missing → 422 validation_failed itemized on `name`", async () => {
    const res = await asLive("POST", "/credentials", { json: { purpose: "no name" } })
    expectError(res, 422, "validation_failed")
    const item = res.body.error.details.find((d: any) => d.field === "name")
    expect(item).toBeDefined()
    expect(typeof item.code).toBe("string")
    expect(typeof item.message).toBe("string")
  })

  it("an unknown capability → 422 itemized on the policy", async () => {
    const res = await asLive("POST", "/credentials", {
      json: { name: "x", policies: [{ capabilities: ["credentials.read", "no_such.capability"] }] }
    })
    expectError(res, 422, "validation_failed", { field: "policies[0].capabilities[1]", code: "invalid_value", reason: "unknown_capability" })
  })

  it("an unknown policy template → 422 itemized on the policy", async () => {
    const res = await asLive("POST", "/credentials", { json: { name: "x", policies: [{ template: "no_such_template" }] } })
    expectError(res, 422, "validation_failed", { field: "policies[0].template", code: "invalid_value", reason: "unknown_template" })
  })

  it("a policy holds at most 1,000 resource IDs (§8.2): 1,000 accepted, 1,001 → 422", async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `prd_${String(i + 1).padStart(9, "0")}`)
    const before = (await listAll("/credentials")).length
    const over = await asLive("POST", "/credentials", {
      json: { name: "x", policies: [{ capabilities: ["products.read"], resources: ids }] }
    })
    expectError(over, 422, "too_many_items", { field: "policies[0].resources" })
    expect((await listAll("/credentials")).length).toBe(before)
    const atLimit = await asLive("POST", "/credentials", {
      json: { name: "x", policies: [{ capabilities: ["products.read"], resources: ids.slice(0, 1000) }] }
    })
    expect(atLimit.status, atLimit.text).toBe(201)
  })

  it("a malformed resource ID in a policy → 422 with item code `invalid` (§2.2)", async () => {
    const res = await asLive("POST", "/credentials", {
      json: { name: "x", policies: [{ capabilities: ["products.read"], resources: ["prd_000000001", "not-an-id"] }] }
    })
    expectError(res, 422, "validation_failed")
    const item = res.body.error.details.find((d: any) => d.code === "invalid")
    expect(item, res.text).toBeDefined()
    expect(String(item.field)).toMatch(/^policies\[0\]\.resources/)
    expect(typeof item.message).toBe("string")
  })

  // ---------------------------------------------------------------------------------------
  // Idempotency-Key on POST /credentials (§4.1, §4.3)

  it("Idempotency-Key is required: missing → 422 idempotency_key_required, nothing issued", async () => {
    const before = (await listAll("/credentials")).length
    const res = await asLive("POST", "/credentials", { json: { name: "no key" }, idempotencyKey: null })
    expectError(res, 422, "idempotency_key_required")
    expect((await listAll("/credentials")).length).toBe(before)
  })

  it("a malformed Idempotency-Key → 422 idempotency_key_invalid (129 characters, or a bad character)", async () => {
    const tooLong = await asLive("POST", "/credentials", { json: { name: "k" }, idempotencyKey: "a".repeat(129) })
    expectError(tooLong, 422, "idempotency_key_invalid")
    const badChar = await asLive("POST", "/credentials", { json: { name: "k" }, idempotencyKey: "bad key!" })
    // The message says which characters a key may hold, not only its length.
    expect(expectError(badChar, 422, "idempotency_key_invalid").message).toMatch(/A-Z, a-z, 0-9, period, underscore, colon and hyphen/)
    const atLimit = await asLive("POST", "/credentials", {
      json: { name: "k" },
      idempotencyKey: `${freshKey()}.:_-`.padEnd(128, "x")
    })
    expect(atLimit.status, atLimit.text).toBe(201)
  })

  it("replaying a create with the same key → 409 secret_not_replayable, no second credential", async () => {
    const key = freshKey()
    const body = { name: `replay-${key}` }
    const first = await asLive("POST", "/credentials", { json: body, idempotencyKey: key })
    expect(first.status, first.text).toBe(201)
    const before = await listAll("/credentials")
    const again = await asLive("POST", "/credentials", { json: body, idempotencyKey: key })
    expectError(again, 409, "secret_not_replayable")
    expect(again.text).not.toContain(first.body.data.secret.value)
    const after = await listAll("/credentials")
    expect(after.length).toBe(before.length)
    expect(after.filter((c) => c.name === body.name)).toHaveLength(1)
  })

  // ---------------------------------------------------------------------------------------
  // Delegation (§4.3, §7)

  it("cannot delegate a capability the issuer lacks → 403 delegation_limit_exceeded, nothing issued", async () => {
    const issuer = await issue({ policies: [{ capabilities: ["credentials.create", "credentials.read"] }] })
    const before = (await listAll("/credentials")).length
    const res = await call("POST", "/credentials", {
      secret: issuer.secret,
      json: { name: "too much", policies: [{ capabilities: ["credentials.update"] }] }
    })
    expectError(res, 403, "delegation_limit_exceeded")
    expect((await listAll("/credentials")).length).toBe(before)
    // What it holds, it may pass on.
    const ok = await call("POST", "/credentials", {
      secret: issuer.secret,
      json: { name: "fine", policies: [{ capabilities: ["credentials.read"] }] }
    })
    expect(ok.status, ok.text).toBe(201)
  })

  it("an issuer limited to resources [A] cannot delegate on every resource nor on [A, B]; it can on [A]", async () => {
    const a = await issue()
    const b = await issue()
    const issuer = await issue({
      policies: [{ capabilities: ["credentials.create"] }, { capabilities: ["credentials.read"], resources: [a.id] }]
    })
    const before = (await listAll("/credentials")).length
    const unlimited = await call("POST", "/credentials", {
      secret: issuer.secret,
      json: { name: "unlimited", policies: [{ capabilities: ["credentials.read"] }] }
    })
    expectError(unlimited, 403, "delegation_limit_exceeded")
    const wider = await call("POST", "/credentials", {
      secret: issuer.secret,
      json: { name: "wider", policies: [{ capabilities: ["credentials.read"], resources: [a.id, b.id] }] }
    })
    expectError(wider, 403, "delegation_limit_exceeded")
    expect((await listAll("/credentials")).length).toBe(before)
    const same = await call("POST", "/credentials", {
      secret: issuer.secret,
      json: { name: "same", policies: [{ capabilities: ["credentials.read"], resources: [a.id] }] }
    })
    expect(same.status, same.text).toBe(201)
  })

  it("changing policies is delegation too: granting beyond what the caller holds → 403, nothing saved", async () => {
    const target = await issue({ policies: [{ capabilities: ["credentials.read"] }] })
    const editor = await issue({ policies: [{ capabilities: ["credentials.update", "credentials.read"] }] })
    const res = await call("PATCH", `/credentials/${target.id}`, {
      secret: editor.secret,
      json: { policies: [{ template: "full_access" }] }
    })
    expectError(res, 403, "delegation_limit_exceeded")
    const after = await asLive("GET", `/credentials/${target.id}`)
    expect(after.body.data.policy).toEqual(target.res.body.data.policy)
    expect(after.body.data.revision).toBe(target.res.body.data.revision)
  })

  // ---------------------------------------------------------------------------------------
  // Permissions and scope (§1.4, §4.2, §5)

  it("a read_only credential gets 403 permission_denied on POST /credentials", async () => {
    const reader = await issue({ policies: [{ template: "read_only" }] })
    const before = (await listAll("/credentials")).length
    const res = await call("POST", "/credentials", { secret: reader.secret, json: { name: "nope" } })
    expectError(res, 403, "permission_denied")
    expect((await listAll("/credentials")).length).toBe(before)
    // Reading is what it may do.
    expect((await call("GET", "/credentials", { secret: reader.secret })).status).toBe(200)
  })

  it("credentials.read limited to X: X is 200, another credential is 404 exactly like a missing one", async () => {
    const x = await issue()
    const y = await issue()
    const scoped = await issue({ policies: [{ capabilities: ["credentials.read"], resources: [x.id] }] })
    const inScope = await call("GET", `/credentials/${x.id}`, { secret: scoped.secret })
    expect(inScope.status, inScope.text).toBe(200)
    expect(inScope.body.data.id).toBe(x.id)
    const outOfScope = await call("GET", `/credentials/${y.id}`, { secret: scoped.secret })
    const missing = await call("GET", `/credentials/${MISSING_CREDENTIAL}`, { secret: scoped.secret })
    expectError(outOfScope, 404, "not_found")
    expectError(missing, 404, "not_found")
    expect(outOfScope.body.error.details).toEqual(missing.body.error.details)
    expect(outOfScope.body.error.message).toBe(missing.body.error.message)
  })

  it("credentials.read limited to X: the list shows only X, access rules before pagination (§4.2)", async () => {
    const x = await issue()
    await issue()
    const scoped = await issue({ policies: [{ capabilities: ["credentials.read"], resources: [x.id] }] })
    const res = await call("GET", "/credentials?limit=1", { secret: scoped.secret })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.map((c: any) => c.id)).toEqual([x.id])
    expect(res.body.page.next_cursor).toBeNull()
    expect((await listAll("/credentials", scoped.secret)).map((c) => c.id)).toEqual([x.id])
  })

  // ---------------------------------------------------------------------------------------
  // Tenancy and environments (open-points)

  it("another account's credential is 404 for every operation, and left untouched", async () => {
    const other = await h().openAccount(freshSubdomain("tenant"))
    const otherLive = secretOf(other, "production")
    const target = await issue()
    expectError(await call("GET", `/credentials/${target.id}`, { secret: otherLive.secret }), 404, "not_found")
    expectError(
      await call("PATCH", `/credentials/${target.id}`, { secret: otherLive.secret, json: { name: "hijacked" } }),
      404,
      "not_found"
    )
    expectError(await call("POST", `/credentials/${target.id}/revocations`, { secret: otherLive.secret }), 404, "not_found")
    expectError(await call("DELETE", `/credentials/${target.id}`, { secret: otherLive.secret }), 404, "not_found")
    const after = await asLive("GET", `/credentials/${target.id}`)
    expect(after.body.data.name).toBe(target.res.body.data.name)
    expect(after.body.data.status).toBe("active")
    const theirs = (await listAll("/credentials", otherLive.secret)).map((c) => c.id)
    expect(theirs).not.toContain(target.id)
    expect(theirs).not.toContain(liveId())
    const ours = (await listAll("/credentials")).map((c) => c.id)
    expect(ours).not.toContain(otherLive.id)
  })

  it("sandbox and production never see each other's credentials (404), and lists never cross", async () => {
    const sandboxOne = await issue({}, h().test)
    expectError(await call("GET", `/credentials/${liveId()}`, { secret: h().test }), 404, "not_found")
    expectError(await asLive("GET", `/credentials/${testId()}`), 404, "not_found")
    expectError(await asLive("GET", `/credentials/${sandboxOne.id}`), 404, "not_found")
    const sandboxList = await listAll("/credentials", h().test)
    expect(sandboxList.every((c) => c.environment === "sandbox")).toBe(true)
    expect(sandboxList.map((c) => c.id)).toContain(sandboxOne.id)
    expect(sandboxList.map((c) => c.id)).not.toContain(liveId())
    const liveList = await listAll("/credentials")
    expect(liveList.every((c) => c.environment === "production")).toBe(true)
    expect(liveList.map((c) => c.id)).not.toContain(testId())
    expect(liveList.map((c) => c.id)).not.toContain(sandboxOne.id)
  })

  // ---------------------------------------------------------------------------------------
  // List: cursor pagination (§4.2)

  /** A fresh account whose sandbox holds exactly five credentials. */
  let fiveOf: Promise<{ secret: string; ids: Array<string> }> | undefined
  const fiveCredentials = () =>
    (fiveOf ??= (async () => {
      const opened = await h().openAccount(freshSubdomain("pages"))
      const sandbox = secretOf(opened, "sandbox")
      const ids = [sandbox.id]
      for (let i = 0; i < 4; i++) ids.push((await issue({}, sandbox.secret)).id)
      return { secret: sandbox.secret, ids }
    })())

  it("limit=2 walks every credential exactly once through next_cursor, newest first", async () => {
    const { secret, ids } = await fiveCredentials()
    const seen: Array<any> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res: Response = await call("GET", `/credentials?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { secret })
      expect(res.status, res.text).toBe(200)
      expect(res.body.page.limit).toBe(2)
      expect(res.body.data.length).toBeLessThanOrEqual(2)
      seen.push(...res.body.data)
      cursor = res.body.page.next_cursor
      pages++
    } while (cursor !== null && pages < 10)
    expect(pages).toBe(3)
    const seenIds = seen.map((c) => c.id)
    expect(new Set(seenIds).size).toBe(seenIds.length)
    expect([...seenIds].sort()).toEqual([...ids].sort())
    const times = seen.map((c) => Date.parse(c.created_at))
    expect(times).toEqual([...times].sort((a, b) => b - a))
  })

  it("prev_cursor goes back to the previous page", async () => {
    const { secret } = await fiveCredentials()
    const first = await call("GET", "/credentials?limit=2", { secret })
    expect(first.body.page.prev_cursor).toBeNull()
    const second = await call("GET", `/credentials?limit=2&cursor=${encodeURIComponent(first.body.page.next_cursor)}`, { secret })
    expect(second.status, second.text).toBe(200)
    expect(second.body.page.prev_cursor).toEqual(expect.any(String))
    const back = await call("GET", `/credentials?limit=2&cursor=${encodeURIComponent(second.body.page.prev_cursor)}`, { secret })
    expect(back.status, back.text).toBe(200)
    expect(back.body.data.map((c: any) => c.id)).toEqual(first.body.data.map((c: any) => c.id))
  })

  it("an altered cursor → 400 invalid_cursor", async () => {
    const { secret } = await fiveCredentials()
    const first = await call("GET", "/credentials?limit=2", { secret })
    const cursor: string = first.body.page.next_cursor
    const last = cursor.slice(-1)
    const altered = cursor.slice(0, -1) + (last === "A" ? "B" : "A")
    expectError(await call("GET", `/credentials?limit=2&cursor=${encodeURIComponent(altered)}`, { secret }), 400, "invalid_cursor")
    const payloadAltered = (cursor[0] === "e" ? "f" : "e") + cursor.slice(1)
    expectError(
      await call("GET", `/credentials?limit=2&cursor=${encodeURIComponent(payloadAltered)}`, { secret }),
      400,
      "invalid_cursor"
    )
    expectError(await call("GET", "/credentials?limit=2&cursor=garbage", { secret }), 400, "invalid_cursor")
  })

  it("a cursor used with a different sort or filter → 400 invalid_cursor", async () => {
    const { secret } = await fiveCredentials()
    const first = await call("GET", "/credentials?limit=2", { secret })
    const cursor = encodeURIComponent(first.body.page.next_cursor)
    expect((await call("GET", `/credentials?limit=2&cursor=${cursor}`, { secret })).status).toBe(200)
    expectError(await call("GET", `/credentials?limit=2&sort=created_at&cursor=${cursor}`, { secret }), 400, "invalid_cursor")
    expectError(await call("GET", `/credentials?limit=2&status=active&cursor=${cursor}`, { secret }), 400, "invalid_cursor")
  })

  // ---------------------------------------------------------------------------------------
  // Update (§2.1, §3, §4.1 If-Match)

  it("PATCH name → 200 with a new revision and ETag W/\"credential:<id>:<revision>\"", async () => {
    const { id, res: created } = await issue()
    const read = await asLive("GET", `/credentials/${id}`)
    expect(read.headers.get("etag")).toBe(etagOf(id, read.body.data.revision))
    const res = await asLive("PATCH", `/credentials/${id}`, { json: { name: "Renamed" } })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.name).toBe("Renamed")
    expect(res.body.data.revision).toBeGreaterThan(created.body.data.revision)
    expect(res.headers.get("etag")).toBe(etagOf(id, res.body.data.revision))
    expect((await asLive("GET", `/credentials/${id}`)).body.data.name).toBe("Renamed")
  })

  it("If-Match with an old ETag → 412 revision_mismatch, nothing saved; the current ETag applies", async () => {
    const { id } = await issue()
    const old = (await asLive("GET", `/credentials/${id}`)).headers.get("etag")!
    const renamed = await asLive("PATCH", `/credentials/${id}`, { json: { name: "first" } })
    expect(renamed.status).toBe(200)
    const stale = await asLive("PATCH", `/credentials/${id}`, { json: { name: "second" }, headers: { "if-match": old } })
    expectError(stale, 412, "revision_mismatch")
    const after = await asLive("GET", `/credentials/${id}`)
    expect(after.body.data.name).toBe("first")
    expect(after.body.data.revision).toBe(renamed.body.data.revision)
    const current = await asLive("PATCH", `/credentials/${id}`, {
      json: { name: "third" },
      headers: { "if-match": renamed.headers.get("etag")! }
    })
    expect(current.status, current.text).toBe(200)
    expect(current.body.data.name).toBe("third")
  })

  it("If-Match: * applies to the current revision", async () => {
    const { id } = await issue()
    const res = await asLive("PATCH", `/credentials/${id}`, { json: { name: "star" }, headers: { "if-match": "*" } })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.name).toBe("star")
  })

  it("a malformed If-Match → 400 if_match_invalid, nothing saved", async () => {
    const { id, res: created } = await issue()
    const res = await asLive("PATCH", `/credentials/${id}`, { json: { name: "bad" }, headers: { "if-match": "revision-1" } })
    expectError(res, 400, "if_match_invalid")
    expect((await asLive("GET", `/credentials/${id}`)).body.data.name).toBe(created.body.data.name)
  })

  it("status suspended → its secret gets 401 credential_suspended; back to active works again", async () => {
    const { id, secret } = await issue()
    const suspended = await asLive("PATCH", `/credentials/${id}`, { json: { status: "suspended" } })
    expect(suspended.status, suspended.text).toBe(200)
    expect(suspended.body.data.status).toBe("suspended")
    expectError(await currentWith(secret), 401, "credential_suspended")
    const active = await asLive("PATCH", `/credentials/${id}`, { json: { status: "active" } })
    expect(active.status, active.text).toBe(200)
    expect(active.body.data.status).toBe("active")
    expect((await currentWith(secret)).status).toBe(200)
  })

  it("status inactive is the deprecated alias of suspended (§3)", async () => {
    const { id, secret } = await issue()
    const res = await asLive("PATCH", `/credentials/${id}`, { json: { status: "inactive" } })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.status).toBe("suspended")
    expectError(await currentWith(secret), 401, "credential_suspended")
  })

  it("status revoked through PATCH → 422 invalid_transition, the credential stays active", async () => {
    const { id, secret } = await issue()
    const res = await asLive("PATCH", `/credentials/${id}`, { json: { status: "revoked" } })
    expectError(res, 422, "invalid_transition", { field: "status", reason: "use_revocations" })
    // Expiry is set by expires_at, not by a status.
    expectError(await asLive("PATCH", `/credentials/${id}`, { json: { status: "expired" } }), 422, "invalid_transition", { field: "status", reason: "set_expires_at" })
    expect((await asLive("GET", `/credentials/${id}`)).body.data.status).toBe("active")
    expect((await currentWith(secret)).status).toBe(200)
  })

  it("expires_at in the past → 422 on expires_at, nothing saved", async () => {
    const { id } = await issue()
    const res = await asLive("PATCH", `/credentials/${id}`, { json: { expires_at: "2001-01-01T00:00:00Z" } })
    expectError(res, 422, "validation_failed", { field: "expires_at", reason: "must_be_in_the_future" })
    expect((await asLive("GET", `/credentials/${id}`)).body.data.expires_at).toBeNull()
    const onCreate = await asLive("POST", "/credentials", { json: { name: "past", expires_at: "2001-01-01T00:00:00+02:00" } })
    expectError(onCreate, 422, "validation_failed", { field: "expires_at" })
  })

  it("changing policies bumps policy.active_version and auth_revision, and takes effect at once", async () => {
    const { id, secret, res: created } = await issue({ policies: [{ capabilities: ["credentials.read"] }] })
    expect((await call("GET", "/credentials", { secret })).status).toBe(200)
    const before = created.body.data.policy
    const res = await asLive("PATCH", `/credentials/${id}`, { json: { policies: [{ capabilities: ["events.read"] }] } })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.policy.active_version).toBe(before.active_version + 1)
    expect(res.body.data.policy.auth_revision).toBeGreaterThan(before.auth_revision)
    expectError(await call("GET", "/credentials", { secret }), 403, "permission_denied")
  })

  // ---------------------------------------------------------------------------------------
  // Revoke (§3, §5.4, §7)

  it("revoke → 200 with status revoked, revoked_at and revoked_by", async () => {
    const { id } = await issue()
    const res = await asLive("POST", `/credentials/${id}/revocations`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.id).toBe(id)
    expect(res.body.data.status).toBe("revoked")
    expect(res.body.data.revoked_at).toMatch(timestampPattern)
    expect(res.body.data.revoked_by).toEqual({ id: expect.any(String), kind: expect.any(String) })
    expect((await asLive("GET", `/credentials/${id}`)).body.data.status).toBe("revoked")
  })

  it("a revoked credential's secret gets 401 credential_revoked", async () => {
    const { id, secret } = await issue()
    expect((await asLive("POST", `/credentials/${id}/revocations`)).status).toBe(200)
    expectError(await currentWith(secret), 401, "credential_revoked")
  })

  it("managing a revoked credential → 422 credential_revoked (revoke again, PATCH, rotate)", async () => {
    const { id } = await issue()
    const revoked = await asLive("POST", `/credentials/${id}/revocations`)
    expect(revoked.status).toBe(200)
    const answers = [
      await asLive("POST", `/credentials/${id}/revocations`),
      await asLive("PATCH", `/credentials/${id}`, { json: { name: "zombie" } }),
      await asLive("PATCH", `/credentials/${id}`, { json: { status: "active" } }),
      await asLive("POST", `/credentials/${id}/secret-rotations`, { json: {} })
    ]
    expect(answers.map((r) => [r.status, r.body?.error?.code])).toEqual(
      Array.from({ length: 4 }, () => [422, "credential_revoked"])
    )
    const after = await asLive("GET", `/credentials/${id}`)
    expect(after.body.data.status).toBe("revoked")
    expect(after.body.data.name).toBe(revoked.body.data.name)
    expect(after.body.data.revision).toBe(revoked.body.data.revision)
  })

  // ---------------------------------------------------------------------------------------
  // Secret rotation

  it("rotation returns the new secret once (version 2, rotated_at); it works, the old one is 401 at once", async () => {
    const { id, secret: old } = await issue()
    const res = await asLive("POST", `/credentials/${id}/secret-rotations`, { json: {} })
    expect(res.status, res.text).toBe(200)
    const s = res.body.data.secret
    expect(s.value).toMatch(/^ck_live_/)
    expect(s.value).not.toBe(old)
    expect(s.version).toBe(2)
    expect(s.rotated_at).toMatch(timestampPattern)
    expect(s.last4).toBe(s.value.slice(-4))
    const now = await currentWith(s.value)
    expect(now.status, now.text).toBe(200)
    expect(now.body.data.id).toBe(id)
    expectError(await currentWith(old), 401, "unauthenticated")
    const read = await asLive("GET", `/credentials/${id}`)
    expect(read.body.data.secret).not.toHaveProperty("value")
    expect(read.text).not.toContain(s.value)
    expect(read.body.data.secret.version).toBe(2)
  })

  it("replaying a rotation with the same key → 409 secret_not_replayable, no second rotation", async () => {
    const { id } = await issue()
    const key = freshKey()
    const first = await asLive("POST", `/credentials/${id}/secret-rotations`, { json: {}, idempotencyKey: key })
    expect(first.status, first.text).toBe(200)
    const again = await asLive("POST", `/credentials/${id}/secret-rotations`, { json: {}, idempotencyKey: key })
    expectError(again, 409, "secret_not_replayable")
    expect(again.text).not.toContain(first.body.data.secret.value)
    expect((await currentWith(first.body.data.secret.value)).status).toBe(200)
    expect((await asLive("GET", `/credentials/${id}`)).body.data.secret.version).toBe(2)
  })

  // ---------------------------------------------------------------------------------------
  // Removal (open-points "Credentials")

  it("a never-used credential is removed: 204, then 404", async () => {
    const { id } = await issue()
    const res = await asLive("DELETE", `/credentials/${id}`)
    expect(res.status, res.text).toBe(204)
    expect(res.text).toBe("")
    expectError(await asLive("GET", `/credentials/${id}`), 404, "not_found")
    expect((await listAll("/credentials")).map((c) => c.id)).not.toContain(id)
  })

  it("a credential that made a call → 422 credential_not_removable, and it stays", async () => {
    const { id, secret } = await issue()
    expect((await currentWith(secret)).status).toBe(200)
    expectError(await asLive("DELETE", `/credentials/${id}`), 422, "credential_not_removable")
    expect((await asLive("GET", `/credentials/${id}`)).status).toBe(200)
    expect((await currentWith(secret)).status).toBe(200)
  })

  // ---------------------------------------------------------------------------------------
  // Administrator links (§5.2, §5.4)

  it("the demo credential lists the demo administrator", async () => {
    const res = await asLive("GET", `/credentials/${liveId()}/administrators`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.map((a: any) => a.id)).toContain(adminId())
    expect(res.body.page.next_cursor).toBeNull()
  })

  it("linking an administrator of another account → 422 on administrator_id", async () => {
    const other = await h().openAccount(freshSubdomain("admins"))
    const { id } = await issue({ auth_mode: "both" })
    const res = await asLive("POST", `/credentials/${id}/administrators`, { json: { administrator_id: other.administrator.id } })
    expectError(res, 422, "validation_failed", { field: "administrator_id" })
    expect((await asLive("GET", `/credentials/${id}/administrators`)).body.data).toEqual([])
  })

  it("linking the same administrator twice → 409 already_exists", async () => {
    const { id } = await issue({ auth_mode: "both" })
    const first = await asLive("POST", `/credentials/${id}/administrators`, { json: { administrator_id: adminId() } })
    expect(first.status, first.text).toBe(201)
    expect(first.headers.get("location")).toEqual(expect.any(String))
    const again = await asLive("POST", `/credentials/${id}/administrators`, { json: { administrator_id: adminId() } })
    expectError(again, 409, "already_exists")
    const list = await asLive("GET", `/credentials/${id}/administrators`)
    expect(list.body.data.map((a: any) => a.id)).toEqual([adminId()])
  })

  it("removing a link → 204, then the list is without it", async () => {
    const { id } = await issue({ auth_mode: "both" })
    expect((await asLive("POST", `/credentials/${id}/administrators`, { json: { administrator_id: adminId() } })).status).toBe(201)
    const res = await asLive("DELETE", `/credentials/${id}/administrators/${adminId()}`)
    expect(res.status, res.text).toBe(204)
    const list = await asLive("GET", `/credentials/${id}/administrators`)
    expect(list.status).toBe(200)
    expect(list.body.data.map((a: any) => a.id)).not.toContain(adminId())
  })

  // ---------------------------------------------------------------------------------------
  // Human mode: the order of checks of §5.3 that need no authorization server

  it("X-API-Key of an autonomous credential → 403 human_mode_not_allowed, before the token is examined", async () => {
    const { secret } = await issue({ auth_mode: "autonomous" })
    const res = await call("GET", "/credentials/current", {
      headers: { "x-api-key": secret, authorization: `Bearer ${garbageJwt}` }
    })
    expectError(res, 403, "human_mode_not_allowed")
    expectError(await call("GET", "/credentials/current", { headers: { "x-api-key": secret } }), 403, "human_mode_not_allowed")
  })

  it("X-API-Key without a bearer token → 401 human_context_required, saying the access token is what is missing", async () => {
    const res = await call("GET", "/credentials/current", { headers: { "x-api-key": h().live } })
    expectError(res, 401, "human_context_required")
    expect(res.body.error.reason).toBe("access_token_missing")
    expect(res.body.error.message).toContain("Authorization: Bearer")
  })

  it("X-API-Key with a credential secret as bearer → 401 ambiguous_credentials", async () => {
    const other = await issue({ auth_mode: "both" })
    expectError(
      await call("GET", "/credentials/current", { headers: { "x-api-key": h().live }, secret: other.secret }),
      401,
      "ambiguous_credentials"
    )
    expectError(
      await call("GET", "/credentials/current", { headers: { "x-api-key": h().live }, secret: h().live }),
      401,
      "ambiguous_credentials"
    )
  })

  it("X-API-Key with an invalid JWT → 401 invalid_access_token, never autonomous", async () => {
    const res = await call("GET", "/credentials/current", {
      headers: { "x-api-key": h().live, authorization: `Bearer ${garbageJwt}` }
    })
    expectError(res, 401, "invalid_access_token")
  })

  it("a revoked credential's X-API-Key → 401 credential_revoked before Authorization is examined", async () => {
    const { id, secret } = await issue({ auth_mode: "both" })
    expect((await asLive("POST", `/credentials/${id}/revocations`)).status).toBe(200)
    expectError(
      await call("GET", "/credentials/current", { headers: { "x-api-key": secret, authorization: `Bearer ${garbageJwt}` } }),
      401,
      "credential_revoked"
    )
    expectError(await call("GET", "/credentials/current", { headers: { "x-api-key": secret } }), 401, "credential_revoked")
  })

  it("a human_required credential used with only Bearer → 401 human_context_required (§5.1)", async () => {
    const { secret, res } = await issue({ auth_mode: "human_required" })
    expect(res.body.data.auth_mode).toBe("human_required")
    const refused = await currentWith(secret)
    expectError(refused, 401, "human_context_required")
    expect(refused.body.error.reason).toBe("credential_requires_human_mode")
  })

  // ---------------------------------------------------------------------------------------
  // Account state (§5.1)

  it("a blocked account → 403 instance_blocked; unavailable → 403 instance_unavailable; active again → 200", async () => {
    const other = await h().openAccount(freshSubdomain("state"))
    const { secret } = secretOf(other, "production")
    expect((await currentWith(secret)).status).toBe(200)
    await h().setAccountStatus(other.account.id, "blocked")
    expectError(await currentWith(secret), 403, "instance_blocked")
    expectError(await call("GET", "/credentials/current", { secret: secretOf(other, "sandbox").secret }), 403, "instance_blocked")
    await h().setAccountStatus(other.account.id, "unavailable")
    expectError(await currentWith(secret), 403, "instance_unavailable")
    await h().setAccountStatus(other.account.id, "active")
    expect((await currentWith(secret)).status).toBe(200)
    // Another account is not touched.
    expect((await currentWith(h().live)).status).toBe(200)
  })

  // ---------------------------------------------------------------------------------------
  // Policy templates

  it("GET /policy-templates lists templates with object, id, name, description, capabilities", async () => {
    const res = await asLive("GET", "/policy-templates")
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.length).toBeGreaterThan(0)
    for (const t of res.body.data) {
      expect(t.object).toBe("policy_template")
      expect(typeof t.id).toBe("string")
      expect(typeof t.name).toBe("string")
      expect(typeof t.description).toBe("string")
      expect(Array.isArray(t.capabilities)).toBe(true)
      for (const c of t.capabilities) expect(typeof c).toBe("string")
    }
    const readOnly = res.body.data.find((t: any) => t.id === "read_only")
    expect(readOnly).toBeDefined()
    expect(readOnly.capabilities).toContain("credentials.read")
    expect(readOnly.capabilities).not.toContain("credentials.create")
    expect(res.body.page.next_cursor).toBeNull()
  })
})

// =======================================================================================
// Time: each test reads the server's clock from its own offset, so their order is free.

eachStore("credentials over time", (h) => {
  const { call, asLive, issue } = client(h)
  let offset = 0
  const advance = (ms: number) => {
    offset += ms
    h().advance(ms)
  }
  const serverNow = () => Date.now() + offset

  it("a cursor older than 24 hours → 400 invalid_cursor", async () => {
    await issue()
    await issue()
    const first = await asLive("GET", "/credentials?limit=1")
    const cursor = encodeURIComponent(first.body.page.next_cursor)
    expect((await asLive("GET", `/credentials?limit=1&cursor=${cursor}`)).status).toBe(200)
    advance(24 * HOUR_MS + 1000)
    expectError(await asLive("GET", `/credentials?limit=1&cursor=${cursor}`), 400, "invalid_cursor")
  })

  it("past expires_at the secret gets 401 credential_expired and the status reads expired", async () => {
    const expiresAt = new Date(serverNow() + 10 * 60_000).toISOString()
    const { id, secret, res } = await issue({ expires_at: expiresAt })
    expect(Date.parse(res.body.data.expires_at)).toBe(Date.parse(expiresAt))
    expect(res.body.data.status).toBe("active")
    expect((await call("GET", "/credentials/current", { secret })).status).toBe(200)
    advance(10 * 60_000 + 1000)
    expectError(await call("GET", "/credentials/current", { secret }), 401, "credential_expired")
    const read = await asLive("GET", `/credentials/${id}`)
    expect(read.status).toBe(200)
    expect(read.body.data.status).toBe("expired")
  })

  it("a suspended credential past its expires_at reads expired too", async () => {
    const { id } = await issue({ expires_at: new Date(serverNow() + 10 * 60_000).toISOString() })
    expect((await asLive("PATCH", `/credentials/${id}`, { json: { status: "suspended" } })).body.data.status).toBe("suspended")
    advance(10 * 60_000 + 1000)
    expect((await asLive("GET", `/credentials/${id}`)).body.data.status).toBe("expired")
  })

  it("with grace_period_seconds 0 the old secret stops at once", async () => {
    const { id, secret: old } = await issue()
    const rotated = await asLive("POST", `/credentials/${id}/secret-rotations`, { json: { grace_period_seconds: 0 } })
    expect(rotated.status, rotated.text).toBe(200)
    expectError(await call("GET", "/credentials/current", { secret: old }), 401, "unauthenticated")
    expect((await call("GET", "/credentials/current", { secret: rotated.body.data.secret.value })).status).toBe(200)
  })

  it("with grace_period_seconds 3600 the old secret works until the grace period ends", async () => {
    const { id, secret: old } = await issue()
    const rotated = await asLive("POST", `/credentials/${id}/secret-rotations`, { json: { grace_period_seconds: 3600 } })
    expect(rotated.status, rotated.text).toBe(200)
    const fresh: string = rotated.body.data.secret.value
    expect((await call("GET", "/credentials/current", { secret: old })).status).toBe(200)
    expect((await call("GET", "/credentials/current", { secret: fresh })).status).toBe(200)
    advance(3600_000 - 60_000)
    expect((await call("GET", "/credentials/current", { secret: old })).status).toBe(200)
    advance(60_000 + 1000)
    expectError(await call("GET", "/credentials/current", { secret: old }), 401, "unauthenticated")
    expect((await call("GET", "/credentials/current", { secret: fresh })).status).toBe(200)
  })
})

eachStore("credential policy versions", (h) => {
  it("every change of policies is a new version; the list shows them newest first with the active one marked", async () => {
    const created = await h().request("POST", "/api/v3/credentials", {
      secret: h().live,
      json: { name: "versioned", policies: [{ template: "read_only" }] }
    })
    const id = created.body.data.id
    const patched = await h().request("PATCH", `/api/v3/credentials/${id}`, {
      secret: h().live,
      json: { policies: [{ capabilities: ["credentials.read"], resources: [id] }] }
    })
    expect(patched.body.data.policy.active_version).toBe(2)
    const versions = await h().request("GET", `/api/v3/credentials/${id}/policy-versions`, { secret: h().live })
    expect(versions.status).toBe(200)
    expect(versions.body.data.map((v: { version: number; active: boolean }) => [v.version, v.active])).toEqual([
      [2, true],
      [1, false]
    ])
    expect(versions.body.data[1].policies).toEqual([{ capabilities: null, template: "read_only", resources: null }])
    expect(versions.body.data[0].policies).toEqual([{ capabilities: ["credentials.read"], template: null, resources: [id] }])
    expect(versions.body.page.next_cursor).toBeNull()
  })

  it("previous versions are kept 365 days; the active one always (§8.3)", async () => {
    const created = await h().request("POST", "/api/v3/credentials", {
      secret: h().live,
      json: { name: "old versions", policies: [{ template: "read_only" }] }
    })
    const id = created.body.data.id
    await h().request("PATCH", `/api/v3/credentials/${id}`, { secret: h().live, json: { policies: [{ template: "full_access" }] } })
    h().advance(366 * 24 * 3600 * 1000)
    const versions = await h().request("GET", `/api/v3/credentials/${id}/policy-versions`, { secret: h().live })
    expect(versions.body.data.map((v: { version: number }) => v.version)).toEqual([2])
  })
})
