/**
 * The support desk (release 3.2.0; §2.3 `ticket`, §4.3 `POST /support/tickets`, open-points
 * routes): tickets with their messages, departments and FAQs with their order, and
 * `GET /reports/support` (§4.4). Served from their descriptions (`describedOperations`), with
 * what the derived routes cannot know: a ticket's opening message, the requester's personal
 * data shown by the caller's grant, the reorders, and the decisions in each operation's text
 * (docs/support.md). Lesson questions and comments have their own routes file.
 */
import {
  createTicket,
  DepartmentOrderBody,
  departments,
  FaqOrderBody,
  faqs,
  orderDepartments,
  orderFaqs,
  resourceEtag,
  resourceView,
  type ResourceDefinition,
  SUPPORT_REPORT,
  supportReport,
  ticketMessages,
  ticketMessageViews,
  tickets,
  ticketViews,
  Timestamp
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation, type Reply } from "../operation.js"
import { CursorParam, LimitParam, pageLimit } from "../query.js"
import { describedOperations, representationSchema, withView } from "../resources.js"
import { reportRowSchema, reportText } from "./reports.js"

const tag = "Support"

const disabledNote =
  "When support is switched off (`PATCH /settings/support` with `enabled: false`), this write answers 409 `feature_disabled`; so do the other writes that open or continue a conversation (`POST /support/tickets`, `POST /support/tickets/{ticket_id}/messages`, and their batch items). Reads, status changes, the trash, departments and FAQs stay available."
const personalNote =
  "`user.name` and `user.email` are personal data: null unless the credential holds `users.read_personal` for that user; every field of `anonymous` is null unless it holds `users.read_personal` on every user."

// ---------------------------------------------------------------------------------------
// Tickets

const ticketOperations = describedOperations(tickets, tag, {
  "tickets.list": {
    summary: "List support tickets, newest first",
    description: `Newest first unless \`sort\` says otherwise (\`last_reply_at\`: by the latest reply, tickets without one first). Filters: \`status\`, \`department_id\`, \`user_id\`, \`product_id\`; \`q\` searches the subject. ${personalNote}`
  },
  "tickets.get": { summary: "Retrieve a support ticket", description: personalNote },
  "tickets.create": {
    summary: "Open a support ticket with its first message",
    description:
      "`subject`, `user_id` and `message { text }` are required; `department_id` and `product_id` are optional. A `user_id`, `department_id` or `product_id` the credential cannot reach (missing, trashed, or not readable with it: `users.read`, `departments.read`, `products.read`) is 422 `validation_failed` on that field, reason `not_found`. The opening message (`opening: true`) is attributed to the calling credential, not to the ticket's user. Anonymous ticket (a visitor without an account): send `user_id: null` with `anonymous { name, email, document?, whatsapp? }` (else 422 on `anonymous`, reason `required_without_user`); with a user, `anonymous` must be absent or null (reason `conflicts_with_user`). Created `open`, with `replies_count` 0. Events `ticket.created` then `ticket_message.created`. " +
      `${disabledNote} ${personalNote}`,
    errors: ["feature_disabled"]
  },
  "tickets.update": {
    summary: "Change a ticket's status, subject, department or product",
    description:
      "Status moves: `open` ↔ `pending`, `open`/`pending` → `solved`, `solved` → `open` (reopen), any → `closed` (final). Another move is 422 `invalid_transition` on `status` (reason `from_<status>`). A closed ticket takes no change: 409 `state_conflict`, reason `ticket_closed` (it can still be trashed and restored). A new `department_id` or `product_id` follows the creation's rule (422 on the field, reason `not_found`). " +
      personalNote,
    errors: ["invalid_transition", "state_conflict"]
  },
  "tickets.delete": {
    summary: "Move a ticket to the trash",
    description: "A trashed ticket and its messages are not found; `PATCH deleted=false` restores it."
  }
})

const ticketCreate = (operation: Operation): Operation =>
  operation.id === "tickets.create"
    ? {
        ...operation,
        handler: ({ body }) =>
          Effect.map(createTicket(body), (record): Reply => ({
            status: 201,
            body: { data: resourceView(tickets, record) },
            headers: { location: `/api/v3/support/tickets/${record.id}`, etag: resourceEtag(tickets, record) }
          }))
      }
    : operation

// ---------------------------------------------------------------------------------------
// Messages

const messageOperations = describedOperations(ticketMessages, tag, {
  "ticket_messages.list": {
    summary: "List the messages of a ticket, oldest first",
    description: "The conversation in the order it was written (`sort=-created_at`: newest first), the opening message first. A trashed ticket's messages are not found."
  },
  "ticket_messages.get": { summary: "Retrieve a message of a ticket" },
  "ticket_messages.create": {
    summary: "Reply to a ticket",
    description:
      "`from: agent` (default) is a reply of the calling credential (`author` `{ object: credential, id }`); `from: requester` is written on behalf of the ticket's user (`author.object` `user`) or an anonymous ticket's visitor (`visitor`), e.g. relayed from their email, and reopens a `pending` or `solved` ticket (also `ticket.updated`). The ticket's `replies_count` and `last_reply_at` change in the same unit of work, with a new ticket revision. A closed ticket takes no message: 409 `state_conflict`, reason `ticket_closed`. Messages are never edited nor removed. When an agent replies, the requester is notified by email once the mail module is in place. " +
      disabledNote,
    errors: ["feature_disabled", "state_conflict"]
  }
})

// ---------------------------------------------------------------------------------------
// Departments and FAQs

/** `PUT <collection>/order` of an arranged resource: the exact set, all at once. */
const orderOperation = (
  definition: ResourceDefinition,
  what: string,
  body: Schema.Schema.AnyNoContext,
  order: (ids: ReadonlyArray<string>) => ReturnType<typeof orderDepartments>
) =>
  defineOperation({
    id: `${definition.plural}.order.replace`,
    method: "PUT",
    path: `${definition.path}/order`,
    summary: `Arrange the ${what} in a new order`,
    description: `\`ids\` lists every non-trashed ${what.replace(/s$/, "")} exactly once, in the new order; else 422 \`order_set_mismatch\` (itemized: \`not_in_set\`, \`duplicate\`, \`missing\`) and the order is unchanged. Each one that moves gets a new revision and the event \`${definition.type}.reordered\`. Answers every one, in the new order.`,
    tag,
    capability: `${definition.plural}.update`,
    body: body as typeof DepartmentOrderBody,
    idempotency: "optional",
    success: { status: 200, description: `The ${what} in the new order, all at once.`, schema: representationSchema(definition), collection: true },
    errors: ["order_set_mismatch"],
    handler: ({ body }) =>
      Effect.map(order(body.ids), (placed): Reply => {
        const data = placed.map((record) => resourceView(definition, record))
        return { status: 200, body: { data, page: { limit: data.length, next_cursor: null, prev_cursor: null } } }
      })
  })

const departmentOperations = describedOperations(departments, tag, {
  "departments.list": { summary: "List the support departments, in the help centre's order", description: "By `position` unless `sort` says otherwise." },
  "departments.get": { summary: "Retrieve a support department" },
  "departments.create": { summary: "Create a support department, last", description: "It comes last in the order (`position`)." },
  "departments.update": {
    summary: "Change a support department",
    description: "`position` changes through `PUT /support/departments/order`. A restored department comes last."
  },
  "departments.delete": {
    summary: "Move a support department to the trash",
    description: "The departments after it move up one (`department.reordered`). Its tickets keep their `department_id`; no new ticket or FAQ can name it (422 on `department_id`)."
  }
})

const faqOperations = describedOperations(faqs, tag, {
  "faqs.list": {
    summary: "List the FAQs, in the help centre's order",
    description: "By `position` unless `sort` says otherwise; `department_id` and `status` narrow the list, which keeps the order; `q` searches the question."
  },
  "faqs.get": { summary: "Retrieve an FAQ" },
  "faqs.create": {
    summary: "Create an FAQ, last",
    description: "It comes last in the order. `department_id`, when sent, names a department of the account, not trashed (else 422 on `department_id`, reason `not_found`). `status` defaults to `published`."
  },
  "faqs.update": { summary: "Change an FAQ", description: "`position` changes through `PUT /support/faqs/order`. A restored FAQ comes last." },
  "faqs.delete": { summary: "Move an FAQ to the trash", description: "The FAQs after it move up one (`faq.reordered`)." }
})

// ---------------------------------------------------------------------------------------
// The report

const SupportQuery = Schema.Struct({
  occurred_after: Schema.optional(Timestamp.annotations({ description: "The period starts at this instant (inclusive)." })),
  occurred_before: Schema.optional(Timestamp.annotations({ description: "The period ends at this instant (exclusive); after `occurred_after` (else 422)." })),
  limit: Schema.optional(LimitParam),
  cursor: Schema.optional(CursorParam)
})

const supportReportOperation = defineOperation({
  id: "reports.support.get",
  method: "GET",
  path: "/reports/support",
  summary: "Support desk per department: tickets by status, opened, solved, replies, first-reply time",
  description: reportText(
    SUPPORT_REPORT,
    "The period is `occurred_after` (inclusive) to `occurred_before` (exclusive), any offset accepted; either may be left out. `occurred_before` not after `occurred_after` is 422 `validation_failed` on `occurred_before` (reason `empty_range`). The counts by status are of now, whatever the period. The first-reply time is an average: a median would need every ticket's value, which the store does not compute."
  ),
  tag: "Reports",
  capability: "reports.read",
  query: SupportQuery,
  idempotency: "none",
  success: { status: 200, description: "A page of departments.", schema: reportRowSchema(SUPPORT_REPORT, "SupportReportRow"), collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    supportReport({
      occurredAfter: query.occurred_after,
      occurredBefore: query.occurred_before,
      limit: pageLimit(query.limit),
      cursor: query.cursor
    }).pipe(Effect.map((body) => ({ status: 200, body })))
})

export const supportRoutes: ReadonlyArray<Operation> = [
  ...ticketOperations.map(ticketCreate).map(withView(ticketViews)),
  ...messageOperations.map(withView(ticketMessageViews)),
  ...departmentOperations,
  orderOperation(departments, "departments", DepartmentOrderBody, orderDepartments),
  ...faqOperations,
  orderOperation(faqs, "FAQs", FaqOrderBody, orderFaqs),
  supportReportOperation
]
