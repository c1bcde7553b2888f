/**
 * `logs tail`: the request log (`GET /requests`, §4.5) as it grows. The log is read newest
 * first, so each poll reads every page from a little before the newest entry seen
 * (`created_after`, inclusive) and prints, oldest first, the entries not seen yet. The
 * look-back catches an entry written after a newer one (a slow request is logged when it
 * ends). The polls carry their own `X-Client-Request-Id`, so `logs tail` does not print
 * itself.
 */
import { Effect, Option, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { CliError, out } from "./context.js"
import { api } from "./http.js"

/** How far before the newest entry seen each poll looks again. */
const LOOK_BACK_MS = 5_000

const Entry = Schema.Struct({
  id: Schema.String,
  method: Schema.String,
  path: Schema.String,
  status: Schema.Number,
  error_code: Schema.NullishOr(Schema.String),
  duration_ms: Schema.Number,
  client_request_id: Schema.NullishOr(Schema.String),
  created_at: Schema.String
})
type Entry = typeof Entry.Type

const Page = Schema.Struct({
  data: Schema.Array(Schema.Unknown),
  page: Schema.optional(Schema.Struct({ next_cursor: Schema.NullishOr(Schema.String) }))
})

export interface LogFilters {
  /** `success`, `client_error`, `rate_limited` or `server_error`: the list's own filter. */
  readonly outcome: Option.Option<string>
  /** Exact statuses (`404`) or classes (`4xx`). */
  readonly statuses: ReadonlyArray<string>
  readonly methods: ReadonlyArray<string>
}

export interface TailOptions {
  readonly filters: LogFilters
  readonly json: boolean
  readonly intervalMs: number
}

const unexpected = () => new CliError({ code: "unexpected_response", message: "the server answered an unexpected body for /requests" })

/** Every entry created at or after `since` (all pages), newest first, with the raw JSON of each. */
const entriesSince = (since: Option.Option<string>, outcome: Option.Option<string>, clientId: string, limit = 100) =>
  Effect.gen(function* () {
    const found: Array<{ entry: Entry; raw: unknown }> = []
    let cursor: string | null | undefined = undefined
    do {
      const query = new URLSearchParams({ limit: String(limit) })
      if (Option.isSome(since)) query.set("created_after", since.value)
      if (Option.isSome(outcome)) query.set("outcome", outcome.value)
      if (cursor) query.set("cursor", cursor)
      const body = yield* api("GET", `/requests?${query}`, { headers: { "x-client-request-id": clientId } })
      const page = yield* Schema.decodeUnknown(Page)(body).pipe(Effect.mapError(unexpected))
      for (const raw of page.data) found.push({ entry: yield* Schema.decodeUnknown(Entry)(raw).pipe(Effect.mapError(unexpected)), raw })
      cursor = page.page?.next_cursor
    } while (cursor && limit > 1)
    return found
  })

const matchesStatus = (status: number, wanted: string) =>
  /^[1-5]xx$/i.test(wanted) ? String(status)[0] === wanted[0] : String(status) === wanted

export const passes = (entry: Entry, filters: LogFilters) =>
  (filters.statuses.length === 0 || filters.statuses.some((wanted) => matchesStatus(entry.status, wanted))) &&
  (filters.methods.length === 0 || filters.methods.some((method) => method.toUpperCase() === entry.method.toUpperCase()))

export const logLine = (entry: Entry) =>
  [entry.created_at, entry.method.padEnd(6), String(entry.status), `${entry.duration_ms}ms`.padStart(7), entry.id, entry.path, entry.error_code ?? ""]
    .join("  ")
    .trimEnd() + "\n"

const minus = (timestamp: string, ms: number) => new Date(Date.parse(timestamp) - ms).toISOString()

/**
 * Poll until interrupted, printing the new entries that pass the filters. `ready` runs once
 * the entries already there have been read (those are not printed).
 */
export const tailLogs = <R>(options: TailOptions, ready: Effect.Effect<void, never, R>) =>
  Effect.gen(function* () {
    const clientId = `syllabus-logs-tail-${randomBytes(6).toString("hex")}`
    const seen = new Map<string, string>() // id → created_at
    const [newest] = yield* entriesSince(Option.none(), Option.none(), clientId, 1)
    let since = Option.map(Option.fromNullable(newest), ({ entry }) => entry.created_at)
    const read = () => entriesSince(Option.map(since, (s) => minus(s, LOOK_BACK_MS)), options.filters.outcome, clientId)
    if (Option.isSome(since)) for (const { entry } of yield* read()) seen.set(entry.id, entry.created_at)
    yield* ready
    for (;;) {
      yield* Effect.sleep(`${options.intervalMs} millis`)
      const fresh = (yield* read()).filter(({ entry }) => !seen.has(entry.id)).reverse()
      for (const { entry, raw } of fresh) {
        seen.set(entry.id, entry.created_at)
        if (Option.isNone(since) || entry.created_at > since.value) since = Option.some(entry.created_at)
        if (entry.client_request_id === clientId || !passes(entry, options.filters)) continue
        yield* out(options.json ? JSON.stringify(raw) + "\n" : logLine(entry))
      }
      // Forget what the look-back can no longer return.
      if (Option.isSome(since)) {
        const horizon = minus(since.value, 2 * LOOK_BACK_MS)
        for (const [id, createdAt] of seen) if (createdAt < horizon) seen.delete(id)
      }
    }
  })
