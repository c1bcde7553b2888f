/** Credentials and access policies (§2.3, §4.3, open-points) over HTTP. */
import {
  Caller,
  CreateCredentialBody,
  credentialEtag,
  credentialView,
  deleteCredential,
  issueCredential,
  linkAdministrator,
  LinkAdministratorBody,
  listAdministratorLinks,
  listCredentials,
  listPolicyVersions,
  loadCredential,
  policyTemplates,
  revokeCredential,
  RotateSecretBody,
  rotateSecret,
  unlinkAdministrator,
  updateCredential,
  UpdateCredentialBody,
  planLimitDescription
} from "@syllabus/core"
import { Clock, Effect, Schema } from "effect"
import { defineOperation } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { CredentialAdministratorSchema, CredentialSchema, PolicyTemplateSchema, PolicyVersionSchema } from "../schemas.js"

const credentialParams = { credential_id: "credential" } as const
const tag = "Credentials"

const ok = (status: number, data: unknown, headers?: Record<string, string>) => ({
  status,
  body: { data } as never,
  ...(headers ? { headers } : {})
})

export const credentialOperations = [
  defineOperation({
    id: "credentials.create",
    method: "POST",
    path: "/credentials",
    summary: "Issue a credential. The secret is in this response only.",
    description: planLimitDescription("credentials"),
    tag,
    capability: "credentials.create",
    body: CreateCredentialBody,
    idempotency: "required",
    success: { status: 201, description: "The credential, with `secret.value`.", schema: CredentialSchema, headers: ["Location", "ETag"] },
    errors: ["delegation_limit_exceeded", "plan_limit_reached", "secret_not_replayable"],
    handler: ({ body }) =>
      issueCredential(body).pipe(
        Effect.map(({ record, view }) => ({
          ...ok(201, view, { location: `/api/v3/credentials/${record.id}`, etag: credentialEtag(record) }),
          showsSecretOnce: true
        }))
      )
  }),
  defineOperation({
    id: "credentials.current.get",
    method: "GET",
    path: "/credentials/current",
    summary: "Get the credential making the call",
    description: "The credential making the call; in human mode `human` names the administrator.",
    tag,
    capability: "authenticated",
    idempotency: "none",
    success: { status: 200, description: "The calling credential.", schema: CredentialSchema, headers: ["ETag"] },
    errors: [],
    handler: () =>
      Effect.gen(function* () {
        const caller = yield* Caller
        const now = yield* Clock.currentTimeMillis
        // Authentication has just read this record: no need to read it again.
        const record = caller.record ?? (yield* loadCredential(caller.tenant, caller.credential.id))
        const human = caller.human
          ? {
              admin_id: caller.human.adminId,
              expires_at: new Date(caller.human.expiresAt).toISOString(),
              eligible_since: caller.human.eligibleSince
            }
          : null
        return ok(200, credentialView(record, now, { human }), { etag: credentialEtag(record) })
      })
  }),
  defineOperation({
    id: "credentials.list",
    method: "GET",
    path: "/credentials",
    summary: "List the credentials of the environment, newest first.",
    tag,
    capability: "credentials.read",
    query: Schema.Struct({
      ...pageQuery("created_at"),
      status: Schema.optional(Schema.Literal("active", "suspended", "revoked", "expired"))
    }),
    idempotency: "none",
    success: { status: 200, description: "A page of credentials.", schema: CredentialSchema, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ query }) =>
      listCredentials({
        limit: pageLimit(query.limit),
        cursor: query.cursor,
        status: query.status,
        sort: query.sort as "created_at" | "-created_at" | undefined
      }).pipe(Effect.map(({ data, page }) => ({ status: 200, body: { data, page } as never })))
  }),
  defineOperation({
    id: "credentials.get",
    method: "GET",
    path: "/credentials/{credential_id}",
    summary: "Retrieve a credential.",
    tag,
    capability: "credentials.read",
    scopedBy: "credential_id",
    params: credentialParams,
    idempotency: "none",
    success: { status: 200, description: "The credential.", schema: CredentialSchema, headers: ["ETag"] },
    errors: [],
    handler: ({ path }) =>
      Effect.gen(function* () {
        const caller = yield* Caller
        const now = yield* Clock.currentTimeMillis
        const record = yield* loadCredential(caller.tenant, path.credential_id!)
        return ok(200, credentialView(record, now), { etag: credentialEtag(record) })
      })
  }),
  defineOperation({
    id: "credentials.update",
    method: "PATCH",
    path: "/credentials/{credential_id}",
    summary: "Change a credential: name, purpose, mode, expiry, policies or status",
    description: "Change a credential: name, purpose, mode, expiry, policies, or status `active` / `suspended`.",
    tag,
    capability: "credentials.update",
    scopedBy: "credential_id",
    params: credentialParams,
    body: UpdateCredentialBody,
    idempotency: "optional",
    ifMatch: "credential",
    success: { status: 200, description: "The credential.", schema: CredentialSchema, headers: ["ETag"] },
    errors: ["revision_mismatch", "if_match_invalid", "invalid_transition", "credential_revoked", "delegation_limit_exceeded"],
    handler: ({ path, body, expectedRevision }) =>
      Effect.gen(function* () {
        const record = yield* updateCredential(path.credential_id!, body, expectedRevision)
        const now = yield* Clock.currentTimeMillis
        return ok(200, credentialView(record, now), { etag: credentialEtag(record) })
      })
  }),
  defineOperation({
    id: "credentials.delete",
    method: "DELETE",
    path: "/credentials/{credential_id}",
    summary: "Remove a credential that has never been used; a used one can only be revoked.",
    tag,
    capability: "credentials.delete",
    scopedBy: "credential_id",
    params: credentialParams,
    idempotency: "optional",
    success: { status: 204, description: "Removed." },
    errors: ["credential_not_removable"],
    handler: ({ path }) => deleteCredential(path.credential_id!).pipe(Effect.as({ status: 204, body: null }))
  }),
  defineOperation({
    id: "credentials.revocations.create",
    method: "POST",
    path: "/credentials/{credential_id}/revocations",
    summary: "Revoke a credential: both modes end; its event streams close shortly after.",
    tag,
    capability: "credentials.revoke",
    scopedBy: "credential_id",
    params: credentialParams,
    idempotency: "required",
    success: { status: 200, description: "The revoked credential.", schema: CredentialSchema, headers: ["ETag"] },
    errors: ["credential_revoked"],
    handler: ({ path }) =>
      Effect.gen(function* () {
        const record = yield* revokeCredential(path.credential_id!)
        const now = yield* Clock.currentTimeMillis
        return ok(200, credentialView(record, now), { etag: credentialEtag(record) })
      })
  }),
  defineOperation({
    id: "credentials.secret_rotations.create",
    method: "POST",
    path: "/credentials/{credential_id}/secret-rotations",
    summary: "Rotate a credential's secret, with an optional grace period for the old one",
    description: "Issue a new secret; the current one stops now or after `grace_period_seconds`.",
    tag,
    capability: "credentials.update",
    scopedBy: "credential_id",
    params: credentialParams,
    body: RotateSecretBody,
    idempotency: "required",
    success: { status: 200, description: "The credential, with the new `secret.value`.", schema: CredentialSchema, headers: ["ETag"] },
    errors: ["credential_revoked", "secret_not_replayable"],
    handler: ({ path, body }) =>
      rotateSecret(path.credential_id!, body).pipe(
        Effect.map(({ record, view }) => ({ ...ok(200, view, { etag: credentialEtag(record) }), showsSecretOnce: true }))
      )
  }),
  defineOperation({
    id: "credentials.policy_versions.list",
    method: "GET",
    path: "/credentials/{credential_id}/policy-versions",
    summary: "The policies the credential has had, newest first; previous versions are kept 365 days.",
    tag,
    capability: "credentials.read",
    scopedBy: "credential_id",
    params: credentialParams,
    idempotency: "none",
    success: { status: 200, description: "Every version at once.", schema: PolicyVersionSchema, collection: true },
    errors: [],
    handler: ({ path }) =>
      listPolicyVersions(path.credential_id!).pipe(
        Effect.map((data) => ({ status: 200, body: { data, page: { limit: data.length, next_cursor: null, prev_cursor: null } } }))
      )
  }),
  defineOperation({
    id: "credentials.administrators.list",
    method: "GET",
    path: "/credentials/{credential_id}/administrators",
    summary: "The administrators that may act through this credential in human mode.",
    tag,
    capability: "credentials.read",
    scopedBy: "credential_id",
    params: credentialParams,
    idempotency: "none",
    success: { status: 200, description: "Every link at once.", schema: CredentialAdministratorSchema, collection: true },
    errors: [],
    handler: ({ path }) =>
      listAdministratorLinks(path.credential_id!).pipe(
        Effect.map((data) => ({ status: 200, body: { data, page: { limit: data.length, next_cursor: null, prev_cursor: null } } as never }))
      )
  }),
  defineOperation({
    id: "credentials.administrators.create",
    method: "POST",
    path: "/credentials/{credential_id}/administrators",
    summary: "Let an administrator of the account act through this credential.",
    tag,
    capability: "credentials.update",
    scopedBy: "credential_id",
    params: credentialParams,
    body: LinkAdministratorBody,
    idempotency: "required",
    success: { status: 201, description: "The link.", schema: CredentialAdministratorSchema, headers: ["Location"] },
    errors: ["already_exists", "credential_revoked"],
    handler: ({ path, body }) =>
      linkAdministrator(path.credential_id!, body).pipe(
        Effect.map((link) => ok(201, link, { location: `/api/v3/credentials/${path.credential_id}/administrators/${body.administrator_id}` }))
      )
  }),
  defineOperation({
    id: "credentials.administrators.delete",
    method: "DELETE",
    path: "/credentials/{credential_id}/administrators/{administrator_id}",
    summary: "End an administrator's human mode through this credential.",
    tag,
    capability: "credentials.update",
    scopedBy: "credential_id",
    params: { ...credentialParams, administrator_id: "administrator" },
    idempotency: "optional",
    success: { status: 204, description: "Unlinked." },
    errors: [],
    handler: ({ path }) => unlinkAdministrator(path.credential_id!, path.administrator_id!).pipe(Effect.as({ status: 204, body: null }))
  }),
  defineOperation({
    id: "policy_templates.list",
    method: "GET",
    path: "/policy-templates",
    summary: "The policy templates a credential's policies can name.",
    tag,
    capability: "authenticated",
    idempotency: "none",
    success: { status: 200, description: "Every template at once.", schema: PolicyTemplateSchema, collection: true },
    errors: [],
    handler: () =>
      Effect.succeed({
        status: 200,
        body: {
          data: policyTemplates.map((t) => ({ object: "policy_template", ...t, capabilities: [...t.capabilities] })),
          page: { limit: policyTemplates.length, next_cursor: null, prev_cursor: null }
        } as never
      })
  })
]
