/**
 * The transactional state of the memory store and the unit of work over it.
 *
 * Records live in buckets, one per (tenant, type) (`bucket.ts`): immutable values, so a
 * snapshot costs nothing. The committed buckets sit in a map; a transaction works on its own
 * copies of the buckets it writes and publishes them at commit, in one synchronous step.
 *
 * Concurrency: no lock is shared by tenants. A transaction locks each bucket it reads or
 * writes, when it first touches it, until it ends (strict two-phase locking, bucket by
 * bucket): transactions of one tenant that touch the same (tenant, type) are serialized, and
 * nothing else waits on anything. A transaction never waits for a lock while it holds one:
 * it loses the race instead (as the port allows): it is rolled back, waits for the holder to
 * finish, and runs again, this time taking every lock it needed beforehand, in one order
 * (which cannot deadlock). Global unique keys (a secret's hash) are reserved by the
 * transaction that takes or frees one; another that needs the same key loses the race and
 * runs again after it. Reads outside a transaction read the committed buckets and never wait;
 * a write outside a transaction is a transaction of its own.
 *
 * The idempotency receipts (`State`, written through `write`) are a small shared map: a
 * write outside a transaction applies at once; inside one, it is journaled, and at commit the
 * journal is replayed on the committed receipts: if a write would now give another result,
 * the transaction lost a race and runs again.
 */
import { Deferred, Effect, Either, Exit, FiberId, FiberRef, HashMap, type Scope } from "effect"
import type { IdempotencyReceipt, Tenant } from "@syllabus/core"
import { type Bucket, emptyBucket, type IndexSpec, type Spec, withIndexes } from "./bucket.js"
import type { Edit } from "./btree.js"

export type { Bucket, Entry } from "./bucket.js"

/** Where a global unique key points. */
export interface Address {
  readonly tenant: Tenant
  readonly type: string
  readonly id: string
}

/** An idempotency receipt with what only the store knows: its holder's token. */
export interface HeldReceipt {
  readonly receipt: IdempotencyReceipt
  readonly token: string
}

/** The shared part of the state written through `Store.write`: idempotency receipts. */
export interface State {
  /** By `receiptKey(tenant, key)`. */
  readonly receipts: HashMap.HashMap<string, HeldReceipt>
}

export const emptyState: State = { receipts: HashMap.empty() }

// Composite keys as JSON arrays: unambiguous whatever characters the parts contain.
export const tenantKey = (tenant: Tenant): string => JSON.stringify([tenant.accountId, tenant.environment])

export const bucketKey = (tenant: Tenant, type: string): string =>
  JSON.stringify([tenant.accountId, tenant.environment, type])

export const uniqueIndexKey = (
  scope: Tenant | "global",
  type: string,
  key: { readonly name: string; readonly value: string }
): string =>
  JSON.stringify(
    scope === "global"
      ? ["global", type, key.name, key.value]
      : ["tenant", scope.accountId, scope.environment, type, key.name, key.value]
  )

export const receiptKey = (tenant: Tenant, key: string): string =>
  JSON.stringify([tenant.accountId, tenant.environment, key])

/** What every `receiptKey` of a tenant starts with. */
export const receiptKeyPrefix = (tenant: Tenant): string => `${JSON.stringify([tenant.accountId, tenant.environment]).slice(0, -1)},`

/**
 * A write of the shared state: a pure function of it giving either an error (state
 * unchanged) or a result and the next state.
 */
export type Write<A, E> = (state: State) => Either.Either<readonly [A, State], E>

/** The global unique keys as a bucket write sees them. */
export interface GlobalKeys {
  /** The record holding the key, as this transaction sees it. */
  readonly holder: (key: string) => Address | undefined
  readonly take: (key: string, at: Address) => void
  readonly free: (key: string) => void
}

/**
 * A write of one bucket: a pure function of it (with every index asked for on its type)
 * giving either an error or a result and the next bucket. `edit`, in a transaction, is the
 * token of its unpublished work (`btree.ts`): the write may change the nodes it owns in
 * place, and so must decide an error before it changes anything.
 */
export type Modify<A, E> = (bucket: Bucket, globals: GlobalKeys, edit: Edit | undefined) => Either.Either<readonly [A, Bucket], E>

export interface Store {
  /** The shared state this fiber sees: its transaction's working copy, else the committed state. */
  readonly read: Effect.Effect<State>
  /** Apply a write of the shared state in the current transaction, or atomically on its own outside of one. */
  readonly write: <A, E>(write: Write<A, E>) => Effect.Effect<A, E>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * The effect in the running transaction as it is (no savepoint: its failure is the
   * transaction's, and what it wrote stays unless the transaction fails), or in a transaction
   * of its own outside one. Writes of one savepoint can change what they made in place.
   */
  readonly join: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * A bucket as this fiber sees it (in a transaction, locked for it), holding the indexes of
   * `specs` (built on first use, then kept by every write to the type).
   */
  readonly bucket: (tenant: Tenant, type: string, specs?: ReadonlyArray<Spec>) => Effect.Effect<Bucket | undefined>
  /** Whether every bucket of `type` keeps the index of `spec` (declared, or asked for before). */
  readonly knows: (type: string, spec: IndexSpec) => boolean
  /** Write a bucket in the current transaction, or in a transaction of its own outside of one. */
  readonly modify: <A, E>(tenant: Tenant, type: string, modify: Modify<A, E>) => Effect.Effect<A, E>
  readonly findGlobal: (key: string) => Effect.Effect<Address | undefined>
  /** Housekeeping, without locks: the buckets of a type across tenants, with the indexes of `specs`. */
  readonly bucketsOfType: (type: string, specs: ReadonlyArray<Spec>) => Effect.Effect<ReadonlyArray<Bucket>>
  /** The types the tenant has buckets of. */
  readonly typesOf: (tenant: Tenant) => Effect.Effect<ReadonlyArray<string>>
}

/** What a transaction has done so far; a savepoint is a reference to one. */
interface Work {
  /** The buckets it wrote, by `bucketKey`. */
  readonly buckets: ReadonlyMap<string, Bucket>
  /** Global keys it took (an address) or freed (null). */
  readonly globals: ReadonlyMap<string, Address | null>
  readonly shared: State | undefined
  /** Its writes of the shared state, with what each gave (replayed at commit). */
  readonly journal: ReadonlyArray<{ readonly write: Write<unknown, unknown>; readonly outcome: string }>
}

const noWork: Work = { buckets: new Map(), globals: new Map(), shared: undefined, journal: [] }

interface Tx {
  /** False once committed or rolled back: late writes of leftover fibers go to the store itself. */
  open: boolean
  work: Work
  /** Buckets locked (by `bucketKey`), global keys reserved. */
  readonly locks: Set<string>
  readonly reserved: Set<string>
  /** Taking the locks of a rerun in order: it may wait while holding some. */
  planning: boolean
  /** Fibers of this transaction waiting for a lock. */
  waiting: number
  /**
   * The token of its work (`btree.ts`): the nodes its writes made may be changed in place,
   * but for those a live savepoint keeps (a generation at or below the floor).
   */
  edit: Edit
  /** The floors of its live savepoints (each the generation when it was taken). */
  readonly savepoints: Array<number>
  /** Set when it lost a race: what to wait for before the rerun, and the locks it wanted. */
  lost: { readonly wait: Effect.Effect<void>; readonly want: Array<string> } | undefined
  /** Completed when it ends; made by the first that waits for it (most transactions have none). */
  done: Deferred.Deferred<void> | undefined
}

/** Wait for `tx` to end. */
const ended = (tx: Tx): Effect.Effect<void> =>
  Effect.suspend(() => (tx.open ? Deferred.await(tx.done ??= Deferred.unsafeMake<void>(FiberId.none)) : Effect.void))

/** The defect that unwinds a transaction that lost a race (it is rerun, never seen outside). */
class LostRace {
  readonly _tag = "LostRace"
}

/** Thrown by `GlobalKeys` when another transaction has reserved the key. */
class Blocked {
  constructor(readonly by: Tx) {}
}

const outcomeOf = (result: Either.Either<readonly [unknown, State], unknown>): string => {
  try {
    return Either.isLeft(result) ? `L${JSON.stringify(result.left)}` : `R${JSON.stringify(result.right[0])}`
  } catch {
    return Either.isLeft(result) ? "L?" : "R?"
  }
}

/** Locks taken and waited for since the store was made: a test's window on contention. */
export const lockCounters = { waits: 0, lostRaces: 0 }

/**
 * A store that keeps, in every bucket of a type from its first record, the indexes `declared`
 * for the type (the access paths of the release: `index.ts`); an index no declaration names is
 * built the first time a read asks for it, and kept from then on.
 */
export const makeStore = (
  declared: ReadonlyArray<{ readonly type: string; readonly spec: Spec }> = []
): Effect.Effect<Store, never, Scope.Scope> => Effect.gen(function* () {
  // The committed state. Mutated only in synchronous steps (a commit, a write outside a
  // transaction), so a reader never sees half of one.
  const committed = new Map<string, Bucket>()
  const ofType = new Map<string, Set<string>>()
  const ofTenant = new Map<string, Set<string>>()
  const globals = new Map<string, Address>()
  let shared: State = emptyState
  /** Index specs asked for, by type: every bucket of the type keeps them. */
  const specs = new Map<string, Map<string, Spec>>()
  const lockOwners = new Map<string, Tx>()
  const reservations = new Map<string, Tx>()

  // One per store, so that two memory stores in one program never share a transaction. Child
  // fibers inherit the transaction; joining a fiber never replaces the parent's.
  const current = yield* FiberRef.make<Tx | undefined>(undefined, { join: (parent) => parent })
  const openTx = Effect.map(FiberRef.get(current), (tx) => (tx !== undefined && tx.open ? tx : undefined))

  const specsOf = (type: string): Map<string, Spec> => {
    let found = specs.get(type)
    if (found === undefined) specs.set(type, (found = new Map()))
    return found
  }

  const register = (type: string, asked: ReadonlyArray<Spec>): void => {
    const known = specsOf(type)
    for (const spec of asked) if (!known.has(spec.key)) known.set(spec.key, spec)
  }

  for (const { spec, type } of declared) register(type, [spec])

  const knows = (type: string, spec: IndexSpec): boolean => specs.get(type)?.has(spec.key) === true

  const publish = (key: string, bucket: Bucket): void => {
    if (!committed.has(key)) {
      const byType = ofType.get(bucket.type) ?? new Set<string>()
      ofType.set(bucket.type, byType.add(key))
      const tenant = tenantKey(bucket.tenant)
      const byTenant = ofTenant.get(tenant) ?? new Set<string>()
      ofTenant.set(tenant, byTenant.add(key))
    }
    committed.set(key, bucket)
  }

  /** The bucket as `tx` (or, without one, the committed state) sees it. */
  const visible = (tx: Tx | undefined, key: string): Bucket | undefined => tx?.work.buckets.get(key) ?? committed.get(key)

  /** `bucket` with the indexes of its type, kept where it was found so the work is done once. */
  const indexed = (tx: Tx | undefined, key: string, bucket: Bucket): Bucket => {
    const next = withIndexes(bucket, specsOf(bucket.type).values())
    if (next === bucket) return bucket
    if (tx !== undefined && tx.work.buckets.get(key) === bucket) {
      tx.work = { ...tx.work, buckets: new Map(tx.work.buckets).set(key, next) }
    } else if (committed.get(key) === bucket) {
      committed.set(key, next)
    }
    return next
  }

  const lose = (tx: Tx, wait: Effect.Effect<void>, want?: string): Effect.Effect<never> => {
    if (tx.lost === undefined) tx.lost = { wait, want: [] }
    if (want !== undefined) tx.lost.want.push(want)
    return Effect.die(new LostRace())
  }

  const lock = (tx: Tx, key: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (tx.lost !== undefined) return lose(tx, Effect.void)
      const owner = lockOwners.get(key)
      if (owner === tx) return Effect.void
      if (owner === undefined) {
        // A sibling fiber waits while this one would hold a lock: give up, rather than wait holding.
        if (tx.waiting > 0 && !tx.planning) return lose(tx, Effect.void, key)
        lockOwners.set(key, tx)
        tx.locks.add(key)
        return Effect.void
      }
      lockCounters.waits++
      // Waiting while holding nothing (or in the order of a rerun's plan) cannot deadlock.
      if (tx.planning || tx.locks.size === 0) {
        tx.waiting++
        return ended(owner).pipe(
          Effect.ensuring(Effect.sync(() => tx.waiting--)),
          Effect.zipRight(lock(tx, key))
        )
      }
      return lose(tx, ended(owner), key)
    })

  const close = (tx: Tx): void => {
    tx.open = false
    for (const key of tx.locks) if (lockOwners.get(key) === tx) lockOwners.delete(key)
    for (const key of tx.reserved) if (reservations.get(key) === tx) reservations.delete(key)
    if (tx.done !== undefined) Deferred.unsafeDone(tx.done, Exit.void)
  }

  /** Publish a transaction's work, in one synchronous step; false if it lost a race. */
  const commit = (tx: Tx): boolean => {
    let next = shared
    for (const { outcome, write } of tx.work.journal) {
      const result = write(next)
      if (outcomeOf(result) !== outcome) {
        lose(tx, Effect.void)
        return false
      }
      if (Either.isRight(result)) next = result.right[1]
    }
    shared = next
    for (const [key, bucket] of tx.work.buckets) publish(key, bucket)
    for (const [key, address] of tx.work.globals) {
      if (address === null) globals.delete(key)
      else globals.set(key, address)
    }
    return true
  }

  const run = <A, E, R>(effect: Effect.Effect<A, E, R>, plan: ReadonlyArray<string>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) => {
      const tx: Tx = {
        open: true,
        work: noWork,
        locks: new Set(),
        reserved: new Set(),
        planning: false,
        waiting: 0,
        edit: { owner: {}, generation: 0, floor: -1 },
        savepoints: [],
        lost: undefined,
        done: undefined
      }
      // A rerun takes the locks it needed, in order, before it runs again.
      const takePlan = plan.length === 0 ? Effect.void : Effect.suspend(() => {
        tx.planning = true
        return Effect.forEach(plan, (key) => lock(tx, key), { discard: true }).pipe(
          Effect.ensuring(Effect.sync(() => (tx.planning = false)))
        )
      })
      return Effect.flatMap(Effect.exit(restore(Effect.zipRight(takePlan, Effect.locally(effect, current, tx)))), (exit) => {
        if (tx.lost === undefined && Exit.isSuccess(exit)) commit(tx)
        const lost = tx.lost
        const locked = Array.from(tx.locks)
        close(tx)
        if (lost === undefined || Exit.isInterrupted(exit)) return exit
        lockCounters.lostRaces++
        const again = Array.from(new Set([...locked, ...lost.want])).sort()
        return restore(Effect.zipRight(lost.wait, run(effect, again)))
      })
    })

  // Nested: join the outer transaction, but undo the inner one's writes if it fails, like a
  // savepoint (what @effect/sql does), so a failure caught by the outer leaves nothing behind.
  const nested = <A, E, R>(tx: Tx, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      const savepoint = tx.work
      // What the savepoint keeps is not changed in place while it lives: the nodes made so far
      // are at or below the floor; the ones made from now on are of a new generation.
      const floor = tx.edit.generation
      tx.savepoints.push(floor)
      tx.edit = { owner: tx.edit.owner, generation: floor + 1, floor }
      const release = Effect.sync(() => {
        tx.savepoints.splice(tx.savepoints.lastIndexOf(floor), 1)
        tx.edit = { owner: tx.edit.owner, generation: tx.edit.generation, floor: Math.max(-1, ...tx.savepoints) }
      })
      return Effect.ensuring(
        Effect.onError(effect, () =>
          Effect.sync(() => {
            tx.work = savepoint
          })),
        release
      )
    })

  const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(openTx, (outer) => (outer !== undefined ? nested(outer, effect) : run(effect, [])))

  const join = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(openTx, (outer) => (outer !== undefined ? effect : run(effect, [])))

  const read: Effect.Effect<State> = Effect.map(openTx, (tx) => tx?.work.shared ?? shared)

  const write = <A, E>(op: Write<A, E>): Effect.Effect<A, E> =>
    Effect.flatMap(openTx, (tx) =>
      Effect.suspend(() => {
        if (tx?.lost !== undefined) return lose(tx, Effect.void)
        const base = tx === undefined ? shared : tx.work.shared ?? shared
        const result = op(base)
        const next = Either.isRight(result) ? result.right[1] : base
        if (tx === undefined) shared = next
        else {
          const entry = { write: op as Write<unknown, unknown>, outcome: outcomeOf(result) }
          tx.work = { ...tx.work, shared: next, journal: [...tx.work.journal, entry] }
        }
        return Either.isLeft(result) ? Effect.fail(result.left) : Effect.succeed(result.right[0])
      })
    )

  const bucket = (tenant: Tenant, type: string, asked: ReadonlyArray<Spec> = []): Effect.Effect<Bucket | undefined> =>
    Effect.flatMap(openTx, (tx) => {
      const key = bucketKey(tenant, type)
      register(type, asked)
      const found = () => {
        const seen = visible(tx, key)
        return seen === undefined ? undefined : indexed(tx, key, seen)
      }
      return tx === undefined ? Effect.sync(found) : Effect.zipRight(lock(tx, key), Effect.sync(found))
    })

  /**
   * The global keys as one write sees them: in `tx` (with what it took or freed so far), or
   * alone (`undefined`: the committed keys). What the write takes or frees goes to `pending`;
   * a key another transaction has reserved throws `Blocked`.
   */
  const globalKeysOf = (tx: Tx | undefined) => {
    const pending = new Map<string, Address | null>()
    const reserved = (name: string) => {
      const by = reservations.get(name)
      if (by !== undefined && by !== tx) throw new Blocked(by)
    }
    const keys: GlobalKeys = {
      holder: (name) => {
        if (pending.has(name)) return pending.get(name) ?? undefined
        reserved(name)
        if (tx !== undefined && tx.work.globals.has(name)) return tx.work.globals.get(name) ?? undefined
        return globals.get(name)
      },
      take: (name, at) => {
        reserved(name)
        pending.set(name, at)
      },
      free: (name) => {
        reserved(name)
        pending.set(name, null)
      }
    }
    return { keys, pending }
  }

  /**
   * A write outside a transaction, applied and published in one synchronous step when nothing
   * holds its bucket or the global keys it takes: what a transaction of its own would do, without
   * one (the request log's append on every call). `undefined` when it must run as a transaction.
   */
  const modifyAlone = <A, E>(tenant: Tenant, type: string, op: Modify<A, E>): Either.Either<A, E> | undefined => {
    const key = bucketKey(tenant, type)
    if (lockOwners.has(key)) return undefined
    const start = indexed(undefined, key, committed.get(key) ?? emptyBucket(tenant, type))
    const { keys, pending } = globalKeysOf(undefined)
    let result: Either.Either<readonly [A, Bucket], E>
    try {
      result = op(start, keys, undefined)
    } catch (error) {
      if (error instanceof Blocked) return undefined
      throw error
    }
    if (Either.isLeft(result)) return Either.left(result.left)
    publish(key, result.right[1])
    for (const [name, address] of pending) {
      if (address === null) globals.delete(name)
      else globals.set(name, address)
    }
    return Either.right(result.right[0])
  }

  const modify = <A, E>(tenant: Tenant, type: string, op: Modify<A, E>): Effect.Effect<A, E> =>
    Effect.flatMap(openTx, (tx): Effect.Effect<A, E> => {
      if (tx === undefined) {
        return Effect.suspend(() => {
          const alone = modifyAlone(tenant, type, op)
          return alone === undefined ? run(modify(tenant, type, op), []) : alone
        })
      }
      const key = bucketKey(tenant, type)
      return Effect.zipRight(
        lock(tx, key),
        Effect.suspend((): Effect.Effect<A, E> => {
          if (tx.lost !== undefined) return lose(tx, Effect.void)
          const start = indexed(tx, key, visible(tx, key) ?? emptyBucket(tenant, type))
          const { keys, pending } = globalKeysOf(tx)
          let result: Either.Either<readonly [A, Bucket], E>
          try {
            result = op(start, keys, tx.edit)
          } catch (error) {
            if (error instanceof Blocked) return lose(tx, ended(error.by))
            throw error
          }
          if (Either.isLeft(result)) return Effect.fail(result.left)
          const [value, next] = result.right
          let taken = tx.work.globals
          if (pending.size > 0) {
            const changed = new Map(taken)
            for (const [name, at] of pending) {
              reservations.set(name, tx)
              tx.reserved.add(name)
              changed.set(name, at)
            }
            taken = changed
          }
          tx.work = { ...tx.work, buckets: new Map(tx.work.buckets).set(key, next), globals: taken }
          return Effect.succeed(value)
        })
      )
    })

  const findGlobal = (name: string): Effect.Effect<Address | undefined> =>
    Effect.map(openTx, (tx) => {
      if (tx !== undefined && tx.work.globals.has(name)) return tx.work.globals.get(name) ?? undefined
      return globals.get(name)
    })

  const bucketsOfType = (type: string, asked: ReadonlyArray<Spec>): Effect.Effect<ReadonlyArray<Bucket>> =>
    Effect.map(openTx, (tx) => {
      register(type, asked)
      const keys = new Set(ofType.get(type))
      if (tx !== undefined) for (const [key, b] of tx.work.buckets) if (b.type === type) keys.add(key)
      const found: Array<Bucket> = []
      for (const key of keys) {
        const seen = visible(tx, key)
        if (seen !== undefined) found.push(indexed(tx, key, seen))
      }
      return found
    })

  const typesOf = (tenant: Tenant): Effect.Effect<ReadonlyArray<string>> =>
    Effect.map(openTx, (tx) => {
      const types = new Set<string>()
      for (const key of ofTenant.get(tenantKey(tenant)) ?? []) {
        const seen = committed.get(key)
        if (seen !== undefined) types.add(seen.type)
      }
      if (tx !== undefined) {
        for (const b of tx.work.buckets.values()) {
          if (b.tenant.accountId === tenant.accountId && b.tenant.environment === tenant.environment) types.add(b.type)
        }
      }
      return Array.from(types)
    })

  return { read, write, transaction, join, bucket, knows, modify, findGlobal, bucketsOfType, typesOf }
})

