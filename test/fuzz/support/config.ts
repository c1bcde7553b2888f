/**
 * How much to fuzz, and with which seed.
 *
 * - `FUZZ_RUNS`: generated requests per operation for the general property (default below,
 *   sized so `npx vitest run test/fuzz` takes about three minutes on two slow cores); every
 *   other property scales with it.
 * - `FUZZ_SEED`: the seed (default fixed, so a run is reproducible and the known defects fail
 *   the same way every time); a failing property prints the seed and path to replay it.
 */
import fc from "fast-check"

export const DEFAULT_RUNS = 10
export const RUNS = Math.max(1, Number(process.env["FUZZ_RUNS"] ?? DEFAULT_RUNS) || DEFAULT_RUNS)
export const SEED = process.env["FUZZ_SEED"] === undefined ? 20_261_123 : Number(process.env["FUZZ_SEED"])

/** A property's number of runs, from its count at the default `FUZZ_RUNS`. */
export const runs = (atDefault: number): number => Math.max(1, Math.round((atDefault * RUNS) / DEFAULT_RUNS))

const hash = (text: string): number => {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619)
  return h | 0
}

/** fast-check's parameters for one property: its own seed (so one operation's runs do not depend on another's). */
export const parameters = (label: string, numRuns: number, options: { readonly knownDefect?: boolean } = {}): fc.Parameters<unknown> => ({
  numRuns,
  seed: (SEED ^ hash(label)) | 0,
  // A known defect fails on its first counterexample; shrinking it again each run would only cost time.
  endOnFailure: options.knownDefect === true,
  verbose: 1
})

/** Timeout of one property's test: generous, the runs are bounded by `numRuns`. */
export const PROPERTY_TIMEOUT = 15 * 60_000

/** Requests sent by this process, for the summary a suite prints. */
export const sent = { count: 0 }
