/**
 * Operations of the "people" group (3.1.0) beyond those derived for custom fields: users and
 * tags (the derived operations, with the view each needs), a user's tags, and administrators
 * (account-level, so served by their own use cases), with two-factor enrollment.
 */
import {
  administratorEtag,
  administrators,
  administratorView,
  type ApiError,
  type Caller,
  ConfirmTwoFactorBody,
  confirmTwoFactorEnrollment,
  CreateAdministratorBody,
  createAdministrator,
  getAdministrator,
  type JsonObject,
  listAdministrators,
  type Records,
  removeAdministrator,
  ReplaceUserTagsBody,
  replaceUserTags,
  requireReadPersonal,
  resourceEtag,
  resourceView,
  startTwoFactorEnrollment,
  tags,
  tagViews,
  TwoFactorEnrollmentSchema,
  updateAdministrator,
  UpdateAdministratorBody,
  userViews,
  users,
  planLimitDescription
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation, type Reply } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { representationSchema, resourceOperations, withView } from "../resources.js"



// ---------------------------------------------------------------------------------------
// Users and tags

/** Filtering by email would tell personal data: it needs `users.read_personal`. */
const guardEmailFilter = (operation: Operation): Operation =>
  operation.id !== "users.list"
    ? operation
    : {
        ...operation,
        description: `${operation.description ?? ""} Filtering by \`email\` needs \`users.read_personal\`.`.trim(),
        handler: (input) =>
          (input.query as { readonly email?: string }).email === undefined
            ? operation.handler(input)
            : Effect.zipRight(requireReadPersonal, operation.handler(input))
      }

const userOperations = resourceOperations(users).map(guardEmailFilter).map(withView(userViews))

const tagOperations = resourceOperations(tags)
  .map((operation) => (operation.id === "tags.delete" ? { ...operation, errors: [...operation.errors, "tag_in_use" as const] } : operation))
  .map(withView(tagViews))

const replaceUserTagsOperation = withView(userViews)(
  defineOperation({
    id: "users.tags.replace",
    method: "PUT",
    path: "/users/{user_id}/tags",
    summary: "Replace the tags of a user",
    description: "Replace the user's set of tags; each ID must be a tag of the account (else 422 on `ids[i]`).",
    tag: "People",
    capability: "users.update",
    scopedBy: "user_id",
    params: { user_id: "user" },
    body: ReplaceUserTagsBody,
    idempotency: "optional",
    ifMatch: "user",
    success: { status: 200, description: "The user, with its new tags.", schema: representationSchema(users), headers: ["ETag"] },
    errors: [],
    handler: ({ path, body, expectedRevision }) =>
      replaceUserTags(path.user_id!, body.ids, expectedRevision).pipe(
        Effect.map((record) => ({
          status: 200,
          body: { data: resourceView(users, record) },
          headers: { etag: resourceEtag(users, record) }
        }))
      )
  })
)

// ---------------------------------------------------------------------------------------
// Administrators

const tag = "People"
const adminParams = { administrator_id: "administrator" } as const
const Administrator = representationSchema(administrators)
const single = (record: Parameters<typeof administratorView>[0], status = 200, headers: Record<string, string> = {}): Reply => ({
  status,
  body: { data: administratorView(record) },
  headers: { etag: administratorEtag(record), ...headers }
})

const administratorOperations: ReadonlyArray<Operation> = [
  defineOperation({
    id: "administrators.list",
    method: "GET",
    path: "/administrators",
    summary: "List the administrators of the account (the same in every environment), oldest first.",
    tag,
    capability: "administrators.read",
    query: Schema.Struct({
      ...pageQuery("created_at", "name", "email"),
      status: Schema.optional(Schema.Literal("active", "removed")),
      email: Schema.optional(Schema.String)
    }),
    idempotency: "none",
    success: { status: 200, description: "A page of administrators.", schema: Administrator, collection: true },
    errors: ["invalid_cursor"],
    handler: ({ query }) =>
      listAdministrators({ limit: pageLimit(query.limit), cursor: query.cursor, sort: query.sort, status: query.status, email: query.email }).pipe(
        Effect.map((result) => ({ status: 200, body: result as never }))
      )
  }),
  defineOperation({
    id: "administrators.get",
    method: "GET",
    path: "/administrators/{administrator_id}",
    summary: "Retrieve an administrator.",
    tag,
    capability: "administrators.read",
    scopedBy: "administrator_id",
    params: adminParams,
    idempotency: "none",
    success: { status: 200, description: "The administrator.", schema: Administrator, headers: ["ETag"] },
    errors: [],
    handler: ({ path }) => getAdministrator(path.administrator_id!).pipe(Effect.map((record) => single(record)))
  }),
  defineOperation({
    id: "administrators.create",
    method: "POST",
    path: "/administrators",
    summary: "Add an administrator of the account, with a password (write-only).",
    description: planLimitDescription("administrators"),
    tag,
    capability: "administrators.create",
    body: CreateAdministratorBody,
    idempotency: "required",
    success: { status: 201, description: "The new administrator.", schema: Administrator, headers: ["Location", "ETag"] },
    errors: ["already_exists", "plan_limit_reached"],
    handler: ({ body }) =>
      createAdministrator(body).pipe(
        Effect.map((record) => single(record, 201, { location: `/api/v3/administrators/${record.id}` }))
      )
  }),
  defineOperation({
    id: "administrators.update",
    method: "PATCH",
    path: "/administrators/{administrator_id}",
    summary: "Change an administrator's name, email or password",
    description: "Change an administrator's name, email or password. A removed administrator cannot change (409 `state_conflict`).",
    tag,
    capability: "administrators.update",
    scopedBy: "administrator_id",
    params: adminParams,
    body: UpdateAdministratorBody,
    idempotency: "optional",
    ifMatch: "administrator",
    success: { status: 200, description: "The administrator.", schema: Administrator, headers: ["ETag"] },
    errors: ["already_exists", "state_conflict"],
    handler: ({ path, body, expectedRevision }) =>
      updateAdministrator(path.administrator_id!, body, expectedRevision).pipe(Effect.map((record) => single(record)))
  }),
  defineOperation({
    id: "administrators.delete",
    method: "DELETE",
    path: "/administrators/{administrator_id}",
    summary: "Remove an administrator and end its human mode everywhere",
    description:
      "Remove an administrator: kept as `removed` (its email free again), its password and factor dropped, and its links to credentials of every environment ended (human mode through them ends). The last active administrator cannot be removed (409 `state_conflict`).",
    tag,
    capability: "administrators.delete",
    scopedBy: "administrator_id",
    params: adminParams,
    idempotency: "optional",
    success: { status: 200, description: "The administrator, `status: removed`.", schema: Administrator, headers: ["ETag"] },
    errors: ["state_conflict"],
    handler: ({ path }) => removeAdministrator(path.administrator_id!).pipe(Effect.map((record) => single(record)))
  }),
  defineOperation({
    id: "administrators.two_factor_enrollments.create",
    method: "POST",
    path: "/administrators/{administrator_id}/two-factor-enrollments",
    summary: "Start a two-factor enrollment: a new TOTP secret",
    description:
      "Start a two-factor enrollment: a new TOTP secret, shown in this response only, pending until confirmed. A factor already on stays on until the new one is confirmed.",
    tag,
    capability: "administrators.update",
    scopedBy: "administrator_id",
    params: adminParams,
    idempotency: "required",
    success: { status: 201, description: "The pending enrollment, with its secret.", schema: TwoFactorEnrollmentSchema },
    errors: ["state_conflict", "secret_not_replayable"],
    handler: ({ path }) =>
      startTwoFactorEnrollment(path.administrator_id!).pipe(
        Effect.map(({ view }) => ({ status: 201, body: { data: view }, showsSecretOnce: true }))
      )
  }),
  defineOperation({
    id: "administrators.two_factor_enrollments.confirmations.create",
    method: "POST",
    path: "/administrators/{administrator_id}/two-factor-enrollments/confirmations",
    summary: "Confirm a two-factor enrollment with a current code",
    description:
      "Confirm the pending enrollment with a current code (RFC 6238: SHA-1, 6 digits, 30 s, one step of drift): two-factor authentication is on.",
    tag,
    capability: "administrators.update",
    scopedBy: "administrator_id",
    params: adminParams,
    body: ConfirmTwoFactorBody,
    idempotency: "required",
    success: { status: 200, description: "The administrator, `two_factor.enabled: true`.", schema: Administrator, headers: ["ETag"] },
    errors: ["state_conflict"],
    handler: ({ path, body }) => confirmTwoFactorEnrollment(path.administrator_id!, body.code).pipe(Effect.map((record) => single(record)))
  })
]

export const peopleRoutes: ReadonlyArray<Operation> = [
  ...userOperations,
  replaceUserTagsOperation,
  ...tagOperations,
  ...administratorOperations
]
