/** Resources of the "products" group (issue 4). Filled in by its description; see docs/resources.md. */
import type { OperationKind } from "../operations.js"
import type { ResourceDefinition } from "../resource.js"

export const productsResources: ReadonlyArray<ResourceDefinition> = []

export const productsOperationKinds: Readonly<Record<string, OperationKind>> = {}
