/**
 * `GET /reports/support` (§4.4, `SUPPORT_REPORT`): the support desk per department, computed by
 * the store (`Records.aggregate`, docs/reports.md), never by reading tickets here.
 *
 * - The groups are the tickets' `department_id` (null: routed to none), paged by the store in
 *   key order (null first) after the cursor's key, as the certificates report pages products.
 * - One aggregate over the non-trashed tickets gives, per group, the counts by status now, the
 *   tickets opened in the period (`created_at`), those whose latest solution is in it
 *   (`solved_at`, kept by the ticket's writes) and the average of `first_reply_seconds` (kept
 *   when the first agent reply is written) over those opened in it.
 * - A second aggregate over the page's groups counts the replies written in the period
 *   (`ticket_message`, `opening` false, by `created_at`), grouped by the department stored on
 *   each message when it was written.
 * - A median first-reply time would need the ordered values of a group, which the store's
 *   measures (count, sum, avg, min, max) do not give without reading every row: the report
 *   gives the average.
 */
import { Effect, Option } from "effect"
import { Caller } from "../access/context.js"
import { reachOf } from "../access/scope.js"
import { REPORTS_READ } from "./reports.js"
import { apiError, readUnavailable } from "../errors/errors.js"
import { type AccessPath, type AggregateQuery, type Json, type JsonObject, listPath, Records, type Where } from "../ports/store.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"
import { DEPARTMENT_TYPE } from "../support/departments.js"
import { TICKET_MESSAGE_TYPE, TICKET_TYPE } from "../support/tickets.js"
import { reportCursors, type ReportPage } from "./page.js"

/**
 * The reads of the report, each an index: the non-trashed tickets in department order (the
 * groups, paged after a department), and the replies of some departments in a period (messages
 * by department, opening or not, by instant).
 */
export const supportReportAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(TICKET_TYPE, ["deleted"], [{ field: "department_id", kind: "text" }]),
  listPath(TICKET_MESSAGE_TYPE, ["department_id", "opening"], [{ field: "created_at", kind: "text" }])
]

export interface SupportReportInput {
  readonly occurredAfter: string | undefined
  readonly occurredBefore: string | undefined
  readonly limit: number
  readonly cursor: string | undefined
}

const instant = (value: string | undefined): string | undefined =>
  value === undefined ? undefined : Option.match(parseTimestamp(value), { onNone: () => value, onSome: formatTimestamp })

const text = (value: Json | undefined): string | null => (typeof value === "string" ? value : null)
const round2 = (value: number | null | undefined): number | null => (value == null ? null : Math.round(value * 100) / 100)

const aggregate = (type: string, query: AggregateQuery) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records.aggregate(caller.tenant, type, query).pipe(Effect.mapError(readUnavailable))
  })

/** `GET /reports/support`: per department, the desk's figures (`SUPPORT_REPORT`). */
export const supportReport = Effect.fn("Reports.support")(function* (input: SupportReportInput) {
  const after = instant(input.occurredAfter)
  const before = instant(input.occurredBefore)
  if (after !== undefined && before !== undefined && after >= before) {
    return yield* Effect.fail(
      apiError("validation_failed", { details: [{ parameter: "occurred_before", code: "invalid_value", reason: "empty_range" }] })
    )
  }
  const cursors = yield* reportCursors("support", { occurred_after: after ?? null, occurred_before: before ?? null })
  const position = yield* cursors.read(input.cursor)
  /** The period on a timestamp field; a field never set (null) is outside any period. */
  const period = (field: string): ReadonlyArray<Where> => [
    { field, op: "gte", value: after ?? "" },
    ...(before === undefined ? [] : [{ field, op: "lt" as const, value: before }])
  ]
  const status = (value: string): ReadonlyArray<Where> => [{ field: "status", op: "eq", value }]
  // A limited credential sees the rows of the departments it reaches (access/scope.ts).
  const reach = reachOf((yield* Caller).grant, REPORTS_READ)
  const reached: ReadonlyArray<Where> = reach === "all" ? [] : [{ field: "department_id", op: "in", values: [...reach].sort() }]
  const groups = reach !== "all" && reach.size === 0 ? [] : yield* aggregate(TICKET_TYPE, {
    where: [{ field: "deleted", op: "eq", value: false }, ...reached],
    groupBy: ["department_id"],
    measures: [
      { kind: "count", filter: status("open") },
      { kind: "count", filter: status("pending") },
      { kind: "count", filter: status("solved") },
      { kind: "count", filter: status("closed") },
      { kind: "count", filter: period("created_at") },
      { kind: "count", filter: period("solved_at") },
      { kind: "avg", field: "first_reply_seconds", filter: period("created_at") }
    ],
    after: position === undefined ? undefined : { value: 0, key: [position.k] },
    limit: input.limit + 1
  })
  const page = groups.slice(0, input.limit)
  const keys = page.map((group) => text(group.key[0]))
  const named = keys.filter((key): key is string => key !== null)

  // Replies in the period, per department of the page (and those routed to none).
  const replyWhere = (department: Where): ReadonlyArray<Where> => [department, { field: "opening", op: "eq", value: false }, ...period("created_at")]
  const replyGroups = [
    ...(named.length === 0
      ? []
      : yield* aggregate(TICKET_MESSAGE_TYPE, {
          where: replyWhere({ field: "department_id", op: "in", values: named }),
          groupBy: ["department_id"],
          measures: [{ kind: "count" }]
        })),
    ...(keys.includes(null)
      ? yield* aggregate(TICKET_MESSAGE_TYPE, {
          where: replyWhere({ field: "department_id", op: "eq", value: null }),
          groupBy: [],
          measures: [{ kind: "count" }]
        }).pipe(Effect.map((rows) => rows.map((row) => ({ ...row, key: [null] }))))
      : [])
  ]
  const replies = new Map(replyGroups.map((group) => [text(group.key[0]), group.values[0] ?? 0]))

  const caller = yield* Caller
  const records = yield* Records
  const departments = named.length === 0 ? [] : yield* records.getMany(caller.tenant, DEPARTMENT_TYPE, named).pipe(Effect.mapError(readUnavailable))
  const names = new Map(departments.map((record) => [record.id, text(record.data.name)]))

  const data = page.map((group): JsonObject => {
    const departmentId = text(group.key[0])
    const [open, pending, solved, closed, opened, solvedInPeriod, firstReply] = group.values
    return {
      department_id: departmentId,
      department_name: departmentId === null ? null : (names.get(departmentId) ?? null),
      open: open ?? 0,
      pending: pending ?? 0,
      solved: solved ?? 0,
      closed: closed ?? 0,
      opened: opened ?? 0,
      solved_in_period: solvedInPeriod ?? 0,
      replies: replies.get(departmentId) ?? 0,
      average_first_reply_seconds: round2(firstReply)
    }
  })
  const last = page.at(-1)
  const next = groups.length > input.limit && last !== undefined ? cursors.write({ v: null, k: text(last.key[0]), n: 0 }) : null
  return { data, page: { limit: input.limit, next_cursor: next, prev_cursor: null } satisfies ReportPage }
})
