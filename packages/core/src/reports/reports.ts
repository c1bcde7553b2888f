/**
 * The reports of §4.4 that read the learning records (docs/reports.md). Every figure is computed
 * by the store (`Records.aggregate`: one SQL statement on PostgreSQL, a fold over an index's
 * entries in memory), never by loading a collection here; what this module does per row is
 * bounded by the page (at most 200 rows: a name read by ID, a rate from two counts).
 *
 * - A report over a resource (products, exams) pages that resource through its own index, in
 *   ID order, then aggregates the records of the page's IDs in one read (`in` on an indexed
 *   field): a product without enrollments has its row, with zeros.
 * - The products and lessons reports read figures kept with every write of the enrollments and
 *   the progress (`figures.ts`): a page of groups reads a few figure records per group, not the
 *   millions of records a popular course holds.
 * - A report over groups (certificates per product, rankings per products) pages the groups
 *   themselves, ordered by the store (`AggregateQuery.order`, `after`, `limit`).
 * - The ranking without products reads the balances' own index (`balance`, highest first).
 * - Personal columns (a learner's name and email) are null unless the caller holds
 *   `users.read_personal` (for that user, when the grant is resource-limited).
 * - Pages go forward only (`page.ts`).
 */
import { Effect, Option } from "effect"
import { Caller } from "../access/context.js"
import { allows } from "../access/policies.js"
import { reachAlternatives, reachOf, reaches } from "../access/scope.js"
import { apiError, readUnavailable } from "../errors/errors.js"
import { CERTIFICATE_TYPE } from "../learning/certificates.js"
import { ENROLLMENT_TYPE } from "../learning/enrollments.js"
import { EXAM_ATTEMPT_TYPE, EXAM_TYPE } from "../learning/exams.js"
import { LESSON_PROGRESS_TYPE } from "../learning/progress.js"
import { POINT_BALANCE_TYPE, POINT_ENTRY_TYPE } from "../learning/gamification.js"
import { READ_PERSONAL } from "../access/scope.js"
import { type AccessPath, type AggregateQuery, type AggregateRow, type Json, type JsonObject, listPath, Records, type StoredRecord, type Where } from "../ports/store.js"
import { type KeptFigures } from "../records/kept-figures.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"
import { ENROLLMENT_FIGURES, figuresAccessPaths, LESSON_PROGRESS_FIGURES, SALES_PRODUCT_FIGURES } from "./figures.js"
import { type ReportDescription, reportCatalog } from "./catalog.js"
import { type ReportPage, reportCursors } from "./page.js"
import { listReached } from "../records/pagination.js"

const PRODUCT_TYPE = "product"
const LESSON_TYPE = "lesson"
const USER_TYPE = "user"

/**
 * The reads of the reports, each an index of the store: the records a report aggregates, by the
 * field its `in` or range selects them on; the resources it pages, in ID order.
 */
export const reportsAccessPaths: ReadonlyArray<AccessPath> = [
  // Rankings per products: the ledger's entries of some products, grouped by learner.
  listPath(POINT_ENTRY_TYPE, ["product_id"], [{ field: "user_id", kind: "text" }]),
  // Products and lessons: the kept figures of a page of products or lessons (`figures.ts`).
  ...figuresAccessPaths,
  // Exams: every exam not trashed, in ID order, across products. (Those of some products are
  // read through the exams' own path, product first; the attempts of a page of exams through
  // the attempts' own path, exam first; the products in ID order through the products' own.)
  listPath(EXAM_TYPE, ["deleted"], [{ field: "id", kind: "text" }]),
  // (The lessons of a product are read through the lessons' own path, product first.)
  // Users: the enrollments and certificates of a page of users. (The users in ID order are
  // read through the users' own path.)
  listPath(ENROLLMENT_TYPE, ["user_id"], [{ field: "id", kind: "text" }]),
  listPath(CERTIFICATE_TYPE, ["user_id"], [{ field: "id", kind: "text" }]),
  // Activity: each kind of record by its instant, newest first, within a range.
  listPath(ENROLLMENT_TYPE, [], [{ field: "created_at", kind: "text" }]),
  listPath(LESSON_PROGRESS_TYPE, [], [{ field: "updated_at", kind: "text" }]),
  listPath(EXAM_ATTEMPT_TYPE, [], [{ field: "submitted_at", kind: "text" }]),
  // Certificates: those issued in a range (and the activity's certificates, newest first).
  listPath(CERTIFICATE_TYPE, [], [{ field: "issued_at", kind: "text" }])
]

export interface ReportRows {
  readonly data: ReadonlyArray<JsonObject>
  readonly page: ReportPage
}

const round2 = (value: number | null): number | null => (value === null ? null : Math.round(value * 100) / 100)
const asNumber = (value: number | null | undefined): number => value ?? 0

const byId = { field: "id", kind: "text", direction: "asc" } as const

// ---------------------------------------------------------------------------------------
// The catalog

/**
 * `GET /reports`: the catalog, static. Columns of personal data are listed only to a caller
 * holding `users.read_personal` (§4.4).
 */
export const listReports = Effect.fn("Reports.catalog")(function* () {
  const caller = yield* Caller
  const personal = caller.grant.get(READ_PERSONAL) !== undefined
  return reportCatalog.map((report: ReportDescription): JsonObject => ({
    object: "report",
    id: report.id,
    path: report.path,
    title: report.title,
    description: report.description,
    filters: report.filters.map((f) => ({
      name: f.name,
      type: f.type,
      required: f.required,
      deprecated: f.deprecated === true,
      description: f.description
    })),
    columns: report.columns
      .filter((c) => personal || !c.personal)
      .map((c) => ({ name: c.name, type: c.type, nullable: c.nullable, personal: c.personal, description: c.description })),
    source: [...report.source],
    freshness: report.freshness,
    order: report.order,
    paginated: report.paginated
  }))
})

// ---------------------------------------------------------------------------------------
// Helpers

/** The capability of every report (§4.4). */
export const REPORTS_READ = "reports.read"

/**
 * What the caller's `reports.read` reaches (access/scope.ts): every record, or the records
 * anchored on these IDs. A report over products, exams or lessons shows those of reached
 * products; over learners, reached users; its activity, what belongs to either.
 */
const reportReach = Effect.map(Caller, (caller) => reachOf(caller.grant, REPORTS_READ))

/** `ids` limited to what the reach names (all of them for an unlimited one), sorted. */
const reachedIds = (reach: "all" | ReadonlySet<string>, ids: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(reach === "all" ? ids : ids.filter((id) => reach.has(id)))].sort()

/** Records of `type` by ID, for the rows of one page: one read by primary key. */
const recordsById = (type: string, ids: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const found = ids.length === 0
      ? []
      : yield* records.getMany(caller.tenant, type, ids).pipe(Effect.mapError(readUnavailable))
    return new Map<string, StoredRecord>(found.map((record) => [record.id, record]))
  })

const aggregate = (type: string, query: AggregateQuery) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records.aggregate(caller.tenant, type, query).pipe(Effect.mapError(readUnavailable))
  })

const text = (value: Json | undefined): string | null => (typeof value === "string" ? value : null)

/**
 * The kept figures (`figures.ts`) of the groups `ids` (a page: products, lessons), each summed
 * over its shards by the store: per group, per measure.
 */
export const figuresOf = (figures: KeptFigures, ids: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const names = Object.keys(figures.measures)
    const groups = ids.length === 0 ? [] : yield* aggregate(figures.type, {
      where: [{ field: figures.groupBy, op: "in", values: ids }],
      groupBy: [figures.groupBy],
      measures: names.map((field) => ({ kind: "sum", field }))
    })
    return new Map(groups.map((group) => [
      text(group.key[0]),
      Object.fromEntries(names.map((name, i) => [name, group.values[i] ?? 0])) as Readonly<Record<string, number>>
    ]))
  })

/** A sum over a count, two decimals; `null` over nothing. */
const average = (sum: number | undefined, count: number | undefined): number | null =>
  count === undefined || count === 0 ? null : round2((sum ?? 0) / count)

/**
 * A page of a resource in ID order (products, exams), not trashed, optionally of some products:
 * `limit + 1` rows read to know whether another page follows.
 */
const resourcePage = (type: string, where: ReadonlyArray<Where>, after: string | null, limit: number) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const rows = yield* records
      .list(caller.tenant, type, {
        where: [{ field: "deleted", op: "eq", value: false }, ...where],
        sort: byId,
        after: after === null ? undefined : { value: after, id: after },
        limit: limit + 1
      })
      .pipe(Effect.mapError(readUnavailable))
    return { items: rows.slice(0, limit), more: rows.length > limit }
  })

/**
 * The page of the products named (at most 100, sorted), after `after`, not trashed: read by ID,
 * as the page of `resourcePage` would give them.
 */
const productsNamed = (ids: ReadonlyArray<string>, after: string | null, limit: number) =>
  Effect.gen(function* () {
    const rest = ids.filter((id) => after === null || id > after)
    const found = yield* recordsById(PRODUCT_TYPE, rest)
    const live = rest.flatMap((id) => {
      const record = found.get(id)
      return record === undefined || record.data.deleted === true ? [] : [record]
    })
    return { items: live.slice(0, limit), more: live.length > limit }
  })

// ---------------------------------------------------------------------------------------
// Rankings

export interface RankingsInput {
  /** `product_id[]` and the deprecated `product_id` together, each once; empty: the balances. */
  readonly productIds: ReadonlyArray<string>
  readonly limit: number
  readonly cursor: string | undefined
}

/** `GET /reports/rankings`: learners by points (`RANKINGS_REPORT`). */
export const rankingsReport = Effect.fn("Reports.rankings")(function* (input: RankingsInput) {
  const caller = yield* Caller
  const records = yield* Records
  const reach = yield* reportReach
  const asked = [...new Set(input.productIds)].sort()
  // A limited credential ranks over the products it reaches (those it names, or all of them).
  const productIds = reach === "all" ? asked : reachedIds(reach, asked.length > 0 ? asked : [...reach])
  const cursors = yield* reportCursors("rankings", { product_id: asked })
  const position = yield* cursors.read(input.cursor)
  let ranked: ReadonlyArray<{ readonly userId: string; readonly points: number }>
  let more: boolean
  if (reach !== "all" && productIds.length === 0) {
    more = false
    ranked = []
  } else if (productIds.length === 0) {
    // The balances' index, highest first (ties by user ID, last first: the balance's ID is the user's).
    const rows = yield* records
      .list(caller.tenant, POINT_BALANCE_TYPE, {
        where: [],
        sort: { field: "balance", kind: "number", direction: "desc" },
        after: position === undefined ? undefined : { value: position.v, id: position.k ?? "" },
        limit: input.limit + 1
      })
      .pipe(Effect.mapError(readUnavailable))
    more = rows.length > input.limit
    ranked = rows.slice(0, input.limit).map((row) => ({
      userId: row.id,
      points: typeof row.data.balance === "number" ? row.data.balance : 0
    }))
  } else {
    const groups = yield* aggregate(POINT_ENTRY_TYPE, {
      where: [{ field: "product_id", op: "in", values: productIds }],
      groupBy: ["user_id"],
      measures: [{ kind: "sum", field: "points" }],
      order: { measure: 0, direction: "desc" },
      after: position === undefined ? undefined : { value: typeof position.v === "number" ? position.v : 0, key: [position.k] },
      limit: input.limit + 1
    })
    more = groups.length > input.limit
    ranked = groups.slice(0, input.limit).flatMap((group) => {
      const userId = text(group.key[0])
      return userId === null ? [] : [{ userId, points: asNumber(group.values[0]) }]
    })
  }
  const users = yield* recordsById(USER_TYPE, ranked.map((row) => row.userId))
  const before = position?.n ?? 0
  const data = ranked.map((row, i): JsonObject => {
    const user = users.get(row.userId)
    const shown = user !== undefined && allows(caller.grant, READ_PERSONAL, row.userId)
    return {
      position: before + i + 1,
      user_id: row.userId,
      user_name: shown ? text(user.data.name) : null,
      user_email: shown ? text(user.data.email) : null,
      points: row.points
    }
  })
  const last = ranked.at(-1)
  const next = more && last !== undefined
    ? cursors.write({ v: last.points, k: last.userId, n: before + ranked.length })
    : null
  return { data, page: { limit: input.limit, next_cursor: next, prev_cursor: null } } satisfies ReportRows
})

// ---------------------------------------------------------------------------------------
// Products

export interface ProductsInput {
  readonly productIds: ReadonlyArray<string>
  readonly limit: number
  readonly cursor: string | undefined
}

/** `GET /reports/products`: per product, its enrollments and its sales (`PRODUCTS_REPORT`). */
export const productsReport = Effect.fn("Reports.products")(function* (input: ProductsInput) {
  const reach = yield* reportReach
  const asked = [...new Set(input.productIds)].sort()
  const cursors = yield* reportCursors("products", { product_id: asked })
  const position = yield* cursors.read(input.cursor)
  const { items, more } = reach === "all" && asked.length === 0
    ? yield* resourcePage(PRODUCT_TYPE, [], position?.k ?? null, input.limit)
    : yield* productsNamed(reachedIds(reach, asked.length > 0 ? asked : [...(reach as ReadonlySet<string>)]), position?.k ?? null, input.limit)
  const ids = items.map((item) => item.id)
  const groups = yield* figuresOf(ENROLLMENT_FIGURES, ids)
  const sales = yield* figuresOf(SALES_PRODUCT_FIGURES, ids)
  const data = items.map((product): JsonObject => {
    const figures = groups.get(product.id)
    const sold = sales.get(product.id)
    return {
      product_id: product.id,
      product_name: text(product.data.name) ?? "",
      enrollments: figures?.enrollments ?? 0,
      active: figures?.active ?? 0,
      expired: figures?.expired ?? 0,
      canceled: figures?.canceled ?? 0,
      completed: figures?.completed ?? 0,
      average_progress_percent: average(figures?.averaged_percent, figures?.averaged),
      sales_approved: sold?.sales_approved ?? 0,
      sales_refunded: sold?.sales_refunded ?? 0,
      funnel_conversions: sold?.funnel_conversions ?? 0
    }
  })
  const last = items.at(-1)
  const next = more && last !== undefined ? cursors.write({ v: null, k: last.id, n: 0 }) : null
  return { data, page: { limit: input.limit, next_cursor: next, prev_cursor: null } } satisfies ReportRows
})

// ---------------------------------------------------------------------------------------
// Exams

/** `GET /reports/exams`: per exam, its attempts (`EXAMS_REPORT`). */
export const examsReport = Effect.fn("Reports.exams")(function* (input: ProductsInput) {
  const reach = yield* reportReach
  const asked = [...new Set(input.productIds)].sort()
  const cursors = yield* reportCursors("exams", { product_id: asked })
  const position = yield* cursors.read(input.cursor)
  const productIds = reach === "all" ? asked : reachedIds(reach, asked.length > 0 ? asked : [...reach])
  const where: ReadonlyArray<Where> = reach === "all" && productIds.length === 0 ? [] : [{ field: "product_id", op: "in", values: productIds }]
  const { items, more } = reach !== "all" && productIds.length === 0
    ? { items: [], more: false }
    : yield* resourcePage(EXAM_TYPE, where, position?.k ?? null, input.limit)
  const ids = items.map((item) => item.id)
  const groups = ids.length === 0 ? [] : yield* aggregate(EXAM_ATTEMPT_TYPE, {
    where: [{ field: "exam_id", op: "in", values: ids }],
    groupBy: ["exam_id"],
    measures: [
      { kind: "count" },
      { kind: "count", filter: [{ field: "passed", op: "eq", value: true }] },
      { kind: "avg", field: "grade" }
    ]
  })
  const byExam = new Map(groups.map((group) => [text(group.key[0]), group.values]))
  const data = items.map((exam): JsonObject => {
    const values = byExam.get(exam.id) ?? []
    const attempts = asNumber(values[0])
    const passed = asNumber(values[1])
    return {
      exam_id: exam.id,
      product_id: text(exam.data.product_id) ?? "",
      exam_title: text(exam.data.title) ?? "",
      attempts,
      passed,
      pass_rate: attempts === 0 ? null : round2((passed / attempts) * 100),
      average_grade: attempts === 0 ? null : round2(values[2] ?? null)
    }
  })
  const last = items.at(-1)
  const next = more && last !== undefined ? cursors.write({ v: null, k: last.id, n: 0 }) : null
  return { data, page: { limit: input.limit, next_cursor: next, prev_cursor: null } } satisfies ReportRows
})

// ---------------------------------------------------------------------------------------
// Certificates

export interface CertificatesInput {
  readonly issuedAfter: string | undefined
  readonly issuedBefore: string | undefined
  readonly limit: number
  readonly cursor: string | undefined
}

const instant = (value: string | undefined): string | undefined =>
  value === undefined ? undefined : Option.match(parseTimestamp(value), { onNone: () => value, onSome: formatTimestamp })

/** `GET /reports/certificates`: per product, the certificates issued in a range (`CERTIFICATES_REPORT`). */
export const certificatesReport = Effect.fn("Reports.certificates")(function* (input: CertificatesInput) {
  const after = instant(input.issuedAfter)
  const before = instant(input.issuedBefore)
  if (after !== undefined && before !== undefined && after >= before) {
    return yield* Effect.fail(
      apiError("validation_failed", { details: [{ parameter: "issued_before", code: "invalid_value", reason: "empty_range" }] })
    )
  }
  const cursors = yield* reportCursors("certificates", { issued_after: after ?? null, issued_before: before ?? null })
  const position = yield* cursors.read(input.cursor)
  const where: Array<Where> = []
  if (after !== undefined) where.push({ field: "issued_at", op: "gte", value: after })
  if (before !== undefined) where.push({ field: "issued_at", op: "lt", value: before })
  const reach = yield* reportReach
  if (reach !== "all") where.push({ field: "product_id", op: "in", values: reachedIds(reach, [...reach]) })
  const groups = reach !== "all" && reach.size === 0 ? [] : yield* aggregate(CERTIFICATE_TYPE, {
    where,
    groupBy: ["product_id"],
    measures: [{ kind: "count" }],
    after: position === undefined ? undefined : { value: 0, key: [position.k] },
    limit: input.limit + 1
  })
  const page = groups.slice(0, input.limit)
  const products = yield* recordsById(PRODUCT_TYPE, page.flatMap((group) => text(group.key[0]) ?? []))
  const data = page.map((group): JsonObject => {
    const productId = text(group.key[0])
    const product = productId === null ? undefined : products.get(productId)
    return {
      product_id: productId ?? "",
      product_name: product === undefined || product.data.deleted === true ? null : text(product.data.name),
      issued: asNumber(group.values[0])
    }
  })
  const last = page.at(-1)
  const next = groups.length > input.limit && last !== undefined
    ? cursors.write({ v: null, k: text(last.key[0]), n: 0 })
    : null
  return { data, page: { limit: input.limit, next_cursor: next, prev_cursor: null } } satisfies ReportRows
})

// ---------------------------------------------------------------------------------------
// Lessons

export interface LessonsInput {
  readonly productId: string
  readonly limit: number
  readonly cursor: string | undefined
}

/** `GET /reports/lessons`: per lesson of a product, the learners' progress (`LESSONS_REPORT`). */
export const lessonsReport = Effect.fn("Reports.lessons")(function* (input: LessonsInput) {
  const caller = yield* Caller
  const records = yield* Records
  const product = yield* records.get(caller.tenant, PRODUCT_TYPE, input.productId).pipe(Effect.mapError(readUnavailable))
  // A product out of reach is answered as a missing one.
  if (product === undefined || product.data.deleted === true || !reaches(caller.grant, REPORTS_READ, [product.id])) {
    return yield* Effect.fail(
      apiError("validation_failed", { details: [{ parameter: "product_id", code: "invalid_value", reason: "not_found" }] })
    )
  }
  const cursors = yield* reportCursors("lessons", { product_id: input.productId })
  const position = yield* cursors.read(input.cursor)
  const { items, more } = yield* resourcePage(
    LESSON_TYPE,
    [{ field: "product_id", op: "eq", value: input.productId }],
    position?.k ?? null,
    input.limit
  )
  const ids = items.map((item) => item.id)
  const groups = yield* figuresOf(LESSON_PROGRESS_FIGURES, ids)
  const data = items.map((lesson): JsonObject => {
    const figures = groups.get(lesson.id)
    return {
      lesson_id: lesson.id,
      module_id: text(lesson.data.module_id) ?? "",
      lesson_name: text(lesson.data.name) ?? "",
      status: text(lesson.data.status) ?? "",
      started: figures?.started ?? 0,
      in_progress: figures?.in_progress ?? 0,
      completed: figures?.completed ?? 0,
      average_percent: average(figures?.started_percent, figures?.started)
    }
  })
  const last = items.at(-1)
  const next = more && last !== undefined ? cursors.write({ v: null, k: last.id, n: 0 }) : null
  return { data, page: { limit: input.limit, next_cursor: next, prev_cursor: null } } satisfies ReportRows
})

// ---------------------------------------------------------------------------------------
// Users

/** `GET /reports/users`: per user, their enrollments, certificates and points (`USERS_REPORT`). */
export const usersReport = Effect.fn("Reports.users")(function* (input: { readonly limit: number; readonly cursor: string | undefined }) {
  const caller = yield* Caller
  const cursors = yield* reportCursors("users", {})
  const position = yield* cursors.read(input.cursor)
  const reach = yield* reportReach
  const { items, more } = reach === "all"
    ? yield* resourcePage(USER_TYPE, [], position?.k ?? null, input.limit)
    : yield* resourcePage(USER_TYPE, [{ field: "id", op: "in", values: reachedIds(reach, [...reach]) }], position?.k ?? null, input.limit)
  const ids = items.map((item) => item.id)
  const byUser = (groups: ReadonlyArray<AggregateRow>): ReadonlyMap<string | null, ReadonlyArray<number | null>> =>
    new Map(groups.map((group) => [text(group.key[0]), group.values]))
  const enrollments = ids.length === 0 ? new Map<string | null, ReadonlyArray<number | null>>() : byUser(
    yield* aggregate(ENROLLMENT_TYPE, {
      where: [{ field: "user_id", op: "in", values: ids }],
      groupBy: ["user_id"],
      measures: [
        { kind: "count" },
        { kind: "count", filter: [{ field: "status", op: "eq", value: "active" }] },
        { kind: "count", filter: [{ field: "completed_at", op: "gte", value: "" }] }
      ]
    })
  )
  const certificates = ids.length === 0 ? new Map<string | null, ReadonlyArray<number | null>>() : byUser(
    yield* aggregate(CERTIFICATE_TYPE, {
      where: [{ field: "user_id", op: "in", values: ids }],
      groupBy: ["user_id"],
      measures: [{ kind: "count" }]
    })
  )
  const balances = yield* recordsById(POINT_BALANCE_TYPE, ids)
  const data = items.map((user): JsonObject => {
    const shown = allows(caller.grant, READ_PERSONAL, user.id)
    const enrolled = enrollments.get(user.id) ?? []
    const balance = balances.get(user.id)?.data.balance
    return {
      user_id: user.id,
      user_name: shown ? text(user.data.name) : null,
      user_email: shown ? text(user.data.email) : null,
      enrollments: asNumber(enrolled[0]),
      active_enrollments: asNumber(enrolled[1]),
      completed_enrollments: asNumber(enrolled[2]),
      certificates: asNumber((certificates.get(user.id) ?? [])[0]),
      points: typeof balance === "number" ? balance : 0
    }
  })
  const last = items.at(-1)
  const next = more && last !== undefined ? cursors.write({ v: null, k: last.id, n: 0 }) : null
  return { data, page: { limit: input.limit, next_cursor: next, prev_cursor: null } } satisfies ReportRows
})

// ---------------------------------------------------------------------------------------
// Activity

export interface ActivityInput {
  readonly occurredAfter: string | undefined
  readonly occurredBefore: string | undefined
  readonly limit: number
  readonly cursor: string | undefined
}

/** The kinds of activity, each a record type read by its instant's index. */
const activitySources: ReadonlyArray<{ readonly kind: string; readonly type: string; readonly at: string }> = [
  { kind: "enrollment", type: ENROLLMENT_TYPE, at: "created_at" },
  { kind: "lesson_progress", type: LESSON_PROGRESS_TYPE, at: "updated_at" },
  { kind: "exam_attempt", type: EXAM_ATTEMPT_TYPE, at: "submitted_at" },
  { kind: "certificate", type: CERTIFICATE_TYPE, at: "issued_at" }
]

/**
 * `GET /reports/activity`: what learners did, newest first (`ACTIVITY_REPORT`). Each kind is read
 * through the index of its instant, a page of it after the position (instant, record ID), and
 * the pages are merged: at most `limit + 1` records of each kind, whatever the history.
 */
export const activityReport = Effect.fn("Reports.activity")(function* (input: ActivityInput) {
  const caller = yield* Caller
  const records = yield* Records
  const after = instant(input.occurredAfter)
  const before = instant(input.occurredBefore)
  if (after !== undefined && before !== undefined && after >= before) {
    return yield* Effect.fail(
      apiError("validation_failed", { details: [{ parameter: "occurred_before", code: "invalid_value", reason: "empty_range" }] })
    )
  }
  const cursors = yield* reportCursors("activity", { occurred_after: after ?? null, occurred_before: before ?? null })
  const position = yield* cursors.read(input.cursor)
  const found: Array<{ readonly kind: string; readonly at: string; readonly record: StoredRecord }> = []
  // A limited credential sees what belongs to the products and learners it reaches.
  const reach = reachAlternatives(yield* reportReach, ["product_id", "user_id"])
  for (const source of activitySources) {
    const where: Array<Where> = []
    if (after !== undefined) where.push({ field: source.at, op: "gte", value: after })
    if (before !== undefined) where.push({ field: source.at, op: "lt", value: before })
    const page = yield* listReached(caller.tenant, source.type, reach, {
      where,
      sort: { field: source.at, kind: "text", direction: "desc" },
      after: position === undefined ? undefined : { value: position.v, id: position.k ?? "" },
      limit: input.limit + 1
    }).pipe(Effect.mapError(readUnavailable))
    for (const record of page) {
      const at = text(record.data[source.at])
      // A record without its instant sorts last (null), and is no activity.
      if (at !== null) found.push({ kind: source.kind, at, record })
    }
  }
  // Newest first, ties by record ID last first: the order of each page.
  found.sort((x, y) => (x.at !== y.at ? (x.at < y.at ? 1 : -1) : x.record.id < y.record.id ? 1 : -1))
  const page = found.slice(0, input.limit)
  const enrollments = yield* recordsById(
    ENROLLMENT_TYPE,
    page.flatMap((item) => (item.kind === "lesson_progress" ? [String(item.record.data.enrollment_id)] : []))
  )
  const owner = (item: (typeof page)[number]) => {
    if (item.kind !== "lesson_progress") return { userId: text(item.record.data.user_id), productId: text(item.record.data.product_id) }
    const enrollment = enrollments.get(String(item.record.data.enrollment_id))
    return { userId: text(enrollment?.data.user_id), productId: text(enrollment?.data.product_id) }
  }
  const users = yield* recordsById(USER_TYPE, page.flatMap((item) => owner(item).userId ?? []))
  const data = page.map((item): JsonObject => {
    const { productId, userId } = owner(item)
    const user = userId === null ? undefined : users.get(userId)
    const shown = user !== undefined && userId !== null && allows(caller.grant, READ_PERSONAL, userId)
    return {
      occurred_at: item.at,
      kind: item.kind,
      resource_id: item.record.id,
      user_id: userId,
      user_name: shown ? text(user.data.name) : null,
      product_id: productId,
      subject_id: item.kind === "lesson_progress"
        ? text(item.record.data.lesson_id)
        : item.kind === "exam_attempt"
        ? text(item.record.data.exam_id)
        : null
    }
  })
  const last = page.at(-1)
  const next = found.length > input.limit && last !== undefined ? cursors.write({ v: last.at, k: last.record.id, n: 0 }) : null
  return { data, page: { limit: input.limit, next_cursor: next, prev_cursor: null } } satisfies ReportRows
})
