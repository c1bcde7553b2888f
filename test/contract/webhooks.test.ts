/**
 * Webhooks as resources (§2.3 shape, §4.3 `GET /webhooks`, §6, open-points "Events and
 * webhooks"): the signing secret shown once at creation and rotation and never in a list or a
 * read, `payload_version` pinned at creation, destination URL rules per environment, the
 * `status` and `event_type` filters, permanent removal (204), and the audit of every change.
 */
import { expect, it } from "vitest"
import { eachStore, freshKey, type Harness } from "../support/harness.js"
import { expectError } from "../support/expect.js"
import { newProduct } from "../support/api.js"

const api = (h: Harness, secret = h.live) => ({
  get: (path: string) => h.request("GET", `/api/v3${path}`, { secret }),
  post: (path: string, json?: unknown, idempotencyKey?: string | null) =>
    h.request("POST", `/api/v3${path}`, { secret, json, ...(idempotencyKey !== undefined ? { idempotencyKey } : {}) }),
  patch: (path: string, json: unknown, headers: Record<string, string> = {}) => h.request("PATCH", `/api/v3${path}`, { secret, json, headers }),
  del: (path: string) => h.request("DELETE", `/api/v3${path}`, { secret })
})

const URL_OK = "https://hooks.example.com/syllabus"
const hook = (fields: Record<string, unknown> = {}) => ({ url: URL_OK, event_types: ["product.created"], ...fields })

let counter = 0
/** An event type no other test subscribes to (letters only, as event types are). */
const uniqueType = () =>
  `t${(Date.now() * 1000 + ++counter).toString(26).replace(/[0-9]/g, (d) => "qrstuvwxyz"[Number(d)]!)}.created`

/** A fresh account, for lists that must see only their own webhooks. */
const freshAccount = async (h: Harness) => {
  const opened = await h.openAccount(`whk-${Date.now()}-${++counter}`)
  return opened.credentials.find((c) => c.environment === "production")!.secret
}

const details = (res: { body: { error: { details: Array<Record<string, unknown>> } } }) =>
  res.body.error.details.map((d) => [d.field ?? d.parameter, d.code, ...(d.reason ? [d.reason] : [])])

eachStore("webhooks", (h) => {
  it("create answers 201 with Location, ETag and every field of §2.3, defaults filled in, and the secret once", async () => {
    const res = await api(h()).post("/webhooks", hook())
    expect(res.status).toBe(201)
    const webhook = res.body.data
    expect(webhook.id).toMatch(/^whk_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/webhooks/${webhook.id}`)
    expect(res.headers.get("etag")).toBe(`W/"webhook:${webhook.id}:1"`)
    expect(Object.keys(webhook)).toEqual([
      "object", "id", "description", "url", "event_types", "status", "max_per_second", "timeout_ms", "payload_version",
      "resource_filters", "health", "previous_secret_expires_at", "created_at", "updated_at", "revision", "secret"
    ])
    expect(webhook).toMatchObject({
      object: "webhook",
      description: null,
      url: URL_OK,
      event_types: ["product.created"],
      status: "active",
      max_per_second: 10,
      timeout_ms: 10000,
      payload_version: 1,
      resource_filters: { product_id: null },
      health: { consecutive_failures: 0, dead_24h: 0, delivered_24h: 0, failed_24h: 0, pending: 0, last_failure_at: null, last_success_at: null },
      previous_secret_expires_at: null,
      revision: 1
    })
    // Standard Webhooks: `whsec_` and base64 of at least 24 random bytes.
    expect(Object.keys(webhook.secret)).toEqual(["value"])
    expect(webhook.secret.value).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)
    expect(Buffer.from(webhook.secret.value.slice("whsec_".length), "base64").length).toBeGreaterThanOrEqual(24)
  })

  it("every field sent on create is kept; duplicate event types are kept once", async () => {
    const product = (await newProduct(h())).id as string
    const res = await api(h()).post("/webhooks", {
      url: URL_OK,
      description: "Orders",
      event_types: ["product.created", "product.updated", "product.created"],
      status: "inactive",
      max_per_second: 100,
      timeout_ms: 30000,
      payload_version: 1,
      resource_filters: { product_id: [product] }
    })
    expect(res.status).toBe(201)
    expect(res.body.data).toMatchObject({
      description: "Orders",
      event_types: ["product.created", "product.updated"],
      status: "inactive",
      max_per_second: 100,
      timeout_ms: 30000,
      payload_version: 1,
      resource_filters: { product_id: [product] }
    })
  })

  it("the secret is in no read, list, update, request log or audit entry; each create has its own", async () => {
    const created = await api(h()).post("/webhooks", hook())
    const { id, secret } = created.body.data
    const other = (await api(h()).post("/webhooks", hook())).body.data.secret.value
    expect(other).not.toBe(secret.value)
    const read = await api(h()).get(`/webhooks/${id}`)
    expect(read.status).toBe(200)
    expect(read.body.data).not.toHaveProperty("secret")
    const list = await api(h()).get("/webhooks?limit=200")
    expect(list.body.data.map((w: { id: string }) => w.id)).toContain(id)
    const patched = await api(h()).patch(`/webhooks/${id}`, { description: "x" })
    const log = await api(h()).get(`/requests/${created.headers.get("x-request-id")}`)
    const audit = await api(h()).get(`/audit-entries?resource_id=${id}`)
    expect(log.status).toBe(200)
    expect(audit.status).toBe(200)
    for (const res of [read, list, patched, log, audit]) {
      expect(res.text).not.toContain(secret.value)
      expect(res.text).not.toContain("whsec_")
    }
  })

  it("replaying a create with the same Idempotency-Key is 409 secret_not_replayable and creates nothing more", async () => {
    const token = await freshAccount(h())
    const key = freshKey()
    const first = await api(h(), token).post("/webhooks", hook(), key)
    expect(first.status).toBe(201)
    const replay = await api(h(), token).post("/webhooks", hook(), key)
    expect(replay.status).toBe(409)
    expect(replay.body.error.code).toBe("secret_not_replayable")
    expect(replay.text).not.toContain(first.body.data.secret.value)
    const list = await api(h(), token).get("/webhooks")
    expect(list.body.data.map((w: { id: string }) => w.id)).toEqual([first.body.data.id])
  })

  it("create and secret rotation require an Idempotency-Key (422 idempotency_key_required)", async () => {
    const create = await api(h()).post("/webhooks", hook(), null)
    expect(create.status).toBe(422)
    expect(create.body.error.code).toBe("idempotency_key_required")
    const { id } = (await api(h()).post("/webhooks", hook())).body.data
    const rotate = await api(h()).post(`/webhooks/${id}/secret-rotations`, undefined, null)
    expect(rotate.status).toBe(422)
    expect(rotate.body.error.code).toBe("idempotency_key_required")
  })

  it("url and event_types are required; event types follow `resource.verb`, a pattern with `*` for a part, or `*`, 1 to 1,000", async () => {
    const missing = await api(h()).post("/webhooks", {})
    expectError(missing, 422, "validation_failed", { field: "url", code: "required" })
    expect(details(missing).sort()).toEqual([["event_types", "required"], ["url", "required"]])
    const empty = await api(h()).post("/webhooks", hook({ event_types: [] }))
    expectError(empty, 422, "validation_failed", { field: "event_types", code: "too_short" })
    expect(details(empty)).toEqual([["event_types", "too_short"]])
    const malformed = await api(h()).post("/webhooks", hook({ event_types: ["product.created", "Product.Created", "product", "prod*.created", "user*", "*.created.x", 7] }))
    expectError(malformed, 422, "validation_failed", { field: "event_types[1]", code: "invalid_value", reason: "malformed_event_type" })
    expect(details(malformed)).toEqual([
      ["event_types[1]", "invalid_value", "malformed_event_type"],
      ["event_types[2]", "invalid_value", "malformed_event_type"],
      ["event_types[3]", "invalid_value", "malformed_event_type"],
      ["event_types[4]", "invalid_value", "malformed_event_type"],
      ["event_types[5]", "invalid_value", "malformed_event_type"],
      ["event_types[6]", "invalid_type"]
    ])
    // The message says what is accepted.
    expect(malformed.body.error.details[3].message).toMatch(/user\.\*/)
    const patterns = await api(h()).post("/webhooks", hook({ event_types: ["user.*", "*.deleted", "product.created"] }))
    expect(patterns.status).toBe(201)
    expect(patterns.body.data.event_types).toEqual(["user.*", "*.deleted", "product.created"])
    const tooMany = await api(h()).post("/webhooks", hook({ event_types: Array.from({ length: 1001 }, () => "product.created") }))
    expectError(tooMany, 422, "too_many_items", { field: "event_types", code: "too_many_items" })
    expect(details(tooMany)).toEqual([["event_types", "too_many_items"]])
    const all = await api(h()).post("/webhooks", hook({ event_types: ["*"] }))
    expect(all.status).toBe(201)
    expect(all.body.data.event_types).toEqual(["*"])
  })

  it("numbers and enums are bounded: max_per_second 1..100, timeout_ms 1000..30000, status, payload_version", async () => {
    const low = await api(h()).post("/webhooks", hook({ max_per_second: 0, timeout_ms: 999, status: "paused", payload_version: 0 }))
    expectError(low, 422, "validation_failed", { field: "status", code: "invalid_value" })
    expect(details(low)).toEqual([
      ["status", "invalid_value"],
      ["max_per_second", "out_of_range"],
      ["timeout_ms", "out_of_range"],
      ["payload_version", "out_of_range"]
    ])
    const high = await api(h()).post("/webhooks", hook({ max_per_second: 101, timeout_ms: 30001, payload_version: 2 }))
    expectError(high, 422, "validation_failed", { field: "max_per_second", code: "out_of_range" })
    expect(details(high)).toEqual([
      ["max_per_second", "out_of_range"],
      ["timeout_ms", "out_of_range"],
      ["payload_version", "out_of_range"]
    ])
    const fractional = await api(h()).post("/webhooks", hook({ max_per_second: 1.5 }))
    expectError(fractional, 422, "validation_failed", { field: "max_per_second", code: "invalid_type" })
    expect(details(fractional)).toEqual([["max_per_second", "invalid_type"]])
  })

  it("resource_filters take lists of product IDs; other keys, malformed IDs and empty lists are 422", async () => {
    const unknown = await api(h()).post("/webhooks", hook({ resource_filters: { user_id: ["usr_000000001"] } }))
    expectError(unknown, 422, "unknown_field", { field: "resource_filters.user_id", code: "unknown_field" })
    expect(details(unknown)).toEqual([["resource_filters.user_id", "unknown_field"]])
    const bad = await api(h()).post("/webhooks", hook({ resource_filters: { product_id: ["prd_000000001", "usr_000000001"] } }))
    expectError(bad, 422, "validation_failed", { field: "resource_filters.product_id[1]", code: "invalid" })
    const empty = await api(h()).post("/webhooks", hook({ resource_filters: { product_id: [] } }))
    expectError(empty, 422, "validation_failed", { field: "resource_filters.product_id", code: "too_short" })
    expect(details(empty)).toContainEqual(["resource_filters.product_id", "too_short"])
    const all = await api(h()).post("/webhooks", hook({ resource_filters: { product_id: null } }))
    expect(all.body.data.resource_filters).toEqual({ product_id: null })
    const none = await api(h()).post("/webhooks", hook({ resource_filters: {} }))
    expect(none.body.data.resource_filters).toEqual({ product_id: null })
  })

  it("production destinations must be https to a public host (422 on url with a reason)", async () => {
    const refused: Array<[string, string]> = [
      ["http://hooks.example.com/x", "https_required"],
      ["ftp://hooks.example.com/x", "unsupported_scheme"],
      ["not a url", "malformed_url"],
      ["https://localhost/x", "host_not_public"],
      ["https://api.localhost/x", "host_not_public"],
      ["https://127.0.0.1/x", "host_not_public"],
      ["https://2130706433/x", "host_not_public"],
      ["https://10.0.0.8/x", "host_not_public"],
      ["https://172.16.4.1/x", "host_not_public"],
      ["https://192.168.1.1/x", "host_not_public"],
      ["https://169.254.169.254/latest/meta-data", "host_not_public"],
      ["https://[::1]/x", "host_not_public"],
      ["https://[::ffff:127.0.0.1]/x", "host_not_public"],
      ["https://[fe80::1]/x", "host_not_public"],
      ["https://[fd00:ec2::254]/x", "host_not_public"],
      ["https://metadata.google.internal/x", "host_not_public"],
      ["https://intranet/x", "host_not_public"]
    ]
    for (const [url, reason] of refused) {
      const res = await api(h()).post("/webhooks", hook({ url }))
      expect([url, res.status, res.body.error?.code, details(res)]).toEqual([url, 422, "validation_failed", [["url", "invalid_value", reason]]])
    }
    for (const url of ["https://8.8.8.8/hook", "https://[2606:4700:4700::1111]/hook", "https://hooks.example.com:8443/a?b=c"]) {
      expect([url, (await api(h()).post("/webhooks", hook({ url }))).status]).toEqual([url, 201])
    }
  })

  it("sandbox destinations may also be http and loopback, but not private or link-local", async () => {
    for (const url of ["http://127.0.0.1:8080/hook", "http://localhost:3000/hook", "http://[::1]:9000/hook", "http://hooks.example.com/x"]) {
      const res = await api(h(), h().test).post("/webhooks", hook({ url }))
      expect([url, res.status]).toEqual([url, 201])
    }
    for (const url of ["http://10.0.0.5/hook", "http://169.254.169.254/latest", "http://[fe80::1]/x"]) {
      const res = await api(h(), h().test).post("/webhooks", hook({ url }))
      expect([url, res.status, res.body.error?.code, details(res)]).toEqual([url, 422, "validation_failed", [["url", "invalid_value", "host_not_public"]]])
      expectError(res, 422, "validation_failed", { field: "url", reason: "host_not_public" })
    }
  })

  it("PATCH changes only the fields sent, with If-Match; the revision is an integer; a new url is checked again", async () => {
    const product = (await newProduct(h())).id as string
    const created = (await api(h()).post("/webhooks", hook({ description: "First", resource_filters: { product_id: [product] } }))).body.data
    const read = await api(h()).get(`/webhooks/${created.id}`)
    expect(read.headers.get("etag")).toBe(`W/"webhook:${created.id}:1"`)
    const patched = await api(h()).patch(
      `/webhooks/${created.id}`,
      { status: "inactive", event_types: ["*", "*"], max_per_second: 5, timeout_ms: 2000, url: "https://other.example.com/in" },
      { "if-match": read.headers.get("etag")! }
    )
    expect(patched.status).toBe(200)
    expect(patched.headers.get("etag")).toBe(`W/"webhook:${created.id}:2"`)
    expect(patched.body.data).toMatchObject({
      description: "First",
      url: "https://other.example.com/in",
      event_types: ["*"],
      status: "inactive",
      max_per_second: 5,
      timeout_ms: 2000,
      payload_version: 1,
      resource_filters: { product_id: [product] },
      revision: 2
    })
    const cleared = await api(h()).patch(`/webhooks/${created.id}`, { description: null, resource_filters: {} })
    expect(cleared.body.data).toMatchObject({ description: null, resource_filters: { product_id: null }, revision: 3 })
    const stale = await api(h()).patch(`/webhooks/${created.id}`, { status: "active" }, { "if-match": `W/"webhook:${created.id}:1"` })
    expectError(stale, 412, "revision_mismatch")
    const insecure = await api(h()).patch(`/webhooks/${created.id}`, { url: "http://other.example.com/in" })
    expectError(insecure, 422, "validation_failed", { field: "url", code: "invalid_value", reason: "https_required" })
    expect(details(insecure)).toEqual([["url", "invalid_value", "https_required"]])
    expect((await api(h()).get(`/webhooks/${created.id}`)).body.data).toMatchObject({ url: "https://other.example.com/in", status: "inactive", revision: 3 })
  })

  it("payload_version is pinned at creation: PATCH with it is 422 and nothing is saved", async () => {
    const created = (await api(h()).post("/webhooks", hook())).body.data
    for (const payload_version of [1, 2]) {
      const res = await api(h()).patch(`/webhooks/${created.id}`, { payload_version, description: "changed" })
      expect(res.status).toBe(422)
      expect(res.body.error.code).toBe("validation_failed")
      expect(details(res)).toEqual([["payload_version", "not_allowed"]])
    }
    expect((await api(h()).get(`/webhooks/${created.id}`)).body.data).toMatchObject({ payload_version: 1, description: null, revision: 1 })
    // A URL that does not parse is itemized with the body's other problems (found by the fuzz suite at FUZZ_RUNS=100).
    for (const url of ["not a uri", "https://exa mple.com/"]) {
      const both = await api(h()).patch(`/webhooks/${created.id}`, { url, payload_version: 1 })
      expect(both.status).toBe(422)
      expect(details(both).sort()).toEqual([["payload_version", "not_allowed"], ["url", "invalid_value", "malformed_url"]])
    }
  })

  it("PATCH refuses what create refuses, unknown fields included", async () => {
    const created = (await api(h()).post("/webhooks", hook())).body.data
    const res = await api(h()).patch(`/webhooks/${created.id}`, { event_types: [], max_per_second: 0, health: { pending: 1 } })
    // Several kinds of problem at once: validation_failed, each itemized, the unknown field as an `unknown_field` item (§7).
    expectError(res, 422, "validation_failed", { field: "health", code: "unknown_field" })
    expect(details(res).sort()).toEqual([["event_types", "too_short"], ["health", "unknown_field"], ["max_per_second", "out_of_range"]])
  })

  it("a secret rotation shows a new secret once (200, ETag) and until when the previous one is valid; its replay is 409 secret_not_replayable", async () => {
    const created = (await api(h()).post("/webhooks", hook())).body.data
    const key = freshKey()
    const rotated = await api(h()).post(`/webhooks/${created.id}/secret-rotations`, undefined, key)
    expect(rotated.status).toBe(200)
    expect(rotated.headers.get("etag")).toBe(`W/"webhook:${created.id}:2"`)
    expect(rotated.body.data).toMatchObject({ id: created.id, url: URL_OK, revision: 2 })
    // 24 hours by default (deliveries are signed by both meanwhile: webhook-delivery.test.ts).
    const grace = Date.parse(rotated.body.data.previous_secret_expires_at) - Date.parse(rotated.body.data.updated_at)
    expect(Math.abs(grace - 24 * 3600 * 1000)).toBeLessThan(1000)
    const shorter = await api(h()).post(`/webhooks/${created.id}/secret-rotations`, { previous_secret_expires_in: 60 })
    expect(Date.parse(shorter.body.data.previous_secret_expires_at) - Date.parse(shorter.body.data.updated_at)).toBeLessThan(61_000)
    const outOfRange = await api(h()).post(`/webhooks/${created.id}/secret-rotations`, { previous_secret_expires_in: 86_401, secret: "whsec_x" })
    expectError(outOfRange, 422, "validation_failed", { field: "previous_secret_expires_in", code: "out_of_range" })
    expect(details(outOfRange).sort()).toEqual([["previous_secret_expires_in", "out_of_range"], ["secret", "unknown_field"]])
    expect(rotated.body.data.secret.value).toMatch(/^whsec_/)
    expect(rotated.body.data.secret.value).not.toBe(created.secret.value)
    const replay = await api(h()).post(`/webhooks/${created.id}/secret-rotations`, undefined, key)
    expect(replay.status).toBe(409)
    expect(replay.body.error.code).toBe("secret_not_replayable")
    const read = await api(h()).get(`/webhooks/${created.id}`)
    expect(read.body.data.revision).toBe(3)
    expect(read.body.data.previous_secret_expires_at).toBe(shorter.body.data.previous_secret_expires_at)
    expect(read.text).not.toContain("whsec_")
    expectError(await api(h()).post(`/webhooks/whk_000000001/secret-rotations`), 404, "not_found")
  })

  it("DELETE removes a webhook for good: 204, then 404 everywhere", async () => {
    const created = (await api(h()).post("/webhooks", hook())).body.data
    const removed = await api(h()).del(`/webhooks/${created.id}`)
    expect(removed.status).toBe(204)
    expect(removed.text).toBe("")
    expectError(await api(h()).get(`/webhooks/${created.id}`), 404, "not_found")
    expectError(await api(h()).patch(`/webhooks/${created.id}`, { status: "inactive" }), 404, "not_found")
    expectError(await api(h()).post(`/webhooks/${created.id}/secret-rotations`), 404, "not_found")
    expectError(await api(h()).del(`/webhooks/${created.id}`), 404, "not_found")
    expect((await api(h()).get("/webhooks?limit=200")).body.data.map((w: { id: string }) => w.id)).not.toContain(created.id)
    expectError(await api(h()).get("/webhooks?deleted=true"), 400, "unknown_parameter", { parameter: "deleted" })
  })

  it("GET /webhooks: newest first by default, sort=created_at oldest first, cursor pagination, status filter (§4.3)", async () => {
    const token = await freshAccount(h())
    const ids: Array<string> = []
    for (const status of ["active", "inactive", "active"]) {
      ids.push((await api(h(), token).post("/webhooks", hook({ status }))).body.data.id)
    }
    const listed = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((w) => w.id)
    expect(listed(await api(h(), token).get("/webhooks"))).toEqual([...ids].reverse())
    expect(listed(await api(h(), token).get("/webhooks?sort=-created_at"))).toEqual([...ids].reverse())
    const first = await api(h(), token).get("/webhooks?sort=created_at&limit=2")
    expect(listed(first)).toEqual(ids.slice(0, 2))
    const next = await api(h(), token).get(`/webhooks?sort=created_at&limit=2&cursor=${encodeURIComponent(first.body.page.next_cursor)}`)
    expect(listed(next)).toEqual(ids.slice(2))
    expect(next.body.page.next_cursor).toBeNull()
    expect(listed(await api(h(), token).get("/webhooks?status=inactive"))).toEqual([ids[1]])
    expect(listed(await api(h(), token).get("/webhooks?status=active&sort=created_at"))).toEqual([ids[0], ids[2]])
  })

  it("GET /webhooks?event_type= lists the webhooks subscribed to that type, to a pattern matching it or to `*`", async () => {
    const token = await freshAccount(h())
    const type = uniqueType()
    const create = async (event_types: ReadonlyArray<string>, status = "active") =>
      (await api(h(), token).post("/webhooks", hook({ event_types, status }))).body.data.id as string
    const exact = await create(["product.updated", type])
    const wildcard = await create(["*"], "inactive")
    await create(["product.updated"])
    // A name that merely starts or ends like the type is not a match.
    await create([`${type}x`, `x${type}`])
    const [resource, verb] = type.split(".")
    const ofResource = await create([`${resource}.*`])
    const ofVerb = await create([`*.${verb}`])
    await create([`${resource}.deleted`, `${resource}x.*`])
    const listed = async (query: string) => (await api(h(), token).get(`/webhooks?sort=created_at&${query}`)).body.data.map((w: { id: string }) => w.id)
    expect(await listed(`event_type=${type}`)).toEqual([exact, wildcard, ofResource, ofVerb])
    expect(await listed(`event_type=${type}&status=active`)).toEqual([exact, ofResource, ofVerb])
    expect(await listed(`event_type=*`)).toEqual([wildcard])
    expect(await listed(`event_type=user.deleted`)).toEqual([wildcard])
    const page = await api(h(), token).get(`/webhooks?sort=created_at&event_type=${type}&limit=1`)
    const rest = await api(h(), token).get(
      `/webhooks?sort=created_at&event_type=${type}&limit=3&cursor=${encodeURIComponent(page.body.page.next_cursor)}`
    )
    expect(rest.body.data.map((w: { id: string }) => w.id)).toEqual([wildcard, ofResource, ofVerb])
    const otherFilter = await api(h(), token).get(`/webhooks?sort=created_at&event_type=user.deleted&limit=1&cursor=${encodeURIComponent(page.body.page.next_cursor)}`)
    expect(otherFilter.status).toBe(400)
    expect(otherFilter.body.error.code).toBe("invalid_cursor")
  })

  it("list parameters are checked: bad event_type, status or sort are 422; undeclared ones 400", async () => {
    // The filter names a type: a pattern is not one.
    for (const query of ["event_type=Product.Created", "event_type=product", "event_type=product.*", "status=paused", "sort=url"]) {
      const res = await api(h()).get(`/webhooks?${query}`)
      expect([query, res.status, res.body.error.code]).toEqual([query, 422, "validation_failed"])
    }
    const unknown = await api(h()).get("/webhooks?q=hooks")
    expect(unknown.status).toBe(400)
    expect(unknown.body.error.code).toBe("unknown_parameter")
  })

  it("every change leaves its audit entry: created, updated, secret_rotated, deleted", async () => {
    const created = await api(h()).post("/webhooks", hook())
    const { id } = created.body.data
    await api(h()).patch(`/webhooks/${id}`, { status: "inactive" })
    await api(h()).post(`/webhooks/${id}/secret-rotations`)
    await api(h()).del(`/webhooks/${id}`)
    const entries = await api(h()).get(`/audit-entries?resource_id=${id}&limit=200`)
    const actions = entries.body.data.map((e: { action: string; resource_type: string }) => [e.action, e.resource_type])
    expect(actions.sort()).toEqual([
      ["webhook.created", "webhook"],
      ["webhook.deleted", "webhook"],
      ["webhook.secret_rotated", "webhook"],
      ["webhook.updated", "webhook"]
    ])
  })

  it("permissions and scope: read-only reads but cannot create or rotate; a policy limited to one webhook lists only it", async () => {
    const first = (await api(h()).post("/webhooks", hook())).body.data
    const second = (await api(h()).post("/webhooks", hook())).body.data
    const readOnly = (await api(h()).post("/credentials", { name: "ro", policies: [{ template: "read_only" }] })).body.data.secret.value
    expect((await api(h(), readOnly).get(`/webhooks/${first.id}`)).status).toBe(200)
    for (const res of [await api(h(), readOnly).post("/webhooks", hook()), await api(h(), readOnly).post(`/webhooks/${first.id}/secret-rotations`)]) {
      expect(res.status).toBe(403)
      expect(res.body.error.code).toBe("permission_denied")
    }
    const limited = (
      await api(h()).post("/credentials", { name: "one", policies: [{ capabilities: ["webhooks.read"], resources: [first.id] }] })
    ).body.data.secret.value
    expectError(await api(h(), limited).get(`/webhooks/${second.id}`), 404, "not_found")
    expect((await api(h(), limited).get("/webhooks?limit=200")).body.data.map((w: { id: string }) => w.id)).toEqual([first.id])
    expect((await api(h(), limited).get("/webhooks?event_type=product.created&limit=200")).body.data.map((w: { id: string }) => w.id)).toEqual([
      first.id
    ])
  })

  it("webhooks of one environment are invisible to the other (404)", async () => {
    const created = (await api(h()).post("/webhooks", hook())).body.data
    expectError(await api(h(), h().test).get(`/webhooks/${created.id}`), 404, "not_found")
    expectError(await api(h(), h().test).post(`/webhooks/${created.id}/secret-rotations`), 404, "not_found")
    expect((await api(h(), h().test).get("/webhooks?limit=200")).body.data.map((w: { id: string }) => w.id)).not.toContain(created.id)
  })
})
