/** Reading the audit trail: `/requests` and `/audit-entries`, newest first, 30 days. */
import { Clock, Effect } from "effect"
import { Caller } from "../access/context.js"
import { apiError, writeUnavailable } from "../errors/errors.js"
import { type AccessPath, listPath, Records } from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import { formatTimestamp } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { AUDIT_ENTRY_TYPE, auditEntryFields, AUDIT_RETENTION_MS, REQUEST_TYPE, requestFields } from "./audit.js"
import { type RetainedQuery, retainedBinding, retainedWhere } from "./retained.js"

export interface TrailQuery extends RetainedQuery {
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
}

const readTrail = (type: string, fields: ReadonlyArray<string>) =>
  Effect.fn(`Trail.list.${type}`)(function* (query: TrailQuery) {
    const caller = yield* Caller
    const now = yield* Clock.currentTimeMillis
    const where = retainedWhere(query, formatTimestamp(now - AUDIT_RETENTION_MS))
    const sort = query.sort ?? "-created_at"
    const { items, page } = yield* paginate({
      tenant: caller.tenant,
      type,
      where,
      // Retention moves the lower bound every millisecond: bind the cursor to the filters the client chose.
      sort: { field: "id", kind: "text", direction: sort.startsWith("-") ? "desc" : "asc" },
      limit: query.limit,
      cursor: query.cursor,
      collection: `${type}:${retainedBinding(query)}`
    }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(writeUnavailable(e))))
    return { data: items.map((r) => inOrder(r.data, fields)), page }
  })

/**
 * The filters of `GET /requests` and `GET /audit-entries` (their routes in `@syllabus/http`),
 * each an access path in `id` (creation) order.
 */
export const trailAccessPaths: ReadonlyArray<AccessPath> = [
  ...["credential_id", "outcome", "operation_id", "client_request_id"].map((field) =>
    listPath(REQUEST_TYPE, [field], [{ field: "id", kind: "text" }])
  ),
  ...["resource_id", "resource_type", "action", "request_id"].map((field) =>
    listPath(AUDIT_ENTRY_TYPE, [field], [{ field: "id", kind: "text" }])
  )
]

export const listRequests = readTrail(REQUEST_TYPE, requestFields)
export const listAuditEntries = readTrail(AUDIT_ENTRY_TYPE, auditEntryFields)

const getTrail = (type: string, fields: ReadonlyArray<string>) =>
  Effect.fn(`Trail.get.${type}`)(function* (id: string) {
    const caller = yield* Caller
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const record = yield* records
      .get(caller.tenant, type, id)
      .pipe(Effect.mapError(writeUnavailable))
    const createdAt = record?.data.created_at
    if (!record || typeof createdAt !== "string" || Date.parse(createdAt) < now - AUDIT_RETENTION_MS) {
      return yield* Effect.fail(apiError("not_found"))
    }
    return inOrder(record.data, fields)
  })

export const getRequest = getTrail(REQUEST_TYPE, requestFields)
export const getAuditEntry = getTrail(AUDIT_ENTRY_TYPE, auditEntryFields)
