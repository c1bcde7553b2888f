/**
 * The request log of the memory store (`/requests`: one entry per authenticated call, §4.5): an
 * append-only stream, kept per tenant in a structure made for one instead of a bucket of records
 * (`bucket.ts`), where each entry cost a copy of the path to it in the rows' tree and in the tree
 * of each of its indexes, on every call.
 *
 * A tenant's log is its entries in ID order (IDs lead with their creation time, so an entry is
 * appended at the end; one made elsewhere is placed by a binary search), and, for each field its
 * filters select on (`logFields`: the equality of each of its access paths), the entries of each
 * value in ID order. A page walks the entries of its equality's value (or all of them) from its
 * cursor, in either direction; retention removes the oldest entries from the front, where they
 * are. Its writes apply at once, outside any unit of work, as PostgreSQL's group commits of the
 * log do: a unit of work never writes the log, and rolling one back does not take back a call.
 */
import { Effect } from "effect"
import {
  type AccessPath,
  type AggregateQuery,
  type JsonObject,
  type ListQuery,
  Records,
  REQUEST_TYPE,
  RevisionConflict,
  type StoredRecord,
  type Tenant,
  UniqueViolation,
  type Where
} from "@syllabus/core"
import * as Query from "./query.js"
import { tenantKey } from "./state.js"
import { frozenCopy } from "./values.js"

/** Whether the memory store keeps records of `type` in a log (`makeLog`) instead of buckets. */
export const isLogged = (type: string): boolean => type === REQUEST_TYPE

/** The fields a log keeps entries by: the equalities of the declared access paths of its type. */
export const logFields = (paths: ReadonlyArray<AccessPath>): ReadonlyArray<string> => [
  ...new Set(paths.flatMap((path) => (isLogged(path.type) && path.kind === "ordered" ? path.equals : [])))
]

/**
 * Records in ID order, with the oldest removed from the front in O(1) (retention): an array and
 * the position of its first live item, compacted once most of it is dead.
 */
class Run {
  private items: Array<StoredRecord> = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  at(i: number): StoredRecord | undefined {
    return this.items[this.head + i]
  }

  /** The first position whose ID is at least `id`. */
  lowerBound(id: string): number {
    let low = this.head
    let high = this.items.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.items[middle]!.id < id) low = middle + 1
      else high = middle
    }
    return low - this.head
  }

  find(id: string): StoredRecord | undefined {
    const found = this.at(this.lowerBound(id))
    return found?.id === id ? found : undefined
  }

  /** At the end (its ID is the newest: the usual case), else at its place. */
  insert(record: StoredRecord): void {
    const last = this.items[this.items.length - 1]
    if (this.length === 0 || last!.id < record.id) this.items.push(record)
    else this.items.splice(this.head + this.lowerBound(record.id), 0, record)
  }

  remove(id: string): void {
    const at = this.lowerBound(id)
    if (this.at(at)?.id !== id) return
    if (at === 0) this.dropFront(1)
    else this.items.splice(this.head + at, 1)
  }

  dropFront(count: number): void {
    this.head += count
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }
}

interface TenantLog {
  readonly tenant: Tenant
  /** Every entry, in ID order. */
  readonly entries: Run
  /** By field, then by value (`valueKey`): the entries holding it, in ID order. */
  readonly byField: Map<string, Map<string, Run>>
}

/** A field's value as a key of `byField` (missing and null are one value, as `eq null` reads them). */
const valueKey = (value: unknown): string => (value === undefined || value === null ? "null" : JSON.stringify(value))

const byIdAsc = (a: StoredRecord, b: StoredRecord) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export const makeLog = (fields: ReadonlyArray<string>) => {
  const logs = new Map<string, TenantLog>()

  const logOf = (tenant: Tenant): TenantLog | undefined => logs.get(tenantKey(tenant))
  const openLog = (tenant: Tenant): TenantLog => {
    const key = tenantKey(tenant)
    let log = logs.get(key)
    if (log === undefined) {
      log = { tenant: { accountId: tenant.accountId, environment: tenant.environment }, entries: new Run(), byField: new Map(fields.map((f) => [f, new Map()])) }
      logs.set(key, log)
    }
    return log
  }

  const find = (log: TenantLog | undefined, id: string): StoredRecord | undefined => log?.entries.find(id)

  const index = (log: TenantLog, record: StoredRecord): void => {
    for (const [field, values] of log.byField) {
      const key = valueKey(Query.fieldOf(record.data, field))
      let entries = values.get(key)
      if (entries === undefined) values.set(key, entries = new Run())
      entries.insert(record)
    }
  }

  const unindex = (log: TenantLog, record: StoredRecord): void => {
    for (const [field, values] of log.byField) {
      const key = valueKey(Query.fieldOf(record.data, field))
      const entries = values.get(key)
      if (entries === undefined) continue
      entries.remove(record.id)
      if (entries.length === 0) values.delete(key)
    }
  }

  const put = (log: TenantLog, record: StoredRecord, previous: StoredRecord | undefined): void => {
    if (previous !== undefined) {
      unindex(log, previous)
      log.entries.remove(previous.id)
    }
    log.entries.insert(record)
    index(log, record)
  }

  const recordOf = (tenant: Tenant, id: string, data: JsonObject, revision = 1): StoredRecord =>
    frozenCopy({ type: REQUEST_TYPE, id, tenant: { accountId: tenant.accountId, environment: tenant.environment }, revision, data })

  /** The entries a read of `where` walks: those of its first equality on a kept field, else all, in ID order. */
  const none = new Run()
  const candidates = (log: TenantLog, where: ReadonlyArray<Where>): Run => {
    for (const condition of where) {
      if (condition.op !== "eq") continue
      const values = log.byField.get(condition.field)
      if (values !== undefined) return values.get(valueKey(condition.value)) ?? none
    }
    return log.entries
  }

  /** The entries of `where`, in ID order (both ways). */
  function* matching(log: TenantLog | undefined, where: ReadonlyArray<Where>, direction: "asc" | "desc" = "asc", afterId?: string) {
    if (log === undefined) return
    const entries = candidates(log, where)
    // Read a position at a time: the run may change between two steps of a reader that yields.
    if (direction === "asc") {
      for (let i = afterId === undefined ? 0 : entries.lowerBound(afterId); i < entries.length; i++) {
        const record = entries.at(i)!
        if (afterId !== undefined && record.id === afterId) continue
        if (Query.matchesAll(record, where)) yield record
      }
    } else {
      for (let i = (afterId === undefined ? entries.length : entries.lowerBound(afterId)) - 1; i >= 0; i--) {
        const record = entries.at(i)!
        if (Query.matchesAll(record, where)) yield record
      }
    }
  }

  return {
    get: (tenant: Tenant, id: string) => find(logOf(tenant), id),

    getMany: (tenant: Tenant, ids: ReadonlyArray<string>) => {
      const log = logOf(tenant)
      return [...new Set(ids)].flatMap((id) => find(log, id) ?? [])
    },

    /** Every ID new (in the log and in the call), or none is stored. */
    insert: (tenant: Tenant, rows: ReadonlyArray<{ readonly id: string; readonly data: JsonObject }>): ReadonlyArray<StoredRecord> | UniqueViolation => {
      const log = openLog(tenant)
      const ids = new Set<string>()
      for (const { id } of rows) {
        if (ids.has(id) || find(log, id) !== undefined) return new UniqueViolation({ name: "id" })
        ids.add(id)
      }
      const records = rows.map(({ data, id }) => recordOf(tenant, id, data))
      for (const record of records) put(log, record, undefined)
      return records
    },

    update: (tenant: Tenant, id: string, data: JsonObject, expectedRevision: number | undefined): StoredRecord | RevisionConflict => {
      const log = logOf(tenant)
      const current = find(log, id)
      if (log === undefined || current === undefined || (expectedRevision !== undefined && current.revision !== expectedRevision)) {
        return new RevisionConflict({ current: current?.revision ?? null })
      }
      const record = recordOf(tenant, id, data, current.revision + 1)
      put(log, record, current)
      return record
    },

    increment: (tenant: Tenant, id: string, fields: JsonObject, deltas: Readonly<Record<string, number>>): void => {
      const log = openLog(tenant)
      const current = find(log, id)
      const data: Record<string, unknown> = { ...(current?.data ?? fields) }
      for (const [name, delta] of Object.entries(deltas)) data[name] = (typeof data[name] === "number" ? (data[name] as number) : 0) + delta
      put(log, recordOf(tenant, id, data as JsonObject, (current?.revision ?? 0) + 1), current)
    },

    remove: (tenant: Tenant, id: string): boolean => {
      const log = logOf(tenant)
      const current = find(log, id)
      if (log === undefined || current === undefined) return false
      unindex(log, current)
      log.entries.remove(id)
      return true
    },

    /** A page: by ID from its cursor (its equality's entries, or all); in another order, every match sorted. */
    list: (tenant: Tenant, query: ListQuery): Array<StoredRecord> => {
      const limit = Math.max(0, Math.floor(query.limit))
      const out: Array<StoredRecord> = []
      if (limit === 0) return out
      const { sort } = query
      if (sort.field === "id") {
        for (const record of matching(logOf(tenant), query.where, sort.direction, query.after?.id)) {
          out.push(record)
          if (out.length >= limit) break
        }
        return out
      }
      const sign = sort.direction === "asc" ? 1 : -1
      const position = (record: StoredRecord) => Query.sortValue(record, sort)
      const after = query.after
      return [...matching(logOf(tenant), query.where)]
        .filter((record) => after === undefined || sign * Query.comparePositions(position(record), record.id, after.value, after.id) > 0)
        .sort((a, b) => sign * Query.comparePositions(position(a), a.id, position(b), b.id))
        .slice(0, limit)
    },

    count: (tenant: Tenant, where: ReadonlyArray<Where>, groupBy: ReadonlyArray<string>) =>
      Query.count(matching(logOf(tenant), where), [], groupBy),

    aggregate: (tenant: Tenant, query: AggregateQuery) => Query.aggregate(matching(logOf(tenant), query.where), query),

    /** Every tenant's entries of `where`, in ID order, at most `limit`. */
    scan: (where: ReadonlyArray<Where>, limit: number): ReadonlyArray<StoredRecord> => {
      const found: Array<StoredRecord> = []
      for (const log of logs.values()) {
        let taken = 0
        for (const record of matching(log, where)) {
          if (taken++ >= limit) break
          found.push(record)
        }
      }
      return found.sort(byIdAsc).slice(0, Math.max(0, limit))
    },

    /** Drop a tenant's log; how many entries it held. */
    purge: (tenant: Tenant): number => {
      const key = tenantKey(tenant)
      const removed = logs.get(key)?.entries.length ?? 0
      logs.delete(key)
      return removed
    },

    /**
     * Remove entries whose `field` (a text timestamp) is before `before`, at most `limit`: from
     * the front of each log, the oldest, up to its first entry still in time (entries are in
     * creation order; one out of it stays until the entries before it go, and reads hide it).
     */
    prune: (field: string, before: string, limit: number): number => {
      let removed = 0
      for (const [key, log] of logs) {
        if (removed >= limit) break
        let count = 0
        while (log.entries.length > 0 && removed + count < limit) {
          const oldest = log.entries.at(0)!
          const value = Query.fieldOf(oldest.data, field)
          if (!(typeof value === "string" && value < before)) break
          // The oldest of the log is the oldest of each of its values too: each run loses its front.
          unindex(log, oldest)
          log.entries.dropFront(1)
          count++
        }
        if (log.entries.length === 0) logs.delete(key)
        removed += count
      }
      return removed
    }
  }
}

export type Log = ReturnType<typeof makeLog>

/** The log keeps no unique keys: a write giving it some is a mistake of ours. */
const keyless = (type: string) => Effect.dieMessage(`memory store: records of ${type} are kept in a log, without unique keys`)

/** `records` (the buckets), with the types the log keeps (`isLogged`) read and written in `log` instead. */
export const withLog = (records: Records["Type"], log: Log): Records["Type"] =>
  Records.of({
    ...records,
    get: (tenant, type, id) => (isLogged(type) ? Effect.sync(() => log.get(tenant, id)) : records.get(tenant, type, id)),
    getMany: (tenant, type, ids) => (isLogged(type) ? Effect.sync(() => log.getMany(tenant, ids)) : records.getMany(tenant, type, ids)),
    findUnique: (tenant, type, key) => (isLogged(type) ? Effect.succeed(undefined) : records.findUnique(tenant, type, key)),
    insert: (tenant, type, id, data, uniques) => {
      if (!isLogged(type)) return records.insert(tenant, type, id, data, uniques)
      if (uniques !== undefined && uniques.length > 0) return keyless(type)
      return Effect.suspend(() => {
        const stored = log.insert(tenant, [{ id, data }])
        return stored instanceof UniqueViolation ? Effect.fail(stored) : Effect.succeed(stored[0]!)
      })
    },
    insertMany: (tenant, type, rows) =>
      isLogged(type)
        ? Effect.suspend(() => {
          const stored = log.insert(tenant, rows)
          return stored instanceof UniqueViolation ? Effect.fail(stored) : Effect.succeed(stored)
        })
        : records.insertMany(tenant, type, rows),
    update: (tenant, type, id, data, options) => {
      if (!isLogged(type)) return records.update(tenant, type, id, data, options)
      if (options?.uniques !== undefined && options.uniques.length > 0) return keyless(type)
      return Effect.suspend(() => {
        const updated = log.update(tenant, id, data, options?.expectedRevision)
        return updated instanceof RevisionConflict ? Effect.fail(updated) : Effect.succeed(updated)
      })
    },
    remove: (tenant, type, id) => (isLogged(type) ? Effect.sync(() => log.remove(tenant, id)) : records.remove(tenant, type, id)),
    increment: (tenant, type, id, fields, deltas) =>
      isLogged(type) ? Effect.sync(() => log.increment(tenant, id, fields, deltas)) : records.increment(tenant, type, id, fields, deltas),
    list: (tenant, type, query) => (isLogged(type) ? Effect.sync(() => log.list(tenant, query)) : records.list(tenant, type, query)),
    count: (tenant, type, where, groupBy) =>
      isLogged(type) ? Effect.sync(() => log.count(tenant, where, groupBy)) : records.count(tenant, type, where, groupBy),
    aggregate: (tenant, type, query) => (isLogged(type) ? Effect.sync(() => log.aggregate(tenant, query)) : records.aggregate(tenant, type, query)),
    scan: (type, where, limit) => (isLogged(type) ? Effect.sync(() => log.scan(where, limit)) : records.scan(type, where, limit)),
    purge: (tenant, keepTypes) =>
      Effect.map(records.purge(tenant, keepTypes), (removed) => removed + (keepTypes.some(isLogged) ? 0 : log.purge(tenant))),
    prune: (type, field, before, limit) => (isLogged(type) ? Effect.sync(() => log.prune(field, before, limit)) : records.prune(type, field, before, limit))
  })

