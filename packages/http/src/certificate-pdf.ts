/**
 * The drawing of a certificate (used by the render workers, `certificate-render-worker.ts`, and
 * in-process by `renderCertificatePdf`): a certificate drawn as a PDF
 * with pdfkit, the long-maintained pure-JavaScript PDF writer (no native module, no browser,
 * no binary to download; its standard fonts are embedded in the package). It lives in the HTTP
 * adapter, as the other platform adapters `syllabusLayer` provides by default do (Node crypto,
 * the webhook sender), so the standalone server, an embedding and `@syllabus/testing` all render
 * the same way; an embedder may pass another renderer (`SyllabusOptions.certificateRenderer`).
 *
 * One A4 landscape page (two with `back_side_enabled`, the template's `fields`, instructor and
 * workload going to the back). The fonts of the template map to PDF's standard fonts (arial and
 * helvetica → Helvetica, times_new_roman → Times, courier_new → Courier), which cover the Latin-1
 * alphabets; a text in any other script is drawn with the Noto fonts (certificate-text.ts). The QR symbol (`layout.qr`, drawn with qrcode-generator: no dependency, no
 * native code) holds the verification code, at its position in its colors.
 */
import type { CertificateDocument, CertificateFont } from "@syllabus/core"
import PDFDocument from "pdfkit"
import qrcode from "qrcode-generator"
import { drawCentered, loadFaces } from "./certificate-text.js"

const WIDTH = 841.89
const HEIGHT = 595.28
const MARGIN = 48

const regular: Readonly<Record<CertificateFont, string>> = {
  arial: "Helvetica",
  helvetica: "Helvetica",
  times_new_roman: "Times-Roman",
  courier_new: "Courier"
}
const bold: Readonly<Record<CertificateFont, string>> = {
  arial: "Helvetica-Bold",
  helvetica: "Helvetica-Bold",
  times_new_roman: "Times-Bold",
  courier_new: "Courier-Bold"
}

/** Draw an image over the whole page; false when its bytes are not an image pdfkit reads. */
const drewImage = (doc: PDFKit.PDFDocument, bytes: Uint8Array): boolean => {
  try {
    doc.image(Buffer.from(bytes), 0, 0, { width: WIDTH, height: HEIGHT })
    return true
  } catch {
    return false
  }
}

/**
 * A QR symbol of `text` (error correction M) in a square of `size` points at (x, y): its
 * background, a quiet zone of two modules, and one filled square per dark module.
 */
const drawQr = (doc: PDFKit.PDFDocument, text: string, x: number, y: number, size: number, color: string, background: string) => {
  const symbol = qrcode(0, "M")
  // The verification code is upper-case letters, digits and hyphens: QR's alphanumeric mode.
  symbol.addData(text, /^[0-9A-Z $%*+\-./:]*$/.test(text) ? "Alphanumeric" : "Byte")
  symbol.make()
  const count = symbol.getModuleCount()
  const module = size / (count + 4)
  doc.rect(x, y, size, size).fillColor(background).fill()
  doc.fillColor(color)
  for (let row = 0; row < count; row++) {
    for (let col = 0; col < count; col++) {
      if (symbol.isDark(row, col)) doc.rect(x + (col + 2) * module, y + (row + 2) * module, module, module)
    }
  }
  doc.fill()
}

/** The lines of fields, workload and instructor. */
const extrasOf = (c: CertificateDocument): ReadonlyArray<string> => [
  ...c.fields.map((f) => `${f.label}: ${f.value}`),
  ...(c.workload ? [`Workload: ${c.workload}`] : []),
  ...(c.instructor ? [`Instructor: ${c.instructor}`] : [])
]

/** The texts of the certificate in the fonts of their scripts (the others are ASCII: dates, numbers, the code). */
const textsOf = (c: CertificateDocument): ReadonlyArray<string | null> => [c.learner.name, c.learner.document, c.product.name, c.content, ...extrasOf(c)]

/** Draw the document; the PDF's bytes arrive on the document's stream. */
const draw = (doc: PDFKit.PDFDocument, c: CertificateDocument) => {
  const width = WIDTH - 2 * MARGIN
  const centered = (text: string, weight: "bold" | "regular", font: CertificateFont, size: number, color: string, gap = 10) => {
    drawCentered(doc, text, { standardFont: (weight === "bold" ? bold : regular)[font], bold: weight === "bold", size, color }, MARGIN, width)
    doc.moveDown(gap / size)
  }

  // The background, or a frame in the template's color (also when the image cannot be read:
  // an upload is checked by its first bytes only, and a broken image must not fail the certificate).
  if (!(c.background && drewImage(doc, c.background.bytes))) {
    doc.lineWidth(3).strokeColor(c.defaults.color).rect(20, 20, WIDTH - 40, HEIGHT - 40).stroke()
    doc.lineWidth(1).rect(28, 28, WIDTH - 56, HEIGHT - 56).stroke()
  }
  if (c.preview) {
    doc.save().rotate(-20, { origin: [WIDTH / 2, HEIGHT / 2] })
    doc.font("Helvetica-Bold").fontSize(110).fillColor("#DDDDDD").fillOpacity(0.5).text("PREVIEW", 0, HEIGHT / 2 - 60, { width: WIDTH, align: "center" })
    doc.restore().fillOpacity(1)
  }

  doc.y = MARGIN + 24
  centered("CERTIFICATE", "bold", c.defaults.font, 34, c.defaults.color, 18)
  const { lines } = c.layout
  if (lines.name.enabled) centered(c.learner.name, "bold", lines.name.font, 28, lines.name.color, 12)
  if (lines.document.enabled && c.learner.document) centered(c.learner.document, "regular", lines.document.font, 13, lines.document.color)
  if (c.layout.showProductName) centered(c.product.name, "bold", c.defaults.font, 20, c.defaults.color, 14)
  if (c.content) centered(c.content, "regular", c.defaults.font, 14, c.defaults.color, 14)

  const extras = extrasOf(c)
  const footer = () => {
    const bits = [
      ...(c.layout.showDates && lines.date.enabled ? [{ text: `Issued on ${c.issuedAt.slice(0, 10)}`, line: lines.date }] : []),
      ...(lines.sequence.enabled ? [{ text: `No. ${c.sequence}`, line: lines.sequence }] : [])
    ]
    let y = HEIGHT - MARGIN - 40
    for (const bit of bits) {
      doc.font(regular[bit.line.font]).fontSize(11).fillColor(bit.line.color).text(bit.text, MARGIN + 20, y, { width: width / 2, align: "left" })
      y += 15
    }
    doc.font(regular[c.defaults.font]).fontSize(9).fillColor(c.defaults.color).text(`Verification code: ${c.code}`, MARGIN + 20, y, { width: width / 2 })
  }
  const qr = () => {
    if (!c.layout.qr.enabled) return
    const size = 72
    const left = c.layout.qr.position.endsWith("left")
    const top = c.layout.qr.position.startsWith("top")
    const x = left ? MARGIN : WIDTH - MARGIN - size
    const y = top ? MARGIN : HEIGHT - MARGIN - size
    drawQr(doc, c.code, x, y, size, c.layout.qr.color, c.layout.qr.backgroundColor)
  }

  if (!c.layout.backSideEnabled) {
    for (const extra of extras) centered(extra, "regular", c.defaults.font, 12, c.defaults.color, 4)
    footer()
    qr()
    return
  }
  footer()
  qr()
  doc.addPage({ size: "A4", layout: "landscape", margin: 0 })
  doc.lineWidth(1).strokeColor(c.defaults.color).rect(28, 28, WIDTH - 56, HEIGHT - 56).stroke()
  doc.y = MARGIN + 24
  centered(c.product.name, "bold", c.defaults.font, 18, c.defaults.color, 14)
  for (const extra of extras) centered(extra, "regular", c.defaults.font, 12, c.defaults.color, 4)
}

/** The bytes of one certificate's PDF (CPU-bound: run it in a render worker, not on the event loop). */
export const drawCertificatePdf = (c: CertificateDocument): Promise<Uint8Array> =>
  new Promise((resolve, reject) => {
    const start = async () => {
      const issued = new Date(c.issuedAt)
      const doc = new PDFDocument({
        size: "A4",
        layout: "landscape",
        margin: 0,
        // The same certificate renders to the same bytes: no wall-clock date in the document.
        info: { Title: `Certificate: ${c.product.name}`, Author: "Syllabus", CreationDate: issued, ModDate: issued }
      })
      const chunks: Array<Buffer> = []
      doc.on("data", (chunk: Buffer) => chunks.push(chunk))
      doc.on("end", () => resolve(new Uint8Array(Buffer.concat(chunks))))
      doc.on("error", reject)
      await loadFaces(doc, textsOf(c))
      draw(doc, c)
      doc.end()
    }
    start().catch(reject)
  })
