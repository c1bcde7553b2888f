/**
 * Gamification (release 3.2.0; open-points `/gamification/rules`, `/users/{user_id}/points`):
 * the rules that award points, served from their description with the decisions in each
 * operation's text; a learner's balance; and the ledger of points awarded, read-only (the
 * learning use cases write it through `awardPoints`). Decisions: docs/gamification.md.
 */
import { gamificationRules, getUserPoints, MAX_RULE_POINTS, pointEntries } from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { describedOperations } from "../resources.js"

const tag = "Learning"
const POINTS_READ = "points.read"



// ---------------------------------------------------------------------------------------
// Rules

const awardNote =
  "Points are awarded by the platform when a learner's activity matches an `active` rule: the rule's product's activity, or every product's when `product_id` is null. Each rule awards a learner at most once per source (a lesson's progress, an exam attempt, an enrollment, a certificate), however often that source is reported."
const productNote = "`product_id` must name a product of the account (else 422 `validation_failed` on `product_id`, reason `not_found`)."

const ruleOperations = describedOperations(gamificationRules, tag, {
  "gamification_rules.list": {
    summary: "List the gamification rules",
    description: "Oldest first unless `sort` says otherwise; filter by `trigger`, `status` and `product_id` (a product's own rules, not the global ones)."
  },
  "gamification_rules.get": { summary: "Retrieve a gamification rule" },
  "gamification_rules.create": {
    summary: "Create a rule that awards points for a learner's activity",
    description: `A rule awards \`points\` (1 to ${MAX_RULE_POINTS.toLocaleString("en-US")}) each time its \`trigger\` happens: in one product (\`product_id\`) or in every product (\`product_id\` null, the default). ${productNote} \`status\` is \`active\` by default. \`trigger\` is an open enum: later releases may add triggers. ${awardNote} Event \`gamification_rule.created\`.`
  },
  "gamification_rules.update": {
    summary: "Change a gamification rule",
    description: `A change applies to what is awarded from then on: points already awarded stay as they were. \`status\` \`inactive\` stops the rule awarding; \`active\` starts it again (activity in between earns nothing from it). ${productNote} Event \`gamification_rule.updated\`.`
  },
  "gamification_rules.delete": {
    summary: "Remove a gamification rule",
    description:
      "The rule is removed for good (there is no trash; `status` `inactive` pauses a rule instead). The points it awarded stay in the learners' balances and ledgers, whose entries keep its `rule_id`. Event `gamification_rule.deleted`."
  }
})

// ---------------------------------------------------------------------------------------
// A learner's points

const Timestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

const UserPointsSchema = Schema.Struct({
  object: Schema.Literal("user_points"),
  user_id: Schema.String,
  balance: Schema.Int.annotations({ description: "The sum of the points of the user's ledger entries, kept as they are written." }),
  updated_at: Schema.NullOr(Timestamp).annotations({ description: "When points were last awarded; null when never." })
}).annotations({ identifier: "UserPoints" })

const ledgerNote =
  "Entries are written by the platform only, when an `active` gamification rule matches a learner's activity; they never change and are never removed (removing a rule leaves its entries)."

const pointsBalance = defineOperation({
  id: "points.get",
  method: "GET",
  path: "/users/{user_id}/points",
  summary: "Read a user's points balance",
  description:
    "The user's balance: the points of every entry of their ledger (`GET /users/{user_id}/points/entries`), kept up to date in the same unit of work as each entry, so it never lags the ledger. 0 with `updated_at` null before the first award. As with a customer's balance and its balance transactions at Stripe, the balance is read here and the ledger is listed apart, a page at a time. A missing or trashed user is 404.",
  tag,
  capability: POINTS_READ,
  scopedBy: "user_id",
  params: { user_id: "user" },
  idempotency: "none",
  success: { status: 200, description: "The user's balance.", schema: UserPointsSchema },
  errors: [],
  handler: ({ path }) => getUserPoints(path.user_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
})

const entryOperations = describedOperations(pointEntries, tag, {
  "point_entries.list": {
    id: "points.entries.list",
    capability: POINTS_READ,
    summary: "List a user's points ledger, newest first",
    description: `The user's point entries, newest first (\`sort=created_at\` for oldest first); filter by \`product_id\` and \`trigger\`. Each entry carries \`ending_balance\`, the balance right after it. ${ledgerNote} A missing or trashed user is 404.`
  },
  "point_entries.get": {
    id: "points.entries.get",
    capability: POINTS_READ,
    summary: "Retrieve an entry of a user's points ledger",
    description: `${ledgerNote} An entry of another user is 404.`
  }
})

export const gamificationRoutes: ReadonlyArray<Operation> = [...ruleOperations, pointsBalance, ...entryOperations]
