/**
 * All records of one (tenant, type), with their indexes, as one immutable value.
 *
 * - `rows`: the records by id (`COLLATE "C"` order, code unit by code unit);
 * - `keys` / `globals`: the unique keys its records hold (tenant-scoped, and global ones);
 * - `indexes`: ordered indexes by (equality field?, sort value, id), one per access path a
 *   read has asked for (a list's sort, an equality filter with a sort, a scan's filter). An
 *   index, once asked for on a type, is kept by every write to every bucket of that type.
 *
 * Every structure is persistent (a change shares all but its path), so a transaction's copy
 * of a bucket and the committed one coexist at the cost of the difference.
 */
import { HashMap, Option } from "effect"
import type { ListQuery, StoredRecord, Tenant, UniqueKey, Where } from "@syllabus/core"
import * as BTree from "./btree.js"
import { asSortValue, comparePositions, fieldOf, matchesAll, type SortKey, type SortValue } from "./query.js"

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
  indexes: new Map()
})

const buildIndex = (rows: BTree.Tree<string, Entry>, spec: IndexSpec): Index => {
  const entries: Array<readonly [IndexKey, Entry]> = []
  for (const [, entry] of BTree.ascending(rows)) entries.push([indexKey(spec, entry.record), entry])
  entries.sort((a, b) => compareIndexKeys(a[0], b[0]))
  return { spec, tree: BTree.fromSorted(compareIndexKeys, entries) }
}

/** The bucket with every index of `specs` (the same bucket when it has them all). */
export const withIndexes = (bucket: Bucket, specs: Iterable<IndexSpec>): Bucket => {
  let indexes: Map<string, Index> | undefined
  for (const spec of specs) {
    if (bucket.indexes.has(spec.key) || indexes?.has(spec.key) === true) continue
    indexes ??= new Map(bucket.indexes)
    indexes.set(spec.key, buildIndex(bucket.rows, spec))
  }
  return indexes === undefined ? bucket : { ...bucket, indexes }
}

export const lookup = (bucket: Bucket | undefined, id: string): Entry | undefined =>
  bucket === undefined ? undefined : BTree.get(bucket.rows, id)

export const holderOf = (bucket: Bucket | undefined, key: { readonly name: string; readonly value: string }): string | undefined =>
  bucket === undefined ? undefined : Option.getOrUndefined(HashMap.get(bucket.keys, keyOf(key)))

/**
 * Store `entry` in place of `previous` (same id; `undefined` for a new record). Unique keys
 * must have been checked; `globalKey` names a global key as the store's global index does.
 */
export const putEntry = (
  bucket: Bucket,
  entry: Entry,
  previous: Entry | undefined,
  globalKey: (key: UniqueKey) => string
): Bucket => {
  const base = previous === undefined ? bucket : dropEntry(bucket, previous, globalKey)
  const { record } = entry
  let keys = base.keys
  let globals = base.globals
  for (const unique of entry.uniques) {
    if (unique.global === true) globals = HashMap.set(globals, globalKey(unique), record.id)
    else keys = HashMap.set(keys, keyOf(unique), record.id)
  }
  const indexes = new Map<string, Index>()
  for (const [key, index] of base.indexes) {
    indexes.set(key, { spec: index.spec, tree: BTree.set(index.tree, indexKey(index.spec, record), entry) })
  }
  return { ...base, rows: BTree.set(base.rows, record.id, entry), keys, globals, indexes }
}

export const dropEntry = (bucket: Bucket, entry: Entry, globalKey: (key: UniqueKey) => string): Bucket => {
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

/** The equality condition an index can serve (the first `eq`, else the first `in`), if any. */
const equalityOf = (where: ReadonlyArray<Where>): Extract<Where, { op: "eq" | "in" }> | undefined =>
  (where.find((w) => w.op === "eq") ?? where.find((w) => w.op === "in")) as Extract<Where, { op: "eq" | "in" }> | undefined

/** The index a read of `where` in `sort` order uses; `undefined`: the rows themselves (by id). */
export const pathOf = (where: ReadonlyArray<Where>, sort: SortKey): IndexSpec | undefined => {
  const eq = equalityOf(where)
  if (eq === undefined && sort.field === "id") return undefined
  return specOf(eq?.field, sort)
}

/** Entries of one equality value (or all), in order, strictly after `after` (value, id) if given. */
function* range(
  index: Index,
  e: EqValue,
  after: { readonly v: SortValue; readonly id: string } | undefined,
  descending: boolean
): Generator<IndexKey & { readonly entry: Entry }> {
  const filtered = index.spec.eq !== undefined
  const iterator = descending
    ? BTree.descending(index.tree, (k) => {
      const c = filtered ? compareEq(k.e, e) : 0
      return c > 0 || (c === 0 && after !== undefined && comparePositions(k.v, k.id, after.v, after.id) >= 0)
    })
    : BTree.ascending(index.tree, (k) => {
      const c = filtered ? compareEq(k.e, e) : 0
      return c < 0 || (c === 0 && after !== undefined && comparePositions(k.v, k.id, after.v, after.id) <= 0)
    })
  for (const [key, entry] of iterator) {
    if (filtered && compareEq(key.e, e) !== 0) return
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

/**
 * The entries of `where` in `sort` order, after `after`, as an index gives them: O(log n) to
 * start, then one step per entry (entries failing the other conditions are skipped, not
 * sorted). `bucket` must hold the index `pathOf` names.
 */
export function* ordered(
  bucket: Bucket,
  where: ReadonlyArray<Where>,
  sort: SortKey & { readonly direction: "asc" | "desc" },
  after: ListQuery["after"]
): Generator<Entry> {
  const descending = sort.direction === "desc"
  const spec = pathOf(where, sort)
  // For an `id` sort the position's id is its value.
  const position = after === undefined
    ? undefined
    : { v: sort.field === "id" ? after.id : asSortValue(after.value, sort), id: after.id }
  let source: Iterable<Entry>
  if (spec === undefined) {
    const rows = descending
      ? BTree.descending(bucket.rows, position === undefined ? undefined : (id) => id >= position.id)
      : BTree.ascending(bucket.rows, position === undefined ? undefined : (id) => id <= position.id)
    source = (function*() {
      for (const [, entry] of rows) yield entry
    })()
  } else {
    const index = bucket.indexes.get(spec.key)
    if (index === undefined) throw new Error(`memory store: index ${spec.key} missing on ${bucket.type}`)
    const eq = equalityOf(where)
    const values: ReadonlyArray<EqValue> = eq === undefined
      ? [null]
      : eq.op === "eq"
      ? [eqValue(eq.value)]
      : Array.from(new Set(eq.values))
    source = values.length === 1
      ? (function*() {
        for (const item of range(index, values[0]!, position, descending)) yield item.entry
      })()
      : merge(values.map((e) => range(index, e, position, descending)), descending ? -1 : 1)
  }
  for (const entry of source) {
    if (matchesAll(entry.record, where)) yield entry
  }
}

/** The first `limit` entries of `ordered`. */
export const page = (
  bucket: Bucket,
  where: ReadonlyArray<Where>,
  sort: SortKey & { readonly direction: "asc" | "desc" },
  after: ListQuery["after"],
  limit: number
): Array<StoredRecord> => {
  const out: Array<StoredRecord> = []
  if (limit <= 0) return out
  for (const entry of ordered(bucket, where, sort, after)) {
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
  const eq = equalityOf(where)
  if (eq === undefined || where.length !== 1) return undefined
  const index = bucket.indexes.get(specOf(eq.field, { field: "id", kind: "text" }).key)
  if (index === undefined) return undefined
  const values: ReadonlyArray<EqValue> = eq.op === "eq" ? [eqValue(eq.value)] : Array.from(new Set(eq.values))
  let count = 0
  for (const e of values) {
    count += BTree.countBefore(index.tree, (k) => compareEq(k.e, e) <= 0) -
      BTree.countBefore(index.tree, (k) => compareEq(k.e, e) < 0)
  }
  return count
}

export const size = (bucket: Bucket | undefined): number => (bucket === undefined ? 0 : BTree.size(bucket.rows))
