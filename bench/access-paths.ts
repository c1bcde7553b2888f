/**
 * The declared access paths of products at a school's volume, through the store itself:
 * `Records.list` as `GET /products` runs it (`status=`, `sort=name`, `q=`, `external_id=`, and
 * a deep keyset page of `sort=name` both ways: the position of the 250,000th product by name,
 * or of the product at 5/6 of the tenant's rows when there are fewer), on a fresh database with BENCH_ROWS products (default 300,000) in one tenant and a few
 * thousand in others. Prints the median of BENCH_RUNS runs (default 7) of each list.
 *
 *   node --import tsx bench/access-paths.ts
 *   BENCH_ROWS=1000000 node --import tsx bench/access-paths.ts
 *
 * PostgreSQL is `DATABASE_URL` (default postgres://postgres@127.0.0.1:5432/test); the
 * database is created for the run and dropped afterwards.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { type ListQuery, Records, type Tenant } from "@syllabus/core"
import { pgLayer } from "@syllabus/pg"
import { Effect, Layer } from "effect"
import { stringExpr } from "../packages/pg/src/expressions.js"
import { freshDatabase } from "./pg.js"

const rows = Number(process.env["BENCH_ROWS"] ?? 300_000)
const runs = Number(process.env["BENCH_RUNS"] ?? 7)
const tenant: Tenant = { accountId: "acc_big", environment: "production" }

/** `n` products of one tenant, shaped as `createResource` stores them (with `search_text`). */
const loadProducts = (sql: SqlClient.SqlClient, accountId: string, n: number) =>
  sql`
    INSERT INTO records (account_id, environment, type, id, revision, data)
    SELECT ${accountId}, 'production', 'product', 'prod_' || lpad(i::text, 10, '0'), 1,
      jsonb_build_object(
        'object', 'product', 'id', 'prod_' || lpad(i::text, 10, '0'),
        'name', 'Product ' || md5(i::text),
        'status', (ARRAY['draft', 'published', 'archived'])[1 + i % 3],
        'format', (ARRAY['course', 'ebook'])[1 + i % 2],
        'showcase_id', 'shw_' || (i % 50),
        'external_id', 'ext-' || i,
        'position', i,
        'search_text', 'Product ' || md5(i::text) || E'\n' || 'ext-' || i,
        'created_at', '2024-01-01T00:00:00Z', 'updated_at', '2024-01-01T00:00:00Z',
        'deleted', i % 50 = 0)
    FROM generate_series(1, ${n}) AS i`

const queries: ReadonlyArray<readonly [string, ListQuery]> = [
  ["status=published", {
    where: [{ field: "deleted", op: "eq", value: false }, { field: "status", op: "eq", value: "published" }],
    sort: { field: "id", kind: "text", direction: "desc" },
    limit: 51
  }],
  ["sort=name", {
    where: [{ field: "deleted", op: "eq", value: false }],
    sort: { field: "name", kind: "text", direction: "asc" },
    limit: 51
  }],
  ["q=abc", {
    where: [{ field: "deleted", op: "eq", value: false }, { field: "search_text", op: "contains", value: "abc" }],
    sort: { field: "id", kind: "text", direction: "desc" },
    limit: 51
  }],
  ["q=zzzq (no match)", {
    where: [{ field: "deleted", op: "eq", value: false }, { field: "search_text", op: "contains", value: "zzzq" }],
    sort: { field: "id", kind: "text", direction: "desc" },
    limit: 51
  }],
  ["external_id=ext-12345", {
    where: [{ field: "deleted", op: "eq", value: false }, { field: "external_id", op: "eq", value: "ext-12345" }],
    sort: { field: "id", kind: "text", direction: "desc" },
    limit: 51
  }]
]

/**
 * A deep page of `sort=name` (`-name` when `direction` is desc): `after` is the position of the
 * `depth`-th live product by name ascending (a client that paged that far sends its cursor).
 */
const deepPages = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const depth = Math.min(250_000, Math.floor((rows * 5) / 6))
    const name = sql.literal(stringExpr("name"))
    const found = yield* sql<{ readonly name: string; readonly id: string }>`
      SELECT ${name} AS name, id FROM records
      WHERE account_id = ${tenant.accountId} AND environment = ${tenant.environment} AND type = 'product'
        AND COALESCE(data -> 'deleted', 'null'::jsonb) = 'false'::jsonb
      ORDER BY ${name} ASC NULLS FIRST, id ASC
      OFFSET ${depth - 1} LIMIT 1`
    const after = { value: found[0]!.name, id: found[0]!.id }
    return (["asc", "desc"] as const).map((direction): readonly [string, ListQuery] => [
      `sort=${direction === "asc" ? "" : "-"}name after #${depth}`,
      {
        where: [{ field: "deleted", op: "eq", value: false }],
        sort: { field: "name", kind: "text", direction },
        after,
        limit: 51
      }
    ])
  })

const program = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const records = yield* Records
  const started = Date.now()
  yield* loadProducts(sql, tenant.accountId, rows)
  for (let i = 0; i < 5; i++) yield* loadProducts(sql, `acc_small_${i}`, 2_000)
  yield* sql`ANALYZE records`
  console.log(`loaded ${rows} products (+10,000 in other tenants) in ${Date.now() - started} ms`)
  for (const [name, query] of [...queries, ...(yield* deepPages(sql))]) {
    const times: Array<number> = []
    let found = 0
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now()
      found = (yield* records.list(tenant, "product", query)).length
      times.push(performance.now() - t0)
    }
    times.sort((a, b) => a - b)
    console.log(`${name.padEnd(24)} ${times[Math.floor(times.length / 2)]!.toFixed(1).padStart(7)} ms median  (${found} rows)`)
  }
})

const main = Effect.gen(function*() {
  const { url } = yield* freshDatabase
  yield* program.pipe(Effect.provide(Layer.orDie(pgLayer(url))))
}).pipe(Effect.scoped)

Effect.runPromise(main).catch((error) => {
  console.error(error)
  process.exit(1)
})
