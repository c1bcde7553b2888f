/**
 * The notification of a reply to a support ticket (issue 14): when an agent replies (a message
 * whose `author.object` is `credential`), the requester gets the reply by email, queued in the
 * reply's unit of work (`queueEmail`), so a reply rolled back sends nothing. The address is the
 * ticket's user's as it is now (a removed user's as when the ticket was opened), or the anonymous
 * visitor's. A requester's own message notifies no one; neither does a reply to a requester
 * without an address or whose address bounced (the reply is saved all the same). Not throttled:
 * each reply is a mail of its own. Decisions: docs/email.md.
 */
import { Effect } from "effect"
import { Caller } from "../access/context.js"
import { writeUnavailable } from "../errors/errors.js"
import { USER_TYPE } from "../people/people-users.js"
import { type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import { queueEmail } from "./outbox.js"

/** Rich text (HTML) as plain text: block ends as line breaks, tags dropped, the common entities decoded. */
export const plainTextOf = (html: string): string =>
  html
    .replace(/<\s*br\s*\/?>/gi, "\n")
    .replace(/<\/\s*(p|div|li|h[1-6]|blockquote|pre|tr)\s*>/gi, "\n")
    .replace(/<[^>]*>/g, "")
    .replace(/&nbsp;/g, " ")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, "\"")
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&")
    .replace(/\n{3,}/g, "\n\n")
    .trim()

/**
 * Queue the email of a ticket reply, inside the reply's unit of work. `ticket` is the ticket as
 * saved with the reply, `message` the reply. Returns the queued message, or `undefined` when
 * nothing is sent.
 */
export const queueTicketReplyEmail = (ticket: StoredRecord, message: StoredRecord) =>
  Effect.gen(function* () {
    const author = (message.data.author ?? {}) as JsonObject
    if (author.object !== "credential" || message.data.opening === true) return undefined
    const caller = yield* Caller
    const records = yield* Records
    const userId = typeof ticket.data.user_id === "string" ? ticket.data.user_id : null
    let to: string | null = null
    let name: string | null = null
    if (userId !== null) {
      const user = yield* records.get(caller.tenant, USER_TYPE, userId).pipe(Effect.mapError(writeUnavailable))
      const snapshot = (ticket.data.user ?? {}) as JsonObject
      const source = user?.data ?? snapshot
      to = typeof source.email === "string" ? source.email : null
      name = typeof source.name === "string" ? source.name : null
    } else {
      const visitor = (ticket.data.anonymous ?? {}) as JsonObject
      to = typeof visitor.email === "string" && visitor.email.includes("@") ? visitor.email : null
      name = typeof visitor.name === "string" ? visitor.name : null
    }
    if (to === null) return undefined
    const subject = `Re: ${String(ticket.data.subject ?? "Your support request")} [${ticket.id}]`
    const text = [
      `Hello${name ? ` ${name}` : ""},`,
      "",
      "There is a new reply to your support request:",
      "",
      plainTextOf(String(message.data.text ?? "")),
      "",
      `Ticket ${ticket.id}`,
      ""
    ].join("\n")
    return yield* queueEmail({
      kind: "ticket_reply",
      to,
      userId,
      subject,
      text,
      productId: typeof ticket.data.product_id === "string" ? ticket.data.product_id : null,
      ticketId: ticket.id,
      whenSuppressed: "skip"
    })
  })
