/**
 * Every described resource of the release, and the handlers of the operation types the
 * resources start. `@syllabus/http` derives routes from `resourceDefinitions`; the workers
 * run `operationKinds`. Each group of resources lives in a file of its own.
 */
import type { OperationKind } from "../operations.js"
import type { ResourceDefinition } from "../resource.js"
import { contentOperationKinds, contentResources } from "./content.js"
import { peopleOperationKinds, peopleResources } from "./people.js"
import { productsOperationKinds, productsResources } from "./products.js"
import { showcases } from "./showcases.js"
import { siteOperationKinds, siteResources } from "./site.js"
import { tagGroups } from "./tag-groups.js"
import { taxonomiesOperationKinds, taxonomiesResources } from "./taxonomies.js"
import { webhooksOperationKinds, webhooksResources } from "./webhooks.js"

export { showcases, tagGroups }
export * from "./content.js"
export * from "./people.js"
export * from "./products.js"
export * from "./site.js"
export * from "./taxonomies.js"
export * from "./webhooks.js"

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
