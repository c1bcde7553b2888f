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
 *   or waited for (`run`), the waiters served round-robin across accounts.
 * - `BackgroundStore`: the store ports the workers use instead of the requests' ones, when
 *   the store offers them (PostgreSQL: a small pool of its own, so that background work never
 *   takes the request pool's connections). Absent (memory), workers use the request store.
 * - `yieldToEventLoop`: a real turn of the event loop (a macrotask), not only of Effect's
 *   scheduler, which runs ready fibers in microtasks and lets I/O in only every few thousand
 *   of them: a worker yields so after each unit of work, so that a request that arrived
 *   meanwhile is read and answered before the next unit starts.
 */
import { Context, Effect, Layer } from "effect"
import type { Idempotency, Records, UnitOfWork } from "../ports/store.js"

export type BackgroundKind = "delivery" | "operation" | "housekeeping"

export interface BackgroundOptions {
  /** Units of background work in flight in the process at most (default 16). */
  readonly concurrency?: number
  /** Of one account at most (default 4). */
  readonly perAccount?: number
}

export const DEFAULT_BACKGROUND_CONCURRENCY = 16
export const DEFAULT_BACKGROUND_PER_ACCOUNT = 4

/** The account of work that belongs to none (retention, expiry sweeps). */
export const SYSTEM_ACCOUNT = "system"

export interface BackgroundBudgetShape {
  readonly concurrency: number
  readonly perAccount: number
  /** The most units of `kind` in flight at once: deliveries leave two slots, operations take a quarter, housekeeping one. */
  readonly capOf: (kind: BackgroundKind) => number
  /** A slot now if one is free for this account and kind: its release (idempotent). Never waits. */
  readonly tryTake: (kind: BackgroundKind, account: string) => (() => void) | undefined
  /** Wait for a slot (waiters are served round-robin across accounts), run `work` in it, give it back. */
  readonly run: <A, E, R>(kind: BackgroundKind, account: string, work: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
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
  const caps: Record<BackgroundKind, number> = {
    delivery: Math.max(1, concurrency - 2),
    operation: Math.max(1, Math.floor(concurrency / 4)),
    housekeeping: 1
  }
  let running = 0
  const byAccount = new Map<string, number>()
  const byKind = new Map<BackgroundKind, number>()
  const waiters: Array<Waiter> = []
  /** When each account was last granted a slot (a counter): the waiter of the longest-unserved account goes first. */
  const lastGrant = new Map<string, number>()
  let grants = 0
  let arrivals = 0
  let listeners: Array<() => void> = []

  const free = (kind: BackgroundKind, account: string) =>
    running < concurrency && (byAccount.get(account) ?? 0) < perAccount && (byKind.get(kind) ?? 0) < caps[kind]

  const take = (kind: BackgroundKind, account: string): (() => void) => {
    running++
    byAccount.set(account, (byAccount.get(account) ?? 0) + 1)
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1)
    lastGrant.set(account, ++grants)
    let done = false
    return () => {
      if (done) return
      done = true
      running--
      const left = (byAccount.get(account) ?? 1) - 1
      if (left === 0) byAccount.delete(account)
      else byAccount.set(account, left)
      byKind.set(kind, (byKind.get(kind) ?? 1) - 1)
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

  return {
    concurrency,
    perAccount,
    capOf: (kind) => caps[kind],
    tryTake: (kind, account) => (free(kind, account) ? take(kind, account) : undefined),
    run: (kind, account, work) =>
      Effect.acquireUseRelease(acquire(kind, account), () => work, (release) => Effect.sync(release)),
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
