/** Reading the audit trail: `/requests` and `/audit-entries`, newest first, 30 days. */
import { Clock, Effect, Option } from "effect"
import { AUDIT_ENTRY_TYPE, auditEntryFields, AUDIT_RETENTION_MS, REQUEST_TYPE, requestFields } from "./audit.js"
import { Caller } from "./context.js"
import { apiError } from "./errors.js"
import { paginate } from "./pagination.js"
import { Records, type Where } from "./ports.js"
import { formatTimestamp, parseTimestamp } from "./time.js"
import { inOrder } from "./views.js"

export interface TrailQuery {
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
  readonly created_after: string | undefined
  readonly created_before: string | undefined
  /** Equality filters on fields of the entries. */
  readonly filters: Readonly<Record<string, string | number | undefined>>
}

const readTrail = (type: string, fields: ReadonlyArray<string>) =>
  Effect.fn(`Trail.list.${type}`)(function* (query: TrailQuery) {
    const caller = yield* Caller
    const now = yield* Clock.currentTimeMillis
    const retainedSince = formatTimestamp(now - AUDIT_RETENTION_MS)
    const at = (text: string | undefined) => (text === undefined ? undefined : formatTimestamp(Option.getOrThrow(parseTimestamp(text))))
    const after = at(query.created_after)
    const before = at(query.created_before)
    const where: Array<Where> = [
      { field: "created_at", op: "gte", value: after !== undefined && after > retainedSince ? after : retainedSince },
      ...(before !== undefined ? [{ field: "created_at", op: "lt" as const, value: before }] : []),
      ...Object.entries(query.filters).flatMap(([field, value]) =>
        value === undefined ? [] : [{ field, op: "eq" as const, value }]
      )
    ]
    const sort = query.sort ?? "-created_at"
    const { items, page } = yield* paginate({
      tenant: caller.tenant,
      type,
      where,
      // Retention moves the lower bound every millisecond: bind the cursor to the filters the client chose.
      sort: { field: "id", kind: "text", direction: sort.startsWith("-") ? "desc" : "asc" },
      limit: query.limit,
      cursor: query.cursor,
      collection: `${type}:${JSON.stringify([query.filters, after ?? null, before ?? null])}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(apiError("audit_unavailable", { internal: e }))))
    return { data: items.map((r) => inOrder(r.data, fields)), page }
  })

export const listRequests = readTrail(REQUEST_TYPE, requestFields)
export const listAuditEntries = readTrail(AUDIT_ENTRY_TYPE, auditEntryFields)

const getTrail = (type: string, fields: ReadonlyArray<string>) =>
  Effect.fn(`Trail.get.${type}`)(function* (id: string) {
    const caller = yield* Caller
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const record = yield* records
      .get(caller.tenant, type, id)
      .pipe(Effect.mapError((e) => apiError("audit_unavailable", { internal: e })))
    const createdAt = record?.data.created_at
    if (!record || typeof createdAt !== "string" || Date.parse(createdAt) < now - AUDIT_RETENTION_MS) {
      return yield* Effect.fail(apiError("not_found"))
    }
    return inOrder(record.data, fields)
  })

export const getRequest = getTrail(REQUEST_TYPE, requestFields)
export const getAuditEntry = getTrail(AUDIT_ENTRY_TYPE, auditEntryFields)
