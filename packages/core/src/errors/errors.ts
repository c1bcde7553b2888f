/**
 * The error catalog of the contract (§7 and §5.3): every code, its HTTP status, and the one
 * typed failure, `ApiError`, that every layer raises. The wire turns it into the envelope of §7.
 */
import { Data } from "effect"

/** Every error code of §7 and §5.3 with its HTTP status. */
export const errorStatus = {
  unauthenticated: 401,
  credential_revoked: 401,
  credential_suspended: 401,
  credential_expired: 401,
  ambiguous_credentials: 401,
  human_context_required: 401,
  invalid_access_token: 401,
  instance_blocked: 403,
  instance_unavailable: 403,
  credential_state_unverifiable: 503,
  permission_denied: 403,
  not_found: 404,
  operation_not_catalogued: 503,
  not_acceptable: 406,
  unsupported_media_type: 415,
  payload_too_large: 413,
  malformed_json: 400,
  json_too_deep: 400,
  invalid_utf8: 400,
  validation_failed: 422,
  unknown_field: 422,
  unknown_parameter: 400,
  invalid_cursor: 400,
  method_not_allowed: 405,
  operation_sunset: 410,
  revision_mismatch: 412,
  if_match_invalid: 400,
  invalid_transition: 422,
  credential_not_removable: 422,
  delegation_limit_exceeded: 403,
  idempotency_key_required: 422,
  idempotency_key_invalid: 422,
  idempotency_key_reused: 422,
  idempotency_in_progress: 409,
  result_uncertain: 409,
  secret_not_replayable: 409,
  result_not_replayable: 409,
  operation_type_unknown: 422,
  duplicate_item_key: 422,
  operation_backlog_exceeded: 422,
  operation_not_cancelable: 422,
  operation_not_resumable: 422,
  item_invalid: 422,
  too_many_items: 422,
  operation_ownership_lost: 409,
  domain_rule_violation: 422,
  http_error: 400,
  internal_error: 500,
  audit_unavailable: 503,
  rate_limit_exceeded: 429,
  rate_limiter_unavailable: 503,
  state_conflict: 409,
  upload_integrity_mismatch: 422,
  storage_unavailable: 503,
  sandbox_only: 403,
  replica_readonly: 403,
  order_set_mismatch: 422,
  hierarchy_violation: 422,
  banner_type_unavailable: 422,
  already_exists: 409,
  plan_limit_reached: 409,
  email_recently_sent: 409,
  feature_disabled: 409,
  tag_in_use: 409,
  template_not_previewable: 409,
  format_unsupported: 409,
  human_mode_not_allowed: 403,
  admin_not_eligible: 403,
  tenant_mismatch: 403,
  too_many_streams: 429,
  stream_busy: 409,
  cursor_expired: 410,
  sandbox_required: 409,
  unsupported_resource: 422,
  plan_invalid: 422,
  plan_stale: 409,
  plan_expired: 409
} as const

export type ErrorCode = keyof typeof errorStatus
export const errorCodes = Object.keys(errorStatus) as ReadonlyArray<ErrorCode>

/**
 * Codes that only appear on an item of `error.details`, never as `error.code`.
 * (`invalid` is the contract's own item code for a malformed public ID in a body.)
 */
export const detailOnlyCodes = [
  "invalid",
  "required",
  "invalid_type",
  "invalid_value",
  "too_long",
  "too_short",
  "out_of_range",
  "not_allowed"
] as const
export type DetailOnlyCode = (typeof detailOnlyCodes)[number]
export type DetailCode = ErrorCode | DetailOnlyCode

/** One itemized problem. Exactly one of `field` / `parameter` names where it is. */
export interface DetailItem {
  readonly field?: string
  readonly parameter?: string
  readonly code: DetailCode
  /** Message parameters; the message itself is chosen by language at the wire. */
  readonly params?: Readonly<Record<string, string | number>>
  readonly reason?: string
  /** The values that would have been accepted (an enum, a `sort`): sent as `allowed` and named in the message. */
  readonly allowed?: ReadonlyArray<string>
}

/** A limit line of the 429 body (§8.1). */
export interface RateLimitLine {
  readonly scope: "origin" | "instance" | "key"
  readonly limit: number
  readonly window_seconds: number
  readonly remaining: number
  readonly retry_after_seconds: number
}

/** Fields that only the 429 of the rate limiter carries. */
export interface RateLimitBody {
  readonly retry_after_seconds: number
  readonly blocked_by: ReadonlyArray<"origin" | "instance" | "key">
  readonly limits: ReadonlyArray<RateLimitLine>
}

/** What an `ApiError` carries besides its code. */
interface ApiErrorFields {
  readonly code: ErrorCode
  readonly details: ReadonlyArray<DetailItem>
  readonly reason?: string | undefined
  /** Message parameters for the top-level message. */
  readonly params?: Readonly<Record<string, string | number>> | undefined
  readonly rateLimit?: RateLimitBody | undefined
  /** Extra response headers that belong to this failure (e.g. `Allow` on a 405). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** A cause kept for the server log only; never sent. */
  readonly internal?: unknown
  /**
   * Where the contract gives one code two statuses: `credential_revoked` is 401 when
   * authenticating, 422 on credential management operations; `http_error` is answered "as
   * response" (§7), 408 when a request body does not arrive in time, 416 for a `Range` past the
   * end of a file (reason `range_not_satisfiable`).
   */
  readonly statusOverride?: 408 | 416 | 422 | 503 | undefined
}

/**
 * The typed failure of the API, generic in its code: `apiError("not_found")` is an
 * `ApiError<"not_found">`, so the error channel of a use case is the union of exactly the codes
 * it can raise (`Effect<Operation, ApiError<"not_found" | "credential_state_unverifiable">>`),
 * checked by the compiler; `ApiError` alone is any code. One place turns any of them into the
 * envelope of §7 (`http/envelope.ts`).
 */
export class ApiError<out Code extends ErrorCode = ErrorCode> extends Data.TaggedError("ApiError")<ApiErrorFields> {
  declare readonly code: Code
  get status(): number {
    return this.statusOverride ?? errorStatus[this.code]
  }
}

/** The codes of an error channel: `CodesOf<ApiError<"a"> | ApiError<"b"> | Other>` is `"a" | "b"`. */
export type CodesOf<E> = E extends ApiError<infer Code> ? Code : never

export interface FailOptions {
  readonly details?: ReadonlyArray<DetailItem>
  readonly reason?: string
  readonly params?: Readonly<Record<string, string | number>>
  readonly headers?: Readonly<Record<string, string>>
  readonly internal?: unknown
  readonly statusOverride?: 408 | 416 | 422 | 503
  readonly rateLimit?: RateLimitBody
}

/** Build an `ApiError`: `apiError("not_found")`, `apiError("validation_failed", { details })`. */
export const apiError = <Code extends ErrorCode>(code: Code, options: FailOptions = {}): ApiError<Code> =>
  new ApiError<Code>({
    code,
    details: options.details ?? [],
    reason: options.reason,
    params: options.params,
    rateLimit: options.rateLimit,
    headers: options.headers,
    internal: options.internal,
    statusOverride: options.statusOverride
  })

/** A 422 `validation_failed` with each problem itemized. */
export const validationFailed = (details: ReadonlyArray<DetailItem>): ApiError<"validation_failed"> =>
  apiError("validation_failed", { details })

/** A 422 on one body field, with the top-level code repeated on the item. */
export const fieldError = <Code extends ErrorCode>(
  code: Code,
  field: string,
  options: { readonly reason?: string; readonly params?: Readonly<Record<string, string | number>> } = {}
): ApiError<Code> =>
  apiError(code, {
    ...options,
    details: [{ field, code, ...(options.reason ? { reason: options.reason } : {}), ...(options.params ? { params: options.params } : {}) }]
  })

/**
 * A store that did not answer. A write that cannot be recorded is `audit_unavailable`; a read
 * that cannot be made leaves the caller's state unverified, `credential_state_unverifiable`.
 * Both are 503: the API fails closed (§1.5). The cause goes to the server log only.
 */
export const writeUnavailable = (cause: unknown): ApiError<"audit_unavailable"> => apiError("audit_unavailable", { internal: cause })
export const readUnavailable = (cause: unknown): ApiError<"credential_state_unverifiable"> =>
  apiError("credential_state_unverifiable", { internal: cause })
