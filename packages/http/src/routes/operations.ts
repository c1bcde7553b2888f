/** Asynchronous operations (§2.3, open-points "Operations") over HTTP: read and follow them. */
import {
  batchTypeNames,
  cancelOperation,
  getOperation,
  listOperationItems,
  listOperations,
  resumeOperation,
  StartBatchBody,
  startBatch
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { OperationItemSchema, OperationSchema } from "../schemas.js"

const tag = "Operations"
const params = { operation_id: "operation" } as const

/** A 202 with the operation and where to follow it. */
export const accepted = (operation: { readonly id?: unknown }) => ({
  status: 202,
  body: { data: operation as never },
  headers: { location: `/api/v3/operations/${String(operation.id)}` }
})

export const operationOperations = [
  defineOperation({
    id: "operations.list",
    method: "GET",
    path: "/operations",
    summary: "List the asynchronous operations, kept 30 days",
    description: "The asynchronous operations of the environment, newest first (`sort=created_at`: oldest first), each kept 30 days from its creation (until its `expires_at`), whatever its status.",
    tag,
    capability: "operations.read",
    query: Schema.Struct({
      ...pageQuery("created_at"),
      status: Schema.optional(Schema.Literal("queued", "running", "succeeded", "failed", "canceled")),
      type: Schema.optional(Schema.String)
    }),
    idempotency: "none",
    success: { status: 200, description: "A page of operations.", schema: OperationSchema, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ query }) =>
      listOperations({ limit: pageLimit(query.limit), cursor: query.cursor, sort: query.sort, status: query.status, type: query.type }).pipe(
        Effect.map((body) => ({ status: 200, body }))
      )
  }),
  defineOperation({
    id: "operations.create",
    method: "POST",
    path: "/operations",
    summary: "Start a batch of creates, updates or deletes",
    description: `Start a batch: \`{ type, items: [{ key, ...payload }] }\`, up to 1,000 items, each a create, update or delete of one resource. Types: ${batchTypeNames.length} (\`<resource>.create|update|delete\`), e.g. \`showcases.create\`, \`users.create\`. Each item runs what the resource's own route runs, with the same checks; its \`result\` is \`{ id, object }\`, the resource as the caller may see it (a user's personal data only with \`users.read_personal\`). A webhook's signing secret is never in a result (results are kept 30 days): get one with \`POST /webhooks/{webhook_id}/secret-rotations\`.`,
    tag,
    capability: "operations.create",
    body: StartBatchBody,
    idempotency: "required",
    success: { status: 202, description: "The queued operation.", schema: OperationSchema, headers: ["Location"] },
    errors: ["operation_type_unknown", "duplicate_item_key", "item_invalid", "too_many_items", "operation_backlog_exceeded", "permission_denied"],
    handler: ({ body }) => startBatch(body).pipe(Effect.map(accepted))
  }),
  defineOperation({
    id: "operations.cancellations.create",
    method: "POST",
    path: "/operations/{operation_id}/cancellations",
    summary: "Stop an operation: a queued one at once, a running one before its next item.",
    tag,
    capability: "operations.cancel",
    params,
    idempotency: "required",
    success: { status: 200, description: "The operation, `cancellation_requested: true`.", schema: OperationSchema },
    errors: ["operation_not_cancelable"],
    handler: ({ path }) => cancelOperation(path.operation_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "operations.resumptions.create",
    method: "POST",
    path: "/operations/{operation_id}/resumptions",
    summary: "Run again the items of a failed operation that failed for an outage (not the refused ones).",
    description:
      "Queues again the items of a `failed` operation that failed for an outage; the refused ones stay as they are. Refused with 422 `operation_not_resumable`, reason `no_failed_run` when the operation's run did not fail (queued, running, succeeded or canceled), `no_recoverable_items` when it failed but none of its failed items failed for an outage.",
    tag,
    capability: "operations.create",
    params,
    idempotency: "required",
    success: { status: 200, description: "The operation, queued again.", schema: OperationSchema },
    errors: ["operation_not_resumable"],
    handler: ({ path }) => resumeOperation(path.operation_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "operations.get",
    method: "GET",
    path: "/operations/{operation_id}",
    summary: "Get an asynchronous operation: status, progress, first failure",
    description: "An operation: status, progress and, when it failed, its first failed item. 404 once past its `expires_at` (30 days after creation).",
    tag,
    capability: "operations.read",
    params,
    idempotency: "none",
    success: { status: 200, description: "The operation.", schema: OperationSchema },
    errors: [],
    handler: ({ path }) => getOperation(path.operation_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "operations.items.list",
    method: "GET",
    path: "/operations/{operation_id}/items",
    summary: "List the items of an operation, each with its status and error",
    description: "The items of an operation, each with its own status and error; kept as long as the operation (404 after its `expires_at`).",
    tag,
    capability: "operations.read",
    params,
    query: Schema.Struct({ limit: pageQuery().limit, cursor: pageQuery().cursor }),
    idempotency: "none",
    success: { status: 200, description: "A page of items.", schema: OperationItemSchema, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ path, query }) =>
      listOperationItems(path.operation_id!, { limit: pageLimit(query.limit), cursor: query.cursor }).pipe(
        Effect.map((body) => ({ status: 200, body }))
      )
  })
]
