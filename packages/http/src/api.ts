/** The operations of the release, and the HTTP app that serves them. */
import type { Operation } from "./operation.js"
import { makeApp } from "./pipeline.js"
import { credentialOperations } from "./routes/credentials.js"
import { openApiOperation } from "./openapi.js"
import { platformOperations } from "./routes/platform.js"
import { uploadOperations } from "./routes/uploads.js"
import { operationOperations } from "./routes/operations.js"
import { eventOperations } from "./routes/events.js"
import { resourceDefinitions } from "@syllabus/core"
import { resourceOperations } from "./resources.js"
import { contentRoutes } from "./routes/content.js"
import { peopleRoutes } from "./routes/people.js"
import { productsRoutes } from "./routes/products.js"
import { siteRoutes } from "./routes/site.js"
import { taxonomiesRoutes } from "./routes/taxonomies.js"
import { webhooksRoutes } from "./routes/webhooks.js"

const served: ReadonlyArray<Operation> = [
  ...credentialOperations,
  ...resourceDefinitions.flatMap(resourceOperations),
  ...productsRoutes,
  ...contentRoutes,
  ...taxonomiesRoutes,
  ...peopleRoutes,
  ...siteRoutes,
  ...webhooksRoutes,
  ...uploadOperations,
  ...operationOperations,
  ...eventOperations,
  ...platformOperations
]

/** Every operation of the release, the description itself included. */
export const operations: ReadonlyArray<Operation> = [...served, openApiOperation(() => operations)]

export const app = makeApp(operations)
