/**
 * `ChangeRelay` on PostgreSQL: commits are announced with `NOTIFY` on one channel and heard
 * with `LISTEN` (`PgClient.listen`, on a connection of its own next to the pool), so the
 * server processes of one database wake each other's event streams. A hint only: a lost
 * notification leaves a stream to its poll.
 *
 * A payload is JSON, `{"p":"<process>","t":[["<accountId>","<environment>"],…]}`, at most
 * 7999 bytes (PostgreSQL's limit is 8000): a publication of many tenants is cut into several
 * payloads, all sent by one statement. A process ignores what it published itself (`p`), since
 * it already woke its own streams.
 *
 * `PgClient.listen` does not end when its connection dies (a terminated backend, a database
 * restart): it just falls silent. So the relay checks that it still hears: when nothing came
 * for a heartbeat, it notifies itself (`{"p":"<process>"}`), and when that is not heard back
 * within the next heartbeat it drops the subscription and subscribes again, with a backoff,
 * forever. After a gap it tells its listener that it may have missed some (`Missed`).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { ChangeRelay, type RelayedChange, type Tenant } from "@syllabus/core"
import { randomUUID } from "node:crypto"
import { Clock, Context, Effect, Layer, Option, Stream } from "effect"

export const CHANGE_CHANNEL = "syllabus_changes"
/** PostgreSQL refuses payloads of 8000 bytes or more. */
const MAX_PAYLOAD_BYTES = 7999

export interface PgChangeRelayOptions {
  /** The channel (default `syllabus_changes`); processes meant to hear each other share it. */
  readonly channel?: string
  /** How long a silent subscription waits before it checks itself (default 2 s). */
  readonly heartbeatMs?: number
  /** Backoff between subscriptions after a failure: from `initialMs` doubling up to `maxMs` (default 100 ms → 5 s). */
  readonly reconnect?: { readonly initialMs?: number; readonly maxMs?: number }
}

interface Message {
  readonly process: string
  readonly tenants: ReadonlyArray<Tenant>
}

const isEnvironment = (value: unknown): value is Tenant["environment"] => value === "production" || value === "sandbox"

/** A payload of ours, or `undefined` for anything else on the channel. */
export const decodeChangePayload = (payload: string): Message | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(payload)
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null) return undefined
  const { p, t } = parsed as { p?: unknown; t?: unknown }
  if (typeof p !== "string") return undefined
  const tenants: Array<Tenant> = []
  if (Array.isArray(t)) {
    for (const entry of t) {
      if (Array.isArray(entry) && typeof entry[0] === "string" && isEnvironment(entry[1])) {
        tenants.push({ accountId: entry[0], environment: entry[1] })
      }
    }
  }
  return { process: p, tenants }
}

/** The payloads announcing `tenants`, each under PostgreSQL's limit. */
export const encodeChangePayloads = (process: string, tenants: ReadonlyArray<Tenant>): ReadonlyArray<string> => {
  const head = `{"p":${JSON.stringify(process)},"t":[`
  const payloads: Array<string> = []
  let entries: Array<string> = []
  let bytes = Buffer.byteLength(head) + 2
  for (const tenant of tenants) {
    const entry = JSON.stringify([tenant.accountId, tenant.environment])
    const size = Buffer.byteLength(entry) + 1
    if (Buffer.byteLength(head) + 2 + size > MAX_PAYLOAD_BYTES) continue // never fits: left to the poll
    if (bytes + size > MAX_PAYLOAD_BYTES) {
      payloads.push(`${head}${entries.join(",")}]}`)
      entries = []
      bytes = Buffer.byteLength(head) + 2
    }
    entries.push(entry)
    bytes += size
  }
  if (entries.length > 0) payloads.push(`${head}${entries.join(",")}]}`)
  return payloads
}

/**
 * The client whose `listen` the relay uses, when it is not the pool's: behind a pooler in
 * transaction mode, `LISTEN` needs a session of its own, straight to PostgreSQL (`pgLayer`'s
 * `listenUrl`). Notifications still go through the pool: `pg_notify` is a statement like any.
 */
export class ListenClient extends Context.Tag("@syllabus/pg/ListenClient")<ListenClient, PgClient.PgClient>() {}

/** The relay on the `PgClient` of the context (its pool notifies; `listen` holds a connection of its own, of `ListenClient` when given). */
export const makePgChangeRelay = (options: PgChangeRelayOptions = {}) =>
  Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const listener = Option.getOrElse(yield* Effect.serviceOption(ListenClient), () => sql)
    const channel = options.channel ?? CHANGE_CHANNEL
    const heartbeatMs = options.heartbeatMs ?? 2000
    const initialMs = options.reconnect?.initialMs ?? 100
    const maxMs = options.reconnect?.maxMs ?? 5000
    /** This process: its own notifications are not news to it. */
    const self = randomUUID()
    const ping = JSON.stringify({ p: self })

    // `PgClient.notify` sends `NOTIFY channel, $1`, which PostgreSQL refuses (a utility
    // statement takes no parameters): `pg_notify` does take them. One statement, whatever
    // the number of payloads.
    const notify = (payloads: ReadonlyArray<string>): Effect.Effect<void, unknown> => {
      if (payloads.length === 0) return Effect.void
      if (payloads.length === 1) return Effect.asVoid(sql`SELECT pg_notify(${channel}, ${payloads[0]!})`)
      return Effect.asVoid(
        sql`SELECT pg_notify(${channel}, p) FROM jsonb_array_elements_text(${JSON.stringify(payloads)}::jsonb) AS p`
      )
    }

    /**
     * One subscription: runs until its connection is found dead (or LISTEN fails), then fails.
     * `resumed`: a gap preceded it, so once it hears itself it says `Missed`.
     */
    const subscription = (emit: (change: RelayedChange) => void, resumed: boolean, session: { confirmed: boolean }) =>
      Effect.gen(function* () {
        let heard = false
        const hear = (payload: string) =>
          Effect.suspend(() => {
            const message = decodeChangePayload(payload)
            if (message === undefined) return Effect.void
            heard = true
            if (message.process !== self) {
              if (message.tenants.length > 0) emit({ _tag: "Committed", tenants: message.tenants })
              return Effect.void
            }
            if (session.confirmed || !resumed) {
              session.confirmed = true
              return Effect.void
            }
            session.confirmed = true
            emit({ _tag: "Missed" })
            return Effect.logInfo("change relay: listening again")
          })
        const listening = listener.listen(channel).pipe(Stream.runForEach(hear))
        // A ping on a pool that cannot reach the database must not hold the watchdog up.
        const pingSelf = notify([ping]).pipe(Effect.timeout(heartbeatMs), Effect.ignore)
        // Until it hears itself, a new subscription pings often (its LISTEN may not be in
        // place yet); then only when a heartbeat passed in silence.
        const watchdog = Effect.gen(function* () {
          const startedAt = yield* Clock.currentTimeMillis
          while (!session.confirmed) {
            yield* pingSelf
            yield* Effect.sleep(Math.min(100, heartbeatMs))
            if (!session.confirmed && (yield* Clock.currentTimeMillis) - startedAt > Math.max(3 * heartbeatMs, 5000)) {
              return yield* Effect.fail("LISTEN did not start")
            }
          }
          for (;;) {
            heard = false
            yield* Effect.sleep(heartbeatMs)
            if (heard) continue
            // A heartbeat of silence: ping, and give the ping one heartbeat to come back. `heard`
            // is not reset after the ping: its echo often arrives before the ping's own answer.
            yield* pingSelf
            yield* Effect.sleep(heartbeatMs)
            if (!heard) return yield* Effect.fail("LISTEN connection silent")
          }
        })
        // The listening side is disconnected: dropping a subscription whose connection hangs
        // does not wait for that connection to let go.
        return yield* Effect.raceFirst(Effect.disconnect(listening), watchdog)
      })

    const received: Stream.Stream<RelayedChange> = Stream.asyncPush<RelayedChange>(
      (emit) =>
        Effect.forkScoped(
          Effect.gen(function* () {
            let failures = 0
            let resumed = false
            for (;;) {
              const session = { confirmed: false }
              const cause = yield* subscription((change) => emit.single(change), resumed, session).pipe(
                Effect.catchAllCause(Effect.succeed)
              )
              if (session.confirmed) {
                failures = 0
                yield* Effect.logWarning("change relay: lost its LISTEN connection, subscribing again", cause)
              } else {
                yield* Effect.logDebug("change relay: could not subscribe", cause)
              }
              resumed = true
              yield* Effect.sleep(Math.min(maxMs, initialMs * 2 ** Math.min(failures, 20)))
              failures++
            }
          })
        ),
      { bufferSize: 1024, strategy: "sliding" }
    )

    return ChangeRelay.of({
      publish: (tenants) => notify(encodeChangePayloads(self, tenants)),
      received
    })
  })

/** `ChangeRelay` on the `PgClient` of the context. Builds without touching the database. */
export const PgChangeRelay = (options: PgChangeRelayOptions = {}): Layer.Layer<ChangeRelay, never, PgClient.PgClient> =>
  Layer.effect(ChangeRelay, makePgChangeRelay(options))
