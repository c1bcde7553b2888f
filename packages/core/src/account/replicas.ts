/**
 * Replicas (`rpl_`, release 3.2.0, open-points routes `/replicas` and `/replicas/{replica_id}`):
 * an account (the source) shares products with another account (the target), which holds
 * read-only copies of them; the replica rules of 3.3.0 (copies marked `replica_of`, the source
 * listing them in `replicas`, publication propagating, `replica_readonly`) then apply as they
 * already do. Decisions (also in docs/replicas.md and the OpenAPI description):
 *
 * - The link lives in the source account, in one environment: production shares with the
 *   target's production, sandbox with its sandbox. The source names the target by its
 *   subdomain (what an administrator knows: the account's address). Itself: 422
 *   `domain_rule_violation` (reason `self_target`); unknown: 422 `validation_failed`
 *   (reason `not_found`). One live (pending or active) link per target: another is 409
 *   `already_exists` on `target_subdomain`.
 * - Consent, as an invitation code (Shopify's collaborator request code, Stripe's client
 *   secrets): a new link is `pending` and its acceptance token (`secret.value`, `rplt_…`) is shown once; it
 *   is stored only as a keyed hash, valid 7 days. The target's own credential accepts with
 *   `POST /replicas/{replica_id}/acceptances` `{ token, showcase_id }`, naming the showcase of
 *   its own where the copies go. A wrong token, a link of another target or environment, or
 *   one no longer pending: 404, as a missing record. An expired token: 409 `state_conflict`
 *   (reason `token_expired`).
 * - Copies: a link turning `active`, or products added to an active link, start an
 *   asynchronous operation in the source account (`replica_sync`, one item per product), so
 *   a large catalog never runs in one request. An item copies the product with its modules,
 *   lessons and lesson content (not its files, attachments, exams or taxonomies, which stay
 *   in the source's account), each marked `replica_of` with the source's status at that
 *   moment, and records the copies in the source's `replicas` lists (product and modules),
 *   each write in the item's unit of work with the other tenant named explicitly. The
 *   copies' creations are recorded in the target (audit, events), as the acceptor's act.
 *   An item of a product that already has a copy there changes nothing (repeatable).
 * - A product already copied to that target (still listed in its `replicas`, e.g. by a
 *   link whose detach is still running): 409 `already_exists` on `product_ids[i]`. A product
 *   that is itself a replica cannot be shared on: 403 `replica_readonly`.
 * - Detach: a product removed from `product_ids`, or every product of a link unlinked
 *   (`DELETE /replicas/{id}`, which keeps the link readable as `unlinked`), is detached by an
 *   operation item: the copies stay in the target as its own ordinary, writable records
 *   (what the target's learners were given is not taken away), without `replica_of`, and
 *   the source stops listing them. An unlinked link cannot be activated again: create a new one.
 * - Sandbox reset: resetting the source's sandbox detaches its copies in the targets (an
 *   operation started in each target's sandbox); resetting a target's sandbox removes its
 *   copies, so the links into it are unlinked and the sources stop listing the copies. Neither
 *   reset touches the other account's records beyond detaching.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { ACCOUNT_TYPE } from "../access/accounts.js"
import { Caller, type CallerInfo } from "../access/context.js"
import { PRODUCT_TYPE, products } from "../catalog/products.js"
import { showcases } from "../catalog/showcases.js"
import { childrenOf, LESSON_TYPE, lessons, MODULE_TYPE, modules, replicasOf, type ReplicaRef } from "../content/content-catalog.js"
import { LESSON_CONTENT_TYPE } from "../content/content-lessons.js"
import { type ApiError, apiError, type DetailItem, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { type ItemServices, type OperationKind, startOperation } from "../operations/operations.js"
import { Crypto } from "../ports/crypto.js"
import { type AccessPath, type Json, type JsonObject, listPath, Records, type StoredRecord, type Tenant } from "../ports/store.js"
import {
  createResource,
  defineResource,
  equalsFilter,
  isReplica,
  loadResource,
  recordResourceChange,
  type ResourceDefinition,
  resourceView,
  saveResource
} from "../records/resource.js"
import { List, PublicId, Text } from "../records/schema.js"
import { DAY, formatTimestamp } from "../records/time.js"
import { recordChange } from "../trail/audit.js"

export const REPLICA_TYPE = "replica"
/** The hashed acceptance token of a pending link, in the source's tenant, found by its hash from the target. */
export const REPLICA_INVITATION_TYPE = "replica_invitation"
/** In the target's tenant: a link into it (its ID is the link's), so a reset there finds its sources. */
export const REPLICA_SUBSCRIPTION_TYPE = "replica_subscription"
/** The operation type of copies and detaches (an open enum of operation types). */
export const REPLICA_SYNC = "replica_sync"

/** A link is created, changed (its products), linked (accepted) and unlinked; never removed. */
export const replicaEventVerbs: ReadonlyArray<string> = ["created", "updated", "linked", "unlinked"]

export const REPLICA_TOKEN_TTL_MS = 7 * DAY
/** At most this many products per link (a body list, §8.2). */
export const REPLICA_PRODUCTS_MAX = 100
const TOKEN_KEY = "token_hash"

const Status = Schema.Literal("pending", "active", "unlinked")

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

const ProductIds = List(PublicId("product"), REPLICA_PRODUCTS_MAX).annotations({
  description: `The products shared with the target (at most ${REPLICA_PRODUCTS_MAX}), each once.`
})

const Subdomain = Text({ min: 1, max: 63 }).annotations({ description: "The target account's subdomain (`<subdomain>.<platform host>`)." })

export const CreateReplicaBody = Schema.Struct({
  target_subdomain: Subdomain,
  product_ids: optional(ProductIds)
}).annotations({ identifier: "CreateReplicaBody" })
export type CreateReplicaBody = typeof CreateReplicaBody.Type

export const UpdateReplicaBody = Schema.Struct({
  product_ids: optional(ProductIds.annotations({ description: "The whole new set: products left out are detached, new ones copied (on an active link)." }))
}).annotations({ identifier: "UpdateReplicaBody" })
export type UpdateReplicaBody = typeof UpdateReplicaBody.Type

export const AcceptReplicaBody = Schema.Struct({
  token: Text({ min: 1, max: 200 }).annotations({ description: "The acceptance token (`secret.value`) the source received when it created the link." }),
  showcase_id: PublicId("showcase").annotations({ description: "A showcase of the accepting account where the copies are placed." })
}).annotations({ identifier: "AcceptReplicaBody" })
export type AcceptReplicaBody = typeof AcceptReplicaBody.Type

const Target = Schema.Struct({
  account_id: Schema.String,
  subdomain: Schema.String,
  environment: Schema.Literal("production", "sandbox")
})

export const replicas: ResourceDefinition = defineResource({
  type: REPLICA_TYPE,
  idKind: "replica",
  plural: "replicas",
  path: "/replicas",
  tag: "Account",
  fields: {
    target: Target.annotations({ description: "The account receiving the copies, in the same environment as the link." }),
    status: Status.annotations({
      description: "`pending` until the target accepts, then `active`; `unlinked` once removed (final: the copies are detached)."
    }),
    product_ids: Schema.Array(Schema.String).annotations({ description: "The products shared with the target." }),
    target_showcase_id: Schema.NullOr(Schema.String).annotations({ description: "The target's showcase holding the copies (set on acceptance)." }),
    acceptance_expires_at: Schema.NullOr(Schema.String).annotations({ description: "Until when the acceptance token is valid, while `pending`." }),
    linked_at: Schema.NullOr(Schema.String),
    unlinked_at: Schema.NullOr(Schema.String),
    operation_id: Schema.NullOr(Schema.String).annotations({
      description: "The latest `replica_sync` operation (copies or detaches) of the link, or null; follow it at `/operations/{operation_id}`."
    })
  },
  create: CreateReplicaBody,
  update: UpdateReplicaBody,
  defaults: (body: CreateReplicaBody, context) =>
    Effect.gen(function* () {
      const target = yield* resolveTarget(body.target_subdomain)
      const productIds = body.product_ids ?? []
      yield* checkShareable(productIds, { accountId: target.id, environment: context.tenant.environment }, [])
      return {
        target: { account_id: target.id, subdomain: String(target.data.subdomain), environment: context.tenant.environment },
        // One live link per target (a unique key while pending or active).
        target_subdomain: String(target.data.subdomain).toLowerCase(),
        status: "pending",
        product_ids: productIds,
        target_showcase_id: null,
        acceptance_expires_at: formatTimestamp(context.now + REPLICA_TOKEN_TTL_MS),
        linked_at: null,
        unlinked_at: null,
        operation_id: null
      }
    }),
  unique: ["target_subdomain"],
  trash: false,
  revision: "string",
  filters: { status: equalsFilter("status", Status) },
  sorts: [{ name: "created_at", field: "id", kind: "text" }],
  defaultReversed: true,
  // Served by `@syllabus/http` routes/replicas.ts: the create answers the token once, the update
  // and the unlink start operations.
  replacedRoutes: ["create", "update", "delete"],
  writes: []
})

/** The reads of the resets (`replicasOnReset`): a tenant's links by status, its subscriptions. */
export const replicasAccessPaths: ReadonlyArray<AccessPath> = [
  listPath(REPLICA_TYPE, ["status"], [{ field: "id", kind: "text" }]),
  listPath(REPLICA_SUBSCRIPTION_TYPE, [], [{ field: "id", kind: "text" }])
]

// ---------------------------------------------------------------------------------------
// Rules

/** The target named by its subdomain: another account (the subdomain is a global key). */
const resolveTarget = (subdomain: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const account = yield* records
      .findUnique("global", ACCOUNT_TYPE, { name: "subdomain", value: subdomain.toLowerCase() })
      .pipe(Effect.mapError(readUnavailable))
    if (!account) return yield* Effect.fail(fieldError("validation_failed", "target_subdomain", { reason: "not_found" }))
    if (account.id === caller.tenant.accountId) {
      return yield* Effect.fail(fieldError("domain_rule_violation", "target_subdomain", { reason: "self_target" }))
    }
    return account
  })

const sameTenant = (ref: ReplicaRef, tenant: Tenant) => ref.account_id === tenant.accountId && ref.environment === tenant.environment

/**
 * Products that may be added to a link into `target` (those in `kept` are already on it):
 * each of the account, not trashed, once (422, itemized); not a replica itself (403
 * `replica_readonly`); not already copied there (409 `already_exists`).
 */
const checkShareable = (ids: ReadonlyArray<string>, target: Tenant, kept: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const added = ids.filter((id) => !kept.includes(id))
    const found = new Map((yield* records.getMany(caller.tenant, PRODUCT_TYPE, added).pipe(Effect.mapError(readUnavailable))).map((r) => [r.id, r]))
    const details: Array<DetailItem> = []
    const seen = new Set<string>()
    ids.forEach((id, index) => {
      const product = found.get(id)
      if (seen.has(id)) details.push({ field: `product_ids[${index}]`, code: "validation_failed", reason: "duplicate" })
      else if (!kept.includes(id) && (!product || product.data.deleted === true)) {
        details.push({ field: `product_ids[${index}]`, code: "validation_failed", reason: "not_found" })
      }
      seen.add(id)
    })
    if (details.length > 0) return yield* Effect.fail(apiError("validation_failed", { details }))
    if (added.some((id) => isReplica(found.get(id)!))) return yield* Effect.fail(apiError("replica_readonly"))
    const copied = ids.findIndex((id) => !kept.includes(id) && replicasOf(found.get(id)!).some((ref) => sameTenant(ref, target)))
    if (copied >= 0) return yield* Effect.fail(fieldError("already_exists", `product_ids[${copied}]`))
  })

const tenantOfTarget = (replica: StoredRecord): Tenant => {
  const target = replica.data.target as JsonObject
  return { accountId: String(target.account_id), environment: replica.tenant.environment }
}

/** The caller acting in another tenant (the other account's audit entries and events name this call). */
const actingIn = (caller: CallerInfo, tenant: Tenant): CallerInfo => ({ ...caller, tenant })

const syncItems = (replicaId: string, action: "copy" | "detach", productIds: ReadonlyArray<string>) =>
  productIds.map((productId) => ({ key: `${action}:${productId}`, payload: { replica_id: replicaId, action, product_id: productId } }))

/** Start the copies/detaches of a link in its (the source's) tenant; null when there is nothing to do. */
const startSync = (replicaId: string, copy: ReadonlyArray<string>, detach: ReadonlyArray<string>) =>
  copy.length + detach.length === 0
    ? Effect.succeed(null)
    : Effect.map(startOperation(REPLICA_SYNC, [...syncItems(replicaId, "copy", copy), ...syncItems(replicaId, "detach", detach)]), (op) => String(op.id))

/** Save a link's new data with its audit entry and event `replica.<verb>`. */
const saveReplica = (current: StoredRecord, data: JsonObject, verb: "updated" | "linked" | "unlinked") =>
  Effect.gen(function* () {
    const saved = yield* saveResource(replicas, current, data, undefined)
    const after = resourceView(replicas, saved)
    const before = resourceView(replicas, current)
    if (verb === "updated") yield* recordResourceChange(replicas, "updated", after, before)
    else {
      yield* recordChange(`replica.${verb}`, { object: REPLICA_TYPE, id: saved.id })
      yield* emitEvent(`replica.${verb}`, after, previousAttributes(before, after))
    }
    return saved
  })

// ---------------------------------------------------------------------------------------
// Use cases

/** Base62 from random bytes, without bias. */
const randomToken = Effect.map(Crypto, (crypto) => {
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
  let body = ""
  while (body.length < 40) {
    for (const byte of crypto.randomBytes(64)) if (byte < 248 && body.length < 40) body += alphabet[byte % 62]
  }
  return `rplt_${body}`
})

/** `POST /replicas`: a pending link, its acceptance token shown once. */
export const createReplica = (body: CreateReplicaBody) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const crypto = yield* Crypto
    const live = yield* records
      .findUnique(caller.tenant, REPLICA_TYPE, { name: "target_subdomain", value: body.target_subdomain.toLowerCase() })
      .pipe(Effect.mapError(readUnavailable))
    if (live) return yield* Effect.fail(fieldError("already_exists", "target_subdomain"))
    const record = yield* createResource(replicas, {}, body)
    const token = yield* randomToken
    yield* records
      .insert(
        caller.tenant,
        REPLICA_INVITATION_TYPE,
        record.id,
        { replica_id: record.id },
        [{ name: TOKEN_KEY, value: crypto.hashSecret(token), global: true }]
      )
      .pipe(Effect.mapError(writeUnavailable))
    // Shown once, as every secret of the platform (`secret.value`, as on credentials and webhooks).
    return { record, view: { ...resourceView(replicas, record), secret: { value: token } } }
  })

/** The caller's link, live (pending or active), or a 409 for an unlinked one. */
const loadLive = (id: string) =>
  Effect.gen(function* () {
    const current = yield* loadResource(replicas, undefined, id)
    if (current.data.status === "unlinked") return yield* Effect.fail(apiError("state_conflict", { reason: "unlinked" }))
    return current
  })

/** `PATCH /replicas/{id}`: a new set of products; on an active link, copies and detaches follow in an operation. */
export const updateReplica = (id: string, body: UpdateReplicaBody, expectedRevision: number | undefined) =>
  Effect.gen(function* () {
    const current = yield* loadLive(id)
    if (expectedRevision !== undefined && current.revision !== expectedRevision) return yield* Effect.fail(apiError("revision_mismatch"))
    if (body.product_ids === undefined) return current
    const before = (current.data.product_ids ?? []) as ReadonlyArray<string>
    const next = body.product_ids
    yield* checkShareable(next, tenantOfTarget(current), before)
    const added = next.filter((p) => !before.includes(p))
    const removed = before.filter((p) => !next.includes(p))
    const operationId = current.data.status === "active" ? yield* startSync(current.id, added, removed) : null
    return yield* saveReplica(current, { ...current.data, product_ids: next, operation_id: operationId ?? current.data.operation_id ?? null }, "updated")
  })

/** Unlink: `unlinked`, the token and the target's subscription gone, every product detached by an operation. */
const unlink = (current: StoredRecord) =>
  Effect.gen(function* () {
    const records = yield* Records
    const wasActive = current.data.status === "active"
    yield* records.remove(current.tenant, REPLICA_INVITATION_TYPE, current.id).pipe(Effect.mapError(writeUnavailable))
    yield* records.remove(tenantOfTarget(current), REPLICA_SUBSCRIPTION_TYPE, current.id).pipe(Effect.mapError(writeUnavailable))
    const productIds = (current.data.product_ids ?? []) as ReadonlyArray<string>
    const operationId = wasActive ? yield* startSync(current.id, [], productIds) : null
    const now = formatTimestamp(yield* Clock.currentTimeMillis)
    return yield* saveReplica(
      current,
      {
        ...current.data,
        status: "unlinked",
        target_subdomain: null,
        acceptance_expires_at: null,
        unlinked_at: now,
        operation_id: operationId ?? current.data.operation_id ?? null
      },
      "unlinked"
    )
  })

/** `DELETE /replicas/{id}`: unlink (an unlinked link answers as it is). */
export const unlinkReplica = (id: string) =>
  Effect.gen(function* () {
    const current = yield* loadResource(replicas, undefined, id)
    return current.data.status === "unlinked" ? current : yield* unlink(current)
  })

/**
 * `POST /replicas/{replica_id}/acceptances`, by the target's credential: the link turns
 * active and the copies start (an operation of the source). Answers the link.
 */
export const acceptReplica = (id: string, body: AcceptReplicaBody) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const crypto = yield* Crypto
    const invitation = yield* records
      .findUnique("global", REPLICA_INVITATION_TYPE, { name: TOKEN_KEY, value: crypto.hashSecret(body.token) })
      .pipe(Effect.mapError(readUnavailable))
    // Found only by its token; for another link, target or environment it is not there.
    if (!invitation || invitation.id !== id || invitation.tenant.environment !== caller.tenant.environment) {
      return yield* Effect.fail(apiError("not_found"))
    }
    const source = invitation.tenant
    const current = yield* records.get(source, REPLICA_TYPE, id).pipe(Effect.mapError(readUnavailable))
    if (!current || current.data.status !== "pending" || tenantOfTarget(current).accountId !== caller.tenant.accountId) {
      return yield* Effect.fail(apiError("not_found"))
    }
    const now = yield* Clock.currentTimeMillis
    if (String(current.data.acceptance_expires_at ?? "") < formatTimestamp(now)) {
      return yield* Effect.fail(apiError("state_conflict", { reason: "token_expired" }))
    }
    const showcase = yield* records.get(caller.tenant, showcases.type, body.showcase_id).pipe(Effect.mapError(readUnavailable))
    if (!showcase || showcase.data.deleted === true) return yield* Effect.fail(fieldError("validation_failed", "showcase_id", { reason: "not_found" }))
    // The token is used once: of two acceptances at the same time, the one that removes it goes on.
    const claimed = yield* records.remove(source, REPLICA_INVITATION_TYPE, id).pipe(Effect.mapError(writeUnavailable))
    if (!claimed) return yield* Effect.fail(apiError("not_found"))
    yield* records
      .insert(caller.tenant, REPLICA_SUBSCRIPTION_TYPE, id, { replica_id: id, source_account_id: source.accountId })
      .pipe(Effect.mapError(writeUnavailable))
    yield* recordChange("replica.accepted", { object: REPLICA_TYPE, id })
    // The link and its operation are the source's: recorded there, as this call's act.
    const saved = yield* Effect.gen(function* () {
      const operationId = yield* startSync(id, (current.data.product_ids ?? []) as ReadonlyArray<string>, [])
      return yield* saveReplica(
        current,
        {
          ...current.data,
          status: "active",
          target_showcase_id: showcase.id,
          acceptance_expires_at: null,
          linked_at: formatTimestamp(now),
          operation_id: operationId
        },
        "linked"
      )
    }).pipe(Effect.provideService(Caller, actingIn({ ...caller, grant: new Map() }, source)))
    return saved
  })

// ---------------------------------------------------------------------------------------
// The operation items

const SyncItem = Schema.Struct({ replica_id: Schema.String, action: Schema.Literal("copy", "detach"), product_id: Schema.String })

const originOf = (source: StoredRecord): JsonObject => ({ account_id: source.tenant.accountId, environment: source.tenant.environment, id: source.id })

/**
 * Write a source record's `replicas` list (its tenant; no change of its representation), only
 * if it is still as read: a concurrent item for the same product fails (`state_conflict`, which
 * a resumption retries) and its copies roll back with it, so a product never gets two copies.
 */
const writeReplicas = (source: StoredRecord, refs: ReadonlyArray<ReplicaRef>) =>
  Effect.flatMap(Records, (records) =>
    records.update(source.tenant, source.type, source.id, { ...source.data, replicas: refs }, { expectedRevision: source.revision }).pipe(
      Effect.catchTags({
        RevisionConflict: () => Effect.fail(apiError("state_conflict", { reason: "concurrent_change" })),
        UniqueViolation: (e) => Effect.fail(writeUnavailable(e)),
        StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
      }),
      Effect.asVoid
    )
  )

/** Add a copy to a source record's `replicas` list. */
const listCopy = (source: StoredRecord, copy: StoredRecord) =>
  writeReplicas(source, [...replicasOf(source), { account_id: copy.tenant.accountId, environment: copy.tenant.environment, id: copy.id }])

/** Mark a fresh copy as a replica of `source`, with the source's status (a published one: `<type>.published`). */
const markCopy = (definition: ResourceDefinition, copyId: string, source: StoredRecord) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const copy = yield* records.get(caller.tenant, definition.type, copyId).pipe(Effect.mapError(writeUnavailable))
    if (!copy) return yield* Effect.fail(apiError("not_found"))
    const status = source.data.status === "published" ? "published" : "draft"
    const saved = yield* saveResource(definition, copy, { ...copy.data, status, replica_of: originOf(source) }, undefined)
    if (status === "published") yield* recordResourceChange(definition, "published", resourceView(definition, saved), resourceView(definition, copy))
    return saved
  })

/** Copy a product, its modules, lessons and lesson content into the caller's tenant (the target). */
const copyProduct = (source: StoredRecord, showcaseId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const product = yield* createResource(products, {}, { format: source.data.format, name: source.data.name, showcase_id: showcaseId })
    const copied: Array<readonly [ResourceDefinition, string, StoredRecord]> = []
    for (const module of yield* childrenOf(source.tenant, MODULE_TYPE, "product_id", source.id)) {
      const moduleCopy = yield* createResource(modules, { product_id: product.id }, { name: module.data.name, description: module.data.description ?? null })
      copied.push([modules, moduleCopy.id, module])
      for (const lesson of yield* childrenOf(source.tenant, LESSON_TYPE, "module_id", module.id)) {
        const lessonCopy = yield* createResource(lessons, { product_id: product.id }, { name: lesson.data.name, module_id: moduleCopy.id, kind: lesson.data.kind })
        copied.push([lessons, lessonCopy.id, lesson])
        const content = yield* records.get(source.tenant, LESSON_CONTENT_TYPE, lesson.id).pipe(Effect.mapError(writeUnavailable))
        if (content) {
          yield* records
            .insert(caller.tenant, LESSON_CONTENT_TYPE, lessonCopy.id, { ...content.data, lesson_id: lessonCopy.id })
            .pipe(Effect.mapError(writeUnavailable))
        }
      }
    }
    // Marked last: a replicated product takes no new modules or lessons (3.3.0).
    const marked = yield* Effect.forEach(copied, ([definition, id, origin]) => Effect.map(markCopy(definition, id, origin), (copy) => [copy, origin] as const))
    return { product: yield* markCopy(products, product.id, source), nested: marked }
  })

const copyItem = (replica: StoredRecord, productId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const target = tenantOfTarget(replica)
    if (replica.data.status !== "active" || !((replica.data.product_ids ?? []) as ReadonlyArray<string>).includes(productId)) {
      return yield* Effect.fail(apiError("state_conflict", { reason: "not_linked" }))
    }
    const source = yield* records.get(caller.tenant, PRODUCT_TYPE, productId).pipe(Effect.mapError(writeUnavailable))
    if (!source || source.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    const existing = replicasOf(source).find((ref) => sameTenant(ref, target))
    if (existing) return { object: PRODUCT_TYPE, id: source.id, copy: existing }
    const copies = yield* copyProduct(source, String(replica.data.target_showcase_id)).pipe(Effect.provideService(Caller, actingIn(caller, target)))
    yield* listCopy(source, copies.product)
    for (const [copy, origin] of copies.nested) if (origin.type === MODULE_TYPE) yield* listCopy(origin, copy)
    return { object: PRODUCT_TYPE, id: source.id, copy: { account_id: target.accountId, environment: target.environment, id: copies.product.id } }
  })

/** Drop `replica_of` from a copy (it becomes the target's own record); no change of its representation. */
const release = (record: StoredRecord) =>
  Effect.flatMap(Records, (records) => {
    const { replica_of: _origin, ...data } = record.data
    return records.update(record.tenant, record.type, record.id, data).pipe(Effect.mapError(writeUnavailable), Effect.asVoid)
  })

/** Detach a copy product (in its tenant) and everything in it that names the source account as its origin. */
const releaseCopy = (target: Tenant, copyId: string, sourceAccountId: string) =>
  Effect.gen(function* () {
    const records = yield* Records
    const copy = yield* records.get(target, PRODUCT_TYPE, copyId).pipe(Effect.mapError(writeUnavailable))
    const fromSource = (record: StoredRecord) => (record.data.replica_of as JsonObject | undefined)?.account_id === sourceAccountId
    if (!copy || !fromSource(copy)) return
    yield* release(copy)
    for (const module of yield* childrenOf(target, MODULE_TYPE, "product_id", copy.id)) {
      if (fromSource(module)) yield* release(module)
      for (const lesson of yield* childrenOf(target, LESSON_TYPE, "module_id", module.id)) {
        if (fromSource(lesson)) yield* release(lesson)
      }
    }
  })

/** Stop listing copies in `target` on a source record. */
const unlist = (source: StoredRecord, target: Tenant) => {
  const kept = replicasOf(source).filter((ref) => !sameTenant(ref, target))
  return kept.length === replicasOf(source).length ? Effect.void : writeReplicas(source, kept)
}

const detachItem = (replica: StoredRecord, productId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const target = tenantOfTarget(replica)
    const source = yield* records.get(caller.tenant, PRODUCT_TYPE, productId).pipe(Effect.mapError(writeUnavailable))
    if (!source) return { object: PRODUCT_TYPE, id: productId, detached: null }
    const copy = replicasOf(source).find((ref) => sameTenant(ref, target))
    if (copy) yield* releaseCopy(target, copy.id, caller.tenant.accountId)
    yield* unlist(source, target)
    for (const module of yield* childrenOf(caller.tenant, MODULE_TYPE, "product_id", source.id)) yield* unlist(module, target)
    return { object: PRODUCT_TYPE, id: productId, detached: copy ? { account_id: target.accountId, environment: target.environment, id: copy.id } : null }
  })

/** Detach copies in the caller's tenant whose source was reset (`payload.copy_id` of `payload.source_account_id`). */
const ResetDetachItem = Schema.Struct({ copy_id: Schema.String, source_account_id: Schema.String })

const runSyncItem = (payload: JsonObject): Effect.Effect<Json, ApiError, ItemServices> =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const reset = Schema.decodeUnknownOption(ResetDetachItem)(payload)
    if (Option.isSome(reset)) {
      yield* releaseCopy(caller.tenant, reset.value.copy_id, reset.value.source_account_id)
      return { object: PRODUCT_TYPE, id: reset.value.copy_id, detached: true }
    }
    const item = yield* Schema.decodeUnknown(SyncItem)(payload).pipe(Effect.mapError(() => apiError("item_invalid")))
    const replica = yield* records.get(caller.tenant, REPLICA_TYPE, item.replica_id).pipe(Effect.mapError(writeUnavailable))
    if (!replica) return yield* Effect.fail(apiError("not_found"))
    return item.action === "copy" ? yield* copyItem(replica, item.product_id) : yield* detachItem(replica, item.product_id)
  })

export const replicasOperationKinds: Readonly<Record<string, OperationKind>> = {
  [REPLICA_SYNC]: { runItem: runSyncItem }
}

// ---------------------------------------------------------------------------------------
// Sandbox reset

const PAGE = 1000

const listAll = (tenant: Tenant, type: string, where: ReadonlyArray<{ readonly field: string; readonly op: "eq"; readonly value: string }>) =>
  Effect.gen(function* () {
    const records = yield* Records
    const out: Array<StoredRecord> = []
    let after: { value: string; id: string } | undefined
    for (;;) {
      const page = yield* records
        .list(tenant, type, { where, sort: { field: "id", kind: "text", direction: "asc" }, after, limit: PAGE })
        .pipe(Effect.mapError(writeUnavailable))
      out.push(...page)
      const last = page.at(-1)
      if (page.length < PAGE || !last) return out
      after = { value: last.id, id: last.id }
    }
  })

/**
 * Before the caller's sandbox is emptied: its active links detach their copies in each target
 * (an operation there, one item per copy, read from the products before they go); the links
 * into it are unlinked in their sources, which stop listing the copies (an operation there).
 */
export const replicasOnReset = Effect.gen(function* () {
  const caller = yield* Caller
  const records = yield* Records
  for (const replica of yield* listAll(caller.tenant, REPLICA_TYPE, [{ field: "status", op: "eq", value: "active" }])) {
    const target = tenantOfTarget(replica)
    const productIds = (replica.data.product_ids ?? []) as ReadonlyArray<string>
    const sources = yield* records.getMany(caller.tenant, PRODUCT_TYPE, productIds).pipe(Effect.mapError(writeUnavailable))
    const copies = sources.flatMap((source) => replicasOf(source).filter((ref) => sameTenant(ref, target)))
    yield* records.remove(target, REPLICA_SUBSCRIPTION_TYPE, replica.id).pipe(Effect.mapError(writeUnavailable))
    if (copies.length === 0) continue
    yield* startOperation(
      REPLICA_SYNC,
      copies.map((ref) => ({ key: `detach:${ref.id}`, payload: { copy_id: ref.id, source_account_id: caller.tenant.accountId } }))
    ).pipe(Effect.provideService(Caller, actingIn({ ...caller, grant: new Map() }, target)))
  }
  for (const subscription of yield* listAll(caller.tenant, REPLICA_SUBSCRIPTION_TYPE, [])) {
    const source: Tenant = { accountId: String(subscription.data.source_account_id), environment: caller.tenant.environment }
    const replica = yield* records.get(source, REPLICA_TYPE, subscription.id).pipe(Effect.mapError(writeUnavailable))
    if (replica && replica.data.status !== "unlinked") {
      yield* unlink(replica).pipe(Effect.provideService(Caller, actingIn({ ...caller, grant: new Map() }, source)))
    }
  }
})
