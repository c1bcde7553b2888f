/**
 * The defects of issue 12 ("Defects found along the way"), over HTTP on both stores: one
 * `sort` rule for every collection (§4.2), error messages that name the actual problem (the
 * media type an upload part takes, a referenced record that does not exist, the form of a
 * public ID, the allowed values of an enum or a sort), `Content-Language` on localized
 * answers, HEAD on every GET route, and a product's `revision` and `updated_at` moving together.
 * The standalone server's own defects are in `defects-server.test.ts`.
 */
import { createHash } from "node:crypto"
import { connect } from "node:net"
import { operations } from "@syllabus/http"
import { SchemaAST } from "effect"
import { Webhook } from "standardwebhooks"
import { expect, it } from "vitest"
import { eachStore, type Harness, type RequestOptions } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const P = "/api/v3"
let counter = 0
const unique = (label: string) => `${label}-${Date.now()}-${++counter}`

const client = (h: () => Harness) => {
  const call = (method: string, path: string, options: RequestOptions = {}) => h().request(method, P + path, { secret: h().live, ...options })
  const created = async (path: string, json: unknown, secret = h().live) => {
    const res = await call("POST", path, { json, secret })
    expect(res.status, `${path}: ${res.text}`).toBeLessThan(300)
    return res.body.data as { id: string } & Record<string, any>
  }
  return { call, created }
}

// ---------------------------------------------------------------------------------------
// The operations, as the server declares them

/** The literal values of a schema (a union of literals, maybe optional), flattened. */
const literalsOf = (ast: SchemaAST.AST): Array<string> =>
  SchemaAST.isUnion(ast) ? ast.types.flatMap(literalsOf) : SchemaAST.isLiteral(ast) ? [String(ast.literal)] : []

/** The `sort` values a GET operation declares. */
const sortValuesOf = (operation: (typeof operations)[number]): Array<string> => {
  const ast = operation.query?.ast
  if (ast === undefined || !SchemaAST.isTypeLiteral(ast)) return []
  const sort = ast.propertySignatures.find((p) => p.name === "sort")
  return sort ? literalsOf(sort.type) : []
}

const sortedByCreation = operations.filter((op) => op.method === "GET" && sortValuesOf(op).includes("created_at"))

eachStore("issue 12: one sort rule for every collection", (h) => {
  const { call, created } = client(h)

  /**
   * Each collection sortable by `created_at`, with at least two items: how to fill it, and the
   * path (parents resolved) and secret to list it with.
   */
  const seeds: Record<string, () => Promise<{ readonly path: string; readonly secret?: string }>> = {
    "credentials.list": async () => {
      await created("/credentials", { name: unique("c") })
      return { path: "/credentials" }
    },
    "showcases.list": async () => {
      await created("/showcases", { name: unique("s1") })
      await created("/showcases", { name: unique("s2") })
      return { path: "/showcases" }
    },
    "products.list": async () => {
      const shelf = await created("/showcases", { name: unique("shelf") })
      await created("/products", { format: "course", name: unique("p1"), showcase_id: shelf.id })
      await created("/products", { format: "course", name: unique("p2"), showcase_id: shelf.id })
      return { path: "/products" }
    },
    "modules.list": async () => {
      const product = await productWith()
      return { path: `/products/${product}/modules` }
    },
    "lessons.list": async () => {
      const product = await productWith()
      const modules = (await call("GET", `/products/${product}/modules`)).body.data
      await created(`/products/${product}/lessons`, { name: "L1", module_id: modules[0].id })
      await created(`/products/${product}/lessons`, { name: "L2", module_id: modules[0].id })
      return { path: `/products/${product}/lessons` }
    },
    "taxonomies.list": async () => {
      const product = await productWith()
      await created(`/products/${product}/taxonomies`, { name: "Level", plural_name: "Levels" })
      await created(`/products/${product}/taxonomies`, { name: "Topic", plural_name: "Topics" })
      return { path: `/products/${product}/taxonomies` }
    },
    "taxonomy_terms.list": async () => {
      const product = await productWith()
      const taxonomy = await created(`/products/${product}/taxonomies`, { name: "Kind", plural_name: "Kinds" })
      await created(`/products/${product}/taxonomies/${taxonomy.id}/terms`, { name: "A" })
      await created(`/products/${product}/taxonomies/${taxonomy.id}/terms`, { name: "B" })
      return { path: `/products/${product}/taxonomies/${taxonomy.id}/terms` }
    },
    "custom_fields.list": async () => {
      await created("/custom-fields", { key: unique("f1").replaceAll("-", "_"), label: "F1", type: "text" })
      await created("/custom-fields", { key: unique("f2").replaceAll("-", "_"), label: "F2", type: "text" })
      return { path: "/custom-fields" }
    },
    "banners.list": async () => {
      await created("/banners", { name: unique("b1") })
      await created("/banners", { name: unique("b2") })
      return { path: "/banners" }
    },
    "navigation.list": async () => {
      await created("/navigation", { label: "One", url: "/one" })
      await created("/navigation", { label: "Two", url: "/two" })
      return { path: "/navigation" }
    },
    "users.list": async () => {
      await created("/users", { name: "U1", email: `${unique("u1")}@example.com` })
      await created("/users", { name: "U2", email: `${unique("u2")}@example.com` })
      return { path: "/users" }
    },
    "tags.list": async () => {
      await created("/tags", { name: unique("t1") })
      await created("/tags", { name: unique("t2") })
      return { path: "/tags" }
    },
    "administrators.list": async () => {
      await created("/administrators", { email: `${unique("a")}@example.com`, name: "Grace", password: "a long passphrase" })
      return { path: "/administrators" }
    },
    "webhooks.list": async () => {
      await created("/webhooks", { url: "https://example.com/one", event_types: ["tag.created"] })
      await created("/webhooks", { url: "https://example.com/two", event_types: ["tag.created"] })
      return { path: "/webhooks" }
    },
    "webhooks.deliveries.list": async () => {
      // In the sandbox a local receiver is allowed; nobody listens on port 9, which is fine: a delivery is recorded either way.
      const hook = await created("/webhooks", { url: "http://127.0.0.1:9/hook", event_types: ["tag.created"] }, h().test)
      await created("/tags", { name: unique("d1") }, h().test)
      await created("/tags", { name: unique("d2") }, h().test)
      // Deliveries are recorded by the fan-out worker, shortly after the events.
      const path = `/webhooks/${hook.id}/deliveries`
      for (let i = 0; i < 100; i++) {
        if ((await call("GET", path, { secret: h().test })).body.data.length >= 2) break
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      return { path, secret: h().test }
    },
    "operations.list": async () => {
      for (const key of ["a", "b"]) {
        const res = await call("POST", "/operations", { json: { type: "tags.create", items: [{ key, name: unique(`op-${key}`) }] } })
        expect(res.status, res.text).toBe(202)
      }
      return { path: "/operations" }
    },
    "enrollments.list": async () => {
      const product = await productWith()
      for (const n of [1, 2]) {
        const user = await created("/users", { name: `E${n}`, email: `${unique(`e${n}`)}@example.com` })
        await created("/enrollments", { user_id: user.id, product_id: product })
      }
      return { path: "/enrollments" }
    },
    "release_rules.list": async () => {
      const product = await productWith()
      for (const module of (await call("GET", `/products/${product}/modules`)).body.data) {
        await created(`/products/${product}/release-rules`, { target: { kind: "module", id: module.id }, kind: "after_enrollment", days: 7 })
      }
      return { path: `/products/${product}/release-rules` }
    },
    "exams.list": async () => {
      const product = await productWith()
      await created(`/products/${product}/exams`, { title: "One" })
      await created(`/products/${product}/exams`, { title: "Two" })
      return { path: `/products/${product}/exams` }
    },
    "exam_questions.list": async () => {
      const { examPath } = await examWithQuestions()
      return { path: `${examPath}/questions` }
    },
    "exam_attempts.list": async () => {
      const { product, examPath, question } = await examWithQuestions()
      const user = await created("/users", { name: "Taker", email: `${unique("taker")}@example.com` })
      await created("/enrollments", { user_id: user.id, product_id: product })
      for (const alternative of question.alternatives) {
        await created(`${examPath}/attempts`, { user_id: user.id, answers: [{ exam_question_id: question.id, alternative_ids: [alternative.id] }] })
      }
      return { path: `${examPath}/attempts` }
    },
    "gamification_rules.list": async () => {
      await created("/gamification/rules", { name: unique("g1"), trigger: "lesson_completed", points: 1 })
      await created("/gamification/rules", { name: unique("g2"), trigger: "exam_passed", points: 2 })
      return { path: "/gamification/rules" }
    },
    "points.entries.list": async () => {
      // Two lessons completed by a learner earn the points of a rule of their product, an entry each.
      const product = await productWith()
      await created("/gamification/rules", { name: unique("g"), trigger: "lesson_completed", points: 3, product_id: product })
      const module = (await call("GET", `/products/${product}/modules`)).body.data[0]
      const lessons: Array<string> = []
      for (const name of ["L1", "L2"]) {
        const lesson = await created(`/products/${product}/lessons`, { name, module_id: module.id })
        expect((await call("PATCH", `/products/${product}/lessons/${lesson.id}`, { json: { status: "published" } })).status).toBe(200)
        lessons.push(lesson.id)
      }
      const user = await created("/users", { name: "Learner", email: `${unique("learner")}@example.com` })
      const enrollment = await created("/enrollments", { user_id: user.id, product_id: product })
      for (const lesson of lessons) {
        const res = await call("PUT", `/enrollments/${enrollment.id}/progress/lessons/${lesson}`, { json: { status: "completed" } })
        expect(res.status, res.text).toBe(200)
      }
      return { path: `/users/${user.id}/points/entries` }
    },
    "tickets.list": async () => {
      await ticket()
      await ticket()
      return { path: "/support/tickets" }
    },
    "ticket_messages.list": async () => {
      const id = await ticket()
      await created(`/support/tickets/${id}/messages`, { text: "Second", from: "agent" })
      return { path: `/support/tickets/${id}/messages` }
    },
    "departments.list": async () => {
      await created("/support/departments", { name: unique("d1") })
      await created("/support/departments", { name: unique("d2") })
      return { path: "/support/departments" }
    },
    "faqs.list": async () => {
      await created("/support/faqs", { question: "Q1?", answer: "A1" })
      await created("/support/faqs", { question: "Q2?", answer: "A2" })
      return { path: "/support/faqs" }
    },
    "questions.list": async () => {
      const { product } = await question()
      await question(product)
      return { path: `/products/${product}/questions` }
    },
    "question_replies.list": async () => {
      const { product, id } = await question()
      for (const text of ["One", "Two"]) await created(`/products/${product}/questions/${id}/replies`, { body: { blocks: [{ type: "paragraph", text }] } })
      return { path: `/products/${product}/questions/${id}/replies` }
    },
    "legal_terms.list": async () => {
      for (const title of ["T1", "T2"]) await created("/legal-terms", { kind: "product", product_id: await productWith(), title, text: "<p>Terms</p>" })
      return { path: "/legal-terms" }
    },
    "domains.list": async () => {
      for (const label of ["d1", "d2"]) await created("/domains", { hostname: `${unique(label)}.example.com` })
      return { path: "/domains" }
    },
    "deliveries.list": async () => {
      await delivery()
      await delivery()
      return { path: "/sales/deliveries" }
    },
    "gateways.list": async () => {
      for (const name of ["G1", "G2"]) await created("/sales/gateways", { kind: "generic", name })
      return { path: "/sales/gateways" }
    },
    "sales_events.list": async () => {
      const gateway = await created("/sales/gateways", { kind: "generic", name: "Checkout" })
      const deliveryId = await delivery()
      const buyer = await created("/users", { name: "Buyer", email: `${unique("buyer")}@example.com` })
      for (const type of ["approved", "refunded"]) {
        const text = JSON.stringify({
          id: unique("gw-evt"), type, occurred_at: new Date().toISOString(), sale_id: "sale-1",
          delivery_id: deliveryId, user_id: buyer.id, amount: 1000, currency: "EUR"
        })
        const at = new Date()
        const headers = {
          "content-type": "application/json",
          "webhook-id": unique("msg"),
          "webhook-timestamp": String(Math.floor(at.getTime() / 1000))
        }
        const signature = new Webhook(gateway.secret.value).sign(headers["webhook-id"], at, text)
        const res = await h().request("POST", `/gateways/${gateway.id}/notifications`, { raw: text, headers: { ...headers, "webhook-signature": signature }, idempotencyKey: null })
        expect(res.status, res.text).toBe(200)
      }
      return { path: "/sales/events" }
    },
    "funnels.list": async () => {
      const deliveryId = await delivery()
      for (const name of ["F1", "F2"]) await created("/sales/funnels", { name, steps: [{ kind: "offer", name: "Offer", delivery_id: deliveryId }] })
      return { path: "/sales/funnels" }
    },
    "replicas.list": async () => {
      // One live link per target account: two targets.
      for (const label of ["r1", "r2"]) {
        const target = await h().openAccount(unique(label))
        await created("/replicas", { target_subdomain: String(target.account.subdomain) })
      }
      return { path: "/replicas" }
    },
    "exports.list": async () => {
      for (const format of ["jsonl", "csv"]) await created("/exports", { resource_type: "tags", format })
      return { path: "/exports" }
    },
    "imports.list": async () => {
      const bytes = Buffer.from(`{"name":"${unique("imported")}"}\n`)
      const sha256 = createHash("sha256").update(bytes).digest("hex")
      const session = await created("/uploads", { purpose: "import", filename: "tags.jsonl", size: bytes.length, content_type: "application/json", sha256 })
      await h().request("PUT", session.upload_urls[0].url, { secret: h().live, raw: bytes, headers: { "content-type": "application/octet-stream" } })
      const file = await created(`/uploads/${session.id}/completions`, {})
      for (const dryRun of [true, false]) await created("/imports", { file_id: file.id, target: "tags", dry_run: dryRun })
      return { path: "/imports" }
    },
    "events.list": async () => ({ path: "/events" }),
    "requests.list": async () => ({ path: "/requests" }),
    "audit_entries.list": async () => ({ path: "/audit-entries" })
  }

  /** A product with an exam of two questions. */
  const examWithQuestions = async () => {
    const product = await productWith()
    const exam = await created(`/products/${product}/exams`, { title: "Exam" })
    const examPath = `/products/${product}/exams/${exam.id}`
    const alternatives = [{ text: "Yes", correct: true }, { text: "No" }]
    const question = await created(`${examPath}/questions`, { text: "One?", format: "single_choice", alternatives })
    await created(`${examPath}/questions`, { text: "Two?", format: "single_choice", alternatives })
    return { product, examPath, question }
  }

  /** A ticket of a new user, opened by the API. */
  const ticket = async () => {
    const user = await created("/users", { name: "Requester", email: `${unique("req")}@example.com` })
    return (await created("/support/tickets", { subject: "Help", user_id: user.id, message: { text: "First" } })).id as string
  }

  /** A learner's question on a lesson of `product` (a new product by default). */
  const question = async (product?: string) => {
    const productId = product ?? (await productWith())
    const module = (await call("GET", `/products/${productId}/modules`)).body.data[0]
    const lesson = await created(`/products/${productId}/lessons`, { name: "L", module_id: module.id })
    const user = await created("/users", { name: "Asker", email: `${unique("ask")}@example.com` })
    const body = { blocks: [{ type: "paragraph", text: "How do I start?" }] }
    const asked = await created(`/products/${productId}/questions`, { user_id: user.id, lesson_id: lesson.id, body })
    return { product: productId, id: asked.id as string }
  }

  /** A delivery of a new product. */
  const delivery = async () =>
    (await created("/sales/deliveries", { name: unique("delivery"), products: [{ product_id: await productWith() }] })).id as string

  /** A product with two modules. */
  const productWith = async () => {
    const shelf = await created("/showcases", { name: unique("shelf") })
    const product = await created("/products", { format: "course", name: unique("p"), showcase_id: shelf.id })
    await created(`/products/${product.id}/modules`, { name: "M1" })
    await created(`/products/${product.id}/modules`, { name: "M2" })
    return product.id
  }

  it("the test knows how to fill every collection sortable by created_at", () => {
    expect(sortedByCreation.length).toBeGreaterThan(10)
    expect(sortedByCreation.map((op) => op.id).filter((id) => !(id in seeds))).toEqual([])
  })

  it.each(sortedByCreation.map((op) => [op.id, op.path] as const))(
    "%s (%s): sort=created_at is oldest first, sort=-created_at is its exact reverse",
    async (id) => {
      const { path, secret = h().live } = await seeds[id]!()
      const list = async (sort: string) => {
        const res = await call("GET", `${path}?sort=${sort}&limit=200`, { secret })
        expect(res.status, res.text).toBe(200)
        return res.body.data as Array<{ id: string; created_at?: string }>
      }
      const ascending = await list("created_at")
      expect(ascending.length, "at least two items to order").toBeGreaterThanOrEqual(2)
      // Public IDs lead with their creation time: in creation order, IDs ascend (ties apart, created_at does too).
      const ids = ascending.map((item) => item.id)
      expect(ids).toEqual([...ids].sort())
      const times = ascending.flatMap((item) => (item.created_at === undefined ? [] : [Date.parse(item.created_at)]))
      expect(times).toEqual([...times].sort((a, b) => a - b))
      const descending = (await list("-created_at")).map((item) => item.id)
      // A log of calls (`/requests`) gains entries between the two reads, and may hold more than
      // a page (the oldest 200 and the newest 200 then differ): compare what both saw.
      const seen = new Set(ids)
      const seenDescending = new Set(descending)
      expect(descending.filter((i) => seen.has(i))).toEqual([...ids].reverse().filter((i) => seenDescending.has(i)))
    }
  )

  it("the default orders stay as stated: products and events newest first", async () => {
    await seeds["products.list"]!()
    for (const path of ["/products", "/events"]) {
      const byDefault = (await call("GET", `${path}?limit=200`)).body.data.map((item: { id: string }) => item.id)
      const newestFirst = (await call("GET", `${path}?limit=200&sort=-created_at`)).body.data.map((item: { id: string }) => item.id)
      expect(byDefault.length).toBeGreaterThanOrEqual(2)
      // Background work (an operation finishing) may record events between the two reads: compare what both saw.
      const both = new Set(byDefault.filter((id: string) => newestFirst.includes(id)))
      expect(both.size, path).toBeGreaterThanOrEqual(2)
      expect(byDefault.filter((id: string) => both.has(id)), path).toEqual(newestFirst.filter((id: string) => both.has(id)))
    }
  })
})

// ---------------------------------------------------------------------------------------

eachStore("issue 12: error messages name the actual problem", (h) => {
  const { call, created } = client(h)

  it("an upload part with another Content-Type is 415, and the message names application/octet-stream", async () => {
    const bytes = new TextEncoder().encode("not really a png")
    const session = await created("/uploads", {
      purpose: "image",
      filename: "picture.png",
      size: bytes.length,
      content_type: "image/png",
      sha256: createHash("sha256").update(bytes).digest("hex")
    })
    const res = await call("PUT", `/uploads/${session.id}/parts/1`, { raw: bytes, headers: { "content-type": "application/json" } })
    const error = expectError(res, 415, "unsupported_media_type")
    expect(error.message).toContain("application/octet-stream")
    expect(error.message).not.toContain("must be application/json")
    // A JSON operation names its own type.
    const json = await call("POST", "/showcases", { raw: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } })
    expect(expectError(json, 415, "unsupported_media_type").message).toContain("application/json")
  })

  it("a well-formed ID of a missing showcase is 422 on showcase_id, reason not_found, and the messages say it does not exist", async () => {
    const res = await call("POST", "/products", { json: { format: "course", name: "Orphan", showcase_id: "shw_000000001" } })
    const error = expectError(res, 422, "validation_failed", { field: "showcase_id", reason: "not_found" })
    const item = error.details.find((d) => d.field === "showcase_id")!
    expect(item.message).toMatch(/no record with this ID exists/i)
    expect(error.message).toMatch(/no record with this ID exists/i)
    expect(error.message).not.toContain("see the details")
    // In another language too.
    const pt = await call("POST", "/products", {
      json: { format: "course", name: "Orphan", showcase_id: "shw_000000001" },
      headers: { "accept-language": "pt-BR" }
    })
    expect(expectError(pt, 422, "validation_failed", { field: "showcase_id", reason: "not_found" }).details[0]!.message).toMatch(/não existe/i)
  })

  it("shw_000000000 encodes zero, outside the range of public IDs (open-points): item code invalid, and the message says what is expected", async () => {
    const res = await call("POST", "/products", { json: { format: "course", name: "Zero", showcase_id: "shw_000000000" } })
    const error = expectError(res, 422, "validation_failed", { field: "showcase_id", code: "invalid" })
    const item = error.details.find((d) => d.field === "showcase_id")!
    expect(item.message).toContain("shw_")
    expect(item.message).toMatch(/from 1 to/)
  })

  it.each([
    ["a sort of a resource collection", "/products?sort=zzz", "sort", ["created_at", "-created_at", "name", "-name", "position", "-position"]],
    ["a sort of a hand-written collection", "/events?sort=newest", "sort", ["created_at", "-created_at"]],
    ["an enum filter", "/products?status=live", "status", ["draft", "published"]],
    ["a plain literal filter", "/operations?status=done", "status", ["queued", "running", "succeeded", "failed", "canceled"]]
  ])("%s: 422 with the allowed values in the detail and in the message", async (_label, path, parameter, allowed) => {
    const error = expectError(await call("GET", path), 422, "validation_failed", { parameter, code: "invalid_value" })
    const item = error.details.find((d) => d.parameter === parameter)!
    expect(item["allowed"]).toEqual(allowed)
    expect(item.message).toContain(allowed.join(", "))
    expect(error.message).toContain(allowed.join(", "))
  })

  it("an enum body field: 422 with the allowed values in the detail and in the message", async () => {
    const shelf = await created("/showcases", { name: unique("shelf") })
    const res = await call("POST", "/products", { json: { format: "podcast", name: "P", showcase_id: shelf.id } })
    const error = expectError(res, 422, "validation_failed", { field: "format", code: "invalid_value" })
    const item = error.details.find((d) => d.field === "format")!
    expect(item["allowed"]).toContain("course")
    expect(item.message).toContain("course")
  })
})

// ---------------------------------------------------------------------------------------

eachStore("issue 12: events, languages, HEAD, revisions", (h) => {
  const { call, created } = client(h)

  it("webhook.created is delivered and listed in GET /event-types, as every type the events show", async () => {
    const hook = await created("/webhooks", { url: "https://example.com/catalog", event_types: ["tag.created"] })
    await created("/tags", { name: unique("t") })
    await call("DELETE", `/webhooks/${hook.id}`)
    const events = (await call("GET", "/events?limit=200")).body.data as Array<{ type: string }>
    const seen = new Set(events.map((e) => e.type))
    expect(seen).toContain("webhook.created")
    expect(seen).toContain("webhook.deleted")
    const catalog = new Set(((await call("GET", "/event-types")).body.data as Array<{ type: string }>).map((e) => e.type))
    expect([...seen].filter((type) => !catalog.has(type))).toEqual([])
  })

  it.each([
    ["en-US", undefined],
    ["pt-BR", "pt-BR"],
    ["es-ES", "es"],
    ["fr-FR", "fr-CA, en;q=0.5"]
  ])("an error says the language of its messages: Content-Language %s", async (language, accept) => {
    const headers = accept === undefined ? {} : { "accept-language": accept }
    for (const res of [
      await call("GET", "/products?sort=zzz", { headers }),
      await h().request("GET", `${P}/products`, { headers }),
      await call("GET", "/products/prd_000000001", { headers }),
      await call("PUT", "/credentials/current", { headers })
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400)
      expect(res.headers.get("content-language"), res.text).toBe(language)
    }
  })

  it("an error of the Node edge (a request its parser refuses) says its language too", async () => {
    const url = new URL(h().baseUrl)
    const head = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: url.hostname, port: Number(url.port) })
      let received = ""
      socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")))
      socket.on("error", reject)
      socket.on("close", () => resolve(received.split("\r\n\r\n")[0] ?? ""))
      socket.write("GET /api/v3/products HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n")
    })
    expect(head).toMatch(/^HTTP\/1\.1 400/)
    expect(head.toLowerCase()).toContain("content-language: en-us")
  })

  /** The GET routes a caller can read without a path parameter, and one with. */
  const getRoutes = operations.filter((op) => op.method === "GET" && !op.path.includes("{") && op.produces === undefined).map((op) => op.path)

  it.each(getRoutes)("HEAD %s answers as GET, without a body", async (path) => {
    const first = await call("GET", path)
    const head = await call("HEAD", path)
    const again = await call("GET", path)
    expect(head.status, head.text).toBe(first.status)
    expect(head.text).toBe("")
    expect(head.headers.get("content-type")).toBe(first.headers.get("content-type"))
    expect(head.headers.get("etag")).toBe(first.headers.get("etag"))
    const length = Number(head.headers.get("content-length"))
    // A log of the calls themselves (`/requests`) changes with each call: there only the form is checked.
    if (first.text === again.text) expect(length).toBe(Buffer.byteLength(first.text))
    else expect(length).toBeGreaterThan(0)
  })

  it("HEAD of one resource carries its ETag and length; HEAD of an error carries its status; Allow lists HEAD", async () => {
    const shelf = await created("/showcases", { name: unique("shelf") })
    const get = await call("GET", `/showcases/${shelf.id}`)
    const head = await call("HEAD", `/showcases/${shelf.id}`)
    expect(head.status).toBe(200)
    expect(head.headers.get("etag")).toBe(get.headers.get("etag"))
    expect(Number(head.headers.get("content-length"))).toBe(Buffer.byteLength(get.text))
    const missing = await call("HEAD", "/showcases/shw_000000001")
    expect(missing.status).toBe(404)
    expect(missing.text).toBe("")
    const anonymous = await h().request("HEAD", `${P}/products`)
    expect(anonymous.status).toBe(401)
    const refused = await call("PUT", "/credentials/current")
    expectError(refused, 405, "method_not_allowed")
    expect((refused.headers.get("allow") ?? "").split(",").map((m) => m.trim())).toContain("HEAD")
  })

  it("HEAD of an event stream's connection answers its headers without opening it (its one connection stays free)", async () => {
    const stream = await created("/event-streams", {})
    const head = await call("HEAD", `/event-streams/${stream.id}/events`, { headers: { accept: "text/event-stream" } })
    expect(head.status).toBe(200)
    expect(head.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(head.text).toBe("")
    const state = (await call("GET", `/event-streams/${stream.id}`)).body.data
    expect(state.connection.connected).toBe(false)
    // A stream that does not exist: HEAD stops at the same checks as GET.
    expect((await call("HEAD", "/event-streams/evs_00000000z/events", { headers: { accept: "text/event-stream" } })).status).toBe(404)
  })

  it("a product's revision and updated_at move together: adding a module changes both", async () => {
    const shelf = await created("/showcases", { name: unique("shelf") })
    const product = await created("/products", { format: "course", name: unique("p"), showcase_id: shelf.id })
    h().advance(2_000)
    const module = await created(`/products/${product.id}/modules`, { name: "M" })
    const after = await call("GET", `/products/${product.id}`)
    expect(after.body.data.modules_count).toBe(1)
    expect(after.body.data.revision).not.toBe(product.revision)
    expect(after.headers.get("etag")).not.toBe(`W/"product:${product.id}:${product.revision}"`)
    expect(Date.parse(after.body.data.updated_at)).toBeGreaterThan(Date.parse(product.updated_at))

    // A module's lessons_count likewise.
    h().advance(2_000)
    await created(`/products/${product.id}/lessons`, { name: "L", module_id: module.id })
    const moduleAfter = (await call("GET", `/products/${product.id}/modules/${module.id}`)).body.data
    expect(moduleAfter.lessons_count).toBe(1)
    expect(moduleAfter.revision).not.toBe(module.revision)
    expect(Date.parse(moduleAfter.updated_at)).toBeGreaterThan(Date.parse(module.updated_at))
  })
})
