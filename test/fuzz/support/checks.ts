/**
 * What every answer must be, whatever was asked (§1, §2.1, §7 and the description): JSON in
 * the contract's shape. A check returns the problems it sees (empty: the answer is right), so
 * a property can report all of them with the exchange that caused them.
 */
import type { Response } from "../../support/harness.js"
import type { DescribedOperation, SchemaCheck } from "./description.js"
import { isKnownUndeclared } from "./known-defects.js"

/**
 * §7's table (with §5.3's codes, all in it): each code and its HTTP status. Transcribed from the
 * contract, not imported from core's `errorStatus`: an oracle must not share the product's mistakes.
 */
export const contractCodes: Readonly<Record<string, number | ReadonlyArray<number> | "any">> = {
  unauthenticated: 401,
  credential_revoked: [401, 422],
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
  http_error: "any",
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
  plan_expired: 409,
  invalid: 422
}

const statusAllowed = (code: string, status: number): boolean => {
  const expected = contractCodes[code]
  if (expected === undefined) return false
  if (expected === "any") return true
  return typeof expected === "number" ? expected === status : expected.includes(status)
}

export interface AnswerContext {
  readonly operation: DescribedOperation
  readonly check: SchemaCheck
  /** The method sent (another than the operation's: 405 is the answer). */
  readonly method: string
  /** An `X-Client-Request-Id` sent that the contract accepts: it must be echoed. */
  readonly clientRequestId?: string | undefined
}

/**
 * The problems of one answer: the envelope of §7 on every error, a status the description
 * declares for the operation, a body matching the description's schema for that status, no
 * 500, and no 503 (nothing is down: a 503 would be the server blaming itself for the input).
 */
export const answerProblems = (ctx: AnswerContext, res: Response): Array<string> => {
  const problems: Array<string> = []
  const { operation } = ctx
  const status = res.status
  const requestId = res.headers.get("x-request-id")
  if (requestId === null || !/^req_[0-9A-Za-z]{9}$/.test(requestId)) problems.push(`X-Request-Id missing or malformed: ${requestId}`)
  if (res.headers.get("x-service-release") === null) problems.push("X-Service-Release missing")
  if (ctx.clientRequestId !== undefined && res.headers.get("x-client-request-id") !== ctx.clientRequestId) {
    problems.push(`X-Client-Request-Id not echoed: sent ${ctx.clientRequestId}, got ${res.headers.get("x-client-request-id")}`)
  }
  if (status >= 500) {
    if (status !== 503) problems.push(`status ${status}: a 5xx other than 503`)
    else problems.push(`503 ${res.body?.error?.code}: the server blamed itself for a request (nothing is down here)`)
  }

  const described = operation.responses.get(status)
  if (ctx.method === operation.method && described === undefined) problems.push(`status ${status} is not declared for ${operation.id}`)

  if (status === 204) {
    if (res.text !== "") problems.push(`204 with a body: ${res.text.slice(0, 100)}`)
    return problems
  }
  // A success the description sends as something else than JSON (a file's bytes): not JSON to check.
  if (status < 300 && operation.produces !== undefined) return problems
  const contentType = res.headers.get("content-type") ?? ""
  if (!/^application\/json/.test(contentType)) problems.push(`content-type ${contentType} is not JSON`)
  if (res.body === undefined) {
    problems.push(`body is not JSON: ${res.text.slice(0, 200)}`)
    return problems
  }

  if (status < 300) {
    if (described?.requiresData && (res.body === null || typeof res.body !== "object" || !("data" in res.body))) problems.push("success without `data`")
    const success = [...operation.responses.values()].find((r) => r.status < 300)
    if (success && success.status !== status) problems.push(`success status ${status}, the description declares ${success.status}`)
    if (described?.schemaPointer) {
      for (const e of ctx.check(described.schemaPointer, res.body)) problems.push(`body does not match the described ${status} schema: ${e}`)
    }
    for (const header of described?.headers ?? []) {
      if (header === "location" && res.headers.get("location") === null) problems.push(`${status} without Location`)
    }
    return problems
  }

  // An error: the envelope of §7.
  const error = res.body?.error
  if (error === null || typeof error !== "object") {
    problems.push("error without `error` object")
    return problems
  }
  if (typeof error.code !== "string") problems.push("error.code is not a string")
  else if (!(error.code in contractCodes)) problems.push(`error.code ${error.code} is not a code of §7`)
  else if (!statusAllowed(error.code, status)) problems.push(`error.code ${error.code} with status ${status}, §7 says ${JSON.stringify(contractCodes[error.code])}`)
  if (typeof error.message !== "string" || error.message.length === 0) problems.push("error.message missing or empty")
  if (error.request_id !== requestId) problems.push(`error.request_id ${error.request_id} differs from X-Request-Id ${requestId}`)
  if (!Array.isArray(error.details)) problems.push("error.details is not an array")
  else {
    for (const item of error.details) {
      const where = item?.field ?? item?.parameter
      if (typeof where !== "string") problems.push(`a detail item names no field or parameter: ${JSON.stringify(item)}`)
      if (typeof item?.code !== "string") problems.push(`a detail item has no code: ${JSON.stringify(item)}`)
      if (typeof item?.message !== "string" || item.message.length === 0) problems.push(`a detail item has no message: ${JSON.stringify(item)}`)
    }
  }
  // Known cases of F2 are skipped here and reproduced apart ("declared-codes"), so the rest of these operations stays checked.
  const knownUndeclared = ctx.method === operation.method && typeof error.code === "string" && isKnownUndeclared(operation.id, status, error.code)
  if (described?.codes !== undefined && typeof error.code === "string" && !described.codes.includes(error.code) && !knownUndeclared) {
    problems.push(`error.code ${error.code} is not among the codes the description lists for ${status} on ${operation.id} (${described.codes.join(", ")})`)
  }
  if (described?.schemaPointer) {
    for (const e of ctx.check(described.schemaPointer, res.body)) problems.push(`error body does not match the described schema: ${e}`)
  }
  if (status === 405) {
    const allow = res.headers.get("allow")
    if (allow === null) problems.push("405 without Allow")
  }
  return problems
}

/** The detail items of an error answer that name this place or one inside it. */
export const detailsAt = (res: Response, field: string): Array<{ field?: string; parameter?: string; code?: string; reason?: string }> => {
  const details: Array<any> = Array.isArray(res.body?.error?.details) ? res.body.error.details : []
  return details.filter((d) => {
    const at: unknown = d?.field ?? d?.parameter
    return typeof at === "string" && (at === field || at.startsWith(`${field}.`) || at.startsWith(`${field}[`))
  })
}
