/**
 * Modules, lessons, lesson content and attachments (§2.3, §3, §4.3; replicas 3.3.0; lesson
 * revision and attachments `If-Match` 3.4.4): their own fields and rules, the module
 * publication and lesson copy operations. The rules every described resource shares are in
 * resources.test.ts.
 */
import { createHash } from "node:crypto"
import { createRequire } from "node:module"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { expectError } from "../support/expect.js"

type Secret = string

const api = (h: Harness, secret: Secret = h.live) => ({
  get: (path: string) => h.request("GET", `/api/v3${path}`, { secret }),
  post: (path: string, json?: unknown, options: { idempotencyKey?: string | null } = {}) =>
    h.request("POST", `/api/v3${path}`, { secret, ...(json === undefined ? {} : { json }), ...options }),
  put: (path: string, json: unknown, headers: Record<string, string> = {}) => h.request("PUT", `/api/v3${path}`, { secret, json, headers }),
  patch: (path: string, json: unknown, headers: Record<string, string> = {}) => h.request("PATCH", `/api/v3${path}`, { secret, json, headers }),
  del: (path: string) => h.request("DELETE", `/api/v3${path}`, { secret })
})

const production = (accountId: string) => ({ accountId, environment: "production" as const })
const mine = (h: Harness) => production(h.account.account.id)
const liveSecretOf = (account: Awaited<ReturnType<Harness["openAccount"]>>) =>
  account.credentials.find((c) => c.environment === "production")!.secret

const created = async (res: Promise<{ status: number; body: any; text: string }>) => {
  const r = await res
  if (r.status !== 201) throw new Error(`expected 201, got ${r.status}: ${r.text}`)
  return r.body.data
}

const newProduct = async (h: Harness, secret: Secret = h.live) => {
  const showcase = await created(api(h, secret).post("/showcases", { name: "Shelf" }))
  return created(api(h, secret).post("/products", { format: "course", name: "Course", showcase_id: showcase.id }))
}
const newModule = (h: Harness, productId: string, json: object = {}, secret: Secret = h.live) =>
  created(api(h, secret).post(`/products/${productId}/modules`, { name: "Module", ...json }))
const newLesson = (h: Harness, productId: string, moduleId: string, json: object = {}, secret: Secret = h.live) =>
  created(api(h, secret).post(`/products/${productId}/lessons`, { name: "Lesson", module_id: moduleId, ...json }))

/** A product with one module and one lesson in it. */
const course = async (h: Harness, secret: Secret = h.live) => {
  const product = await newProduct(h, secret)
  const module = await newModule(h, product.id, {}, secret)
  const lesson = await newLesson(h, product.id, module.id, {}, secret)
  return { product, module, lesson, lessonPath: `/products/${product.id}/lessons/${lesson.id}` }
}

/** Wait for an operation to finish; answers it. */
const settle = async (h: Harness, operationId: string, secret: Secret = h.live) => {
  for (let i = 0; i < 100; i++) {
    const op = (await api(h, secret).get(`/operations/${operationId}`)).body.data
    if (op.status === "succeeded" || op.status === "failed") return op
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`operation ${operationId} did not finish`)
}

const upload = async (h: Harness, purpose: string, kind: "png" | "pdf" = "png", secret: Secret = h.live) => {
  const bytes = Buffer.alloc(2048, 1)
  const contentType = kind === "png" ? "image/png" : "application/pdf"
  ;(kind === "png" ? Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) : Buffer.from("%PDF-1.7")).copy(bytes)
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const session = await h.request("POST", "/api/v3/uploads", {
    secret,
    json: { purpose, filename: `a.${kind}`, size: bytes.length, content_type: contentType, sha256 }
  })
  await h.request("PUT", session.body.data.upload_urls[0].url, { secret, raw: bytes, headers: { "content-type": "application/octet-stream" } })
  const file = await h.request("POST", `/api/v3/uploads/${session.body.data.id}/completions`, { secret })
  return file.body.data.id as string
}

const credential = async (h: Harness, policies: ReadonlyArray<object>) =>
  (await api(h).post("/credentials", { name: "limited", policies })).body.data.secret.value as string

const auditActions = async (h: Harness, resourceId: string, secret: Secret = h.live) =>
  (await api(h, secret).get(`/audit-entries?resource_id=${resourceId}&limit=200`)).body.data.map((e: { action: string }) => e.action)

const paragraph = (text: string) => ({ type: "paragraph", text })

/** Ajv for JSON Schema 2020-12, as shipped with the OpenAPI validator (see openapi.test.ts). */
const fromValidator = createRequire(createRequire(import.meta.url).resolve("@seriousme/openapi-schema-validator"))
const Ajv2020 = fromValidator("ajv/dist/2020.js").default

/** Does a body match the schema the served description gives for this answer? */
const conforms = (doc: any, path: string, method: string, status: number, body: unknown) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
  ajv.addSchema({ ...doc, $id: "https://syllabus.test/openapi.json" })
  const pointer = ["paths", path, method, "responses", String(status), "content", "application/json", "schema"]
    .map((s) => s.replaceAll("~", "~0").replaceAll("/", "~1"))
    .join("/")
  const validate = ajv.compile({ $ref: `https://syllabus.test/openapi.json#/${pointer}` })
  return validate(body) ? [] : validate.errors
}

eachStore("content: modules and lessons", (h) => {
  // -------------------------------------------------------------------------------------
  // Modules

  it("a module is created in its product as a draft, with every field (§2.1)", async () => {
    const product = await newProduct(h())
    const res = await api(h()).post(`/products/${product.id}/modules`, { name: "Basics" })
    expect(res.status).toBe(201)
    const module = res.body.data
    expect(res.headers.get("location")).toBe(`/api/v3/products/${product.id}/modules/${module.id}`)
    expect(Object.keys(module)).toEqual([
      "object", "id", "product_id", "name", "description", "status", "position", "lessons_count", "created_at", "updated_at", "deleted", "revision"
    ])
    expect(module).toMatchObject({ object: "module", product_id: product.id, description: null, status: "draft", position: 1, lessons_count: 0, revision: "1" })
    expect(module.id).toMatch(/^mod_[0-9A-Za-z]{9}$/)
  })

  it("module positions are 1-based and dense: above the count is last, an insert or a move shifts the others, the trash closes the gap", async () => {
    const product = await newProduct(h())
    const a = await newModule(h(), product.id, { name: "a" })
    const b = await newModule(h(), product.id, { name: "b", position: 99 })
    expect(b.position).toBe(2)
    const c = await newModule(h(), product.id, { name: "c", position: 1 })
    expect(c.position).toBe(1)
    const order = async () =>
      (await api(h()).get(`/products/${product.id}/modules?sort=position`)).body.data.map((m: { name: string; position: number }) => `${m.name}${m.position}`)
    expect(await order()).toEqual(["c1", "a2", "b3"])
    expect((await api(h()).patch(`/products/${product.id}/modules/${c.id}`, { position: 3 })).body.data.position).toBe(3)
    expect(await order()).toEqual(["a1", "b2", "c3"])
    expect((await api(h()).del(`/products/${product.id}/modules/${a.id}`)).status).toBe(200)
    expect(await order()).toEqual(["b1", "c2"])
    const restored = await api(h()).patch(`/products/${product.id}/modules/${a.id}`, { deleted: false })
    expect(restored.body.data.position).toBe(3)
    expect(await auditActions(h(), b.id)).toContain("module.reordered")
  })

  it("a module is reached only through its own product; a missing product is 404", async () => {
    const { product, module } = await course(h())
    const other = await newProduct(h())
    expect((await api(h()).get(`/products/${product.id}/modules/${module.id}`)).status).toBe(200)
    expectError(await api(h()).get(`/products/${other.id}/modules/${module.id}`), 404, "not_found")
    expectError(await api(h()).post(`/products/prd_000000001/modules`, { name: "x" }), 404, "not_found")
  })

  it("PATCH of a module honours its ETag in If-Match; a stale one is 412 (§4.1)", async () => {
    const { product, module } = await course(h())
    const path = `/products/${product.id}/modules/${module.id}`
    const read = await api(h()).get(path)
    const etag = read.headers.get("etag")!
    expect(etag).toBe(`W/"module:${module.id}:${read.body.data.revision}"`)
    const ok = await api(h()).patch(path, { name: "Renamed" }, { "if-match": etag })
    expect(ok.status).toBe(200)
    const stale = await api(h()).patch(path, { name: "Again" }, { "if-match": etag })
    expect(stale.status).toBe(412)
    expect(stale.body.error.code).toBe("revision_mismatch")
  })

  it("a module is published through its publications, not by PATCH (422 invalid_transition); draft is accepted", async () => {
    const { product, module } = await course(h())
    const path = `/products/${product.id}/modules/${module.id}`
    const refused = await api(h()).patch(path, { status: "published" })
    expect(refused.status).toBe(422)
    expect(refused.body.error).toMatchObject({ code: "invalid_transition", details: [{ field: "status", reason: "use_publications" }] })
    expect((await api(h()).patch(path, { status: "draft" })).status).toBe(200)
  })

  it("a module with lessons cannot be trashed (409 state_conflict); emptied, it can", async () => {
    const { product, module, lessonPath } = await course(h())
    const path = `/products/${product.id}/modules/${module.id}`
    const refused = await api(h()).del(path)
    expect(refused.status).toBe(409)
    expect(refused.body.error).toMatchObject({ code: "state_conflict", reason: "module_not_empty" })
    expect((await api(h()).del(lessonPath)).status).toBe(200)
    const trashed = await api(h()).del(path)
    expect(trashed.status).toBe(200)
    expect(trashed.body.data.deleted).toBe(true)
  })

  it("3.3.0: no new module in a replicated product (403 replica_readonly)", async () => {
    const product = await newProduct(h())
    await h().patchRecord(mine(h()), "product", product.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "prd_000000001" } })
    const res = await api(h()).post(`/products/${product.id}/modules`, { name: "New" })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("replica_readonly")
  })

  it("a replicated module is read-only except status, which may also publish it (3.3.0)", async () => {
    const { product, module } = await course(h())
    const path = `/products/${product.id}/modules/${module.id}`
    await h().patchRecord(mine(h()), "module", module.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "mod_000000001" } })
    const renamed = await api(h()).patch(path, { name: "Renamed" })
    expect(renamed.status).toBe(403)
    expect(renamed.body.error.code).toBe("replica_readonly")
    const published = await api(h()).patch(path, { status: "published" })
    expect(published.status).toBe(200)
    expect(published.body.data.status).toBe("published")
    expect(await auditActions(h(), module.id)).toContain("module.published")
  })

  it("the product's modules_count and lessons_count follow creates and the trash", async () => {
    const { product, module, lessonPath } = await course(h())
    await newLesson(h(), product.id, module.id)
    const counts = async () => {
      const p = (await api(h()).get(`/products/${product.id}`)).body.data
      return [p.modules_count, p.lessons_count]
    }
    expect(await counts()).toEqual([1, 2])
    await api(h()).del(lessonPath)
    expect(await counts()).toEqual([1, 1])
    const empty = await newModule(h(), product.id)
    expect(await counts()).toEqual([2, 1])
    await api(h()).del(`/products/${product.id}/modules/${empty.id}`)
    expect(await counts()).toEqual([1, 1])
  })

  // -------------------------------------------------------------------------------------
  // Lessons

  it("a lesson is created in a module of its product: a standard draft, last, with every field", async () => {
    const { product, module } = await course(h())
    const res = await api(h()).post(`/products/${product.id}/lessons`, { name: "Second", module_id: module.id })
    expect(res.status).toBe(201)
    const lesson = res.body.data
    expect(res.headers.get("location")).toBe(`/api/v3/products/${product.id}/lessons/${lesson.id}`)
    expect(Object.keys(lesson)).toEqual([
      "object", "id", "product_id", "name", "module_id", "kind", "status", "position", "exam_id", "connected", "created_at", "updated_at", "deleted", "revision"
    ])
    expect(lesson).toMatchObject({
      object: "lesson", product_id: product.id, module_id: module.id, kind: "standard", status: "draft", position: 2, exam_id: null, connected: false, deleted: false
    })
    expect(lesson.id).toMatch(/^les_[0-9A-Za-z]{9}$/)
  })

  it("module_id is required and must be a module of the same product (422 on the field)", async () => {
    const { product } = await course(h())
    const foreign = await course(h())
    const missing = await api(h()).post(`/products/${product.id}/lessons`, { name: "x" })
    expectError(missing, 422, "validation_failed", { field: "module_id", code: "required" })
    expect(missing.body.error.details).toEqual([expect.objectContaining({ field: "module_id", code: "required" })])
    const other = await api(h()).post(`/products/${product.id}/lessons`, { name: "x", module_id: foreign.module.id })
    expectError(other, 422, "validation_failed", { field: "module_id", reason: "not_found" })
    const malformed = await api(h()).post(`/products/${product.id}/lessons`, { name: "x", module_id: "mod_?" })
    expectError(malformed, 422, "validation_failed", { field: "module_id", code: "invalid" })
  })

  it("exam_id must name an exam of the lesson's product (422); null clears it", async () => {
    const { lessonPath } = await course(h())
    const res = await api(h()).patch(lessonPath, { exam_id: "exm_000000001" })
    expectError(res, 422, "validation_failed", { field: "exam_id", reason: "not_found" })
    expect((await api(h()).patch(lessonPath, { exam_id: null })).body.data.exam_id).toBeNull()
  })

  it("a lesson's kind is chosen at creation; quiz is one of them; it cannot change (422 unknown_field)", async () => {
    const { product, module } = await course(h())
    const quiz = await newLesson(h(), product.id, module.id, { kind: "quiz" })
    expect(quiz.kind).toBe("quiz")
    const res = await api(h()).patch(`/products/${product.id}/lessons/${quiz.id}`, { kind: "standard" })
    expectError(res, 422, "unknown_field", { field: "kind", code: "unknown_field" })
    expectError(await api(h()).post(`/products/${product.id}/lessons`, { name: "x", module_id: module.id, kind: "podcast" }), 422, "validation_failed", { field: "kind" })
  })

  it("lesson positions are dense within the module; the module's lessons_count follows creates, moves and the trash", async () => {
    const { product, module, lesson } = await course(h())
    const second = await newLesson(h(), product.id, module.id, { position: 1 })
    expect(second.position).toBe(1)
    expect((await api(h()).get(`/products/${product.id}/lessons/${lesson.id}`)).body.data.position).toBe(2)
    const other = await newModule(h(), product.id)
    const moved = await api(h()).patch(`/products/${product.id}/lessons/${second.id}`, { module_id: other.id })
    expect(moved.body.data).toMatchObject({ module_id: other.id, position: 1 })
    const modulesOf = async () =>
      Object.fromEntries(
        (await api(h()).get(`/products/${product.id}/modules`)).body.data.map((m: { id: string; lessons_count: number }) => [m.id, m.lessons_count])
      )
    expect(await modulesOf()).toEqual({ [module.id]: 1, [other.id]: 1 })
    expect((await api(h()).get(`/products/${product.id}/lessons/${lesson.id}`)).body.data.position).toBe(1)
    await api(h()).del(`/products/${product.id}/lessons/${lesson.id}`)
    expect(await modulesOf()).toEqual({ [module.id]: 0, [other.id]: 1 })
    const listed = await api(h()).get(`/products/${product.id}/lessons?module_id=${other.id}`)
    expect(listed.body.data.map((l: { id: string }) => l.id)).toEqual([second.id])
  })

  it("a lesson moved to a module of another product moves there, and needs lessons.create on that product (403)", async () => {
    const source = await course(h())
    const target = await course(h())
    const limited = await credential(h(), [
      { capabilities: ["lessons.read", "lessons.update", "lessons.create"], resources: [source.product.id] }
    ])
    const denied = await api(h(), limited).patch(source.lessonPath, { module_id: target.module.id })
    expect(denied.status).toBe(403)
    expect(denied.body.error.code).toBe("permission_denied")
    const moved = await api(h()).patch(source.lessonPath, { module_id: target.module.id })
    expect(moved.status).toBe(200)
    expect(moved.body.data).toMatchObject({ product_id: target.product.id, module_id: target.module.id, position: 2 })
    expectError(await api(h()).get(source.lessonPath), 404, "not_found")
    expect((await api(h()).get(`/products/${target.product.id}/lessons/${source.lesson.id}`)).status).toBe(200)
    expect((await api(h()).get(`/products/${target.product.id}`)).body.data.lessons_count).toBe(2)
    expect((await api(h()).get(`/products/${source.product.id}`)).body.data.lessons_count).toBe(0)
  })

  it("3.3.0: a lesson cannot be moved into a replicated product (403 replica_readonly)", async () => {
    const source = await course(h())
    const target = await course(h())
    await h().patchRecord(mine(h()), "product", target.product.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "prd_000000001" } })
    const res = await api(h()).patch(source.lessonPath, { module_id: target.module.id })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("replica_readonly")
    expect((await api(h()).get(source.lessonPath)).body.data.module_id).toBe(source.module.id)
  })

  it("no lesson is created in a replicated product (403 replica_readonly)", async () => {
    const { product, module } = await course(h())
    await h().patchRecord(mine(h()), "product", product.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "prd_000000001" } })
    const res = await api(h()).post(`/products/${product.id}/lessons`, { name: "x", module_id: module.id })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("replica_readonly")
  })

  it("a replicated lesson is read-only except status (3.3.0)", async () => {
    const { lesson, lessonPath } = await course(h())
    await h().patchRecord(mine(h()), "lesson", lesson.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "les_000000001" } })
    const renamed = await api(h()).patch(lessonPath, { name: "Renamed" })
    expect(renamed.status).toBe(403)
    expect(renamed.body.error.code).toBe("replica_readonly")
    expect((await api(h()).patch(lessonPath, { status: "published" })).body.data.status).toBe("published")
    expectError(await api(h()).del(lessonPath), 403, "replica_readonly")
  })

  it("a trashed lesson whose module is gone is restored only into another module (422 module_id)", async () => {
    const { product, module, lessonPath } = await course(h())
    await api(h()).del(lessonPath)
    await api(h()).del(`/products/${product.id}/modules/${module.id}`)
    const refused = await api(h()).patch(lessonPath, { deleted: false })
    expectError(refused, 422, "validation_failed", { field: "module_id", reason: "not_found" })
    const other = await newModule(h(), product.id)
    const restored = await api(h()).patch(lessonPath, { deleted: false, module_id: other.id })
    expect(restored.status).toBe(200)
    expect(restored.body.data).toMatchObject({ deleted: false, module_id: other.id, position: 1 })
  })
})

eachStore("content: lesson content and attachments", (h) => {
  const content = (lessonPath: string) => `${lessonPath}/content`

  it("a lesson never written has empty content at revision 0, with its ETag (§2.3 lesson_content)", async () => {
    const { lesson, lessonPath } = await course(h())
    const res = await api(h()).get(content(lessonPath))
    expect(res.status).toBe(200)
    expect(res.headers.get("etag")).toBe(`W/"lesson_content:${lesson.id}:0"`)
    expect(res.body.data).toEqual({
      object: "lesson_content",
      lesson_id: lesson.id,
      format: "standard",
      revision: "0",
      body: { blocks: [], inherited: false },
      embed: null,
      live: null,
      video: null
    })
  })

  it("PUT replaces the whole content: what is left out is null; GET gives it back with the new ETag", async () => {
    const { lesson, lessonPath } = await course(h())
    const first = await api(h()).put(content(lessonPath), {
      body: { blocks: [paragraph("Hello"), { type: "heading", text: "Title", level: 2 }] },
      video: { provider: "youtube", url: "https://www.youtube.com/watch?v=abc" },
      live: { url: "https://meet.example.com/room" }
    })
    expect(first.status).toBe(200)
    expect(first.headers.get("etag")).toBe(`W/"lesson_content:${lesson.id}:1"`)
    expect(first.body.data).toMatchObject({ revision: "1", video: { provider: "youtube" }, live: { url: "https://meet.example.com/room" } })
    const second = await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("Only")] } })
    expect(second.body.data).toMatchObject({ revision: "2", body: { blocks: [{ type: "paragraph", text: "Only" }] }, video: null, live: null, embed: null })
    const read = await api(h()).get(content(lessonPath))
    expect(read.headers.get("etag")).toBe(`W/"lesson_content:${lesson.id}:2"`)
    expect(read.body.data).toEqual(second.body.data)
  })

  it("PUT content honours If-Match with the content's ETag: current is 200, stale is 412 and nothing is saved", async () => {
    const { lesson, lessonPath } = await course(h())
    const ok = await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("One")] } }, { "if-match": `W/"lesson_content:${lesson.id}:0"` })
    expect(ok.status).toBe(200)
    const stale = await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("Two")] } }, { "if-match": `W/"lesson_content:${lesson.id}:0"` })
    expect(stale.status).toBe(412)
    expect(stale.body.error.code).toBe("revision_mismatch")
    expect((await api(h()).get(content(lessonPath))).body.data.body.blocks[0].text).toBe("One")
  })

  it("the lesson's revision changes on every write: the lesson, its content, its attachments (3.4.4)", async () => {
    const { lessonPath } = await course(h())
    const revision = async () => (await api(h()).get(lessonPath)).body.data.revision
    const before = await revision()
    await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("x")] } })
    const afterContent = await revision()
    expect(afterContent).not.toBe(before)
    await api(h()).put(`${lessonPath}/attachments`, { attachments: [{ name: "Slides", file: await upload(h(), "pdf", "pdf") }] })
    const afterAttachments = await revision()
    expect(afterAttachments).not.toBe(afterContent)
    await api(h()).patch(lessonPath, { name: "Renamed" })
    expect(await revision()).not.toBe(afterAttachments)
  })

  it("a content write is a lesson change: its event and audit entry are lesson.updated", async () => {
    const { lesson, lessonPath } = await course(h())
    const res = await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("x")] } })
    const entries = (await api(h()).get(`/audit-entries?resource_id=${lesson.id}&limit=200`)).body.data
    expect(entries.map((e: { action: string; request_id: string }) => [e.action, e.request_id])).toContainEqual([
      "lesson.updated",
      res.headers.get("x-request-id")
    ])
  })

  it("raw blocks are rejected, itemized on the block index (422)", async () => {
    const { lessonPath } = await course(h())
    const res = await api(h()).put(content(lessonPath), {
      body: { blocks: [paragraph("ok"), { type: "raw", html: "<script>x</script>" }, paragraph("ok"), { type: "raw", html: "<b>" }] }
    })
    expect(res.status).toBe(422)
    expect(res.body.error.code).toBe("validation_failed")
    expect(res.body.error.details.map((d: { field: string; reason: string }) => [d.field, d.reason])).toEqual([
      ["body.blocks[1]", "raw_block"],
      ["body.blocks[3]", "raw_block"]
    ])
    expect((await api(h()).get(content(lessonPath))).body.data.revision).toBe("0")
  })

  it("embed blocks need a recognized provider (422 on the block's url); recognized ones are accepted", async () => {
    const { lessonPath } = await course(h())
    const refused = await api(h()).put(content(lessonPath), {
      body: { blocks: [{ type: "embed", url: "https://evil.example.com/x" }, { type: "embed" }] }
    })
    expectError(refused, 422, "validation_failed", { field: "body.blocks[0].url", reason: "embed_provider_unrecognized" })
    expect(refused.body.error.details.map((d: { field: string; code: string }) => [d.field, d.code])).toEqual([
      ["body.blocks[0].url", "invalid_value"],
      ["body.blocks[1].url", "required"]
    ])
    expect(refused.body.error.details[0].reason).toBe("embed_provider_unrecognized")
    const accepted = await api(h()).put(content(lessonPath), {
      body: { blocks: [{ type: "embed", url: "https://youtu.be/abc" }, { type: "embed", url: "https://player.vimeo.com/video/1" }] },
      embed: { url: "https://www.loom.com/share/abc" }
    })
    expect(accepted.status).toBe(200)
    const embed = await api(h()).put(content(lessonPath), { body: { blocks: [] }, embed: { url: "https://unknown.example.org/v" } })
    expectError(embed, 422, "validation_failed", { field: "embed.url", reason: "embed_provider_unrecognized" })
  })

  it("a video's URL must be of its provider (422 video.url)", async () => {
    const { lessonPath } = await course(h())
    const res = await api(h()).put(content(lessonPath), { body: { blocks: [] }, video: { provider: "vimeo", url: "https://www.youtube.com/watch?v=1" } })
    expectError(res, 422, "validation_failed", { field: "video.url", reason: "provider_mismatch" })
  })

  it("quiz lessons accept no video (422 on video)", async () => {
    const { product, module } = await course(h())
    const quiz = await newLesson(h(), product.id, module.id, { kind: "quiz" })
    const path = content(`/products/${product.id}/lessons/${quiz.id}`)
    const res = await api(h()).put(path, { body: { blocks: [] }, video: { provider: "youtube", url: "https://youtu.be/x" } })
    expectError(res, 422, "validation_failed", { field: "video", code: "not_allowed", reason: "quiz_lesson" })
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: "video", code: "not_allowed", reason: "quiz_lesson" })])
    expect((await api(h()).put(path, { body: { blocks: [paragraph("Question 1")] } })).status).toBe(200)
  })

  it("body.inherited is accepted and ignored: it tells whether the lesson's content is connected", async () => {
    const { lessonPath } = await course(h())
    const res = await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("x")], inherited: true } })
    expect(res.status).toBe(200)
    expect(res.body.data.body.inherited).toBe(false)
  })

  it("a connected lesson's content cannot be replaced: 409 state_conflict", async () => {
    const { lesson, lessonPath } = await course(h())
    await h().patchRecord(mine(h()), "lesson", lesson.id, { connected: true })
    const res = await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("x")] } })
    expect(res.status).toBe(409)
    expect(res.body.error).toMatchObject({ code: "state_conflict", reason: "content_connected" })
    const read = await api(h()).get(content(lessonPath))
    expect(read.body.data.body.inherited).toBe(true)
    expect((await api(h()).get(lessonPath)).body.data.connected).toBe(true)
  })

  it("a replicated lesson's content is 403 replica_readonly", async () => {
    const { lesson, lessonPath } = await course(h())
    await h().patchRecord(mine(h()), "lesson", lesson.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "les_000000001" } })
    const res = await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("x")] } })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("replica_readonly")
  })

  it("a content body over 1 MiB is 413 payload_too_large; over 1,000 blocks is 422 too_many_items (§8.2)", async () => {
    const { lessonPath } = await course(h())
    const big = await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("x".repeat(400_000)), paragraph("y".repeat(400_000)), paragraph("z".repeat(400_000))] } })
    expect(big.status).toBe(413)
    expect(big.body.error.code).toBe("payload_too_large")
    const many = await api(h()).put(content(lessonPath), { body: { blocks: Array.from({ length: 1001 }, () => ({ type: "divider" })) } })
    expectError(many, 422, "too_many_items", { field: "body.blocks", code: "too_many_items" })
  })

  it("a file in a block must be a file of the account (422 on the block's file)", async () => {
    const { lessonPath } = await course(h())
    const image = await upload(h(), "editor")
    const ok = await api(h()).put(content(lessonPath), { body: { blocks: [{ type: "image", file: image, caption: "A" }] } })
    expect(ok.status).toBe(200)
    const missing = await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("x"), { type: "image", file: "fil_000000001" }] } })
    expectError(missing, 422, "validation_failed", { field: "body.blocks[1].file", reason: "not_found" })
  })

  it("a block field outside the block schema is 422 unknown_field", async () => {
    const { lessonPath } = await course(h())
    const res = await api(h()).put(content(lessonPath), { body: { blocks: [{ type: "paragraph", text: "x", color: "red" }] } })
    expectError(res, 422, "unknown_field", { field: "body.blocks[0].color", code: "unknown_field" })
  })

  // -------------------------------------------------------------------------------------
  // Attachments

  it("PUT attachments replaces the set in order: kept by id, new without, removed when left out", async () => {
    const { lesson, lessonPath } = await course(h())
    const pdf = await upload(h(), "pdf", "pdf")
    const image = await upload(h(), "image")
    const first = await api(h()).put(`${lessonPath}/attachments`, { attachments: [{ name: "Slides", file: pdf }, { name: "Map", file: image }] })
    expect(first.status).toBe(200)
    const [slides, map] = first.body.data
    expect(Object.keys(slides)).toEqual(["object", "id", "lesson_id", "name", "file", "position", "created_at", "updated_at", "revision"])
    expect(slides).toMatchObject({ object: "attachment", lesson_id: lesson.id, name: "Slides", file: pdf, position: 1 })
    expect(slides.id).toMatch(/^att_[0-9A-Za-z]{9}$/)
    expect(first.body.page).toEqual({ limit: 2, next_cursor: null, prev_cursor: null })
    const second = await api(h()).put(`${lessonPath}/attachments`, { attachments: [{ id: map.id, name: "Map v2", file: image }, { name: "Notes", file: pdf }] })
    expect(second.body.data.map((a: { id: string; name: string; position: number }) => [a.name, a.position])).toEqual([["Map v2", 1], ["Notes", 2]])
    expect(second.body.data[0].id).toBe(map.id)
    const listed = await api(h()).get(`${lessonPath}/attachments`)
    expect(listed.body.data).toEqual(second.body.data)
    expectError(await api(h()).get(`${lessonPath}/attachments/${slides.id}`), 404, "not_found")
    const one = await api(h()).get(`${lessonPath}/attachments/${map.id}`)
    expect(one.body.data.name).toBe("Map v2")
    expect(one.headers.get("etag")).toBe(`W/"attachment:${map.id}:${one.body.data.revision}"`)
    expect((await auditActions(h(), slides.id)).sort()).toEqual(["attachment.created", "attachment.deleted"])
  })

  it("attachments take If-Match of the lesson: the check and the lesson's new revision are one (3.4.4)", async () => {
    const { lessonPath } = await course(h())
    const pdf = await upload(h(), "pdf", "pdf")
    const etag = (await api(h()).get(lessonPath)).headers.get("etag")!
    const ok = await api(h()).put(`${lessonPath}/attachments`, { attachments: [{ name: "A", file: pdf }] }, { "if-match": etag })
    expect(ok.status).toBe(200)
    const next = (await api(h()).get(lessonPath)).headers.get("etag")!
    expect(ok.headers.get("etag")).toBe(next)
    expect(next).not.toBe(etag)
    const stale = await api(h()).put(`${lessonPath}/attachments`, { attachments: [] }, { "if-match": etag })
    expect(stale.status).toBe(412)
    expect(stale.body.error.code).toBe("revision_mismatch")
    expect((await api(h()).get(`${lessonPath}/attachments`)).body.data).toHaveLength(1)
  })

  it("a content write makes an attachments write with the older lesson ETag stale (412)", async () => {
    const { lessonPath } = await course(h())
    const etag = (await api(h()).get(lessonPath)).headers.get("etag")!
    await api(h()).put(content(lessonPath), { body: { blocks: [paragraph("x")] } })
    const stale = await api(h()).put(`${lessonPath}/attachments`, { attachments: [] }, { "if-match": etag })
    expectError(stale, 412, "revision_mismatch")
  })

  it("an attachment's file is a file of the account of purpose document, pdf or image (422 on the item)", async () => {
    const { lessonPath } = await course(h())
    const editorFile = await upload(h(), "editor")
    const res = await api(h()).put(`${lessonPath}/attachments`, { attachments: [{ name: "x", file: editorFile }] })
    expectError(res, 422, "validation_failed", { field: "attachments[0].file", reason: "purpose_mismatch" })
    const missing = await api(h()).put(`${lessonPath}/attachments`, { attachments: [{ name: "x", file: "fil_000000001" }] })
    expectError(missing, 422, "validation_failed", { field: "attachments[0].file", reason: "not_found" })
  })

  it("an id in the set must be an attachment of this lesson, once (422 on the item)", async () => {
    const one = await course(h())
    const two = await course(h())
    const pdf = await upload(h(), "pdf", "pdf")
    const theirs = (await api(h()).put(`${two.lessonPath}/attachments`, { attachments: [{ name: "x", file: pdf }] })).body.data[0]
    const foreign = await api(h()).put(`${one.lessonPath}/attachments`, { attachments: [{ id: theirs.id, name: "x", file: pdf }] })
    expectError(foreign, 422, "validation_failed", { field: "attachments[0].id", reason: "not_found" })
    const twice = await api(h()).put(`${two.lessonPath}/attachments`, {
      attachments: [{ id: theirs.id, name: "x", file: pdf }, { id: theirs.id, name: "y", file: pdf }]
    })
    expectError(twice, 422, "validation_failed", { field: "attachments[1].id", reason: "duplicate" })
  })

  it("a replicated lesson's attachments are read-only (403 replica_readonly)", async () => {
    const { lesson, lessonPath } = await course(h())
    await h().patchRecord(mine(h()), "lesson", lesson.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "les_000000001" } })
    const res = await api(h()).put(`${lessonPath}/attachments`, { attachments: [] })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("replica_readonly")
  })

  it("the answers match the served description (OpenAPI)", async () => {
    const { product, module, lessonPath } = await course(h())
    const doc = (await api(h()).get("/openapi.json")).body
    const lessonsPath = "/products/{product_id}/lessons/{lesson_id}"
    const put = await api(h()).put(content(lessonPath), {
      body: { blocks: [paragraph("x"), { type: "list", style: "ordered", items: ["a", "b"] }] },
      video: { provider: "vimeo", url: "https://vimeo.com/1" }
    })
    expect(conforms(doc, `${lessonsPath}/content`, "put", 200, put.body)).toEqual([])
    expect(conforms(doc, `${lessonsPath}/content`, "get", 200, (await api(h()).get(content(lessonPath))).body)).toEqual([])
    const set = await api(h()).put(`${lessonPath}/attachments`, { attachments: [{ name: "A", file: await upload(h(), "pdf", "pdf") }] })
    expect(conforms(doc, `${lessonsPath}/attachments`, "put", 200, set.body)).toEqual([])
    const one = await api(h()).get(`${lessonPath}/attachments/${set.body.data[0].id}`)
    expect(conforms(doc, `${lessonsPath}/attachments/{attachment_id}`, "get", 200, one.body)).toEqual([])
    expect(conforms(doc, lessonsPath, "get", 200, (await api(h()).get(lessonPath)).body)).toEqual([])
    const modulePath = "/products/{product_id}/modules/{module_id}"
    expect(conforms(doc, modulePath, "get", 200, (await api(h()).get(`/products/${product.id}/modules/${module.id}`)).body)).toEqual([])
    const publication = await api(h()).post(`/products/${product.id}/modules/${module.id}/publications`)
    expect(conforms(doc, `${modulePath}/publications`, "post", 202, publication.body)).toEqual([])
  })

  it("content and attachments of a trashed lesson are 404", async () => {
    const { lessonPath } = await course(h())
    await api(h()).del(lessonPath)
    expectError(await api(h()).get(content(lessonPath)), 404, "not_found")
    expectError(await api(h()).put(content(lessonPath), { body: { blocks: [] } }), 404, "not_found")
    expectError(await api(h()).get(`${lessonPath}/attachments`), 404, "not_found")
  })
})

eachStore("content: module publication and lesson copies", (h) => {
  const publish = (productId: string, moduleId: string, secret: Secret = h().live) =>
    api(h(), secret).post(`/products/${productId}/modules/${moduleId}/publications`)

  it("publishing a module answers 202 with the operation; the module and all its lessons end published, with their events", async () => {
    const { product, module, lesson } = await course(h())
    const second = await newLesson(h(), product.id, module.id)
    const res = await publish(product.id, module.id)
    expect(res.status).toBe(202)
    expect(res.body.data).toMatchObject({ object: "operation", type: "module_publication", progress: { total: 3 } })
    expect(res.headers.get("location")).toBe(`/api/v3/operations/${res.body.data.id}`)
    expect((await settle(h(), res.body.data.id)).status).toBe("succeeded")
    expect((await api(h()).get(`/products/${product.id}/modules/${module.id}`)).body.data.status).toBe("published")
    for (const id of [lesson.id, second.id]) {
      expect((await api(h()).get(`/products/${product.id}/lessons/${id}`)).body.data.status).toBe("published")
      expect(await auditActions(h(), id)).toContain("lesson.published")
    }
    expect(await auditActions(h(), module.id)).toContain("module.published")
  })

  it("the events of a publication and a copy carry the resource as recorded (module.published, lesson.copied)", async () => {
    const { product, module, lessonPath } = await course(h())
    await settle(h(), (await publish(product.id, module.id)).body.data.id)
    const published = (await api(h()).get(`/events?resource_id=${module.id}&type=module.published`)).body.data
    expect(published).toHaveLength(1)
    expect(published[0].data.object).toMatchObject({ object: "module", id: module.id, status: "published" })
    const copy = await api(h()).post(`${lessonPath}/copies`, { target_product_id: product.id })
    await settle(h(), copy.body.data.id)
    const copyId = (await api(h()).get(`/operations/${copy.body.data.id}/items`)).body.data[0].result.id
    const copied = (await api(h()).get(`/events?resource_id=${copyId}&type=lesson.copied`)).body.data
    expect(copied.map((e: { data: { object: { id: string; status: string } } }) => [e.data.object.id, e.data.object.status])).toEqual([[copyId, "draft"]])
  })

  it("a publication needs an Idempotency-Key (422) and modules.publish (403)", async () => {
    const { product, module } = await course(h())
    const keyless = await api(h()).post(`/products/${product.id}/modules/${module.id}/publications`, undefined, { idempotencyKey: null })
    expect(keyless.status).toBe(422)
    expect(keyless.body.error.code).toBe("idempotency_key_required")
    const editor = await credential(h(), [{ capabilities: ["modules.read", "modules.update"] }])
    const denied = await publish(product.id, module.id, editor)
    expect(denied.status).toBe(403)
    expect(denied.body.error.code).toBe("permission_denied")
  })

  it("publishing a module also publishes its copies in replicated accounts, with their lessons (3.3.0)", async () => {
    const { product, module } = await course(h())
    const other = await h().openAccount(`replica-${Date.now()}`)
    const theirs = liveSecretOf(other)
    const copy = await course(h(), theirs)
    await h().patchRecord(mine(h()), "module", module.id, { replicas: [{ account_id: other.account.id, environment: "production", id: copy.module.id }] })
    await h().patchRecord(production(other.account.id), "module", copy.module.id, {
      replica_of: { account_id: h().account.account.id, environment: "production", id: module.id }
    })
    const res = await publish(product.id, module.id)
    expect(res.body.data.progress.total).toBe(3)
    expect((await settle(h(), res.body.data.id)).status).toBe("succeeded")
    expect((await api(h(), theirs).get(`/products/${copy.product.id}/modules/${copy.module.id}`)).body.data.status).toBe("published")
    expect((await api(h(), theirs).get(copy.lessonPath)).body.data.status).toBe("published")
    expect(await auditActions(h(), copy.module.id, theirs)).toContain("module.published")
  })

  it("a replicated module may be published (3.3.0)", async () => {
    const { product, module } = await course(h())
    await h().patchRecord(mine(h()), "module", module.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "mod_000000001" } })
    const res = await publish(product.id, module.id)
    expect(res.status).toBe(202)
    expect((await settle(h(), res.body.data.id)).status).toBe("succeeded")
    expect((await api(h()).get(`/products/${product.id}/modules/${module.id}`)).body.data.status).toBe("published")
  })

  it("publishing a missing or trashed module is 404", async () => {
    const { product, module, lessonPath } = await course(h())
    expectError(await publish(product.id, "mod_000000001"), 404, "not_found")
    await api(h()).del(lessonPath)
    await api(h()).del(`/products/${product.id}/modules/${module.id}`)
    expectError(await publish(product.id, module.id), 404, "not_found")
  })

  const copyOf = async (op: { id: string }) => {
    const items = (await api(h()).get(`/operations/${op.id}/items`)).body.data
    return items[0].result.id as string
  }

  it("copying a lesson answers 202; the copy is a draft at the end of the target module, with the content and attachments", async () => {
    const source = await course(h())
    await api(h()).patch(source.lessonPath, { status: "published" })
    await api(h()).put(`${source.lessonPath}/content`, { body: { blocks: [paragraph("Original")] } })
    const pdf = await upload(h(), "pdf", "pdf")
    await api(h()).put(`${source.lessonPath}/attachments`, { attachments: [{ name: "Slides", file: pdf }] })
    const target = await course(h())
    const res = await api(h()).post(`${source.lessonPath}/copies`, { target_product_id: target.product.id, target_module_id: target.module.id, name: "Copied" })
    expect(res.status).toBe(202)
    expect(res.body.data).toMatchObject({ object: "operation", type: "lesson_copy" })
    expect(res.headers.get("location")).toBe(`/api/v3/operations/${res.body.data.id}`)
    expect((await settle(h(), res.body.data.id)).status).toBe("succeeded")
    const copyId = await copyOf(res.body.data)
    const copyPath = `/products/${target.product.id}/lessons/${copyId}`
    expect((await api(h()).get(copyPath)).body.data).toMatchObject({ name: "Copied", status: "draft", module_id: target.module.id, position: 2 })
    expect((await api(h()).get(`${copyPath}/content`)).body.data.body.blocks).toEqual([paragraph("Original")])
    const attachments = (await api(h()).get(`${copyPath}/attachments`)).body.data
    expect(attachments.map((a: { name: string; file: string; lesson_id: string }) => [a.name, a.file, a.lesson_id])).toEqual([["Slides", pdf, copyId]])
    expect(await auditActions(h(), copyId)).toEqual(expect.arrayContaining(["lesson.created", "lesson.copied"]))
    expect((await api(h()).get(source.lessonPath)).body.data.status).toBe("published")
  })

  it("a copy within the product goes to the source's module by default; to another product the module must be named (422)", async () => {
    const source = await course(h())
    const same = await api(h()).post(`${source.lessonPath}/copies`, { target_product_id: source.product.id })
    expect(same.status).toBe(202)
    await settle(h(), same.body.data.id)
    expect((await api(h()).get(`/products/${source.product.id}/lessons/${await copyOf(same.body.data)}`)).body.data.module_id).toBe(source.module.id)
    const target = await course(h())
    const unnamed = await api(h()).post(`${source.lessonPath}/copies`, { target_product_id: target.product.id })
    expectError(unnamed, 422, "validation_failed", { field: "target_module_id", code: "required" })
    const wrong = await api(h()).post(`${source.lessonPath}/copies`, { target_product_id: target.product.id, target_module_id: source.module.id })
    expectError(wrong, 422, "validation_failed", { field: "target_module_id", reason: "not_found" })
  })

  it("a copy needs lessons.create on the destination product (403 permission_denied)", async () => {
    const source = await course(h())
    const target = await course(h())
    const body = { target_product_id: target.product.id, target_module_id: target.module.id }
    const sourceOnly = await credential(h(), [{ capabilities: ["lessons.read", "lessons.create"], resources: [source.product.id] }])
    const denied = await api(h(), sourceOnly).post(`${source.lessonPath}/copies`, body)
    expect(denied.status).toBe(403)
    expect(denied.body.error.code).toBe("permission_denied")
    const both = await credential(h(), [
      { capabilities: ["lessons.read"], resources: [source.product.id] },
      { capabilities: ["lessons.create"], resources: [target.product.id] }
    ])
    expect((await api(h(), both).post(`${source.lessonPath}/copies`, body)).status).toBe(202)
    const readOnly = await credential(h(), [{ capabilities: ["lessons.read"] }])
    expectError(await api(h(), readOnly).post(`${source.lessonPath}/copies`, body), 403, "permission_denied")
  })

  it("a lesson outside the caller's lessons.read scope cannot be copied (404)", async () => {
    const source = await course(h())
    const target = await course(h())
    const targetOnly = await credential(h(), [{ capabilities: ["lessons.read", "lessons.create"], resources: [target.product.id] }])
    const res = await api(h(), targetOnly).post(`${source.lessonPath}/copies`, { target_product_id: target.product.id, target_module_id: target.module.id })
    expectError(res, 404, "not_found")
  })

  it("a replicated lesson cannot be copied (403 replica_readonly)", async () => {
    const source = await course(h())
    await h().patchRecord(mine(h()), "lesson", source.lesson.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "les_000000001" } })
    const res = await api(h()).post(`${source.lessonPath}/copies`, { target_product_id: source.product.id })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("replica_readonly")
  })

  it("no lesson is copied into a replicated product (403 replica_readonly)", async () => {
    const source = await course(h())
    const target = await course(h())
    await h().patchRecord(mine(h()), "product", target.product.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "prd_000000001" } })
    const res = await api(h()).post(`${source.lessonPath}/copies`, { target_product_id: target.product.id, target_module_id: target.module.id })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("replica_readonly")
  })

  it("the destination product must exist (422 target_product_id); copy bodies are strict", async () => {
    const source = await course(h())
    const missing = await api(h()).post(`${source.lessonPath}/copies`, { target_product_id: "prd_000000001", target_module_id: source.module.id })
    expectError(missing, 422, "validation_failed", { field: "target_product_id", reason: "not_found" })
    const absent = await api(h()).post(`${source.lessonPath}/copies`, {})
    expectError(absent, 422, "validation_failed", { field: "target_product_id", code: "required" })
    const unknown = await api(h()).post(`${source.lessonPath}/copies`, { target_product_id: source.product.id, status: "published" })
    expectError(unknown, 422, "unknown_field", { field: "status", code: "unknown_field" })
  })
})
