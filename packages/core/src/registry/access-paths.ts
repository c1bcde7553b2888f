/**
 * Every access path of the release (docs/architecture.md, "Access paths are indexes"): the
 * lists of every described resource, derived from the descriptions, and the housekeeping
 * reads across tenants, declared beside them. A store keeps one index per path; adding a
 * resource adds its paths here with nothing else to write.
 */
import { ADMINISTRATOR_TYPE } from "../access/credentials.js"
import { webhookDeliveryAccessPaths } from "../events/webhook-delivery.js"
import { operationsAccessPaths } from "../operations/operations.js"
import { type AccessPath, housekeepingPath } from "../ports/store.js"
import { resourceAccessPaths } from "../records/access-paths.js"
import { retentionAccessPaths } from "../trail/retention.js"
import { trailAccessPaths } from "../trail/trail.js"
import { eventsAccessPaths } from "../events/events.js"
import { productsAccessPaths } from "../catalog/products.js"
import { uploadsAccessPaths } from "../uploads/uploads.js"
import { filesAccessPaths } from "../uploads/file-content.js"
import { enrollmentsAccessPaths } from "../learning/enrollments.js"
import { progressAccessPaths } from "../learning/progress.js"
import { gamificationAccessPaths } from "../learning/gamification.js"
import { rewardsAccessPaths } from "../learning/rewards.js"
import { certificateDocumentsAccessPaths } from "../learning/certificate-documents.js"
import { reportsAccessPaths } from "../reports/reports.js"
import { mailAccessPaths } from "../mail/outbox.js"
import { supportReportAccessPaths } from "../reports/support-report.js"
import { commentsAccessPaths } from "../support/comments.js"
import { legalAccessPaths } from "../legal/term-acceptances.js"
import { replicasAccessPaths } from "../account/replicas.js"
import { salesAccessPaths } from "../sales/sales.js"
import { describedResources } from "./resources.js"
import { exportsAccessPaths } from "../bulk/exports.js"
import { importsAccessPaths } from "./imports.js"
import { configurationAccessPaths } from "../bulk/configuration-manifest.js"
import { exportsReportAccessPaths } from "../reports/exports-report.js"

/** Sign-in (`@syllabus/http`'s OAuth login) finds an administrator's other accounts by email. */
const signInAccessPaths: ReadonlyArray<AccessPath> = [housekeepingPath(ADMINISTRATOR_TYPE, ["email"], [{ field: "id", kind: "text" }])]

/** The paths declared beside the use cases that read them: housekeeping across tenants, and lists outside the machinery. */
export const declaredAccessPaths: ReadonlyArray<AccessPath> = [
  ...webhookDeliveryAccessPaths,
  ...operationsAccessPaths,
  ...uploadsAccessPaths,
  ...filesAccessPaths,
  ...retentionAccessPaths,
  ...eventsAccessPaths,
  ...productsAccessPaths,
  ...trailAccessPaths,
  ...enrollmentsAccessPaths,
  ...progressAccessPaths,
  ...gamificationAccessPaths,
  ...rewardsAccessPaths,
  ...certificateDocumentsAccessPaths,
  ...signInAccessPaths,
  ...reportsAccessPaths,
  ...mailAccessPaths,
  ...commentsAccessPaths,
  ...supportReportAccessPaths,
  ...legalAccessPaths,
  ...replicasAccessPaths,
  ...salesAccessPaths,
  ...exportsAccessPaths,
  ...importsAccessPaths,
  ...configurationAccessPaths,
  ...exportsReportAccessPaths
]

/** The paths of `definitions` (every described resource by default) and the declared ones. */
export const accessPaths = (definitions = describedResources): ReadonlyArray<AccessPath> => [
  ...definitions.flatMap(resourceAccessPaths),
  ...declaredAccessPaths
]
