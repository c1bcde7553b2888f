/**
 * The tabular-reader port: the rows of a file of records (an import's CSV, JSON lines or XLSX),
 * read as a stream from the file's bytes, never the whole file in memory. The core decides what
 * a row becomes (registry/imports.ts); an adapter decides how a format is parsed (`@syllabus/http`'s
 * `StreamingTabularReader`, on csv-parse and exceljs, is the default of `syllabusLayer`), as the
 * `CertificateRenderer` port does for PDFs.
 */
import { Context, Data, type Stream } from "effect"

const MiB = 1024 * 1024

/**
 * The caps on an import's file (issue 23): a hostile file is refused by structure, its reading
 * stopped at the cap, never read whole first, so a parser's memory stays bounded whatever the
 * file. A file over one fails its import's operation with `validation_failed` on `file_id`,
 * reason `<cap>_exceeded` (e.g. `line_bytes_exceeded`). docs/imports.md "Limits".
 */
export const IMPORT_LIMITS = {
  /** Rows of a file (every row read, blank ones apart): the items one import's operation may hold. */
  rows: 500_000,
  /** Bytes of one CSV record or JSON line (the parser holds a line whole). */
  line_bytes: 1 * MiB,
  /** Characters of one value (a CSV or XLSX cell, a JSON line's string). */
  cell_chars: 524_288,
  /** XLSX: bytes of the archive's parts once inflated, all together. */
  xlsx_decompressed_bytes: 512 * MiB,
  /** XLSX: bytes of one part once inflated. */
  xlsx_part_bytes: 256 * MiB,
  /** XLSX: bytes of the shared-strings part once inflated (a reader holds that table in memory). */
  xlsx_shared_strings_bytes: 64 * MiB,
  /** XLSX: inflated bytes per compressed byte read, over the archive (checked once 1 MiB has inflated). */
  xlsx_expansion_ratio: 100
} as const

export type ImportLimit = keyof typeof IMPORT_LIMITS

/** A file over one of `IMPORT_LIMITS`: its reading stopped there. */
export class TabularLimitExceeded extends Data.TaggedError("TabularLimitExceeded")<{ readonly limit: ImportLimit }> {
  get max(): number {
    return IMPORT_LIMITS[this.limit]
  }
}

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
     * `problem`, numbered after the last row read. A file over one of `IMPORT_LIMITS` fails the
     * stream with `TabularLimitExceeded` as soon as the cap is reached. `bytes` may be run more
     * than once (an XLSX is checked whole, inflating and discarding, before its rows are read).
     */
    readonly rows: <E>(format: TabularFormat, bytes: Stream.Stream<Uint8Array, E>) => Stream.Stream<TabularRow, E | TabularLimitExceeded>
  }
>() {}
