/**
 * All records of one (tenant, type), with their indexes, as one immutable value.
 *
 * - `rows`: the records by id (`COLLATE "C"` order, code unit by code unit);
 * - `keys` / `globals`: the unique keys its records hold (tenant-scoped, and global ones);
 * - `indexes`: ordered indexes by (equality field?, sort value, id): those of the declared
 *   access paths of its type (`indexesOfPath`, registered when the store is built), and any a
 *   read of no declared path has asked for since. An index of a type is kept by every write
 *   to every bucket of that type;
 * - `searches`: the trigram indexes of the type's declared search paths (`search.ts`), which
 *   a page with `q` reads instead of walking the tenant when its matches are rare (`page`).
 *
 * Every structure is persistent (a change shares all but its path), so a transaction's copy
 * of a bucket and the committed one coexist at the cost of the difference.
 */
import { HashMap, Option } from "effect"
import type { AccessPath, ListQuery, StoredRecord, Tenant, UniqueKey, Where } from "@syllabus/core"
import * as BTree from "./btree.js"
import {
  asSortValue,
  comparePositions,
  compareScalars,
  fieldOf,
  matchesAll,
  type SortKey,
  type SortValue,
  sortValue
} from "./query.js"
import { buildSearch, changeSearch, idsFor, type SearchIndex, type SearchSpec, searchSpecOf } from "./search.js"

/** A stored record and the unique keys it holds. */
export interface Entry {
  readonly record: StoredRecord
  readonly uniques: ReadonlyArray<UniqueKey>
}

/** An index: an optional equality field first, then a sort (value, id). */
export interface IndexSpec {
  readonly key: string
  readonly eq: string | undefined
  readonly sort: SortKey
}

/** A value as an equality index orders it: missing is null, objects and arrays are all one value. */
export type EqValue = string | number | boolean | null | typeof OTHER
const OTHER: unique symbol = Symbol("other")

/** What a store registers for a type: an ordered index, or the search index of a field. */
export type Spec = IndexSpec | SearchSpec

export const isSearchSpec = (spec: Spec): spec is SearchSpec => "search" in spec

export interface IndexKey {
  readonly e: EqValue
  readonly v: SortValue
  readonly id: string
}

export interface Index {
  readonly spec: IndexSpec
  readonly tree: BTree.Tree<IndexKey, Entry>
}

export interface Bucket {
  readonly tenant: Tenant
  readonly type: string
  readonly rows: BTree.Tree<string, Entry>
  /** Tenant-scoped keys (`keyOf`) to the id holding them. */
  readonly keys: HashMap.HashMap<string, string>
  /** Global keys (the store's global key) held by records of this bucket, to their id. */
  readonly globals: HashMap.HashMap<string, string>
  readonly indexes: ReadonlyMap<string, Index>
  /** Search indexes, by `SearchSpec.key`. */
  readonly searches: ReadonlyMap<string, SearchIndex>
}

export const compareIds = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

const rank = (e: EqValue): number =>
  e === null ? 0 : typeof e === "boolean" ? 1 : typeof e === "number" ? 2 : typeof e === "string" ? 3 : 4

export const compareEq = (a: EqValue, b: EqValue): number => {
  if (a === b) return 0
  const ra = rank(a)
  const rb = rank(b)
  if (ra !== rb) return ra - rb
  if (ra === 4) return 0
  return (a as string | number | boolean) < (b as string | number | boolean) ? -1 : 1
}

const compareIndexKeys = (a: IndexKey, b: IndexKey): number => compareEq(a.e, b.e) || comparePositions(a.v, a.id, b.v, b.id)

export const eqValue = (value: unknown): EqValue =>
  value === undefined || value === null
    ? null
    : typeof value === "string" || typeof value === "number" || typeof value === "boolean"
    ? value
    : OTHER

export const specOf = (eq: string | undefined, sort: SortKey): IndexSpec => {
  const normalized: SortKey = sort.field === "id" ? { field: "id", kind: "text" } : { field: sort.field, kind: sort.kind }
  return { key: JSON.stringify([eq ?? null, normalized.field, normalized.kind]), eq, sort: normalized }
}

const indexKey = (spec: IndexSpec, record: StoredRecord): IndexKey => ({
  e: spec.eq === undefined ? null : eqValue(fieldOf(record.data, spec.eq)),
  v: spec.sort.field === "id" ? record.id : asSortValue(fieldOf(record.data, spec.sort.field), spec.sort),
  id: record.id
})

export const keyOf = (key: { readonly name: string; readonly value: string }): string => JSON.stringify([key.name, key.value])

export const emptyBucket = (tenant: Tenant, type: string): Bucket => ({
  tenant,
  type,
  rows: BTree.empty(compareIds),
  keys: HashMap.empty(),
  globals: HashMap.empty(),
  indexes: new Map(),
  searches: new Map()
})

const buildIndex = (rows: BTree.Tree<string, Entry>, spec: IndexSpec): Index => {
  const entries: Array<readonly [IndexKey, Entry]> = []
  for (const [, entry] of BTree.ascending(rows)) entries.push([indexKey(spec, entry.record), entry])
  entries.sort((a, b) => compareIndexKeys(a[0], b[0]))
  return { spec, tree: BTree.fromSorted(compareIndexKeys, entries) }
}

const buildSearchOf = (rows: BTree.Tree<string, Entry>, spec: SearchSpec): SearchIndex =>
  buildSearch(
    spec,
    (function*() {
      for (const [id, entry] of BTree.ascending(rows)) yield { id, value: fieldOf(entry.record.data, spec.search) }
    })()
  )

/** The bucket with every index of `specs` (the same bucket when it has them all). */
export const withIndexes = (bucket: Bucket, specs: Iterable<Spec>): Bucket => {
  let indexes: Map<string, Index> | undefined
  let searches: Map<string, SearchIndex> | undefined
  for (const spec of specs) {
    if (isSearchSpec(spec)) {
      if (bucket.searches.has(spec.key) || searches?.has(spec.key) === true) continue
      searches ??= new Map(bucket.searches)
      searches.set(spec.key, buildSearchOf(bucket.rows, spec))
      continue
    }
    if (bucket.indexes.has(spec.key) || indexes?.has(spec.key) === true) continue
    indexes ??= new Map(bucket.indexes)
    indexes.set(spec.key, buildIndex(bucket.rows, spec))
  }
  if (indexes === undefined && searches === undefined) return bucket
  return { ...bucket, indexes: indexes ?? bucket.indexes, searches: searches ?? bucket.searches }
}

/** Every index the bucket keeps (what an emptied copy of it must keep too). */
export const specsOfBucket = (bucket: Bucket): ReadonlyArray<Spec> => [
  ...Array.from(bucket.indexes.values(), (index) => index.spec),
  ...Array.from(bucket.searches.values(), (search) => search.spec)
]

/** The search indexes after the record `id` went from `before` to `after` (either may be absent). */
const changeSearches = (
  searches: ReadonlyMap<string, SearchIndex>,
  id: string,
  before: StoredRecord | undefined,
  after: StoredRecord | undefined,
  edit?: BTree.Edit
): ReadonlyMap<string, SearchIndex> => {
  if (searches.size === 0) return searches
  const next = new Map<string, SearchIndex>()
  for (const [key, search] of searches) {
    const field = search.spec.search
    next.set(
      key,
      changeSearch(
        search,
        id,
        before === undefined ? undefined : fieldOf(before.data, field),
        after === undefined ? undefined : fieldOf(after.data, field),
        edit
      )
    )
  }
  return next
}

export const lookup = (bucket: Bucket | undefined, id: string): Entry | undefined =>
  bucket === undefined ? undefined : BTree.get(bucket.rows, id)

export const holderOf = (bucket: Bucket | undefined, key: { readonly name: string; readonly value: string }): string | undefined =>
  bucket === undefined ? undefined : Option.getOrUndefined(HashMap.get(bucket.keys, keyOf(key)))

/**
 * Store `entry` in place of `previous` (same id; `undefined` for a new record). Unique keys
 * must have been checked; `globalKey` names a global key as the store's global index does.
 * With `edit`, the trees' nodes it owns are changed in place (`btree.ts`).
 */
export const putEntry = (
  bucket: Bucket,
  entry: Entry,
  previous: Entry | undefined,
  globalKey: (key: UniqueKey) => string,
  edit?: BTree.Edit
): Bucket => {
  const base = previous === undefined ? bucket : dropParts(bucket, previous, globalKey)
  const { record } = entry
  // The search indexes go from the previous text to the new one at once (nothing when the
  // text is unchanged), rather than through a drop and an add.
  const searches = changeSearches(bucket.searches, record.id, previous?.record, record, edit)
  let keys = base.keys
  let globals = base.globals
  for (const unique of entry.uniques) {
    if (unique.global === true) globals = HashMap.set(globals, globalKey(unique), record.id)
    else keys = HashMap.set(keys, keyOf(unique), record.id)
  }
  const indexes = new Map<string, Index>()
  for (const [key, index] of base.indexes) {
    indexes.set(key, { spec: index.spec, tree: BTree.set(index.tree, indexKey(index.spec, record), entry, edit) })
  }
  return { ...base, rows: BTree.set(base.rows, record.id, entry, edit), keys, globals, indexes, searches }
}

export const dropEntry = (bucket: Bucket, entry: Entry, globalKey: (key: UniqueKey) => string): Bucket => ({
  ...dropParts(bucket, entry, globalKey),
  searches: changeSearches(bucket.searches, entry.record.id, entry.record, undefined)
})

/** `entry` dropped from everything but the search indexes. */
const dropParts = (bucket: Bucket, entry: Entry, globalKey: (key: UniqueKey) => string): Bucket => {
  const { record } = entry
  let keys = bucket.keys
  let globals = bucket.globals
  for (const unique of entry.uniques) {
    if (unique.global === true) globals = HashMap.remove(globals, globalKey(unique))
    else keys = HashMap.remove(keys, keyOf(unique))
  }
  const indexes = new Map<string, Index>()
  for (const [key, index] of bucket.indexes) {
    indexes.set(key, { spec: index.spec, tree: BTree.remove(index.tree, indexKey(index.spec, record)) })
  }
  return { ...bucket, rows: BTree.remove(bucket.rows, record.id), keys, globals, indexes }
}

// --- Access paths ----------------------------------------------------------------------------

type Equality = Extract<Where, { op: "eq" | "in" }>

/** An index that could serve a read, with the equality condition it serves (none: the whole bucket). */
interface Candidate {
  readonly spec: IndexSpec
  readonly eq: Equality | undefined
}

/**
 * The indexes that could serve a read of `where` in `sort` order: one per equality condition
 * (`eq` ones first, then `in`, each in the order of `where`), in the sort's order; without an
 * equality, the sort's own index, or none for `id` (the rows are in id order).
 */
const candidatesOf = (where: ReadonlyArray<Where>, sort: SortKey): ReadonlyArray<Candidate> => {
  const equalities = [
    ...where.filter((w): w is Equality => w.op === "eq"),
    ...where.filter((w): w is Equality => w.op === "in")
  ]
  if (equalities.length > 0) return equalities.map((eq) => ({ spec: specOf(eq.field, sort), eq }))
  return sort.field === "id" ? [] : [{ spec: specOf(undefined, sort), eq: undefined }]
}

/**
 * The index a read of `where` in `sort` order asks the store for: the first of its candidates
 * the store `knows` (declared, or built for an earlier read), else the first candidate (built
 * on this read); `undefined`: the rows themselves (by id).
 */
export const pathOf = (
  where: ReadonlyArray<Where>,
  sort: SortKey,
  knows: (spec: IndexSpec) => boolean = () => false
): IndexSpec | undefined => {
  const candidates = candidatesOf(where, sort)
  return (candidates.find((candidate) => knows(candidate.spec)) ?? candidates[0])?.spec
}

const byIdKey: SortKey = { field: "id", kind: "text" }

/**
 * The indexes of the memory store that answer the reads of a declared access path
 * (`AccessPath`, core's `accessPaths()`), which a store registers up front. An index here has
 * one equality field: the path's first (the selection every list of the path makes: the
 * parent, or `deleted`) and its last (a filter's own field), each in the path's order; a read
 * uses the candidate index with the fewest entries for its value, the rest are conditions.
 * Across tenants (`scan`), records are read by id, or by the path's order when the scan bounds
 * it (a due time); without an equality (`prune`), by the bound.
 * A search path (`q`) is the trigram index of its field (`search.ts`); a page with `q` reads it
 * or walks the order of its list's sort, an index of the type's sorts (`page`).
 */
export const indexesOfPath = (path: AccessPath): ReadonlyArray<Spec> => {
  if (path.kind === "search") return [searchSpecOf(path.field)]
  const first = path.order[0] ?? byIdKey
  if (path.equals.length === 0) return first.field === "id" ? [] : [specOf(undefined, first)]
  // Across tenants, by id (a queue read in order) and, when the path has one, by its order
  // too: a scan bounded on it (due before now) starts at its bound instead of walking the group.
  const orders = path.scope === "all" && first.field !== "id" ? [byIdKey, first] : [path.scope === "all" ? byIdKey : first]
  const fields = new Set([path.equals[0]!, path.equals[path.equals.length - 1]!])
  return Array.from(fields, (field) => orders.map((order) => specOf(field, order))).flat()
}

/** The number of entries of `index` whose equality is one of `values`: O(log n) per value. */
const rangeSize = (index: Index, values: ReadonlyArray<EqValue>): number => {
  let count = 0
  for (const e of values) {
    count += BTree.countBefore(index.tree, (k) => compareEq(k.e, e) <= 0) -
      BTree.countBefore(index.tree, (k) => compareEq(k.e, e) < 0)
  }
  return count
}

const valuesOf = (eq: Equality | undefined): ReadonlyArray<EqValue> =>
  eq === undefined ? [null] : eq.op === "eq" ? [eqValue(eq.value)] : Array.from(new Set(eq.values))

/**
 * The index `bucket` answers a read of `where` in `sort` order from: of the candidates it holds,
 * the one with the fewest entries for its equality (counted from subtree sizes); `undefined`:
 * the rows themselves. Throws when the bucket holds none (the read must have asked for `pathOf`).
 */
const chosen = (
  bucket: Bucket,
  where: ReadonlyArray<Where>,
  sort: SortKey
): { readonly index: Index; readonly values: ReadonlyArray<EqValue> } | undefined => {
  const candidates = candidatesOf(where, sort)
  if (candidates.length === 0) return undefined
  let best: { readonly index: Index; readonly values: ReadonlyArray<EqValue>; readonly size: number } | undefined
  for (const candidate of candidates) {
    const index = bucket.indexes.get(candidate.spec.key)
    if (index === undefined) continue
    const values = valuesOf(candidate.eq)
    // One candidate held: no need to count.
    const size = best === undefined && candidates.length === 1 ? 0 : rangeSize(index, values)
    if (best === undefined || size < best.size) best = { index, values, size }
  }
  if (best === undefined) throw new Error(`memory store: no index for ${JSON.stringify(where)} on ${bucket.type}`)
  return best
}

/**
 * The bounds a read's range conditions (`gt`, `gte`, `lt`, `lte`) put on its sort field, as
 * tests on a sort value: a range starts at its lower bound and stops past its upper one instead
 * of walking the whole equality group (placing a product reads from its position on, not from
 * the first). Conditions of another kind than the sort's match nothing and are left to
 * `matchesAll`.
 */
interface Bounds {
  /** Below every lower bound (null is lowest: below any). */
  readonly below: (v: SortValue) => boolean
  /** Above some upper bound. */
  readonly above: (v: SortValue) => boolean
}

const boundsOf = (where: ReadonlyArray<Where>, sort: SortKey): Bounds => {
  const kind = sort.kind === "number" ? "number" : "string"
  const lower: Array<{ readonly value: string | number; readonly inclusive: boolean }> = []
  const upper: Array<{ readonly value: string | number; readonly inclusive: boolean }> = []
  for (const w of where) {
    if (w.field !== sort.field || sort.field === "id") continue
    if ((w.op === "gt" || w.op === "gte") && typeof w.value === kind) lower.push({ value: w.value, inclusive: w.op === "gte" })
    if ((w.op === "lt" || w.op === "lte") && typeof w.value === kind) upper.push({ value: w.value, inclusive: w.op === "lte" })
  }
  // A range never matches null (`matchesAll`), and null is lowest: a bounded walk starts past them.
  const ranged = lower.length + upper.length > 0
  return {
    below: (v) =>
      (v === null && ranged) ||
      lower.some((b) => {
        if (v === null) return true
        const c = compareScalars(v, b.value)
        return b.inclusive ? c < 0 : c <= 0
      }),
    above: (v) =>
      upper.some((b) => {
        if (v === null) return false
        const c = compareScalars(v, b.value)
        return b.inclusive ? c > 0 : c >= 0
      })
  }
}

/**
 * Entries of one equality value (or all), in order, strictly after `after` (value, id) if
 * given, within `bounds`: O(log n) to the first, one step per entry after it.
 */
function* range(
  index: Index,
  e: EqValue,
  after: { readonly v: SortValue; readonly id: string } | undefined,
  descending: boolean,
  bounds: Bounds
): Generator<IndexKey & { readonly entry: Entry }> {
  const filtered = index.spec.eq !== undefined
  const iterator = descending
    ? BTree.descending(index.tree, (k) => {
      const c = filtered ? compareEq(k.e, e) : 0
      return c > 0 ||
        (c === 0 && (bounds.above(k.v) || (after !== undefined && comparePositions(k.v, k.id, after.v, after.id) >= 0)))
    })
    : BTree.ascending(index.tree, (k) => {
      const c = filtered ? compareEq(k.e, e) : 0
      return c < 0 ||
        (c === 0 && (bounds.below(k.v) || (after !== undefined && comparePositions(k.v, k.id, after.v, after.id) <= 0)))
    })
  for (const [key, entry] of iterator) {
    if (filtered && compareEq(key.e, e) !== 0) return
    if (descending ? bounds.below(key.v) : bounds.above(key.v)) return
    yield { ...key, entry }
  }
}

/** Several ordered ranges as one (a k-way merge; k is the number of `in` values). */
function* merge(
  ranges: ReadonlyArray<Generator<IndexKey & { readonly entry: Entry }>>,
  sign: number
): Generator<Entry> {
  const heads = ranges.map((r) => r.next())
  for (;;) {
    let best = -1
    for (let i = 0; i < heads.length; i++) {
      const head = heads[i]!
      if (head.done === true) continue
      const current = heads[best]
      if (
        best === -1 || (current !== undefined && current.done !== true &&
          sign * comparePositions(head.value.v, head.value.id, current.value.v, current.value.id) < 0)
      ) best = i
    }
    if (best === -1) return
    const head = heads[best]!
    if (head.done === true) return
    yield head.value.entry
    heads[best] = ranges[best]!.next()
  }
}

type Position = { readonly v: SortValue; readonly id: string } | undefined

/** A keyset position as the indexes order it (for an `id` sort the position's id is its value). */
const positionOf = (sort: SortKey, after: ListQuery["after"]): Position =>
  after === undefined ? undefined : { v: sort.field === "id" ? after.id : asSortValue(after.value, sort), id: after.id }

/**
 * The entries an index gives for `where` in `sort` order, after `after`, before the other
 * conditions are tested: O(log n) to start, then one step per entry, from the index of its
 * candidates with the fewest entries for its equality. `bucket` must hold the index `pathOf`
 * names.
 */
function* walk(
  bucket: Bucket,
  where: ReadonlyArray<Where>,
  sort: SortKey & { readonly direction: "asc" | "desc" },
  after: ListQuery["after"]
): Generator<Entry> {
  const descending = sort.direction === "desc"
  const position = positionOf(sort, after)
  let source: Iterable<Entry>
  const path = chosen(bucket, where, sort)
  if (path === undefined) {
    const rows = descending
      ? BTree.descending(bucket.rows, position === undefined ? undefined : (id) => id >= position.id)
      : BTree.ascending(bucket.rows, position === undefined ? undefined : (id) => id <= position.id)
    source = (function*() {
      for (const [, entry] of rows) yield entry
    })()
  } else {
    const { index, values } = path
    const bounds = boundsOf(where, sort)
    source = values.length === 1
      ? (function*() {
        for (const item of range(index, values[0]!, position, descending, bounds)) yield item.entry
      })()
      : merge(values.map((e) => range(index, e, position, descending, bounds)), descending ? -1 : 1)
  }
  yield* source
}

/**
 * The entries of `where` in `sort` order, after `after`, as an index gives them: O(log n) to
 * start, then one step per entry (entries failing the other conditions are skipped, not
 * sorted), from the index of its candidates with the fewest entries for its equality. `bucket`
 * must hold the index `pathOf` names.
 */
export function* ordered(
  bucket: Bucket,
  where: ReadonlyArray<Where>,
  sort: SortKey & { readonly direction: "asc" | "desc" },
  after: ListQuery["after"]
): Generator<Entry> {
  for (const entry of walk(bucket, where, sort, after)) {
    if (matchesAll(entry.record, where)) yield entry
  }
}

/**
 * The candidates the search indexes give for the `contains` conditions of `where`: the
 * smallest id set of a trigram of one of them (every match is in it); `undefined` when none
 * can use an index (no search index of its field, or a query shorter than 3).
 */
const searchCandidates = (bucket: Bucket, where: ReadonlyArray<Where>): BTree.KeySet<string> | undefined => {
  if (bucket.searches.size === 0) return undefined
  let best: BTree.KeySet<string> | undefined
  for (const w of where) {
    if (w.op !== "contains") continue
    const search = bucket.searches.get(searchSpecOf(w.field).key)
    if (search === undefined) continue
    const ids = idsFor(search, w.value)
    if (ids !== undefined && (best === undefined || BTree.size(ids) < BTree.size(best))) best = ids
  }
  return best
}

/** Survivors kept by `fromCandidates` before it trims them to the best `limit` (amortizes the sorts). */
const SLACK = 64

/**
 * A page read from a search index's candidates: each looked up by id and tested against the
 * whole of `where` (trigrams only narrow), kept if after the position, then the best `limit`
 * in `sort` order by (sort value, id), exactly the order of the walk. For c candidates: c
 * lookups by id (O(log n) each) and a bounded selection (O(c log limit)), never a sort of them
 * all.
 */
const fromCandidates = (
  bucket: Bucket,
  ids: BTree.KeySet<string>,
  where: ReadonlyArray<Where>,
  sort: SortKey & { readonly direction: "asc" | "desc" },
  after: ListQuery["after"],
  limit: number
): Array<StoredRecord> => {
  const sign = sort.direction === "desc" ? -1 : 1
  const position = positionOf(sort, after)
  type Found = { readonly v: SortValue; readonly id: string; readonly record: StoredRecord }
  const order = (a: Found, b: Found) => sign * comparePositions(a.v, a.id, b.v, b.id)
  let found: Array<Found> = []
  // The last of the best `limit` so far: a candidate not before it cannot be on the page.
  let worst: Found | undefined
  for (const [id] of BTree.ascending(ids)) {
    const entry = BTree.get(bucket.rows, id)
    if (entry === undefined) throw new Error(`memory store: search index of ${bucket.type} holds a missing ${id}`)
    const { record } = entry
    if (!matchesAll(record, where)) continue
    const v = sortValue(record, sort)
    if (position !== undefined && sign * comparePositions(v, id, position.v, position.id) <= 0) continue
    const item: Found = { v, id, record }
    if (worst !== undefined && order(item, worst) >= 0) continue
    found.push(item)
    if (found.length >= limit + SLACK) {
      found.sort(order)
      found = found.slice(0, limit)
      worst = found[limit - 1]
    }
  }
  return found.sort(order).slice(0, limit).map((item) => item.record)
}

/**
 * The page read from the candidates of the search indexes alone (the plan `page` switches to
 * when the walk runs over its budget); `undefined` when no search index serves `where`.
 */
export const searchPage = (
  bucket: Bucket,
  where: ReadonlyArray<Where>,
  sort: SortKey & { readonly direction: "asc" | "desc" },
  after: ListQuery["after"],
  limit: number
): Array<StoredRecord> | undefined => {
  const ids = searchCandidates(bucket, where)
  if (ids === undefined) return undefined
  return limit <= 0 ? [] : fromCandidates(bucket, ids, where, sort, after, limit)
}

/**
 * The first `limit` entries of `ordered`.
 *
 * With a `contains` a search index serves (`q`), the page is read from whichever of two
 * plans is cheaper, without guessing the selectivity: the trigram's candidates (c of them,
 * the smallest id set of the query's trigrams, counted from its root: PostgreSQL's bitmap
 * scan on its trigram index, then a sort of the survivors) cost about c; the walk of the
 * sort's index costs about limit ÷ (share of matches), unknown beforehand. So the walk runs
 * first with a budget of c entries: a common `q` fills its page within it and costs what it
 * did without the index; a rare one stops at c and reads the candidates instead. Either way a
 * page costs about twice the cheaper plan at most, never a walk of the whole tenant when the
 * candidates are few (and a trigram no record holds: no match, O(log n)). A `q` of 1 or 2
 * characters has no trigram: it walks, as before.
 */
export const page = (
  bucket: Bucket,
  where: ReadonlyArray<Where>,
  sort: SortKey & { readonly direction: "asc" | "desc" },
  after: ListQuery["after"],
  limit: number
): Array<StoredRecord> => {
  const out: Array<StoredRecord> = []
  if (limit <= 0) return out
  const candidates = searchCandidates(bucket, where)
  if (candidates !== undefined && BTree.size(candidates) === 0) return out
  const budget = candidates === undefined ? Infinity : BTree.size(candidates)
  let steps = 0
  for (const entry of walk(bucket, where, sort, after)) {
    if (++steps > budget) return fromCandidates(bucket, candidates!, where, sort, after, limit)
    if (!matchesAll(entry.record, where)) continue
    out.push(entry.record)
    if (out.length >= limit) break
  }
  return out
}

/** Entries of `field` (a text timestamp) below `before`, oldest first: the prune's range. */
export function* below(bucket: Bucket, field: string, before: string): Generator<Entry> {
  const index = bucket.indexes.get(specOf(undefined, { field, kind: "text" }).key)
  if (index === undefined) throw new Error(`memory store: index on ${field} missing on ${bucket.type}`)
  for (const [key, entry] of BTree.ascending(index.tree, (k) => k.v === null)) {
    if (typeof key.v !== "string" || !(key.v < before)) return
    yield entry
  }
}

/**
 * The number of records matching `where` when its only conditions are equalities an index
 * serves (one field, `eq` or `in`): O(log n) per value, from the index's subtree sizes.
 * `undefined` when the index cannot answer alone.
 */
export const countOf = (bucket: Bucket, where: ReadonlyArray<Where>): number | undefined => {
  const eq = where[0]
  if (where.length !== 1 || eq === undefined || (eq.op !== "eq" && eq.op !== "in")) return undefined
  const index = bucket.indexes.get(specOf(eq.field, byIdKey).key)
  return index === undefined ? undefined : rangeSize(index, valuesOf(eq))
}

export const size = (bucket: Bucket | undefined): number => (bucket === undefined ? 0 : BTree.size(bucket.rows))
