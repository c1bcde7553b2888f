import { Effect, Either, HashMap, Option } from "effect"
import { type ClaimAttempt, Idempotency, type IdempotencyClaim, NOT_REPLAYABLE_HEADER, type RecordedResponse, type Tenant } from "@syllabus/core"
import { type HeldReceipt, receiptKey, receiptKeyPrefix, type Store } from "./state.js"
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
        expiresAt: attempt.expiresAt,
        claimedAt: attempt.now
      },
      token: attempt.token
    })
    return yield* store.write<IdempotencyClaim, never>((state) => {
      const existing = Option.getOrUndefined(HashMap.get(state.receipts, id))
      const free =
        existing === undefined ||
        existing.receipt.expiresAt <= attempt.now ||
        (existing.receipt.state === "in_progress" && existing.receipt.claimedAt < attempt.staleBefore)
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
      // A completed receipt stays: it was committed with its write.
      if (existing === undefined || existing.token !== token || existing.receipt.state !== "in_progress") {
        return Either.right([undefined, state] as const)
      }
      return Either.right([undefined, { ...state, receipts: HashMap.remove(state.receipts, id) }] as const)
    })
  })

  // Every receipt is looked at: the memory store keeps no receipt index by tenant (a reset is rare).
  const voidCompleted = Effect.fnUntraced(function* (tenant: Tenant) {
    const prefix = receiptKeyPrefix(tenant)
    yield* store.write((state) => {
      let receipts = state.receipts
      for (const [id, held] of state.receipts) {
        if (held.receipt.state !== "completed" || !id.startsWith(prefix)) continue
        const response = held.receipt.response
        const voided = frozenCopy({ status: response?.status ?? 200, headers: { [NOT_REPLAYABLE_HEADER]: "result" }, body: null })
        receipts = HashMap.set(receipts, id, Object.freeze({ ...held, receipt: Object.freeze({ ...held.receipt, response: voided }) }))
      }
      return Either.right([undefined, receipts === state.receipts ? state : { ...state, receipts }] as const)
    })
  })

  // Retention: find the expired receipts on a snapshot, outside the writers' turn, then
  // remove at most `limit` of them in one short write that checks each is still expired (a
  // claim may have taken the key over meanwhile). No receipt index by expiry here: the
  // search reads receipts until it has a batch, without holding up any writer.
  const prune = Effect.fnUntraced(function* (now: number, limit: number) {
    const max = Math.max(0, Math.floor(limit))
    if (max === 0) return 0
    const snapshot = yield* store.read
    const batch: Array<string> = []
    for (const [id, held] of snapshot.receipts) {
      if (held.receipt.expiresAt <= now) batch.push(id)
      if (batch.length >= max) break
    }
    if (batch.length === 0) return 0
    return yield* store.write<number, never>((state) => {
      let receipts = state.receipts
      let removed = 0
      for (const id of batch) {
        const current = Option.getOrUndefined(HashMap.get(receipts, id))
        if (current === undefined || current.receipt.expiresAt > now) continue
        receipts = HashMap.remove(receipts, id)
        removed++
      }
      return Either.right([removed, removed === 0 ? state : { ...state, receipts }] as const)
    })
  })

  return Idempotency.of({ claim, complete, release, voidCompleted, prune })
}
