/**
 * Filtering, ordering, keyset positions and grouping of records, as pure functions. The rules
 * are the ones a PostgreSQL store gets from SQL: a null or missing value sorts lowest, text
 * compares by code unit (`COLLATE "C"`), comparisons with a value of another type match nothing.
 */
import type { GroupCount, Json, JsonObject, SortSpec, StoredRecord, Where } from "@syllabus/core"

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
