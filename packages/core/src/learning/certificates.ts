/**
 * Issued certificates (release 3.2.0; `crt_`): what a learner receives when a product's
 * certificate template is enabled and its criteria are met. Read through `GET /certificates`
 * and `GET /certificates/{certificate_id}`; never created, changed or removed through the API:
 * `issueCertificateIfEarned` issues them, inside the unit of work of the progress change or
 * exam attempt that earned them.
 *
 * Decisions where the contract is silent (also in the OpenAPI descriptions and
 * docs/certificates.md):
 * - Once: with `single_issue` a learner gets at most one certificate of a product, ever;
 *   without it, at most one per enrollment (a new enrollment may earn a new one). Either way
 *   a unique key of the store holds it, so concurrent units of work cannot issue twice.
 * - `sequence` numbers a product's certificates from 1 in the order they are issued (a counter
 *   record per product, written in the same unit of work).
 * - `code` is a verification code of 16 characters of Crockford's base-32 in four groups
 *   (`7KQ2-M9XD-4TZP-0C8W`), from the platform's cryptographic randomness, unique in the
 *   environment.
 * - `criteria` is the template's criteria as they were when the certificate was issued.
 * - `file_id`: its document, a PDF (purpose `certificate`), drawn after the issue from what the
 *   issue wrote down (`queueCertificateDocument`; the drawing: certificate-documents.ts); null
 *   until then.
 * - Events: `certificate.issued`, with its audit entry; `certificate.updated` when its document
 *   is named.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { Caller, Ids } from "../access/context.js"
import { READ_PERSONAL, type Requirement, requirementsJson } from "../access/scope.js"
import { apiError, writeUnavailable } from "../errors/errors.js"
import { emitEvent } from "../events/events.js"
import { Crypto } from "../ports/crypto.js"
import { USER_TYPE, users } from "../people/people-users.js"
import { type Json, type JsonObject, Records } from "../ports/store.js"
import { anchorsOf, defineResource, writtenByThePlatform, equalsFilter, type FilterDefinition, type ResourceDefinition, resourceView } from "../records/resource.js"
import { PublicId, Timestamp } from "../records/schema.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"
import { recordChange } from "../trail/audit.js"
import { backgroundFileId, certificateDocument, criteriaKinds, templateOf } from "./certificate-template.js"

export const CERTIFICATE_TYPE = "certificate"
/** A product's last `sequence` (record ID: the product's). */
export const CERTIFICATE_SEQUENCE_TYPE = "certificate_sequence"
/** What a certificate's document says, until it is drawn (record ID: the certificate's; certificate-documents.ts). */
export const CERTIFICATE_DOCUMENT_TYPE = "certificate_document"
/** The purpose of an issued certificate's file. */
export const CERTIFICATE_PURPOSE = "certificate"

const WireTimestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

const issuedRange = (name: "issued_after" | "issued_before"): FilterDefinition => ({
  schema: Timestamp,
  on: { field: "issued_at", match: "text" },
  description: name === "issued_after" ? "Issued at or after this instant." : "Issued before this instant.",
  where: (value: never) => [
    {
      field: "issued_at",
      op: name === "issued_after" ? "gte" : "lt",
      // Compared as stored (UTC, milliseconds, `Z`); the query's schema has checked the value.
      value: Option.match(parseTimestamp(value as string), { onNone: () => value as string, onSome: formatTimestamp })
    }
  ]
})

export const certificates: ResourceDefinition = defineResource({
  type: CERTIFICATE_TYPE,
  idKind: "certificate",
  plural: "certificates",
  path: "/certificates",
  tag: "Learning",
  // A policy naming the product or the learner reaches the certificate.
  owners: ["product_id", "user_id"],
  fields: {
    user_id: Schema.String.annotations({ description: "The learner." }),
    product_id: Schema.String,
    enrollment_id: Schema.NullOr(Schema.String).annotations({ description: "The enrollment that earned it." }),
    issued_at: WireTimestamp,
    sequence: Schema.Int.annotations({ description: "1-based: the product's certificates numbered in the order they were issued." }),
    code: Schema.String.annotations({
      description: "Verification code: 16 characters of Crockford's base-32 in four groups (`7KQ2-M9XD-4TZP-0C8W`), unique in the environment."
    }),
    criteria: Schema.Struct({
      kind: Schema.Literal(...criteriaKinds),
      percent: Schema.NullOr(Schema.Number),
      exam_id: Schema.NullOr(Schema.String)
    }).annotations({ description: "The template's criteria when the certificate was issued." }),
    file_id: Schema.NullOr(Schema.String).annotations({
      description:
        "Its document: a PDF file (purpose `certificate`) with the learner's name and the verification code, downloaded with `GET /files/{file_id}/content`. `null` until it is drawn, moments after the issue (`certificate.updated` then names it)."
    })
  },
  // Issued by the platform (`issueCertificateIfEarned`), never through a body.
  ...writtenByThePlatform,
  trash: false,
  revision: "string",
  filters: {
    user_id: equalsFilter("user_id", PublicId("user"), "Certificates of this learner."),
    product_id: equalsFilter("product_id", PublicId("product"), "Certificates of this product."),
    issued_after: issuedRange("issued_after"),
    issued_before: issuedRange("issued_before")
  },
  sorts: [{ name: "issued_at", field: "issued_at", kind: "text" }],
  // Newest first, as the other collections of records people make.
  defaultReversed: true
})

/** What earned (or not) a certificate: the state of the learner's enrollment after the change. */
export interface CertificateProgress {
  readonly userId: string
  readonly productId: string
  readonly enrollmentId: string
  /** The enrollment's progress, 0 to 100. */
  readonly percent: number
  readonly completed: boolean
  /** Exams of the product the learner has passed (an attempt at or above the exam's `min_grade`). */
  readonly passedExamIds: ReadonlyArray<string>
}

/** Does this progress meet the template's criteria? */
export const criteriaMet = (criteria: JsonObject, progress: CertificateProgress): boolean => {
  switch (criteria.kind) {
    case "completion":
      return progress.completed
    case "percent":
      return typeof criteria.percent === "number" && progress.percent >= criteria.percent
    case "exam":
      return typeof criteria.exam_id === "string" && progress.passedExamIds.includes(criteria.exam_id)
    default:
      return false
  }
}

/** Crockford's base-32: no I, L, O, U. */
const CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

/** 16 characters (80 bits) in four groups. */
export const verificationCode = (bytes: Uint8Array): string => {
  let bits = 0
  let value = 0
  let out = ""
  for (const byte of bytes) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5 && out.length < 16) {
      out += CODE_ALPHABET[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
    value &= (1 << bits) - 1
  }
  return out.match(/.{4}/g)!.join("-")
}

/** The unique key that makes issuing happen once: per learner and product, or per enrollment. */
const issueKey = (singleIssue: boolean, progress: CertificateProgress) =>
  singleIssue
    ? { name: "issued_once", value: `${progress.productId}:${progress.userId}` }
    : { name: "issued_per_enrollment", value: `${progress.productId}:${progress.enrollmentId}` }

/** The product's next `sequence`, kept in a counter record written in the caller's unit of work. */
const nextSequence = (productId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const counter = yield* records.get(caller.tenant, CERTIFICATE_SEQUENCE_TYPE, productId)
    const next = (typeof counter?.data.last === "number" ? counter.data.last : 0) + 1
    if (counter) {
      yield* records.update(caller.tenant, CERTIFICATE_SEQUENCE_TYPE, productId, { last: next }, { expectedRevision: counter.revision })
    } else {
      yield* records.insert(caller.tenant, CERTIFICATE_SEQUENCE_TYPE, productId, { last: next })
    }
    return next
  })

/** Attributes of a learner that are personal data (the users' description says which). */
const personalAttributes = (): ReadonlyArray<string> => (users.personal ?? []).map((field) => field.path[0] ?? "")

const text = (value: Json | undefined): string =>
  value === null || value === undefined ? "" : Array.isArray(value) ? value.map(text).join(", ") : typeof value === "object" ? JSON.stringify(value) : String(value)

/**
 * Inside the unit of work that issued `certificate`: what its document says (the template with
 * the learner's values as they are now), queued for the worker.
 */
export const queueCertificateDocument = Effect.fn("Certificates.queueDocument")(function* (certificate: JsonObject, template: JsonObject) {
  const caller = yield* Caller
  const records = yield* Records
  const userId = String(certificate.user_id)
  const productId = String(certificate.product_id)
  const [user, product] = yield* Effect.all([records.get(caller.tenant, USER_TYPE, userId), records.get(caller.tenant, "product", productId)]).pipe(
    Effect.mapError(writeUnavailable)
  )
  const learner = user?.data ?? {}
  const customFields = (learner.custom_fields ?? {}) as JsonObject
  const fields = template.fields as ReadonlyArray<JsonObject>
  const values = Object.fromEntries(
    fields.map((f) => [String(f.key), text(f.source === "user" ? learner[String(f.key)] : customFields[String(f.key)])])
  )
  const document = certificateDocument(
    String(product?.data.name ?? ""),
    template,
    {
      learnerName: text(learner.name),
      document: typeof learner.document === "string" && learner.document !== "" ? learner.document : null,
      issuedAt: String(certificate.issued_at),
      sequence: Number(certificate.sequence),
      code: String(certificate.code),
      fields: values
    },
    null,
    false
  )
  const printsPersonal =
    (document.layout.lines.document.enabled && document.learner.document !== null) ||
    fields.some((f) => f.source === "user" && personalAttributes().includes(String(f.key)) && values[String(f.key)] !== "")
  const requires: ReadonlyArray<Requirement> = [
    { capability: "certificates.read", resources: [String(certificate.id), productId, userId], anyOf: true },
    ...(printsPersonal ? [{ capability: READ_PERSONAL, resources: [userId] }] : [])
  ]
  const now = yield* Clock.currentTimeMillis
  yield* records
    .insert(caller.tenant, CERTIFICATE_DOCUMENT_TYPE, String(certificate.id), {
      id: String(certificate.id),
      status: "queued",
      document: document as unknown as JsonObject,
      background_file_id: backgroundFileId(template),
      requires: requirementsJson(requires),
      attempts: 0,
      last_error: null,
      due_at: now,
      lease_owner: null,
      lease_until: null,
      issued_by: { credential_id: caller.credential.id, administrator_id: caller.human?.adminId ?? null, request_id: caller.requestId }
    })
    .pipe(Effect.mapError(writeUnavailable))
})

/**
 * Issue the certificate a learner has just earned, if any: call it inside the unit of work of
 * the change that may have earned it (a progress write, an exam attempt), with the state after
 * that change. Issues nothing when the product's template is disabled (or was never set up),
 * when its criteria are not met, or when the certificate was already issued (once per learner
 * and product with `single_issue`, else once per enrollment). Answers the certificate issued
 * (its representation, also the payload of the `certificate.issued` event), or `null`.
 */
export const issueCertificateIfEarned = Effect.fn("Certificates.issueIfEarned")(function* (progress: CertificateProgress) {
  const caller = yield* Caller
  const records = yield* Records
  const template = yield* templateOf(progress.productId)
  if (template.enabled !== true) return null
  const criteria = template.criteria as JsonObject
  if (!criteriaMet(criteria, progress)) return null
  const key = issueKey(template.single_issue === true, progress)
  const existing = yield* records.findUnique(caller.tenant, CERTIFICATE_TYPE, key).pipe(Effect.mapError(writeUnavailable))
  if (existing) return null
  const id = yield* (yield* Ids).next("certificate")
  const code = verificationCode((yield* Crypto).randomBytes(10))
  const sequence = yield* nextSequence(progress.productId).pipe(
    Effect.catchTags({
      RevisionConflict: () => Effect.fail(apiError("state_conflict", { reason: "concurrent_update" })),
      UniqueViolation: () => Effect.fail(apiError("state_conflict", { reason: "concurrent_update" })),
      StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
    })
  )
  const at = formatTimestamp(yield* Clock.currentTimeMillis)
  const data: JsonObject = {
    object: CERTIFICATE_TYPE,
    id,
    user_id: progress.userId,
    product_id: progress.productId,
    enrollment_id: progress.enrollmentId,
    issued_at: at,
    sequence,
    code,
    criteria: { kind: criteria.kind ?? "completion", percent: criteria.percent ?? null, exam_id: criteria.exam_id ?? null },
    file_id: null,
    created_at: at,
    updated_at: at,
    deleted: false
  }
  const record = yield* records.insert(caller.tenant, CERTIFICATE_TYPE, id, data, [key, { name: "code", value: code }]).pipe(
    Effect.catchTags({
      // Another unit of work issued it first (the store's unique key): nothing more to issue.
      UniqueViolation: () => Effect.fail(apiError("state_conflict", { reason: "concurrent_update" })),
      StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
    })
  )
  const view = resourceView(certificates, record)
  yield* queueCertificateDocument(data, template)
  yield* recordChange(`${CERTIFICATE_TYPE}.issued`, { object: CERTIFICATE_TYPE, id })
  yield* emitEvent(`${CERTIFICATE_TYPE}.issued`, view, null, anchorsOf(certificates, data))
  return view
})

/** The events of issued certificates: issued, then updated once, when their document is named. */
export const certificateEventVerbs = ["issued", "updated"] as const
