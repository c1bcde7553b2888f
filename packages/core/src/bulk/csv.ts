/**
 * CSV cells, one implementation for exports (writing) and imports (reading back) (issue 23).
 *
 * Formula neutralization (OWASP "CSV injection"): a spreadsheet runs a cell starting with `=`,
 * `+`, `-`, `@`, tab or CR as a formula, so an export writes such a text with a leading single
 * quote (`'=1+1`), unless it was asked for raw values. The mapping stays reversible: a text that
 * already starts with a quote followed by one of those (or by another quote) gets one more, and
 * the import of a CSV removes exactly one leading quote when a trigger or a quote follows it. So
 * any value an export writes reads back as it was, and a quote at the start of any other text
 * (`'hello`) is left alone. Numbers are cells as well: `-5` is written `'-5` and read back `-5`.
 */
import type { Json } from "../ports/store.js"

const FORMULA_START = /^[=+\-@\t\r]/
/** A text an import reads with its leading quote removed: the quote an export added. */
const NEUTRALIZED = /^'[=+\-@\t\r']/

export const neutralizeFormula = (text: string): string => (FORMULA_START.test(text) || NEUTRALIZED.test(text) ? `'${text}` : text)

export const restoreFormula = (text: string): string => (NEUTRALIZED.test(text) ? text.slice(1) : text)

/** The byte-order mark an export may start with (`byte_order_mark: true`): some spreadsheets read UTF-8 only after it. */
export const BYTE_ORDER_MARK = "\uFEFF"

const CRLF = "\r\n"
const needsQuotes = /[",\r\n]/

export interface CsvOptions {
  /** Write values as they are, no formula neutralization. */
  readonly rawValues?: boolean
}

/** One CSV cell (RFC 4180): null empty, objects and arrays as their JSON text, a formula neutralized unless `rawValues`. */
export const csvCell = (value: Json | undefined, options: CsvOptions = {}): string => {
  if (value === null || value === undefined) return ""
  const raw = typeof value === "object" ? JSON.stringify(value) : String(value)
  const text = options.rawValues === true ? raw : neutralizeFormula(raw)
  return needsQuotes.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

export const csvLine = (cells: ReadonlyArray<Json | undefined>, options: CsvOptions = {}): string =>
  cells.map((cell) => csvCell(cell, options)).join(",") + CRLF
