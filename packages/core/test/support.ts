/**
 * What the core's use-case tests share: one tenant, a caller of it, and a fresh memory store
 * per run with the services the use cases need (IDs, crypto).
 */
import { Effect, Layer } from "effect"
import { Caller, type CallerInfo, Ids, type JsonObject, Records, type Tenant, UnitOfWork } from "@syllabus/core"
import { memoryStore } from "@syllabus/memory"
import { ephemeralKeys, NodeCrypto } from "@syllabus/http"

export const tenant: Tenant = { accountId: "acc_000000001", environment: "production" }
export const caller: CallerInfo = { tenant, requestId: "req_000000001", credential: { id: "crd_000000001" }, grant: new Map(), human: null }

/** Run on a fresh store, as the tenant's caller. */
export const run = <A, E>(effect: Effect.Effect<A, E, Records | UnitOfWork | Ids | Caller | any>) =>
  Effect.runPromise(
    effect.pipe(
      Effect.provideService(Caller, caller),
      Effect.provide(Layer.mergeAll(memoryStore(), Ids.live, NodeCrypto(ephemeralKeys())))
    ) as Effect.Effect<A, E, never>
  )

/** In one unit of work, as the learning use cases run. */
export const atomically = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.flatMap(UnitOfWork, (uow) => uow.transaction(effect))

/** A record of the tenant, written directly. */
export const insert = (type: string, id: string, data: JsonObject) => Effect.flatMap(Records, (records) => records.insert(tenant, type, id, data))
