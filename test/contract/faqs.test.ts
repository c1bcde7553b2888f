/**
 * FAQs of the help centre (`/support/faqs`, release 3.2.0): the shape, one order for the help
 * centre (`position`, `PUT /support/faqs/order`, the trash closing the gap), the department
 * they are filed under, §8.2 limits, filters, permissions and the sandbox reset. Each test
 * starts from an empty sandbox. Decisions: docs/support.md.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith } from "../support/api.js"
import { expectError } from "../support/expect.js"

const fresh = async (h: Harness) => {
  expect((await api(h, h.test).post("/sandbox/resets")).status).toBeLessThan(300)
  return api(h, h.test)
}

const questions = (res: { body: any }) => res.body.data.map((f: any) => f.question)

eachStore("support FAQs", (h) => {
  it("create: every field, faq_ ID, published by default, last in the order; event faq.created", async () => {
    const client = await fresh(h())
    const department = await created(client.post("/support/departments", { name: "Billing" }))
    const res = await client.post("/support/faqs", { question: "How do I get a refund?", answer: "<p>Write to us.</p>", department_id: department.id })
    expect(res.status, res.text).toBe(201)
    const faq = res.body.data
    expect(Object.keys(faq)).toEqual(["object", "id", "question", "answer", "department_id", "status", "position", "created_at", "updated_at", "deleted", "revision"])
    expect(faq).toMatchObject({ object: "faq", question: "How do I get a refund?", answer: "<p>Write to us.</p>", department_id: department.id, status: "published", position: 1, revision: "1" })
    expect(faq.id).toMatch(/^faq_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/support/faqs/${faq.id}`)
    expect((await client.get(`/support/faqs/${faq.id}`)).body.data).toEqual(faq)
    expect(await created(client.post("/support/faqs", { question: "Q2", answer: "A2", status: "draft" }))).toMatchObject({ position: 2, status: "draft", department_id: null })
    expect((await client.get(`/events?resource_id=${faq.id}&type=faq.created`)).body.data).toHaveLength(1)
  })

  it("validation: question and answer required; the answer at most 512 KiB of UTF-8 (§8.2), the question 1,000 characters; the department must be of the account and not trashed", async () => {
    const client = await fresh(h())
    expectError(await client.post("/support/faqs", { answer: "a" }), 422, "validation_failed", { field: "question", code: "required" })
    expectError(await client.post("/support/faqs", { question: "q" }), 422, "validation_failed", { field: "answer", code: "required" })
    expectError(await client.post("/support/faqs", { question: "q", answer: "a".repeat(512 * 1024 + 1) }), 422, "validation_failed", { field: "answer" })
    expect((await client.post("/support/faqs", { question: "q", answer: "a".repeat(512 * 1024) })).status).toBe(201)
    // A size, in bytes of UTF-8: 204,800 characters of 3 bytes (614,400 bytes) are over it,
    // 131,072 emoji (4 bytes each, 262,144 UTF-16 units) fill it exactly.
    const tooLarge = await client.post("/support/faqs", { question: "q", answer: "語".repeat(204_800) })
    expectError(tooLarge, 422, "validation_failed", { field: "answer", code: "too_long", reason: "utf8_bytes" })
    expect(tooLarge.body.error.details[0].message).toContain("524288 bytes")
    expect((await client.post("/support/faqs", { question: "q", answer: "😀".repeat(131_072) })).status).toBe(201)
    expectError(await client.post("/support/faqs", { question: "q", answer: `${"😀".repeat(131_072)}a` }), 422, "validation_failed", { field: "answer", reason: "utf8_bytes" })
    expectError(await client.post("/support/faqs", { question: "q".repeat(1001), answer: "a" }), 422, "validation_failed", { field: "question" })
    expectError(await client.post("/support/faqs", { question: "q", answer: "a", status: "hidden" }), 422, "validation_failed", { field: "status" })
    expectError(await client.post("/support/faqs", { question: "q", answer: "a", department_id: "dpt_000000001" }), 422, "validation_failed", {
      field: "department_id",
      reason: "not_found"
    })
    const department = await created(client.post("/support/departments", { name: "Old" }))
    expect((await client.del(`/support/departments/${department.id}`)).status).toBe(200)
    expectError(await client.post("/support/faqs", { question: "q", answer: "a", department_id: department.id }), 422, "validation_failed", {
      field: "department_id",
      reason: "not_found"
    })
    expect((await client.get("/support/faqs")).body.data).toHaveLength(2)
  })

  it("the order: PUT /support/faqs/order with the exact set; a list by department keeps it; the trash closes the gap and a restored FAQ comes last", async () => {
    const client = await fresh(h())
    const department = await created(client.post("/support/departments", { name: "Billing" }))
    const a = await created(client.post("/support/faqs", { question: "A", answer: "a", department_id: department.id }))
    const b = await created(client.post("/support/faqs", { question: "B", answer: "b" }))
    const c = await created(client.post("/support/faqs", { question: "C", answer: "c", department_id: department.id }))
    const res = await client.put("/support/faqs/order", { ids: [c.id, b.id, a.id] })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.map((f: any) => [f.question, f.position])).toEqual([["C", 1], ["B", 2], ["A", 3]])
    expect(questions(await client.get("/support/faqs"))).toEqual(["C", "B", "A"])
    expect(questions(await client.get(`/support/faqs?department_id=${department.id}`))).toEqual(["C", "A"])
    expect(questions(await client.get("/support/faqs?sort=created_at"))).toEqual(["A", "B", "C"])
    expectError(await client.put("/support/faqs/order", { ids: [c.id, b.id] }), 422, "order_set_mismatch", { field: "ids", reason: "missing" })
    expect((await client.del(`/support/faqs/${c.id}`)).body.data.deleted).toBe(true)
    expect((await client.get("/support/faqs")).body.data.map((f: any) => [f.question, f.position])).toEqual([["B", 1], ["A", 2]])
    expect((await client.get(`/events?resource_id=${a.id}&type=faq.reordered`)).body.data).toHaveLength(2)
    expect((await client.patch(`/support/faqs/${c.id}`, { deleted: false })).body.data.position).toBe(3)
  })

  it("PATCH: question, answer, status, department; filters by status; q on the question", async () => {
    const client = await fresh(h())
    const faq = await created(client.post("/support/faqs", { question: "Where is my certificate?", answer: "a" }))
    await created(client.post("/support/faqs", { question: "Other", answer: "b", status: "draft" }))
    const res = await client.patch(`/support/faqs/${faq.id}`, { answer: "<p>In your profile</p>", status: "draft" })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ answer: "<p>In your profile</p>", status: "draft", revision: "2" })
    expectError(await client.patch(`/support/faqs/${faq.id}`, { department_id: "dpt_000000001" }), 422, "validation_failed", { field: "department_id", reason: "not_found" })
    expect(questions(await client.get("/support/faqs?status=draft"))).toEqual(["Where is my certificate?", "Other"])
    expect(questions(await client.get("/support/faqs?status=published"))).toEqual([])
    expect(questions(await client.get("/support/faqs?q=CERTIFICATE"))).toEqual(["Where is my certificate?"])
  })

  it("permissions: faqs.create and faqs.update are required; a sandbox reset empties the FAQs", async () => {
    const client = await fresh(h())
    const faq = await created(client.post("/support/faqs", { question: "Q", answer: "A" }))
    const reader = await credentialWith(h(), ["faqs.read"])
    expect((await api(h(), reader).get("/support/faqs")).status).toBe(200)
    expectError(await api(h(), reader).post("/support/faqs", { question: "Q", answer: "A" }), 403, "permission_denied")
    expectError(await api(h(), reader).put("/support/faqs/order", { ids: [] }), 403, "permission_denied")
    expect((await client.post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await client.get(`/support/faqs/${faq.id}`), 404, "not_found")
  })
})
