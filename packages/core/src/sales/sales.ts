/**
 * Resources of the "sales" group (release 3.2.0, docs/sales.md): deliveries (what a sale
 * grants), gateways and sales events (how sales arrive), funnels (how they are made). Each
 * resource is a file of this folder; each helper of the group adds its lines here.
 */
import type { OperationKind } from "../operations/operations.js"
import type { AccessPath } from "../ports/store.js"
import type { ResourceDefinition } from "../records/resource.js"
import { deliveries } from "./deliveries.js"
import { deliveryAccessPaths } from "./delivery-access.js"
import { deliveryTagApplicationKinds } from "./tag-applications.js"
import { funnels } from "./funnels.js"
import { gateways } from "./gateways.js"
import { salesEvents } from "./sales-events.js"

export * from "./deliveries.js"
export * from "./delivery-access.js"
export * from "./tag-applications.js"
export * from "./features.js"
export * from "./funnels.js"
export * from "./gateways.js"
export * from "./sales-events.js"
export * from "./gateway-notifications.js"

export const salesResources: ReadonlyArray<ResourceDefinition> = [deliveries, funnels]

/**
 * Described, but served by routes of their own and offered in no batch: gateways (a create
 * shows the signing secret once; a batch's items would keep the credentials 30 days) and sales
 * events (recorded from a gateway's notification only).
 */
export const salesOwnRouteResources: ReadonlyArray<ResourceDefinition> = [gateways, salesEvents]

export const salesOperationKinds: Readonly<Record<string, OperationKind>> = {
  ...deliveryTagApplicationKinds
}

/** The reads of the group outside the machinery's lists, each an index of the store. */
export const salesAccessPaths: ReadonlyArray<AccessPath> = [...deliveryAccessPaths]
