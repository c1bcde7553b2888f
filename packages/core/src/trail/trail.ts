/** Reading the audit trail: `/requests` and `/audit-entries`, newest first, 30 days. */
import { Clock, Effect } from "effect"
import { Caller } from "../access/context.js"
import type { Grant } from "../access/policies.js"
import { type Anchors, reachOf, reaches, storedAnchors } from "../access/scope.js"
import { apiError, writeUnavailable } from "../errors/errors.js"
import { type AccessPath, type JsonObject, listPath, Records, type StoredRecord } from "../ports/store.js"
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

/**
 * What a limited credential sees of the trail (access/scope.ts): the audit entries of the records
 * it reaches (their anchors, kept on each entry), the requests of the credentials it reaches.
 */
const trailScopes: Readonly<Record<string, { readonly capability: string; readonly anchors: (data: JsonObject) => Anchors }>> = {
  [AUDIT_ENTRY_TYPE]: {
    capability: "audit_entries.read",
    anchors: (data) => storedAnchors(data, typeof data.resource_id === "string" ? data.resource_id : null)
  },
  [REQUEST_TYPE]: {
    capability: "requests.read",
    anchors: (data) => (typeof data.credential_id === "string" ? [data.credential_id] : [])
  }
}

const trailReached = (grant: Grant, type: string, data: JsonObject): boolean => {
  const scope = trailScopes[type]!
  return reaches(grant, scope.capability, scope.anchors(data))
}

const readTrail = (type: string, fields: ReadonlyArray<string>) =>
  Effect.fn(`Trail.list.${type}`)(function* (query: TrailQuery) {
    const caller = yield* Caller
    const now = yield* Clock.currentTimeMillis
    const where = retainedWhere(query, formatTimestamp(now - AUDIT_RETENTION_MS))
    const sort = query.sort ?? "-created_at"
    const limited = reachOf(caller.grant, trailScopes[type]!.capability) !== "all"
    const { items, page } = yield* paginate({
      tenant: caller.tenant,
      type,
      where,
      ...(limited ? { visible: (record: StoredRecord) => trailReached(caller.grant, type, record.data) } : {}),
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
    if (!record || typeof createdAt !== "string" || Date.parse(createdAt) < now - AUDIT_RETENTION_MS || !trailReached(caller.grant, type, record.data)) {
      return yield* Effect.fail(apiError("not_found"))
    }
    return inOrder(record.data, fields)
  })

export const getRequest = getTrail(REQUEST_TYPE, requestFields)
export const getAuditEntry = getTrail(AUDIT_ENTRY_TYPE, auditEntryFields)
