/**
 * A user's access email (open-points `POST /users/{user_id}/access-emails`): the mail that
 * tells a learner how to reach the account's courses (or one product, with `product_id`), as
 * a course platform's "resend access" button does. Queued in the request's unit of work
 * (`queueEmail`) and sent by the mail worker; the answer is the queued message (202, as an
 * email API that accepts a message for delivery answers: Postmark, SendGrid), whose status a
 * client reads at `GET /users/{user_id}/access-emails/{email_id}`. Decisions: docs/email.md.
 */
import { Effect } from "effect"
import { loadAccount } from "../access/accounts.js"
import { Caller } from "../access/context.js"
import { apiError, fieldError, readUnavailable } from "../errors/errors.js"
import { PRODUCT_TYPE } from "../catalog/products.js"
import { USER_TYPE } from "../people/people-users.js"
import { Records } from "../ports/store.js"
import { EMAIL_MESSAGE_TYPE, emailMessageView, queueEmail } from "./outbox.js"

export interface AccessEmailInput {
  readonly product_id?: string | undefined
}

/** The text of an access email: plain, in the platform's default language. */
export const accessEmailText = (input: { readonly userName: string; readonly accountName: string; readonly productName: string | null }) => {
  const what = input.productName === null ? `the courses of ${input.accountName}` : `${input.productName}, at ${input.accountName}`
  return {
    subject: input.productName === null ? `Your access to ${input.accountName}` : `Your access to ${input.productName}`,
    text: [
      `Hello ${input.userName},`,
      "",
      `You have access to ${what}.`,
      `Sign in to ${input.accountName} with this email address to start learning.`,
      "",
      `If you did not expect this email, you can ignore it.`,
      ""
    ].join("\n")
  }
}

/**
 * `POST /users/{user_id}/access-emails`: queue the user's access email. A missing or trashed
 * user is 404; a blocked one 409 `state_conflict` (reason `user_blocked`); `product_id` must
 * name a product of the account not trashed (else 422 on it, reason `not_found`); an address
 * that bounced is 409 `state_conflict` (reason `recipient_bounced`) until the bounce is
 * ignored; the same email to the same address within 10 minutes is 409 `email_recently_sent`.
 */
export const sendAccessEmail = Effect.fn("AccessEmails.send")(function* (userId: string, input: AccessEmailInput) {
  const caller = yield* Caller
  const records = yield* Records
  const user = yield* records.get(caller.tenant, USER_TYPE, userId).pipe(Effect.mapError(readUnavailable))
  if (!user || user.data.deleted === true) return yield* Effect.fail(apiError("not_found"))
  let productName: string | null = null
  if (input.product_id !== undefined) {
    const product = yield* records.get(caller.tenant, PRODUCT_TYPE, input.product_id).pipe(Effect.mapError(readUnavailable))
    if (!product || product.data.deleted === true) {
      return yield* Effect.fail(fieldError("validation_failed", "product_id", { reason: "not_found" }))
    }
    productName = String(product.data.name)
  }
  if (user.data.status === "blocked") return yield* Effect.fail(apiError("state_conflict", { reason: "user_blocked" }))
  const account = yield* loadAccount(caller.tenant.accountId).pipe(Effect.mapError(readUnavailable))
  const { subject, text } = accessEmailText({
    userName: String(user.data.name),
    accountName: String(account?.data.name ?? "your school"),
    productName
  })
  const message = yield* queueEmail({
    kind: "access",
    to: String(user.data.email),
    userId,
    subject,
    text,
    productId: input.product_id ?? null,
    throttle: true,
    whenSuppressed: "fail"
  })
  // `whenSuppressed: "fail"` never skips.
  if (message === undefined) return yield* Effect.fail(apiError("state_conflict", { reason: "recipient_bounced" }))
  return emailMessageView(message, caller)
})

/** `GET /users/{user_id}/access-emails/{email_id}`: one access email of the user, as it stands. */
export const getAccessEmail = Effect.fn("AccessEmails.get")(function* (userId: string, emailId: string) {
  const caller = yield* Caller
  const records = yield* Records
  const message = yield* records.get(caller.tenant, EMAIL_MESSAGE_TYPE, emailId).pipe(Effect.mapError(readUnavailable))
  if (!message || message.data.user_id !== userId || message.data.kind !== "access") return yield* Effect.fail(apiError("not_found"))
  return emailMessageView(message, caller)
})
