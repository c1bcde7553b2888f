/**
 * `GET /reports/exports` (§4.4, `EXPORTS_REPORT`): the exports of the environment per resource
 * type and status, computed by the store (`Records.aggregate`, docs/reports.md), never by
 * reading the exports here.
 *
 * - One aggregate over the exports made in the period (`created_at`, optional bounds), grouped
 *   by `resource_type` and `status`: how many, the rows and bytes written (the sums of
 *   `row_count` and `size`, set when an export succeeds: 0 for the other statuses), the
 *   average rows per export that wrote a file.
 * - Groups in key order (resource type, then status), paged by the store after the cursor's
 *   keys, as the support report pages departments.
 */
import { Effect, Option } from "effect"
import { Caller } from "../access/context.js"
import { apiError, readUnavailable } from "../errors/errors.js"
import { type AccessPath, type Json, type JsonObject, listPath, Records, type Where } from "../ports/store.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"
import { EXPORT_TYPE } from "../bulk/exports.js"
import { reportCursors, type ReportPage } from "./page.js"

/** The read of the report: exports by resource type and status, then creation (the period). */
export const exportsReportAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(EXPORT_TYPE, [], [{ field: "created_at", kind: "text" }])
]

export interface ExportsReportInput {
  readonly createdAfter: string | undefined
  readonly createdBefore: string | undefined
  readonly resourceType: string | undefined
  readonly limit: number
  readonly cursor: string | undefined
}

const instant = (value: string | undefined): string | undefined =>
  value === undefined ? undefined : Option.match(parseTimestamp(value), { onNone: () => value, onSome: formatTimestamp })

const text = (value: Json | undefined): string | null => (typeof value === "string" ? value : null)

/** `GET /reports/exports`: per resource type and status, the exports, rows and bytes (`EXPORTS_REPORT`). */
export const exportsReport = Effect.fn("Reports.exports")(function* (input: ExportsReportInput) {
  const after = instant(input.createdAfter)
  const before = instant(input.createdBefore)
  if (after !== undefined && before !== undefined && after >= before) {
    return yield* Effect.fail(
      apiError("validation_failed", { details: [{ parameter: "created_before", code: "invalid_value", reason: "empty_range" }] })
    )
  }
  const cursors = yield* reportCursors("exports", {
    created_after: after ?? null,
    created_before: before ?? null,
    resource_type: input.resourceType ?? null
  })
  const position = yield* cursors.read(input.cursor)
  const where: Array<Where> = [
    ...(after === undefined ? [] : [{ field: "created_at", op: "gte" as const, value: after }]),
    ...(before === undefined ? [] : [{ field: "created_at", op: "lt" as const, value: before }]),
    ...(input.resourceType === undefined ? [] : [{ field: "resource_type", op: "eq" as const, value: input.resourceType }])
  ]
  const caller = yield* Caller
  const records = yield* Records
  const groups = yield* records
    .aggregate(caller.tenant, EXPORT_TYPE, {
      where,
      groupBy: ["resource_type", "status"],
      measures: [{ kind: "count" }, { kind: "sum", field: "row_count" }, { kind: "sum", field: "size" }],
      after: position === undefined ? undefined : { value: 0, key: JSON.parse(String(position.k)) as ReadonlyArray<string | null> },
      limit: input.limit + 1
    })
    .pipe(Effect.mapError(readUnavailable))
  const page = groups.slice(0, input.limit)
  const data = page.map((group): JsonObject => {
    const [count, rows, bytes] = group.values
    const written = Number(rows ?? 0)
    return {
      resource_type: text(group.key[0]),
      status: text(group.key[1]),
      exports: count ?? 0,
      rows: written,
      bytes: Number(bytes ?? 0)
    }
  })
  const last = page.at(-1)
  const next =
    groups.length > input.limit && last !== undefined ? cursors.write({ v: null, k: JSON.stringify([text(last.key[0]), text(last.key[1])]), n: 0 }) : null
  return { data, page: { limit: input.limit, next_cursor: next, prev_cursor: null } satisfies ReportPage }
})
