/**
 * Real resources for generated requests to point at: one of each kind the description's
 * paths and bodies name, made through the API on each store the same way, so that a
 * generated request names "the product" and each store reads it as its own product's ID.
 */
import { createHash } from "node:crypto"
import { Webhook } from "standardwebhooks"
import type { Harness } from "../../support/harness.js"

/** The kinds a generated request can name, with their ID prefix (§2.2 and open-points). */
export const fixtureKinds = {
  showcase: "shw",
  product: "prd",
  blog_product: "prd",
  module: "mod",
  lesson: "les",
  taxonomy: "tax",
  taxonomy_term: "ttm",
  tag: "tag",
  custom_field: "cfd",
  banner: "bnr",
  navigation_item: "nav",
  user: "usr",
  webhook: "whk",
  credential: "crd",
  administrator: "adm",
  upload: "upl",
  file: "fil",
  operation: "op",
  event: "evt",
  request: "req",
  audit_entry: "aud",
  exam: "exm",
  exam_question: "exq",
  exam_attempt: "exa",
  exam_alternative: "alt",
  /** A user enrolled in the product, who takes its exam. */
  learner: "usr",
  enrollment: "enr",
  release_rule: "rrl",
  gamification_rule: "gmr",
  ticket: "tkt",
  ticket_message: "tkm",
  department: "dpt",
  faq: "faq",
  /** A learner's question on the fixture lesson. */
  question: "qst",
  /** The product's legal term. */
  legal_term: "lgt",
  /** A sales delivery of the product, with the fixture tag. */
  delivery: "dlv",
  /** A payment gateway (generic). */
  gateway: "gtw",
  /** The gateway's approved sale of the delivery to a buyer of its own, recorded from a signed notification. */
  sales_event: "sev",
  /** A custom domain of the account, pending (its verification reads the harness's empty in-memory DNS). */
  domain: "dom",
  /** A replica link (pending) sharing the product with another account. */
  replica: "rpl",
  /** Not an ID: the subdomain of another account without a link, for the replay's clean `POST /replicas`. */
  replica_target: "acc"
} as const

export type FixtureKind = keyof typeof fixtureKinds

export type Fixtures = Readonly<Record<FixtureKind, string>>

/** Every public-ID prefix the contract names, for IDs of the wrong kind. */
export const allPrefixes = [
  "prd", "mod", "les", "exm", "exq", "qst", "tax", "ttm", "dlv", "usr", "whk", "whd", "wha", "shw", "bnr", "tag", "cfd",
  "adm", "enr", "tkt", "cmt", "dpt", "faq", "gtw", "sev", "crd", "op", "opi", "evt", "evs", "fil", "upl", "req", "aud",
  "lgt", "tac", "dom", "rpl", "pln", "nav", "att", "acc", "rst", "crt", "exa", "alt", "rrl", "lpr", "gmr", "pte", "tkm"
] as const

/** The fixture a path parameter names, by the parameter's name. */
export const pathParamFixture: Readonly<Record<string, FixtureKind>> = {
  showcase_id: "showcase",
  product_id: "product",
  module_id: "module",
  lesson_id: "lesson",
  taxonomy_id: "taxonomy",
  taxonomy_term_id: "taxonomy_term",
  tag_id: "tag",
  custom_field_id: "custom_field",
  banner_id: "banner",
  navigation_item_id: "navigation_item",
  user_id: "user",
  webhook_id: "webhook",
  credential_id: "credential",
  administrator_id: "administrator",
  upload_id: "upload",
  file_id: "file",
  operation_id: "operation",
  event_id: "event",
  request_id: "request",
  audit_entry_id: "audit_entry",
  exam_id: "exam",
  exam_question_id: "exam_question",
  exam_attempt_id: "exam_attempt",
  enrollment_id: "enrollment",
  release_rule_id: "release_rule",
  gamification_rule_id: "gamification_rule",
  ticket_id: "ticket",
  ticket_message_id: "ticket_message",
  department_id: "department",
  faq_id: "faq",
  question_id: "question",
  legal_term_id: "legal_term",
  delivery_id: "delivery",
  gateway_id: "gateway",
  sales_event_id: "sales_event",
  domain_id: "domain",
  replica_id: "replica"
}

/** The fixture a body field (or query filter) holding a public ID names, by the field's name. */
export const fieldFixture = (operationId: string, name: string | undefined): FixtureKind | undefined => {
  if (name === undefined) return undefined
  if (operationId === "exam_attempts.create" && name === "user_id") return "learner"
  if (name === "ids") {
    return (
      ({ "banners.order.put": "banner", "products.order.replace": "product", "lessons.terms.replace": "taxonomy_term", "users.tags.replace": "tag", "exam_questions.order.replace": "exam_question", "departments.order.replace": "department", "faqs.order.replace": "faq" } as const)[
        operationId
      ] ?? undefined
    )
  }
  // A release rule's `target.id`: the lesson (the fixture module has a rule already, one per target).
  if (name === "id" && operationId === "release_rules.create") return "lesson"
  const byName: Readonly<Record<string, FixtureKind>> = {
    showcases: "showcase",
    showcase_id: "showcase",
    product_id: "product",
    target_product_id: "product",
    alias_product_id: "product",
    module_id: "module",
    target_module_id: "module",
    parent_id: "navigation_item",
      administrator_id: "administrator",
    event_ids: "event",
    credential_id: "credential",
    resource_id: "product",
    request_id: "request",
    user_id: "user",
    lesson_id: "lesson",
    exam_id: "exam",
    exam_question_id: "exam_question",
    department_id: "department",
    delivery_id: "delivery",
    gateway_id: "gateway",
    tag_ids: "tag",
    product_ids: "product",
    alternative_ids: "exam_alternative",
    file: "file",
    image: "file",
    logo: "file",
    favicon: "file",
    desktop: "file",
    mobile: "file"
  }
  return byName[name]
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

/** Create one resource of each kind on this store; fails loudly if the API refuses one. */
export const makeFixtures = async (h: Harness, tag: string): Promise<Fixtures> => {
  const made: Partial<Record<FixtureKind, string>> = {}
  const call = async (method: string, path: string, json?: unknown, extra: { raw?: Uint8Array; headers?: Record<string, string> } = {}) => {
    const res = await h.request(method, `/api/v3${path}`, { secret: h.live, ...(json === undefined ? {} : { json }), ...extra })
    if (res.status >= 300) throw new Error(`fixture ${method} ${path} → ${res.status} ${res.text}`)
    return res
  }
  const create = async (kind: FixtureKind, path: string, json: unknown) => {
    const res = await call("POST", path, json)
    made[kind] = res.body.data.id
    return res.body.data.id as string
  }
  const showcase = await create("showcase", "/showcases", { name: `Fuzz shelf ${tag}` })
  const product = await create("product", "/products", { format: "course", name: `Fuzz course ${tag}`, showcase_id: showcase })
  await create("blog_product", "/products", { format: "blog", name: `Fuzz blog ${tag}`, showcase_id: showcase })
  const module = await create("module", `/products/${product}/modules`, { name: "Fuzz module" })
  await create("lesson", `/products/${product}/lessons`, { name: "Fuzz lesson", module_id: module })
  const taxonomy = await create("taxonomy", `/products/${product}/taxonomies`, { name: "Category", plural_name: "Categories" })
  await create("taxonomy_term", `/products/${product}/taxonomies/${taxonomy}/terms`, { name: "Fuzz term" })
  await create("tag", "/tags", { name: `Fuzz tag ${tag}` })
  await create("custom_field", "/custom-fields", { key: `fuzz_${tag.replace(/[^a-z0-9_]/g, "_")}`, label: "Fuzz field", type: "text" })
  await create("banner", "/banners", { name: "Fuzz banner" })
  await create("navigation_item", "/navigation", { label: "Fuzz home", url: "/" })
  await create("user", "/users", { name: "Fuzz user", email: `fuzz-${tag}@example.com` })
  // Never delivered: the fuzz servers run no workers.
  await create("webhook", "/webhooks", { url: "https://example.com/fuzz-hook", event_types: ["product.created"] })
  // A credential of its own: generated requests may revoke or suspend it, never the suite's.
  await create("credential", "/credentials", { name: "Fuzz target credential" })
  await create("administrator", "/administrators", { email: `fuzz-admin-${tag}@example.com`, name: "Fuzz admin", password: "correct horse battery staple" })
  // A file, through a whole upload; and an upload session left open.
  const bytes = new Uint8Array(64)
  bytes.set(PNG_SIGNATURE)
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const declaration = { purpose: "image", filename: "fuzz.png", size: bytes.length, content_type: "image/png", sha256 }
  const session = (await call("POST", "/uploads", declaration)).body.data.id as string
  await call("PUT", `/uploads/${session}/parts/1`, undefined, { raw: bytes, headers: { "content-type": "application/octet-stream" } })
  made.file = (await call("POST", `/uploads/${session}/completions`)).body.data.id
  made.upload = (await call("POST", "/uploads", declaration)).body.data.id
  // A batch; the fuzz servers run no workers, so it stays queued.
  made.operation = (await call("POST", "/operations", { type: "tags.create", items: [{ key: "one", name: `Fuzz batch tag ${tag}` }] })).body.data.id
  made.event = (await call("GET", "/events?limit=1")).body.data[0].id
  made.request = (await call("GET", "/requests?limit=1")).body.data[0].id
  made.audit_entry = (await call("GET", "/audit-entries?limit=1")).body.data[0].id
  // An exam with a question, and an attempt of a learner of its own (enrolled in the product).
  const exam = await create("exam", `/products/${product}/exams`, { title: "Fuzz exam" })
  const question = (
    await call("POST", `/products/${product}/exams/${exam}/questions`, {
      text: "Fuzz question",
      format: "single_choice",
      alternatives: [{ text: "Right", correct: true }, { text: "Wrong" }]
    })
  ).body.data
  made.exam_question = question.id
  made.exam_alternative = question.alternatives[0].id
  const learner = await create("learner", "/users", { name: "Fuzz learner", email: `fuzz-learner-${tag}@example.com` })
  await call("POST", "/enrollments", { user_id: learner, product_id: product })
  await create("exam_attempt", `/products/${product}/exams/${exam}/attempts`, {
    user_id: learner,
    answers: [{ exam_question_id: question.id, alternative_ids: [question.alternatives[0].id] }]
  })
  // An enrollment of a learner of its own (generated requests may cancel it), and a release rule.
  const enrolled = (await call("POST", "/users", { name: "Fuzz enrolled", email: `fuzz-enrolled-${tag}@example.com` })).body.data.id as string
  await create("enrollment", "/enrollments", { user_id: enrolled, product_id: product })
  await create("release_rule", `/products/${product}/release-rules`, { target: { kind: "module", id: module }, kind: "after_enrollment", days: 1 })
  // A gamification rule of the product (the ledger has no fixture: only the platform writes entries).
  await create("gamification_rule", "/gamification/rules", { name: "Fuzz rule", trigger: "lesson_completed", points: 10, product_id: product })
  // The support desk: a department, an FAQ, and a ticket of the user with its opening message.
  const department = await create("department", "/support/departments", { name: "Fuzz department" })
  await create("faq", "/support/faqs", { question: "Fuzz question?", answer: "Fuzz answer", department_id: department })
  const ticket = await create("ticket", "/support/tickets", { subject: "Fuzz ticket", user_id: made.user, message: { text: "Fuzz" }, department_id: department, product_id: product })
  await create("ticket_message", `/support/tickets/${ticket}/messages`, { text: "Fuzz reply" })
  // A question of the user on the lesson, and the product's legal term (version 1).
  await create("question", `/products/${product}/questions`, { user_id: made.user, lesson_id: made.lesson, body: { blocks: [{ type: "paragraph", text: "Fuzz question?" }] } })
  await create("legal_term", "/legal-terms", { kind: "product", product_id: product, title: "Fuzz terms", text: "<p>Fuzz</p>" })
  // A sales delivery of the product with the tag.
  await create("delivery", "/sales/deliveries", { name: "Fuzz delivery", products: [{ product_id: product, duration_days: 30 }], tag_ids: [made.tag] })
  // A gateway, and a sale of the delivery to a buyer of its own, notified as a gateway does (Standard Webhooks).
  const gateway = (await call("POST", "/sales/gateways", { kind: "generic", name: "Fuzz gateway" })).body.data
  made.gateway = gateway.id
  const buyer = (await call("POST", "/users", { name: "Fuzz buyer", email: `fuzz-buyer-${tag}@example.com` })).body.data.id as string
  const notification = JSON.stringify({
    id: `fuzz-sale-${tag}`,
    type: "approved",
    occurred_at: new Date().toISOString(),
    sale_id: "fuzz-sale",
    delivery_id: made.delivery,
    user_id: buyer,
    amount: 1000,
    currency: "USD"
  })
  const signedAt = new Date()
  const notified = await h.request("POST", gateway.notification_path, {
    raw: notification,
    idempotencyKey: null,
    headers: {
      "content-type": "application/json",
      "webhook-id": `fuzz-${tag}`,
      "webhook-timestamp": String(Math.floor(signedAt.getTime() / 1000)),
      "webhook-signature": new Webhook(gateway.secret.value).sign(`fuzz-${tag}`, signedAt, notification)
    }
  })
  if (notified.status !== 200) throw new Error(`fixture notification → ${notified.status} ${notified.text}`)
  made.sales_event = notified.body.data.id
  await create("domain", "/domains", { hostname: `fuzz-${tag.toLowerCase().replace(/[^a-z0-9]+/g, "-")}-${Date.now().toString(36)}.example.com` })
  // A pending replica link sharing the product with another account of the store.
  const partner = await h.openAccount(`fuzz-partner-${tag.toLowerCase().replace(/[^a-z0-9]+/g, "-")}-${Date.now().toString(36)}`)
  await create("replica", "/replicas", { target_subdomain: String(partner.account.subdomain), product_ids: [product] })
  made.replica_target = String((await h.openAccount(`fuzz-target-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6)}`)).account.subdomain)
  for (const kind of Object.keys(fixtureKinds) as Array<FixtureKind>) {
    if (made[kind] === undefined) throw new Error(`no fixture ${kind}`)
  }
  return made as Fixtures
}
