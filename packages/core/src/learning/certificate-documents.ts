/**
 * An issued certificate's document (issue 26): the PDF a learner receives, a file of purpose
 * `certificate` that the certificate names in `file_id` once it is rendered. Decisions (also in
 * docs/certificates.md):
 *
 * - **Rendered after the issue, not in it.** A certificate is issued inside the unit of work of
 *   a progress write or an exam attempt; drawing a PDF is CPU work of up to the renderer's time
 *   budget, and the renderer may be busy. So the issue writes, in its unit of work, what the
 *   document says (`certificate_document`, an internal record keyed by the certificate's ID:
 *   the template resolved with the learner's values, as they are when the certificate is
 *   issued), and `certificateDocumentsWorker` draws it through the same `CertificateRenderer`
 *   as the template's preview (its pool of render threads, off the event loop), stores the
 *   bytes, then records the file and sets the certificate's `file_id` (`certificate.updated`).
 *   A progress write is never slower, nor refused, because a document is being drawn.
 * - **Once, under a lease**: a worker claims a due document by a conditional update of its
 *   record (of two workers, in one process or two, one wins) that moves `due_at` to the end of
 *   the lease; the file is recorded only by the lease's holder, else its bytes are removed. A
 *   worker that dies leaves the document due when its lease runs out.
 * - **Retries**: a busy renderer is asked again a moment later; a failed render or an outage
 *   (storage, store) after `DOCUMENT_RETRY_DELAYS_MS`; after the last attempt, or at once when
 *   the document takes longer than the render budget (the same document would again), the
 *   record stays `failed` (and is logged) and the certificate keeps `file_id: null`.
 * - **Read as the certificate is**: the file requires `certificates.read` reaching the
 *   certificate (its own ID, its product's or its learner's: `anyOf`), and `users.read_personal`
 *   for the learner when the document prints personal data (the document line, or a field of the
 *   learner's email, document or phone).
 * - Kept as long as the certificate (`expires_at: null`); a sandbox reset removes both.
 */
import { Clock, Effect, Option, Random } from "effect"
import { Caller, type CallerInfo, callerRecordedIn, Ids } from "../access/context.js"
import { type ApiError, writeUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { type CertificateDocument, CertificateRenderer, type RenderBudgetExceeded, type RendererBusy, type RenderFailed } from "../ports/documents.js"
import { FileStorage } from "../ports/file-storage.js"
import { type AccessPath, housekeepingPath, isStoreRace, Records, type StoredRecord, UnitOfWork } from "../ports/store.js"
import { anchorsOf, resourceView } from "../records/resource.js"
import { formatTimestamp, HOUR, MINUTE, SECOND } from "../records/time.js"
import { recordChange } from "../trail/audit.js"
import { FILE_REQUIRES, FILE_TYPE, objectKey } from "../uploads/uploads.js"
import { dueWorker } from "../workers/due-worker.js"
import { readBackground, storeRenderedPdf } from "./certificate-template.js"
import { CERTIFICATE_DOCUMENT_TYPE, CERTIFICATE_PURPOSE, CERTIFICATE_TYPE, certificates } from "./certificates.js"

/** How long a claimed document stays with its worker: the render budget (10 s) and the storage write, with room. */
export const DOCUMENT_LEASE_MS = MINUTE
/** The waits after a failed attempt; after the last one the document is `failed`. */
export const DOCUMENT_RETRY_DELAYS_MS: ReadonlyArray<number> = [10 * SECOND, MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR]
/**
 * Documents a process renders at once at most: the render pool's queue keeps room for the
 * previews a client is waiting for.
 */
export const DOCUMENT_RENDERS_IN_FLIGHT = 2

/** The index of the worker: documents by due time, across tenants (null once failed). */
export const certificateDocumentsAccessPaths: ReadonlyArray<AccessPath> = [
  housekeepingPath(CERTIFICATE_DOCUMENT_TYPE, [], [{ field: "due_at", kind: "number" }])
]

// ---------------------------------------------------------------------------------------
// The worker

/** The caller the worker acts as for the file's audit entry and the event: whoever's change issued the certificate. */
const workerCaller = (job: StoredRecord): CallerInfo => callerRecordedIn(job, "issued_by")

/** What an attempt came to (for the worker's log and tests). */
export type DocumentOutcome = "rendered" | "busy" | "retry" | "failed" | "lost" | "gone"


/** The certificate's file recorded and named by the certificate, in one unit of work, while the lease is ours. */
const recordDocument = (job: StoredRecord, owner: string, file: { readonly id: string; readonly key: string; readonly size: number; readonly sha256: string }) =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const tenant = job.tenant
    return yield* uow.transaction(
      Effect.gen(function* () {
        const current = yield* records.get(tenant, CERTIFICATE_DOCUMENT_TYPE, job.id)
        if (!current || current.data.lease_owner !== owner) return "lost" as const
        const certificate = yield* records.get(tenant, CERTIFICATE_TYPE, job.id)
        if (!certificate) {
          // Gone meanwhile (a sandbox reset): nothing to name the file.
          yield* records.remove(tenant, CERTIFICATE_DOCUMENT_TYPE, job.id)
          return "gone" as const
        }
        const at = formatTimestamp(yield* Clock.currentTimeMillis)
        yield* records.insert(tenant, FILE_TYPE, file.id, {
          object: "file",
          id: file.id,
          purpose: CERTIFICATE_PURPOSE,
          filename: `certificate-${String(certificate.data.code)}.pdf`,
          size: file.size,
          content_type: "application/pdf",
          sha256: file.sha256,
          created_at: at,
          // Kept as long as the certificate.
          expires_at: null,
          storage_key: file.key,
          [FILE_REQUIRES]: current.data.requires ?? []
        })
        const saved = yield* records.update(tenant, CERTIFICATE_TYPE, job.id, { ...certificate.data, file_id: file.id, updated_at: at }, {
          expectedRevision: certificate.revision
        })
        yield* records.remove(tenant, CERTIFICATE_DOCUMENT_TYPE, job.id)
        yield* recordChange("file.created", { object: "file", id: file.id })
        const before = resourceView(certificates, certificate)
        const after = resourceView(certificates, saved)
        yield* emitEvent("certificate.updated", after, previousAttributes(before, after), anchorsOf(certificates, saved.data))
        return "rendered" as const
      }).pipe(Effect.provideService(Caller, workerCaller(job)))
    )
  })

/** The document back in line after a failed attempt (or `failed` after the last), while the lease is ours. */
const reschedule = (job: StoredRecord, owner: string, error: unknown, kind: "busy" | "retry" | "failed") =>
  Effect.gen(function* () {
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const current = yield* records.get(job.tenant, CERTIFICATE_DOCUMENT_TYPE, job.id)
    if (!current || current.data.lease_owner !== owner) return "lost" as const
    const attempts = Number(current.data.attempts ?? 0) + (kind === "busy" ? 0 : 1)
    const failed = kind === "failed" || (kind === "retry" && attempts > DOCUMENT_RETRY_DELAYS_MS.length)
    const due = failed ? null : kind === "busy" ? now + SECOND : now + DOCUMENT_RETRY_DELAYS_MS[attempts - 1]!
    yield* records.update(
      job.tenant,
      CERTIFICATE_DOCUMENT_TYPE,
      job.id,
      { ...current.data, status: failed ? "failed" : "queued", attempts, last_error: String(error).slice(0, 500), due_at: due, lease_owner: null, lease_until: null },
      { expectedRevision: current.revision }
    )
    if (failed) yield* Effect.logWarning("certificate document failed", { certificate: job.id, error: String(error).slice(0, 500) })
    return failed ? ("failed" as const) : kind
  })

/** How a failed render goes on: a busy renderer soon, past the budget never (the same document would be again), else later. */
const renderOutcome = (e: RenderFailed | RenderBudgetExceeded | RendererBusy) =>
  e._tag === "RendererBusy" ? ("busy" as const) : e._tag === "RenderBudgetExceeded" ? ("failed" as const) : ("retry" as const)

/**
 * Draw one due document, if this worker wins its claim: render it, store its bytes, and
 * record the file with the certificate's `file_id` (only while it still holds the lease; else
 * the bytes are removed).
 */
export const renderCertificateDocument = (candidate: StoredRecord) =>
  Effect.gen(function* () {
    const records = yield* Records
    const storage = yield* FileStorage
    const renderer = yield* CertificateRenderer
    const now = yield* Clock.currentTimeMillis
    if (candidate.data.status !== "queued") return "gone" as DocumentOutcome
    const owner = `cdw_${yield* Random.nextIntBetween(0, 2 ** 31)}_${yield* Random.nextIntBetween(0, 2 ** 31)}`
    const claimed = yield* records
      .update(
        candidate.tenant,
        CERTIFICATE_DOCUMENT_TYPE,
        candidate.id,
        { ...candidate.data, lease_owner: owner, lease_until: now + DOCUMENT_LEASE_MS, due_at: now + DOCUMENT_LEASE_MS },
        { expectedRevision: candidate.revision }
      )
      .pipe(
        Effect.map(Option.some),
        Effect.catchIf(isStoreRace, () => Effect.succeedNone)
      )
    if (Option.isNone(claimed)) return "lost" as DocumentOutcome
    const job = claimed.value
    const caller = workerCaller(job)

    const attempt: Effect.Effect<DocumentOutcome, ApiError | RenderFailed | RenderBudgetExceeded | RendererBusy, Records | UnitOfWork | FileStorage | Ids> =
      Effect.gen(function* () {
        const background = yield* readBackground(typeof job.data.background_file_id === "string" ? job.data.background_file_id : null).pipe(
          Effect.provideService(Caller, caller)
        )
        const document = { ...(job.data.document as unknown as CertificateDocument), background }
        const bytes = yield* renderer.render(document)
        const fileId = yield* (yield* Ids).next("file")
        const key = objectKey(job.tenant, fileId)
        const object = yield* storeRenderedPdf(key, bytes)
        const recorded = yield* recordDocument(job, owner, { id: fileId, key, size: object.size, sha256: object.sha256 }).pipe(
          Effect.catchIf(isStoreRace, () => Effect.succeed("lost" as const)),
          Effect.mapError((e): ApiError => (e._tag === "ApiError" ? e : writeUnavailable(e))),
          Effect.tapError(() => Effect.ignore(storage.deleteObject(key)))
        )
        if (recorded !== "rendered") yield* Effect.ignore(storage.deleteObject(key))
        return recorded
      })

    return yield* attempt.pipe(
      Effect.catchAll((e) =>
        reschedule(job, owner, e, e._tag === "ApiError" ? "retry" : renderOutcome(e)).pipe(
          Effect.catchAll(() => Effect.succeed("lost" as const)),
          Effect.map((outcome): DocumentOutcome => outcome)
        )
      )
    )
  })

/** Documents read from the due-time index per pass at most. */
const DOCUMENT_BATCH = 20

/**
 * The document worker of a process, for its lifetime: every `interval`, read the documents due
 * (the `due_at` index across tenants: new ones, retries whose time came, claims whose lease ran
 * out) and draw each while fewer than `DOCUMENT_RENDERS_IN_FLIGHT` are being drawn and the
 * process's background budget has a slot for its account (kind `operation`), each in a fiber
 * of its own. A failure of a pass or an attempt is logged and the worker goes on.
 */
export const certificateDocumentsWorker = (interval: `${number} millis` = "250 millis") =>
  dueWorker({
    type: CERTIFICATE_DOCUMENT_TYPE,
    name: "certificate document",
    kind: "operation",
    batch: DOCUMENT_BATCH,
    interval,
    maxInFlight: DOCUMENT_RENDERS_IN_FLIGHT,
    attempt: renderCertificateDocument
  })
