import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { changePlan, MAX_PLAN_LIMIT, type Plan, type PlanChange } from "@syllabus/core"

/** The operator's changes of plan (docs/plan-limits.md): what `set-plan-limits` accepts and refuses. */
const plan: Plan = { name: "starter", limits: { products: 5, webhooks: 2 } }
const changed = (change: PlanChange) => Effect.runPromise(changePlan(plan, change))
const refused = (change: PlanChange) => Effect.runPromise(Effect.flip(changePlan(plan, change)))

describe("changing a plan", () => {
  it("keeps the limits and the name the change does not name", async () => {
    expect(await changed({ limits: { products: 7 } })).toEqual({ name: "starter", limits: { products: 7, webhooks: 2 } })
    expect(await changed({ name: "pro" })).toEqual({ name: "pro", limits: { products: 5, webhooks: 2 } })
  })

  it("an unknown resource is refused, naming the known ones (the server's commands print it)", async () => {
    expect(await refused({ limits: { spaceships: 1 } as never })).toMatchObject({
      _tag: "PlanLimitsInvalid",
      message: "unknown plan resource spaceships (one of products, administrators, credentials, webhooks, domains, replicas)"
    })
  })

  it("a limit is a whole number from 0 to MAX_PLAN_LIMIT", async () => {
    expect((await changed({ limits: { products: 0 } })).limits.products).toBe(0)
    expect((await changed({ limits: { products: MAX_PLAN_LIMIT } })).limits.products).toBe(MAX_PLAN_LIMIT)
    for (const limit of [-1, MAX_PLAN_LIMIT + 1, 1.5]) {
      expect(await refused({ limits: { products: limit } })).toMatchObject({ _tag: "PlanLimitsInvalid", message: `the limit of products must be a whole number from 0 to ${MAX_PLAN_LIMIT}` })
    }
  })

  it("a name is 1 to 100 characters, not only spaces; null clears it", async () => {
    expect((await changed({ name: "n".repeat(100) })).name).toBe("n".repeat(100))
    expect((await changed({ name: null })).name).toBeNull()
    for (const name of ["", "   ", "n".repeat(101)]) {
      expect(await refused({ name })).toMatchObject({ _tag: "PlanLimitsInvalid", message: "the plan name must be 1 to 100 characters" })
    }
  })
})
