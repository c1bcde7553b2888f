/**
 * Asynchronous operations (§2.3 `operation`, §4.3, open-points "Asynchronous operations"):
 * work a request starts and a worker finishes. The request records the operation and its
 * items in its own unit of work and answers 202; workers, in any process on the same store,
 * claim queued operations under a lease and run their items, each in a unit of work of its
 * own, through the handler registered for the operation's type.
 */
import { Clock, Context, Effect, FiberSet, Layer, Option, Random, Stream } from "effect"
import type { CallerInfo } from "../access/context.js"
import { Caller, Ids } from "../access/context.js"
import { type ApiError, apiError, writeUnavailable } from "../errors/errors.js"
import { renderMessage } from "../errors/messages.js"
import { emitEvent } from "../events/events.js"
import type { Crypto } from "../ports/crypto.js"
import type { FileStorage, StorageUnavailable } from "../ports/file-storage.js"
import type { TabularReader } from "../ports/tabular-reader.js"
import {
  type AccessPath,
  housekeepingPath,
  listPath,
  type Json,
  type JsonObject,
  Records,
  type StoredRecord,
  type Tenant,
  UnitOfWork
} from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import { DAY, formatTimestamp, SECOND } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { recordChange } from "../trail/audit.js"
import { backgroundBudget, yieldToEventLoop } from "../workers/background.js"

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
export type ItemServices = Caller | Records | Ids | Crypto | FileStorage | UnitOfWork

/** Runs one item of an operation type; its writes join the item's unit of work. */
export interface OperationKind {
  readonly runItem: (payload: JsonObject) => Effect.Effect<Json, ApiError, ItemServices>
  /**
   * A stored result as the caller reading the items may see it (e.g. a user's personal data
   * hidden without `users.read_personal`): the result was made for the operation's starter,
   * and anyone holding `operations.read` lists it. Default: as stored.
   */
  readonly viewResult?: (result: Json) => Effect.Effect<Json, ApiError, Caller | Records>
  /**
   * At the end of a run, or at the cancellation of a queued operation, in the unit of work that
   * records it, as the starter: e.g. an export reads `failed` (bulk/exports.ts).
   */
  readonly onFinished?: (operation: JsonObject) => Effect.Effect<void, ApiError<"audit_unavailable">, ItemServices>
  /**
   * Work of an item done before its unit of work, outside any transaction: its answer is the
   * payload `runItem` then gets, in the item's unit of work, to record it (an export's file:
   * long reads and storage writes that must neither hold a serializable transaction open nor
   * be redone each time it loses a race and runs again). `discardPrepared` undoes it when the
   * item's unit of work fails. The items of such a kind run one per unit of work.
   */
  readonly prepareItem?: (payload: JsonObject) => Effect.Effect<JsonObject, ApiError, ItemServices>
  readonly discardPrepared?: (prepared: JsonObject) => Effect.Effect<void, never, ItemServices>
  /**
   * For an operation started with an `enumeration` (`startOperation`): its items, too many for
   * the request that starts it (an import's rows, read from its file), as a stream the worker
   * that claims it reads (from the `enumeration` given) before running them. `skip` items were
   * recorded already (a worker that took over goes on where the last one stopped); the stream
   * leaves them out. The worker records the rest page by page, each page with the lease, so an
   * item is recorded once.
   */
  readonly enumerate?: (
    enumeration: JsonObject,
    skip: number
  ) => Stream.Stream<OperationItemInput, ApiError | StorageUnavailable, EnumerationServices>
}

export interface OperationItemInput {
  readonly key: string
  readonly payload: JsonObject
}

/** What enumerating an operation's items may use: an item's services, and the files it reads. */
export type EnumerationServices = ItemServices | FileStorage | TabularReader

/** The handlers of every operation type, by type. */
export class OperationKinds extends Context.Tag("@syllabus/core/OperationKinds")<
  OperationKinds,
  ReadonlyMap<string, OperationKind>
>() {
  static readonly layer = (kinds: Readonly<Record<string, OperationKind>>) => Layer.succeed(OperationKinds, new Map(Object.entries(kinds)))
}

export const operationView = (record: StoredRecord): JsonObject => inOrder(record.data, operationFields)

/**
 * Retention (§8.3): an operation and its items are kept 30 days from creation (its
 * `expires_at`), whatever its status; afterwards it reads as missing, and the housekeeping
 * (`trail/retention.ts`) removes both from the store.
 */
const retainedSince = (now: number): string => formatTimestamp(now - OPERATION_RETENTION_MS)
const isRetained = (record: StoredRecord, now: number): boolean => String(record.data.created_at) >= retainedSince(now)
export const operationItemView = (record: StoredRecord): JsonObject => inOrder(record.data, operationItemFields)


/**
 * Record an operation and its items, queued; call it inside the unit of work of the request
 * that starts it. Answers the operation's representation (for the 202).
 */
export const startOperation = Effect.fn("Operations.start")(function* (
  type: string,
  items: ReadonlyArray<{ readonly key: string; readonly payload: JsonObject }>,
  /**
   * `enumeration`: what the kind's `enumerate` reads (kept internal); the worker that claims the
   * operation records its items first, through it (none are given here).
   */
  options?: { readonly enumeration?: JsonObject }
) {
  yield* checkBacklog()
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
    started_by: {
      credential_id: caller.credential.id,
      administrator_id: caller.human?.adminId ?? null,
      request_id: caller.requestId,
      // Items run with the starter's permissions (e.g. a move checks the destination).
      grant: [...caller.grant.entries()].map(([capability, held]) => [capability, held === "all" ? "all" : [...held]])
    },
    lease_owner: null,
    lease_until: null,
    // Internal: what an enumerated operation's items come from, and false until the worker has recorded every one.
    ...(options?.enumeration === undefined ? {} : { enumeration: options.enumeration, enumerated: false })
  } satisfies JsonObject
  const record = yield* records.insert(caller.tenant, OPERATION_TYPE, id, data).pipe(Effect.mapError(writeUnavailable))
  yield* recordItems(id, at, items)
  return operationView(record)
})

/** The queued items of an operation, in one store write. */
const recordItems = (operationId: string, at: string, items: ReadonlyArray<{ readonly key: string; readonly payload: JsonObject }>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const ids = yield* Ids
    const itemRows = yield* Effect.forEach(items, (item) =>
      Effect.map(ids.next("operation_item"), (itemId) => ({
        id: itemId,
        data: {
          object: "operation_item",
          id: itemId,
          operation_id: operationId,
          key: item.key,
          status: "queued",
          error: null,
          result: null,
          created_at: at,
          finished_at: null,
          payload: item.payload
        }
      })))
    yield* records.insertMany(caller.tenant, OPERATION_ITEM_TYPE, itemRows).pipe(Effect.mapError(writeUnavailable))
  })

/**
 * More items of an operation being started, in the unit of work that started it: a large set
 * enumerated through an index is recorded page by page (`startOperation` with the first page,
 * then this per page), never held whole. Its `progress.total` grows with them.
 */
export const addOperationItems = Effect.fn("Operations.addItems")(function* (
  operationId: string,
  items: ReadonlyArray<{ readonly key: string; readonly payload: JsonObject }>
) {
  const caller = yield* Caller
  const records = yield* Records
  const current = yield* records.get(caller.tenant, OPERATION_TYPE, operationId).pipe(Effect.mapError(writeUnavailable))
  if (!current || current.data.status !== "queued") return yield* Effect.fail(apiError("not_found"))
  yield* recordItems(operationId, String(current.data.created_at), items)
  const progress = current.data.progress as { done: number; failed: number; total: number }
  const saved = yield* records
    .update(caller.tenant, OPERATION_TYPE, operationId, { ...current.data, progress: { ...progress, total: progress.total + items.length } }, {
      expectedRevision: current.revision
    })
    .pipe(Effect.mapError(writeUnavailable))
  return operationView(saved)
})

/** The caller's operation, while it is retained (else 404, as if it never was). */
const loadOperation = (id: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const record = yield* records.get(caller.tenant, OPERATION_TYPE, id).pipe(Effect.mapError(writeUnavailable))
    if (!record || !isRetained(record, now)) return yield* Effect.fail(apiError("not_found"))
    return record
  })

export const getOperation = Effect.fn("Operations.get")(function* (id: string) {
  return operationView(yield* loadOperation(id))
})

export const listOperations = Effect.fn("Operations.list")(function* (query: {
  readonly limit: number
  readonly cursor: string | undefined
  /** `created_at` oldest first, `-created_at` (the default) newest first (§4.2). */
  readonly sort?: string | undefined
  readonly status: string | undefined
  readonly type: string | undefined
}) {
  const caller = yield* Caller
  const now = yield* Clock.currentTimeMillis
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: OPERATION_TYPE,
    where: [
      { field: "created_at", op: "gte", value: retainedSince(now) },
      ...(query.status ? [{ field: "status", op: "eq" as const, value: query.status }] : []),
      ...(query.type ? [{ field: "type", op: "eq" as const, value: query.type }] : [])
    ],
    sort: { field: "id", kind: "text", direction: query.sort === "created_at" ? "asc" : "desc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `operations:${query.status ?? ""}:${query.type ?? ""}`
  }).pipe(Effect.catchTag("StoreUnavailable", storeFailureEffect))
  return { data: items.map(operationView), page }
})

const storeFailureEffect = (cause: unknown) => Effect.fail(writeUnavailable(cause))

export const listOperationItems = Effect.fn("Operations.listItems")(function* (
  id: string,
  query: { readonly limit: number; readonly cursor: string | undefined }
) {
  const operation = yield* loadOperation(id)
  const caller = yield* Caller
  const viewResult = (yield* OperationKinds).get(String(operation.data.type))?.viewResult
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: OPERATION_ITEM_TYPE,
    where: [{ field: "operation_id", op: "eq", value: id }],
    sort: { field: "id", kind: "text", direction: "asc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `operation_items:${id}`
  }).pipe(Effect.catchTag("StoreUnavailable", storeFailureEffect))
  const data = yield* Effect.forEach(items, (item) => {
    const view = operationItemView(item)
    return viewResult === undefined || view.result === null || view.result === undefined
      ? Effect.succeed(view)
      : Effect.map(viewResult(view.result), (result): JsonObject => ({ ...view, result }))
  })
  return { data, page }
})

// ---------------------------------------------------------------------------------------
// The worker

const workerCaller = (operation: StoredRecord): CallerInfo => {
  const startedBy = (operation.data.started_by ?? {}) as {
    credential_id?: string
    administrator_id?: string | null
    request_id?: string
    grant?: ReadonlyArray<readonly [string, "all" | ReadonlyArray<string>]>
  }
  return {
    tenant: operation.tenant as Tenant,
    requestId: startedBy.request_id ?? operation.id,
    credential: { id: startedBy.credential_id ?? "unknown" },
    grant: new Map((startedBy.grant ?? []).map(([capability, held]) => [capability, held === "all" ? "all" : new Set(held)])),
    human: startedBy.administrator_id ? { adminId: startedBy.administrator_id, expiresAt: 0, eligibleSince: "" } : null
  }
}

/**
 * Claim one operation: queued, or running under a lease that ran out (its worker died). The
 * claim is a conditional update on the revision read, so two workers never both win.
 */
const claim = (record: StoredRecord, now: number, owner: string) =>
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
          // Internal: the runs since it was started or last resumed (the retry budget, `MAX_OPERATION_RUNS`).
          runs: runsOf(record) + 1,
          started_at: record.data.started_at ?? formatTimestamp(now),
          lease_owner: owner,
          lease_until: now + OPERATION_LEASE_MS
        },
        { expectedRevision: record.revision }
      )
      .pipe(
        Effect.map(Option.some),
        Effect.catchTag("RevisionConflict", () => Effect.succeedNone)
      )
  )

/**
 * Runs of an operation at most (issue 23), counted from its start or its last resumption (a
 * resumption is the client's and starts the count over): a run that fails (its worker died, an
 * outage, a file that never ends) is taken over when its lease has run out and `retryDelay`
 * more has passed; the run after the last fails the operation with `internal_error`, reason
 * `run_attempts_exhausted`.
 */
export const MAX_OPERATION_RUNS = 5
/** The runs of an operation since it was started or last resumed (an operation recorded before the budget: its attempts). */
const runsOf = (record: StoredRecord): number =>
  Number(record.data.runs ?? (record.data.attempt as JsonObject | null)?.number ?? 0)
/** How long after its lease ran out a stalled run is taken over: 15 s, doubling per run, at most 10 min. */
export const retryDelay = (attempt: number): number => Math.min(15 * SECOND * 2 ** Math.max(0, attempt - 1), 600 * SECOND)

/** Errors worth another attempt: the outages, not the refusals (a resumption re-runs only these). */
export const isRecoverable = (code: string): boolean =>
  ["audit_unavailable", "storage_unavailable", "internal_error", "credential_state_unverifiable", "operation_ownership_lost", "state_conflict"].includes(code)

const itemFailure = (error: unknown, resourceId: string | null) =>
  typeof error === "object" && error !== null && (error as { _tag?: string })._tag === "ApiError"
    ? {
        code: (error as ApiError).code,
        message: renderMessage("en-US", (error as ApiError).code),
        field: (error as ApiError).details[0]?.field ?? null,
        reason: (error as ApiError).reason ?? (error as ApiError).details[0]?.reason ?? null,
        resource_id: resourceId,
        // Every problem itemized (an import's row invalid in several fields), when there are any.
        ...((error as ApiError).details.length > 0
          ? {
              details: (error as ApiError).details.map((d) => ({
                field: d.field ?? d.parameter ?? null,
                code: d.code,
                reason: d.reason ?? null
              }))
            }
          : {})
      }
    : { code: "internal_error", message: renderMessage("en-US", "internal_error"), field: null, reason: null, resource_id: resourceId }

/** Every item of an operation, read in pages of 1,000 (an operation recorded page by page may hold more). */
const itemsOf = (operation: StoredRecord) =>
  Effect.gen(function* () {
    const records = yield* Records
    const out: Array<StoredRecord> = []
    for (;;) {
      const last = out.at(-1)
      const page = yield* records.list(operation.tenant, OPERATION_ITEM_TYPE, {
        where: [{ field: "operation_id", op: "eq", value: operation.id }],
        sort: { field: "id", kind: "text", direction: "asc" },
        after: last ? { value: last.id, id: last.id } : undefined,
        limit: 1000
      })
      out.push(...page)
      if (page.length < 1000) return out
    }
  })

/**
 * Inside a unit of work of items: the operation must still be ours (else the items' writes
 * roll back with `operation_ownership_lost`); renews the lease and counts the items.
 */
const holdLease = (operationId: string, tenant: Tenant, owner: string, count: "done" | "failed" | "unrun", by = 1) =>
  Effect.gen(function* () {
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const current = yield* records.get(tenant, OPERATION_TYPE, operationId)
    if (!current || current.data.lease_owner !== owner || current.data.status !== "running") {
      return yield* Effect.fail(apiError("operation_ownership_lost"))
    }
    const progress = current.data.progress as { done: number; failed: number; total: number }
    // An item that could not run is a failed one too; it is also counted apart (`UNRUN_ITEMS`).
    const counted = count === "unrun" ? "failed" : count
    const unrun = Number(current.data[UNRUN_ITEMS] ?? 0) + (count === "unrun" ? by : 0)
    yield* records.update(
      tenant,
      OPERATION_TYPE,
      operationId,
      { ...current.data, progress: { ...progress, [counted]: progress[counted] + by }, [UNRUN_ITEMS]: unrun, lease_until: now + OPERATION_LEASE_MS },
      { expectedRevision: current.revision }
    )
    return current
  })

/**
 * Items run in chunks of this many per unit of work: one transaction, one lease renewal and
 * one progress update for the chunk, while each item keeps its own writes, events, audit
 * entries and outcome. A chunk in which an item fails is rolled back whole and run again one
 * item at a time, so that the failure is that item's alone.
 */
export const OPERATION_CHUNK_ITEMS = 25

/**
 * Run the queued items of a claimed operation, then finish it. Stops when canceled or when it
 * lost the lease. `turn` runs between units of work, each committed: the worker's time slice
 * (`BackgroundBudget.runInTurns`), which may give the slot to another account and wait for one.
 */
const runOperation = (operation: StoredRecord, owner: string, turn: Effect.Effect<void> = Effect.void) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const kinds = yield* OperationKinds
    const kind = kinds.get(String(operation.data.type))
    const caller = workerCaller(operation)
    if (runsOf(operation) > MAX_OPERATION_RUNS) {
      const exhausted = apiError("internal_error", { reason: "run_attempts_exhausted", params: { max: MAX_OPERATION_RUNS } })
      return yield* finishOperation(operation, owner, caller, exhausted)
    }
    if (kind?.enumerate !== undefined && operation.data.enumerated === false) {
      const enumerated = yield* enumerateItems(operation, owner, caller, kind.enumerate, turn)
      if (enumerated === false) return // another worker took over
      if (enumerated !== true) return yield* finishOperation(operation, owner, caller, enumerated)
    }

    const payloadOf = (item: StoredRecord) => (item.data.payload ?? {}) as JsonObject

    /** An item's write and its `succeeded` record, inside the unit of work of its chunk. */
    const runItem = (item: StoredRecord, payload: JsonObject) =>
      Effect.gen(function* () {
        if (!kind) return yield* Effect.fail(apiError("operation_type_unknown"))
        const result = yield* kind.runItem(payload)
        const now = yield* Clock.currentTimeMillis
        yield* records.update(operation.tenant, OPERATION_ITEM_TYPE, item.id, {
          ...item.data,
          status: "succeeded",
          result,
          error: null,
          finished_at: formatTimestamp(now)
        })
      })

    /** The items of `chunk`, all or nothing, under the lease (`prepared`: the payload of a chunk of one prepared item). */
    const runChunk = (chunk: ReadonlyArray<StoredRecord>, prepared?: JsonObject) =>
      uow.transaction(
        Effect.gen(function* () {
          for (const item of chunk) yield* runItem(item, prepared ?? payloadOf(item))
          yield* holdLease(operation.id, operation.tenant, owner, "done", chunk.length)
        }).pipe(Effect.provideService(Caller, caller))
      )

    /** One item in its unit of work; first, outside it, its kind's preparation (undone if the unit of work fails). */
    const runOne = (item: StoredRecord) => {
      const prepare = kind?.prepareItem
      if (prepare === undefined) return runChunk([item])
      const discard = kind?.discardPrepared ?? (() => Effect.void)
      return Effect.flatMap(prepare(payloadOf(item)).pipe(Effect.provideService(Caller, caller)), (prepared) =>
        runChunk([item], prepared).pipe(Effect.tapError(() => discard(prepared).pipe(Effect.provideService(Caller, caller)))))
    }

    /** One item alone; its failure recorded as failed, under the lease, in a unit of work of its own. `false`: stop. */
    const runAlone = (item: StoredRecord) =>
      Effect.gen(function* () {
        const ran = yield* Effect.either(runOne(item))
        if (ran._tag === "Right") return true
        const payload = payloadOf(item)
        const failure = itemFailure(ran.left, typeof payload.id === "string" ? payload.id : null)
        if (failure.code === "operation_ownership_lost") return false
        const recorded = yield* Effect.either(
          uow.transaction(
            Effect.gen(function* () {
              yield* holdLease(operation.id, operation.tenant, owner, isOutage(failure.code) ? "unrun" : "failed")
              const now = yield* Clock.currentTimeMillis
              yield* records.update(operation.tenant, OPERATION_ITEM_TYPE, item.id, {
                ...item.data,
                status: "failed",
                error: failure,
                finished_at: formatTimestamp(now)
              })
            })
          )
        )
        return recorded._tag === "Right"
      })

    // The queued items a page at a time, in ID order (an enumerated operation may hold millions).
    let after: string | undefined
    pages: for (;;) {
      const queued = yield* records.list(operation.tenant, OPERATION_ITEM_TYPE, {
        where: [
          { field: "operation_id", op: "eq", value: operation.id },
          { field: "status", op: "eq", value: "queued" }
        ],
        sort: { field: "id", kind: "text", direction: "asc" },
        after: after === undefined ? undefined : { value: after, id: after },
        limit: ITEMS_PAGE
      })
      for (let start = 0; start < queued.length; start += OPERATION_CHUNK_ITEMS) {
        // A turn of the event loop between chunks: requests are read between units of work; and
        // the slot's time slice: past it, another account's operation may go first.
        if (start > 0 || after !== undefined) yield* Effect.zipRight(yieldToEventLoop, turn)
        const current = yield* records.get(operation.tenant, OPERATION_TYPE, operation.id)
        if (!current || current.data.lease_owner !== owner) return // another worker took over
        if (current.data.cancellation_requested === true) break pages
        const chunk = queued.slice(start, start + OPERATION_CHUNK_ITEMS)
        const ran = chunk.length > 1 && kind?.prepareItem === undefined ? yield* Effect.either(runChunk(chunk)) : undefined
        if (ran?._tag === "Right") continue
        if (ran !== undefined && itemFailure(ran.left, null).code === "operation_ownership_lost") return
        for (const item of chunk) {
          if (!(yield* runAlone(item))) return
        }
      }
      if (queued.length < ITEMS_PAGE) break
      after = queued.at(-1)!.id
    }
    yield* finishOperation(operation, owner, caller)
  })

/** Queued items read per page while an operation runs. */
const ITEMS_PAGE = 1000
/** Enumerated items recorded per unit of work (`OperationKind.enumerate`). */
export const ENUMERATION_PAGE = 500

/**
 * Record the items of an enumerated operation from its kind's stream, a page per unit of work
 * holding the lease (the page and the grown `progress.total` commit together, so the count
 * recorded is where a worker that takes over resumes). Stops at a cancellation. `false`: the
 * lease was lost; an `ApiError`: the stream refused the source (not an outage), the error the
 * operation fails with.
 */
const enumerateItems = (
  operation: StoredRecord,
  owner: string,
  caller: CallerInfo,
  enumerate: NonNullable<OperationKind["enumerate"]>,
  turn: Effect.Effect<void>
) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const skip = Number((operation.data.progress as { total?: number } | null)?.total ?? 0)
    let outcome: "held" | "lost" | "canceled" = "held"
    /** The operation if this worker still holds it; else records why not. */
    const held = Effect.gen(function* () {
      const current = yield* records.get(operation.tenant, OPERATION_TYPE, operation.id)
      if (!current || current.data.lease_owner !== owner || current.data.status !== "running") outcome = "lost"
      else if (current.data.cancellation_requested === true) outcome = "canceled"
      return outcome === "held" ? current : undefined
    })
    const enumerated = yield* enumerate((operation.data.enumeration ?? {}) as JsonObject, skip).pipe(
      Stream.grouped(ENUMERATION_PAGE),
      Stream.runForEachWhile((page) =>
        uow.transaction(
          Effect.gen(function* () {
            const current = yield* held
            if (!current) return false
            const items = [...page]
            yield* recordItems(operation.id, String(current.data.created_at), items)
            const progress = current.data.progress as { done: number; failed: number; total: number }
            const now = yield* Clock.currentTimeMillis
            yield* records.update(
              operation.tenant,
              OPERATION_TYPE,
              operation.id,
              { ...current.data, progress: { ...progress, total: progress.total + items.length }, lease_until: now + OPERATION_LEASE_MS },
              { expectedRevision: current.revision }
            )
            return true
          })
        ).pipe(Effect.zipLeft(yieldToEventLoop), Effect.zipLeft(turn))
      ),
      Effect.provideService(Caller, caller),
      Effect.either
    )
    if (enumerated._tag === "Left") {
      const error = enumerated.left
      // A refusal of the source (a file over a cap): the operation fails with it, not run again. An outage: the run fails.
      if (error._tag === "ApiError" && !isRecoverable(error.code)) return error
      return yield* Effect.fail(error)
    }
    if (outcome !== "held") return outcome === "canceled"
    return yield* uow.transaction(
      Effect.gen(function* () {
        const current = yield* held
        if (!current) return outcome === "canceled"
        yield* records.update(operation.tenant, OPERATION_TYPE, operation.id, { ...current.data, enumerated: true }, { expectedRevision: current.revision })
        return true
      })
    )
  })

/** An operation's first failed item, by ID (an index read), if any. */
export const firstFailedItem = (tenant: Tenant, operationId: string) =>
  Effect.map(
    Effect.flatMap(Records, (records) =>
      records.list(tenant, OPERATION_ITEM_TYPE, {
        where: [{ field: "operation_id", op: "eq", value: operationId }, { field: "status", op: "eq", value: "failed" }],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: 1
      })),
    (items): StoredRecord | undefined => items[0]
  )

/** An operation's items counted by status, and its first failed item: read through indexes, never every item. */
const tallyItems = (operation: StoredRecord) =>
  Effect.gen(function* () {
    const records = yield* Records
    const ofOperation = { field: "operation_id", op: "eq", value: operation.id } as const
    const counts = yield* records.count(operation.tenant, OPERATION_ITEM_TYPE, [ofOperation], ["status"])
    const counted = (status: string) => counts.filter((c) => c.key[0] === status).reduce((n, c) => n + c.count, 0)
    const firstFailed = yield* firstFailedItem(operation.tenant, operation.id)
    return {
      progress: { done: counted("succeeded"), failed: counted("failed"), total: counts.reduce((n, c) => n + c.count, 0) },
      firstFailed
    }
  })

/**
 * Internal field of an operation: its items that failed because something was down (an outage
 * a resumption runs again), not because of what they asked. Counted as they fail, with the
 * lease; a resumption queues them again and starts it over.
 */
const UNRUN_ITEMS = "unrun_items"

/** An item's error that says it could not run (something was down), not that what it asked was refused: a state conflict is the latter. */
const isOutage = (code: string) => isRecoverable(code) && code !== "state_conflict"

/**
 * Items a cancellation marks per unit of work: an operation's million items are canceled in
 * many short transactions, never one over all of them (on PostgreSQL, one SERIALIZABLE
 * transaction over every item filled the cluster's predicate-lock table: issue 23).
 */
export const CANCEL_PAGE = 200

/**
 * Mark the queued items of an operation canceled, a page per unit of work (each page leaves
 * `queued`, so the next read starts over), while `stillOurs` holds (read in each unit of work).
 */
const cancelQueuedItems = (operation: StoredRecord, stillOurs: (current: StoredRecord | undefined) => boolean) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    for (;;) {
      const more = yield* uow.transaction(
        Effect.gen(function* () {
          if (!stillOurs(yield* records.get(operation.tenant, OPERATION_TYPE, operation.id))) return false
          const page = yield* records.list(operation.tenant, OPERATION_ITEM_TYPE, {
            where: [
              { field: "operation_id", op: "eq", value: operation.id },
              { field: "status", op: "eq", value: "queued" }
            ],
            sort: { field: "id", kind: "text", direction: "asc" },
            limit: CANCEL_PAGE
          })
          const at = formatTimestamp(yield* Clock.currentTimeMillis)
          yield* Effect.forEach(page, (i) => records.update(operation.tenant, OPERATION_ITEM_TYPE, i.id, { ...i.data, status: "canceled", finished_at: at }))
          return page.length === CANCEL_PAGE
        })
      )
      if (!more) return
      yield* yieldToEventLoop
    }
  })

/**
 * The end of a run: succeeded, failed (its error: `refusal`, the first failed item, or
 * `items_failed`), or canceled. A canceled or refused operation's queued items are canceled
 * first, a page at a time.
 *
 * One reading for every operation type (docs/architecture.md, "Asynchronous operations"): an operation that ran every item
 * `succeeded`, even when some items failed on what they asked (a row of an import without an
 * email): `progress.failed` counts them and each item carries its error, as a bulk job's
 * "complete" does (Salesforce's Bulk API). It `failed` when it could not run: the source was
 * refused (`refusal`), or items failed because something was down (an outage), which a
 * resumption (`POST /operations/{id}/resumptions`) runs again.
 */
const finishOperation = (operation: StoredRecord, owner: string, caller: CallerInfo, refusal?: ApiError) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const ours = (current: StoredRecord | undefined) => current !== undefined && current.data.lease_owner === owner
    const before = yield* records.get(operation.tenant, OPERATION_TYPE, operation.id)
    if (refusal !== undefined || before?.data.cancellation_requested === true) yield* cancelQueuedItems(operation, ours)
    yield* uow.transaction(
      Effect.gen(function* () {
        const current = yield* records.get(operation.tenant, OPERATION_TYPE, operation.id)
        if (!current || !ours(current)) return
        const canceled = refusal === undefined && current.data.cancellation_requested === true
        const now = yield* Clock.currentTimeMillis
        // A cancellation asked for after the pages above: its last items (fewer than a page, the run had stopped).
        if (canceled) yield* cancelQueuedItems(operation, ours)
        const { progress, firstFailed } = yield* tallyItems(operation)
        const unrun = Number(current.data[UNRUN_ITEMS] ?? 0) > 0
        const status = canceled ? "canceled" : refusal !== undefined || unrun ? "failed" : "succeeded"
        const firstError = firstFailed?.data.error as JsonObject | undefined
        const saved = yield* records.update(
          operation.tenant,
          OPERATION_TYPE,
          operation.id,
          {
            ...current.data,
            status,
            attempt: { number: Number((current.data.attempt as JsonObject).number), status },
            progress,
            error:
              status !== "failed"
                ? null
                : refusal !== undefined
                  ? itemFailure(refusal, null)
                  : progress.failed === 1 && firstError
                  ? firstError
                  : { code: "items_failed", message: `${progress.failed} items failed.`, field: null, reason: firstError ? String(firstError.code) : null, resource_id: null },
            finished_at: formatTimestamp(now),
            lease_owner: null,
            lease_until: null
          },
          { expectedRevision: current.revision }
        )
        const verb = status === "succeeded" ? "completed" : status
        yield* emitEvent(`operation.${verb}`, operationView(saved)).pipe(Effect.provideService(Caller, caller))
        const onFinished = (yield* OperationKinds).get(String(operation.data.type))?.onFinished
        if (onFinished) yield* onFinished(operationView(saved)).pipe(Effect.provideService(Caller, caller), Effect.orDie)
      })
    )
  })

/** The cross-tenant reads of `runDueOperations`, each an index of the store. */
export const operationsAccessPaths: ReadonlyArray<AccessPath> = [
  housekeepingPath(OPERATION_TYPE, ["status"], [{ field: "id", kind: "text" }]),
  housekeepingPath(OPERATION_TYPE, ["status"], [{ field: "lease_until", kind: "number" }]),
  // `GET /operations` filtered by status or type, and an operation's items, newest or oldest first.
  listPath(OPERATION_TYPE, ["status"], [{ field: "id", kind: "text" }]),
  listPath(OPERATION_TYPE, ["type"], [{ field: "id", kind: "text" }]),
  listPath(OPERATION_ITEM_TYPE, ["operation_id"], [{ field: "id", kind: "text" }]),
  // The worker's pages of queued items, the first failed one, the count by status.
  listPath(OPERATION_ITEM_TYPE, ["operation_id", "status"], [{ field: "id", kind: "text" }])
]

/**
 * What is due across tenants, at most `limit` of each: queued operations, and running ones whose
 * lease ran out at least `retryDelay` of their attempt ago.
 */
const dueOperations = (now: number, limit: number) =>
  Effect.flatMap(Records, (records) =>
    Effect.map(Effect.all({
      queued: records.scan(OPERATION_TYPE, [{ field: "status", op: "eq", value: "queued" }], limit),
      stalled: records.scan(
        OPERATION_TYPE,
        [
          { field: "status", op: "eq", value: "running" },
          { field: "lease_until", op: "lt", value: now }
        ],
        limit
      )
    }), ({ queued, stalled }) => ({
      queued,
      stalled: stalled.filter((r) => Number(r.data.lease_until) + retryDelay(runsOf(r)) < now)
    })))

/** One pass of a worker: claim and run what is due. Answers how many operations it ran. */
export const runDueOperations = Effect.fn("Operations.runDue")(function* (batch = 10) {
  const now = yield* Clock.currentTimeMillis
  const { queued, stalled } = yield* dueOperations(now, batch)
  let ran = 0
  for (const candidate of [...queued, ...stalled]) {
    const owner = `worker_${yield* Random.nextIntBetween(0, 2 ** 31)}_${yield* Random.nextIntBetween(0, 2 ** 31)}`
    const claimed = yield* claim(candidate, now, owner)
    if (Option.isNone(claimed)) continue
    yield* runOperation(claimed.value, owner)
    ran++
  }
  return ran
})

/** Operations read per pass, queued and stalled each: the window accounts are served in turn from. */
const WORKER_WINDOW = 100

/**
 * A worker loop for a server's lifetime. Every `interval` it reads what is due (queued, or
 * running under a lease that ran out) and puts each in line for a slot of the process's
 * background budget (`BackgroundBudget.runInTurns`), the accounts in turn (the first operation
 * of each, then the second…): the budget serves the longest-unserved account first, gives an
 * account at most half of the operations' slots while another waits, and takes a running
 * operation's slot back between chunks once it has run its time slice and someone waits. An
 * operation is claimed when it gets its slot; each run is a fiber of its own, so a long
 * operation holds up neither the loop nor (beyond one time slice) another account's operation.
 * While a run waits in line for its next turn it keeps its lease unrenewed: another process
 * with a free slot may take it over once the lease runs out (this one then stops).
 */
export const operationsWorker = (interval = "250 millis" as const) =>
  Effect.scoped(
    Effect.gen(function* () {
      const records = yield* Records
      const budget = yield* backgroundBudget
      const runs = yield* FiberSet.make<void, never>()
      /** Operations this process runs or has in line: not put in line again meanwhile. */
      const running = new Set<string>()
      const pass = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const { queued, stalled } = yield* dueOperations(now, WORKER_WINDOW)
        // The accounts in turn: the first candidate of each, then the second of each, …
        const byAccount = new Map<string, Array<StoredRecord>>()
        for (const candidate of [...queued, ...stalled]) {
          if (running.has(candidate.id)) continue
          const list = byAccount.get(candidate.tenant.accountId) ?? []
          list.push(candidate)
          byAccount.set(candidate.tenant.accountId, list)
        }
        const lists = [...byAccount.values()]
        const inTurn: Array<StoredRecord> = []
        for (let round = 0; lists.some((list) => round < list.length); round++) {
          for (const list of lists) if (round < list.length) inTurn.push(list[round]!)
        }
        for (const candidate of inTurn) {
          running.add(candidate.id)
          const run = budget.runInTurns("operation", candidate.tenant.accountId, (turn) =>
            Effect.gen(function* () {
              const owner = `worker_${yield* Random.nextIntBetween(0, 2 ** 31)}_${yield* Random.nextIntBetween(0, 2 ** 31)}`
              // Claimed on the revision read by the pass: changed meanwhile (taken by another worker, canceled), it is left.
              const claimed = yield* claim(candidate, yield* Clock.currentTimeMillis, owner)
              if (Option.isSome(claimed)) yield* runOperation(claimed.value, owner, turn)
            }))
          yield* FiberSet.run(
            runs,
            run.pipe(
              Effect.catchAllCause((cause) => Effect.logWarning("operation run failed", cause)),
              Effect.ensuring(Effect.sync(() => running.delete(candidate.id)))
            )
          )
        }
        yield* yieldToEventLoop
      })
      for (;;) {
        yield* pass.pipe(Effect.catchAllCause((cause) => Effect.logWarning("operations worker pass failed", cause)))
        yield* Effect.sleep(interval)
      }
    })
  )

// ---------------------------------------------------------------------------------------
// Cancel and resume


const finishedStatuses = ["succeeded", "failed", "canceled"]

/** A client's change of an operation, unless a worker changed it meanwhile (409 `state_conflict`). */
const saveOperation = (record: StoredRecord, data: JsonObject) =>
  Effect.flatMap(Records, (records) => records.update(record.tenant, OPERATION_TYPE, record.id, data, { expectedRevision: record.revision })).pipe(
    Effect.catchTag("RevisionConflict", () => Effect.fail(apiError("state_conflict", { reason: "operation_changed" }))),
    Effect.mapError((e) => (e._tag === "ApiError" ? e : writeUnavailable(e)))
  )

/**
 * Ask an operation to stop. A queued one of at most `CANCEL_PAGE` items is canceled at once (its
 * items in the request's unit of work); a running one, or a queued one with more items, stops
 * before its next item: its worker sees the request and cancels the queued items a page per unit
 * of work. A finished one: 422 `operation_not_cancelable`.
 */
export const cancelOperation = Effect.fn("Operations.cancel")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const record = yield* loadOperation(id)
  if (finishedStatuses.includes(String(record.data.status))) return yield* Effect.fail(apiError("operation_not_cancelable"))
  const items =
    record.data.status === "queued"
      ? yield* records
          .list(caller.tenant, OPERATION_ITEM_TYPE, {
            where: [{ field: "operation_id", op: "eq", value: record.id }],
            sort: { field: "id", kind: "text", direction: "asc" },
            limit: CANCEL_PAGE + 1
          })
          .pipe(Effect.mapError(writeUnavailable))
      : undefined
  const queued = items !== undefined && items.length <= CANCEL_PAGE
  if (queued) {
    yield* Effect.forEach(items, (i) =>
      records.update(caller.tenant, OPERATION_ITEM_TYPE, i.id, { ...i.data, status: "canceled", finished_at: formatTimestamp(now) })
    ).pipe(Effect.mapError(writeUnavailable))
  }
  const saved = yield* saveOperation(record, {
    ...record.data,
    cancellation_requested: true,
    ...(queued
      ? { status: "canceled", attempt: { ...(record.data.attempt as JsonObject), status: "canceled" }, finished_at: formatTimestamp(now) }
      : {})
  })
  yield* recordChange("operation.cancellation_requested", { object: "operation", id })
  if (queued) yield* emitEvent("operation.canceled", operationView(saved))
  const onFinished = (yield* OperationKinds).get(String(record.data.type))?.onFinished
  if (queued && onFinished) yield* onFinished(operationView(saved)).pipe(Effect.provideService(Caller, workerCaller(saved)))
  return operationView(saved)
})

/**
 * Re-run the failed items whose error is an outage; only for a failed operation that has some.
 * The refusal is 422 `operation_not_resumable` (§3's table); its reason names which condition
 * failed in the words of §7: `no_failed_run` (the operation's run did not fail: it is queued,
 * running, succeeded or canceled) or `no_recoverable_items` (it failed, but every failed item
 * was refused for what it asked, and a resumption would only refuse it again).
 */
export const resumeOperation = Effect.fn("Operations.resume")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const record = yield* loadOperation(id)
  const items = yield* itemsOf(record).pipe(Effect.mapError(writeUnavailable))
  const recoverable = items.filter((i) => i.data.status === "failed" && isRecoverable(String((i.data.error as JsonObject | null)?.code ?? "")))
  if (record.data.status !== "failed" || recoverable.length === 0) {
    return yield* Effect.fail(apiError("operation_not_resumable", { reason: record.data.status !== "failed" ? "no_failed_run" : "no_recoverable_items" }))
  }
  yield* Effect.forEach(recoverable, (i) =>
    records.update(caller.tenant, OPERATION_ITEM_TYPE, i.id, { ...i.data, status: "queued", error: null, finished_at: null })
  ).pipe(Effect.mapError(writeUnavailable))
  const progress = record.data.progress as { done: number; failed: number; total: number }
  const saved = yield* saveOperation(record, {
    ...record.data,
    status: "queued",
    attempt: { ...(record.data.attempt as JsonObject), status: "queued" },
    // A resumption is the client's: the retry budget starts over.
    runs: 0,
    [UNRUN_ITEMS]: 0,
    progress: { ...progress, failed: progress.failed - recoverable.length },
    error: null,
    finished_at: null
  })
  yield* recordChange("operation.resumed", { object: "operation", id })
  return operationView(saved)
})

/** At most this many operations queued or running per account and environment (§8.2). */
export const MAX_OPEN_OPERATIONS = 100
export const MAX_BATCH_ITEMS = 1000

/** 422 `operation_backlog_exceeded` when the environment already has 100 open operations. */
export const checkBacklog = Effect.fn("Operations.checkBacklog")(function* () {
  const caller = yield* Caller
  const records = yield* Records
  const open = yield* records
    .count(caller.tenant, OPERATION_TYPE, [{ field: "status", op: "in", values: ["queued", "running"] }], [])
    .pipe(Effect.mapError(writeUnavailable))
  if ((open[0]?.count ?? 0) >= MAX_OPEN_OPERATIONS) return yield* Effect.fail(apiError("operation_backlog_exceeded"))
})
