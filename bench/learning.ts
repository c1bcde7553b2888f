/**
 * Progress writes and learning reads at scale (issue 13), on PostgreSQL, over HTTP.
 *
 *   node --import tsx bench/learning.ts --users 100000 --enrollments 200000 --progress 10000000 \
 *     --products 20 --lessons 50 --other 10000x20000x1000000 --samples 50 [--json file]
 *
 * Two runs of the same code, one after the other, each on a fresh database (`bench/pg.ts`,
 * dropped at the end): the BASELINE (`--baseline`, by default 1,000 users, 2,000 enrollments,
 * 1,000 progress rows, no other tenant) and the LARGE one (the sizes above). Ratios are each
 * measurement's p50 (and p95) at scale over the same measurement in the baseline.
 *
 * A run:
 * - opens the accounts through the product (`openAccount`), starts the server child
 *   (`bench/scale-server.ts`: the standalone server's `pgLayer`, rate limits off) and makes
 *   through the API, per account, a showcase, `--products` products, each with 5 modules and
 *   `--lessons` published lessons, and an exam of two questions in the first product;
 * - loads in bulk (`bench/learning-data.ts`, SQL `INSERT … SELECT generate_series`, unique keys in
 *   the same statement) the users of `bench/scale-data.ts`, the enrollments and the
 *   `lesson_progress` rows, with every access-path index in place (they are partial indexes
 *   per type: the other types' cost nothing), then `ANALYZE`; checks samples of the SQL rows
 *   against the TypeScript generator and the key set of each record type against a record the
 *   API wrote in the same database (a `POST /enrollments` and its first progress PUT);
 * - adds a `lesson_completed` gamification rule (10 points, every product), so a completing
 *   PUT awards points as in production;
 * - measures, one request at a time over keep-alive HTTP, each on `--warmup` + `--samples`
 *   different targets (enrollments, users, products spread over the load):
 *   - `PUT /enrollments/{id}/progress/lessons/{id}` `{status: completed}`: a first write (an
 *     enrollment made just before through the API, one lesson each) and an update (a seeded
 *     enrollment's first `in_progress` row);
 *   - `GET /enrollments/{id}/progress?limit=10`: the first page, and the third (its cursor from
 *     the second, fetched untimed);
 *   - `GET /enrollments?user_id=…`;
 *   - `GET /enrollments?product_id[]=…&status=active`: the first page, and a deep page (a cursor
 *     the server issued, moved to the middle of the product's enrollments and signed again by the
 *     server over IPC, as `bench/scale.ts` does);
 *   - `GET /users/{id}/points`;
 *   - `POST /products/{id}/exams/{id}/attempts` with every answer right (passed);
 *   - when the build serves `GET /reports` (and without `--no-reports`), the first page of each
 *     report (`products`, with and without `product_id[]`, `lessons` of a product, `users`,
 *     `rankings` with and without `product_id[]`, `exams`, `certificates`, `activity`).
 *   `GET /credentials/current` before and after, as the trivial authenticated route.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { enrollments, type ListQuery, resourceSort, type Tenant, type Where } from "@syllabus/core"
import { aggregateStatement, listStatement } from "@syllabus/pg"
import { Effect, Exit, type ManagedRuntime, Scope } from "effect"
import { randomUUID } from "node:crypto"
import { writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { parseArgs } from "node:util"
import {
  completedOf,
  type Course,
  courseTablesSql,
  enrollmentData,
  enrollmentId,
  enrollmentRevision,
  enrollmentsSql,
  figuresCheckSql,
  figuresSql,
  isCanceled,
  type LearningSizes,
  productOf,
  progressData,
  progressSql,
  rowsOf,
  userKeysSql,
  userOf
} from "./learning-data.js"
import { freshDatabase } from "./pg.js"
import { createIdFunctionSql, userId, usersSql } from "./scale-data.js"
import {
  agent,
  canonical,
  type Child,
  fmt,
  log,
  movedCursor,
  nextCursorOf,
  type OpenedAccount,
  openAccounts,
  quantile,
  type Response,
  send,
  sqlRuntime,
  startChild
} from "./scale-support.js"

const { values: args } = parseArgs({
  options: {
    users: { type: "string", default: "100000" },
    enrollments: { type: "string", default: "200000" },
    progress: { type: "string", default: "10000000" },
    products: { type: "string", default: "20" },
    lessons: { type: "string", default: "50" },
    other: { type: "string", default: "10000x20000x1000000" },
    baseline: { type: "string", default: "1000x2000x1000" },
    samples: { type: "string", default: "50" },
    warmup: { type: "string", default: "3" },
    chunk: { type: "string", default: "2000" },
    "skip-baseline": { type: "boolean", default: false },
    "no-reports": { type: "boolean", default: false },
    "report-samples": { type: "string", default: "20" },
    json: { type: "string" }
  }
})

const parseSizes = (text: string, flag: string): LearningSizes => {
  const m = /^(\d+)x(\d+)x(\d+)$/.exec(text)
  if (!m) throw new Error(`${flag}: expected <users>x<enrollments>x<progress>, got ${text}`)
  return { users: Number(m[1]), enrollments: Number(m[2]), progress: Number(m[3]) }
}

const large: LearningSizes = { users: Number(args.users), enrollments: Number(args.enrollments), progress: Number(args.progress) }
const other: LearningSizes | null = args.other === "none" ? null : parseSizes(args.other!, "--other")
const baselineSizes = parseSizes(args.baseline!, "--baseline")
const PRODUCTS = Number(args.products)
const LESSONS = Number(args.lessons)
const MODULES = 5
const samples = Number(args.samples)
const warmup = Number(args.warmup)
const chunk = Number(args.chunk)
const reportSamples = Number(args["report-samples"])

// ---------------------------------------------------------------------------------------
// The API-made part

const post = async (port: number, secret: string, path: string, json: unknown, status = 201) => {
  const res = await send(port, "POST", `/api/v3${path}`, secret, json, { "idempotency-key": randomUUID() })
  if (res.status !== status) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 400)}`)
  return res.body.data as Record<string, any>
}
const patch = async (port: number, secret: string, path: string, json: unknown) => {
  const res = await send(port, "PATCH", `/api/v3${path}`, secret, json)
  if (res.status !== 200) throw new Error(`PATCH ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 400)}`)
  return res.body.data as Record<string, any>
}

interface Exam {
  readonly path: string
  readonly answers: ReadonlyArray<{ exam_question_id: string; alternative_ids: ReadonlyArray<string> }>
}

/** A showcase, the products with their modules and published lessons, and an exam in the first product. */
const makeCourses = async (port: number, secret: string, products: number): Promise<{ productIds: Array<string>; lessons: Array<Array<{ id: string; module_id: string }>>; exam: Exam }> => {
  const showcase = await post(port, secret, "/showcases", { name: "Bench shelf" })
  const productIds: Array<string> = []
  const lessons: Array<Array<{ id: string; module_id: string }>> = []
  for (let p = 0; p < products; p++) {
    const product = await post(port, secret, "/products", { format: "course", name: `Bench course ${p + 1}`, showcase_id: showcase.id })
    productIds.push(String(product.id))
    const mine: Array<{ id: string; module_id: string }> = []
    for (let m = 0; m < MODULES; m++) {
      const module = await post(port, secret, `/products/${product.id}/modules`, { name: `Module ${m + 1}` })
      const inModule = Math.floor(LESSONS / MODULES) + (m < LESSONS % MODULES ? 1 : 0)
      for (let l = 0; l < inModule; l++) {
        const lesson = await post(port, secret, `/products/${product.id}/lessons`, { name: `Lesson ${m + 1}.${l + 1}`, module_id: module.id })
        await patch(port, secret, `/products/${product.id}/lessons/${lesson.id}`, { status: "published" })
        mine.push({ id: String(lesson.id), module_id: String(module.id) })
      }
    }
    lessons.push(mine)
  }
  const examPath = `/products/${productIds[0]}/exams`
  const exam = await post(port, secret, examPath, { title: "Bench exam" })
  const path = `${examPath}/${exam.id}`
  const single = await post(port, secret, `${path}/questions`, {
    text: "2 + 2?",
    format: "single_choice",
    alternatives: [{ text: "3" }, { text: "4", correct: true }, { text: "5" }]
  })
  const multiple = await post(port, secret, `${path}/questions`, {
    text: "Even numbers?",
    format: "multiple_choice",
    alternatives: [{ text: "2", correct: true }, { text: "4", correct: true }, { text: "5" }]
  })
  return {
    productIds,
    lessons,
    exam: {
      path,
      answers: [
        { exam_question_id: single.id, alternative_ids: [single.alternatives[1].id] },
        { exam_question_id: multiple.id, alternative_ids: [multiple.alternatives[0].id, multiple.alternatives[1].id] }
      ]
    }
  }
}

// ---------------------------------------------------------------------------------------
// The bulk load

type Sql = ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>
const execOn = (sql: Sql) => (text: string) =>
  sql.runPromise(Effect.flatMap(SqlClient.SqlClient, (s) => s.unsafe(text))) as Promise<ReadonlyArray<Record<string, any>>>

const jsonRows = (rows: ReadonlyArray<unknown>) => `'${JSON.stringify(rows).replaceAll("'", "''")}'::jsonb`

interface Load {
  readonly usersMs: number
  readonly enrollmentsMs: number
  readonly progressMs: number
  readonly figuresMs: number
  readonly analyzeMs: number
}

const load = async (exec: (text: string) => Promise<unknown>, account: OpenedAccount, course: Course, sizes: LearningSizes): Promise<Load> => {
  const a = course.accountIndex
  const t0 = performance.now()
  await exec(usersSql(account.accountId, a, 0, sizes.users))
  await exec(userKeysSql(account.accountId))
  for (let from = 0; from < course.userIds.length; from += 20_000) {
    const rows = course.userIds.slice(from, from + 20_000).map((id, k) => ({ a, u: from + k, id }))
    await exec(`INSERT INTO bench_users SELECT * FROM jsonb_to_recordset(${jsonRows(rows)}) AS r(a int, u int, id text)`)
  }
  const lessonRows = course.lessons.flatMap((ls, p) => ls.map((l, j) => ({ a, p, j, n: ls.length, product_id: course.productIds[p], id: l.id, module_id: l.module_id })))
  await exec(
    `INSERT INTO bench_lessons SELECT * FROM jsonb_to_recordset(${jsonRows(lessonRows)}) AS r(a int, p int, j int, n int, product_id text, id text, module_id text)`
  )
  const t1 = performance.now()
  log(`  account ${a}: ${sizes.users.toLocaleString("en")} users in ${((t1 - t0) / 1000).toFixed(1)} s`)
  const enrollmentChunk = 50_000
  for (let from = 0; from < sizes.enrollments; from += enrollmentChunk) {
    await exec(enrollmentsSql(account.accountId, a, sizes, course.productIds.length, from, Math.min(sizes.enrollments, from + enrollmentChunk)))
  }
  const t2 = performance.now()
  log(`  account ${a}: ${sizes.enrollments.toLocaleString("en")} enrollments in ${((t2 - t1) / 1000).toFixed(1)} s`)
  let reported = t2
  for (let from = 0; from < sizes.enrollments; from += chunk) {
    await exec(progressSql(account.accountId, a, sizes, course.productIds.length, from, Math.min(sizes.enrollments, from + chunk)))
    if (performance.now() - reported > 30_000) {
      reported = performance.now()
      const done = Math.floor((Math.min(sizes.enrollments, from + chunk) * sizes.progress) / sizes.enrollments)
      log(`    progress: ~${done.toLocaleString("en")} rows (${((reported - t2) / 1000).toFixed(0)} s)`)
    }
  }
  const t3 = performance.now()
  log(`  account ${a}: ${sizes.progress.toLocaleString("en")} progress rows in ${((t3 - t2) / 1000).toFixed(1)} s`)
  for (const statement of figuresSql(account.accountId)) await exec(statement)
  const t4 = performance.now()
  log(`  account ${a}: the reports' kept figures of the loaded rows in ${((t4 - t3) / 1000).toFixed(1)} s`)
  return { usersMs: t1 - t0, enrollmentsMs: t2 - t1, progressMs: t3 - t2, figuresMs: t4 - t3, analyzeMs: 0 }
}

/** The SQL rows must be the TypeScript ones, and each type's fields and keys those the API writes. */
/** A stored record with the names of its unique keys. */
const storedRecord = async (exec: (text: string) => Promise<ReadonlyArray<Record<string, any>>>, accountId: string, type: string, id: string) => {
  const rows = await exec(
    `SELECT r.revision, r.data, coalesce((SELECT json_agg(k.name ORDER BY k.name) FROM record_keys k WHERE (k.account_id, k.environment, k.type, k.id) = (r.account_id, r.environment, r.type, r.id)), '[]') AS keys
     FROM records r WHERE r.account_id = '${accountId}' AND r.environment = 'production' AND r.type = '${type}' AND r.id = '${id}'`
  )
  if (rows.length !== 1) throw new Error(`no ${type} ${id}`)
  return rows[0]!
}

type Stored = Awaited<ReturnType<typeof storedRecord>>

const verify = async (exec: (text: string) => Promise<ReadonlyArray<Record<string, any>>>, account: OpenedAccount, course: Course, sizes: LearningSizes, api: { enrollment: Stored; progress: Stored }) => {
  const recordOf = (type: string, id: string) => storedRecord(exec, account.accountId, type, id)
  const shape = (data: Record<string, unknown>) => Object.keys(data).sort().join(",")
  const apiEnrollment = api.enrollment
  const apiProgress = api.progress
  const n = sizes.enrollments
  for (const e of [0, 1, 19, 39, Math.floor(n / 2), n - 1].filter((e) => e < n)) {
    const lessons = course.lessons[productOf(e, sizes, course.productIds.length)]!.length
    const expected = enrollmentData(e, sizes, course)
    const stored = await recordOf("enrollment", String(expected.id))
    if (canonical(stored.data) !== canonical(expected)) throw new Error(`enrollment ${e}: SQL ${canonical(stored.data)}\n  vs TS ${canonical(expected)}`)
    if (stored.revision !== enrollmentRevision(e, sizes, lessons)) throw new Error(`enrollment ${e}: revision ${stored.revision}`)
    if (shape(stored.data) !== shape(apiEnrollment.data)) throw new Error(`enrollment fields ${shape(stored.data)}\n  vs the API's ${shape(apiEnrollment.data)}`)
    if (expected.status === "active" && canonical(stored.keys) !== canonical(apiEnrollment.keys)) throw new Error(`enrollment keys ${canonical(stored.keys)} vs ${canonical(apiEnrollment.keys)}`)
    const rows = rowsOf(e, sizes, lessons)
    for (const j of [0, completedOf(e, sizes, lessons), rows - 1].filter((j) => j >= 0 && j < rows)) {
      const row = progressData(e, j, sizes, course)
      const storedRow = await recordOf("lesson_progress", String(row.id))
      if (canonical(storedRow.data) !== canonical(row)) throw new Error(`progress ${e}/${j}: SQL ${canonical(storedRow.data)}\n  vs TS ${canonical(row)}`)
      if (shape(storedRow.data) !== shape(apiProgress.data)) throw new Error(`progress fields ${shape(storedRow.data)} vs the API's ${shape(apiProgress.data)}`)
      if (canonical(storedRow.keys) !== canonical(apiProgress.keys)) throw new Error(`progress keys ${canonical(storedRow.keys)} vs ${canonical(apiProgress.keys)}`)
    }
  }
  // The kept figures of a product and of a lesson: what the rows themselves count.
  const firstLesson = course.lessons[0]?.[0]
  if (firstLesson !== undefined) {
    for (const row of await exec(figuresCheckSql(account.accountId, course.productIds[0]!, firstLesson.id))) {
      if (row.kept_a !== row.counted_a || row.kept_b !== row.counted_b || row.kept_c !== row.counted_c) {
        throw new Error(`${row.type}: kept ${row.kept_a}/${row.kept_b}/${row.kept_c} vs counted ${row.counted_a}/${row.counted_b}/${row.counted_c}`)
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Measuring

interface Timing {
  readonly p50: number
  readonly p95: number
  readonly max: number
  readonly n: number
}

/** `warmup` + `samples` requests, each its own target; the warmup ones are not timed. */
const measure = (label: string, request: (k: number) => Promise<Response>, expected: number, count = samples): Promise<Timing | undefined> =>
  measureOnce(label, request, expected, count).catch((error) => {
    log(`  ${label}: FAILED ${String(error).slice(0, 400)}`)
    return undefined
  })

const measureOnce = async (label: string, request: (k: number) => Promise<Response>, expected: number, count: number): Promise<Timing> => {
  const times: Array<number> = []
  for (let k = 0; k < warmup + count; k++) {
    const r = await request(k)
    if (r.status !== expected) throw new Error(`${label} (#${k}): ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`)
    if (k >= warmup) times.push(r.ms)
  }
  times.sort((x, y) => x - y)
  const timing = { p50: quantile(times, 0.5), p95: quantile(times, 0.95), max: times.at(-1)!, n: times.length }
  log(`  ${label.padEnd(58)} p50 ${fmt(timing.p50).padStart(6)} ms  p95 ${fmt(timing.p95).padStart(6)} ms`)
  return timing
}

/** `count` enrollment indexes spread over the load, each the next one from its place that `ok` accepts. */
const spread = (sizes: LearningSizes, count: number, ok: (e: number) => boolean): Array<number> => {
  const out: Array<number> = []
  for (let k = 0; k < count; k++) {
    const start = Math.floor(((k + 0.5) * sizes.enrollments) / count)
    for (let d = 0; d < sizes.enrollments; d++) {
      const e = (start + d) % sizes.enrollments
      if (ok(e) && !out.includes(e)) {
        out.push(e)
        break
      }
    }
  }
  if (out.length < count) throw new Error(`only ${out.length} of ${count} targets`)
  return out
}

/** A user the API takes as a learner: not trashed (`scale-data`: one in 97). */
const liveUser = (u: number) => u % 97 !== 96

const measureAll = async (child: Child, account: OpenedAccount, course: Course, exam: Exam, sizes: LearningSizes) => {
  const port = child.ready.port
  const secret = account.secret
  const n = warmup + samples
  const P = course.productIds.length
  const lessonsOf = (e: number) => course.lessons[productOf(e, sizes, P)]!
  const eid = (e: number) => enrollmentId(e, course.accountIndex)
  const out: Record<string, Timing | undefined> = {}
  const baselinePath = "/api/v3/credentials/current"
  out["GET /credentials/current (before)"] = await measure("GET /credentials/current (before)", () => send(port, "GET", baselinePath, secret), 200)

  // A first write: fresh enrollments (through the API) of seeded users in a product they hold none in.
  const freshTargets = spread(sizes, n, (e) => e < sizes.users && liveUser(userOf(e, sizes)))
  const fresh: Array<{ id: string; lesson: string }> = []
  const spare = Math.ceil(sizes.enrollments / sizes.users) // products 0 … spare-1 after the user's own are taken
  if (spare >= P) throw new Error("--enrollments leaves no product free for a first write: raise --products")
  for (const [k, e] of freshTargets.entries()) {
    const u = userOf(e, sizes)
    const p = (u + P - 1) % P
    const enrollment = await post(port, secret, "/enrollments", { user_id: course.userIds[u], product_id: course.productIds[p] })
    fresh.push({ id: String(enrollment.id), lesson: course.lessons[p]![(k * 7) % course.lessons[p]!.length]!.id })
  }
  out["PUT progress, first write"] = await measure(
    "PUT …/progress/lessons/{id} first write {completed}",
    (k) => send(port, "PUT", `/api/v3/enrollments/${fresh[k]!.id}/progress/lessons/${fresh[k]!.lesson}`, secret, { status: "completed" }),
    200
  )
  // An update: a seeded active enrollment's first in-progress row, completed.
  const updates = spread(sizes, n, (e) => !isCanceled(e) && completedOf(e, sizes, lessonsOf(e).length) < rowsOf(e, sizes, lessonsOf(e).length))
  out["PUT progress, update"] = await measure(
    "PUT …/progress/lessons/{id} update in_progress→completed",
    (k) => {
      const e = updates[k]!
      const lesson = lessonsOf(e)[completedOf(e, sizes, lessonsOf(e).length)]!.id
      return send(port, "PUT", `/api/v3/enrollments/${eid(e)}/progress/lessons/${lesson}`, secret, { status: "completed" })
    },
    200
  )
  const readers = spread(sizes, n, (e) => rowsOf(e, sizes, lessonsOf(e).length) > 0 && liveUser(userOf(e, sizes)))
  out["GET progress, first page"] = await measure("GET /enrollments/{id}/progress?limit=10 (first page)", (k) => send(port, "GET", `/api/v3/enrollments/${eid(readers[k]!)}/progress?limit=10`, secret), 200)
  const thirdPages: Array<string> = []
  for (const e of readers) {
    let path = `/api/v3/enrollments/${eid(e)}/progress?limit=10`
    for (let page = 0; page < 2; page++) {
      const res = await send(port, "GET", path, secret)
      const cursor = nextCursorOf(res.body?.data)
      if (res.status !== 200 || cursor === null) throw new Error(`no page ${page + 2} of ${path}: ${res.status}`)
      path = `/api/v3/enrollments/${eid(e)}/progress?limit=10&cursor=${encodeURIComponent(cursor)}`
    }
    thirdPages.push(path)
  }
  out["GET progress, third page"] = await measure("GET /enrollments/{id}/progress?limit=10 (third page)", (k) => send(port, "GET", thirdPages[k]!, secret), 200)
  out["GET enrollments?user_id"] = await measure(
    "GET /enrollments?user_id=…",
    (k) => send(port, "GET", `/api/v3/enrollments?user_id=${course.userIds[userOf(readers[k]!, sizes)]}`, secret),
    200
  )
  const productPath = (p: number) => `/api/v3/enrollments?${new URLSearchParams([["product_id[]", course.productIds[p]!], ["status", "active"]]).toString()}`
  out["GET enrollments?product_id[]&status=active, first page"] = await measure(
    "GET /enrollments?product_id[]=…&status=active (first page)",
    (k) => send(port, "GET", productPath(k % P), secret),
    200
  )
  const twoProducts = (p: number) =>
    `/api/v3/enrollments?${new URLSearchParams([["product_id[]", course.productIds[p]!], ["product_id[]", course.productIds[(p + 1) % P]!], ["status", "active"]]).toString()}`
  out["GET enrollments?product_id[]=a&product_id[]=b&status=active, first page"] = await measure(
    "GET /enrollments?product_id[]=a&product_id[]=b&status=active",
    (k) => send(port, "GET", twoProducts(k % P), secret),
    200
  )
  // The deep page: from the product's active enrollment nearest the middle of the load (newest first).
  const deepPaths: Array<string> = []
  for (let k = 0; k < n; k++) {
    const p = k % P
    const first = await send(port, "GET", productPath(p), secret)
    const cursor = nextCursorOf(first.body)
    const [middle] = spread(sizes, 1, (e) => productOf(e, sizes, P) === p && !isCanceled(e))
    if (cursor === null || middle === undefined) throw new Error(`product ${p}: one page only`)
    deepPaths.push(`${productPath(p)}&cursor=${encodeURIComponent(await movedCursor(cursor, { v: eid(middle), i: eid(middle) }, child.sign))}`)
  }
  out["GET enrollments?product_id[]&status=active, deep page"] = await measure(
    "GET /enrollments?product_id[]=…&status=active (deep page)",
    async (k) => {
      const res = await send(port, "GET", deepPaths[k]!, secret)
      if (res.status === 200 && (res.body?.data?.length ?? 0) === 0) throw new Error(`empty deep page ${deepPaths[k]}`)
      return res
    },
    200
  )
  out["GET /users/{id}/points"] = await measure("GET /users/{id}/points", (k) => send(port, "GET", `/api/v3/users/${course.userIds[userOf(readers[k]!, sizes)]}/points`, secret), 200)
  const examinees = spread(sizes, n, (e) => productOf(e, sizes, P) === 0 && !isCanceled(e) && liveUser(userOf(e, sizes)))
  out["POST exam attempt (passed)"] = await measure(
    "POST /products/{id}/exams/{id}/attempts (passed)",
    (k) =>
      send(port, "POST", `/api/v3${exam.path}/attempts`, secret, { user_id: course.userIds[userOf(examinees[k]!, sizes)], answers: exam.answers }, {
        "idempotency-key": randomUUID()
      }),
    201
  )
  // The reports (§4.4), when this build serves them: each first page, rotating over products where one is named.
  const catalog = await send(port, "GET", "/api/v3/reports", secret)
  if (catalog.status === 200 && !args["no-reports"]) {
    const productQuery = (p: number) => new URLSearchParams([["product_id[]", course.productIds[p % P]!]]).toString()
    const reports: ReadonlyArray<readonly [string, (k: number) => string]> = [
      ["GET /reports/products", () => "/api/v3/reports/products"],
      ["GET /reports/products?product_id[]=…", (k) => `/api/v3/reports/products?${productQuery(k)}`],
      ["GET /reports/lessons?product_id=…", (k) => `/api/v3/reports/lessons?product_id=${course.productIds[k % P]}`],
      ["GET /reports/users", () => "/api/v3/reports/users"],
      ["GET /reports/rankings", () => "/api/v3/reports/rankings"],
      ["GET /reports/rankings?product_id[]=…", (k) => `/api/v3/reports/rankings?${productQuery(k)}`],
      ["GET /reports/exams", () => "/api/v3/reports/exams"],
      ["GET /reports/certificates", () => "/api/v3/reports/certificates"],
      ["GET /reports/activity", () => "/api/v3/reports/activity"]
    ]
    for (const [label, path] of reports) {
      out[label] = await measure(label, (k) => send(port, "GET", path(k), secret), 200, reportSamples)
    }
  } else log(`  GET /reports: ${catalog.status}, reports not measured`)
  out["GET /credentials/current (after)"] = await measure("GET /credentials/current (after)", () => send(port, "GET", baselinePath, secret), 200)
  return out
}

// ---------------------------------------------------------------------------------------
// The plans of the store's statements behind the measured requests

/**
 * `EXPLAIN (ANALYZE, BUFFERS)` of what `Records` runs for the reads that grow with the load:
 * the PUT's count of the enrollment's completed rows (the store's `count` is this `WHERE`; shown
 * through `aggregateStatement`, the exported statement with the same filter), the progress
 * page's rows, the enrollment lists. Each answer: the plan's lines.
 */
const explainAll = async (sql: Sql, tenant: Tenant, course: Course, sizes: LearningSizes) => {
  const P = course.productIds.length
  const [e] = spread(sizes, 1, (e) => !isCanceled(e) && rowsOf(e, sizes, course.lessons[productOf(e, sizes, P)]!.length) > 0)
  const [middle] = spread(sizes, 1, (x) => productOf(x, sizes, P) === 0 && !isCanceled(x))
  const id = enrollmentId(e!, course.accountIndex)
  const lessons = course.lessons[productOf(e!, sizes, P)]!.slice(10, 20).map((l) => l.id)
  const live: Where = { field: "deleted", op: "eq", value: false }
  const byNewest = resourceSort(enrollments, undefined)
  const lists: Record<string, { type: string; query: ListQuery }> = {
    "progress rows of a page (enrollment_id, lesson_id in 10)": {
      type: "lesson_progress",
      query: {
        where: [{ field: "enrollment_id", op: "eq", value: id }, { field: "lesson_id", op: "in", values: lessons }],
        sort: { field: "lesson_id", kind: "text", direction: "asc" },
        limit: lessons.length
      }
    },
    "enrollments?user_id": {
      type: "enrollment",
      query: { where: [live, ...enrollments.filters!["user_id"]!.where(course.userIds[userOf(e!, sizes)] as never)], sort: byNewest, limit: 51 }
    },
    "enrollments?product_id[]&status=active, first page": {
      type: "enrollment",
      query: {
        where: [live, ...enrollments.filters!["product_id[]"]!.where([course.productIds[0]!] as never), ...enrollments.filters!["status"]!.where("active" as never)],
        sort: byNewest,
        limit: 51
      }
    },
    "enrollments?product_id[]=a&product_id[]=b&status=active, first page": {
      type: "enrollment",
      query: {
        where: [live, ...enrollments.filters!["product_id[]"]!.where(course.productIds.slice(0, 2) as never), ...enrollments.filters!["status"]!.where("active" as never)],
        sort: byNewest,
        limit: 51
      }
    },
    "enrollments?product_id[]&status=active, deep page": {
      type: "enrollment",
      query: {
        where: [live, ...enrollments.filters!["product_id[]"]!.where([course.productIds[0]!] as never), ...enrollments.filters!["status"]!.where("active" as never)],
        sort: byNewest,
        after: { value: enrollmentId(middle!, course.accountIndex), id: enrollmentId(middle!, course.accountIndex) },
        limit: 51
      }
    }
  }
  return sql.runPromise(
    Effect.gen(function* () {
      const client = yield* SqlClient.SqlClient
      const plans: Record<string, string> = {}
      const explain = (statement: { compile: () => readonly [string, ReadonlyArray<unknown>] }) =>
        Effect.map(
          client.unsafe(`EXPLAIN (ANALYZE, BUFFERS) ${statement.compile()[0]}`, statement.compile()[1] as Array<unknown>),
          (rows) => (rows as ReadonlyArray<Record<string, string>>).map((r) => Object.values(r)[0]).join("\n")
        )
      plans["PUT: count of the enrollment's completed rows"] = yield* explain(
        yield* aggregateStatement(client, tenant, "lesson_progress", {
          where: [{ field: "enrollment_id", op: "eq", value: id }, { field: "status", op: "eq", value: "completed" }],
          groupBy: [],
          measures: [{ kind: "count" }]
        })
      )
      for (const [label, { type, query }] of Object.entries(lists)) plans[label] = yield* explain(yield* listStatement(client, tenant, type, query))
      return plans
    })
  )
}

/** The plan's scans and its execution time, on one line. */
const planSummary = (plan: string) =>
  [
    ...new Set(
      plan
        .split("\n")
        .flatMap((line) => /((?:Index Only Scan|Index Scan|Bitmap Index Scan|Seq Scan)(?: Backward)? (?:using|on) \S+)/.exec(line)?.[1] ?? [])
    ),
    /Execution Time: [\d.]+ ms/.exec(plan)?.[0] ?? ""
  ].join("; ")

// ---------------------------------------------------------------------------------------
// One run

const runPg = async (name: string, sizes: LearningSizes, others: LearningSizes | null) => {
  const scope = Effect.runSync(Scope.make())
  let child: Child | undefined
  let sql: Sql | undefined
  try {
    const fresh = await Effect.runPromise(Scope.extend(freshDatabase, scope))
    log(`${name}: database ${fresh.name}; ${sizes.users.toLocaleString("en")} users, ${sizes.enrollments.toLocaleString("en")} enrollments, ${sizes.progress.toLocaleString("en")} progress rows` +
      (others ? `; another tenant with ${others.users.toLocaleString("en")} / ${others.enrollments.toLocaleString("en")} / ${others.progress.toLocaleString("en")}` : ""))
    const accounts = await openAccounts(fresh.url, others ? 2 : 1, "Learning Academy")
    child = await startChild(["postgresql", "--url", fresh.url])
    sql = sqlRuntime(fresh.url, "syllabus-bench-learning")
    const exec = execOn(sql)
    await exec(createIdFunctionSql)
    await exec(courseTablesSql)
    const setupStarted = performance.now()
    const made = [] as Array<{ course: Course; exam: Exam; sizes: LearningSizes }>
    for (const [a, account] of accounts.entries()) {
      const s = a === 0 ? sizes : others!
      const products = a === 0 ? PRODUCTS : Math.max(2, Math.ceil(PRODUCTS / 4))
      const { productIds, lessons, exam } = await makeCourses(child.ready.port, account.secret, products)
      const userIds = Array.from({ length: s.users }, (_, u) => userId(u, a))
      made.push({ course: { accountIndex: a, userIds, productIds, lessons }, exam, sizes: s })
    }
    const setupMs = performance.now() - setupStarted
    log(`${name}: courses made through the API in ${(setupMs / 1000).toFixed(1)} s`)
    const loads: Array<Load> = []
    for (const [a, account] of accounts.entries()) loads.push(await load(exec, account, made[a]!.course, made[a]!.sizes))
    const analyzeStarted = performance.now()
    await exec("ANALYZE records")
    await exec("ANALYZE record_keys")
    const analyzeMs = performance.now() - analyzeStarted
    const size = await exec(
      `SELECT (SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) FROM pg_partition_tree('records')) AS records, pg_size_pretty(pg_total_relation_size('record_keys')) AS keys`
    )
    log(`${name}: ANALYZE ${(analyzeMs / 1000).toFixed(1)} s; records ${size[0]!.records}, record_keys ${size[0]!.keys} (with their indexes)`)

    // A record of each type written by the API itself, for the shape check.
    const main = made[0]!
    const u = userOf(0, sizes)
    const p = (u + main.course.productIds.length - 2) % main.course.productIds.length
    const own = await post(child.ready.port, accounts[0]!.secret, "/enrollments", { user_id: main.course.userIds[u], product_id: main.course.productIds[p] })
    const row = await send(child.ready.port, "PUT", `/api/v3/enrollments/${own.id}/progress/lessons/${main.course.lessons[p]![0]!.id}`, accounts[0]!.secret, { percent: 30 })
    if (row.status !== 200) throw new Error(`PUT progress: ${row.status} ${JSON.stringify(row.body)}`)
    const written = {
      enrollment: await storedRecord(exec, accounts[0]!.accountId, "enrollment", String(own.id)),
      progress: await storedRecord(exec, accounts[0]!.accountId, "lesson_progress", String(row.body.data.id))
    }
    for (const [a, account] of accounts.entries()) await verify(exec, account, made[a]!.course, made[a]!.sizes, written)
    log(`${name}: SQL rows match the TypeScript generator and the API's fields and keys; the kept figures match the rows`)
    // Points for completing a lesson, in every product (added after the load: the seeded completions earned none).
    await post(child.ready.port, accounts[0]!.secret, "/gamification/rules", { name: "Lesson completed", trigger: "lesson_completed", points: 10 })

    const timings = await measureAll(child, accounts[0]!, main.course, main.exam, sizes)
    const plans = await explainAll(sql, { accountId: accounts[0]!.accountId, environment: "production" }, main.course, sizes).catch((error) => {
      log(`  EXPLAIN failed: ${String(error).slice(0, 400)}`)
      return {} as Record<string, string>
    })
    for (const [label, plan] of Object.entries(plans)) log(`  EXPLAIN ${label}: ${planSummary(plan)}`)
    return { name, sizes, others, setupMs, loads, analyzeMs, size: size[0], timings, plans }
  } finally {
    await child?.stop()
    await sql?.dispose()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const main = async () => {
  const started = Date.now()
  const loadAverage = { start: loadavg()[0]!, end: 0 }
  log(`node ${process.version}, ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`)
  const baseline = args["skip-baseline"] ? null : await runPg("baseline", baselineSizes, null)
  const scaled = await runPg("large", large, other)
  loadAverage.end = loadavg()[0]!
  const s = (n: number) => n.toLocaleString("en")
  console.log(
    `\n## PostgreSQL: ${s(large.users)} users, ${s(large.enrollments)} enrollments, ${s(large.progress)} lesson_progress rows; ` +
      `${PRODUCTS} products × ${LESSONS} lessons` + (other ? `; another tenant ${s(other.users)} / ${s(other.enrollments)} / ${s(other.progress)}` : "") + "\n"
  )
  const loadLine = (l: Load, a: number) =>
    `account ${a}: users ${(l.usersMs / 1000).toFixed(1)} s, enrollments ${(l.enrollmentsMs / 1000).toFixed(1)} s, progress ${(l.progressMs / 1000).toFixed(1)} s, figures ${(l.figuresMs / 1000).toFixed(1)} s`
  console.log(`seeding: courses through the API ${(scaled.setupMs / 1000).toFixed(1)} s; ${scaled.loads.map(loadLine).join("; ")}; ANALYZE ${(scaled.analyzeMs / 1000).toFixed(1)} s; records ${scaled.size!.records}, record_keys ${scaled.size!.keys}`)
  if (baseline) console.log(`baseline: ${s(baselineSizes.users)} users, ${s(baselineSizes.enrollments)} enrollments, ${s(baselineSizes.progress)} progress rows, same products and lessons`)
  console.log(`\n| request | baseline p50 | p95 | at scale p50 | p95 | × baseline (p50 / p95) |\n|---|---:|---:|---:|---:|---:|`)
  for (const [label, t] of Object.entries(scaled.timings)) {
    const b = baseline?.timings[label]
    if (t === undefined) {
      console.log(`| ${label} | ${b ? fmt(b.p50) : "–"} | ${b ? fmt(b.p95) : "–"} | failed | – | – |`)
      continue
    }
    console.log(
      `| ${label} | ${b ? fmt(b.p50) : "–"} | ${b ? fmt(b.p95) : "–"} | ${fmt(t.p50)} | ${fmt(t.p95)} | ` +
        `${b ? `${(t.p50 / b.p50).toFixed(2)} / ${(t.p95 / b.p95).toFixed(2)}` : "–"} |`
    )
  }
  console.log("\nThe store's statements at scale (EXPLAIN ANALYZE):\n")
  for (const [label, plan] of Object.entries(scaled.plans)) console.log(`- ${label}: ${planSummary(plan)}`)
  console.log(`\n${samples} samples each (${warmup} untimed before), each on its own target; load average ${loadAverage.start.toFixed(1)} at the start, ${loadAverage.end.toFixed(1)} at the end; ${((Date.now() - started) / 1000).toFixed(0)} s in all`)
  if (args.json) {
    writeFileSync(args.json, JSON.stringify({ date: new Date().toISOString(), node: process.version, products: PRODUCTS, lessons: LESSONS, samples, warmup, loadAverage, baseline, scaled }, null, 2))
    log(`wrote ${args.json}`)
  }
  agent.destroy()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
