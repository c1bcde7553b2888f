/**
 * Idempotency (§4.1, §7): keys of 1 to 128 characters from `[A-Za-z0-9._:-]`; receipts kept
 * 48 hours; a replay returns the recorded result with `Idempotent-Replayed: true`; the same
 * key with another body or route is `idempotency_key_reused` (`different_body` /
 * `different_resource`); a key still processing is 409; a failed call consumes no key; a
 * result that showed a secret once is never replayed (`secret_not_replayable`).
 *
 * A claim whose holder died (its process ended: no request runs longer than its deadline,
 * which is shorter than `CLAIM_LEASE_MS`) left no result. When the write and its receipt are
 * one unit of work, nothing of that attempt was committed: the next request with the key
 * takes the claim over and runs. When the operation's handler keeps units of work of its own
 * (it also writes file storage, or asks DNS), the first attempt may have done part of its
 * work: the next request is told so, 409 `result_uncertain` (the abandoned claim is dropped,
 * so the retry after it runs).
 */
import { Clock, Effect } from "effect"
import { type ApiError, apiError, writeUnavailable } from "../errors/errors.js"
import { Crypto } from "../ports/crypto.js"
import { Idempotency, type IdempotencyReceipt, type RecordedResponse, type Tenant } from "../ports/store.js"
import { HOUR, MINUTE } from "../records/time.js"

export const RECEIPT_TTL_MS = 48 * HOUR
/** A claim not completed within this time is taken to have died with its process (its unit of work never committed). */
export const CLAIM_LEASE_MS = MINUTE

const keyPattern = /^[A-Za-z0-9._:-]{1,128}$/

export type IdempotencyRule = "required" | "optional" | "none"

/** The key of a request, checked against the operation's rule. */
export const checkIdempotencyKey = (
  rule: IdempotencyRule,
  values: ReadonlyArray<string>
): Effect.Effect<string | undefined, ApiError<"idempotency_key_required" | "idempotency_key_invalid">> => {
  if (rule === "none" || (values.length === 0 && rule === "optional")) return Effect.succeed(undefined)
  if (values.length === 0) return Effect.fail(apiError("idempotency_key_required", { details: [{ parameter: "Idempotency-Key", code: "required" }] }))
  const [key] = values
  if (values.length > 1 || key === undefined || !keyPattern.test(key)) {
    return Effect.fail(apiError("idempotency_key_invalid", { details: [{ parameter: "Idempotency-Key", code: "idempotency_key_invalid" }] }))
  }
  return Effect.succeed(key)
}

/**
 * A recorded result that cannot be replayed, and why: `secret` (it showed a secret once: kept
 * without it, 409 `secret_not_replayable`) or `result` (what it describes is gone: a sandbox
 * reset came after it, 409 `result_not_replayable`; a new key runs the request).
 */
export const NOT_REPLAYABLE_HEADER = "x-syllabus-not-replayable"

/** What the first use of the key said, for the request repeating it. */
const answerTo = (
  receipt: IdempotencyReceipt,
  resource: string,
  fingerprint: string
): Effect.Effect<
  RecordedResponse,
  ApiError<"idempotency_in_progress" | "idempotency_key_reused" | "secret_not_replayable" | "result_not_replayable">
> => {
  if (receipt.operationId !== resource) {
    return Effect.fail(apiError("idempotency_key_reused", { reason: "different_resource" }))
  }
  if (receipt.fingerprint !== fingerprint) {
    return Effect.fail(apiError("idempotency_key_reused", { reason: "different_body" }))
  }
  if (receipt.state === "in_progress" || receipt.response === null) {
    return Effect.fail(apiError("idempotency_in_progress"))
  }
  const unreplayable = receipt.response.headers[NOT_REPLAYABLE_HEADER]
  if (unreplayable === "result") return Effect.fail(apiError("result_not_replayable"))
  if (unreplayable !== undefined) return Effect.fail(apiError("secret_not_replayable"))
  return Effect.succeed(receipt.response)
}

export type IdempotentOutcome =
  | { readonly _tag: "Replayed"; readonly response: RecordedResponse }
  | { readonly _tag: "Executed"; readonly response: RecordedResponse }

/**
 * Run `execute` at most once per key. `execute` receives `complete`, which it must call
 * inside the unit of work of its write so the result is recorded atomically with it.
 */
export const runIdempotent = <E, R>(
  tenant: Tenant,
  key: string,
  request: {
    readonly operationId: string
    readonly path: string
    readonly query: string
    readonly body: string
    /** The write and its receipt are one unit of work (else the handler keeps its own: an abandoned claim is `result_uncertain`). */
    readonly atomic: boolean
  },
  execute: (complete: (response: RecordedResponse) => Effect.Effect<void, ApiError<"audit_unavailable">>) => Effect.Effect<RecordedResponse, E, R>
) =>
  Effect.gen(function* () {
    const store = yield* Idempotency
    const crypto = yield* Crypto
    const now = yield* Clock.currentTimeMillis
    // The resource is the operation on its path; the body is everything else the client sent.
    const resource = `${request.operationId} ${request.path}`
    const fingerprint = crypto.sha256Hex(`${request.query}\n${request.body}`)
    const token = Buffer.from(crypto.randomBytes(16)).toString("hex")
    const leaseStart = now - CLAIM_LEASE_MS
    const claimKey = (staleBefore: number) =>
      store
        .claim(tenant, key, { operationId: resource, fingerprint, token, now, staleBefore, expiresAt: now + RECEIPT_TTL_MS })
        .pipe(Effect.mapError(writeUnavailable))
    // An operation with units of work of its own never takes an abandoned claim over unseen.
    const claim = yield* claimKey(request.atomic ? leaseStart : 0) // 0: no claim is older
    if (claim._tag === "Existing") {
      const abandoned =
        claim.receipt.state === "in_progress" && claim.receipt.claimedAt < leaseStart &&
        claim.receipt.operationId === resource && claim.receipt.fingerprint === fingerprint
      if (abandoned) {
        // Drop it (take it over, give it back) and say so; another request may have taken it meanwhile.
        const retaken = yield* claimKey(leaseStart)
        if (retaken._tag === "Claimed") {
          yield* store.release(tenant, key, token).pipe(Effect.mapError(writeUnavailable))
          return yield* Effect.fail(apiError("result_uncertain"))
        }
        return { _tag: "Replayed" as const, response: yield* answerTo(retaken.receipt, resource, fingerprint) }
      }
      const response = yield* answerTo(claim.receipt, resource, fingerprint)
      return { _tag: "Replayed" as const, response }
    }
    const complete = (response: RecordedResponse) =>
      store.complete(tenant, key, token, response).pipe(Effect.mapError(writeUnavailable))
    const response = yield* execute(complete).pipe(
      Effect.onError(() => store.release(tenant, key, token).pipe(Effect.ignore))
    )
    return { _tag: "Executed" as const, response }
  })

/** Receipts removed per store step by the retention sweep, and steps per pass at most. */
export const RECEIPT_PRUNE_BATCH = 500
export const RECEIPT_PRUNE_MAX_BATCHES = 200

/**
 * Retention (§8.3): receipts leave the store once their 48 hours are over, in batches of
 * `batch`, each a short step of its own; a pass stops after `maxBatches` (the rest waits for
 * the next pass) or when a batch comes back short. Answers how many it removed.
 */
export const pruneExpiredReceipts = Effect.fn("Idempotency.pruneExpired")(function* (
  batch: number = RECEIPT_PRUNE_BATCH,
  maxBatches: number = RECEIPT_PRUNE_MAX_BATCHES
) {
  const store = yield* Idempotency
  const now = yield* Clock.currentTimeMillis
  let removed = 0
  for (let round = 0; round < maxBatches; round++) {
    const n = yield* store.prune(now, batch)
    removed += n
    if (n < batch) break
  }
  return removed
})
