/**
 * `RateLimitStore` on PostgreSQL: fixed-window counters in `rate_limit_windows`, shared by
 * every process on the database.
 */
import type { RateCheck, RateLimitStore, WindowCounts } from "@syllabus/core"
import { type Context, Effect } from "effect"
import { type Pg, toNumber } from "./internal.js"
import { PREPARED } from "./pool.js"

interface WindowRow {
  readonly key: string
  readonly window_start: number | string
  readonly count: number
}

/** Old windows removed per hit, so that counters of keys never seen again go too. */
const sweepBatch = 100

export const makeRateLimitStore = (
  { detached, run: unavailable, sql, transaction }: Pg
): Context.Tag.Service<typeof RateLimitStore> => {
  // Statements by key: prepared once per connection (`pool.ts`).
  const prepared = sql.literal(PREPARED)

  const hit = Effect.fnUntraced(function*(
    checks: ReadonlyArray<RateCheck>,
    windowStart: number,
    windowMs: number,
    admit: (counts: ReadonlyArray<WindowCounts>) => boolean
  ) {
    if (checks.length === 0) return { admitted: admit([]), counts: [] }
    // Always in the same order, so that two requests locking overlapping keys cannot deadlock.
    const keys = [...new Set(checks.map((check) => check.key))].sort()
    const previousStart = windowStart - windowMs

    // Not part of the caller's unit of work: a hit counts on its own, never rolled back.
    return yield* detached(transaction(Effect.gen(function*() {
      // Make sure the current windows exist, then lock them: the read, the decision and the
      // increment below are one step for every other request on these keys.
      yield* unavailable(sql`${prepared}
        INSERT INTO rate_limit_windows (key, window_start, window_ms, count)
        SELECT k, ${windowStart}, ${windowMs}, 0 FROM unnest(${keys}::text[]) AS k ORDER BY k
        ON CONFLICT DO NOTHING`)
      const rows = yield* unavailable(sql<WindowRow>`${prepared}
        SELECT key, window_start, count FROM rate_limit_windows
        WHERE key = ANY(${keys}::text[]) AND window_start IN (${previousStart}, ${windowStart})
        ORDER BY key, window_start
        FOR UPDATE`)

      const countOf = (key: string, start: number) =>
        toNumber(rows.find((row) => row.key === key && toNumber(row.window_start) === start)?.count ?? 0)
      const counts: ReadonlyArray<WindowCounts> = checks.map((check) => ({
        previous: countOf(check.key, previousStart),
        current: countOf(check.key, windowStart)
      }))
      const admitted = admit(counts)

      if (admitted) {
        yield* unavailable(sql`${prepared}
          UPDATE rate_limit_windows SET count = count + 1
          WHERE key = ANY(${keys}::text[]) AND window_start = ${windowStart}`)
      }
      // Lazily drop windows that can no longer be anyone's previous window. SKIP LOCKED:
      // never wait for (or deadlock with) another request over garbage.
      yield* unavailable(sql`
        DELETE FROM rate_limit_windows WHERE ctid IN (
          SELECT ctid FROM rate_limit_windows
          WHERE window_start + 2 * window_ms <= ${windowStart}
          LIMIT ${sweepBatch} FOR UPDATE SKIP LOCKED)`)
      return { admitted, counts }
    })))
  })

  return { hit }
}
