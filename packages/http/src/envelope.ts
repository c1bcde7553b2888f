/**
 * The error envelope of §7 (and the 429 body of §8.1), localized by `Accept-Language`.
 * Every failure of every route is turned into a response here and nowhere else.
 */
import { type ApiError, type Json, type Language, renderMessage } from "@syllabus/core"

export const errorBody = (error: ApiError, requestId: string, language: Language): Json => {
  const details = error.details.map((item) => ({
    ...(item.field !== undefined ? { field: item.field } : {}),
    ...(item.parameter !== undefined ? { parameter: item.parameter } : {}),
    code: item.code,
    message: renderMessage(language, item.code, item.params),
    ...(item.reason !== undefined ? { reason: item.reason } : {})
  }))
  const rate = error.rateLimit
  return {
    error: {
      code: error.code,
      message: renderMessage(language, error.code, {
        ...error.params,
        ...(rate ? { retry_after_seconds: rate.retry_after_seconds } : {})
      }),
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
