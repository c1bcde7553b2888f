/**
 * Email bounces (§4.4 `GET /reports/email-bounces`, `PATCH /reports/email-bounces/{bounce_id}`):
 * each permanent refusal (SMTP 5xx) of a mail the platform sent, recorded by the mail worker
 * from the server's answer (`mail/outbox.ts`). A bounce is `active` until it is ignored; while
 * an address has an active bounce no mail is queued to it. Ignoring a bounce (as one removes an
 * address from Postmark's or SendGrid's suppression list, after the learner fixed their
 * mailbox) lets mail go to the address again; it is never undone, and a new refusal records a
 * new bounce. Decisions: docs/email.md.
 */
import { Clock, Effect } from "effect"
import { Caller } from "../access/context.js"
import { apiError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { Records, type Where } from "../ports/store.js"
import { paginate } from "../records/pagination.js"
import { formatTimestamp } from "../records/time.js"
import { recordChange } from "../trail/audit.js"
import { addressKey, EMAIL_BOUNCE_TYPE, EMAIL_SUPPRESSION_TYPE, emailBounceView } from "./outbox.js"

export const emailBounceEtag = (bounce: { readonly id: string; readonly revision: number }) => `W/"${EMAIL_BOUNCE_TYPE}:${bounce.id}:${bounce.revision}"`

/** `GET /reports/email-bounces`: newest first, optionally of one `status`; cursor paginated. */
export const emailBouncesReport = Effect.fn("Reports.emailBounces")(function* (query: {
  readonly status: "active" | "ignored" | undefined
  readonly limit: number
  readonly cursor: string | undefined
}) {
  const caller = yield* Caller
  const where: Array<Where> = query.status === undefined ? [] : [{ field: "status", op: "eq", value: query.status }]
  const { items, page } = yield* paginate({
    tenant: caller.tenant,
    type: EMAIL_BOUNCE_TYPE,
    where,
    sort: { field: "id", kind: "text", direction: "desc" },
    limit: query.limit,
    cursor: query.cursor,
    collection: `report:email-bounces:${query.status ?? ""}`
  }).pipe(Effect.catchTag("StoreUnavailable", (e) => Effect.fail(readUnavailable(e))))
  return { data: items.map((item) => emailBounceView(item, caller)), page }
})

/**
 * `PATCH /reports/email-bounces/{bounce_id}` `{ "status": "ignored" }`: ignore a bounce. The
 * address's suppression goes with it when this is its latest bounce. Ignoring an ignored
 * bounce changes nothing (200, no event). Event `email_bounce.ignored`, with its audit entry.
 */
export const ignoreEmailBounce = Effect.fn("EmailBounces.ignore")(function* (bounceId: string, expectedRevision: number | undefined) {
  const caller = yield* Caller
  const records = yield* Records
  const bounce = yield* records.get(caller.tenant, EMAIL_BOUNCE_TYPE, bounceId).pipe(Effect.mapError(readUnavailable))
  if (!bounce) return yield* Effect.fail(apiError("not_found"))
  if (expectedRevision !== undefined && bounce.revision !== expectedRevision) return yield* Effect.fail(apiError("revision_mismatch"))
  if (bounce.data.status === "ignored") return { data: emailBounceView(bounce, caller), etag: emailBounceEtag(bounce) }
  const now = formatTimestamp(yield* Clock.currentTimeMillis)
  const saved = yield* records
    .update(caller.tenant, EMAIL_BOUNCE_TYPE, bounceId, { ...bounce.data, status: "ignored", ignored_at: now, updated_at: now }, {
      expectedRevision: bounce.revision
    })
    .pipe(
      Effect.catchTags({
        RevisionConflict: () => Effect.fail(apiError("revision_mismatch")),
        UniqueViolation: () => Effect.fail(apiError("revision_mismatch")),
        StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
      })
    )
  const key = yield* addressKey(String(bounce.data.email))
  const suppression = yield* records.get(caller.tenant, EMAIL_SUPPRESSION_TYPE, key).pipe(Effect.mapError(writeUnavailable))
  if (suppression !== undefined && suppression.data.bounce_id === bounceId) {
    yield* records.remove(caller.tenant, EMAIL_SUPPRESSION_TYPE, key).pipe(Effect.mapError(writeUnavailable))
  }
  const before = emailBounceView(bounce, null)
  const after = emailBounceView(saved, null)
  yield* emitEvent("email_bounce.ignored", after, previousAttributes(before, after))
  yield* recordChange("email_bounce.ignored", { object: EMAIL_BOUNCE_TYPE, id: bounceId })
  return { data: emailBounceView(saved, caller), etag: emailBounceEtag(saved) }
})
