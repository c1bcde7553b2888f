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
}

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
  const fetched = reach === "all"
    ? yield* records.list(request.tenant, request.type, query)
    : yield* listAnyOf(records, request.tenant, request.type, query, reach)
  const more = fetched.length > request.limit
  const slice = fetched.slice(0, request.limit)
  const items = backwards ? slice.reverse() : slice

  const first = items[0]
  const last = items[items.length - 1]
  const cursorAt = (d: "n" | "p", record: StoredRecord | undefined): string | null =>
    record === undefined ? null : sign({ d, v: sortValue(record, request.sort), i: record.id, b: binding, t: now })

  const hasNext = backwards ? position !== undefined : more
  const hasPrev = backwards ? more : position !== undefined
  const page: Page = {
    limit: request.limit,
    next_cursor: hasNext ? cursorAt("n", last) : null,
    prev_cursor: hasPrev ? cursorAt("p", first) : null
  }
  return { items, page }
})
