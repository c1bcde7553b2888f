/**
 * The whole transactional state of the memory store, as one immutable value, and the unit of
 * work over it.
 *
 * The state is made of persistent maps, so a snapshot costs nothing: a transaction starts
 * from the committed state, works on its own copy, and commits by publishing that copy.
 * Since writers are serialized (one permit), nobody else can have committed in between, so
 * publishing is always correct. Readers outside a transaction read the committed state and
 * never wait.
 */
import { Effect, Either, FiberRef, HashMap, Ref, type Scope } from "effect"
import type { IdempotencyReceipt, StoredRecord, Tenant, UniqueKey } from "@syllabus/core"

/** A stored record and the unique keys it holds. */
export interface Entry {
  readonly record: StoredRecord
  readonly uniques: ReadonlyArray<UniqueKey>
}

/** All records of one (tenant, type). */
export interface Bucket {
  readonly tenant: Tenant
  readonly type: string
  readonly rows: HashMap.HashMap<string, Entry>
}

/** Where a unique key points. */
export interface Address {
  readonly bucket: string
  readonly id: string
}

/** An idempotency receipt with what only the store knows: its holder's token and claim time. */
export interface HeldReceipt {
  readonly receipt: IdempotencyReceipt
  readonly token: string
  readonly claimedAt: number
}

export interface State {
  /** By `bucketKey(tenant, type)`. */
  readonly buckets: HashMap.HashMap<string, Bucket>
  /** By `uniqueIndexKey(...)`. */
  readonly uniques: HashMap.HashMap<string, Address>
  /** By `receiptKey(tenant, key)`. */
  readonly receipts: HashMap.HashMap<string, HeldReceipt>
}

export const emptyState: State = {
  buckets: HashMap.empty(),
  uniques: HashMap.empty(),
  receipts: HashMap.empty()
}

// Composite keys as JSON arrays: unambiguous whatever characters the parts contain.
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

/**
 * A write: a pure function of the state giving either an error (state unchanged) or a result
 * and the next state.
 */
export type Write<A, E> = (state: State) => Either.Either<readonly [A, State], E>

/** The working copy of a running transaction. */
interface Tx {
  state: State
  /** False once committed or rolled back: late writes of leftover fibers go to the store itself. */
  open: boolean
}

export interface Store {
  /** The state this fiber sees: its transaction's working copy, else the committed state. */
  readonly read: Effect.Effect<State>
  /** Apply a write in the current transaction, or atomically on its own outside of one. */
  readonly write: <A, E>(write: Write<A, E>) => Effect.Effect<A, E>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export const makeStore: Effect.Effect<Store, never, Scope.Scope> = Effect.gen(function* () {
  const committed = yield* Ref.make(emptyState)
  const writers = yield* Effect.makeSemaphore(1)
  // One per store, so that two memory stores in one program never share a transaction. Child
  // fibers inherit the transaction; joining a fiber never replaces the parent's.
  const current = yield* FiberRef.make<Tx | undefined>(undefined, { join: (parent) => parent })

  const openTx = Effect.map(FiberRef.get(current), (tx) => (tx !== undefined && tx.open ? tx : undefined))

  const read: Effect.Effect<State> = Effect.flatMap(openTx, (tx) =>
    tx !== undefined ? Effect.succeed(tx.state) : Ref.get(committed)
  )

  const write = <A, E>(op: Write<A, E>): Effect.Effect<A, E> =>
    Effect.flatMap(openTx, (tx) => {
      if (tx !== undefined) {
        return Effect.suspend(() => {
          const result = op(tx.state)
          if (Either.isLeft(result)) return Effect.fail(result.left)
          tx.state = result.right[1]
          return Effect.succeed(result.right[0])
        })
      }
      return writers.withPermits(1)(
        Effect.flatMap(
          Ref.modify(committed, (state): readonly [Either.Either<A, E>, State] => {
            const result = op(state)
            return Either.isLeft(result) ? [Either.left(result.left), state] : [Either.right(result.right[0]), result.right[1]]
          }),
          (result) => (Either.isLeft(result) ? Effect.fail(result.left) : Effect.succeed(result.right))
        )
      )
    })

  // Nested: join the outer transaction, but undo the inner one's writes if it fails, like a
  // savepoint (what @effect/sql does), so a failure caught by the outer leaves nothing behind.
  const nested = <A, E, R>(tx: Tx, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      const savepoint = tx.state
      return Effect.onError(effect, () =>
        Effect.sync(() => {
          tx.state = savepoint
        })
      )
    })

  const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(openTx, (outer) => {
      if (outer !== undefined) return nested(outer, effect)
      // The permit is held for the whole run: transactions and plain writes go one at a time.
      return writers.withPermits(1)(
        Effect.flatMap(Ref.get(committed), (start) => {
          const tx: Tx = { state: start, open: true }
          const close = Effect.sync(() => {
            tx.open = false
            return tx.state
          })
          return effect.pipe(
            Effect.locally(current, tx),
            // Close first, then publish: a leftover fiber writing after the close waits for the
            // permit, so it lands after this commit instead of being lost in the working copy.
            Effect.tap(() => Effect.flatMap(close, (state) => Ref.set(committed, state))),
            Effect.ensuring(close)
          )
        })
      )
    })

  return { read, write, transaction }
})
