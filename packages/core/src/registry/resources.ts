/**
 * Every described resource of the release, and the handlers of the operation types the
 * resources start. `@syllabus/http` derives routes from `resourceDefinitions`; the workers
 * run `operationKinds`. Each group of resources lives in its feature's folder; this list is
 * the one place that knows them all, and only what is derived from all of them (capability
 * catalog, event types, batches) imports it.
 */
import { productsOperationKinds, productsResources } from "../catalog/products.js"
import { showcases } from "../catalog/showcases.js"
import { taxonomiesOperationKinds, taxonomiesResources } from "../catalog/taxonomies.js"
import { attachments } from "../content/content-catalog.js"
import { contentOperationKinds, contentResources } from "../content/content.js"
import { webhooks, webhooksOperationKinds, webhooksResources } from "../events/webhooks.js"
import { certificates } from "../learning/certificates.js"
import { pointEntries } from "../learning/gamification.js"
import { learningResources } from "../learning/learning.js"
import type { OperationKind } from "../operations/operations.js"
import { administrators } from "../people/people-administrators.js"
import { tags, users } from "../people/people-users.js"
import { peopleOperationKinds, peopleResources } from "../people/people.js"
import type { ResourceDefinition } from "../records/resource.js"
import { siteOperationKinds, siteResources } from "../site/site.js"
import { supportReplyResources, supportResources } from "../support/support.js"
import { legalTermVersions } from "../legal/legal-terms.js"
import { legalResources } from "../legal/legal.js"
import { domains } from "../account/domains.js"
import { replicas, replicasOperationKinds } from "../account/replicas.js"
import { configurationPlanOperationKinds } from "../bulk/configuration-plans.js"
import { writeResource } from "./batch-use-cases.js"
import { salesOperationKinds, salesOwnRouteResources, salesResources } from "../sales/sales.js"
import { exportsOperationKinds } from "../bulk/exports.js"

export const resourceDefinitions: ReadonlyArray<ResourceDefinition> = [
  showcases,
  ...productsResources,
  ...contentResources,
  ...taxonomiesResources,
  ...peopleResources,
  ...siteResources,
  ...webhooksResources,
  ...learningResources,
  ...supportResources,
  ...legalResources,
  domains,
  ...salesResources
]

/**
 * Every described resource, those served by their own routes included (users and tags, whose
 * views depend on the caller; administrators, kept at the account level; webhooks, created
 * with a secret; a lesson's attachments, replaced as a set): what is derived from the
 * descriptions alone, such as the access paths a store indexes, covers them all.
 */
export const describedResources: ReadonlyArray<ResourceDefinition> = [
  ...resourceDefinitions,
  users,
  tags,
  administrators,
  webhooks,
  attachments,
  // Issued certificates: read through their derived list/get; issued by `issueCertificateIfEarned`.
  certificates,
  // The points ledger: read through its derived list/get; written by `awardPoints`.
  pointEntries,
  // A legal term's published versions: read through their derived list/get; written when the term's text changes.
  legalTermVersions,
  // A lesson question's replies: served by routes/questions.ts under the questions' capabilities.
  ...supportReplyResources,
  // Gateways (their secret shown once, no batches) and sales events (recorded from notifications): routes/sales-events.ts.
  ...salesOwnRouteResources,
  // Replica links: the create answers a token once, the update and unlink start operations (routes/replicas.ts).
  replicas
]

export const operationKinds: Readonly<Record<string, OperationKind>> = {
  ...productsOperationKinds,
  ...contentOperationKinds,
  ...taxonomiesOperationKinds,
  ...peopleOperationKinds,
  ...siteOperationKinds,
  ...webhooksOperationKinds,
  ...salesOperationKinds,
  ...replicasOperationKinds,
  ...exportsOperationKinds,
  // A configuration plan's application: one item per change (bulk/configuration-plans.ts).
  ...configurationPlanOperationKinds(writeResource)
}
