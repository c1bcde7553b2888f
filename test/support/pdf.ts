/**
 * The text of a PDF as a reader's tools extract it (Mozilla's pdf.js, the engine of Firefox's
 * viewer): the strings of every page in drawing order, a line break where pdf.js sees one. Tests look for what a document prints.
 */
import { getDocument } from "pdfjs-dist/legacy/build/pdf.mjs"

export const pdfText = async (bytes: Uint8Array): Promise<string> => {
  const pdf = await getDocument({ data: new Uint8Array(bytes), verbosity: 0, isEvalSupported: false }).promise
  try {
    const pages: Array<string> = []
    for (let n = 1; n <= pdf.numPages; n++) {
      const content = await (await pdf.getPage(n)).getTextContent()
      pages.push(content.items.map((item) => ("str" in item ? item.str + (item.hasEOL ? "\n" : "") : "")).join(""))
    }
    return pages.join("\n")
  } finally {
    await pdf.destroy()
  }
}
