/**
 * Every described resource of the release, and the handlers of the operation types the
 * resources start. `@syllabus/http` derives routes from `resourceDefinitions`; the workers
 * run `operationKinds`.
 */
import type { OperationKind } from "../operations.js"
import type { ResourceDefinition } from "../resource.js"
import { showcases } from "./showcases.js"
import { tagGroups } from "./tag-groups.js"

export { showcases, tagGroups }

export const resourceDefinitions: ReadonlyArray<ResourceDefinition> = [showcases, tagGroups]

export const operationKinds: Readonly<Record<string, OperationKind>> = {}
