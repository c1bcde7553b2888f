/**
 * What learning earns, in the unit of work of the change that earned it (docs/gamification.md,
 * docs/certificates.md): one place that says which change awards which points and when a
 * certificate is looked at.
 *
 * - A lesson that becomes `completed`: the `lesson_completed` rules, once per learner and
 *   lesson (the source is the lesson, so a re-enrollment that completes it again earns nothing
 *   more).
 * - An enrollment that completes: the `enrollment_completed` rules, once per enrollment.
 * - An attempt that passes: the `exam_passed` rules, once per learner and exam (a retake that
 *   passes again earns nothing more).
 * - After each of those and after any change of the enrollment's percent, the product's
 *   certificate, when its template's criteria are now met (`issueCertificateIfEarned`); a
 *   certificate issued: the `certificate_issued` rules, once per certificate.
 */
import { Effect } from "effect"
import { Caller } from "../access/context.js"
import { readUnavailable } from "../errors/errors.js"
import { type AccessPath, listPath, Records, type StoredRecord } from "../ports/store.js"
import { issueCertificateIfEarned } from "./certificates.js"
import { ENROLLMENT_TYPE } from "./enrollments.js"
import { EXAM_ATTEMPT_TYPE } from "./exams.js"
import { awardPoints } from "./gamification.js"

/** A user's passed attempts in a product, grouped by exam (certificates' `exam` criteria). */
export const rewardsAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(EXAM_ATTEMPT_TYPE, ["user_id", "product_id", "passed", "deleted"], [{ field: "id", kind: "text" }])
]

/** The exams of a product a user has passed (an attempt at or above its `min_grade`): one grouped count. */
export const passedExamIdsOf = (userId: string, productId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const groups = yield* (yield* Records)
      .count(
        caller.tenant,
        EXAM_ATTEMPT_TYPE,
        [
          { field: "user_id", op: "eq", value: userId },
          { field: "product_id", op: "eq", value: productId },
          { field: "passed", op: "eq", value: true },
          { field: "deleted", op: "eq", value: false }
        ],
        ["exam_id"]
      )
      .pipe(Effect.mapError(readUnavailable))
    return groups.flatMap((group) => (typeof group.key[0] === "string" ? [group.key[0]] : []))
  })

/** The certificate the enrollment's state now earns, if any, and the points of its issue. */
const certificateFor = (enrollment: StoredRecord) =>
  Effect.gen(function* () {
    const userId = String(enrollment.data.user_id)
    const productId = String(enrollment.data.product_id)
    const certificate = yield* issueCertificateIfEarned({
      userId,
      productId,
      enrollmentId: enrollment.id,
      percent: typeof enrollment.data.progress_percent === "number" ? enrollment.data.progress_percent : 0,
      completed: typeof enrollment.data.completed_at === "string",
      passedExamIds: yield* passedExamIdsOf(userId, productId)
    })
    if (certificate) {
      yield* awardPoints({ userId, productId, trigger: "certificate_issued", sourceType: "certificate", sourceId: String(certificate.id) })
    }
  })

/** After a progress write: points for a lesson completed now and an enrollment completed now, then the certificate. */
export const rewardProgress = (change: { readonly enrollment: StoredRecord; readonly lessonCompleted: string | null; readonly enrollmentCompleted: boolean }) =>
  Effect.gen(function* () {
    const userId = String(change.enrollment.data.user_id)
    const productId = String(change.enrollment.data.product_id)
    if (change.lessonCompleted !== null) {
      yield* awardPoints({ userId, productId, trigger: "lesson_completed", sourceType: "lesson", sourceId: change.lessonCompleted })
    }
    if (change.enrollmentCompleted) {
      yield* awardPoints({ userId, productId, trigger: "enrollment_completed", sourceType: "enrollment", sourceId: change.enrollment.id })
    }
    yield* certificateFor(change.enrollment)
  })

/** After an attempt is recorded: when it passed, the points of `exam_passed` rules, then the certificate. */
export const rewardAttempt = (attempt: StoredRecord) =>
  Effect.gen(function* () {
    if (attempt.data.passed !== true) return
    const userId = String(attempt.data.user_id)
    const productId = String(attempt.data.product_id)
    yield* awardPoints({ userId, productId, trigger: "exam_passed", sourceType: "exam", sourceId: String(attempt.data.exam_id) })
    const enrollment = yield* (yield* Records)
      .get((yield* Caller).tenant, ENROLLMENT_TYPE, String(attempt.data.enrollment_id))
      .pipe(Effect.mapError(readUnavailable))
    if (enrollment) yield* certificateFor(enrollment)
  })
