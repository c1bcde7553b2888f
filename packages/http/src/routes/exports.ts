/**
 * Exports over HTTP (`/exports`, release 3.2.0; decisions in core's bulk/exports.ts and
 * docs/exports.md): start one (202, its operation does the work), read them, and their report
 * (`GET /reports/exports`). The file an export makes is read through the files routes.
 */
import {
  CreateExportBody,
  createExport,
  EXPORT_RETENTION_MS,
  exportableResourceTypes,
  exportFormats,
  EXPORTS_REPORT,
  exportsReport,
  exportStatuses,
  getExport,
  listExports,
  Timestamp
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { CursorParam, LimitParam, pageLimit, pageQuery } from "../query.js"
import { reportRowSchema, reportText } from "./reports.js"

const tag = "Exports"
const retentionDays = EXPORT_RETENTION_MS / (24 * 3600 * 1000)

const ExportSchema = Schema.Struct({
  object: Schema.Literal("export"),
  id: Schema.String,
  resource_type: Schema.String.annotations({ description: "The resource's plural, as in its path (`users`)." }),
  format: Schema.Literal(...exportFormats),
  filters: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({ description: "The filters as checked (the list route's query parameters)." }),
  raw_values: Schema.Boolean.annotations({ description: "CSV: cells written as their values, formulas not neutralized." }),
  byte_order_mark: Schema.Boolean.annotations({ description: "CSV: the file starts with a UTF-8 byte-order mark." }),
  status: Schema.Literal(...exportStatuses),
  personal_data: Schema.Boolean.annotations({
    description: "Whether a user's personal columns (`email`, `document`, `phone`) hold values: the credential that started the export held `users.read_personal`."
  }),
  row_count: Schema.NullOr(Schema.Int).annotations({ description: "Rows written; null until the export succeeded." }),
  size: Schema.NullOr(Schema.Int).annotations({ description: "Bytes of the file; null until the export succeeded." }),
  file_id: Schema.NullOr(Schema.String).annotations({ description: "The file (`GET /files/{file_id}/content`); null until the export succeeded." }),
  operation_id: Schema.String.annotations({ description: "The operation doing the work (`GET /operations/{operation_id}`)." }),
  error: Schema.NullOr(Schema.Unknown).annotations({ description: "Why it failed (the operation's error); null otherwise." }),
  created_at: Timestamp,
  completed_at: Schema.NullOr(Timestamp),
  expires_at: Schema.NullOr(Timestamp).annotations({ description: `When the file goes (${retentionDays} days after completion); null until the export succeeded.` })
}).annotations({ identifier: "Export" }) as unknown as Schema.Schema.AnyNoContext

const formatText =
  "Each row is the resource's representation as `GET` answers it to the credential that started the export, in the resource's default order ascending (oldest first for `created_at`). `jsonl`: one JSON representation per line (`\\n`), UTF-8, readable back by an import as is. `csv`: RFC 4180, CRLF, UTF-8 (with a byte-order mark first when `byte_order_mark: true`), a header row of the representation's fields in order; null is an empty cell, booleans `true`/`false`, objects and arrays their JSON text; cells holding `\"`, `,`, CR or LF are quoted. A cell starting with `=`, `+`, `-`, `@`, tab or CR is written with a leading `'` so that a spreadsheet does not run it as a formula (OWASP's CSV injection advice; also a cell starting with `'` followed by one of those or by `'`, so the mapping is reversible), unless `raw_values: true`; an import of the CSV removes that quote and reads the value as it was. `raw_values` and `byte_order_mark` are CSV only (else 422 `validation_failed`, reason `csv_only`)."

const createOperation = defineOperation({
  id: "exports.create",
  method: "POST",
  path: "/exports",
  summary: "Export a collection to a CSV or JSON lines file",
  description: `Start an export of \`resource_type\` (${exportableResourceTypes.map((t) => `\`${t}\``).join(", ")}; another type is 422 \`unsupported_resource\` on \`resource_type\`) with \`filters\`, the list route's query parameters as an object (a nested resource names its parents there: \`{ "product_id": "prd_…" }\` for modules and lessons, required), each problem 422 itemized under \`filters.<name>\`; a parent that does not exist is 422 on \`filters.<field>\`, reason \`not_found\`. Needs the resource's \`<plural>.read\` (403 \`permission_denied\` otherwise; a resource-limited grant exports only what it may read); the users' \`email\` filter needs \`users.read_personal\`. A user's \`email\`, \`document\` and \`phone\` are written only when the credential holds \`users.read_personal\` (else null, as on \`GET /users\`). Answers 202 with the export, \`queued\`; an operation (type \`export\`, one item) streams the collection from the store page by page into a file (\`fil_\`, purpose \`export\`) kept ${retentionDays} days after completion, then gone (404) and the export \`expired\`. ${formatText} Events \`export.created\`, \`export.completed\`, \`export.failed\`.`,
  tag,
  capability: "exports.create",
  body: CreateExportBody,
  idempotency: "required",
  success: { status: 202, description: "The export, queued.", schema: ExportSchema, headers: ["Location"] },
  errors: ["unsupported_resource", "operation_backlog_exceeded", "permission_denied"],
  handler: ({ body }) =>
    createExport(body).pipe(
      Effect.map((data) => ({ status: 202, body: { data }, headers: { location: `/api/v3/exports/${String(data.id)}` } }))
    )
})

const listOperation = defineOperation({
  id: "exports.list",
  method: "GET",
  path: "/exports",
  summary: "List the exports",
  description: "Newest first (`sort=created_at`: oldest first); filter by `status` and `resource_type`.",
  tag,
  capability: "exports.read",
  query: Schema.Struct({
    ...pageQuery("created_at"),
    status: Schema.optional(Schema.Literal(...exportStatuses)),
    resource_type: Schema.optional(Schema.String.pipe(Schema.maxLength(100)))
  }),
  idempotency: "none",
  success: { status: 200, description: "A page of exports.", schema: ExportSchema, collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    listExports({
      limit: pageLimit(query.limit),
      cursor: query.cursor,
      sort: query.sort,
      status: query.status,
      resourceType: query.resource_type
    }).pipe(Effect.map((body) => ({ status: 200, body })))
})

const getOperation = defineOperation({
  id: "exports.get",
  method: "GET",
  path: "/exports/{export_id}",
  summary: "Retrieve an export",
  tag,
  capability: "exports.read",
  params: { export_id: "export" },
  idempotency: "none",
  success: { status: 200, description: "The export.", schema: ExportSchema },
  errors: [],
  handler: ({ path }) => getExport(path.export_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
})

const ExportsReportQuery = Schema.Struct({
  created_after: Schema.optional(Timestamp.annotations({ description: "Exports made at or after this instant." })),
  created_before: Schema.optional(Timestamp.annotations({ description: "Exports made before this instant; after `created_after` (else 422)." })),
  resource_type: Schema.optional(Schema.String.pipe(Schema.maxLength(100))),
  limit: Schema.optional(LimitParam),
  cursor: Schema.optional(CursorParam)
})

const reportOperation = defineOperation({
  id: "reports.exports.get",
  method: "GET",
  path: "/reports/exports",
  summary: "Exports per resource type and status: how many, rows, bytes",
  description: reportText(
    EXPORTS_REPORT,
    "`created_before` not after `created_after` is 422 `validation_failed` on `created_before` (reason `empty_range`)."
  ),
  tag: "Reports",
  capability: "reports.read",
  query: ExportsReportQuery,
  idempotency: "none",
  success: { status: 200, description: "A page of groups.", schema: reportRowSchema(EXPORTS_REPORT, "ExportsReportRow"), collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    exportsReport({
      createdAfter: query.created_after,
      createdBefore: query.created_before,
      resourceType: query.resource_type,
      limit: pageLimit(query.limit),
      cursor: query.cursor
    }).pipe(Effect.map((body) => ({ status: 200, body })))
})

export const exportsRoutes: ReadonlyArray<Operation> = [createOperation, listOperation, getOperation, reportOperation]
