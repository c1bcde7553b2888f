/** `GET /openapi.json`: the OpenAPI 3.1 description, derived from the operation list. */
import { Effect } from "effect"
import { defineOperation, type Operation } from "./operation.js"
import { RELEASE } from "./services.js"

export const openApiDocument = (operations: ReadonlyArray<Operation>) => ({
  openapi: "3.1.0",
  info: { title: "Course-platform administration API", version: RELEASE },
  paths: Object.fromEntries(operations.map((op) => [op.path, {}]))
})

export const openApiOperation = (operations: () => ReadonlyArray<Operation>) =>
  defineOperation({
    id: "openapi.get",
    method: "GET",
    path: "/openapi.json",
    summary: "This description, of the latest release.",
    tag: "Service",
    capability: "authenticated",
    idempotency: "none",
    success: { status: 200, description: "The OpenAPI 3.1 document." },
    errors: [],
    handler: () => Effect.sync(() => ({ status: 200, body: openApiDocument(operations()) as never }))
  })
