/**
 * Sales funnels (release 3.2.0, open-points routes `/sales/funnels` and `/{funnel_id}`): the
 * five routes of the description (`describedOperations`), answered with each step's
 * conversion counts (`funnelViews`, kept figures over the sales events), and the decisions in
 * each operation's text (docs/sales.md, "Funnels" and "Switching sales off").
 */
import { funnels, funnelViews } from "@syllabus/core"
import type { Operation } from "../operation.js"
import { describedOperations, withView } from "../resources.js"

const tag = "Sales"

const stepsNote =
  "`steps` (1 to 20) are in the order a buyer goes through them, each `{ id, kind, name, delivery_id }`; `kind` is a closed enum (`page`, `offer`, `upsell`, `downsell`, `thank_you`). `offer`, `upsell` and `downsell` require `delivery_id` (422 `validation_failed` on `steps[i].delivery_id`, code `required`); `page` and `thank_you` take none (code `not_allowed`). A delivery named anew must exist and not be trashed (422 on `steps[i].delivery_id`, reason `not_found`). Rules of a funnel, each 422 `domain_rule_violation` with the first broken rule as `reason` and every broken one itemized: at least one `offer` (`offer_required`); an `upsell` or `downsell` after an `offer` (`upsell_before_offer`); at most one `thank_you` (`multiple_thank_you`), the last step (`thank_you_not_last`)."
const countsNote =
  "Each step shows `conversions` (sales events `approved` naming the step) and `refunds` (events `refunded` or `chargeback` naming it), counted apart: refunds do not reduce `conversions`. They are figures kept with every sales event written, so they are current on every read; the `funnel.*` events carry the funnel as configured, without them."
const disabledNote =
  "While sales are switched off (`PATCH /settings/sales` with `enabled: false`) or funnels are (`funnels_enabled: false`), this write answers 409 `feature_disabled` (reason `sales_disabled` or `funnels_disabled`); reads, the trash and a restore (`deleted: false` alone) stay available."

const funnelOperations = describedOperations(funnels, tag, {
  "funnels.list": {
    summary: "List sales funnels, newest first",
    description: `Newest first unless \`sort\` says otherwise (\`name\`); \`q\` searches the name; \`deleted=true\` lists the trash. ${countsNote}`
  },
  "funnels.get": { summary: "Retrieve a sales funnel with its conversion counts", description: countsNote },
  "funnels.create": {
    summary: "Create a sales funnel",
    description: `\`name\` and \`steps\` are required; each step gets its ID (\`fst_…\`). ${stepsNote} Event \`funnel.created\`. ${disabledNote}`
  },
  "funnels.update": {
    summary: "Change a sales funnel or replace its steps",
    description: `\`steps\` replaces the whole list: an item with the \`id\` of one of the funnel's steps keeps that step (its ID and its counts), one without \`id\` is a new step, those left out are gone (their counts are no longer shown). An \`id\` not of this funnel is 422 on \`steps[i].id\`, reason \`not_found\` (\`duplicate\` when sent twice). ${stepsNote} ${disabledNote}`
  },
  "funnels.delete": {
    summary: "Move a sales funnel to the trash",
    description: `A trashed funnel is not found; \`PATCH deleted=false\` restores it with its steps and counts. Sales events naming its steps are still counted. Available while sales or funnels are switched off.`
  }
})

export const funnelsRoutes: ReadonlyArray<Operation> = funnelOperations.map(withView(funnelViews))
