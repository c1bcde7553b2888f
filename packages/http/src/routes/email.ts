/**
 * Email (issue 14; open-points `POST /users/{user_id}/access-emails`; §4.4
 * `GET /reports/email-bounces`, `PATCH /reports/email-bounces/{bounce_id}`): a user's access
 * email, queued in the request's unit of work and sent by the mail worker (`@syllabus/core`
 * mail/outbox.ts); its status; the bounces the mail server answered, and ignoring one.
 * Decisions: docs/email.md.
 */
import {
  EMAIL_BOUNCES_REPORT,
  EMAIL_RESEND_WINDOW_MS,
  emailBouncesReport,
  EMAIL_MAX_ATTEMPTS,
  getAccessEmail,
  ignoreEmailBounce,
  PublicId,
  sendAccessEmail
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { CursorParam, LimitParam, pageLimit } from "../query.js"

const Timestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })
const windowMinutes = EMAIL_RESEND_WINDOW_MS / 60_000

const SmtpError = Schema.Struct({
  smtp_code: Schema.NullOr(Schema.Int).annotations({ description: "The SMTP reply code; null when no server answered (no connection, a timeout)." }),
  enhanced_code: Schema.NullOr(Schema.String).annotations({ description: "The enhanced status code (RFC 3463), when the server gave one." }),
  message: Schema.String.annotations({ description: "The server's answer or what went wrong, at most 200 characters, addresses and tokens masked." })
})

const EmailMessageSchema = Schema.Struct({
  object: Schema.Literal("email_message"),
  id: Schema.String.annotations({ description: "`eml_…`; also the message's `Message-ID` (`<eml_…@syllabus>`), the same on every attempt." }),
  kind: Schema.Literal("access", "ticket_reply").annotations({ description: "What the message is. An open set: later releases may add kinds." }),
  user_id: Schema.NullOr(Schema.String).annotations({ description: "The user it is sent to; null for an anonymous ticket's visitor." }),
  product_id: Schema.NullOr(Schema.String).annotations({ description: "The product it is about, or null." }),
  ticket_id: Schema.NullOr(Schema.String).annotations({ description: "The ticket of a reply notification, or null." }),
  to: Schema.NullOr(Schema.String).annotations({
    description: "The recipient's address as it was when queued. Personal data: `null` unless the credential holds `users.read_personal` for the user."
  }),
  subject: Schema.String,
  status: Schema.Literal("queued", "sent", "bounced", "failed").annotations({
    description: `\`queued\`: waiting for its next attempt (or being sent); \`sent\`: the mail server accepted it (2xx); \`bounced\`: the server refused it for good (5xx), see \`bounce_id\`; \`failed\`: ${EMAIL_MAX_ATTEMPTS} attempts met only temporary failures (4xx, or no server reached).`
  }),
  attempt_count: Schema.Int,
  next_attempt_at: Schema.NullOr(Timestamp).annotations({ description: "When it is next tried while `queued`; null once finished." }),
  last_error: Schema.NullOr(SmtpError).annotations({ description: "The last failed attempt's answer; null when none failed or it was sent." }),
  bounce_id: Schema.NullOr(Schema.String).annotations({ description: "The bounce (`ebn_`) of a `bounced` message." }),
  sent_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "EmailMessage" })

const EmailBounceSchema = Schema.Struct({
  object: Schema.Literal("email_bounce"),
  id: Schema.String,
  email_id: Schema.String.annotations({ description: "The message that bounced." }),
  kind: Schema.String.annotations({ description: "Its kind (`access`, `ticket_reply`; an open set)." }),
  user_id: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String).annotations({
    description: "The address that bounced. Personal data: `null` unless the credential holds `users.read_personal` for the user."
  }),
  smtp_code: Schema.NullOr(Schema.Int),
  enhanced_code: Schema.NullOr(Schema.String),
  diagnostic: Schema.String.annotations({ description: "The server's answer, at most 200 characters, addresses and tokens masked." }),
  status: Schema.Literal("active", "ignored").annotations({
    description: "`active`: no mail is queued to the address (an access email is 409 `state_conflict`, reason `recipient_bounced`; notifications are skipped); `ignored`: mail goes to it again."
  }),
  bounced_at: Timestamp,
  ignored_at: Schema.NullOr(Timestamp),
  revision: Schema.String.annotations({ description: "Changes on every change of the bounce; its ETag is `W/\"email_bounce:<id>:<revision>\"`, which `If-Match` of the PATCH takes." })
}).annotations({ identifier: "EmailBounce" })

const AccessEmailBody = Schema.Struct({
  product_id: Schema.optional(
    PublicId("product").annotations({
      description: "The product the access is to (its name in the subject and text); absent: the account's courses in general."
    })
  )
})

const accessNote = `The same email (kind \`access\`, same address) queued again within ${windowMinutes} minutes is 409 \`email_recently_sent\` (reason \`resend_window\`), whatever \`product_id\`: a learner is not sent the same mail twice in a row.`

const sendAccess = defineOperation({
  id: "access_emails.create",
  method: "POST",
  path: "/users/{user_id}/access-emails",
  summary: "Send a user their access email",
  description: `Queue the user's access email: how to reach the account's courses (or one product's, with \`product_id\`), sent to the user's address. The answer is 202 with the queued \`email_message\` (as email APIs such as Postmark and SendGrid accept a message for delivery): it is recorded in the request's unit of work and sent by background work, once, retried on temporary failures (1 min, 5 min, 15 min, 1 h, 4 h, 12 h) and recorded as a bounce on a permanent one; \`Location\` is where its status is read. ${accessNote} A missing or trashed user is 404; a \`blocked\` user 409 \`state_conflict\` (reason \`user_blocked\`); an address with an active bounce 409 \`state_conflict\` (reason \`recipient_bounced\`) until the bounce is ignored (\`PATCH /reports/email-bounces/{bounce_id}\`). \`product_id\` must name a product of the account, not trashed (else 422 on it, reason \`not_found\`). A state-changing POST: \`Idempotency-Key\` is required; a retry with the same key answers the same message and sends nothing more. Event \`email_message.queued\` (then \`email_message.sent\`, \`.bounced\` or \`.failed\`; events never carry the address).`,
  tag: "People",
  capability: "access_emails.create",
  scopedBy: "user_id",
  params: { user_id: "user" },
  body: AccessEmailBody,
  idempotency: "required",
  success: { status: 202, description: "The message, queued; `Location` is its address.", schema: EmailMessageSchema, headers: ["Location"] },
  errors: ["email_recently_sent", "state_conflict"],
  handler: ({ path, body }) =>
    sendAccessEmail(path.user_id!, { product_id: body.product_id }).pipe(
      Effect.map((data) => ({
        status: 202,
        body: { data },
        headers: { location: `/api/v3/users/${path.user_id!}/access-emails/${String(data.id)}` }
      }))
    )
})

const readAccess = defineOperation({
  id: "access_emails.get",
  method: "GET",
  path: "/users/{user_id}/access-emails/{email_id}",
  summary: "Retrieve an access email sent to a user, with its delivery status",
  description:
    "One access email of the user as it stands: `queued`, `sent`, `bounced` or `failed`, its attempts and the last answer of the mail server. Another user's message is 404. `to` is personal data.",
  tag: "People",
  capability: "access_emails.read",
  scopedBy: "user_id",
  params: { user_id: "user", email_id: "email_message" },
  idempotency: "none",
  success: { status: 200, description: "The message.", schema: EmailMessageSchema },
  errors: [],
  handler: ({ path }) => getAccessEmail(path.user_id!, path.email_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
})

const BouncesQuery = Schema.Struct({
  status: Schema.optional(
    Schema.Literal("active", "ignored").annotations({
      description: "Only bounces of this status (default: both).",
      message: () => ({ message: "invalid_value|allowed=active, ignored", override: true })
    })
  ),
  limit: Schema.optional(LimitParam),
  cursor: Schema.optional(CursorParam)
})

const bounces = defineOperation({
  id: "reports.email_bounces.get",
  method: "GET",
  path: "/reports/email-bounces",
  summary: "List email bounces, newest first",
  description: `${EMAIL_BOUNCES_REPORT.description} Each row is an \`email_bounce\`, recorded from the mail server's answer when it refused a message with a 5xx (a 4xx is retried, never a bounce). Filter by \`status\`. Pages go forward and back with \`page.next_cursor\` and \`page.prev_cursor\` (signed, 24 hours, bound to the filter: else 400 \`invalid_cursor\`). Computed by the store when asked (freshness \`live\`). \`email\` is personal data: null without \`users.read_personal\`.`,
  tag: "Reports",
  capability: "reports.read",
  query: BouncesQuery,
  idempotency: "none",
  success: { status: 200, description: "A page of bounces.", schema: EmailBounceSchema, collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    emailBouncesReport({ status: query.status, limit: pageLimit(query.limit), cursor: query.cursor }).pipe(Effect.map((body) => ({ status: 200, body })))
})

const IgnoreBody = Schema.Struct({
  status: Schema.Literal("ignored").annotations({
    description: "`ignored`, the only change: a bounce is never made active again (a new refusal records a new bounce).",
    message: () => ({ message: "invalid_value|allowed=ignored", override: true })
  })
})

const ignore = defineOperation({
  id: "email_bounces.update",
  method: "PATCH",
  path: "/reports/email-bounces/{bounce_id}",
  summary: "Ignore an email bounce",
  description:
    "`{ \"status\": \"ignored\" }` ignores the bounce: when it is the address's latest, mail may be queued to the address again (as removing an address from a suppression list at Postmark or SendGrid, once the learner fixed their mailbox). Ignoring an ignored bounce changes nothing (200, no event). Uses `If-Match` (the ETag `W/\"email_bounce:<id>:<revision>\"`; stale: 412 `revision_mismatch`). Event `email_bounce.ignored`, with its audit entry.",
  tag: "Reports",
  capability: "email_bounces.update",
  params: { bounce_id: "email_bounce" },
  body: IgnoreBody,
  idempotency: "optional",
  ifMatch: "email_bounce",
  success: { status: 200, description: "The bounce.", schema: EmailBounceSchema, headers: ["ETag"] },
  errors: [],
  handler: ({ path, expectedRevision }) =>
    ignoreEmailBounce(path.bounce_id!, expectedRevision).pipe(
      Effect.map(({ data, etag }) => ({ status: 200, body: { data }, headers: { etag } }))
    )
})

export const emailRoutes: ReadonlyArray<Operation> = [sendAccess, readAccess, bounces, ignore]
