/**
 * The document-rendering port: turns a certificate template (§2.3 `certificate_template`) and
 * the values of one certificate into the bytes of a PDF. The core decides what a certificate
 * says (the template, the sample values of a preview); an adapter decides how it is drawn
 * (`@syllabus/http`'s `PdfCertificateRenderer`, on pdfkit, is the default of `syllabusLayer`).
 *
 * The shapes are written out here because `ports/` imports nothing else of the core.
 */
import { Context, Data, type Effect } from "effect"

/** A color as `#RRGGBB`. */
export type HexColor = string

/** Fonts a certificate may use (the template's `font` values). */
export type CertificateFont = "arial" | "helvetica" | "times_new_roman" | "courier_new"

export type QrPosition = "top-left" | "top-right" | "bottom-left" | "bottom-right"

/** How one of the layout's own lines (name, date, document, sequence) is drawn; colors and fonts resolved. */
export interface CertificateLine {
  readonly enabled: boolean
  readonly color: HexColor
  readonly font: CertificateFont
}

/** What a renderer draws: the template with every default resolved, and the values of one certificate. */
export interface CertificateDocument {
  readonly product: { readonly name: string }
  readonly defaults: { readonly color: HexColor; readonly font: CertificateFont }
  readonly layout: {
    readonly showDates: boolean
    readonly showProductName: boolean
    readonly backSideEnabled: boolean
    readonly lines: {
      readonly name: CertificateLine
      readonly date: CertificateLine
      readonly document: CertificateLine
      readonly sequence: CertificateLine
    }
    readonly qr: { readonly enabled: boolean; readonly position: QrPosition; readonly color: HexColor; readonly backgroundColor: HexColor }
  }
  /** `texts.content` with its placeholders filled in, or null. */
  readonly content: string | null
  readonly instructor: string | null
  readonly workload: string | null
  /** The template's `fields`, each with the value of this certificate. */
  readonly fields: ReadonlyArray<{ readonly label: string; readonly value: string }>
  readonly learner: { readonly name: string; readonly document: string | null }
  /** RFC 3339. */
  readonly issuedAt: string
  readonly sequence: number
  /** The verification code, also what the QR code holds. */
  readonly code: string
  /** The background image's bytes (PNG or JPEG), when the template has one. */
  readonly background: { readonly bytes: Uint8Array; readonly contentType: "image/png" | "image/jpeg" } | null
  /** Marks the document as a preview (a watermark line). */
  readonly preview: boolean
}

/** The renderer failed (a defect of the adapter or of its library): answered as 500 `internal_error`. */
export class RenderFailed extends Data.TaggedError("RenderFailed")<{ readonly cause: unknown }> {}

/**
 * The document took longer than the renderer's time budget (the render was stopped): the same
 * input would again, so the caller must change it (answered as 422 `domain_rule_violation`,
 * reason `render_budget_exceeded`).
 */
export class RenderBudgetExceeded extends Data.TaggedError("RenderBudgetExceeded")<{ readonly budgetMs: number }> {}

/** Every renderer is busy and its queue is full: a retry later may succeed (503 `http_error`, reason `renderer_busy`). */
export class RendererBusy extends Data.TaggedError("RendererBusy")<{ readonly retryAfterSeconds: number }> {}

export class CertificateRenderer extends Context.Tag("@syllabus/core/CertificateRenderer")<
  CertificateRenderer,
  {
    /** The PDF of one certificate (`application/pdf`): every byte of it, as the file to store. */
    readonly render: (document: CertificateDocument) => Effect.Effect<Uint8Array, RenderFailed | RenderBudgetExceeded | RendererBusy>
  }
>() {}
