/**
 * Operations of the "learning" group beyond the derived list/get/update of enrollments and the
 * CRUD of release rules: the create of an enrollment (its 409 named on `product_id`), its
 * cancellation, and its per-lesson progress (docs/learning.md).
 */
import {
  releaseRules,
  cancelEnrollment,
  createEnrollment,
  enrollments,
  getEnrollmentProgress,
  LessonProgressInput,
  lessonProgressEtag,
  putLessonProgress,
  renameActiveKeyConflict,
  resourceEtag,
  resourceView
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { CursorParam, LimitParam, pageLimit } from "../query.js"
import { describedOperations, representationSchema } from "../resources.js"

const tag = "Learning"
const EnrollmentSchema = representationSchema(enrollments)
const Timestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

const LessonProgressSchema = Schema.Struct({
  object: Schema.Literal("lesson_progress"),
  id: Schema.NullOr(Schema.String).annotations({ description: "Null for a lesson without recorded progress." }),
  enrollment_id: Schema.String,
  lesson_id: Schema.String,
  module_id: Schema.String,
  status: Schema.Literal("not_started", "in_progress", "completed"),
  percent: Schema.Int.annotations({ description: "0 to 100; 100 exactly when `completed`." }),
  completed_at: Schema.NullOr(Timestamp),
  updated_at: Schema.NullOr(Timestamp).annotations({ description: "When progress was last recorded; null when never." }),
  revision: Schema.NullOr(Schema.String).annotations({
    description: "Changes on every write of the lesson's progress; null when never recorded. The ETag `W/\"lesson_progress:<id>:<revision>\"` is what `If-Match` of the PUT takes."
  }),
  available: Schema.Boolean.annotations({ description: "Whether the learner may open the lesson now, from its release rules and its module's." }),
  available_at: Schema.NullOr(Timestamp).annotations({
    description: "When a date rule (`after_enrollment`, `on_date`) opens it; null when no date rule applies (open, or waiting for a module's completion)."
  })
}).annotations({ identifier: "LessonProgress" })

const PageSchema = Schema.Struct({ limit: Schema.Int, next_cursor: Schema.NullOr(Schema.String), prev_cursor: Schema.Null })

const EnrollmentProgressSchema = Schema.Struct({
  object: Schema.Literal("enrollment_progress"),
  enrollment_id: Schema.String,
  status: Schema.Literal("active", "expired", "canceled"),
  progress_percent: Schema.Int,
  completed_at: Schema.NullOr(Timestamp),
  lessons: Schema.Array(LessonProgressSchema).annotations({ description: "A page of the product's published lessons, in course order." }),
  page: PageSchema.annotations({ description: "The page of `lessons`: pass `next_cursor` as `cursor` for the next one; pages go forward only (`prev_cursor` is null)." })
}).annotations({ identifier: "EnrollmentProgress" })

const ProgressQuery = Schema.Struct({ limit: Schema.optional(LimitParam), cursor: Schema.optional(CursorParam) })

const params = { enrollment_id: "enrollment" } as const


const enrollmentOperations = describedOperations(enrollments, tag, {
  "enrollments.list": {
    summary: "List enrollments",
    description:
      "Newest first unless `sort` says otherwise (`created_at`, `starts_at`, `expires_at`). Filters: `user_id`, `product_id[]` (repeat it for several products), `status`, `delivery_id` (access a sale of that delivery gave or last extended), and the ranges `created_after`/`created_before`, `starts_after`/`starts_before`, `expires_after`/`expires_before` (`_after` inclusive, `_before` exclusive). `status` is the stored one: an enrollment past `expires_at` reads `active` until the housekeeping records its expiry, within a minute."
  },
  "enrollments.get": { summary: "Retrieve an enrollment" },
  "enrollments.update": {
    summary: "Change an enrollment's expiry or status",
    description:
      "`expires_at`: a new expiry after `starts_at` and in the future, or null for none (else 422 on `expires_at`, reason `not_after_start`). `status`: `expired` ends an active enrollment now (`expires_at` becomes now; event `enrollment.expired`); `active` reactivates an expired one (event `enrollment.reactivated`) when no other enrollment of the user and product is active (else 409 `already_exists` on `product_id`) and its expiry is null or in the future (else 409 `state_conflict`, reason `expires_at_passed`). `canceled` is 422 `invalid_transition` on `status` (reason `use_cancellations`): cancel through `POST /enrollments/{enrollment_id}/cancellations`. A canceled enrollment cannot change (409 `state_conflict`, reason `enrollment_canceled`)."
  }
})

const ruleNote =
  "A rule releases a lesson or a module of the product (`target`): `after_enrollment` `days` after the enrollment's `starts_at`, `on_date` at `date`, or `after_module_completed` once every published lesson of `module_id` (another module of the product) is completed. A lesson opens when its own rule and its module's both hold; the progress read shows it (`available`, `available_at`)."

const releaseRuleOperations = describedOperations(releaseRules, tag, {
  "release_rules.list": {
    summary: "List the release rules of a product",
    description: `Oldest first; filter by \`target_id\` (the rule of one lesson or module) and \`kind\`. ${ruleNote}`
  },
  "release_rules.get": { summary: "Retrieve a release rule" },
  "release_rules.create": {
    summary: "Create a release rule for a lesson or module of a product",
    description: `${ruleNote} The target must be a lesson or module of the product (else 422 on \`target.id\`, reason \`not_found\`) and is fixed; one rule per target (409 \`already_exists\` on \`target\`). Each kind takes its own parameter (422 \`required\` when missing); \`module_id\` cannot be the target module itself (422, reason \`self_reference\`). Event \`release_rule.created\`.`
  },
  "release_rules.update": {
    summary: "Change a release rule's kind or parameter",
    description: "A new `kind` needs its own parameter and clears the others; the same kind keeps what is not sent. The target cannot change: remove the rule and create another."
  },
  "release_rules.delete": {
    summary: "Remove a release rule",
    description: "Removed for good (no trash): the lesson or module opens as if it had no rule. Event `release_rule.deleted`."
  }
})

export const enrollmentsRoutes: ReadonlyArray<Operation> = [
  // A reactivating PATCH that loses a race on the hidden key names `product_id`, as the create does.
  ...enrollmentOperations.map((operation) =>
    operation.id === "enrollments.update"
      ? { ...operation, handler: (input: Parameters<Operation["handler"]>[0]) => operation.handler(input).pipe(Effect.mapError(renameActiveKeyConflict)) }
      : operation
  ),
  ...releaseRuleOperations,
  defineOperation({
    id: "enrollments.create",
    method: "POST",
    path: "/enrollments",
    summary: "Enroll a user in a product",
    description:
      "Enroll a user in a product: `active` from `starts_at` (default now) until `expires_at` (null: no expiry; else after `starts_at` and in the future, else 422 on `expires_at`). The user and the product must exist and be readable with the credential (else 422 on the field, reason `not_found`). A user has at most one active enrollment per product: another is 409 `already_exists` on `product_id` (reason `active_enrollment`); an expired or canceled one does not count. Event `enrollment.created`.",
    tag,
    capability: "enrollments.create",
    body: enrollments.create,
    idempotency: "required",
    success: { status: 201, description: "The new enrollment.", schema: EnrollmentSchema, headers: ["Location", "ETag"] },
    errors: ["already_exists"],
    handler: ({ body }) =>
      createEnrollment(body, { checkScope: true }).pipe(
        Effect.map((record) => ({
          status: 201,
          body: { data: resourceView(enrollments, record) },
          headers: { location: `/api/v3/enrollments/${record.id}`, etag: resourceEtag(enrollments, record) }
        }))
      )
  }),
  defineOperation({
    id: "enrollments.cancellations.create",
    method: "POST",
    path: "/enrollments/{enrollment_id}/cancellations",
    summary: "Cancel an enrollment",
    description:
      "End an enrollment for good: `status` becomes `canceled` and `canceled_at` is set, from `active` or `expired`. An enrollment is never removed or trashed: this is how access is withdrawn. A canceled one cannot change again: 409 `state_conflict` (reason `enrollment_canceled`). Event `enrollment.canceled`.",
    tag,
    capability: "enrollments.update",
    params,
    idempotency: "required",
    success: { status: 200, description: "The enrollment, `canceled`.", schema: EnrollmentSchema, headers: ["ETag"] },
    errors: ["state_conflict"],
    handler: ({ path }) =>
      cancelEnrollment(path.enrollment_id!, { checkScope: true }).pipe(
        Effect.map((record) => ({ status: 200, body: { data: resourceView(enrollments, record) }, headers: { etag: resourceEtag(enrollments, record) } }))
      )
  }),
  defineOperation({
    id: "enrollments.progress.get",
    method: "GET",
    path: "/enrollments/{enrollment_id}/progress",
    summary: "Read an enrollment's progress, lesson by lesson",
    description:
      "The enrollment's `progress_percent` and `completed_at`, and a page of its product's published, non-trashed lessons in course order (modules by position, then lessons by position), each with its progress (`not_started` when none was recorded) and whether the learner may open it now (`available`, `available_at`) under the release rules of the lesson and of its module.",
    tag,
    capability: "enrollments.read",
    params,
    query: ProgressQuery,
    idempotency: "none",
    success: { status: 200, description: "The enrollment's progress and a page of its lessons.", schema: EnrollmentProgressSchema },
    errors: ["invalid_cursor"],
    handler: ({ path, query }) =>
      getEnrollmentProgress(path.enrollment_id!, pageLimit(query.limit), query.cursor).pipe(Effect.map((body) => ({ status: 200, body })))
  }),
  defineOperation({
    id: "enrollments.progress.lessons.replace",
    method: "PUT",
    path: "/enrollments/{enrollment_id}/progress/lessons/{lesson_id}",
    summary: "Record a learner's progress in one lesson",
    description:
      "Set the progress of one lesson (integrations record what learners do). `status` `completed` means `percent` 100 and sets `completed_at` (default now, never in the future); `percent` 100 alone completes; `not_started` means 0; `completed_at` only with `completed` (else 422 on the field). The lesson must be a lesson of the enrollment's product (else 404) and published (else 409 `state_conflict`, reason `lesson_not_published`); the enrollment must be active and not past `expires_at` (else 409 `state_conflict`, reason `enrollment_not_active`). In the same unit of work the enrollment's `progress_percent` (completed lessons over published lessons, rounded down) and, the first time all are completed, `completed_at` are updated. Events: `lesson_progress.updated`; `enrollment.updated` when the enrollment changed; `enrollment.completed` once. A PUT that changes nothing records nothing (its `revision` stays). `If-Match` takes the ETag of the lesson's recorded progress (`W/\"lesson_progress:<id>:<revision>\"`, in the answer's `ETag` and from the `id` and `revision` of a progress row); a stale one, or one sent for a lesson with no recorded progress, is 412 `revision_mismatch`.",
    tag,
    capability: "enrollments.update",
    params: { enrollment_id: "enrollment", lesson_id: "lesson" },
    body: LessonProgressInput,
    idempotency: "optional",
    ifMatch: "lesson_progress",
    ifMatchNamesRecord: true,
    success: { status: 200, description: "The lesson's progress.", schema: LessonProgressSchema, headers: ["ETag"] },
    errors: ["state_conflict"],
    handler: ({ path, body, expectedRevision, expectedRecordId }) =>
      putLessonProgress(path.enrollment_id!, path.lesson_id!, body, { id: expectedRecordId, revision: expectedRevision }).pipe(
        Effect.map((data) => ({ status: 200, body: { data }, headers: { etag: lessonProgressEtag(data) } }))
      )
  })
]
