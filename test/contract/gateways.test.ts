/**
 * Payment gateways (`/sales/gateways`, release 3.2.0): the shape, write-only credentials (never
 * in a read, an event, an audit entry or an idempotency replay), the signing secret shown once
 * and its rotations with a grace period, validation, sales switched off, the trash, filters,
 * permissions and the sandbox reset. Each test starts from an empty sandbox. The notifications
 * the secret signs: sales-events.test.ts. Decisions: docs/sales.md.
 */
import { expect, it } from "vitest"
import { eachStore, freshKey, type Harness } from "../support/harness.js"
import { api, created, credentialWith, credentialWithPolicies } from "../support/api.js"
import { expectError } from "../support/expect.js"

const fresh = async (h: Harness) => {
  expect((await api(h, h.test).post("/sandbox/resets")).status).toBeLessThan(300)
  return api(h, h.test)
}

const STRIPE_SECRET = "sk_test_51HxYzABCDEFGHIJKLMNOPQRSTUVWXYZ4242"
const STRIPE_PUBLISHABLE = "pk_test_51HxYzABCDEFGHIJKLMNOPQRSTUVWXYZ9999"

eachStore("payment gateways", (h) => {
  it("create: every field, gtw_ ID, Location and ETag, the signing secret once; credentials shown as last4 only; event gateway.created without secrets", async () => {
    const client = await fresh(h())
    const res = await client.post("/sales/gateways", { kind: "stripe", name: "Stripe", credentials: { secret_key: STRIPE_SECRET, publishable_key: STRIPE_PUBLISHABLE } })
    expect(res.status, res.text).toBe(201)
    const data = res.body.data
    expect(Object.keys(data)).toEqual([
      "object", "id", "kind", "name", "status", "credentials", "notification_path", "previous_secret_expires_at",
      "created_at", "updated_at", "deleted", "revision", "secret"
    ])
    expect(data.id).toMatch(/^gtw_[0-9A-Za-z]{9}$/)
    expect(data).toMatchObject({
      object: "gateway",
      kind: "stripe",
      name: "Stripe",
      status: "active",
      credentials: { publishable_key: { last4: "9999" }, secret_key: { last4: "4242" } },
      notification_path: `/gateways/${data.id}/notifications`,
      previous_secret_expires_at: null,
      deleted: false,
      revision: "1"
    })
    expect(data.secret.value).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/sales/gateways/${data.id}`)
    const read = await client.get(`/sales/gateways/${data.id}`)
    expect(read.status).toBe(200)
    expect(read.headers.get("etag")).toBe(`W/"gateway:${data.id}:1"`)
    const { secret: _shownOnce, ...withoutSecret } = data
    expect(read.body.data).toEqual(withoutSecret)
    // Nothing secret in a read, a list, the event or the audit trail.
    const secrets = [STRIPE_SECRET, STRIPE_PUBLISHABLE, data.secret.value]
    const list = await client.get("/sales/gateways")
    const events = await client.get(`/events?resource_id=${data.id}`)
    expect(events.body.data.map((e: any) => e.type)).toEqual(["gateway.created"])
    const audit = await client.get(`/audit-entries?resource_id=${data.id}`)
    expect(audit.status, audit.text).toBe(200)
    expect(audit.body.data.map((e: any) => e.action)).toContain("gateway.created")
    for (const text of [read.text, list.text, events.text, audit.text]) for (const secret of secrets) expect(text).not.toContain(secret)
  })

  it("the signing secret is not replayable: the same Idempotency-Key again is 409 secret_not_replayable and makes no second gateway", async () => {
    const client = await fresh(h())
    const key = freshKey()
    const first = await h().request("POST", "/api/v3/sales/gateways", { secret: h().test, json: { kind: "paypal", name: "PayPal" }, idempotencyKey: key })
    expect(first.status).toBe(201)
    const again = await h().request("POST", "/api/v3/sales/gateways", { secret: h().test, json: { kind: "paypal", name: "PayPal" }, idempotencyKey: key })
    expectError(again, 409, "secret_not_replayable")
    expect((await client.get("/sales/gateways")).body.data).toHaveLength(1)
    expectError(await client.post("/sales/gateways", { kind: "paypal", name: "x" }, { idempotencyKey: null }), 422, "idempotency_key_required")
  })

  it("validation: kind and name required, kind a closed list, a named kind takes only its own credential keys, key names and values bounded; nothing is created", async () => {
    const client = await fresh(h())
    const missing = expectError(await client.post("/sales/gateways", {}), 422, "validation_failed")
    expect(missing.details.map((d) => d.field).sort()).toEqual(["kind", "name"])
    const kind = expectError(await client.post("/sales/gateways", { kind: "bitcoin", name: "x" }), 422, "validation_failed", { field: "kind", code: "invalid_value" })
    expect(kind.details[0]!.allowed).toEqual(["stripe", "paypal", "mercado_pago", "generic"])
    expectError(await client.post("/sales/gateways", { kind: "stripe", name: "" }), 422, "validation_failed", { field: "name", code: "required" })
    expectError(await client.post("/sales/gateways", { kind: "stripe", name: "x".repeat(201) }), 422, "validation_failed", { field: "name" })
    const foreign = expectError(
      await client.post("/sales/gateways", { kind: "stripe", name: "x", credentials: { client_id: "abc", secret_key: "sk_1234" } }),
      422,
      "validation_failed",
      { field: "credentials.client_id", code: "invalid_value", reason: "not_a_key_of_kind" }
    )
    expect(foreign.details).toHaveLength(1)
    expect(foreign.details[0]!.allowed).toEqual(["secret_key", "publishable_key", "restricted_key"])
    expectError(await client.post("/sales/gateways", { kind: "generic", name: "x", credentials: { "Bad-Key": "v" } }), 422, "validation_failed", { field: "credentials" })
    expectError(await client.post("/sales/gateways", { kind: "generic", name: "x", credentials: { api_key: "" } }), 422, "validation_failed", { field: "credentials.api_key" })
    expectError(await client.post("/sales/gateways", { kind: "generic", name: "x", credentials: { api_key: "v".repeat(4097) } }), 422, "validation_failed", { field: "credentials.api_key" })
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`key_${i}`, "value"]))
    // §8.2: more keys than allowed is its own code.
    expectError(await client.post("/sales/gateways", { kind: "generic", name: "x", credentials: many }), 422, "too_many_items", { field: "credentials" })
    expectError(await client.post("/sales/gateways", { kind: "generic", name: "x", secret: "whsec_mine" }), 422, "unknown_field", { field: "secret" })
    expectError(await client.post("/sales/gateways", { kind: "generic", name: "x", status: "paused" }), 422, "validation_failed", { field: "status" })
    expect((await client.get("/sales/gateways")).body.data).toEqual([])
  })

  it("PATCH: credentials merge (a string sets, null removes, others stay), last4 follows, kind is fixed; If-Match; gateway.updated holds no value", async () => {
    const client = await fresh(h())
    const g = await created(client.post("/sales/gateways", { kind: "mercado_pago", name: "MP", credentials: { access_token: "APP_USR-old-1111", public_key: "APP_USR-pub-2222" } }))
    const res = await client.patch(`/sales/gateways/${g.id}`, { name: "Mercado Pago", credentials: { access_token: "APP_USR-new-3333", public_key: null } })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toMatchObject({ name: "Mercado Pago", credentials: { access_token: { last4: "3333" } }, revision: "2" })
    expect(Object.keys(res.body.data.credentials)).toEqual(["access_token"])
    expect(res.body.data.secret).toBeUndefined()
    const keep = await client.patch(`/sales/gateways/${g.id}`, { status: "disabled" })
    expect(keep.body.data).toMatchObject({ status: "disabled", credentials: { access_token: { last4: "3333" } } })
    expectError(await client.patch(`/sales/gateways/${g.id}`, { kind: "stripe" }), 422, "validation_failed", { field: "kind", code: "not_allowed" })
    expectError(await client.patch(`/sales/gateways/${g.id}`, { credentials: { secret_key: "sk" } }), 422, "validation_failed", { field: "credentials.secret_key", reason: "not_a_key_of_kind" })
    expectError(await client.patch(`/sales/gateways/${g.id}`, { name: "x" }, { "if-match": `W/"gateway:${g.id}:1"` }), 412, "revision_mismatch")
    const events = await client.get(`/events?resource_id=${g.id}&type=gateway.updated`)
    expect(events.body.data).toHaveLength(2)
    for (const secret of ["APP_USR-old-1111", "APP_USR-new-3333", "APP_USR-pub-2222", g.secret.value]) expect(events.text).not.toContain(secret)
    expect(events.body.data[1].previous_attributes.credentials).toEqual({ access_token: { last4: "1111" }, public_key: { last4: "2222" } })
  })

  it("secret rotation: a new secret once, the previous one valid for 24 hours by default, or ended at once with 0; gateway.secret_rotated; not replayable", async () => {
    const client = await fresh(h())
    const g = await created(client.post("/sales/gateways", { kind: "generic", name: "Gateway" }))
    const key = freshKey()
    const rotated = await h().request("POST", `/api/v3/sales/gateways/${g.id}/secret-rotations`, { secret: h().test, idempotencyKey: key })
    expect(rotated.status, rotated.text).toBe(200)
    expect(rotated.body.data.secret.value).toMatch(/^whsec_/)
    expect(rotated.body.data.secret.value).not.toBe(g.secret.value)
    const expires = Date.parse(rotated.body.data.previous_secret_expires_at)
    expect(Math.abs(expires - (Date.parse(rotated.body.data.updated_at) + 86_400_000))).toBeLessThan(2000)
    expectError(
      await h().request("POST", `/api/v3/sales/gateways/${g.id}/secret-rotations`, { secret: h().test, idempotencyKey: key }),
      409,
      "secret_not_replayable"
    )
    const now = await client.post(`/sales/gateways/${g.id}/secret-rotations`, { previous_secret_expires_in: 0 })
    expect(now.status).toBe(200)
    expect(now.body.data.previous_secret_expires_at).toBeNull()
    expectError(await client.post(`/sales/gateways/${g.id}/secret-rotations`, { previous_secret_expires_in: 86_401 }), 422, "validation_failed", { field: "previous_secret_expires_in" })
    expectError(await client.post("/sales/gateways/gtw_000000001/secret-rotations"), 404, "not_found")
    const events = await client.get(`/events?resource_id=${g.id}&type=gateway.secret_rotated`)
    expect(events.body.data).toHaveLength(2)
    for (const secret of [g.secret.value, rotated.body.data.secret.value, now.body.data.secret.value]) expect(events.text).not.toContain(secret)
  })

  it("sales switched off: creating and changing a gateway are 409 feature_disabled (sales_disabled); reads, rotation, the trash and a bare restore go on", async () => {
    const client = await fresh(h())
    const g = await created(client.post("/sales/gateways", { kind: "generic", name: "Gateway" }))
    expect((await client.patch("/settings/sales", { enabled: false })).status).toBe(200)
    try {
      expectError(await client.post("/sales/gateways", { kind: "generic", name: "Another" }), 409, "feature_disabled", { reason: "sales_disabled" })
      expectError(await client.patch(`/sales/gateways/${g.id}`, { name: "Renamed" }), 409, "feature_disabled", { reason: "sales_disabled" })
      expect((await client.get(`/sales/gateways/${g.id}`)).body.data.name).toBe("Gateway")
      expect((await client.post(`/sales/gateways/${g.id}/secret-rotations`)).status).toBe(200)
      expect((await client.del(`/sales/gateways/${g.id}`)).status).toBe(200)
      expect((await client.get("/sales/gateways?deleted=true")).body.data).toHaveLength(1)
      expectError(await client.patch(`/sales/gateways/${g.id}`, { deleted: false, name: "Renamed" }), 409, "feature_disabled", { reason: "sales_disabled" })
      expect((await client.patch(`/sales/gateways/${g.id}`, { deleted: false })).status).toBe(200)
    } finally {
      await client.patch("/settings/sales", { enabled: true })
    }
  })

  it("list: newest first, sort by name, status and kind filters, q; the trash and a restore with its secret", async () => {
    const client = await fresh(h())
    const a = await created(client.post("/sales/gateways", { kind: "stripe", name: "Alpha" }))
    const b = await created(client.post("/sales/gateways", { kind: "paypal", name: "Beta", status: "disabled" }))
    const c = await created(client.post("/sales/gateways", { kind: "generic", name: "Gamma" }))
    const ids = (res: { body: any }) => res.body.data.map((g: any) => g.id)
    expect(ids(await client.get("/sales/gateways"))).toEqual([c.id, b.id, a.id])
    expect(ids(await client.get("/sales/gateways?sort=name"))).toEqual([a.id, b.id, c.id])
    expect(ids(await client.get("/sales/gateways?status=disabled"))).toEqual([b.id])
    expect(ids(await client.get("/sales/gateways?kind=stripe"))).toEqual([a.id])
    expect(ids(await client.get("/sales/gateways?q=GAM"))).toEqual([c.id])
    expectError(await client.get("/sales/gateways?kind=bitcoin"), 422, "validation_failed", { parameter: "kind" })
    const trashed = await client.del(`/sales/gateways/${a.id}`)
    expect(trashed.body.data.deleted).toBe(true)
    expectError(await client.get(`/sales/gateways/${a.id}`), 404, "not_found")
    expect(ids(await client.get("/sales/gateways?deleted=true"))).toEqual([a.id])
    const restored = await client.patch(`/sales/gateways/${a.id}`, { deleted: false })
    expect(restored.status).toBe(200)
    expect((await client.get(`/events?resource_id=${a.id}`)).body.data.map((e: any) => e.type).sort()).toEqual(["gateway.created", "gateway.restored", "gateway.trashed"])
  })

  it("permissions: gateways.read reads without writing; the sales_manager template writes; a sandbox reset empties the gateways", async () => {
    const client = await fresh(h())
    const g = await created(client.post("/sales/gateways", { kind: "generic", name: "Gateway" }))
    const reader = await credentialWith(h(), ["gateways.read"])
    expect((await api(h(), reader).get("/sales/gateways")).status).toBe(200)
    expectError(await api(h(), reader).post("/sales/gateways", { kind: "generic", name: "x" }), 403, "permission_denied")
    expectError(await api(h(), reader).post(`/sales/gateways/gtw_000000001/secret-rotations`), 403, "permission_denied")
    expectError(await api(h(), reader).patch("/sales/gateways/gtw_000000001", { name: "x" }), 403, "permission_denied")
    const manager = await credentialWithPolicies(h(), [{ template: "sales_manager" }])
    expect((await api(h(), manager).post("/sales/gateways", { kind: "generic", name: "By manager" })).status).toBe(201)
    expect((await client.post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await client.get(`/sales/gateways/${g.id}`), 404, "not_found")
  })
})
