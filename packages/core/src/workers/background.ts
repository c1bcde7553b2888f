/**
 * Fair background work (issue 11): webhook delivery, asynchronous operations and the
 * housekeeping share one bounded budget per process, fair across accounts, and never hold the
 * event loop from the requests.
 *
 * - `BackgroundBudget`: slots of background work in flight in this process (a delivery
 *   attempt, an operation's run, a housekeeping pass): at most `concurrency` in all, at most
 *   `perAccount` for one account (both environments), and per kind at most its share (an
 *   operation or a storm of deliveries cannot take every slot). A slot is taken at once when
 *   one is free (`tryTake`, for the delivery dispatcher, which picks accounts in turn itself),
 *   or waited for (`run`), the waiters served the longest-unserved account first. While
 *   another account waits for a kind, an account gets no more than half of that kind's slots.
 * - Time slices (issue 23): long work (an operation's run) holds its slot in turns
 *   (`runInTurns`): after `timeSliceMs` of work, at its next checkpoint, it gives the slot back
 *   when someone waits and queues again, so that another account's short job starts within
 *   about one time slice of a slot's holder, however long the holders' jobs are.
 * - `BackgroundStore`: the store ports the workers use instead of the requests' ones, when
 *   the store offers them (PostgreSQL: a small pool of its own, so that background work never
 *   takes the request pool's connections). Absent (memory), workers use the request store.
 * - `yieldToEventLoop`: a real turn of the event loop (a macrotask), not only of Effect's
 *   scheduler, which runs ready fibers in microtasks and lets I/O in only every few thousand
 *   of them: a worker yields so after each unit of work, so that a request that arrived
 *   meanwhile is read and answered before the next unit starts.
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { Idempotency, Records, UnitOfWork } from "../ports/store.js"

export type BackgroundKind = "delivery" | "operation" | "housekeeping"

export interface BackgroundOptions {
  /** Units of background work in flight in the process at most (default 16). */
  readonly concurrency?: number
  /** Of one account at most (default 4). */
  readonly perAccount?: number
  /** Work a long unit does in one turn before it lets a waiter have its slot (default 2,000 ms). */
  readonly timeSliceMs?: number
}

export const DEFAULT_BACKGROUND_CONCURRENCY = 16
export const DEFAULT_BACKGROUND_PER_ACCOUNT = 4
export const DEFAULT_BACKGROUND_TIME_SLICE_MS = 2000

/** The account of work that belongs to none (retention, expiry sweeps). */
export const SYSTEM_ACCOUNT = "system"

export interface BackgroundBudgetShape {
  readonly concurrency: number
  readonly perAccount: number
  readonly timeSliceMs: number
  /** The most units of `kind` in flight at once: deliveries leave two slots, operations take a quarter, housekeeping one. */
  readonly capOf: (kind: BackgroundKind) => number
  /** A slot now if one is free for this account and kind: its release (idempotent). Never waits. */
  readonly tryTake: (kind: BackgroundKind, account: string) => (() => void) | undefined
  /** The most slots of `kind` one account gets while another account waits for one: half of the kind's (at least one). */
  readonly shareOf: (kind: BackgroundKind) => number
  /** Wait for a slot (waiters are served the longest-unserved account first), run `work` in it, give it back. */
  readonly run: <A, E, R>(kind: BackgroundKind, account: string, work: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * `run` for long work, in turns: `work` calls `turn` between its units of work (each
   * committed); once it has held the slot for `timeSliceMs` and someone waits for a slot of its
   * kind, `turn` gives the slot back and waits in line for one again (interruptible).
   */
  readonly runInTurns: <A, E, R>(
    kind: BackgroundKind,
    account: string,
    work: (turn: Effect.Effect<void>) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /** Completes at the next release of a slot. */
  readonly released: Effect.Effect<void>
  /** Units in flight: in all, or of one account. */
  readonly inFlight: (account?: string) => number
}

interface Waiter {
  readonly kind: BackgroundKind
  readonly account: string
  readonly seq: number
  grant(release: () => void): void
}

export const makeBackgroundBudget = (options: BackgroundOptions = {}): BackgroundBudgetShape => {
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULT_BACKGROUND_CONCURRENCY))
  const perAccount = Math.max(1, Math.min(concurrency, Math.floor(options.perAccount ?? DEFAULT_BACKGROUND_PER_ACCOUNT)))
  const timeSliceMs = Math.max(0, options.timeSliceMs ?? DEFAULT_BACKGROUND_TIME_SLICE_MS)
  const caps: Record<BackgroundKind, number> = {
    delivery: Math.max(1, concurrency - 2),
    operation: Math.max(1, Math.floor(concurrency / 4)),
    housekeeping: 1
  }
  const shareOf = (kind: BackgroundKind) => Math.max(1, Math.floor(caps[kind] / 2))
  let running = 0
  const byAccount = new Map<string, number>()
  const byKind = new Map<BackgroundKind, number>()
  /** Slots by account and kind (`account kind`): an account's share of a kind. */
  const byAccountKind = new Map<string, number>()
  const accountKey = (kind: BackgroundKind, account: string) => `${account} ${kind}`
  const waiters: Array<Waiter> = []
  /** When each account was last granted a slot (a counter): the waiter of the longest-unserved account goes first. */
  const lastGrant = new Map<string, number>()
  let grants = 0
  let arrivals = 0
  let listeners: Array<() => void> = []

  /** Another account waits for a slot of this kind. */
  const othersWait = (kind: BackgroundKind, account: string) => waiters.some((w) => w.kind === kind && w.account !== account)

  const free = (kind: BackgroundKind, account: string) =>
    running < concurrency &&
    (byAccount.get(account) ?? 0) < perAccount &&
    (byKind.get(kind) ?? 0) < caps[kind] &&
    ((byAccountKind.get(accountKey(kind, account)) ?? 0) < shareOf(kind) || !othersWait(kind, account))

  const bump = <K>(counts: Map<K, number>, key: K, by: number) => {
    const n = (counts.get(key) ?? 0) + by
    if (n === 0) counts.delete(key)
    else counts.set(key, n)
  }

  const take = (kind: BackgroundKind, account: string): (() => void) => {
    running++
    bump(byAccount, account, 1)
    bump(byKind, kind, 1)
    bump(byAccountKind, accountKey(kind, account), 1)
    lastGrant.set(account, ++grants)
    let done = false
    return () => {
      if (done) return
      done = true
      running--
      bump(byAccount, account, -1)
      bump(byKind, kind, -1)
      bump(byAccountKind, accountKey(kind, account), -1)
      pump()
      const woken = listeners
      listeners = []
      for (const wake of woken) wake()
    }
  }

  /** Grant free slots to waiters: the account served least recently first, in arrival order within one. */
  const pump = () => {
    for (;;) {
      let best: Waiter | undefined
      for (const w of waiters) {
        if (!free(w.kind, w.account)) continue
        if (
          best === undefined ||
          (lastGrant.get(w.account) ?? 0) < (lastGrant.get(best.account) ?? 0) ||
          ((lastGrant.get(w.account) ?? 0) === (lastGrant.get(best.account) ?? 0) && w.seq < best.seq)
        ) best = w
      }
      if (best === undefined) return
      waiters.splice(waiters.indexOf(best), 1)
      best.grant(take(best.kind, best.account))
    }
  }

  const acquire = (kind: BackgroundKind, account: string): Effect.Effect<() => void> =>
    Effect.async<() => void>((resume) => {
      if (waiters.length === 0 && free(kind, account)) return resume(Effect.succeed(take(kind, account)))
      let granted: (() => void) | undefined
      const waiter: Waiter = {
        kind,
        account,
        seq: ++arrivals,
        grant: (release) => {
          granted = release
          resume(Effect.succeed(release))
        }
      }
      waiters.push(waiter)
      pump()
      // Interrupted while waiting: leave the line (or give back a slot granted meanwhile).
      return Effect.sync(() => {
        const at = waiters.indexOf(waiter)
        if (at >= 0) waiters.splice(at, 1)
        granted?.()
      })
    })

  const runInTurns = <A, E, R>(
    kind: BackgroundKind,
    account: string,
    work: (turn: Effect.Effect<void>) => Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      let release: (() => void) | undefined
      let heldSince = 0
      // Waiting is interruptible; once granted, the slot is recorded before anything else can stop the fiber.
      const takeSlot = Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(restore(acquire(kind, account)), (granted) =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            release = granted
            heldSince = now
          })))
      const turn = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        if (now - heldSince < timeSliceMs || !waiters.some((w) => w.kind === kind)) return
        const giveBack = release
        release = undefined
        giveBack?.()
        yield* takeSlot
      })
      return Effect.acquireUseRelease(takeSlot, () => work(turn), () => Effect.sync(() => release?.()))
    })

  return {
    concurrency,
    perAccount,
    timeSliceMs,
    capOf: (kind) => caps[kind],
    shareOf,
    tryTake: (kind, account) => (free(kind, account) ? take(kind, account) : undefined),
    run: (kind, account, work) =>
      Effect.acquireUseRelease(acquire(kind, account), () => work, (release) => Effect.sync(release)),
    runInTurns,
    released: Effect.async<void>((resume) => {
      const wake = () => resume(Effect.void)
      listeners.push(wake)
      return Effect.sync(() => {
        listeners = listeners.filter((l) => l !== wake)
      })
    }),
    inFlight: (account) => (account === undefined ? running : (byAccount.get(account) ?? 0))
  }
}

export class BackgroundBudget extends Context.Tag("@syllabus/core/BackgroundBudget")<BackgroundBudget, BackgroundBudgetShape>() {
  static readonly layer = (options: BackgroundOptions = {}) => Layer.sync(BackgroundBudget, () => makeBackgroundBudget(options))
}

/** The process's budget, or one of the worker's own when none is provided (a worker run alone). */
export const backgroundBudget: Effect.Effect<BackgroundBudgetShape> = Effect.map(Effect.serviceOption(BackgroundBudget), (found) =>
  found._tag === "Some" ? found.value : makeBackgroundBudget()
)

/**
 * The store ports of the background workers, apart from the requests' ones (PostgreSQL: a
 * pool of a few connections of their own). Optional: without it, workers use the request store.
 */
export class BackgroundStore extends Context.Tag("@syllabus/core/BackgroundStore")<
  BackgroundStore,
  Context.Context<Records | UnitOfWork | Idempotency>
>() {}

/** Run a worker on the background store when there is one. */
export const onBackgroundStore = <A, E, R>(worker: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.serviceOption(BackgroundStore), (store) => (store._tag === "Some" ? Effect.provide(worker, store.value) : worker))

/**
 * One turn of the event loop: resumes from a macrotask (`setImmediate`, after pending I/O is
 * polled; `setTimeout` where there is none), so that sockets with data are read before the
 * caller goes on. Interruptible.
 */
export const yieldToEventLoop: Effect.Effect<void> = Effect.async<void>((resume) => {
  const immediate = (globalThis as { setImmediate?: (f: () => void) => unknown }).setImmediate
  const clear = (globalThis as { clearImmediate?: (h: unknown) => void }).clearImmediate
  if (typeof immediate === "function") {
    const handle = immediate(() => resume(Effect.void))
    return Effect.sync(() => clear?.(handle))
  }
  const timer = setTimeout(() => resume(Effect.void), 0)
  return Effect.sync(() => clearTimeout(timer))
})
