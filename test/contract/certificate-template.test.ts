/**
 * A product's certificate template (§2.3 `certificate_template`, §4.3 its ETag, §4.6 its
 * replace) and its PDF preview (open-points: `POST .../certificate-template/previews`
 * answering a file). Decisions: docs/certificates.md.
 */
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { inflateSync } from "node:zlib"
import { expect, it } from "vitest"
import { pooledCertificateRenderer } from "@syllabus/http"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith } from "../support/api.js"
import { expectError } from "../support/expect.js"

type Secret = string

const mine = (h: Harness, environment: "production" | "sandbox" = "production") => ({ accountId: h.account.account.id, environment })

const newProduct = async (h: Harness, name = "Photography 101", secret: Secret = h.live) => {
  const showcase = await created(api(h, secret).post("/showcases", { name: "Shelf" }))
  return created(api(h, secret).post("/products", { format: "course", name, showcase_id: showcase.id }))
}

const templatePath = (productId: string) => `/products/${productId}/certificate-template`

/** A real 1×1 PNG. */
const TINY_PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64")

/** A file through a whole upload; answers its ID. */
const upload = async (h: Harness, purpose: string, contentType: string, bytes: Buffer) => {
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const session = await h.request("POST", "/api/v3/uploads", {
    secret: h.live,
    json: { purpose, filename: "background", size: bytes.length, content_type: contentType, sha256 }
  })
  await h.request("PUT", session.body.data.upload_urls[0].url, { secret: h.live, raw: bytes, headers: { "content-type": "application/octet-stream" } })
  const file = await h.request("POST", `/api/v3/uploads/${session.body.data.id}/completions`, { secret: h.live })
  if (file.status !== 201) throw new Error(file.text)
  return file.body.data.id as string
}

/** The bytes of a file as the PostgreSQL runs' local storage keeps them; undefined on the memory runs. */
const storedBytes = (h: Harness, fileId: string) =>
  h.storageDirectory === undefined ? undefined : readFileSync(join(h.storageDirectory, "objects", h.account.account.id, "production", fileId))

const etagPattern = (productId: string) => new RegExp(`^W/"certificate_template:${productId}:(\\d+)"$`)

/** A template using every field. */
const fullTemplate = {
  enabled: true,
  single_issue: false,
  criteria: { kind: "percent", percent: 80 },
  defaults: { color: "#1F6FEB", font: "times_new_roman" },
  fields: [
    { key: "company", label: "Company", source: "custom_field" },
    { key: "email", label: "E-mail", source: "user" }
  ],
  layout: {
    back_side_enabled: false,
    background: null,
    show_dates: true,
    show_product_name: true,
    fields: {
      date: { color: "#333333", enabled: true, font: "arial" },
      document: { color: null, enabled: true, font: null },
      name: { color: "#000000", enabled: true, font: "courier_new" },
      sequence: { color: null, enabled: false, font: null }
    },
    qr: { background_color: "#FFFFFF", color: "#111111", enabled: true, position: "top-left" }
  },
  texts: { content: "{name} completed {product} on {date}.", instructor: "Ansel Adams", workload: "40 hours" }
}

/** The streams of a PDF, inflated when compressed. */
const pdfStreams = (pdf: Buffer): ReadonlyArray<string> => {
  const text = pdf.toString("latin1")
  const out: Array<string> = []
  let at = 0
  for (;;) {
    const found = text.indexOf("stream\n", at)
    if (found === -1) return out
    if (text.slice(found - 3, found) === "end") {
      at = found + 7
      continue
    }
    const start = found + 7
    const end = text.indexOf("\nendstream", start)
    const dictionary = text.slice(text.lastIndexOf("<<", found), found)
    const raw = pdf.subarray(start, end)
    out.push(dictionary.includes("/FlateDecode") ? inflateSync(raw).toString("latin1") : raw.toString("latin1"))
    at = end
  }
}

/** The text shown by the PDF's pages: each `TJ` array of hex strings, decoded (WinAnsi ≈ Latin-1), one per line. */
const pdfText = (pdf: Buffer): string =>
  pdfStreams(pdf)
    .flatMap((stream) => [...stream.matchAll(/\[([^\]]*)\]\s*TJ/g)])
    .map((m) => [...m[1]!.matchAll(/<([0-9a-fA-F]*)>/g)].map((hex) => Buffer.from(hex[1]!, "hex").toString("latin1")).join(""))
    .join("\n")

eachStore("certificate templates", (h) => {
  it("a product never given a template answers the defaults, enabled false, with an ETag over the product's revision", async () => {
    const product = await newProduct(h())
    const res = await api(h()).get(templatePath(product.id))
    expect(res.status).toBe(200)
    const etag = res.headers.get("etag") ?? ""
    const match = etagPattern(product.id).exec(etag)
    expect(match, etag).not.toBeNull()
    expect(res.body.data).toEqual({
      object: "certificate_template",
      product_id: product.id,
      revision: match![1],
      enabled: false,
      single_issue: true,
      criteria: { kind: "completion", percent: null, exam_id: null },
      defaults: { color: "#000000", font: "arial" },
      fields: [],
      layout: {
        back_side_enabled: false,
        background: null,
        show_dates: true,
        show_product_name: true,
        fields: {
          date: { color: null, enabled: true, font: null },
          document: { color: null, enabled: false, font: null },
          name: { color: null, enabled: true, font: null },
          sequence: { color: null, enabled: true, font: null }
        },
        qr: { background_color: "#FFFFFF", color: "#000000", enabled: true, position: "bottom-right" }
      },
      texts: { content: null, instructor: null, workload: null }
    })
  })

  it("PUT replaces the whole template: what is sent is answered and read back; what is omitted returns to its default", async () => {
    const product = await newProduct(h())
    const before = await api(h()).get(templatePath(product.id))
    const put = await api(h()).put(templatePath(product.id), fullTemplate, { "if-match": before.headers.get("etag")! })
    expect(put.status, put.text).toBe(200)
    expect(put.body.data).toMatchObject({ ...fullTemplate, criteria: { kind: "percent", percent: 80, exam_id: null } })
    expect(put.headers.get("etag")).not.toBe(before.headers.get("etag"))
    expect(put.headers.get("etag")).toBe(`W/"certificate_template:${product.id}:${put.body.data.revision}"`)
    const read = await api(h()).get(templatePath(product.id))
    expect(read.body.data).toEqual(put.body.data)
    expect(read.headers.get("etag")).toBe(put.headers.get("etag"))

    // A second PUT with only some fields: everything else, at every depth, is the default again.
    const partial = await api(h()).put(templatePath(product.id), { enabled: true, layout: { qr: { position: "bottom-left" } }, texts: { content: "Hello" } })
    expect(partial.status, partial.text).toBe(200)
    const data = partial.body.data
    expect(data.enabled).toBe(true)
    expect(data.single_issue).toBe(true)
    expect(data.criteria).toEqual({ kind: "completion", percent: null, exam_id: null })
    expect(data.defaults).toEqual({ color: "#000000", font: "arial" })
    expect(data.fields).toEqual([])
    expect(data.layout.qr).toEqual({ background_color: "#FFFFFF", color: "#000000", enabled: true, position: "bottom-left" })
    expect(data.layout.fields.name).toEqual({ color: null, enabled: true, font: null })
    expect(data.texts).toEqual({ content: "Hello", instructor: null, workload: null })
    expect(Number(data.revision)).toBeGreaterThan(Number(put.body.data.revision))
  })

  it("the ETag covers the product: a PATCH of the product makes an earlier ETag stale (412); the current one, or *, applies", async () => {
    const product = await newProduct(h())
    const first = await api(h()).put(templatePath(product.id), { texts: { content: "One" } })
    const stale = first.headers.get("etag")!
    const patched = await api(h()).patch(`/products/${product.id}`, { name: "Photography 102" })
    expect(patched.status, patched.text).toBe(200)
    const now = await api(h()).get(templatePath(product.id))
    expect(now.headers.get("etag")).not.toBe(stale)
    expect(now.body.data.texts.content).toBe("One")

    expectError(await api(h()).put(templatePath(product.id), { texts: { content: "Two" } }, { "if-match": stale }), 412, "revision_mismatch")
    expect((await api(h()).get(templatePath(product.id))).body.data.texts.content).toBe("One")
    // An ETag of another product, or of another type, does not match either.
    const other = await newProduct(h())
    const otherEtag = (await api(h()).get(templatePath(other.id))).headers.get("etag")!
    expectError(await api(h()).put(templatePath(product.id), {}, { "if-match": otherEtag }), 412, "revision_mismatch")
    expectError(await api(h()).put(templatePath(product.id), {}, { "if-match": `W/"product:${product.id}:1"` }), 412, "revision_mismatch")
    expectError(await api(h()).put(templatePath(product.id), {}, { "if-match": "not-an-etag" }), 400, "if_match_invalid")

    const ok = await api(h()).put(templatePath(product.id), { texts: { content: "Two" } }, { "if-match": now.headers.get("etag")! })
    expect(ok.status, ok.text).toBe(200)
    const star = await api(h()).put(templatePath(product.id), { texts: { content: "Three" } }, { "if-match": "*" })
    expect(star.status, star.text).toBe(200)
    expect(star.body.data.texts.content).toBe("Three")
  })

  it("criteria, fonts, QR positions and colors must be supported values: 422 itemized, nothing saved", async () => {
    const product = await newProduct(h())
    const before = await api(h()).get(templatePath(product.id))
    const bad = await api(h()).put(templatePath(product.id), {
      criteria: { kind: "attendance" },
      defaults: { font: "comic_sans", color: "blue" },
      layout: { qr: { position: "middle" }, fields: { name: { font: "wingdings" } } }
    })
    const error = expectError(bad, 422, "validation_failed", { field: "criteria.kind", code: "invalid_value" })
    expect(error.details.find((d) => d.field === "criteria.kind")?.allowed).toEqual(["completion", "percent", "exam"])
    expectError(bad, 422, "validation_failed", { field: "defaults.font", code: "invalid_value" })
    expectError(bad, 422, "validation_failed", { field: "defaults.color", code: "invalid_value" })
    expectError(bad, 422, "validation_failed", { field: "layout.qr.position", code: "invalid_value" })
    expectError(bad, 422, "validation_failed", { field: "layout.fields.name.font", code: "invalid_value" })

    // Rules across fields, each itemized.
    const rules = await api(h()).put(templatePath(product.id), {
      criteria: { kind: "percent", exam_id: "exm_000000001" },
      fields: [
        { key: "company", label: "Company", source: "custom_field" },
        { key: "company", label: "Firm", source: "custom_field" }
      ]
    })
    expectError(rules, 422, "validation_failed", { field: "criteria.percent", code: "required" })
    expectError(rules, 422, "validation_failed", { field: "criteria.exam_id", code: "not_allowed", reason: "criteria_kind" })
    expectError(rules, 422, "validation_failed", { field: "fields[1].key", code: "invalid_value", reason: "duplicate" })
    expectError(await api(h()).put(templatePath(product.id), { criteria: { kind: "completion", percent: 50 } }), 422, "validation_failed", {
      field: "criteria.percent",
      code: "not_allowed"
    })
    expectError(await api(h()).put(templatePath(product.id), { criteria: { kind: "percent", percent: 101 } }), 422, "validation_failed", {
      field: "criteria.percent",
      code: "out_of_range"
    })
    expectError(await api(h()).put(templatePath(product.id), { criteria: { kind: "exam" } }), 422, "validation_failed", {
      field: "criteria.exam_id",
      code: "required"
    })
    expectError(await api(h()).put(templatePath(product.id), { criteria: { kind: "exam", exam_id: "exm_000000001" } }), 422, "validation_failed", {
      field: "criteria.exam_id",
      reason: "not_found"
    })
    expectError(await api(h()).put(templatePath(product.id), { criteria: { kind: "exam", exam_id: "nope" } }), 422, "validation_failed", {
      field: "criteria.exam_id",
      code: "invalid"
    })
    expectError(await api(h()).put(templatePath(product.id), { layout: { background: "fil_000000001" } }), 422, "validation_failed", {
      field: "layout.background",
      reason: "not_found"
    })
    expectError(await api(h()).put(templatePath(product.id), { colour: "#000000" }), 422, "unknown_field", { field: "colour" })
    // §8.2 text limits, and the template's own.
    expectError(await api(h()).put(templatePath(product.id), { texts: { content: "x".repeat(64 * 1024 + 1) } }), 422, "validation_failed", {
      field: "texts.content",
      code: "too_long"
    })
    expectError(await api(h()).put(templatePath(product.id), { texts: { instructor: "x".repeat(201) } }), 422, "validation_failed", {
      field: "texts.instructor",
      code: "too_long"
    })
    const many = Array.from({ length: 21 }, (_, i) => ({ key: `k${i}`, label: `L${i}`, source: "custom_field" }))
    expectError(await api(h()).put(templatePath(product.id), { fields: many }), 422, "too_many_items", { field: "fields" })

    const after = await api(h()).get(templatePath(product.id))
    expect(after.body.data).toEqual(before.body.data)
    expect(after.headers.get("etag")).toBe(before.headers.get("etag"))
  })

  it("criteria.exam_id must name an exam of the product", async () => {
    const product = await newProduct(h())
    const exam = await created(api(h()).post(`/products/${product.id}/exams`, { title: "Final exam" }))
    const ok = await api(h()).put(templatePath(product.id), { criteria: { kind: "exam", exam_id: exam.id } })
    expect(ok.status, ok.text).toBe(200)
    expect(ok.body.data.criteria).toEqual({ kind: "exam", percent: null, exam_id: exam.id })
    const other = await newProduct(h())
    expectError(await api(h()).put(templatePath(other.id), { criteria: { kind: "exam", exam_id: exam.id } }), 422, "validation_failed", {
      field: "criteria.exam_id",
      reason: "not_found"
    })
  })

  it("a replicated product's template is read-only (403 replica_readonly) and still readable", async () => {
    const product = await newProduct(h())
    await h().patchRecord(mine(h()), "product", product.id, { replica_of: { account_id: "acc_000000001", environment: "production", id: "prd_000000001" } })
    expectError(await api(h()).put(templatePath(product.id), { enabled: true }), 403, "replica_readonly")
    expect((await api(h()).get(templatePath(product.id))).status).toBe(200)
  })

  it("a missing, trashed, malformed or other account's product is 404", async () => {
    expectError(await api(h()).get(templatePath("prd_000000001")), 404, "not_found")
    expectError(await api(h()).get(templatePath("nope")), 404, "not_found")
    expectError(await api(h()).put(templatePath("prd_000000001"), {}), 404, "not_found")
    const product = await newProduct(h())
    expect((await api(h()).del(`/products/${product.id}`)).status).toBe(200)
    expectError(await api(h()).get(templatePath(product.id)), 404, "not_found")
    expectError(await api(h()).put(templatePath(product.id), {}), 404, "not_found")
    expectError(await api(h()).post(`${templatePath(product.id)}/previews`, {}), 404, "not_found")
    const elsewhere = await newProduct(h())
    const other = await h().openAccount(`cert-${Date.now()}`)
    const otherSecret = other.credentials.find((c) => c.environment === "production")!.secret
    expectError(await api(h(), otherSecret).get(templatePath(elsewhere.id)), 404, "not_found")
    expectError(await api(h(), h().test).get(templatePath(elsewhere.id)), 404, "not_found")
  })

  it("capabilities: certificate_templates.read reads, certificate_templates.update replaces and previews", async () => {
    const product = await newProduct(h())
    const none = await credentialWith(h(), ["products.read"])
    expectError(await api(h(), none).get(templatePath(product.id)), 403, "permission_denied")
    const reader = await credentialWith(h(), ["certificate_templates.read"])
    expect((await api(h(), reader).get(templatePath(product.id))).status).toBe(200)
    expectError(await api(h(), reader).put(templatePath(product.id), {}), 403, "permission_denied")
    expectError(await api(h(), reader).post(`${templatePath(product.id)}/previews`, {}), 403, "permission_denied")
    const writer = await credentialWith(h(), ["certificate_templates.update"])
    expect((await api(h(), writer).put(templatePath(product.id), { texts: { content: "Hi" } })).status).toBe(200)
    // Limited to another product: this one is out of scope, as if missing.
    const other = await newProduct(h())
    const scoped = (await api(h()).post("/credentials", { name: "scoped", policies: [{ capabilities: ["certificate_templates.read"], resources: [other.id] }] })).body
      .data.secret.value as string
    expectError(await api(h(), scoped).get(templatePath(product.id)), 404, "not_found")
    expect((await api(h(), scoped).get(templatePath(other.id))).status).toBe(200)
    // The catalog lists them, and the catalog editor's template holds the template's.
    const capabilities = (await api(h()).get("/capabilities")).body.data
    expect(JSON.stringify(capabilities)).toContain("certificate_templates.update")
    const templates = (await api(h()).get("/policy-templates")).body.data as ReadonlyArray<{ id: string; capabilities: ReadonlyArray<string> }>
    expect(templates.find((t) => t.id === "catalog_editor")?.capabilities).toEqual(
      expect.arrayContaining(["certificate_templates.read", "certificate_templates.update"])
    )
  })

  it("a replace records the event certificate_template.updated and its audit entry", async () => {
    const product = await newProduct(h())
    const put = await api(h()).put(templatePath(product.id), { enabled: true, texts: { content: "Well done" } })
    expect(put.status).toBe(200)
    const events = (await api(h()).get("/events?type=certificate_template.updated&limit=200")).body.data as ReadonlyArray<any>
    const mineEvent = events.find((e) => e.data.object.product_id === product.id)
    expect(mineEvent?.data.object).toEqual(put.body.data)
    expect(mineEvent?.previous_attributes).toMatchObject({ enabled: false })
    const audit = (await api(h()).get(`/audit-entries?resource_id=${product.id}&limit=200`)).body.data.map((e: { action: string }) => e.action)
    expect(audit).toContain("certificate_template.updated")
    const types = (await api(h()).get("/event-types")).body.data.map((t: { type: string }) => t.type)
    expect(types).toEqual(expect.arrayContaining(["certificate_template.updated", "certificate.issued"]))
  })

  it("a sandbox reset empties the templates of the sandbox", async () => {
    const product = await newProduct(h(), "Sandboxed", h().test)
    expect((await api(h(), h().test).put(templatePath(product.id), { enabled: true })).status).toBe(200)
    expect((await h().request("POST", "/api/v3/sandbox/resets", { secret: h().test })).status).toBe(201)
    expect(await h().storedRecord(mine(h(), "sandbox"), "certificate_template", product.id)).toBeUndefined()
  })

  // -------------------------------------------------------------------------------------
  // Preview

  it("preview: 409 template_not_previewable without a template, or with neither content nor fields", async () => {
    const product = await newProduct(h())
    expectError(await api(h()).post(`${templatePath(product.id)}/previews`, {}), 409, "template_not_previewable", { reason: "no_template" })
    await api(h()).put(templatePath(product.id), { enabled: true })
    const empty = expectError(await api(h()).post(`${templatePath(product.id)}/previews`, {}), 409, "template_not_previewable", { reason: "no_content" })
    // The message names the actual problem, in the request's language.
    expect(empty.message).toContain("texts.content")
    const portuguese = await h().request("POST", `/api/v3${templatePath(product.id)}/previews`, { secret: h().live, json: {}, headers: { "accept-language": "pt-BR" } })
    expect(portuguese.body.error.message).toContain("nada para pré-visualizar")
    await api(h()).put(templatePath(product.id), { texts: { content: "   " } })
    expectError(await api(h()).post(`${templatePath(product.id)}/previews`, {}), 409, "template_not_previewable", { reason: "no_content" })
  })

  it("preview: renders a real PDF, stored as a file of purpose certificate_preview (a disabled template too)", async () => {
    const product = await newProduct(h(), "Photography 101")
    await api(h()).put(templatePath(product.id), { ...fullTemplate, enabled: false })
    const res = await api(h()).post(`${templatePath(product.id)}/previews`, {
      sample: { name: "Grace Hopper", document: "123.456.789-00", issued_at: "2026-03-02T10:00:00-03:00", fields: [{ key: "company", value: "Navy" }] }
    })
    expect(res.status, res.text).toBe(201)
    const file = res.body.data
    expect(res.headers.get("location")).toBe(`/api/v3/files/${file.id}`)
    expect(file).toMatchObject({ object: "file", purpose: "certificate_preview", content_type: "application/pdf", filename: `certificate-preview-${product.id}.pdf` })
    expect(file.size).toBeGreaterThan(500)
    expect(file.sha256).toMatch(/^[0-9a-f]{64}$/)
    expect((await api(h()).get(`/files/${file.id}`)).body.data).toEqual(file)
    const audit = (await api(h()).get(`/audit-entries?resource_id=${file.id}`)).body.data.map((e: { action: string }) => e.action)
    expect(audit).toContain("file.created")

    // The bytes, as storage keeps them (the API has no download route for files yet): the
    // local storage of the PostgreSQL runs is a directory; the memory runs keep them in memory.
    if (h().storageDirectory === undefined) return
    const pdf = readFileSync(join(h().storageDirectory!, "objects", h().account.account.id, "production", file.id))
    expect(pdf.length).toBe(file.size)
    expect(pdf.subarray(0, 5).toString("latin1")).toBe("%PDF-")
    expect(pdf.toString("latin1").trimEnd().endsWith("%%EOF")).toBe(true)
    expect(pdf.toString("latin1").match(/\/Type \/Page\b/g)?.length).toBe(1)
    const text = pdfText(pdf)
    expect(text).toContain("Photography 101")
    expect(text).toContain("Grace Hopper")
    // `{name} completed {product} on {date}.`, filled in.
    expect(text).toContain("Grace Hopper completed Photography 101 on 2026-03-02.")
    expect(text).toContain("Company: Navy")
    expect(text).toContain("E-mail: [E-mail]")
    expect(text).toContain("PREVIEW")
    // The QR symbol: one filled square per dark module (far more than the frame's few).
    expect(pdfStreams(pdf).join("\n").match(/ re\n/g)?.length).toBeGreaterThan(100)
  })

  it("layout.background: a PNG or JPEG of purpose image, drawn on the preview; a broken image leaves the frame instead", async () => {
    const product = await newProduct(h(), "Backgrounds")
    const gif = await upload(h(), "image", "image/gif", Buffer.concat([Buffer.from("GIF89a"), Buffer.alloc(32)]))
    expectError(await api(h()).put(templatePath(product.id), { layout: { background: gif } }), 422, "validation_failed", {
      field: "layout.background",
      reason: "unsupported_image_type"
    })
    const pdfFile = await upload(h(), "pdf", "application/pdf", Buffer.concat([Buffer.from("%PDF-1.7"), Buffer.alloc(32)]))
    expectError(await api(h()).put(templatePath(product.id), { layout: { background: pdfFile } }), 422, "validation_failed", {
      field: "layout.background",
      reason: "purpose_mismatch"
    })

    const png = await upload(h(), "image", "image/png", TINY_PNG)
    const put = await api(h()).put(templatePath(product.id), { layout: { background: png }, texts: { content: "With a background" } })
    expect(put.status, put.text).toBe(200)
    expect(put.body.data.layout.background).toBe(png)
    const preview = await api(h()).post(`${templatePath(product.id)}/previews`, {})
    expect(preview.status, preview.text).toBe(201)
    const drawn = storedBytes(h(), preview.body.data.id)
    if (drawn !== undefined) expect(drawn.toString("latin1")).toContain("/Subtype /Image")

    // The upload checks an image by its first bytes only: one that does not parse is not drawn.
    const broken = await upload(h(), "image", "image/png", Buffer.concat([TINY_PNG.subarray(0, 8), Buffer.alloc(56)]))
    await api(h()).put(templatePath(product.id), { layout: { background: broken }, texts: { content: "Broken background" } })
    const fallback = await api(h()).post(`${templatePath(product.id)}/previews`, {})
    expect(fallback.status, fallback.text).toBe(201)
    const framed = storedBytes(h(), fallback.body.data.id)
    if (framed !== undefined) {
      expect(framed.toString("latin1")).not.toContain("/Subtype /Image")
      expect(pdfText(framed)).toContain("Broken background")
    }
  })

  it("preview: the back side is a second page; Idempotency-Key is required and a retry answers the same file", async () => {
    const product = await newProduct(h(), "Two Sides")
    await api(h()).put(templatePath(product.id), { fields: [{ key: "company", label: "Company", source: "custom_field" }], layout: { back_side_enabled: true } })
    expectError(await api(h()).post(`${templatePath(product.id)}/previews`, {}, { idempotencyKey: null }), 422, "idempotency_key_required")
    const first = await api(h()).post(`${templatePath(product.id)}/previews`, {}, { idempotencyKey: `preview-${product.id}` })
    expect(first.status, first.text).toBe(201)
    const again = await api(h()).post(`${templatePath(product.id)}/previews`, {}, { idempotencyKey: `preview-${product.id}` })
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    expectError(await api(h()).post(`${templatePath(product.id)}/previews`, { sample: { name: "Other" } }, { idempotencyKey: `preview-${product.id}` }), 422, "idempotency_key_reused")
    expectError(await api(h()).post(`${templatePath(product.id)}/previews`, { sample: { colour: "red" } }), 422, "unknown_field", { field: "sample.colour" })

    if (h().storageDirectory === undefined) return
    const pdf = readFileSync(join(h().storageDirectory!, "objects", h().account.account.id, "production", first.body.data.id))
    expect(pdf.toString("latin1").match(/\/Type \/Page\b/g)?.length).toBe(2)
    expect(pdfText(pdf)).toContain("Company: [Company]")
  })
})

// ---------------------------------------------------------------------------------------
// Rendering off the event loop (issue 23, finding 5): a preview of a 64 KiB word without
// spaces took ~5 s of synchronous CPU, and every other request waited for it.

/** A template whose content is one 64 KiB word: seconds of pdfkit's line breaking. */
const heavyTemplate = { ...fullTemplate, texts: { ...fullTemplate.texts, content: "W".repeat(64 * 1024) } }

let accounts = 0
const otherAccountSecret = async (h: Harness) => {
  const other = await h.openAccount(`render-${Date.now()}-${++accounts}`)
  return other.credentials.find((c) => c.environment === "sandbox")!.secret
}

const pdfOf = async (h: Harness, fileId: string) => {
  const res = await fetch(`${h.baseUrl}/api/v3/files/${fileId}/content`, { headers: { authorization: `Bearer ${h.live}` } })
  expect(res.status).toBe(200)
  return Buffer.from(await res.arrayBuffer())
}

eachStore("certificate previews off the event loop", (h) => {
  it("while a heavy preview renders, another account's GETs are answered; the preview is a valid PDF (or 422 render_budget_exceeded)", async () => {
    const product = await newProduct(h(), "Heavy")
    expect((await api(h()).put(templatePath(product.id), heavyTemplate)).status).toBe(200)
    const other = await otherAccountSecret(h())
    expect((await api(h(), other).get("/products")).status).toBe(200)
    let answered = false
    const preview = api(h()).post(`${templatePath(product.id)}/previews`, {}).finally(() => {
      answered = true
    })
    // Another account's GETs, one after the other, while the preview renders: with the render
    // on the event loop none would be answered before it.
    const GETS = 10
    let before = 0
    for (let i = 0; i < GETS; i++) {
      const res = await api(h(), other).get("/products")
      expect(res.status).toBe(200)
      if (!answered) before++
    }
    expect(before).toBe(GETS)
    const res = await preview
    if (res.status === 201) {
      const pdf = await pdfOf(h(), res.body.data.id)
      expect(pdf.subarray(0, 5).toString("latin1")).toBe("%PDF-")
      expect(pdf.toString("latin1").trimEnd().endsWith("%%EOF")).toBe(true)
    } else {
      expectError(res, 422, "domain_rule_violation", { reason: "render_budget_exceeded" })
    }
  }, 60_000)
})

eachStore(
  "certificate previews past the render budget",
  (h) => {
    it("a render past its time budget is stopped: 422 domain_rule_violation (render_budget_exceeded); a light preview still renders", async () => {
      const product = await newProduct(h(), "Too heavy")
      expect((await api(h()).put(templatePath(product.id), heavyTemplate)).status).toBe(200)
      expectError(await api(h()).post(`${templatePath(product.id)}/previews`, {}), 422, "domain_rule_violation", { reason: "render_budget_exceeded" })
      // The stopped thread is replaced: the next render goes through.
      const light = await newProduct(h(), "Light")
      expect((await api(h()).put(templatePath(light.id), fullTemplate)).status).toBe(200)
      const res = await api(h()).post(`${templatePath(light.id)}/previews`, {})
      expect(res.status, res.text).toBe(201)
      expect((await pdfOf(h(), res.body.data.id)).subarray(0, 5).toString("latin1")).toBe("%PDF-")
    }, 60_000)
  },
  // A budget no heavy render fits in, and long enough for a light one on a loaded machine.
  { certificateRenderer: pooledCertificateRenderer({ budgetMs: 1500 }) }
)
