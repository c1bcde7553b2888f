/**
 * Enrollments (release 3.2.0, open-points routes `/enrollments`): a user's access to a
 * product. Decisions where the contract is silent (also in docs/learning.md and the OpenAPI
 * description):
 * - `status` is a closed enum: `active`, `expired`, `canceled`; `source` an open one
 *   (`manual`, `delivery`, `import`, …, lower-case words).
 * - One ACTIVE enrollment per user and product: the hidden stored key `active_key`
 *   (`"<user_id>:<product_id>"` while active, null otherwise) is unique, so the store itself
 *   refuses a second one; the 409 `already_exists` names `product_id` (reason
 *   `active_enrollment`). Other use cases find a user's active enrollment with
 *   `findUnique(tenant, "enrollment", { name: "active_key", value: activeKey(user, product) })`.
 * - No trash and no DELETE: an enrollment is the record of a learner's access and progress;
 *   `POST /enrollments/{id}/cancellations` ends it (`canceled`, final).
 * - PATCH changes `expires_at` and `status`: `active` → `expired` (ends access now),
 *   `expired` → `active` (reactivation: needs no other active enrollment and an expiry that is
 *   null or in the future). `canceled` is not a change of status (422 `invalid_transition` on
 *   `status`, reason `use_cancellations`, as every unavailable state change of the API); a
 *   canceled enrollment cannot change at all, and a reactivation past the expiry cannot
 *   happen (409 `state_conflict`: `enrollment_canceled`, `expires_at_passed`).
 * - Expiry by the clock: the housekeeping (`expireDueEnrollments`, every minute in every
 *   process and in each retention pass) turns due active enrollments `expired`, with the
 *   event `enrollment.expired`. Reads show the stored status, so filters and reads always
 *   agree; writes that need an active enrollment (progress) also refuse an overdue one.
 * - `delivery_id` (nullable, set only by the platform): the sales delivery whose sale gave or
 *   last extended this access (sales/delivery-access.ts); null for any other source. It is
 *   filterable, and indexed with `status` and `user_id` so the users with access through a
 *   delivery are found by index (a delivery's tag applications).
 */
import { Clock, Effect, Option, Schema } from "effect"
import { Caller, type CallerInfo } from "../access/context.js"
import { type ApiError, apiError, fieldError, readUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { type AccessPath, housekeepingPath, type JsonObject, Records, type StoredRecord, UnitOfWork, type Where } from "../ports/store.js"
import {
  type ClientAccess,
  createResource,
  defineResource,
  equalsFilter,
  type FilterDefinition,
  loadResource,
  requireReference,
  requireResourceReach,
  type ResourceDefinition,
  resourceView,
  saveResource
} from "../records/resource.js"
import { Enum, List, PublicId, Timestamp } from "../records/schema.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"
import { products } from "../catalog/products.js"
import { users } from "../people/people-users.js"
import { recordChange } from "../trail/audit.js"

export const ENROLLMENT_TYPE = "enrollment"

export const enrollmentStatuses = ["active", "expired", "canceled"] as const
const Status = Enum(...enrollmentStatuses)

/** An open enum: lower-case words, as the platform's own sources are. */
const Source = Schema.String.pipe(
  Schema.filter((s) => /^[a-z][a-z0-9_]{0,31}$/.test(s) || "invalid_value|expected=lower-case word (a-z, 0-9, _), at most 32 characters"),
  Schema.annotations({
    description: "Where the enrollment comes from: `manual` (default), `delivery`, `import`, or another lower-case word (open enum).",
    jsonSchema: { type: "string", pattern: "^[a-z][a-z0-9_]{0,31}$", examples: ["manual", "delivery", "import"] }
  })
)

/** The value of the unique key `active_key` of an active enrollment. */
export const activeKey = (userId: string, productId: string): string => `${userId}:${productId}`
export const ACTIVE_KEY = "active_key"

const normalize = (text: string): string => formatTimestamp(Option.getOrThrow(parseTimestamp(text)))

/** The active enrollment of a user in a product, if any (an index lookup of the unique key). */
export const findActiveEnrollment = (userId: string, productId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records
      .findUnique(caller.tenant, ENROLLMENT_TYPE, { name: ACTIVE_KEY, value: activeKey(userId, productId) })
      .pipe(Effect.mapError(readUnavailable))
  })

/**
 * The delivery of an enrollment the platform creates for a sale (`createDeliveryEnrollment`):
 * the public create body has no `delivery_id` (422 `unknown_field`), so only that path sets it.
 */
const deliveryOf = (body: object): string | null =>
  "delivery_id" in body && typeof body.delivery_id === "string" ? body.delivery_id : null

/** 409 `already_exists` on `product_id` when another active enrollment of the user and product exists. */
const requireNoOtherActive = (userId: string, productId: string, selfId: string) =>
  Effect.gen(function* () {
    const other = yield* findActiveEnrollment(userId, productId)
    if (other && other.id !== selfId) return yield* Effect.fail(fieldError("already_exists", "product_id", { reason: "active_enrollment" }))
  })

/** A date range filter on a timestamp field (`<name>_after` inclusive, `<name>_before` exclusive), served by the field's index. */
const rangeFilters = (name: string, field: string): Record<string, FilterDefinition> => {
  const bound = (op: "gte" | "lt") => (value: never): ReadonlyArray<Where> => {
    const text = value as unknown as string
    // The schema has validated the text; a value from elsewhere is compared as given.
    const at = Option.match(parseTimestamp(text), { onNone: () => text, onSome: formatTimestamp })
    return [{ field, op, value: at }]
  }
  return {
    [`${name}_after`]: { schema: Timestamp, on: { field, match: "text" }, where: bound("gte"), description: `Only enrollments whose \`${field}\` is at or after this instant.` },
    [`${name}_before`]: { schema: Timestamp, on: { field, match: "text" }, where: bound("lt"), description: `Only enrollments whose \`${field}\` is before this instant.` }
  }
}

/** `product_id[]`: enrollments in any of these products (§4.2 array filter). */
const productIdsFilter: FilterDefinition = {
  schema: List(PublicId("product"), 100),
  where: (value: never) => {
    const given = value as unknown as string | ReadonlyArray<string>
    return [{ field: "product_id", op: "in", values: [...new Set(typeof given === "string" ? [given] : given)] }]
  },
  on: { field: "product_id", match: "equals" },
  description: "Enrollments in any of these products (repeat the parameter, at most 100)."
}

export const enrollments: ResourceDefinition = defineResource({
  type: ENROLLMENT_TYPE,
  idKind: "enrollment",
  plural: "enrollments",
  path: "/enrollments",
  tag: "Learning",
  // A policy naming the product or the learner reaches the enrollment.
  owners: ["product_id", "user_id"],
  fields: {
    user_id: Schema.String,
    product_id: Schema.String,
    status: Schema.Literal(...enrollmentStatuses).annotations({
      description:
        "Closed enum. Created `active`; `expired` when `expires_at` passes (the housekeeping, within a minute) or by PATCH; `canceled` by a cancellation (final)."
    }),
    source: Schema.String.annotations({ description: "Open enum: `manual`, `delivery`, `import`, …" }),
    starts_at: Schema.String.annotations({ description: "When access starts (default: creation). `after_enrollment` release rules count from it." }),
    expires_at: Schema.NullOr(Schema.String).annotations({ description: "When access ends; null: no expiry." }),
    completed_at: Schema.NullOr(Schema.String).annotations({ description: "When every published lesson of the product was first completed; it stays set." }),
    progress_percent: Schema.Int.annotations({ description: "Completed lessons over the product's published, non-trashed lessons, 0 to 100 (rounded down)." }),
    canceled_at: Schema.NullOr(Schema.String),
    delivery_id: Schema.NullOr(Schema.String).annotations({
      description: "The sales delivery (`dlv_…`) whose sale gave or last extended this access; null when it came another way. Set by the platform only."
    })
  },
  create: Schema.Struct({
    user_id: PublicId("user"),
    product_id: PublicId("product"),
    source: Schema.optional(Source),
    starts_at: Schema.optional(Timestamp.annotations({ description: "Default: now." })),
    expires_at: Schema.optional(Schema.NullOr(Timestamp.annotations({ description: "After `starts_at` and in the future; null or absent: no expiry." })))
  }),
  update: Schema.Struct({
    expires_at: Schema.optional(Schema.NullOr(Timestamp.annotations({ description: "A new expiry, in the future (null: none)." }))),
    status: Schema.optional(
      Status.annotations({
        description: "`expired` ends an active enrollment now; `active` reactivates an expired one. Cancel through `POST /enrollments/{enrollment_id}/cancellations`."
      })
    )
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      yield* requireReference(users, "user_id", body.user_id, { checkScope: context.checkScope })
      yield* requireReference(products, "product_id", body.product_id, { checkScope: context.checkScope })
      const startsAt = body.starts_at === undefined ? formatTimestamp(context.now) : normalize(body.starts_at)
      const expiresAt = body.expires_at == null ? null : normalize(body.expires_at)
      if (expiresAt !== null && (expiresAt <= startsAt || Date.parse(expiresAt) <= context.now)) {
        return yield* Effect.fail(fieldError("validation_failed", "expires_at", { reason: "not_after_start" }))
      }
      yield* requireNoOtherActive(body.user_id, body.product_id, context.id)
      return {
        user_id: body.user_id,
        product_id: body.product_id,
        status: "active",
        source: body.source ?? "manual",
        starts_at: startsAt,
        expires_at: expiresAt,
        completed_at: null,
        progress_percent: 0,
        canceled_at: null,
        delivery_id: deliveryOf(body),
        [ACTIVE_KEY]: activeKey(body.user_id, body.product_id)
      }
    }),
  change: (current, patch, context) =>
    Effect.gen(function* () {
      const from = String(current.status)
      const to = patch.status ?? from
      if (from === "canceled") return yield* Effect.fail(apiError("state_conflict", { reason: "enrollment_canceled" }))
      if (to === "canceled") return yield* Effect.fail(fieldError("invalid_transition", "status", { reason: "use_cancellations" }))
      let expiresAt = current.expires_at as string | null
      if (patch.expires_at !== undefined) {
        expiresAt = patch.expires_at === null ? null : normalize(patch.expires_at)
        if (expiresAt !== null && (expiresAt <= String(current.starts_at) || Date.parse(expiresAt) <= context.now)) {
          return yield* Effect.fail(fieldError("validation_failed", "expires_at", { reason: "not_after_start" }))
        }
      }
      if (from === "active" && to === "expired") {
        // Ending access now: the expiry is now, whatever was sent.
        expiresAt = formatTimestamp(context.now)
      }
      if (from === "expired" && to === "active") {
        if (expiresAt !== null && Date.parse(expiresAt) <= context.now) {
          return yield* Effect.fail(apiError("state_conflict", { reason: "expires_at_passed" }))
        }
        yield* requireNoOtherActive(String(current.user_id), String(current.product_id), context.id)
      }
      return {
        ...current,
        status: to,
        expires_at: expiresAt,
        [ACTIVE_KEY]: to === "active" ? activeKey(String(current.user_id), String(current.product_id)) : null
      }
    }),
  rules: {
    afterUpdate: (before, after) =>
      before.data.status === "active" && after.data.status === "expired"
        ? recordEnrollmentChange("expired", after, before)
        : before.data.status === "expired" && after.data.status === "active"
          ? recordEnrollmentChange("reactivated", after, before)
          : Effect.void
  },
  unique: [ACTIVE_KEY],
  hidden: [ACTIVE_KEY],
  trash: false,
  revision: "string",
  // Served by `@syllabus/http` routes/enrollments.ts: the derived list/get/update with their own
  // words, its own create (the 409 named on `product_id`), no DELETE.
  replacedRoutes: ["list", "get", "create", "update", "delete"],
  // Never removed (canceled or expired instead): no DELETE, no `enrollments.delete` capability or batch.
  writes: ["create", "update"],
  writeErrors: ["state_conflict", "invalid_transition"],
  filters: {
    user_id: equalsFilter("user_id", PublicId("user"), "Enrollments of this user."),
    "product_id[]": productIdsFilter,
    status: equalsFilter("status", Status),
    delivery_id: equalsFilter("delivery_id", PublicId("delivery"), "Enrollments given or last extended by this sales delivery."),
    ...rangeFilters("created", "created_at"),
    ...rangeFilters("starts", "starts_at"),
    ...rangeFilters("expires", "expires_at")
  },
  // Newest first unless `sort` says otherwise.
  defaultReversed: true,
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "starts_at", field: "starts_at", kind: "text" },
    { name: "expires_at", field: "expires_at", kind: "text" }
  ]
})

/** The extra events of an enrollment beyond its lifecycle (the event-type catalog lists them). */
export const enrollmentEventVerbs = ["canceled", "expired", "reactivated", "completed"] as const

/** Audit entry and event `enrollment.<verb>` of one change, in its unit of work. */
export const recordEnrollmentChange = (verb: (typeof enrollmentEventVerbs)[number], after: StoredRecord, before: StoredRecord | null) =>
  Effect.gen(function* () {
    const view = resourceView(enrollments, after)
    yield* recordChange(`${ENROLLMENT_TYPE}.${verb}`, { object: ENROLLMENT_TYPE, id: after.id })
    yield* emitEvent(`${ENROLLMENT_TYPE}.${verb}`, view, before ? previousAttributes(resourceView(enrollments, before), view) : null)
  })

/** A lost race on the hidden key `active_key` (the pre-checks see none), named as the pre-checks name it. */
export const renameActiveKeyConflict = <E extends ApiError>(e: E): E | ApiError<"already_exists"> =>
  e.code === "already_exists" && e.details.some((d) => d.field === ACTIVE_KEY)
    ? fieldError("already_exists", "product_id", { reason: "active_enrollment" })
    : e

/** `POST /enrollments`: the machinery's create, its rare race on the unique key named as the pre-check names it. */
export const createEnrollment = (body: unknown, access?: ClientAccess) =>
  createResource(enrollments, {}, body, access).pipe(Effect.mapError(renameActiveKeyConflict))

/**
 * An enrollment a sale gives (sales/delivery-access.ts): source `delivery`, `delivery_id` set,
 * the same rules and events as `POST /enrollments`, in the caller's unit of work.
 */
export const createDeliveryEnrollment = (input: {
  readonly user_id: string
  readonly product_id: string
  readonly delivery_id: string
  readonly starts_at: string
  readonly expires_at: string | null
}) => createEnrollment({ ...input, source: "delivery" })

/** `POST /enrollments/{enrollment_id}/cancellations`: `active` or `expired` → `canceled` (final), event `enrollment.canceled`. */
export const cancelEnrollment = Effect.fn("Enrollments.cancel")(function* (id: string, access?: ClientAccess) {
  const current = yield* loadResource(enrollments, undefined, id)
  if (access?.checkScope) yield* requireResourceReach(enrollments, "update", current)
  if (current.data.status === "canceled") return yield* Effect.fail(apiError("state_conflict", { reason: "enrollment_canceled" }))
  const now = yield* Clock.currentTimeMillis
  const saved = yield* saveResource(
    enrollments,
    current,
    { ...current.data, status: "canceled", canceled_at: formatTimestamp(now), [ACTIVE_KEY]: null },
    current.revision
  )
  yield* recordEnrollmentChange("canceled", saved, current)
  return saved
})

/** An enrollment that allows learning now: active and not past its expiry (which the housekeeping is about to record). */
export const isOpenEnrollment = (record: StoredRecord, now: number): boolean =>
  record.data.status === "active" && (record.data.expires_at === null || Date.parse(String(record.data.expires_at)) > now)

/** The user's open enrollment in the product (active and not past its `expires_at`), found by its unique key. */
export const findOpenEnrollment = (userId: string, productId: string, now: number) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const enrollment = yield* (yield* Records)
      .findUnique(caller.tenant, ENROLLMENT_TYPE, { name: ACTIVE_KEY, value: activeKey(userId, productId) })
      .pipe(Effect.mapError(readUnavailable))
    return enrollment && isOpenEnrollment(enrollment, now) ? enrollment : undefined
  })

// ---------------------------------------------------------------------------------------
// Expiry by the clock

/** Enrollments turned `expired` per store read at most; a larger backlog is finished by the next passes. */
export const EXPIRY_BATCH = 200
/** Reads per pass at most. */
export const EXPIRY_MAX_BATCHES = 50

/** The cross-tenant read of `expireDueEnrollments`: active ones by `expires_at`, an index of the store. */
export const enrollmentsAccessPaths: ReadonlyArray<AccessPath> = [
  housekeepingPath(ENROLLMENT_TYPE, ["status"], [{ field: "expires_at", kind: "text" }])
]

/** Who changes an enrollment when the clock does: no credential, no request (the audit trail records callers' changes only). */
const clockCaller = (record: StoredRecord, passId: string): CallerInfo => ({
  tenant: record.tenant,
  requestId: passId,
  credential: { id: "system" },
  grant: new Map(),
  human: null
})

/**
 * Housekeeping: active enrollments whose `expires_at` has passed become `expired`, each in a
 * write of its own conditioned on the revision read (one changed since is left to the next
 * pass), with the event `enrollment.expired`. Reads `status = active AND expires_at <= now`
 * over the declared index, `EXPIRY_BATCH` at a time, never a tenant's whole collection.
 * Answers how many it expired.
 */
export const expireDueEnrollments = Effect.fn("Enrollments.expireDue")(function* () {
  const records = yield* Records
  const uow = yield* UnitOfWork
  const now = yield* Clock.currentTimeMillis
  const at = formatTimestamp(now)
  const passId = `housekeeping_${now}`
  let expired = 0
  for (let step = 0; step < EXPIRY_MAX_BATCHES; step++) {
    const due = yield* records.scan(
      ENROLLMENT_TYPE,
      [
        { field: "status", op: "eq", value: "active" },
        { field: "expires_at", op: "lte", value: at }
      ],
      EXPIRY_BATCH
    )
    let changed = 0
    for (const record of due) {
      if (record.data.expires_at === null) continue
      // The change and its event in one unit of work; one changed since the read is left alone.
      const done = yield* uow
        .transaction(
          Effect.gen(function* () {
            const next: JsonObject = { ...record.data, status: "expired", [ACTIVE_KEY]: null, updated_at: at }
            const saved = yield* records.update(record.tenant, ENROLLMENT_TYPE, record.id, next, { expectedRevision: record.revision, uniques: [] })
            const view = resourceView(enrollments, saved)
            yield* emitEvent(`${ENROLLMENT_TYPE}.expired`, view, previousAttributes(resourceView(enrollments, record), view)).pipe(
              Effect.provideService(Caller, clockCaller(record, passId))
            )
            return true
          })
        )
        .pipe(
          Effect.catchTags({
            RevisionConflict: () => Effect.succeed(false),
            UniqueViolation: () => Effect.succeed(false),
            ApiError: (e) => Effect.as(Effect.logWarning("an enrollment's expiry was not recorded", e), false)
          })
        )
      if (done) changed++
    }
    expired += changed
    if (due.length < EXPIRY_BATCH) break
  }
  return expired
})
