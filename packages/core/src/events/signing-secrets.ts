/**
 * Standard Webhooks signing secrets (`whsec_…`) of what signs or checks webhook requests: the
 * webhooks the platform delivers (`webhooks.ts`, `webhook-delivery.ts`) and the payment
 * gateways' notifications it receives (`sales/gateways.ts`). One rotation rule for both, as
 * Stripe rolls an endpoint secret: the new secret at once, the one it replaces still valid for
 * a grace period (`previous_secret_expires_in`, 0 to 86,400 seconds, default 86,400), so that
 * the other side can switch without losing a request; `0` ends it at once (a leaked secret). A
 * secret rotated out before is dropped: at most two are ever valid. Both are kept in the record
 * (hidden fields `secret`, `previous_secret`: signing and checking need them), never shown after
 * the answer that made them.
 */
import { Clock, Effect, Encoding, Option, Schema } from "effect"
import { Crypto } from "../ports/crypto.js"
import type { JsonObject } from "../ports/store.js"
import { Integer } from "../records/schema.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"

/** Standard Webhooks: `whsec_` and the base64 of 24 random bytes. */
export const newSigningSecret = Effect.map(Crypto, (crypto) => `whsec_${Encoding.encodeBase64(crypto.randomBytes(24))}`)

/** Seconds a rotated-out secret stays valid, at most and by default (Stripe's 24 hours). */
export const ROTATION_GRACE_MAX_SECONDS = 86_400

/** The stored fields of a signing secret that are never shown. */
export const SECRET_FIELDS = ["secret", "previous_secret"] as const

/** `previous_secret_expires_in` of a rotation's body. */
export const PreviousSecretExpiresIn = Schema.optionalWith(
  Integer({ min: 0, max: ROTATION_GRACE_MAX_SECONDS }).annotations({
    jsonSchema: {
      type: "integer",
      minimum: 0,
      maximum: ROTATION_GRACE_MAX_SECONDS,
      description: "Seconds the previous secret stays valid (default and at most 86,400: 24 hours); `0` ends it at once."
    }
  }),
  { exact: true }
)

/** `previous_secret_expires_at` of the representation. */
export const PreviousSecretExpiresAt = (validFor: string) =>
  Schema.NullOr(Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })).annotations({
    description: `After a secret rotation, until when the previous signing secret is still ${validFor} (once past, it is not); \`null\` when only the current one is.`
  })

/** The fields of a new record's secret: the one given, no previous one. */
export const firstSecretFields = (secret: string): JsonObject => ({ secret, previous_secret: null, previous_secret_expires_at: null })

/** The fields after a rotation of `current`'s secret, the replaced one valid `graceSeconds` more. */
export const rotatedSecretFields = (current: JsonObject, graceSeconds: number = ROTATION_GRACE_MAX_SECONDS) =>
  Effect.gen(function* () {
    const secret = yield* newSigningSecret
    const now = yield* Clock.currentTimeMillis
    const keeps = graceSeconds > 0 && typeof current.secret === "string"
    return {
      secret,
      previous_secret: keeps ? current.secret! : null,
      previous_secret_expires_at: keeps ? formatTimestamp(now + graceSeconds * 1000) : null
    } satisfies JsonObject
  })

/** The secrets valid at `now`: the current one first, then the previous one within its grace period. */
export const validSecrets = (data: JsonObject, now: number): ReadonlyArray<string> => {
  const secrets = [String(data.secret)]
  const previous = data.previous_secret
  const until = typeof data.previous_secret_expires_at === "string" ? parseTimestamp(data.previous_secret_expires_at) : Option.none()
  if (typeof previous === "string" && Option.isSome(until) && now < until.value) secrets.push(previous)
  return secrets
}
