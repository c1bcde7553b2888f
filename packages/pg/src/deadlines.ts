/**
 * Deadlines of the pool's connections, so that a stalled database fails a store call with
 * `StoreUnavailable` (503) instead of holding it for as long as the database stalls:
 *
 * - on the server: `statement_timeout`, `lock_timeout` and `idle_in_transaction_session_timeout`,
 *   sent as parameters of each session;
 * - on the client: `pg`'s `query_timeout`, for a server that does not answer at all (a frozen
 *   host, a partition), where the server's own timeouts never fire; the pool's connection
 *   timeout, for opening a connection or waiting for a free one; and the unit of work's own
 *   deadline (`transactionMs`, `store.ts`), for a transaction of many short statements.
 *
 * A statement whose answer is given up on stays outstanding on its connection; the unit of
 * work's guard (`internal.ts`) closes such a connection instead of returning it to the pool
 * mid-transaction.
 */

/** Milliseconds; 0 turns a deadline off. */
export interface PgTimeouts {
  /** `statement_timeout`: PostgreSQL cancels a statement that runs longer. */
  readonly statementMs: number
  /** `lock_timeout`: PostgreSQL gives up a wait for a lock (row, table, advisory) that lasts longer. */
  readonly lockMs: number
  /** `idle_in_transaction_session_timeout`: PostgreSQL ends a session left idle inside a transaction. */
  readonly idleInTransactionMs: number
  /**
   * `query_timeout` of `pg`: a statement not answered by then fails on the client side. Keep it
   * above `statementMs`, so that a slow but live server cancels its own statement first.
   */
  readonly queryMs: number
  /** Opening a connection, or waiting for a free one of the pool (`connectTimeout`). */
  readonly connectMs: number
  /**
   * A unit of work, from its `BEGIN` to its end: past it, the client rolls it back and the
   * call fails with `StoreUnavailable` (PostgreSQL 15 has no `transaction_timeout`). A
   * transaction's locks and predicate locks are the whole cluster's: a long job commits in
   * short units of work, and this deadline keeps any one of them, of any pool, short.
   */
  readonly transactionMs: number
}

/**
 * Sized for this API: its statements read or write a few rows over an index (a page, a
 * unit of work), well under a second on a healthy database; a request's budget is 30 s.
 */
export const defaultPgTimeouts: PgTimeouts = {
  statementMs: 5_000,
  lockMs: 2_000,
  idleInTransactionMs: 10_000,
  queryMs: 7_000,
  connectMs: 3_000,
  transactionMs: 15_000
}

const sessionParameters = {
  statementMs: "statement_timeout",
  lockMs: "lock_timeout",
  idleInTransactionMs: "idle_in_transaction_session_timeout",
  queryMs: "query_timeout"
} as const

/** The deadlines PostgreSQL itself enforces (the others are the client's). */
const serverParameters = ["statementMs", "lockMs", "idleInTransactionMs"] as const

const deadlineOf = (field: keyof typeof sessionParameters, timeouts: Partial<PgTimeouts>, named: string | null): number =>
  Math.max(0, Math.floor(timeouts[field] ?? (named === null ? defaultPgTimeouts[field] : Number(named) || 0)))

/**
 * `url` with the deadlines as parameters, which `pg` reads from a connection string (the
 * pool `@effect/sql-pg` builds takes no other way in). A deadline given in `timeouts` wins;
 * else one the URL names already is kept; else the default. A deadline of 0 is left out
 * (`pg` would take `query_timeout=0` for "at once"). A string that is not a URL is returned
 * as it is.
 *
 * `pooled`: the connections go through a pooler in transaction mode, which refuses a session's
 * parameters (PgBouncer: `unsupported startup parameter`) and would not keep them for our next
 * transaction anyway. The URL then carries only the client's deadline (`query_timeout`); the
 * server's go into each unit of work (`localDeadlines`).
 */
export const withDeadlines = (url: string, timeouts: Partial<PgTimeouts> = {}, pooled = false): string => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return url
  }
  for (const [field, parameter] of Object.entries(sessionParameters) as Array<[keyof typeof sessionParameters, string]>) {
    const ms = deadlineOf(field, timeouts, parsed.searchParams.get(parameter))
    if (ms === 0 || (pooled && field !== "queryMs")) parsed.searchParams.delete(parameter)
    else parsed.searchParams.set(parameter, String(ms))
  }
  return parsed.toString()
}

/**
 * The server's deadlines as `SET LOCAL` statements, sent with a unit of work's `BEGIN` in one
 * message when a pooler in transaction mode stands between (`withDeadlines`, `pooled`): they
 * last as long as the transaction, on whichever server connection the pooler gave it. The
 * URL's own values count as in `withDeadlines`. Statements outside a unit of work have the
 * client's deadline and the database's settings (docs/scaling.md).
 */
export const localDeadlines = (url: string, timeouts: Partial<PgTimeouts> = {}): string => {
  let named: URLSearchParams
  try {
    named = new URL(url).searchParams
  } catch {
    named = new URLSearchParams()
  }
  return serverParameters
    .map((field) => [sessionParameters[field], deadlineOf(field, timeouts, named.get(sessionParameters[field]))] as const)
    .filter(([, ms]) => ms > 0)
    .map(([parameter, ms]) => `SET LOCAL ${parameter} = ${ms}`)
    .join("; ")
}
