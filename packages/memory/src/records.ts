import { Effect, Either, HashMap } from "effect"
import {
  type AggregateQuery,
  type Json,
  type JsonObject,
  type ListQuery,
  Records,
  RevisionConflict,
  type StoredRecord,
  type Tenant,
  type UniqueKey,
  UniqueViolation,
  type Where
} from "@syllabus/core"
import {
  below,
  countOf,
  type Bucket,
  dropEntry,
  emptyBucket,
  type Entry,
  holderOf,
  lookup,
  ordered,
  page,
  pathOf,
  putEntry,
  size,
  specOf,
  specsOfBucket,
  withIndexes
} from "./bucket.js"
import * as Query from "./query.js"
import { type GlobalKeys, type Store, uniqueIndexKey } from "./state.js"
import { frozenCopy } from "./values.js"

const byId = { field: "id", kind: "text", direction: "asc" } as const

const globalKeyOf = (type: string) => (key: UniqueKey): string => uniqueIndexKey("global", type, key)

/** The first of `keys` held by a record other than `record`. */
const takenKey = (
  bucket: Bucket,
  globals: GlobalKeys,
  record: StoredRecord,
  keys: ReadonlyArray<UniqueKey>
): UniqueKey | undefined =>
  keys.find((key) => {
    if (key.global !== true) {
      const holder = holderOf(bucket, key)
      return holder !== undefined && holder !== record.id
    }
    const holder = globals.holder(uniqueIndexKey("global", record.type, key))
    return holder !== undefined &&
      !(holder.id === record.id && holder.type === record.type && holder.tenant.accountId === record.tenant.accountId &&
        holder.tenant.environment === record.tenant.environment)
  })

/** Move the global keys of `before` to those of `after` (either may be absent). */
const moveGlobals = (globals: GlobalKeys, type: string, before: Entry | undefined, after: Entry | undefined): void => {
  const key = globalKeyOf(type)
  for (const unique of before?.uniques ?? []) if (unique.global === true) globals.free(key(unique))
  if (after === undefined) return
  const at = { tenant: after.record.tenant, type, id: after.record.id }
  for (const unique of after.uniques) if (unique.global === true) globals.take(key(unique), at)
}

/** The bucket emptied, keeping its indexes (empty). */
const emptied = (bucket: Bucket): Bucket =>
  withIndexes(emptyBucket(bucket.tenant, bucket.type), specsOfBucket(bucket))

/**
 * The order an aggregate walks its records in: by id, unless it has no equality and a range on
 * a field, whose index then bounds the walk (the order of the records is no matter to a fold).
 */
const walkOrder = (where: ReadonlyArray<Where>): { readonly field: string; readonly kind: "text" | "number"; readonly direction: "asc" } => {
  if (where.some((w) => w.op === "eq" || w.op === "in")) return byId
  const range = where.find((w): w is Extract<Where, { op: "gt" | "gte" | "lt" | "lte" }> =>
    (w.op === "gt" || w.op === "gte" || w.op === "lt" || w.op === "lte") && w.field !== "id"
  )
  if (range === undefined) return byId
  return { field: range.field, kind: typeof range.value === "number" ? "number" : "text", direction: "asc" }
}

export const makeRecords = (store: Store): Records["Type"] => {
  const get = Effect.fnUntraced(function* (tenant: Tenant, type: string, id: string) {
    return lookup(yield* store.bucket(tenant, type), id)?.record
  })

  const getMany = Effect.fnUntraced(function* (tenant: Tenant, type: string, ids: ReadonlyArray<string>) {
    const bucket = yield* store.bucket(tenant, type)
    return [...new Set(ids)].flatMap((id) => lookup(bucket, id)?.record ?? [])
  })

  const findUnique = Effect.fnUntraced(function* (
    tenant: Tenant | "global",
    type: string,
    key: { readonly name: string; readonly value: string }
  ) {
    if (tenant === "global") {
      const holder = yield* store.findGlobal(uniqueIndexKey("global", type, key))
      if (holder === undefined) return undefined
      return lookup(yield* store.bucket(holder.tenant, holder.type), holder.id)?.record
    }
    const bucket = yield* store.bucket(tenant, type)
    const id = holderOf(bucket, key)
    return id === undefined ? undefined : lookup(bucket, id)?.record
  })

  const insert = Effect.fnUntraced(function* (
    tenant: Tenant,
    type: string,
    id: string,
    data: JsonObject,
    uniques: ReadonlyArray<UniqueKey> = []
  ) {
    const entry: Entry = frozenCopy({
      record: { type, id, tenant: { accountId: tenant.accountId, environment: tenant.environment }, revision: 1, data },
      uniques
    })
    return yield* store.modify<StoredRecord, UniqueViolation>(tenant, type, (bucket, globals, edit) => {
      if (lookup(bucket, id) !== undefined) return Either.left(new UniqueViolation({ name: "id" }))
      const taken = takenKey(bucket, globals, entry.record, entry.uniques)
      if (taken !== undefined) return Either.left(new UniqueViolation({ name: taken.name }))
      moveGlobals(globals, type, undefined, entry)
      return Either.right([entry.record, putEntry(bucket, entry, undefined, globalKeyOf(type), edit)] as const)
    })
  })

  const insertMany = Effect.fnUntraced(function* (
    tenant: Tenant,
    type: string,
    rows: ReadonlyArray<{ readonly id: string; readonly data: JsonObject }>
  ) {
    const entries: ReadonlyArray<Entry> = rows.map(({ data, id }) =>
      frozenCopy({
        record: { type, id, tenant: { accountId: tenant.accountId, environment: tenant.environment }, revision: 1, data },
        uniques: []
      })
    )
    return yield* store.modify<ReadonlyArray<StoredRecord>, UniqueViolation>(tenant, type, (bucket, _globals, edit) => {
      // Nothing is kept of a refused call: every id is checked before the first is stored.
      const ids = new Set<string>()
      for (const entry of entries) {
        if (ids.has(entry.record.id) || lookup(bucket, entry.record.id) !== undefined) return Either.left(new UniqueViolation({ name: "id" }))
        ids.add(entry.record.id)
      }
      let next = bucket
      for (const entry of entries) next = putEntry(next, entry, undefined, globalKeyOf(type), edit)
      return Either.right([entries.map((entry) => entry.record), next] as const)
    })
  })

  const update = Effect.fnUntraced(function* (
    tenant: Tenant,
    type: string,
    id: string,
    data: JsonObject,
    options?: { readonly expectedRevision?: number | undefined; readonly uniques?: ReadonlyArray<UniqueKey> | undefined }
  ) {
    const newData = frozenCopy(data)
    const newUniques = options?.uniques === undefined ? undefined : frozenCopy(options.uniques)
    return yield* store.modify<StoredRecord, RevisionConflict | UniqueViolation>(tenant, type, (bucket, globals, edit) => {
      const current = lookup(bucket, id)
      const expected = options?.expectedRevision
      if (current === undefined || (expected !== undefined && current.record.revision !== expected)) {
        return Either.left(new RevisionConflict({ current: current?.record.revision ?? null }))
      }
      const entry: Entry = Object.freeze({
        record: Object.freeze({ ...current.record, revision: current.record.revision + 1, data: newData }),
        uniques: newUniques ?? current.uniques
      })
      const taken = takenKey(bucket, globals, entry.record, entry.uniques)
      if (taken !== undefined) return Either.left(new UniqueViolation({ name: taken.name }))
      moveGlobals(globals, type, current, entry)
      return Either.right([entry.record, putEntry(bucket, entry, current, globalKeyOf(type), edit)] as const)
    })
  })

  const remove = Effect.fnUntraced(function* (tenant: Tenant, type: string, id: string) {
    return yield* store.modify<boolean, never>(tenant, type, (bucket, globals) => {
      const current = lookup(bucket, id)
      if (current === undefined) return Either.right([false, bucket] as const)
      moveGlobals(globals, type, current, undefined)
      return Either.right([true, dropEntry(bucket, current, globalKeyOf(type))] as const)
    })
  })

  const increment = Effect.fnUntraced(function* (
    tenant: Tenant,
    type: string,
    id: string,
    fields: JsonObject,
    deltas: Readonly<Record<string, number>>
  ) {
    return yield* store.modify<void, never>(tenant, type, (bucket, globals, edit) => {
      const current = lookup(bucket, id)
      const data: Record<string, Json> = { ...(current?.record.data ?? fields) }
      for (const [name, delta] of Object.entries(deltas)) {
        const value = data[name]
        data[name] = (typeof value === "number" ? value : 0) + delta
      }
      const entry: Entry = frozenCopy({
        record: {
          type,
          id,
          tenant: { accountId: tenant.accountId, environment: tenant.environment },
          revision: (current?.record.revision ?? 0) + 1,
          data
        },
        uniques: current?.uniques ?? []
      })
      moveGlobals(globals, type, current, entry)
      return Either.right([undefined, putEntry(bucket, entry, current, globalKeyOf(type), edit)] as const)
    })
  })

  /** The index a read asks for: one the type keeps already if one serves it (`pathOf`). */
  const indexFor = (type: string, where: ReadonlyArray<Where>, sort: Query.SortKey) =>
    pathOf(where, sort, (spec) => store.knows(type, spec))

  const list = Effect.fnUntraced(function* (tenant: Tenant, type: string, query: ListQuery) {
    const path = indexFor(type, query.where, query.sort)
    const bucket = yield* store.bucket(tenant, type, path === undefined ? [] : [path])
    return bucket === undefined ? [] : page(bucket, query.where, query.sort, query.after, query.limit)
  })

  const count = Effect.fnUntraced(function* (
    tenant: Tenant,
    type: string,
    where: ReadonlyArray<Where>,
    groupBy: ReadonlyArray<string>
  ) {
    const path = indexFor(type, where, byId)
    const bucket = yield* store.bucket(tenant, type, path === undefined ? [] : [path])
    if (groupBy.length === 0) {
      if (where.length === 0) return [{ key: [], count: size(bucket) }]
      const counted = bucket === undefined ? 0 : countOf(bucket, where)
      if (counted !== undefined) return [{ key: [], count: counted }]
    }
    const records = bucket === undefined
      ? []
      : Array.from(ordered(bucket, where, byId, undefined), (entry) => entry.record)
    return Query.count(records, [], groupBy)
  })

  // The records of `where` read through the index a list of it would use (no copy of the
  // bucket), folded into their groups as they come: an equality's index, or without one the
  // index of a range's field walked from its bound to the other (certificates of a period).
  const aggregate = Effect.fnUntraced(function* (tenant: Tenant, type: string, query: AggregateQuery) {
    const order = walkOrder(query.where)
    const path = indexFor(type, query.where, order)
    const bucket = yield* store.bucket(tenant, type, path === undefined ? [] : [path])
    const records = bucket === undefined
      ? []
      : (function* () {
        for (const entry of ordered(bucket, query.where, order, undefined)) yield entry.record
      })()
    return Query.aggregate(records, query)
  })

  // Housekeeping reads every tenant's committed buckets of one type, through the index of the
  // condition, and locks nothing: a client never sees its result.
  // A scan bounded on a field its path orders by (due before now) reads each bucket from that
  // bound: the due records, not the whole group by id.
  const scan = Effect.fnUntraced(function* (type: string, where: ReadonlyArray<Where>, limit: number) {
    const bounded = where.find((w) => (w.op === "gt" || w.op === "gte" || w.op === "lt" || w.op === "lte") && w.field !== "id")
    const byBound =
      bounded === undefined || !("value" in bounded)
        ? undefined
        : ({ field: bounded.field, kind: typeof bounded.value === "number" ? "number" : "text", direction: "asc" } as const)
    const boundPath = byBound === undefined ? undefined : indexFor(type, where, byBound)
    const sort = boundPath === undefined ? byId : byBound!
    const path = boundPath ?? indexFor(type, where, byId)
    const buckets = yield* store.bucketsOfType(type, path === undefined ? [] : [path])
    const found: Array<StoredRecord> = []
    for (const bucket of buckets) found.push(...page(bucket, where, sort, undefined, limit))
    return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, Math.max(0, limit))
  })

  // One transaction over the tenant's buckets: no other tenant is touched, or waits.
  const purge = (tenant: Tenant, keepTypes: ReadonlyArray<string>) =>
    store.transaction(
      Effect.gen(function* () {
        let removed = 0
        for (const type of yield* store.typesOf(tenant)) {
          if (keepTypes.includes(type)) continue
          removed += yield* store.modify<number, never>(tenant, type, (bucket, globals) => {
            for (const name of HashMap.keys(bucket.globals)) globals.free(name)
            return Either.right([size(bucket), emptied(bucket)] as const)
          })
        }
        return removed
      })
    )

  // Bucket by bucket, each in a write of its own (outside a transaction): the index on `field`
  // gives the records to remove, oldest first, without reading the others.
  const prune = Effect.fnUntraced(function* (type: string, field: string, before: string, limit: number) {
    const path = specOf(undefined, { field, kind: "text" })
    let removed = 0
    for (const found of yield* store.bucketsOfType(type, [path])) {
      if (removed >= limit) break
      const room = limit - removed
      removed += yield* store.modify<number, never>(found.tenant, type, (bucket, globals) => {
        const old: Array<Entry> = []
        for (const entry of below(bucket, field, before)) {
          if (old.length >= room) break
          old.push(entry)
        }
        let next = bucket
        for (const entry of old) {
          moveGlobals(globals, type, entry, undefined)
          next = dropEntry(next, entry, globalKeyOf(type))
        }
        return Either.right([old.length, next] as const)
      })
    }
    return removed
  })

  return Records.of({ get, getMany, findUnique, insert, insertMany, update, remove, increment, list, count, aggregate, scan, purge, prune })
}
