/**
 * The pages of a report (§4.2): `limit` rows, and a `next_cursor` to the following page, signed
 * and bound to the report, its filters and the tenant, valid 24 hours like every cursor of the
 * house (`records/pagination.ts`). Reports page forward only (`prev_cursor` is always null): a
 * report is read from its first row on, as an export is. A position is what the report's
 * order needs (a sort value and an ID, or a measure and a group key) and the rows before it,
 * so that a row's `position` in a ranking costs nothing.
 */
import { Clock, Effect } from "effect"
import { Caller } from "../access/context.js"
import { apiError } from "../errors/errors.js"
import { Crypto } from "../ports/crypto.js"
import type { Json } from "../ports/store.js"
import { CURSOR_TTL_MS } from "../records/pagination.js"

export interface ReportPosition {
  /** The order's value at the last row (a balance, a count), or null. */
  readonly v: string | number | null
  /** The last row's key (an ID, or a group key). */
  readonly k: string | null
  /** Rows before the next page. */
  readonly n: number
}

interface CursorBody extends ReportPosition {
  readonly b: string
  readonly t: number
}

export interface ReportPage {
  readonly limit: number
  readonly next_cursor: string | null
  readonly prev_cursor: null
}

const invalidCursor = () => apiError("invalid_cursor", { details: [{ parameter: "cursor", code: "invalid_cursor" }] })

/**
 * The cursors of one report read: `binding` names the report and what the client asked for
 * (its filters), so a cursor used with other filters is 400 `invalid_cursor`.
 */
export const reportCursors = (report: string, filters: Json) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const caller = yield* Caller
    const now = yield* Clock.currentTimeMillis
    const binding = crypto.sha256Hex(JSON.stringify(["report", report, caller.tenant, filters])).slice(0, 24)
    const read = (cursor: string | undefined): Effect.Effect<ReportPosition | undefined, ReturnType<typeof invalidCursor>> => {
      if (cursor === undefined) return Effect.succeed(undefined)
      const [body, signature, extra] = cursor.split(".")
      if (body === undefined || signature === undefined || extra !== undefined) return Effect.fail(invalidCursor())
      if (!crypto.safeEqual(signature, crypto.signCursor(body))) return Effect.fail(invalidCursor())
      return Effect.try({
        try: () => JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as CursorBody,
        catch: invalidCursor
      }).pipe(
        Effect.flatMap((parsed) =>
          parsed.b !== binding || now - parsed.t > CURSOR_TTL_MS || parsed.t > now + 60_000 ||
            typeof parsed.n !== "number"
            ? Effect.fail(invalidCursor())
            : Effect.succeed({ v: parsed.v, k: parsed.k, n: parsed.n })
        )
      )
    }
    const write = (position: ReportPosition): string => {
      const body = Buffer.from(JSON.stringify({ ...position, b: binding, t: now } satisfies CursorBody), "utf8").toString("base64url")
      return `${body}.${crypto.signCursor(body)}`
    }
    return { read, write }
  })
