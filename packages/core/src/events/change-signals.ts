/**
 * A wake-up for the open event streams of a tenant: the request pipeline says when a write of
 * the tenant committed in this process, and a stream waiting for news reads the store at once
 * instead of at its next poll. A hint only, never trusted alone: streams still poll.
 *
 * Across processes the hint travels through a `ChangeRelay`, when the store provides one
 * (PostgreSQL: `LISTEN/NOTIFY`): a commit here is published to the other processes, and a
 * commit published by another process wakes the watchers here. Publishing is off the request
 * path (a bounded outbox drained by a fiber, a burst of commits coalesced into one publication
 * per tick), so a slow or broken relay never delays or fails a write; a lost hint only leaves
 * a stream to its poll.
 */
import { Context, Deferred, Effect, Exit, Layer, Option, Queue, Stream } from "effect"
import type { Tenant } from "../ports/store.js"

/** What a relay heard from the other processes. */
export type RelayedChange =
  /** Writes of these tenants committed in another process. */
  | { readonly _tag: "Committed"; readonly tenants: ReadonlyArray<Tenant> }
  /** The relay was deaf for a while (it reconnected) and may have missed some: everyone looks again. */
  | { readonly _tag: "Missed" }

/**
 * The port that carries commits between the server processes of one store. Optional: without
 * it, a process only wakes its own streams and the others find its writes by polling.
 */
export class ChangeRelay extends Context.Tag("@syllabus/core/ChangeRelay")<
  ChangeRelay,
  {
    /**
     * Tell the other processes that writes of these (distinct) tenants committed. May be slow
     * or fail: `ChangeSignals` calls it from a fiber of its own, never from a request.
     */
    readonly publish: (tenants: ReadonlyArray<Tenant>) => Effect.Effect<void, unknown>
    /**
     * What the other processes committed (never this process's own publications), for as long
     * as it is run. Meant to run forever, reconnecting by itself; if it ends, it is run again.
     */
    readonly received: Stream.Stream<RelayedChange, unknown>
  }
>() {}

/** At most one publication per tick: the commits of a burst after the first go out together. */
export const CHANGE_RELAY_TICK_MS = 10
/** Commits waiting for their publication; past this, the oldest are dropped (streams still poll). */
const OUTBOX_CAPACITY = 4096
/** A publication that takes longer is abandoned (the next one goes out as usual). */
const PUBLISH_TIMEOUT_MS = 5000
/** A relay whose `received` ended or failed is run again after this long. */
const RECEIVE_RESTART_MS = 1000

const keyOf = (tenant: Tenant) => `${tenant.accountId}/${tenant.environment}`

export class ChangeSignals extends Context.Tag("@syllabus/core/ChangeSignals")<
  ChangeSignals,
  {
    /** A write of the tenant committed: wake whoever watches it (here, and through the relay elsewhere). Never waits. */
    readonly committed: (tenant: Tenant) => Effect.Effect<void>
    /**
     * Start watching the tenant: the effect answered completes at the first commit after this
     * call (so a reader registers first, then reads, and misses nothing in between).
     */
    readonly watch: (tenant: Tenant) => Effect.Effect<Effect.Effect<void>>
  }
>() {
  /** The signals of this process, relayed to and from the others when a `ChangeRelay` is present. */
  static readonly live = Layer.scoped(
    ChangeSignals,
    Effect.gen(function* () {
      // One pending wake-up per tenant, shared by its watchers and replaced once it fires.
      const pending = new Map<string, Deferred.Deferred<void>>()
      const wake = (key: string) => {
        const deferred = pending.get(key)
        if (deferred === undefined) return
        pending.delete(key)
        Deferred.unsafeDone(deferred, Exit.void)
      }
      const wakeAll = () => {
        const all = [...pending.values()]
        pending.clear()
        for (const deferred of all) Deferred.unsafeDone(deferred, Exit.void)
      }
      const watch = (tenant: Tenant) =>
        Effect.suspend(() => {
          const key = keyOf(tenant)
          const existing = pending.get(key)
          if (existing !== undefined) return Effect.succeed(Deferred.await(existing))
          return Effect.map(Deferred.make<void>(), (deferred) => {
            pending.set(key, deferred)
            return Deferred.await(deferred)
          })
        })

      const relay = yield* Effect.serviceOption(ChangeRelay)
      if (Option.isNone(relay)) {
        return { committed: (tenant: Tenant) => Effect.sync(() => wake(keyOf(tenant))), watch }
      }
      const { publish, received } = relay.value

      // Outgoing: the commits of this process, coalesced per tick into one publication of
      // their distinct tenants.
      const outbox = yield* Queue.sliding<Tenant>(OUTBOX_CAPACITY)
      const drain = Effect.gen(function* () {
        const first = yield* Queue.take(outbox)
        const rest = yield* Queue.takeAll(outbox)
        const distinct = new Map([[keyOf(first), first]])
        for (const tenant of rest) distinct.set(keyOf(tenant), tenant)
        yield* publish([...distinct.values()]).pipe(
          Effect.timeoutFail({ duration: PUBLISH_TIMEOUT_MS, onTimeout: () => "publication timed out" }),
          Effect.catchAllCause((cause) => Effect.logDebug("change relay: publication lost", cause))
        )
        yield* Effect.sleep(CHANGE_RELAY_TICK_MS)
      }).pipe(Effect.forever)

      // Incoming: the commits of the other processes wake the watchers here.
      const receive = received.pipe(
        Stream.runForEach((change) =>
          Effect.sync(() => {
            if (change._tag === "Missed") wakeAll()
            else for (const tenant of change.tenants) wake(keyOf(tenant))
          })
        ),
        Effect.catchAllCause((cause) => Effect.logWarning("change relay: receiving failed", cause)),
        Effect.zipRight(Effect.sleep(RECEIVE_RESTART_MS)),
        Effect.forever
      )

      // Disconnected: closing the layer does not wait for a relay stuck on a dead connection.
      yield* Effect.forkScoped(Effect.disconnect(drain))
      yield* Effect.forkScoped(Effect.disconnect(receive))

      return {
        committed: (tenant: Tenant) =>
          Effect.sync(() => {
            wake(keyOf(tenant))
            outbox.unsafeOffer(tenant)
          }),
        watch
      }
    })
  )
}
