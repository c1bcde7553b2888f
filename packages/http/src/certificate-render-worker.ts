/**
 * A certificate render worker (a `node:worker_threads` thread of `certificate-renderer.ts`'s
 * pool): draws the PDFs it is sent, one at a time, off the server's event loop. Imports only
 * the drawing (pdfkit), never the server.
 */
import type { CertificateDocument } from "@syllabus/core"
import { parentPort } from "node:worker_threads"
import { drawCertificatePdf } from "./certificate-pdf.js"

/** A render asked of the worker. */
export interface RenderRequest {
  readonly id: number
  readonly document: CertificateDocument
}

/** Its answer: the PDF's bytes, or why it failed; `ready` once the worker has loaded (a render's budget starts when it is sent). */
export type RenderReply =
  | { readonly id: number; readonly bytes: Uint8Array }
  | { readonly id: number; readonly error: string }
  | { readonly ready: true }

parentPort?.on("message", (request: RenderRequest) => {
  drawCertificatePdf(request.document).then(
    (bytes) => parentPort!.postMessage({ id: request.id, bytes } satisfies RenderReply, [bytes.buffer as ArrayBuffer]),
    (cause: unknown) => parentPort!.postMessage({ id: request.id, error: String(cause) } satisfies RenderReply)
  )
})
parentPort?.postMessage({ ready: true } satisfies RenderReply)
