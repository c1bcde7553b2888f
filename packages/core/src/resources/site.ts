/** Resources of the "site" group (issue 4). Filled in by its description; see docs/resources.md. */
import type { OperationKind } from "../operations.js"
import type { ResourceDefinition } from "../resource.js"

export const siteResources: ReadonlyArray<ResourceDefinition> = []

export const siteOperationKinds: Readonly<Record<string, OperationKind>> = {}
