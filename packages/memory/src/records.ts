import { Effect, Either, HashMap, Option } from "effect"
import {
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
import * as Query from "./query.js"
import { type Bucket, bucketKey, type Entry, type State, type Store, uniqueIndexKey } from "./state.js"
import { frozenCopy } from "./values.js"

const bucketRows = (state: State, tenant: Tenant, type: string): HashMap.HashMap<string, Entry> =>
  Option.match(HashMap.get(state.buckets, bucketKey(tenant, type)), {
    onNone: () => HashMap.empty(),
    onSome: (bucket) => bucket.rows
  })

const lookup = (state: State, tenant: Tenant, type: string, id: string): Entry | undefined =>
  Option.getOrUndefined(HashMap.get(bucketRows(state, tenant, type), id))

const recordsOf = (state: State, tenant: Tenant, type: string): Iterable<StoredRecord> =>
  Array.from(HashMap.values(bucketRows(state, tenant, type)), (entry) => entry.record)

const indexKey = (record: StoredRecord, key: UniqueKey): string =>
  uniqueIndexKey(key.global === true ? "global" : record.tenant, record.type, key)

/** The first of `keys` held by a record other than `record`. */
const takenKey = (state: State, record: StoredRecord, keys: ReadonlyArray<UniqueKey>): UniqueKey | undefined => {
  const own = bucketKey(record.tenant, record.type)
  return keys.find((key) =>
    Option.match(HashMap.get(state.uniques, indexKey(record, key)), {
      onNone: () => false,
      onSome: (holder) => holder.bucket !== own || holder.id !== record.id
    })
  )
}

/** Store an entry (replacing any entry of the same id, whose keys must already be freed). */
const put = (state: State, entry: Entry): State => {
  const { record } = entry
  const key = bucketKey(record.tenant, record.type)
  const bucket: Bucket = {
    tenant: record.tenant,
    type: record.type,
    rows: HashMap.set(bucketRows(state, record.tenant, record.type), record.id, entry)
  }
  let uniques = state.uniques
  for (const unique of entry.uniques) {
    uniques = HashMap.set(uniques, indexKey(record, unique), { bucket: key, id: record.id })
  }
  return { ...state, buckets: HashMap.set(state.buckets, key, bucket), uniques }
}

/** Remove an entry and free its keys. */
const drop = (state: State, entry: Entry): State => {
  const { record } = entry
  const key = bucketKey(record.tenant, record.type)
  const rows = HashMap.remove(bucketRows(state, record.tenant, record.type), record.id)
  const buckets = HashMap.isEmpty(rows)
    ? HashMap.remove(state.buckets, key)
    : HashMap.set(state.buckets, key, { tenant: record.tenant, type: record.type, rows })
  let uniques = state.uniques
  for (const unique of entry.uniques) uniques = HashMap.remove(uniques, indexKey(record, unique))
  return { ...state, buckets, uniques }
}

/** Remove every entry for which `remove` holds; returns how many were removed. */
const dropWhere = (state: State, remove: (bucket: Bucket, entry: Entry) => boolean): readonly [number, State] => {
  let next = state
  let removed = 0
  for (const bucket of HashMap.values(state.buckets)) {
    for (const entry of HashMap.values(bucket.rows)) {
      if (!remove(bucket, entry)) continue
      next = drop(next, entry)
      removed++
    }
  }
  return [removed, next]
}

export const makeRecords = (store: Store): Records["Type"] => {
  const get = Effect.fnUntraced(function* (tenant: Tenant, type: string, id: string) {
    return lookup(yield* store.read, tenant, type, id)?.record
  })

  const findUnique = Effect.fnUntraced(function* (
    tenant: Tenant | "global",
    type: string,
    key: { readonly name: string; readonly value: string }
  ) {
    const state = yield* store.read
    const holder = Option.getOrUndefined(HashMap.get(state.uniques, uniqueIndexKey(tenant, type, key)))
    if (holder === undefined) return undefined
    const bucket = Option.getOrUndefined(HashMap.get(state.buckets, holder.bucket))
    return bucket === undefined ? undefined : Option.getOrUndefined(HashMap.get(bucket.rows, holder.id))?.record
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
    return yield* store.write<StoredRecord, UniqueViolation>((state) => {
      if (lookup(state, tenant, type, id) !== undefined) return Either.left(new UniqueViolation({ name: "id" }))
      const taken = takenKey(state, entry.record, entry.uniques)
      if (taken !== undefined) return Either.left(new UniqueViolation({ name: taken.name }))
      return Either.right([entry.record, put(state, entry)] as const)
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
    return yield* store.write<StoredRecord, RevisionConflict | UniqueViolation>((state) => {
      const current = lookup(state, tenant, type, id)
      const expected = options?.expectedRevision
      if (current === undefined || (expected !== undefined && current.record.revision !== expected)) {
        return Either.left(new RevisionConflict({ current: current?.record.revision ?? null }))
      }
      const entry: Entry = Object.freeze({
        record: Object.freeze({ ...current.record, revision: current.record.revision + 1, data: newData }),
        uniques: newUniques ?? current.uniques
      })
      const taken = takenKey(state, entry.record, entry.uniques)
      if (taken !== undefined) return Either.left(new UniqueViolation({ name: taken.name }))
      return Either.right([entry.record, put(drop(state, current), entry)] as const)
    })
  })

  const remove = Effect.fnUntraced(function* (tenant: Tenant, type: string, id: string) {
    return yield* store.write((state) => {
      const current = lookup(state, tenant, type, id)
      return Either.right(current === undefined ? [false, state] as const : [true, drop(state, current)] as const)
    })
  })

  const list = Effect.fnUntraced(function* (tenant: Tenant, type: string, query: ListQuery) {
    return Query.list(recordsOf(yield* store.read, tenant, type), query)
  })

  const count = Effect.fnUntraced(function* (
    tenant: Tenant,
    type: string,
    where: ReadonlyArray<Where>,
    groupBy: ReadonlyArray<string>
  ) {
    return Query.count(recordsOf(yield* store.read, tenant, type), where, groupBy)
  })

  const scan = Effect.fnUntraced(function* (type: string, where: ReadonlyArray<Where>, limit: number) {
    const state = yield* store.read
    const found: Array<StoredRecord> = []
    for (const bucket of HashMap.values(state.buckets)) {
      if (bucket.type !== type) continue
      for (const entry of HashMap.values(bucket.rows)) {
        if (Query.matchesAll(entry.record, where)) found.push(entry.record)
      }
    }
    return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, Math.max(0, limit))
  })

  const purge = Effect.fnUntraced(function* (tenant: Tenant, keepTypes: ReadonlyArray<string>) {
    return yield* store.write((state) =>
      Either.right(
        dropWhere(
          state,
          (bucket) =>
            bucket.tenant.accountId === tenant.accountId &&
            bucket.tenant.environment === tenant.environment &&
            !keepTypes.includes(bucket.type)
        )
      )
    )
  })

  const prune = Effect.fnUntraced(function* (type: string, field: string, before: string) {
    return yield* store.write((state) =>
      Either.right(
        dropWhere(state, (bucket, entry) => {
          if (bucket.type !== type) return false
          const value = Query.fieldOf(entry.record.data, field)
          return typeof value === "string" && value < before
        })
      )
    )
  })

  return Records.of({ get, findUnique, insert, update, remove, list, count, scan, purge, prune })
}
