/**
 * The figures the reports keep rather than compute when asked (`records/kept-figures.ts`):
 * a lesson's progress (`/reports/lessons`), a product's enrollments and sales
 * (`/reports/products`) and a funnel step's conversions (`/sales/funnels`), whose groups hold up
 * to millions of records. Each is summed over its shards by the store
 * (`Records.aggregate`), through the index of its group field (`figuresAccessPaths`).
 */
import { type AccessPath, type Json, type JsonObject, listPath } from "../ports/store.js"
import { type KeptFigures } from "../records/kept-figures.js"
import { ENROLLMENT_TYPE } from "../learning/enrollments.js"
import { LESSON_PROGRESS_TYPE } from "../learning/progress.js"

const when = (holds: boolean, value = 1): number => (holds ? value : 0)
const isOneOf = (value: Json | undefined, ...values: ReadonlyArray<string>): boolean => typeof value === "string" && values.includes(value)
const numberOr0 = (value: Json | undefined): number => (typeof value === "number" ? value : 0)

/** Progress counted as started: in progress or completed. */
const started = (data: JsonObject) => isOneOf(data.status, "in_progress", "completed")

/** Per lesson: its progress rows started, in progress, completed, and the sum of the started rows' percent. */
export const LESSON_PROGRESS_FIGURES: KeptFigures = {
  type: "lesson_progress_figures",
  of: LESSON_PROGRESS_TYPE,
  groupBy: "lesson_id",
  shards: 8,
  measures: {
    started: (data) => when(started(data)),
    in_progress: (data) => when(isOneOf(data.status, "in_progress")),
    completed: (data) => when(isOneOf(data.status, "completed")),
    started_percent: (data) => when(started(data), numberOr0(data.percent))
  }
}

/** An enrollment's progress counts in its product's average unless it was canceled. */
const averaged = (data: JsonObject) => isOneOf(data.status, "active", "expired") && typeof data.progress_percent === "number"

/**
 * Per product: its enrollments, by status, completed (`completed_at` set), and the count and sum
 * of the progress of those not canceled. 16 shards: every progress write that moves an
 * enrollment's percent writes its product's figures.
 */
export const ENROLLMENT_FIGURES: KeptFigures = {
  type: "enrollment_figures",
  of: ENROLLMENT_TYPE,
  groupBy: "product_id",
  shards: 16,
  measures: {
    enrollments: () => 1,
    active: (data) => when(isOneOf(data.status, "active")),
    expired: (data) => when(isOneOf(data.status, "expired")),
    canceled: (data) => when(isOneOf(data.status, "canceled")),
    completed: (data) => when(typeof data.completed_at === "string"),
    averaged: (data) => when(averaged(data)),
    averaged_percent: (data) => when(averaged(data), numberOr0(data.progress_percent))
  }
}

/** The record type of sales events (sales/sales-events.ts), named here so the figures need not load the sales module. */
const SALES_EVENT_TYPE = "sales_event"

/** A sale approved: the event that grants access (not a renewal, which is no new sale). */
export const isApprovedSale = (data: JsonObject) => isOneOf(data.type, "approved")
/** Money given back: a refund or a chargeback (a `canceled` sale was not paid, so it is neither). */
export const isRefundedSale = (data: JsonObject) => isOneOf(data.type, "refunded", "chargeback")

/**
 * Per product: the sales events naming it (each event counts once in each of its
 * `product_ids`): sales approved, refunded (refunds and chargebacks, counted apart rather than
 * subtracted), and the approved sales made through a funnel step (`funnel_step_id` set).
 */
export const SALES_PRODUCT_FIGURES: KeptFigures = {
  type: "sales_product_figures",
  of: SALES_EVENT_TYPE,
  groupBy: "product_id",
  groups: (data) => (Array.isArray(data.product_ids) ? data.product_ids.filter((id): id is string => typeof id === "string") : []),
  shards: 8,
  measures: {
    sales_approved: (data) => when(isApprovedSale(data)),
    sales_refunded: (data) => when(isRefundedSale(data)),
    funnel_conversions: (data) => when(isApprovedSale(data) && typeof data.funnel_step_id === "string")
  }
}

/**
 * Per funnel step (`funnel_step_id`, unique in the account): the approved sales made through it
 * (`conversions`) and the refunds and chargebacks naming it (`refunds`), shown on the funnel
 * (sales/funnels.ts).
 */
export const FUNNEL_STEP_FIGURES: KeptFigures = {
  type: "funnel_step_figures",
  of: SALES_EVENT_TYPE,
  groupBy: "funnel_step_id",
  shards: 8,
  measures: {
    conversions: (data) => when(isApprovedSale(data)),
    refunds: (data) => when(isRefundedSale(data))
  }
}

export const reportsKeptFigures: ReadonlyArray<KeptFigures> = [LESSON_PROGRESS_FIGURES, ENROLLMENT_FIGURES, SALES_PRODUCT_FIGURES, FUNNEL_STEP_FIGURES]

/** The figures of a page of groups are read by their group field. */
export const figuresAccessPaths: ReadonlyArray<AccessPath> = reportsKeptFigures.map((figures) =>
  listPath(figures.type, [figures.groupBy], [{ field: "id", kind: "text" }])
)
