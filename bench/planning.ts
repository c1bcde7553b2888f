/**
 * What PostgreSQL spends planning the store's statements, on a database migrated with the whole
 * release (every type's partition, index and statistics), against a baseline in the same run:
 * the same rows in a plain table with only the primary key (`records_plain`), where planning
 * costs what it costs for one index.
 *
 *   node --import tsx bench/planning.ts [--rows 20000] [--repeat 11]
 *
 * Each statement runs under `EXPLAIN (ANALYZE, SUMMARY)` `repeat` times on one connection; the
 * figures are the medians of the warm runs (the first, which fills the session's catalog
 * caches, is shown apart: what a new connection pays).
 */
import { PgClient } from "@effect/sql-pg"
import { pgLayer } from "@syllabus/pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { parseArgs } from "node:util"
import { freshDatabase } from "./pg.js"

const { values: flags } = parseArgs({ options: { rows: { type: "string" }, repeat: { type: "string" } } })
const rows = Number(flags.rows ?? 20_000)
const repeat = Math.max(3, Number(flags.repeat ?? 11))
const types = ["credential", "product", "enrollment", "email_message", "request"]

/** The statements, over `table` (`records` or the baseline). */
const statements = (table: string): ReadonlyArray<readonly [string, string]> => [
  ["read by key (credential)", `SELECT id, revision, data FROM ${table} WHERE account_id = 'acc_1' AND environment = 'production' AND type = 'credential' AND id = 'credential_5'`],
  ["read by key (product)", `SELECT id, revision, data FROM ${table} WHERE account_id = 'acc_1' AND environment = 'production' AND type = 'product' AND id = 'product_5'`],
  [
    "page of a product's enrollments",
    `SELECT id, revision, data FROM ${table} WHERE account_id = 'acc_1' AND environment = 'production' AND type = 'enrollment'
       AND COALESCE(data -> 'deleted', 'null'::jsonb) = 'false' AND COALESCE(data -> 'product_id', 'null'::jsonb) = '"prd_7"'
     ORDER BY id DESC LIMIT 51`
  ],
  ["update by key (product)", `UPDATE ${table} SET data = data, revision = revision + 1 WHERE account_id = 'acc_1' AND environment = 'production' AND type = 'product' AND id = 'product_9'`],
  [
    "insert (request log)",
    `INSERT INTO ${table} (account_id, environment, type, id, revision, data)
     VALUES ('acc_1', 'production', 'request', 'req_' || md5(random()::text), 1, '{"method":"GET"}') ON CONFLICT DO NOTHING`
  ]
]

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const program = Effect.gen(function*() {
  const { url } = yield* freshDatabase
  // Migrated with the whole release, by the store's own layer.
  yield* Layer.build(pgLayer(url, { maxConnections: 2 }))
  const sql = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), PgClient.PgClient)
  const seed = (table: string) =>
    sql.unsafe(`
      INSERT INTO ${table} (account_id, environment, type, id, revision, data)
      SELECT 'acc_' || (g % 10), 'production', t, t || '_' || g, 1,
        jsonb_build_object('deleted', false, 'product_id', 'prd_' || (g % 50), 'user_id', 'usr_' || g, 'status', 'active', 'name', 'n' || g)
      FROM generate_series(1, ${rows}) AS g, unnest(ARRAY[${types.map((t) => `'${t}'`).join(", ")}]) AS t`)
  yield* sql`CREATE TABLE records_plain (LIKE records INCLUDING DEFAULTS, PRIMARY KEY (account_id, environment, type, id))`
  yield* seed("records")
  yield* seed("records_plain")
  yield* sql`ANALYZE records`
  yield* sql`ANALYZE records_plain`
  const indexes = (yield* sql<{ readonly n: number }>`
    SELECT count(*)::int AS n FROM pg_index
    WHERE indrelid = 'records'::regclass OR indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'records'::regclass)`)[0]!.n

  const measure = (statement: string) =>
    Effect.gen(function*() {
      // A new connection each time: the first run pays the session's catalog caches.
      const client = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), PgClient.PgClient)
      const planning: Array<number> = []
      const execution: Array<number> = []
      for (let i = 0; i < repeat; i++) {
        const out = yield* client.unsafe<{ readonly "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, SUMMARY) ${statement}`)
        const text = out.map((row) => row["QUERY PLAN"]).join("\n")
        planning.push(Number(/Planning Time: ([\d.]+)/.exec(text)?.[1]))
        execution.push(Number(/Execution Time: ([\d.]+)/.exec(text)?.[1]))
      }
      return { cold: planning[0]!, planning: median(planning.slice(1)), execution: median(execution.slice(1)) }
    }).pipe(Effect.scoped)

  console.log(`records: ${types.length} types × ${rows.toLocaleString("en")} rows, ${indexes} indexes (with its partitions'); baseline records_plain: the same rows, its primary key only\n`)
  console.log("| statement | planning, first (ms) | planning (ms) | baseline planning (ms) | ratio | execution (ms) | baseline execution (ms) |")
  console.log("|---|---:|---:|---:|---:|---:|---:|")
  const [release, plain] = [statements("records"), statements("records_plain")]
  for (const [i, [name, statement]] of release.entries()) {
    const a = yield* measure(statement)
    const b = yield* measure(plain[i]![1])
    const f = (n: number) => n.toFixed(3)
    console.log(`| ${name} | ${f(a.cold)} | ${f(a.planning)} | ${f(b.planning)} | ${(a.planning / b.planning).toFixed(2)} | ${f(a.execution)} | ${f(b.execution)} |`)
  }
}).pipe(Effect.scoped)

await Effect.runPromise(program)
