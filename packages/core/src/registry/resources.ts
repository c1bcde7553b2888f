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
import { contentOperationKinds, contentResources } from "../content/content.js"
import { webhooksOperationKinds, webhooksResources } from "../events/webhooks.js"
import type { OperationKind } from "../operations/operations.js"
import { peopleOperationKinds, peopleResources } from "../people/people.js"
import { tagGroups } from "../people/tag-groups.js"
import type { ResourceDefinition } from "../records/resource.js"
import { siteOperationKinds, siteResources } from "../site/site.js"

export const resourceDefinitions: ReadonlyArray<ResourceDefinition> = [
  showcases,
  tagGroups,
  ...productsResources,
  ...contentResources,
  ...taxonomiesResources,
  ...peopleResources,
  ...siteResources,
  ...webhooksResources
]

export const operationKinds: Readonly<Record<string, OperationKind>> = {
  ...productsOperationKinds,
  ...contentOperationKinds,
  ...taxonomiesOperationKinds,
  ...peopleOperationKinds,
  ...siteOperationKinds,
  ...webhooksOperationKinds
}
