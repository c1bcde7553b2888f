/**
 * The `WebhookSender` port without a network: each attempt is the signed web `Request` the
 * network sender would POST (same headers, same bytes), handed to a function of the host's,
 * whose `Response` decides the attempt as a destination's would (2xx: succeeded). For
 * embedders that want deliveries in process (a test, or their own fetch handler) without
 * writing Effect code: the `onWebhook` option of `syllabusLayer` and the embeddings.
 */
import { type WebhookRequest, type WebhookResponse, WebhookSender } from "@syllabus/core"
import { Effect, Layer } from "effect"
import { webhookHeaders } from "./webhook-sender.js"

/**
 * Receives one delivery attempt. Throwing is a failed attempt with the transport error
 * `connection_failed`, as the network sender records any failed connection. Taking longer
 * than the webhook's `timeout_ms` is `timeout`.
 */
export type WebhookCallback = (request: Request) => Response | Promise<Response>

/** How many characters of a response body are kept for the attempt's excerpt, as the network sender. */
const EXCERPT_CHARS = 1024

const attempt = async (onWebhook: WebhookCallback, req: WebhookRequest, signal: AbortSignal): Promise<WebhookResponse> => {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  let timer: ReturnType<typeof setTimeout> | undefined
  const timedOut = new Promise<WebhookResponse>((resolve) => {
    timer = setTimeout(() => resolve({ httpStatus: null, transportError: "timeout", responseText: null, durationMs: elapsed() }), req.timeoutMs)
  })
  const answered = (async (): Promise<WebhookResponse> => {
    try {
      const response = await onWebhook(new Request(req.url, { method: "POST", headers: webhookHeaders(req), body: req.body, signal }))
      const text = await response.text().catch(() => "")
      return { httpStatus: response.status, transportError: null, responseText: text.slice(0, EXCERPT_CHARS), durationMs: elapsed() }
    } catch {
      return { httpStatus: null, transportError: "connection_failed", responseText: null, durationMs: elapsed() }
    }
  })()
  try {
    return await Promise.race([answered, timedOut])
  } finally {
    clearTimeout(timer)
  }
}

/** The sender that calls `onWebhook` instead of the network (no destination checks: nothing leaves the process). */
export const CallbackWebhookSender = (onWebhook: WebhookCallback) =>
  Layer.succeed(WebhookSender, {
    send: (req) =>
      Effect.tryPromise((signal) => attempt(onWebhook, req, signal)).pipe(
        Effect.orElseSucceed((): WebhookResponse => ({ httpStatus: null, transportError: "connection_failed", responseText: null, durationMs: 0 }))
      )
  })
