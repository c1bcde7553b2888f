/**
 * The store ports: everything with state is reached through one of these tags.
 * `@syllabus/memory` and `@syllabus/pg` implement them (and pass one conformance suite).
 *
 * Records are stored as JSON documents with a few columns the store understands (type, id,
 * tenant, revision) and named unique keys. Every resource of the contract is one record
 * type, so one store implementation serves them all.
 */
import { Context, Data, Effect } from "effect"

export type Environment = "production" | "sandbox"
export const environments: ReadonlyArray<Environment> = ["production", "sandbox"]

/** Every row of every store belongs to one account and one environment. */
export interface Tenant {
  readonly accountId: string
  readonly environment: Environment
}

export type Json = string | number | boolean | null | ReadonlyArray<Json> | { readonly [key: string]: Json }
export type JsonObject = { readonly [key: string]: Json }

/** The store could not be reached or failed: callers turn it into the right 503. */
export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{ readonly cause: unknown }> {}

/** A named unique key was taken by another record. */
export class UniqueViolation extends Data.TaggedError("UniqueViolation")<{ readonly name: string }> {}

/** The record changed since the revision the caller read (or is gone). */
export class RevisionConflict extends Data.TaggedError("RevisionConflict")<{ readonly current: number | null }> {}

export interface StoredRecord {
  readonly type: string
  readonly id: string
  readonly tenant: Tenant
  /** Starts at 1; every successful update adds one. */
  readonly revision: number
  readonly data: JsonObject
}

/** A conditional write that lost to a concurrent one (a revision moved, a key taken meanwhile). */
export const isStoreRace = (e: unknown): boolean =>
  typeof e === "object" && e !== null && ["RevisionConflict", "UniqueViolation"].includes((e as { _tag?: string })._tag ?? "")

/**
 * A unique key of a record. Tenant-scoped unless `global` (e.g. a secret's hash, which must
 * find its credential before the tenant is known).
 */
export interface UniqueKey {
  readonly name: string
  readonly value: string
  readonly global?: boolean
}

/** A condition on a top-level field of a record's data. */
export type Where =
  | { readonly field: string; readonly op: "eq"; readonly value: string | number | boolean | null }
  | { readonly field: string; readonly op: "in"; readonly values: ReadonlyArray<string> }
  | { readonly field: string; readonly op: "gt" | "gte" | "lt" | "lte"; readonly value: string | number }
  /** A text field containing `value`, ignoring case (search). */
  | { readonly field: string; readonly op: "contains"; readonly value: string }

export interface SortSpec {
  /** A top-level field of the data, or `id`. Ties are always broken by `id` in the same direction. */
  readonly field: string
  readonly kind: "text" | "number"
  readonly direction: "asc" | "desc"
}

export interface ListQuery {
  readonly where: ReadonlyArray<Where>
  readonly sort: SortSpec
  /** Keyset position: the sort value and id of the last record of the previous page. */
  readonly after?: { readonly value: string | number | null; readonly id: string } | undefined
  readonly limit: number
}

/**
 * A way records are read that a store must answer from an index, not by scanning: the records
 * of `type` (in one tenant, or across tenants for housekeeping) selected by equality on the
 * `equals` fields (`eq`/`in`), then ordered or bounded by `order` (a data field of a kind, or
 * `id`). Derived from the resource descriptions (list filters and sorts) and declared beside
 * the housekeeping reads (`scan`, `prune`); each store turns them into its own indexes.
 */
export type AccessPath =
  | {
    readonly kind: "ordered"
    readonly type: string
    readonly scope: "tenant" | "all"
    readonly equals: ReadonlyArray<string>
    readonly order: ReadonlyArray<{ readonly field: string; readonly kind: "text" | "number" }>
  }
  /** `contains` (case-insensitive) on a text field, within one tenant (`q`). */
  | { readonly kind: "search"; readonly type: string; readonly scope: "tenant"; readonly field: string }

/**
 * The access path of a housekeeping read across tenants (`scan`, `prune`), declared beside the
 * read: records of `type` equal on `equals`, bounded (or ordered) by `order`.
 */
export const housekeepingPath = (
  type: string,
  equals: ReadonlyArray<string>,
  order: ReadonlyArray<{ readonly field: string; readonly kind: "text" | "number" }>
): AccessPath => ({ kind: "ordered", type, scope: "all", equals, order })

/**
 * The access path of a collection a use case lists within one tenant (outside the resource
 * machinery, whose paths are derived from the descriptions), declared beside the list:
 * records of `type` equal on `equals`, in `order`.
 */
export const listPath = (
  type: string,
  equals: ReadonlyArray<string>,
  order: ReadonlyArray<{ readonly field: string; readonly kind: "text" | "number" }>
): AccessPath => ({ kind: "ordered", type, scope: "tenant", equals, order })

export interface GroupCount {
  readonly key: ReadonlyArray<Json>
  readonly count: number
}

/**
 * A figure computed over the records of a group (`Records.aggregate`): `count` counts records;
 * `sum`, `avg`, `min`, `max` read a numeric field (a value that is not a JSON number is left
 * out, as SQL leaves out NULL: over no number, they are null). `filter` restricts the measure to
 * the records matching it (SQL's `FILTER (WHERE …)`), so one read gives several conditional
 * counts.
 */
export type Measure =
  | { readonly kind: "count"; readonly filter?: ReadonlyArray<Where> }
  | {
    readonly kind: "sum" | "avg" | "min" | "max"
    readonly field: string
    readonly filter?: ReadonlyArray<Where>
  }

/**
 * An aggregate read: the records of a type matching `where` (read through the type's indexes,
 * as `list` reads them), grouped by the values of `groupBy` fields, each group with its
 * `measures`. A group key is a scalar: a missing field, null, an object or an array are all
 * null. Groups are ordered by their keys as text (bytewise, `COLLATE "C"`; null first), or,
 * with `order`, by a measure (null as 0) then the keys as text, both in `order.direction`;
 * `after` (the measure's value and the keys of the last group of a page) and `limit` read a
 * page of that order.
 */
export interface AggregateQuery {
  readonly where: ReadonlyArray<Where>
  readonly groupBy: ReadonlyArray<string>
  readonly measures: ReadonlyArray<Measure>
  readonly order?: { readonly measure: number; readonly direction: "asc" | "desc" } | undefined
  readonly after?: { readonly value: number; readonly key: ReadonlyArray<string | null> } | undefined
  readonly limit?: number | undefined
}

/** A group of an aggregate: its key (one value per `groupBy` field) and its measures, in order. */
export interface AggregateRow {
  readonly key: ReadonlyArray<Json>
  readonly values: ReadonlyArray<number | null>
}

/** The text a group key is ordered by (`AggregateQuery`): a string itself, a number or boolean as JSON writes it, else null. */
export const groupKeyText = (value: Json | undefined): string | null =>
  typeof value === "string" ? value : typeof value === "number" || typeof value === "boolean" ? JSON.stringify(value) : null

export class Records extends Context.Tag("@syllabus/core/Records")<
  Records,
  {
    /**
     * Whether each write outside a unit of work costs a commit of its own worth sharing
     * (PostgreSQL: a round trip and a WAL flush): the request log is then written in group
     * commits (`makeRequestLogWriter`). A store in memory writes each entry as it comes.
     */
    readonly groupCommit?: boolean
    readonly get: (tenant: Tenant, type: string, id: string) => Effect.Effect<StoredRecord | undefined, StoreUnavailable>
    /**
     * The records of `type` with these IDs, in one read (the primary key): those that exist, in
     * no particular order. For the rows of one page (a report's names), never a collection.
     */
    readonly getMany: (tenant: Tenant, type: string, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<StoredRecord>, StoreUnavailable>
    /** A tenant finds its own keys; keys marked `global` are found with `"global"` only. */
    readonly findUnique: (
      tenant: Tenant | "global",
      type: string,
      key: { readonly name: string; readonly value: string }
    ) => Effect.Effect<StoredRecord | undefined, StoreUnavailable>
    /**
     * `findUnique`, and the record of its account in the same read where the store can join them
     * (PostgreSQL: one round trip instead of two): the record of `owner.type` whose ID is the
     * found record's account, in that account's `owner.environment`. Authentication's read of a
     * credential by its secret, with the account whose state it checks. A store without it is
     * asked for both in turn.
     */
    readonly findUniqueWithAccount?: (
      tenant: Tenant | "global",
      type: string,
      key: { readonly name: string; readonly value: string },
      owner: { readonly type: string; readonly environment: Environment }
    ) => Effect.Effect<{ readonly record: StoredRecord; readonly account: StoredRecord | undefined } | undefined, StoreUnavailable>
    /**
     * A new record at revision 1; an ID or a key already held fails with `UniqueViolation`.
     * A record of an append-only stream (`streamTypes`: request log, audit entries, events,
     * webhook attempts; IDs made by `Ids`, never taken) may be stored late inside a unit of work,
     * with the unit's other appends: every read of its type in the unit sees it, and an ID that
     * turns out to be taken then fails the unit (`StoreUnavailable`), not the call.
     */
    readonly insert: (
      tenant: Tenant,
      type: string,
      id: string,
      data: JsonObject,
      uniques?: ReadonlyArray<UniqueKey>
    ) => Effect.Effect<StoredRecord, StoreUnavailable | UniqueViolation>
    /**
     * Insert records of one type that hold no unique keys (the items of a batch), in as few
     * statements as the store allows: all of them, or none (`UniqueViolation` on an id taken).
     */
    readonly insertMany: (
      tenant: Tenant,
      type: string,
      rows: ReadonlyArray<{ readonly id: string; readonly data: JsonObject }>
    ) => Effect.Effect<ReadonlyArray<StoredRecord>, StoreUnavailable | UniqueViolation>
    /**
     * Replace the data of a record. With `expectedRevision`, only if the record is still at
     * that revision (else `RevisionConflict`). `uniques`, when given, replaces the record's keys.
     */
    readonly update: (
      tenant: Tenant,
      type: string,
      id: string,
      data: JsonObject,
      options?: { readonly expectedRevision?: number | undefined; readonly uniques?: ReadonlyArray<UniqueKey> | undefined }
    ) => Effect.Effect<StoredRecord, StoreUnavailable | UniqueViolation | RevisionConflict>
    readonly remove: (tenant: Tenant, type: string, id: string) => Effect.Effect<boolean, StoreUnavailable>
    /**
     * Add `deltas` to numeric fields of a record (a missing field counts as 0), making it from
     * `fields` and the deltas when it does not exist: one atomic step, which concurrent
     * increments of the same record wait on (kept figures, `records/kept-figures.ts`).
     */
    readonly increment: (
      tenant: Tenant,
      type: string,
      id: string,
      fields: JsonObject,
      deltas: Readonly<Record<string, number>>
    ) => Effect.Effect<void, StoreUnavailable>
    readonly list: (tenant: Tenant, type: string, query: ListQuery) => Effect.Effect<ReadonlyArray<StoredRecord>, StoreUnavailable>
    /** Counts of records matching `where`, grouped by the values of `groupBy` fields. */
    readonly count: (
      tenant: Tenant,
      type: string,
      where: ReadonlyArray<Where>,
      groupBy: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<GroupCount>, StoreUnavailable>
    /**
     * Figures over the records matching `query.where`, grouped (`AggregateQuery`): computed by
     * the store (one SQL statement on PostgreSQL), never by handing every record to the caller.
     * Without `groupBy` there is exactly one group (its counts 0 over no record).
     */
    readonly aggregate: (
      tenant: Tenant,
      type: string,
      query: AggregateQuery
    ) => Effect.Effect<ReadonlyArray<AggregateRow>, StoreUnavailable>
    /**
     * Housekeeping across tenants: at most `limit` records of `type` matching `where`, in `id`
     * order (which ones, when more match, is the store's choice: the first by id, or the first
     * by a bounded due time). Never used to answer a client (a client only sees its own tenant).
     */
    readonly scan: (
      type: string,
      where: ReadonlyArray<Where>,
      limit: number
    ) => Effect.Effect<ReadonlyArray<StoredRecord>, StoreUnavailable>
    /** Remove every record of the tenant whose type is not in `keepTypes` (sandbox reset). */
    readonly purge: (tenant: Tenant, keepTypes: ReadonlyArray<string>) => Effect.Effect<number, StoreUnavailable>
    /**
     * Remove, across all tenants, at most `limit` records of `type` whose `field` (a timestamp)
     * is below `before` (retention, in bounded batches). Answers how many it removed: fewer
     * than `limit` means none is left. Of an append-only stream (`streamTypes`) by its creation
     * time, a store may keep a record past the bound until the records created before it go
     * (PostgreSQL drops whole weeks, the memory store's request log takes its oldest from the
     * front): every read of a stream hides what is past its time.
     */
    readonly prune: (
      type: string,
      field: string,
      before: string,
      limit: number
    ) => Effect.Effect<number, StoreUnavailable>
  }
>() {}

/**
 * One unit of work: every `Records` and `Idempotency.complete` call made inside `transaction`
 * commits together or not at all, serializably. Nested calls join the outer transaction.
 * A store may run the effect again when it lost a race with a concurrent unit of work
 * (nothing of the lost run is kept), so the effect must do nothing but store work and
 * pure computation.
 */
export class UnitOfWork extends Context.Tag("@syllabus/core/UnitOfWork")<
  UnitOfWork,
  {
    readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreUnavailable, R>
    /**
     * A hint from inside a unit of work: it reads and writes where concurrent ones meet
     * (`key`: the end of one showcase's order, say), so that they cannot all win. A store that
     * runs units of work optimistically may run the ones that lost a race on the key one at a
     * time instead of letting them meet again (PostgreSQL); one that runs them one at a time
     * has nothing to do (memory). Use `contends`.
     */
    readonly contends?: (key: string) => Effect.Effect<void>
    /**
     * The effect in the running unit of work as it is (no savepoint: a failure of it fails the
     * unit), or in a unit of work of its own outside one. For a step whose failure the caller
     * never catches; a store without it runs `transaction`. Use `joinUnitOfWork`.
     */
    readonly join?: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreUnavailable, R>
  }
>() {}

/**
 * `effect` atomic, in the caller's unit of work when there is one, without a savepoint of its
 * own (a round trip on PostgreSQL): only for an effect whose failure fails the whole request,
 * never for one the caller catches and goes on after.
 */
export const joinUnitOfWork = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreUnavailable, R | UnitOfWork> =>
  Effect.flatMap(UnitOfWork, (uow) => (uow.join ?? uow.transaction)(effect))

/** `UnitOfWork.contends` of the store, when there is a unit of work and the store takes the hint. */
export const contends = (tenant: Tenant, key: string): Effect.Effect<void> =>
  Effect.flatMap(Effect.serviceOption(UnitOfWork), (uow) =>
    uow._tag === "Some" && uow.value.contends !== undefined
      ? uow.value.contends(`${tenant.accountId}/${tenant.environment}/${key}`)
      : Effect.void)

/** A response as recorded for replay. */
export interface RecordedResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Json
}

export interface IdempotencyReceipt {
  /** The operation and path the key was first used on, and a hash of the rest of the request. */
  readonly operationId: string
  readonly fingerprint: string
  readonly state: "in_progress" | "completed"
  readonly response: RecordedResponse | null
  /** Epoch ms. */
  readonly expiresAt: number
  /** When its holder claimed the key (epoch ms): an `in_progress` claim older than its lease was abandoned. */
  readonly claimedAt: number
}

export type IdempotencyClaim =
  /** The key is now held by this request; `token` proves it on complete/release. */
  | { readonly _tag: "Claimed"; readonly token: string }
  /** Someone used the key before (finished or still running). */
  | { readonly _tag: "Existing"; readonly receipt: IdempotencyReceipt }

/** One request's attempt to take an idempotency key. Times are epoch ms. */
export interface ClaimAttempt {
  readonly operationId: string
  readonly fingerprint: string
  /** Proves the holder on `complete` and `release`. */
  readonly token: string
  readonly now: number
  readonly staleBefore: number
  readonly expiresAt: number
}

export class Idempotency extends Context.Tag("@syllabus/core/Idempotency")<
  Idempotency,
  {
    /**
     * Take the key, unless a live receipt holds it. A receipt past `expiresAt`, or an
     * in-progress one claimed before `staleBefore` (epoch ms), is taken over.
     */
    readonly claim: (tenant: Tenant, key: string, attempt: ClaimAttempt) => Effect.Effect<IdempotencyClaim, StoreUnavailable>
    /** Record the result; called inside the unit of work of the write it belongs to. */
    readonly complete: (
      tenant: Tenant,
      key: string,
      token: string,
      response: RecordedResponse
    ) => Effect.Effect<void, StoreUnavailable>
    /**
     * Give the key back after a failure: an error consumes no key. Only a claim still in
     * progress is given back; a completed receipt was committed with its write and stays.
     */
    readonly release: (tenant: Tenant, key: string, token: string) => Effect.Effect<void, StoreUnavailable>
    /**
     * Make every completed receipt of the tenant unreplayable (a sandbox reset removed what
     * their results describe): each keeps its key and status, loses its body, and is marked
     * `NOT_REPLAYABLE_HEADER: "result"`. Claims in progress are left as they are (the reset's
     * own). Joins the caller's unit of work.
     */
    readonly voidCompleted: (tenant: Tenant) => Effect.Effect<void, StoreUnavailable>
    /**
     * Retention (§8.3, 48 hours): remove, across all tenants, at most `limit` receipts whose
     * `expiresAt` is at or before `now` (epoch ms), in one short step of its own
     * (never part of a unit of work). Answers how many it removed: fewer than `limit` means
     * none is left, or the rest are busy elsewhere (another sweep, a claim) and wait for the
     * next pass. A receipt already removed, or taken over by a new claim, is left alone, so
     * any number of processes may sweep at once. `claim` already ignores an expired receipt;
     * this frees its storage.
     */
    readonly prune: (now: number, limit: number) => Effect.Effect<number, StoreUnavailable>
  }
>() {}

/** One scope checked by the rate limiter. */
export interface RateCheck {
  readonly scope: "origin" | "instance" | "key"
  /** The counter's identity, e.g. `origin:203.0.113.9` or `key:crd_…`. */
  readonly key: string
  readonly limit: number
}

/** The two fixed windows a sliding window is estimated from. */
export interface WindowCounts {
  readonly previous: number
  readonly current: number
}

export class RateLimitStore extends Context.Tag("@syllabus/core/RateLimitStore")<
  RateLimitStore,
  {
    /**
     * Atomically: read the counts of the window starting at `windowStart` (epoch ms) and of
     * the one before it for every check, ask `admit` whether the request is allowed, and
     * only if it is, add one to every current window. Returns the counts that were read.
     * Never part of a unit of work: a hit stays counted whatever happens to the request.
     */
    readonly hit: (
      checks: ReadonlyArray<RateCheck>,
      windowStart: number,
      windowMs: number,
      admit: (counts: ReadonlyArray<WindowCounts>) => boolean
    ) => Effect.Effect<{ readonly admitted: boolean; readonly counts: ReadonlyArray<WindowCounts> }, StoreUnavailable>
  }
>() {}

/** A read replica as the store sees it: its place in the configuration (no URL: URLs carry passwords) and its state. */
export interface ReplicaState {
  readonly index: number
  /**
   * `ok`: serving reads; `lagging`: further behind the primary than the store's bound (reads wait
   * for it or go to the primary); `failing`: did not answer; `not-a-replica`: not in recovery
   * (a standby promoted, or the primary itself).
   */
  readonly state: "ok" | "lagging" | "failing" | "not-a-replica"
  /** WAL bytes behind the primary, when it answered. */
  readonly lagBytes?: number
}

/**
 * Read replicas of the store (PostgreSQL with `replicaUrls`): asked for their states by
 * `GET /readyz`. A store without replicas does not offer it.
 */
export class StoreReplicas extends Context.Tag("@syllabus/core/StoreReplicas")<
  StoreReplicas,
  { readonly check: Effect.Effect<ReadonlyArray<ReplicaState>> }
>() {}
