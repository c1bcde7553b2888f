/**
 * Asynchronous operations (§2.3 `operation`, §4.3, open-points "Asynchronous operations"):
 * work a request starts and a worker finishes. The request records the operation and its
 * items in its own unit of work and answers 202; workers, in any process on the same store,
 * claim queued operations under a lease and run their items, each in a unit of work of its
 * own, through the handler registered for the operation's type.
 */
import { Clock, Context, Effect, Layer, Option, Schedule } from "effect"
import type { CallerInfo } from "./context.js"
import { Caller, Ids } from "./context.js"
import { type ApiError, apiError } from "./errors.js"
import { emitEvent } from "./events.js"
import { paginate } from "./pagination.js"
import { type Json, type JsonObject, Records, type StoredRecord, type Tenant, UnitOfWork } from "./ports.js"
import { DAY, formatTimestamp, SECOND } from "./time.js"
import { inOrder } from "./views.js"

export const OPERATION_TYPE = "operation"
export const OPERATION_ITEM_TYPE = "operation_item"
export const OPERATION_RETENTION_MS = 30 * DAY
/** A worker that has not finished or renewed within this time has lost the operation. */
export const OPERATION_LEASE_MS = 30 * SECOND

export const operationFields = [
  "object",
  "id",
  "type",
  "status",
  "attempt",
  "cancellation_requested",
  "progress",
  "error",
  "items_url",
  "result_url",
  "created_at",
  "started_at",
  "finished_at",
  "expires_at"
] as const

export const operationItemFields = ["object", "id", "operation_id", "key", "status", "error", "result", "created_at", "finished_at"] as const

/** What an item handler may use: the services of a use case, with the operation's starter as caller. */
export type ItemServices = Caller | Records | Ids

/** Runs one item of an operation type; its writes join the item's unit of work. */
export interface OperationKind {
  readonly runItem: (payload: JsonObject) => Effect.Effect<Json, ApiError, ItemServices>
}

/** The handlers of every operation type, by type. */
export class OperationKinds extends Context.Tag("@syllabus/core/OperationKinds")<
  OperationKinds,
  ReadonlyMap<string, OperationKind>
>() {
  static readonly layer = (kinds: Readonly<Record<string, OperationKind>>) => Layer.succeed(OperationKinds, new Map(Object.entries(kinds)))
}

export const operationView = (record: StoredRecord): JsonObject => inOrder(record.data, operationFields)
export const operationItemView = (record: StoredRecord): JsonObject => inOrder(record.data, operationItemFields)

const storeFailure = (cause: unknown) => apiError("audit_unavailable", { internal: cause })

/**
 * Record an operation and its items, queued; call it inside the unit of work of the request
 * that starts it. Answers the operation's representation (for the 202).
 */
export const startOperation = Effect.fn("Operations.start")(function* (
  type: string,
  items: ReadonlyArray<{ readonly key: string; readonly payload: JsonObject }>
) {
  const caller = yield* Caller
  const records = yield* Records
  const ids = yield* Ids
  const now = yield* Clock.currentTimeMillis
  const id = yield* ids.next("operation")
  const at = formatTimestamp(now)
  const data = {
    object: "operation",
    id,
    type,
    status: "queued",
    attempt: { number: 0, status: "queued" },
    cancellation_requested: false,
    progress: { done: 0, failed: 0, total: items.length },
    error: null,
    items_url: `/api/v3/operations/${id}/items`,
    result_url: null,
    created_at: at,
    started_at: null,
    finished_at: null,
    expires_at: formatTimestamp(now + OPERATION_RETENTION_MS),
    // Internal: who started it (items run as them), and the lease of the worker running it.
    started_by: { credential_id: caller.credential.id, administrator_id: caller.human?.adminId ?? null, request_id: caller.requestId },
    lease_until: null
  } satisfies JsonObject
  const record = yield* records.insert(caller.tenant, OPERATION_TYPE, id, data).pipe(Effect.mapError(storeFailure))
  yield* Effect.forEach(items, (item) =>
    Effect.gen(function* () {
      const itemId = yield* ids.next("operation_item")
      yield* records
        .insert(caller.tenant, OPERATION_ITEM_TYPE, itemId, {
          object: "operation_item",
          id: itemId,
          operation_id: id,
          key: item.key,
          status: "queued",
          error: null,
          result: null,
          created_at: at,
          finished_at: null,
          payload: item.payload
        })
        .pipe(Effect.mapError(storeFailure))
    })
  )
  return operationView(record)
})

export const getOperation = Effect.fn("Operations.get")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const record = yield* records.get(caller.tenant, OPERATION_TYPE, id).pipe(Effect.mapError(storeFailure))
  if (!record) return yield* Effect.fail(apiError("not_found"))
  return operationView(record)
})

export const listOperations = Effect.fn("Operations.list")(function* (query: {
  readonly limit: number
  readonly cursor: string | undefined
  readonly status: string | undefined
  readonly type: string | undefined
}) {
  const caller = yield* Caller
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: OPERATION_TYPE,
    where: [
      ...(query.status ? [{ field: "status", op: "eq" as const, value: query.status }] : []),
      ...(query.type ? [{ field: "type", op: "eq" as const, value: query.type }] : [])
    ],
    sort: { field: "id", kind: "text", direction: "desc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `operations:${query.status ?? ""}:${query.type ?? ""}`
  }).pipe(Effect.catchTag("StoreUnavailable", storeFailureEffect))
  return { data: items.map(operationView), page }
})

const storeFailureEffect = (cause: unknown) => Effect.fail(storeFailure(cause))

export const listOperationItems = Effect.fn("Operations.listItems")(function* (
  id: string,
  query: { readonly limit: number; readonly cursor: string | undefined }
) {
  yield* getOperation(id)
  const caller = yield* Caller
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: OPERATION_ITEM_TYPE,
    where: [{ field: "operation_id", op: "eq", value: id }],
    sort: { field: "id", kind: "text", direction: "asc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `operation_items:${id}`
  }).pipe(Effect.catchTag("StoreUnavailable", storeFailureEffect))
  return { data: items.map(operationItemView), page }
})

// ---------------------------------------------------------------------------------------
// The worker

const workerCaller = (operation: StoredRecord): CallerInfo => {
  const startedBy = (operation.data.started_by ?? {}) as { credential_id?: string; administrator_id?: string | null; request_id?: string }
  return {
    tenant: operation.tenant as Tenant,
    requestId: startedBy.request_id ?? operation.id,
    credential: { id: startedBy.credential_id ?? "unknown" },
    grant: new Map(),
    human: startedBy.administrator_id ? { adminId: startedBy.administrator_id, expiresAt: 0, eligibleSince: "" } : null
  }
}

/**
 * Claim one operation: queued, or running under a lease that ran out (its worker died). The
 * claim is a conditional update on the revision read, so two workers never both win.
 */
const claim = (record: StoredRecord, now: number) =>
  Effect.flatMap(Records, (records) =>
    records
      .update(
        record.tenant,
        OPERATION_TYPE,
        record.id,
        {
          ...record.data,
          status: "running",
          attempt: { number: Number((record.data.attempt as JsonObject | null)?.number ?? 0) + 1, status: "running" },
          started_at: record.data.started_at ?? formatTimestamp(now),
          lease_until: now + OPERATION_LEASE_MS
        },
        { expectedRevision: record.revision }
      )
      .pipe(
        Effect.map(Option.some),
        Effect.catchTag("RevisionConflict", () => Effect.succeedNone)
      )
  )

/** Run the queued items of a claimed operation, then finish it. */
const runOperation = (operation: StoredRecord) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const kinds = yield* OperationKinds
    const kind = kinds.get(String(operation.data.type))
    const caller = workerCaller(operation)
    const items = yield* records.list(operation.tenant, OPERATION_ITEM_TYPE, {
      where: [{ field: "operation_id", op: "eq", value: operation.id }],
      sort: { field: "id", kind: "text", direction: "asc" },
      limit: 1000
    })
    for (const item of items) {
      if (item.data.status !== "queued") continue
      const outcome = yield* Effect.either(
        uow.transaction(
          Effect.gen(function* () {
            if (!kind) return yield* Effect.fail(apiError("operation_type_unknown"))
            const result = yield* kind.runItem((item.data.payload ?? {}) as JsonObject)
            const now = yield* Clock.currentTimeMillis
            yield* records.update(operation.tenant, OPERATION_ITEM_TYPE, item.id, {
              ...item.data,
              status: "succeeded",
              result,
              finished_at: formatTimestamp(now)
            })
          }).pipe(Effect.provideService(Caller, caller))
        )
      )
      if (outcome._tag === "Left") {
        const error = outcome.left
        const now = yield* Clock.currentTimeMillis
        const failure =
          error._tag === "ApiError"
            ? { code: error.code, message: error.code, field: error.details[0]?.field ?? null, reason: error.reason ?? null, resource_id: null }
            : { code: "internal_error", message: "internal_error", field: null, reason: null, resource_id: null }
        yield* records.update(operation.tenant, OPERATION_ITEM_TYPE, item.id, {
          ...item.data,
          status: "failed",
          error: failure,
          finished_at: formatTimestamp(now)
        })
      }
    }
    // Finish: progress from the items, the first failed item as the error.
    const finished = yield* records.list(operation.tenant, OPERATION_ITEM_TYPE, {
      where: [{ field: "operation_id", op: "eq", value: operation.id }],
      sort: { field: "id", kind: "text", direction: "asc" },
      limit: 1000
    })
    const failed = finished.filter((i) => i.data.status === "failed")
    const done = finished.filter((i) => i.data.status === "succeeded").length
    const now = yield* Clock.currentTimeMillis
    const current = yield* records.get(operation.tenant, OPERATION_TYPE, operation.id)
    if (!current) return
    const status = failed.length > 0 ? "failed" : "succeeded"
    const saved = yield* records.update(
      operation.tenant,
      OPERATION_TYPE,
      operation.id,
      {
        ...current.data,
        status,
        attempt: { number: Number((current.data.attempt as JsonObject).number), status },
        progress: { done, failed: failed.length, total: finished.length },
        error: failed.length > 0 ? (failed[0]!.data.error ?? null) : null,
        finished_at: formatTimestamp(now),
        lease_until: null
      },
      { expectedRevision: current.revision }
    )
    yield* uow.transaction(emitEvent(`operation.${status === "succeeded" ? "completed" : "failed"}`, operationView(saved)).pipe(Effect.provideService(Caller, caller)))
  })

/** One pass of a worker: claim and run what is due. Answers how many operations it ran. */
export const runDueOperations = Effect.fn("Operations.runDue")(function* (batch = 10) {
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const queued = yield* records.scan(OPERATION_TYPE, [{ field: "status", op: "eq", value: "queued" }], batch)
  const stalled = yield* records.scan(
    OPERATION_TYPE,
    [
      { field: "status", op: "eq", value: "running" },
      { field: "lease_until", op: "lt", value: now }
    ],
    batch
  )
  let ran = 0
  for (const candidate of [...queued, ...stalled]) {
    const claimed = yield* claim(candidate, now)
    if (Option.isNone(claimed)) continue
    yield* runOperation(claimed.value)
    ran++
  }
  return ran
})

/** A worker loop for a server's lifetime: runs due operations every `interval`. */
export const operationsWorker = (interval = "250 millis" as const) =>
  runDueOperations().pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("operations worker pass failed", cause)),
    Effect.repeat(Schedule.spaced(interval))
  )
