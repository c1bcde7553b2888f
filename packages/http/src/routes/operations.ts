/** Asynchronous operations (§2.3, open-points "Operations") over HTTP: read and follow them. */
import { getOperation, listOperationItems, listOperations } from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { OperationItemSchema, OperationSchema } from "../schemas.js"

const tag = "Operations"
const params = { operation_id: "operation" } as const

export const operationOperations = [
  defineOperation({
    id: "operations.list",
    method: "GET",
    path: "/operations",
    summary: "The asynchronous operations of the environment, newest first, kept 30 days.",
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
      listOperations({ limit: pageLimit(query.limit), cursor: query.cursor, status: query.status, type: query.type }).pipe(
        Effect.map((body) => ({ status: 200, body }))
      )
  }),
  defineOperation({
    id: "operations.get",
    method: "GET",
    path: "/operations/{operation_id}",
    summary: "An operation: status, progress and, when it failed, its first failed item.",
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
    summary: "The items of an operation, each with its own status and error.",
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
