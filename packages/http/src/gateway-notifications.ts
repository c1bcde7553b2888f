/**
 * `POST /gateways/{gateway_id}/notifications`, outside `/api/v3` (open-points): a payment
 * gateway's signed notification of a sale's event. No credential: the gateway's Standard
 * Webhooks signature instead, verified over the raw bytes before anything is parsed
 * (`receiveGatewayNotification` of the core says the steps and their answers).
 *
 * What this adapter adds: the origin's rate limit of §8.1 (shared with the origin's calls under
 * `/api/v3`; 429 beyond), the route (another method on the path is 405 with `Allow: POST`; a
 * query parameter is 400 `unknown_parameter`), the body read with the pipeline's cap and
 * deadline (`readBody`: 1 MiB, 413 beyond; a body of another type than JSON 415), the JSON
 * rules of the wire for the verified bytes (`parseJsonBody`, `decodeStrict`), and the answers
 * in the envelope of §7 with an `X-Request-Id`. A success is 200 with `{ data: <sales event> }`,
 * the first time and on every repeat of the event ID (`Idempotent-Replayed: true` then).
 */
import {
  admit,
  type ApiError,
  apiError,
  ChangeSignals,
  Ids,
  negotiateLanguage,
  NotificationBody,
  RateLimitConfig,
  receiveGatewayNotification,
  resourceView,
  salesEvents
} from "@syllabus/core"
import type { HttpServerRequest } from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Either, Option } from "effect"
import { errorBody, languageHeaders } from "./envelope.js"
import { decodeStrict, type OutsideApp } from "./pipeline.js"
import { RELEASE, ServerSettings } from "./services.js"
import { isJsonContentType, originOf, parseJsonBody, readBody } from "./wire.js"

const PATH = /^\/gateways\/([^/]+)\/notifications$/

const header = (request: HttpServerRequest, name: string): string | undefined => {
  const value = request.headers[name]
  return typeof value === "string" ? value : undefined
}

export const gatewayNotificationsApp: OutsideApp = (request) =>
  Effect.gen(function* () {
    const [path, search = ""] = request.url.split("?", 2) as [string, string?]
    const match = PATH.exec(path)
    if (!match) return undefined
    const requestId = yield* (yield* Ids).next("request")
    const language = negotiateLanguage(request.headers["accept-language"])
    const baseHeaders = { "x-request-id": requestId, "x-service-release": RELEASE, "cache-control": "no-store" }
    const fail = (error: ApiError) =>
      Effect.gen(function* () {
        if (error.status >= 500) yield* Effect.logError("gateway notification failed", error.code, error.internal)
        return HttpServerResponse.text(JSON.stringify(errorBody(error, requestId, language)), {
          status: error.status,
          contentType: "application/json",
          headers: { ...baseHeaders, ...error.headers, ...languageHeaders(language) }
        })
      })

    const answered = yield* Effect.either(
      Effect.gen(function* () {
        // The origin's rate limit of §8.1, as for every call under `/api/v3`, before anything is looked up.
        const rateConfig = yield* RateLimitConfig
        if (rateConfig.enabled) yield* admit([{ scope: "origin", key: `origin:${originOf(request)}`, limit: rateConfig.limits.origin }])
        if (request.method !== "POST") return yield* Effect.fail(apiError("method_not_allowed", { headers: { allow: "POST" } }))
        const names = [...new Set(new URLSearchParams(search).keys())]
        if (names.length > 0) return yield* Effect.fail(apiError("unknown_parameter", { details: names.map((parameter) => ({ parameter, code: "unknown_parameter" as const })) }))
        const contentType = header(request, "content-type")
        if (contentType !== undefined && !isJsonContentType(contentType)) return yield* Effect.fail(apiError("unsupported_media_type"))
        const settings = yield* ServerSettings
        const body = (yield* readBody(request, settings.bodyTimeoutMs)) ?? new Uint8Array()
        return yield* receiveGatewayNotification({
          gatewayId: match[1]!,
          requestId,
          headers: {
            id: header(request, "webhook-id"),
            timestamp: header(request, "webhook-timestamp"),
            signature: header(request, "webhook-signature")
          },
          body,
          // Only ever called on verified bytes.
          parse: (bytes) =>
            Effect.flatMap(parseJsonBody(bytes), (json) => {
              const decoded = decodeStrict(NotificationBody, json, "field")
              return Either.isRight(decoded) ? Effect.succeed(decoded.right) : Effect.fail(decoded.left)
            })
        })
      }).pipe(
        // A defect is a 500 in the envelope, its cause in the server log only.
        Effect.catchAllDefect((defect) => Effect.fail(apiError("internal_error", { internal: defect })))
      )
    )
    if (Either.isLeft(answered)) return yield* fail(answered.left)
    const { record, replayed, tenant } = answered.right
    if (!replayed) {
      const signals = yield* Effect.serviceOption(ChangeSignals)
      if (Option.isSome(signals)) yield* signals.value.committed(tenant)
    }
    return HttpServerResponse.text(JSON.stringify({ data: resourceView(salesEvents, record) }), {
      status: 200,
      contentType: "application/json",
      headers: { ...baseHeaders, ...(replayed ? { "idempotent-replayed": "true" } : {}) }
    })
  })
