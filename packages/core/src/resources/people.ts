/** Resources of the "people" group (issue 4). Filled in by its description; see docs/resources.md. */
import type { OperationKind } from "../operations.js"
import type { ResourceDefinition } from "../resource.js"

export const peopleResources: ReadonlyArray<ResourceDefinition> = []

export const peopleOperationKinds: Readonly<Record<string, OperationKind>> = {}
