/**
 * Kept figures: counts and sums over the records of a type, grouped by one of their fields,
 * kept up to date by every write of those records instead of computed over them when asked.
 * A report whose groups hold millions of records (the progress of a lesson, the enrollments
 * of a product) reads a few figure records per group rather than every record of the group.
 *
 * - A declaration (`KeptFigures`) names the counted type, the field grouping it and the
 *   measures: each the number one record contributes (1 or 0 for a count, a field's value for
 *   a sum), a pure function of the record's data. A record counts in one group (its `groupBy`
 *   value) or, with `groups`, in several (a sales event in each of its products).
 * - `keepingFigures` wraps a store's `Records`: a write of a counted record (insert, insertMany,
 *   update, remove) adds the difference it makes (what the record contributes now, less what
 *   it contributed before) to its group's figures, in the same unit of work as the write. A
 *   write that changes no measure writes no figure.
 * - A group's figures are spread over `shards` records (`<group>.<shard>`, the shard chosen by
 *   the counted record's ID), so that concurrent writes of one popular group (learners of one
 *   course) rarely wait on the same row; a reader sums the group's shards (`Records.aggregate`).
 *   Figures are additive, so a contribution may sit in any shard: only the sums mean anything.
 * - `prune` of a counted type is a defect (retention would leave the figures behind): it dies.
 */
import { Effect } from "effect"
import { type JsonObject, type Records, type StoredRecord, type Tenant, type UnitOfWork } from "../ports/store.js"

export interface KeptFigures {
  /** The type of the figure records (internal: never served as a resource). */
  readonly type: string
  /** The type whose records are counted. */
  readonly of: string
  /** The field of a counted record that names its group; also a field of each figure record. */
  readonly groupBy: string
  /**
   * The groups a counted record belongs to, when not the single `groupBy` value: e.g. a sales
   * event counts in each of its `product_ids`. Each group gets the record's whole contribution.
   */
  readonly groups?: (data: JsonObject) => ReadonlyArray<string>
  /** Figure records per group. */
  readonly shards: number
  /** Each measure: what one record with this data adds to the group's figure of that name. */
  readonly measures: Readonly<Record<string, (data: JsonObject) => number>>
}

type Contribution = { readonly group: string; readonly values: Readonly<Record<string, number>> }

const groupsOf = (figures: KeptFigures, data: JsonObject): ReadonlyArray<string> => {
  if (figures.groups !== undefined) return [...new Set(figures.groups(data))]
  const group = data[figures.groupBy]
  return typeof group === "string" ? [group] : []
}

const contributionsOf = (figures: KeptFigures, data: JsonObject | undefined): ReadonlyArray<Contribution> => {
  if (data === undefined) return []
  const values: Record<string, number> = {}
  for (const [name, measure] of Object.entries(figures.measures)) values[name] = measure(data)
  return groupsOf(figures, data).map((group) => ({ group, values }))
}

/** The shard of a counted record: a stable hash of its ID (FNV-1a), modulo the shards. */
export const figureShard = (id: string, shards: number): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0
  return hash % shards
}

/** The ID of a group's figure record in a shard. */
export const figureId = (group: string, shard: number): string => `${group}.${shard}`

/**
 * The changes to figure records that moving counted records from `before` to `after` (each a
 * record's data, `undefined` when it does not exist on that side) makes: per figure record,
 * the non-zero differences.
 */
export const figureChanges = (
  figures: KeptFigures,
  moves: ReadonlyArray<{ readonly id: string; readonly before: JsonObject | undefined; readonly after: JsonObject | undefined }>
): ReadonlyArray<{ readonly id: string; readonly group: string; readonly deltas: Readonly<Record<string, number>> }> => {
  const changes = new Map<string, { id: string; group: string; deltas: Record<string, number> }>()
  const add = (recordId: string, contributions: ReadonlyArray<Contribution>, sign: 1 | -1) => {
    for (const contribution of contributions) addOne(recordId, contribution, sign)
  }
  const addOne = (recordId: string, contribution: Contribution, sign: 1 | -1) => {
    const id = figureId(contribution.group, figureShard(recordId, figures.shards))
    const change = changes.get(id) ?? { id, group: contribution.group, deltas: {} }
    for (const [name, value] of Object.entries(contribution.values)) change.deltas[name] = (change.deltas[name] ?? 0) + sign * value
    changes.set(id, change)
  }
  for (const move of moves) {
    add(move.id, contributionsOf(figures, move.before), -1)
    add(move.id, contributionsOf(figures, move.after), 1)
  }
  return [...changes.values()].flatMap((change) => {
    const deltas = Object.fromEntries(Object.entries(change.deltas).filter(([, value]) => value !== 0))
    return Object.keys(deltas).length === 0 ? [] : [{ ...change, deltas }]
  })
}

/** Records read per page by a recount. */
const RECOUNT_PAGE = 1_000

/**
 * A tenant's figures computed again from the records they count, in the caller's unit of work:
 * for records that were written before the figures were declared (a database from an earlier
 * release) or loaded around the store. It reads every counted record of the tenant, in pages by
 * ID: an operator's step (`setPlanLimits`), never a request's.
 */
export const recountFigures = (records: Records["Type"], tenant: Tenant, figures: KeptFigures) =>
  Effect.gen(function* () {
    const totals = new Map<string, { group: string; values: Record<string, number> }>()
    let after: { readonly value: string; readonly id: string } | undefined
    for (;;) {
      const page = yield* records.list(tenant, figures.of, {
        where: [],
        sort: { field: "id", kind: "text", direction: "asc" },
        after,
        limit: RECOUNT_PAGE
      })
      for (const change of figureChanges(figures, page.map((record) => ({ id: record.id, before: undefined, after: record.data })))) {
        const total = totals.get(change.id) ?? { group: change.group, values: {} }
        for (const [name, value] of Object.entries(change.deltas)) total.values[name] = (total.values[name] ?? 0) + value
        totals.set(change.id, total)
      }
      const last = page.at(-1)
      if (page.length < RECOUNT_PAGE || last === undefined) break
      after = { value: last.id, id: last.id }
    }
    // The figure records as they stand (a few per group), replaced by the totals.
    let stale: { readonly value: string; readonly id: string } | undefined
    for (;;) {
      const page = yield* records.list(tenant, figures.type, { where: [], sort: { field: "id", kind: "text", direction: "asc" }, after: stale, limit: RECOUNT_PAGE })
      yield* Effect.forEach(page, (record) => records.remove(tenant, figures.type, record.id), { discard: true })
      const last = page.at(-1)
      if (page.length < RECOUNT_PAGE || last === undefined) break
      stale = { value: last.id, id: last.id }
    }
    const zeros = Object.fromEntries(Object.keys(figures.measures).map((name) => [name, 0]))
    yield* Effect.forEach(
      totals,
      ([id, total]) => records.insert(tenant, figures.type, id, { [figures.groupBy]: total.group, ...zeros, ...total.values }),
      { discard: true }
    )
  })

/**
 * `records` keeping `declared` up to date. `atomically` makes each counted write and its
 * figures one: the caller's unit of work, joined as it is (no savepoint: a failure of the
 * write or of its figures is the unit's, which a caller does not recover from), or a unit of
 * work of its own for a write made outside one.
 */
export const keepingFigures = (
  records: Records["Type"],
  atomically: UnitOfWork["Type"]["transaction"],
  declared: ReadonlyArray<KeptFigures>
): Records["Type"] => {
  if (declared.length === 0) return records
  const byType = new Map<string, ReadonlyArray<KeptFigures>>()
  for (const figures of declared) byType.set(figures.of, [...(byType.get(figures.of) ?? []), figures])

  const keep = (tenant: Tenant, type: string, moves: ReadonlyArray<{ readonly id: string; readonly before: JsonObject | undefined; readonly after: JsonObject | undefined }>) =>
    Effect.forEach(
      byType.get(type) ?? [],
      (figures) => {
        // A figure record starts with every measure at 0 (then the first deltas).
        const zeros = Object.fromEntries(Object.keys(figures.measures).map((name) => [name, 0]))
        return Effect.forEach(
          figureChanges(figures, moves),
          (change) => records.increment(tenant, figures.type, change.id, { [figures.groupBy]: change.group, ...zeros }, change.deltas),
          { discard: true }
        )
      },
      { discard: true }
    )

  const counted = (type: string) => byType.has(type)

  return {
    ...records,
    insert: (tenant, type, id, data, uniques) =>
      counted(type)
        ? atomically(Effect.tap(records.insert(tenant, type, id, data, uniques), (record) =>
          keep(tenant, type, [{ id, before: undefined, after: record.data }])))
        : records.insert(tenant, type, id, data, uniques),
    insertMany: (tenant, type, rows) =>
      counted(type)
        ? atomically(Effect.tap(records.insertMany(tenant, type, rows), (inserted) =>
          keep(tenant, type, inserted.map((record) => ({ id: record.id, before: undefined, after: record.data })))))
        : records.insertMany(tenant, type, rows),
    update: (tenant, type, id, data, options) =>
      counted(type)
        ? atomically(Effect.gen(function* () {
          const before: StoredRecord | undefined = yield* records.get(tenant, type, id)
          const after = yield* records.update(tenant, type, id, data, options)
          yield* keep(tenant, type, [{ id, before: before?.data, after: after.data }])
          return after
        }))
        : records.update(tenant, type, id, data, options),
    remove: (tenant, type, id) =>
      counted(type)
        ? atomically(Effect.gen(function* () {
          const before = yield* records.get(tenant, type, id)
          const removed = yield* records.remove(tenant, type, id)
          if (removed) yield* keep(tenant, type, [{ id, before: before?.data, after: undefined }])
          return removed
        }))
        : records.remove(tenant, type, id),
    // Retention removes records in bulk, out of sight of their figures: never of a counted type.
    prune: (type, field, before, limit) =>
      counted(type) ? Effect.die(new Error(`prune of ${type}, whose figures are kept`)) : records.prune(type, field, before, limit)
  }
}
