/**
 * Per-lesson progress of an enrollment (release 3.2.0, open-points routes
 * `GET /enrollments/{id}/progress`, `PUT /enrollments/{id}/progress/lessons/{lesson_id}`).
 * Decisions (also in docs/learning.md and the OpenAPI description):
 * - One `lesson_progress` record per (enrollment, lesson), made by the first PUT, found by
 *   the unique key `enrollment_lesson` (`"<enrollment_id>:<lesson_id>"`); listed for one
 *   enrollment over the index (enrollment, lesson). Built for 10,000,000 rows: nothing reads
 *   more than one page of them, or counts more than one enrollment's.
 * - The PUT (integrations record progress) needs a published, non-trashed lesson of the
 *   enrollment's product (another product's lesson, or a missing one: 404 as a path ID; a
 *   draft: 409 `state_conflict` reason `lesson_not_published`) and an active enrollment not
 *   past its expiry (409 `state_conflict` reason `enrollment_not_active`).
 *   `status` `completed` means `percent` 100 (and `completed_at`, default now); `percent`
 *   100 alone completes; `not_started` means 0. A PUT that changes nothing records nothing.
 * - In the same unit of work, the enrollment's `progress_percent` is recomputed from two
 *   index counts (its completed rows; the product's published, non-trashed lessons), rounded
 *   down, at most 100; `completed_at` is set the first time every lesson is completed (it
 *   stays). Events: `lesson_progress.updated` (the row), `enrollment.updated` when the
 *   enrollment changed, `enrollment.completed` the first time it completes.
 * - A completed lesson later trashed or unpublished still counts among the completed rows
 *   (counting only live ones would read every row): `progress_percent` is capped at 100.
 * - The read pages the product's published lessons in course order (modules by position,
 *   then lessons by position), each with its progress (`not_started` without a record) and
 *   `available` / `available_at` from the release rules.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { Caller, Ids } from "../access/context.js"
import { apiError, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { Crypto } from "../ports/crypto.js"
import { type AccessPath, type JsonObject, listPath, Records, type StoredRecord, type Tenant, type Where } from "../ports/store.js"
import { DAY, formatTimestamp, parseTimestamp } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { Enum, Integer, Timestamp } from "../records/schema.js"
import { loadResource, recordResourceChange, requireResourceReach, resourceView, saveResource } from "../records/resource.js"
import { recordChange } from "../trail/audit.js"
import { enrollments, isOpenEnrollment, recordEnrollmentChange } from "./enrollments.js"
import { availabilityOf, rulesOfTargets } from "./release-rules.js"
import { rewardProgress } from "./rewards.js"

export const LESSON_PROGRESS_TYPE = "lesson_progress"
const LESSON_TYPE = "lesson"
const MODULE_TYPE = "module"
const PROGRESS_KEY = "enrollment_lesson"

export const progressStatuses = ["not_started", "in_progress", "completed"] as const

export const lessonProgressFields = [
  "object",
  "id",
  "enrollment_id",
  "lesson_id",
  "module_id",
  "status",
  "percent",
  "completed_at",
  "updated_at",
  "revision",
  "available",
  "available_at"
] as const

/** The ETag of a lesson's recorded progress (§2.1), the one `If-Match` of its PUT takes. */
export const lessonProgressEtag = (row: JsonObject) => `W/"${LESSON_PROGRESS_TYPE}:${String(row.id)}:${String(row.revision)}"`

/** The body of the PUT. */
export const LessonProgressInput = Schema.Struct({
  status: Schema.optional(Enum(...progressStatuses)),
  percent: Schema.optional(Integer({ min: 0, max: 100 })),
  completed_at: Schema.optional(Schema.NullOr(Timestamp))
}).annotations({ identifier: "LessonProgressInput" })
export type LessonProgressInput = typeof LessonProgressInput.Type

/** Reads of progress records, each an index of the store. */
export const progressAccessPaths: ReadonlyArray<AccessPath> = [
  // One enrollment's rows for a page of lessons.
  listPath(LESSON_PROGRESS_TYPE, ["enrollment_id"], [{ field: "lesson_id", kind: "text" }]),
  // The counts behind `progress_percent` and `after_module_completed`.
  listPath(LESSON_PROGRESS_TYPE, ["enrollment_id", "status"], [{ field: "id", kind: "text" }]),
  listPath(LESSON_PROGRESS_TYPE, ["enrollment_id", "module_id", "status"], [{ field: "id", kind: "text" }])
]

const countOf = (tenant: Tenant, type: string, where: ReadonlyArray<Where>) =>
  Effect.flatMap(Records, (records) => records.count(tenant, type, where, [])).pipe(
    Effect.map((groups) => groups.reduce((n, g) => n + g.count, 0)),
    Effect.mapError(readUnavailable)
  )

const publishedLessons = (productId: string): ReadonlyArray<Where> => [
  { field: "product_id", op: "eq", value: productId },
  { field: "deleted", op: "eq", value: false },
  { field: "status", op: "eq", value: "published" }
]

/** A module's published, non-trashed lessons: the lessons' `module_id` path (product, trash, module). */
const moduleLessons = (productId: string, moduleId: string): ReadonlyArray<Where> => [
  { field: "product_id", op: "eq", value: productId },
  { field: "module_id", op: "eq", value: moduleId },
  { field: "deleted", op: "eq", value: false },
  { field: "status", op: "eq", value: "published" }
]

/** Whether every published lesson of each module is completed by the enrollment (two counts per module). */
const modulesDone = (tenant: Tenant, productId: string, enrollmentId: string, moduleIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const done = new Map<string, boolean>()
    for (const moduleId of new Set(moduleIds)) {
      const total = yield* countOf(tenant, LESSON_TYPE, moduleLessons(productId, moduleId))
      const completed = yield* countOf(tenant, LESSON_PROGRESS_TYPE, [
        { field: "enrollment_id", op: "eq", value: enrollmentId },
        { field: "module_id", op: "eq", value: moduleId },
        { field: "status", op: "eq", value: "completed" }
      ])
      done.set(moduleId, total > 0 && completed >= total)
    }
    return done
  })

/** Availability of lessons for an enrollment: their rules and their modules' rules. */
const availabilityFor = (tenant: Tenant, enrollment: StoredRecord, lessons: ReadonlyArray<StoredRecord>, now: number) =>
  Effect.gen(function* () {
    const productId = String(enrollment.data.product_id)
    const rules = yield* rulesOfTargets(tenant, productId, lessons.flatMap((l) => [l.id, String(l.data.module_id)]))
    const prerequisites = [...rules.values()].filter((r) => r.data.kind === "after_module_completed").map((r) => String(r.data.module_id))
    const done = yield* modulesDone(tenant, productId, enrollment.id, prerequisites)
    return (lesson: StoredRecord) =>
      availabilityOf(
        [rules.get(String(lesson.data.module_id)), rules.get(lesson.id)].flatMap((r) => (r ? [r.data] : [])),
        enrollment.data,
        now,
        (moduleId) => done.get(moduleId) === true
      )
  })

const rowOf = (enrollmentId: string, lesson: StoredRecord, progress: StoredRecord | undefined, availability: { available: boolean; available_at: string | null }): JsonObject =>
  inOrder(
    {
      object: LESSON_PROGRESS_TYPE,
      id: progress?.id ?? null,
      enrollment_id: enrollmentId,
      lesson_id: lesson.id,
      module_id: String(lesson.data.module_id),
      status: progress?.data.status ?? "not_started",
      percent: progress?.data.percent ?? 0,
      completed_at: progress?.data.completed_at ?? null,
      updated_at: progress?.data.updated_at ?? null,
      revision: progress === undefined ? null : String(progress.revision),
      ...availability
    },
    lessonProgressFields
  )

// ---------------------------------------------------------------------------------------
// The write

/** The enrollment's derived fields after a progress write, from two index counts; its events. */
const refreshEnrollment = (enrollment: StoredRecord, now: number) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const total = yield* countOf(caller.tenant, LESSON_TYPE, publishedLessons(String(enrollment.data.product_id)))
    const completed = yield* countOf(caller.tenant, LESSON_PROGRESS_TYPE, [
      { field: "enrollment_id", op: "eq", value: enrollment.id },
      { field: "status", op: "eq", value: "completed" }
    ])
    const percent = total === 0 ? 0 : Math.min(100, Math.floor((completed * 100) / total))
    const completes = total > 0 && completed >= total && enrollment.data.completed_at === null
    if (percent === enrollment.data.progress_percent && !completes) return { enrollment, completes }
    const saved = yield* saveResource(
      enrollments,
      enrollment,
      { ...enrollment.data, progress_percent: percent, completed_at: completes ? formatTimestamp(now) : enrollment.data.completed_at ?? null },
      enrollment.revision
    )
    yield* recordResourceChange(enrollments, "updated", resourceView(enrollments, saved), resourceView(enrollments, enrollment))
    if (completes) yield* recordEnrollmentChange("completed", saved, null)
    return { enrollment: saved, completes }
  })

/** The stored fields of a lesson's progress after a PUT, or a 422 naming the field at fault. */
const nextProgress = (current: JsonObject | undefined, body: LessonProgressInput, now: number) =>
  Effect.gen(function* () {
    const was = (current?.status as string | undefined) ?? "not_started"
    const status = body.status ?? (body.percent === 100 ? "completed" : body.percent !== undefined && body.percent > 0 && was === "not_started" ? "in_progress" : was)
    const invalid = (field: string, reason: string) => Effect.fail(fieldError("validation_failed", field, { reason }))
    if (body.completed_at !== undefined && body.completed_at !== null && status !== "completed") return yield* invalid("completed_at", "requires_completed")
    if (status === "completed") {
      if (body.percent !== undefined && body.percent !== 100) return yield* invalid("percent", "inconsistent_with_status")
      let completedAt = (current?.completed_at as string | null | undefined) ?? formatTimestamp(now)
      if (typeof body.completed_at === "string") {
        const at = Option.getOrThrow(parseTimestamp(body.completed_at))
        if (at > now + 60_000) return yield* invalid("completed_at", "in_the_future")
        completedAt = formatTimestamp(at)
      }
      return { status, percent: 100, completed_at: completedAt }
    }
    if (status === "not_started") {
      if (body.percent !== undefined && body.percent !== 0) return yield* invalid("percent", "inconsistent_with_status")
      return { status, percent: 0, completed_at: null }
    }
    const percent = body.percent ?? (was === "completed" ? 0 : Number(current?.percent ?? 0))
    if (percent === 100) return yield* invalid("percent", "inconsistent_with_status")
    return { status, percent, completed_at: null }
  })

/** What `If-Match` named: the progress record (its own ID: the path names the enrollment and the lesson) and its revision. */
export interface ExpectedProgress {
  readonly id: string | undefined
  readonly revision: number | undefined
}

/**
 * `PUT /enrollments/{enrollment_id}/progress/lessons/{lesson_id}`: set one lesson's progress
 * and, in the same unit of work, the enrollment's `progress_percent` and `completed_at`.
 * With `If-Match`, the recorded progress must be the one it names, at that revision (a lesson
 * without recorded progress matches none: 412).
 */
export const putLessonProgress = Effect.fn("Progress.put")(function* (
  enrollmentId: string,
  lessonId: string,
  body: LessonProgressInput,
  expected: ExpectedProgress = { id: undefined, revision: undefined }
) {
  const caller = yield* Caller
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const enrollment = yield* loadResource(enrollments, undefined, enrollmentId)
  yield* requireResourceReach(enrollments, "update", enrollment)
  const lesson = yield* records.get(caller.tenant, LESSON_TYPE, lessonId).pipe(Effect.mapError(readUnavailable))
  if (!lesson || lesson.data.deleted === true || lesson.data.product_id !== enrollment.data.product_id) return yield* Effect.fail(apiError("not_found"))
  if (!isOpenEnrollment(enrollment, now)) return yield* Effect.fail(apiError("state_conflict", { reason: "enrollment_not_active" }))
  if (lesson.data.status !== "published") return yield* Effect.fail(apiError("state_conflict", { reason: "lesson_not_published" }))
  const key = `${enrollmentId}:${lessonId}`
  const existing = yield* records.findUnique(caller.tenant, LESSON_PROGRESS_TYPE, { name: PROGRESS_KEY, value: key }).pipe(Effect.mapError(readUnavailable))
  if (expected.revision !== undefined && (existing === undefined || existing.id !== expected.id || existing.revision !== expected.revision)) {
    return yield* Effect.fail(apiError("revision_mismatch"))
  }
  const next = yield* nextProgress(existing?.data, body, now)
  const at = formatTimestamp(now)
  let saved: StoredRecord
  if (existing) {
    const unchanged =
      existing.data.status === next.status && existing.data.percent === next.percent && existing.data.completed_at === next.completed_at &&
      existing.data.module_id === lesson.data.module_id
    if (unchanged) return yield* progressAnswer(enrollment, lesson, existing, now)
    saved = yield* records
      .update(caller.tenant, LESSON_PROGRESS_TYPE, existing.id, { ...existing.data, ...next, module_id: String(lesson.data.module_id), updated_at: at }, {
        expectedRevision: existing.revision
      })
      .pipe(
        Effect.catchTags({
          RevisionConflict: () => Effect.fail(apiError("revision_mismatch")),
          UniqueViolation: () => Effect.fail(apiError("state_conflict")),
          StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
        })
      )
  } else {
    const id = yield* (yield* Ids).next("lesson_progress")
    saved = yield* records
      .insert(
        caller.tenant,
        LESSON_PROGRESS_TYPE,
        id,
        {
          object: LESSON_PROGRESS_TYPE,
          id,
          enrollment_id: enrollmentId,
          lesson_id: lessonId,
          module_id: String(lesson.data.module_id),
          // Internal: the enrollment's owners, so that a limited credential's activity report finds its rows (access/scope.ts).
          product_id: String(enrollment.data.product_id),
          user_id: String(enrollment.data.user_id),
          ...next,
          created_at: at,
          updated_at: at
        },
        [{ name: PROGRESS_KEY, value: key }]
      )
      .pipe(
        Effect.catchTags({
          // A concurrent first PUT of the same lesson: the unit of work runs again and finds it.
          UniqueViolation: () => Effect.fail(apiError("state_conflict", { reason: "concurrent_update" })),
          StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
        })
      )
  }
  const { enrollment: refreshed, completes } = yield* refreshEnrollment(enrollment, now)
  const lessonCompleted = next.status === "completed" && existing?.data.status !== "completed" ? lessonId : null
  yield* rewardProgress({ enrollment: refreshed, lessonCompleted, enrollmentCompleted: completes })
  const answer = yield* progressAnswer(refreshed, lesson, saved, now)
  const before = existing ? rowOf(enrollmentId, lesson, existing, { available: answer.available as boolean, available_at: answer.available_at as string | null }) : null
  yield* recordChange(`${LESSON_PROGRESS_TYPE}.updated`, { object: LESSON_PROGRESS_TYPE, id: saved.id })
  yield* emitEvent(`${LESSON_PROGRESS_TYPE}.updated`, answer, before ? previousAttributes(before, answer) : null)
  return answer
})

const progressAnswer = (enrollment: StoredRecord, lesson: StoredRecord, progress: StoredRecord, now: number) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const available = yield* availabilityFor(caller.tenant, enrollment, [lesson], now)
    return rowOf(enrollment.id, lesson, progress, available(lesson))
  })

/** The event types of progress (the event-type catalog lists them). */
export const lessonProgressEventTypes = [`${LESSON_PROGRESS_TYPE}.updated`] as const

// ---------------------------------------------------------------------------------------
// The read: the product's published lessons in course order, a page at a time

interface ProgressCursor {
  /** The last lesson of the page: its module's position and ID, its own position and ID. */
  readonly mp: number
  readonly m: string
  readonly lp: number
  readonly l: string
  readonly b: string
  readonly t: number
}

const invalidCursor = apiError("invalid_cursor", { details: [{ parameter: "cursor", code: "invalid_cursor" }] })

/** A module's published lessons in position order, after a position, at most `limit`. */
const lessonsOfModule = (tenant: Tenant, productId: string, moduleId: string, after: { value: number; id: string } | undefined, limit: number) =>
  Effect.flatMap(Records, (records) =>
    records.list(tenant, LESSON_TYPE, {
      // The lessons' `module_id` path: product, trash, module, then position.
      where: moduleLessons(productId, moduleId),
      sort: { field: "position", kind: "number", direction: "asc" },
      after,
      limit
    })
  ).pipe(Effect.mapError(readUnavailable))

/**
 * `GET /enrollments/{enrollment_id}/progress`: the enrollment's percent and a page of its
 * product's published lessons in course order, each with its progress and availability.
 * Pages go forward (`next_cursor`); the cursor is signed and bound to the enrollment.
 */
export const getEnrollmentProgress = Effect.fn("Progress.get")(function* (enrollmentId: string, limit: number, cursor: string | undefined) {
  const caller = yield* Caller
  const records = yield* Records
  const crypto = yield* Crypto
  const now = yield* Clock.currentTimeMillis
  const enrollment = yield* loadResource(enrollments, undefined, enrollmentId)
  yield* requireResourceReach(enrollments, "read", enrollment)
  const productId = String(enrollment.data.product_id)
  const binding = crypto.sha256Hex(JSON.stringify(["enrollment_progress", caller.tenant, enrollmentId])).slice(0, 24)

  let position: ProgressCursor | undefined
  if (cursor !== undefined) {
    const [body, signature, extra] = cursor.split(".")
    if (body === undefined || signature === undefined || extra !== undefined || !crypto.safeEqual(signature, crypto.signCursor(body))) {
      return yield* Effect.fail(invalidCursor)
    }
    const parsed = yield* Effect.try({ try: () => JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as ProgressCursor, catch: () => invalidCursor })
    if (parsed.b !== binding || now - parsed.t > DAY || parsed.t > now + 60_000) return yield* Effect.fail(invalidCursor)
    position = parsed
  }

  // Lessons in course order: the rest of the cursor's module, then the next modules in position order.
  const lessons: Array<StoredRecord> = []
  const want = limit + 1
  if (position) {
    const module = yield* records.get(caller.tenant, MODULE_TYPE, position.m).pipe(Effect.mapError(readUnavailable))
    if (module && module.data.deleted !== true && module.data.product_id === productId) {
      lessons.push(...(yield* lessonsOfModule(caller.tenant, productId, module.id, { value: position.lp, id: position.l }, want)))
    }
  }
  let moduleAfter = position ? { value: position.mp, id: position.m } : undefined
  while (lessons.length < want) {
    const modules = yield* records
      .list(caller.tenant, MODULE_TYPE, {
        where: [
          { field: "product_id", op: "eq", value: productId },
          { field: "deleted", op: "eq", value: false }
        ],
        sort: { field: "position", kind: "number", direction: "asc" },
        after: moduleAfter,
        limit: 20
      })
      .pipe(Effect.mapError(readUnavailable))
    for (const module of modules) {
      if (lessons.length >= want) break
      lessons.push(...(yield* lessonsOfModule(caller.tenant, productId, module.id, undefined, want - lessons.length)))
      moduleAfter = { value: Number(module.data.position), id: module.id }
    }
    if (modules.length < 20) break
  }
  const more = lessons.length > limit
  const pageLessons = lessons.slice(0, limit)

  const progress = pageLessons.length === 0
    ? []
    : yield* records
        .list(caller.tenant, LESSON_PROGRESS_TYPE, {
          where: [
            { field: "enrollment_id", op: "eq", value: enrollmentId },
            { field: "lesson_id", op: "in", values: pageLessons.map((l) => l.id) }
          ],
          sort: { field: "lesson_id", kind: "text", direction: "asc" },
          limit: pageLessons.length
        })
        .pipe(Effect.mapError(readUnavailable))
  const byLesson = new Map(progress.map((p) => [String(p.data.lesson_id), p]))
  const available = yield* availabilityFor(caller.tenant, enrollment, pageLessons, now)

  const last = pageLessons.at(-1)
  let next: string | null = null
  if (more && last) {
    const module = yield* records.get(caller.tenant, MODULE_TYPE, String(last.data.module_id)).pipe(Effect.mapError(readUnavailable))
    const payload: ProgressCursor = { mp: Number(module?.data.position ?? 0), m: String(last.data.module_id), lp: Number(last.data.position), l: last.id, b: binding, t: now }
    const body = Buffer.from(JSON.stringify(payload), "utf8").toString("base64url")
    next = `${body}.${crypto.signCursor(body)}`
  }
  const data: JsonObject = {
      object: "enrollment_progress",
      enrollment_id: enrollment.id,
      status: enrollment.data.status ?? null,
      progress_percent: enrollment.data.progress_percent ?? 0,
      completed_at: enrollment.data.completed_at ?? null,
      lessons: pageLessons.map((lesson) => rowOf(enrollment.id, lesson, byLesson.get(lesson.id), available(lesson))),
      page: { limit, next_cursor: next, prev_cursor: null }
  }
  return { data }
})
