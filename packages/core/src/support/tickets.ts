/**
 * Support tickets (`tkt_`, §2.3 `ticket`, §4.3 `POST /support/tickets`; open-points routes
 * `/support/tickets`, `/{id}`, `/{id}/messages`) and their messages (`tkm_`). Decisions where
 * the contract is silent (also in docs/support.md and the OpenAPI description), after Zendesk
 * and Help Scout:
 *
 * - `POST /support/tickets`: `subject`, `user_id`, `message { text }` required; `department_id`,
 *   `product_id` optional. A user, department or product the credential cannot reach is 422
 *   `validation_failed` on that field, reason `not_found`: it must exist in the account, not be
 *   trashed, and be readable with the credential (`users.read`, `departments.read`,
 *   `products.read`, for that ID when the grant is resource-limited); whether it exists is not
 *   told apart. The opening message is attributed to the calling credential (§2.3), not to the
 *   ticket's user.
 * - Anonymous tickets: a visitor without an account (a contact form, an email). `user_id` is
 *   still required but may be `null`, and then `anonymous { name, email, document?, whatsapp? }`
 *   is required (422 on `anonymous`, reason `required_without_user`); with a user, `anonymous`
 *   must be absent or null (422 on `anonymous`, reason `conflicts_with_user`). The ticket's
 *   `user` is then null and `anonymous` holds the visitor's contact.
 * - Status (§3 names `open`): a closed enum `open`, `pending` (waiting on the requester),
 *   `solved`, `closed` (final). PATCH moves open ↔ pending, open/pending → solved, solved → open
 *   (reopen), any but closed → closed; any other change is 422 `invalid_transition` on `status`
 *   (reason `from_<status>`). A closed ticket takes no change at all (409 `state_conflict`,
 *   reason `ticket_closed`), nor messages. A requester's message reopens a pending or solved
 *   ticket.
 * - Messages are a sub-collection, oldest first, never edited or removed (the record of the
 *   conversation): `from` `agent` (default; attributed to the calling credential) or
 *   `requester` (written on the requester's behalf, e.g. relayed from their email). The opening
 *   message has `opening: true`; every later one is a reply. `replies_count` and
 *   `last_reply_at` are kept in the unit of work of each message, with a new ticket revision
 *   (no ticket event of their own: `ticket_message.created` says what happened; a reopening by
 *   the requester is also `ticket.updated`).
 * - When support is off (settings group `support`, `enabled` false), opening a ticket and adding
 *   a message answer 409 `feature_disabled`; reads, status changes and the trash stay.
 * - Personal data (§5), as on users: `user.email` and the visitor's `email`, `document` and
 *   `whatsapp` are null unless the credential holds `users.read_personal` (for that user; for a
 *   visitor, on every user); names are shown.
 * - Trash: a trashed ticket is not found, nor are its messages; `PATCH deleted=false` restores.
 * - Figures for `/reports/support` are kept on the ticket as hidden fields, so the store
 *   aggregates them: `first_reply_seconds` (from opening to the first agent reply), `solved_at`
 *   (the latest solution; cleared on reopening).
 */
import { Clock, Effect, Schema } from "effect"
import { Caller, Ids } from "../access/context.js"
import { allows } from "../access/policies.js"
import { apiError, type DetailItem, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { USER_TYPE, users } from "../people/people-users.js"
import { personalView } from "../access/scope.js"
import { type Json, type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import {
  createResource,
  defineResource,
  equalsFilter,
  type ParentDefinition,
  recordResourceChange,
  referenceProblems,
  requireReference,
  type ResourceDefinition,
  resourceView
} from "../records/resource.js"
import { products } from "../catalog/products.js"
import { Enum, PublicId, RichText, Text } from "../records/schema.js"
import { formatTimestamp } from "../records/time.js"
import { settingValue, supportSettings } from "../site/site-settings.js"
import { departments, DEPARTMENT_TYPE, SupportEmailAddress } from "./departments.js"
import { queueTicketReplyEmail } from "../mail/ticket-notifications.js"

export const TICKET_TYPE = "ticket"
export const TICKET_MESSAGE_TYPE = "ticket_message"
const PRODUCT_TYPE = "product"

export const ticketStatuses = ["open", "pending", "solved", "closed"] as const
type TicketStatus = (typeof ticketStatuses)[number]
const Status = Enum(...ticketStatuses)

/** The moves PATCH allows (§3 leaves them to us): closed is final. */
const transitions: Readonly<Record<TicketStatus, ReadonlyArray<TicketStatus>>> = {
  open: ["pending", "solved", "closed"],
  pending: ["open", "solved", "closed"],
  solved: ["open", "closed"],
  closed: []
}

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

const ticketParent: ParentDefinition = { type: TICKET_TYPE, idKind: "ticket", field: "ticket_id" }

// ---------------------------------------------------------------------------------------
// Rules

/** 409 `feature_disabled` when the support desk is off (settings group `support`). */
export const requireSupportEnabled = Effect.gen(function* () {
  const enabled = yield* settingValue(supportSettings, "enabled")
  if (enabled === false) return yield* Effect.fail(apiError("feature_disabled", { reason: "support_disabled" }))
})

/**
 * The records a ticket names besides its user (department, product): each must be one the caller
 * may read (records/resource.ts, `requireReference`), else 422 on its field, reason `not_found`.
 */
const namedRecordProblems = (data: JsonObject, previous: JsonObject | null) =>
  Effect.map(
    Effect.forEach(
      [["department_id", departments], ["product_id", products]] as const,
      ([field, definition]) => {
        const id = data[field]
        return typeof id !== "string" || (previous !== null && id === previous[field])
          ? Effect.succeed<ReadonlyArray<DetailItem>>([])
          : referenceProblems(definition, [id], () => field)
      }
    ),
    (lists) => lists.flat()
  )

const Anonymous = Schema.Struct({
  name: Text({ min: 1, max: 200 }),
  email: SupportEmailAddress,
  document: optional(Schema.NullOr(Text({ min: 1, max: 64 }))),
  whatsapp: optional(Schema.NullOr(Text({ min: 1, max: 32 })))
}).annotations({ description: "The visitor's contact, for a ticket without a user (`user_id` null): `name` and `email` required." })

const CreateBody = Schema.Struct({
  subject: Text({ min: 1, max: 250 }),
  user_id: Schema.NullOr(PublicId("user")).annotations({
    description: "The requester, a user the credential can read. Required; `null` opens an anonymous ticket, which then needs `anonymous`."
  }),
  message: Schema.Struct({
    text: RichText({ min: 1 }).annotations({ description: "Rich text (HTML), at most 512 KiB." })
  }).annotations({ description: "The opening message, attributed to the calling credential." }),
  department_id: optional(Schema.NullOr(PublicId("department"))),
  product_id: optional(Schema.NullOr(PublicId("product"))),
  anonymous: optional(Schema.NullOr(Anonymous))
})

const UpdateBody = Schema.Struct({
  subject: optional(Text({ min: 1, max: 250 })),
  status: optional(Status.annotations({ description: "A move of the ticket's status; see the ticket's `status`." })),
  department_id: optional(Schema.NullOr(PublicId("department"))),
  product_id: optional(Schema.NullOr(PublicId("product")))
})

/** The `anonymous` object as stored: every key, null where not given. */
const anonymousOf = (value: typeof Anonymous.Type): JsonObject => ({
  document: value.document ?? null,
  email: value.email,
  name: value.name,
  whatsapp: value.whatsapp ?? null
})

const Author = Schema.Struct({
  object: Schema.Literal("credential", "user", "visitor").annotations({
    description: "`credential`: written by an agent through the API (the calling credential); `user`: on behalf of the ticket's user; `visitor`: on behalf of an anonymous ticket's visitor."
  }),
  id: Schema.NullOr(Schema.String).annotations({ description: "The credential's or the user's ID; null for a visitor." })
})

export const tickets: ResourceDefinition = defineResource({
  type: TICKET_TYPE,
  idKind: "ticket",
  plural: "tickets",
  path: "/support/tickets",
  tag: "Support",
  // The requester's email; an anonymous contact's email, document and phone (a person who is no user).
  personal: [
    { path: ["user", "email"], person: ["user", "id"] },
    ...["email", "document", "whatsapp"].map((field) => ({ path: ["anonymous", field], person: null }))
  ],
  fields: {
    department_id: Schema.NullOr(Schema.String).annotations({ description: "The department it is routed to, or null." }),
    product_id: Schema.NullOr(Schema.String).annotations({ description: "The product it is about, or null." }),
    subject: Schema.String,
    status: Schema.Literal(...ticketStatuses).annotations({
      description:
        "Closed enum. Created `open`. Moves: `open` ↔ `pending` (waiting on the requester), `open`/`pending` → `solved`, `solved` → `open` (reopen), any → `closed` (final: no change, no message). A requester's message reopens a `pending` or `solved` ticket. Another move is 422 `invalid_transition`."
    }),
    replies_count: Schema.Int.annotations({ description: "Messages after the opening one, kept with each message (a new ticket revision)." }),
    last_reply_at: Schema.NullOr(Schema.String).annotations({ description: "When the latest reply was written; null before the first." }),
    user: Schema.NullOr(
      Schema.Struct({ id: Schema.String, name: Schema.NullOr(Schema.String), email: Schema.NullOr(Schema.String) })
    ).annotations({
      description:
        "The requester, as the user is now (as when the ticket was opened if the user was removed); null for an anonymous ticket. `email` is personal data (as on users): null unless the credential holds `users.read_personal` for the user."
    }),
    anonymous: Schema.NullOr(
      Schema.Struct({ document: Schema.NullOr(Schema.String), email: Schema.NullOr(Schema.String), name: Schema.NullOr(Schema.String), whatsapp: Schema.NullOr(Schema.String) })
    ).annotations({
      description:
        "The visitor of an anonymous ticket (no user); null otherwise. Personal data but the name: `document`, `email` and `whatsapp` are null unless the credential holds `users.read_personal` on every user."
    })
  },
  create: CreateBody,
  update: UpdateBody,
  defaults: (body) =>
    Effect.gen(function* () {
      yield* requireSupportEnabled
      const problems: Array<DetailItem> = []
      let user: JsonObject | null = null
      if (body.user_id === null) {
        if (body.anonymous == null) problems.push({ field: "anonymous", code: "required", reason: "required_without_user" })
      } else {
        if (body.anonymous != null) problems.push({ field: "anonymous", code: "invalid_value", reason: "conflicts_with_user" })
        const record = yield* Effect.either(requireReference(users, "user_id", body.user_id))
        if (record._tag === "Left") problems.push(...record.left.details)
        else user = { id: record.right.id, name: (record.right.data.name ?? null) as Json, email: (record.right.data.email ?? null) as Json }
      }
      problems.push(...(yield* namedRecordProblems(body as JsonObject, null)))
      if (problems.length > 0) return yield* Effect.fail(apiError("validation_failed", { details: problems }))
      return {
        department_id: body.department_id ?? null,
        product_id: body.product_id ?? null,
        subject: body.subject,
        status: "open",
        replies_count: 0,
        last_reply_at: null,
        user,
        anonymous: body.user_id === null && body.anonymous != null ? anonymousOf(body.anonymous) : null,
        user_id: body.user_id,
        first_reply_seconds: null,
        solved_at: null
      }
    }),
  change: (current, patch, context) =>
    Effect.gen(function* () {
      // A closed ticket takes no change (its restore from the trash sends no field).
      if (current.status === "closed" && Object.keys(patch as JsonObject).length > 0) {
        return yield* Effect.fail(apiError("state_conflict", { reason: "ticket_closed" }))
      }
      const from = current.status as TicketStatus
      const to = patch.status ?? from
      if (to !== from && !transitions[from].includes(to)) {
        return yield* Effect.fail(
          apiError("invalid_transition", { details: [{ field: "status", code: "invalid_transition", reason: `from_${from}` }] })
        )
      }
      const next: Record<string, Json> = { ...current, ...(patch as JsonObject) }
      if (to !== from) next.solved_at = to === "solved" ? formatTimestamp(context.now) : to === "open" ? null : (current.solved_at ?? null)
      return next
    }),
  rules: {
    check: (data, previous) =>
      Effect.gen(function* () {
        // A PATCH naming another department or product: the same rule as the creation's.
        if (previous === null) return
        const problems = yield* namedRecordProblems(data, previous)
        if (problems.length > 0) return yield* Effect.fail(apiError("validation_failed", { details: problems }))
      })
  },
  hidden: ["user_id", "first_reply_seconds", "solved_at"],
  writeErrors: ["invalid_transition", "state_conflict", "feature_disabled"],
  trash: true,
  revision: "string",
  filters: {
    status: equalsFilter("status", Status),
    department_id: equalsFilter("department_id", PublicId("department"), "Tickets routed to this department."),
    user_id: equalsFilter("user_id", PublicId("user"), "Tickets of this requester."),
    product_id: equalsFilter("product_id", PublicId("product"), "Tickets about this product.")
  },
  // Newest first unless `sort` says otherwise.
  defaultReversed: true,
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "last_reply_at", field: "last_reply_at", kind: "text" }
  ],
  search: ["subject"],
  // Served by `@syllabus/http` routes/support.ts: the create writes the opening message, the
  // views hide personal data.
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

// ---------------------------------------------------------------------------------------
// Messages

export const ticketMessages: ResourceDefinition = defineResource({
  type: TICKET_MESSAGE_TYPE,
  idKind: "ticket_message",
  plural: "ticket_messages",
  path: "/support/tickets/{ticket_id}/messages",
  tag: "Support",
  parent: ticketParent,
  fields: {
    text: Schema.String.annotations({ description: "Rich text (HTML), at most 512 KiB." }),
    author: Author,
    opening: Schema.Boolean.annotations({ description: "The ticket's opening message (written by `POST /support/tickets`); every other one is a reply." })
  },
  create: Schema.Struct({
    text: RichText({ min: 1 }).annotations({ description: "Rich text (HTML), at most 512 KiB." }),
    from: optional(
      Enum("agent", "requester").annotations({
        description:
          "`agent` (default): a reply of the calling credential. `requester`: written on behalf of the ticket's user (or visitor), e.g. relayed from their email; it reopens a `pending` or `solved` ticket."
      })
    )
  }),
  update: Schema.Struct({}),
  defaults: (body, context) =>
    Effect.gen(function* () {
      yield* requireSupportEnabled
      const caller = yield* Caller
      const ticket = yield* loadTicket(String(context.parentId))
      if (ticket.data.status === "closed") return yield* Effect.fail(apiError("state_conflict", { reason: "ticket_closed" }))
      const userId = typeof ticket.data.user_id === "string" ? ticket.data.user_id : null
      const author: JsonObject =
        body.from === "requester"
          ? userId === null ? { object: "visitor", id: null } : { object: "user", id: userId }
          : { object: "credential", id: caller.credential.id }
      return { text: body.text, author, opening: false, department_id: ticket.data.department_id ?? null }
    }),
  rules: { afterCreate: (record) => afterReply(record) },
  hidden: ["department_id"],
  // Never edited nor removed: the record of the conversation.
  writes: ["create"],
  writeErrors: ["state_conflict", "feature_disabled"],
  trash: false,
  revision: "string",
  // Oldest first: the conversation's order.
  sorts: [{ name: "created_at", field: "id", kind: "text" }],
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

const loadTicket = (id: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const ticket = yield* records.get(caller.tenant, TICKET_TYPE, id).pipe(Effect.mapError(readUnavailable))
    if (!ticket || ticket.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
    return ticket
  })

/** Save the ticket's kept fields (a new revision, `updated_at`); no event of its own. */
const saveTicket = (ticket: StoredRecord, data: JsonObject) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records
      .update(caller.tenant, TICKET_TYPE, ticket.id, data, { expectedRevision: ticket.revision })
      .pipe(Effect.mapError((e) => (e._tag === "RevisionConflict" ? apiError("revision_mismatch") : writeUnavailable(e))))
  })

/**
 * A reply was written (in its unit of work): `replies_count` and `last_reply_at`, the first
 * agent reply's delay, a requester's message reopening the ticket; then the notification.
 */
const afterReply = (message: StoredRecord) =>
  Effect.gen(function* () {
    const ticket = yield* loadTicket(String(message.data.ticket_id))
    const byAgent = (message.data.author as JsonObject).object === "credential"
    const at = String(message.data.created_at)
    const next: Record<string, Json> = {
      ...ticket.data,
      replies_count: Number(ticket.data.replies_count ?? 0) + 1,
      last_reply_at: at,
      updated_at: at
    }
    if (byAgent && ticket.data.first_reply_seconds == null) {
      next.first_reply_seconds = Math.max(0, Math.round((Date.parse(at) - Date.parse(String(ticket.data.created_at))) / 1000))
    }
    const reopens = !byAgent && (ticket.data.status === "pending" || ticket.data.status === "solved")
    if (reopens) {
      next.status = "open"
      next.solved_at = null
    }
    const saved = yield* saveTicket(ticket, next)
    if (reopens) yield* recordResourceChange(tickets, "updated", resourceView(tickets, saved), resourceView(tickets, ticket))
    yield* notifyTicketReply(saved, message)
  })

/**
 * THE place where a ticket reply notification is queued, in the reply's unit of work (so a
 * rolled-back reply sends nothing). The mail module (packages/core/src/mail/) plugs in here:
 * when an agent writes (`author.object` `credential`), queue the email to the requester
 * (`user.email` of the ticket's user, or `anonymous.email` for a visitor) in its durable outbox.
 * A requester's own message notifies no one (`mail/ticket-notifications.ts`, docs/email.md).
 */
export const notifyTicketReply = (ticket: StoredRecord, message: StoredRecord) => Effect.asVoid(queueTicketReplyEmail(ticket, message))

// ---------------------------------------------------------------------------------------
// Use cases

/**
 * `POST /support/tickets` (§4.3): the ticket and its opening message, attributed to the
 * calling credential, in one unit of work; events `ticket.created` then
 * `ticket_message.created`.
 */
export const createTicket = (body: unknown) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const ticket = yield* createResource(tickets, {}, body)
    const text = (body as { readonly message: { readonly text: string } }).message.text
    const id = yield* (yield* Ids).next("ticket_message")
    const at = formatTimestamp(yield* Clock.currentTimeMillis)
    const data: JsonObject = {
      object: TICKET_MESSAGE_TYPE,
      id,
      ticket_id: ticket.id,
      text,
      author: { object: "credential", id: caller.credential.id },
      opening: true,
      department_id: ticket.data.department_id ?? null,
      created_at: at,
      updated_at: at,
      deleted: false
    }
    const message = yield* records.insert(caller.tenant, TICKET_MESSAGE_TYPE, id, data).pipe(Effect.mapError(writeUnavailable))
    yield* recordResourceChange(ticketMessages, "created", resourceView(ticketMessages, message))
    return ticket
  })

/**
 * Tickets as this caller may see them: `user` as the user is now (its email only with
 * `users.read_personal` for that user), `anonymous` with its name, its other fields only with
 * `users.read_personal` on every user. One read of the page's users by ID. As for users, a
 * name is not personal data; an email, a document and a phone are.
 */
export const ticketViews = (items: ReadonlyArray<JsonObject>) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const userIds = [...new Set(items.flatMap((item) => (item.user !== null && typeof item.user === "object" ? [String((item.user as JsonObject).id)] : [])))]
    const found = userIds.length === 0 ? [] : yield* records.getMany(caller.tenant, USER_TYPE, userIds).pipe(Effect.mapError(readUnavailable))
    const users = new Map(found.map((record) => [record.id, record]))
    return items.map((item): JsonObject => {
      const stored = item.user as JsonObject | null
      const anonymous = item.anonymous as JsonObject | null
      let user: JsonObject | null = null
      if (stored !== null && typeof stored === "object") {
        const id = String(stored.id)
        const live = users.get(id)
        user = { id, name: (live?.data.name ?? stored.name ?? null) as Json, email: (live?.data.email ?? stored.email ?? null) as Json }
      }
      const current: JsonObject = {
        ...item,
        user,
        anonymous:
          anonymous === null || typeof anonymous !== "object"
            ? null
            : { document: anonymous.document ?? null, email: anonymous.email ?? null, name: anonymous.name ?? null, whatsapp: anonymous.whatsapp ?? null }
      }
      return personalView(tickets.personal!, current, caller.grant)
    })
  })

/** Messages with `author` in its documented key order (a JSON store may keep keys in any order). */
export const ticketMessageViews = (items: ReadonlyArray<JsonObject>) =>
  Effect.succeed(
    items.map((item): JsonObject => {
      const author = item.author as JsonObject | null
      return author !== null && typeof author === "object" ? { ...item, author: { object: author.object ?? null, id: author.id ?? null } } : item
    })
  )

/** The event types of the support group beyond the lifecycle the descriptions give. */
export const ticketMessageEventVerbs = ["created"] as const

