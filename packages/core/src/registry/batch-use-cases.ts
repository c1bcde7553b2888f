/**
 * The use cases the items of a batch run (`registry/batches.ts`), for the resources whose
 * single routes run use cases of their own rather than only the generic machinery. A batch
 * item runs exactly what its single route runs, so it passes the same checks and has the same
 * outcome; what a resource does not name here is the generic `createResource`,
 * `updateResource` or `deleteResource` of its description, shown by `resourceView`.
 *
 * The routes these mirror are `@syllabus/http`'s `routes/people.ts` (users, tags,
 * administrators) and `routes/webhooks.ts`.
 */
import { Effect } from "effect"
import type { Caller } from "../access/context.js"
import type { ApiError } from "../errors/errors.js"
import { createWebhook, webhooks } from "../events/webhooks.js"
import type { ItemServices } from "../operations/operations.js"
import {
  administrators,
  administratorView,
  createAdministrator,
  type CreateAdministratorInput,
  hashAdministratorPassword,
  removeAdministrator,
  tags,
  tagViews,
  updateAdministrator,
  type UpdateAdministratorInput,
  users,
  userViews
} from "../people/people.js"
import type { Crypto } from "../ports/crypto.js"
import type { JsonObject, Records, StoredRecord } from "../ports/store.js"
import { createResource, deleteResource, requireWriteReach, type ResourceDefinition, updateResource } from "../records/resource.js"
import { createTicket, tickets, ticketViews } from "../support/tickets.js"
import { funnels, funnelViews } from "../sales/funnels.js"

export type BatchAction = "create" | "update" | "delete"

/** The IDs of a nested resource's parents, by field (`{ product_id }`); empty for a top-level one. */
export type ParentIds = Readonly<Record<string, string | undefined>>

/** Representations as the current caller may see them, the shape of the routes' views (`userViews`). */
export type BatchView = (items: ReadonlyArray<JsonObject>) => Effect.Effect<ReadonlyArray<JsonObject>, ApiError, Caller | Records>

/**
 * What a resource's batch items run. Each handler receives an item as validated up front
 * (its schema, `key`, scope), without `key` and the parent fields; each is optional and
 * defaults to the generic machinery.
 */
export interface BatchUseCases {
  readonly create?: (parentIds: ParentIds, body: JsonObject) => Effect.Effect<StoredRecord, ApiError, ItemServices>
  readonly update?: (parentIds: ParentIds, id: string, patch: JsonObject) => Effect.Effect<StoredRecord, ApiError, ItemServices>
  /** Answers the record when it is kept (trash, a removed administrator), nothing when it is gone. */
  readonly delete?: (parentIds: ParentIds, id: string) => Effect.Effect<StoredRecord | undefined, ApiError, ItemServices>
  /** The representation of a written record (default `resourceView`). */
  readonly represent?: (record: StoredRecord) => JsonObject
  /**
   * The representation as the caller may see it: applied when the item runs (as the starter
   * of the operation) and again when `GET /operations/{id}/items` lists it (as that reader).
   */
  readonly view?: BatchView
  /**
   * What is stored of a valid item until it runs (items are kept 30 days): e.g. a password
   * replaced by its hash. Default: the item as sent.
   */
  readonly prepare?: (action: BatchAction, payload: JsonObject) => Effect.Effect<JsonObject, never, Crypto>
}

export interface BatchResource {
  readonly definition: ResourceDefinition
  readonly useCases: BatchUseCases
}

/**
 * The resources served by routes of their own, with the use cases those routes run. They are
 * not in `resourceDefinitions` (whose routes are derived), so their batches are declared here;
 * an entry here also takes precedence over the generic batches of a described resource.
 */
export const batchResources: ReadonlyArray<BatchResource> = [
  // Users: the generic writes (unique email: 409 `already_exists`; custom field values checked
  // by the description's `defaults` and `change`), personal data shown only with `users.read_personal`.
  { definition: users, useCases: { view: userViews } },
  // Tags: the generic writes with their rules (409 `tag_in_use` on delete), a live `users_count`.
  { definition: tags, useCases: { view: tagViews } },
  // Webhooks: `createWebhook` generates the signing secret. The secret is shown once, in the
  // answer of `POST /webhooks`; an item's result is kept 30 days and listed to anyone holding
  // `operations.read`, so it carries the webhook without its secret (as every read of a
  // webhook does): a webhook made by a batch gets a secret it can see with
  // `POST /webhooks/{webhook_id}/secret-rotations`. The destination checks (https to a public
  // host in production) are the description's `check`, run per item as for the route.
  {
    definition: webhooks,
    useCases: {
      create: (_parents, body) => Effect.map(createWebhook(body as never), ({ record }) => record)
    }
  },
  // Administrators: account-level, through their own use cases (unique email among those not
  // removed, the last active one cannot be removed, removal ends human mode); the password is
  // hashed when the batch starts, so no item ever stores it.
  {
    definition: administrators,
    useCases: {
      create: (_parents, body) => createAdministrator(body as unknown as CreateAdministratorInput),
      update: (_parents, id, patch) => updateAdministrator(id, patch as unknown as UpdateAdministratorInput, undefined),
      delete: (_parents, id) => removeAdministrator(id),
      represent: administratorView,
      prepare: (_action, payload) => hashAdministratorPassword(payload)
    }
  },
  // Tickets: `createTicket` writes the opening message with the ticket (as `POST
  // /support/tickets`); personal data of the requester shown only with `users.read_personal`.
  { definition: tickets, useCases: { create: (_parents, body) => createTicket(body), view: ticketViews } },
  // Funnels: the generic writes, shown with each step's conversion counts (as `/sales/funnels`).
  { definition: funnels, useCases: { view: funnelViews } }
]

/**
 * The write a resource's own route runs: its use case named above, else the generic machinery
 * of its description. Batch items (`registry/batches.ts`) and the changes of an applied
 * configuration plan (`bulk/configuration-plans.ts`) both run it.
 */
export const writeResource = (
  definition: ResourceDefinition,
  action: BatchAction,
  parents: ParentIds,
  id: string,
  body: JsonObject
): Effect.Effect<StoredRecord | undefined, ApiError, ItemServices> => {
  const useCases = batchResources.find((own) => own.definition.plural === definition.plural)?.useCases ?? {}
  // A client's write: the caller's scope holds as on the route (records/resource.ts, `ClientAccess`).
  const client = { checkScope: true } as const
  return action === "create"
    ? useCases.create
      ? useCases.create(parents, body)
      : createResource(definition, parents, body, client)
    : action === "update"
      ? useCases.update
        ? Effect.zipRight(requireWriteReach(definition, "update", parents, id), useCases.update(parents, id, body))
        : updateResource(definition, parents, id, body, undefined, client)
      : useCases.delete
        ? Effect.zipRight(requireWriteReach(definition, "delete", parents, id), useCases.delete(parents, id))
        : deleteResource(definition, parents, id, client)
}
