/**
 * Imports (`imp_`, release 3.2.0, issue 16): an uploaded file of records (purpose `import`:
 * CSV, JSON lines or XLSX) written into the account, one row at a time, as an asynchronous
 * operation of one item per row. Decisions (also in docs/imports.md and the OpenAPI description):
 *
 * - `POST /imports` `{ file_id, target, mapping?, dry_run? }` → 202 with the import (`queued`,
 *   `operation_id`). `target` is one of `IMPORT_TARGETS` (else 422 `unsupported_resource` on
 *   `target`); `file_id` a file of the caller's account and environment of purpose `import`
 *   (else 422 `validation_failed` on `file_id`, reason `not_found` or `purpose_mismatch`). The
 *   caller needs `imports.create` and the capability the target's rows write with
 *   (`users.create`, `users.update` for `tag_applications`…; else 403 `permission_denied`).
 * - The format follows the file's content type: `text/csv` CSV, `application/json` JSON lines,
 *   the XLSX type the first worksheet. CSV and XLSX have a header row (row 1).
 * - The rows are NOT read by the request (a file may be 5 GiB): the operation is started with
 *   its source (`startOperation`'s `enumeration`) and the worker that claims it reads the file
 *   through the `FileStorage` and `TabularReader` ports, recording the rows as items page by
 *   page (`OperationKind.enumerate`), then runs them. Memory stays flat in the file's size.
 * - A row's key is its number as the file shows it (CSV/XLSX: the header is row 1; JSON
 *   lines: the line number). Its values become the body of the target's create: `mapping`
 *   (column → field, at most 1,000 entries) renames columns, and then only mapped columns are
 *   read; without it every column (every key of a JSON line) is a field of the same name. A
 *   field may be one level deep (`custom_fields.city`). An empty cell, or null, is a field not
 *   given. A text cell is read as the field's type in the create body (numbers, booleans; an
 *   array or object as its JSON text); a JSON line's values are taken as they are. Fields of
 *   the target's representation the create does not take (`id`, `object`, `created_at`…) are
 *   left out, so an export's JSON lines import as they are; any other unknown field is the
 *   row's error, as on the route.
 * - Each row runs exactly what a batch item of `<target>.create` runs (`registry/batches.ts`:
 *   the same schema, scope and use case as the single route), so a row fails with the codes
 *   the route would answer, every problem itemized (`error.details`). A row the file could
 *   not give (a bad JSON line, a CSV record with the wrong number of fields) fails with
 *   `validation_failed` on `file_id`, reason `unreadable_row`. A row naming `__proto__`,
 *   `constructor` or `prototype` (a column read, a JSON line's key at any depth) fails with
 *   `validation_failed` on that field path, reason `reserved_name` (`RESERVED_KEYS`), never
 *   dropped; in a mapping they are 422 at creation.
 * - A file over one of `IMPORT_LIMITS` (rows, line, cell, XLSX sizes and expansion) fails the
 *   import's operation with `validation_failed` on `file_id`, reason `<cap>_exceeded`, its
 *   reading stopped at the cap (docs/imports.md "Limits").
 * - `dry_run: true`: every row runs the same checks and the same write inside a unit of work
 *   that is rolled back, so nothing is kept (no record, event nor audit entry) and each row is
 *   valid or failed as it would be. Rows are checked one by one against the account as it is:
 *   two rows of the file with the same email are both valid in a dry run.
 * - Idempotency per row: a row's write and its item's `succeeded` commit in one unit of work,
 *   so a worker that dies mid-import, or a resumption (`POST /operations/{id}/resumptions`,
 *   which re-runs only the rows failed by an outage), never writes a row twice; the rows
 *   already recorded are not recorded again (the enumeration resumes after them).
 * - Status: the operation's (`queued`, `running`, `succeeded`, `failed`: at least one row
 *   failed, `canceled`), with `rows` (recorded so far), `valid_rows` and `failed_rows`.
 *   Events `import.created`, `import.completed` (whatever the outcome, with the counts); audit
 *   entries `import.created`, `import.completed`. Imports go with a sandbox reset.
 */
import { Clock, Data, Effect, JSONSchema, Schema, Stream } from "effect"
import { Caller, Ids } from "../access/context.js"
import { allows } from "../access/policies.js"
import { type ApiError, apiError, type DetailItem, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent } from "../events/events.js"
import { restoreFormula } from "../bulk/csv.js"
import { type ItemServices, type OperationItemInput, type OperationKind, OPERATION_TYPE, startOperation } from "../operations/operations.js"
import { applyTags } from "../sales/delivery-access.js"
import { FileStorage } from "../ports/file-storage.js"
import { type AccessPath, type Json, type JsonObject, listPath, Records, type StoredRecord, UnitOfWork } from "../ports/store.js"
import { type TabularFormat, TabularReader, type TabularRow } from "../ports/tabular-reader.js"
import { paginate } from "../records/pagination.js"
import { managedFields, representationFields, type ResourceDefinition } from "../records/resource.js"
import { Bool, detailsOf, PublicId, strict } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { batchItemProblems, batchKinds, viewAnyBatchResult } from "./batches.js"
import { describedResources } from "./resources.js"
import { USER_TYPE } from "../people/people-users.js"
import { recordChange } from "../trail/audit.js"
import { requireFile } from "../uploads/uploads.js"

export const IMPORT_TYPE = "import"
/** The operation type of an import's rows. */
export const IMPORT_OPERATION = "import"
/** At most this many columns in a mapping (§8.2: 1,000 items). */
export const MAPPING_MAX = 1000

/**
 * What an import may write: each target is the create of a described resource (its batch type
 * `<plural>.create`), or `tag_applications`, a tag given to a user (`user_id`, `tag_id`) as
 * `PUT /users/{user_id}/tags` would add it, never twice.
 */
export const IMPORT_TARGETS = {
  users: { resource: "users", capability: "users.create" },
  tags: { resource: "tags", capability: "tags.create" },
  products: { resource: "products", capability: "products.create" },
  enrollments: { resource: "enrollments", capability: "enrollments.create" },
  custom_fields: { resource: "custom_fields", capability: "custom_fields.create" },
  tag_applications: { resource: null, capability: "users.update" }
} as const satisfies Readonly<Record<string, { readonly resource: string | null; readonly capability: string }>>

export type ImportTarget = keyof typeof IMPORT_TARGETS
export const importTargets = Object.keys(IMPORT_TARGETS) as ReadonlyArray<ImportTarget>
export const importStatuses = ["queued", "running", "succeeded", "failed", "canceled"] as const

const formatsByContentType: Readonly<Record<string, TabularFormat>> = {
  "text/csv": "csv",
  "application/json": "jsonl",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx"
}

export const importFields = [
  "object",
  "id",
  "file_id",
  "target",
  "format",
  "mapping",
  "dry_run",
  "status",
  "rows",
  "valid_rows",
  "failed_rows",
  "operation_id",
  "created_at",
  "completed_at"
] as const

const isTarget = (target: string): target is ImportTarget => Object.hasOwn(IMPORT_TARGETS, target)

const definitionOf = (target: ImportTarget): ResourceDefinition | undefined => {
  const plural = IMPORT_TARGETS[target].resource
  return plural === null ? undefined : describedResources.find((d) => d.plural === plural)
}

/**
 * Names an object never takes from a file or a mapping (issue 23): `__proto__` would set the
 * prototype of the object it is written into (and a schema drops it without a word),
 * `constructor` and `prototype` shadow what every object inherits. Refused, itemized, by name.
 */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"])
const RESERVED = "invalid_value|reason=reserved_name"

const MappingColumn = Schema.String.pipe(Schema.filter((s) => !RESERVED_KEYS.has(s) || RESERVED))

const FieldPath = Schema.String.pipe(
  Schema.filter((s) => /^[a-z_][a-z0-9_]*(\.[A-Za-z0-9_-]{1,64})?$/.test(s) || "invalid_value|expected=a field name, or field.key"),
  Schema.filter((s) => s.split(".").every((part) => !RESERVED_KEYS.has(part)) || RESERVED),
  Schema.annotations({ jsonSchema: { type: "string", pattern: "^[a-z_][a-z0-9_]*(\\.[A-Za-z0-9_-]{1,64})?$" } })
)

export const CreateImportBody = Schema.Struct({
  file_id: PublicId("file").annotations({ description: "A file of purpose `import` (CSV, JSON lines or XLSX)." }),
  target: Schema.String.annotations({ description: `What each row creates: ${importTargets.map((t) => `\`${t}\``).join(", ")}.` }),
  mapping: Schema.optional(
    Schema.Record({ key: MappingColumn, value: FieldPath }).annotations({
      description: "Column (CSV/XLSX header, JSON line key) → field of the target's create body (`custom_fields.city` for one level down). Given: only mapped columns are read. Omitted: every column is the field of its name. At most 1,000 entries. `__proto__`, `constructor` and `prototype` are refused: as a column, 422 `unknown_field` on `mapping.<column>`; as a field, 422 on `mapping.<column>`, reason `reserved_name`."
    })
  ),
  dry_run: Schema.optional(Bool).annotations({ description: "Check every row (the same checks and writes, rolled back) without keeping anything." })
}).annotations({ identifier: "CreateImportBody" })
export type CreateImportBody = typeof CreateImportBody.Type

/** The import's representation: its counts from the operation while it runs. */
const importView = (record: StoredRecord, operation: StoredRecord | undefined): JsonObject => {
  const view = inOrder(record.data, importFields)
  if (!operation || record.data.completed_at !== null) return view
  const progress = (operation.data.progress ?? {}) as { done?: number; failed?: number; total?: number }
  return { ...view, status: String(operation.data.status), rows: progress.total ?? 0, valid_rows: progress.done ?? 0, failed_rows: progress.failed ?? 0 }
}

const withOperation = (record: StoredRecord) =>
  Effect.gen(function* () {
    if (record.data.completed_at !== null) return importView(record, undefined)
    const operation = yield* (yield* Records).get(record.tenant, OPERATION_TYPE, String(record.data.operation_id)).pipe(Effect.mapError(readUnavailable))
    return importView(record, operation)
  })

export const createImport = Effect.fn("Imports.create")(function* (body: CreateImportBody) {
  const caller = yield* Caller
  const records = yield* Records
  if (!isTarget(body.target)) {
    return yield* Effect.fail(
      apiError("unsupported_resource", { details: [{ field: "target", code: "unsupported_resource", allowed: [...importTargets] }] })
    )
  }
  const target = IMPORT_TARGETS[body.target]
  if (!allows(caller.grant, target.capability)) return yield* Effect.fail(apiError("permission_denied", { params: { capability: target.capability } }))
  const mapping = body.mapping ?? null
  if (mapping !== null && Object.keys(mapping).length > MAPPING_MAX) {
    return yield* Effect.fail(apiError("too_many_items", { details: [{ field: "mapping", code: "too_many_items", params: { max: MAPPING_MAX } }] }))
  }
  const file = yield* requireFile("file_id", body.file_id, ["import"])
  const format = formatsByContentType[String(file.data.content_type)]
  if (format === undefined) return yield* Effect.fail(fieldError("validation_failed", "file_id", { reason: "purpose_mismatch" }))
  const id = yield* (yield* Ids).next("import")
  const now = yield* Clock.currentTimeMillis
  const dryRun = body.dry_run === true
  const operation = yield* startOperation(IMPORT_OPERATION, [], {
    enumeration: { import_id: id, storage_key: String(file.data.storage_key), format, target: body.target, mapping, dry_run: dryRun }
  })
  const data = {
    object: "import",
    id,
    file_id: file.id,
    target: body.target,
    format,
    mapping,
    dry_run: dryRun,
    status: "queued",
    rows: 0,
    valid_rows: 0,
    failed_rows: 0,
    operation_id: String(operation.id),
    created_at: formatTimestamp(now),
    completed_at: null
  } satisfies JsonObject
  const record = yield* records.insert(caller.tenant, IMPORT_TYPE, id, data).pipe(Effect.mapError(writeUnavailable))
  const view = importView(record, undefined)
  yield* recordChange("import.created", { object: "import", id })
  yield* emitEvent("import.created", view)
  return view
})

export const getImport = Effect.fn("Imports.get")(function* (id: string) {
  const caller = yield* Caller
  const record = yield* (yield* Records).get(caller.tenant, IMPORT_TYPE, id).pipe(Effect.mapError(readUnavailable))
  if (!record) return yield* Effect.fail(apiError("not_found"))
  return yield* withOperation(record)
})

export const listImports = Effect.fn("Imports.list")(function* (query: {
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
  readonly target: string | undefined
}) {
  const caller = yield* Caller
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: IMPORT_TYPE,
    where: query.target ? [{ field: "target", op: "eq" as const, value: query.target }] : [],
    sort: { field: "id", kind: "text", direction: query.sort === "created_at" ? "asc" : "desc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `imports:${query.target ?? ""}`
  }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  return { data: yield* Effect.forEach(items, withOperation), page }
})

// ---------------------------------------------------------------------------------------
// Rows into bodies

type FieldKind = "string" | "number" | "boolean" | "json"

/** The JSON type of each field of a create body, to read a text cell as it (computed once per target). */
const fieldKindsCache = new Map<string, ReadonlyMap<string, FieldKind>>()
const fieldKinds = (definition: ResourceDefinition): ReadonlyMap<string, FieldKind> => {
  const cached = fieldKindsCache.get(definition.plural)
  if (cached) return cached
  const kinds = new Map<string, FieldKind>()
  try {
    const schema = JSONSchema.make(definition.create as Schema.Schema<unknown, unknown>) as {
      properties?: Record<string, unknown>
      $defs?: Record<string, unknown>
    }
    const kindOf = (node: unknown, depth = 0): FieldKind => {
      if (depth > 8 || node === null || typeof node !== "object") return "string"
      const n = node as { type?: string | ReadonlyArray<string>; anyOf?: ReadonlyArray<unknown>; $ref?: string; enum?: ReadonlyArray<unknown> }
      if (typeof n.$ref === "string") return kindOf(schema.$defs?.[n.$ref.split("/").pop() ?? ""], depth + 1)
      if (Array.isArray(n.anyOf)) {
        const kinds = n.anyOf.map((a) => ((a as { type?: string }).type === "null" ? undefined : kindOf(a, depth + 1))).filter((k) => k !== undefined)
        return kinds[0] ?? "string"
      }
      const type = Array.isArray(n.type) ? n.type.find((t) => t !== "null") : n.type
      return type === "integer" || type === "number" ? "number" : type === "boolean" ? "boolean" : type === "array" || type === "object" ? "json" : "string"
    }
    for (const [field, node] of Object.entries(schema.properties ?? {})) kinds.set(field, kindOf(node))
  } catch {
    // A schema without a JSON Schema form: every cell stays text (the checks still run).
  }
  fieldKindsCache.set(definition.plural, kinds)
  return kinds
}

/** A text cell as a field of `kind`; a text that is not one stays text, and the row's checks say so. */
const readCell = (value: unknown, kind: FieldKind | undefined): unknown => {
  if (typeof value !== "string") return kind === "string" && (typeof value === "number" || typeof value === "boolean") ? String(value) : value
  const text = value.trim()
  if (kind === "number" && text !== "" && Number.isFinite(Number(text))) return Number(text)
  if (kind === "boolean" && /^(true|false)$/i.test(text)) return text.toLowerCase() === "true"
  if (kind === "json" && /^[[{]/.test(text)) {
    try {
      return JSON.parse(text)
    } catch {
      return value
    }
  }
  return value
}

/** The body a row gives: mapped (or same-named) columns, empty cells left out, one level of nesting. */
export const rowBody = (
  values: Readonly<Record<string, unknown>>,
  mapping: Readonly<Record<string, string>> | null,
  definition: ResourceDefinition | undefined,
  text: boolean
): JsonObject => {
  const kinds = definition ? fieldKinds(definition) : new Map<string, FieldKind>()
  const readOnly = new Set(definition ? [...managedFields, ...representationFields(definition)] : [])
  const takes = new Set(kinds.keys())
  const body: Record<string, unknown> = {}
  for (const [column, raw] of Object.entries(values)) {
    const field = mapping === null ? column : mapping[column]
    if (field === undefined || raw === null || raw === undefined || raw === "") continue
    const [head, key] = field.split(".", 2) as [string, string | undefined]
    // A field of the representation the create does not take (an export's `id`, `created_at`): left out.
    if (mapping === null && readOnly.has(head) && !takes.has(head)) continue
    if (key === undefined) {
      body[head] = text ? readCell(raw, kinds.get(head)) : raw
    } else {
      const nested = (typeof body[head] === "object" && body[head] !== null ? body[head] : {}) as Record<string, unknown>
      nested[key] = raw
      body[head] = nested
    }
  }
  return body as JsonObject
}

// ---------------------------------------------------------------------------------------
// The worker: enumerate the rows, run each

interface ImportSource {
  readonly import_id: string
  readonly storage_key: string
  readonly format: TabularFormat
  readonly target: ImportTarget
  readonly mapping: Readonly<Record<string, string>> | null
  readonly dry_run: boolean
}

/** A CSV's texts as they were before an export neutralized their formulas (bulk/csv.ts). */
const restoredValues = (values: TabularRow["values"]): TabularRow["values"] =>
  Object.fromEntries(Object.entries(values).map(([column, value]) => [column, typeof value === "string" ? restoreFormula(value) : value]))

/** The reserved names among a row's keys (`RESERVED_KEYS`), as field paths: of the columns read, and inside a JSON line's objects. */
const reservedKeysOf = (values: TabularRow["values"], mapping: Readonly<Record<string, string>> | null): ReadonlyArray<string> => {
  const found: Array<string> = []
  const walk = (value: unknown, path: string, depth: number) => {
    if (value === null || typeof value !== "object" || depth > 16) return
    for (const key of Object.keys(value)) {
      const field = path === "" ? key : `${path}.${key}`
      if (RESERVED_KEYS.has(key)) found.push(field)
      else walk((value as Record<string, unknown>)[key], field, depth + 1)
    }
  }
  const read = mapping === null ? values : Object.fromEntries(Object.entries(values).filter(([column]) => Object.hasOwn(mapping, column)))
  walk(read, "", 0)
  return found
}

/** A row as an operation item: the body (or the reason it could not be read, or its reserved keys) and what runs it. */
const rowItem = (source: ImportSource, row: TabularRow): OperationItemInput => ({
  key: String(row.number),
  payload: {
    row: row.number,
    target: source.target,
    dry_run: source.dry_run,
    ...(row.problem !== undefined
      ? { problem: row.problem }
      : reservedKeysOf(row.values, source.mapping).length > 0
        ? { reserved_keys: [...reservedKeysOf(row.values, source.mapping)] }
      : { body: rowBody(source.format === "csv" ? restoredValues(row.values) : row.values, source.mapping, definitionOf(source.target), source.format !== "jsonl") })
  }
})

/** The rows of the import's file, from storage, after the `skip` already recorded. */
const enumerateRows = (enumeration: JsonObject, skip: number) => {
  const source = enumeration as unknown as ImportSource
  return Stream.unwrap(
    Effect.gen(function* () {
      const storage = yield* FileStorage
      const reader = yield* TabularReader
      return reader.rows(source.format, storage.readObject(source.storage_key)).pipe(
        // A file over a cap fails the import (its operation `failed` with this error, not retried).
        Stream.catchTag("TabularLimitExceeded", (exceeded) =>
          Stream.fail(fieldError("validation_failed", "file_id", { reason: `${exceeded.limit}_exceeded`, params: { max: exceeded.max } }))
        ),
        Stream.drop(skip),
        Stream.map((row) => rowItem(source, row))
      )
    })
  )
}

/** A dry run's write went through: rolled back with this, and the row is valid. */
class DryRunValid extends Data.TaggedError("DryRunValid")<{ readonly result: Json }> {}

const TagApplicationRow = Schema.Struct({ user_id: PublicId("user"), tag_id: PublicId("tag") })

/** A tag given to a user, as `PUT /users/{user_id}/tags` adds it: a user or tag that is not there is 422 on its field. */
const applyTagRow = (body: JsonObject): Effect.Effect<Json, ApiError, ItemServices> =>
  Effect.gen(function* () {
    const decoded = Schema.decodeUnknownEither(TagApplicationRow)(body, strict)
    if (decoded._tag === "Left") return yield* Effect.fail(apiError("validation_failed", { details: detailsOf(decoded.left, "field") }))
    const caller = yield* Caller
    const records = yield* Records
    const { user_id, tag_id } = decoded.right
    if (!allows(caller.grant, "users.update", user_id)) return yield* Effect.fail(fieldError("validation_failed", "user_id", { reason: "not_found" }))
    const user = yield* records.get(caller.tenant, USER_TYPE, user_id).pipe(Effect.mapError(readUnavailable))
    const tag = yield* records.get(caller.tenant, "tag", tag_id).pipe(Effect.mapError(readUnavailable))
    const missing: Array<DetailItem> = [
      ...(!user || user.data.deleted === true ? [{ field: "user_id", code: "validation_failed" as const, reason: "not_found" }] : []),
      ...(!tag ? [{ field: "tag_id", code: "validation_failed" as const, reason: "not_found" }] : [])
    ]
    if (missing.length > 0 || !user) return yield* Effect.fail(apiError("validation_failed", { details: missing }))
    const added = yield* applyTags(user, [tag_id])
    return { object: USER_TYPE, id: user_id, tag_ids_added: added }
  })

/** One row: checked as a batch item of the target's create, then written (or, in a dry run, written and rolled back). */
const runRow = (payload: JsonObject): Effect.Effect<Json, ApiError, ItemServices | UnitOfWork> =>
  Effect.gen(function* () {
    const row = Number(payload.row)
    if (typeof payload.problem === "string") {
      return yield* Effect.fail(fieldError("validation_failed", "file_id", { reason: "unreadable_row", params: { row } }))
    }
    if (Array.isArray(payload.reserved_keys)) {
      const details = payload.reserved_keys.map((field): DetailItem => ({ field: String(field), code: "invalid_value", reason: "reserved_name" }))
      return yield* Effect.fail(apiError("validation_failed", { details }))
    }
    const target = String(payload.target) as ImportTarget
    const body = (payload.body ?? {}) as JsonObject
    const caller = yield* Caller
    const batchType = `${IMPORT_TARGETS[target].resource}.create`
    const write: Effect.Effect<Json, ApiError, ItemServices> =
      IMPORT_TARGETS[target].resource === null
        ? applyTagRow(body)
        : Effect.gen(function* () {
            const problems = batchItemProblems(batchType, caller.grant, body) ?? [{ field: "target", code: "unsupported_resource" as const }]
            if (problems.length > 0) return yield* Effect.fail(apiError("validation_failed", { details: problems }))
            return yield* batchKinds[batchType]!.runItem(body)
          })
    if (payload.dry_run !== true) return { row, ...(yield* write.pipe(Effect.map((r) => (r !== null && typeof r === "object" && !Array.isArray(r) ? r : { result: r })))) } as Json
    const uow = yield* UnitOfWork
    return yield* uow
      .transaction(Effect.flatMap(write, (result) => Effect.fail(new DryRunValid({ result }))))
      .pipe(
        Effect.catchTag("DryRunValid", () => Effect.succeed<Json>({ row, valid: true })),
        Effect.catchTag("StoreUnavailable", (e) => Effect.fail(writeUnavailable(e)))
      )
  })

/** The end of an import's operation: its final counts kept, `import.completed`. */
const finishImport = (operation: JsonObject) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const [record] = yield* records
      .list(caller.tenant, IMPORT_TYPE, {
        where: [{ field: "operation_id", op: "eq", value: String(operation.id) }],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: 1
      })
      .pipe(Effect.mapError(writeUnavailable))
    if (!record || record.data.completed_at !== null) return
    const progress = (operation.progress ?? {}) as { done?: number; failed?: number; total?: number }
    const now = yield* Clock.currentTimeMillis
    const saved = yield* records
      .update(caller.tenant, IMPORT_TYPE, record.id, {
        ...record.data,
        status: String(operation.status),
        rows: progress.total ?? 0,
        valid_rows: progress.done ?? 0,
        failed_rows: progress.failed ?? 0,
        completed_at: formatTimestamp(now)
      })
      .pipe(Effect.mapError(writeUnavailable))
    yield* recordChange("import.completed", { object: "import", id: record.id })
    yield* emitEvent("import.completed", importView(saved, undefined))
  })

/**
 * The import's operation type. Its rows run batch items (`registry/batches.ts`), which sit above
 * the registry of resources: so, like `batchKinds`, it is given to the workers by the assembling
 * layer (`@syllabus/http`'s `syllabusLayer`), not through `registry/resources.ts`.
 */
export const importsOperationKinds: Readonly<Record<string, OperationKind>> = {
  [IMPORT_OPERATION]: { runItem: runRow, enumerate: enumerateRows, onFinished: finishImport, viewResult: viewAnyBatchResult }
}

/** `GET /imports` (newest or oldest first, by target) and the import of an operation. */
export const importsAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(IMPORT_TYPE, [], [{ field: "id", kind: "text" }]),
  listPath(IMPORT_TYPE, ["target"], [{ field: "id", kind: "text" }]),
  listPath(IMPORT_TYPE, ["operation_id"], [{ field: "id", kind: "text" }])
]
