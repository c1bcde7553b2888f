/**
 * Response shapes, for the OpenAPI description. Requests are decoded with the schemas of
 * `@syllabus/core`; responses are built there too and described here.
 */
import { planResources } from "@syllabus/core"
import { Schema } from "effect"

const Timestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })
const NullableTimestamp = Schema.NullOr(Timestamp)
const Actor = Schema.Struct({ id: Schema.String, kind: Schema.String })

export const PolicySchema = Schema.Struct({
  capabilities: Schema.NullOr(Schema.Array(Schema.String)),
  template: Schema.NullOr(Schema.String),
  resources: Schema.NullOr(Schema.Array(Schema.String))
}).annotations({ identifier: "Policy" })

export const CredentialSchema = Schema.Struct({
  object: Schema.Literal("credential"),
  id: Schema.String,
  name: Schema.String,
  purpose: Schema.NullOr(Schema.String),
  auth_mode: Schema.Literal("autonomous", "both", "human_required"),
  environment: Schema.Literal("production", "sandbox"),
  status: Schema.Literal("active", "revoked", "suspended", "expired"),
  created_at: Timestamp,
  updated_at: Timestamp,
  expires_at: NullableTimestamp,
  revoked_at: NullableTimestamp,
  created_by: Actor,
  revoked_by: Schema.NullOr(Actor),
  human: Schema.NullOr(Schema.Struct({ admin_id: Schema.String, expires_at: Timestamp, eligible_since: Timestamp })),
  policy: Schema.Struct({ active_version: Schema.Int, auth_revision: Schema.Int }),
  policies: Schema.Array(PolicySchema),
  revision: Schema.Int,
  secret: Schema.Struct({
    configured: Schema.Boolean,
    issued_at: Timestamp,
    last4: Schema.String,
    rotated_at: NullableTimestamp,
    valid_until: NullableTimestamp,
    value: Schema.optional(Schema.String).annotations({ description: "Only in the response that issues the secret." }),
    version: Schema.Int
  })
}).annotations({ identifier: "Credential" })

export const PolicyVersionSchema = Schema.Struct({
  object: Schema.Literal("policy_version"),
  credential_id: Schema.String,
  version: Schema.Int,
  active: Schema.Boolean,
  policies: Schema.Array(PolicySchema),
  created_at: Timestamp
}).annotations({ identifier: "PolicyVersion" })

export const CredentialAdministratorSchema = Schema.Struct({
  object: Schema.Literal("credential_administrator"),
  id: Schema.String,
  credential_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  linked_at: Timestamp
}).annotations({ identifier: "CredentialAdministrator" })

export const PolicyTemplateSchema = Schema.Struct({
  object: Schema.Literal("policy_template"),
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  capabilities: Schema.Array(Schema.String)
}).annotations({ identifier: "PolicyTemplate" })

export const RequestSchema = Schema.Struct({
  object: Schema.Literal("request"),
  id: Schema.String,
  method: Schema.String,
  path: Schema.String,
  operation_id: Schema.NullOr(Schema.String),
  status: Schema.Int,
  outcome: Schema.Literal("success", "client_error", "rate_limited", "server_error"),
  error_code: Schema.NullOr(Schema.String),
  credential_id: Schema.String,
  administrator_id: Schema.NullOr(Schema.String),
  client_request_id: Schema.NullOr(Schema.String),
  idempotency_key: Schema.NullOr(Schema.String),
  idempotent_replayed: Schema.Boolean,
  duration_ms: Schema.Int,
  environment: Schema.Literal("production", "sandbox"),
  created_at: Timestamp
}).annotations({ identifier: "Request" })

export const AuditEntrySchema = Schema.Struct({
  object: Schema.Literal("audit_entry"),
  id: Schema.String,
  action: Schema.String,
  resource_type: Schema.String,
  resource_id: Schema.String,
  actor: Schema.Struct({
    kind: Schema.String.annotations({ description: "`credential`, `admin` (human mode), or `gateway`: a change a payment gateway's signed notification made (a sales event and what it did to access)." }),
    credential_id: Schema.String.annotations({
      jsonSchema: { type: "string", pattern: "^(crd|gtw)_[0-9A-Za-z]{9}$", description: "The credential that made the change (`crd_`), or with kind `gateway` the gateway (`gtw_`)." }
    }),
    administrator_id: Schema.NullOr(Schema.String)
  }),
  request_id: Schema.String,
  changes: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  environment: Schema.Literal("production", "sandbox"),
  created_at: Timestamp
}).annotations({ identifier: "AuditEntry" })

const Outcomes = Schema.Struct({
  success: Schema.Int,
  client_error: Schema.Int,
  rate_limited: Schema.Int,
  server_error: Schema.Int
})

export const AccountUsageSchema = Schema.Struct({
  object: Schema.Literal("account_usage"),
  environment: Schema.Literal("production", "sandbox"),
  generated_at: Timestamp,
  windows: Schema.Array(
    Schema.Struct({
      window: Schema.Literal("1h", "24h", "7d", "30d"),
      from: Timestamp,
      to: Timestamp,
      requests: Schema.Int,
      by_outcome: Outcomes,
      by_credential: Schema.Array(Schema.Struct({ credential_id: Schema.String, requests: Schema.Int, by_outcome: Outcomes }))
    })
  ),
  limits: Schema.Struct({
    enabled: Schema.Boolean,
    window_seconds: Schema.Int,
    origin: Schema.Int,
    instance: Schema.Int,
    key: Schema.Int
  }),
  plan: Schema.Struct({
    name: Schema.NullOr(Schema.String).annotations({ description: "The plan's name as the operator set it (e.g. `starter`); null when unnamed." }),
    resources: Schema.Array(
      Schema.Struct({
        resource: Schema.Literal(...planResources),
        limit: Schema.NullOr(Schema.Int).annotations({ description: "The most records of the resource the environment may hold; null: unlimited." }),
        used: Schema.Int.annotations({
          description: "The slots in use: records not in the trash (administrators not removed, credentials not revoked)."
        })
      })
    ).annotations({ description: "Every resource a plan may limit, in a fixed order, limited or not." })
  }).annotations({
    description:
      "The account's service plan as it applies to this environment: each environment holds up to the limits on its own; administrators are the account's, counted once. A create beyond a limit is 409 `plan_limit_reached`. Only the operator changes the plan."
  })
}).annotations({ identifier: "AccountUsage" })

export const SandboxResetSchema = Schema.Struct({
  object: Schema.Literal("sandbox_reset"),
  id: Schema.String,
  status: Schema.Literal("succeeded"),
  removed_records: Schema.Int,
  created_at: Timestamp
}).annotations({ identifier: "SandboxReset" })

export const CapabilitiesSchema = Schema.Struct({
  object: Schema.Literal("capabilities"),
  release: Schema.String,
  capabilities: Schema.Array(Schema.String),
  deprecations: Schema.Array(
    Schema.Struct({
      operation_id: Schema.String,
      deprecated_at: Timestamp,
      sunset_at: Timestamp
    })
  ).annotations({ description: "Deprecated operations: each works until `sunset_at`, then answers 410 `operation_sunset`. None in this release." }),
  deprecated_parameters: Schema.Array(
    Schema.Struct({
      operation_id: Schema.String,
      parameter: Schema.String.annotations({ description: "The deprecated query parameter." }),
      replacement: Schema.String.annotations({ description: "The parameter to send instead." }),
      deprecated_at: Timestamp,
      sunset_at: Timestamp
    })
  ).annotations({
    description:
      "Deprecated query parameters of operations that are not themselves deprecated: a request sending one gets the deprecation headers, and after `sunset_at` 410 `operation_sunset`; the operation, called without it, stays."
  })
}).annotations({ identifier: "Capabilities" })

/** `page` of every collection (§2.1, §4.2): a null `next_cursor` ends the collection. */
export const PageSchema = Schema.Struct({
  limit: Schema.Int,
  next_cursor: Schema.NullOr(Schema.String),
  prev_cursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Page" })

const ErrorDetailSchema = Schema.Struct({
  field: Schema.optional(Schema.String).annotations({ description: "The body field, for a body problem." }),
  parameter: Schema.optional(Schema.String).annotations({ description: "The query parameter or header, for a parameter problem." }),
  code: Schema.String,
  message: Schema.String,
  reason: Schema.optional(Schema.String),
  allowed: Schema.optional(Schema.Array(Schema.String)).annotations({
    description: "The values that would have been accepted (an enum, a `sort`), also named in `message`."
  })
}).annotations({ identifier: "ErrorDetail", description: "One itemized problem: exactly one of `field` / `parameter` names where it is." })

const errorFields = {
  code: Schema.String.annotations({
    description: "Stable machine code, the only field to branch on. An unknown code is handled by its HTTP status."
  }),
  message: Schema.String.annotations({ description: "Text in the language negotiated by `Accept-Language`." }),
  request_id: Schema.String.annotations({ description: "Equals the `X-Request-Id` response header." }),
  details: Schema.Array(ErrorDetailSchema).annotations({ description: "Always present; empty when nothing is itemized." }),
  reason: Schema.optional(Schema.String).annotations({ description: "On business rejections with several causes." })
}

/** The error envelope of §7. */
export const ErrorSchema = Schema.Struct({
  error: Schema.Struct(errorFields)
}).annotations({ identifier: "Error", description: "The envelope of every error." })

const RateLimitLineSchema = Schema.Struct({
  scope: Schema.Literal("origin", "instance", "key"),
  limit: Schema.Int,
  window_seconds: Schema.Int,
  remaining: Schema.Int,
  retry_after_seconds: Schema.Int
}).annotations({ identifier: "RateLimitLine", description: "`instance` is the account, `key` the credential." })

/** The 429 `rate_limit_exceeded` body of §8.1: the envelope plus the limits that blocked the call. */
export const RateLimitErrorSchema = Schema.Struct({
  error: Schema.Struct({
    ...errorFields,
    retry_after_seconds: Schema.Int,
    blocked_by: Schema.Array(Schema.Literal("origin", "instance", "key")),
    limits: Schema.Array(RateLimitLineSchema)
  })
}).annotations({ identifier: "RateLimitError", description: "The envelope of a 429 `rate_limit_exceeded`." })

const Purpose = Schema.Literal("image", "pdf", "import", "editor", "document")

export const UploadSchema = Schema.Struct({
  object: Schema.Literal("upload"),
  id: Schema.String,
  purpose: Purpose,
  filename: Schema.String,
  size: Schema.Int,
  content_type: Schema.String,
  sha256: Schema.String,
  status: Schema.Literal("pending", "completed", "abandoned", "expired"),
  part_size: Schema.Int,
  parts_count: Schema.Int,
  parts: Schema.Array(Schema.Struct({ number: Schema.Int, size: Schema.Int, sha256: Schema.String, received_at: Timestamp })),
  file_id: Schema.NullOr(Schema.String),
  expires_at: Timestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
  upload_urls: Schema.Array(
    Schema.Struct({ part_number: Schema.Int, method: Schema.Literal("PUT"), url: Schema.String, size: Schema.Int })
  ).annotations({ description: "Where to send each part while the session is pending; empty afterwards." })
}).annotations({ identifier: "Upload" })

export const UploadPartSchema = Schema.Struct({
  object: Schema.Literal("upload_part"),
  upload_id: Schema.String,
  number: Schema.Int,
  size: Schema.Int,
  sha256: Schema.String,
  received_at: Timestamp
}).annotations({ identifier: "UploadPart" })

export const FileSchema = Schema.Struct({
  object: Schema.Literal("file"),
  id: Schema.String,
  purpose: Schema.Literal("image", "pdf", "import", "editor", "document", "certificate_preview", "certificate", "export").annotations({
    description:
      "What the file is for: an upload's purpose, or a file the service made: `certificate_preview` (a certificate template's preview, a PDF), `certificate` (an issued certificate's document, a PDF), `export` (an export's file)."
  }),
  filename: Schema.String,
  size: Schema.Int,
  content_type: Schema.String,
  sha256: Schema.String,
  created_at: Timestamp,
  expires_at: Schema.NullOr(Timestamp).annotations({
    description:
      "When the file goes (404 from then on; its bytes are removed): 24 hours after it was made for a `certificate_preview`, 7 days after an export completed for an `export`; `null` for an uploaded file and a certificate's document, which stay."
  })
}).annotations({ identifier: "File" })

const OperationError = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  field: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String),
  resource_id: Schema.NullOr(Schema.String),
  details: Schema.optional(
    Schema.Array(Schema.Struct({ field: Schema.NullOr(Schema.String), code: Schema.String, reason: Schema.NullOr(Schema.String) }))
  ).annotations({ description: "Every problem of the item, itemized (e.g. an import's row invalid in several fields); present when there are any." })
}).annotations({ identifier: "OperationError" })

export const OperationSchema = Schema.Struct({
  object: Schema.Literal("operation"),
  id: Schema.String,
  type: Schema.String.annotations({ description: "Open enum: new operation types may appear." }),
  status: Schema.Literal("queued", "running", "succeeded", "failed", "canceled"),
  attempt: Schema.Struct({ number: Schema.Int, status: Schema.String }),
  cancellation_requested: Schema.Boolean,
  progress: Schema.Struct({ done: Schema.Int, failed: Schema.Int, total: Schema.Int }),
  error: Schema.NullOr(OperationError),
  items_url: Schema.String,
  result_url: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  started_at: NullableTimestamp,
  finished_at: NullableTimestamp,
  expires_at: Timestamp.annotations({
    description:
      "30 days after creation, whatever the status: afterwards the operation and its items are gone (404, absent from the list)."
  })
}).annotations({ identifier: "Operation" })

export const OperationItemSchema = Schema.Struct({
  object: Schema.Literal("operation_item"),
  id: Schema.String,
  operation_id: Schema.String,
  key: Schema.String,
  status: Schema.Literal("queued", "succeeded", "failed", "canceled"),
  error: Schema.NullOr(OperationError),
  result: Schema.Unknown,
  created_at: Timestamp,
  finished_at: NullableTimestamp
}).annotations({ identifier: "OperationItem" })

export const EventSchema = Schema.Struct({
  object: Schema.Literal("event"),
  id: Schema.String,
  type: Schema.String.annotations({ description: "Open enum `<resource>.<past-tense verb>`; see `GET /event-types`." }),
  version: Schema.Int,
  created_at: Timestamp,
  environment: Schema.Literal("production", "sandbox"),
  request_id: Schema.String,
  data: Schema.Struct({ object: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }),
  previous_attributes: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}).annotations({ identifier: "Event" })

export const EventTypeSchema = Schema.Struct({
  object: Schema.Literal("event_type"),
  type: Schema.String,
  version: Schema.Int,
  visibility: Schema.Literal("public"),
  resource_type: Schema.String,
  payload_keys: Schema.Array(Schema.String)
}).annotations({ identifier: "EventType" })
