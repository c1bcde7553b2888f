/**
 * Exports (`exp_`, release 3.2.0, issue 16): a collection of a described resource written to a
 * file, CSV or JSON lines, by an asynchronous operation. Decisions (also in docs/exports.md and
 * the OpenAPI description):
 *
 * - `POST /exports` `{ resource_type, format, filters? }`. `resource_type` is the resource's
 *   plural as its path and capabilities name it (`users`, `custom_fields`); a type outside
 *   `EXPORTABLE` is 422 `unsupported_resource` on `resource_type`. `filters` are the list
 *   route's query parameters as an object (`{ "status": "active", "q": "ana" }`), checked by
 *   the same schemas, each problem itemized under `filters.<name>`; a nested resource names its
 *   parents there (`{ "product_id": "prd_…" }` for modules and lessons), required.
 * - The caller needs `exports.create` and the resource's `<plural>.read` (on the product for a
 *   nested resource; a resource-limited grant exports only the records it may read); the
 *   `email` filter of users needs `users.read_personal`, as on the list.
 * - The answer is 202 with the export (`status: queued`, `operation_id`): an operation of one
 *   item, type `export`. Its worker reads the collection in keyset pages of `EXPORT_PAGE` in the
 *   resource's default order, ascending (`created_at`: oldest first, the order an import
 *   recreates them in), and streams the lines to file storage in multipart parts of
 *   `EXPORT_PART_BYTES`: at most one page and one part in memory, whatever the collection.
 *   The file is written before the item's unit of work, outside any transaction, each page
 *   read on its own (`prepareItem`; each record once, in creation order; a record created
 *   meanwhile may be in or not); then the item's unit of work records the file and the
 *   export's end together, short, so that concurrent exports neither hold transactions open
 *   nor redo their files when they lose a race (issue 23). A failed unit of work removes the
 *   file. Under one lease of the operations engine: a run longer than the lease may be taken
 *   over by another process's worker, which starts the file again (docs/exports.md gives the
 *   throughput; split a huge collection by a filter).
 * - Each row is the representation `GET` answers, as the starter sees it: a user's `email`,
 *   `document` and `phone` are null unless the credential that started the export held
 *   `users.read_personal` (the item runs with the starter's grant). JSON lines: one
 *   representation per line, `\n` ended, UTF-8 (an import reads it back as is). CSV (RFC 4180,
 *   CRLF, UTF-8, a byte-order mark first when `byte_order_mark: true`): a header of the
 *   representation's fields, in order; null is an empty cell, booleans `true`/`false`, objects
 *   and arrays their JSON text in the cell; cells are quoted when they hold `"`, `,`, CR or LF. A
 *   formula is neutralized with a leading `'` unless `raw_values: true` (bulk/csv.ts: the import
 *   of a CSV reads it back to the value). Both options are CSV only (422 `csv_only` otherwise).
 * - The file (`fil_`, purpose `export`) is readable with `GET /files/{file_id}` and its bytes
 *   with `/content` for `EXPORT_RETENTION_MS` (7 days) after the export completed; then the
 *   housekeeping removes it (`sweepExpiredFiles`) and the export reads `status: expired`
 *   (`sweepExpiredExports`). Export records stay (they are small) until a sandbox reset.
 * - Status: `queued` until the item finished, then `succeeded` (with `row_count`, `size`,
 *   `file_id`), `failed` (`error`) or `canceled` (the operation canceled), `expired`. The
 *   progress of a running export is its operation's. An export failed by an outage (storage)
 *   runs again when its operation is resumed, and may then succeed.
 * - Events `export.created`, `export.completed`, `export.failed`; audit entries
 *   `export.created`, `export.completed`.
 */
import { Clock, Effect, Either, Schema, Stream } from "effect"
import { Caller, Ids } from "../access/context.js"
import { allows } from "../access/policies.js"
import { reachAlternatives, reachOf, reaches, requirementsJson } from "../access/scope.js"
import { type ApiError, apiError, type DetailItem, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent } from "../events/events.js"
import { BYTE_ORDER_MARK, csvLine } from "./csv.js"
import { firstFailedItem, type ItemServices, type OperationKind, startOperation } from "../operations/operations.js"
import { FileStorage, type StoredPart } from "../ports/file-storage.js"
import {
  type AccessPath,
  housekeepingPath,
  type Json,
  type JsonObject,
  listPath,
  Records,
  type StoredRecord,
  type Where
} from "../ports/store.js"
import { listReached, paginate } from "../records/pagination.js"
import { tagViews, userViews } from "../people/people-users.js"
import { READ_PERSONAL } from "../access/scope.js"
import {
  anchorFields,
  type ResourceDefinition,
  representationFields,
  requireParent,
  resourceSort,
  resourceView,
  SEARCH_FIELD
} from "../records/resource.js"
import { Bool, detailsOf, Enum, PublicId, strict, Text } from "../records/schema.js"
import { DAY, formatTimestamp } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { showcases } from "../catalog/showcases.js"
import { products } from "../catalog/products.js"
import { taxonomies } from "../catalog/taxonomies.js"
import { lessons, modules } from "../content/content-catalog.js"
import { customFields } from "../people/people.js"
import { tags, users } from "../people/people-users.js"
import { banners, navigation } from "../site/site.js"
import { enrollments } from "../learning/enrollments.js"
import { departments } from "../support/departments.js"
import { faqs } from "../support/faqs.js"
import { deliveries } from "../sales/deliveries.js"
import { legalTerms } from "../legal/legal-terms.js"
import { recordChange } from "../trail/audit.js"
import { FILE_REQUIRES, FILE_TYPE, objectKey } from "../uploads/uploads.js"

export const EXPORT_TYPE = "export"
/** The operation type of an export's work. */
export const EXPORT_OPERATION = "export"
/** The purpose of an export's file. */
export const EXPORT_PURPOSE = "export"
/** How long an export's file is kept after the export completed. */
export const EXPORT_RETENTION_MS = 7 * DAY
/** Records read per store query (the largest page of a list route). */
export const EXPORT_PAGE = 200
/** Bytes gathered before a part is sent (S3's parts but the last must be at least 5 MiB). */
export const EXPORT_PART_BYTES = 8 * 1024 ** 2

export const exportFormats = ["csv", "jsonl"] as const
export type ExportFormat = (typeof exportFormats)[number]
export const exportStatuses = ["queued", "succeeded", "failed", "canceled", "expired"] as const

/** A view of representations as the reader (here: the export's starter) may see them. */
type ExportView = (items: ReadonlyArray<JsonObject>) => Effect.Effect<ReadonlyArray<JsonObject>, ApiError, Caller | Records>

/**
 * The resource types an export accepts, by plural, with the view their routes show (personal
 * data, live counts). Each is listed by the resource machinery (`listResources`); the others
 * (tickets, exams with their answer keys, webhooks, administrators, …) are 422
 * `unsupported_resource`.
 */
const exportables = (): ReadonlyArray<{ readonly definition: ResourceDefinition; readonly view: ExportView | null }> => [
  { definition: users, view: userViews },
  { definition: tags, view: tagViews },
  { definition: customFields, view: null },
  { definition: showcases, view: null },
  { definition: products, view: null },
  { definition: modules, view: null },
  { definition: lessons, view: null },
  { definition: taxonomies, view: null },
  { definition: banners, view: null },
  { definition: navigation, view: null },
  { definition: enrollments, view: null },
  { definition: departments, view: null },
  { definition: faqs, view: null },
  { definition: deliveries, view: null },
  { definition: legalTerms, view: null }
]

/** The `resource_type` values `POST /exports` accepts (plurals, as in the resources' paths). */
export const exportableResourceTypes: ReadonlyArray<string> = [
  "users", "tags", "custom_fields", "showcases", "products", "modules", "lessons", "taxonomies",
  "banners", "navigation", "enrollments", "departments", "faqs", "deliveries", "legal_terms"
]

/** The description of an exportable resource type (built on use: the descriptions are read once the modules are loaded). */
const exportable = (resourceType: string) =>
  exportableResourceTypes.includes(resourceType) ? exportables().find((e) => e.definition.plural === resourceType) : undefined

export const exportFields = [
  "object",
  "id",
  "resource_type",
  "format",
  "filters",
  "raw_values",
  "byte_order_mark",
  "status",
  "personal_data",
  "row_count",
  "size",
  "file_id",
  "operation_id",
  "error",
  "created_at",
  "completed_at",
  "expires_at"
] as const

export const exportView = (record: StoredRecord): JsonObject => inOrder(record.data, exportFields)

export const CreateExportBody = Schema.Struct({
  resource_type: Text({ min: 1, max: 100 }).annotations({
    description: `The resource's plural, as in its path: ${exportableResourceTypes.map((t) => `\`${t}\``).join(", ")}.`
  }),
  format: Enum(...exportFormats).annotations({ description: "`csv` or `jsonl` (JSON lines)." }),
  filters: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
      description: "The list route's query parameters as an object (e.g. `{ \"status\": \"active\" }`); a nested resource's parents are required here (`product_id`)."
    })
  ),
  raw_values: Schema.optional(Bool).annotations({
    description: "CSV only: write every cell as its value, without the leading `'` that neutralizes a formula (a cell starting with `=`, `+`, `-`, `@`, tab or CR). Default false."
  }),
  byte_order_mark: Schema.optional(Bool).annotations({ description: "CSV only: start the file with a UTF-8 byte-order mark (for spreadsheets that need it). Default false." })
}).annotations({ identifier: "CreateExportBody" })
export type CreateExportBody = typeof CreateExportBody.Type

// ---------------------------------------------------------------------------------------
// The filters

const ancestry = (definition: ResourceDefinition) => {
  const out: Array<NonNullable<ResourceDefinition["parent"]>> = []
  for (let p = definition.parent; p; p = p.parent) out.unshift(p)
  return out
}

/** The schema of an export's `filters`: the list query without its paging, parents required. */
const filtersSchema = (definition: ResourceDefinition) =>
  Schema.Struct({
    ...Object.fromEntries(ancestry(definition).map((p) => [p.field, PublicId(p.idKind)])),
    ...(definition.trash ? { deleted: Schema.optional(Schema.Literal("true", "false")) } : {}),
    ...(definition.search ? { q: Schema.optional(Schema.String.pipe(Schema.maxLength(200))) } : {}),
    ...Object.fromEntries(Object.entries(definition.filters ?? {}).map(([name, f]) => [name, Schema.optional(f.schema)]))
  }) as unknown as Schema.Schema<Readonly<Record<string, unknown>>, Readonly<Record<string, unknown>>>

/** The store conditions of a collection's filters, as `listResources` builds them (the scope apart: `reachAlternatives`). */
const filtersWhere = (definition: ResourceDefinition, filters: Readonly<Record<string, unknown>>) => {
  const where: Array<Where> = [{ field: "deleted", op: "eq", value: filters.deleted === "true" }]
  if (definition.parent) where.push({ field: definition.parent.field, op: "eq", value: String(filters[definition.parent.field] ?? "") })
  for (const [name, filter] of Object.entries(definition.filters ?? {})) {
    const value = filters[name]
    if (value !== undefined) where.push(...filter.where(value as never))
  }
  if (typeof filters.q === "string" && filters.q !== "" && definition.search) where.push({ field: SEARCH_FIELD, op: "contains", value: filters.q })
  return where
}

// ---------------------------------------------------------------------------------------
// Create, read

/**
 * Start an export: the export record and its operation, in the request's unit of work
 * (`export.created`). Answers the export, `queued`.
 */
export const createExport = Effect.fn("Exports.create")(function* (body: CreateExportBody) {
  const caller = yield* Caller
  const records = yield* Records
  const found = exportable(body.resource_type)
  if (!found) {
    return yield* Effect.fail(
      apiError("unsupported_resource", {
        details: [{ field: "resource_type", code: "unsupported_resource", allowed: exportableResourceTypes }]
      })
    )
  }
  const { definition } = found
  const given = body.filters ?? {}
  const decoded = Schema.decodeUnknownEither(filtersSchema(definition))(given, strict)
  if (Either.isLeft(decoded)) {
    const details: ReadonlyArray<DetailItem> = detailsOf(decoded.left, "field").map((d) => ({ ...d, field: `filters.${d.field ?? ""}` }))
    return yield* Effect.fail(apiError("validation_failed", { details }))
  }
  const filters = decoded.right
  const csvOnly: ReadonlyArray<DetailItem> = body.format === "csv" ? [] : (["raw_values", "byte_order_mark"] as const)
    .filter((option) => body[option] === true)
    .map((field) => ({ field, code: "invalid_value", reason: "csv_only" }))
  if (csvOnly.length > 0) return yield* Effect.fail(apiError("validation_failed", { details: csvOnly }))
  const capability = `${definition.plural}.read`
  if (!allows(caller.grant, capability)) return yield* Effect.fail(apiError("permission_denied", { params: { capability } }))
  if (definition.type === "user" && filters.email !== undefined && caller.grant.get(READ_PERSONAL) !== "all") {
    return yield* Effect.fail(apiError("permission_denied", { params: { capability: READ_PERSONAL } }))
  }
  // A parent that is not there, or out of the caller's reach, is a bad filter, as a body's reference to a missing record is.
  const outermost = ancestry(definition)[0]
  const parentMissing = apiError("validation_failed", { details: [{ field: `filters.${outermost?.field ?? ""}`, code: "invalid_value", reason: "not_found" }] })
  if (outermost !== undefined && !reaches(caller.grant, capability, [String(filters[outermost.field])])) return yield* Effect.fail(parentMissing)
  yield* requireParent(definition.parent, filters as Readonly<Record<string, string>>).pipe(
    Effect.mapError((e): ApiError => (e.code === "not_found" ? parentMissing : e))
  )
  // The records the export may hold: a nested one's parent is reached; else what the caller's read reaches.
  const reach = outermost !== undefined ? "all" : reachOf(caller.grant, capability)
  const personalHeld = definition.personal === undefined ? undefined : caller.grant.get(READ_PERSONAL)
  const id = yield* (yield* Ids).next("export")
  const now = yield* Clock.currentTimeMillis
  const operation = yield* startOperation(EXPORT_OPERATION, [{ key: id, payload: { export_id: id } }])
  const data = {
    object: "export",
    id,
    resource_type: body.resource_type,
    format: body.format,
    filters: filters as JsonObject,
    raw_values: body.raw_values === true,
    byte_order_mark: body.byte_order_mark === true,
    status: "queued",
    personal_data: definition.type === "user" && personalHeld === "all",
    row_count: null,
    size: null,
    file_id: null,
    operation_id: String(operation.id),
    error: null,
    created_at: formatTimestamp(now),
    completed_at: null,
    expires_at: null,
    // Internal: what the starter's read reached (null: everything), applied as the list applies it.
    reach: reach === "all" ? null : [...reach].sort(),
    // Internal: what reading its file needs, what the export needed (uploads.ts, `FILE_REQUIRES`).
    file_requires: requirementsJson([
      { capability, resources: outermost !== undefined ? [String(filters[outermost.field])] : reach === "all" ? null : [...reach].sort() },
      ...(personalHeld === undefined ? [] : [{ capability: READ_PERSONAL, resources: personalHeld === "all" ? null : [...personalHeld].sort() }])
    ])
  } satisfies JsonObject
  const record = yield* records.insert(caller.tenant, EXPORT_TYPE, id, data).pipe(Effect.mapError(writeUnavailable))
  const view = exportView(record)
  yield* recordChange("export.created", { object: "export", id })
  yield* emitEvent("export.created", view)
  return view
})

export const getExport = Effect.fn("Exports.get")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const record = yield* records.get(caller.tenant, EXPORT_TYPE, id).pipe(Effect.mapError(readUnavailable))
  if (!record) return yield* Effect.fail(apiError("not_found"))
  return exportView(record)
})

export const listExports = Effect.fn("Exports.list")(function* (query: {
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
  readonly status: string | undefined
  readonly resourceType: string | undefined
}) {
  const caller = yield* Caller
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: EXPORT_TYPE,
    where: [
      ...(query.status ? [{ field: "status", op: "eq" as const, value: query.status }] : []),
      ...(query.resourceType ? [{ field: "resource_type", op: "eq" as const, value: query.resourceType }] : [])
    ],
    sort: { field: "id", kind: "text", direction: query.sort === "created_at" ? "asc" : "desc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `exports:${query.status ?? ""}:${query.resourceType ?? ""}`
  }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  return { data: items.map(exportView), page }
})

// ---------------------------------------------------------------------------------------
// The worker

const encoder = new TextEncoder()

/**
 * Write the export's lines to storage, a page of records at a time, in parts of at least
 * `EXPORT_PART_BYTES` (the last may be smaller). Answers the stored object and the row count.
 */
const writeExportFile = (exportRecord: StoredRecord, key: string, uploadId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const storage = yield* FileStorage
    const found = exportable(String(exportRecord.data.resource_type))
    if (!found) return yield* Effect.fail(apiError("unsupported_resource"))
    const { definition, view } = found
    const filters = (exportRecord.data.filters ?? {}) as Readonly<Record<string, unknown>>
    const stored = exportRecord.data.reach ?? exportRecord.data.visible
    const reach = reachAlternatives(Array.isArray(stored) ? new Set(stored.filter((id): id is string => typeof id === "string")) : "all", anchorFields(definition))
    const where = filtersWhere(definition, filters)
    const sort = { ...resourceSort(definition, definition.sorts[0]!.name), direction: "asc" as const }
    const csv = exportRecord.data.format === "csv"
    const csvOptions = { rawValues: exportRecord.data.raw_values === true }
    const columns = representationFields(definition)

    const parts: Array<StoredPart> = []
    let pending: Array<Uint8Array> = []
    let pendingBytes = 0
    const push = (text: string) => {
      const bytes = encoder.encode(text)
      pending.push(bytes)
      pendingBytes += bytes.length
    }
    const flush = Effect.gen(function* () {
      const chunks = pending
      const size = pendingBytes
      pending = []
      pendingBytes = 0
      const part = yield* storage.putPart(key, uploadId, parts.length + 1, Stream.fromIterable(chunks), size)
      parts.push(part)
    })

    if (csv) push((exportRecord.data.byte_order_mark === true ? BYTE_ORDER_MARK : "") + csvLine(columns, csvOptions))
    let rows = 0
    let after: { value: string | number | null; id: string } | undefined
    for (;;) {
      const page = yield* listReached(caller.tenant, definition.type, reach, { where, sort, after, limit: EXPORT_PAGE }).pipe(Effect.mapError(readUnavailable))
      const shown = view ? yield* view(page.map((r) => resourceView(definition, r))) : page.map((r) => resourceView(definition, r))
      // A page's lines encoded at once: one chunk per page, not one per row.
      let lines = ""
      for (const item of shown) lines += csv ? csvLine(columns.map((c) => item[c]), csvOptions) : JSON.stringify(item) + "\n"
      if (lines !== "") push(lines)
      rows += page.length
      if (pendingBytes >= EXPORT_PART_BYTES) yield* flush
      const last = page.at(-1)
      if (page.length < EXPORT_PAGE || !last) break
      const value = sort.field === "id" ? last.id : last.data[sort.field]
      after = { value: typeof value === "string" || typeof value === "number" ? value : null, id: last.id }
    }
    if (pendingBytes > 0 || parts.length === 0) yield* flush
    const object = yield* storage.completeUpload(key, uploadId, parts)
    return { object, rows }
  })

const storageFailure = (cause: unknown) => apiError("storage_unavailable", { internal: cause })

/** The export's file, written before its item's unit of work (`prepareItem`), for `runExportItem` to record. */
interface WrittenExport {
  readonly id: string
  readonly key: string
  readonly size: number
  readonly sha256: string
  readonly rows: number
}

/** An export that may be written: no file yet (queued, or failed by an outage and resumed: `POST /operations/{id}/resumptions`). */
const writable = (record: StoredRecord) => record.data.status === "queued" || record.data.status === "failed"

/**
 * The export's file, written before the item's unit of work and outside any transaction (issue
 * 23: read inside the item's serializable unit of work, an export held a transaction for as
 * long as it read, conflicted with every concurrent write to what it read, and redid the
 * whole file each time it lost a race, until it gave up with `audit_unavailable`). The pages
 * are read each on its own (keyset, in creation order: each record once; one created meanwhile
 * may be in or not). A failure removes what was stored. Answers the payload with the file.
 */
const writeExport = (payload: JsonObject): Effect.Effect<JsonObject, ApiError, ItemServices> =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const storage = yield* FileStorage
    const current = yield* records.get(caller.tenant, EXPORT_TYPE, String(payload.export_id)).pipe(Effect.mapError(readUnavailable))
    if (!current) return yield* Effect.fail(apiError("not_found"))
    if (!writable(current)) return payload
    const fileId = yield* (yield* Ids).next("file")
    const key = objectKey(caller.tenant, fileId)
    const uploadId = yield* storage.startUpload(key).pipe(Effect.mapError(storageFailure))
    const written = yield* writeExportFile(current, key, uploadId).pipe(
      Effect.catchTag("PartTooLarge", (e) => Effect.die(e)),
      Effect.mapError((e): ApiError => (e._tag === "ApiError" ? e : storageFailure(e))),
      Effect.tapError(() => Effect.ignore(Effect.zipRight(storage.abortUpload(key, uploadId), storage.deleteObject(key))))
    )
    yield* Effect.ignore(storage.abortUpload(key, uploadId))
    const file: WrittenExport = { id: fileId, key, size: written.object.size, sha256: written.object.sha256, rows: written.rows }
    return { ...payload, file: { ...file } }
  })

/** The file of a prepared export whose unit of work failed: removed. */
const discardExport = (prepared: JsonObject): Effect.Effect<void, never, ItemServices> =>
  Effect.flatMap(FileStorage, (storage) => {
    const file = prepared.file as WrittenExport | undefined
    return file === undefined ? Effect.void : Effect.ignore(storage.deleteObject(file.key))
  })

/**
 * The export's one item, in its unit of work: the file written before (`writeExport`) recorded
 * with the export's end. A file the export no longer needs (finished meanwhile) is removed.
 */
const runExportItem = (payload: JsonObject): Effect.Effect<Json, ApiError, ItemServices> =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const storage = yield* FileStorage
    const exportId = String(payload.export_id)
    const written = payload.file as WrittenExport | undefined
    const current = yield* records.get(caller.tenant, EXPORT_TYPE, exportId).pipe(Effect.mapError(readUnavailable))
    if (!current) return yield* Effect.fail(apiError("not_found"))
    if (!writable(current)) {
      if (written !== undefined) yield* Effect.ignore(storage.deleteObject(written.key))
      return { object: "export", id: exportId, file_id: current.data.file_id ?? null }
    }
    // Written while the export had no file; it has none still (a run that took over would have recorded it).
    if (written === undefined) return yield* Effect.fail(apiError("state_conflict", { reason: "export_changed" }))
    const now = yield* Clock.currentTimeMillis
    const at = formatTimestamp(now)
    const expiresAt = formatTimestamp(now + EXPORT_RETENTION_MS)
    const csv = current.data.format === "csv"
    const file = {
      object: "file",
      id: written.id,
      purpose: EXPORT_PURPOSE,
      filename: `${String(current.data.resource_type)}-${exportId}.${csv ? "csv" : "jsonl"}`,
      size: written.size,
      content_type: csv ? "text/csv" : "application/x-ndjson",
      sha256: written.sha256,
      created_at: at,
      // Removed with its bytes by the housekeeping (uploads/file-content.ts) once past.
      expires_at: expiresAt,
      storage_key: written.key,
      [FILE_REQUIRES]: current.data.file_requires ?? requirementsJson([{ capability: `${String(current.data.resource_type)}.read`, resources: null }, { capability: READ_PERSONAL, resources: null }])
    } satisfies JsonObject
    yield* records.insert(caller.tenant, FILE_TYPE, written.id, file).pipe(Effect.mapError(writeUnavailable))
    yield* recordChange("file.created", { object: "file", id: written.id })
    const done = yield* records
      .update(caller.tenant, EXPORT_TYPE, exportId, {
        ...current.data,
        status: "succeeded",
        error: null,
        row_count: written.rows,
        size: written.size,
        file_id: written.id,
        completed_at: at,
        expires_at: expiresAt
      }, { expectedRevision: current.revision })
      .pipe(Effect.mapError((e) => (e._tag === "RevisionConflict" ? apiError("state_conflict", { reason: "export_changed" }) : writeUnavailable(e))))
    yield* recordChange("export.completed", { object: "export", id: exportId })
    yield* emitEvent("export.completed", exportView(done))
    return { object: "export", id: exportId, file_id: written.id, row_count: written.rows }
  })

/**
 * The end of an export's operation when the export was not written: the export reads `failed`
 * (with the operation's error, or its one item's when that item was refused: the operation
 * ran it, so succeeded) or `canceled`, in the unit of work that records the operation's end.
 */
const finishExport = (operation: JsonObject): Effect.Effect<void, ApiError<"audit_unavailable">, ItemServices> =>
  Effect.gen(function* () {
    const itemRefused = operation.status === "succeeded" && Number((operation.progress as JsonObject | null)?.failed ?? 0) > 0
    if (operation.status !== "failed" && operation.status !== "canceled" && !itemRefused) return
    const status = itemRefused ? "failed" : String(operation.status)
    const caller = yield* Caller
    const records = yield* Records
    const error = itemRefused
      ? ((yield* firstFailedItem(caller.tenant, String(operation.id)).pipe(Effect.mapError(writeUnavailable)))?.data.error ?? null)
      : (operation.error ?? null)
    const found = yield* records
      .list(caller.tenant, EXPORT_TYPE, {
        where: [{ field: "operation_id", op: "eq", value: String(operation.id) }],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: 10
      })
      .pipe(Effect.mapError(writeUnavailable))
    for (const record of found) {
      if (record.data.status !== "queued") continue
      const now = yield* Clock.currentTimeMillis
      const saved = yield* records
        .update(caller.tenant, EXPORT_TYPE, record.id, {
          ...record.data,
          status,
          error: error as Json,
          completed_at: formatTimestamp(now)
        })
        .pipe(Effect.mapError(writeUnavailable))
      if (status === "failed") yield* emitEvent("export.failed", exportView(saved))
    }
  })

export const exportsOperationKinds: Readonly<Record<string, OperationKind>> = {
  [EXPORT_OPERATION]: { runItem: runExportItem, prepareItem: writeExport, discardPrepared: discardExport, onFinished: finishExport }
}

// ---------------------------------------------------------------------------------------
// Expiry

const EXPIRY_BATCH = 200

/**
 * Housekeeping: succeeded exports past `expires_at` read `expired` (their file is removed by
 * `sweepExpiredFiles`). A batch at a time over the declared index; no event, no audit entry
 * (retention is not a change a caller made).
 */
export const sweepExpiredExports = Effect.fn("Exports.sweepExpired")(function* () {
  const records = yield* Records
  const at = formatTimestamp(yield* Clock.currentTimeMillis)
  let expired = 0
  for (let step = 0; step < 50; step++) {
    const due = yield* records.scan(
      EXPORT_TYPE,
      [
        { field: "status", op: "eq", value: "succeeded" },
        { field: "expires_at", op: "lte", value: at }
      ],
      EXPIRY_BATCH
    )
    for (const record of due) {
      yield* records.update(record.tenant, EXPORT_TYPE, record.id, { ...record.data, status: "expired" })
      expired++
    }
    if (due.length < EXPIRY_BATCH) break
  }
  return expired
})

/** The reads of exports: the list (by status or resource type, by ID), an operation's export, the expiry sweep. */
export const exportsAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(EXPORT_TYPE, [], [{ field: "id", kind: "text" }]),
  listPath(EXPORT_TYPE, ["status"], [{ field: "id", kind: "text" }]),
  listPath(EXPORT_TYPE, ["resource_type"], [{ field: "id", kind: "text" }]),
  listPath(EXPORT_TYPE, ["operation_id"], [{ field: "id", kind: "text" }]),
  listPath(EXPORT_TYPE, ["resource_type", "status"], [{ field: "id", kind: "text" }]),
  housekeepingPath(EXPORT_TYPE, ["status"], [{ field: "expires_at", kind: "text" }])
]
