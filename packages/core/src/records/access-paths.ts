/**
 * The access paths of a described resource: every list the machinery builds from its
 * description (`listResources`) is one of these, so a store that keeps an index per path
 * answers every list of the resource from an index.
 *
 * A list always selects the tenant, the parent (nested resources) and `deleted` (the trash
 * is a list of its own); then
 * - each sort, both directions: ordered by the sort's value, ties by `id`;
 * - each filter: its field, then the default sort (a filtered list in the default order
 *   reads only what it returns; in another order, the filter's rows are sorted);
 * - `q`: a case-insensitive `contains` on the stored search text.
 * Unique keys are their own index already (the store's key table).
 */
import type { AccessPath } from "../ports/store.js"
import { type ResourceDefinition, SEARCH_FIELD } from "./resource.js"

type Order = Extract<AccessPath, { kind: "ordered" }>["order"]

const byId: Order = [{ field: "id", kind: "text" }]

const sortOrder = (sort: ResourceDefinition["sorts"][number]): Order =>
  sort.field === "id" ? byId : [{ field: sort.field, kind: sort.kind }, ...byId]

export const resourceAccessPaths = (definition: ResourceDefinition): ReadonlyArray<AccessPath> => {
  const type = definition.type
  const always = [...(definition.parent ? [definition.parent.field] : []), "deleted"]
  const ordered = (equals: ReadonlyArray<string>, order: Order): AccessPath => ({
    kind: "ordered",
    type,
    scope: "tenant",
    equals,
    order
  })
  const defaultOrder = sortOrder(definition.sorts[0]!)
  const paths: Array<AccessPath> = definition.sorts.map((sort) => ordered(always, sortOrder(sort)))
  for (const filter of Object.values(definition.filters ?? {})) {
    const { field, match } = filter.on
    paths.push(
      match === "equals"
        ? ordered([...always, field], defaultOrder)
        : ordered(always, [{ field, kind: match }, ...byId])
    )
  }
  if (definition.search !== undefined && definition.search.length > 0) {
    paths.push({ kind: "search", type, scope: "tenant", field: SEARCH_FIELD })
  }
  return paths
}
