/**
 * `issueCertificateIfEarned` (learning/certificates.ts) on the memory store: the template's
 * criteria decide, a certificate is issued once (per learner and product with `single_issue`,
 * else per enrollment), numbered per product, with its event and audit entry, in the caller's
 * unit of work.
 */
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import {
  type CertificateProgress,
  type CertificateTemplateInput,
  issueCertificateIfEarned,
  type JsonObject,
  Records,
  replaceCertificateTemplate,
  verificationCode
} from "@syllabus/core"
import { atomically, caller, insert, run, tenant } from "./support.js"


const product = (id: string) => insert("product", id, { object: "product", id, name: `Course ${id}`, deleted: false })

const template = (productId: string, input: CertificateTemplateInput) => atomically(replaceCertificateTemplate(productId, input, undefined))

const progress = (over: Partial<CertificateProgress> = {}): CertificateProgress => ({
  userId: "usr_000000001",
  productId: "prd_000000001",
  enrollmentId: "enr_000000001",
  percent: 0,
  completed: false,
  passedExamIds: [],
  ...over
})

const issue = (p: CertificateProgress) => atomically(issueCertificateIfEarned(p))

const recordsOf = (type: string) =>
  Effect.flatMap(Records, (records) => records.list(tenant, type, { where: [], sort: { field: "id", kind: "text", direction: "asc" }, limit: 1000 }))

describe("issueCertificateIfEarned", () => {
  it("issues nothing without a template, or while it is disabled", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* product("prd_000000001")
        const none = yield* issue(progress({ completed: true, percent: 100 }))
        yield* template("prd_000000001", { enabled: false })
        const disabled = yield* issue(progress({ completed: true, percent: 100 }))
        return { none, disabled, certificates: yield* recordsOf("certificate") }
      })
    )
    expect(result).toEqual({ none: null, disabled: null, certificates: [] })
  })

  it("percent: issued when the progress reaches it, once per learner and product with single_issue, numbered per product", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* product("prd_000000001")
        yield* product("prd_000000002")
        yield* template("prd_000000001", { enabled: true, criteria: { kind: "percent", percent: 50 } })
        yield* template("prd_000000002", { enabled: true, criteria: { kind: "percent", percent: 50 } })
        const below = yield* issue(progress({ percent: 49.5 }))
        const first = yield* issue(progress({ percent: 50 }))
        const again = yield* issue(progress({ percent: 100, completed: true }))
        const anotherEnrollment = yield* issue(progress({ percent: 100, enrollmentId: "enr_000000002" }))
        const otherLearner = yield* issue(progress({ userId: "usr_000000002", enrollmentId: "enr_000000003", percent: 80 }))
        const otherProduct = yield* issue(progress({ productId: "prd_000000002", enrollmentId: "enr_000000004", percent: 80 }))
        return { below, first, again, anotherEnrollment, otherLearner, otherProduct, events: yield* recordsOf("event"), audit: yield* recordsOf("audit_entry") }
      })
    )
    expect(result.below).toBeNull()
    expect(result.first).toMatchObject({
      object: "certificate",
      user_id: "usr_000000001",
      product_id: "prd_000000001",
      enrollment_id: "enr_000000001",
      sequence: 1,
      criteria: { kind: "percent", percent: 50, exam_id: null },
      revision: "1"
    })
    expect(String(result.first!.id)).toMatch(/^crt_[0-9A-Za-z]{9}$/)
    expect(String(result.first!.code)).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/)
    expect(result.first!.issued_at).toBe(result.first!.created_at)
    expect(result.again).toBeNull()
    expect(result.anotherEnrollment).toBeNull()
    expect(result.otherLearner).toMatchObject({ user_id: "usr_000000002", sequence: 2 })
    expect(result.otherProduct).toMatchObject({ product_id: "prd_000000002", sequence: 1 })
    expect(result.otherLearner!.code).not.toBe(result.first!.code)
    const issued = result.events.filter((e) => e.data.type === "certificate.issued")
    expect(issued.map((e) => (e.data.data as JsonObject).object)).toEqual([result.first, result.otherLearner, result.otherProduct])
    expect(result.audit.filter((e) => e.data.action === "certificate.issued").map((e) => e.data.resource_id)).toEqual([
      result.first!.id,
      result.otherLearner!.id,
      result.otherProduct!.id
    ])
  })

  it("without single_issue: once per enrollment", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* product("prd_000000001")
        yield* template("prd_000000001", { enabled: true, single_issue: false })
        const notYet = yield* issue(progress({ percent: 100 }))
        const first = yield* issue(progress({ completed: true }))
        const same = yield* issue(progress({ completed: true }))
        const next = yield* issue(progress({ completed: true, enrollmentId: "enr_000000002" }))
        return { notYet, first, same, next }
      })
    )
    expect(result.notYet).toBeNull()
    expect(result.first).toMatchObject({ enrollment_id: "enr_000000001", sequence: 1, criteria: { kind: "completion", percent: null, exam_id: null } })
    expect(result.same).toBeNull()
    expect(result.next).toMatchObject({ enrollment_id: "enr_000000002", sequence: 2 })
  })

  it("exam: issued when the template's exam is among those passed; the criteria are a snapshot", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* product("prd_000000001")
        yield* insert("exam", "exm_000000001", { object: "exam", id: "exm_000000001", product_id: "prd_000000001", deleted: false })
        yield* template("prd_000000001", { enabled: true, criteria: { kind: "exam", exam_id: "exm_000000001" } })
        const otherExam = yield* issue(progress({ passedExamIds: ["exm_000000002"], completed: true }))
        const passed = yield* issue(progress({ passedExamIds: ["exm_000000001"] }))
        // A later change of the template leaves the certificate as it was issued.
        yield* template("prd_000000001", { enabled: true, criteria: { kind: "completion" } })
        const stored = yield* Effect.flatMap(Records, (records) => records.get(tenant, "certificate", String(passed!.id)))
        return { otherExam, passed, stored: stored?.data }
      })
    )
    expect(result.otherExam).toBeNull()
    expect(result.passed).toMatchObject({ criteria: { kind: "exam", percent: null, exam_id: "exm_000000001" } })
    expect(result.stored?.criteria).toEqual({ kind: "exam", percent: null, exam_id: "exm_000000001" })
  })

  it("concurrent units of work issue one certificate, not two", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* product("prd_000000001")
        yield* template("prd_000000001", { enabled: true })
        const both = yield* Effect.all([issue(progress({ completed: true })), issue(progress({ completed: true, enrollmentId: "enr_000000002" }))], {
          concurrency: 2
        })
        return { both, certificates: yield* recordsOf("certificate") }
      })
    )
    expect(result.both.filter((c) => c !== null)).toHaveLength(1)
    expect(result.certificates).toHaveLength(1)
  })

  it("a failure later in the unit of work leaves no certificate, event or sequence behind", async () => {
    const result = await run(
      Effect.gen(function* () {
        yield* product("prd_000000001")
        yield* template("prd_000000001", { enabled: true })
        const failed = yield* Effect.either(atomically(Effect.zipRight(issueCertificateIfEarned(progress({ completed: true })), Effect.fail("later" as const))))
        const after = yield* issue(progress({ completed: true }))
        const events = (yield* recordsOf("event")).filter((e) => e.data.type === "certificate.issued")
        return { failed: failed._tag, after, certificates: yield* recordsOf("certificate"), events }
      })
    )
    expect(result.failed).toBe("Left")
    expect(result.after).toMatchObject({ sequence: 1 })
    expect(result.certificates).toHaveLength(1)
    expect(result.events).toHaveLength(1)
  })
})

describe("verificationCode", () => {
  it("is 16 characters of Crockford's base-32 in four groups, from 80 bits", () => {
    expect(verificationCode(new Uint8Array(10))).toBe("0000-0000-0000-0000")
    expect(verificationCode(new Uint8Array(10).fill(255))).toBe("ZZZZ-ZZZZ-ZZZZ-ZZZZ")
    expect(verificationCode(Uint8Array.from([0x08, 0x86, 0x42, 0x98, 0xe8, 0x4a, 0x96, 0xc6, 0xb9, 0xf0]))).toBe("1234-5678-9ABC-DEFG")
  })
})
