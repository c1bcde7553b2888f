/** Resources of the "webhooks" group (issue 4). Filled in by its description; see docs/resources.md. */
import type { OperationKind } from "../operations.js"
import type { ResourceDefinition } from "../resource.js"

export const webhooksResources: ReadonlyArray<ResourceDefinition> = []

export const webhooksOperationKinds: Readonly<Record<string, OperationKind>> = {}
