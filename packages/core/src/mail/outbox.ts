/**
 * The mail outbox (issue 14, "Email, for real"; decisions in docs/email.md).
 *
 * - Durable: a mail is an `email_message` record (`eml_`), written by `queueEmail` in the unit
 *   of work of the request that causes it, so a mail exists if and only if its cause
 *   committed. Background work (`mailWorker`, in every server process beside the webhook
 *   worker, on the process's `BackgroundBudget`) sends it through the `Mailer` port.
 * - Once: a worker claims a due message with a conditional update on its revision (of two
 *   workers, in one process or two, one wins), under a lease (`MAIL_LEASE_MS`) that moves
 *   its `due_at` to the end of the lease; the outcome is recorded only by the lease's holder.
 *   A worker that dies mid-send leaves the message due when its lease runs out, and another
 *   sends it. So a message is handed to the mail server once, except when a process dies
 *   between the server's acceptance and the commit of `sent`: then it is sent again, with
 *   the same `Message-ID` (`<eml_…@syllabus>`), which lets receivers tell the repeat.
 * - Retries: a temporary answer (SMTP 4xx, or no server reached) is tried again after 1 min,
 *   5 min, 15 min, 1 h, 4 h and 12 h; after the seventh attempt the message is `failed`.
 * - Bounces: a permanent answer (SMTP 5xx) makes the message `bounced` and records an
 *   `email_bounce` (`ebn_`, `GET /reports/email-bounces`), and the address is suppressed: the
 *   API refuses to queue another mail to it (409 `state_conflict`, reason
 *   `recipient_bounced`; notifications are skipped) until the bounce is ignored
 *   (`PATCH /reports/email-bounces/{id}` `{ "status": "ignored" }`), as Postmark's and
 *   SendGrid's suppression lists do.
 * - The same email (same kind, same address) queued again within `EMAIL_RESEND_WINDOW_MS`
 *   (10 minutes): 409 `email_recently_sent`. One small record per (kind, address), keyed by a
 *   hash of both, holds the last time; concurrent requests conflict on it, so two sends in a
 *   race cannot both pass.
 * - Personal data: a message's `to` and a bounce's `email` are shown only to a caller holding
 *   `users.read_personal` (for the user they belong to), and never in events, audit entries
 *   or logs (the events carry `null` there). Server answers are stored masked.
 */
import { Clock, Duration, Effect, Option, Random } from "effect"
import { Caller, type CallerInfo, callerRecordedIn, Ids } from "../access/context.js"
import { allows } from "../access/policies.js"
import { apiError, writeUnavailable } from "../errors/errors.js"
import { emitEvent } from "../events/events.js"
import { maskExcerpt } from "../events/webhook-delivery.js"
import { READ_PERSONAL } from "../access/scope.js"
import { Crypto } from "../ports/crypto.js"
import { Mailer, type MailOutcome } from "../ports/mail.js"
import { type AccessPath, housekeepingPath, isStoreRace, type Json, type JsonObject, listPath, Records, type StoredRecord, type Tenant, UnitOfWork } from "../ports/store.js"
import { formatTimestamp, HOUR, MINUTE, SECOND } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { recordChange } from "../trail/audit.js"
import { dueWorker } from "../workers/due-worker.js"

export const EMAIL_MESSAGE_TYPE = "email_message"
export const EMAIL_BOUNCE_TYPE = "email_bounce"
/** The last time a mail of one kind was queued to one address (record ID: a hash of both). */
export const EMAIL_THROTTLE_TYPE = "email_throttle"
/** An address whose last mail bounced (record ID: a hash of the address): no mail is queued to it. */
export const EMAIL_SUPPRESSION_TYPE = "email_suppression"

/** What the API sends: a user's access email, the notification of a reply to a user's ticket. */
export type EmailKind = "access" | "ticket_reply"
export const emailKinds: ReadonlyArray<EmailKind> = ["access", "ticket_reply"]

/** The same kind of mail to the same address again within this window: 409 `email_recently_sent`. */
export const EMAIL_RESEND_WINDOW_MS = 10 * MINUTE
/** The waits before attempts 2 to 7 after a temporary failure; the seventh failing makes the message `failed`. */
export const EMAIL_RETRY_DELAYS_MS: ReadonlyArray<number> = [MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR, 4 * HOUR, 12 * HOUR]
export const EMAIL_MAX_ATTEMPTS = EMAIL_RETRY_DELAYS_MS.length + 1
/** How long a claimed message stays with its worker (an SMTP exchange is bounded well below it). */
export const MAIL_LEASE_MS = 2 * MINUTE
/** The longest a send may take before it counts as a temporary failure (`timeout`). */
const SEND_TIMEOUT_MS = 90 * SECOND
/** §8.2: a mail's text is plain text, at most 64 KiB; a longer one is cut. */
export const MAX_EMAIL_TEXT = 64 * 1024

export const emailMessageFields = [
  "object",
  "id",
  "kind",
  "user_id",
  "product_id",
  "ticket_id",
  "to",
  "subject",
  "status",
  "attempt_count",
  "next_attempt_at",
  "last_error",
  "bounce_id",
  "sent_at",
  "created_at",
  "updated_at"
] as const

/** The events of a message: queued by a request; then sent, bounced (5xx) or failed (retries spent). */
export const emailMessageEventVerbs: ReadonlyArray<string> = ["queued", "sent", "bounced", "failed"]
/** The events of a bounce: recorded by the worker, ignored by a client. */
export const emailBounceEventVerbs: ReadonlyArray<string> = ["created", "ignored"]

export const emailBounceFields = [
  "object",
  "id",
  "email_id",
  "kind",
  "user_id",
  "email",
  "smtp_code",
  "enhanced_code",
  "diagnostic",
  "status",
  "bounced_at",
  "ignored_at",
  "revision"
] as const

/** The indexes of the outbox: the due-time queue across tenants, a user's messages, the bounces report. */
export const mailAccessPaths: ReadonlyArray<AccessPath> = [
  housekeepingPath(EMAIL_MESSAGE_TYPE, [], [{ field: "due_at", kind: "number" }]),
  listPath(EMAIL_MESSAGE_TYPE, ["user_id"], [{ field: "id", kind: "text" }]),
  listPath(EMAIL_BOUNCE_TYPE, [], [{ field: "id", kind: "text" }]),
  listPath(EMAIL_BOUNCE_TYPE, ["status"], [{ field: "id", kind: "text" }])
]

// ---------------------------------------------------------------------------------------
// Views

const personalFor = (grant: CallerInfo["grant"], userId: Json | undefined): boolean =>
  allows(grant, READ_PERSONAL, typeof userId === "string" ? userId : undefined)

/** The representation: a message being sent is `queued` to a client; `to` is personal data. */
export const emailMessageView = (record: StoredRecord | JsonObject, caller: CallerInfo | null): JsonObject => {
  const data = "data" in record && typeof record.data === "object" ? (record as StoredRecord).data : (record as JsonObject)
  const view = inOrder(data, emailMessageFields)
  return {
    ...view,
    status: view.status === "sending" ? "queued" : (view.status ?? null),
    to: caller !== null && personalFor(caller.grant, data.user_id) ? (view.to ?? null) : null
  }
}

/** The representation of a bounce: `email` is personal data. */
export const emailBounceView = (record: StoredRecord, caller: CallerInfo | null): JsonObject => {
  const data = record.data
  // `revision` is the one its ETag names (§2.1: what `If-Match` of the PATCH compares).
  const view = inOrder({ ...data, revision: String(record.revision) }, emailBounceFields)
  return { ...view, email: caller !== null && personalFor(caller.grant, data.user_id) ? (view.email ?? null) : null }
}

/** The key of an address (and a kind): a hash, so no address is ever a record ID. */
export const addressKey = (address: string, kind?: string) =>
  Effect.map(Crypto, (crypto) => crypto.sha256Hex(`${kind ?? "*"}\n${address.trim().toLowerCase()}`))

// ---------------------------------------------------------------------------------------
// Queueing

export interface QueueEmailInput {
  readonly kind: EmailKind
  /** The recipient's address. */
  readonly to: string
  /** The user the mail is about (its `to` is shown by their `users.read_personal`); null for an anonymous recipient. */
  readonly userId: string | null
  readonly subject: string
  /** Plain text, cut at 64 KiB. */
  readonly text: string
  readonly productId?: string | null | undefined
  readonly ticketId?: string | null | undefined
  /** Refuse the same kind to the same address within `EMAIL_RESEND_WINDOW_MS` (409 `email_recently_sent`). */
  readonly throttle?: boolean
  /**
   * The address bounced (a bounce not ignored): `fail` answers 409 `state_conflict` (reason
   * `recipient_bounced`); `skip` (the default, for notifications) queues nothing and returns `undefined`.
   */
  readonly whenSuppressed?: "fail" | "skip"
}


/**
 * Queue one mail, inside the caller's unit of work (the request's): the message record, its
 * event `email_message.queued` and its audit entry commit with the change that caused it, or
 * none does. The worker sends it after the commit. Returns the stored message, or `undefined`
 * when the address is suppressed and `whenSuppressed` is `skip`.
 *
 * This is the use case other areas call to send mail (the support desk's reply notifications).
 */
export const queueEmail = Effect.fn("Mail.queue")(function* (input: QueueEmailInput) {
  const caller = yield* Caller
  const records = yield* Records
  const ids = yield* Ids
  const now = yield* Clock.currentTimeMillis
  const to = input.to.trim().toLowerCase()

  const suppressed = yield* records
    .get(caller.tenant, EMAIL_SUPPRESSION_TYPE, yield* addressKey(to))
    .pipe(Effect.mapError(writeUnavailable))
  if (suppressed !== undefined) {
    if (input.whenSuppressed === "fail") return yield* Effect.fail(apiError("state_conflict", { reason: "recipient_bounced" }))
    return undefined
  }

  if (input.throttle === true) {
    const key = yield* addressKey(to, input.kind)
    const last = yield* records.get(caller.tenant, EMAIL_THROTTLE_TYPE, key).pipe(Effect.mapError(writeUnavailable))
    const recently = () => apiError("email_recently_sent", { reason: "resend_window" })
    if (last !== undefined && now - Number(last.data.queued_at ?? 0) < EMAIL_RESEND_WINDOW_MS) return yield* Effect.fail(recently())
    // A concurrent request that queued the same mail first makes this write conflict: it was sent just now.
    const wrote = last === undefined
      ? records.insert(caller.tenant, EMAIL_THROTTLE_TYPE, key, { id: key, queued_at: now })
      : records.update(caller.tenant, EMAIL_THROTTLE_TYPE, key, { ...last.data, queued_at: now }, { expectedRevision: last.revision })
    yield* wrote.pipe(
      Effect.catchTags({
        RevisionConflict: () => Effect.fail(recently()),
        UniqueViolation: () => Effect.fail(recently()),
        StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
      })
    )
  }

  const id = yield* ids.next("email_message")
  const text = input.text.length > MAX_EMAIL_TEXT ? input.text.slice(0, MAX_EMAIL_TEXT) : input.text
  const data: JsonObject = {
    object: "email_message",
    id,
    kind: input.kind,
    user_id: input.userId,
    product_id: input.productId ?? null,
    ticket_id: input.ticketId ?? null,
    to,
    subject: input.subject.slice(0, 998),
    status: "queued",
    attempt_count: 0,
    next_attempt_at: formatTimestamp(now),
    last_error: null,
    bounce_id: null,
    sent_at: null,
    created_at: formatTimestamp(now),
    updated_at: formatTimestamp(now),
    // Internal: what is sent, when it is due, the worker holding it, and who queued it (for the worker's events).
    text,
    due_at: now,
    lease_owner: null,
    lease_until: null,
    queued_by: {
      credential_id: caller.credential.id,
      administrator_id: caller.human?.adminId ?? null,
      request_id: caller.requestId
    }
  }
  const stored = yield* records.insert(caller.tenant, EMAIL_MESSAGE_TYPE, id, data).pipe(Effect.mapError(writeUnavailable))
  yield* emitEvent("email_message.queued", emailMessageView(stored, null))
  yield* recordChange("email_message.queued", { object: EMAIL_MESSAGE_TYPE, id }, { kind: input.kind })
  return stored
})

// ---------------------------------------------------------------------------------------
// Sending

/** The caller the worker acts as for a message's events: whoever queued it. */
const workerCaller = (message: StoredRecord): CallerInfo => callerRecordedIn(message, "queued_by")

const newOwner = Effect.gen(function* () {
  return `mlw_${yield* Random.nextIntBetween(0, 2 ** 31)}_${yield* Random.nextIntBetween(0, 2 ** 31)}`
})

/** A server's answer as stored: masked (no address, no token), at most 200 characters. */
const maskedAnswer = (text: string): string => maskExcerpt(text) ?? ""

/**
 * Send one due message, if this worker wins its claim, and record the outcome (only while it
 * still holds the lease). Returns what happened, for the worker's tests.
 */
export const attemptEmail = (candidate: StoredRecord) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const ids = yield* Ids
    const mailer = yield* Mailer
    const now = yield* Clock.currentTimeMillis
    const tenant: Tenant = candidate.tenant
    const status = String(candidate.data.status)
    if (status !== "queued" && status !== "sending") return "finished" as const
    if (status === "sending" && Number(candidate.data.lease_until ?? 0) > now) return "held" as const
    const owner = yield* newOwner
    const leaseUntil = now + MAIL_LEASE_MS
    const claimed = yield* records
      .update(tenant, EMAIL_MESSAGE_TYPE, candidate.id, { ...candidate.data, status: "sending", lease_owner: owner, lease_until: leaseUntil, due_at: leaseUntil }, {
        expectedRevision: candidate.revision
      })
      .pipe(
        Effect.map(Option.some),
        Effect.catchTags({ RevisionConflict: () => Effect.succeedNone, UniqueViolation: () => Effect.succeedNone })
      )
    if (Option.isNone(claimed)) return "lost" as const

    const outcome: MailOutcome = yield* mailer
      .send({
        to: String(candidate.data.to),
        subject: String(candidate.data.subject),
        text: String(candidate.data.text),
        messageId: `${candidate.id}@syllabus`,
        headers: { "X-Syllabus-Kind": String(candidate.data.kind), "X-Syllabus-Message": candidate.id }
      })
      .pipe(
        Effect.timeoutTo({
          duration: Duration.millis(SEND_TIMEOUT_MS),
          onSuccess: (o): MailOutcome => o,
          onTimeout: (): MailOutcome => ({ outcome: "temporary", code: null, enhancedCode: null, response: "timeout" })
        })
      )

    const finishedAt = yield* Clock.currentTimeMillis
    const number = Number(candidate.data.attempt_count ?? 0) + 1
    const failedForGood = outcome.outcome === "temporary" && number >= EMAIL_MAX_ATTEMPTS
    const nextAt = outcome.outcome === "temporary" && !failedForGood ? finishedAt + EMAIL_RETRY_DELAYS_MS[number - 1]! : null
    const nextStatus = outcome.outcome === "accepted" ? "sent" : outcome.outcome === "permanent" ? "bounced" : failedForGood ? "failed" : "queued"
    const lastError = outcome.outcome === "accepted"
      ? null
      : { smtp_code: outcome.code, enhanced_code: outcome.enhancedCode, message: maskedAnswer(outcome.response) }
    const caller = workerCaller(candidate)

    const recorded = yield* uow
      .transaction(
        Effect.gen(function* () {
          const current = yield* records.get(tenant, EMAIL_MESSAGE_TYPE, candidate.id)
          // Another worker took it over after our lease ran out: its outcome is the one kept.
          if (!current || current.data.lease_owner !== owner) return "lost" as const
          let bounceId: string | null = null
          if (outcome.outcome === "permanent") {
            bounceId = yield* ids.next("email_bounce")
            const bounce = yield* records.insert(tenant, EMAIL_BOUNCE_TYPE, bounceId, {
              object: "email_bounce",
              id: bounceId,
              email_id: candidate.id,
              kind: String(candidate.data.kind),
              user_id: candidate.data.user_id ?? null,
              email: String(candidate.data.to),
              smtp_code: outcome.code,
              enhanced_code: outcome.enhancedCode,
              diagnostic: maskedAnswer(outcome.response),
              status: "active",
              bounced_at: formatTimestamp(finishedAt),
              ignored_at: null,
              created_at: formatTimestamp(finishedAt),
              updated_at: formatTimestamp(finishedAt)
            })
            // The address is suppressed until this bounce (or a later one) is ignored.
            const key = yield* addressKey(String(candidate.data.to))
            const suppression = yield* records.get(tenant, EMAIL_SUPPRESSION_TYPE, key)
            if (suppression === undefined) yield* records.insert(tenant, EMAIL_SUPPRESSION_TYPE, key, { id: key, bounce_id: bounceId })
            else yield* records.update(tenant, EMAIL_SUPPRESSION_TYPE, key, { ...suppression.data, bounce_id: bounceId }, { expectedRevision: suppression.revision })
            yield* emitEvent("email_bounce.created", emailBounceView(bounce, null))
          }
          const saved = yield* records.update(
            tenant,
            EMAIL_MESSAGE_TYPE,
            candidate.id,
            {
              ...current.data,
              status: nextStatus,
              attempt_count: number,
              next_attempt_at: nextAt === null ? null : formatTimestamp(nextAt),
              last_error: lastError,
              bounce_id: bounceId,
              sent_at: outcome.outcome === "accepted" ? formatTimestamp(finishedAt) : null,
              updated_at: formatTimestamp(finishedAt),
              due_at: nextAt,
              lease_owner: null,
              lease_until: null
            },
            { expectedRevision: current.revision }
          )
          if (nextStatus !== "queued") yield* emitEvent(`email_message.${nextStatus}`, emailMessageView(saved, null))
          return nextStatus
        }).pipe(Effect.provideService(Caller, caller))
      )
      .pipe(Effect.catchIf(isStoreRace, () => Effect.succeed("lost" as const)))
    return recorded
  })

/** Messages read from the due-time index per pass at most. */
const MAIL_BATCH = 100

/**
 * The mail worker of a process, for its lifetime: every `interval`, read the messages due
 * (the `due_at` index across tenants: queued ones, retries whose time came, and claims whose
 * lease ran out) and start an attempt for each while the process's background budget has a
 * slot for its account (kind `delivery`, shared with webhook deliveries), each in a fiber
 * of its own. A failure of one pass or attempt is logged (its cause, never an address) and the
 * worker goes on.
 */
export const mailWorker = (interval: `${number} millis` = "200 millis") =>
  dueWorker({ type: EMAIL_MESSAGE_TYPE, name: "mail", kind: "delivery", batch: MAIL_BATCH, interval, drainFullBatches: true, attempt: attemptEmail })
