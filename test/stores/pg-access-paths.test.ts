/**
 * Access paths are indexes (docs/architecture.md): on PostgreSQL, every list a resource
 * description declares, and every housekeeping read across tenants, is answered from one of
 * the indexes derived from the descriptions, never by a scan of `records`.
 *
 * The database holds rows of every type across several tenants, analyzed. For every described
 * resource, the `ListQuery` is the one the machinery builds (`listResources`, with a `Records`
 * that only records it), for each filter, each sort in both directions, the trash and `q`; the
 * plan (`EXPLAIN` of the very statement `Records.list` runs) must not scan `records` and must
 * use the index of the path. Without that index the check fails (the last test drops one,
 * inside a transaction it rolls back). A page after a keyset position (each sort both ways,
 * after a value and after a null) must seek to it: the sort expression is a condition of the
 * index scan, never a filter applied while walking the index from its start.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Statement } from "@effect/sql/Statement"
import {
  type AccessPath,
  accessPaths,
  Caller,
  type CallerInfo,
  Crypto,
  declaredAccessPaths,
  type ListInput,
  type ListQuery,
  listResources,
  Records,
  type ResourceDefinition,
  describedResources,
  SEARCH_FIELD,
  type Tenant,
  type Where
} from "@syllabus/core"
import { ephemeralKeys, makeNodeCrypto } from "@syllabus/http"
import { Context, Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import {
  listStatement,
  partitionOf,
  pgLayer,
  pruneStatement,
  scanStatement
} from "../../packages/pg/src/index.js"
import { freshPgDatabase } from "../support/pg.js"
import { indexOf, planOf } from "../support/pg-plans.js"

class TestDatabase extends Context.Tag("test/TestDatabase")<TestDatabase, { readonly url: string }>() {}

// Loading and analyzing every type's rows takes seconds on a busy machine: this test checks
// plans, not the API's deadlines (pg-deadlines.test.ts does), so its statements get a minute.
const LOADING_TIMEOUTS = { statementMs: 60_000, queryMs: 90_000 }
const DatabaseLive = Layer.scoped(TestDatabase, freshPgDatabase)
const StoresLive = Layer.unwrapEffect(Effect.map(TestDatabase, ({ url }) => pgLayer(url, { timeouts: LOADING_TIMEOUTS }))).pipe(
  Layer.provideMerge(DatabaseLive)
)

const tenant: Tenant = { accountId: "acc_big", environment: "production" }
const otherTenants: ReadonlyArray<Tenant> = [
  { accountId: "acc_big", environment: "sandbox" },
  { accountId: "acc_small_1", environment: "production" },
  { accountId: "acc_small_2", environment: "production" }
]
const md5 = (text: string) => createHash("md5").update(text).digest("hex")

// ---------------------------------------------------------------------------------------
// The data: every field a path reads, with values of its kind, spread so that a filter's
// value or a parent selects a small part of a type.

type Kind = "equals" | "text" | "number"

const fieldsOfPath = (path: AccessPath): ReadonlyArray<readonly [string, Kind]> =>
  path.kind === "search"
    ? [[path.field, "text"]]
    : [
      ...path.equals.map((field) => [field, "equals"] as const),
      ...path.order.flatMap(({ field, kind }) => field === "id" ? [] : [[field, kind] as const])
    ]

/** The value of `field` in row `i`, as SQL over `i`. */
const valueSql = (field: string, kind: Kind): string => {
  if (field === "deleted") return "to_jsonb(i % 10 = 0)"
  if (field === SEARCH_FIELD) return "to_jsonb('Name ' || md5(i::text))"
  if (kind === "number") return "to_jsonb(i)"
  if (kind === "text") return "to_jsonb(md5((i * 7)::text))"
  return "to_jsonb('v' || (i % 97))"
}

/** Every path of the release: its fields are the ones the rows carry. */
const allPaths: ReadonlyArray<AccessPath> = accessPaths()
const searchableTypes = new Set(allPaths.filter((path) => path.kind === "search").map((path) => path.type))

const load = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const fieldsByType = new Map<string, Map<string, Kind>>()
  for (const path of allPaths) {
    const fields = fieldsByType.get(path.type) ?? new Map<string, Kind>()
    for (const [field, kind] of fieldsOfPath(path)) if (!fields.has(field)) fields.set(field, kind)
    fieldsByType.set(path.type, fields)
  }
  for (const [type, fields] of fieldsByType) {
    // A parent field names one of ten parents (`parent_0` … `parent_9`).
    const parentFields = new Set(
      describedResources.filter((d) => d.type === type).flatMap((d) => {
        const out: Array<string> = []
        for (let parent = d.parent; parent; parent = parent.parent) out.push(parent.field)
        return out
      })
    )
    const data = [...fields].map(([field, kind]) =>
      `'${field}', ${parentFields.has(field) ? "to_jsonb('parent_' || (i % 10))" : valueSql(field, kind)}`
    )
    const json = sql.literal(`jsonb_build_object(${[`'object', '${type}'`, ...data].join(", ")})`)
    // A searchable type has more rows in the big tenant: on a few thousand rows, reading
    // the tenant's rows and matching each is cheaper than the trigram index, and the planner
    // knows it (each type is a partition of its own); a school's catalog is larger.
    const rows = searchableTypes.has(type) ? 10_000 : 3000
    for (const [t, count] of [[tenant, rows] as const, ...otherTenants.map((t) => [t, 400] as const)]) {
      yield* sql`
        INSERT INTO records (account_id, environment, type, id, revision, data)
        SELECT ${t.accountId}, ${t.environment}, ${type}, ${type} || '_' || lpad(i::text, 8, '0'), 1, ${json}
        FROM generate_series(1, ${count}) AS i`
    }
  }
  yield* sql`ANALYZE records`
})

// ---------------------------------------------------------------------------------------
// The queries the machinery builds

/** `listResources` of `definition`, with a `Records` that records the `ListQuery` it is asked for. */
const machineryQuery = (definition: ResourceDefinition, input: Partial<ListInput>) =>
  Effect.gen(function*() {
    const parentIds: Record<string, string> = {}
    for (let parent = definition.parent; parent; parent = parent.parent) parentIds[parent.field] = "parent_3"
    let asked: ListQuery | undefined
    const records = {
      get: (t: Tenant, type: string, id: string) =>
        Effect.succeed({ type, id, tenant: t, revision: 1, data: { ...parentIds, deleted: false } }),
      list: (_t: Tenant, _type: string, query: ListQuery) => Effect.sync(() => (asked = query, []))
    } as unknown as Records["Type"]
    // Every capability for every record: the list reads no scope condition.
    const caller = { tenant, requestId: "req_test", grant: { get: () => "all" } } as unknown as CallerInfo
    yield* listResources(definition, {
      parentIds,
      limit: 50,
      cursor: undefined,
      sort: undefined,
      deleted: false,
      q: undefined,
      filters: {},
      ...input
    }).pipe(
      Effect.provideService(Records, records),
      Effect.provideService(Caller, caller),
      Effect.provideService(Crypto, makeNodeCrypto(ephemeralKeys()))
    )
    if (asked === undefined) throw new Error(`listResources of ${definition.type} read nothing`)
    return asked
  })

// ---------------------------------------------------------------------------------------
// Plans


/** The index of an ordered path of a resource: its parents and `deleted`, then `equals`, then `order` and `id`. */
const resourcePath = (
  definition: ResourceDefinition,
  equals: ReadonlyArray<string>,
  sort: ResourceDefinition["sorts"][number]
): AccessPath => ({
  kind: "ordered",
  type: definition.type,
  scope: "tenant",
  equals: [...(definition.parent ? [definition.parent.field] : []), "deleted", ...equals],
  order: sort.field === "id" ? [{ field: "id", kind: "text" }] : [{ field: sort.field, kind: sort.kind }, { field: "id", kind: "text" }]
})

interface Case {
  readonly name: string
  readonly definition: ResourceDefinition
  readonly input: Partial<ListInput>
  /** The index that must serve it, or any index of the type's paths. */
  readonly index: string | "any"
  /**
   * A sort alone (the trash flag its only equality): an index of the type in the sort's order
   * without the flag serves as well when the flag is not selective (nine rows in ten are live
   * here), and the planner may take it: no sort node then, and still an index.
   */
  readonly orderOnly?: boolean
}

const cases: ReadonlyArray<Case> = describedResources.flatMap((definition) => {
  const out: Array<Case> = []
  const defaultSort = definition.sorts[0]!
  for (const sort of definition.sorts) {
    for (const name of [sort.name, `-${sort.name}`]) {
      out.push({ name: `sort=${name}`, definition, input: { sort: name }, index: indexOf(resourcePath(definition, [], sort)), orderOnly: true })
    }
  }
  if (definition.trash) {
    out.push({ name: "deleted=true", definition, input: { deleted: true }, index: indexOf(resourcePath(definition, [], defaultSort)) })
  }
  for (const [name, filter] of Object.entries(definition.filters ?? {})) {
    out.push({
      name: `${name}=v7`,
      definition,
      input: { filters: { [name]: "v7" } },
      // An equality filter's path is its field then the default sort. A range (`text`,
      // `number`) has a path ordered by its field (records/access-paths.ts), and the planner may
      // as well walk the default order's index when the range holds most rows: an index either way.
      index: filter.on.match === "equals" ? indexOf(resourcePath(definition, [filter.on.field], defaultSort)) : "any"
    })
    if (filter.on.match === "text") {
      // A narrow range (a 256th of the rows): read from the range's own index.
      const op = filter.where("x" as never)[0]?.op
      out.push({
        name: `${name}=narrow`,
        definition,
        input: { filters: { [name]: op === "gt" || op === "gte" ? "ff" : "01" } },
        index: indexOf(resourcePath(definition, [], { name, field: filter.on.field, kind: "text" }))
      })
    }
    // In another order: the filter's index or the order's, never a scan.
    for (const sort of definition.sorts.slice(1)) {
      for (const sortName of [sort.name, `-${sort.name}`]) {
        out.push({ name: `${name}=v7&sort=${sortName}`, definition, input: { filters: { [name]: "v7" }, sort: sortName }, index: "any" })
      }
    }
  }
  if (definition.search) {
    // Six characters of one row's search text: a rare trigram set, as a real query is.
    out.push({
      name: "q",
      definition,
      input: { q: md5("1234").slice(3, 9).toUpperCase() },
      // Under a parent, walking the parent's few rows in order may be cheaper: an index either way.
      index: definition.parent ? "any" : indexOf({ kind: "search", type: definition.type, scope: "tenant", field: SEARCH_FIELD })
    })
  }
  return out
})

/**
 * Each type's rows are a partition of a few thousand rows here, which the planner would rather
 * read whole: the checks ask whether an index serves each read, as it must at a school's scale.
 */
const lastResort = { seqScans: "last resort" } as const

/** The indexes of a type: its paths' (`records_ap_<type>_…`) and its partition's primary key. */
const isIndexOfType = (type: string, name: string | undefined) =>
  name !== undefined && (name.startsWith(`records_ap_${type}_`) || name === `${partitionOf(type)}_pkey`)

/** Whether a plan sorts rows (rather than reading them in an index's order). */
const hasSort = (nodes: ReadonlyArray<{ readonly "Node Type": string }>) =>
  nodes.some((n) => n["Node Type"] === "Sort" || n["Node Type"] === "Incremental Sort")

const checkCase = (c: Case) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const query = yield* machineryQuery(c.definition, c.input)
    const plan = yield* planOf(yield* listStatement(sql, tenant, c.definition.type, query), lastResort)
    const label = `${c.definition.type} ${c.name}: ${plan.text}`
    expect(plan.seqScans, label).toBe(0)
    if (c.index === "any") {
      expect(plan.indexes.some((name) => isIndexOfType(c.definition.type, name)), label).toBe(true)
    } else if (c.orderOnly && !plan.indexes.includes(c.index)) {
      expect(plan.indexes.some((name) => isIndexOfType(c.definition.type, name)) && !hasSort(plan.nodes), label).toBe(true)
    } else {
      expect(plan.indexes, label).toContain(c.index)
    }
  })

/**
 * A deep page: the query of `sort` (default filters), after a position in the middle of the
 * rows (`value` of the sort's kind) or after a null. It must be read from the sort's index,
 * seeking to the position: every scan of that index has the sort expression (or `id`) in its
 * index condition, and no scan filters on it.
 */
const checkDeepPage = (
  definition: ResourceDefinition,
  sort: ResourceDefinition["sorts"][number],
  direction: "asc" | "desc",
  at: "value" | "null"
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const query = yield* machineryQuery(definition, { sort: direction === "asc" ? sort.name : `-${sort.name}` })
    const value = at === "null" ? null : sort.kind === "number" ? 1500 : "8"
    const after = { value: sort.field === "id" ? null : value, id: `${definition.type}_00001500` }
    const plan = yield* planOf(yield* listStatement(sql, tenant, definition.type, { ...query, after }), lastResort)
    const label = `${definition.type} sort=${direction === "asc" ? "" : "-"}${sort.name} after ${at}: ${plan.text}`
    const index = indexOf(resourcePath(definition, [], sort))
    // The path's index, or (a sort alone: `Case.orderOnly`) another index of the type in its order.
    const own = plan.nodes.filter((n) => n["Index Name"] === index)
    const scans = own.length > 0 || hasSort(plan.nodes)
      ? own
      : plan.nodes.filter((n) => isIndexOfType(definition.type, n["Index Name"]))
    expect(plan.seqScans, label).toBe(0)
    expect(scans.length, label).toBeGreaterThan(0)
    // In EXPLAIN, a data field is `(data -> '<field>'::text)`; the `id` column is `id`.
    const mentionsSort = (text: string | undefined) =>
      text !== undefined && (sort.field === "id" ? /\bid [<>]/.test(text) : text.includes(`'${sort.field}'::text`))
    for (const scan of scans) {
      expect(mentionsSort(scan["Index Cond"]), label).toBe(true)
      expect(mentionsSort(scan.Filter), label).toBe(false)
    }
  })

/** A housekeeping read as its call site makes it: `equals` a value, the first order field bounded. */
const housekeepingStatements = (path: AccessPath) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (path.kind !== "ordered") return []
    const where: Array<Where> = path.equals.map((field) => ({ field, op: "eq", value: "v7" }))
    const bound = path.order[0]
    if (bound !== undefined && bound.field !== "id") {
      where.push({ field: bound.field, op: "lte", value: bound.kind === "number" ? 10 : "0" })
    }
    const statements: Array<Statement<unknown>> = [yield* scanStatement(sql, path.type, where, 100)]
    if (path.equals.length === 0 && bound !== undefined && bound.kind === "text") {
      statements.push(yield* pruneStatement(sql, path.type, bound.field, "0", 1_000))
    }
    return statements
  })

layer(StoresLive, { excludeTestServices: true, timeout: "180 seconds" })("PostgreSQL access paths", (it) => {
  describe("every declared read is an index", () => {
    // Loading is the slow part (every type in several tenants); give it room on a busy machine.
    it.effect("rows of every type in several tenants", () => load, 180_000)

    it.effect("every described resource: each sort both ways, the trash, each filter, q", () =>
      Effect.gen(function*() {
        // Every description yields cases; a resource without a filter or `q` still has its sorts.
        expect(new Set(cases.map((c) => c.definition.type)).size).toBe(describedResources.length)
        for (const c of cases) yield* checkCase(c)
      }))

    it.effect("a deep page seeks its position: each sort both ways, after a value and after a null", () =>
      Effect.gen(function*() {
        for (const definition of describedResources) {
          for (const sort of definition.sorts) {
            for (const direction of ["asc", "desc"] as const) {
              for (const at of sort.field === "id" ? ["value"] as const : ["value", "null"] as const) {
                yield* checkDeepPage(definition, sort, direction, at)
              }
            }
          }
        }
      }))

    it.effect("housekeeping across tenants (scan, prune) reads an index", () =>
      Effect.gen(function*() {
        for (const path of declaredAccessPaths.filter((p) => p.scope === "all")) {
          for (const statement of yield* housekeepingStatements(path)) {
            const plan = yield* planOf(statement, lastResort)
            const label = `${path.type}: ${plan.text}`
            expect(plan.seqScans, label).toBe(0)
            // Paths of one type may share their leading columns: any of the type's indexes serves.
            expect(plan.indexes.some((name) => name.startsWith(`records_ap_${path.type}_`)), label).toBe(true)
          }
        }
      }))

    it.effect("lists outside the machinery (operations, items, deliveries, attempts, events, the trail) read an index", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const lists = declaredAccessPaths.filter((p) => p.scope === "tenant")
        expect(lists.length).toBeGreaterThan(0)
        for (const path of lists) {
          if (path.kind !== "ordered") continue
          const [first] = path.order
          for (const direction of ["asc", "desc"] as const) {
            const query: ListQuery = {
              where: path.equals.map((field) => ({ field, op: "eq", value: "v7" })),
              sort: { field: first?.field ?? "id", kind: first?.kind ?? "text", direction },
              limit: 51
            }
            const plan = yield* planOf(yield* listStatement(sql, tenant, path.type, query), lastResort)
            const label = `${path.type} by ${path.equals.join(", ")} ${direction}: ${plan.text}`
            expect(plan.seqScans, label).toBe(0)
            // A list of a type in ID order is the primary key's own order: either index serves it.
            const byIdAlone = path.equals.length === 0 && path.order.length === 1 && first?.field === "id"
            expect(plan.indexes.some((name) => name.startsWith(`records_ap_${path.type}_`) || (byIdAlone && name === `${partitionOf(path.type)}_pkey`)), label).toBe(true)
          }
        }
      }))

    it.effect("without its index, a declared list fails the check", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const c = cases.find((c) => c.definition.type === "product" && c.name === "status=v7")!
        // DDL is transactional: the index is back when the transaction rolls back.
        const failed = yield* sql.withTransaction(
          Effect.gen(function*() {
            yield* sql.unsafe(`DROP INDEX ${c.index}`)
            const exit = yield* Effect.exit(checkCase(c))
            return yield* Effect.fail({ rolledBack: exit })
          })
        ).pipe(Effect.catchAll((e) => Effect.succeed("rolledBack" in (e as object) ? (e as { rolledBack: unknown }).rolledBack : e)))
        expect((failed as { _tag: string })._tag).toBe("Failure")
        yield* checkCase(c)
      }))
  })
})
