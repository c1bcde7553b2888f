/**
 * Reports (§4.4, docs/reports.md): the catalog and the reports over the learning records, their
 * figures checked against data each test makes in an account of its own (so every row of a
 * report is known), through the API, or through the core use cases the platform runs
 * (`awardPoints`, `issueCertificateIfEarned`) on the server's own store. Permissions, personal
 * columns, validation, pagination, and the deprecated `product_id` of rankings.
 */
import { awardPoints, Caller, type CallerInfo, issueCertificateIfEarned, type OpenedAccount, UnitOfWork } from "@syllabus/core"
import { Effect } from "effect"
import { expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, freshKey, type Harness } from "../support/harness.js"

let counter = 0
const unique = (tag: string) => `${tag}-${process.pid}-${Date.now()}-${++counter}`

interface Account {
  readonly opened: OpenedAccount
  readonly secret: string
  readonly get: (path: string, secret?: string) => Promise<{ status: number; body: any; text: string; headers: Headers }>
  readonly post: (path: string, json?: unknown) => Promise<{ status: number; body: any; text: string }>
  readonly put: (path: string, json: unknown) => Promise<{ status: number; body: any; text: string }>
  readonly patch: (path: string, json: unknown) => Promise<{ status: number; body: any; text: string }>
  readonly del: (path: string) => Promise<{ status: number; body: any; text: string }>
}

/** A fresh account: its reports hold only what the test makes. */
const newAccount = async (h: Harness): Promise<Account> => {
  const opened = await h.openAccount(unique("reports"))
  const secret = opened.credentials.find((c) => c.environment === "production")!.secret
  return {
    opened,
    secret,
    get: (path, as = secret) => h.request("GET", `/api/v3${path}`, { secret: as }),
    post: (path, json) => h.request("POST", `/api/v3${path}`, { secret, ...(json === undefined ? {} : { json }), idempotencyKey: freshKey() }),
    put: (path, json) => h.request("PUT", `/api/v3${path}`, { secret, json }),
    patch: (path, json) => h.request("PATCH", `/api/v3${path}`, { secret, json }),
    del: (path) => h.request("DELETE", `/api/v3${path}`, { secret })
  }
}

const created = async (res: Promise<{ status: number; body: any; text: string }>) => {
  const r = await res
  if (r.status !== 201) throw new Error(`expected 201, got ${r.status}: ${r.text}`)
  return r.body.data
}

const newProduct = async (a: Account, name = "Course") => {
  const showcase = await created(a.post("/showcases", { name: "Shelf" }))
  return (await created(a.post("/products", { format: "course", name, showcase_id: showcase.id }))) as { id: string; name: string }
}

const newUser = async (a: Account, name = "Learner") =>
  (await created(a.post("/users", { name, email: `${unique("learner")}@example.com` }))) as { id: string; name: string; email: string }

const credentialWith = async (a: Account, capabilities: ReadonlyArray<string>) =>
  (await created(a.post("/credentials", { name: "limited", policies: [{ capabilities }] }))).secret.value as string

/** Run a core use case as the platform does: in a unit of work, for a caller of the account's production environment. */
const runAs = <A>(h: Harness, a: Account, effect: Effect.Effect<A, unknown, any>) => {
  const caller: CallerInfo = {
    tenant: { accountId: a.opened.account.id, environment: "production" },
    requestId: `req_${String(++counter).padStart(9, "0")}`,
    credential: { id: a.opened.credentials.find((c) => c.environment === "production")!.id },
    grant: new Map(),
    human: null
  }
  return h.runUseCase(Effect.flatMap(UnitOfWork, (uow) => uow.transaction(effect)).pipe(Effect.provideService(Caller, caller))) as Promise<A>
}

const sourceId = () => `lpr_${String(++counter).padStart(9, "0")}`

/** Points earned by a lesson completed in a product: each active rule of the product (and the global ones) awards once. */
const award = (h: Harness, a: Account, userId: string, productId: string | null) =>
  runAs(h, a, awardPoints({ userId, productId, trigger: "lesson_completed", sourceType: "lesson_progress", sourceId: sourceId() }))

/** Every row of a report, page after page. */
const allRows = async (a: Account, path: string, limit = 2) => {
  const rows: Array<any> = []
  let cursor: string | null = null
  const separator = path.includes("?") ? "&" : "?"
  do {
    const res = await a.get(`${path}${separator}limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.page.prev_cursor).toBeNull()
    expect(res.body.data.length).toBeLessThanOrEqual(limit)
    rows.push(...res.body.data)
    cursor = res.body.page.next_cursor
  } while (cursor !== null)
  return rows
}

const reportPaths = ["/reports", "/reports/rankings", "/reports/products", "/reports/exams", "/reports/certificates", "/reports/users", "/reports/activity"]

eachStore("reports", (h) => {
  it("GET /reports: the static catalog; personal columns listed only with users.read_personal", async () => {
    const a = await newAccount(h())
    const res = await a.get("/reports")
    expect(res.status, res.text).toBe(200)
    expect(res.body.page).toEqual({ limit: 10, next_cursor: null, prev_cursor: null })
    expect(res.body.data.map((r: any) => [r.id, r.path])).toEqual([
      ["activity", "/reports/activity"],
      ["certificates", "/reports/certificates"],
      ["email-bounces", "/reports/email-bounces"],
      ["exams", "/reports/exams"],
      ["exports", "/reports/exports"],
      ["lessons", "/reports/lessons"],
      ["products", "/reports/products"],
      ["rankings", "/reports/rankings"],
      ["support", "/reports/support"],
      ["users", "/reports/users"]
    ])
    const rankings = res.body.data.find((r: any) => r.id === "rankings")
    expect(Object.keys(rankings)).toEqual(["object", "id", "path", "title", "description", "filters", "columns", "source", "freshness", "order", "paginated"])
    expect(rankings).toMatchObject({ object: "report", freshness: "live", paginated: true, source: ["point_balance", "point_entry", "user"] })
    expect(rankings.columns.map((c: any) => [c.name, c.personal])).toEqual([
      ["position", false],
      ["user_id", false],
      ["user_name", true],
      ["user_email", true],
      ["points", false]
    ])
    expect(rankings.filters.map((f: any) => [f.name, f.deprecated])).toEqual([
      ["product_id[]", false],
      ["product_id", true],
      ["limit", false],
      ["cursor", false]
    ])
    // Without users.read_personal: the personal columns are not listed.
    const reader = await credentialWith(a, ["reports.read"])
    const limited = await a.get("/reports", reader)
    expect(limited.status).toBe(200)
    const limitedRankings = limited.body.data.find((r: any) => r.id === "rankings")
    expect(limitedRankings.columns.map((c: any) => c.name)).toEqual(["position", "user_id", "points"])
    const limitedUsers = limited.body.data.find((r: any) => r.id === "users")
    expect(limitedUsers.columns.some((c: any) => c.personal)).toBe(false)
    // The same catalog in every account: no account data.
    const other = await newAccount(h())
    expect((await other.get("/reports")).body.data).toEqual(res.body.data)
  })

  it("every report needs reports.read (403); unknown parameters are 400; a bad limit or cursor is refused", async () => {
    const a = await newAccount(h())
    const outsider = await credentialWith(a, ["users.read", "enrollments.read", "points.read"])
    const product = await newProduct(a)
    const paths = [...reportPaths, `/reports/lessons?product_id=${product.id}`]
    for (const path of paths) {
      const separator = path.includes("?") ? "&" : "?"
      expectError(await a.get(path, outsider), 403, "permission_denied")
      expectError(await a.get(`${path}${separator}color=blue`), 400, "unknown_parameter", { parameter: "color" })
    }
    for (const path of paths.slice(1)) {
      const separator = path.includes("?") ? "&" : "?"
      expectError(await a.get(`${path}${separator}limit=0`), 422, "validation_failed", { parameter: "limit" })
      expectError(await a.get(`${path}${separator}cursor=nope`), 400, "invalid_cursor", { parameter: "cursor" })
    }
  })

  it("rankings by balance: highest first, ties by user ID last first, positions across pages; names only with users.read_personal", async () => {
    const a = await newAccount(h())
    await created(a.post("/gamification/rules", { name: "Lesson", trigger: "lesson_completed", points: 10 }))
    const [ada, bob, cy, dee] = [await newUser(a, "Ada"), await newUser(a, "Bob"), await newUser(a, "Cy"), await newUser(a, "Dee")]
    for (let i = 0; i < 3; i++) await award(h(), a, ada.id, null)
    await award(h(), a, bob.id, null)
    for (let i = 0; i < 2; i++) await award(h(), a, cy.id, null)
    await award(h(), a, dee.id, null)
    // Bob and Dee tie at 10: the later user ID first.
    const [tieFirst, tieSecond] = [bob, dee].sort((x, y) => (x.id < y.id ? 1 : -1))
    const expected = [
      { position: 1, user_id: ada.id, user_name: "Ada", user_email: ada.email, points: 30 },
      { position: 2, user_id: cy.id, user_name: "Cy", user_email: cy.email, points: 20 },
      { position: 3, user_id: tieFirst!.id, user_name: tieFirst!.name, user_email: tieFirst!.email, points: 10 },
      { position: 4, user_id: tieSecond!.id, user_name: tieSecond!.name, user_email: tieSecond!.email, points: 10 }
    ]
    const first = await a.get("/reports/rankings")
    expect(first.status, first.text).toBe(200)
    expect(first.body).toEqual({ data: expected, page: { limit: 50, next_cursor: null, prev_cursor: null } })
    expect(first.headers.get("deprecation")).toBeNull()
    expect(await allRows(a, "/reports/rankings", 3)).toEqual(expected)
    expect(await allRows(a, "/reports/rankings", 1)).toEqual(expected)
    // reports.read alone: the personal columns are null.
    const reader = await credentialWith(a, ["reports.read"])
    const hidden = await a.get("/reports/rankings", reader)
    expect(hidden.body.data).toEqual(expected.map((row) => ({ ...row, user_name: null, user_email: null })))
    // A cursor of the ranking by balance is not one of a ranking by products.
    const page = await a.get("/reports/rankings?limit=1")
    const product = await newProduct(a)
    expectError(
      await a.get(`/reports/rankings?limit=1&product_id[]=${product.id}&cursor=${encodeURIComponent(page.body.page.next_cursor)}`),
      400,
      "invalid_cursor"
    )
  })

  it("rankings by products: the points earned there (product_id[]); product_id is a deprecated alias with Deprecation, Sunset and Link", async () => {
    const a = await newAccount(h())
    const p1 = await newProduct(a, "One")
    const p2 = await newProduct(a, "Two")
    const p3 = await newProduct(a, "Three")
    await created(a.post("/gamification/rules", { name: "P1", trigger: "lesson_completed", points: 7, product_id: p1.id }))
    await created(a.post("/gamification/rules", { name: "P2", trigger: "lesson_completed", points: 5, product_id: p2.id }))
    const [ada, bob, cy] = [await newUser(a, "Ada"), await newUser(a, "Bob"), await newUser(a, "Cy")]
    await award(h(), a, ada.id, p1.id) // ada: 7 in p1
    for (let i = 0; i < 3; i++) await award(h(), a, bob.id, p2.id) // bob: 15 in p2
    await award(h(), a, cy.id, p1.id)
    await award(h(), a, cy.id, p1.id)
    await award(h(), a, cy.id, p2.id) // cy: 14 in p1, 5 in p2
    const row = (position: number, user: { id: string; name: string; email: string }, points: number) =>
      ({ position, user_id: user.id, user_name: user.name, user_email: user.email, points })

    const one = await a.get(`/reports/rankings?product_id[]=${p1.id}`)
    expect(one.status, one.text).toBe(200)
    expect(one.body.data).toEqual([row(1, cy, 14), row(2, ada, 7)])
    const both = [row(1, cy, 19), row(2, bob, 15), row(3, ada, 7)]
    expect((await a.get(`/reports/rankings?product_id[]=${p1.id}&product_id[]=${p2.id}`)).body.data).toEqual(both)
    expect(await allRows(a, `/reports/rankings?product_id[]=${p2.id}&product_id[]=${p1.id}`, 1)).toEqual(both)
    // A product without points: no rows.
    expect((await a.get(`/reports/rankings?product_id[]=${p3.id}`)).body.data).toEqual([])
    // The overall balances are another ranking (every point).
    expect((await a.get("/reports/rankings")).body.data.map((r: any) => [r.user_id, r.points])).toEqual([
      [cy.id, 19],
      [bob.id, 15],
      [ada.id, 7]
    ])

    // The deprecated alias: the same rows, and the deprecation headers.
    const alias = await a.get(`/reports/rankings?product_id=${p1.id}`)
    expect(alias.status, alias.text).toBe(200)
    expect(alias.body).toEqual(one.body)
    expect(alias.headers.get("deprecation")).toMatch(/^@\d+$/)
    const capabilities = (await a.get("/capabilities")).body.data
    expect(capabilities.deprecations).toEqual([])
    const listed = capabilities.deprecated_parameters.find((d: any) => d.operation_id === "reports.rankings.get")
    expect(listed).toMatchObject({ parameter: "product_id", replacement: "product_id[]" })
    expect(alias.headers.get("deprecation")).toBe(`@${Date.parse(listed.deprecated_at) / 1000}`)
    expect(alias.headers.get("sunset")).toBe(new Date(listed.sunset_at).toUTCString())
    expect(alias.headers.get("link")).toMatch(/\/deprecations>; rel="deprecation"$/)
    // Alias and array together: both count.
    expect((await a.get(`/reports/rankings?product_id=${p1.id}&product_id[]=${p2.id}`)).body.data).toEqual(both)
    // The description marks the parameter deprecated.
    const description = (await a.get("/openapi.json")).body
    const parameters = description.paths["/reports/rankings"].get.parameters
    const aliasParameter = parameters.find((p: any) => p.name === "product_id")
    expect(aliasParameter).toMatchObject({ in: "query", deprecated: true, "x-deprecated-at": listed.deprecated_at, "x-sunset": listed.sunset_at })
    expect(Object.keys(description.paths["/reports/rankings"].get.responses["200"].headers)).toEqual(expect.arrayContaining(["Deprecation", "Sunset", "Link"]))

    // Validation: malformed IDs, itemized.
    expectError(await a.get("/reports/rankings?product_id=shw_000000001"), 422, "validation_failed", { parameter: "product_id", code: "invalid" })
    const bad = await a.get("/reports/rankings?product_id[]=nope&limit=500")
    expectError(bad, 422, "validation_failed")
    expect(bad.body.error.details.map((d: any) => d.parameter).sort()).toEqual(["limit", "product_id[][0]"])
    // A repeated alias is not one value.
    expectError(await a.get(`/reports/rankings?product_id=${p1.id}&product_id=${p2.id}`), 422, "validation_failed", { parameter: "product_id" })

    // After the sunset the alias is 410 operation_sunset; `product_id[]` works on, without the headers.
    const toSunset = Date.parse(listed.sunset_at) - Date.now() + 86_400_000
    h().advance(toSunset)
    try {
      expectError(await a.get(`/reports/rankings?product_id=${p1.id}`), 410, "operation_sunset")
      const current = await a.get(`/reports/rankings?product_id[]=${p1.id}`)
      expect(current.status, current.text).toBe(200)
      expect(current.headers.get("deprecation")).toBeNull()
    } finally {
      h().advance(-toSunset)
    }
  })

  it("products: enrollments by status, completions and average progress per product, zeros for a product without enrollments", async () => {
    const a = await newAccount(h())
    const product = await newProduct(a, "Busy")
    const empty = await newProduct(a, "Quiet")
    const moduleId = (await created(a.post(`/products/${product.id}/modules`, { name: "M" }))).id as string
    const lessons: Array<string> = []
    for (const name of ["L1", "L2"]) {
      const lesson = await created(a.post(`/products/${product.id}/lessons`, { name, module_id: moduleId }))
      expect((await a.patch(`/products/${product.id}/lessons/${lesson.id}`, { status: "published" })).status).toBe(200)
      lessons.push(lesson.id)
    }
    const enroll = async () => {
      const user = await newUser(a)
      return (await created(a.post("/enrollments", { user_id: user.id, product_id: product.id }))).id as string
    }
    const [done, half, canceled, expired] = [await enroll(), await enroll(), await enroll(), await enroll()]
    for (const lesson of lessons) expect((await a.put(`/enrollments/${done}/progress/lessons/${lesson}`, { status: "completed" })).status).toBe(200)
    expect((await a.put(`/enrollments/${half}/progress/lessons/${lessons[0]}`, { status: "completed" })).status).toBe(200)
    expect((await a.put(`/enrollments/${canceled}/progress/lessons/${lessons[0]}`, { status: "completed" })).status).toBe(200)
    expect((await a.post(`/enrollments/${canceled}/cancellations`)).status).toBeLessThan(300)
    expect((await a.patch(`/enrollments/${expired}`, { status: "expired" })).status).toBe(200)

    const busyRow = {
      product_id: product.id,
      product_name: "Busy",
      enrollments: 4,
      active: 2,
      expired: 1,
      canceled: 1,
      completed: 1,
      // Not canceled: 100, 50 and 0.
      average_progress_percent: 50,
      // No sales events (their counts: test/contract/funnels.test.ts).
      sales_approved: 0,
      sales_refunded: 0,
      funnel_conversions: 0
    }
    const quietRow = { product_id: empty.id, product_name: "Quiet", enrollments: 0, active: 0, expired: 0, canceled: 0, completed: 0, average_progress_percent: null, sales_approved: 0, sales_refunded: 0, funnel_conversions: 0 }
    const res = await a.get("/reports/products")
    expect(res.status, res.text).toBe(200)
    expect(res.body).toEqual({ data: [busyRow, quietRow].sort((x, y) => (x.product_id < y.product_id ? -1 : 1)), page: { limit: 50, next_cursor: null, prev_cursor: null } })
    expect(await allRows(a, "/reports/products", 1)).toEqual(res.body.data)
    expect((await a.get(`/reports/products?product_id[]=${empty.id}`)).body.data).toEqual([quietRow])
    expect(await allRows(a, `/reports/products?product_id[]=${empty.id}&product_id[]=${product.id}`, 1)).toEqual(res.body.data)
    // A trashed product has no row.
    expect((await a.del(`/products/${empty.id}`)).status).toBe(200)
    expect((await a.get("/reports/products")).body.data).toEqual([busyRow])
    expectError(await a.get("/reports/products?product_id[]=usr_000000001"), 422, "validation_failed", { parameter: "product_id[][0]", code: "invalid" })
  })

  it("lessons: per lesson of one product, learners started, on it and completed, and their average percent", async () => {
    const a = await newAccount(h())
    const product = await newProduct(a)
    const moduleId = (await created(a.post(`/products/${product.id}/modules`, { name: "M" }))).id as string
    const lesson = async (name: string, published = true) => {
      const made = await created(a.post(`/products/${product.id}/lessons`, { name, module_id: moduleId }))
      if (published) expect((await a.patch(`/products/${product.id}/lessons/${made.id}`, { status: "published" })).status).toBe(200)
      return made.id as string
    }
    const [l1, l2, draft, trashed] = [await lesson("One"), await lesson("Two"), await lesson("Draft", false), await lesson("Gone")]
    const enroll = async () => {
      const user = await newUser(a)
      return (await created(a.post("/enrollments", { user_id: user.id, product_id: product.id }))).id as string
    }
    const [e1, e2, e3] = [await enroll(), await enroll(), await enroll()]
    const put = async (enrollment: string, lessonId: string, body: object) =>
      expect((await a.put(`/enrollments/${enrollment}/progress/lessons/${lessonId}`, body)).status).toBe(200)
    await put(e1, l1, { status: "completed" })
    await put(e2, l1, { percent: 50 })
    await put(e3, l1, { percent: 25 })
    await put(e3, l2, { status: "completed" })
    await put(e1, trashed, { status: "completed" })
    expect((await a.del(`/products/${product.id}/lessons/${trashed}`)).status).toBe(200)
    const row = (lesson_id: string, lesson_name: string, status: string, started: number, in_progress: number, completed: number, average_percent: number | null) =>
      ({ lesson_id, module_id: moduleId, lesson_name, status, started, in_progress, completed, average_percent })
    const rows = [
      row(l1, "One", "published", 3, 2, 1, 58.33),
      row(l2, "Two", "published", 1, 0, 1, 100),
      row(draft, "Draft", "draft", 0, 0, 0, null)
    ].sort((x, y) => (x.lesson_id < y.lesson_id ? -1 : 1))
    const res = await a.get(`/reports/lessons?product_id=${product.id}`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toEqual(rows)
    expect(await allRows(a, `/reports/lessons?product_id=${product.id}`, 1)).toEqual(rows)
    // Another product's lessons are another report.
    const other = await newProduct(a)
    expect((await a.get(`/reports/lessons?product_id=${other.id}`)).body.data).toEqual([])
    expectError(await a.get("/reports/lessons"), 422, "validation_failed", { parameter: "product_id", code: "required" })
    // The query is decoded before the cursor is read, and a cursor repeats the filters of its
    // first page: without them 422 required, with others 400 invalid_cursor (docs/reports.md).
    const next = (await a.get(`/reports/lessons?product_id=${product.id}&limit=1`)).body.page.next_cursor as string
    expect(typeof next).toBe("string")
    expectError(await a.get(`/reports/lessons?cursor=${encodeURIComponent(next)}`), 422, "validation_failed", { parameter: "product_id", code: "required" })
    expectError(await a.get("/reports/lessons?cursor=%20"), 422, "validation_failed", { parameter: "product_id", code: "required" })
    expectError(await a.get(`/reports/lessons?product_id=${other.id}&cursor=${encodeURIComponent(next)}`), 400, "invalid_cursor")
    expectError(await a.get(`/reports/lessons?product_id=${product.id}&cursor=%20`), 400, "invalid_cursor")
    expect((await a.get(`/reports/lessons?product_id=${product.id}&limit=1&cursor=${encodeURIComponent(next)}`)).body.data).toEqual([rows[1]])
    expectError(await a.get("/reports/lessons?product_id=prd_000000001"), 422, "validation_failed", { parameter: "product_id", reason: "not_found" })
    expect((await a.del(`/products/${other.id}`)).status).toBe(200)
    expectError(await a.get(`/reports/lessons?product_id=${other.id}`), 422, "validation_failed", { parameter: "product_id", reason: "not_found" })
  })

  it("users: per user not trashed, enrollments, completions, certificates and points; personal columns only with users.read_personal", async () => {
    const a = await newAccount(h())
    const product = await newProduct(a, "One")
    const other = await newProduct(a, "Two")
    expect((await a.put(`/products/${product.id}/certificate-template`, { enabled: true })).status).toBe(200)
    const moduleId = (await created(a.post(`/products/${product.id}/modules`, { name: "M" }))).id as string
    const lesson = await created(a.post(`/products/${product.id}/lessons`, { name: "Only", module_id: moduleId }))
    expect((await a.patch(`/products/${product.id}/lessons/${lesson.id}`, { status: "published" })).status).toBe(200)
    await created(a.post("/gamification/rules", { name: "Lesson", trigger: "lesson_completed", points: 10 }))
    const [ada, bob, gone] = [await newUser(a, "Ada"), await newUser(a, "Bob"), await newUser(a, "Gone")]
    const adaOne = (await created(a.post("/enrollments", { user_id: ada.id, product_id: product.id }))).id as string
    const adaTwo = (await created(a.post("/enrollments", { user_id: ada.id, product_id: other.id }))).id as string
    expect((await a.post(`/enrollments/${adaTwo}/cancellations`)).status).toBeLessThan(300)
    // Ada completes the product: a completed enrollment; the points come from the platform's rule.
    expect((await a.put(`/enrollments/${adaOne}/progress/lessons/${lesson.id}`, { status: "completed" })).status).toBe(200)
    await runAs(h(), a, issueCertificateIfEarned({ userId: ada.id, productId: product.id, enrollmentId: adaOne, percent: 100, completed: true, passedExamIds: [] }))
    await award(h(), a, bob.id, null)
    await award(h(), a, bob.id, null)
    expect((await a.del(`/users/${gone.id}`)).status).toBe(200)
    const points = async (userId: string) => (await a.get(`/users/${userId}/points`)).body.data.balance as number
    const adaPoints = await points(ada.id)
    const rows = [
      { user_id: ada.id, user_name: "Ada", user_email: ada.email, enrollments: 2, active_enrollments: 1, completed_enrollments: 1, certificates: (await a.get(`/certificates?user_id=${ada.id}`)).body.data.length, points: adaPoints },
      { user_id: bob.id, user_name: "Bob", user_email: bob.email, enrollments: 0, active_enrollments: 0, completed_enrollments: 0, certificates: 0, points: 20 }
    ].sort((x, y) => (x.user_id < y.user_id ? -1 : 1))
    expect(rows.find((r) => r.user_id === ada.id)!.certificates).toBeGreaterThanOrEqual(1)
    const res = await a.get("/reports/users")
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toEqual(rows)
    expect(await allRows(a, "/reports/users", 1)).toEqual(rows)
    const reader = await credentialWith(a, ["reports.read"])
    expect((await a.get("/reports/users", reader)).body.data).toEqual(rows.map((r) => ({ ...r, user_name: null, user_email: null })))
  })

  it("activity: enrollments, lesson progress (latest change), exam attempts and certificates, newest first, within a range", async () => {
    const a = await newAccount(h())
    const product = await newProduct(a)
    const moduleId = (await created(a.post(`/products/${product.id}/modules`, { name: "M" }))).id as string
    const lesson = await created(a.post(`/products/${product.id}/lessons`, { name: "L", module_id: moduleId }))
    expect((await a.patch(`/products/${product.id}/lessons/${lesson.id}`, { status: "published" })).status).toBe(200)
    const exam = await created(a.post(`/products/${product.id}/exams`, { title: "Exam" }))
    const examPath = `/products/${product.id}/exams/${exam.id}`
    const question = await created(a.post(`${examPath}/questions`, { text: "2 + 2?", format: "single_choice", alternatives: [{ text: "3" }, { text: "4", correct: true }] }))
    expect((await a.put(`/products/${product.id}/certificate-template`, { enabled: true })).status).toBe(200)
    const ada = await newUser(a, "Ada")
    let moved = 0
    const tick = () => {
      // Distinct instants, so that a range can fall between two steps.
      h().advance(1_000)
      moved += 1_000
    }
    const enrollment = await created(a.post("/enrollments", { user_id: ada.id, product_id: product.id }))
    tick()
    await a.put(`/enrollments/${enrollment.id}/progress/lessons/${lesson.id}`, { percent: 10 })
    tick()
    const progress = (await a.put(`/enrollments/${enrollment.id}/progress/lessons/${lesson.id}`, { percent: 60 })).body.data
    tick()
    const attempt = await created(a.post(`${examPath}/attempts`, { user_id: ada.id, answers: [{ exam_question_id: question.id, alternative_ids: [question.alternatives[1].id] }] }))
    tick()
    const certificate = await runAs(h(), a, issueCertificateIfEarned({ userId: ada.id, productId: product.id, enrollmentId: enrollment.id, percent: 100, completed: true, passedExamIds: [] })) as Record<string, any> | null
    h().advance(-moved)
    const row = (occurred_at: string, kind: string, resource_id: string, subject_id: string | null) =>
      ({ occurred_at, kind, resource_id, user_id: ada.id, user_name: "Ada", product_id: product.id, subject_id })
    expect(certificate).not.toBeNull()
    const rows = [
      row(certificate!.issued_at, "certificate", certificate!.id, null),
      row(attempt.submitted_at, "exam_attempt", attempt.id, exam.id),
      row(progress.updated_at, "lesson_progress", progress.id, lesson.id),
      row(enrollment.created_at, "enrollment", enrollment.id, null)
    ]
    const res = await a.get("/reports/activity")
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toEqual(rows)
    expect(await allRows(a, "/reports/activity", 1)).toEqual(rows)
    const q = (after: string, before?: string) =>
      `/reports/activity?occurred_after=${encodeURIComponent(after)}${before === undefined ? "" : `&occurred_before=${encodeURIComponent(before)}`}`
    expect((await a.get(q(progress.updated_at))).body.data).toEqual(rows.slice(0, 3))
    expect((await a.get(q(enrollment.created_at, attempt.submitted_at))).body.data).toEqual(rows.slice(2))
    expectError(await a.get(q(attempt.submitted_at, enrollment.created_at)), 422, "validation_failed", { parameter: "occurred_before", reason: "empty_range" })
    const reader = await credentialWith(a, ["reports.read"])
    expect((await a.get("/reports/activity", reader)).body.data).toEqual(rows.map((r) => ({ ...r, user_name: null })))
  })

  it("exams: attempts, passes, pass rate and average grade per exam; an exam without attempts has nulls", async () => {
    const a = await newAccount(h())
    const product = await newProduct(a)
    const exam = await created(a.post(`/products/${product.id}/exams`, { title: "Final", settings: { min_grade: 50 } }))
    const idle = await created(a.post(`/products/${product.id}/exams`, { title: "Quiz" }))
    const examPath = `/products/${product.id}/exams/${exam.id}`
    const q1 = await created(a.post(`${examPath}/questions`, { text: "2 + 2?", format: "single_choice", alternatives: [{ text: "3" }, { text: "4", correct: true }] }))
    const q2 = await created(a.post(`${examPath}/questions`, { text: "3 + 3?", format: "single_choice", alternatives: [{ text: "6", correct: true }, { text: "7" }] }))
    const attempt = async (answers: ReadonlyArray<object>) => {
      const user = await newUser(a)
      await created(a.post("/enrollments", { user_id: user.id, product_id: product.id }))
      return created(a.post(`${examPath}/attempts`, { user_id: user.id, answers }))
    }
    const right1 = { exam_question_id: q1.id, alternative_ids: [q1.alternatives[1].id] }
    const wrong1 = { exam_question_id: q1.id, alternative_ids: [q1.alternatives[0].id] }
    const right2 = { exam_question_id: q2.id, alternative_ids: [q2.alternatives[0].id] }
    const wrong2 = { exam_question_id: q2.id, alternative_ids: [q2.alternatives[1].id] }
    const grades = [
      (await attempt([right1, right2])).grade, // 100, passed
      (await attempt([right1, wrong2])).grade, // 50, passed
      (await attempt([wrong1, wrong2])).grade // 0, failed
    ]
    expect(grades).toEqual([100, 50, 0])
    const rows = [
      { exam_id: exam.id, product_id: product.id, exam_title: "Final", attempts: 3, passed: 2, pass_rate: 66.67, average_grade: 50 },
      { exam_id: idle.id, product_id: product.id, exam_title: "Quiz", attempts: 0, passed: 0, pass_rate: null, average_grade: null }
    ].sort((x, y) => (x.exam_id < y.exam_id ? -1 : 1))
    const res = await a.get("/reports/exams")
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toEqual(rows)
    expect(await allRows(a, "/reports/exams", 1)).toEqual(rows)
    expect((await a.get(`/reports/exams?product_id[]=${product.id}`)).body.data).toEqual(rows)
    const other = await newProduct(a)
    expect((await a.get(`/reports/exams?product_id[]=${other.id}`)).body.data).toEqual([])
  })

  it("certificates: issued per product within a date range ([issued_after, issued_before)); a reversed range is 422", async () => {
    const a = await newAccount(h())
    const certified = async (name: string) => {
      const product = await newProduct(a, name)
      expect((await a.put(`/products/${product.id}/certificate-template`, { enabled: true })).status).toBe(200)
      return product
    }
    const p1 = await certified("One")
    const p2 = await certified("Two")
    const issue = async (productId: string) => {
      const user = await newUser(a)
      const certificate = await runAs(h(), a, issueCertificateIfEarned({
        userId: user.id,
        productId,
        enrollmentId: `enr_${String(++counter).padStart(9, "0")}`,
        percent: 100,
        completed: true,
        passedExamIds: []
      })) as Record<string, any>
      expect(certificate).not.toBeNull()
      // Distinct instants, so that a range can fall between two issues.
      h().advance(1_000)
      return certificate.issued_at as string
    }
    const issued = [await issue(p1.id), await issue(p1.id), await issue(p2.id), await issue(p1.id)]
    // The clock goes back where it was for the tests after this one.
    h().advance(-4_000)
    const byProduct = (rows: ReadonlyArray<readonly [string, string, number]>) =>
      rows.map(([product_id, product_name, count]) => ({ product_id, product_name, issued: count })).sort((x, y) => (x.product_id < y.product_id ? -1 : 1))

    const all = await a.get("/reports/certificates")
    expect(all.status, all.text).toBe(200)
    expect(all.body.data).toEqual(byProduct([[p1.id, "One", 3], [p2.id, "Two", 1]]))
    expect(await allRows(a, "/reports/certificates", 1)).toEqual(all.body.data)
    const range = (after: string, before: string) => `/reports/certificates?issued_after=${encodeURIComponent(after)}&issued_before=${encodeURIComponent(before)}`
    expect((await a.get(range(issued[1]!, issued[3]!))).body.data).toEqual(byProduct([[p1.id, "One", 1], [p2.id, "Two", 1]]))
    expect((await a.get(`/reports/certificates?issued_after=${encodeURIComponent(issued[2]!)}`)).body.data).toEqual(byProduct([[p1.id, "One", 1], [p2.id, "Two", 1]]))
    expect((await a.get(`/reports/certificates?issued_before=${encodeURIComponent(issued[1]!)}`)).body.data).toEqual(byProduct([[p1.id, "One", 1]]))
    // Any offset is accepted: the same instant in -03:00.
    const offset = new Date(Date.parse(issued[2]!) - 3 * 3_600_000).toISOString().replace("Z", "-03:00")
    expect((await a.get(`/reports/certificates?issued_after=${encodeURIComponent(offset)}`)).body.data).toEqual(byProduct([[p1.id, "One", 1], [p2.id, "Two", 1]]))
    expectError(await a.get(range(issued[3]!, issued[1]!)), 422, "validation_failed", { parameter: "issued_before", reason: "empty_range" })
    expectError(await a.get("/reports/certificates?issued_after=yesterday"), 422, "validation_failed", { parameter: "issued_after" })
    // The cursor is bound to the range.
    const page = await a.get("/reports/certificates?limit=1")
    expectError(await a.get(`${range(issued[0]!, issued[3]!)}&cursor=${encodeURIComponent(page.body.page.next_cursor)}`), 400, "invalid_cursor")
  })
})
