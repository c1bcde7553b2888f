/**
 * The sandbox's own operations:
 * - `POST /sandbox/resets`: empty the sandbox environment of the caller's account.
 *   Credentials, administrators, settings and the audit trail stay. Idempotency receipts of
 *   earlier writes stay too, but their results describe what the reset removed: a retry with
 *   one of their keys is 409 `result_not_replayable` (a new key runs the request).
 * - `POST /sandbox/events`: emit a sample event of a type of the catalog, so an integration
 *   can see one arrive (events collection, streams, webhooks) without making the change.
 */
import { Clock, Effect, Schema } from "effect"
import { ACCOUNT_TYPE } from "../access/accounts.js"
import { replicasOnReset } from "../account/replicas.js"
import { Caller, Ids } from "../access/context.js"
import { ADMINISTRATOR_TYPE, CREDENTIAL_TYPE } from "../access/credentials.js"
import { apiError, validationFailed, writeUnavailable } from "../errors/errors.js"
import { emitEvent } from "../events/events.js"
import { planTypesKeptWith } from "../limits/plan-limits.js"
import { Idempotency, type Json, type JsonObject, Records } from "../ports/store.js"
import { idPrefixes, type IdKind } from "../records/ids.js"
import { Text } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"
import { AUDIT_ENTRY_TYPE, recordChange, REQUEST_TYPE } from "../trail/audit.js"

const KEPT_RECORDS: ReadonlyArray<string> = [ACCOUNT_TYPE, ADMINISTRATOR_TYPE, CREDENTIAL_TYPE, "settings", REQUEST_TYPE, AUDIT_ENTRY_TYPE]

/**
 * Record types a reset keeps. Resource types added later are emptied by default. The account's
 * plan and the plan's counts of the kept types (credentials) stay with them.
 */
export const SANDBOX_KEEPS: ReadonlyArray<string> = [...KEPT_RECORDS, ...planTypesKeptWith(KEPT_RECORDS)]

export const resetSandbox = Effect.fn("Sandbox.reset")(function* () {
  const caller = yield* Caller
  if (caller.tenant.environment !== "sandbox") return yield* Effect.fail(apiError("sandbox_only"))
  const records = yield* Records
  const id = yield* (yield* Ids).next("sandbox_reset")
  // Copies in other accounts are detached, links into this one unlinked: nothing else of theirs changes.
  yield* replicasOnReset
  const removed = yield* records
    .purge(caller.tenant, SANDBOX_KEEPS)
    .pipe(Effect.mapError(writeUnavailable))
  yield* (yield* Idempotency).voidCompleted(caller.tenant).pipe(Effect.mapError(writeUnavailable))
  yield* recordChange("sandbox.reset", { object: "sandbox_reset", id }, { removed_records: removed })
  return {
    object: "sandbox_reset",
    id,
    status: "succeeded",
    removed_records: removed,
    created_at: formatTimestamp(yield* Clock.currentTimeMillis)
  }
})

// ---------------------------------------------------------------------------------------
// Sample events

export const TriggerSandboxEventBody = Schema.Struct({
  type: Text({ min: 1, max: 200 }).annotations({ description: "An event type of `GET /event-types`, e.g. `product.created`." })
}).annotations({ identifier: "TriggerSandboxEventBody" })
export type TriggerSandboxEventBody = Schema.Schema.Type<typeof TriggerSandboxEventBody>

/**
 * What a sample needs to know of an event type: the catalog of `GET /event-types` (it is
 * derived above the use cases, in `registry/`, so the caller passes it in).
 */
export interface SampleEventType {
  readonly type: string
  readonly resource_type: string
  readonly payload_keys: ReadonlyArray<string>
}

/**
 * A valid representation of a resource type, made from the API's description (the caller's:
 * the description is derived above the use cases); `undefined` for a type it does not describe.
 */
export type RepresentationExample = (resourceType: string) => JsonObject | undefined

const isIdKind = (kind: string): kind is IdKind => Object.hasOwn(idPrefixes, kind)

/**
 * The `data.object` of a sample event: the example of its resource type, so that it has the
 * shape of a real event's, keeping the type's payload keys the example has, with the current
 * time in its timestamps and a fresh ID of the resource's prefix. Without an example, the
 * payload keys with null values.
 */
const sampleResource = Effect.fnUntraced(function* (entry: SampleEventType, example: JsonObject | undefined) {
  const now = formatTimestamp(yield* Clock.currentTimeMillis)
  const resource: Record<string, Json> = {}
  for (const key of entry.payload_keys) {
    if (example !== undefined && !Object.hasOwn(example, key)) continue
    const value = example?.[key] ?? null
    resource[key] = key.endsWith("_at") && value !== null ? now : value
  }
  resource.object = entry.resource_type
  if (isIdKind(entry.resource_type)) resource.id = yield* (yield* Ids).next(entry.resource_type)
  return resource satisfies JsonObject
})

/**
 * `POST /sandbox/events`: record a sample event of `type`, as a change would. It is a real
 * event of the sandbox (listed by `GET /events`, sent on the streams, delivered to the
 * webhooks subscribed to it); its `request_id` names the trigger's call.
 * From production: 409 `sandbox_required`. A type outside the catalog: 422 on `type`.
 */
export const triggerSandboxEvent = Effect.fn("Sandbox.triggerEvent")(function* (
  body: TriggerSandboxEventBody,
  catalog: ReadonlyArray<SampleEventType>,
  exampleOf: RepresentationExample
) {
  const caller = yield* Caller
  if (caller.tenant.environment !== "sandbox") return yield* Effect.fail(apiError("sandbox_required"))
  const entry = catalog.find((candidate) => candidate.type === body.type)
  if (entry === undefined) {
    return yield* Effect.fail(
      validationFailed([
        { field: "type", code: "invalid_value", reason: "unknown_event_type", params: { allowed: catalog.map((c) => c.type).join(", ") } }
      ])
    )
  }
  const event = yield* emitEvent(entry.type, yield* sampleResource(entry, exampleOf(entry.resource_type)))
  yield* recordChange("sandbox.event_triggered", { object: "event", id: String(event.id) }, { type: entry.type })
  return event
})
