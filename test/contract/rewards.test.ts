/**
 * What learning earns, end to end over HTTP (learning/rewards.ts): completing lessons through
 * the progress route awards the points of `lesson_completed` and `enrollment_completed` rules,
 * issues the product's certificate when its template's criteria are met, and awards
 * `certificate_issued`; a repeated completion earns nothing more. A passed exam attempt
 * awards `exam_passed` once per learner and exam, and issues a certificate whose criteria is
 * that exam.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api } from "../support/api.js"

const ok = async (res: Promise<{ status: number; body: any; text: string }>, status = 201) => {
  const r = await res
  expect(r.status, r.text).toBe(status)
  return r.body.data as Record<string, any>
}

let counter = 0

/** A course of two published lessons, a rule per trigger on it, an enrolled learner. */
const course = async (h: Harness, template: object) => {
  const showcase = await ok(api(h).post("/showcases", { name: "Shelf" }))
  const product = await ok(api(h).post("/products", { format: "course", name: "Rewarded course", showcase_id: showcase.id }))
  const module = await ok(api(h).post(`/products/${product.id}/modules`, { name: "M" }))
  const lessons: Array<string> = []
  for (const name of ["one", "two"]) {
    const lesson = await ok(api(h).post(`/products/${product.id}/lessons`, { name, module_id: module.id }))
    await ok(api(h).patch(`/products/${product.id}/lessons/${lesson.id}`, { status: "published" }), 200)
    lessons.push(String(lesson.id))
  }
  const points = { lesson_completed: 10, enrollment_completed: 50, certificate_issued: 5, exam_passed: 20 }
  for (const [trigger, value] of Object.entries(points)) {
    await ok(api(h).post("/gamification/rules", { name: trigger, trigger, points: value, product_id: product.id }))
  }
  await ok(api(h).put(`/products/${product.id}/certificate-template`, { enabled: true, texts: { content: "Well done" }, ...template }), 200)
  const user = await ok(api(h).post("/users", { name: "Ada", email: `rewards-${process.pid}-${++counter}@example.com` }))
  const enrollment = await ok(api(h).post("/enrollments", { user_id: user.id, product_id: product.id }))
  return { product: String(product.id), lessons, user: String(user.id), enrollment: String(enrollment.id) }
}

const balanceOf = async (h: Harness, userId: string) => (await ok(api(h).get(`/users/${userId}/points`), 200)).balance as number
const certificatesOf = async (h: Harness, userId: string) => (await api(h).get(`/certificates?user_id=${userId}`)).body.data as Array<Record<string, any>>
const complete = (h: Harness, enrollmentId: string, lessonId: string) =>
  ok(api(h).put(`/enrollments/${enrollmentId}/progress/lessons/${lessonId}`, { status: "completed" }), 200)

eachStore("what learning earns", (h) => {
  it("completing lessons awards per lesson, then the completion, the certificate and its points; completing again earns nothing", async () => {
    const c = await course(h(), {})
    await complete(h(), c.enrollment, c.lessons[0]!)
    expect(await balanceOf(h(), c.user)).toBe(10)
    expect(await certificatesOf(h(), c.user)).toEqual([])

    await complete(h(), c.enrollment, c.lessons[1]!)
    // 10 + 10 (lessons) + 50 (enrollment completed) + 5 (certificate issued)
    expect(await balanceOf(h(), c.user)).toBe(75)
    const certificates = await certificatesOf(h(), c.user)
    expect(certificates).toHaveLength(1)
    expect(certificates[0]).toMatchObject({ product_id: c.product, enrollment_id: c.enrollment, sequence: 1 })
    const entries = (await api(h()).get(`/users/${c.user}/points/entries`)).body.data as Array<Record<string, any>>
    expect(entries.map((e) => e.trigger).sort()).toEqual(["certificate_issued", "enrollment_completed", "lesson_completed", "lesson_completed"])
    expect(entries.find((e) => e.trigger === "certificate_issued")!.source).toEqual({ type: "certificate", id: certificates[0]!.id })

    // The same lesson set back to in progress and completed again: no new points, no new certificate.
    await ok(api(h()).put(`/enrollments/${c.enrollment}/progress/lessons/${c.lessons[0]}`, { status: "in_progress", percent: 50 }), 200)
    await complete(h(), c.enrollment, c.lessons[0]!)
    expect(await balanceOf(h(), c.user)).toBe(75)
    expect(await certificatesOf(h(), c.user)).toHaveLength(1)
  })

  it("a percent criterion issues the certificate before completion", async () => {
    const c = await course(h(), { criteria: { kind: "percent", percent: 50 } })
    await complete(h(), c.enrollment, c.lessons[0]!)
    expect(await certificatesOf(h(), c.user)).toHaveLength(1)
    expect(await balanceOf(h(), c.user)).toBe(15)
  })

  it("a passed attempt (not a failed one) awards exam_passed once per learner and exam, and issues a certificate whose criterion is the exam", async () => {
    const c = await course(h(), {})
    const exam = await ok(api(h()).post(`/products/${c.product}/exams`, { title: "Final" }))
    await ok(
      api(h()).put(`/products/${c.product}/certificate-template`, { enabled: true, texts: { content: "Passed" }, criteria: { kind: "exam", exam_id: exam.id } }),
      200
    )
    const question = await ok(
      api(h()).post(`/products/${c.product}/exams/${exam.id}/questions`, {
        text: "2 + 2?",
        format: "single_choice",
        alternatives: [{ text: "4", correct: true }, { text: "5" }]
      })
    )
    const alternative = (text: string) => (question.alternatives as Array<{ id: string; text: string }>).find((a) => a.text === text)!.id
    const right = alternative("4")
    const attempt = (alternative: string) =>
      ok(api(h()).post(`/products/${c.product}/exams/${exam.id}/attempts`, { user_id: c.user, answers: [{ exam_question_id: question.id, alternative_ids: [alternative] }] }))
    // A failed attempt earns nothing, and progress after it does not count it as the exam passed.
    expect((await attempt(alternative("5"))).passed).toBe(false)
    expect(await balanceOf(h(), c.user)).toBe(0)
    await complete(h(), c.enrollment, c.lessons[0]!)
    expect(await balanceOf(h(), c.user)).toBe(10)
    expect(await certificatesOf(h(), c.user)).toEqual([])
    expect((await attempt(right)).passed).toBe(true)
    // 10 (a lesson) + 20 (exam passed) + 5 (certificate issued)
    expect(await balanceOf(h(), c.user)).toBe(35)
    expect(await certificatesOf(h(), c.user)).toHaveLength(1)
    expect((await attempt(right)).passed).toBe(true)
    expect(await balanceOf(h(), c.user)).toBe(35)
    expect(await certificatesOf(h(), c.user)).toHaveLength(1)
  })
})
