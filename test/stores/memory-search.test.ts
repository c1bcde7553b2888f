/**
 * The memory store's search index (`q`: a case-insensitive `contains` on a declared search
 * field): pages read through it are exactly the pages of the plain filter and sort it replaces
 * (mixed case, non-ASCII, surrogate pairs, values of other types, ties, keyset pages both
 * ways, short queries, no match), writes keep it, and a rare `q` no longer walks the tenant.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import {
  type AccessPath,
  accessPaths,
  type ListQuery,
  Records,
  type SortSpec,
  type StoredRecord,
  type Tenant,
  UnitOfWork,
  type Where
} from "@syllabus/core"
import * as Bucket from "../../packages/memory/src/bucket.js"
import * as BTree from "../../packages/memory/src/btree.js"
import { instrumentation, memoryStore } from "../../packages/memory/src/index.js"
import * as Query from "../../packages/memory/src/query.js"
import { searchSpecOf, trigramsOf } from "../../packages/memory/src/search.js"
import { random, reference } from "./list-reference.js"

const tenantA: Tenant = { accountId: "acc_a", environment: "production" }
const tenantB: Tenant = { accountId: "acc_b", environment: "production" }

const ids = (records: ReadonlyArray<StoredRecord>) => records.map((r) => r.id)


/**
 * Pieces of text whose lower case is tricky: accents, a dotted capital I (lower-cased to two
 * code units), a final sigma, ß, a surrogate pair (𝔘 has no lower case), a lone surrogate.
 */
const pieces = [
  "Alpha", "alpha", "ALPHA", "École", "école", "ÉCOLE", "𝔘nicode", "𝔘", "İstanbul", "ΣΟΦΙΑΣ", "σοφια",
  "Straße", "STRASSE", "ab", "a b", "x", "", "\ud835", "B", "bb", "Product 12", "zz"
]

/**
 * Queries: 0–2 code units (no trigram: the walk), longer, with no match, across pieces, split
 * pairs; "İs" is 2 code units but 3 once lower-cased, so it reads the index.
 */
const queries = [
  "", "a", "AL", "é", "𝔘", "\ud835", "\udd18", "ß", "alp", "ALPHA", "lpha", "éco", "ÉCOLE", "cole", "𝔘n", "𝔘ni",
  "\udd18nic", "a𝔘", "İs", "İst", "i̇st", "ist", "σοφ", "ΣΟΦΙΑΣ", "ιας", "straß", "strasse", "zzq", "a b", "b a", "pha a",
  "alphaalpha", "product 1", "duct", "x x", "bbb", "zz"
]

const itemOf = (next: () => number, i: number): { id: string; data: Record<string, unknown> } => {
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)]!
  const data: Record<string, unknown> = {}
  const title = next() < 0.85
    ? Array.from({ length: 1 + Math.floor(next() * 3) }, () => pick(pieces)).join(pick([" ", "", "-", "\n"]))
    : pick([null, undefined, 3, { x: "alpha" }, true, ["alpha"]])
  if (title !== undefined) data["title"] = title
  const rank = pick([1, 2, -1.5, 100, 0, null, undefined, "7"])
  if (rank !== undefined) data["rank"] = rank
  const status = pick(["open", "closed", null, undefined])
  if (status !== undefined) data["status"] = status
  return { id: `r_${pick(["", "A", "a", "_"])}${Math.floor(next() * 1e6).toString(36)}_${i}`, data }
}

const sorts: ReadonlyArray<SortSpec> = [
  { field: "id", kind: "text", direction: "asc" },
  { field: "id", kind: "text", direction: "desc" },
  { field: "title", kind: "text", direction: "asc" },
  { field: "title", kind: "text", direction: "desc" },
  { field: "rank", kind: "number", direction: "asc" },
  { field: "rank", kind: "number", direction: "desc" }
]

const filtersOf = (q: string): ReadonlyArray<ReadonlyArray<Where>> => [
  [{ field: "title", op: "contains", value: q }],
  [{ field: "status", op: "eq", value: "open" }, { field: "title", op: "contains", value: q }],
  [{ field: "title", op: "contains", value: q }, { field: "rank", op: "gte", value: 0 }]
]

/** The position after the last record of a page, as a client's cursor holds it. */
const positionAfter = (sort: SortSpec, last: StoredRecord): ListQuery["after"] => {
  const value = sort.field === "id" ? last.id : last.data[sort.field]
  return { value: typeof value === "string" || typeof value === "number" ? value : null, id: last.id }
}

/**
 * Hand the thread to the test runner (a macrotask): long synchronous stretches would starve its
 * messages on a busy machine (`Effect.sleep` under `it.effect` is the test clock's, no turn).
 */
const breathe = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const globalKey = (key: { readonly name: string; readonly value: string }) => JSON.stringify(key)

const entryOf = (id: string, data: Record<string, unknown>, revision = 1): Bucket.Entry => ({
  record: { type: "item", id, tenant: tenantA, revision, data: JSON.parse(JSON.stringify(data)) },
  uniques: []
})

/** A search index's content: trigram → ids (to compare an index kept by writes with a built one). */
const contentOf = (bucket: Bucket.Bucket, field: string): Record<string, ReadonlyArray<string>> => {
  const search = bucket.searches.get(searchSpecOf(field).key)!
  const out: Record<string, ReadonlyArray<string>> = {}
  for (const [gram, set] of BTree.ascending(search.grams)) out[gram] = Array.from(BTree.ascending(set), ([id]) => id)
  return out
}

describe("memory store: search index", () => {
  it("trigrams are code units of the lower-cased text, as `includes` compares them", () => {
    expect(Array.from(trigramsOf("abcd"))).toEqual(["abc", "bcd"])
    expect(Array.from(trigramsOf("ab"))).toEqual([])
    // A surrogate pair is two code units: a trigram may hold half of one.
    expect(Array.from(trigramsOf("a𝔘b"))).toEqual(["a\ud835\udd18", "\ud835\udd18b"])
    expect(Array.from(trigramsOf("aaaa"))).toEqual(["aaa"])
  })

  it("id sets (B-trees whose values are their keys) add and remove as a sorted set does, and stay persistent", () => {
    const next = random(3)
    const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
    let set: BTree.KeySet<string> = BTree.empty(compare)
    const plain = new Set<string>()
    const versions: Array<readonly [BTree.KeySet<string>, ReadonlyArray<string>]> = []
    for (let i = 0; i < 20_000; i++) {
      // Mostly appends in order (ids made in order), some anywhere, some removals.
      const r = next()
      const id = r < 0.6 ? `id_${String(i).padStart(6, "0")}` : `id_${String(Math.floor(next() * i)).padStart(6, "0")}`
      if (r > 0.85) {
        set = BTree.remove(set, id)
        plain.delete(id)
      } else {
        set = BTree.add(set, id)
        plain.add(id)
      }
      if (i % 2_000 === 0) versions.push([set, Array.from(plain).sort(compare)])
    }
    expect(Array.from(BTree.ascending(set), ([key, value]) => (key === value ? key : "mismatch"))).toEqual(Array.from(plain).sort(compare))
    expect(BTree.size(set)).toBe(plain.size)
    for (const [version, content] of versions) expect(Array.from(BTree.ascending(version), ([key]) => key)).toEqual(content)
    // A map whose values are not its keys is unaffected by the sharing.
    let map: BTree.Tree<string, number> = BTree.empty(compare)
    for (let i = 0; i < 500; i++) map = BTree.set(map, `k${i}`, i)
    expect(BTree.get(map, "k499")).toBe(499)
    expect(Array.from(BTree.ascending(map)).every(([k, v]) => k === `k${v}`)).toBe(true)
  })

  // Long and synchronous: it hands the thread back between queries (`breathe`).
  it.effect("kept by every write, it holds what a build from the rows gives, and both plans page as the plain sort", () =>
    Effect.gen(function* () {
    const next = random(11)
    const spec = searchSpecOf("title")
    let bucket = Bucket.withIndexes(Bucket.emptyBucket(tenantA, "item"), [spec])
    const live = new Map<string, Bucket.Entry>()
    for (let i = 0; i < 700; i++) {
      const { data, id } = itemOf(next, i)
      const entry = entryOf(id, data)
      bucket = Bucket.putEntry(bucket, entry, live.get(id), globalKey)
      live.set(id, entry)
    }
    const snapshot = bucket
    const before = contentOf(snapshot, "title")
    // Updates (the text changed, changed only in case, or unchanged) and removals.
    const all = Array.from(live.keys())
    for (let i = 0; i < 300; i++) {
      const id = all[Math.floor(next() * all.length)]!
      const current = live.get(id)
      if (current === undefined) continue
      if (i % 3 === 0) {
        bucket = Bucket.dropEntry(bucket, current, globalKey)
        live.delete(id)
        continue
      }
      const title = current.record.data["title"]
      const data = i % 3 === 1
        ? { ...current.record.data, title: itemOf(next, i).data["title"] ?? null }
        : { ...current.record.data, title: typeof title === "string" ? title.toUpperCase() : title ?? null, status: "open" }
      const entry = entryOf(id, data, current.record.revision + 1)
      bucket = Bucket.putEntry(bucket, entry, current, globalKey)
      live.set(id, entry)
    }
    // The earlier version is untouched (persistent), and the kept index is the built one.
    expect(contentOf(snapshot, "title")).toEqual(before)
    let plain = Bucket.emptyBucket(tenantA, "item")
    for (const entry of live.values()) plain = Bucket.putEntry(plain, entry, undefined, globalKey)
    const built = Bucket.withIndexes(plain, [spec])
    expect(contentOf(bucket, "title")).toEqual(contentOf(built, "title"))
    // Removing everything leaves no trigram behind.
    let emptied = bucket
    for (const entry of live.values()) emptied = Bucket.dropEntry(emptied, entry, globalKey)
    expect(contentOf(emptied, "title")).toEqual({})

    const records = Array.from(live.values(), (entry) => entry.record)
    let searched = 0
    for (const sort of sorts) {
      for (const q of queries) {
        yield* breathe
        for (const where of filtersOf(q)) {
          const path = Bucket.pathOf(where, sort)
          const indexed = Bucket.withIndexes(bucket, path === undefined ? [] : [path])
          // Every match in order: each keyset page is the next slice of it.
          const full = reference(records, { where, sort, limit: records.length })
          for (const limit of [5, 40, 1_000]) {
            let after: ListQuery["after"] = undefined
            for (let at = 0; at <= full.length; at += limit) {
              const query: ListQuery = { where, sort, after, limit }
              const expected = ids(full.slice(at, at + limit))
              expect(ids(Bucket.page(indexed, where, sort, after, limit)), JSON.stringify(query)).toEqual(expected)
              const fromSearch = Bucket.searchPage(indexed, where, sort, after, limit)
              // Only a query of 3 code units or more (lower-cased) has trigrams to look up.
              expect(fromSearch === undefined, JSON.stringify(query)).toBe(q.toLowerCase().length < 3)
              if (fromSearch !== undefined) {
                searched++
                expect(ids(fromSearch), JSON.stringify(query)).toEqual(expected)
              }
              const last = full[at + limit - 1]
              if (last === undefined) break
              after = positionAfter(sort, last)
            }
            // Positions of the wrong kind or missing from the set are positions too.
            for (const value of ["b", 2, null, "zz"]) {
              const query: ListQuery = { where, sort, after: { value, id: "r_a" }, limit }
              const expected = ids(reference(records, query))
              expect(ids(Bucket.page(indexed, where, sort, query.after, limit))).toEqual(expected)
              const fromSearch = Bucket.searchPage(indexed, where, sort, query.after, limit)
              if (fromSearch !== undefined) expect(ids(fromSearch)).toEqual(expected)
            }
          }
        }
      }
    }
    expect(searched).toBeGreaterThan(1_000)
  }), 120_000)

  const itemPaths: ReadonlyArray<AccessPath> = [{ kind: "search", type: "item", scope: "tenant", field: "title" }]

  it.effect("through the store: keyset pages of q agree with the plain sort, before and after writes", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const next = random(5)
      const live = new Map<string, StoredRecord>()
      for (let i = 0; i < 500; i++) {
        const { data, id } = itemOf(next, i)
        live.set(id, yield* records.insert(tenantA, "item", id, data as never))
      }
      // Another tenant's records are another bucket: never in tenant A's pages.
      yield* records.insert(tenantB, "item", "r_b", { title: "Alpha École 𝔘nicode", status: "open" })
      const check = Effect.gen(function* () {
        for (const sort of sorts) {
          for (const q of ["al", "alpha", "ÉCO", "𝔘ni", "zzq", "a b", "straß"]) {
            for (const where of filtersOf(q)) {
              let after: ListQuery["after"] = undefined
              for (let pages = 0; pages < 100; pages++) {
                const query: ListQuery = { where, sort, after, limit: 13 }
                const got = yield* records.list(tenantA, "item", query)
                expect(ids(got), JSON.stringify(query)).toEqual(ids(reference(live.values(), query)))
                const last = got[got.length - 1]
                if (got.length < 13 || last === undefined) break
                after = positionAfter(sort, last)
              }
            }
          }
        }
      })
      yield* check
      const all = Array.from(live.keys())
      for (let i = 0; i < 150; i++) {
        const id = all[(i * 7) % all.length]!
        const current = live.get(id)
        if (current === undefined) continue
        if (i % 4 === 0) {
          yield* records.remove(tenantA, "item", id)
          live.delete(id)
        } else {
          const title = i % 2 === 0 ? itemOf(next, i).data["title"] ?? null : `ALPHA ${String(current.data["title"])}`
          live.set(id, yield* records.update(tenantA, "item", id, { ...current.data, title } as never))
        }
      }
      yield* check
    }).pipe(Effect.provide(memoryStore(itemPaths))), 120_000)

  it.effect("a transaction's copy of the index is its own; purge empties it and keeps it", () =>
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      const q = (value: string): ListQuery => ({
        where: [{ field: "title", op: "contains", value }],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: 10
      })
      yield* records.insert(tenantA, "item", "r_1", { title: "Needle in a haystack" })
      yield* records.insert(tenantA, "item", "r_2", { title: "Hay" })
      const failed = yield* Effect.either(uow.transaction(Effect.gen(function* () {
        yield* records.update(tenantA, "item", "r_1", { title: "Pin" })
        yield* records.insert(tenantA, "item", "r_3", { title: "another NEEDLE" })
        // Inside, the transaction reads its own index.
        expect(ids(yield* records.list(tenantA, "item", q("needle")))).toEqual(["r_3"])
        expect(ids(yield* records.list(tenantA, "item", q("pin")))).toEqual(["r_1"])
        return yield* Effect.fail("rolled back" as const)
      })))
      expect(Either.isLeft(failed)).toBe(true)
      expect(ids(yield* records.list(tenantA, "item", q("needle")))).toEqual(["r_1"])
      expect(ids(yield* records.list(tenantA, "item", q("pin")))).toEqual([])
      expect(yield* records.purge(tenantA, [])).toBe(2)
      expect(ids(yield* records.list(tenantA, "item", q("needle")))).toEqual([])
      yield* records.insert(tenantA, "item", "r_4", { title: "needle again" })
      expect(ids(yield* records.list(tenantA, "item", q("needle")))).toEqual(["r_4"])
    }).pipe(Effect.provide(memoryStore(itemPaths))))

  it.effect("prune keeps it: a pruned record is no longer found", () =>
    Effect.gen(function* () {
      const records = yield* Records
      for (let i = 0; i < 100; i++) {
        yield* records.insert(tenantA, "visit", `vis_${String(i).padStart(3, "0")}`, {
          path: `/products/prod_${i}`,
          created_at: `2024-01-${String(1 + (i % 28)).padStart(2, "0")}T00:00:00Z`
        })
      }
      const q: ListQuery = {
        where: [{ field: "path", op: "contains", value: "prod_2" }],
        sort: { field: "id", kind: "text", direction: "asc" },
        limit: 50
      }
      expect(yield* records.list(tenantA, "visit", q)).toHaveLength(11)
      const removed = yield* records.prune("visit", "created_at", "2024-01-02T00:00:00Z", 1_000)
      expect(removed).toBe(4)
      const left = yield* records.list(tenantA, "visit", q)
      expect(ids(left)).toEqual(
        ["vis_002", "vis_020", "vis_021", "vis_022", "vis_023", "vis_024", "vis_025", "vis_026", "vis_027", "vis_029"]
      )
    }).pipe(Effect.provide(memoryStore([{ kind: "search", type: "visit", scope: "tenant", field: "path" }]))))
})

describe("memory store: q at scale", () => {
  const M = 60_000
  const live: Where = { field: "deleted", op: "eq", value: false }
  const byCreated: SortSpec = { field: "id", kind: "text", direction: "desc" }
  const byName: SortSpec = { field: "name", kind: "text", direction: "asc" }
  const words = ["Algebra", "Biology", "Chemistry", "Drawing", "Economics", "French", "Geometry", "History"]
  /** Words drawn from a hash of `i`, so that no `q` of a word or a number follows the name order. */
  const mix = (i: number) => Math.imul(i ^ (i >>> 7), 0x9e3779b1) >>> 0
  const nameOf = (i: number) => `${words[(mix(i) >>> 13) % 8]} ${words[(mix(i) >>> 21) % 8]} ${i + 1}`
  /** M products as `createResource` stores them: `search_text` is the name and external id, one a line. */
  const load = Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    for (let from = 0; from < M; from += 5_000) {
      yield* uow.transaction(Effect.forEach(Array.from({ length: 5_000 }, (_, k) => from + k), (i) =>
        records.insert(tenantA, "product", `prod_${String(i).padStart(8, "0")}`, {
          name: nameOf(i),
          external_id: `ext-${i + 1}`,
          search_text: `${nameOf(i)}\next-${i + 1}`,
          position: i,
          deleted: i % 97 === 0
        }), { discard: true }))
      yield* breathe
    }
  })
  const visits = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function* () {
      const before = instrumentation.visited
      const result = yield* effect
      return [result, instrumentation.visited - before] as const
    })
  const list = (q: string, sort: SortSpec, after?: ListQuery["after"]) =>
    Effect.flatMap(Records, (records) =>
      records.list(tenantA, "product", {
        where: [live, { field: "search_text", op: "contains", value: q }],
        sort,
        after,
        limit: 50
      }))

  it.effect(`at ${M.toLocaleString("en")} products, a rare q reads its candidates, a common one stays O(limit)`, () =>
    Effect.gen(function* () {
      const records = yield* Records
      yield* load
      // One match (a whole name): its rarest trigram has a handful of ids, where the walk of
      // the `deleted` index would cross every product.
      const [rare, rareVisits] = yield* visits(list(nameOf(12345).toUpperCase(), byCreated))
      expect(ids(rare)).toEqual(["prod_00012345"])
      expect(rareVisits).toBeLessThan(2_000)
      const [byExternal, externalVisits] = yield* visits(list("EXT-54322", byName))
      expect(ids(byExternal)).toEqual(["prod_00054321"])
      expect(externalVisits).toBeLessThan(2_000)
      // No match: a trigram no product holds ends the read at once.
      const [none, noneVisits] = yield* visits(list("zzq", byCreated))
      expect(none).toEqual([])
      expect(noneVisits).toBeLessThan(50)
      // Every product matches: the walk fills the page after 50-odd entries, as without the
      // index; one in 10 (names ending in 7): after about 500, still O(limit ÷ share).
      for (const sort of [byCreated, byName, { ...byName, direction: "desc" } as const]) {
        const [common, commonVisits] = yield* visits(list("EXT-", sort))
        expect(common).toHaveLength(50)
        expect(commonVisits, sort.field).toBeLessThan(200)
        const [tenth, tenthVisits] = yield* visits(list("7\nExt", sort))
        expect(tenth).toHaveLength(50)
        expect(tenthVisits, sort.field).toBeLessThan(1_000)
      }
      // Not rare (1 in 64), but all at the far end of the order ("History History" sorts last):
      // the walk stops at its budget, the size of the candidates (the rarest trigram, "y h",
      // is in 4 names of 64), which are read instead: about twice those, where the walk alone
      // would cross the 63 in 64 other products first.
      const lastNames = Array.from({ length: M }, (_, i) => i)
        .filter((i) => nameOf(i).startsWith("History History") && i % 97 !== 0)
        .map((i) => ({ id: `prod_${String(i).padStart(8, "0")}`, name: nameOf(i) }))
        .sort((a, b) => Query.comparePositions(a.name, a.id, b.name, b.id))
      const [late, lateVisits] = yield* visits(list("history history", byName))
      expect(ids(late)).toEqual(lastNames.slice(0, 50).map((p) => p.id))
      expect(lateVisits).toBeGreaterThan(M / 64)
      expect(lateVisits).toBeLessThan(M / 4)
      const [all, allVisits] = yield* visits(list("ext-", byCreated, { value: "prod_00030000", id: "prod_00030000" }))
      expect(all[0]?.id).toBe("prod_00029999")
      expect(allVisits).toBeLessThan(200)
      // Rare but with pages (names ending in 21: 600 products): keyset pages both ways, each
      // from the candidates, agree with the walk's order.
      const wanted = Array.from({ length: M }, (_, i) => i).filter((i) => `${nameOf(i)}\n`.includes("21\n") && i % 97 !== 0)
      for (const sort of [byCreated, { ...byCreated, direction: "asc" } as const, byName, { ...byName, direction: "desc" } as const]) {
        const expected = wanted
          .map((i) => ({ id: `prod_${String(i).padStart(8, "0")}`, name: nameOf(i) }))
          .sort((a, b) => {
            const sign = sort.direction === "asc" ? 1 : -1
            return sign * (sort.field === "id" ? Query.comparePositions(a.id, a.id, b.id, b.id) : Query.comparePositions(a.name, a.id, b.name, b.id))
          })
          .map((p) => p.id)
        const got: Array<string> = []
        let after: ListQuery["after"] = undefined
        for (let pages = 0; pages < 100; pages++) {
          const before = instrumentation.visited
          const page: ReadonlyArray<StoredRecord> = yield* list("21\n", sort, after)
          expect(instrumentation.visited - before).toBeLessThan(2_000)
          got.push(...ids(page))
          const last: StoredRecord | undefined = page[page.length - 1]
          if (page.length < 50 || last === undefined) break
          after = { value: sort.field === "id" ? last.id : String(last.data["name"]), id: last.id }
        }
        expect(got).toEqual(expected)
      }

      // Writes keep it: a renamed product leaves the old trigrams and is found by the new ones.
      const renamed = yield* records.get(tenantA, "product", "prod_00012345")
      yield* records.update(tenantA, "product", "prod_00012345", {
        ...renamed!.data,
        name: "Quantum Knitting",
        search_text: "Quantum Knitting\next-12346"
      })
      expect(yield* list(nameOf(12345), byCreated)).toEqual([])
      const [found, foundVisits] = yield* visits(list("quantum knit", byCreated))
      expect(ids(found)).toEqual(["prod_00012345"])
      expect(foundVisits).toBeLessThan(50)
      yield* records.remove(tenantA, "product", "prod_00012345")
      expect(yield* list("quantum knit", byCreated)).toEqual([])
    }).pipe(Effect.provide(memoryStore(accessPaths()))), 240_000)
})
