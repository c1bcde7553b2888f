/**
 * Gamification (release 3.2.0, open-points routes `/gamification/rules` and
 * `/users/{user_id}/points`): rules that award points for what learners do, the ledger of
 * points awarded, and each learner's balance. Decisions (also in docs/gamification.md and the
 * OpenAPI description):
 * - A rule (`gmr_`) awards `points` (1 to 10,000) for one `trigger` (an open enum:
 *   `lesson_completed`, `exam_passed`, `enrollment_completed`, `certificate_issued`), in one
 *   product (`product_id`, which must exist: 422 on the field, reason `not_found`) or in every
 *   product (`product_id` null). Only `active` rules award. A change of a rule (its points,
 *   its status) never touches what it already awarded; DELETE removes it (204, no trash) and
 *   its entries stay in the ledger with their `rule_id`.
 * - The ledger is made of point entries (`pte_`), never written through the API: the learning
 *   use cases (progress, exam attempts, enrollments, certificates) call `awardPoints` inside
 *   the unit of work of the change that earned them. Each active rule matching the trigger
 *   (the product's and the global ones, read through the index on trigger, status and
 *   product) writes one entry, at most once per learner, rule and source (the unique key
 *   `award`), so a repeated completion or a replayed call never awards twice.
 * - The balance is a record per learner (`point_balance`, its ID the user's), updated in the
 *   same unit of work as the entries it adds up: a read never sums the ledger, and a ranking
 *   reads the balance's own index (`balance`, highest first).
 * - As Stripe shows a customer's balance and lists its balance transactions apart,
 *   `GET /users/{user_id}/points` answers the balance and `GET /users/{user_id}/points/entries`
 *   the ledger, newest first, a page at a time; each entry carries `ending_balance`.
 * - Event `point_entry.created` (with its audit entry) for each entry; the rules have the
 *   lifecycle events of the machinery (`gamification_rule.created`, `.updated`, `.deleted`).
 */
import { Clock, Effect, Schema } from "effect"
import { Caller, Ids } from "../access/context.js"
import { apiError, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent } from "../events/events.js"
import { type AccessPath, type JsonObject, listPath, Records, type StoredRecord, type Tenant } from "../ports/store.js"
import { idPrefixes, ID_BODY_LENGTH } from "../records/ids.js"
import { defineResource, writtenByThePlatform, equalsFilter, requireParent, requireReference, type ResourceDefinition, resourceView } from "../records/resource.js"
import { products } from "../catalog/products.js"
import { Enum, Integer, PublicId, Text } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"
import { recordChange } from "../trail/audit.js"

export const GAMIFICATION_RULE_TYPE = "gamification_rule"
export const POINT_ENTRY_TYPE = "point_entry"
/** One record per learner (its ID is the user's): the running balance. */
export const POINT_BALANCE_TYPE = "point_balance"
const PRODUCT_TYPE = "product"
const USER_TYPE = "user"
/** The unique key of an entry: one award per learner, rule and source. */
const AWARD_KEY = "award"

/** What a rule awards points for; an open enum (§9): later releases may add triggers. */
export const gamificationTriggers = ["lesson_completed", "exam_passed", "enrollment_completed", "certificate_issued"] as const
export type GamificationTrigger = (typeof gamificationTriggers)[number]
const Trigger = Enum(...gamificationTriggers)
const RuleStatus = Enum("active", "inactive")
export const MAX_RULE_POINTS = 10_000

const triggerDescription =
  "What earns the points: `lesson_completed` (a lesson's progress reaches completed), `exam_passed` (an exam attempt at or above the exam's minimum grade), `enrollment_completed` (every lesson of the product completed), `certificate_issued`. An open enum: later releases may add triggers."

const idPattern = (kind: keyof typeof idPrefixes) => `^${idPrefixes[kind]}_[0-9A-Za-z]{${ID_BODY_LENGTH}}$`

// ---------------------------------------------------------------------------------------
// Rules

/** A product named by a rule must exist, not be trashed and be readable: else 422 on `product_id`, reason `not_found`. */
const checkRuleProduct = (data: JsonObject, previous: JsonObject | null) => {
  const productId = data.product_id
  if (typeof productId !== "string" || (previous !== null && previous.product_id === productId)) return Effect.void
  return Effect.asVoid(requireReference(products, "product_id", productId))
}

export const gamificationRules: ResourceDefinition = defineResource({
  type: GAMIFICATION_RULE_TYPE,
  idKind: "gamification_rule",
  plural: "gamification_rules",
  path: "/gamification/rules",
  tag: "Learning",
  // A rule of one product belongs to it (a global rule, to no product).
  owners: ["product_id"],
  fields: {
    name: Schema.String.annotations({ description: "For administrators; learners never see it." }),
    trigger: Schema.Literal(...gamificationTriggers).annotations({ description: triggerDescription }),
    points: Schema.Int.annotations({ description: "Points awarded each time the trigger happens (1 to 10,000)." }),
    product_id: Schema.NullOr(Schema.String).annotations({ description: "Only this product's activity earns the points; null: every product's." }),
    status: Schema.Literal("active", "inactive").annotations({ description: "Only `active` rules award points; an `inactive` one awards nothing until it is active again." })
  },
  create: Schema.Struct({
    name: Text({ min: 1, max: 200 }),
    trigger: Trigger,
    points: Integer({ min: 1, max: MAX_RULE_POINTS }),
    product_id: Schema.optional(Schema.NullOr(PublicId("product"))),
    status: Schema.optional(RuleStatus)
  }),
  update: Schema.Struct({
    name: Schema.optional(Text({ min: 1, max: 200 })),
    trigger: Schema.optional(Trigger),
    points: Schema.optional(Integer({ min: 1, max: MAX_RULE_POINTS })),
    product_id: Schema.optional(Schema.NullOr(PublicId("product"))),
    status: Schema.optional(RuleStatus)
  }),
  defaults: (body) =>
    Effect.succeed({
      name: body.name,
      trigger: body.trigger,
      points: body.points,
      product_id: body.product_id ?? null,
      status: body.status ?? "active"
    }),
  rules: { check: checkRuleProduct },
  trash: false,
  revision: "string",
  filters: {
    trigger: equalsFilter("trigger", Trigger, "Rules of this trigger."),
    status: equalsFilter("status", RuleStatus, "Rules of this status."),
    product_id: equalsFilter("product_id", PublicId("product"), "Rules of this product (the global rules, `product_id` null, are not among them).")
  },
  sorts: [{ name: "created_at", field: "id", kind: "text" }],
  // Served by `@syllabus/http`'s routes/gamification.ts, with the decisions in each operation's text.
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

// ---------------------------------------------------------------------------------------
// The ledger and the balance

export const pointEntries: ResourceDefinition = defineResource({
  type: POINT_ENTRY_TYPE,
  idKind: "point_entry",
  plural: "point_entries",
  // A learner's ledger is read with `points.read`.
  capabilities: "points",
  path: "/users/{user_id}/points/entries",
  tag: "Learning",
  parent: { type: USER_TYPE, idKind: "user", field: "user_id" },
  fields: {
    rule_id: Schema.String.annotations({
      description: "The gamification rule that awarded the points; the rule may have been removed since.",
      jsonSchema: { type: "string", pattern: idPattern("gamification_rule") }
    }),
    product_id: Schema.NullOr(Schema.String).annotations({ description: "The product of the activity that earned the points." }),
    trigger: Schema.Literal(...gamificationTriggers).annotations({ description: "The rule's trigger when it awarded the points." }),
    source: Schema.Struct({
      type: Schema.String.annotations({
        description: "The kind of record that earned the points: `lesson`, `exam`, `enrollment` or `certificate` (an open set)."
      }),
      id: Schema.String.annotations({ description: "Its ID." })
    }).annotations({ description: "What earned the points. A learner gets one entry per rule and source, however often the source is reported." }),
    points: Schema.Int.annotations({ description: "Points added to the balance (the rule's points when it awarded them)." }),
    ending_balance: Schema.Int.annotations({ description: "The learner's balance right after this entry." })
  },
  // Written by `awardPoints`, never through a body.
  ...writtenByThePlatform,
  trash: false,
  revision: "string",
  filters: {
    product_id: equalsFilter("product_id", PublicId("product"), "Entries earned in this product."),
    trigger: equalsFilter("trigger", Trigger, "Entries of this trigger.")
  },
  sorts: [{ name: "created_at", field: "id", kind: "text" }],
  // Newest first, as a ledger is read.
  defaultReversed: true
})

/** The reads of gamification outside the machinery, each an index of the store. */
export const gamificationAccessPaths: ReadonlyArray<AccessPath> = [
  // `awardPoints`: the active rules of a trigger in one product, or global (`product_id` null).
  listPath(GAMIFICATION_RULE_TYPE, ["trigger", "status", "deleted", "product_id"], [{ field: "id", kind: "text" }]),
  // Rankings: learners by balance.
  listPath(POINT_BALANCE_TYPE, [], [{ field: "balance", kind: "number" }])
]

/** What earned points: the learner, the product, the trigger, and the record that is the source. */
export interface PointsAward {
  readonly userId: string
  /** The product of the activity; null for activity outside any product (only global rules apply). */
  readonly productId: string | null
  readonly trigger: GamificationTrigger
  /** The kind of the source record (`lesson`, `exam`, `enrollment`, `certificate`: learning/rewards.ts). */
  readonly sourceType: string
  readonly sourceId: string
}

const RULE_PAGE = 100

/** The active rules of a trigger for a product (its own, then the global ones), page by page over their index. */
const activeRules = (tenant: Tenant, trigger: GamificationTrigger, productId: string | null) =>
  Effect.gen(function* () {
    const records = yield* Records
    const found: Array<StoredRecord> = []
    for (const scope of productId === null ? [null] : [productId, null]) {
      let after: { value: string; id: string } | undefined
      for (;;) {
        const page = yield* records
          .list(tenant, GAMIFICATION_RULE_TYPE, {
            where: [
              { field: "trigger", op: "eq", value: trigger },
              { field: "status", op: "eq", value: "active" },
              { field: "deleted", op: "eq", value: false },
              { field: "product_id", op: "eq", value: scope }
            ],
            sort: { field: "id", kind: "text", direction: "asc" },
            after,
            limit: RULE_PAGE
          })
          .pipe(Effect.mapError(readUnavailable))
        found.push(...page)
        const last = page.at(-1)
        if (page.length < RULE_PAGE || last === undefined) break
        after = { value: last.id, id: last.id }
      }
    }
    // In the order the rules were made, whatever their scope.
    return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  })

const concurrentUpdate = () => Effect.fail(apiError("state_conflict", { reason: "concurrent_update" }))

/** The learner's balance record, set to `balance` (made by the first award). */
const saveBalance = (tenant: Tenant, userId: string, current: StoredRecord | undefined, balance: number, at: string) =>
  Effect.flatMap(Records, (records) =>
    current
      ? records.update(tenant, POINT_BALANCE_TYPE, userId, { ...current.data, balance, updated_at: at }, { expectedRevision: current.revision })
      : records.insert(tenant, POINT_BALANCE_TYPE, userId, { object: POINT_BALANCE_TYPE, user_id: userId, balance, created_at: at, updated_at: at })
  ).pipe(
    Effect.catchTags({
      RevisionConflict: concurrentUpdate,
      UniqueViolation: concurrentUpdate,
      StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
    })
  )

/**
 * Award the points a learner earned: call it inside the unit of work of the change that earned
 * them (a completed lesson, a passed exam, a completed enrollment, an issued certificate). For
 * each active rule of `trigger` in the product or global, in the order the rules were made,
 * writes one ledger entry, unless that rule already awarded this source to this learner, and
 * adds its points to the learner's balance record; each entry has its event
 * `point_entry.created` and its audit entry. Answers the entries written (their
 * representations, also the events' payloads), none when no rule applies or all were awarded.
 */
export const awardPoints = Effect.fn("Gamification.awardPoints")(function* (award: PointsAward) {
  const caller = yield* Caller
  const records = yield* Records
  const ids = yield* Ids
  const rules = yield* activeRules(caller.tenant, award.trigger, award.productId)
  if (rules.length === 0) return [] as ReadonlyArray<JsonObject>
  const current = yield* records.get(caller.tenant, POINT_BALANCE_TYPE, award.userId).pipe(Effect.mapError(readUnavailable))
  const start = typeof current?.data.balance === "number" ? current.data.balance : 0
  let balance = start
  const at = formatTimestamp(yield* Clock.currentTimeMillis)
  const written: Array<JsonObject> = []
  for (const rule of rules) {
    const key = { name: AWARD_KEY, value: `${award.userId}:${rule.id}:${award.sourceType}:${award.sourceId}` }
    const awarded = yield* records.findUnique(caller.tenant, POINT_ENTRY_TYPE, key).pipe(Effect.mapError(readUnavailable))
    if (awarded) continue
    const points = Number(rule.data.points)
    const id = yield* ids.next("point_entry")
    const data: JsonObject = {
      object: POINT_ENTRY_TYPE,
      id,
      user_id: award.userId,
      rule_id: rule.id,
      product_id: award.productId,
      trigger: award.trigger,
      source: { type: award.sourceType, id: award.sourceId },
      points,
      ending_balance: balance + points,
      created_at: at,
      updated_at: at,
      deleted: false
    }
    const inserted = yield* records.insert(caller.tenant, POINT_ENTRY_TYPE, id, data, [key]).pipe(
      Effect.map((record): StoredRecord | undefined => record),
      Effect.catchTags({
        // Another unit of work awarded it first (the store's unique key): once is all.
        UniqueViolation: () => Effect.succeed(undefined),
        StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
      })
    )
    if (inserted === undefined) continue
    balance += points
    const view = resourceView(pointEntries, inserted)
    yield* recordChange(`${POINT_ENTRY_TYPE}.created`, { object: POINT_ENTRY_TYPE, id })
    yield* emitEvent(`${POINT_ENTRY_TYPE}.created`, view)
    written.push(view)
  }
  if (written.length > 0) yield* saveBalance(caller.tenant, award.userId, current, balance, at)
  return written as ReadonlyArray<JsonObject>
})

/** The events of point entries: they are only ever created. */
export const pointEntryEventVerbs = ["created"] as const

/**
 * `GET /users/{user_id}/points`: the learner's balance, read from its record (0 and
 * `updated_at` null before the first award). A missing or trashed user is 404.
 */
export const getUserPoints = Effect.fn("Gamification.userPoints")(function* (userId: string) {
  const caller = yield* Caller
  const records = yield* Records
  yield* requireParent(pointEntries.parent, { user_id: userId })
  const record = yield* records.get(caller.tenant, POINT_BALANCE_TYPE, userId).pipe(Effect.mapError(readUnavailable))
  const data: JsonObject = {
    object: "user_points",
    user_id: userId,
    balance: typeof record?.data.balance === "number" ? record.data.balance : 0,
    updated_at: typeof record?.data.updated_at === "string" ? record.data.updated_at : null
  }
  return data
})
