/**
 * The search index of a declared search path (`AccessPath` of kind "search": `q`, a
 * case-insensitive `contains` on a text field): what PostgreSQL's pg_trgm GIN index is to its
 * store, per bucket and field, as one persistent value.
 *
 * - A record's text is lower-cased exactly as `matches` (query.ts) lower-cases it
 *   (`toLowerCase`, whole string), and cut into its trigrams: every 3 consecutive UTF-16 code
 *   units (so a surrogate pair may be split; `includes` compares code units too). A value
 *   that is not a string, or whose lower-cased text is shorter than 3, has none.
 * - The index maps each trigram to the ids of the records holding it: a B-tree of trigrams
 *   whose values are sets of ids (B-trees whose values are their keys, `BTree.add`). Every
 *   structure is persistent, so a transaction's copy and the committed one share all but
 *   what a write changed, as the ordered indexes do.
 * - If `q.toLowerCase()` is a substring of `text.toLowerCase()`, each trigram of the first
 *   is one of the second: the ids of any of its trigrams hold every match (a superset, which
 *   the reader checks with `matchesAll`). A query shorter than 3 code units (lower-cased)
 *   has no trigram and cannot use the index; a trigram no record holds means no match.
 *
 * Postings hold ids, not entries: a write that leaves the text's lower-cased form as it was
 * (most updates) touches nothing here, and the reader looks each candidate up by id.
 */
import * as BTree from "./btree.js"

/** The search index of one field, registered like an ordered index (`key`). */
export interface SearchSpec {
  readonly key: string
  readonly search: string
}

export interface SearchIndex {
  readonly spec: SearchSpec
  /** Trigram → the ids of the records whose text holds it (never an empty set). */
  readonly grams: BTree.Tree<string, BTree.KeySet<string>>
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

export const searchSpecOf = (field: string): SearchSpec => ({ key: JSON.stringify(["search", field]), search: field })

/** The text of a field value as the index sees it: lower-cased, or `undefined` (not text). */
const textOf = (value: unknown): string | undefined => (typeof value === "string" ? value.toLowerCase() : undefined)

/** The distinct trigrams of a lower-cased text, by code unit. */
export const trigramsOf = (lowered: string): Set<string> => {
  const grams = new Set<string>()
  for (let i = 0; i + 3 <= lowered.length; i++) grams.add(lowered.slice(i, i + 3))
  return grams
}

const noGrams: ReadonlySet<string> = new Set()
const noIds: BTree.KeySet<string> = BTree.empty(compareStrings)

export const emptySearch = (spec: SearchSpec): SearchIndex => ({ spec, grams: BTree.empty(compareStrings) })

/** The index of `records` (given in ascending id order, as the rows are): O(total trigrams). */
export const buildSearch = (
  spec: SearchSpec,
  records: Iterable<{ readonly id: string; readonly value: unknown }>
): SearchIndex => {
  const ids = new Map<string, Array<string>>()
  for (const { id, value } of records) {
    const text = textOf(value)
    if (text === undefined) continue
    for (const gram of trigramsOf(text)) {
      const list = ids.get(gram)
      if (list === undefined) ids.set(gram, [id])
      else list.push(id)
    }
  }
  const grams = Array.from(ids.keys()).sort(compareStrings)
  return {
    spec,
    grams: BTree.fromSorted(
      compareStrings,
      grams.map((gram) => [gram, BTree.fromSorted(compareStrings, ids.get(gram)!.map((id) => [id, id] as const))] as const)
    )
  }
}

/**
 * The index after the record `id`'s field went from `before` to `after` (`undefined`: no
 * record): the id leaves the trigrams it no longer holds and joins the new ones. The same
 * index when the lower-cased text is unchanged, or when `edit` changed it in place.
 */
export const changeSearch = (index: SearchIndex, id: string, before: unknown, after: unknown, edit?: BTree.Edit): SearchIndex => {
  const from = textOf(before)
  const to = textOf(after)
  if (from === to) return index
  const old = from === undefined ? noGrams : trigramsOf(from)
  const next = to === undefined ? noGrams : trigramsOf(to)
  let grams = index.grams
  for (const gram of old) {
    if (next.has(gram)) continue
    const ids = BTree.get(grams, gram)
    if (ids === undefined) continue
    const left = BTree.remove(ids, id)
    grams = BTree.size(left) === 0 ? BTree.remove(grams, gram) : BTree.set(grams, gram, left)
  }
  for (const gram of next) {
    if (old.has(gram)) continue
    const ids = BTree.get(grams, gram)
    const added = BTree.add(ids ?? noIds, id, edit)
    // A set changed in place is the value the trigram holds already.
    if (added !== ids) grams = BTree.set(grams, gram, added, edit)
  }
  return grams === index.grams ? index : { spec: index.spec, grams }
}

/**
 * The smallest set of ids holding one of the trigrams of `query` (lower-cased): every record
 * whose text contains the query is in it. Empty when some trigram is held by no record (then
 * nothing matches); `undefined` when the query is too short to have a trigram. O(t log g)
 * for t trigrams of the query, g of the index: the sizes come from the trees' roots.
 */
export const idsFor = (index: SearchIndex, query: string): BTree.KeySet<string> | undefined => {
  const lowered = query.toLowerCase()
  if (lowered.length < 3) return undefined
  let best: BTree.KeySet<string> | undefined
  for (const gram of trigramsOf(lowered)) {
    const ids = BTree.get(index.grams, gram)
    if (ids === undefined) return noIds
    if (best === undefined || BTree.size(ids) < BTree.size(best)) best = ids
  }
  return best
}
