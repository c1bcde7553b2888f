/**
 * A wake-up for the open event streams of a tenant: the request pipeline says when a write of
 * the tenant committed in this process, and a stream waiting for news reads the store at once
 * instead of at its next poll. A hint only, never trusted alone: streams still poll, which is
 * how they see what other processes write.
 */
import { Context, Deferred, Effect, Layer } from "effect"
import type { Tenant } from "../ports/store.js"

export class ChangeSignals extends Context.Tag("@syllabus/core/ChangeSignals")<
  ChangeSignals,
  {
    /** A write of the tenant committed: wake whoever watches it. */
    readonly committed: (tenant: Tenant) => Effect.Effect<void>
    /**
     * Start watching the tenant: the effect answered completes at the first commit after this
     * call (so a reader registers first, then reads, and misses nothing in between).
     */
    readonly watch: (tenant: Tenant) => Effect.Effect<Effect.Effect<void>>
  }
>() {
  static readonly live = Layer.sync(ChangeSignals, () => {
    // One pending wake-up per tenant, shared by its watchers and replaced once it fires.
    const pending = new Map<string, Deferred.Deferred<void>>()
    const keyOf = (tenant: Tenant) => `${tenant.accountId}/${tenant.environment}`
    return {
      committed: (tenant) =>
        Effect.suspend(() => {
          const key = keyOf(tenant)
          const deferred = pending.get(key)
          if (deferred === undefined) return Effect.void
          pending.delete(key)
          return Deferred.succeed(deferred, undefined)
        }),
      watch: (tenant) =>
        Effect.suspend(() => {
          const key = keyOf(tenant)
          const existing = pending.get(key)
          if (existing !== undefined) return Effect.succeed(Deferred.await(existing))
          return Effect.map(Deferred.make<void>(), (deferred) => {
            pending.set(key, deferred)
            return Deferred.await(deferred)
          })
        })
    }
  })
}
