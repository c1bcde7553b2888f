/**
 * The runner's self-check (`.ci/run`): one test that fails on purpose and one that passes,
 * run through the suite's own configuration (global setup included) with
 * `SYLLABUS_SELF_CHECK=1`. If the runner exits 0 here, or its report does not show exactly
 * this failure, a red suite could land green: CI stops before running anything else.
 * The file is outside the normal include pattern (`*.test.ts`), so it never runs otherwise.
 */
import { expect, it } from "vitest"

it("passes, so the report shows the runner counted both", () => {
  expect(1 + 1).toBe(2)
})

it("fails on purpose", () => {
  expect(1).toBe(2)
})
