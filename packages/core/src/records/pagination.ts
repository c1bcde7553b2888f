/**
 * Cursor pagination (§4.2): `limit` 1..200 (default 50), opaque signed cursors bound to the
 * collection, its sort and its filters, valid 24 hours; `next_cursor` null ends the collection.
 */
import { Clock, type Context, Effect } from "effect"
import { apiError } from "../errors/errors.js"
import { Crypto } from "../ports/crypto.js"
import { type ListQuery, Records, type SortSpec, type StoredRecord, type Tenant, type Where } from "../ports/store.js"
import { DAY } from "./time.js"

export const DEFAULT_PAGE_LIMIT = 50
export const MAX_PAGE_LIMIT = 200
export const CURSOR_TTL_MS = DAY

export type Page = {
  readonly limit: number
  readonly next_cursor: string | null
  readonly prev_cursor: string | null
}

interface CursorPayload {
  /** Direction: after the position (`n`) or before it (`p`). */
  readonly d: "n" | "p"
  readonly v: string | number | null
  readonly i: string
  /** Binding: hash of collection, tenant, sort and filters. */
  readonly b: string
  /** Issued at, epoch ms. */
  readonly t: number
}

const toBase64Url = (text: string): string => Buffer.from(text, "utf8").toString("base64url")
const fromBase64Url = (text: string): string => Buffer.from(text, "base64url").toString("utf8")

const invalidCursor = apiError("invalid_cursor", { details: [{ parameter: "cursor", code: "invalid_cursor" }] })

export interface PageRequest<PositionError = never> {
  readonly tenant: Tenant
  readonly type: string
  readonly where: ReadonlyArray<Where>
  readonly sort: SortSpec
  readonly limit: number
  readonly cursor: string | undefined
  /**
   * What the client asked for: the collection and its filters as given. The cursor is bound
   * to it and to the sort (not to `where`, which may hold derived values such as "now").
   */
  readonly collection: string
  /** A check of the record a cursor points at (e.g. 410 `cursor_expired` when it is no longer retained). */
  readonly checkPosition?: (id: string) => Effect.Effect<void, PositionError, Records>
  /**
   * What the caller's scope reaches (`reachAlternatives` of access/scope.ts): every record, or
   * those matching one of these condition sets besides `where` (none: nothing). Access rules come
   * before pagination (§4.2): each alternative is read through its own index and the pages merged.
   */
  readonly reach?: "all" | ReadonlyArray<ReadonlyArray<Where>>
  /**
   * A record's visibility that no index holds (a stored trace's anchors, access/scope.ts): the
   * collection is read in its order and filtered, examining at most `VISIBLE_SCAN_BUDGET` records
   * per page. A page may then hold fewer than `limit` items with a `next_cursor`: the rest is on
   * later pages (as it never shows what the caller may not see, it may end short or even empty).
   */
  readonly visible?: (record: StoredRecord) => boolean
}

/** Records examined at most for one page of a collection filtered by `visible`. */
export const VISIBLE_SCAN_BUDGET = 1000

const sortValue = (record: StoredRecord, sort: SortSpec): string | number | null => {
  if (sort.field === "id") return record.id
  const v = record.data[sort.field]
  return typeof v === "string" || typeof v === "number" ? v : null
}

const flip = (sort: SortSpec): SortSpec => ({ ...sort, direction: sort.direction === "asc" ? "desc" : "asc" })

/** Ascending order of (sort value, id) as the stores order them: null lowest, numbers by value, text by code unit. */
const comparePositions = (a: StoredRecord, b: StoredRecord, sort: SortSpec): number => {
  const x = sortValue(a, sort)
  const y = sortValue(b, sort)
  if (x !== y) {
    if (x === null) return -1
    if (y === null) return 1
    if (typeof x === "number" && typeof y === "number") return x - y
    if (typeof x !== typeof y) return typeof x === "number" ? -1 : 1
    return x < y ? -1 : 1
  }
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

/**
 * The first `query.limit` records of the union of `alternatives` (each added to `query.where`),
 * in the query's order: one read per alternative, each through its own index, merged.
 */
const listAnyOf = (records: Context.Tag.Service<Records>, tenant: Tenant, type: string, query: ListQuery, alternatives: ReadonlyArray<ReadonlyArray<Where>>) =>
  Effect.gen(function* () {
    if (alternatives.length === 1) return yield* records.list(tenant, type, { ...query, where: [...query.where, ...alternatives[0]!] })
    const pages = yield* Effect.forEach(alternatives, (extra) => records.list(tenant, type, { ...query, where: [...query.where, ...extra] }))
    const seen = new Set<string>()
    const merged = pages.flat().filter((record) => !seen.has(record.id) && seen.add(record.id))
    const direction = query.sort.direction === "asc" ? 1 : -1
    merged.sort((a, b) => direction * comparePositions(a, b, query.sort))
    return merged.slice(0, query.limit)
  })

/**
 * One read of a collection (no cursor) limited to what a reach shows (`PageRequest.reach`): for
 * the reads that page themselves (reports).
 */
export const listReached = (tenant: Tenant, type: string, reach: "all" | ReadonlyArray<ReadonlyArray<Where>>, query: ListQuery) =>
  Effect.flatMap(Records, (records) => (reach === "all" ? records.list(tenant, type, query) : listAnyOf(records, tenant, type, query, reach)))

/** One page of a collection, with the cursors around it. */
export const paginate = <PositionError = never>(request: PageRequest<PositionError>) => Effect.gen(function* () {
  const crypto = yield* Crypto
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const binding = crypto
    .sha256Hex(JSON.stringify([request.collection, request.tenant, request.sort]))
    .slice(0, 24)

  const sign = (payload: CursorPayload): string => {
    const body = toBase64Url(JSON.stringify(payload))
    return `${body}.${crypto.signCursor(body)}`
  }

  let position: CursorPayload | undefined
  if (request.cursor !== undefined) {
    const [body, signature, extra] = request.cursor.split(".")
    if (body === undefined || signature === undefined || extra !== undefined) return yield* Effect.fail(invalidCursor)
    if (!crypto.safeEqual(signature, crypto.signCursor(body))) return yield* Effect.fail(invalidCursor)
    const parsed = yield* Effect.try({ try: () => JSON.parse(fromBase64Url(body)) as CursorPayload, catch: () => invalidCursor })
    if (parsed.b !== binding || now - parsed.t > CURSOR_TTL_MS || parsed.t > now + 60_000) {
      return yield* Effect.fail(invalidCursor)
    }
    position = parsed
    if (request.checkPosition) yield* request.checkPosition(parsed.i)
  }

  const backwards = position?.d === "p"
  const query: ListQuery = {
    where: request.where,
    sort: backwards ? flip(request.sort) : request.sort,
    after: position ? { value: position.v, id: position.i } : undefined,
    limit: request.limit + 1
  }
  const reach = request.reach ?? "all"
  const read = (q: ListQuery) =>
    reach === "all" ? records.list(request.tenant, request.type, q) : listAnyOf(records, request.tenant, request.type, q, reach)
  // `resumeAt`: where a scan filtered by `visible` stopped for its budget, short of `limit + 1` items.
  const { fetched, resumeAt } = request.visible === undefined
    ? { fetched: yield* read(query), resumeAt: undefined }
    : yield* scanVisible(read, query, request.visible)
  const more = fetched.length > request.limit || resumeAt !== undefined
  const slice = fetched.slice(0, request.limit)
  // The record the read would go on after, in its own direction.
  const onwards = fetched.length > request.limit ? slice.at(-1) : resumeAt
  const items = backwards ? slice.reverse() : slice

  type Position = { readonly v: string | number | null; readonly i: string }
  const positionOf = (record: StoredRecord | undefined): Position | undefined =>
    record === undefined ? undefined : { v: sortValue(record, request.sort), i: record.id }
  const cursorAt = (d: "n" | "p", at: Position | undefined): string | null =>
    at === undefined ? null : sign({ d, v: at.v, i: at.i, b: binding, t: now })
  // Back from an empty page: from where it was asked.
  const asked = position === undefined ? undefined : { v: position.v, i: position.i }

  const page: Page = backwards
    ? {
      limit: request.limit,
      next_cursor: cursorAt("n", positionOf(items.at(-1)) ?? asked),
      prev_cursor: more ? cursorAt("p", positionOf(onwards)) : null
    }
    : {
      limit: request.limit,
      next_cursor: more ? cursorAt("n", positionOf(onwards)) : null,
      prev_cursor: position !== undefined ? cursorAt("p", positionOf(items[0]) ?? asked) : null
    }
  return { items, page }
})

/**
 * The first `query.limit` records `visible` keeps, reading on in the query's order, at most
 * `VISIBLE_SCAN_BUDGET` records examined: past it, the last one examined (`resumeAt`).
 */
const scanVisible = <E, R>(
  read: (query: ListQuery) => Effect.Effect<ReadonlyArray<StoredRecord>, E, R>,
  query: ListQuery,
  visible: (record: StoredRecord) => boolean
) =>
  Effect.gen(function* () {
    const fetched: Array<StoredRecord> = []
    let after = query.after
    let examined = 0
    for (;;) {
      const chunk = Math.min(Math.max(query.limit, 100), VISIBLE_SCAN_BUDGET - examined)
      const rows = yield* read({ ...query, after, limit: chunk })
      for (const [index, record] of rows.entries()) {
        examined++
        if (visible(record)) fetched.push(record)
        if (fetched.length === query.limit) {
          // Enough: the rest of the chunk is not looked at.
          return { fetched, resumeAt: undefined }
        }
        if (examined >= VISIBLE_SCAN_BUDGET && (index < rows.length - 1 || rows.length === chunk)) return { fetched, resumeAt: record }
      }
      const last = rows.at(-1)
      if (rows.length < chunk || last === undefined) return { fetched, resumeAt: undefined }
      after = { value: sortValue(last, query.sort), id: last.id }
    }
  })
