/**
 * The error envelope of §7 (and the 429 body of §8.1), localized by `Accept-Language`.
 * Every failure of every route is turned into a response here and nowhere else. The
 * response says which language the messages are in (`Content-Language`, `languageHeaders`).
 */
import { type ApiError, type DetailItem, type Json, type Language, renderMessage } from "@syllabus/core"

/** The headers of a body whose messages are in `language`. */
export const languageHeaders = (language: Language): Record<string, string> => ({ "content-language": language })

const itemMessage = (item: DetailItem, language: Language): string =>
  renderMessage(
    language,
    item.code,
    item.allowed === undefined ? item.params : { ...item.params, allowed: item.allowed.join(", ") },
    item.reason
  )

export const errorBody = (error: ApiError, requestId: string, language: Language): Json => {
  const details = error.details.map((item) => ({
    ...(item.field !== undefined ? { field: item.field } : {}),
    ...(item.parameter !== undefined ? { parameter: item.parameter } : {}),
    code: item.code,
    message: itemMessage(item, language),
    ...(item.reason !== undefined ? { reason: item.reason } : {}),
    ...(item.allowed !== undefined ? { allowed: [...item.allowed] } : {})
  }))
  const rate = error.rateLimit
  // One problem: the top-level message names it too, so a client that shows only the message still learns what to fix.
  const [only] = details
  const single = error.code === "validation_failed" && details.length === 1 && only !== undefined
  const message = renderMessage(
    language,
    error.code,
    { ...error.params, ...(rate ? { retry_after_seconds: rate.retry_after_seconds } : {}) },
    error.reason
  )
  return {
    error: {
      code: error.code,
      message: single && error.reason === undefined ? `${message} ${only.field ?? only.parameter}: ${only.message}` : message,
      request_id: requestId,
      details,
      ...(error.reason !== undefined ? { reason: error.reason } : {}),
      ...(rate
        ? {
            retry_after_seconds: rate.retry_after_seconds,
            blocked_by: [...rate.blocked_by],
            limits: rate.limits.map((line) => ({ ...line }))
          }
        : {})
    }
  }
}
