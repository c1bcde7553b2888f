/**
 * A gateway's incoming notification (open-points `POST /gateways/{gateway_id}/notifications`,
 * outside `/api/v3`): no credential, the gateway's signature instead. Decisions (also in
 * docs/sales.md and the description of the endpoint):
 *
 * - Signed as the platform signs its own webhooks (Standard Webhooks, so a gateway adapter can
 *   use any Standard Webhooks library): `webhook-id` (the message ID), `webhook-timestamp`
 *   (seconds since the epoch) and `webhook-signature`, one or more space-separated
 *   `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the
 *   base64 part of the gateway's `whsec_` secret (the current one, or the previous one within
 *   its grace period after a rotation).
 * - In this order, and nothing is recorded before the last step: the signature headers and the
 *   timestamp (missing, malformed, or more than 5 minutes away from the server's clock, either
 *   way: 401 `unauthenticated`, reason `signature_missing` or `timestamp_out_of_window`), the
 *   signature over the RAW bytes with the gateway's secrets (401, reason `signature_invalid`):
 *   an unknown or trashed gateway answers exactly that too, after the same HMAC work, so an
 *   unsigned caller cannot tell which gateway IDs exist — only then is the body parsed
 *   (control characters in the event or sale ID: 422, reason `invalid_characters`) — the gateway's status
 *   (`disabled`: 409 `state_conflict`, reason `gateway_disabled`; checked after the signature
 *   so an unsigned caller learns nothing about the gateway), the body (400 for JSON that is not
 *   an object, 422 itemized for a notification that is not one), then the record.
 * - A repeat of an event ID already recorded (a retry, a replay within the window, or a
 *   concurrent twin) changes nothing and answers the first's sales event, 200 both times.
 * - Recorded whatever `/settings/sales` says: a payment that happened is never lost.
 * - The audit entries and the events are the gateway's: `actor.kind` `gateway`, with
 *   `actor.credential_id` its `gtw_` ID,
 *   `request_id` the request's `req_` ID (also its `X-Request-Id`). Nothing of the body or the
 *   headers reaches a log.
 */
import { Clock, Effect, Encoding } from "effect"
import { Caller, type CallerInfo } from "../access/context.js"
import { type ApiError, apiError } from "../errors/errors.js"
import { validSecrets } from "../events/signing-secrets.js"
import { Crypto } from "../ports/crypto.js"
import { type StoredRecord, UnitOfWork } from "../ports/store.js"
import { isId } from "../records/ids.js"
import { findGatewayById, secretKey } from "./gateways.js"
import { findSalesEvent, type Notification, recordSalesEvent } from "./sales-events.js"

/** A signed timestamp is accepted this far from the server's clock, either way (Standard Webhooks' default). */
export const NOTIFICATION_WINDOW_SECONDS = 5 * 60

export interface SignatureHeaders {
  readonly id: string | undefined
  readonly timestamp: string | undefined
  readonly signature: string | undefined
}

const unauthenticated = (reason: "signature_missing" | "timestamp_out_of_window" | "signature_invalid") => apiError("unauthenticated", { reason })

const encoder = new TextEncoder()

/** Stands in for the secrets of an unknown gateway: the same HMAC work, never a match. */
const NO_GATEWAY_SECRET = "whsec_bm8gZ2F0ZXdheSBoYXMgdGhpcyBzZWNyZXQ="

/**
 * Is `body` signed by one of the gateway's valid secrets (none for an unknown gateway)? Checks
 * the headers and the timestamp window first, then the HMAC over the raw bytes; fails with the
 * 401 that says which.
 */
export const verifyNotificationSignature = (gateway: StoredRecord | undefined, headers: SignatureHeaders, body: Uint8Array) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const now = yield* Clock.currentTimeMillis
    const { id, timestamp, signature } = headers
    if (!id || !timestamp || !signature || id.length > 255) return yield* Effect.fail(unauthenticated("signature_missing"))
    const seconds = /^[0-9]{1,12}$/.test(timestamp) ? Number(timestamp) : Number.NaN
    if (!Number.isFinite(seconds) || Math.abs(now / 1000 - seconds) > NOTIFICATION_WINDOW_SECONDS) {
      return yield* Effect.fail(unauthenticated("timestamp_out_of_window"))
    }
    const prefix = encoder.encode(`${id}.${timestamp}.`)
    const signed = new Uint8Array(prefix.length + body.length)
    signed.set(prefix, 0)
    signed.set(body, prefix.length)
    const offered = signature
      .split(" ")
      .filter((part) => part.startsWith("v1,"))
      .map((part) => part.slice(3))
    const secrets = gateway === undefined ? [NO_GATEWAY_SECRET] : validSecrets(gateway.data, now)
    const expected = secrets.map((secret) => Encoding.encodeBase64(crypto.hmacSha256(secretKey(secret), signed)))
    const matches = gateway !== undefined && offered.some((candidate) => expected.some((value) => crypto.safeEqual(candidate, value)))
    if (!matches) return yield* Effect.fail(unauthenticated("signature_invalid"))
  })

/** Who records a notification: the gateway, in its own account and environment. */
const gatewayCaller = (gateway: StoredRecord, requestId: string): CallerInfo => ({
  tenant: gateway.tenant,
  requestId,
  credential: { id: gateway.id },
  grant: new Map(),
  human: null
})

export interface ReceivedNotification {
  readonly gatewayId: string
  /** The request's `req_` ID: the audit entry's and the events' `request_id`. */
  readonly requestId: string
  readonly headers: SignatureHeaders
  /** The body's raw bytes, as read (under the body cap). */
  readonly body: Uint8Array
  /** How the verified bytes become a notification (JSON rules of the wire, then the strict schema). */
  readonly parse: (body: Uint8Array) => Effect.Effect<Notification, ApiError>
}

/**
 * Verify, parse and record a gateway's notification (the steps in the header above). Answers
 * the sales event and whether it had been recorded before (`replayed`).
 */
export const receiveGatewayNotification = (input: ReceivedNotification) =>
  Effect.gen(function* () {
    // An unknown (or trashed) gateway fails the signature like a known one: no existence oracle.
    const gateway = isId("gateway", input.gatewayId) ? yield* findGatewayById(input.gatewayId) : undefined
    yield* verifyNotificationSignature(gateway ?? undefined, input.headers, input.body)
    if (gateway === undefined || gateway === null) return yield* Effect.fail(unauthenticated("signature_invalid"))
    if (gateway.data.status !== "active") return yield* Effect.fail(apiError("state_conflict", { reason: "gateway_disabled" }))
    const notification = yield* input.parse(input.body)
    const caller = gatewayCaller(gateway, input.requestId)
    const uow = yield* UnitOfWork
    const recorded = yield* uow
      .transaction(
        Effect.gen(function* () {
          const existing = yield* findSalesEvent(gateway.id, notification.id)
          if (existing) return { record: existing, replayed: true }
          return { record: yield* recordSalesEvent(gateway, notification), replayed: false }
        })
      )
      .pipe(
        // A concurrent twin committed first (the unique key of its event ID): answer its record.
        Effect.catchTag("UniqueViolation", (violation) =>
          Effect.flatMap(findSalesEvent(gateway.id, notification.id), (twin) =>
            twin ? Effect.succeed({ record: twin, replayed: true }) : Effect.fail(apiError("audit_unavailable", { internal: violation }))
          )
        ),
        Effect.catchTag("StoreUnavailable", (e) => Effect.fail(apiError("audit_unavailable", { internal: e }))),
        Effect.provideService(Caller, caller)
      )
    return { ...recorded, tenant: gateway.tenant }
  })
