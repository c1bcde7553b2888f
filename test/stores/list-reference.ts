/**
 * Helpers of the memory store's tests: the list as the store computed it before any index
 * (the reference the indexes must agree with), and a deterministic generator.
 */
import type { ListQuery, StoredRecord } from "@syllabus/core"
import * as Query from "../../packages/memory/src/query.js"

/** The list as the store computed it before its indexes: filter everything, sort, slice. */
export const reference = (records: Iterable<StoredRecord>, query: ListQuery): ReadonlyArray<StoredRecord> => {
  const { after, sort } = query
  const sign = sort.direction === "asc" ? 1 : -1
  const afterValue = after === undefined ? null : sort.field === "id" ? after.id : Query.asSortValue(after.value, sort)
  return Array.from(records)
    .filter((r) => Query.matchesAll(r, query.where))
    .map((record) => ({ value: Query.sortValue(record, sort), record }))
    .filter((k) => after === undefined || sign * Query.comparePositions(k.value, k.record.id, afterValue, after.id) > 0)
    .sort((a, b) => sign * Query.comparePositions(a.value, a.record.id, b.value, b.record.id))
    .slice(0, Math.max(0, query.limit))
    .map((k) => k.record)
}

/** A small deterministic generator (the test must not depend on luck). */
export const random = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
  return seed / 2 ** 31
}
