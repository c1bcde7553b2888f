/** `Idempotency` on PostgreSQL: one receipt per (tenant, key) in `idempotency_receipts`. */
import {
  type ClaimAttempt,
  type Idempotency,
  type IdempotencyClaim,
  type IdempotencyReceipt,
  NOT_REPLAYABLE_HEADER,
  type RecordedResponse,
  type Tenant
} from "@syllabus/core"
import { type Context, Effect } from "effect"
import { type Pg, toNumber } from "./internal.js"
import { PREPARED } from "./pool.js"

interface ReceiptRow {
  readonly operation_id: string
  readonly fingerprint: string
  readonly state: string
  readonly response: RecordedResponse | null
  readonly expires_at: number | string
  readonly claimed_at: number | string
}

const toReceipt = (row: ReceiptRow): IdempotencyReceipt => ({
  operationId: row.operation_id,
  fingerprint: row.fingerprint,
  state: row.state === "completed" ? "completed" : "in_progress",
  response: row.response,
  expiresAt: toNumber(row.expires_at),
  claimedAt: toNumber(row.claimed_at)
})

/** Rounds of a claim whose key keeps being released between our insert and our read. */
const maxClaimRounds = 10

export const makeIdempotency = ({ insertAppends, run: unavailable, sql, takeAppends }: Pg): Context.Tag.Service<typeof Idempotency> => {
  // Statements by key: prepared once per connection (`pool.ts`).
  const prepared = sql.literal(PREPARED)
  const receiptKey = (tenant: Tenant, key: string) =>
    sql`account_id = ${tenant.accountId} AND environment = ${tenant.environment} AND key = ${key}`

  const claim = Effect.fnUntraced(function*(
    tenant: Tenant,
    key: string,
    attempt: ClaimAttempt
  ) {
    for (let round = 0; round < maxClaimRounds; round++) {
      // Take the key in one statement: insert, or take over an expired or abandoned receipt.
      const taken = yield* unavailable(sql`${prepared}
        INSERT INTO idempotency_receipts AS r
          (account_id, environment, key, operation_id, fingerprint, state, response, token, claimed_at, expires_at)
        VALUES (${tenant.accountId}, ${tenant.environment}, ${key}, ${attempt.operationId}, ${attempt.fingerprint},
                'in_progress', NULL, ${attempt.token}, ${attempt.now}, ${attempt.expiresAt})
        ON CONFLICT (account_id, environment, key) DO UPDATE SET
          operation_id = EXCLUDED.operation_id, fingerprint = EXCLUDED.fingerprint, state = 'in_progress',
          response = NULL, token = EXCLUDED.token, claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
        WHERE r.expires_at <= ${attempt.now}
           OR (r.state = 'in_progress' AND r.claimed_at < ${attempt.staleBefore})
        RETURNING r.token`)
      if (taken.length > 0) return { _tag: "Claimed", token: attempt.token } satisfies IdempotencyClaim
      const existing = yield* unavailable(sql<ReceiptRow>`${prepared}
        SELECT operation_id, fingerprint, state, response, expires_at, claimed_at
        FROM idempotency_receipts WHERE ${receiptKey(tenant, key)}`)
      if (existing[0] !== undefined) {
        return { _tag: "Existing", receipt: toReceipt(existing[0]) } satisfies IdempotencyClaim
      }
      // Released between the two statements: the key is free again, try once more.
    }
    // Taken and given back by others every time we looked: concurrent requests hold the key,
    // which is 409 `idempotency_in_progress` for this one (a lost race), not an outage.
    const held: IdempotencyReceipt = {
      operationId: attempt.operationId,
      fingerprint: attempt.fingerprint,
      state: "in_progress",
      response: null,
      expiresAt: attempt.expiresAt,
      claimedAt: attempt.now
    }
    return { _tag: "Existing", receipt: held } satisfies IdempotencyClaim
  })

  const complete = Effect.fnUntraced(function*(
    tenant: Tenant,
    key: string,
    token: string,
    response: RecordedResponse
  ) {
    // The last statement of its unit of work: the unit's appends (its audit entry, its events) go with it.
    const appends = yield* takeAppends
    yield* unavailable(sql`${prepared}
      ${appends === undefined ? sql`` : sql`WITH appended AS (${insertAppends(appends)})`}
      UPDATE idempotency_receipts SET state = 'completed', response = ${JSON.stringify(response)}::jsonb
      WHERE ${receiptKey(tenant, key)} AND token = ${token}`)
  })

  // Only a claim still in progress: a completed receipt was committed with its write. (After a
  // COMMIT that went unanswered, the release can reach the server after the commit did.)
  const release = Effect.fnUntraced(function*(tenant: Tenant, key: string, token: string) {
    yield* unavailable(sql`${prepared}
      DELETE FROM idempotency_receipts
      WHERE ${receiptKey(tenant, key)} AND token = ${token} AND state = 'in_progress'`)
  })

  // One statement over the tenant's receipts (the primary key's leading columns), in the reset's transaction.
  const voidCompleted = Effect.fnUntraced(function*(tenant: Tenant) {
    yield* unavailable(sql`
      UPDATE idempotency_receipts
      SET response = jsonb_build_object('status', response->'status', 'headers', ${JSON.stringify({ [NOT_REPLAYABLE_HEADER]: "result" })}::jsonb, 'body', NULL)
      WHERE account_id = ${tenant.accountId} AND environment = ${tenant.environment} AND state = 'completed'`)
  })

  // Retention: one statement per batch, oldest first over `idempotency_receipts_expires_at`.
  // Rows another sweep or a claim holds are skipped (SKIP LOCKED), never waited for; the
  // delete checks the expiry again, so a key taken over meanwhile keeps its new receipt.
  const prune = Effect.fnUntraced(function*(now: number, limit: number) {
    const max = Math.max(0, Math.floor(limit))
    if (max === 0) return 0
    const rows = yield* unavailable(sql<{ readonly count: number | string }>`
      WITH due AS (
        SELECT account_id, environment, key FROM idempotency_receipts
        WHERE expires_at <= ${now}
        ORDER BY expires_at
        LIMIT ${max}
        FOR UPDATE SKIP LOCKED
      ), removed AS (
        DELETE FROM idempotency_receipts r USING due
        WHERE r.account_id = due.account_id AND r.environment = due.environment AND r.key = due.key
          AND r.expires_at <= ${now}
        RETURNING 1
      )
      SELECT count(*) AS count FROM removed`)
    return toNumber(rows[0]?.count ?? 0)
  })

  return { claim, complete, release, voidCompleted, prune }
}
