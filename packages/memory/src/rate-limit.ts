import { Effect, HashMap, Option, Ref } from "effect"
import { type RateCheck, RateLimitStore, type WindowCounts } from "@syllabus/core"

/** The fixed windows of one counter still worth keeping (the current one and the one before). */
interface Counter {
  readonly windowMs: number
  readonly windows: ReadonlyArray<{ readonly start: number; readonly count: number }>
}

interface Counters {
  readonly byKey: HashMap.HashMap<string, Counter>
  readonly hits: number
}

// Every so many hits, forget the counters of keys not hit for two windows.
const SWEEP_EVERY = 1024

const countAt = (counter: Counter | undefined, start: number): number =>
  counter?.windows.find((w) => w.start === start)?.count ?? 0

const sweep = (byKey: HashMap.HashMap<string, Counter>, windowStart: number): HashMap.HashMap<string, Counter> =>
  HashMap.filter(byKey, (counter) => counter.windows.some((w) => w.start + counter.windowMs >= windowStart))

// Not part of the transactional state: a hit is atomic on its own and never rolled back.
export const makeRateLimitStore = Effect.gen(function* () {
  const counters = yield* Ref.make<Counters>({ byKey: HashMap.empty(), hits: 0 })

  const hit = Effect.fnUntraced(function* (
    checks: ReadonlyArray<RateCheck>,
    windowStart: number,
    windowMs: number,
    admit: (counts: ReadonlyArray<WindowCounts>) => boolean
  ) {
    // Read, decide and count in one synchronous step: no other hit can come in between.
    return yield* Ref.modify(counters, (state) => {
      const counts = checks.map((check): WindowCounts => {
        const counter = Option.getOrUndefined(HashMap.get(state.byKey, check.key))
        return { previous: countAt(counter, windowStart - windowMs), current: countAt(counter, windowStart) }
      })
      const admitted = admit(counts)
      let byKey = state.byKey
      if (admitted) {
        for (const check of checks) {
          const counter = Option.getOrUndefined(HashMap.get(byKey, check.key))
          const kept = (counter?.windows ?? []).filter((w) => w.start === windowStart - windowMs)
          byKey = HashMap.set(byKey, check.key, {
            windowMs,
            windows: [...kept, { start: windowStart, count: countAt(counter, windowStart) + 1 }]
          })
        }
      }
      const hits = state.hits + 1
      if (hits % SWEEP_EVERY === 0) byKey = sweep(byKey, windowStart)
      return [{ admitted, counts }, { byKey, hits }] as const
    })
  })

  return RateLimitStore.of({ hit })
})
