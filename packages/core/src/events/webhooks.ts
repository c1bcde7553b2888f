/**
 * Webhooks as resources (§2.3, §4.3, §6, open-points "Events and webhooks"): destinations
 * with their event types, resource filters, rate, timeout and the event `payload_version`
 * pinned at creation. Each has a Standard Webhooks signing secret (`whsec_…`), shown once at
 * creation and at each rotation, and kept in its record (delivery signs with it) but never
 * in a representation, an event or a list. A rotation keeps the previous secret valid for a
 * grace period (24 hours by default, `signing-secrets.ts`), during which deliveries carry a
 * signature by each.
 *
 * - Event types: names (`product.created`) or patterns with `*` for a whole part
 *   (`product.*`, `*.deleted`; `*` alone: every type), the shapes `syllabus events tail` takes.
 *   A partial wildcard (`prod*.created`) or another shape is 422 `invalid_value`, reason
 *   `malformed_event_type`. No type catalog check: a name no event has yet is kept, as a type
 *   of a later release may be.
 * - `health` is not part of the webhook's record: deliveries rewrite it in a record of its own
 *   (`webhook-delivery.ts`), so it never changes the webhook's `revision`, ETag or events; an
 *   `If-Match` read before any number of deliveries still matches. Nothing switches a webhook
 *   off by itself: `status` changes only by a client's write.
 *
 * The derived routes serve get, update and delete; create (the secret shown once), the list
 * (the `event_type` filter) and secret rotations are operations of the group.
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { covers } from "../access/policies.js"
import { READ_PERSONAL } from "../access/scope.js"
import { products } from "../catalog/products.js"
import { apiError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import type { OperationKind } from "../operations/operations.js"
import { type JsonObject, Records, type StoredRecord, type Where } from "../ports/store.js"
import {
  createResource,
  defineResource,
  equalsFilter,
  listResources,
  loadResource,
  referenceProblems,
  type ResourceDefinition,
  resourceView,
  ruleViolation,
  saveResource
} from "../records/resource.js"
import { Enum, Integer, List, PublicId, Text } from "../records/schema.js"
import { recordChange } from "../trail/audit.js"
import { emitEvent, EVENT_VERSION, EVENTS_READ, previousAttributes } from "./events.js"
import {
  firstSecretFields,
  newSigningSecret,
  PreviousSecretExpiresAt,
  PreviousSecretExpiresIn,
  rotatedSecretFields,
  SECRET_FIELDS
} from "./signing-secrets.js"
import { destinationProblem } from "./webhooks-destination.js"
import { ALL_EVENTS, NO_HEALTH, SHOWS_PERSONAL_DATA, subscriptionsOf, WEBHOOK_HEALTH_TYPE } from "./webhook-delivery.js"

// ---------------------------------------------------------------------------------------
// Fields

const Status = Enum("active", "inactive")
const EVENT_TYPE_PATTERN = /^[a-z_]+\.[a-z_]+$/
/** A subscription: a name or `*` for each part, or `*` alone. */
const SUBSCRIPTION_PATTERN = /^(\*|[a-z_]+)\.(\*|[a-z_]+)$/

/** An event type (`product.created`) or `*` for every type: what `GET /webhooks?event_type=` names. */
export const EventTypeName = Schema.String.annotations({ message: () => "invalid_type|expected=string" }).pipe(
  Schema.filter((s) => (s.length <= 100 && (s === ALL_EVENTS || EVENT_TYPE_PATTERN.test(s))) || "invalid_value"),
  Schema.annotations({ jsonSchema: { type: "string", pattern: "^([a-z_]+\\.[a-z_]+|\\*)$", maxLength: 100 } })
)

/** What a webhook subscribes to: an event type, or a pattern with `*` for a whole part (`product.*`, `*.deleted`, `*`). */
const EventTypeSubscription = Schema.String.annotations({ message: () => "invalid_type|expected=string" }).pipe(
  Schema.filter((s) => (s.length <= 100 && (s === ALL_EVENTS || SUBSCRIPTION_PATTERN.test(s))) || "invalid_value|reason=malformed_event_type"),
  Schema.annotations({ jsonSchema: { type: "string", pattern: "^((\\*|[a-z_]+)\\.(\\*|[a-z_]+)|\\*)$", maxLength: 100 } })
)

const NonEmpty = <A, I>(list: Schema.Schema<ReadonlyArray<A>, I>) =>
  list.pipe(
    Schema.filter((items) => items.length >= 1 || "too_short|min=1"),
    Schema.annotations({ jsonSchema: { minItems: 1 } })
  )

const EventTypes = NonEmpty(List(EventTypeSubscription)).annotations({
  description:
    "Event types delivered, 1 to 1,000: names (`product.created`) or patterns with `*` for a whole part (`product.*`: every event of products; `*.deleted`: every removal; `*`: every type). A partial wildcard (`prod*.created`) is 422 `invalid_value`, reason `malformed_event_type`."
})

const ResourceFiltersBody = Schema.Struct({
  product_id: Schema.optional(
    Schema.NullOr(NonEmpty(List(PublicId("product")))).annotations({
      description: "Only events of these products and of what they contain; `null`: every product."
    })
  )
}).annotations({
  description: "Restricts deliveries to events of these resources; a filter omitted or `null` matches all (`{}`: no filters)."
})

/**
 * An optional object field that is never `undefined` (JSON has none): a problem inside it is
 * then itemized alone, not also as "not undefined" on the field itself.
 */
const exactOptional = <A, I>(schema: Schema.Schema<A, I>) => Schema.optionalWith(schema, { exact: true })

// The description goes in `jsonSchema`: `Text` writes a whole JSON Schema, which a plain `description` would not reach.
// A URL that does not parse is refused with the body's other problems (itemized together); where it may point is a rule (`check`).
const Url = Text({ min: 1, max: 2048 }).pipe(Schema.filter((s) => URL.canParse(s) || "invalid_value|reason=malformed_url")).annotations({
  jsonSchema: {
    type: "string",
    format: "uri",
    minLength: 1,
    maxLength: 2048,
    description:
      "Destination. Production: `https` to a public host (else 422 on `url`, reason `https_required` or `host_not_public`); the sandbox also takes `http` and loopback."
  }
})

const Timestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

const DEFAULT_MAX_PER_SECOND = 10
const DEFAULT_TIMEOUT_MS = 10_000

export const CreateWebhookBody = Schema.Struct({
  url: Url,
  description: Schema.optional(Schema.NullOr(Text({ max: 500 }))),
  event_types: EventTypes,
  status: Schema.optional(Status),
  max_per_second: Schema.optional(Integer({ min: 1, max: 100 })),
  timeout_ms: Schema.optional(Integer({ min: 1000, max: 30_000 })),
  payload_version: Schema.optional(
    Integer({ min: 1, max: EVENT_VERSION }).annotations({
      jsonSchema: {
        type: "integer",
        minimum: 1,
        maximum: EVENT_VERSION,
        description: "Version of the event payloads delivered; default: the current one. Not writable afterwards."
      }
    })
  ),
  resource_filters: exactOptional(ResourceFiltersBody)
}).annotations({ identifier: "CreateWebhookBody" })

const UpdateWebhookBody = Schema.Struct({
  url: Schema.optional(Url),
  description: Schema.optional(Schema.NullOr(Text({ max: 500 }))),
  event_types: Schema.optional(EventTypes),
  status: Schema.optional(Status),
  max_per_second: Schema.optional(Integer({ min: 1, max: 100 })),
  timeout_ms: Schema.optional(Integer({ min: 1000, max: 30_000 })),
  /** Pinned at creation: sending it is 422 `not_allowed` (a new version needs a new webhook). */
  payload_version: Schema.optional(
    Schema.Never.annotations({ message: () => "not_allowed", description: "Pinned at creation: not writable (422 `not_allowed`)." })
  ),
  /** Replaces the whole object: filters omitted from it are cleared. */
  resource_filters: exactOptional(ResourceFiltersBody)
}).annotations({ identifier: "UpdateWebhookBody" })

type CreateBody = typeof CreateWebhookBody.Type
type UpdateBody = typeof UpdateWebhookBody.Type

// ---------------------------------------------------------------------------------------
// Stored form

/**
 * `|type|…|` of the subscribed types: the store finds the webhooks of a type (or `*`) with a
 * `contains` condition on it.
 */
const eventTypesIndex = (types: ReadonlyArray<string>) => `|${types.join("|")}|`

/** The event types as stored: in the order given, each once. */
const eventTypeFields = (types: ReadonlyArray<string>) => {
  const unique = [...new Set(types)]
  return { event_types: unique, event_types_index: eventTypesIndex(unique) }
}

const resourceFilters = (filters: CreateBody["resource_filters"]): JsonObject => ({
  product_id: filters?.product_id ? [...new Set(filters.product_id)] : null
})

/**
 * What a webhook selects must be what the credential setting it up could read through events
 * (access/scope.ts): the products of its `resource_filters` readable by it (else 422, reason
 * `not_found`), and, for a credential whose `events.read` is limited, named and within that
 * reach (else 422 on `resource_filters.product_id`, reason `limited_credential`).
 */
const checkSelection = (data: JsonObject, previous: JsonObject | null) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const named = ((data.resource_filters as JsonObject | null)?.product_id ?? null) as ReadonlyArray<string> | null
    const before = ((previous?.resource_filters as JsonObject | null)?.product_id ?? null) as ReadonlyArray<string> | null
    const fresh = (named ?? []).filter((id) => !(before ?? []).includes(id))
    const problems = yield* referenceProblems(products, fresh, (i) => `resource_filters.product_id[${(named ?? []).indexOf(fresh[i]!)}]`)
    if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
    if (!covers(caller.grant, EVENTS_READ, named)) {
      return yield* Effect.fail(ruleViolation([{ field: "resource_filters.product_id", code: "required", reason: "limited_credential" }]))
    }
  })

/** What a client's write stores of its personal-data permission on the webhook. */
const personalDataOf = Effect.map(Caller, (caller) => ({ [SHOWS_PERSONAL_DATA]: covers(caller.grant, READ_PERSONAL, null) }))

/** The create body as `createWebhook` passes it: with the secret it generated (a client cannot send it: bodies are strict). */
type CreateInput = CreateBody & { readonly signing_secret?: string }

export const webhooks: ResourceDefinition = defineResource({
  type: "webhook",
  idKind: "webhook",
  plural: "webhooks",
  path: "/webhooks",
  tag: "Webhooks",
  fields: {
    description: Schema.NullOr(Schema.String),
    url: Schema.String,
    event_types: Schema.Array(Schema.String),
    status: Schema.Literal("active", "inactive"),
    max_per_second: Schema.Int,
    timeout_ms: Schema.Int,
    payload_version: Schema.Int.annotations({ description: "Event version delivered, pinned at creation." }),
    resource_filters: Schema.Struct({ product_id: Schema.NullOr(Schema.Array(Schema.String)) }),
    health: Schema.Struct({
      consecutive_failures: Schema.Int,
      dead_24h: Schema.Int,
      delivered_24h: Schema.Int,
      failed_24h: Schema.Int,
      pending: Schema.Int,
      last_failure_at: Schema.NullOr(Timestamp),
      last_success_at: Schema.NullOr(Timestamp)
    }).annotations({
      description:
        "Delivery counts of the last 24 hours; zero and `null` until deliveries exist. Kept by the deliveries, not an edit: it changes neither `revision` nor the ETag."
    }),
    previous_secret_expires_at: PreviousSecretExpiresAt("valid: deliveries carry a signature by each secret until then")
  },
  create: CreateWebhookBody,
  update: UpdateWebhookBody,
  defaults: (body: CreateInput) => {
    const secret = body.signing_secret
    return secret === undefined
      ? Effect.fail(apiError("internal_error", { internal: "a webhook is created by createWebhook, with its secret" }))
      : Effect.map(personalDataOf, (personal): JsonObject => ({
          description: body.description ?? null,
          url: body.url,
          ...eventTypeFields(body.event_types),
          status: body.status ?? "active",
          max_per_second: body.max_per_second ?? DEFAULT_MAX_PER_SECOND,
          timeout_ms: body.timeout_ms ?? DEFAULT_TIMEOUT_MS,
          payload_version: body.payload_version ?? EVENT_VERSION,
          resource_filters: resourceFilters(body.resource_filters),
          ...firstSecretFields(secret),
          ...personal
        }))
  },
  change: (current, patch: UpdateBody) =>
    Effect.map(personalDataOf, (personal) => ({
      ...current,
      ...Object.fromEntries(Object.entries(patch).filter(([key]) => key !== "event_types" && key !== "resource_filters")),
      ...(patch.event_types ? eventTypeFields(patch.event_types) : {}),
      ...(patch.resource_filters !== undefined ? { resource_filters: resourceFilters(patch.resource_filters) } : {}),
      ...personal
    } as JsonObject)),
  rules: {
    check: (data, previous) =>
      Effect.gen(function* () {
        yield* checkSelection(data, previous)
        if (data.url === previous?.url) return
        const reason = destinationProblem(String(data.url), (yield* Caller).tenant.environment)
        if (reason) return yield* Effect.fail(ruleViolation([{ field: "url", code: "invalid_value", reason }]))
      }),
    // Removed for good: its health goes with it.
    afterDelete: (record) =>
      Effect.flatMap(Records, (records) => records.remove(record.tenant, WEBHOOK_HEALTH_TYPE, record.id)).pipe(Effect.mapError(writeUnavailable))
  },
  hidden: [...SECRET_FIELDS, "event_types_index", SHOWS_PERSONAL_DATA],
  beside: { type: WEBHOOK_HEALTH_TYPE, defaults: { health: NO_HEALTH } },
  trash: false,
  revision: "integer",
  filters: { status: equalsFilter("status", Status) },
  sorts: [{ name: "created_at", field: "id", kind: "text" }]
})

export const webhooksResources: ReadonlyArray<ResourceDefinition> = []

export const webhooksOperationKinds: Readonly<Record<string, OperationKind>> = {}

// ---------------------------------------------------------------------------------------
// Use cases beyond the derived ones

/** A resource's representation with its signing secret shown once (`secret.value`, as on credentials): webhooks, gateways. */
export const viewWithSecret = (definition: ResourceDefinition, record: StoredRecord) => ({
  ...resourceView(definition, record),
  secret: { value: String(record.data.secret) }
})

/** Create a resource that signs with a fresh Standard Webhooks secret (`signing_secret` in its create input), shown in this answer only. */
export const createWithSigningSecret = <Body extends object>(definition: ResourceDefinition, body: Body) =>
  Effect.gen(function* () {
    const signing_secret = yield* newSigningSecret
    const record = yield* createResource(definition, {}, { ...body, signing_secret })
    return { record, view: viewWithSecret(definition, record) }
  })

/**
 * A new signing secret for a resource that signs (webhooks, gateways), shown in this answer
 * only; the one it replaces stays valid `graceSeconds` more (`signing-secrets.ts`). Audit entry
 * and event `<type>.secret_rotated`.
 */
export const rotateSigningSecret = (definition: ResourceDefinition, id: string, graceSeconds: number | undefined) =>
  Effect.gen(function* () {
    const current = yield* loadResource(definition, undefined, id)
    if (current.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    const saved = yield* saveResource(definition, current, { ...current.data, ...(yield* rotatedSecretFields(current.data, graceSeconds)) }, undefined)
    const after = resourceView(definition, saved)
    yield* recordChange(`${definition.type}.secret_rotated`, { object: definition.type, id })
    yield* emitEvent(`${definition.type}.secret_rotated`, after, previousAttributes(resourceView(definition, current), after))
    return { record: saved, view: viewWithSecret(definition, saved) }
  })

export const createWebhook = (body: CreateBody) => createWithSigningSecret(webhooks, body satisfies Omit<CreateInput, "signing_secret">)

export const WebhookSecretRotationBody = Schema.Struct({ previous_secret_expires_in: PreviousSecretExpiresIn }).annotations({
  identifier: "WebhookSecretRotationBody"
})

/** `POST /webhooks/{id}/secret-rotations`: the previous secret stays valid 24 hours unless `previous_secret_expires_in` says less. */
export const rotateWebhookSecret = (id: string, body: typeof WebhookSecretRotationBody.Type) =>
  rotateSigningSecret(webhooks, id, body.previous_secret_expires_in)

const PAGE = 1000

/** IDs of the webhooks whose stored fields match `where`, however many. */
const idsWhere = (where: ReadonlyArray<Where>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const ids: Array<string> = []
    let after: { readonly value: string; readonly id: string } | undefined
    for (;;) {
      const page = yield* records.list(caller.tenant, webhooks.type, {
        where,
        sort: { field: "id", kind: "text", direction: "asc" },
        after,
        limit: PAGE
      })
      ids.push(...page.map((r) => r.id))
      if (page.length < PAGE) return ids
      after = { value: page[page.length - 1]!.id, id: page[page.length - 1]!.id }
    }
  })

/** The webhooks that receive events of `type`: subscribed to it, to a pattern matching it, or to `*`. */
const subscribersOf = (type: string) =>
  Effect.gen(function* () {
    const ids = new Set<string>()
    for (const subscription of subscriptionsOf(type)) {
      for (const id of yield* idsWhere([{ field: "event_types_index", op: "contains", value: eventTypesIndex([subscription]) }])) ids.add(id)
    }
    return ids
  })

export interface WebhookListInput {
  readonly limit: number
  readonly cursor: string | undefined
  readonly sort: string | undefined
  readonly status: string | undefined
  readonly event_type: string | undefined
}

/**
 * §4.3 `GET /webhooks`: newest first by default; `event_type` (a name, or `*`: subscribed to
 * every type) narrows the visible set before pagination.
 */
export const listWebhooks = (input: WebhookListInput) =>
  Effect.gen(function* () {
    const subscribers = input.event_type === undefined
      ? undefined
      : yield* subscribersOf(input.event_type).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
    return yield* listResources(webhooks, {
      parentIds: {},
      limit: input.limit,
      cursor: input.cursor,
      sort: input.sort ?? "-created_at",
      deleted: false,
      q: undefined,
      filters: { status: input.status, event_type: input.event_type },
      ids: subscribers
    })
  })
