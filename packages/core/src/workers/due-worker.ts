/**
 * A worker of records due by time, shared by the mail outbox and the certificate documents:
 * every `interval`, read up to `batch` records of `type` whose `due_at` has come (an index across
 * tenants: new ones, retries whose time came, claims whose lease ran out) and start `attempt` for
 * each, in a fiber of its own, while the process's background budget has a slot of `kind` for its
 * account (and fewer than `maxInFlight` run). A failed pass or attempt is logged (its cause only)
 * and the worker goes on. The attempt claims its record itself: of two processes, one wins.
 */
import { Clock, Duration, Effect, FiberSet } from "effect"
import { Records, type StoredRecord } from "../ports/store.js"
import { type BackgroundKind, backgroundBudget, yieldToEventLoop } from "./background.js"

export interface DueWorkerOptions<R> {
  readonly type: string
  /** Named in the logs: "<name> pass failed", "<name> attempt failed". */
  readonly name: string
  readonly kind: BackgroundKind
  readonly batch: number
  readonly interval: `${number} millis`
  /** Attempts running at once in this process, at most (default: as many as the budget allows). */
  readonly maxInFlight?: number
  /** Look again at once, without waiting `interval`, after a full batch that started something. */
  readonly drainFullBatches?: boolean
  readonly attempt: (record: StoredRecord) => Effect.Effect<unknown, unknown, R>
}

export const dueWorker = <R>(options: DueWorkerOptions<R>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const records = yield* Records
      const budget = yield* backgroundBudget
      const attempts = yield* FiberSet.make<void, never>()
      const started = new Set<string>()
      const maxInFlight = options.maxInFlight ?? Number.POSITIVE_INFINITY
      for (;;) {
        const now = yield* Clock.currentTimeMillis
        const due = yield* records
          .scan(options.type, [{ field: "due_at", op: "gte", value: 0 }, { field: "due_at", op: "lte", value: now }], options.batch)
          .pipe(Effect.catchAllCause((cause) => Effect.as(Effect.logWarning(`${options.name} pass failed`, cause), [] as ReadonlyArray<StoredRecord>)))
        let startedNow = 0
        for (const candidate of due) {
          if (started.size >= maxInFlight) break
          if (started.has(candidate.id)) continue
          const release = budget.tryTake(options.kind, candidate.tenant.accountId)
          if (release === undefined) continue
          started.add(candidate.id)
          startedNow++
          yield* FiberSet.run(
            attempts,
            options.attempt(candidate).pipe(
              Effect.asVoid,
              Effect.catchAllCause((cause) => Effect.logWarning(`${options.name} attempt failed`, cause)),
              Effect.ensuring(
                Effect.sync(() => {
                  started.delete(candidate.id)
                  release()
                })
              )
            )
          )
        }
        yield* yieldToEventLoop
        const drain = options.drainFullBatches === true && due.length === options.batch && startedNow > 0
        if (!drain) yield* Effect.sleep(Duration.millis(Duration.toMillis(options.interval)))
      }
    })
  )
