/**
 * The in-memory store at a school's volume, through the store ports: BENCH_ROWS products
 * (default 100,000) in one tenant and 20 other tenants of 1,000 each. Prints the median of
 * BENCH_RUNS runs (default 7) of each read, and how long an unrelated tenant's insert (and an
 * insert of the big tenant into another type) takes while a 300 ms unit of work runs. The
 * lists are shaped as `GET /products` builds them (`deleted=false` first), so they read the
 * declared access paths (the first call of each is what a client's first request pays).
 *
 *   node --import tsx bench/memory-scale.ts
 *   BENCH_ROWS=1000000 node --import tsx bench/memory-scale.ts
 *
 * BENCH_MEMORY_MODULE names another build of the store to measure (a path to its `index.ts`),
 * e.g. the previous one checked out elsewhere, for a before/after.
 *
 * Products carry `search_text` as `createResource` stores it (name and external id, one a
 * line), so `q` reads the declared search path. BENCH_SEARCH=off builds the store without the
 * search paths (`memoryStore` of the other paths): `q` then walks, as before the search index.
 * With `--expose-gc`, the heap after the load (after a full GC) is printed, per record:
 *
 *   node --expose-gc --import tsx bench/memory-scale.ts
 *   BENCH_SEARCH=off node --expose-gc --import tsx bench/memory-scale.ts
 */
import { type AccessPath, accessPaths, type ListQuery, Records, type Tenant, UnitOfWork } from "@syllabus/core"
import { Duration, Effect, Fiber, type Layer } from "effect"
import { performance } from "node:perf_hooks"

const rows = Number(process.env["BENCH_ROWS"] ?? 100_000)
const runs = Number(process.env["BENCH_RUNS"] ?? 7)
const search = process.env["BENCH_SEARCH"] !== "off"
const modulePath = process.env["BENCH_MEMORY_MODULE"] ?? "../packages/memory/src/index.js"
const { memoryStore } = (await import(modulePath)) as {
  memoryStore: (paths: ReadonlyArray<AccessPath>) => Layer.Layer<Records | UnitOfWork>
}
const MemoryStore = memoryStore(search ? accessPaths() : accessPaths().filter((path) => path.kind !== "search"))
const gc = (globalThis as { gc?: () => void }).gc
const heapUsed = () => {
  gc?.()
  return process.memoryUsage().heapUsed
}

const big: Tenant = { accountId: "acc_big", environment: "production" }
const other = (i: number): Tenant => ({ accountId: `acc_${i}`, environment: "production" })
const statuses = ["draft", "published", "archived"] as const

const nameOf = (i: number) => `Product ${((i * 7_919) % rows).toString(36)}`

const product = (i: number) => ({
  object: "product",
  id: `prod_${String(i).padStart(10, "0")}`,
  name: nameOf(i),
  external_id: `ext-${i}`,
  search_text: `${nameOf(i)}\next-${i}`,
  status: statuses[i % 3]!,
  position: i,
  deleted: i % 50 === 0,
  created_at: `2024-01-${String(1 + (i % 28)).padStart(2, "0")}T00:00:00Z`
})

const ms = (start: number) => performance.now() - start
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(0))

const program = Effect.gen(function* () {
  const records = yield* Records
  const uow = yield* UnitOfWork
  const load = (tenant: Tenant, n: number) =>
    Effect.gen(function* () {
      for (let from = 0; from < n; from += 10_000) {
        yield* uow.transaction(
          Effect.forEach(
            Array.from({ length: Math.min(10_000, n - from) }, (_, k) => from + k),
            (i) => records.insert(tenant, "product", product(i).id, product(i)),
            { discard: true }
          )
        )
      }
    })
  const heapBefore = heapUsed()
  let start = performance.now()
  yield* load(big, rows)
  for (let t = 0; t < 20; t++) yield* load(other(t), 1_000)
  console.log(
    `load: ${rows.toLocaleString("en")} + 20 × 1,000 records in ${fmt(ms(start) / 1000)} s (search index ${search ? "on" : "off"})`
  )
  if (gc !== undefined) {
    const heap = heapUsed() - heapBefore
    console.log(`heap after the load: ${fmt(heap / 2 ** 20)} MiB, ${fmt(heap / (rows + 20_000))} bytes per record`)
  }

  const middle = product(Math.floor(rows / 2))
  const byName = { field: "name", kind: "text", direction: "asc" } as const
  const live = { field: "deleted", op: "eq", value: false } as const
  const published = { field: "status", op: "eq", value: "published" } as const
  const q = (value: string) => ({ field: "search_text", op: "contains", value }) as const
  // A product in the middle whose name is no prefix of another (base 36 of 4 digits at 1M).
  const rare = nameOf(Math.floor(rows / 2) + 1).toUpperCase()
  const rareId = `EXT-${Math.floor(rows / 3) + 1}`
  const lists: ReadonlyArray<readonly [string, ListQuery]> = [
    ["first page, sort=name", { where: [live], sort: byName, limit: 51 }],
    ["deep page, sort=name (after the middle)", { where: [live], sort: byName, after: { value: middle.name, id: middle.id }, limit: 51 }],
    ["deep page, sort=-name", { where: [live], sort: { ...byName, direction: "desc" }, after: { value: middle.name, id: middle.id }, limit: 51 }],
    ["first page, by id", { where: [live], sort: { field: "id", kind: "text", direction: "asc" }, limit: 51 }],
    ["status=published (default order, by id)", { where: [live, published], sort: { field: "id", kind: "text", direction: "desc" }, limit: 51 }],
    ["status=published, sort=name, deep", { where: [live, published], sort: byName, after: { value: middle.name, id: middle.id }, limit: 51 }],
    ["q=product (contains, every record matches)", { where: [live, q("product")], sort: byName, limit: 51 }],
    ["q=product (every record), by id", { where: [live, q("product")], sort: { field: "id", kind: "text", direction: "desc" }, limit: 51 }],
    ["q=product a (names in a…: 5% at 1M, all at the end of -name), sort=-name", { where: [live, q("product a")], sort: { ...byName, direction: "desc" }, limit: 51 }],
    [`q=${rare} (a whole name: 1 match)`, { where: [live, q(rare)], sort: byName, limit: 51 }],
    [`q=${rareId} (1 match), by id`, { where: [live, q(rareId)], sort: { field: "id", kind: "text", direction: "desc" }, limit: 51 }],
    ["q=zzzq (no match)", { where: [live, q("zzzq")], sort: byName, limit: 51 }]
  ]
  for (const [label, query] of lists) {
    start = performance.now()
    yield* records.list(big, "product", query)
    const first = ms(start)
    const times: Array<number> = []
    const cpus: Array<number> = []
    for (let r = 0; r < runs; r++) {
      start = performance.now()
      const cpu = process.cpuUsage()
      yield* records.list(big, "product", query)
      times.push(ms(start))
      const used = process.cpuUsage(cpu)
      cpus.push((used.user + used.system) / 1000)
    }
    // The process's CPU time beside the wall time: on a shared machine a read longer than a
    // time slice waits for the CPU, which only the wall time counts.
    console.log(`${label}: ${fmt(median(times))} ms, cpu ${fmt(median(cpus))} ms (first call ${fmt(first)} ms)`)
  }
  const counts: Array<number> = []
  start = performance.now()
  yield* records.count(big, "product", [published], [])
  const firstCount = ms(start)
  for (let r = 0; r < runs; r++) {
    start = performance.now()
    yield* records.count(big, "product", [{ field: "status", op: "eq", value: "published" }], [])
    counts.push(ms(start))
  }
  console.log(`count status=published: ${fmt(median(counts))} ms (first call ${fmt(firstCount)} ms)`)
  const scans: Array<number> = []
  for (let r = 0; r < runs; r++) {
    start = performance.now()
    yield* records.scan("product", [{ field: "status", op: "eq", value: "archived" }], 100)
    scans.push(ms(start))
  }
  console.log(`scan product status=archived limit 100 (all tenants): ${fmt(median(scans))} ms`)

  // A long unit of work of the big tenant; meanwhile, inserts elsewhere.
  const waits = (tenant: Tenant, type: string) =>
    Effect.gen(function* () {
      const results: Array<number> = []
      for (let r = 0; r < 3; r++) {
        const long = yield* Effect.fork(
          uow.transaction(
            Effect.gen(function* () {
              yield* records.update(big, "product", product(0).id, product(0))
              yield* Effect.sleep(Duration.millis(300))
            })
          )
        )
        yield* Effect.sleep(Duration.millis(20))
        start = performance.now()
        yield* records.insert(tenant, type, `x_${type}_${r}_${Math.random()}`, { n: r })
        results.push(ms(start))
        yield* Fiber.join(long)
      }
      return median(results)
    })
  console.log(`another tenant's insert during a 300 ms unit of work: ${fmt(yield* waits(other(0), "product"))} ms`)
  console.log(`the same tenant's request-log insert during it: ${fmt(yield* waits(big, "request"))} ms`)
  // No prune of products here: their figures are kept, and the store refuses to prune a counted
  // type (retention prunes the streams: bench/retention.ts).
})

await Effect.runPromise(Effect.provide(program, MemoryStore))
