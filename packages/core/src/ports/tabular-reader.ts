/**
 * The tabular-reader port: the rows of a file of records (an import's CSV, JSON lines or XLSX),
 * read as a stream from the file's bytes, never the whole file in memory. The core decides what
 * a row becomes (registry/imports.ts); an adapter decides how a format is parsed (`@syllabus/http`'s
 * `StreamingTabularReader`, on csv-parse and exceljs, is the default of `syllabusLayer`), as the
 * `CertificateRenderer` port does for PDFs.
 */
import { Context, type Stream } from "effect"

export type TabularFormat = "csv" | "jsonl" | "xlsx"

/** A row's values: by column header (CSV, XLSX: text or the cell's number, boolean, date) or the line's object (JSON lines). */
export type TabularValues = Readonly<Record<string, unknown>>

export interface TabularRow {
  /**
   * The row's number as the file shows it: CSV and XLSX count the header as row 1, so the first
   * record is row 2 (as a spreadsheet numbers it); JSON lines count lines from 1. Blank lines
   * and empty rows are skipped but counted.
   */
  readonly number: number
  readonly values: TabularValues
  /** Why the row could not be read (a line that is not a JSON object, a record the CSV parser refused); its values are empty. */
  readonly problem?: string
}

export class TabularReader extends Context.Tag("@syllabus/core/TabularReader")<
  TabularReader,
  {
    /**
     * The rows of `bytes` in file order, parsed as they are pulled. A file that cannot be read
     * past some point (an unterminated quote, a broken archive) ends with a row carrying the
     * `problem`, numbered after the last row read.
     */
    readonly rows: <E>(format: TabularFormat, bytes: Stream.Stream<Uint8Array, E>) => Stream.Stream<TabularRow, E>
  }
>() {}
