/**
 * A credential's scope on every surface (issue 23; access/scope.ts, docs/reliability.md "One rule
 * for scope"): a credential limited to product P1 (its policies name P1) and a `read_only`
 * credential (no personal data) against an account holding P1 and P2, each with a module, a
 * learner, an enrollment and events. Routes and lists, writes that name another record (route,
 * batch, import), configuration plans and the manifest, reports, events (the collection and a
 * stream), audit entries, exported and uploaded files, operation items and webhooks: each shows
 * P1's records only and people's personal data only with `users.read_personal`.
 */
import { createHash } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { expect, it } from "vitest"
import { api, created } from "../support/api.js"
import { eventually } from "../support/eventually.js"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness, listenLocalReceiver } from "../support/harness.js"

let counter = 0
const unique = (tag: string) => `${tag}-${process.pid}-${Date.now()}-${++counter}`

type Client = ReturnType<typeof api>

/** An account of its own holding P1 and P2 (each with a module, an exam, a learner enrolled), and the credentials that look at it. */
const world = async (h: Harness) => {
  const opened = await h.openAccount(unique("scope"))
  const full = opened.credentials.find((c) => c.environment === "production")!.secret
  const admin = api(h, full)
  const showcase = await created(admin.post("/showcases", { name: "Shelf" }))
  const product = async (name: string) => {
    const p = await created(admin.post("/products", { format: "course", name, showcase_id: showcase.id, external_id: unique(name) }))
    const module = await created(admin.post(`/products/${p.id}/modules`, { name: `${name} module` }))
    const exam = await created(admin.post(`/products/${p.id}/exams`, { title: `${name} exam` }))
    return { id: p.id as string, externalId: p.external_id as string, moduleId: module.id as string, examId: exam.id as string }
  }
  const p1 = await product("P1")
  const p2 = await product("P2")
  const learner = async (name: string) =>
    (await created(admin.post("/users", { name, email: `${unique(name)}@example.com`, document: "123.456.789-00", phone: "+55 11 99999-0000" }))).id as string
  const u1 = await learner("Ana")
  const u2 = await learner("Bia")
  const e1 = (await created(admin.post("/enrollments", { user_id: u1, product_id: p1.id }))).id as string
  const e2 = (await created(admin.post("/enrollments", { user_id: u2, product_id: p2.id }))).id as string
  const issue = async (policies: ReadonlyArray<object>) => (await created(admin.post("/credentials", { name: unique("c"), policies }))).secret.value as string
  return {
    full,
    admin,
    p1,
    p2,
    u1,
    u2,
    e1,
    e2,
    issue,
    /** Reads everything of P1 (and what belongs to it), nothing else. */
    p1Reader: api(h, await issue([{ template: "read_only", resources: [p1.id] }])),
    /** Reads everything, no personal data. */
    readOnly: api(h, await issue([{ template: "read_only" }]))
  }
}

const ids = (res: { body: any }) => (res.body.data as Array<{ id: string }>).map((item) => item.id)

const settled = async (client: Client, operationId: string) =>
  eventually(async () => {
    const op = (await client.get(`/operations/${operationId}`)).body.data
    expect(["succeeded", "failed", "canceled"]).toContain(op.status)
    return op
  })

/** Upload `bytes` as a file of `purpose`, answering its ID. */
const upload = async (h: Harness, secret: string, bytes: Buffer, contentType: string, purpose = "import") => {
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const session = await h.request("POST", "/api/v3/uploads", { secret, json: { purpose, filename: "rows", size: bytes.length, content_type: contentType, sha256 } })
  if (session.status !== 201) throw new Error(session.text)
  await h.request("PUT", session.body.data.upload_urls[0].url, { secret, raw: bytes, headers: { "content-type": "application/octet-stream" } })
  const file = await h.request("POST", `/api/v3/uploads/${session.body.data.id}/completions`, { secret })
  if (file.status !== 201) throw new Error(file.text)
  return file.body.data.id as string
}

eachStore("scope of a credential on every surface", (h) => {
  it("routes and lists: a P1-limited credential reads P1, what P1 holds and what belongs to it; P2 is 404 and in no list", async () => {
    const w = await world(h())
    const reader = w.p1Reader
    expect(ids(await reader.get("/products"))).toEqual([w.p1.id])
    expect((await reader.get(`/products/${w.p1.id}`)).status).toBe(200)
    expectError(await reader.get(`/products/${w.p2.id}`), 404, "not_found")
    expect(ids(await reader.get(`/products/${w.p1.id}/modules`))).toEqual([w.p1.moduleId])
    expectError(await reader.get(`/products/${w.p2.id}/modules`), 404, "not_found")
    // Enrollments belong to their product (and their learner): P1's are reached, P2's are not.
    expect(ids(await reader.get("/enrollments"))).toEqual([w.e1])
    expect((await reader.get(`/enrollments/${w.e1}`)).status).toBe(200)
    expect((await reader.get(`/enrollments/${w.e1}/progress`)).status).toBe(200)
    expectError(await reader.get(`/enrollments/${w.e2}`), 404, "not_found")
    expectError(await reader.get(`/enrollments/${w.e2}/progress`), 404, "not_found")
    // A policy naming a learner reaches that learner's enrollments.
    const learnerReader = api(h(), await w.issue([{ capabilities: ["enrollments.read"], resources: [w.u2] }]))
    expect(ids(await learnerReader.get("/enrollments"))).toEqual([w.e2])
    expectError(await learnerReader.get(`/enrollments/${w.e1}`), 404, "not_found")
    // The read_only template reads every product.
    expect(ids(await w.readOnly.get("/products")).sort()).toEqual([w.p1.id, w.p2.id].sort())
  })

  it("writes naming a record out of reach are 422 on that field, reason not_found, by route, batch and import; nothing is written", async () => {
    const w = await world(h())
    // Writes on P1, learners readable (users are no product's: granted apart).
    const writerSecret = await w.issue([
        {
          capabilities: ["enrollments.create", "enrollments.read", "products.read", "deliveries.create", "gamification_rules.create", "operations.create", "operations.read", "imports.create", "imports.read", "files.create"],
          resources: [w.p1.id]
        },
        { capabilities: ["users.read", "webhooks.create", "events.read"] }
      ])
    const writer = api(h(), writerSecret)
    const u3 = (await created(w.admin.post("/users", { name: "Caio", email: `${unique("caio")}@example.com` }))).id as string
    expectError(await writer.post("/enrollments", { user_id: u3, product_id: w.p2.id }), 422, "validation_failed", { field: "product_id", reason: "not_found" })
    expect((await writer.post("/enrollments", { user_id: u3, product_id: w.p1.id })).status).toBe(201)
    const batch = await writer.post("/operations", { type: "enrollments.create", items: [{ key: "a", user_id: u3, product_id: w.p2.id }] })
    expectError(batch, 422, "item_invalid", { field: "items[0].product_id" })
    expectError(await writer.post("/sales/deliveries", { name: "Bundle", products: [{ product_id: w.p2.id }] }), 422, "validation_failed", {
      field: "products[0].product_id",
      reason: "not_found"
    })
    expectError(await writer.post("/gamification/rules", { name: "P2", trigger: "lesson_completed", points: 5, product_id: w.p2.id }), 422, "validation_failed", {
      field: "product_id",
      reason: "not_found"
    })
    // A rule for every product would reach P2 too: a limited credential names its product.
    expectError(await writer.post("/gamification/rules", { name: "All", trigger: "lesson_completed", points: 5 }), 422, "validation_failed", {
      field: "product_id",
      reason: "not_found"
    })
    expect((await writer.post("/gamification/rules", { name: "P1", trigger: "lesson_completed", points: 5, product_id: w.p1.id })).status).toBe(201)
    // An import row naming P2 fails on its field; the row naming P1 is written.
    const u4 = (await created(w.admin.post("/users", { name: "Duda", email: `${unique("duda")}@example.com` }))).id as string
    const csv = ["user_id,product_id", `${u4},${w.p2.id}`, `${u4},${w.p1.id}`].join("\r\n")
    const fileId = await upload(h(), writerSecret, Buffer.from(csv), "text/csv")
    const started = await writer.post("/imports", { file_id: fileId, target: "enrollments" })
    expect(started.status, started.text).toBe(202)
    const op = await settled(writer, started.body.data.operation_id)
    const items = (await writer.get(`/operations/${op.id}/items`)).body.data as Array<any>
    const byKey = new Map(items.map((item) => [item.key, item]))
    expect(byKey.get("2").status).toBe("failed")
    expect(byKey.get("2").error.details).toContainEqual(expect.objectContaining({ field: "product_id", code: "not_found" }))
    expect(byKey.get("3").status).toBe("succeeded")
    // No enrollment of P2 was made by any of it.
    expect(ids(await w.admin.get(`/enrollments?product_id[]=${w.p2.id}`))).toEqual([w.e2])
  })

  it("configuration plans: a P1-limited credential neither renames nor prunes P2, nor sees it in the manifest", async () => {
    const w = await world(h())
    // The showcases a product names are read for all (a product of a showcase out of sight is not in the manifest).
    const planner = api(h(), await w.issue([{ template: "configuration_manager", resources: [w.p1.id] }, { capabilities: ["showcases.read"] }]))
    const manifest = (await planner.get("/configuration/manifest")).body.data
    expect((manifest.products as Array<any>).map((p) => p.external_id)).toEqual([w.p1.externalId])
    // A manifest renaming P2 (by its key) and pruning every product it does not name.
    const planned = await planner.post("/configuration/plans", {
      manifest: { prune: true, products: [{ external_id: w.p2.externalId, name: "Renamed", format: "course", showcase: "Shelf" }] }
    })
    expect(planned.status, planned.text).toBe(201)
    const changes = planned.body.data.changes as Array<any>
    // P2 is out of sight: no update or delete of it is planned (its key is only a create, refused when it runs).
    expect(changes.filter((c) => c.resource_type === "product" && c.action !== "create").map((c) => c.key)).toEqual([w.p1.externalId])
    const applied = await planner.post(`/configuration/plans/${planned.body.data.id}/applications`)
    expect(applied.status, applied.text).toBe(202)
    await settled(planner, applied.body.data.id)
    const p2 = (await w.admin.get(`/products/${w.p2.id}`)).body.data
    expect(p2).toMatchObject({ name: "P2", deleted: false })
  })

  it("reports: a P1-limited credential sees P1's products, exams, lessons and activity, nothing of P2", async () => {
    const w = await world(h())
    const reader = w.p1Reader
    expect((await reader.get("/reports/products")).body.data.map((r: any) => r.product_id)).toEqual([w.p1.id])
    expect((await reader.get(`/reports/products?product_id[]=${w.p2.id}`)).body.data).toEqual([])
    expect((await reader.get("/reports/exams")).body.data.map((r: any) => r.exam_id)).toEqual([w.p1.examId])
    expect((await reader.get(`/reports/lessons?product_id=${w.p1.id}`)).status).toBe(200)
    expectError(await reader.get(`/reports/lessons?product_id=${w.p2.id}`), 422, "validation_failed", { parameter: "product_id", reason: "not_found" })
    const activity = (await reader.get("/reports/activity?limit=200")).body.data as Array<any>
    expect(activity.map((r) => r.resource_id)).toEqual([w.e1])
    // No learner is named by its policy: the users report has no row.
    expect((await reader.get("/reports/users")).body.data).toEqual([])
    // The read_only template sees both.
    expect((await w.readOnly.get("/reports/products")).body.data.map((r: any) => r.product_id).sort()).toEqual([w.p1.id, w.p2.id].sort())
  })

  it("events and audit entries: a P1-limited credential reads those of P1 and what it holds; P2's are 404 and in no page", async () => {
    const w = await world(h())
    const reader = w.p1Reader
    const p2Event = (await w.admin.get(`/events?resource_id=${w.p2.id}`)).body.data[0]
    const p1Event = (await w.admin.get(`/events?resource_id=${w.p1.id}`)).body.data[0]
    expectError(await reader.get(`/events/${p2Event.id}`), 404, "not_found")
    expect((await reader.get(`/events/${p1Event.id}`)).status).toBe(200)
    const seen = ids(await reader.get("/events?limit=200"))
    expect(seen).toContain(p1Event.id)
    expect(seen).not.toContain(p2Event.id)
    const resources = ((await reader.get("/events?limit=200")).body.data as Array<any>).map((e) => e.data.object.id)
    expect(new Set(resources)).toEqual(new Set([w.p1.id, w.p1.moduleId, w.p1.examId, w.e1]))
    const audited = ((await reader.get("/audit-entries?limit=200")).body.data as Array<any>).map((e) => e.resource_id)
    expect(new Set(audited)).toEqual(new Set([w.p1.id, w.p1.moduleId, w.p1.examId, w.e1]))
    const p2Entry = (await w.admin.get(`/audit-entries?resource_id=${w.p2.id}`)).body.data[0]
    expectError(await reader.get(`/audit-entries/${p2Entry.id}`), 404, "not_found")
  })

  it("personal data: events show a learner's email, document and phone (and a ticket's anonymous contact) only with users.read_personal", async () => {
    const w = await world(h())
    const email = `${unique("eve")}@example.com`
    const user = await created(w.admin.post("/users", { name: "Eve", email, document: "999", phone: "+1 555" }))
    await w.admin.patch(`/users/${user.id}`, { email: `new-${email}` })
    const asAdmin = (await w.admin.get(`/events?resource_id=${user.id}&sort=created_at`)).body.data as Array<any>
    expect(asAdmin[0].data.object).toMatchObject({ email, document: "999", phone: "+1 555" })
    expect(asAdmin[1].previous_attributes).toMatchObject({ email })
    const asReader = (await w.readOnly.get(`/events?resource_id=${user.id}&sort=created_at`)).body.data as Array<any>
    expect(asReader[0].data.object).toMatchObject({ name: "Eve", email: null, document: null, phone: null })
    expect(asReader[1].data.object.email).toBeNull()
    expect(asReader[1].previous_attributes.email).toBeNull()
    expect((await w.readOnly.get(`/events/${asAdmin[0].id}`)).body.data.data.object.email).toBeNull()
    // A policy showing one learner's personal data shows that learner's only.
    const one = api(h(), await w.issue([{ template: "read_only" }, { capabilities: ["users.read_personal"], resources: [user.id] }]))
    expect((await one.get(`/events/${asAdmin[0].id}`)).body.data.data.object.email).toBe(email)
    const other = (await w.admin.get(`/events?resource_id=${w.u1}`)).body.data[0]
    expect((await one.get(`/events/${other.id}`)).body.data.data.object.email).toBeNull()
    // An anonymous ticket's contact is shown only with the permission for everyone.
    const ticket = await created(
      w.admin.post("/support/tickets", { subject: "Hi", user_id: null, anonymous: { name: "Visitor", email: "visitor@example.com", whatsapp: "+55 11" }, message: { text: "Hello" } })
    )
    const ticketEvent = (await w.admin.get(`/events?resource_id=${ticket.id}&type=ticket.created`)).body.data[0]
    expect(ticketEvent.data.object.anonymous).toMatchObject({ email: "visitor@example.com" })
    for (const reader of [w.readOnly, one]) {
      const seen = (await reader.get(`/events/${ticketEvent.id}`)).body.data.data.object.anonymous
      expect(seen).toMatchObject({ name: "Visitor", email: null, whatsapp: null })
    }
  })

  it("an event stream carries only the events of what its credential reaches, personal data per its grant", async () => {
    const w = await world(h())
    const secret = await w.issue([{ capabilities: ["events.read"], resources: [w.p1.id] }])
    const stream = await created(api(h(), secret).post("/event-streams", { start: "earliest" }))
    const controller = new AbortController()
    const res = await fetch(`${h().baseUrl}/api/v3/event-streams/${stream.id}/events`, {
      headers: { authorization: `Bearer ${secret}`, accept: "text/event-stream" },
      signal: controller.signal
    })
    expect(res.status).toBe(200)
    const reader = res.body!.getReader()
    let text = ""
    try {
      await eventually(async () => {
        const { value } = await reader.read()
        text += new TextDecoder().decode(value)
        expect(text).toContain(`"id":"${w.e1}"`)
      })
    } finally {
      controller.abort()
    }
    expect(text).toContain(`"id":"${w.p1.id}"`)
    expect(text).not.toContain(w.p2.id)
    expect(text).not.toContain(w.u2)
  })

  it("files inherit the access of what made them: an export with personal data, a P1-limited export, an uploaded import", async () => {
    const w = await world(h())
    const done = async (client: Client, body: object) => {
      const started = await client.post("/exports", body)
      expect(started.status, started.text).toBe(202)
      return eventually(async () => {
        const exp = (await client.get(`/exports/${started.body.data.id}`)).body.data
        expect(exp.status).toBe("succeeded")
        return exp
      })
    }
    const personal = await done(w.admin, { resource_type: "users", format: "csv" })
    expect(personal.personal_data).toBe(true)
    expect((await w.admin.get(`/files/${personal.file_id}`)).status).toBe(200)
    const exporter = api(h(), await w.issue([{ template: "data_exporter" }]))
    const importer = api(h(), await w.issue([{ template: "data_importer" }]))
    for (const reader of [w.readOnly, exporter, importer, w.p1Reader]) {
      expectError(await reader.get(`/files/${personal.file_id}`), 404, "not_found")
      expectError(await reader.get(`/files/${personal.file_id}/content`), 404, "not_found")
    }
    // An export of P1's enrollments by a P1-limited exporter: a reader reaching P1 reads it; one reaching P2 does not.
    const p1Exporter = api(h(), await w.issue([{ capabilities: ["exports.create", "exports.read", "enrollments.read", "files.read"], resources: [w.p1.id] }]))
    const limited = await done(p1Exporter, { resource_type: "enrollments", format: "jsonl" })
    expect(limited.row_count).toBe(1)
    const rows = (await p1Exporter.get(`/files/${limited.file_id}/content`)).text.trim().split("\n").map((line) => JSON.parse(line))
    expect(rows.map((r: any) => r.id)).toEqual([w.e1])
    const p2Files = api(h(), await w.issue([{ capabilities: ["files.read", "enrollments.read"], resources: [w.p2.id] }]))
    expectError(await p2Files.get(`/files/${limited.file_id}`), 404, "not_found")
    expect((await w.readOnly.get(`/files/${limited.file_id}`)).status).toBe(200)
    // An export by an exporter reaching P1 and P2 reveals both: a reader must reach each, not one of them.
    const bothExporter = api(h(), await w.issue([{ capabilities: ["exports.create", "exports.read", "enrollments.read", "files.read"], resources: [w.p1.id, w.p2.id] }]))
    const both = await done(bothExporter, { resource_type: "enrollments", format: "jsonl" })
    expect(both.row_count).toBe(2)
    const p1Files = api(h(), await w.issue([{ capabilities: ["files.read", "enrollments.read"], resources: [w.p1.id] }]))
    expectError(await p1Files.get(`/files/${both.file_id}`), 404, "not_found")
    expectError(await p1Files.get(`/files/${both.file_id}/content`), 404, "not_found")
    expect((await p1Files.get(`/files/${limited.file_id}`)).status).toBe(200)
    const bothFiles = api(h(), await w.issue([{ capabilities: ["files.read", "enrollments.read"], resources: [w.p2.id, w.p1.id] }]))
    expect((await bothFiles.get(`/files/${both.file_id}`)).status).toBe(200)
    // An uploaded import may hold anyone's personal data: imports.read and users.read_personal read it.
    const fileId = await upload(h(), w.full, Buffer.from("name,email\r\nZe,ze@example.com"), "text/csv")
    expect((await w.admin.get(`/files/${fileId}/content`)).text).toContain("ze@example.com")
    for (const reader of [w.readOnly, importer]) expectError(await reader.get(`/files/${fileId}/content`), 404, "not_found")
  })

  it("operation items: an import's created users show personal data only to readers with users.read_personal", async () => {
    const w = await world(h())
    const email = `${unique("row")}@example.com`
    const fileId = await upload(h(), w.full, Buffer.from(`name,email\r\nRow,${email}`), "text/csv")
    const started = await w.admin.post("/imports", { file_id: fileId, target: "users" })
    expect(started.status, started.text).toBe(202)
    const op = await settled(w.admin, started.body.data.operation_id)
    const asAdmin = (await w.admin.get(`/operations/${op.id}/items`)).body.data[0]
    expect(asAdmin.result.object.email).toBe(email)
    const asReader = (await w.readOnly.get(`/operations/${op.id}/items`)).body.data[0]
    expect(asReader.result.object).toMatchObject({ name: "Row", email: null })
    // A batch's items show a record out of the reader's reach as its ID only.
    const batch = await w.admin.post("/operations", { type: "products.update", items: [{ key: "p2", id: w.p2.id, name: "P2 again" }] })
    const done = await settled(w.admin, batch.body.data.id)
    const opsReader = api(h(), await w.issue([{ capabilities: ["operations.read"] }, { capabilities: ["products.read"], resources: [w.p1.id] }]))
    const item = (await opsReader.get(`/operations/${done.id}/items`)).body.data[0]
    expect(item.result).toEqual({ id: w.p2.id, object: null })
  })

  it("webhooks deliver what their credential could read: filters it reaches, personal data only with users.read_personal", async () => {
    const w = await world(h())
    const limited = api(h(), await w.issue([{ capabilities: ["webhooks.create", "webhooks.read", "events.read", "products.read"], resources: [w.p1.id] }]))
    const hook = { url: "https://hooks.example.com/in", event_types: ["*"] }
    expectError(await limited.post("/webhooks", hook), 422, "validation_failed", { field: "resource_filters.product_id", code: "required", reason: "limited_credential" })
    expectError(await limited.post("/webhooks", { ...hook, resource_filters: { product_id: [w.p2.id] } }), 422, "validation_failed", {
      field: "resource_filters.product_id[0]",
      reason: "not_found"
    })
    expect((await limited.post("/webhooks", { ...hook, resource_filters: { product_id: [w.p1.id] } })).status).toBe(201)

    // In the sandbox, to a local receiver: a webhook set up without users.read_personal gets no email.
    const received: Array<string> = []
    const server: Server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        received.push(Buffer.concat(chunks).toString("utf8"))
        res.writeHead(200).end("ok")
      })
    })
    await listenLocalReceiver(server)
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
      const sandbox = api(h(), h().test)
      const noPersonal = api(h(), (await created(sandbox.post("/credentials", { name: unique("np"), policies: [{ capabilities: ["webhooks.create", "events.read"] }] }))).secret.value)
      const created_ = await noPersonal.post("/webhooks", { url, event_types: ["user.created"] })
      expect(created_.status, created_.text).toBe(201)
      const email = `${unique("hooked")}@example.com`
      await created(sandbox.post("/users", { name: "Hooked", email }))
      await eventually(async () => expect(received.some((body) => body.includes('"Hooked"'))).toBe(true))
      const body = JSON.parse(received.find((b) => b.includes('"Hooked"'))!)
      expect(body.data.object).toMatchObject({ name: "Hooked", email: null })
      await noPersonal.patch(`/webhooks/${created_.body.data.id}`, { status: "inactive" })
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
