/**
 * Account plan limits (docs/plan-limits.md, §7 `plan_limit_reached`), on both stores, over
 * HTTP: the operator sets a plan (`setPlanLimits`, as the server's `set-plan-limits` does; the
 * commands themselves are run at the end of this file); a client sees it in `GET
 * /account/usage` and meets it as a 409 on a create, a restore and a batch item. Each test opens
 * an account of its own, so its counts start from what an account is opened with (one
 * administrator, one credential per environment).
 */
import { figureId, type OpenedAccount, PLAN_USAGE_SHARDS, type PlanChange, Records, setPlanLimits } from "@syllabus/core"
import { type ChildProcess, spawn } from "node:child_process"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eachStore, type Harness, type Response, startHarness } from "../support/harness.js"
import { expectError } from "../support/expect.js"
import { freshPgDatabase } from "../support/pg.js"

const API = "/api/v3"
let accounts = 0

interface Account {
  readonly opened: OpenedAccount
  readonly live: string
  readonly test: string
  call(method: string, path: string, json?: unknown, environment?: "production" | "sandbox"): Promise<Response>
  /** Change the account's plan, as the operator does. */
  plan(change: PlanChange): Promise<void>
}

const accountOf = (h: Harness, opened: OpenedAccount): Account => {
  const secret = (environment: "production" | "sandbox") => opened.credentials.find((c) => c.environment === environment)!.secret
  return {
    opened,
    live: secret("production"),
    test: secret("sandbox"),
    call: (method, path, json, environment = "production") =>
      h.request(method, `${API}${path}`, { secret: secret(environment), ...(json === undefined ? {} : { json }) }),
    plan: async (change) => {
      await h.runUseCase(setPlanLimits(opened.account.id, change))
    }
  }
}

const openAccount = async (h: Harness): Promise<Account> =>
  accountOf(h, await h.openAccount(`plan-${process.pid}-${Date.now()}-${++accounts}`))

const ok = (res: Response, status = 201) => {
  expect(res.status, res.text).toBe(status)
  return res.body.data
}

/** A showcase of the account to place products in. */
const showcase = async (account: Account, environment: "production" | "sandbox" = "production"): Promise<string> =>
  ok(await account.call("POST", "/showcases", { name: "Shelf" }, environment)).id

const newProduct = (account: Account, showcaseId: string, environment: "production" | "sandbox" = "production") =>
  account.call("POST", "/products", { format: "course", name: "Course", showcase_id: showcaseId }, environment)

const productIds = async (account: Account, query = "", environment: "production" | "sandbox" = "production"): Promise<Array<string>> =>
  ok(await account.call("GET", `/products?limit=100${query}`, undefined, environment), 200).map((p: { id: string }) => p.id)

/** The plan line of a resource in `GET /account/usage`. */
const usageOf = async (account: Account, resource: string, environment: "production" | "sandbox" = "production") => {
  const usage = ok(await account.call("GET", "/account/usage", undefined, environment), 200)
  return usage.plan.resources.find((line: { resource: string }) => line.resource === resource)
}

/** A 409 `plan_limit_reached` naming the resource (`reason`) and the limit (the message). */
const expectLimitReached = (res: Response, resource: string, limit: number) => {
  const error = expectError(res, 409, "plan_limit_reached")
  expect(res.body.error.reason, res.text).toBe(resource)
  expect(error.message, res.text).toContain(`at most ${limit} ${resource}`)
}

eachStore("plan limits", (h) => {
  it("a new account has no limit: GET /account/usage lists every resource, unlimited, with the slots in use", async () => {
    const account = await openAccount(h())
    const usage = ok(await account.call("GET", "/account/usage"), 200)
    expect(usage.plan).toEqual({
      name: null,
      resources: [
        { resource: "products", limit: null, used: 0 },
        { resource: "administrators", limit: null, used: 1 },
        { resource: "credentials", limit: null, used: 1 },
        { resource: "webhooks", limit: null, used: 0 },
        { resource: "domains", limit: null, used: 0 },
        { resource: "replicas", limit: null, used: 0 }
      ]
    })
  })

  it("at the limit a create is 409 plan_limit_reached naming the resource and the limit, and writes nothing", async () => {
    const account = await openAccount(h())
    await account.plan({ name: "starter", limits: { products: 2 } })
    const shelf = await showcase(account)
    ok(await newProduct(account, shelf))
    ok(await newProduct(account, shelf))
    expectLimitReached(await newProduct(account, shelf), "products", 2)
    expect(await productIds(account)).toHaveLength(2)
    const usage = ok(await account.call("GET", "/account/usage"), 200)
    expect(usage.plan.name).toBe("starter")
    expect(usage.plan.resources[0]).toEqual({ resource: "products", limit: 2, used: 2 })
    // Other resources stay unlimited.
    ok(await account.call("POST", "/showcases", { name: "Another shelf" }))
  })

  it("the trash frees a slot; restoring over the limit is 409 plan_limit_reached, and succeeds once a slot is free", async () => {
    const account = await openAccount(h())
    await account.plan({ limits: { products: 1 } })
    const shelf = await showcase(account)
    const first = ok(await newProduct(account, shelf))
    expectLimitReached(await newProduct(account, shelf), "products", 1)
    ok(await account.call("DELETE", `/products/${first.id}`), 200)
    expect((await usageOf(account, "products")).used).toBe(0)
    const second = ok(await newProduct(account, shelf))
    expectLimitReached(await account.call("PATCH", `/products/${first.id}`, { deleted: false }), "products", 1)
    expect(await productIds(account, "&deleted=true")).toEqual([first.id])
    ok(await account.call("DELETE", `/products/${second.id}`), 200)
    const restored = ok(await account.call("PATCH", `/products/${first.id}`, { deleted: false }), 200)
    expect(restored.deleted).toBe(false)
    expect(await productIds(account)).toEqual([first.id])
    expect((await usageOf(account, "products")).used).toBe(1)
  })

  it("limits hold in each environment apart: the sandbox holds as many as production, no more", async () => {
    const account = await openAccount(h())
    await account.plan({ limits: { products: 1 } })
    ok(await newProduct(account, await showcase(account)))
    const sandboxShelf = await showcase(account, "sandbox")
    ok(await newProduct(account, sandboxShelf, "sandbox"))
    expectLimitReached(await newProduct(account, sandboxShelf, "sandbox"), "products", 1)
    expect(await usageOf(account, "products", "sandbox")).toEqual({ resource: "products", limit: 1, used: 1 })
    expect(await usageOf(account, "products")).toEqual({ resource: "products", limit: 1, used: 1 })
    // A sandbox reset empties the sandbox's products and frees their slots; the plan stays.
    ok(await account.call("POST", "/sandbox/resets", undefined, "sandbox"))
    expect(await usageOf(account, "products", "sandbox")).toEqual({ resource: "products", limit: 1, used: 0 })
    ok(await newProduct(account, await showcase(account, "sandbox"), "sandbox"))
  })

  it("administrators are the account's: counted once for both environments; removing one frees its slot", async () => {
    const account = await openAccount(h())
    await account.plan({ limits: { administrators: 2 } })
    const admin = (n: number) => ({ email: `admin${n}-${Date.now()}@example.com`, name: "Grace", password: "a long passphrase" })
    const second = ok(await account.call("POST", "/administrators", admin(2)))
    expectLimitReached(await account.call("POST", "/administrators", admin(3), "sandbox"), "administrators", 2)
    expectLimitReached(await account.call("POST", "/administrators", admin(3)), "administrators", 2)
    expect(await usageOf(account, "administrators", "sandbox")).toEqual({ resource: "administrators", limit: 2, used: 2 })
    ok(await account.call("DELETE", `/administrators/${second.id}`), 200)
    ok(await account.call("POST", "/administrators", admin(4), "sandbox"))
  })

  it("credentials per environment: revoking one frees its slot, and a sandbox reset keeps the count with the credentials", async () => {
    const account = await openAccount(h())
    await account.plan({ limits: { credentials: 2 } })
    const issued = ok(await account.call("POST", "/credentials", { name: "second" }))
    expectLimitReached(await account.call("POST", "/credentials", { name: "third" }), "credentials", 2)
    ok(await account.call("POST", `/credentials/${issued.id}/revocations`), 200)
    ok(await account.call("POST", "/credentials", { name: "third" }))
    // The sandbox has its own: the one it was opened with, and room for one more, reset or not.
    ok(await account.call("POST", "/credentials", { name: "sandbox second" }, "sandbox"))
    ok(await account.call("POST", "/sandbox/resets", undefined, "sandbox"))
    expect(await usageOf(account, "credentials", "sandbox")).toEqual({ resource: "credentials", limit: 2, used: 2 })
    expectLimitReached(await account.call("POST", "/credentials", { name: "sandbox third" }, "sandbox"), "credentials", 2)
  })

  it("webhooks: a limit of 0 allows none", async () => {
    const account = await openAccount(h())
    await account.plan({ limits: { webhooks: 0 } })
    const res = await account.call("POST", "/webhooks", { url: "https://hooks.example.com/syllabus", event_types: ["product.created"] })
    expectLimitReached(res, "webhooks", 0)
    expect(ok(await account.call("GET", "/webhooks"), 200)).toEqual([])
  })

  it("webhooks and domains each take a slot: at a limit of 1 the second is 409 plan_limit_reached; removing the first frees it", async () => {
    const account = await openAccount(h())
    await account.plan({ limits: { webhooks: 1, domains: 1 } })
    const webhook = () => account.call("POST", "/webhooks", { url: "https://hooks.example.com/syllabus", event_types: ["product.created"] })
    const domain = () => account.call("POST", "/domains", { hostname: `plan-${accounts}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.example.com` })
    for (const [resource, create] of [["webhooks", webhook], ["domains", domain]] as const) {
      const first = ok(await create())
      expect(await usageOf(account, resource)).toEqual({ resource, limit: 1, used: 1 })
      expectLimitReached(await create(), resource, 1)
      expect((await account.call("DELETE", `/${resource}/${first.id}`)).status).toBe(204)
      ok(await create())
    }
  })

  it("a batch create over the limit fails the items beyond it with plan_limit_reached; the others succeed", async () => {
    const account = await openAccount(h())
    await account.plan({ limits: { products: 2 } })
    const shelf = await showcase(account)
    const started = await account.call("POST", "/operations", {
      type: "products.create",
      items: ["a", "b", "c", "d"].map((key) => ({ key, format: "course", name: `Batched ${key}`, showcase_id: shelf }))
    })
    const operation = ok(started, 202)
    let done: Record<string, any> = operation
    for (let i = 0; i < 100 && done.status !== "succeeded" && done.status !== "failed"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      done = ok(await account.call("GET", `/operations/${operation.id}`), 200)
    }
    expect(done).toMatchObject({ status: "succeeded", progress: { done: 2, failed: 2, total: 4 }, error: null })
    const items = ok(await account.call("GET", `/operations/${operation.id}/items`), 200)
    expect(items.map((item: { key: string; status: string; error: { code: string; reason: string } | null }) => [item.key, item.status, item.error?.code ?? null, item.error?.reason ?? null])).toEqual([
      ["a", "succeeded", null, null],
      ["b", "succeeded", null, null],
      ["c", "failed", "plan_limit_reached", "products"],
      ["d", "failed", "plan_limit_reached", "products"]
    ])
    expect(await productIds(account)).toHaveLength(2)
  })

  it("the operator lowers a limit below the usage (nothing is removed, creates are refused) and lifts it (null)", async () => {
    const account = await openAccount(h())
    const shelf = await showcase(account)
    for (let i = 0; i < 3; i++) ok(await newProduct(account, shelf))
    await account.plan({ limits: { products: 2 } })
    expect(await productIds(account)).toHaveLength(3)
    expect(await usageOf(account, "products")).toEqual({ resource: "products", limit: 2, used: 3 })
    expectLimitReached(await newProduct(account, shelf), "products", 2)
    await account.plan({ limits: { products: null } })
    expect(await usageOf(account, "products")).toEqual({ resource: "products", limit: null, used: 3 })
    ok(await newProduct(account, shelf))
  })

  it("setting a plan counts the account's records again: records the counts never saw (an earlier release's) take their slots", async () => {
    const account = await openAccount(h())
    const shelf = await showcase(account)
    for (let i = 0; i < 3; i++) ok(await newProduct(account, shelf))
    // As a database from before the counts: the products are there, their count is not.
    const tenant = { accountId: account.opened.account.id, environment: "production" as const }
    await h().runUseCase(
      Effect.flatMap(Records, (records) =>
        Effect.forEach(Array.from({ length: PLAN_USAGE_SHARDS }, (_, shard) => figureId("product", shard)), (id) => records.remove(tenant, "plan_usage_product", id))
      )
    )
    expect(await usageOf(account, "products")).toEqual({ resource: "products", limit: null, used: 0 })
    await account.plan({ limits: { products: 3 } })
    expect(await usageOf(account, "products")).toEqual({ resource: "products", limit: 3, used: 3 })
    expectLimitReached(await newProduct(account, shelf), "products", 3)
  })

  it("the operator's plan is checked: an unknown resource or a negative limit changes nothing", async () => {
    const account = await openAccount(h())
    await account.plan({ limits: { products: 5 } })
    const refused = (change: PlanChange) =>
      h().runUseCase(Effect.flip(setPlanLimits(account.opened.account.id, change)))
    expect(await refused({ limits: { spaceships: 1 } as never })).toMatchObject({ _tag: "PlanLimitsInvalid" })
    expect(await refused({ limits: { products: -1 } })).toMatchObject({ _tag: "PlanLimitsInvalid" })
    expect(await usageOf(account, "products")).toEqual({ resource: "products", limit: 5, used: 0 })
  })

  it("50 concurrent creates at a limit of 7 end with exactly 7: the others are 409 plan_limit_reached", async () => {
    const account = await openAccount(h())
    await account.plan({ limits: { products: 7 } })
    const shelf = await showcase(account)
    const answers = await Promise.all(Array.from({ length: 50 }, () => newProduct(account, shelf)))
    const statuses = answers.map((res) => res.status)
    expect(statuses.filter((status) => status === 201), statuses.join(" ")).toHaveLength(7)
    for (const res of answers.filter((r) => r.status !== 201)) expectLimitReached(res, "products", 7)
    expect(await productIds(account)).toHaveLength(7)
    expect(await usageOf(account, "products")).toEqual({ resource: "products", limit: 7, used: 7 })
  }, 120_000)
})

// ---------------------------------------------------------------------------------------
// The operator's commands (they need a database: PostgreSQL)

const main = "packages/server/src/main.ts"
const root = new URL("../..", import.meta.url).pathname

const run = (args: ReadonlyArray<string>, databaseUrl: string): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve, reject) => {
    const { DATABASE_URL: _ignored, ...env } = process.env
    const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", main, ...args], {
      cwd: root,
      env: { ...env, DATABASE_URL: databaseUrl, FILE_STORAGE: "memory", RATE_LIMITS: "off" }
    })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })

describe("plan limits: the operator's commands [postgresql]", () => {
  const scope = Effect.runSync(Scope.make())
  let databaseUrl = ""
  let server: Harness | undefined
  beforeAll(async () => {
    databaseUrl = (await Effect.runPromise(Scope.extend(freshPgDatabase, scope))).url
    server = await startHarness("postgresql", { databaseUrl })
  }, 60_000)
  afterAll(async () => {
    await server?.close({ keepDatabase: true })
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }, 60_000)

  const createAccount = (subdomain: string, ...plan: ReadonlyArray<string>) =>
    run(
      [
        "create-account",
        "--name",
        "Acme",
        "--subdomain",
        subdomain,
        "--admin-email",
        `admin@${subdomain}.example`,
        "--admin-name",
        "Admin",
        "--admin-password",
        "correct horse battery",
        ...plan
      ],
      databaseUrl
    )

  it("create-account --plan --plan-limit opens the account with its plan; set-plan-limits changes it; a bad limit is refused", async () => {
    const refused = await createAccount("badplan", "--plan-limit", "spaceships=3")
    expect(refused.code, refused.stderr).toBe(2)
    expect(refused.stderr).toContain("spaceships")
    expect(refused.stdout).not.toMatch(/ck_live_/)

    const opened = await createAccount("planned", "--plan", "starter", "--plan-limit", "products=1", "--plan-limit", "webhooks=0")
    expect(opened.code, opened.stderr).toBe(0)
    expect(opened.stdout).toMatch(/Plan starter:/)
    const live = /\bproduction\s+crd_\S+\s+(ck_live_\S+)/.exec(opened.stdout)?.[1]
    expect(live, opened.stdout).toBeDefined()
    const call = (method: string, path: string, json?: unknown) =>
      server!.request(method, `${API}${path}`, { secret: live!, ...(json === undefined ? {} : { json }) })

    const usage = ok(await call("GET", "/account/usage"), 200)
    expect(usage.plan.name).toBe("starter")
    expect(usage.plan.resources.filter((line: { limit: number | null }) => line.limit !== null)).toEqual([
      { resource: "products", limit: 1, used: 0 },
      { resource: "webhooks", limit: 0, used: 0 }
    ])
    const shelf = ok(await call("POST", "/showcases", { name: "Shelf" })).id
    const product = () => call("POST", "/products", { format: "course", name: "Course", showcase_id: shelf })
    ok(await product())
    expectLimitReached(await product(), "products", 1)

    const raised = await run(["set-plan-limits", "--subdomain", "planned", "--plan", "growth", "--plan-limit", "products=2", "--plan-limit", "webhooks=unlimited"], databaseUrl)
    expect(raised.code, raised.stderr).toBe(0)
    expect(raised.stdout).toMatch(/Plan growth:/)
    expect(raised.stdout).toMatch(/products\s+2/)
    expect(raised.stdout).toMatch(/webhooks\s+unlimited/)
    ok(await product())
    expectLimitReached(await product(), "products", 2)
    // A limit out of range is refused whole: the plan stays as it was.
    const outOfRange = await run(["set-plan-limits", "--subdomain", "planned", "--plan", "huge", "--plan-limit", "products=2000000000"], databaseUrl)
    expect(outOfRange.code).toBe(2)
    expect(outOfRange.stderr).toContain("products")
    const after = ok(await call("GET", "/account/usage"), 200)
    expect(after.plan.name).toBe("growth")
    expect(after.plan.resources.find((line: { resource: string }) => line.resource === "webhooks").limit).toBeNull()

    const unknown = await run(["set-plan-limits", "--subdomain", "nobody", "--plan-limit", "products=2"], databaseUrl)
    expect(unknown.code).not.toBe(0)
    expect(unknown.stdout + unknown.stderr).toContain("No account has the subdomain nobody")

    // A refusal after the store opened (a taken subdomain) ends the command too, with exit code 2.
    const taken = await createAccount("planned")
    expect(taken.code, taken.stderr).toBe(2)
    expect(taken.stderr).toContain("the subdomain planned is taken")
  }, 180_000)
})
