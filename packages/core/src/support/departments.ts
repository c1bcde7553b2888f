/**
 * Support departments (`dpt_`, release 3.2.0, open-points route `/support/departments`): the
 * teams a ticket is routed to (Zendesk's groups, Help Scout's mailboxes). Decisions (also in
 * docs/support.md and the OpenAPI description):
 *
 * - A help centre shows its departments in the account's order: `position` is 1-based and
 *   dense among the non-trashed departments; a new or restored one comes last, the trash
 *   closes the gap, `PUT /support/departments/order` rearranges (the exact set, else 422
 *   `order_set_mismatch`). A department moved by another one's change gets a new revision and
 *   the event `department.reordered`.
 * - Trash: a trashed department keeps the tickets routed to it (their `department_id` stays),
 *   but no new ticket can name it (422 on `department_id`, reason `not_found`).
 *
 * The positions helpers here (`arrangedSet`) serve the FAQs too: a single item's rule counts
 * through the index and moves only the records after it, never reading the whole set; only the
 * reorder, which names the whole set, reads it.
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { readUnavailable } from "../errors/errors.js"
import { contends, Records, type StoredRecord, type Where } from "../ports/store.js"
import {
  defineResource,
  inRequestedOrder,
  recordResourceChange,
  type ResourceDefinition,
  resourceView,
  saveResource
} from "../records/resource.js"
import { List, PublicId, Text } from "../records/schema.js"

export const DEPARTMENT_TYPE = "department"

/** More than any arranged set may hold (an order names at most 1,000 IDs, §8.2). */
const ARRANGED_MAX = 10_000

/** An email address (plain text, at most 254 characters). */
export const SupportEmailAddress = Text({ min: 3, max: 254 }).pipe(
  Schema.filter((s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s) || "invalid_value|expected=an email address"),
  Schema.annotations({ jsonSchema: { type: "string", format: "email", maxLength: 254 } })
)

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

/**
 * The dense 1-based order of a top-level resource's non-trashed records (`position`): how many
 * there are (an index count), the records after a position (an index range), the gap a trashed
 * one leaves closed, and the reorder of the whole set.
 */
export const arrangedSet = (type: string, definition: () => ResourceDefinition) => {
  const live: ReadonlyArray<Where> = [{ field: "deleted", op: "eq", value: false }]

  /** A write that reads the order to place or move a record: concurrent ones meet there (`contends`). */
  const meet = Effect.flatMap(Caller, (caller) => contends(caller.tenant, `${type}/order`))

  /** Non-trashed records, counted through the index of `deleted`. */
  const count = Effect.gen(function* () {
    yield* meet
    const caller = yield* Caller
    const records = yield* Records
    const groups = yield* records.count(caller.tenant, type, live, []).pipe(Effect.mapError(readUnavailable))
    return groups[0]?.count ?? 0
  })

  /** Non-trashed records by position, from `after` on (exclusive; 0: all). */
  const byPosition = (after: number) =>
    Effect.gen(function* () {
      yield* meet
      const caller = yield* Caller
      const records = yield* Records
      return yield* records
        .list(caller.tenant, type, {
          where: [...live, { field: "position", op: "gt", value: after }],
          sort: { field: "position", kind: "number", direction: "asc" },
          limit: ARRANGED_MAX
        })
        .pipe(Effect.mapError(readUnavailable))
    })

  /** Save a record at a new position because another one moved, with its event `<type>.reordered`. */
  const reposition = (record: StoredRecord, position: number) =>
    Effect.gen(function* () {
      const saved = yield* saveResource(definition(), record, { ...record.data, position }, undefined)
      yield* recordResourceChange(definition(), "reordered", resourceView(definition(), saved), resourceView(definition(), record))
      return saved
    })

  /** After a trash: the records after it move up one, so positions stay 1..n. */
  const closeGap = (record: StoredRecord) =>
    Effect.gen(function* () {
      const after = yield* byPosition(Number(record.data.position))
      yield* Effect.forEach(after, (other) => reposition(other, Number(other.data.position) - 1), { discard: true })
    })

  /**
   * `ids` must be exactly the non-trashed records, each once (else 422 `order_set_mismatch`,
   * itemized, nothing changes); they take positions 1..n in that order. Answers them in order.
   */
  const order = (ids: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const ordered = yield* inRequestedOrder(ids, yield* byPosition(0))
      return yield* Effect.forEach(ordered, (record, index) =>
        record.data.position === index + 1 ? Effect.succeed(record) : reposition(record, index + 1)
      )
    })

  return { count, closeGap, order }
}

const arranged = arrangedSet(DEPARTMENT_TYPE, () => departments)

export const departments: ResourceDefinition = defineResource({
  type: DEPARTMENT_TYPE,
  idKind: "department",
  plural: "departments",
  path: "/support/departments",
  tag: "Support",
  fields: {
    name: Schema.String,
    description: Schema.NullOr(Schema.String).annotations({ description: "Plain text shown to whoever opens a ticket, or null." }),
    email: Schema.NullOr(Schema.String).annotations({ description: "The team's address (shown to agents; replies still come from the account's email settings), or null." }),
    position: Schema.Int.annotations({
      description: "1-based place among the non-trashed departments. A new or restored department comes last; `PUT /support/departments/order` rearranges."
    })
  },
  create: Schema.Struct({
    name: Text({ min: 1, max: 200 }),
    description: optional(Schema.NullOr(Text({ max: 2000 }))),
    email: optional(Schema.NullOr(SupportEmailAddress))
  }),
  update: Schema.Struct({
    name: optional(Text({ min: 1, max: 200 })),
    description: optional(Schema.NullOr(Text({ max: 2000 }))),
    email: optional(Schema.NullOr(SupportEmailAddress))
  }),
  defaults: (body) =>
    Effect.map(arranged.count, (count) => ({
      name: body.name,
      description: body.description ?? null,
      email: body.email ?? null,
      position: count + 1
    })),
  change: (current, patch) =>
    Effect.gen(function* () {
      const next = { ...current, ...(patch as object) }
      // A department restored from the trash comes last.
      return current.deleted === true ? { ...next, position: (yield* arranged.count) + 1 } : next
    }),
  rules: { afterDelete: (record) => arranged.closeGap(record) },
  trash: true,
  revision: "string",
  sorts: [
    { name: "position", field: "position", kind: "number" },
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  search: ["name"],
  // Served by `@syllabus/http` routes/support.ts, with the reorder and their own words.
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

export const DepartmentOrderBody = Schema.Struct({
  ids: List(PublicId("department")).annotations({ description: "Every non-trashed department, each once, in the new order." })
}).annotations({ identifier: "DepartmentOrderBody" })

/** `PUT /support/departments/order`: the departments in the order given (`arrangedSet.order`). */
export const orderDepartments = (ids: ReadonlyArray<string>) => arranged.order(ids)
