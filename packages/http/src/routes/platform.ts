/** The audit trail, usage, sandbox and the self-description of the service (§4.5, §9). */
import {
  accountPlanUsage,
  accountUsage,
  Caller,
  capabilityCatalog,
  getAuditEntry,
  getRequest,
  listAuditEntries,
  listRequests,
  RateLimitConfig,
  resetSandbox,
  Timestamp,
  writeUnavailable
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation } from "../operation.js"
import { pageLimit, pageQuery } from "../query.js"
import { AccountUsageSchema, AuditEntrySchema, CapabilitiesSchema, RequestSchema, SandboxResetSchema } from "../schemas.js"
import { deprecatedParameterList, deprecationList } from "../deprecations.js"
import { RELEASE, ServerSettings } from "../services.js"

const range = {
  created_after: Schema.optional(Timestamp),
  created_before: Schema.optional(Timestamp)
}

export const platformOperations = [
  defineOperation({
    id: "requests.list",
    method: "GET",
    path: "/requests",
    summary: "The request log: one entry per authenticated call, newest first, kept 30 days.",
    tag: "Audit",
    capability: "requests.read",
    query: Schema.Struct({
      ...pageQuery("created_at"),
      ...range,
      credential_id: Schema.optional(Schema.String),
      outcome: Schema.optional(Schema.Literal("success", "client_error", "rate_limited", "server_error")),
      operation_id: Schema.optional(Schema.String),
      client_request_id: Schema.optional(Schema.String)
    }),
    idempotency: "none",
    success: { status: 200, description: "A page of requests.", schema: RequestSchema, collection: true },
    errors: ["invalid_cursor", "audit_unavailable"],
    handler: ({ query }) =>
      listRequests({
        limit: pageLimit(query.limit),
        cursor: query.cursor,
        sort: query.sort,
        created_after: query.created_after,
        created_before: query.created_before,
        filters: {
          credential_id: query.credential_id,
          outcome: query.outcome,
          operation_id: query.operation_id,
          client_request_id: query.client_request_id
        }
      }).pipe(Effect.map((body) => ({ status: 200, body })))
  }),
  defineOperation({
    id: "requests.get",
    method: "GET",
    path: "/requests/{request_id}",
    summary: "Get the request-log entry of one call, by its X-Request-Id",
    tag: "Audit",
    capability: "requests.read",
    params: { request_id: "request" },
    idempotency: "none",
    success: { status: 200, description: "The entry.", schema: RequestSchema },
    errors: ["audit_unavailable"],
    handler: ({ path }) => getRequest(path.request_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "audit_entries.list",
    method: "GET",
    path: "/audit-entries",
    summary: "Every change made in the environment, newest first, kept 30 days.",
    tag: "Audit",
    capability: "audit_entries.read",
    query: Schema.Struct({
      ...pageQuery("created_at"),
      ...range,
      resource_id: Schema.optional(Schema.String),
      resource_type: Schema.optional(Schema.String),
      action: Schema.optional(Schema.String),
      request_id: Schema.optional(Schema.String)
    }),
    idempotency: "none",
    success: { status: 200, description: "A page of audit entries.", schema: AuditEntrySchema, collection: true },
    errors: ["invalid_cursor", "audit_unavailable"],
    handler: ({ query }) =>
      listAuditEntries({
        limit: pageLimit(query.limit),
        cursor: query.cursor,
        sort: query.sort,
        created_after: query.created_after,
        created_before: query.created_before,
        filters: {
          resource_id: query.resource_id,
          resource_type: query.resource_type,
          action: query.action,
          request_id: query.request_id
        }
      }).pipe(Effect.map((body) => ({ status: 200, body })))
  }),
  defineOperation({
    id: "audit_entries.get",
    method: "GET",
    path: "/audit-entries/{audit_entry_id}",
    summary: "One audit entry.",
    tag: "Audit",
    capability: "audit_entries.read",
    params: { audit_entry_id: "audit_entry" },
    idempotency: "none",
    success: { status: 200, description: "The entry.", schema: AuditEntrySchema },
    errors: ["audit_unavailable"],
    handler: ({ path }) => getAuditEntry(path.audit_entry_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "account.usage.get",
    method: "GET",
    path: "/account/usage",
    summary: "Calls per window (1h, 24h, 7d, 30d), per outcome and per credential, with the limits in effect.",
    description:
      "`limits` are the rate limits (per 60-second window, by scope); `plan` is the account's service plan for this environment: per resource its limit (null: unlimited) and the slots in use (docs/plan-limits.md).",
    tag: "Account",
    capability: "usage.read",
    idempotency: "none",
    success: { status: 200, description: "The usage report.", schema: AccountUsageSchema },
    errors: ["audit_unavailable"],
    handler: () =>
      Effect.gen(function* () {
        const config = yield* RateLimitConfig
        const usage = yield* accountUsage(config.limits, config.enabled)
        const caller = yield* Caller
        const plan = yield* accountPlanUsage(caller.tenant).pipe(Effect.mapError(writeUnavailable))
        return { status: 200, body: { data: { ...usage, plan } } }
      })
  }),
  defineOperation({
    id: "sandbox.resets.create",
    method: "POST",
    path: "/sandbox/resets",
    summary: "Empty the sandbox environment; credentials, administrators, settings and the audit trail stay.",
    tag: "Sandbox",
    capability: "sandbox.reset",
    sandboxOnly: true,
    idempotency: "required",
    success: { status: 201, description: "The reset, done.", schema: SandboxResetSchema },
    errors: ["sandbox_only"],
    handler: () => resetSandbox().pipe(Effect.map((data) => ({ status: 201, body: { data } })))
  }),
  defineOperation({
    id: "capabilities.get",
    method: "GET",
    path: "/capabilities",
    summary: "The contract release served, the capabilities of the release, and the deprecated operations.",
    tag: "Service",
    capability: "authenticated",
    idempotency: "none",
    success: { status: 200, description: "The capabilities.", schema: CapabilitiesSchema },
    errors: [],
    handler: () =>
      Effect.gen(function* () {
        yield* Caller
        const settings = yield* ServerSettings
        return {
          status: 200,
          body: {
            data: {
              object: "capabilities",
              release: RELEASE,
              capabilities: [...capabilityCatalog],
              deprecations: deprecationList(settings),
              deprecated_parameters: deprecatedParameterList()
            }
          }
        }
      })
  })
]
