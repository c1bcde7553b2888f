import { Effect, Either, HashMap, Option } from "effect"
import { type ClaimAttempt, Idempotency, type IdempotencyClaim, type RecordedResponse, type Tenant } from "@syllabus/core"
import { type HeldReceipt, receiptKey, type Store } from "./state.js"
import { frozenCopy } from "./values.js"

// Receipts live in the transactional state: `complete` joins the caller's unit of work.
export const makeIdempotency = (store: Store): Idempotency["Type"] => {
  const claim = Effect.fnUntraced(function* (
    tenant: Tenant,
    key: string,
    attempt: ClaimAttempt
  ) {
    const id = receiptKey(tenant, key)
    const held: HeldReceipt = frozenCopy({
      receipt: {
        operationId: attempt.operationId,
        fingerprint: attempt.fingerprint,
        state: "in_progress",
        response: null,
        expiresAt: attempt.expiresAt
      },
      token: attempt.token,
      claimedAt: attempt.now
    })
    return yield* store.write<IdempotencyClaim, never>((state) => {
      const existing = Option.getOrUndefined(HashMap.get(state.receipts, id))
      const free =
        existing === undefined ||
        existing.receipt.expiresAt <= attempt.now ||
        (existing.receipt.state === "in_progress" && existing.claimedAt < attempt.staleBefore)
      if (free) {
        const claimed: IdempotencyClaim = { _tag: "Claimed", token: attempt.token }
        return Either.right([claimed, { ...state, receipts: HashMap.set(state.receipts, id, held) }] as const)
      }
      const found: IdempotencyClaim = { _tag: "Existing", receipt: existing.receipt }
      return Either.right([found, state] as const)
    })
  })

  const complete = Effect.fnUntraced(function* (
    tenant: Tenant,
    key: string,
    token: string,
    response: RecordedResponse
  ) {
    const id = receiptKey(tenant, key)
    const recorded = frozenCopy(response)
    yield* store.write((state) => {
      const existing = Option.getOrUndefined(HashMap.get(state.receipts, id))
      // A holder that lost its claim (taken over after going stale) records nothing.
      if (existing === undefined || existing.token !== token) return Either.right([undefined, state] as const)
      const completed: HeldReceipt = Object.freeze({
        ...existing,
        receipt: Object.freeze({ ...existing.receipt, state: "completed" as const, response: recorded })
      })
      return Either.right([undefined, { ...state, receipts: HashMap.set(state.receipts, id, completed) }] as const)
    })
  })

  const release = Effect.fnUntraced(function* (tenant: Tenant, key: string, token: string) {
    const id = receiptKey(tenant, key)
    yield* store.write((state) => {
      const existing = Option.getOrUndefined(HashMap.get(state.receipts, id))
      if (existing === undefined || existing.token !== token) return Either.right([undefined, state] as const)
      return Either.right([undefined, { ...state, receipts: HashMap.remove(state.receipts, id) }] as const)
    })
  })

  return Idempotency.of({ claim, complete, release })
}
