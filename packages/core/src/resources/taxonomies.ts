/** Resources of the "taxonomies" group (issue 4). Filled in by its description; see docs/resources.md. */
import type { OperationKind } from "../operations.js"
import type { ResourceDefinition } from "../resource.js"

export const taxonomiesResources: ReadonlyArray<ResourceDefinition> = []

export const taxonomiesOperationKinds: Readonly<Record<string, OperationKind>> = {}
