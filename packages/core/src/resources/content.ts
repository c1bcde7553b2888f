/** Resources of the "content" group (issue 4). Filled in by its description; see docs/resources.md. */
import type { OperationKind } from "../operations.js"
import type { ResourceDefinition } from "../resource.js"

export const contentResources: ReadonlyArray<ResourceDefinition> = []

export const contentOperationKinds: Readonly<Record<string, OperationKind>> = {}
