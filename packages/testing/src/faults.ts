/**
 * Ports that can be made to fail on demand, as an outage would: the store's ports (records,
 * units of work, idempotency receipts, the rate limiter) and the file storage. The test double
 * and the contract suite's harness wrap their ports with these.
 */
import {
  FileStorage,
  Idempotency,
  RateLimitStore,
  Records,
  REQUEST_TYPE,
  StorageUnavailable,
  StoreUnavailable,
  type Tenant,
  UnitOfWork
} from "@syllabus/core"
import type { StoreServices } from "@syllabus/http"
import { Context, Effect, Layer } from "effect"

/**
 * A port that can fail. `request_log` is the part of `records` that writes the request log
 * (its inserts of `request` records): the trail's outage alone, every other record answering.
 */
export type FaultyPort = "records" | "request_log" | "rate_limits" | "idempotency" | "unit_of_work" | "storage"

/** Every port of the record store (all but the file storage). */
export const storePorts: ReadonlyArray<Exclude<FaultyPort, "storage">> = ["records", "request_log", "rate_limits", "idempotency", "unit_of_work"]

const down = Effect.fail(new StoreUnavailable({ cause: "injected outage" }))

/** Ports that hang, as a frozen database does: their calls wait until the port is let go, then go on. */
export class Stalls {
  private readonly ports = new Set<FaultyPort>()
  private readonly sleepers = new Set<() => void>()
  has(port: FaultyPort): boolean {
    return this.ports.has(port)
  }
  set(port: FaultyPort, on: boolean): void {
    if (on) this.ports.add(port)
    else this.ports.delete(port)
    for (const wake of [...this.sleepers]) wake()
  }
  /** Wait while `port` is stalled. */
  wait(port: FaultyPort): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      const wake = () => {
        if (this.ports.has(port)) return
        this.sleepers.delete(wake)
        resume(Effect.void)
      }
      this.sleepers.add(wake)
      wake()
      return Effect.sync(() => this.sleepers.delete(wake))
    })
  }
}

/**
 * Wrap a store so that each port can be switched off, as an outage would (`failing`: it
 * refuses at once), or made to hang, as a stalled database would (`stalled`: it answers
 * only once let go).
 */
export const withFaults = <E>(store: Layer.Layer<StoreServices, E>, failing: ReadonlySet<FaultyPort>, stalled: Stalls = new Stalls()) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const records = yield* Records
      const uow = yield* UnitOfWork
      const idempotency = yield* Idempotency
      const rateLimits = yield* RateLimitStore
      const guard =
        (port: FaultyPort) =>
        <Args extends ReadonlyArray<unknown>, A, E>(f: (...args: Args) => Effect.Effect<A, E>) =>
        (...args: Args): Effect.Effect<A, E | StoreUnavailable> =>
          Effect.suspend((): Effect.Effect<A, E | StoreUnavailable> =>
            stalled.has(port) ? Effect.zipRight(stalled.wait(port), f(...args)) : failing.has(port) ? down : f(...args))
      const r = guard("records")
      const logged = guard("request_log")
      /** A write of `records` that writes the request log when it stores `request` records. */
      const w = <Args extends readonly [Tenant, string, ...Array<unknown>], A, E>(f: (...args: Args) => Effect.Effect<A, E>) => {
        const plain = r(f)
        const log = logged(plain)
        return (...args: Args) => (args[1] === REQUEST_TYPE ? log(...args) : plain(...args))
      }
      return Context.make(Records, {
        get: r(records.get),
        getMany: r(records.getMany),
        findUnique: r(records.findUnique),
        insert: w(records.insert),
        insertMany: w(records.insertMany),
        update: r(records.update),
        remove: r(records.remove),
        increment: r(records.increment),
        list: r(records.list),
        count: r(records.count),
        aggregate: r(records.aggregate),
        scan: r(records.scan),
        purge: r(records.purge),
        prune: r(records.prune)
      }).pipe(
        Context.add(UnitOfWork, {
          transaction: (effect) =>
            Effect.suspend(() =>
              stalled.has("unit_of_work")
                ? Effect.zipRight(stalled.wait("unit_of_work"), uow.transaction(effect))
                : failing.has("unit_of_work") ? down : uow.transaction(effect))
        }),
        Context.add(Idempotency, {
          claim: guard("idempotency")(idempotency.claim),
          complete: guard("idempotency")(idempotency.complete),
          release: guard("idempotency")(idempotency.release),
          voidCompleted: guard("idempotency")(idempotency.voidCompleted),
          prune: guard("idempotency")(idempotency.prune)
        }),
        Context.add(RateLimitStore, { hit: guard("rate_limits")(rateLimits.hit) })
      )
    })
  ).pipe(Layer.provide(store))

const storageDown = Effect.fail(new StorageUnavailable({ cause: "injected outage" }))

/** The same for the file storage (the `"storage"` port); reads of stored files still work. `stalled`: it hangs, as a stuck disk or bucket does. */
export const storageWithFaults = (storage: Layer.Layer<FileStorage>, failing: ReadonlySet<FaultyPort>, stalled?: Stalls) =>
  Layer.effect(
    FileStorage,
    Effect.map(FileStorage, (inner): FileStorage["Type"] => {
      const guard = <A, E>(effect: () => Effect.Effect<A, E>): Effect.Effect<A, E | StorageUnavailable> =>
        Effect.suspend((): Effect.Effect<A, E | StorageUnavailable> =>
          failing.has("storage") ? storageDown : stalled?.has("storage") ? Effect.zipRight(stalled.wait("storage"), effect()) : effect()
        )
      return {
        startUpload: (key) => guard(() => inner.startUpload(key)),
        putPart: (key, uploadId, number, body, maxBytes) => guard(() => inner.putPart(key, uploadId, number, body, maxBytes)),
        completeUpload: (key, uploadId, parts) => guard(() => inner.completeUpload(key, uploadId, parts)),
        abortUpload: (key, uploadId) => guard(() => inner.abortUpload(key, uploadId)),
        readObject: (key) => inner.readObject(key),
        openObject: (key, range) => guard(() => inner.openObject(key, range)),
        deleteObject: (key) => guard(() => inner.deleteObject(key))
      }
    })
  ).pipe(Layer.provide(storage))
