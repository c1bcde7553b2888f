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
import { api, created, credentialWith, newProduct, runAsAccount } from "../support/api.js"
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
    const res = await api(h()).get(`/certificates/${issued!.id}`)
    expect(res.status, res.text).toBe(200)
    expect(res.headers.get("etag")).toBe(`W/"certificate:${issued!.id}:1"`)
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
      "created_at",
      "updated_at",
      "revision"
    ])
    expect(res.body.data).toEqual(issued)
    expect(res.body.data).toMatchObject({
      object: "certificate",
      user_id: userId,
      product_id: product.id,
      enrollment_id: enrollmentId,
      sequence: 1,
      criteria: { kind: "completion", percent: null, exam_id: null },
      revision: "1"
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
    const events = (await api(h()).get(`/events?resource_id=${issued!.id}`)).body.data
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
