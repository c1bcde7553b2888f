/**
 * The window a retained collection shows (the audit trail, events): the client's
 * `created_after` / `created_before`, never further back than retention, plus equality filters.
 */
import { Option } from "effect"
import type { Where } from "../ports/store.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"

export interface RetainedQuery {
  readonly created_after: string | undefined
  readonly created_before: string | undefined
  /** Equality filters on fields of the entries; `undefined` values are not filters. */
  readonly filters: Readonly<Record<string, string | number | undefined>>
}

const normalized = (text: string | undefined) =>
  text === undefined ? undefined : formatTimestamp(Option.getOrThrow(parseTimestamp(text)))

export const retainedWhere = (query: RetainedQuery, retainedSince: string): ReadonlyArray<Where> => {
  const after = normalized(query.created_after)
  const before = normalized(query.created_before)
  return [
    { field: "created_at", op: "gte", value: after !== undefined && after > retainedSince ? after : retainedSince },
    ...(before !== undefined ? [{ field: "created_at", op: "lt" as const, value: before }] : []),
    ...Object.entries(query.filters).flatMap(([field, value]) => (value === undefined ? [] : [{ field, op: "eq" as const, value }]))
  ]
}

/** What binds a cursor: the filters as the client gave them (not the moving retention bound). */
export const retainedBinding = (query: RetainedQuery): string =>
  JSON.stringify([query.filters, normalized(query.created_after) ?? null, normalized(query.created_before) ?? null])
