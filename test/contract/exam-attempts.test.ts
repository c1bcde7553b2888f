/**
 * Exam attempts (release 3.2.0, open-points routes): a learner's completed attempt, graded
 * against the answer key at submission and never regraded; the user and the active
 * enrollment it needs; the answers' checks; the retake settings with the clock; the answer
 * key of the recorded answers shown only with `exams.read_answer_key`; the exam's live
 * `attempts_count`. Decisions: docs/exams.md.
 */
import { createRequire } from "node:module"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWithPolicies, settle } from "../support/api.js"
import { expectError } from "../support/expect.js"

/** Ajv for JSON Schema 2020-12, as shipped with the OpenAPI validator (see openapi.test.ts). */
const fromValidator = createRequire(createRequire(import.meta.url).resolve("@seriousme/openapi-schema-validator"))
const Ajv2020 = fromValidator("ajv/dist/2020.js").default

/** Does a body match the schema the served description gives for this answer? */
const conforms = (doc: any, path: string, method: string, status: number, body: unknown) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, logger: false })
  ajv.addSchema({ ...doc, $id: "https://syllabus.test/openapi.json" })
  const pointer = ["paths", path, method, "responses", String(status), "content", "application/json", "schema"]
    .map((s) => s.replaceAll("~", "~0").replaceAll("/", "~1"))
    .join("/")
  const validate = ajv.compile({ $ref: `https://syllabus.test/openapi.json#/${pointer}` })
  return validate(body) ? [] : validate.errors
}

let counter = 0
const newUser = (h: Harness) => created(api(h).post("/users", { name: "Learner", email: `learner-${Date.now()}-${++counter}@example.com` }))
const enroll = (h: Harness, userId: string, productId: string) => created(api(h).post("/enrollments", { user_id: userId, product_id: productId }))

/**
 * A product with an exam of two questions: `single` (single choice, the second alternative
 * right) and `multiple` (multiple choice, the first two right), and an enrolled user.
 */
const setup = async (h: Harness, settings: object = {}) => {
  const showcase = await created(api(h).post("/showcases", { name: "Shelf" }))
  const product = await created(api(h).post("/products", { format: "course", name: "Course", showcase_id: showcase.id }))
  const exam = await created(api(h).post(`/products/${product.id}/exams`, { title: "Exam", settings }))
  const examPath = `/products/${product.id}/exams/${exam.id}`
  const single = await created(
    api(h).post(`${examPath}/questions`, { text: "2 + 2?", format: "single_choice", alternatives: [{ text: "3" }, { text: "4", correct: true }, { text: "5" }] })
  )
  const multiple = await created(
    api(h).post(`${examPath}/questions`, {
      text: "Even numbers?",
      format: "multiple_choice",
      alternatives: [{ text: "2", correct: true }, { text: "4", correct: true }, { text: "5" }]
    })
  )
  const user = await newUser(h)
  const enrollment = await enroll(h, user.id, product.id)
  const right = [
    { exam_question_id: single.id, alternative_ids: [single.alternatives[1].id] },
    { exam_question_id: multiple.id, alternative_ids: [multiple.alternatives[1].id, multiple.alternatives[0].id] }
  ]
  const halfRight = [right[0]!, { exam_question_id: multiple.id, alternative_ids: [multiple.alternatives[0].id] }]
  const attempt = (answers: ReadonlyArray<object>, userId: string = user.id, secret = h.live) =>
    api(h, secret).post(`${examPath}/attempts`, { user_id: userId, answers })
  return { product, exam, examPath, single, multiple, user, enrollment, right, halfRight, attempt }
}

eachStore("exam attempts", (h) => {
  it("without an active enrollment in the product: 409 state_conflict, reason not_enrolled; a missing user: 422 on user_id", async () => {
    const { attempt, right, product } = await setup(h())
    const stranger = await newUser(h())
    expectError(await attempt(right, stranger.id), 409, "state_conflict", { reason: "not_enrolled" })
    expectError(await attempt(right, "usr_000000001"), 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expectError(await attempt(right, "prd_000000001"), 422, "validation_failed", { field: "user_id", code: "invalid" })
    // Enrolled in another product only: still not enrolled here.
    const other = await setup(h())
    await enroll(h(), stranger.id, other.product.id)
    expectError(await attempt(right, stranger.id), 409, "state_conflict", { reason: "not_enrolled" })
    expect(product.id).not.toBe(other.product.id)
  })

  it("a canceled enrollment is no longer active: not_enrolled", async () => {
    const { attempt, right, enrollment } = await setup(h())
    const canceled = await api(h()).post(`/enrollments/${enrollment.id}/cancellations`, {})
    expect(canceled.status).toBeLessThan(300)
    expectError(await attempt(right), 409, "state_conflict", { reason: "not_enrolled" })
  })

  it("an attempt is recorded with every field, graded at submission: all right is 100 and passes", async () => {
    const { attempt, right, exam, product, user, enrollment, single, multiple, examPath } = await setup(h())
    const res = await attempt(right)
    expect(res.status).toBe(201)
    const recorded = res.body.data
    expect(res.headers.get("location")).toBe(`/api/v3${examPath}/attempts/${recorded.id}`)
    expect(recorded.id).toMatch(/^exa_[0-9A-Za-z]{9}$/)
    expect(Object.keys(recorded)).toEqual([
      "object", "id", "exam_id", "product_id", "user_id", "enrollment_id", "number", "answers", "questions_count", "correct_count",
      "grade", "min_grade", "passed", "submitted_at", "created_at", "updated_at", "revision"
    ])
    expect(recorded).toMatchObject({
      object: "exam_attempt", exam_id: exam.id, product_id: product.id, user_id: user.id, enrollment_id: enrollment.id, number: 1,
      questions_count: 2, correct_count: 2, grade: 100, min_grade: 70, passed: true, revision: "1"
    })
    expect(recorded.submitted_at).toBe(recorded.created_at)
    expect(recorded.answers).toEqual([
      { exam_question_id: single.id, alternative_ids: [single.alternatives[1].id], correct: true, correct_alternative_ids: [single.alternatives[1].id] },
      {
        exam_question_id: multiple.id,
        alternative_ids: [multiple.alternatives[1].id, multiple.alternatives[0].id],
        correct: true,
        correct_alternative_ids: [multiple.alternatives[0].id, multiple.alternatives[1].id]
      }
    ])
    expect((await api(h()).get(`${examPath}/attempts/${recorded.id}`)).body.data).toEqual(recorded)
  })

  it("grade is the percent of questions right; passed is grade >= min_grade; an unanswered question is wrong", async () => {
    const { attempt, halfRight, single } = await setup(h())
    const half = (await attempt(halfRight)).body.data
    expect(half).toMatchObject({ correct_count: 1, questions_count: 2, grade: 50, passed: false, number: 1 })
    expect(half.answers[1].correct).toBe(false)
    const blank = (await attempt([{ exam_question_id: single.id, alternative_ids: [single.alternatives[1].id] }])).body.data
    expect(blank).toMatchObject({ correct_count: 1, questions_count: 2, grade: 50, number: 2 })
    expect(blank.answers[1].alternative_ids).toEqual([])
    const nothing = (await attempt([])).body.data
    expect(nothing).toMatchObject({ grade: 0, passed: false, number: 3 })
    // A third of the questions: two decimals.
    const thirds = await setup(h(), { min_grade: 33.33 })
    await created(api(h()).post(`${thirds.examPath}/questions`, { text: "x", format: "single_choice", alternatives: [{ text: "a", correct: true }, { text: "b" }] }))
    const oneOfThree = (await thirds.attempt([thirds.right[0]!])).body.data
    expect(oneOfThree).toMatchObject({ grade: 33.33, passed: true, questions_count: 3 })
  })

  it("answers are checked against the exam's questions: 422 itemized per answer", async () => {
    const { attempt, single, multiple, right } = await setup(h())
    const other = await setup(h())
    expectError(await attempt([{ exam_question_id: other.single.id, alternative_ids: [] }]), 422, "validation_failed", {
      field: "answers[0].exam_question_id",
      reason: "not_found"
    })
    expectError(await attempt([right[0]!, right[0]!]), 422, "validation_failed", { field: "answers[1].exam_question_id", reason: "duplicate" })
    expectError(await attempt([{ exam_question_id: single.id, alternative_ids: [multiple.alternatives[0].id] }]), 422, "validation_failed", {
      field: "answers[0].alternative_ids[0]",
      reason: "not_found"
    })
    expectError(
      await attempt([{ exam_question_id: single.id, alternative_ids: [single.alternatives[0].id, single.alternatives[1].id] }]),
      422,
      "validation_failed",
      { field: "answers[0].alternative_ids", reason: "single_choice" }
    )
    expectError(
      await attempt([{ exam_question_id: multiple.id, alternative_ids: [multiple.alternatives[0].id, multiple.alternatives[0].id] }]),
      422,
      "validation_failed",
      { field: "answers[0].alternative_ids[1]", reason: "duplicate" }
    )
    expectError(await attempt([{ exam_question_id: "exq_?", alternative_ids: [] }]), 422, "validation_failed", { field: "answers[0].exam_question_id", code: "invalid" })
    expectError(await attempt([{ exam_question_id: single.id }]), 422, "validation_failed", { field: "answers[0].alternative_ids", code: "required" })
    expectError(await api(h()).post(`/products/${other.product.id}/exams/${other.exam.id}/attempts`, { answers: [] }), 422, "validation_failed", {
      field: "user_id",
      code: "required"
    })
    // Nothing was recorded.
    expect((await api(h()).get(`/products/${other.product.id}/exams/${other.exam.id}`)).body.data.attempts_count).toBe(0)
  })

  it("later edits of the questions never regrade a recorded attempt", async () => {
    const { attempt, right, single, examPath } = await setup(h())
    const recorded = (await attempt(right)).body.data
    // The key changes: the first alternative is now the right one; then the question is trashed.
    const edited = await api(h()).patch(`${examPath}/questions/${single.id}`, {
      alternatives: [{ id: single.alternatives[0].id, text: "3", correct: true }, { text: "4" }]
    })
    expect(edited.status).toBe(200)
    expect((await api(h()).get(`${examPath}/attempts/${recorded.id}`)).body.data).toEqual(recorded)
    expect((await api(h()).del(`${examPath}/questions/${single.id}`)).status).toBe(200)
    expect((await api(h()).get(`${examPath}/attempts/${recorded.id}`)).body.data).toEqual(recorded)
  })

  it("without exams.read_answer_key an answer's correct and correct_alternative_ids are omitted; grade and passed stay", async () => {
    const { attempt, right, examPath, product } = await setup(h())
    const recorder = await credentialWithPolicies(h(), [{ capabilities: ["exam_attempts.create", "exam_attempts.read"] }])
    const made = await attempt(right, undefined, recorder)
    expect(made.status).toBe(201)
    const seen = made.body.data
    expect(seen).toMatchObject({ grade: 100, passed: true, correct_count: 2 })
    for (const answer of seen.answers) expect(Object.keys(answer)).toEqual(["exam_question_id", "alternative_ids"])
    for (const answer of (await api(h(), recorder).get(`${examPath}/attempts/${seen.id}`)).body.data.answers) {
      expect(Object.keys(answer)).toEqual(["exam_question_id", "alternative_ids"])
    }
    for (const answer of (await api(h(), recorder).get(`${examPath}/attempts`)).body.data[0].answers) {
      expect(Object.keys(answer)).toEqual(["exam_question_id", "alternative_ids"])
    }
    const keyHolder = await credentialWithPolicies(h(), [{ capabilities: ["exam_attempts.read"] }, { capabilities: ["exams.read_answer_key"], resources: [product.id] }])
    expect((await api(h(), keyHolder).get(`${examPath}/attempts/${seen.id}`)).body.data.answers[0].correct).toBe(true)
    // The event says whether it passed, never the key.
    const events = (await api(h()).get(`/events?resource_id=${seen.id}&limit=10`)).body.data
    expect(events.map((e: any) => e.type)).toEqual(["exam_attempt.created"])
    expect(events[0].data.object).toMatchObject({ passed: true, grade: 100 })
    // As recorded (a JSON store may keep the keys in another order).
    for (const answer of events[0].data.object.answers) expect(Object.keys(answer).sort()).toEqual(["alternative_ids", "exam_question_id"])
    const reader = await credentialWithPolicies(h(), [{ capabilities: ["exam_attempts.read"] }])
    expectError(await attempt(right, undefined, reader), 403, "permission_denied")
  })

  it("the exam's attempts_count counts attempts without changing the exam's revision; number counts per user; user_id filters", async () => {
    const { attempt, right, halfRight, examPath, exam, product } = await setup(h())
    const before = await api(h()).get(examPath)
    await attempt(halfRight)
    await attempt(right)
    const other = await newUser(h())
    await enroll(h(), other.id, product.id)
    const theirs = (await attempt(right, other.id)).body.data
    expect(theirs.number).toBe(1)
    const after = await api(h()).get(examPath)
    expect(after.body.data.attempts_count).toBe(3)
    expect(after.headers.get("etag")).toBe(before.headers.get("etag"))
    expect((await api(h()).get(`/products/${product.id}/exams`)).body.data.find((e: any) => e.id === exam.id).attempts_count).toBe(3)
    expect((await api(h()).get(`${examPath}/attempts?user_id=${other.id}`)).body.data.map((a: any) => a.id)).toEqual([theirs.id])
    const all = (await api(h()).get(`${examPath}/attempts?limit=2`)).body
    expect(all.data.map((a: any) => a.number)).toEqual([1, 2])
    expect(all.page.next_cursor).not.toBeNull()
    expect((await api(h()).get(`${examPath}/attempts?sort=-created_at&limit=1`)).body.data[0].id).toBe(theirs.id)
  })

  it("an attempt is final: no PATCH or DELETE route, batches refuse; an exam without questions cannot be attempted", async () => {
    const { attempt, right, examPath, product, user } = await setup(h())
    const recorded = (await attempt(right)).body.data
    expectError(await api(h()).patch(`${examPath}/attempts/${recorded.id}`, {}), 405, "method_not_allowed")
    expectError(await api(h()).del(`${examPath}/attempts/${recorded.id}`), 405, "method_not_allowed")
    // No batch type changes or removes one, and no capability names such a write.
    for (const type of ["exam_attempts.update", "exam_attempts.delete"]) {
      const batch = await api(h()).post("/operations", { type, items: [{ key: "one", product_id: product.id, exam_id: recorded.exam_id, id: recorded.id }] })
      expectError(batch, 422, "operation_type_unknown", { field: "type" })
    }
    const capabilities = (await api(h()).get("/capabilities")).body.data as { capabilities: ReadonlyArray<string> }
    expect(capabilities.capabilities).toEqual(expect.arrayContaining(["exam_attempts.read", "exam_attempts.create"]))
    expect(capabilities.capabilities).not.toContain("exam_attempts.update")
    expect(capabilities.capabilities).not.toContain("exam_attempts.delete")
    expect((await api(h()).get(`${examPath}/attempts/${recorded.id}`)).body.data).toEqual(recorded)
    const empty = await created(api(h()).post(`/products/${product.id}/exams`, { title: "Empty" }))
    expectError(await api(h()).post(`/products/${product.id}/exams/${empty.id}/attempts`, { user_id: user.id, answers: [] }), 409, "state_conflict", {
      reason: "no_questions"
    })
  })

  it("retake.allowed false: a second attempt is 409 retake_not_allowed", async () => {
    const { attempt, halfRight } = await setup(h(), { retake: { allowed: false } })
    expect((await attempt(halfRight)).status).toBe(201)
    expectError(await attempt(halfRight), 409, "state_conflict", { reason: "retake_not_allowed" })
  })

  it("retake.only_if_failed: after a failed attempt another is allowed; after a passed one, 409 already_passed", async () => {
    const { attempt, right, halfRight } = await setup(h(), { retake: { only_if_failed: true } })
    expect((await attempt(halfRight)).body.data.passed).toBe(false)
    expect((await attempt(right)).body.data.passed).toBe(true)
    expectError(await attempt(right), 409, "state_conflict", { reason: "already_passed" })
  })

  it("retake.wait_minutes: another attempt is 409 retake_too_soon until the wait has passed", async () => {
    const { attempt, halfRight } = await setup(h(), { retake: { wait_minutes: 10 } })
    expect((await attempt(halfRight)).status).toBe(201)
    const early = expectError(await attempt(halfRight), 409, "state_conflict", { reason: "retake_too_soon" })
    expect(early.message).toMatch(/\d{4}-\d{2}-\d{2}T/)
    h().advance(9 * 60_000)
    expectError(await attempt(halfRight), 409, "state_conflict", { reason: "retake_too_soon" })
    h().advance(60_000)
    const later = await attempt(halfRight)
    expect(later.status).toBe(201)
    expect(later.body.data.number).toBe(2)
  })

  it("settings.questions_count below the exam's: exactly that many answered, graded over them", async () => {
    const { attempt, right, examPath } = await setup(h())
    await api(h()).patch(examPath, { settings: { questions_count: 1 } })
    expectError(await attempt(right), 422, "validation_failed", { field: "answers", reason: "questions_count" })
    const one = (await attempt([right[1]!])).body.data
    expect(one).toMatchObject({ questions_count: 1, correct_count: 1, grade: 100, passed: true })
    expect(one.answers.map((a: any) => a.exam_question_id)).toEqual([right[1]!.exam_question_id])
  })

  it("attempts need an Idempotency-Key; a replay records nothing new; a trashed exam takes no attempts (404)", async () => {
    const { right, examPath, user, exam } = await setup(h())
    const path = `/api/v3${examPath}/attempts`
    expectError(await h().request("POST", path, { secret: h().live, json: { user_id: user.id, answers: right }, idempotencyKey: null }), 422, "idempotency_key_required")
    const first = await h().request("POST", path, { secret: h().live, json: { user_id: user.id, answers: right }, idempotencyKey: "attempt-once" })
    const again = await h().request("POST", path, { secret: h().live, json: { user_id: user.id, answers: right }, idempotencyKey: "attempt-once" })
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.data.id).toBe(first.body.data.id)
    expect((await api(h()).get(examPath)).body.data.attempts_count).toBe(1)
    expect((await api(h()).del(examPath)).status).toBe(200)
    expectError(await h().request("POST", path, { secret: h().live, json: { user_id: user.id, answers: right } }), 404, "not_found")
    expect(exam.id).toMatch(/^exm_/)
  })

  it("the answers match the served description (OpenAPI), with the key and without it", async () => {
    const { attempt, right, examPath, single, product } = await setup(h())
    const doc = (await api(h()).get("/openapi.json")).body
    const exams = "/products/{product_id}/exams"
    const exam = `${exams}/{exam_id}`
    const reader = await credentialWithPolicies(h(), [{ capabilities: ["exams.read", "exam_questions.read", "exam_attempts.read"], resources: [product.id] }])
    const made = await attempt(right)
    for (const secret of [h().live, reader]) {
      expect(conforms(doc, exam, "get", 200, (await api(h(), secret).get(examPath)).body)).toEqual([])
      expect(conforms(doc, exams, "get", 200, (await api(h(), secret).get(`/products/${product.id}/exams`)).body)).toEqual([])
      expect(conforms(doc, `${exam}/questions`, "get", 200, (await api(h(), secret).get(`${examPath}/questions`)).body)).toEqual([])
      expect(conforms(doc, `${exam}/questions/{exam_question_id}`, "get", 200, (await api(h(), secret).get(`${examPath}/questions/${single.id}`)).body)).toEqual([])
      expect(conforms(doc, `${exam}/attempts`, "get", 200, (await api(h(), secret).get(`${examPath}/attempts`)).body)).toEqual([])
      expect(conforms(doc, `${exam}/attempts/{exam_attempt_id}`, "get", 200, (await api(h(), secret).get(`${examPath}/attempts/${made.body.data.id}`)).body)).toEqual([])
    }
    expect(conforms(doc, `${exam}/attempts`, "post", 201, made.body)).toEqual([])
    const etag = (await api(h()).get(examPath)).headers.get("etag")!
    const order = await h().request("PUT", `/api/v3${examPath}/questions/order`, { secret: h().live, json: { ids: right.map((a) => a.exam_question_id).reverse() }, headers: { "if-match": etag } })
    expect(conforms(doc, `${exam}/questions/order`, "put", 200, order.body)).toEqual([])
  })

  it("a passed attempt earns the points of exam_passed rules once per exam, and issues the certificate an exam criterion asks for", async () => {
    const { attempt, right, halfRight, product, exam, user } = await setup(h())
    const rule = await created(api(h()).post("/gamification/rules", { name: "Exam passed", trigger: "exam_passed", points: 25, product_id: product.id }))
    expect(rule.trigger).toBe("exam_passed")
    const template = await api(h()).put(`/products/${product.id}/certificate-template`, { enabled: true, criteria: { kind: "exam", exam_id: exam.id } })
    expect(template.status, template.text).toBe(200)
    const balance = async () => (await api(h()).get(`/users/${user.id}/points`)).body.data.balance
    const certificates = async () => (await api(h()).get(`/certificates?user_id=${user.id}`)).body.data
    expect((await attempt(halfRight)).body.data.passed).toBe(false)
    expect(await balance()).toBe(0)
    expect(await certificates()).toEqual([])
    expect((await attempt(right)).body.data.passed).toBe(true)
    expect(await balance()).toBe(25)
    const [certificate] = await certificates()
    expect(certificate).toMatchObject({ user_id: user.id, product_id: product.id, criteria: { kind: "exam", exam_id: exam.id } })
    // Passing again earns nothing more.
    expect((await attempt(right)).body.data.passed).toBe(true)
    expect(await balance()).toBe(25)
    expect((await certificates()).length).toBe(1)
  })
})
