/** The operations of the release, and the HTTP app that serves them. */
import { Effect } from "effect"
import { healthApp } from "./health.js"
import type { Operation } from "./operation.js"
import { makeApp, type OutsideApp } from "./pipeline.js"
import { oauthApp } from "./oauth/app.js"
import { gatewayNotificationsApp } from "./gateway-notifications.js"
import { salesEventsRoutes } from "./routes/sales-events.js"
import { credentialOperations } from "./routes/credentials.js"
import { type Deprecations, makeDescription, openApiOperation } from "./openapi.js"
import { representationExamples } from "./openapi-examples.js"
import { docsApp } from "./docs-page.js"
import { platformOperations } from "./routes/platform.js"
import { sandboxEventOperations } from "./routes/sandbox-events.js"
import { uploadOperations } from "./routes/uploads.js"
import { operationOperations } from "./routes/operations.js"
import { eventOperations } from "./routes/events.js"
import { eventStreamOperations } from "./routes/event-streams.js"
import { resourceDefinitions } from "@syllabus/core"
import { resourceOperations } from "./resources.js"
import { contentRoutes } from "./routes/content.js"
import { peopleRoutes } from "./routes/people.js"
import { productsRoutes } from "./routes/products.js"
import { siteRoutes } from "./routes/site.js"
import { taxonomiesRoutes } from "./routes/taxonomies.js"
import { webhooksRoutes } from "./routes/webhooks.js"
import { webhookDeliveryRoutes } from "./routes/webhook-deliveries.js"
import { certificateRoutes } from "./routes/certificates.js"
import { enrollmentsRoutes } from "./routes/enrollments.js"
import { examsRoutes } from "./routes/exams.js"
import { gamificationRoutes } from "./routes/gamification.js"
import { reportsRoutes } from "./routes/reports.js"
import { emailRoutes } from "./routes/email.js"
import { supportRoutes } from "./routes/support.js"
import { questionsRoutes } from "./routes/questions.js"
import { commentsRoutes } from "./routes/comments.js"
import { legalRoutes } from "./routes/legal.js"
import { domainsRoutes } from "./routes/domains.js"
import { deliveriesRoutes } from "./routes/deliveries.js"
import { funnelsRoutes } from "./routes/funnels.js"
import { replicasRoutes } from "./routes/replicas.js"
import { configurationPlansRoutes } from "./routes/configuration-plans.js"
import { exportsRoutes } from "./routes/exports.js"
import { importsRoutes } from "./routes/imports.js"

const served: ReadonlyArray<Operation> = [
  ...credentialOperations,
  ...resourceDefinitions.flatMap(resourceOperations),
  ...productsRoutes,
  ...contentRoutes,
  ...taxonomiesRoutes,
  ...peopleRoutes,
  ...siteRoutes,
  ...webhooksRoutes,
  ...webhookDeliveryRoutes,
  ...certificateRoutes,
  ...enrollmentsRoutes,
  ...examsRoutes,
  ...gamificationRoutes,
  ...reportsRoutes,
  ...emailRoutes,
  ...supportRoutes,
  ...questionsRoutes,
  ...commentsRoutes,
  ...legalRoutes,
  ...domainsRoutes,
  ...deliveriesRoutes,
  ...salesEventsRoutes,
  ...funnelsRoutes,
  ...replicasRoutes,
  ...configurationPlansRoutes,
  ...exportsRoutes,
  ...importsRoutes,
  ...uploadOperations,
  ...operationOperations,
  ...eventOperations,
  ...eventStreamOperations,
  ...platformOperations,
  // The samples of `POST /sandbox/events` are the description's examples (read when first asked for).
  ...sandboxEventOperations(representationExamples(() => description(noDeprecations)))
]

const noDeprecations: Deprecations = new Map()

/** The description of every operation, served at `/api/v3/openapi.json` and `/docs/openapi.json`. */
const description = makeDescription(() => operations)

/** Every operation of the release, the description itself included. */
export const operations: ReadonlyArray<Operation> = [...served, openApiOperation(description)]

/** The public reference at `/docs` (no credential), with the description the server serves. */
const docs = docsApp((settings) => description(settings.deprecations))

/**
 * The paths outside `/api/v3`: the operators' probes (`/livez`, `/readyz`), the public reference
 * (`/docs`), the payment gateways' signed notifications (`/gateways/{gateway_id}/notifications`),
 * then the OAuth server.
 */
const outside: OutsideApp = (request) =>
  Effect.flatMap(healthApp(request), (answered) =>
    answered !== undefined
      ? Effect.succeed(answered)
      : Effect.flatMap(docs(request), (documented) =>
        documented !== undefined
          ? Effect.succeed(documented)
          : Effect.flatMap(gatewayNotificationsApp(request), (notified) => (notified !== undefined ? Effect.succeed(notified) : oauthApp(request)))
      )
  )

export const app = makeApp(operations, outside)
