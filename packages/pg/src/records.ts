/**
 * `Records` on PostgreSQL: one row per record in `records` (data as jsonb), its named unique
 * keys in `record_keys`. Field names and record types come from code; they are validated and
 * written into the statements as literals (`expressions.ts`), so that each condition and sort
 * is the expression of an access-path index (`access-paths.ts`). Values are parameters.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment, Statement } from "@effect/sql/Statement"
import {
  type AggregateQuery,
  type AggregateRow,
  type Environment,
  type GroupCount,
  type Json,
  type JsonObject,
  type ListQuery,
  type Measure,
  Records,
  RevisionConflict,
  type SortSpec,
  type StoredRecord,
  type Tenant,
  type UniqueKey,
  UniqueViolation,
  type Where
} from "@syllabus/core"
import { type Context, Effect, FiberRef, Option } from "effect"
import { distinctValues, pagedIn } from "./access-paths.js"
import { groupKeyExpr, isSqlName, jsonExpr, numericExpr, searchExpr, stringExpr, typeCondition } from "./expressions.js"
import { type Pg, readKey, sqlStateOf, tenantOf, toNumber } from "./internal.js"
import { PREPARED } from "./pool.js"
import { maintainStream, streamDefaultLeaf, streamOf } from "./streams.js"

interface RecordRow {
  readonly account_id: string
  readonly environment: string
  readonly type: string
  readonly id: string
  readonly revision: number
  readonly data: JsonObject
}

const toRecord = (row: RecordRow): StoredRecord => ({
  type: row.type,
  id: row.id,
  tenant: tenantOf(row),
  revision: toNumber(row.revision),
  data: row.data
})

/** A field name that does not look like one is a bug of the caller, not a store failure. */
const checkFields = (fields: ReadonlyArray<string>): Effect.Effect<void> => {
  const bad = fields.find((field) => !isSqlName(field))
  return bad === undefined ? Effect.void : Effect.dieMessage(`Records: invalid field name ${JSON.stringify(bad)}`)
}

/** `contains` as a LIKE pattern's inside: `%`, `_` and the escape `\` stand for themselves. */
const likeEscaped = (value: string): string => value.replace(/[\\%_]/g, (c) => `\\${c}`)

/**
 * The statements of `Records` that read by access path, for `list`, `scan` and `prune`, and for
 * whoever checks their plans (the access-path test runs `EXPLAIN` on `list`). Field names must
 * have been checked (`isSqlName`) before.
 */
export const makeRecordStatements = (sql: SqlClient.SqlClient) => {
  const columns = sql.literal("account_id, environment, type, id, revision, data")

  // --- conditions on data fields ------------------------------------------------------------

  const json = (field: string) => sql.literal(jsonExpr(field))
  const numeric = (field: string) => sql.literal(numericExpr(field))
  const string = (field: string) => sql.literal(stringExpr(field))
  /**
   * The type as a literal, so that the planner prunes `records` to its partition while it plans
   * (`qualifier`: a table alias). A type that is not a SQL name (no record of the contract) is a
   * parameter: it lives in the default partition.
   */
  const ofType = (type: string, qualifier?: string) => {
    const prefix = qualifier === undefined ? "" : `${qualifier}.`
    return isSqlName(type) ? sql.literal(`${prefix}${typeCondition(type)}`) : sql`${sql.literal(`${prefix}type`)} = ${type}`
  }

  const comparators = { gt: ">", gte: ">=", lt: "<", lte: "<=" } as const

  const condition = (where: Where): Fragment => {
    switch (where.op) {
      case "eq":
        // A missing field is JSON null (the expression), so `null` matches missing and null.
        return sql`(${json(where.field)} = ${JSON.stringify(where.value)}::jsonb)`
      case "in": {
        // One value is an equality: PostgreSQL 15 reads `= ANY(…)` on an index's inner column
        // unordered, so a page would read every match and sort them (docs/benchmarks.md,
        // "Learning at scale"); `=` walks the index in the page's order. A list reads several
        // values one page each (`list`, `pagedIn`).
        const values = distinctValues(where.values)
        return values.length === 1
          ? sql`(${json(where.field)} = ${JSON.stringify(values[0])}::jsonb)`
          : sql`(${json(where.field)} = ANY(${values.map((value) => JSON.stringify(value))}::jsonb[]))`
      }
      case "contains":
        // LIKE on lower() with the value's `%`, `_` and `\` escaped: a plain substring, as
        // strpos would find it, in a form the trigram index answers.
        return sql`(${sql.literal(searchExpr(where.field))} LIKE '%' || lower(${likeEscaped(where.value)}::text) || '%')`
      default: {
        const op = sql.literal(comparators[where.op])
        return typeof where.value === "number"
          ? sql`(${numeric(where.field)} ${op} ${where.value}::numeric)`
          : sql`(${string(where.field)} ${op} ${where.value}::text)`
      }
    }
  }

  const filter = (tenant: Tenant, type: string, where: ReadonlyArray<Where>) =>
    sql.and([
      sql`account_id = ${tenant.accountId}`,
      sql`environment = ${tenant.environment}`,
      ofType(type),
      ...where.map(condition)
    ])

  // --- sorting and keyset pagination --------------------------------------------------------

  /** The sort expression: a value of another kind than the sort's is NULL, and sorts lowest. */
  const sortValue = (sort: SortSpec): Fragment =>
    sort.field === "id" ? sql`id` : sort.kind === "number" ? numeric(sort.field) : string(sort.field)

  const orderBy = (sort: SortSpec): Fragment => {
    if (sort.field === "id") return sort.direction === "asc" ? sql`id ASC` : sql`id DESC`
    const value = sortValue(sort)
    return sort.direction === "asc"
      ? sql`${value} ASC NULLS FIRST, id ASC`
      : sql`${value} DESC NULLS LAST, id DESC`
  }

  /**
   * Rows strictly after `after` in the order of `orderBy`, as one or two ranges of the sort's
   * index, in that order: each a condition the index seeks to (a row comparison `(value, id)`,
   * `IS NULL`, `IS NOT NULL`), never an `OR` the planner can only filter by while it walks the
   * index from its start. Nulls come first ascending and last descending:
   * - ascending after a value: the row comparison (every null is before);
   * - ascending after a null: the nulls after its id, then every non-null;
   * - descending after a value: the row comparison, then every null;
   * - descending after a null: the nulls before its id.
   */
  const afterRanges = (sort: SortSpec, after: NonNullable<ListQuery["after"]>): ReadonlyArray<Fragment> => {
    const asc = sort.direction === "asc"
    if (sort.field === "id") return [asc ? sql`(id > ${after.id})` : sql`(id < ${after.id})`]
    const value = sortValue(sort)
    // A position value of the wrong kind is null, as a stored value of the wrong kind is.
    const bound = sort.kind === "number"
      ? typeof after.value === "number" ? sql`${after.value}::numeric` : undefined
      : typeof after.value === "string" ? sql`(${after.value}::text COLLATE "C")` : undefined
    if (bound === undefined) {
      return asc
        ? [sql`(${value} IS NULL AND id > ${after.id})`, sql`(${value} IS NOT NULL)`]
        : [sql`(${value} IS NULL AND id < ${after.id})`]
    }
    return asc
      ? [sql`((${value}, id) > (${bound}, ${after.id}))`]
      : [sql`((${value}, id) < (${bound}, ${after.id}))`, sql`(${value} IS NULL)`]
  }

  /**
   * The page `Records.list` reads, from ordered pages of at most `limit` rows, each an index
   * scan that stops at its page:
   * - after a position that leaves two ranges (`afterRanges`), each range is a page of its own;
   * - an `in` of several values on an equality column of a path that gives the sort's order
   *   (`pagedIn`) is a page per value (`field = value`, with the position's ranges): `= ANY(…)`
   *   there would read every matching row and sort them. The values are a parameter joined
   *   LATERAL to the page: one plan, whose index scan runs once per value (a `UNION ALL` of a
   *   page per value would be planned once per value, which costs more than the read).
   * Several pages are merged: the first `limit` rows of them, in order (at most
   * values × ranges × limit rows, each page ordered already).
   */
  const list = (tenant: Tenant, type: string, query: ListQuery): Statement<RecordRow> => {
    const limit = Math.max(0, Math.floor(query.limit))
    const paged = pagedIn(type, query.where, query.sort)
    const base = paged === undefined
      ? filter(tenant, type, query.where)
      : sql.and([filter(tenant, type, query.where.filter((_, i) => i !== paged.index)), sql`(${json(paged.field)} = v.value)`])
    const ranges = query.after === undefined ? [undefined] : afterRanges(query.sort, query.after)
    const page = (range: Fragment | undefined, extra: Fragment) => sql`
      SELECT ${columns}${extra} FROM records
      WHERE ${range === undefined ? base : sql.and([base, range])}
      ORDER BY ${orderBy(query.sort)}
      LIMIT ${limit}`
    if (paged === undefined && ranges.length === 1) return sql<RecordRow>`${page(ranges[0], sql``)}`
    // `k` is the sort value, to order the pages' rows by.
    const k = sql`, ${sortValue(query.sort)} AS k`
    const ordered = sql`k ${sql.literal(query.sort.direction === "asc" ? "ASC NULLS FIRST, id ASC" : "DESC NULLS LAST, id DESC")}`
    const pages = ranges.length === 1
      ? page(ranges[0], k)
      : sql.join(" UNION ALL ", false)(ranges.map((range) => sql`(${page(range, k)})`))
    const from = paged === undefined
      ? sql`(${pages}) AS page`
      : sql`unnest(${paged.values.map((value) => JSON.stringify(value))}::jsonb[]) AS v(value) CROSS JOIN LATERAL (${pages}) AS page`
    return sql<RecordRow>`
      SELECT ${columns} FROM ${from}
      ORDER BY ${ordered}
      LIMIT ${limit}`
  }

  /** Housekeeping across tenants: `Records.scan`. */
  const scan = (type: string, where: ReadonlyArray<Where>, limit: number): Statement<RecordRow> =>
    sql<RecordRow>`
      SELECT ${columns} FROM records
      WHERE ${sql.and([ofType(type), ...where.map(condition)])}
      ORDER BY id COLLATE "C"
      LIMIT ${Math.max(0, Math.floor(limit))}`

  /** Retention across tenants: `Records.prune`; of one partition of the type's (`relation`: a stream's default partition) if given. */
  const prune = (type: string, field: string, before: string, limit: number, relation = "records"): Statement<{ readonly count: number }> =>
    sql<{ readonly count: number }>`
      WITH due AS (
        SELECT account_id, environment, type, id FROM ${sql(relation)}
        WHERE ${ofType(type)} AND ${string(field)} < ${before}::text
        ORDER BY ${string(field)} ASC NULLS FIRST
        LIMIT ${Math.max(0, Math.floor(limit))}
        FOR UPDATE SKIP LOCKED
      ), removed AS (
        DELETE FROM ${sql(relation)} AS records USING due
        WHERE records.account_id = due.account_id AND records.environment = due.environment
          AND ${ofType(type, "records")} AND records.id = due.id
        RETURNING records.account_id, records.environment, records.id
      ), keys AS (
        DELETE FROM record_keys AS k USING removed
        WHERE k.account_id = removed.account_id AND k.environment = removed.environment
          AND k.type = ${type} AND k.id = removed.id
      )
      SELECT count(*) AS count FROM removed`

  /**
   * `Records.aggregate`: one statement. The groups are made in a subquery (keys `k<i>`, measures
   * `m<i>`, an average as its sum `m<i>` and count `c<i>`), then ordered, bounded after the
   * keyset position and limited outside it, by the keys' order of `AggregateQuery`: each key as
   * (present, text) so that null has a place in a row comparison, after the measure (null as 0)
   * when `order` names one.
   */
  const aggregate = (tenant: Tenant, type: string, query: AggregateQuery): Statement<Record<string, Json>> => {
    const keys = query.groupBy.map((field, i) =>
      sql`${sql.literal(groupKeyExpr(field))} AS ${sql(`k${i}`)}`
    )
    const filterOf = (measure: Measure) =>
      measure.filter === undefined || measure.filter.length === 0
        ? sql``
        : sql` FILTER (WHERE ${sql.and(measure.filter.map(condition))})`
    const measures = query.measures.flatMap((measure, i) => {
      const m = sql(`m${i}`)
      if (measure.kind === "count") return [sql`count(*)${filterOf(measure)} AS ${m}`]
      const value = numeric(measure.field)
      if (measure.kind === "avg") {
        return [sql`sum(${value})${filterOf(measure)} AS ${m}`, sql`count(${value})${filterOf(measure)} AS ${sql(`c${i}`)}`]
      }
      return [sql`${sql.literal(measure.kind)}(${value})${filterOf(measure)} AS ${m}`]
    })
    const positions = sql.literal(query.groupBy.map((_, i) => String(i + 1)).join(", "))
    const grouped = sql`
      SELECT ${sql.csv([...keys, ...measures])}
      FROM records WHERE ${filter(tenant, type, query.where)}
      ${query.groupBy.length === 0 ? sql`` : sql`GROUP BY ${positions}`}`
    const order = query.order
    const measureValue = (() => {
      if (order === undefined) return undefined
      const measure = query.measures[order.measure]
      if (measure === undefined) throw new Error(`Records.aggregate: no measure ${order.measure}`)
      const m = sql(`m${order.measure}`)
      return measure.kind === "count"
        ? sql`${m}`
        : measure.kind === "avg"
        ? sql`COALESCE(${m} / NULLIF(${sql(`c${order.measure}`)}, 0), 0)`
        : sql`COALESCE(${m}, 0)`
    })()
    const keyParts = query.groupBy.flatMap((_, i) => [
      sql`(CASE WHEN ${sql(`k${i}`)} = 'null'::jsonb THEN 0 ELSE 1 END)`,
      sql`(COALESCE(${sql(`k${i}`)} #>> '{}', '') COLLATE "C")`
    ])
    const parts = measureValue === undefined ? keyParts : [measureValue, ...keyParts]
    const direction = sql.literal(order?.direction === "desc" ? "DESC" : "ASC")
    const orderBy = parts.length === 0 ? sql`` : sql`ORDER BY ${sql.join(", ", false)(parts.map((part) => sql`${part} ${direction}`))}`
    const after = query.after
    const bound = after === undefined || parts.length === 0
      ? sql``
      : (() => {
        const values = [
          ...(measureValue === undefined ? [] : [sql`${after.value}::numeric`]),
          ...query.groupBy.flatMap((_, i) => {
            const key = after.key[i] ?? null
            return [sql`${key === null ? 0 : 1}::int`, sql`(${key ?? ""}::text COLLATE "C")`]
          })
        ]
        const op = sql.literal(order?.direction === "desc" ? "<" : ">")
        return sql`WHERE (${sql.join(", ", false)(parts)}) ${op} (${sql.join(", ", false)(values)})`
      })()
    const limit = query.limit === undefined ? sql`` : sql`LIMIT ${Math.max(0, Math.floor(query.limit))}`
    return sql<Record<string, Json>>`SELECT * FROM (${grouped}) AS g ${bound} ${orderBy} ${limit}`
  }

  return { columns, json, filter, ofType, list, scan, prune, aggregate }
}

/** The SQL `Records.aggregate` runs (after checking the field names): for `EXPLAIN`. */
export const aggregateStatement = (
  sql: SqlClient.SqlClient,
  tenant: Tenant,
  type: string,
  query: AggregateQuery
): Effect.Effect<Statement<Record<string, Json>>> =>
  Effect.as(checkFields(aggregateFields(query)), makeRecordStatements(sql)).pipe(
    Effect.map((statements) => statements.aggregate(tenant, type, query))
  )

/** Every field name an aggregate writes into its statement. */
const aggregateFields = (query: AggregateQuery): ReadonlyArray<string> => [
  ...query.where.map((w) => w.field),
  ...query.groupBy,
  ...query.measures.flatMap((measure) => [
    ...(measure.kind === "count" ? [] : [measure.field]),
    ...(measure.filter ?? []).map((w) => w.field)
  ])
]

/** The SQL `Records.scan` runs (after checking the field names): for `EXPLAIN`. */
export const scanStatement = (
  sql: SqlClient.SqlClient,
  type: string,
  where: ReadonlyArray<Where>,
  limit: number
): Effect.Effect<Statement<RecordRow>> =>
  Effect.as(checkFields(where.map((w) => w.field)), makeRecordStatements(sql)).pipe(
    Effect.map((statements) => statements.scan(type, where, limit))
  )

/** The SQL `Records.prune` runs (after checking the field name): for `EXPLAIN` (which does not delete). */
export const pruneStatement = (
  sql: SqlClient.SqlClient,
  type: string,
  field: string,
  before: string,
  limit: number
): Effect.Effect<Statement<{ readonly count: number }>> =>
  Effect.as(checkFields([field]), makeRecordStatements(sql)).pipe(
    Effect.map((statements) => statements.prune(type, field, before, limit))
  )

/** The SQL `Records.list` runs (after checking the field names): for `EXPLAIN` in tests and benchmarks. */
export const listStatement = (
  sql: SqlClient.SqlClient,
  tenant: Tenant,
  type: string,
  query: ListQuery
): Effect.Effect<Statement<RecordRow>> =>
  Effect.as(
    checkFields([...query.where.map((where) => where.field), query.sort.field]),
    makeRecordStatements(sql)
  ).pipe(Effect.map((statements) => statements.list(tenant, type, query)))

const keyId = (key: UniqueKey): string => JSON.stringify([key.global === true, key.name, key.value])

/**
 * The keys to insert: the same key given twice is one key, and every writer takes them in
 * the same order, so that two concurrent writers of overlapping keys cannot deadlock.
 */
const insertOrder = (keys: ReadonlyArray<UniqueKey>): ReadonlyArray<UniqueKey> =>
  [...new Map(keys.map((key) => [keyId(key), key])).values()].sort((a, b) =>
    keyId(a) < keyId(b) ? -1 : keyId(a) > keyId(b) ? 1 : 0
  )

/** A unique key as `record_keys` answers it. */
interface KeyRow {
  readonly name: string
  readonly value: string
  readonly global: boolean
}

/** The first of `keys`, in the caller's order, that is not among those inserted: the one taken. */
const firstTaken = (keys: ReadonlyArray<UniqueKey>, inserted: ReadonlyArray<KeyRow>): UniqueKey | undefined =>
  keys.find((key) => !inserted.some((row) => row.name === key.name && row.value === key.value && row.global === (key.global === true)))

export const makeRecords = ({ appendLater, read, run: unavailable, sendAppends, sql, transaction, unit }: Pg): Context.Tag.Service<typeof Records> => {
  const statements = makeRecordStatements(sql)
  const { columns, filter, json, ofType } = statements

  // Statements by key, whose plan does not depend on their values: prepared once per connection (`pool.ts`).
  const prepared = sql.literal(PREPARED)

  const recordKey = (tenant: Tenant, type: string, id: string) =>
    sql`account_id = ${tenant.accountId} AND environment = ${tenant.environment} AND ${ofType(type)} AND id = ${id}`

  /**
   * Delete a record and its unique keys, in one statement. The keys have no foreign key to
   * their record (migration `6_keys_without_foreign_key` says why): every delete of records
   * deletes their keys itself.
   */
  const removeStatement = (tenant: Tenant, type: string, id: string) =>
    sql<{ readonly id: string }>`${prepared}
      WITH removed AS (DELETE FROM records WHERE ${recordKey(tenant, type, id)} RETURNING id),
      keys AS (DELETE FROM record_keys WHERE ${recordKey(tenant, type, id)} AND EXISTS (SELECT 1 FROM removed))
      SELECT id FROM removed`

  // --- unique keys ----------------------------------------------------------------------------

  /** Distinct keys as rows `k(name, value, global)`, for an insert into `record_keys`. */
  const keyRows = (distinct: ReadonlyArray<UniqueKey>) =>
    sql`unnest(${distinct.map((key) => key.name)}::text[], ${distinct.map((key) => key.value)}::text[],
               ${distinct.map((key) => key.global === true)}::boolean[]) AS k(name, value, global)`

  /**
   * Give a record its keys. Inserts what is free, then reports the first key that was not:
   * the caller's transaction rolls the whole write back.
   */
  const addKeys = (tenant: Tenant, type: string, id: string, keys: ReadonlyArray<UniqueKey>) => {
    const distinct = insertOrder(keys)
    if (distinct.length === 0) return Effect.void
    return sql<KeyRow>`${prepared}
      INSERT INTO record_keys (account_id, environment, type, id, name, value, global)
      SELECT ${tenant.accountId}, ${tenant.environment}, ${type}, ${id}, k.name, k.value, k.global
      FROM ${keyRows(distinct)}
      ON CONFLICT DO NOTHING
      RETURNING name, value, global`.pipe(
      unavailable,
      Effect.flatMap((inserted) => {
        const taken = firstTaken(keys, inserted)
        return taken === undefined ? Effect.void : Effect.fail(new UniqueViolation({ name: taken.name }))
      })
    )
  }

  const keyLookup = (tenant: Tenant | "global") =>
    tenant === "global"
      ? sql`k.global`
      : sql`NOT k.global AND k.account_id = ${tenant.accountId} AND k.environment = ${tenant.environment}`

  // --- reads by key inside a unit of work (`UnitState.reads`) ------------------------------------

  /** The unit's reads by key; outside a unit of work, none. */
  const unitReads = Effect.map(FiberRef.get(unit), (state) => state?.reads)

  /** The unit writes these records: what it read of them is forgotten. */
  const forget = (tenant: Tenant, type: string, ids: ReadonlyArray<string>) =>
    Effect.map(unitReads, (reads) => {
      if (reads !== undefined) for (const id of ids) reads.delete(readKey(tenant, type, id))
    })

  /** The unit writes records it does not name (a purge, a prune): it forgets every read. */
  const forgetAll = Effect.map(unitReads, (reads) => reads?.clear())

  // --- the port -------------------------------------------------------------------------------

  // Inside a unit of work, a record already read there is not asked for again (a batch's items
  // read their showcase, the account's plan: once per unit instead of once per item).
  const get = Effect.fnUntraced(function*(tenant: Tenant, type: string, id: string) {
    yield* sendAppends(type)
    const reads = yield* unitReads
    const key = readKey(tenant, type, id)
    if (reads?.has(key)) return reads.get(key)
    const rows = yield* unavailable(sql<RecordRow>`${prepared}SELECT ${columns} FROM records WHERE ${recordKey(tenant, type, id)}`)
    const record = rows[0] === undefined ? undefined : toRecord(rows[0])
    reads?.set(key, record)
    return record
  })

  const getMany = Effect.fnUntraced(function*(tenant: Tenant, type: string, ids: ReadonlyArray<string>) {
    if (ids.length === 0) return []
    yield* sendAppends(type)
    const rows = yield* unavailable(sql<RecordRow>`${prepared}
      SELECT ${columns} FROM records
      WHERE account_id = ${tenant.accountId} AND environment = ${tenant.environment} AND ${ofType(type)}
        AND id = ANY(${[...new Set(ids)]}::text[])`)
    return rows.map(toRecord)
  })

  const findUnique = Effect.fnUntraced(function*(
    tenant: Tenant | "global",
    type: string,
    key: { readonly name: string; readonly value: string }
  ) {
    yield* sendAppends(type)
    const rows = yield* unavailable(sql<RecordRow>`${prepared}
      SELECT r.account_id, r.environment, r.type, r.id, r.revision, r.data
      FROM record_keys k
      JOIN records r USING (account_id, environment, type, id)
      WHERE ${keyLookup(tenant)} AND k.type = ${type} AND ${ofType(type, "r")} AND k.name = ${key.name} AND k.value = ${key.value}`)
    return rows[0] === undefined ? undefined : toRecord(rows[0])
  })

  // The record of a key and its account's, joined on the account's primary key: one round trip.
  const findUniqueWithAccount = Effect.fnUntraced(function*(
    tenant: Tenant | "global",
    type: string,
    key: { readonly name: string; readonly value: string },
    owner: { readonly type: string; readonly environment: Environment }
  ) {
    yield* sendAppends(type)
    const rows = yield* unavailable(sql<RecordRow & { readonly account_revision: number | null; readonly account_data: JsonObject | null }>`${prepared}
      SELECT r.account_id, r.environment, r.type, r.id, r.revision, r.data, a.revision AS account_revision, a.data AS account_data
      FROM record_keys k
      JOIN records r USING (account_id, environment, type, id)
      LEFT JOIN records a
        ON a.account_id = r.account_id AND a.environment = ${owner.environment} AND ${ofType(owner.type, "a")} AND a.id = r.account_id
      WHERE ${keyLookup(tenant)} AND k.type = ${type} AND ${ofType(type, "r")} AND k.name = ${key.name} AND k.value = ${key.value}`)
    const row = rows[0]
    if (row === undefined) return undefined
    const account: StoredRecord | undefined = row.account_data === null
      ? undefined
      : {
        type: owner.type,
        id: row.account_id,
        tenant: { accountId: row.account_id, environment: owner.environment },
        revision: toNumber(row.account_revision),
        data: row.account_data
      }
    return { record: toRecord(row), account }
  })

  const insert = Effect.fnUntraced(function*(
    tenant: Tenant,
    type: string,
    id: string,
    data: JsonObject,
    uniques?: ReadonlyArray<UniqueKey>
  ) {
    const text = JSON.stringify(data)
    yield* forget(tenant, type, [id])
    // A record of a stream (an audit entry, an event) written by a unit of work goes with the
    // unit's other appends, in one statement (`Pg.appendLater`): as stored, without asking.
    if (streamOf(type) !== undefined && (uniques === undefined || uniques.length === 0) &&
      (yield* appendLater({ tenant, type, id, data: text }))) {
      return { tenant: { accountId: tenant.accountId, environment: tenant.environment }, type, id, revision: 1, data: JSON.parse(text) as JsonObject }
    }
    const insertRow = sql<RecordRow>`${prepared}
      INSERT INTO records (account_id, environment, type, id, revision, data)
      VALUES (${tenant.accountId}, ${tenant.environment}, ${type}, ${id}, 1, ${text}::jsonb)
      ON CONFLICT DO NOTHING
      RETURNING ${columns}`.pipe(
      unavailable,
      Effect.flatMap((rows) =>
        rows[0] === undefined ? Effect.fail(new UniqueViolation({ name: "id" })) : Effect.succeed(toRecord(rows[0]))
      )
    )
    if (uniques === undefined || uniques.length === 0) return yield* insertRow
    // Inside a unit of work, the record and its keys in one statement, no savepoint: a taken
    // key removes the record again in the same transaction, where no one else has seen it.
    // Outside one, a transaction of their own, so that no reader sees the record keyless.
    const inUnit = Option.isSome(yield* Effect.serviceOption(SqlClient.TransactionConnection))
    return yield* inUnit ? insertWithKeys(tenant, type, id, data, uniques) : transaction(insertWithKeys(tenant, type, id, data, uniques))
  })

  /**
   * A record and its unique keys in one round trip: the keys are inserted only with the record,
   * each unless taken (`ON CONFLICT DO NOTHING`); when one was taken, the record is deleted
   * again with the keys it took, and the first taken key in the caller's order is the failure.
   * Runs inside a transaction: the delete must undo the insert before anyone else can see it.
   */
  const insertWithKeys = (tenant: Tenant, type: string, id: string, data: JsonObject, uniques: ReadonlyArray<UniqueKey>) => {
    const distinct = insertOrder(uniques)
    return sql<RecordRow & { readonly keys: ReadonlyArray<KeyRow> }>`${prepared}
      WITH inserted AS (
        INSERT INTO records (account_id, environment, type, id, revision, data)
        VALUES (${tenant.accountId}, ${tenant.environment}, ${type}, ${id}, 1, ${JSON.stringify(data)}::jsonb)
        ON CONFLICT DO NOTHING
        RETURNING ${columns}
      ), keys AS (
        INSERT INTO record_keys (account_id, environment, type, id, name, value, global)
        SELECT ${tenant.accountId}, ${tenant.environment}, ${type}, ${id}, k.name, k.value, k.global
        FROM ${keyRows(distinct)}
        WHERE EXISTS (SELECT 1 FROM inserted)
        ON CONFLICT DO NOTHING
        RETURNING name, value, global
      )
      SELECT ${columns}, (SELECT coalesce(json_agg(json_build_object('name', name, 'value', value, 'global', global)), '[]'::json) FROM keys) AS keys
      FROM inserted`.pipe(
      unavailable,
      Effect.flatMap((rows) => {
        const row = rows[0]
        if (row === undefined) return Effect.fail(new UniqueViolation({ name: "id" }))
        const taken = firstTaken(uniques, row.keys)
        if (taken === undefined) return Effect.succeed(toRecord(row))
        return unavailable(removeStatement(tenant, type, id)).pipe(
          Effect.zipRight(Effect.fail(new UniqueViolation({ name: taken.name })))
        )
      })
    )
  }

  /** Rows per statement of `insertMany`: one parameter (a JSON array) each, whatever the count. */
  const insertManyRows = 500

  const insertMany = Effect.fnUntraced(function*(
    tenant: Tenant,
    type: string,
    rows: ReadonlyArray<{ readonly id: string; readonly data: JsonObject }>
  ) {
    if (rows.length === 0) return []
    yield* forget(tenant, type, rows.map((row) => row.id))
    /**
     * The rows of `part` in one statement. `alone` (outside a unit of work, the call's only
     * statement: the request log's group commit) it is atomic on its own and needs no
     * transaction (BEGIN and COMMIT would be two round trips more): a taken id fails it whole
     * (`unique_violation`). Inside a transaction a conflict inserts the others, and the
     * savepoint takes them back.
     */
    const statement = (part: ReadonlyArray<{ readonly id: string; readonly data: JsonObject }>, alone = false) =>
      sql<RecordRow>`${prepared}
        INSERT INTO records (account_id, environment, type, id, revision, data)
        SELECT ${tenant.accountId}, ${tenant.environment}, ${type}, row.id, 1, row.data
        FROM jsonb_to_recordset(${JSON.stringify(part)}::jsonb) AS row(id text, data jsonb)
        ${alone ? sql`` : sql`ON CONFLICT DO NOTHING`}
        RETURNING ${columns}`.pipe(
        unavailable,
        Effect.catchIf((error) => sqlStateOf(error) === "23505", () => Effect.fail(new UniqueViolation({ name: "id" }))),
        Effect.flatMap((inserted) =>
          inserted.length < part.length
            ? Effect.fail(new UniqueViolation({ name: "id" }))
            : Effect.succeed(inserted.map(toRecord))
        )
      )
    const parts: Array<ReadonlyArray<{ readonly id: string; readonly data: JsonObject }>> = []
    for (let start = 0; start < rows.length; start += insertManyRows) parts.push(rows.slice(start, start + insertManyRows))
    if (parts.length === 1 && Option.isNone(yield* Effect.serviceOption(SqlClient.TransactionConnection))) {
      return yield* statement(parts[0]!, true)
    }
    return yield* transaction(Effect.map(Effect.forEach(parts, (part) => statement(part)), (inserted) => inserted.flat()))
  })

  const update = Effect.fnUntraced(function*(
    tenant: Tenant,
    type: string,
    id: string,
    data: JsonObject,
    options?: {
      readonly expectedRevision?: number | undefined
      readonly uniques?: ReadonlyArray<UniqueKey> | undefined
    }
  ) {
    const expected = options?.expectedRevision
    const uniques = options?.uniques
    yield* sendAppends(type)
    yield* forget(tenant, type, [id])
    // One conditional UPDATE: concurrent writers with the same expected revision are
    // serialized by the row lock, and all but the first see the new revision and miss.
    const updateRow = sql<RecordRow>`${prepared}
      UPDATE records SET data = ${JSON.stringify(data)}::jsonb, revision = revision + 1
      WHERE ${recordKey(tenant, type, id)}${expected === undefined ? sql`` : sql` AND revision = ${expected}`}
      RETURNING ${columns}`.pipe(
      unavailable,
      Effect.flatMap((rows) => {
        if (rows[0] !== undefined) return Effect.succeed(toRecord(rows[0]))
        // Read again (a fresh snapshot) to report the revision that won.
        return sql<{ readonly revision: number }>`${prepared}SELECT revision FROM records WHERE ${recordKey(tenant, type, id)}`.pipe(
          unavailable,
          Effect.flatMap((current) =>
            Effect.fail(new RevisionConflict({ current: current[0] === undefined ? null : toNumber(current[0].revision) }))
          )
        )
      })
    )
    if (uniques === undefined) return yield* updateRow
    return yield* transaction(
      Effect.tap(updateRow, () =>
        sql`${prepared}DELETE FROM record_keys WHERE ${recordKey(tenant, type, id)}`.pipe(
          unavailable,
          Effect.zipRight(addKeys(tenant, type, id, uniques))
        ))
    )
  })

  // One upsert: the row lock makes concurrent increments of a record wait on each other, and
  // each adds to what the one before it committed (numbers as `numeric`: exact sums).
  const increment = (tenant: Tenant, type: string, id: string, fields: JsonObject, deltas: Readonly<Record<string, number>>) =>
    Effect.zipRight(Effect.zipRight(sendAppends(type), forget(tenant, type, [id])), sql`${prepared}
      INSERT INTO records (account_id, environment, type, id, revision, data)
      VALUES (${tenant.accountId}, ${tenant.environment}, ${type}, ${id}, 1, ${JSON.stringify(fields)}::jsonb || ${JSON.stringify(deltas)}::jsonb)
      ON CONFLICT (account_id, environment, type, id) DO UPDATE SET
        revision = records.revision + 1,
        data = records.data || (
          SELECT jsonb_object_agg(delta.key, COALESCE(
            CASE WHEN jsonb_typeof(records.data -> delta.key) = 'number' THEN (records.data ->> delta.key)::numeric END, 0
          ) + delta.value::numeric)
          FROM jsonb_each_text(${JSON.stringify(deltas)}::jsonb) AS delta
        )`.pipe(unavailable, Effect.asVoid))

  const remove = Effect.fnUntraced(function*(tenant: Tenant, type: string, id: string) {
    yield* sendAppends(type)
    yield* forget(tenant, type, [id])
    const rows = yield* unavailable(removeStatement(tenant, type, id))
    return rows.length > 0
  })

  const list = Effect.fnUntraced(function*(tenant: Tenant, type: string, query: ListQuery) {
    yield* checkFields([...query.where.map((where) => where.field), query.sort.field])
    yield* sendAppends(type)
    const rows = yield* read(statements.list(tenant, type, query))
    return rows.map(toRecord)
  })

  const scan = Effect.fnUntraced(function*(type: string, where: ReadonlyArray<Where>, limit: number) {
    yield* checkFields(where.map((w) => w.field))
    yield* sendAppends(type)
    const rows = yield* unavailable(statements.scan(type, where, limit))
    return rows.map(toRecord)
  })

  const count = Effect.fnUntraced(function*(
    tenant: Tenant,
    type: string,
    where: ReadonlyArray<Where>,
    groupBy: ReadonlyArray<string>
  ) {
    yield* checkFields([...where.map((w) => w.field), ...groupBy])
    yield* sendAppends(type)
    if (groupBy.length === 0) {
      const rows = yield* read(
        sql<{ readonly count: number }>`SELECT count(*) AS count FROM records WHERE ${filter(tenant, type, where)}`
      )
      return [{ key: [], count: toNumber(rows[0]?.count ?? 0) }]
    }
    // Missing and JSON null are one group (`json`). Grouped and ordered by position.
    const keys = groupBy.map((field, i) => sql`${json(field)} AS ${sql(`k${i}`)}`)
    const positions = sql.literal(groupBy.map((_, i) => String(i + 1)).join(", "))
    const rows = yield* read(sql<Record<string, Json>>`
      SELECT ${sql.csv(keys)}, count(*) AS count
      FROM records WHERE ${filter(tenant, type, where)}
      GROUP BY ${positions} ORDER BY ${positions}`)
    return rows.map((row): GroupCount => ({
      key: groupBy.map((_, i) => row[`k${i}`] ?? null),
      count: toNumber(row["count"])
    }))
  })

  const aggregate = Effect.fnUntraced(function*(tenant: Tenant, type: string, query: AggregateQuery) {
    yield* checkFields(aggregateFields(query))
    yield* sendAppends(type)
    const rows = yield* read(statements.aggregate(tenant, type, query))
    const number = (value: Json | undefined): number | null =>
      value === null || value === undefined ? null : toNumber(value)
    return rows.map((row): AggregateRow => ({
      key: query.groupBy.map((_, i) => row[`k${i}`] ?? null),
      values: query.measures.map((measure, i) => {
        const value = number(row[`m${i}`])
        if (measure.kind !== "avg") return value
        const count = number(row[`c${i}`]) ?? 0
        return value === null || count === 0 ? null : value / count
      })
    }))
  })

  const purge = Effect.fnUntraced(function*(tenant: Tenant, keepTypes: ReadonlyArray<string>) {
    yield* sendAppends()
    yield* forgetAll
    const rows = yield* unavailable(sql<{ readonly count: number }>`
      WITH removed AS (
        DELETE FROM records
        WHERE account_id = ${tenant.accountId} AND environment = ${tenant.environment}
          AND NOT (type = ANY(${[...keepTypes]}::text[]))
        RETURNING 1
      ), keys AS (
        DELETE FROM record_keys
        WHERE account_id = ${tenant.accountId} AND environment = ${tenant.environment}
          AND NOT (type = ANY(${[...keepTypes]}::text[]))
      )
      SELECT count(*) AS count FROM removed`)
    return toNumber(rows[0]?.count ?? 0)
  })

  // A stream kept by week (streams.ts): the weeks past `before` dropped whole, then the rows
  // of its default partition one by one; a week still in retention keeps its rows until it goes.
  const pruneStream = (type: string, field: string, before: string, limit: number) =>
    transaction(Effect.provideService(maintainStream(type, Date.parse(before)), SqlClient.SqlClient, sql)).pipe(
      Effect.catchAll((error) =>
        Effect.as(Effect.logWarning(`retention of ${type}: its weeks are left to the next pass`, error), Option.some(0))
      ),
      Effect.flatMap(Option.match({
        onNone: () => Effect.succeed(Option.none<number>()),
        onSome: (dropped) =>
          Effect.map(unavailable(statements.prune(type, field, before, limit, streamDefaultLeaf(type))), (rows) =>
            Option.some(dropped + toNumber(rows[0]?.count ?? 0)))
      }))
    )

  const prune = Effect.fnUntraced(function*(type: string, field: string, before: string, limit: number) {
    yield* checkFields([field])
    yield* sendAppends(type)
    yield* forgetAll
    if (field === "created_at" && streamOf(type) !== undefined) {
      const pruned = yield* pruneStream(type, field, before, limit)
      if (Option.isSome(pruned)) return pruned.value
    }
    const rows = yield* unavailable(statements.prune(type, field, before, limit))
    return toNumber(rows[0]?.count ?? 0)
  })

  return { groupCommit: true, get, getMany, findUnique, findUniqueWithAccount, insert, insertMany, update, remove, increment, list, count, aggregate, scan, purge, prune }
}
