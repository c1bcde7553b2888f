/**
 * Certificates (release 3.2.0) over HTTP: a product's certificate template (read, replace
 * under `If-Match`, preview as a PDF file) and the certificates issued to learners (list and
 * read; they are issued by the platform, never through a body). Decisions: docs/certificates.md.
 */
import {
  CertificatePreviewInput,
  certificates,
  CertificateTemplateInput,
  CertificateTemplateSchema,
  getCertificateTemplate,
  previewCertificateTemplate,
  replaceCertificateTemplate
} from "@syllabus/core"
import { Effect } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { resourceOperations } from "../resources.js"
import { FileSchema } from "../schemas.js"

const tag = "Learning"
const productParams = { product_id: "product" } as const

const templateReply = ({ data, etag }: { readonly data: unknown; readonly etag: string }) => ({
  status: 200,
  body: { data } as never,
  headers: { etag }
})

const issuedDescriptions: Readonly<Record<string, string>> = {
  "certificates.list":
    "Certificates issued to learners, newest first (`sort=issued_at` for oldest first); filter by `user_id`, `product_id` and `issued_after`/`issued_before`. A certificate is issued by the platform when a progress change or an exam attempt meets the criteria of the product's enabled template: once per learner and product with `single_issue`, else once per enrollment.",
  "certificates.get":
    "A certificate issued to a learner: its product, enrollment, issue date, `sequence` within the product, verification `code`, the criteria it was issued under, and `file_id`, its PDF document (the learner's name and the code on it, in any script), downloaded with `GET /files/{file_id}/content`: `null` until it is drawn, moments after the issue (`certificate.updated` then names it). Reading the file needs `files.read` and this certificate's read (and `users.read_personal` for the learner when the document prints their personal data)."
}

export const certificateRoutes: ReadonlyArray<Operation> = [
  defineOperation({
    id: "certificate_templates.get",
    method: "GET",
    path: "/products/{product_id}/certificate-template",
    summary: "Get the certificate template of a product",
    description:
      "The certificate template of a product. A product never given one answers the defaults, with `enabled: false`. The ETag covers the template and its product: it changes when either changes (its number, also `revision`, is the template's revision plus the product's), so a change of the product also makes an earlier ETag stale.",
    tag,
    capability: "certificate_templates.read",
    scopedBy: "product_id",
    params: productParams,
    idempotency: "none",
    success: { status: 200, description: "The template.", schema: CertificateTemplateSchema, headers: ["ETag"] },
    errors: [],
    handler: ({ path }) => getCertificateTemplate(path.product_id!).pipe(Effect.map(templateReply))
  }),
  defineOperation({
    id: "certificate_templates.replace",
    method: "PUT",
    path: "/products/{product_id}/certificate-template",
    summary: "Replace the certificate template of a product",
    description:
      "Replace the whole template: every field omitted, at any depth, takes its default (`enabled: false`, `single_issue: true`, criteria `completion`, color `#000000`, font `arial`, no fields, QR `bottom-right`, no texts). `criteria.percent` (above 0, at most 100) is required with kind `percent` and not allowed with another kind; `criteria.exam_id` is required with kind `exam` and must be an exam of the product; `layout.background` is a PNG or JPEG file of purpose `image`; field keys are unique; each problem is itemized (422). A layout line's `color` or `font` left `null` is the template's `defaults`. `If-Match` takes the template's ETag, which a change of the product also makes stale (412 `revision_mismatch`). A replicated product's template is read-only (403 `replica_readonly`). Certificates already issued keep the criteria they were issued under.",
    tag,
    capability: "certificate_templates.update",
    scopedBy: "product_id",
    params: productParams,
    body: CertificateTemplateInput,
    idempotency: "optional",
    ifMatch: "certificate_template",
    success: { status: 200, description: "The template.", schema: CertificateTemplateSchema, headers: ["ETag"] },
    errors: ["replica_readonly"],
    handler: ({ path, body, expectedRevision }) => replaceCertificateTemplate(path.product_id!, body, expectedRevision).pipe(Effect.map(templateReply))
  }),
  defineOperation({
    id: "certificate_templates.previews.create",
    method: "POST",
    path: "/products/{product_id}/certificate-template/previews",
    summary: "Render the certificate template to a PDF file with sample values",
    description:
      "Render the product's certificate template to a PDF (A4 landscape, marked PREVIEW) with sample values (`sample`: the learner's name, document, issue date and the values of the template's fields; defaults are used for those omitted), stored as a new file of purpose `certificate_preview` and answered as that file (`Location`: `/api/v3/files/{file_id}`). A disabled template can be previewed. 409 `template_not_previewable` when there is nothing to preview: the product has never been given a template (reason `no_template`), or the template has neither `texts.content` nor `fields` (reason `no_content`). A state-changing POST (it makes a file): `Idempotency-Key` is required, and a retry with the same key answers the same file. Rendering runs on a small pool of render threads with a time budget (10 s by default): a template that takes longer to draw (e.g. tens of KiB of text without spaces) is stopped and answered 422 `domain_rule_violation` with reason `render_budget_exceeded` (the same preview would be again: shorten or break up the texts); when every render thread is busy and the queue is full, 503 `http_error` with reason `renderer_busy` and `Retry-After`.",
    tag,
    capability: "certificate_templates.update",
    scopedBy: "product_id",
    params: productParams,
    body: CertificatePreviewInput,
    idempotency: "required",
    unitOfWork: "handler",
    success: { status: 201, description: "The PDF, as a file.", schema: FileSchema, headers: ["Location"] },
    errors: ["template_not_previewable", "domain_rule_violation", "storage_unavailable"],
    handler: ({ path, body }) =>
      previewCertificateTemplate(path.product_id!, body).pipe(
        Effect.map((data) => ({ status: 201, body: { data }, headers: { location: `/api/v3/files/${String(data.id)}` } }))
      )
  }),
  ...resourceOperations(certificates).map((operation) =>
    issuedDescriptions[operation.id] === undefined ? operation : { ...operation, description: issuedDescriptions[operation.id]! }
  )
]
