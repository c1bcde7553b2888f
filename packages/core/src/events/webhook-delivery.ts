/**
 * Webhook delivery (§2.3 `webhook_delivery_attempt`, §4.3, §6, §8.3, open-points "Events and
 * webhooks"): every event recorded in an environment is fanned out to the active webhooks of
 * that environment that subscribe to its type (or `*`) and whose resource filters it passes,
 * as one `webhook_delivery` (`whd_`) per webhook and event. A delivery carries the event JSON
 * as it was recorded (in the webhook's pinned `payload_version`), and workers in any process
 * on the same store send it, claiming it with a conditional update on its revision, as the
 * operations worker does. Each try is a `webhook_delivery_attempt` (`wha_`).
 *
 * - Retries: at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h; a delivery whose
 *   eighth attempt fails is `dead`. A 2xx within `timeout_ms` is success; anything else
 *   (another status, a redirect, which is never followed, a refused destination, a timeout)
 *   is a failed attempt.
 * - At least once: a delivery stays `pending` until an attempt succeeds or it dies; a worker
 *   that dies mid-send leaves a lease that runs out, and the delivery is sent again.
 * - Fair work (issue 11): each tenant's deliveries are a queue by due time (`due_at`, indexed;
 *   null once finished), and the tenants with something due are found from one queue record
 *   each (`webhook_delivery_queue`), so a pass costs the same whatever the backlog. Attempts
 *   take slots of the process's background budget (`workers/background.ts`), accounts in
 *   turn and a few at most each, so one account's backlog never delays another's deliveries.
 * - `health` of the webhook is recomputed from the retained deliveries and attempts after
 *   changes (at most once a second per webhook while they keep coming) and when a counted
 *   item leaves its 24-hour window. It is kept in a record of its own (`webhook_health`, the
 *   webhook's ID), which the webhook's reads show (`beside` of its description): delivery
 *   health is not an edit, so it never changes the webhook's `revision` or ETag.
 * - Signatures: every signing secret valid when the attempt starts (`validSecrets`: after a
 *   rotation, the previous one too until `previous_secret_expires_at`), each a `v1,` entry of
 *   `webhook-signature`.
 * - Deliveries and attempts are kept 30 days from their creation (404 afterwards).
 * - Replays (`POST /webhooks/{id}/replays`) make new deliveries (origin `replay`) of events
 *   still retained, with the JSON recorded when they occurred.
 *
 * Sending is a port (`WebhookSender`): the HTTP implementation signs the request with the
 * Standard Webhooks scheme and checks the destination when it connects.
 */
import { Clock, Context, Duration, Effect, FiberSet, Option, Random } from "effect"
import { Caller, Ids } from "../access/context.js"
import type { Grant } from "../access/policies.js"
import { apiError, type DetailItem, writeUnavailable, readUnavailable } from "../errors/errors.js"
import {
  type AccessPath,
  type Environment,
  housekeepingPath,
  listPath,
  type Json,
  type JsonObject,
  Records,
  type RevisionConflict,
  type StoredRecord,
  type StoreUnavailable,
  type Tenant,
  type UniqueViolation,
  UnitOfWork,
  type Where
} from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import { DAY, formatTimestamp, HOUR, MINUTE, parseTimestamp, SECOND } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { backgroundBudget, yieldToEventLoop } from "../workers/background.js"
import { EVENT_RETENTION_MS, EVENT_TYPE, eventForReader, eventView } from "./events.js"
import { validSecrets } from "./signing-secrets.js"

/** The destination rules of registration, also checked by senders when they connect. */
export { type DestinationProblem, destinationPort, destinationProblem, isLoopbackDestination } from "./webhooks-destination.js"

export const WEBHOOK_TYPE = "webhook"
export const WEBHOOK_DELIVERY_TYPE = "webhook_delivery"
export const WEBHOOK_ATTEMPT_TYPE = "webhook_delivery_attempt"
/** A webhook's delivery health (internal, same ID as the webhook): `{ health, health_refresh_at }`. */
export const WEBHOOK_HEALTH_TYPE = "webhook_health"
/** The health of a webhook without deliveries. */
export const NO_HEALTH = {
  consecutive_failures: 0,
  dead_24h: 0,
  delivered_24h: 0,
  failed_24h: 0,
  pending: 0,
  last_failure_at: null,
  last_success_at: null
} satisfies JsonObject
/**
 * The due-time queue of a tenant's deliveries (internal, one record per tenant): `due_at` is at
 * or before the earliest `due_at` of its deliveries (null: none is waiting), so that workers
 * find the tenants with work due from one index, without reading any backlog. Whoever makes a
 * delivery due earlier lowers it after committing (`queueBy`); a worker that finds nothing due
 * raises it (`raiseQueue`).
 */
export const WEBHOOK_QUEUE_TYPE = "webhook_delivery_queue"
/** §8.3: deliveries and their attempts are kept 30 days. */
export const WEBHOOK_DELIVERY_RETENTION_MS = 30 * DAY
/** The wait before attempt n + 1 after attempt n failed (open-points: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). */
export const WEBHOOK_RETRY_DELAYS_MS: ReadonlyArray<number> = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]
/** The first attempt plus one per retry; a delivery whose last attempt fails is `dead`. */
export const WEBHOOK_MAX_ATTEMPTS = WEBHOOK_RETRY_DELAYS_MS.length + 1
/** How long a claimed delivery stays with its worker beyond the request's own timeout. */
const LEASE_MARGIN_MS = 30 * SECOND
/** An inactive webhook's pending deliveries wait; they are looked at again this often. */
const INACTIVE_RECHECK_MS = MINUTE
const WINDOW_MS = DAY
/** A replay covers at most this many events (§8.2, items in an array). */
export const MAX_REPLAY_EVENTS = 1000

export const webhookDeliveryFields = [
  "object",
  "id",
  "webhook_id",
  "event_id",
  "event_type",
  "payload_version",
  "origin",
  "status",
  "attempt_count",
  "next_attempt_at",
  "created_at",
  "updated_at",
  "finished_at",
  "expires_at"
] as const

export const webhookAttemptFields = [
  "object",
  "id",
  "delivery_id",
  "number",
  "origin",
  "started_at",
  "finished_at",
  "next_attempt_at",
  "http_status",
  "duration_ms",
  "transport_error",
  "response_excerpt"
] as const

export const webhookDeliveryView = (record: StoredRecord): JsonObject => inOrder(record.data, webhookDeliveryFields)
export const webhookAttemptView = (record: StoredRecord): JsonObject => inOrder(record.data, webhookAttemptFields)

// ---------------------------------------------------------------------------------------
// The sending port

/** One HTTP request of a delivery attempt. */
export interface WebhookRequest {
  readonly url: string
  /** The webhook's environment: production only reaches public `https` destinations. */
  readonly environment: Environment
  /** The exact bytes sent (and signed): the event JSON as recorded. */
  readonly body: string
  /** Standard Webhooks `webhook-id`: the event ID, the same on every attempt and replay. */
  readonly messageId: string
  /** Standard Webhooks `webhook-timestamp`, in seconds. */
  readonly timestamp: number
  /**
   * The webhook's signing secrets valid now, `whsec_<base64>`: the current one first, then the
   * one a rotation replaced while its grace period runs. One signature each.
   */
  readonly secrets: ReadonlyArray<string>
  readonly timeoutMs: number
}

/** What came back: a status (any, redirects included) or a transport error, never both. */
export interface WebhookResponse {
  readonly httpStatus: number | null
  /**
   * `timeout`, `destination_not_allowed`, `dns_failure`, `tls_error` or `connection_failed`
   * (one value for a refused, reset or otherwise failed connection: which one it was would
   * tell an open port from a closed one).
   */
  readonly transportError: string | null
  /** The start of the response body as text, unmasked (the core masks it); null from a loopback destination. */
  readonly responseText: string | null
  readonly durationMs: number
}

export class WebhookSender extends Context.Tag("@syllabus/core/WebhookSender")<
  WebhookSender,
  { readonly send: (request: WebhookRequest) => Effect.Effect<WebhookResponse> }
>() {}

/**
 * §4.3 `response_excerpt` is masked: at most 200 characters of the response body, control
 * characters as spaces, e-mail addresses as `***@***`, and every token of 12 or more
 * letters, digits and `_-+/=.` with a digit in it (keys, tokens, card numbers) as its first
 * four characters and `****`.
 */
export const maskExcerpt = (text: string | null): string | null => {
  if (text === null) return null
  return text
    .slice(0, 200)
    .replace(/[\u0000-\u001f\u007f]/g, " ")
    .replace(/[^\s@"'<>,;:]+@[^\s@"'<>,;:]+/g, "***@***")
    .replace(/[A-Za-z0-9_\-+/=.]{12,}/g, (token) => (/\d/.test(token) ? `${token.slice(0, 4)}****` : token))
}

// ---------------------------------------------------------------------------------------
// Which webhooks receive an event

const stringList = (value: Json | undefined): ReadonlyArray<string> =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []

/** A subscription to every event type. */
export const ALL_EVENTS = "*"

/**
 * The subscriptions that take events of `type` (`user.created`): the type itself, a pattern with
 * `*` for either part or both (`user.*`, `*.created`, `*.*`) and `*`. For `*`: those to every type.
 */
export const subscriptionsOf = (type: string): ReadonlyArray<string> => {
  if (type === ALL_EVENTS) return [ALL_EVENTS, "*.*"]
  const [resource, verb] = type.split(".")
  return [type, `${resource}.*`, `*.${verb}`, "*.*", ALL_EVENTS]
}

/**
 * Subscribed to the type (or to a pattern matching it), and inside its resource filters: the
 * event's resource belongs to one of its products (its anchors, access/scope.ts: a product, or
 * what a product holds).
 */
export const webhookReceives = (webhook: JsonObject, event: JsonObject): boolean => {
  const types = stringList(webhook.event_types)
  if (!subscriptionsOf(String(event.type)).some((subscription) => types.includes(subscription))) return false
  const products = (webhook.resource_filters as JsonObject | null)?.product_id
  if (Array.isArray(products)) {
    const resource = ((event.data as JsonObject | null)?.object ?? {}) as JsonObject
    // An event recorded before anchors were kept: the product it names.
    const anchors = Array.isArray(event.scope_ids)
      ? stringList(event.scope_ids)
      : [resource.object === "product" ? resource.id : resource.product_id].filter((id): id is string => typeof id === "string")
    if (!anchors.some((id) => products.includes(id))) return false
  }
  return true
}

/**
 * Whether a webhook's deliveries carry people's personal data (internal, on the webhook): only
 * when the credential that last set it up holds `users.read_personal` for everyone. A webhook
 * delivers what its credential could read itself (access/scope.ts, events/webhooks.ts).
 */
export const SHOWS_PERSONAL_DATA = "shows_personal_data"

/** No permission at all: what a webhook that shows no personal data delivers is seen as by this grant. */
const noPermission: Grant = new Map()

/**
 * The bytes a webhook receives for an event: the envelope as recorded, in its pinned version;
 * people's personal data null unless the credential that set the webhook up could read it
 * (`SHOWS_PERSONAL_DATA`; a webhook set up before it was kept shows it).
 */
const recordedBody = (event: JsonObject, webhook: JsonObject): string =>
  JSON.stringify(webhook[SHOWS_PERSONAL_DATA] === false ? eventForReader(noPermission, event) : eventView(event))

const newDelivery = (
  webhook: StoredRecord,
  event: JsonObject,
  origin: "automatic" | "replay",
  id: string,
  now: number
): JsonObject => ({
  object: "webhook_delivery",
  id,
  webhook_id: webhook.id,
  event_id: String(event.id),
  event_type: String(event.type),
  payload_version: Number(event.version),
  origin,
  status: "pending",
  attempt_count: 0,
  next_attempt_at: formatTimestamp(now),
  created_at: formatTimestamp(now),
  updated_at: formatTimestamp(now),
  finished_at: null,
  expires_at: formatTimestamp(now + WEBHOOK_DELIVERY_RETENTION_MS),
  // Internal: what is sent, when it is due, and the worker holding it.
  body: recordedBody(event, webhook.data),
  due_at: now,
  lease_owner: null,
  lease_until: null
})

const activeWebhooks = (tenant: Tenant) =>
  Effect.flatMap(Records, (records) =>
    records.list(tenant, WEBHOOK_TYPE, {
      where: [{ field: "status", op: "eq", value: "active" }],
      sort: { field: "id", kind: "text", direction: "asc" },
      limit: 1000
    })
  )

const tenantKey = (tenant: Tenant) => `${tenant.accountId}:${tenant.environment}`

const queueId = (tenant: Tenant) => `whq_${tenant.environment}_${tenant.accountId}`

const isRace = (e: unknown): boolean =>
  typeof e === "object" && e !== null && ["RevisionConflict", "UniqueViolation"].includes((e as { _tag?: string })._tag ?? "")

/**
 * In a unit of work of its own (again after a lost race): the tenant's queue is due at `at`
 * or earlier. Written only when it is later, or missing.
 */
const ensureQueued = (tenant: Tenant, at: number) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    yield* uow.transaction(
      Effect.gen(function* () {
        const queue = yield* records.get(tenant, WEBHOOK_QUEUE_TYPE, queueId(tenant))
        if (queue === undefined) {
          yield* records.insert(tenant, WEBHOOK_QUEUE_TYPE, queueId(tenant), { id: queueId(tenant), due_at: at })
          return
        }
        const due = queue.data.due_at
        if (typeof due === "number" && due <= at) return
        yield* records.update(tenant, WEBHOOK_QUEUE_TYPE, queue.id, { ...queue.data, due_at: at }, { expectedRevision: queue.revision })
      })
    )
  }).pipe(Effect.retry({ times: 3, while: isRace }))

/**
 * After a delivery of the tenant became due at `at` (committed: written, or moved to an
 * earlier time): its queue must be due by then. A plain read first, so that in a storm (the
 * queue due already) nothing more happens; the queue is not read inside the writer's unit of
 * work, which would make every attempt's transaction depend on one hot record. Raising the
 * queue re-reads the deliveries after it commits (`raiseQueue`), so a writer that committed
 * while a raise ran is never left behind it.
 */
const queueBy = (tenant: Tenant, at: number) =>
  Effect.gen(function* () {
    const records = yield* Records
    const queue = yield* records.get(tenant, WEBHOOK_QUEUE_TYPE, queueId(tenant))
    const due = queue?.data.due_at
    if (typeof due === "number" && due <= at) return
    yield* ensureQueued(tenant, at)
  })

/** Events of one tenant fanned out in one unit of work (one commit for a whole batch's events). */
const FANOUT_GROUP = 50

/**
 * Fan out the events not yet fanned out: for each event, its deliveries and the mark on the
 * event (a conditional update: of two workers, one wins and the other's deliveries roll back).
 * The events of one tenant go in units of work of up to `FANOUT_GROUP`; a unit that loses a
 * race is run again one event per unit, so that the loss is that event's alone. A webhook
 * receives the events recorded after it was created.
 */
const fanOut = (batch: number) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const ids = yield* Ids
    const events = yield* records.scan(EVENT_TYPE, [{ field: "webhook_fanout", op: "eq", value: null }], batch)
    const byTenant = new Map<string, { tenant: Tenant; events: Array<StoredRecord> }>()
    for (const event of events) {
      const key = tenantKey(event.tenant)
      const group = byTenant.get(key) ?? { tenant: event.tenant, events: [] }
      group.events.push(event)
      byTenant.set(key, group)
    }
    const touched = new Map<string, { tenant: Tenant; webhookId: string }>()
    for (const [key, { tenant, events: ofTenant }] of byTenant) {
      const hooks = yield* activeWebhooks(tenant)
      const targetsOf = (event: StoredRecord) =>
        hooks
          .filter((w) => String(w.data.created_at) <= String(event.data.created_at) && Number(w.data.payload_version) === Number(event.data.version))
          .filter((w) => webhookReceives(w.data, event.data))
      /**
       * Fan out one event (as read inside the caller's unit of work) there: its deliveries join
       * `rows` (the unit inserts them together); its targets, or none when another worker did it.
       */
      const fanOutOne = (current: StoredRecord | undefined, now: number, rows: Array<{ readonly id: string; readonly data: JsonObject }>) =>
        Effect.gen(function* () {
          if (!current || (current.data.webhook_fanout ?? null) !== null) return []
          const targets = targetsOf(current)
          for (const webhook of targets) {
            const id = yield* ids.next("webhook_delivery")
            rows.push({ id, data: newDelivery(webhook, current.data, "automatic", id, now) })
          }
          yield* records.update(current.tenant, EVENT_TYPE, current.id, { ...current.data, webhook_fanout: targets.length }, {
            expectedRevision: current.revision
          })
          return targets
        })
      /** Events in one unit of work; the webhooks that got deliveries, or none when it lost a race. */
      const unit = (group: ReadonlyArray<StoredRecord>) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          return yield* uow.transaction(
            Effect.gen(function* () {
              const rows: Array<{ readonly id: string; readonly data: JsonObject }> = []
              // The group's events as the unit sees them, in one read.
              const current = new Map((yield* records.getMany(tenant, EVENT_TYPE, group.map((event) => event.id))).map((event) => [event.id, event]))
              const targets = (yield* Effect.forEach(group, (event) => fanOutOne(current.get(event.id), now, rows))).flat()
              // The group's deliveries in as few statements as the store allows.
              if (rows.length > 0) yield* records.insertMany(tenant, WEBHOOK_DELIVERY_TYPE, rows)
              return targets
            })
          )
        }).pipe(Effect.either)
      const since = yield* Clock.currentTimeMillis
      let created = false
      for (let start = 0; start < ofTenant.length; start += FANOUT_GROUP) {
        const group = ofTenant.slice(start, start + FANOUT_GROUP)
        const ran = yield* unit(group)
        let targets: ReadonlyArray<StoredRecord> = []
        if (ran._tag === "Right") targets = ran.right
        else if (ran.left._tag !== "RevisionConflict" && ran.left._tag !== "UniqueViolation") return yield* Effect.fail(ran.left)
        else if (group.length > 1) {
          for (const event of group) {
            const alone = yield* unit([event])
            if (alone._tag === "Right") targets = [...targets, ...alone.right]
            else if (alone.left._tag !== "RevisionConflict" && alone.left._tag !== "UniqueViolation") return yield* Effect.fail(alone.left)
          }
        }
        for (const w of targets) touched.set(`${key}:${w.id}`, { tenant, webhookId: w.id })
        created ||= targets.length > 0
        yield* yieldToEventLoop
      }
      // The new deliveries are due (since before their units began): so is the tenant's queue.
      if (created) yield* queueBy(tenant, since)
    }
    yield* Effect.forEach(touched.values(), ({ tenant, webhookId }) => refreshHealth(tenant, webhookId), { discard: true })
    return events.length
  })

// ---------------------------------------------------------------------------------------
// Health

const countOf = (tenant: Tenant, type: string, where: ReadonlyArray<Where>) =>
  Effect.map(Records, (records) => records.count(tenant, type, where, [])).pipe(
    Effect.flatten,
    Effect.map((rows) => rows[0]?.count ?? 0)
  )

const firstBy = (tenant: Tenant, type: string, where: ReadonlyArray<Where>, direction: "asc" | "desc") =>
  Effect.flatMap(Records, (records) =>
    records.list(tenant, type, { where, sort: { field: "finished_at", kind: "text", direction }, limit: 1 })
  ).pipe(Effect.map((rows) => (rows[0] ? String(rows[0].data.finished_at) : null)))

/** Whether the kept health says this already (field by field: a store may reorder an object's keys). */
const sameHealth = (kept: JsonObject, health: JsonObject, refreshAt: number | null) => {
  const before = (kept.health ?? {}) as JsonObject
  return (kept.health_refresh_at ?? null) === refreshAt && Object.keys(health).every((field) => before[field] === health[field])
}

/**
 * Recompute the `health` of a webhook from its retained deliveries and attempts, and save it in
 * its own record when it changed (not an edit of the webhook: no revision, no event).
 * `health_refresh_at` is when a counted item leaves its 24-hour window, for the worker to
 * recompute then.
 */
export const refreshHealth = (tenant: Tenant, webhookId: string) =>
  Effect.gen(function* () {
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const since = formatTimestamp(now - WINDOW_MS)
    const ofWebhook: Where = { field: "webhook_id", op: "eq", value: webhookId }
    const delivered: ReadonlyArray<Where> = [ofWebhook, { field: "status", op: "eq", value: "succeeded" }, { field: "finished_at", op: "gte", value: since }]
    const dead: ReadonlyArray<Where> = [ofWebhook, { field: "status", op: "eq", value: "dead" }, { field: "finished_at", op: "gte", value: since }]
    const failed: ReadonlyArray<Where> = [ofWebhook, { field: "outcome", op: "eq", value: "failed" }, { field: "finished_at", op: "gte", value: since }]
    const lastSuccess = yield* firstBy(tenant, WEBHOOK_ATTEMPT_TYPE, [ofWebhook, { field: "outcome", op: "eq", value: "succeeded" }], "desc")
    const lastFailure = yield* firstBy(tenant, WEBHOOK_ATTEMPT_TYPE, [ofWebhook, { field: "outcome", op: "eq", value: "failed" }], "desc")
    const health = {
      consecutive_failures: yield* countOf(tenant, WEBHOOK_ATTEMPT_TYPE, [
        ofWebhook,
        { field: "outcome", op: "eq", value: "failed" },
        ...(lastSuccess ? [{ field: "finished_at", op: "gt" as const, value: lastSuccess }] : [])
      ]),
      dead_24h: yield* countOf(tenant, WEBHOOK_DELIVERY_TYPE, dead),
      delivered_24h: yield* countOf(tenant, WEBHOOK_DELIVERY_TYPE, delivered),
      failed_24h: yield* countOf(tenant, WEBHOOK_ATTEMPT_TYPE, failed),
      pending: yield* countOf(tenant, WEBHOOK_DELIVERY_TYPE, [ofWebhook, { field: "status", op: "in", values: ["pending", "sending"] }]),
      last_failure_at: lastFailure,
      last_success_at: lastSuccess
    }
    const oldest = [
      yield* firstBy(tenant, WEBHOOK_DELIVERY_TYPE, delivered, "asc"),
      yield* firstBy(tenant, WEBHOOK_DELIVERY_TYPE, dead, "asc"),
      yield* firstBy(tenant, WEBHOOK_ATTEMPT_TYPE, failed, "asc")
    ].filter((t): t is string => t !== null)
    const refreshAt = oldest.length === 0 ? null : Math.min(...oldest.map((t) => Date.parse(t) + WINDOW_MS)) + 1
    const data: JsonObject = { health, health_refresh_at: refreshAt }
    /** Removed for good (its health went with it): a health written beside the removal goes too. */
    const removedWebhook = Effect.gen(function* () {
      if (yield* records.get(tenant, WEBHOOK_TYPE, webhookId)) return false
      yield* records.remove(tenant, WEBHOOK_HEALTH_TYPE, webhookId)
      return true
    })
    if (yield* removedWebhook) return
    for (let tries = 0; tries < 5; tries++) {
      const kept = yield* records.get(tenant, WEBHOOK_HEALTH_TYPE, webhookId)
      if (kept && sameHealth(kept.data, health, refreshAt)) return
      const write: Effect.Effect<StoredRecord, StoreUnavailable | UniqueViolation | RevisionConflict> = kept
        ? records.update(tenant, WEBHOOK_HEALTH_TYPE, webhookId, data, { expectedRevision: kept.revision })
        : records.insert(tenant, WEBHOOK_HEALTH_TYPE, webhookId, data)
      const saved = yield* write.pipe(
        Effect.as(true),
        Effect.catchTags({ RevisionConflict: () => Effect.succeed(false), UniqueViolation: () => Effect.succeed(false) })
      )
      if (!saved) continue
      if (!kept) yield* removedWebhook
      return
    }
  })

// ---------------------------------------------------------------------------------------
// Attempts

/** Per process: attempts started per webhook in the last second (`max_per_second`), and each webhook's limit as last read. */
interface RateWindow {
  readonly starts: Map<string, Array<number>>
  readonly limits: Map<string, number>
}

const newRateWindow = (): RateWindow => ({ starts: new Map(), limits: new Map() })

const recentStarts = (window: RateWindow, webhookId: string, now: number): Array<number> => {
  const recent = (window.starts.get(webhookId) ?? []).filter((t) => t > now - SECOND)
  if (recent.length === 0) window.starts.delete(webhookId)
  else window.starts.set(webhookId, recent)
  return recent
}

const rateAllows = (window: RateWindow, webhookId: string, limit: number, now: number): boolean => {
  window.limits.set(webhookId, limit)
  const recent = recentStarts(window, webhookId, now)
  if (recent.length >= limit) return false
  recent.push(now)
  window.starts.set(webhookId, recent)
  return true
}

/** Whether the webhook used its last second's attempts already (as far as this process knows): not worth a slot now. */
const rateSpent = (window: RateWindow, webhookId: string, now: number): boolean => {
  const limit = window.limits.get(webhookId)
  return limit !== undefined && recentStarts(window, webhookId, now).length >= limit
}

const newOwner = Effect.gen(function* () {
  return `whw_${yield* Random.nextIntBetween(0, 2 ** 31)}_${yield* Random.nextIntBetween(0, 2 ** 31)}`
})

const ignoreConflicts = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.asVoid,
    Effect.catchIf(
      (e): e is E => typeof e === "object" && e !== null && ["RevisionConflict", "UniqueViolation"].includes((e as { _tag?: string })._tag ?? ""),
      () => Effect.void
    )
  )

/** What attempts share in a worker: the rate windows, and where a webhook whose deliveries changed is reported (for its health). */
interface AttemptContext {
  readonly window: RateWindow
  readonly touched: (tenant: Tenant, webhookId: string) => Effect.Effect<void, unknown, Records | UnitOfWork>
}

/**
 * Send one due delivery, if this worker wins it, and record the attempt. The claim moves the
 * delivery's `due_at` to the end of its lease (a worker that dies mid-send leaves it due
 * then); the attempt's record moves it to the next retry (null when finished), and the
 * tenant's queue with it when that is earlier.
 */
const attemptDelivery = (candidate: StoredRecord, context: AttemptContext) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const ids = yield* Ids
    const sender = yield* WebhookSender
    const now = yield* Clock.currentTimeMillis
    const tenant = candidate.tenant
    // Held under a lease that still runs (by a worker of a version without the due-time queue): not stalled.
    if (candidate.data.status === "sending" && Number(candidate.data.lease_until ?? 0) > now) return
    const webhook = yield* records.get(tenant, WEBHOOK_TYPE, String(candidate.data.webhook_id))
    if (!webhook) {
      // The webhook was removed for good: its deliveries go with it.
      yield* records.remove(tenant, WEBHOOK_DELIVERY_TYPE, candidate.id)
      return
    }
    if (webhook.data.status !== "active") {
      yield* ignoreConflicts(
        records.update(tenant, WEBHOOK_DELIVERY_TYPE, candidate.id, { ...candidate.data, status: "pending", due_at: now + INACTIVE_RECHECK_MS, lease_owner: null, lease_until: null }, {
          expectedRevision: candidate.revision
        })
      )
      return
    }
    if (!rateAllows(context.window, webhook.id, Number(webhook.data.max_per_second ?? 10), now)) return
    const timeoutMs = Number(webhook.data.timeout_ms ?? 10_000)
    const owner = yield* newOwner
    const leaseUntil = now + timeoutMs + LEASE_MARGIN_MS
    const claimed = yield* records
      .update(tenant, WEBHOOK_DELIVERY_TYPE, candidate.id, { ...candidate.data, status: "sending", lease_owner: owner, lease_until: leaseUntil, due_at: leaseUntil }, {
        expectedRevision: candidate.revision
      })
      .pipe(
        Effect.map(Option.some),
        Effect.catchTags({ RevisionConflict: () => Effect.succeedNone, UniqueViolation: () => Effect.succeedNone })
      )
    if (Option.isNone(claimed)) return
    const number = Number(candidate.data.attempt_count ?? 0) + 1
    const startedAt = yield* Clock.currentTimeMillis
    const response = yield* sender.send({
      url: String(webhook.data.url),
      environment: tenant.environment,
      body: String(candidate.data.body),
      messageId: String(candidate.data.event_id),
      timestamp: Math.floor(startedAt / 1000),
      secrets: validSecrets(webhook.data, startedAt),
      timeoutMs
    })
    const finishedAt = Math.max(yield* Clock.currentTimeMillis, startedAt + response.durationMs)
    const succeeded = response.httpStatus !== null && response.httpStatus >= 200 && response.httpStatus < 300
    const dies = !succeeded && number >= WEBHOOK_MAX_ATTEMPTS
    const nextAt = succeeded || dies ? null : finishedAt + WEBHOOK_RETRY_DELAYS_MS[number - 1]!
    const recorded = yield* uow
      .transaction(
        Effect.gen(function* () {
          const current = yield* records.get(tenant, WEBHOOK_DELIVERY_TYPE, candidate.id)
          // Another worker took it over after our lease ran out: its attempt is the one kept.
          if (!current || current.data.lease_owner !== owner) return "lost" as const
          const attemptId = yield* ids.next("webhook_delivery_attempt")
          yield* records.insert(tenant, WEBHOOK_ATTEMPT_TYPE, attemptId, {
            object: "webhook_delivery_attempt",
            id: attemptId,
            delivery_id: candidate.id,
            number,
            origin: String(candidate.data.origin) === "replay" ? "replay" : "automatic",
            started_at: formatTimestamp(startedAt),
            finished_at: formatTimestamp(finishedAt),
            next_attempt_at: nextAt === null ? null : formatTimestamp(nextAt),
            http_status: response.httpStatus,
            duration_ms: Math.max(0, Math.round(response.durationMs)),
            transport_error: response.transportError,
            response_excerpt: maskExcerpt(response.responseText),
            // Internal, for health and retention.
            webhook_id: webhook.id,
            outcome: succeeded ? "succeeded" : "failed",
            created_at: formatTimestamp(finishedAt)
          })
          yield* records.update(
            tenant,
            WEBHOOK_DELIVERY_TYPE,
            candidate.id,
            {
              ...current.data,
              status: succeeded ? "succeeded" : dies ? "dead" : "pending",
              attempt_count: number,
              next_attempt_at: nextAt === null ? null : formatTimestamp(nextAt),
              updated_at: formatTimestamp(finishedAt),
              finished_at: succeeded || dies ? formatTimestamp(finishedAt) : null,
              due_at: nextAt,
              lease_owner: null,
              lease_until: null
            },
            { expectedRevision: current.revision }
          )
          return "recorded" as const
        })
      )
      .pipe(Effect.catchTags({ RevisionConflict: () => Effect.succeed("lost" as const), UniqueViolation: () => Effect.succeed("lost" as const) }))
    if (recorded === "lost") return
    // The retry may come before the end of the lease the queue may wait for.
    if (nextAt !== null) yield* queueBy(tenant, nextAt)
    yield* context.touched(tenant, webhook.id)
  })

// ---------------------------------------------------------------------------------------
// The worker

/** The cross-tenant reads of the worker, each an index of the store: a pass that finds nothing is a probe. */
export const webhookDeliveryAccessPaths: ReadonlyArray<AccessPath> = [
  housekeepingPath(EVENT_TYPE, ["webhook_fanout"], [{ field: "id", kind: "text" }]),
  // The tenants with deliveries due (one record each), and a tenant's deliveries by due time.
  housekeepingPath(WEBHOOK_QUEUE_TYPE, [], [{ field: "due_at", kind: "number" }]),
  listPath(WEBHOOK_DELIVERY_TYPE, [], [{ field: "due_at", kind: "number" }, { field: "id", kind: "text" }]),
  // The sweep for deliveries due in a tenant whose queue does not say so (written before it existed).
  housekeepingPath(WEBHOOK_DELIVERY_TYPE, ["status"], [{ field: "due_at", kind: "number" }]),
  housekeepingPath(WEBHOOK_DELIVERY_TYPE, ["status"], [{ field: "lease_until", kind: "number" }]),
  housekeepingPath(WEBHOOK_HEALTH_TYPE, [], [{ field: "health_refresh_at", kind: "number" }]),
  // A webhook's deliveries, and a delivery's attempts.
  listPath(WEBHOOK_DELIVERY_TYPE, ["webhook_id"], [{ field: "id", kind: "text" }]),
  listPath(WEBHOOK_ATTEMPT_TYPE, ["delivery_id"], [{ field: "id", kind: "text" }]),
  // Health: a webhook's attempts by outcome, in the order they finished (its deliveries are
  // read through the webhook's path above).
  listPath(WEBHOOK_ATTEMPT_TYPE, ["webhook_id", "outcome"], [{ field: "finished_at", kind: "text" }, { field: "id", kind: "text" }])
]

/** Events fanned out per pass at most. */
const FANOUT_BATCH = 200
/** Deliveries read from a tenant's due-time queue at a time. */
const REFILL = 32
/** Tenants whose queue is due, read per pass at most (each then served in turn). */
const DUE_TENANTS = 500
/** How often deliveries due in a tenant whose queue does not say so are looked for (written before queues existed, or a crash between an attempt and its queue). */
const SWEEP_MS = MINUTE
/** A webhook's health is recomputed at most this often while its deliveries keep changing (at once after a quiet time). */
export const HEALTH_COALESCE_MS = SECOND
/** After a refresh, the health worker rests this many times as long as it took. */
const HEALTH_IDLE_FACTOR = 9

/** A tenant's deliveries, read by due time: `due_at` from 0 (not finished) to `now`. */
const dueDeliveries = (tenant: Tenant, now: number, limit: number) =>
  Effect.flatMap(Records, (records) =>
    records.list(tenant, WEBHOOK_DELIVERY_TYPE, {
      where: [
        { field: "due_at", op: "gte", value: 0 },
        { field: "due_at", op: "lte", value: now }
      ],
      sort: { field: "due_at", kind: "number", direction: "asc" },
      limit
    })
  )

/** The earliest `due_at` of the tenant's deliveries (null: none waits). */
const earliestDue = (tenant: Tenant) =>
  Effect.flatMap(Records, (records) =>
    records.list(tenant, WEBHOOK_DELIVERY_TYPE, {
      where: [{ field: "due_at", op: "gte", value: 0 }],
      sort: { field: "due_at", kind: "number", direction: "asc" },
      limit: 1
    })
  ).pipe(Effect.map(([first]) => (first === undefined ? null : Number(first.data.due_at))))

/**
 * Nothing of the tenant is due now: its queue moves to its earliest delivery's `due_at` (null:
 * none waits), in a unit of work. A delivery that became due while it ran (whose writer
 * found the queue not yet moved) is found by the second look, after the commit.
 */
const raiseQueue = (tenant: Tenant) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const raised = yield* uow
      .transaction(
        Effect.gen(function* () {
          const queue = yield* records.get(tenant, WEBHOOK_QUEUE_TYPE, queueId(tenant))
          if (queue === undefined) return undefined
          const next = yield* earliestDue(tenant)
          if ((queue.data.due_at ?? null) === next) return undefined
          yield* records.update(tenant, WEBHOOK_QUEUE_TYPE, queue.id, { ...queue.data, due_at: next }, { expectedRevision: queue.revision })
          return next
        })
      )
      .pipe(Effect.catchIf(isRace, () => Effect.succeed(undefined)))
    if (raised === undefined) return
    const earliest = yield* earliestDue(tenant)
    if (earliest !== null && (raised === null || earliest < raised)) yield* ensureQueued(tenant, earliest)
  })

/**
 * Health recomputed once per webhook per `HEALTH_COALESCE_MS` at most (or 20 times its own
 * cost, if longer), however many of its attempts finish meanwhile: the first change after a
 * quiet time at once, the rest together at the end of the interval. One webhook at a time,
 * then a rest of `HEALTH_IDLE_FACTOR` times what it took (a turn of the event loop at least).
 */
const makeHealthCoalescer = Effect.sync(() => {
  const dirty = new Map<string, { readonly tenant: Tenant; readonly webhookId: string }>()
  const notBefore = new Map<string, number>()
  let wake: (() => void) | undefined
  const touch = (tenant: Tenant, webhookId: string) =>
    Effect.sync(() => {
      dirty.set(`${tenantKey(tenant)}:${webhookId}`, { tenant, webhookId })
      const w = wake
      wake = undefined
      w?.()
    })
  const woken = Effect.async<void>((resume) => {
    wake = () => resume(Effect.void)
    return Effect.sync(() => {
      wake = undefined
    })
  })
  const flush = Effect.gen(function* () {
    for (;;) {
      let now = yield* Clock.currentTimeMillis
      let earliest = Infinity
      for (const [key, { tenant, webhookId }] of [...dirty]) {
        const at = notBefore.get(key) ?? 0
        if (at > now) {
          earliest = Math.min(earliest, at)
          continue
        }
        dirty.delete(key)
        // Its cost in real time (the clock may be moved meanwhile), at most a minute's worth.
        const began = performance.now()
        yield* refreshHealth(tenant, webhookId).pipe(Effect.catchAllCause((cause) => Effect.logWarning("webhook health refresh failed", cause)))
        const cost = performance.now() - began
        const after = yield* Clock.currentTimeMillis
        notBefore.set(key, after + Math.min(MINUTE, Math.max(HEALTH_COALESCE_MS, 20 * cost)))
        // At most a tenth of the process's time: a webhook's counts read its retained
        // deliveries, which a storm makes many (the refreshes then come less often).
        if (cost >= 1) yield* Effect.sleep(Duration.millis(Math.min(SECOND, HEALTH_IDLE_FACTOR * cost)))
        else yield* yieldToEventLoop
        now = yield* Clock.currentTimeMillis
      }
      for (const [key, at] of notBefore) if (at <= now && !dirty.has(key)) notBefore.delete(key)
      if (dirty.size === 0) yield* woken
      else if (earliest !== Infinity && earliest > now) yield* Effect.raceFirst(woken, Effect.sleep(Duration.millis(earliest - now)))
    }
  })
  return { touch, flush }
})

/** A tenant whose queue is due, as the dispatcher holds it: deliveries read from it and not yet started. */
interface DueTenant {
  readonly tenant: Tenant
  candidates: Array<StoredRecord>
}

/**
 * The delivery worker of a process, for its lifetime. A fiber fans out new events. Every
 * `interval`: read the tenants whose queue is due (one index, however large the backlog), and
 * find the webhooks whose health window moved. In between, as slots of the process's background budget
 * (`BackgroundBudget`) free up: start attempts, one tenant after the other in turn, each
 * tenant's deliveries in due order (a few read at a time from its queue), never more of one
 * account than the budget's `perAccount`; so an account with thousands of deliveries to a dead
 * receiver holds a few slots, and another account's first delivery starts at once. Each
 * attempt runs in a fiber of its own; health is recomputed coalesced; every step gives the
 * event loop a turn. Deliveries and attempts past their 30 days leave the store with the rest
 * of §8.3, in the housekeeping (`trail/retention.ts`).
 */
export const webhookDeliveryWorker = (interval: "200 millis" | `${number} millis` = "200 millis") =>
  Effect.scoped(
    Effect.gen(function* () {
      const records = yield* Records
      const budget = yield* backgroundBudget
      const tickMs = Duration.toMillis(interval)
      const health = yield* makeHealthCoalescer
      yield* Effect.forkScoped(health.flush)
      const attempts = yield* FiberSet.make<void, never>()
      const context: AttemptContext = { window: newRateWindow(), touched: health.touch }
      const due = new Map<string, DueTenant>()
      const started = new Set<string>()
      let lastServed: string | undefined
      let nextTick = 0
      let nextSweep = 0
      const warn = (message: string) => Effect.catchAllCause((cause: unknown) => Effect.logWarning(message, cause))

      const markDue = (tenant: Tenant) => {
        const key = tenantKey(tenant)
        if (!due.has(key)) due.set(key, { tenant, candidates: [] })
      }

      /** Deliveries due in a tenant whose queue does not say so get it said. */
      const sweep = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const lost = [
          ...(yield* records.scan(WEBHOOK_DELIVERY_TYPE, [{ field: "status", op: "eq", value: "pending" }, { field: "due_at", op: "lte", value: now }], 100)),
          ...(yield* records.scan(WEBHOOK_DELIVERY_TYPE, [{ field: "status", op: "eq", value: "sending" }, { field: "lease_until", op: "lt", value: now }], 100))
        ]
        const tenants = new Map(lost.map((d) => [tenantKey(d.tenant), d.tenant] as const))
        for (const [key, tenant] of tenants) {
          if (due.has(key)) continue
          yield* ensureQueued(tenant, now)
          markDue(tenant)
        }
      })

      // Fan-out in a fiber of its own, so that a burst of events never holds up the attempts:
      // at once again after a full batch, else after `interval`. It recomputes the health of
      // the webhooks it gave deliveries at once (once per batch each, not per event), so their
      // `pending` counts are right as soon as the deliveries exist.
      yield* Effect.forkScoped(
        Effect.gen(function* () {
          for (;;) {
            const fannedOut = yield* fanOut(FANOUT_BATCH).pipe(
              Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("webhook fan-out failed", cause), 0))
            )
            if (fannedOut >= FANOUT_BATCH) yield* yieldToEventLoop
            else yield* Effect.sleep(interval)
          }
        })
      )

      const tick = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const queues = yield* records.scan(
          WEBHOOK_QUEUE_TYPE,
          [
            { field: "due_at", op: "gte", value: 0 },
            { field: "due_at", op: "lte", value: now }
          ],
          DUE_TENANTS
        )
        for (const queue of queues) markDue(queue.tenant)
        const stale = yield* records.scan(WEBHOOK_HEALTH_TYPE, [{ field: "health_refresh_at", op: "lte", value: now }], 100)
        for (const w of stale) yield* health.touch(w.tenant, w.id)
        if (now >= nextSweep) {
          nextSweep = now + SWEEP_MS
          yield* sweep
        }
      })

      /** The due tenants, in turn: those after the last one served first. */
      const inTurn = (): Array<string> => {
        const keys = [...due.keys()]
        const at = lastServed === undefined ? -1 : keys.indexOf(lastServed)
        return [...keys.slice(at + 1), ...keys.slice(0, at + 1)]
      }

      /** Start attempts while slots are free: a round gives each due tenant one, until a round starts none. */
      const dispatch = Effect.gen(function* () {
        for (;;) {
          let startedNow = 0
          for (const key of inTurn()) {
            const entry = due.get(key)
            if (entry === undefined) continue
            const account = entry.tenant.accountId
            // The account holds its share of the budget (or the budget is spent): its turn passes.
            if (budget.inFlight(account) >= budget.perAccount || budget.inFlight() >= budget.concurrency) continue
            const now = yield* Clock.currentTimeMillis
            if (entry.candidates.length === 0) {
              const read = yield* dueDeliveries(entry.tenant, now, REFILL)
              entry.candidates = read.filter((d) => !started.has(d.id))
              if (entry.candidates.length === 0) {
                // Nothing due that is not being sent: the queue waits for its next delivery.
                if (read.length === 0) yield* raiseQueue(entry.tenant)
                due.delete(key)
                continue
              }
            }
            const index = entry.candidates.findIndex((d) => !rateSpent(context.window, String(d.data.webhook_id), now))
            if (index < 0) continue
            const release = budget.tryTake("delivery", account)
            if (release === undefined) continue
            const [candidate] = entry.candidates.splice(index, 1)
            started.add(candidate!.id)
            yield* FiberSet.run(
              attempts,
              attemptDelivery(candidate!, context).pipe(
                warn("webhook delivery attempt failed"),
                Effect.ensuring(
                  Effect.sync(() => {
                    started.delete(candidate!.id)
                    release()
                  })
                )
              )
            )
            lastServed = key
            startedNow++
          }
          if (startedNow === 0) return
          yield* yieldToEventLoop
          // The pass comes first when it is due (new events, newly due tenants).
          if ((yield* Clock.currentTimeMillis) >= nextTick) return
        }
      })

      for (;;) {
        if ((yield* Clock.currentTimeMillis) >= nextTick) {
          yield* tick.pipe(warn("webhook delivery pass failed"))
          nextTick = (yield* Clock.currentTimeMillis) + tickMs
        }
        yield* dispatch.pipe(warn("webhook delivery dispatch failed"))
        yield* yieldToEventLoop
        // Until a slot frees (more may start) or the next pass.
        const wait = Math.max(0, Math.min(tickMs, nextTick - (yield* Clock.currentTimeMillis)))
        if (wait > 0) yield* Effect.raceFirst(budget.released, Effect.sleep(Duration.millis(wait)))
      }
    })
  )

// ---------------------------------------------------------------------------------------
// Reads


const retainedSince = Effect.map(Clock.currentTimeMillis, (now) => formatTimestamp(now - WEBHOOK_DELIVERY_RETENTION_MS))

const loadWebhook = (webhookId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const webhook = yield* records.get(caller.tenant, WEBHOOK_TYPE, webhookId).pipe(Effect.mapError(readUnavailable))
    if (!webhook) return yield* Effect.fail(apiError("not_found"))
    return webhook
  })

const loadDelivery = (webhookId: string, deliveryId: string) =>
  Effect.gen(function* () {
    yield* loadWebhook(webhookId)
    const caller = yield* Caller
    const records = yield* Records
    const since = yield* retainedSince
    const delivery = yield* records.get(caller.tenant, WEBHOOK_DELIVERY_TYPE, deliveryId).pipe(Effect.mapError(readUnavailable))
    if (!delivery || delivery.data.webhook_id !== webhookId || String(delivery.data.created_at) < since) {
      return yield* Effect.fail(apiError("not_found"))
    }
    return delivery
  })

/** `GET /webhooks/{id}/deliveries`: newest first (`sort=created_at`: oldest first), 30 days back. */
export const listWebhookDeliveries = Effect.fn("WebhookDeliveries.list")(function* (
  webhookId: string,
  query: {
    readonly limit: number
    readonly cursor: string | undefined
    readonly sort: string | undefined
    readonly status: string | undefined
    readonly event_id: string | undefined
  }
) {
  yield* loadWebhook(webhookId)
  const caller = yield* Caller
  const since = yield* retainedSince
  const where: Array<Where> = [
    { field: "webhook_id", op: "eq", value: webhookId },
    { field: "created_at", op: "gte", value: since }
  ]
  // `sending` is internal: to a client a delivery being sent is still pending.
  if (query.status) where.push(query.status === "pending" ? { field: "status", op: "in", values: ["pending", "sending"] } : { field: "status", op: "eq", value: query.status })
  if (query.event_id) where.push({ field: "event_id", op: "eq", value: query.event_id })
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: WEBHOOK_DELIVERY_TYPE,
    where,
    sort: { field: "id", kind: "text", direction: query.sort === "created_at" ? "asc" : "desc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `webhook_deliveries:${webhookId}:${query.status ?? ""}:${query.event_id ?? ""}`
  }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  return { data: items.map(publicDelivery), page }
})

/** The representation: a delivery being sent is `pending` to a client. */
const publicDelivery = (record: StoredRecord): JsonObject => {
  const view = webhookDeliveryView(record)
  return view.status === "sending" ? { ...view, status: "pending" } : view
}

export const getWebhookDelivery = Effect.fn("WebhookDeliveries.get")(function* (webhookId: string, deliveryId: string) {
  return publicDelivery(yield* loadDelivery(webhookId, deliveryId))
})

/** The attempts of a delivery, in order (all at once: at most eight, plus none per replay). */
export const listWebhookAttempts = Effect.fn("WebhookDeliveries.attempts")(function* (
  webhookId: string,
  deliveryId: string,
  query: { readonly limit: number; readonly cursor: string | undefined }
) {
  yield* loadDelivery(webhookId, deliveryId)
  const caller = yield* Caller
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: WEBHOOK_ATTEMPT_TYPE,
    where: [{ field: "delivery_id", op: "eq", value: deliveryId }],
    sort: { field: "id", kind: "text", direction: "asc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `webhook_attempts:${deliveryId}`
  }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  return { data: items.map(webhookAttemptView), page }
})

export const getWebhookAttempt = Effect.fn("WebhookDeliveries.attempt")(function* (webhookId: string, deliveryId: string, attemptId: string) {
  yield* loadDelivery(webhookId, deliveryId)
  const caller = yield* Caller
  const records = yield* Records
  const attempt = yield* records.get(caller.tenant, WEBHOOK_ATTEMPT_TYPE, attemptId).pipe(Effect.mapError(readUnavailable))
  if (!attempt || attempt.data.delivery_id !== deliveryId) return yield* Effect.fail(apiError("not_found"))
  return webhookAttemptView(attempt)
})

// ---------------------------------------------------------------------------------------
// Replays

export interface ReplayInput {
  readonly event_ids?: ReadonlyArray<string> | undefined
  readonly created_after?: string | undefined
  readonly created_before?: string | undefined
}

/**
 * `POST /webhooks/{id}/replays`: new deliveries (origin `replay`) of events still retained
 * that the webhook receives (its types and filters), with the JSON recorded when they
 * occurred. Either `event_ids` (each one must be such an event, else 422 on it) or a range
 * `created_after` / `created_before` (every such event in it, at most 1,000, else 422
 * `too_many_items`). Answers the deliveries, queued; workers send them.
 */
export const replayWebhookEvents = Effect.fn("WebhookDeliveries.replay")(function* (webhookId: string, input: ReplayInput) {
  const webhook = yield* loadWebhook(webhookId)
  const caller = yield* Caller
  const records = yield* Records
  const ids = yield* Ids
  const now = yield* Clock.currentTimeMillis
  const eventsSince = formatTimestamp(now - EVENT_RETENTION_MS)
  const ranged = input.created_after !== undefined || input.created_before !== undefined
  if (input.event_ids !== undefined && ranged) {
    return yield* Effect.fail(
      apiError("validation_failed", {
        details: [input.created_after !== undefined ? "created_after" : "created_before"].map((field) => ({ field, code: "not_allowed" as const, reason: "event_ids_or_range" }))
      })
    )
  }
  if (input.event_ids === undefined && !ranged) {
    return yield* Effect.fail(apiError("validation_failed", { details: [{ field: "event_ids", code: "required", reason: "event_ids_or_range" }] }))
  }
  const events: Array<StoredRecord> = []
  if (input.event_ids !== undefined) {
    const details: Array<DetailItem> = []
    const seen = new Set<string>()
    for (const [index, id] of input.event_ids.entries()) {
      if (seen.has(id)) continue
      seen.add(id)
      const event = yield* records.get(caller.tenant, EVENT_TYPE, id).pipe(Effect.mapError(readUnavailable))
      if (!event || String(event.data.created_at) < eventsSince) {
        details.push({ field: `event_ids[${index}]`, code: "invalid_value", reason: "event_not_found" })
      } else if (!webhookReceives(webhook.data, event.data)) {
        details.push({ field: `event_ids[${index}]`, code: "invalid_value", reason: "not_subscribed" })
      } else events.push(event)
    }
    if (details.length > 0) return yield* Effect.fail(apiError("validation_failed", { details }))
  } else {
    const after = input.created_after === undefined ? undefined : Option.getOrThrow(parseTimestamp(input.created_after))
    const before = input.created_before === undefined ? undefined : Option.getOrThrow(parseTimestamp(input.created_before))
    const where: Array<Where> = [{ field: "created_at", op: "gte", value: after === undefined || formatTimestamp(after) < eventsSince ? eventsSince : formatTimestamp(after) }]
    if (before !== undefined) where.push({ field: "created_at", op: "lt", value: formatTimestamp(before) })
    let position: { readonly value: string; readonly id: string } | undefined
    for (;;) {
      const page = yield* records
        .list(caller.tenant, EVENT_TYPE, { where, sort: { field: "id", kind: "text", direction: "asc" }, after: position, limit: 500 })
        .pipe(Effect.mapError(readUnavailable))
      events.push(...page.filter((e) => webhookReceives(webhook.data, e.data)))
      if (events.length > MAX_REPLAY_EVENTS) {
        return yield* Effect.fail(apiError("too_many_items", { details: [{ field: "created_after", code: "too_many_items", params: { max: MAX_REPLAY_EVENTS } }] }))
      }
      if (page.length < 500) break
      position = { value: page[page.length - 1]!.id, id: page[page.length - 1]!.id }
    }
  }
  const created: Array<JsonObject> = []
  for (const event of events) {
    const id = yield* ids.next("webhook_delivery")
    const record = yield* records
      .insert(caller.tenant, WEBHOOK_DELIVERY_TYPE, id, newDelivery(webhook, event.data, "replay", id, now))
      .pipe(Effect.mapError(writeUnavailable))
    created.push(publicDelivery(record))
  }
  // The new deliveries are due now: so is the tenant's queue.
  if (events.length > 0) {
    yield* queueBy(caller.tenant, now).pipe(Effect.mapError(writeUnavailable))
  }
  return created
})
