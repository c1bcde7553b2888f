/**
 * Imports over HTTP (`/imports`, release 3.2.0; decisions in core's registry/imports.ts and
 * docs/imports.md): start one from an uploaded file (202, its operation reads the file and
 * writes the rows, one item per row), and read them.
 */
import { CreateImportBody, createImport, getImport, importStatuses, importTargets, listImports, Timestamp } from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"

const tag = "Imports"

const ImportSchema = Schema.Struct({
  object: Schema.Literal("import"),
  id: Schema.String,
  file_id: Schema.String.annotations({ description: "The file read (purpose `import`)." }),
  target: Schema.Literal(...importTargets),
  format: Schema.Literal("csv", "jsonl", "xlsx").annotations({ description: "From the file's content type: `text/csv`, `application/json` (JSON lines), XLSX." }),
  mapping: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })).annotations({ description: "Column → field, as given; null: every column is the field of its name." }),
  dry_run: Schema.Boolean,
  status: Schema.Literal(...importStatuses).annotations({ description: "The operation's: `failed` when at least one row failed (see `failed_rows` and the operation's items)." }),
  rows: Schema.Int.annotations({ description: "Rows read from the file so far (each an item of the operation)." }),
  valid_rows: Schema.Int.annotations({ description: "Rows written (in a dry run: rows that would be)." }),
  failed_rows: Schema.Int.annotations({ description: "Rows failed, each with its itemized error in the operation's items (`key`: the row number)." }),
  operation_id: Schema.String.annotations({ description: "The operation doing the work: `GET /operations/{operation_id}/items` lists the rows." }),
  created_at: Timestamp,
  completed_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "Import" }) as unknown as Schema.Schema.AnyNoContext

const rowsText = [
  "The rows are read by the operation's worker, streaming the file (any size up to 5 GiB, with flat memory), each recorded as an item whose `key` is its row number (CSV/XLSX: the header is row 1; JSON lines: the line number), then run.",
  "`mapping` renames columns (only mapped columns are read; `custom_fields.city` sets one key of an object field); without it every column is the field of its name, and fields of the representation a create does not take (`id`, `object`, `created_at`…) are left out, so an export's JSON lines import as they are. An empty cell or a null is a field not given; a CSV/XLSX text is read as the field's type (number, boolean, JSON for arrays and objects).",
  "Each row runs what the target's create route runs (a batch item of `<target>.create`: the same checks and codes), failing with every problem itemized in the item's `error.details`; a row the file could not give is `validation_failed` on `file_id`, reason `unreadable_row`.",
  "`dry_run: true` runs every row's checks and write in a unit of work rolled back: nothing is kept, each row valid or failed as it would be (rows are checked against the account, not against each other).",
  "A row's write and its item's outcome commit together: a worker restart or `POST /operations/{operation_id}/resumptions` never writes a row twice."
].join(" ")

const createOperation = defineOperation({
  id: "imports.create",
  method: "POST",
  path: "/imports",
  summary: "Import a file of records (CSV, JSON lines, XLSX): one operation item per row",
  description: `Start an import of a file uploaded with purpose \`import\` (another purpose, or a file of another account or environment: 422 \`validation_failed\` on \`file_id\`) into \`target\`: ${importTargets.map((t) => `\`${t}\``).join(", ")} (another is 422 \`unsupported_resource\` on \`target\`; \`tag_applications\` rows are \`{ user_id, tag_id }\`, a tag added to a user, never twice). Needs the target's write (\`<target>.create\`, \`users.update\` for \`tag_applications\`; else 403 \`permission_denied\`). Answers 202 with the import, \`queued\`. ${rowsText} Events \`import.created\`, \`import.completed\`.`,
  tag,
  capability: "imports.create",
  body: CreateImportBody,
  idempotency: "required",
  success: { status: 202, description: "The import, queued.", schema: ImportSchema, headers: ["Location"] },
  errors: ["unsupported_resource", "operation_backlog_exceeded", "permission_denied", "too_many_items"],
  handler: ({ body }) =>
    createImport(body).pipe(Effect.map((data) => ({ status: 202, body: { data }, headers: { location: `/api/v3/imports/${String(data.id)}` } })))
})

const listOperation = defineOperation({
  id: "imports.list",
  method: "GET",
  path: "/imports",
  summary: "List the imports",
  description: "Newest first (`sort=created_at`: oldest first); filter by `target`.",
  tag,
  capability: "imports.read",
  query: Schema.Struct({ ...pageQuery("created_at"), target: Schema.optional(Schema.Literal(...importTargets)) }),
  idempotency: "none",
  success: { status: 200, description: "A page of imports.", schema: ImportSchema, collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    listImports({ limit: pageLimit(query.limit), cursor: query.cursor, sort: query.sort, target: query.target }).pipe(
      Effect.map((body) => ({ status: 200, body }))
    )
})

const getOperation = defineOperation({
  id: "imports.get",
  method: "GET",
  path: "/imports/{import_id}",
  summary: "Retrieve an import: status and counts of valid and failed rows",
  tag,
  capability: "imports.read",
  params: { import_id: "import" },
  idempotency: "none",
  success: { status: 200, description: "The import.", schema: ImportSchema },
  errors: [],
  handler: ({ path }) => getImport(path.import_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
})

export const importsRoutes: ReadonlyArray<Operation> = [createOperation, listOperation, getOperation]
