/**
 * Issued certificates (`GET /certificates`, `GET /certificates/{certificate_id}`): read-only
 * records the platform issues through `issueCertificateIfEarned` in the unit of work of a
 * progress change or an exam attempt. Here the use case runs on the server's own store (the
 * operator handle), as those use cases run it; the reads go over HTTP. Decisions:
 * docs/certificates.md.
 */
import { type CertificateProgress, issueCertificateIfEarned } from "@syllabus/core"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith, credentialWithPolicies, newProduct, runAsAccount } from "../support/api.js"
import { eventually } from "../support/eventually.js"
import { pdfText } from "../support/pdf.js"
import { expectError } from "../support/expect.js"

type Secret = string

/** A product whose template issues on completion. */
const certifiedProduct = async (h: Harness, secret: Secret = h.live, template: object = { enabled: true }) => {
  const product = await newProduct(h, secret)
  const res = await api(h, secret).put(`/products/${product.id}/certificate-template`, template)
  if (res.status !== 200) throw new Error(res.text)
  return product
}

let counter = 0
/** A well-formed public ID of a kind, distinct per call. */
const someId = (prefix: string) => `${prefix}_${String(++counter + 1000).padStart(9, "0")}`

/** Run the use case as a progress change would: in a unit of work, for a caller of the environment. */
const issue = (h: Harness, progress: Partial<CertificateProgress> & { productId: string }, environment: "production" | "sandbox" = "production") => {
  const full: CertificateProgress = { userId: someId("usr"), enrollmentId: someId("enr"), percent: 100, completed: true, passedExamIds: [], ...progress }
  return runAsAccount(h, issueCertificateIfEarned(full), environment) as Promise<Record<string, any> | null>
}

eachStore("certificates", (h) => {
  it("GET /certificates/{id} answers the certificate as issued, with its ETag", async () => {
    const product = await certifiedProduct(h())
    const userId = someId("usr")
    const enrollmentId = someId("enr")
    const issued = await issue(h(), { productId: product.id, userId, enrollmentId })
    expect(issued).not.toBeNull()
    // Its document is drawn after the issue (the next test): then `file_id`, `updated_at` and `revision` change.
    const res = await api(h()).get(`/certificates/${issued!.id}`)
    expect(res.status, res.text).toBe(200)
    expect(res.headers.get("etag")).toBe(`W/"certificate:${issued!.id}:${res.body.data.revision}"`)
    expect(Object.keys(res.body.data)).toEqual([
      "object",
      "id",
      "user_id",
      "product_id",
      "enrollment_id",
      "issued_at",
      "sequence",
      "code",
      "criteria",
      "file_id",
      "created_at",
      "updated_at",
      "revision"
    ])
    const { file_id: _file, updated_at: _updated, revision: _revision, ...unchanged } = issued!
    expect(res.body.data).toMatchObject(unchanged)
    expect(issued).toMatchObject({ file_id: null, revision: "1" })
    expect(res.body.data).toMatchObject({
      object: "certificate",
      user_id: userId,
      product_id: product.id,
      enrollment_id: enrollmentId,
      sequence: 1,
      criteria: { kind: "completion", percent: null, exam_id: null }
    })
    expect(res.body.data.id).toMatch(/^crt_[0-9A-Za-z]{9}$/)
    expect(res.body.data.issued_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  })

  it("once per learner and product with single_issue; the sequence counts the product's certificates", async () => {
    const product = await certifiedProduct(h())
    const userId = someId("usr")
    const first = await issue(h(), { productId: product.id, userId })
    expect(await issue(h(), { productId: product.id, userId })).toBeNull()
    const second = await issue(h(), { productId: product.id })
    expect([first!.sequence, second!.sequence]).toEqual([1, 2])
    const list = await api(h()).get(`/certificates?product_id=${product.id}`)
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual([second!.id, first!.id])
  })

  it("lists newest first, pages with cursors, sorts by issued_at, filters by learner, product and issue dates", async () => {
    const product = await certifiedProduct(h())
    const other = await certifiedProduct(h())
    const learner = someId("usr")
    const a = await issue(h(), { productId: product.id, userId: learner })
    h().advance(60_000)
    const b = await issue(h(), { productId: product.id })
    h().advance(60_000)
    const c = await issue(h(), { productId: other.id, userId: learner })

    const page1 = await api(h()).get(`/certificates?limit=2&user_id=${learner}`)
    expect(page1.status, page1.text).toBe(200)
    expect(page1.body.data.map((x: { id: string }) => x.id)).toEqual([c!.id, a!.id])
    expect(page1.body.page).toMatchObject({ limit: 2 })

    const byProduct = await api(h()).get(`/certificates?product_id=${product.id}&limit=1`)
    expect(byProduct.body.data.map((x: { id: string }) => x.id)).toEqual([b!.id])
    const next = await api(h()).get(`/certificates?product_id=${product.id}&limit=1&cursor=${encodeURIComponent(byProduct.body.page.next_cursor)}`)
    expect(next.body.data.map((x: { id: string }) => x.id)).toEqual([a!.id])
    expect(next.body.page.next_cursor).toBeNull()
    // A cursor is bound to its filters.
    expectError(
      await api(h()).get(`/certificates?product_id=${other.id}&limit=1&cursor=${encodeURIComponent(byProduct.body.page.next_cursor)}`),
      400,
      "invalid_cursor"
    )

    const oldestFirst = await api(h()).get(`/certificates?product_id=${product.id}&sort=issued_at`)
    expect(oldestFirst.body.data.map((x: { id: string }) => x.id)).toEqual([a!.id, b!.id])
    const both = await api(h()).get(`/certificates?user_id=${learner}&product_id=${other.id}`)
    expect(both.body.data.map((x: { id: string }) => x.id)).toEqual([c!.id])

    const after = await api(h()).get(`/certificates?product_id=${product.id}&issued_after=${encodeURIComponent(b!.issued_at)}`)
    expect(after.body.data.map((x: { id: string }) => x.id)).toEqual([b!.id])
    const before = await api(h()).get(`/certificates?product_id=${product.id}&issued_before=${encodeURIComponent(b!.issued_at)}`)
    expect(before.body.data.map((x: { id: string }) => x.id)).toEqual([a!.id])

    expectError(await api(h()).get("/certificates?user_id=nope"), 422, "validation_failed", { parameter: "user_id" })
    expectError(await api(h()).get("/certificates?issued_after=yesterday"), 422, "validation_failed", { parameter: "issued_after" })
    expectError(await api(h()).get("/certificates?sort=code"), 422, "validation_failed", { parameter: "sort" })
    expectError(await api(h()).get("/certificates?color=red"), 400, "unknown_parameter", { parameter: "color" })
  })

  it("nothing is issued while the template is disabled or its criteria are not met", async () => {
    const disabled = await certifiedProduct(h(), h().live, { enabled: false })
    expect(await issue(h(), { productId: disabled.id })).toBeNull()
    const percent = await certifiedProduct(h(), h().live, { enabled: true, criteria: { kind: "percent", percent: 75 } })
    expect(await issue(h(), { productId: percent.id, percent: 74, completed: false })).toBeNull()
    expect(await issue(h(), { productId: percent.id, percent: 75, completed: false })).toMatchObject({ criteria: { kind: "percent", percent: 75, exam_id: null } })
    expect((await api(h()).get(`/certificates?product_id=${disabled.id}`)).body.data).toEqual([])
  })

  it("read only: a missing, malformed or other environment's certificate is 404; there is no create, update or delete", async () => {
    const product = await certifiedProduct(h())
    const issued = await issue(h(), { productId: product.id })
    expectError(await api(h()).get("/certificates/crt_000000001"), 404, "not_found")
    expectError(await api(h()).get("/certificates/nope"), 404, "not_found")
    expectError(await api(h(), h().test).get(`/certificates/${issued!.id}`), 404, "not_found")
    const other = await h().openAccount(`crt-${Date.now()}`)
    expectError(await api(h(), other.credentials.find((c) => c.environment === "production")!.secret).get(`/certificates/${issued!.id}`), 404, "not_found")
    expectError(await api(h()).post("/certificates", { user_id: someId("usr") }), 405, "method_not_allowed")
    expectError(await api(h()).patch(`/certificates/${issued!.id}`, { sequence: 9 }), 405, "method_not_allowed")
    expectError(await api(h()).del(`/certificates/${issued!.id}`), 405, "method_not_allowed")
  })

  it("needs certificates.read; the read-only template has it", async () => {
    const product = await certifiedProduct(h())
    const issued = await issue(h(), { productId: product.id })
    const without = await credentialWith(h(), ["products.read"])
    expectError(await api(h(), without).get("/certificates"), 403, "permission_denied")
    expectError(await api(h(), without).get(`/certificates/${issued!.id}`), 403, "permission_denied")
    const reader = await credentialWith(h(), ["certificates.read"])
    expect((await api(h(), reader).get(`/certificates/${issued!.id}`)).status).toBe(200)
    const readOnly = (await api(h()).post("/credentials", { name: "ro", policies: [{ template: "read_only" }] })).body.data.secret.value as string
    expect((await api(h(), readOnly).get(`/certificates?product_id=${product.id}`)).body.data.map((c: { id: string }) => c.id)).toEqual([issued!.id])
  })

  it("issuing records certificate.issued and its audit entry", async () => {
    const product = await certifiedProduct(h())
    const issued = await issue(h(), { productId: product.id })
    // (`certificate.updated` follows when its document is drawn: "certificate documents" below.)
    const events = (await api(h()).get(`/events?resource_id=${issued!.id}&type=certificate.issued`)).body.data
    expect(events.map((e: { type: string }) => e.type)).toEqual(["certificate.issued"])
    expect(events[0].data.object).toEqual(issued)
    const audit = (await api(h()).get(`/audit-entries?resource_id=${issued!.id}`)).body.data.map((e: { action: string }) => e.action)
    expect(audit).toEqual(["certificate.issued"])
  })

  it("a sandbox reset empties the sandbox's certificates and their numbering", async () => {
    const product = await certifiedProduct(h(), h().test)
    const issued = await issue(h(), { productId: product.id }, "sandbox")
    expect((await api(h(), h().test).get(`/certificates/${issued!.id}`)).status).toBe(200)
    expect((await h().request("POST", "/api/v3/sandbox/resets", { secret: h().test })).status).toBe(201)
    expectError(await api(h(), h().test).get(`/certificates/${issued!.id}`), 404, "not_found")
    expect(await h().storedRecord({ accountId: h().account.account.id, environment: "sandbox" }, "certificate_sequence", product.id)).toBeUndefined()
  })
})

/** A learner of the account with this name (a unique address). */
const learner = (h: Harness, name: string) => created(api(h).post("/users", { name, email: `learner-${process.pid}-${++counter}@example.com` }))

/** The certificate once its document is rendered (a render worker does it after the issue commits). */
const withDocument = (h: Harness, certificateId: string, secret: Secret = h.live) =>
  eventually(async () => {
    const res = await api(h, secret).get(`/certificates/${certificateId}`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.file_id, "the document is not rendered yet").toMatch(/^fil_/)
    return res.body.data as Record<string, any>
  }, 30_000)

/** `GET /files/{id}/content`, raw (the harness's client reads bodies as text). */
const download = async (h: Harness, fileId: string, secret: Secret = h.live) => {
  const res = await fetch(`${h.baseUrl}/api/v3/files/${fileId}/content`, { headers: { authorization: `Bearer ${secret}` } })
  return { status: res.status, type: res.headers.get("content-type"), bytes: new Uint8Array(await res.arrayBuffer()) }
}

/**
 * Names in the scripts schools write them in. Shaping draws Devanagari's vowel sign ि before
 * the consonants it follows and the repha र् after the syllable it crowns; a text extractor
 * that reads glyphs in drawing order (pdf.js) gives them there: `printed` is what it reads (the
 * PDF marks the run with its text, `ActualText`, for the tools that read it).
 */
const names: ReadonlyArray<{ readonly script: string; readonly name: string; readonly printed?: string }> = [
  { script: "Latin", name: "José Müller-Łukasiewicz" },
  { script: "Chinese", name: "王小明" },
  { script: "Japanese", name: "山田はなこ" },
  { script: "Korean", name: "김민준" },
  { script: "Arabic", name: "محمد عبد الله" },
  { script: "Hebrew", name: "שרה לוי" },
  { script: "Cyrillic", name: "Анна Каренина" },
  { script: "Greek", name: "Νίκος Καζαντζάκης" },
  { script: "Devanagari", name: "प्रिया शर्मा", printed: "िप्रया शमार्" }
]

eachStore("certificate documents", (h) => {
  it("an issued certificate gets its PDF: a file downloadable with GET /files/{id}/content, the learner's name and the code on it, in every script", async () => {
    const product = await certifiedProduct(h(), h().live, { enabled: true, texts: { content: "Awarded to {name}." } })
    for (const { script, name, printed } of names) {
      const user = await learner(h(), name)
      const issued = await issue(h(), { productId: product.id, userId: String(user.id) })
      expect(issued, script).toMatchObject({ file_id: null })
      const certificate = await withDocument(h(), issued!.id)
      const file = (await api(h()).get(`/files/${certificate.file_id}`)).body.data
      expect(file, script).toMatchObject({ object: "file", purpose: "certificate", content_type: "application/pdf", filename: `certificate-${issued!.code}.pdf`, expires_at: null })
      const res = await download(h(), certificate.file_id)
      expect([script, res.status, res.type]).toEqual([script, 200, "application/pdf"])
      expect(Buffer.from(res.bytes.subarray(0, 5)).toString("latin1")).toBe("%PDF-")
      expect(res.bytes.length).toBe(file.size)
      // pdf.js reads a mark glyph that Arabic shaping inserts (no character of its own) as a
      // control character, and a space where two runs' glyph boxes leave a gap: neither is text.
      const text = (await pdfText(res.bytes)).replace(/[\u0000-\u0009\u000b-\u001f]/g, "").replace(/ +\./g, ".")
      expect(text, script).toContain(printed ?? name)
      expect(text, script).toContain(`Awarded to ${printed ?? name}.`)
      expect(text, script).toContain(issued!.code)
    }
  }, 120_000)

  it("the document is read as the certificate is: a credential whose scope does not reach the certificate gets 404 for its file", async () => {
    const product = await certifiedProduct(h(), h().live, { enabled: true, texts: { content: "Well done" } })
    const other = await certifiedProduct(h())
    const user = await learner(h(), "Grace Hopper")
    const issued = await issue(h(), { productId: product.id, userId: String(user.id) })
    const { file_id: fileId } = await withDocument(h(), issued!.id)
    const reaches = async (secret: Secret) => [(await api(h(), secret).get(`/files/${fileId}`)).status, (await download(h(), fileId, secret)).status]
    // Through the product, the learner or every certificate: the certificate and its document.
    expect(await reaches(await credentialWith(h(), ["certificates.read", "files.read"], [product.id]))).toEqual([200, 200])
    expect(await reaches(await credentialWith(h(), ["certificates.read", "files.read"], [String(user.id)]))).toEqual([200, 200])
    expect(await reaches(await credentialWith(h(), ["certificates.read", "files.read"]))).toEqual([200, 200])
    // Another product's certificates, or files without certificates: as if it did not exist.
    const elsewhere = await credentialWith(h(), ["certificates.read", "files.read"], [other.id])
    expectError(await api(h(), elsewhere).get(`/certificates/${issued!.id}`), 404, "not_found")
    expect(await reaches(elsewhere)).toEqual([404, 404])
    expect(await reaches(await credentialWith(h(), ["files.read"]))).toEqual([404, 404])
  }, 60_000)

  it("a document that prints the learner's personal data (the document line) also needs users.read_personal for that learner", async () => {
    const product = await certifiedProduct(h(), h().live, { enabled: true, texts: { content: "Well done" }, layout: { fields: { document: { enabled: true } } } })
    const user = await created(api(h()).post("/users", { name: "Ada Lovelace", email: `ada-${process.pid}-${++counter}@example.com`, document: "123.456.789-00" }))
    const issued = await issue(h(), { productId: product.id, userId: String(user.id) })
    const { file_id: fileId } = await withDocument(h(), issued!.id)
    expect(await pdfText((await download(h(), fileId)).bytes)).toContain("123.456.789-00")
    const without = await credentialWith(h(), ["certificates.read", "files.read"])
    expect((await api(h(), without).get(`/certificates/${issued!.id}`)).status).toBe(200)
    expectError(await api(h(), without).get(`/files/${fileId}`), 404, "not_found")
    expect((await download(h(), fileId, without)).status).toBe(404)
    const personal = await credentialWithPolicies(h(), [{ capabilities: ["certificates.read", "files.read"] }, { capabilities: ["users.read_personal"], resources: [String(user.id)] }])
    expect((await download(h(), fileId, personal)).status).toBe(200)
  }, 60_000)

  it("the certificate names its document once rendered: certificate.updated with file_id; issuing is not held up by rendering", async () => {
    const product = await certifiedProduct(h(), h().live, { enabled: true, texts: { content: "x".repeat(2000) } })
    const issued = await issue(h(), { productId: product.id, userId: String((await learner(h(), "Linus")).id) })
    expect(issued).toMatchObject({ file_id: null, revision: "1" })
    const certificate = await withDocument(h(), issued!.id)
    expect(certificate).toMatchObject({ ...issued, file_id: certificate.file_id, revision: "2", updated_at: certificate.updated_at })
    const events = (await api(h()).get(`/events?resource_id=${issued!.id}&type=certificate.updated`)).body.data
    expect(events).toHaveLength(1)
    expect(events[0].data.object).toEqual(certificate)
    expect(events[0].previous_attributes).toMatchObject({ file_id: null })
  }, 60_000)
})
