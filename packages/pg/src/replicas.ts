/**
 * Read replicas (issue 27): PostgreSQL standbys fed by streaming replication, which take the
 * reads that need no unit of work (lists, counts, reports: `Records.list`, `count`,
 * `aggregate`), while writes and everything inside a unit of work go to the primary.
 *
 * **Never older than a write the client already got an answer for.** A read is sent to a
 * replica only when that replica has replayed the primary's WAL up to where it stood after the
 * read was asked for: every commit answered before that point is in it, whichever process or
 * connection made it. So a read first learns the primary's position (`pg_current_wal_insert_lsn()`,
 * asked after the read began; one question serves every read that began before it was sent),
 * then a replica's (`pg_last_wal_replay_lsn()`, asked after that), and goes to the replica only
 * if the replica is there; its own snapshot, taken later, holds at least as much. A replica a
 * little behind is asked again a few times within `waitMs`; past it, or when no replica answers,
 * the read goes to the primary. Nothing is kept per client or shared between processes: the
 * primary's position is the shared clock.
 *
 * A replica that fails (connection refused, a timeout, an error) is left alone for
 * `retryAfterMs`; a server that is no longer in recovery (promoted) is not a replica.
 */
import { SqlError } from "@effect/sql/SqlError"
import { type ReplicaState, StoreReplicas } from "@syllabus/core"
import { Clock, Context, Deferred, Effect, FiberId, Layer } from "effect"
import pg from "pg"
import { PgPool } from "./pool.js"

const { Pool } = pg

export interface ReplicaOptions {
  /** How long a read waits for a replica to replay up to the primary's position before it goes to the primary (ms; default 20). */
  readonly waitMs?: number
  /** How long a replica that failed is left alone (ms; default 5,000). */
  readonly retryAfterMs?: number
  /** WAL bytes behind the primary past which `check` calls a replica `lagging` (default 16 MiB). */
  readonly maxLagBytes?: number
}

export interface ReplicaRouter {
  /**
   * `text` with `params` on a replica that holds every commit answered before this call, else
   * on the primary (`onPrimary`).
   */
  readonly read: <A, E>(text: string, params: ReadonlyArray<unknown>, onPrimary: Effect.Effect<ReadonlyArray<A>, E>) => Effect.Effect<ReadonlyArray<A>, E>
  /** Each replica's state, asked now (`GET /readyz`). */
  readonly check: Effect.Effect<ReadonlyArray<ReplicaState>>
}

/** The replicas of the store, when it has some (`pgLayer`'s `replicaUrls`). Read when `PgStore` is built. */
export class ReadReplicas extends Context.Reference<ReadReplicas>()("@syllabus/pg/ReadReplicas", {
  defaultValue: (): ReplicaRouter | undefined => undefined
}) {}

/** A WAL position (`16/B374D848`) as a number that orders as the position does. */
export const lsnValue = (lsn: string): bigint => {
  const [high, low] = lsn.split("/")
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)
}

const query = <A>(pool: pg.Pool, text: string, params: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>, SqlError> =>
  Effect.async<ReadonlyArray<A>, SqlError>((resume) => {
    pool.query(text, params as Array<unknown>, (error: Error | undefined, result: pg.QueryResult) => {
      resume(error ? Effect.fail(new SqlError({ cause: error, message: "Failed to execute statement" })) : Effect.succeed(result.rows as Array<A>))
    })
  })

/**
 * One question at a time whose answer is asked after each caller began: a caller waits for the
 * next question sent after it arrived, and one question answers every caller that came before
 * it was sent.
 */
const askedAfter = <A>(ask: Effect.Effect<A, SqlError>) => {
  let next: Deferred.Deferred<A, SqlError> | undefined
  let sending = false
  const send = (): Effect.Effect<void> =>
    Effect.suspend(() => {
      const answers = next!
      next = undefined
      sending = true
      return Effect.exit(ask).pipe(
        Effect.flatMap((exit) => Deferred.done(answers, exit)),
        Effect.ensuring(Effect.suspend(() => {
          sending = false
          return next === undefined ? Effect.void : Effect.forkDaemon(send())
        })),
        Effect.asVoid
      )
    })
  return Effect.suspend(() => {
    const waiting = next
    if (waiting !== undefined) return Deferred.await(waiting)
    const fresh = Deferred.unsafeMake<A, SqlError>(FiberId.none)
    next = fresh
    return (sending ? Effect.void : Effect.forkDaemon(send())).pipe(Effect.zipRight(Deferred.await(fresh)))
  })
}

export const makeReplicaRouter = (primary: pg.Pool, replicas: ReadonlyArray<pg.Pool>, options: ReplicaOptions = {}): ReplicaRouter => {
  const waitMs = options.waitMs ?? 20
  const retryAfterMs = options.retryAfterMs ?? 5_000
  const maxLagBytes = options.maxLagBytes ?? 16 * 1024 * 1024
  const primaryPosition = askedAfter(
    Effect.map(query<{ lsn: string }>(primary, "SELECT pg_current_wal_insert_lsn()::text AS lsn", []), (rows) => lsnValue(rows[0]!.lsn))
  )
  const states = replicas.map((pool) => ({
    pool,
    state: "ok" as "ok" | "behind" | "failing" | "not-a-replica",
    failedAt: 0,
    /** Its replay position, asked after each caller began; `undefined`: not in recovery. */
    position: askedAfter(
      Effect.map(
        query<{ lsn: string | null }>(pool, "SELECT pg_last_wal_replay_lsn()::text AS lsn", []),
        (rows) => (rows[0]?.lsn == null ? undefined : lsnValue(rows[0].lsn))
      )
    )
  }))
  let turn = 0

  /** A replica holding `target`, within `waitMs`; none: `undefined`. */
  const replicaAt = (target: bigint) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const candidates = states.filter((replica) => replica.state !== "failing" || now - replica.failedAt >= retryAfterMs)
      if (candidates.length === 0) return undefined
      const start = turn++ % candidates.length
      const deadline = now + waitMs
      for (let pause = 1;; pause *= 2) {
        for (let i = 0; i < candidates.length; i++) {
          const replica = candidates[(start + i) % candidates.length]!
          const position = yield* Effect.either(replica.position)
          if (position._tag === "Left") {
            replica.state = "failing"
            replica.failedAt = yield* Clock.currentTimeMillis
            continue
          }
          if (position.right === undefined) {
            replica.state = "not-a-replica"
            continue
          }
          replica.state = position.right >= target ? "ok" : "behind"
          if (replica.state === "ok") return replica
        }
        if ((yield* Clock.currentTimeMillis) + pause > deadline || !candidates.some((r) => r.state === "behind")) return undefined
        yield* Effect.sleep(pause)
      }
    })

  return {
    read: <A, E>(text: string, params: ReadonlyArray<unknown>, onPrimary: Effect.Effect<ReadonlyArray<A>, E>) =>
      Effect.gen(function*() {
        const target = yield* Effect.either(primaryPosition)
        if (target._tag === "Left") return yield* onPrimary
        const replica = yield* replicaAt(target.right)
        if (replica === undefined) return yield* onPrimary
        const rows = yield* Effect.either(Effect.uninterruptible(query<A>(replica.pool, text, params)))
        if (rows._tag === "Right") return rows.right
        // The replica failed the read: the primary answers it, and the replica rests.
        replica.state = "failing"
        replica.failedAt = yield* Clock.currentTimeMillis
        return yield* onPrimary
      }),
    check: Effect.gen(function*() {
      const primaryAt = yield* Effect.either(primaryPosition)
      return yield* Effect.forEach(states, (replica, index) =>
        Effect.map(Effect.either(replica.position), (position): ReplicaState => {
          if (position._tag === "Left") return { index, state: "failing" }
          if (position.right === undefined) return { index, state: "not-a-replica" }
          if (primaryAt._tag === "Left") return { index, state: "ok" }
          const lagBytes = Math.max(0, Number(primaryAt.right - position.right))
          return { index, state: lagBytes > maxLagBytes ? "lagging" : "ok", lagBytes }
        }), { concurrency: "unbounded" })
    })
  }
}

/**
 * `ReadReplicas` on a pool per URL (each with the deadlines of `url`'s parameters, made by
 * `withDeadlines`), beside the primary's pool (`PgPool`). A replica down at the start is no
 * failure: its reads go to the primary until it answers.
 */
export const readReplicasLayer = (
  urls: ReadonlyArray<string>,
  pool: { readonly maxConnections?: number | undefined; readonly connectTimeoutMs?: number | undefined; readonly applicationName?: string | undefined },
  options: ReplicaOptions = {}
): Layer.Layer<ReadReplicas | StoreReplicas, never, PgPool> =>
  Layer.scopedContext(

    Effect.gen(function*() {
      const primary = yield* PgPool
      const replicas = yield* Effect.forEach(urls, (url) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const replica = new Pool({
              connectionString: url,
              max: pool.maxConnections ?? 10,
              connectionTimeoutMillis: pool.connectTimeoutMs,
              application_name: `${pool.applicationName ?? "syllabus"}-reads`
            })
            replica.on("error", () => undefined)
            return replica
          }),
          (replica) => Effect.promise(() => replica.end()).pipe(Effect.timeoutOption(1000))
        ))
      const router = makeReplicaRouter(primary, replicas, options)
      return Context.make(ReadReplicas, router).pipe(Context.add(StoreReplicas, { check: router.check }))
    })
  )
