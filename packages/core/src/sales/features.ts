/**
 * Switching sales off (settings group `sales`, site/site-settings.ts).
 *
 * Decisions:
 * - `requireSalesFeature("sales")` guards the writes that set up selling: creating and
 *   changing deliveries, gateways and funnels, and starting a delivery's tag applications.
 *   While `enabled` is false they answer 409 `feature_disabled`, reason `sales_disabled`.
 * - `requireSalesFeature("funnels")` guards funnel writes: it checks `enabled` first (reason
 *   `sales_disabled`), then `funnels_enabled` (reason `funnels_disabled`), so one call is
 *   enough at a funnel write and the answer names the switch that is actually off.
 * - Reads, the trash of what exists, and incoming gateway notifications are never guarded: a
 *   payment that happened at the gateway is still recorded (and acts on access), so nothing is
 *   lost while selling is paused — the switch stops the account building, not the money flow.
 */
import { Effect } from "effect"
import { apiError } from "../errors/errors.js"
import { salesSettings, settingValue } from "../site/site-settings.js"

export type SalesFeature = "sales" | "funnels"

/** 409 `feature_disabled` (with `reason`) when the feature is switched off in `/settings/sales`. */
export const requireSalesFeature = (feature: SalesFeature) =>
  Effect.gen(function* () {
    if ((yield* settingValue(salesSettings, "enabled")) === false)
      return yield* Effect.fail(apiError("feature_disabled", { reason: "sales_disabled" }))
    if (feature === "funnels" && (yield* settingValue(salesSettings, "funnels_enabled")) === false)
      return yield* Effect.fail(apiError("feature_disabled", { reason: "funnels_disabled" }))
  })
