/**
 * Release rules (drip content, release 3.2.0, open-points routes
 * `/products/{product_id}/release-rules`): when a learner may open a module or a lesson of a
 * product. Decisions (also in docs/learning.md and the OpenAPI description):
 * - `target` `{ kind: module | lesson, id }` names a module or lesson of the rule's product
 *   (else 422 on `target.id`, reason `not_found`), fixed at creation; one rule per target
 *   (409 `already_exists` on `target`, kept by the hidden unique key `target_id`).
 * - `kind`: `after_enrollment` (`days` after the enrollment's `starts_at`), `on_date` (`date`),
 *   `after_module_completed` (`module_id`, another module of the product, whose published
 *   lessons the learner has all completed). Only the parameter of the kind is set, the others
 *   are null; a missing one is 422 `validation_failed` (item `required`) on it.
 * - A lesson is available when every rule that applies holds: its own and its module's.
 * - No trash: DELETE removes the rule (204), the content opens as if it had none.
 */
import { Effect, Option, Schema } from "effect"
import { Caller } from "../access/context.js"
import { apiError, fieldError, readUnavailable } from "../errors/errors.js"
import { type JsonObject, Records, type StoredRecord, type Tenant } from "../ports/store.js"
import { defineResource, equalsFilter, type ResourceDefinition } from "../records/resource.js"
import { Enum, Integer, PublicId, Timestamp } from "../records/schema.js"
import { DAY, formatTimestamp, parseTimestamp } from "../records/time.js"

export const RELEASE_RULE_TYPE = "release_rule"
const MODULE_TYPE = "module"
const LESSON_TYPE = "lesson"
const PRODUCT_TYPE = "product"

export const releaseRuleKinds = ["after_enrollment", "on_date", "after_module_completed"] as const
const Kind = Enum(...releaseRuleKinds)
const TargetKind = Enum("module", "lesson")
const MAX_DAYS = 3650

/** The module or lesson a rule releases: `{ kind, id }`, the ID of the kind's prefix. */
const Target = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("lesson"), id: PublicId("lesson") }),
  Schema.Struct({ kind: Schema.Literal("module"), id: PublicId("module") })
).annotations({ description: "The lesson (`les_…`) or module (`mod_…`) of the product the rule releases; fixed at creation." })

const parameters = ["days", "date", "module_id"] as const
const parameterOf: Readonly<Record<(typeof releaseRuleKinds)[number], (typeof parameters)[number]>> = {
  after_enrollment: "days",
  on_date: "date",
  after_module_completed: "module_id"
}

/** A live record of `type` in the caller's tenant belonging to `productId`, else 422 `not_found` on `field`. */
const requireOfProduct = (type: string, field: string, id: string, productId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const record = yield* records.get(caller.tenant, type, id).pipe(Effect.mapError(readUnavailable))
    if (!record || record.data.deleted === true || record.data.product_id !== productId) {
      return yield* Effect.fail(fieldError("validation_failed", field, { reason: "not_found" }))
    }
    return record
  })

/** The rule's parameters: the one of its kind set (required), the others null. */
const ruleParameters = (kind: (typeof releaseRuleKinds)[number], given: { days?: number | null | undefined; date?: string | null | undefined; module_id?: string | null | undefined }) =>
  Effect.gen(function* () {
    const wanted = parameterOf[kind]
    const value = given[wanted]
    if (value === undefined || value === null) {
      return yield* Effect.fail(apiError("validation_failed", { details: [{ field: wanted, code: "required", reason: `required_for_${kind}` }] }))
    }
    const out: Record<string, number | string | null> = { days: null, date: null, module_id: null }
    out[wanted] = wanted === "date" ? formatTimestamp(Option.getOrThrow(parseTimestamp(String(value)))) : value
    return out
  })

export const releaseRules: ResourceDefinition = defineResource({
  type: RELEASE_RULE_TYPE,
  idKind: "release_rule",
  plural: "release_rules",
  path: "/products/{product_id}/release-rules",
  tag: "Learning",
  parent: { type: PRODUCT_TYPE, idKind: "product", field: "product_id" },
  fields: {
    target: Schema.Struct({ kind: Schema.Literal("module", "lesson"), id: Schema.String }),
    kind: Schema.Literal(...releaseRuleKinds).annotations({
      description: "`after_enrollment`: `days` after the enrollment starts; `on_date`: at `date`; `after_module_completed`: once every published lesson of `module_id` is completed."
    }),
    days: Schema.NullOr(Schema.Int).annotations({ description: "`after_enrollment` only: days after `starts_at` of the enrollment (0 to 3650)." }),
    date: Schema.NullOr(Schema.String).annotations({ description: "`on_date` only: the instant the content opens." }),
    module_id: Schema.NullOr(Schema.String).annotations({ description: "`after_module_completed` only: the module to complete first (another module of the product)." })
  },
  // One member per kind, each with its own parameter, so the description says which goes with which.
  create: Schema.Union(
    Schema.Struct({ target: Target, kind: Schema.Literal("after_enrollment"), days: Integer({ min: 0, max: MAX_DAYS }) }),
    Schema.Struct({ target: Target, kind: Schema.Literal("on_date"), date: Timestamp }),
    Schema.Struct({ target: Target, kind: Schema.Literal("after_module_completed"), module_id: PublicId("module") })
  ),
  update: Schema.Struct({
    kind: Schema.optional(Kind),
    days: Schema.optional(Schema.NullOr(Integer({ min: 0, max: MAX_DAYS }))),
    date: Schema.optional(Schema.NullOr(Timestamp)),
    module_id: Schema.optional(Schema.NullOr(PublicId("module")))
  }),
  defaults: (body, context) =>
    Effect.gen(function* () {
      const productId = String(context.parentId)
      const targetType = body.target.kind === "module" ? MODULE_TYPE : LESSON_TYPE
      yield* requireOfProduct(targetType, "target.id", body.target.id, productId)
      const caller = yield* Caller
      const records = yield* Records
      const existing = yield* records
        .findUnique(caller.tenant, RELEASE_RULE_TYPE, { name: "target_id", value: body.target.id })
        .pipe(Effect.mapError(readUnavailable))
      if (existing) return yield* Effect.fail(fieldError("already_exists", "target"))
      const values = yield* ruleParameters(body.kind, body as { days?: number; date?: string; module_id?: string })
      // `product_id` too, for `rules.check` (the machinery adds the parent field after it).
      return { product_id: productId, target: { kind: body.target.kind, id: body.target.id }, kind: body.kind, ...values, target_id: body.target.id }
    }),
  change: (current, patch) =>
    Effect.gen(function* () {
      const kind = patch.kind ?? (current.kind as (typeof releaseRuleKinds)[number])
      // A new kind takes its own parameter; the same kind keeps what was not sent.
      const keep = kind === current.kind ? (current as { days?: number | null; date?: string | null; module_id?: string | null }) : {}
      const values = yield* ruleParameters(kind, { ...keep, ...patch })
      return { ...current, kind, ...values }
    }),
  rules: {
    check: (data) =>
      Effect.gen(function* () {
        if (data.kind !== "after_module_completed") return
        const productId = String(data.product_id)
        const moduleId = String(data.module_id)
        yield* requireOfProduct(MODULE_TYPE, "module_id", moduleId, productId)
        const target = data.target as { kind: string; id: string }
        if (target.kind === "module" && target.id === moduleId) {
          return yield* Effect.fail(fieldError("validation_failed", "module_id", { reason: "self_reference" }))
        }
      })
  },
  // Served by `@syllabus/http` routes/enrollments.ts: the derived routes with their own words.
  replacedRoutes: ["list", "get", "create", "update", "delete"],
  unique: ["target_id"],
  hidden: ["target_id"],
  trash: false,
  revision: "string",
  filters: {
    target_id: equalsFilter("target_id", Schema.String.annotations({ description: "The rule of this module or lesson." })),
    kind: equalsFilter("kind", Kind)
  },
  sorts: [{ name: "created_at", field: "id", kind: "text" }]
})

// ---------------------------------------------------------------------------------------
// What a learner may open

export interface Availability {
  readonly available: boolean
  /** When the content opens, when a date says so; null when open from the start or waiting for a completion. */
  readonly available_at: string | null
}

/**
 * The rules of a product whose target is one of `targetIds` (one index read: the product,
 * then `target_id`), by target.
 */
export const rulesOfTargets = (tenant: Tenant, productId: string, targetIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (targetIds.length === 0) return new Map<string, StoredRecord>()
    const records = yield* Records
    const found = yield* records
      .list(tenant, RELEASE_RULE_TYPE, {
        where: [
          { field: "product_id", op: "eq", value: productId },
          { field: "deleted", op: "eq", value: false },
          { field: "target_id", op: "in", values: [...new Set(targetIds)] }
        ],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: targetIds.length
      })
      .pipe(Effect.mapError(readUnavailable))
    return new Map(found.map((r) => [String(r.data.target_id), r]))
  })

/**
 * Whether the rules (those that apply to one lesson: its own and its module's) hold now for an
 * enrollment: `moduleDone` tells whether a module's published lessons are all completed.
 */
export const availabilityOf = (
  rules: ReadonlyArray<JsonObject>,
  enrollment: JsonObject,
  now: number,
  moduleDone: (moduleId: string) => boolean
): Availability => {
  let available = true
  let at: number | null = null
  for (const rule of rules) {
    if (rule.kind === "after_module_completed") {
      if (!moduleDone(String(rule.module_id))) available = false
      continue
    }
    const opens =
      rule.kind === "after_enrollment"
        ? Date.parse(String(enrollment.starts_at)) + Number(rule.days) * DAY
        : Date.parse(String(rule.date))
    at = at === null ? opens : Math.max(at, opens)
    if (opens > now) available = false
  }
  return { available, available_at: at === null ? null : formatTimestamp(at) }
}
