/** Deadlines of the HTTP adapter (docs/reliability.md, "Fail closed on a stalled database"). */
import { Effect, type Exit, Fiber, Runtime } from "effect"

/**
 * Run `effect` for at most `ms` (0: no bound). Past it, fail with `onTimeout()` at once; the
 * effect is interrupted in the background (its unit of work rolls back; a connection with a
 * statement still outstanding is closed, not pooled), so the answer waits for none of it.
 *
 * The platform runs a request uninterruptibly (`HttpApp.toHandled`), and so does this: a
 * client that goes away interrupts nothing, as before. The effect runs in a fiber of its own
 * that only the deadline interrupts, and the request waits for its exit or the deadline,
 * whichever comes first, without having to be interrupted itself. The deadline is wall-clock
 * time (a timer, not the `Clock` service): a test clock neither holds a request forever nor
 * cuts it.
 *
 * The fiber starts at once, on this call's stack, with this fiber's context and references:
 * work that never waits (a request on the memory store) is done when the call returns, with
 * no timer set and no hop through the scheduler. Only work that is still running arms the
 * deadline. (`Effect.fork` would start it on the scheduler's next turn; `Effect.timeout` with
 * `Effect.disconnect` costs ten times a fork.)
 */
export const within = <A, E, R, E2>(
  effect: Effect.Effect<A, E, R>,
  ms: number,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> =>
  ms <= 0 ? effect : Effect.flatMap(Effect.runtime<R>(), (runtime) => {
    const work = Runtime.runFork(runtime, Effect.interruptible(effect))
    const done = work.unsafePoll()
    if (done !== null) return done
    return Effect.flatMap(
      Effect.async<Exit.Exit<A, E> | undefined>((resume) => {
        const observer = (exit: Exit.Exit<A, E>) => {
          clearTimeout(timer)
          resume(Effect.succeed(exit))
        }
        const timer = setTimeout(() => {
          work.removeObserver(observer)
          resume(Effect.succeed(undefined))
        }, ms)
        work.addObserver(observer)
      }),
      (exit): Effect.Effect<A, E | E2> =>
        exit !== undefined ? exit : Effect.zipRight(Fiber.interruptFork(work), Effect.fail(onTimeout()))
    )
  })
