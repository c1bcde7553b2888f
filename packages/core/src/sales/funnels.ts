/**
 * Sales funnels (`fnl_`, release 3.2.0, open-points route `/sales/funnels`): the ordered pages
 * a buyer goes through — a sales page, the offer, upsells and downsells after it, a thank-you
 * page (ClickFunnels' and Hotmart's funnels) — each paid step tied to the delivery a sale of it
 * grants. Decisions (also in docs/sales.md and the OpenAPI description):
 *
 * - `steps` (1..20) live inside the funnel's record, in order; each has a stable ID (`fst_…`,
 *   unique in the account). A PATCH of `steps` replaces the whole list: an item with the `id`
 *   of one of the funnel's steps keeps that step (its ID, and so its conversion counts), one
 *   without `id` is a new step, those left out are gone. An `id` not of this funnel: 422 on
 *   `steps[i].id`, reason `not_found` (twice in one list: reason `duplicate`).
 * - `kind` is a closed enum: `page`, `offer`, `upsell`, `downsell`, `thank_you`. The paid
 *   kinds (`offer`, `upsell`, `downsell`) require `delivery_id` (422 `required`), the others
 *   must not have one (422 `not_allowed`). A delivery named anew must exist and not be trashed
 *   (422 on `steps[i].delivery_id`, reason `not_found`); a step keeps a delivery trashed after
 *   it was named, so renaming a funnel never fails on it.
 * - Rules a funnel keeps, each 422 `domain_rule_violation` with a `reason` (the first broken
 *   one; every broken one itemized on its step): at least one `offer` (`offer_required`), at
 *   most one `thank_you` (`multiple_thank_you`), and it comes last (`thank_you_not_last`);
 *   an `upsell` or `downsell` comes after an `offer` (`upsell_before_offer`: it is offered to
 *   someone who just bought).
 * - Conversions: each step shows `conversions` (sales events `approved` naming the step) and
 *   `refunds` (events `refunded` or `chargeback` naming it), counted apart rather than netted,
 *   as a payment processor reports gross sales and refunds. They are kept figures over the
 *   sales events (reports/figures.ts `FUNNEL_STEP_FIGURES`), never a scan of the events: a
 *   read of a page of funnels sums a few figure records per step. They are shown on API
 *   answers (`funnelViews`), not in the `funnel.*` events, whose payload is the funnel as
 *   configured: a sale changes a count, not the funnel, and emits no funnel event.
 * - Switching off (`PATCH /settings/sales`): creating and changing a funnel are 409
 *   `feature_disabled` while `enabled` (reason `sales_disabled`) or `funnels_enabled` (reason
 *   `funnels_disabled`) is false; reads, the trash and a restore stay (as for deliveries and
 *   the support desk), so a paused account can still tidy up (sales/features.ts).
 */
import { Effect, Schema } from "effect"
import { Caller, Ids } from "../access/context.js"
import { apiError, type DetailItem, readUnavailable } from "../errors/errors.js"
import { type Json, type JsonObject, Records } from "../ports/store.js"
import { defineResource, keptIdProblems, referenceProblems, type ResourceDefinition, ruleViolation } from "../records/resource.js"
import { Enum, List, PublicId, Text } from "../records/schema.js"
import { FUNNEL_STEP_FIGURES } from "../reports/figures.js"
import { figuresOf } from "../reports/reports.js"
import { deliveries, DELIVERY_TYPE } from "./deliveries.js"
import { requireSalesFeature } from "./features.js"

export const FUNNEL_TYPE = "funnel"

export const funnelStepKinds = ["page", "offer", "upsell", "downsell", "thank_you"] as const
type StepKind = (typeof funnelStepKinds)[number]
/** The kinds a buyer pays at: each names the delivery its sale grants. */
const paidKinds: ReadonlySet<string> = new Set<StepKind>(["offer", "upsell", "downsell"])
export const MAX_FUNNEL_STEPS = 20
/** Step IDs whose figures one aggregate read asks for (an `in` of a page's steps, in slices). */
const FIGURES_SLICE = 200

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

const StepInput = Schema.Struct({
  id: optional(
    PublicId("funnel_step").annotations({
      description: "In a PATCH: keeps the funnel's step with this ID (and its conversion counts). Absent: a new step."
    })
  ),
  kind: Enum(...funnelStepKinds).annotations({
    description: "`page` (a sales or content page), `offer` (the main product), `upsell`, `downsell`, `thank_you`. A closed enum."
  }),
  name: Text({ min: 1, max: 200 }),
  delivery_id: optional(
    Schema.NullOr(PublicId("delivery")).annotations({
      description: "The delivery a sale at this step grants: required for `offer`, `upsell` and `downsell`, absent or null otherwise."
    })
  )
})
type StepInput = typeof StepInput.Type

const StepsInput = List(StepInput, MAX_FUNNEL_STEPS).pipe(
  Schema.filter((items) => items.length >= 1 || "too_short|min=1"),
  Schema.annotations({
    jsonSchema: { minItems: 1, maxItems: MAX_FUNNEL_STEPS },
    description:
      "1 to 20 steps, in the order a buyer goes through them: at least one `offer`; `upsell`/`downsell` after an `offer`; at most one `thank_you`, last. In a PATCH this replaces the whole list (steps sent with their `id` keep it)."
  })
)

const Step = Schema.Struct({
  id: Schema.String.annotations({ description: "Stable ID of the step (`fst_…`), kept across PATCHes that send it back." }),
  kind: Schema.Literal(...funnelStepKinds),
  name: Schema.String,
  delivery_id: Schema.NullOr(Schema.String).annotations({ description: "The delivery a sale at this step grants; null for `page` and `thank_you`." }),
  conversions: optional(
    Schema.Int.annotations({
      description: "Sales events `approved` naming this step. Shown on API answers; not in the `funnel.*` events (a sale changes no funnel)."
    })
  ),
  refunds: optional(
    Schema.Int.annotations({
      description: "Sales events `refunded` or `chargeback` naming this step, counted apart (`conversions` is not reduced). Shown on API answers, not in events."
    })
  )
})

const stepIds = (data: JsonObject): ReadonlyArray<string> =>
  Array.isArray(data.steps) ? data.steps.map((step) => String((step as JsonObject).id)) : []

const deliveryIds = (data: JsonObject | null): ReadonlySet<string> =>
  new Set(
    Array.isArray(data?.steps)
      ? data.steps.flatMap((step) => {
          const id = (step as JsonObject).delivery_id
          return typeof id === "string" ? [id] : []
        })
      : []
  )

/**
 * The stored steps from a list sent: IDs kept or new, each step's delivery by its kind.
 * `existing`: the IDs an item may keep (the funnel's steps; none on create). Every problem of
 * the list is itemized (422 `validation_failed`).
 */
const buildSteps = (input: ReadonlyArray<StepInput>, existing: ReadonlySet<string>) =>
  Effect.gen(function* () {
    const ids = yield* Ids
    const problems = keptIdProblems("steps", input, existing)
    input.forEach((step, i) => {
      const delivery = step.delivery_id ?? null
      if (paidKinds.has(step.kind) && delivery === null) {
        problems.push({ field: `steps[${i}].delivery_id`, code: "required", reason: "required_for_kind" })
      } else if (!paidKinds.has(step.kind) && delivery !== null) {
        problems.push({ field: `steps[${i}].delivery_id`, code: "not_allowed", reason: "not_allowed_for_kind" })
      }
    })
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
    const steps: Array<JsonObject> = []
    for (const step of input) {
      steps.push({
        id: step.id ?? (yield* ids.next("funnel_step")),
        kind: step.kind,
        name: step.name,
        delivery_id: step.delivery_id ?? null
      })
    }
    return steps
  })

/**
 * The rules of a funnel's shape (422 `domain_rule_violation`): the top-level `reason` is the
 * first broken rule, each broken one is itemized on its step.
 */
const requireFunnelShape = (steps: ReadonlyArray<JsonObject>) => {
  const problems: Array<DetailItem> = []
  const kinds = steps.map((step) => String(step.kind))
  const firstOffer = kinds.indexOf("offer")
  if (firstOffer === -1) problems.push({ field: "steps", code: "domain_rule_violation", reason: "offer_required" })
  kinds.forEach((kind, i) => {
    if ((kind === "upsell" || kind === "downsell") && (firstOffer === -1 || i < firstOffer)) {
      problems.push({ field: `steps[${i}].kind`, code: "domain_rule_violation", reason: "upsell_before_offer" })
    }
  })
  const thankYous = kinds.flatMap((kind, i) => (kind === "thank_you" ? [i] : []))
  if (thankYous.length > 1) {
    for (const i of thankYous.slice(1)) problems.push({ field: `steps[${i}].kind`, code: "domain_rule_violation", reason: "multiple_thank_you" })
  } else if (thankYous.length === 1 && thankYous[0] !== kinds.length - 1) {
    problems.push({ field: `steps[${thankYous[0]}].kind`, code: "domain_rule_violation", reason: "thank_you_not_last" })
  }
  const reason = problems[0]?.reason
  return reason === undefined ? Effect.void : Effect.fail(apiError("domain_rule_violation", { reason, details: problems }))
}

/** Deliveries named anew (not already on the funnel): each must exist, not trashed. One read by ID. */
const requireDeliveries = (steps: ReadonlyArray<JsonObject>, previous: JsonObject | null) =>
  Effect.gen(function* () {
    const kept = deliveryIds(previous)
    // Each named anew, at its step (a delivery two steps share is fine: no duplicate check here).
    const named = steps.flatMap((step, i) => (typeof step.delivery_id === "string" && !kept.has(step.delivery_id) ? [{ id: step.delivery_id, i }] : []))
    if (named.length === 0) return
    const problems = (yield* Effect.forEach(named, ({ id, i }) => referenceProblems(deliveries, [id], () => `steps[${i}].delivery_id`))).flat()
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
  })

const requireFunnels = requireSalesFeature("funnels")

export const funnels: ResourceDefinition = defineResource({
  type: FUNNEL_TYPE,
  idKind: "funnel",
  plural: "funnels",
  path: "/sales/funnels",
  tag: "Sales",
  fields: {
    name: Schema.String,
    steps: Schema.Array(Step).annotations({
      description: "In the order a buyer goes through them, each with its stable ID and, on API answers, its conversion counts."
    })
  },
  create: Schema.Struct({ name: Text({ min: 1, max: 200 }), steps: StepsInput }),
  update: Schema.Struct({ name: optional(Text({ min: 1, max: 200 })), steps: optional(StepsInput) }),
  defaults: (body) =>
    Effect.gen(function* () {
      yield* requireFunnels
      return { name: body.name, steps: yield* buildSteps(body.steps, new Set()) }
    }),
  change: (current, patch) =>
    Effect.gen(function* () {
      // A restore alone (`deleted: false`, nothing else) stays available, as the trash does.
      if (current.deleted !== true || Object.keys(patch as object).length > 0) yield* requireFunnels
      const { steps, ...rest } = patch as { readonly steps?: ReadonlyArray<StepInput> } & JsonObject
      const next: Record<string, Json> = { ...current, ...rest }
      if (steps !== undefined) next.steps = yield* buildSteps(steps, new Set(stepIds(current)))
      return next
    }),
  rules: {
    check: (data, previous) =>
      Effect.gen(function* () {
        const steps = Array.isArray(data.steps) ? (data.steps as ReadonlyArray<JsonObject>) : []
        yield* requireDeliveries(steps, previous)
        yield* requireFunnelShape(steps)
      })
  },
  writeErrors: ["feature_disabled", "domain_rule_violation"],
  trash: true,
  revision: "string",
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  defaultReversed: true,
  search: ["name"],
  // Served by `@syllabus/http` routes/funnels.ts, with the steps' conversion counts (`funnelViews`).
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

/**
 * Funnels with each step's `conversions` and `refunds` (the kept figures of its sales events):
 * one aggregate read per 200 steps of the page, never the events themselves.
 */
export const funnelViews = (items: ReadonlyArray<JsonObject>) =>
  Effect.gen(function* () {
    const ids = [...new Set(items.flatMap(stepIds))]
    const counts = new Map<string | null, Readonly<Record<string, number>>>()
    for (let at = 0; at < ids.length; at += FIGURES_SLICE) {
      for (const [id, figures] of yield* figuresOf(FUNNEL_STEP_FIGURES, ids.slice(at, at + FIGURES_SLICE))) counts.set(id, figures)
    }
    return items.map((item): JsonObject => ({
      ...item,
      steps: Array.isArray(item.steps)
        ? item.steps.map((step) => {
            const figures = counts.get(String((step as JsonObject).id))
            return { ...(step as JsonObject), conversions: figures?.conversions ?? 0, refunds: figures?.refunds ?? 0 }
          })
        : []
    }))
  })
