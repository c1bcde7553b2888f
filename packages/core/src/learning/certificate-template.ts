/**
 * A product's certificate template (§2.3 `certificate_template`, §4.3, §4.6; release 3.2.0)
 * and its PDF preview. The template has no ID of its own: it is addressed through its product
 * (`/products/{product_id}/certificate-template`) and stored as one record whose ID is the
 * product's.
 *
 * Decisions where the contract is silent (also in the OpenAPI descriptions and
 * docs/certificates.md):
 * - A product never given a template answers the defaults (`defaultTemplate`), `enabled:
 *   false`, so that GET is never 404 for a product that exists.
 * - PUT replaces the whole template: every field omitted, at any depth, takes its default.
 *   `criteria.percent` is required with kind `percent` (1 to 100) and not allowed with another
 *   kind; `criteria.exam_id` is required with kind `exam` (an exam of the product) and not
 *   allowed with another; `layout.background` is an uploaded PNG or JPEG (purpose `image`);
 *   field keys are unique. Each problem is itemized (422).
 * - The ETag covers the template and its product (§4.3: "other product changes also change
 *   it"): its revision is the template's revision plus the product's. Both only grow, so any
 *   change of either gives a new, never repeated, number: an `If-Match` with an ETag read
 *   before a change of the product is 412 `revision_mismatch`. The `revision` field is that
 *   same number.
 * - A replicated product's template is read-only (403 `replica_readonly`).
 * - A layout line's `color` or `font` left `null` is the template's `defaults`.
 * - Preview (`POST .../certificate-template/previews`): the template rendered with sample
 *   values to a PDF, stored as a file of purpose `certificate_preview`. A disabled template can
 *   be previewed (one checks it before enabling it). The file expires 24 hours after it is made
 *   (`expires_at`; `CERTIFICATE_PREVIEW_TTL_MS`): then it is 404 and the housekeeping removes
 *   it and its bytes. 409 `template_not_previewable` when there
 *   is nothing to preview: the product has no template yet (reason `no_template`), or the
 *   template has neither `texts.content` nor `fields` (reason `no_content`).
 */
import { Clock, Effect, Option, Schema, Stream } from "effect"
import { Caller, Ids } from "../access/context.js"
import { type ApiError, apiError, type DetailItem, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { emitEvent, previousAttributes } from "../events/events.js"
import { products } from "../catalog/products.js"
import {
  type CertificateDocument,
  type CertificateFont,
  CertificateRenderer,
  type CertificateLine,
  type QrPosition,
  type RenderBudgetExceeded,
  type RendererBusy,
  type RenderFailed
} from "../ports/documents.js"
import { FileStorage, type StorageUnavailable } from "../ports/file-storage.js"
import { type Json, type JsonObject, Records, type StoredRecord, UnitOfWork } from "../ports/store.js"
import { getResource, isReplica, ruleViolation } from "../records/resource.js"
import { Bool, Enum, List, PublicId, Text, Timestamp } from "../records/schema.js"
import { formatTimestamp, parseTimestamp } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { recordChange } from "../trail/audit.js"
import { FILE_REQUIRES, FILE_TYPE, fileFields, objectKey, requireFile } from "../uploads/uploads.js"
import { requirementsJson } from "../access/scope.js"
import { CERTIFICATE_PREVIEW_TTL_MS } from "../uploads/file-content.js"

export const CERTIFICATE_TEMPLATE_TYPE = "certificate_template"
/** The purpose of the files previews make (never accepted by an upload). */
export const CERTIFICATE_PREVIEW_PURPOSE = "certificate_preview"

export const criteriaKinds = ["completion", "percent", "exam"] as const
export type CriteriaKind = (typeof criteriaKinds)[number]
export const certificateFonts = ["arial", "helvetica", "times_new_roman", "courier_new"] as const satisfies ReadonlyArray<CertificateFont>
export const qrPositions = ["top-left", "top-right", "bottom-left", "bottom-right"] as const satisfies ReadonlyArray<QrPosition>
export const fieldSources = ["custom_field", "user"] as const
/** A template lists at most this many `fields` (a certificate is one page). */
export const MAX_TEMPLATE_FIELDS = 20
/** Image types a background may have (those a PDF embeds as they are). */
const backgroundTypes = ["image/png", "image/jpeg"] as const
/** A background is read whole to draw it: at most 10 MiB. */
export const MAX_BACKGROUND_BYTES = 10 * 1024 * 1024

// ---------------------------------------------------------------------------------------
// The request body (PUT)

const HexColor = Schema.String.annotations({ message: () => "invalid_type|expected=string" }).pipe(
  Schema.filter((s) => /^#[0-9A-Fa-f]{6}$/.test(s) || "invalid_value|expected=#RRGGBB"),
  Schema.annotations({ jsonSchema: { type: "string", pattern: "^#[0-9A-Fa-f]{6}$", minLength: 7, maxLength: 7 } })
)
const Font = Enum(...certificateFonts)
const Percent = Schema.Number.annotations({ message: () => "invalid_type|expected=number" }).pipe(
  Schema.filter((n) => (Number.isFinite(n) && n > 0 && n <= 100) || "out_of_range|min=0 (exclusive)|max=100"),
  Schema.annotations({ jsonSchema: { type: "number", exclusiveMinimum: 0, maximum: 100 } })
)

const LineInput = Schema.Struct({
  color: Schema.optional(Schema.NullOr(HexColor).annotations({ description: "`null` or omitted: `defaults.color`." })),
  enabled: Schema.optional(Bool),
  font: Schema.optional(Schema.NullOr(Font).annotations({ description: "`null` or omitted: `defaults.font`." }))
})

export const CertificateTemplateInput = Schema.Struct({
  enabled: Schema.optional(Bool.annotations({ description: "Certificates are issued only while enabled. Default `false`." })),
  single_issue: Schema.optional(Bool.annotations({ description: "At most one certificate per learner and product. Default `true`." })),
  criteria: Schema.optional(
    Schema.Struct({
      kind: Enum(...criteriaKinds).annotations({
        description: "`completion`: the enrollment is completed; `percent`: its progress reaches `percent`; `exam`: the exam `exam_id` is passed."
      }),
      percent: Schema.optional(Schema.NullOr(Percent).annotations({ description: "Required with kind `percent`; not allowed with another." })),
      exam_id: Schema.optional(Schema.NullOr(PublicId("exam")).annotations({ description: "An exam of the product; required with kind `exam`, not allowed with another." }))
    })
  ),
  defaults: Schema.optional(Schema.Struct({ color: Schema.optional(HexColor), font: Schema.optional(Font) })),
  fields: Schema.optional(
    List(
      Schema.Struct({
        key: Text({ min: 1, max: 64 }).annotations({ description: "The custom field's key (`custom_field`) or the user's attribute (`user`: `name`, `email`, `document`)." }),
        label: Text({ min: 1, max: 200 }),
        source: Enum(...fieldSources)
      }),
      MAX_TEMPLATE_FIELDS
    ).annotations({ description: `Extra lines of the certificate, in order; at most ${MAX_TEMPLATE_FIELDS}, keys unique.` })
  ),
  layout: Schema.optional(
    Schema.Struct({
      back_side_enabled: Schema.optional(Bool),
      background: Schema.optional(Schema.NullOr(PublicId("file")).annotations({ description: "A PNG or JPEG file of purpose `image`, or `null`." })),
      show_dates: Schema.optional(Bool),
      show_product_name: Schema.optional(Bool),
      fields: Schema.optional(
        Schema.Struct({
          date: Schema.optional(LineInput),
          document: Schema.optional(LineInput),
          name: Schema.optional(LineInput),
          sequence: Schema.optional(LineInput)
        })
      ),
      qr: Schema.optional(
        Schema.Struct({
          background_color: Schema.optional(HexColor),
          color: Schema.optional(HexColor),
          enabled: Schema.optional(Bool),
          position: Schema.optional(Enum(...qrPositions))
        })
      )
    })
  ),
  texts: Schema.optional(
    Schema.Struct({
      content: Schema.optional(
        Schema.NullOr(Text()).annotations({
          description:
            "The certificate's text; `{name}`, `{product}`, `{date}`, `{document}`, `{sequence}`, `{code}`, `{workload}` and `{instructor}` are filled in."
        })
      ),
      instructor: Schema.optional(Schema.NullOr(Text({ max: 200 }))),
      workload: Schema.optional(Schema.NullOr(Text({ max: 200 })).annotations({ description: "As printed, e.g. `40 hours`." }))
    })
  )
}).annotations({ identifier: "CertificateTemplateInput" })
export type CertificateTemplateInput = typeof CertificateTemplateInput.Type

// ---------------------------------------------------------------------------------------
// The representation

const LineSchema = Schema.Struct({ color: Schema.NullOr(Schema.String), enabled: Schema.Boolean, font: Schema.NullOr(Schema.Literal(...certificateFonts)) })

/** The answer's schema (§2.3), for the description. */
export const CertificateTemplateSchema = Schema.Struct({
  object: Schema.Literal(CERTIFICATE_TEMPLATE_TYPE),
  product_id: Schema.String,
  revision: Schema.String.annotations({ description: "The template's revision plus its product's: the number of the ETag." }),
  enabled: Schema.Boolean,
  single_issue: Schema.Boolean,
  criteria: Schema.Struct({
    kind: Schema.Literal(...criteriaKinds),
    percent: Schema.NullOr(Schema.Number),
    exam_id: Schema.NullOr(Schema.String)
  }),
  defaults: Schema.Struct({ color: Schema.String, font: Schema.Literal(...certificateFonts) }),
  fields: Schema.Array(Schema.Struct({ key: Schema.String, label: Schema.String, source: Schema.Literal(...fieldSources) })),
  layout: Schema.Struct({
    back_side_enabled: Schema.Boolean,
    background: Schema.NullOr(Schema.String),
    show_dates: Schema.Boolean,
    show_product_name: Schema.Boolean,
    fields: Schema.Struct({ date: LineSchema, document: LineSchema, name: LineSchema, sequence: LineSchema }),
    qr: Schema.Struct({
      background_color: Schema.String,
      color: Schema.String,
      enabled: Schema.Boolean,
      position: Schema.Literal(...qrPositions)
    })
  }),
  texts: Schema.Struct({ content: Schema.NullOr(Schema.String), instructor: Schema.NullOr(Schema.String), workload: Schema.NullOr(Schema.String) })
}).annotations({ identifier: "CertificateTemplate" })

/** The fields of the representation, in order (the event-type catalog lists them). */
export const certificateTemplateFields = ["object", "product_id", "revision", "enabled", "single_issue", "criteria", "defaults", "fields", "layout", "texts"] as const

const line = (enabled: boolean): JsonObject => ({ color: null, enabled, font: null })

/** What a product without a template answers, and what every omitted field of a PUT becomes. */
export const defaultTemplate: JsonObject = {
  enabled: false,
  single_issue: true,
  criteria: { kind: "completion", percent: null, exam_id: null },
  defaults: { color: "#000000", font: "arial" },
  fields: [],
  layout: {
    back_side_enabled: false,
    background: null,
    show_dates: true,
    show_product_name: true,
    fields: { date: line(true), document: line(false), name: line(true), sequence: line(true) },
    qr: { background_color: "#FFFFFF", color: "#000000", enabled: true, position: "bottom-right" }
  },
  texts: { content: null, instructor: null, workload: null }
}

const isObject = (value: Json | undefined): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value)

/** The body given, every omitted field (at any depth) its default; `null` stays `null` where a field takes it. */
const withDefaults = (given: Json | undefined, defaults: Json): Json => {
  if (given === undefined) return defaults
  if (isObject(defaults) && isObject(given)) {
    return Object.fromEntries(Object.keys(defaults).map((k) => [k, withDefaults(given[k], defaults[k]!)]))
  }
  return given
}

/** The template's data as stored (the defaults for a product that has none). */
const templateData = (record: StoredRecord | undefined): JsonObject => {
  if (!record) return defaultTemplate
  return withDefaults(record.data, defaultTemplate) as JsonObject
}

/** The revision of the ETag: the template's (0 before its first PUT) plus the product's. */
const etagRevision = (product: StoredRecord, template: StoredRecord | undefined) => (template?.revision ?? 0) + product.revision

export const certificateTemplateView = (product: StoredRecord, template: StoredRecord | undefined): JsonObject =>
  inOrder(
    { ...templateData(template), object: CERTIFICATE_TEMPLATE_TYPE, product_id: product.id, revision: String(etagRevision(product, template)) },
    certificateTemplateFields
  )

export const certificateTemplateEtag = (product: StoredRecord, template: StoredRecord | undefined) =>
  `W/"${CERTIFICATE_TEMPLATE_TYPE}:${product.id}:${etagRevision(product, template)}"`

// ---------------------------------------------------------------------------------------
// Reading

/** A product's template record, or undefined (never written). Within a unit of work, part of it. */
export const loadCertificateTemplate = (productId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    return yield* records.get(caller.tenant, CERTIFICATE_TEMPLATE_TYPE, productId).pipe(Effect.mapError(readUnavailable))
  })

/** The template as the rules read it (defaults resolved), for a product of the caller's tenant. */
export const templateOf = (productId: string) => Effect.map(loadCertificateTemplate(productId), templateData)

export const getCertificateTemplate = Effect.fn("CertificateTemplates.get")(function* (productId: string) {
  const product = yield* getResource(products, {}, productId)
  const template = yield* loadCertificateTemplate(product.id)
  return { data: certificateTemplateView(product, template), etag: certificateTemplateEtag(product, template) }
})

// ---------------------------------------------------------------------------------------
// Replacing

/** An exam of the product, not trashed (record type `exam`, `data.product_id`). */
const isExamOf = (productId: string, examId: string) =>
  Effect.gen(function* () {
    const caller = yield* Caller
    const records = yield* Records
    const exam = yield* records.get(caller.tenant, "exam", examId).pipe(Effect.mapError(writeUnavailable))
    return exam !== undefined && exam.data.deleted !== true && exam.data.product_id === productId
  })

/** The rules of a replaced template beyond its schema, each problem itemized. */
const templateProblems = (productId: string, data: JsonObject) =>
  Effect.gen(function* () {
    const problems: Array<DetailItem> = []
    const criteria = data.criteria as JsonObject
    if (criteria.kind === "percent" && criteria.percent === null) problems.push({ field: "criteria.percent", code: "required" })
    if (criteria.kind !== "percent" && criteria.percent !== null) problems.push({ field: "criteria.percent", code: "not_allowed", reason: "criteria_kind" })
    if (criteria.kind === "exam") {
      if (criteria.exam_id === null) problems.push({ field: "criteria.exam_id", code: "required" })
      else if (!(yield* isExamOf(productId, String(criteria.exam_id)))) {
        problems.push({ field: "criteria.exam_id", code: "validation_failed", reason: "not_found" })
      }
    } else if (criteria.exam_id !== null) problems.push({ field: "criteria.exam_id", code: "not_allowed", reason: "criteria_kind" })
    const seen = new Set<string>()
    ;(data.fields as ReadonlyArray<JsonObject>).forEach((field, i) => {
      const key = String(field.key)
      if (seen.has(key)) problems.push({ field: `fields[${i}].key`, code: "invalid_value", reason: "duplicate" })
      seen.add(key)
    })
    const background = (data.layout as JsonObject).background
    if (typeof background === "string") {
      const file = yield* Effect.either(requireFile("layout.background", background, ["image"]))
      if (file._tag === "Left") {
        if (file.left.code !== "validation_failed") return yield* Effect.fail(file.left)
        problems.push(...file.left.details)
      } else if (!(backgroundTypes as ReadonlyArray<Json>).includes(file.right.data.content_type ?? null)) {
        problems.push({ field: "layout.background", code: "invalid_value", reason: "unsupported_image_type", allowed: [...backgroundTypes] })
      } else if (Number(file.right.data.size) > MAX_BACKGROUND_BYTES) {
        problems.push({ field: "layout.background", code: "out_of_range", reason: "file_too_large", params: { min: 1, max: MAX_BACKGROUND_BYTES } })
      }
    }
    return problems
  })

export const replaceCertificateTemplate = Effect.fn("CertificateTemplates.replace")(function* (
  productId: string,
  input: CertificateTemplateInput,
  expectedRevision: number | undefined
) {
  const caller = yield* Caller
  const records = yield* Records
  const product = yield* getResource(products, {}, productId)
  const current = yield* loadCertificateTemplate(product.id)
  if (expectedRevision !== undefined && expectedRevision !== etagRevision(product, current)) return yield* Effect.fail(apiError("revision_mismatch"))
  if (isReplica(product)) return yield* Effect.fail(apiError("replica_readonly"))
  const data = withDefaults(input as unknown as Json, defaultTemplate) as JsonObject
  const problems = yield* templateProblems(product.id, data)
  if (problems.length > 0) return yield* Effect.fail(ruleViolation(problems))
  const stored: JsonObject = { ...data, updated_at: formatTimestamp(yield* Clock.currentTimeMillis) }
  const saved = yield* (current
    ? records.update(caller.tenant, CERTIFICATE_TEMPLATE_TYPE, product.id, stored, { expectedRevision: current.revision })
    : records.insert(caller.tenant, CERTIFICATE_TEMPLATE_TYPE, product.id, stored)
  ).pipe(
    Effect.catchTags({
      RevisionConflict: () => Effect.fail(apiError("revision_mismatch")),
      UniqueViolation: () => Effect.fail(apiError("revision_mismatch")),
      StoreUnavailable: (e) => Effect.fail(writeUnavailable(e))
    })
  )
  const before = certificateTemplateView(product, current)
  const after = certificateTemplateView(product, saved)
  yield* recordChange(`${CERTIFICATE_TEMPLATE_TYPE}.updated`, { object: CERTIFICATE_TEMPLATE_TYPE, id: product.id })
  yield* emitEvent(`${CERTIFICATE_TEMPLATE_TYPE}.updated`, after, previousAttributes(before, after))
  return { data: after, etag: certificateTemplateEtag(product, saved) }
})

// ---------------------------------------------------------------------------------------
// What a certificate says

const fontOf = (value: Json | undefined, fallback: CertificateFont): CertificateFont =>
  (certificateFonts as ReadonlyArray<Json | undefined>).includes(value) ? (value as CertificateFont) : fallback

const resolveLine = (data: Json | undefined, defaults: { color: string; font: CertificateFont }): CertificateLine => {
  const l = isObject(data) ? data : {}
  return { enabled: l.enabled === true, color: typeof l.color === "string" ? l.color : defaults.color, font: fontOf(l.font, defaults.font) }
}

/** The values of one certificate: a learner's, or the samples of a preview. */
export interface CertificateValues {
  readonly learnerName: string
  readonly document: string | null
  readonly issuedAt: string
  readonly sequence: number
  readonly code: string
  /** Values of the template's `fields`, by key. */
  readonly fields: Readonly<Record<string, string>>
}

const fill = (text: string, values: Readonly<Record<string, string>>) =>
  text.replace(/\{([a-z_]+)\}/g, (whole, name: string) => values[name] ?? whole)

/** The document a renderer draws: the template (defaults resolved) with one certificate's values. */
export const certificateDocument = (
  productName: string,
  template: JsonObject,
  values: CertificateValues,
  background: CertificateDocument["background"],
  preview: boolean
): CertificateDocument => {
  const d = template.defaults as JsonObject
  const defaults = { color: String(d.color), font: fontOf(d.font, "arial") }
  const layout = template.layout as JsonObject
  const lines = layout.fields as JsonObject
  const qr = layout.qr as JsonObject
  const texts = template.texts as JsonObject
  const text = (v: Json | undefined) => (typeof v === "string" && v.trim() !== "" ? v : null)
  const date = values.issuedAt.slice(0, 10)
  const placeholders: Record<string, string> = {
    name: values.learnerName,
    product: productName,
    date,
    document: values.document ?? "",
    sequence: String(values.sequence),
    code: values.code,
    workload: text(texts.workload) ?? "",
    instructor: text(texts.instructor) ?? ""
  }
  const content = text(texts.content)
  return {
    product: { name: productName },
    defaults,
    layout: {
      showDates: layout.show_dates === true,
      showProductName: layout.show_product_name === true,
      backSideEnabled: layout.back_side_enabled === true,
      lines: {
        name: resolveLine(lines.name, defaults),
        date: resolveLine(lines.date, defaults),
        document: resolveLine(lines.document, defaults),
        sequence: resolveLine(lines.sequence, defaults)
      },
      qr: {
        enabled: qr.enabled === true,
        position: (qrPositions as ReadonlyArray<Json | undefined>).includes(qr.position) ? (qr.position as QrPosition) : "bottom-right",
        color: String(qr.color),
        backgroundColor: String(qr.background_color)
      }
    },
    content: content === null ? null : fill(content, placeholders),
    instructor: text(texts.instructor),
    workload: text(texts.workload),
    fields: (template.fields as ReadonlyArray<JsonObject>).map((f) => ({ label: String(f.label), value: values.fields[String(f.key)] ?? "" })),
    learner: { name: values.learnerName, document: values.document },
    issuedAt: values.issuedAt,
    sequence: values.sequence,
    code: values.code,
    background,
    preview
  }
}

// ---------------------------------------------------------------------------------------
// Preview

const SampleField = Schema.Struct({ key: Text({ min: 1, max: 64 }), value: Text({ max: 500 }) })

export const CertificatePreviewInput = Schema.Struct({
  sample: Schema.optional(
    Schema.Struct({
      name: Schema.optional(Text({ min: 1, max: 200 }).annotations({ description: "The learner's name shown. Default `Ada Lovelace`." })),
      document: Schema.optional(Schema.NullOr(Text({ max: 64 })).annotations({ description: "The learner's document shown. Default `000.000.000-00`." })),
      issued_at: Schema.optional(Timestamp.annotations({ description: "The issue date shown. Default: now." })),
      fields: Schema.optional(
        List(SampleField, MAX_TEMPLATE_FIELDS).annotations({ description: "Values of the template's `fields`, by key; a field without one shows its label in brackets." })
      )
    })
  )
}).annotations({ identifier: "CertificatePreviewInput" })
export type CertificatePreviewInput = typeof CertificatePreviewInput.Type

const storageFailure = (cause: StorageUnavailable) => apiError("storage_unavailable", { internal: cause })

/** Every byte of a stored object (a background: at most `MAX_BACKGROUND_BYTES`). */
const readAll = (key: string) =>
  Effect.flatMap(FileStorage, (storage) =>
    Effect.map(Stream.runCollect(storage.readObject(key)), (chunks) => {
      const parts = [...chunks]
      const out = new Uint8Array(parts.reduce((n, c) => n + c.length, 0))
      let at = 0
      for (const part of parts) {
        out.set(part, at)
        at += part.length
      }
      return out
    })
  ).pipe(Effect.mapError(storageFailure))

/** A template's background (`layout.background`, a file ID or null). */
export const backgroundFileId = (template: JsonObject): string | null => {
  const fileId = (template.layout as JsonObject).background
  return typeof fileId === "string" ? fileId : null
}

/** A background image read from storage, when the file is one the renderer can draw (else null: the frame is drawn). */
export const readBackground = (fileId: string | null) =>
  Effect.gen(function* () {
    if (fileId === null) return null
    const caller = yield* Caller
    const records = yield* Records
    const file = yield* records.get(caller.tenant, FILE_TYPE, fileId).pipe(Effect.mapError(readUnavailable))
    const type = file?.data.content_type
    if (!file || (type !== "image/png" && type !== "image/jpeg") || Number(file.data.size) > MAX_BACKGROUND_BYTES) return null
    const background: CertificateDocument["background"] = { bytes: yield* readAll(String(file.data.storage_key)), contentType: type }
    return background
  })

/**
 * Keep a rendered PDF's bytes in storage under `key` (one part); answers the stored object. The
 * caller records the file, and removes the bytes if it cannot.
 */
export const storeRenderedPdf = (key: string, bytes: Uint8Array) =>
  Effect.gen(function* () {
    const storage = yield* FileStorage
    const uploadId = yield* storage.startUpload(key).pipe(Effect.mapError(storageFailure))
    const object = yield* Effect.gen(function* () {
      const part = yield* storage.putPart(key, uploadId, 1, Stream.make(bytes), bytes.length)
      return yield* storage.completeUpload(key, uploadId, [part])
    }).pipe(
      Effect.catchTag("PartTooLarge", (e) => Effect.die(e)),
      Effect.mapError(storageFailure),
      Effect.tapError(() => Effect.ignore(storage.abortUpload(key, uploadId)))
    )
    // The object is made: the storage's record of the upload can go.
    yield* Effect.ignore(storage.abortUpload(key, uploadId))
    return object
  })

/**
 * A render that did not give a PDF: past the renderer's time budget it is the input's doing
 * (the same preview would be again: 422, change the texts); a full queue is the server's
 * moment (503 with `Retry-After`); anything else a defect (500).
 */
const renderFailure = (e: RenderFailed | RenderBudgetExceeded | RendererBusy): ApiError =>
  e._tag === "RenderBudgetExceeded"
    ? apiError("domain_rule_violation", { reason: "render_budget_exceeded", params: { budget_ms: e.budgetMs } })
    : e._tag === "RendererBusy"
      ? apiError("http_error", { reason: "renderer_busy", statusOverride: 503, headers: { "retry-after": String(e.retryAfterSeconds) } })
      : apiError("internal_error", { internal: e })

/**
 * Render a product's template with sample values to a PDF and keep it as a file (purpose
 * `certificate_preview`). Talks to file storage, so it keeps its own units of work: the bytes
 * are stored first, then the file is recorded with its audit entry; a failure to record it
 * removes the stored bytes. Safe to repeat (each call makes a new file).
 */
export const previewCertificateTemplate = Effect.fn("CertificateTemplates.preview")(function* (
  productId: string,
  input: CertificatePreviewInput
) {
  const caller = yield* Caller
  const records = yield* Records
  const storage = yield* FileStorage
  const renderer = yield* CertificateRenderer
  const uow = yield* UnitOfWork
  const product = yield* getResource(products, {}, productId)
  const stored = yield* loadCertificateTemplate(product.id)
  if (!stored) return yield* Effect.fail(apiError("template_not_previewable", { reason: "no_template" }))
  const template = templateData(stored)
  const content = (template.texts as JsonObject).content
  if ((typeof content !== "string" || content.trim() === "") && (template.fields as ReadonlyArray<Json>).length === 0) {
    return yield* Effect.fail(apiError("template_not_previewable", { reason: "no_content" }))
  }
  const now = yield* Clock.currentTimeMillis
  const sample = input.sample ?? {}
  const sampleFields = Object.fromEntries((sample.fields ?? []).map((f) => [f.key, f.value]))
  const values: CertificateValues = {
    learnerName: sample.name ?? "Ada Lovelace",
    document: sample.document === undefined ? "000.000.000-00" : sample.document,
    issuedAt: formatTimestamp(sample.issued_at === undefined ? now : Option.getOrElse(parseTimestamp(sample.issued_at), () => now)),
    sequence: 1,
    code: "PREVIEW",
    fields: Object.fromEntries(
      (template.fields as ReadonlyArray<JsonObject>).map((f) => [String(f.key), sampleFields[String(f.key)] ?? `[${String(f.label)}]`])
    )
  }
  const background = yield* readBackground(backgroundFileId(template))
  const document = certificateDocument(String(product.data.name), template, values, background, true)
  const bytes = yield* renderer.render(document).pipe(Effect.mapError(renderFailure))

  const fileId = yield* (yield* Ids).next("file")
  const key = objectKey(caller.tenant, fileId)
  const object = yield* storeRenderedPdf(key, bytes)
  const file = {
    object: "file",
    id: fileId,
    purpose: CERTIFICATE_PREVIEW_PURPOSE,
    filename: `certificate-preview-${product.id}.pdf`,
    size: object.size,
    content_type: "application/pdf",
    sha256: object.sha256,
    created_at: formatTimestamp(now),
    // Kept for a day, then removed with its bytes by the housekeeping (uploads/file-content.ts).
    expires_at: formatTimestamp(now + CERTIFICATE_PREVIEW_TTL_MS),
    storage_key: key,
    // Reading it needs what reading the template needs (access/scope.ts).
    [FILE_REQUIRES]: requirementsJson([{ capability: "certificate_templates.read", resources: [product.id] }])
  } satisfies JsonObject
  const saved = yield* uow
    .transaction(
      Effect.gen(function* () {
        const record = yield* records.insert(caller.tenant, FILE_TYPE, fileId, file).pipe(Effect.mapError(writeUnavailable))
        yield* recordChange("file.created", { object: "file", id: fileId })
        yield* recordChange(`${CERTIFICATE_TEMPLATE_TYPE}.previewed`, { object: CERTIFICATE_TEMPLATE_TYPE, id: product.id })
        return record
      })
    )
    .pipe(
      Effect.mapError((e): ApiError => (e._tag === "ApiError" ? e : writeUnavailable(e))),
      Effect.tapError(() => Effect.ignore(storage.deleteObject(key)))
    )
  return inOrder(saved.data, fileFields)
})
