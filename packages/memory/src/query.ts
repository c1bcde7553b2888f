/**
 * Filtering, ordering, keyset positions and grouping of records, as pure functions. The rules
 * are the ones a PostgreSQL store gets from SQL: a null or missing value sorts lowest, text
 * compares by code unit (`COLLATE "C"`), comparisons with a value of another type match nothing.
 */
import { type AggregateQuery, type AggregateRow, groupKeyText, type GroupCount, type Json, type JsonObject, type SortSpec, type StoredRecord, type Where } from "@syllabus/core"

/** What a sort orders by: a field and its kind (the direction is the reader's). */
export type SortKey = Pick<SortSpec, "field" | "kind">

/** A top-level field of the data; `undefined` when missing (never a prototype property). */
export const fieldOf = (data: JsonObject, field: string): Json | undefined =>
  Object.hasOwn(data, field) ? data[field] : undefined

export const compareScalars = (a: string | number, b: string | number): number => {
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0
  // Mixed types only arise from a keyset position of the wrong kind: order numbers first.
  if (typeof a !== typeof b) return typeof a === "number" ? -1 : 1
  return a < b ? -1 : a > b ? 1 : 0
}

const matches = (data: JsonObject, where: Where): boolean => {
  const value = fieldOf(data, where.field)
  switch (where.op) {
    case "eq":
      return where.value === null ? value === undefined || value === null : value === where.value
    case "in":
      return typeof value === "string" && where.values.includes(value)
    case "contains":
      return typeof value === "string" && value.toLowerCase().includes(where.value.toLowerCase())
    default: {
      if (typeof value !== typeof where.value || (typeof value !== "string" && typeof value !== "number")) return false
      const c = compareScalars(value, where.value)
      switch (where.op) {
        case "gt":
          return c > 0
        case "gte":
          return c >= 0
        case "lt":
          return c < 0
        case "lte":
          return c <= 0
      }
    }
  }
}

export const matchesAll = (record: StoredRecord, where: ReadonlyArray<Where>): boolean =>
  where.every((w) => matches(record.data, w))

export type SortValue = string | number | null

/** A value counts for a sort only if it has the sort's kind; anything else is null. */
export const asSortValue = (value: unknown, sort: SortKey): SortValue =>
  sort.kind === "number"
    ? typeof value === "number" ? value : null
    : typeof value === "string" ? value : null

export const sortValue = (record: StoredRecord, sort: SortKey): SortValue =>
  sort.field === "id" ? record.id : asSortValue(fieldOf(record.data, sort.field), sort)

/** Ascending order of (value, id), null lowest. */
export const comparePositions = (a: SortValue, aId: string, b: SortValue, bId: string): number => {
  if (a !== b) {
    if (a === null) return -1
    if (b === null) return 1
    const c = compareScalars(a, b)
    if (c !== 0) return c
  }
  return aId < bId ? -1 : aId > bId ? 1 : 0
}

export const count = (
  records: Iterable<StoredRecord>,
  where: ReadonlyArray<Where>,
  groupBy: ReadonlyArray<string>
): ReadonlyArray<GroupCount> => {
  const groups = new Map<string, { key: ReadonlyArray<Json>; count: number }>()
  // Without grouping there is always exactly one row, as `SELECT count(*)` gives.
  if (groupBy.length === 0) groups.set("[]", { key: [], count: 0 })
  for (const record of records) {
    if (!matchesAll(record, where)) continue
    const key = groupBy.map((field) => fieldOf(record.data, field) ?? null)
    const id = JSON.stringify(key)
    const group = groups.get(id)
    if (group === undefined) groups.set(id, { key, count: 1 })
    else group.count++
  }
  return Array.from(groups.values())
}

/** A group key's value: a scalar, or null (missing, null, an object or an array), as PostgreSQL's group key. */
const groupKeyOf = (value: Json | undefined): Json =>
  typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? value : null

/** What a measure accumulates over the records of a group. */
interface Accumulator {
  count: number
  sum: number
  numbers: number
  min: number | null
  max: number | null
}

/** A group's place in the order of `AggregateQuery`: the measure (null as 0), then each key as (present, text). */
type OrderTuple = ReadonlyArray<number | string>

const compareTuples = (a: OrderTuple, b: OrderTuple): number => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i]
    const y = b[i]
    if (x === y) continue
    if (x === undefined) return -1
    if (y === undefined) return 1
    return x < y ? -1 : 1
  }
  return 0
}

const keyTuple = (key: ReadonlyArray<string | null>): OrderTuple => key.flatMap((text) => (text === null ? [0, ""] : [1, text]))

/**
 * `Records.aggregate` over the records of a read (in any order; they have been selected by
 * `query.where` through an index): the groups, their measures, ordered and paged as
 * `AggregateQuery` says, exactly as the SQL of the PostgreSQL store computes them.
 */
export const aggregate = (records: Iterable<StoredRecord>, query: AggregateQuery): ReadonlyArray<AggregateRow> => {
  const groups = new Map<string, { key: ReadonlyArray<Json>; measures: Array<Accumulator> }>()
  const fresh = () => query.measures.map((): Accumulator => ({ count: 0, sum: 0, numbers: 0, min: null, max: null }))
  // Without grouping there is always exactly one group, as an aggregate without GROUP BY gives.
  if (query.groupBy.length === 0) groups.set("[]", { key: [], measures: fresh() })
  for (const record of records) {
    if (!matchesAll(record, query.where)) continue
    const key = query.groupBy.map((field) => groupKeyOf(fieldOf(record.data, field)))
    const id = JSON.stringify(key)
    let group = groups.get(id)
    if (group === undefined) {
      group = { key, measures: fresh() }
      groups.set(id, group)
    }
    query.measures.forEach((measure, i) => {
      if (measure.filter !== undefined && !matchesAll(record, measure.filter)) return
      const acc = group.measures[i]!
      acc.count++
      if (measure.kind === "count") return
      const value = fieldOf(record.data, measure.field)
      if (typeof value !== "number") return
      acc.numbers++
      acc.sum += value
      acc.min = acc.min === null || value < acc.min ? value : acc.min
      acc.max = acc.max === null || value > acc.max ? value : acc.max
    })
  }
  const rows = Array.from(groups.values(), ({ key, measures }): AggregateRow => ({
    key,
    values: query.measures.map((measure, i) => {
      const acc = measures[i]!
      switch (measure.kind) {
        case "count":
          return acc.count
        case "sum":
          return acc.numbers === 0 ? null : acc.sum
        case "avg":
          return acc.numbers === 0 ? null : acc.sum / acc.numbers
        case "min":
          return acc.min
        case "max":
          return acc.max
      }
    })
  }))
  const order = query.order
  const tupleOf = (row: AggregateRow): OrderTuple => [
    ...(order === undefined ? [] : [row.values[order.measure] ?? 0]),
    ...keyTuple(row.key.map(groupKeyText))
  ]
  const sign = order?.direction === "desc" ? -1 : 1
  const sorted = rows
    .map((row) => ({ row, tuple: tupleOf(row) }))
    .sort((a, b) => sign * compareTuples(a.tuple, b.tuple))
  const after = query.after
  const bound: OrderTuple | undefined = after === undefined
    ? undefined
    : [...(order === undefined ? [] : [after.value]), ...keyTuple(query.groupBy.map((_, i) => after.key[i] ?? null))]
  const kept = bound === undefined ? sorted : sorted.filter((item) => sign * compareTuples(item.tuple, bound) > 0)
  const limited = query.limit === undefined ? kept : kept.slice(0, Math.max(0, Math.floor(query.limit)))
  return limited.map((item) => item.row)
}
