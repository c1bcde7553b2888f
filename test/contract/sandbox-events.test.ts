/**
 * `POST /sandbox/events` (the route behind `syllabus trigger`): a sample event of a type of
 * the catalog, recorded as a change records one, so it is listed by `GET /events`, sent on
 * the event streams and delivered, signed, to the webhooks subscribed to it. Sandbox only:
 * from production 409 `sandbox_required` (§7); a type outside `GET /event-types` is 422 on
 * `type`.
 */
import { EventSource } from "eventsource"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"
import { expect, it } from "vitest"
import { eventually } from "../support/eventually.js"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness, listenLocalReceiver } from "../support/harness.js"
import { at, descriptionValidator } from "../support/json-schema.js"

const API = "/api/v3"

const trigger = (h: Harness, secret: string, json: unknown) => h.request("POST", `${API}/sandbox/events`, { secret, json })

/**
 * The schema of the payload (`data.object`) of an event about `resourceType`, in the served
 * description: the representation named after the type (`certificate_template` →
 * `CertificateTemplate`), else any of those whose `object` is the type (the settings groups).
 */
const payloadSchema = (doc: any, resourceType: string): object | undefined => {
  const schemas = doc.components.schemas as Record<string, any>
  const named = resourceType.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase())
  if (schemas[named] !== undefined) return at("components", "schemas", named)
  const ofType = Object.keys(schemas).filter((name) => JSON.stringify(schemas[name].properties?.object?.enum) === JSON.stringify([resourceType]))
  return ofType.length === 0 ? undefined : { anyOf: ofType.map((name) => at("components", "schemas", name)) }
}

eachStore("sandbox sample events", (h) => {
  it("from a sandbox credential: 201 with the event as recorded, of the type asked, its object carrying the type's payload keys and a fresh ID of the resource's prefix", async () => {
    const res = await trigger(h(), h().test, { type: "product.created" })
    expect(res.status, res.text).toBe(201)
    const event = res.body.data
    expect(event).toMatchObject({ object: "event", type: "product.created", environment: "sandbox", request_id: res.headers.get("x-request-id") })
    expect(event.id).toMatch(/^evt_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`${API}/events/${event.id}`)
    expect(event.data.object.object).toBe("product")
    expect(event.data.object.id).toMatch(/^prd_[0-9A-Za-z]{9}$/)
    const catalog = await h().request("GET", `${API}/event-types`, { secret: h().test })
    const entry = (catalog.body.data as Array<{ type: string; payload_keys: Array<string> }>).find((e) => e.type === "product.created")!
    expect(Object.keys(event.data.object).sort()).toEqual([...entry.payload_keys].sort())
    // It is a real event of the sandbox: the collection lists it, the same.
    const listed = await h().request("GET", `${API}/events/${event.id}`, { secret: h().test })
    expect(listed.status).toBe(200)
    expect(listed.body.data).toEqual(event)
    // The trigger is a change of the environment: the audit trail names it and the event.
    const audit = await h().request("GET", `${API}/audit-entries?action=sandbox.event_triggered&resource_id=${event.id}`, { secret: h().test })
    expect(audit.status, audit.text).toBe(200)
    expect(audit.body.data).toHaveLength(1)
    expect(audit.body.data[0]).toMatchObject({ resource_type: "event", request_id: event.request_id })
  })

  it("the sample of every type of GET /event-types matches its resource's schema in the description", async () => {
    const doc = (await h().request("GET", `${API}/openapi.json`, { secret: h().test })).body
    const check = descriptionValidator(doc)
    const catalog = (await h().request("GET", `${API}/event-types`, { secret: h().test })).body.data as Array<{ type: string; resource_type: string }>
    expect(catalog.length).toBeGreaterThan(100)
    const problems: Array<unknown> = []
    for (const { type, resource_type } of catalog) {
      const schema = payloadSchema(doc, resource_type)
      if (schema === undefined) {
        problems.push({ type, problem: `no schema in the description has object ${resource_type}` })
        continue
      }
      const res = await trigger(h(), h().test, { type })
      if (res.status !== 201) {
        problems.push({ type, status: res.status, body: res.text })
        continue
      }
      const { valid, errors } = check(schema, res.body.data.data.object)
      if (!valid) problems.push({ type, errors: errors.slice(0, 3) })
    }
    expect(problems).toEqual([])
  }, 120_000)

  it("it is not an event of production, and the sample resource does not exist", async () => {
    const res = await trigger(h(), h().test, { type: "user.created" })
    expect(res.status, res.text).toBe(201)
    const inProduction = await h().request("GET", `${API}/events/${res.body.data.id}`, { secret: h().live })
    expect(inProduction.status).toBe(404)
    const user = await h().request("GET", `${API}/users/${res.body.data.data.object.id}`, { secret: h().test })
    expect(user.status).toBe(404)
  })

  it("from a production credential: 409 sandbox_required, and no event is recorded", async () => {
    const before = await h().request("GET", `${API}/events?type=tag.created&limit=100`, { secret: h().live })
    const res = await trigger(h(), h().live, { type: "tag.created" })
    expectError(res, 409, "sandbox_required")
    const after = await h().request("GET", `${API}/events?type=tag.created&limit=100`, { secret: h().live })
    expect(after.body.data).toEqual(before.body.data)
  })

  it("a type outside the catalog of GET /event-types: 422 validation_failed on `type`, with the allowed types in the detail", async () => {
    const res = await trigger(h(), h().test, { type: "product.exploded" })
    const error = expectError(res, 422, "validation_failed", { field: "type", code: "invalid_value" })
    expect(error.details[0]!.message).toContain("product.created")
  })

  it("a missing or empty type: 422 on `type`", async () => {
    expectError(await trigger(h(), h().test, {}), 422, "validation_failed", { field: "type" })
    expectError(await trigger(h(), h().test, { type: "" }), 422, "validation_failed", { field: "type" })
  })

  it("a credential without the capability sandbox.trigger: 403 permission_denied", async () => {
    const made = await h().request("POST", `${API}/credentials`, {
      secret: h().test,
      json: { name: "no trigger", policies: [{ capabilities: ["events.read"] }] }
    })
    expect(made.status, made.text).toBe(201)
    expectError(await trigger(h(), String(made.body.data.secret.value), { type: "product.created" }), 403, "permission_denied")
  })

  it("the same Idempotency-Key replays the first answer and records no second event", async () => {
    const key = `trigger-${Date.now()}`
    const first = await h().request("POST", `${API}/sandbox/events`, { secret: h().test, json: { type: "showcase.created" }, idempotencyKey: key })
    const again = await h().request("POST", `${API}/sandbox/events`, { secret: h().test, json: { type: "showcase.created" }, idempotencyKey: key })
    expect(first.status).toBe(201)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    const listed = await h().request("GET", `${API}/events?resource_id=${first.body.data.data.object.id}`, { secret: h().test })
    expect(listed.body.data).toHaveLength(1)
  })

  it("an open event stream receives it, and a subscribed webhook gets it signed with its secret", async () => {
    // A receiver that keeps what it gets.
    const received: Array<{ headers: IncomingHttpHeaders; body: string }> = []
    const server = createServer((req, res) => {
      let body = ""
      req.on("data", (c: Buffer) => (body += c.toString("utf8")))
      req.on("end", () => {
        received.push({ headers: req.headers, body })
        res.writeHead(204).end()
      })
    })
    await listenLocalReceiver(server)
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
    const hook = await h().request("POST", `${API}/webhooks`, { secret: h().test, json: { url, event_types: ["banner.created"] } })
    expect(hook.status, hook.text).toBe(201)

    const stream = await h().request("POST", `${API}/event-streams`, {
      secret: h().test,
      json: { filters: { event_types: ["banner.created"] }, start: "now" }
    })
    expect(stream.status, stream.text).toBe(201)
    const onStream: Array<string> = []
    const source = new EventSource(`${h().baseUrl}${API}/event-streams/${stream.body.data.id}/events`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, authorization: `Bearer ${h().test}` } })
    })
    source.addEventListener("banner.created", (event) => onStream.push(event.lastEventId))
    await new Promise<void>((resolve) => (source.onopen = () => resolve()))
    try {
      const res = await trigger(h(), h().test, { type: "banner.created" })
      expect(res.status, res.text).toBe(201)
      const id = String(res.body.data.id)
      await eventually(async () => expect(onStream).toEqual([id]))
      await eventually(async () => expect(received).toHaveLength(1))
      const [delivery] = received
      const verified = new Webhook(String(hook.body.data.secret.value)).verify(delivery!.body, {
        "webhook-id": String(delivery!.headers["webhook-id"]),
        "webhook-timestamp": String(delivery!.headers["webhook-timestamp"]),
        "webhook-signature": String(delivery!.headers["webhook-signature"])
      })
      expect(verified).toMatchObject({ id, type: "banner.created" })
    } finally {
      source.close()
      await h().request("PATCH", `${API}/webhooks/${hook.body.data.id}`, { secret: h().test, json: { status: "inactive" } })
      await h().request("DELETE", `${API}/event-streams/${stream.body.data.id}`, { secret: h().test })
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
