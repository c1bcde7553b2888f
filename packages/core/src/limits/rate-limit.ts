/**
 * The sliding-window rate limiter of §8.1: three independent scopes (origin before
 * authentication, account, credential), 60-second window. The window is estimated from two
 * fixed windows (the current one, plus the previous one weighted by how much of it still
 * overlaps the sliding window), which keeps two counters per scope in any store.
 * A refused request counts against no window.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { apiError, type RateLimitLine } from "../errors/errors.js"
import { type Environment, RateLimitStore, type RateCheck, type WindowCounts } from "../ports/store.js"

export const WINDOW_SECONDS = 60
const WINDOW_MS = WINDOW_SECONDS * 1000

export interface RateLimits {
  readonly origin: number
  readonly account: Readonly<Record<Environment, number>>
  readonly credential: Readonly<Record<Environment, number>>
}

/** The figures of §8.1. */
export const contractRateLimits: RateLimits = {
  origin: 600,
  account: { production: 1000, sandbox: 500 },
  credential: { production: 300, sandbox: 150 }
}

/** Configuration of the limiter: on with the contract's figures, or off (benchmarks, load tests). */
export class RateLimitConfig extends Context.Tag("@syllabus/core/RateLimitConfig")<
  RateLimitConfig,
  { readonly enabled: boolean; readonly limits: RateLimits }
>() {
  static readonly contract = Layer.succeed(RateLimitConfig, { enabled: true, limits: contractRateLimits })
  static readonly off = Layer.succeed(RateLimitConfig, { enabled: false, limits: contractRateLimits })
}

/** Requests counted in the sliding window ending at `now`. */
export const slidingCount = (counts: WindowCounts, now: number, windowStart: number): number => {
  const overlap = 1 - (now - windowStart) / WINDOW_MS
  return Math.floor(counts.previous * overlap) + counts.current
}

/** The outcome of one admission: the lines of every scope checked, and the most restricted one. */
export interface RateDecision {
  readonly admitted: boolean
  readonly lines: ReadonlyArray<RateLimitLine>
  /** The most restricted scope: its figures go into the `RateLimit-*` headers. */
  readonly tightest: RateLimitLine | undefined
  /** Seconds until the current fixed window ends and its count stops weighing fully. */
  readonly resetSeconds: number
}

const secondsUntilFree = (counts: WindowCounts, limit: number, now: number, windowStart: number): number => {
  // The current window alone fills the limit: wait for the next window to start.
  if (counts.current >= limit) return Math.max(1, Math.ceil((windowStart + WINDOW_MS - now) / 1000))
  // Otherwise the previous window's share has to shrink: find when its weight lets one more in.
  for (let s = 1; s <= WINDOW_SECONDS; s++) {
    if (slidingCount(counts, now + s * 1000, windowStart) < limit) return s
  }
  return WINDOW_SECONDS
}

export const decide = (
  checks: ReadonlyArray<RateCheck>,
  counts: ReadonlyArray<WindowCounts>,
  now: number,
  windowStart: number,
  admitted: boolean
): RateDecision => {
  const lines = checks.map((check, i): RateLimitLine => {
    const c = counts[i] ?? { previous: 0, current: 0 }
    const used = slidingCount(c, now, windowStart) + (admitted ? 1 : 0)
    const blocked = !admitted && slidingCount(c, now, windowStart) >= check.limit
    return {
      scope: check.scope,
      limit: check.limit,
      window_seconds: WINDOW_SECONDS,
      remaining: Math.max(0, check.limit - used),
      retry_after_seconds: blocked ? secondsUntilFree(c, check.limit, now, windowStart) : 0
    }
  })
  const tightest = lines.reduce<RateLimitLine | undefined>(
    (best, line) =>
      best === undefined ||
      line.retry_after_seconds > best.retry_after_seconds ||
      (line.retry_after_seconds === best.retry_after_seconds && line.remaining < best.remaining)
        ? line
        : best,
    undefined
  )
  const resetSeconds = Math.max(1, Math.ceil((windowStart + WINDOW_MS - now) / 1000))
  return { admitted, lines, tightest, resetSeconds }
}

/** Admit one request against every check, or fail with the 429 of §8.1. */
export const admit = Effect.fnUntraced(function* (checks: ReadonlyArray<RateCheck>) {
  const store = yield* RateLimitStore
  const now = yield* Clock.currentTimeMillis
  const windowStart = now - (now % WINDOW_MS)
  const result = yield* store
    .hit(checks, windowStart, WINDOW_MS, (counts) =>
      counts.every((c, i) => slidingCount(c, now, windowStart) < checks[i]!.limit)
    )
    .pipe(Effect.mapError((cause) => apiError("rate_limiter_unavailable", { internal: cause })))
  const decision = decide(checks, result.counts, now, windowStart, result.admitted)
  if (!decision.admitted) {
    const blocked = decision.lines.filter((l) => l.retry_after_seconds > 0)
    const retryAfter = Math.max(...blocked.map((l) => l.retry_after_seconds))
    return yield* Effect.fail(
      apiError("rate_limit_exceeded", {
        rateLimit: { retry_after_seconds: retryAfter, blocked_by: blocked.map((l) => l.scope), limits: decision.lines },
        headers: { ...rateLimitHeaders(decision), "retry-after": String(retryAfter) }
      })
    )
  }
  return decision
})

/** `RateLimit-Limit`, `-Remaining`, `-Reset` of the most restricted scope. */
export const rateLimitHeaders = (decision: RateDecision): Record<string, string> => {
  const line = decision.tightest
  if (line === undefined) return {}
  return {
    "ratelimit-limit": String(line.limit),
    "ratelimit-remaining": String(line.remaining),
    "ratelimit-reset": String(line.retry_after_seconds > 0 ? line.retry_after_seconds : decision.resetSeconds)
  }
}
