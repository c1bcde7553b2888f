/**
 * Replicas (release 3.2.0, open-points routes `/replicas` and `/replicas/{replica_id}`): the
 * links through which an account shares products with another account (core
 * account/replicas.ts, docs/replicas.md). List and get are derived from the description;
 * the create answers the acceptance token once, the update and the unlink start the
 * `replica_sync` operations, and the target's acceptance is its own route.
 */
import {
  AcceptReplicaBody,
  acceptReplica,
  CreateReplicaBody,
  createReplica,
  planLimitDescription,
  REPLICA_PRODUCTS_MAX,
  REPLICA_TOKEN_TTL_MS,
  replicas,
  resourceEtag,
  resourceView,
  unlinkReplica,
  UpdateReplicaBody,
  updateReplica
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { describedOperations, representationSchema } from "../resources.js"

const tag = replicas.tag
const params = { replica_id: "replica" } as const
const ReplicaSchema = representationSchema(replicas)
const ReplicaWithTokenSchema = Schema.Struct({
  ...(ReplicaSchema as unknown as Schema.Struct<Schema.Struct.Fields>).fields,
  secret: Schema.Struct({
    value: Schema.String.annotations({ description: "The acceptance token, `rplt_…`: give it to the target account; shown in this response only." })
  })
}).annotations({ identifier: "ReplicaWithToken" })

const days = REPLICA_TOKEN_TTL_MS / 86_400_000
const environmentNote =
  "A link joins the same environment of both accounts: a production credential shares with the target's production, a sandbox credential with its sandbox."
const copyNote =
  "Copies are made by an asynchronous operation of this account (`replica_sync`, one item per product, `operation_id` names the latest): the product with its modules, lessons and lesson content, each marked as a replica (read-only except `status`, 403 `replica_readonly`) with the source's status at that moment; files, attachments, exams and taxonomies stay in this account. Publishing a shared product or module later publishes the copies too (3.3.0)."
const detachNote =
  "A product detached (left out of `product_ids`, or the link unlinked) keeps its copy in the target as the target's own ordinary, writable record; this account stops listing it. Detaches run in a `replica_sync` operation too."

const byCode = (record: Parameters<typeof resourceEtag>[1]) => ({ etag: resourceEtag(replicas, record) })

export const replicasRoutes: ReadonlyArray<Operation> = [
  ...describedOperations(replicas, tag, {
    "replicas.list": {
      summary: "List the links sharing this account's products with other accounts, newest first",
      description: `\`status\` narrows the list. ${environmentNote}`
    },
    "replicas.get": { summary: "Retrieve a replica link" }
  }),
  defineOperation({
    id: "replicas.create",
    method: "POST",
    path: replicas.path,
    summary: "Link another account to receive copies of products (pending until it accepts)",
    description: [
      "The target is named by its subdomain. The link starts `pending`, with its acceptance token (`secret.value`) shown in this response only (stored only as a keyed hash) and valid for " +
        `${days} days: the target's own credential accepts with \`POST /replicas/{replica_id}/acceptances\`; until then nothing is copied.`,
      "`target_subdomain` of this account itself: 422 `domain_rule_violation` (reason `self_target`); of no account: 422 `validation_failed` (reason `not_found`). A live (pending or active) link to the same target exists: 409 `already_exists` on `target_subdomain`.",
      `\`product_ids\` (at most ${REPLICA_PRODUCTS_MAX}): each a non-trashed product of this account, once (else 422, itemized on \`product_ids[i]\`: \`not_found\`, \`duplicate\`); a product that is itself a replica: 403 \`replica_readonly\`; a product already copied to that target: 409 \`already_exists\` on \`product_ids[i]\`.`,
      environmentNote,
      planLimitDescription("replicas"),
      "Events `replica.created`, later `replica.linked`, `replica.updated`, `replica.unlinked`."
    ].join(" "),
    tag,
    capability: "replicas.create",
    body: CreateReplicaBody,
    idempotency: "required",
    success: { status: 201, description: "The link, `pending`, with its acceptance token (`secret.value`).", schema: ReplicaWithTokenSchema, headers: ["Location", "ETag"] },
    errors: ["already_exists", "domain_rule_violation", "plan_limit_reached", "replica_readonly", "secret_not_replayable"],
    handler: ({ body }) =>
      createReplica(body).pipe(
        Effect.map(({ record, view }) => ({
          status: 201,
          body: { data: view },
          headers: { location: `/api/v3/replicas/${record.id}`, ...byCode(record) },
          showsSecretOnce: true
        }))
      )
  }),
  defineOperation({
    id: "replicas.update",
    method: "PATCH",
    path: `${replicas.path}/{replica_id}`,
    summary: "Change which products a link shares",
    description: [
      "`product_ids` is the whole new set. On an active link, the products added are copied and those left out detached, by one `replica_sync` operation (`operation_id`); on a pending link the set is only recorded.",
      "New products follow the create's rules (422 itemized, 403 `replica_readonly`, 409 `already_exists`). An unlinked link takes no change: 409 `state_conflict` (reason `unlinked`).",
      copyNote,
      detachNote
    ].join(" "),
    tag,
    capability: "replicas.update",
    scopedBy: "replica_id",
    params,
    body: UpdateReplicaBody,
    idempotency: "optional",
    ifMatch: replicas.type,
    success: { status: 200, description: "The link.", schema: ReplicaSchema, headers: ["ETag"] },
    errors: ["already_exists", "replica_readonly", "state_conflict"],
    handler: ({ path, body, expectedRevision }) =>
      updateReplica(path.replica_id!, body, expectedRevision).pipe(
        Effect.map((record) => ({ status: 200, body: { data: resourceView(replicas, record) }, headers: byCode(record) }))
      )
  }),
  defineOperation({
    id: "replicas.delete",
    method: "DELETE",
    path: `${replicas.path}/{replica_id}`,
    summary: "Unlink: stop sharing with the target and detach its copies",
    description: [
      "The link becomes `unlinked` (final, still readable; a pending link's token stops working) and answers 200 with it. An active link's products are detached by a `replica_sync` operation (`operation_id`).",
      detachNote,
      "Unlinking an unlinked link answers it unchanged."
    ].join(" "),
    tag,
    capability: "replicas.delete",
    scopedBy: "replica_id",
    params,
    idempotency: "optional",
    success: { status: 200, description: "The link, `unlinked`.", schema: ReplicaSchema, headers: ["ETag"] },
    errors: [],
    handler: ({ path }) =>
      unlinkReplica(path.replica_id!).pipe(
        Effect.map((record) => ({ status: 200, body: { data: resourceView(replicas, record) }, headers: byCode(record) }))
      )
  }),
  defineOperation({
    id: "replicas.acceptances.create",
    method: "POST",
    path: `${replicas.path}/{replica_id}/acceptances`,
    summary: "Accept, as the target account, a link another account created: its products are copied here",
    description: [
      "Called with the TARGET account's credential, in the environment of the link, with the `token` the source received (its `secret.value`) and the `showcase_id` of one of this account's showcases where the copies go (else 422 on `showcase_id`, reason `not_found`).",
      "A wrong token, a link to another account or environment, or a link no longer pending: 404 `not_found`, as a missing record. An expired token: 409 `state_conflict` (reason `token_expired`); the source creates a new link.",
      "The link turns `active` (event `replica.linked` in the source account) and the copies start in an operation of the source account; the copies appear here as they are made (their `product.created`, `module.created`, `lesson.created` events are this account's). Answers the link.",
      copyNote
    ].join(" "),
    tag,
    capability: "replicas.create",
    params,
    body: AcceptReplicaBody,
    idempotency: "required",
    success: { status: 200, description: "The link, `active`.", schema: ReplicaSchema },
    errors: ["state_conflict"],
    handler: ({ path, body }) =>
      acceptReplica(path.replica_id!, body).pipe(Effect.map((record) => ({ status: 200, body: { data: resourceView(replicas, record) } })))
  })
]
