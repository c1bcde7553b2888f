/**
 * The data of `bench/learning.ts`: enrollments and lesson progress generated from their index,
 * in TypeScript and in SQL (`INSERT … SELECT generate_series`, with their unique keys in the
 * same statement). Both produce the JSON the API stores: an enrollment as `createResource`
 * makes it (`POST /enrollments`) and then the progress PUTs left it (`progress_percent`,
 * `completed_at`, its revision), a `lesson_progress` row as the first PUT of
 * `learning/progress.ts` inserts it; `bench/learning.ts` compares samples of the SQL rows with
 * these functions, and the key set of each with a record the API itself wrote in the same run.
 *
 * The users are those of `bench/scale-data.ts` (`usersSql`, `userId`); the products, modules and
 * lessons are made through the API, and their IDs passed in (`Course`). In account `a`:
 * - enrollment `e` (0-based) is of user `u = e mod U` in product `p = (u + ⌊e / U⌋) mod P` (so a
 *   user holds at most one enrollment per product while `E ≤ U × (P − 1)`), created at
 *   2024-01-01 + e × 10 s + a ms, source `import`, no expiry; one in 19 (`e mod 19 = 18`: not tied to a product when there are 20) was
 *   canceled 5 s after its creation (no `active_key`);
 * - it has progress rows on the first `r_e` lessons of its product in course order, `r_e` being
 *   `N / E` spread evenly (`⌊(e+1)N/E⌋ − ⌊eN/E⌋`, at most the product's lessons); the first
 *   `c_e = ⌊e / 3⌋ mod (r_e + 1)` of them `completed`, the others `in_progress` at `1 + (e + j) mod 99`
 *   percent; row `j` written at 1 s + 10 j ms after the enrollment. The enrollment's
 *   `progress_percent` is `⌊100 c_e / L⌋`, its `completed_at` the time of its last completion
 *   when `c_e = L`, its revision `1 + c_e` (+1 when canceled): one write per completion, as the
 *   PUT saves the enrollment when its percent changes.
 */
import { formatId, formatTimestamp, ID_EPOCH_MS, ID_SEQUENCE_BITS, type JsonObject } from "@syllabus/core"

export const E_T0 = Date.UTC(2024, 0, 1)
const E_STEP_MS = 10_000
const ROW_OFFSET_MS = 1_000
const ROW_STEP_MS = 10
const CANCEL_AFTER_MS = 5_000
const CANCEL_EVERY = 19
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

const idNumber = (ms: number) => (ms - ID_EPOCH_MS) * 2 ** ID_SEQUENCE_BITS

/** What an account's load is made of. */
export interface LearningSizes {
  readonly users: number
  readonly enrollments: number
  readonly progress: number
}

/** The API-made part of an account: product IDs, and each product's published lessons in course order. */
export interface Course {
  readonly accountIndex: number
  readonly userIds: ReadonlyArray<string>
  readonly productIds: ReadonlyArray<string>
  readonly lessons: ReadonlyArray<ReadonlyArray<{ readonly id: string; readonly module_id: string }>>
}

export const enrollmentMs = (e: number, a: number) => E_T0 + e * E_STEP_MS + a
const rowMs = (e: number, j: number, a: number) => enrollmentMs(e, a) + ROW_OFFSET_MS + j * ROW_STEP_MS

export const enrollmentId = (e: number, a: number) => formatId("enrollment", idNumber(enrollmentMs(e, a)))
export const progressId = (e: number, j: number, a: number) => formatId("lesson_progress", idNumber(rowMs(e, j, a)))

export const userOf = (e: number, sizes: LearningSizes) => e % sizes.users
export const productOf = (e: number, sizes: LearningSizes, products: number) => (userOf(e, sizes) + Math.floor(e / sizes.users)) % products
export const isCanceled = (e: number) => e % CANCEL_EVERY === CANCEL_EVERY - 1
/** Progress rows of enrollment `e`. */
export const rowsOf = (e: number, sizes: LearningSizes, lessons: number) =>
  Math.min(lessons, Math.floor(((e + 1) * sizes.progress) / sizes.enrollments) - Math.floor((e * sizes.progress) / sizes.enrollments))
/** Completed rows of enrollment `e` (its first ones). */
export const completedOf = (e: number, sizes: LearningSizes, lessons: number) => Math.floor(e / 3) % (rowsOf(e, sizes, lessons) + 1)

export const enrollmentData = (e: number, sizes: LearningSizes, course: Course): JsonObject => {
  const a = course.accountIndex
  const p = productOf(e, sizes, course.productIds.length)
  const lessons = course.lessons[p]!.length
  const c = completedOf(e, sizes, lessons)
  const userId = course.userIds[userOf(e, sizes)]!
  const productId = course.productIds[p]!
  const at = formatTimestamp(enrollmentMs(e, a))
  const canceled = isCanceled(e)
  const lastWrite = canceled ? enrollmentMs(e, a) + CANCEL_AFTER_MS : c > 0 ? rowMs(e, c - 1, a) : enrollmentMs(e, a)
  return {
    object: "enrollment",
    id: enrollmentId(e, a),
    user_id: userId,
    product_id: productId,
    status: canceled ? "canceled" : "active",
    source: "import",
    delivery_id: null,
    starts_at: at,
    expires_at: null,
    completed_at: lessons > 0 && c === lessons ? formatTimestamp(rowMs(e, c - 1, a)) : null,
    progress_percent: lessons === 0 ? 0 : Math.min(100, Math.floor((c * 100) / lessons)),
    canceled_at: canceled ? formatTimestamp(enrollmentMs(e, a) + CANCEL_AFTER_MS) : null,
    active_key: canceled ? null : `${userId}:${productId}`,
    created_at: at,
    updated_at: formatTimestamp(lastWrite),
    deleted: false
  }
}

export const enrollmentRevision = (e: number, sizes: LearningSizes, lessons: number) => 1 + completedOf(e, sizes, lessons) + (isCanceled(e) ? 1 : 0)

export const progressData = (e: number, j: number, sizes: LearningSizes, course: Course): JsonObject => {
  const a = course.accountIndex
  const p = productOf(e, sizes, course.productIds.length)
  const lesson = course.lessons[p]![j]!
  const done = j < completedOf(e, sizes, course.lessons[p]!.length)
  const at = formatTimestamp(rowMs(e, j, a))
  return {
    object: "lesson_progress",
    id: progressId(e, j, a),
    enrollment_id: enrollmentId(e, a),
    lesson_id: lesson.id,
    module_id: lesson.module_id,
    // The enrollment's product and learner (the anchors of its scope).
    product_id: course.productIds[p]!,
    user_id: course.userIds[userOf(e, sizes)]!,
    status: done ? "completed" : "in_progress",
    percent: done ? 100 : 1 + ((e + j) % 99),
    completed_at: done ? at : null,
    created_at: at,
    updated_at: at
  }
}

// ---------------------------------------------------------------------------------------
// The same in SQL, over the tables `bench_users (a, u, id)` and `bench_lessons (a, p, j, n, id, module_id)`
// (`n`: the product's lesson count) that `bench/learning.ts` fills from `Course`.

export const courseTablesSql = `
  CREATE TABLE bench_users (a int NOT NULL, u int NOT NULL, id text NOT NULL, PRIMARY KEY (a, u));
  CREATE TABLE bench_lessons (a int NOT NULL, p int NOT NULL, j int NOT NULL, n int NOT NULL, product_id text NOT NULL,
    id text NOT NULL, module_id text NOT NULL, PRIMARY KEY (a, p, j))`

/** `formatId` in SQL, inline (9 base62 digits of a bigint expression). */
const idSql = (prefix: string, n: string) =>
  `'${prefix}_' || ${Array.from({ length: 9 }, (_, k) => `substr('${ALPHABET}', ((${n}) / ${62 ** (8 - k)}::bigint % 62)::int + 1, 1)`).join(" || ")}`
const idNumberSql = (ms: string) => `((${ms}) - ${ID_EPOCH_MS}::bigint) * ${2 ** ID_SEQUENCE_BITS}`
const isoSql = (ms: string) => `to_char(timestamp '1970-01-01' + (${ms}) * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** The per-enrollment columns (`e` in scope): ms, user, product, rows, completed. */
const enrollmentColumns = (a: number, sizes: LearningSizes, products: number) => `
    SELECT e, ${E_T0 + a}::bigint + e::bigint * ${E_STEP_MS} AS ms, usr.id AS user_id, l.product_id, l.n,
      least(l.n, ((e::bigint + 1) * ${sizes.progress} / ${sizes.enrollments} - e::bigint * ${sizes.progress} / ${sizes.enrollments})::int) AS r,
      e % ${CANCEL_EVERY} = ${CANCEL_EVERY - 1} AS canceled
    FROM generate_series($FROM, $TO) AS e
    JOIN bench_users usr ON usr.a = ${a} AND usr.u = e % ${sizes.users}
    JOIN bench_lessons l ON l.a = ${a} AND l.p = ((e % ${sizes.users}) + e / ${sizes.users}) % ${products} AND l.j = 0`

/** Enrollments `from` ≤ e < `to` of account `a` into `records`, with their `active_key`. */
export const enrollmentsSql = (accountId: string, a: number, sizes: LearningSizes, products: number, from: number, to: number) => `
  WITH rows AS (
    INSERT INTO records (account_id, environment, type, id, revision, data)
    SELECT '${accountId}', 'production', 'enrollment', x.id, 1 + x.c + CASE WHEN x.canceled THEN 1 ELSE 0 END, jsonb_build_object(
      'object', 'enrollment', 'id', x.id, 'user_id', x.user_id, 'product_id', x.product_id,
      'status', CASE WHEN x.canceled THEN 'canceled' ELSE 'active' END, 'source', 'import', 'delivery_id', null,
      'starts_at', ${isoSql("x.ms")}, 'expires_at', null,
      'completed_at', CASE WHEN x.n > 0 AND x.c = x.n THEN ${isoSql(`x.ms + ${ROW_OFFSET_MS} + (x.c - 1) * ${ROW_STEP_MS}`)} END,
      'progress_percent', CASE WHEN x.n = 0 THEN 0 ELSE least(100, x.c * 100 / x.n) END,
      'canceled_at', CASE WHEN x.canceled THEN ${isoSql(`x.ms + ${CANCEL_AFTER_MS}`)} END,
      'active_key', CASE WHEN x.canceled THEN null ELSE x.user_id || ':' || x.product_id END,
      'created_at', ${isoSql("x.ms")},
      'updated_at', ${isoSql(`CASE WHEN x.canceled THEN x.ms + ${CANCEL_AFTER_MS} WHEN x.c > 0 THEN x.ms + ${ROW_OFFSET_MS} + (x.c - 1) * ${ROW_STEP_MS} ELSE x.ms END`)},
      'deleted', false)
    FROM (
      SELECT y.*, ${idSql("enr", idNumberSql("y.ms"))} AS id, (y.e / 3) % (y.r + 1) AS c
      FROM (${enrollmentColumns(a, sizes, products).replace("$FROM", String(from)).replace("$TO", String(to - 1))}) AS y
    ) AS x
    ORDER BY x.id
    RETURNING account_id, environment, type, id, data ->> 'active_key' AS k
  )
  INSERT INTO record_keys (account_id, environment, type, id, name, value, global)
  SELECT account_id, environment, type, id, 'active_key', k, false FROM rows WHERE k IS NOT NULL`

/** The progress rows of enrollments `from` ≤ e < `to` of account `a`, with their `enrollment_lesson` keys. */
export const progressSql = (accountId: string, a: number, sizes: LearningSizes, products: number, from: number, to: number) => `
  WITH rows AS (
    INSERT INTO records (account_id, environment, type, id, revision, data)
    SELECT '${accountId}', 'production', 'lesson_progress', x.id, 1, jsonb_build_object(
      'object', 'lesson_progress', 'id', x.id, 'enrollment_id', x.enrollment_id, 'lesson_id', x.lesson_id, 'module_id', x.module_id,
      'product_id', x.product_id, 'user_id', x.user_id,
      'status', CASE WHEN x.done THEN 'completed' ELSE 'in_progress' END,
      'percent', CASE WHEN x.done THEN 100 ELSE 1 + (x.e + x.j) % 99 END,
      'completed_at', CASE WHEN x.done THEN x.at END,
      'created_at', x.at, 'updated_at', x.at)
    FROM (
      SELECT y.e, l.j, y.product_id, y.user_id, ${idSql("lpr", idNumberSql(`y.ms + ${ROW_OFFSET_MS} + l.j * ${ROW_STEP_MS}`))} AS id,
        ${idSql("enr", idNumberSql("y.ms"))} AS enrollment_id, l.id AS lesson_id, l.module_id,
        l.j < (y.e / 3) % (y.r + 1) AS done, ${isoSql(`y.ms + ${ROW_OFFSET_MS} + l.j * ${ROW_STEP_MS}`)} AS at
      FROM (${enrollmentColumns(a, sizes, products).replace("$FROM", String(from)).replace("$TO", String(to - 1))}) AS y
      JOIN bench_lessons l ON l.a = ${a} AND l.product_id = y.product_id AND l.j < y.r
    ) AS x
    ORDER BY x.id
    RETURNING account_id, environment, type, id, (data ->> 'enrollment_id') || ':' || (data ->> 'lesson_id') AS k
  )
  INSERT INTO record_keys (account_id, environment, type, id, name, value, global)
  SELECT account_id, environment, type, id, 'enrollment_lesson', k, false FROM rows`

/** The email keys of the users `usersSql` loaded into the account (`keysSql` of scale-data covers products too, which the API made here). */
export const userKeysSql = (accountId: string) => `
  INSERT INTO record_keys (account_id, environment, type, id, name, value, global)
  SELECT account_id, environment, type, id, 'email', data ->> 'email', false
  FROM records WHERE account_id = '${accountId}' AND environment = 'production' AND type = 'user' AND data -> 'deleted' = 'false'`

/**
 * The kept figures (`@syllabus/core` reports/figures.ts) of the rows loaded in SQL, which the
 * store's `keepingFigures` never saw: one figure record per lesson and per product (shard 0;
 * figures are additive, so later writes add to any shard). Run once per account, right after
 * its load and before the API writes any enrollment or progress there (a plain INSERT: a
 * figure record already made fails the run rather than being counted twice). The measures are
 * those of `LESSON_PROGRESS_FIGURES` and `ENROLLMENT_FIGURES`; `figuresCheckSql` compares them.
 */
export const figuresSql = (accountId: string) => [
  `INSERT INTO records (account_id, environment, type, id, revision, data)
  SELECT account_id, environment, 'lesson_progress_figures', (data ->> 'lesson_id') || '.0', 1, jsonb_build_object(
    'lesson_id', data ->> 'lesson_id',
    'started', count(*) FILTER (WHERE data ->> 'status' IN ('in_progress', 'completed')),
    'in_progress', count(*) FILTER (WHERE data ->> 'status' = 'in_progress'),
    'completed', count(*) FILTER (WHERE data ->> 'status' = 'completed'),
    'started_percent', coalesce(sum((data ->> 'percent')::numeric) FILTER (WHERE data ->> 'status' IN ('in_progress', 'completed')), 0))
  FROM records WHERE account_id = '${accountId}' AND environment = 'production' AND type = 'lesson_progress'
  GROUP BY account_id, environment, data ->> 'lesson_id'`,
  `INSERT INTO records (account_id, environment, type, id, revision, data)
  SELECT account_id, environment, 'enrollment_figures', (data ->> 'product_id') || '.0', 1, jsonb_build_object(
    'product_id', data ->> 'product_id',
    'enrollments', count(*),
    'active', count(*) FILTER (WHERE data ->> 'status' = 'active'),
    'expired', count(*) FILTER (WHERE data ->> 'status' = 'expired'),
    'canceled', count(*) FILTER (WHERE data ->> 'status' = 'canceled'),
    'completed', count(*) FILTER (WHERE jsonb_typeof(data -> 'completed_at') = 'string'),
    'averaged', count(*) FILTER (WHERE data ->> 'status' IN ('active', 'expired')),
    'averaged_percent', coalesce(sum((data ->> 'progress_percent')::numeric) FILTER (WHERE data ->> 'status' IN ('active', 'expired')), 0))
  FROM records WHERE account_id = '${accountId}' AND environment = 'production' AND type = 'enrollment'
  GROUP BY account_id, environment, data ->> 'product_id'`
]

/**
 * The figures of one lesson and one product, summed over their shards, beside the same figures
 * counted over the rows: the two columns of each row must be equal.
 */
export const figuresCheckSql = (accountId: string, productId: string, lessonId: string) => `
  WITH kept AS (
    SELECT type, sum((data ->> 'started')::numeric) AS a, sum((data ->> 'completed')::numeric) AS b, sum((data ->> 'started_percent')::numeric) AS c
    FROM records WHERE account_id = '${accountId}' AND environment = 'production' AND type = 'lesson_progress_figures' AND data ->> 'lesson_id' = '${lessonId}'
    GROUP BY type
    UNION ALL
    SELECT type, sum((data ->> 'enrollments')::numeric), sum((data ->> 'completed')::numeric), sum((data ->> 'averaged_percent')::numeric)
    FROM records WHERE account_id = '${accountId}' AND environment = 'production' AND type = 'enrollment_figures' AND data ->> 'product_id' = '${productId}'
    GROUP BY type
  ), counted AS (
    SELECT 'lesson_progress_figures' AS type, count(*) FILTER (WHERE data ->> 'status' IN ('in_progress', 'completed')) AS a,
      count(*) FILTER (WHERE data ->> 'status' = 'completed') AS b,
      coalesce(sum((data ->> 'percent')::numeric) FILTER (WHERE data ->> 'status' IN ('in_progress', 'completed')), 0) AS c
    FROM records WHERE account_id = '${accountId}' AND environment = 'production' AND type = 'lesson_progress' AND data ->> 'lesson_id' = '${lessonId}'
    UNION ALL
    SELECT 'enrollment_figures', count(*), count(*) FILTER (WHERE jsonb_typeof(data -> 'completed_at') = 'string'),
      coalesce(sum((data ->> 'progress_percent')::numeric) FILTER (WHERE data ->> 'status' IN ('active', 'expired')), 0)
    FROM records WHERE account_id = '${accountId}' AND environment = 'production' AND type = 'enrollment' AND data ->> 'product_id' = '${productId}'
  )
  SELECT counted.type, kept.a::text AS kept_a, counted.a::text AS counted_a, kept.b::text AS kept_b, counted.b::text AS counted_b,
    kept.c::text AS kept_c, counted.c::text AS counted_c
  FROM counted LEFT JOIN kept USING (type)`
