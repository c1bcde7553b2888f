/**
 * List pages over HTTP at a school's volume (issue 10), on PostgreSQL and in memory.
 *
 *   node --import tsx bench/scale.ts --store pg|memory|both --products 1000000 --users 1000000 \
 *     --others 9x100000 --samples 50 [--json file]
 *
 * One account holds `--products` products and `--users` users; `--others` more accounts
 * (`<count>x<size>`) hold `size` of each. The data is `bench/scale-data.ts`: the JSON a
 * product or user created through the API is stored as.
 *
 * - PostgreSQL: a fresh database (`bench/pg.ts`, dropped at the end). The accounts are opened
 *   through the product, the access-path indexes dropped, the records loaded with a few
 *   `INSERT … SELECT generate_series` (and their unique keys), then the server child starts
 *   as the standalone server does: `pgLayer(url)` migrates, creates the missing access-path
 *   indexes and runs `ANALYZE` (`startup`).
 * - Memory: the server child opens the accounts and inserts every record through `Records`, in
 *   units of work of `--unit` records.
 *
 * Then, one request at a time over keep-alive HTTP from this process to the child on
 * 127.0.0.1 (`bench/scale-server.ts`, rate limits off, authenticated with the production secret
 * of the account), for every list the descriptions declare (`products` and `users` of
 * `@syllabus/core`: each sort both ways, each filter, `q`, the trash):
 * - the first page (`limit` 50, the default);
 * - a deep page: from a cursor at the record created at `--deep-at` (0.5: the middle) of the
 *   load among those the list selects. The cursor is one the server issued for the first page
 *   with its position moved and signed again by the server (`Crypto.signCursor`, over IPC), so
 *   it is bound exactly as the server binds it. In orders other than creation, that record
 *   sits wherever its value falls.
 * Each: `--warmup` requests (the first one's time is reported: on memory it builds the index of
 * the access path), then `--samples` timed ones, stopping after `--budget` seconds. The baseline
 * is `GET /credentials/current` (an authenticated route that reads no list) on the same server,
 * before and after; ratios are p50 ÷ its p50. Goals: p95 ≤ 25 ms on PostgreSQL, ≤ 5 ms in memory.
 * On PostgreSQL, each list that misses its goal is shown with `EXPLAIN (ANALYZE, BUFFERS)` of
 * the statement the store runs (`listStatement`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import {
  type JsonObject,
  type ListQuery,
  products,
  type ResourceDefinition,
  resourceSort,
  SEARCH_FIELD,
  type SortSpec,
  type Tenant,
  users,
  type Where
} from "@syllabus/core"
import { listStatement } from "@syllabus/pg"
import { Effect, Exit, type ManagedRuntime, Scope } from "effect"
import { writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { parseArgs } from "node:util"
import { freshDatabase } from "./pg.js"
import { createIdFunctionSql, keysSql, parseOthers, productData, productsSql, RARE_LAST_NAME, userData, usersSql } from "./scale-data.js"
import { agent, canonical, type Child, fmt, get, log, movedCursor, nextCursorOf, openAccounts, quantile, sqlRuntime, startChild } from "./scale-support.js"

const { values: args } = parseArgs({
  options: {
    store: { type: "string", default: "both" },
    products: { type: "string", default: "1000000" },
    users: { type: "string", default: "1000000" },
    others: { type: "string", default: "9x100000" },
    samples: { type: "string", default: "50" },
    warmup: { type: "string", default: "3" },
    budget: { type: "string", default: "30" },
    "deep-at": { type: "string", default: "0.5" },
    unit: { type: "string", default: "20000" },
    heap: { type: "string", default: "16384" },
    chunk: { type: "string", default: "250000" },
    json: { type: "string" }
  }
})
const sizes = { products: Number(args.products), users: Number(args.users) }
const others = parseOthers(args.others!)
const samples = Number(args.samples)
const warmup = Math.max(1, Number(args.warmup))
const budgetMs = Number(args.budget) * 1000
const deepAt = Number(args["deep-at"])
const stores: ReadonlyArray<"postgresql" | "memory"> =
  args.store === "pg" || args.store === "postgresql" ? ["postgresql"] : args.store === "memory" ? ["memory"] : ["postgresql", "memory"]
const goals = { postgresql: 25, memory: 5 } as const

// ---------------------------------------------------------------------------------------
// The lists, from the descriptions

/** A value for every declared filter, taken from the data (one of the records `--deep-at` picks for `email`/`external_id`). */
const filterValues = (definition: ResourceDefinition, n: number): Readonly<Record<string, string>> => {
  const middle = Math.floor(n / 2)
  return definition.type === "product"
    ? { status: "published", format: "blog", showcase_id: String(productData(7, 0).showcase_id), external_id: String(productData(middle, 0).external_id) }
    : { status: "blocked", email: String(userData(middle, 0).email).toUpperCase() }
}

const searchValues = (definition: ResourceDefinition, n: number): ReadonlyArray<readonly [string, string]> =>
  definition.type === "product"
    ? [["common word, 5%", "photography"], ["one product's name", String(productData(Math.floor(n / 2) + 1, 0).name)], ["no match", "zzzq"]]
    : [["common name, 2.5%", "silva"], ["rare name, 1 in 10,007", RARE_LAST_NAME.toLowerCase()], ["no match", "zzzq"]]

interface ListSpec {
  readonly label: string
  readonly definition: ResourceDefinition
  readonly params: Readonly<Record<string, string>>
  /** What `listResources` asks the store for (first page). */
  readonly where: ReadonlyArray<Where>
  readonly sort: SortSpec
}

/** The sort `listResources` derives from `sort=` (declared name, `-` reverses). */
const sortOf = (definition: ResourceDefinition, param: string | undefined): SortSpec => resourceSort(definition, param)

const listsOf = (definition: ResourceDefinition, n: number): ReadonlyArray<ListSpec> => {
  const live: Where = { field: "deleted", op: "eq", value: false }
  const out: Array<ListSpec> = []
  const add = (label: string, params: Record<string, string>, where: ReadonlyArray<Where>) =>
    out.push({ label: `${definition.plural} ${label}`, definition, params, where: [live, ...where], sort: sortOf(definition, params.sort) })
  for (const sort of definition.sorts) {
    add(`sort=${sort.name}`, { sort: sort.name }, [])
    add(`sort=-${sort.name}`, { sort: `-${sort.name}` }, [])
  }
  const values = filterValues(definition, n)
  for (const [name, filter] of Object.entries(definition.filters ?? {})) {
    const value = values[name]
    if (value === undefined) throw new Error(`no benchmark value for the filter ${definition.plural}.${name}: add one to filterValues`)
    add(`${name}=${value.length > 24 ? `${value.slice(0, 21)}…` : value}`, { [name]: value }, filter.where(value as never))
  }
  if (definition.search) {
    for (const [what, q] of searchValues(definition, n)) add(`q=${q} (${what})`, { q }, [{ field: SEARCH_FIELD, op: "contains", value: q }])
  }
  if (definition.trash) {
    out.push({
      label: `${definition.plural} deleted=true (the trash)`,
      definition,
      params: { deleted: "true" },
      where: [{ field: "deleted", op: "eq", value: true }],
      sort: sortOf(definition, undefined)
    })
  }
  return out
}

const matches = (data: JsonObject, where: ReadonlyArray<Where>) =>
  where.every((w) =>
    w.op === "eq"
      ? (data[w.field] ?? null) === w.value
      : w.op === "contains"
        ? String(data[w.field] ?? "").toLowerCase().includes(String(w.value).toLowerCase())
        : false
  )

/** The record the deep page starts after: the first one the list selects from `--deep-at` of the load on. */
const deepTarget = (spec: ListSpec, n: number): { readonly value: string | number | null; readonly id: string } | null => {
  const data = spec.definition.type === "product" ? productData : userData
  const start = Math.floor(n * deepAt)
  for (let k = 0; k < n; k++) {
    const d = data((start + k) % n, 0)
    if (!matches(d, spec.where)) continue
    const v = spec.sort.field === "id" ? String(d.id) : d[spec.sort.field]
    return { value: typeof v === "string" || typeof v === "number" ? v : null, id: String(d.id) }
  }
  return null
}

// ---------------------------------------------------------------------------------------
// HTTP, one request at a time

interface Timing {
  readonly first: number
  readonly p50: number
  readonly p95: number
  readonly max: number
  readonly n: number
  readonly rows: number
}

/** `warmup` requests (the first one's time kept), then up to `samples` timed ones within the budget. */
const measure = async (port: number, path: string, secret: string): Promise<Timing> => {
  let first = 0
  let rows = 0
  for (let w = 0; w < warmup; w++) {
    const r = await get(port, path, secret)
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`)
    if (w === 0) first = r.ms
    rows = r.body?.data?.length ?? 0
  }
  const times: Array<number> = []
  const started = performance.now()
  while (times.length < samples && (times.length === 0 || performance.now() - started < budgetMs)) {
    const r = await get(port, path, secret)
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status}`)
    times.push(r.ms)
  }
  times.sort((a, b) => a - b)
  return { first, p50: quantile(times, 0.5), p95: quantile(times, 0.95), max: times.at(-1)!, n: times.length, rows }
}

// ---------------------------------------------------------------------------------------
// The server child

// ---------------------------------------------------------------------------------------
// PostgreSQL: open the accounts through the product, then load in bulk

interface PgPrepared {
  readonly url: string
  readonly database: string
  readonly secret: string
  readonly accountId: string
  readonly sql: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>
  readonly loadMs: number
  readonly keysMs: number
}

const preparePg = async (scope: Scope.Scope): Promise<PgPrepared> => {
  const fresh = await Effect.runPromise(Scope.extend(freshDatabase, scope))
  log(`PostgreSQL: database ${fresh.name}`)
  const accounts = await openAccounts(fresh.url, others.count + 1)
  const accountIds = accounts.map((a) => a.accountId)
  const secret = accounts[0]!.secret
  const sql = sqlRuntime(fresh.url, "syllabus-bench-scale")
  const exec = (text: string) => sql.runPromise(Effect.flatMap(SqlClient.SqlClient, (s) => s.unsafe(text)))
  // Loaded without the access-path indexes: the server's start creates them, as after an upgrade.
  const indexes = (await exec(
    `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'records'::regclass) AND starts_with(c.relname, 'records_ap_')`
  )) as ReadonlyArray<{ name: string }>
  for (const { name } of indexes) await exec(`DROP INDEX ${name}`)
  log(`PostgreSQL: dropped ${indexes.length} access-path indexes before the load`)
  await exec(createIdFunctionSql)
  const chunk = Number(args.chunk)
  const loadStarted = performance.now()
  for (const [a, accountId] of accountIds.entries()) {
    const n = a === 0 ? sizes : { products: others.size, users: others.size }
    for (const [what, count, statement] of [["products", n.products, productsSql], ["users", n.users, usersSql]] as const) {
      for (let from = 0; from < count; from += chunk) await exec(statement(accountId, a, from, Math.min(count, from + chunk)))
      log(`  account ${a}: ${count.toLocaleString("en")} ${what} (${((performance.now() - loadStarted) / 1000).toFixed(0)} s)`)
    }
  }
  const loadMs = performance.now() - loadStarted
  const keysStarted = performance.now()
  await exec(keysSql)
  const keysMs = performance.now() - keysStarted
  log(`PostgreSQL: records loaded in ${(loadMs / 1000).toFixed(0)} s, unique keys in ${(keysMs / 1000).toFixed(0)} s`)
  // The SQL generator must produce what the TypeScript one (and so the API) produces.
  for (const [type, data, n] of [["product", productData, sizes.products], ["user", userData, sizes.users]] as const) {
    for (const i of [0, 1, 96, 10_006, Math.floor(n / 2), n - 1].filter((i) => i < n)) {
      const expected = data(i, 0)
      const rows = (await exec(
        `SELECT data FROM records WHERE account_id = '${accountIds[0]}' AND type = '${type}' AND id = '${String(expected.id)}'`
      )) as ReadonlyArray<{ data: JsonObject }>
      if (rows.length !== 1 || canonical(rows[0]!.data) !== canonical(expected)) {
        throw new Error(`the SQL ${type} ${i} differs from the TypeScript one:\n${canonical(rows[0]?.data)}\n${canonical(expected)}`)
      }
    }
  }
  return { url: fresh.url, database: fresh.name, secret, accountId: accountIds[0]!, sql, loadMs, keysMs }
}

const explain = async (prepared: PgPrepared, spec: ListSpec, after: ListQuery["after"]): Promise<string> => {
  const tenant: Tenant = { accountId: prepared.accountId, environment: "production" }
  const query: ListQuery = { where: spec.where, sort: spec.sort, after, limit: 51 }
  return prepared.sql.runPromise(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const statement = yield* listStatement(sql, tenant, spec.definition.type, query)
      const [text, params] = statement.compile()
      const rows = (yield* sql.unsafe(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params as Array<unknown>)) as ReadonlyArray<Record<string, string>>
      return rows.map((r) => Object.values(r)[0]).join("\n")
    })
  )
}

// ---------------------------------------------------------------------------------------
// One store

interface Row {
  readonly query: string
  readonly path: string
  readonly first: Timing
  readonly deep: Timing | null
  readonly deepNote: string | null
  readonly ratioFirst: number
  readonly ratioDeep: number | null
  readonly met: boolean
  readonly plans?: { readonly first?: string; readonly deep?: string }
}

const runStore = async (store: "postgresql" | "memory") => {
  const scope = Effect.runSync(Scope.make())
  let child: Child | undefined
  let prepared: PgPrepared | undefined
  try {
    const total = sizes.products + sizes.users + others.count * others.size * 2
    log(`${store}: ${total.toLocaleString("en")} records`)
    let secret: string
    const load: Record<string, number | null> = {}
    if (store === "postgresql") {
      prepared = await preparePg(scope)
      secret = prepared.secret
      load.loadMs = prepared.loadMs
      load.keysMs = prepared.keysMs
      log("postgresql: starting the server (migrate: access-path indexes, ANALYZE)")
      child = await startChild(["postgresql", "--url", prepared.url])
      load.startupMs = child.ready.startupMs
      const size = (await prepared.sql.runPromise(
        Effect.flatMap(SqlClient.SqlClient, (s) => s.unsafe(`SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) AS size FROM pg_partition_tree('records')`))
      )) as ReadonlyArray<{ size: string }>
      log(`postgresql: server ready, startup ${(child.ready.startupMs / 1000).toFixed(0)} s; records with its indexes: ${size[0]?.size}`)
    } else {
      child = await startChild(
        ["memory", "--products", String(sizes.products), "--users", String(sizes.users), "--others", args.others!, "--unit", args.unit!],
        [`--max-old-space-size=${args.heap}`]
      )
      secret = child.ready.secret!
      load.loadMs = child.ready.loadMs
      load.startupMs = child.ready.startupMs
      log(`memory: loaded in ${((child.ready.loadMs ?? 0) / 1000).toFixed(0)} s, heap ${child.ready.heapMiB.toLocaleString("en")} MiB`)
    }
    const port = child.ready.port
    const goal = goals[store]
    const baselinePath = "/api/v3/credentials/current"
    const before = await measure(port, baselinePath, secret)
    const rows: Array<Row> = []
    let baseline = before
    const specs = [...listsOf(products, sizes.products), ...listsOf(users, sizes.users)]
    const pending: Array<{ spec: ListSpec; first: Timing; deep: Timing | null; deepNote: string | null; after: ListQuery["after"]; path: string }> = []
    for (const spec of specs) {
      const path = `/api/v3${spec.definition.path}?${new URLSearchParams(spec.params).toString()}`
      const page = await get(port, path, secret)
      if (page.status !== 200) throw new Error(`GET ${path}: ${page.status} ${JSON.stringify(page.body).slice(0, 300)}`)
      const first = await measure(port, path, secret)
      let deep: Timing | null = null
      let deepNote: string | null = null
      let after: ListQuery["after"]
      const cursor = nextCursorOf(page.body)
      const target = deepTarget(spec, spec.definition.type === "product" ? sizes.products : sizes.users)
      if (cursor === null) deepNote = "one page"
      else if (target === null) deepNote = "no record"
      else {
        const deepCursor = await movedCursor(cursor, { v: target.value, i: target.id }, child.sign)
        after = target
        deep = await measure(port, `${path}&cursor=${encodeURIComponent(deepCursor)}`, secret)
        if (deep.rows === 0) deepNote = "empty page"
      }
      pending.push({ spec, first, deep, deepNote, after, path })
      log(
        `${spec.label.padEnd(52)} first ${fmt(first.p50).padStart(6)} / ${fmt(first.p95).padStart(6)} ms` +
          (deep ? `   deep ${fmt(deep.p50).padStart(6)} / ${fmt(deep.p95).padStart(6)} ms` : `   deep: ${deepNote}`)
      )
    }
    const afterBaseline = await measure(port, baselinePath, secret)
    baseline = { ...before, p50: (before.p50 + afterBaseline.p50) / 2, p95: Math.max(before.p95, afterBaseline.p95) }
    for (const { spec, first, deep, deepNote, after, path } of pending) {
      const met = first.p95 <= goal && (deep === null || deep.p95 <= goal)
      const row: Row = {
        query: spec.label,
        path,
        first,
        deep,
        deepNote,
        ratioFirst: first.p50 / baseline.p50,
        ratioDeep: deep ? deep.p50 / baseline.p50 : null,
        met
      }
      if (!met && prepared) {
        const plans: { first?: string; deep?: string } = {}
        if (first.p95 > goal) plans.first = await explain(prepared, spec, undefined)
        if (deep && deep.p95 > goal) plans.deep = await explain(prepared, spec, after)
        rows.push({ ...row, plans })
      } else rows.push(row)
    }
    return { store, goalMs: goal, baseline: { before, after: afterBaseline, p50: baseline.p50 }, load, rows }
  } finally {
    await child?.stop()
    await prepared?.sql.dispose()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

// ---------------------------------------------------------------------------------------

const printResult = (result: Awaited<ReturnType<typeof runStore>>) => {
  const { store, goalMs, baseline, rows } = result
  console.log(
    `\n## ${store}: ${sizes.products.toLocaleString("en")} products + ${sizes.users.toLocaleString("en")} users, ` +
      `+ ${others.count} × ${others.size.toLocaleString("en")} of each; goal p95 ≤ ${goalMs} ms\n`
  )
  console.log(
    `baseline GET /credentials/current: p50 ${fmt(baseline.before.p50)} ms before, ${fmt(baseline.after.p50)} ms after ` +
      `(p95 ${fmt(baseline.before.p95)} / ${fmt(baseline.after.p95)}); ratios are p50 ÷ ${fmt(baseline.p50)} ms\n`
  )
  console.log("| query | rows | first p50 | first p95 | deep p50 | deep p95 | × baseline (first / deep) | goal met? |")
  console.log("|---|---:|---:|---:|---:|---:|---:|---|")
  for (const r of rows) {
    const deep = r.deep ? [fmt(r.deep.p50), fmt(r.deep.p95)] : [`– (${r.deepNote})`, "–"]
    console.log(
      `| ${r.query} | ${r.first.rows} | ${fmt(r.first.p50)} | ${fmt(r.first.p95)} | ${deep[0]} | ${deep[1]} | ` +
        `${r.ratioFirst.toFixed(1)} / ${r.ratioDeep === null ? "–" : r.ratioDeep.toFixed(1)} | ${r.met ? "yes" : "**no**"} |`
    )
  }
  const missed = rows.filter((r) => !r.met)
  console.log(`\n${rows.length - missed.length} of ${rows.length} lists meet p95 ≤ ${goalMs} ms (first and deep page).`)
  for (const r of missed) {
    for (const [which, plan] of Object.entries(r.plans ?? {})) console.log(`\nEXPLAIN ANALYZE, ${r.query}, ${which} page:\n${plan}`)
  }
}

const main = async () => {
  const started = Date.now()
  const load = { start: loadavg()[0]!, end: 0 }
  log(`node ${process.version}, ${cpus().length} cores, load average ${load.start.toFixed(1)}`)
  const results = []
  for (const store of stores) {
    const result = await runStore(store)
    results.push(result)
    printResult(result)
  }
  load.end = loadavg()[0]!
  console.log(`\nload average ${load.start.toFixed(1)} at the start, ${load.end.toFixed(1)} at the end; ${((Date.now() - started) / 1000).toFixed(0)} s in all`)
  if (args.json) {
    writeFileSync(
      args.json,
      JSON.stringify({ date: new Date().toISOString(), node: process.version, sizes, others, samples, warmup, deepAt, loadAverage: load, results }, null, 2)
    )
    log(`wrote ${args.json}`)
  }
  agent.destroy()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
