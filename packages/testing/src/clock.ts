/**
 * Time a test (or an operator) moves forward. The server reads its time from Effect's `Clock`,
 * so a runtime built on this clock sees the moved time everywhere: expiries, retention,
 * retry schedules, leases.
 */
import { Clock, Duration, Effect } from "effect"

/** `setTimeout` takes at most this many milliseconds; longer waits end only when time is moved past them. */
const MAX_TIMER_MS = 2 ** 31 - 1

interface Sleeper {
  readonly deadline: number
  readonly wake: () => void
}

/**
 * The system's time plus an offset. Two ways to move it:
 * - `shift(ms)` moves the time only: a wait already begun still lasts its real duration
 *   (the contract suite's operator clock: background work keeps its own pace);
 * - `advance(ms)` moves the time and ends every wait whose end it passes, so what the server
 *   schedules for later (a retry, a housekeeping pass, a worker's next look) happens now.
 */
export class AdjustableClock implements Clock.Clock {
  readonly [Clock.ClockTypeId]: Clock.ClockTypeId = Clock.ClockTypeId
  private offset = 0
  private readonly live = Clock.make()
  private readonly sleepers = new Set<Sleeper>()

  /** How far ahead of the system's time this clock is, in milliseconds. */
  get offsetMs(): number {
    return this.offset
  }
  unsafeCurrentTimeMillis(): number {
    return this.live.unsafeCurrentTimeMillis() + this.offset
  }
  unsafeCurrentTimeNanos(): bigint {
    return this.live.unsafeCurrentTimeNanos() + BigInt(this.offset) * 1_000_000n
  }
  get currentTimeMillis(): Effect.Effect<number> {
    return Effect.sync(() => this.unsafeCurrentTimeMillis())
  }
  get currentTimeNanos(): Effect.Effect<bigint> {
    return Effect.sync(() => this.unsafeCurrentTimeNanos())
  }

  /** Ends after `duration` of real time, or as soon as `advance` moves the time past its end. */
  sleep = (duration: Duration.DurationInput): Effect.Effect<void> =>
    Effect.async<void>((resume) => {
      const ms = Math.max(0, Duration.toMillis(duration))
      let timer: ReturnType<typeof setTimeout> | undefined
      const sleeper: Sleeper = {
        deadline: this.unsafeCurrentTimeMillis() + ms,
        wake: () => {
          if (!this.sleepers.delete(sleeper)) return
          clearTimeout(timer)
          resume(Effect.void)
        }
      }
      this.sleepers.add(sleeper)
      if (ms <= MAX_TIMER_MS) timer = setTimeout(sleeper.wake, ms)
      return Effect.sync(() => {
        this.sleepers.delete(sleeper)
        clearTimeout(timer)
      })
    })

  /** Move the time forward by `ms`; waits keep their real duration. */
  shift(ms: number): void {
    this.offset += checkedMs(ms)
  }

  /**
   * Move the time back by `ms`, for a suite sharing one API between tests that puts the time
   * back after a test moved it. Records made in between keep their later times.
   */
  rewind(ms: number): void {
    this.offset -= checkedMs(ms)
  }

  /** Move the time forward by `ms` and end every wait that is now over. */
  advance(ms: number): void {
    this.shift(ms)
    const now = this.unsafeCurrentTimeMillis()
    for (const sleeper of [...this.sleepers]) if (sleeper.deadline <= now) sleeper.wake()
  }
}

const checkedMs = (ms: number): number => {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`time moves forward only, by a finite number of milliseconds (got ${ms})`)
  return ms
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * A duration as milliseconds: a number of milliseconds, or a string of one or more
 * `<number><unit>` with the units `ms`, `s`, `m`, `h`, `d` (`"90s"`, `"1h30m"`, `"31d"`).
 */
export type DurationLike = number | string

export const toMilliseconds = (duration: DurationLike): number => {
  if (typeof duration === "number") return checkedMs(duration)
  const text = duration.trim()
  if (!/^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/.test(text)) {
    throw new RangeError(`not a duration: ${JSON.stringify(duration)} (e.g. 500, "30s", "1h", "2d12h")`)
  }
  return [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)].reduce((total, [, amount, unit]) => total + Number(amount) * UNITS[unit!]!, 0)
}
