/**
 * `GET /event-types`: the catalog of the public events of the release (§6): type, version,
 * visibility and payload keys. Derived from the resource descriptions, so a described
 * resource's events are in the catalog without a line more.
 */
import { EVENT_VERSION } from "../events/events.js"
import { operationFields } from "../operations/operations.js"
import { representationFields, type ResourceDefinition } from "../records/resource.js"
import { resourceDefinitions } from "./resources.js"

export interface EventTypeEntry {
  readonly object: "event_type"
  readonly type: string
  readonly version: number
  readonly visibility: "public"
  readonly resource_type: string
  /** Keys of `data.object` in the payload. */
  readonly payload_keys: ReadonlyArray<string>
}

/** Events beyond the lifecycle of every resource (publications, copies, reorders). */
const extraVerbs: Readonly<Record<string, ReadonlyArray<string>>> = {
  product: ["published", "reordered"],
  module: ["published"],
  lesson: ["copied", "published"],
  banner: ["reordered"]
}

const lifecycle = (definition: ResourceDefinition): ReadonlyArray<string> => [
  "created",
  "updated",
  ...(definition.trash ? ["trashed", "restored"] : ["deleted"]),
  ...(extraVerbs[definition.type] ?? [])
]

const entry = (resourceType: string, verb: string, keys: ReadonlyArray<string>): EventTypeEntry => ({
  object: "event_type",
  type: `${resourceType}.${verb}`,
  version: EVENT_VERSION,
  visibility: "public",
  resource_type: resourceType,
  payload_keys: [...keys]
})

export const eventTypeCatalog: ReadonlyArray<EventTypeEntry> = [
  ...resourceDefinitions.flatMap((definition) =>
    lifecycle(definition).map((verb) => entry(definition.type, verb, representationFields(definition)))
  ),
  entry("operation", "completed", operationFields),
  entry("operation", "failed", operationFields)
].sort((a, b) => (a.type < b.type ? -1 : 1))
