/**
 * Exam questions (§2.3 `exam_question`, §4.3, §4.6; open-points routes): the shape, the
 * alternatives' rules (at least two, at least one correct, single choice counts the first),
 * `alternatives` in PATCH replacing the set with stable IDs, the answer key shown only with
 * `exams.read_answer_key` (omitted, not null, otherwise; never in events), positions and the
 * reorder under the exam's `If-Match`, the trash, limits and permissions. Decisions:
 * docs/exams.md.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWithPolicies } from "../support/api.js"
import { expectError } from "../support/expect.js"

const alternatives = (correct: ReadonlyArray<number>, count = 3) =>
  Array.from({ length: count }, (_, i) => ({ text: `Option ${i + 1}`, ...(correct.includes(i) ? { correct: true } : {}) }))

/** A product with an exam; `add` makes a question in it. */
const setup = async (h: Harness) => {
  const showcase = await created(api(h).post("/showcases", { name: "Shelf" }))
  const product = await created(api(h).post("/products", { format: "course", name: "Course", showcase_id: showcase.id }))
  const exam = await created(api(h).post(`/products/${product.id}/exams`, { title: "Exam" }))
  const examPath = `/products/${product.id}/exams/${exam.id}`
  const questionsPath = `${examPath}/questions`
  const add = (json: object = {}) =>
    created(api(h).post(questionsPath, { text: "What is 2 + 2?", format: "single_choice", alternatives: alternatives([1]), ...json }))
  return { product, exam, examPath, questionsPath, add }
}

const etagOf = async (h: Harness, path: string) => (await api(h).get(path)).headers.get("etag")!

eachStore("exam questions", (h) => {
  it("a question is created last in its exam, with every field; alternatives get stable alt_ IDs; the exam's count and revision follow", async () => {
    const { exam, examPath, questionsPath, product } = await setup(h())
    const res = await api(h()).post(questionsPath, { text: "<p>Pick one</p>", format: "single_choice", alternatives: alternatives([0]) })
    expect(res.status).toBe(201)
    const question = res.body.data
    expect(res.headers.get("location")).toBe(`/api/v3/products/${product.id}/exams/${exam.id}/questions/${question.id}`)
    expect(res.headers.get("etag")).toBe(`W/"exam_question:${question.id}:1"`)
    expect(Object.keys(question)).toEqual([
      "object", "id", "exam_id", "text", "image", "format", "position", "alternatives", "created_at", "updated_at", "deleted", "revision"
    ])
    expect(question).toMatchObject({ object: "exam_question", exam_id: exam.id, text: "<p>Pick one</p>", image: null, format: "single_choice", position: 1, deleted: false, revision: "1" })
    expect(question.id).toMatch(/^exq_[0-9A-Za-z]{9}$/)
    expect(question.alternatives.map((a: any) => Object.keys(a))).toEqual([["id", "text", "correct"], ["id", "text", "correct"], ["id", "text", "correct"]])
    expect(question.alternatives.map((a: any) => a.correct)).toEqual([true, false, false])
    for (const alternative of question.alternatives) expect(alternative.id).toMatch(/^alt_[0-9A-Za-z]{9}$/)
    const second = await created(api(h()).post(questionsPath, { text: "Next", format: "multiple_choice", alternatives: alternatives([0, 1]) }))
    expect(second.position).toBe(2)
    const after = (await api(h()).get(examPath)).body.data
    expect(after.questions_count).toBe(2)
    expect(after.revision).toBe("3")
    expect((await api(h()).get(`${questionsPath}/${question.id}`)).body.data).toEqual(question)
  })

  it("at least two alternatives (422 too_short on alternatives) and at least one correct (422 reason no_correct_alternative)", async () => {
    const { questionsPath } = await setup(h())
    const one = await api(h()).post(questionsPath, { text: "q", format: "single_choice", alternatives: alternatives([0], 1) })
    expectError(one, 422, "validation_failed", { field: "alternatives", code: "too_short" })
    const none = await api(h()).post(questionsPath, { text: "q", format: "multiple_choice", alternatives: alternatives([]) })
    expectError(none, 422, "validation_failed", { field: "alternatives", code: "invalid_value", reason: "no_correct_alternative" })
    expectError(await api(h()).post(questionsPath, { text: "q", format: "essay", alternatives: alternatives([0]) }), 422, "validation_failed", {
      field: "format",
      code: "invalid_value"
    })
    const missing = await api(h()).post(questionsPath, { format: "single_choice" })
    expectError(missing, 422, "validation_failed", { field: "text", code: "required" })
    expectError(missing, 422, "validation_failed", { field: "alternatives", code: "required" })
    expectError(await api(h()).post(questionsPath, { text: "q", format: "single_choice", alternatives: [{ text: "a", correct: "yes" }, { text: "b" }] }), 422, "validation_failed", {
      field: "alternatives[0].correct",
      code: "invalid_type"
    })
    expectError(await api(h()).post(questionsPath, { text: "q", format: "single_choice", alternatives: alternatives([0]), position: 1 }), 422, "unknown_field", {
      field: "position"
    })
    expectError(await api(h()).post(questionsPath, { text: "q", format: "single_choice", alternatives: [{ text: "", correct: true }, { text: "b" }] }), 422, "validation_failed", {
      field: "alternatives[0].text",
      code: "required"
    })
  })

  it("text limits of §8.2: question text is rich text (512 KiB), an alternative's plain text (64 KiB)", async () => {
    const { questionsPath } = await setup(h())
    const tooLong = await api(h()).post(questionsPath, { text: "x".repeat(512 * 1024 + 1), format: "single_choice", alternatives: alternatives([0]) })
    expectError(tooLong, 422, "validation_failed", { field: "text", code: "too_long" })
    const alternative = await api(h()).post(questionsPath, {
      text: "q",
      format: "single_choice",
      alternatives: [{ text: "a".repeat(64 * 1024 + 1), correct: true }, { text: "b" }]
    })
    expectError(alternative, 422, "validation_failed", { field: "alternatives[0].text", code: "too_long" })
    expect((await api(h()).post(questionsPath, { text: "x".repeat(300 * 1024), format: "single_choice", alternatives: alternatives([0]) })).status).toBe(201)
  })

  it("single choice: when several are marked only the first counts; multiple choice: every one marked; a change of format loses no mark", async () => {
    const { questionsPath, add } = await setup(h())
    const single = await add({ format: "single_choice", alternatives: alternatives([1, 2]) })
    expect(single.alternatives.map((a: any) => a.correct)).toEqual([false, true, false])
    const multiple = await add({ format: "multiple_choice", alternatives: alternatives([1, 2]) })
    expect(multiple.alternatives.map((a: any) => a.correct)).toEqual([false, true, true])
    const toSingle = await api(h()).patch(`${questionsPath}/${multiple.id}`, { format: "single_choice" })
    expect(toSingle.body.data.alternatives.map((a: any) => a.correct)).toEqual([false, true, false])
    const back = await api(h()).patch(`${questionsPath}/${multiple.id}`, { format: "multiple_choice" })
    expect(back.body.data.alternatives.map((a: any) => a.correct)).toEqual([false, true, true])
  })

  it("alternatives in a PATCH replace the whole set: an id keeps that alternative, none is new, the rest are gone", async () => {
    const { questionsPath, add } = await setup(h())
    const question = await add()
    const [a, b] = question.alternatives
    const res = await api(h()).patch(`${questionsPath}/${question.id}`, {
      alternatives: [{ id: b.id, text: "Four", correct: true }, { text: "Five" }, { id: a.id, text: a.text }]
    })
    expect(res.status).toBe(200)
    const next = res.body.data.alternatives
    expect(next.map((x: any) => x.text)).toEqual(["Four", "Five", a.text])
    expect(next[0].id).toBe(b.id)
    expect(next[2].id).toBe(a.id)
    expect(next[1].id).toMatch(/^alt_/)
    expect([a.id, b.id, question.alternatives[2].id]).not.toContain(next[1].id)
    expect(next.map((x: any) => x.correct)).toEqual([true, false, false])
    expect(res.body.data.revision).toBe("2")

    const other = await add()
    const foreign = await api(h()).patch(`${questionsPath}/${question.id}`, {
      alternatives: [{ id: other.alternatives[0].id, text: "x", correct: true }, { text: "y" }]
    })
    expectError(foreign, 422, "validation_failed", { field: "alternatives[0].id", reason: "not_found" })
    const twice = await api(h()).patch(`${questionsPath}/${question.id}`, { alternatives: [{ id: b.id, text: "x", correct: true }, { id: b.id, text: "y" }] })
    expectError(twice, 422, "validation_failed", { field: "alternatives[1].id", reason: "duplicate" })
    const unmarked = await api(h()).patch(`${questionsPath}/${question.id}`, { alternatives: [{ id: b.id, text: "x" }, { text: "y" }] })
    expectError(unmarked, 422, "validation_failed", { field: "alternatives", reason: "no_correct_alternative" })
    expectError(await api(h()).patch(`${questionsPath}/${question.id}`, { alternatives: [{ id: "alt_?", text: "x", correct: true }, { text: "y" }] }), 422, "validation_failed", {
      field: "alternatives[0].id",
      code: "invalid"
    })
    // Nothing of the refused changes was saved.
    expect((await api(h()).get(`${questionsPath}/${question.id}`)).body.data.alternatives).toEqual(next)
  })

  it("PATCH honours If-Match; text and image change; an image must be a file (422)", async () => {
    const { questionsPath, add } = await setup(h())
    const question = await add()
    const path = `${questionsPath}/${question.id}`
    expectError(await api(h()).patch(path, { text: "late" }, { "if-match": `W/"exam_question:${question.id}:9"` }), 412, "revision_mismatch")
    const res = await api(h()).patch(path, { text: "Now" }, { "if-match": `W/"exam_question:${question.id}:1"` })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ text: "Now", revision: "2" })
    expectError(await api(h()).patch(path, { image: "fil_000000001" }), 422, "validation_failed", { field: "image", reason: "not_found" })
    expectError(await api(h()).patch(path, { image: "nope" }), 422, "validation_failed", { field: "image", code: "invalid" })
  })

  // -------------------------------------------------------------------------------------
  // The answer key

  it("without exams.read_answer_key the answer key is omitted (not null) in every answer; with it, shown", async () => {
    const { product, questionsPath, add } = await setup(h())
    const question = await add()
    const reader = await credentialWithPolicies(h(), [{ capabilities: ["exams.read", "exam_questions.read", "exam_questions.create", "exam_questions.update"] }])
    const keyHolder = await credentialWithPolicies(h(), [{ capabilities: ["exam_questions.read", "exams.read_answer_key"] }])
    const seen = (await api(h(), reader).get(`${questionsPath}/${question.id}`)).body.data
    expect(seen.alternatives).toEqual(question.alternatives.map(({ id, text }: any) => ({ id, text })))
    for (const alternative of seen.alternatives) expect("correct" in alternative).toBe(false)
    const listed = (await api(h(), reader).get(questionsPath)).body.data
    for (const alternative of listed[0].alternatives) expect("correct" in alternative).toBe(false)
    const made = await created(api(h(), reader).post(questionsPath, { text: "q", format: "single_choice", alternatives: alternatives([0]) }))
    for (const alternative of made.alternatives) expect("correct" in alternative).toBe(false)
    const changed = (await api(h(), reader).patch(`${questionsPath}/${made.id}`, { text: "q2" })).body.data
    for (const alternative of changed.alternatives) expect("correct" in alternative).toBe(false)
    // The key holder sees what the reader wrote.
    const full = (await api(h(), keyHolder).get(`${questionsPath}/${made.id}`)).body.data
    expect(full.alternatives.map((a: any) => a.correct)).toEqual([true, false, false])
    // Limited to another product, the key is not this product's.
    const elsewhere = await credentialWithPolicies(h(), [{ capabilities: ["exam_questions.read"] }, { capabilities: ["exams.read_answer_key"], resources: ["prd_000000001"] }])
    for (const alternative of (await api(h(), elsewhere).get(`${questionsPath}/${made.id}`)).body.data.alternatives) {
      expect("correct" in alternative).toBe(false)
    }
    expect(product.id).toMatch(/^prd_/)
  })

  it("events never carry the answer key", async () => {
    const { add } = await setup(h())
    const question = await add()
    const events = (await api(h()).get(`/events?resource_id=${question.id}&limit=10`)).body.data
    const createdEvent = events.find((e: any) => e.type === "exam_question.created")
    expect(createdEvent.data.object.alternatives.length).toBe(3)
    for (const alternative of createdEvent.data.object.alternatives) expect(Object.keys(alternative)).toEqual(["id", "text"])
    expect(JSON.stringify(createdEvent)).not.toContain("answer_key")
  })

  it("without exam_questions.create: 403 permission_denied", async () => {
    const { questionsPath } = await setup(h())
    const reader = await credentialWithPolicies(h(), [{ capabilities: ["exam_questions.read", "exams.create"] }])
    expectError(await api(h(), reader).post(questionsPath, { text: "q", format: "single_choice", alternatives: alternatives([0]) }), 403, "permission_denied")
  })

  // -------------------------------------------------------------------------------------
  // Positions, the trash and the order

  it("the trash closes the gap; a restored question comes last; the exam's count follows; deleted=true lists the trash", async () => {
    const { examPath, questionsPath, add } = await setup(h())
    const [a, b, c] = [await add(), await add(), await add()]
    const trashed = await api(h()).del(`${questionsPath}/${a.id}`)
    expect(trashed.status).toBe(200)
    expect(trashed.body.data.deleted).toBe(true)
    expectError(await api(h()).get(`${questionsPath}/${a.id}`), 404, "not_found")
    const positions = async () => (await api(h()).get(questionsPath)).body.data.map((q: any) => [q.id, q.position])
    expect(await positions()).toEqual([[b.id, 1], [c.id, 2]])
    expect((await api(h()).get(examPath)).body.data.questions_count).toBe(2)
    expect((await api(h()).get(`${questionsPath}?deleted=true`)).body.data.map((q: any) => q.id)).toEqual([a.id])
    const restored = await api(h()).patch(`${questionsPath}/${a.id}`, { deleted: false })
    expect(restored.body.data).toMatchObject({ deleted: false, position: 3 })
    expect(await positions()).toEqual([[b.id, 1], [c.id, 2], [a.id, 3]])
    expect((await api(h()).get(examPath)).body.data.questions_count).toBe(3)
    expect((await api(h()).get(`${questionsPath}?sort=-position`)).body.data.map((q: any) => q.id)).toEqual([a.id, c.id, b.id])
    const types = (await api(h()).get(`/events?resource_id=${b.id}&limit=10`)).body.data.map((e: any) => e.type)
    expect(types).toContain("exam_question.reordered")
  })

  it("PUT questions/order arranges the exact non-trashed set under the exam's If-Match; the exam's ETag moves", async () => {
    const { exam, examPath, questionsPath, add } = await setup(h())
    const [a, b, c] = [await add(), await add(), await add()]
    const trashed = await add()
    await api(h()).del(`${questionsPath}/${trashed.id}`)
    const etag = await etagOf(h(), examPath)
    const res = await api(h()).put(`${questionsPath}/order`, { ids: [c.id, a.id, b.id] }, { "if-match": etag })
    expect(res.status).toBe(200)
    expect(res.body.data.map((q: any) => [q.id, q.position])).toEqual([[c.id, 1], [a.id, 2], [b.id, 3]])
    expect(res.body.data[0].alternatives[0]).toHaveProperty("correct")
    expect(res.body.page).toEqual({ limit: 3, next_cursor: null, prev_cursor: null })
    const newEtag = res.headers.get("etag")
    expect(newEtag).not.toBe(etag)
    expect(newEtag).toBe(await etagOf(h(), examPath))
    expect(newEtag).toMatch(new RegExp(`^W/"exam:${exam.id}:\\d+"$`))
    expect((await api(h()).get(questionsPath)).body.data.map((q: any) => q.id)).toEqual([c.id, a.id, b.id])
    // The old ETag is stale now.
    expectError(await api(h()).put(`${questionsPath}/order`, { ids: [a.id, b.id, c.id] }, { "if-match": etag }), 412, "revision_mismatch")
  })

  it("a reorder with another set is 422 order_set_mismatch, itemized, and changes nothing", async () => {
    const { questionsPath, add } = await setup(h())
    const [a, b] = [await add(), await add()]
    const trashed = await add()
    await api(h()).del(`${questionsPath}/${trashed.id}`)
    const other = await setup(h())
    const foreign = await other.add()
    const path = `${questionsPath}/order`
    expectError(await api(h()).put(path, { ids: [b.id] }), 422, "order_set_mismatch", { field: "ids", reason: "missing" })
    expectError(await api(h()).put(path, { ids: [b.id, a.id, trashed.id] }), 422, "order_set_mismatch", { field: "ids[2]", reason: "not_in_set" })
    expectError(await api(h()).put(path, { ids: [b.id, a.id, foreign.id] }), 422, "order_set_mismatch", { field: "ids[2]", reason: "not_in_set" })
    expectError(await api(h()).put(path, { ids: [b.id, a.id, a.id] }), 422, "order_set_mismatch", { field: "ids[2]", reason: "duplicate" })
    expectError(await api(h()).put(path, { ids: ["exq_?"] }), 422, "validation_failed", { field: "ids[0]", code: "invalid" })
    expect((await api(h()).get(questionsPath)).body.data.map((q: any) => q.id)).toEqual([a.id, b.id])
    const reader = await credentialWithPolicies(h(), [{ capabilities: ["exam_questions.read"] }])
    expectError(await api(h(), reader).put(path, { ids: [b.id, a.id] }), 403, "permission_denied")
    // An editor without the key arranges the questions and sees no key in the answer.
    const editor = await credentialWithPolicies(h(), [{ capabilities: ["exam_questions.update"] }])
    const arranged = await api(h(), editor).put(path, { ids: [b.id, a.id] })
    expect(arranged.status).toBe(200)
    for (const question of arranged.body.data) for (const alternative of question.alternatives) expect("correct" in alternative).toBe(false)
  })

  it("a question's create needs an Idempotency-Key (§4.1); the same key and body replays it", async () => {
    const { questionsPath } = await setup(h())
    const body = { text: "q", format: "single_choice", alternatives: alternatives([0]) }
    expectError(await api(h()).post(questionsPath, body, { idempotencyKey: null }), 422, "idempotency_key_required")
    const first = await api(h()).post(questionsPath, body, { idempotencyKey: "question-once" })
    const again = await api(h()).post(questionsPath, body, { idempotencyKey: "question-once" })
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    expect((await api(h()).get(questionsPath)).body.data.length).toBe(1)
  })

  it("questions of a trashed exam, or of an exam of another product, are 404", async () => {
    const { examPath, questionsPath, add } = await setup(h())
    const question = await add()
    const other = await setup(h())
    expectError(await api(h()).get(`${other.questionsPath}/${question.id}`), 404, "not_found")
    expectError(await api(h()).get(`${other.examPath}/questions/exq_000000001`), 404, "not_found")
    expect((await api(h()).del(examPath)).status).toBe(200)
    expectError(await api(h()).get(`${questionsPath}/${question.id}`), 404, "not_found")
    expectError(await api(h()).get(questionsPath), 404, "not_found")
    expectError(await api(h()).put(`${questionsPath}/order`, { ids: [question.id] }), 404, "not_found")
    expect((await api(h()).patch(examPath, { deleted: false })).status).toBe(200)
    expect((await api(h()).get(`${questionsPath}/${question.id}`)).status).toBe(200)
  })

  it("the questions list pages by cursor in position order", async () => {
    const { questionsPath, add } = await setup(h())
    const ids = [(await add()).id, (await add()).id, (await add()).id]
    const first = await api(h()).get(`${questionsPath}?limit=2`)
    expect(first.body.data.map((q: any) => q.id)).toEqual(ids.slice(0, 2))
    const next = await api(h()).get(`${questionsPath}?limit=2&cursor=${encodeURIComponent(first.body.page.next_cursor)}`)
    expect(next.body.data.map((q: any) => q.id)).toEqual(ids.slice(2))
    expectError(await api(h()).get(`${questionsPath}?limit=2&sort=created_at&cursor=${encodeURIComponent(first.body.page.next_cursor)}`), 400, "invalid_cursor")
  })
})
