/**
 * The default `TabularReader` (a port of `@syllabus/core`, used by imports: docs/imports.md):
 * the rows of a CSV, JSON lines or XLSX file, parsed as the file's bytes stream in, so a file of
 * any size is read with flat memory (a row at a time, under backpressure: the bytes are pulled
 * only as fast as rows are consumed).
 *
 * - CSV: csv-parse (the streaming parser of the long-kept `csv` project, no dependency of its
 *   own). RFC 4180 quoting, a UTF-8 byte-order mark dropped, blank lines skipped (but counted).
 *   The first record is the header; a record with a different number of fields than the header
 *   is a row with a `problem` (itemized as its row's failure, the rest of the file goes on). A
 *   quote never closed ends the file with a `problem` row.
 * - JSON lines: Effect's own `splitLines` over the decoded text; each non-blank line must be a
 *   JSON object, else the row carries a `problem`.
 * - XLSX: exceljs's streaming `WorkbookReader` (the first worksheet; its first row the header).
 *   A cell's value is its text, number or boolean; a date is its ISO 8601 text, a formula its
 *   cached result, rich text its plain text. exceljs keeps the workbook's shared-strings table
 *   in memory (XLSX stores repeated text once, apart from the rows): memory is flat in the rows,
 *   not in the distinct texts.
 *
 * Every format stops at `IMPORT_LIMITS` (a hostile file, issue 23), failing the rows' stream
 * with `TabularLimitExceeded`: csv-parse's `max_record_size` and a byte count between newlines
 * for JSON lines bound a line before it is held whole; every value's length and the row count
 * are checked as rows come. An XLSX is checked first, whole, by `checkArchive`: fflate's
 * streaming `Unzip` inflates each part in small pushes and the bytes are counted and dropped
 * (total, per part, the shared strings, the expansion ratio, and no run of text without a `<`
 * longer than a cell may be), so exceljs — which neither reports inflated sizes nor lets a
 * caller stop a part midway, and holds a cell's or shared string's text whole — only ever
 * reads an archive within the caps.
 */
import { IMPORT_LIMITS, type TabularFormat, TabularLimitExceeded, TabularReader, type TabularRow } from "@syllabus/core"
import { parse } from "csv-parse"
import { Data, Effect, Layer, Option, Stream } from "effect"
import type ExcelJSModule from "exceljs"
import { Unzip, UnzipInflate, UnzipPassThrough } from "fflate"
import { Readable, type Transform } from "node:stream"
import { importOptional } from "./optional-module.js"

/** The bytes' own stream failed (storage): carried through the parser, answered with its typed error. */
class SourceFailed extends Data.TaggedError("SourceFailed")<{}> {}

/** A failure of the parser (not of the bytes): the file cannot be read past this point. */
class Unreadable extends Data.TaggedError("Unreadable")<{ readonly message: string }> {}

const problemRow = (number: number, problem: string): TabularRow => ({ number, values: {}, problem })

/**
 * The bytes as a Node stream for a parser, with the source's own failure kept aside: the parser
 * sees a generic error, and the rows' stream fails with the typed one.
 */
const asNodeStream = <E>(bytes: Stream.Stream<Uint8Array, E>) => {
  let failure: Option.Option<E> = Option.none()
  const readable = Readable.from(
    Stream.toAsyncIterable(
      bytes.pipe(
        Stream.catchAll((e) => {
          failure = Option.some(e)
          return Stream.fail(new SourceFailed())
        })
      )
    ),
    { objectMode: false }
  )
  return { readable, failure: () => failure }
}

/**
 * Rows from a parser's async iterable; a failure of the source fails the stream with it, a
 * failure of the parser ends it with a `problem` row numbered after the last row.
 */
const parsedRows = <E>(
  bytes: Stream.Stream<Uint8Array, E>,
  read: (input: Readable, last: { number: number }) => AsyncIterable<TabularRow>
): Stream.Stream<TabularRow, E | TabularLimitExceeded> =>
  Stream.suspend(() => {
    const source = asNodeStream(bytes)
    const last = { number: 0 }
    return Stream.fromAsyncIterable(read(source.readable, last), (cause): TabularLimitExceeded | Unreadable =>
      cause instanceof TabularLimitExceeded
        ? cause
        : (cause as { code?: unknown } | null)?.code === "CSV_MAX_RECORD_SIZE"
          ? new TabularLimitExceeded({ limit: "line_bytes" })
          : new Unreadable({ message: cause instanceof Error ? cause.message : String(cause) })
    ).pipe(
      Stream.tap((row) => Effect.sync(() => (last.number = row.number))),
      Stream.catchAll((error): Stream.Stream<TabularRow, E | TabularLimitExceeded> => {
        const failed = source.failure()
        if (Option.isSome(failed)) return Stream.fail(failed.value)
        source.readable.destroy()
        return error._tag === "TabularLimitExceeded" ? Stream.fail(error) : Stream.make(problemRow(last.number + 1, error.message))
      })
    )
  })

/** Header cells as column names: trimmed text, a blank header named by its position (`column_3`). */
const headerOf = (cells: ReadonlyArray<unknown>): ReadonlyArray<string> =>
  cells.map((cell, i) => {
    const name = cell === null || cell === undefined ? "" : String(cell).trim()
    return name === "" ? `column_${i + 1}` : name
  })

/**
 * The records of a parser in order, then its error, if any. Not `for await` over the parser: a
 * Node stream that errors drops what it had buffered, and the records parsed before a fatal
 * error (a quote never closed) are rows of the file. Backpressure by pausing the parser while
 * `HIGH_WATER` records wait.
 */
const HIGH_WATER = 1000
async function* recordsThenError(parser: Transform): AsyncIterable<Array<string>> {
  const waiting: Array<Array<string>> = []
  let ended = false
  let failure: unknown = undefined
  let wake: (() => void) | undefined
  const signal = () => {
    wake?.()
    wake = undefined
  }
  parser.on("data", (record: Array<string>) => {
    waiting.push(record)
    if (waiting.length >= HIGH_WATER) parser.pause()
    signal()
  })
  parser.on("end", () => {
    ended = true
    signal()
  })
  parser.on("error", (error) => {
    failure = error
    ended = true
    signal()
  })
  try {
    for (;;) {
      const record = waiting.shift()
      if (record !== undefined) {
        if (waiting.length < HIGH_WATER / 2 && parser.isPaused()) parser.resume()
        yield record
        continue
      }
      if (ended) break
      await new Promise<void>((resolve) => (wake = resolve))
    }
  } finally {
    parser.destroy()
  }
  if (failure !== undefined) throw failure
}

async function* csvRows(input: Readable, last: { number: number }): AsyncIterable<TabularRow> {
  const parser = input.pipe(parse({ bom: true, relax_column_count: true, max_record_size: IMPORT_LIMITS.line_bytes }))
  input.on("error", (error) => parser.destroy(error))
  let header: ReadonlyArray<string> | undefined
  let number = 0
  for await (const record of recordsThenError(parser)) {
    number++
    last.number = number
    // A blank line: counted, not a row.
    if (record.length === 1 && record[0] === "") continue
    if (header === undefined) {
      header = headerOf(record)
      continue
    }
    yield record.length !== header.length
      ? problemRow(number, `The row has ${record.length} fields; the header has ${header.length}.`)
      : { number, values: Object.fromEntries(header.map((name, i) => [name, record[i]])) }
  }
}

const NEWLINE = 0x0a

/**
 * The bytes up to a line that runs past `line_bytes` (then `cut.exceeded`): the stream ends there,
 * before a splitter holds the line whole. It ends rather than fails, as a splitter flushes its
 * partial line on a failure: the rows after the cut are dropped and the failure comes after them.
 */
const upToLongLine = <E>(bytes: Stream.Stream<Uint8Array, E>, cut: { exceeded: boolean }): Stream.Stream<Uint8Array, E> =>
  Stream.suspend(() => {
    let run = 0
    return Stream.takeWhile(bytes, (chunk) => {
      for (let start = 0; ; ) {
        const newline = chunk.indexOf(NEWLINE, start)
        run += (newline < 0 ? chunk.length : newline) - start
        if (run > IMPORT_LIMITS.line_bytes) return !(cut.exceeded = true)
        if (newline < 0) return true
        run = 0
        start = newline + 1
      }
    })
  })

const jsonLines = <E>(bytes: Stream.Stream<Uint8Array, E>): Stream.Stream<TabularRow, E | TabularLimitExceeded> =>
  Stream.suspend(() => {
    const cut = { exceeded: false }
    return linesOf(upToLongLine(bytes, cut)).pipe(
      Stream.filter(() => !cut.exceeded),
      Stream.concat(Stream.suspend(() => (cut.exceeded ? Stream.fail(new TabularLimitExceeded({ limit: "line_bytes" })) : Stream.empty)))
    )
  })

const linesOf = <E>(bytes: Stream.Stream<Uint8Array, E>): Stream.Stream<TabularRow, E> =>
  bytes.pipe(
    Stream.decodeText("utf-8"),
    Stream.splitLines,
    Stream.zipWithIndex,
    Stream.filterMap(([line, index]) => {
      const number = index + 1
      const text = index === 0 ? line.replace(/^\uFEFF/, "") : line
      if (text.trim() === "") return Option.none()
      try {
        const value: unknown = JSON.parse(text)
        return Option.some(
          value !== null && typeof value === "object" && !Array.isArray(value)
            ? { number, values: value as Record<string, unknown> }
            : problemRow(number, "The line is not a JSON object.")
        )
      } catch {
        return Option.some(problemRow(number, "The line is not valid JSON."))
      }
    })
  )

/** A cell's value as a row carries it. */
const cellValue = (value: unknown): unknown => {
  if (value === null || value === undefined) return undefined
  if (value instanceof Date) return value.toISOString()
  if (typeof value !== "object") return value
  const v = value as { richText?: ReadonlyArray<{ text: string }>; result?: unknown; formula?: string; text?: unknown; error?: string }
  if (Array.isArray(v.richText)) return v.richText.map((part) => part.text).join("")
  if ("formula" in v || "sharedFormula" in v) return cellValue(v.result)
  if ("text" in v) return cellValue(v.text)
  if ("error" in v) return undefined
  return undefined
}

async function* xlsxRows(input: Readable, last: { number: number }): AsyncIterable<TabularRow> {
  const { default: ExcelJS } = await importOptional<{ default: typeof ExcelJSModule }>("exceljs", "Reading an XLSX file")
  const workbook = new ExcelJS.stream.xlsx.WorkbookReader(input, {
    worksheets: "emit",
    sharedStrings: "cache",
    hyperlinks: "ignore",
    styles: "ignore",
    entries: "emit"
  })
  let header: ReadonlyArray<string> | undefined
  for await (const worksheet of workbook) {
    for await (const row of worksheet) {
      // `row.values` is 1-based and sparse: index 0 is empty.
      const cells = (row.values as ReadonlyArray<unknown>).slice(1).map(cellValue)
      if (header === undefined) {
        header = headerOf(cells)
        last.number = row.number
        continue
      }
      if (cells.every((cell) => cell === undefined || cell === "")) continue
      // Built from entries, not by assignment: a column named `__proto__` stays a key (the import refuses it by name).
      const values = Object.fromEntries(header.flatMap((name, i) => (cells[i] === undefined ? [] : [[name, cells[i]]])))
      yield { number: row.number, values }
    }
    // Only the first worksheet is read; the rest of the archive is drained, not parsed.
    return
  }
}

const LESS_THAN = 0x3c
/** Inflated per push at most ~1,032 × this (DEFLATE's ceiling): the memory a single push may take. */
const ARCHIVE_SLICE = 4096
/** The expansion ratio is judged once this much has inflated (a tiny file's ratio says nothing). */
const RATIO_FLOOR = 1024 * 1024
/** Bytes of XML without a `<` beyond which a text (a cell, a shared string) is surely over `cell_chars` (UTF-8, entities). */
const TEXT_RUN_MAX = IMPORT_LIMITS.cell_chars * 4

/** Why an archive is refused before its rows are read. */
type ArchiveVerdict = TabularLimitExceeded | Unreadable

/**
 * Inflate every part of an XLSX, counting and dropping the bytes, and stop at the first cap
 * reached: the archive's total, one part, the shared strings, the expansion ratio, a run of text.
 * Answers `undefined` when the archive is within every cap.
 */
const checkArchive = <E>(bytes: Stream.Stream<Uint8Array, E>): Effect.Effect<ArchiveVerdict | undefined, E> =>
  Effect.suspend(() => {
    let verdict: ArchiveVerdict | undefined
    let compressed = 0
    let inflated = 0
    const exceed = (limit: keyof typeof IMPORT_LIMITS) => (verdict ??= new TabularLimitExceeded({ limit }))
    const unzip = new Unzip((file) => {
      let part = 0
      let run = 0
      const partMax = file.name === "xl/sharedStrings.xml" ? IMPORT_LIMITS.xlsx_shared_strings_bytes : IMPORT_LIMITS.xlsx_part_bytes
      file.ondata = (error, data) => {
        if (verdict !== undefined) return
        if (error) return (verdict = new Unreadable({ message: "The file is not a readable XLSX archive." }))
        part += data.length
        inflated += data.length
        if (part > partMax) return exceed(partMax === IMPORT_LIMITS.xlsx_part_bytes ? "xlsx_part_bytes" : "xlsx_shared_strings_bytes")
        if (inflated > IMPORT_LIMITS.xlsx_decompressed_bytes) return exceed("xlsx_decompressed_bytes")
        if (inflated > RATIO_FLOOR && inflated > compressed * IMPORT_LIMITS.xlsx_expansion_ratio) return exceed("xlsx_expansion_ratio")
        const last = data.lastIndexOf(LESS_THAN)
        if (last < 0) run += data.length
        else {
          // The longest run of this chunk: before its first `<` (added to the run carried), between two, after its last.
          let longest = run + data.indexOf(LESS_THAN)
          for (let at = data.indexOf(LESS_THAN), next; at >= 0 && at < last; at = next) {
            next = data.indexOf(LESS_THAN, at + 1)
            longest = Math.max(longest, next - at - 1)
          }
          if (longest > TEXT_RUN_MAX) return exceed("cell_chars")
          run = data.length - last - 1
        }
        if (run > TEXT_RUN_MAX) exceed("cell_chars")
      }
      try {
        file.start()
      } catch {
        verdict ??= new Unreadable({ message: "The file is not a readable XLSX archive." })
      }
    })
    unzip.register(UnzipInflate)
    unzip.register(UnzipPassThrough)
    const push = (chunk: Uint8Array, final: boolean) => {
      try {
        unzip.push(chunk, final)
      } catch {
        verdict ??= new Unreadable({ message: "The file is not a readable XLSX archive." })
      }
    }
    return bytes.pipe(
      Stream.runForEachWhile((chunk) =>
        Effect.sync(() => {
          for (let start = 0; start < chunk.length && verdict === undefined; start += ARCHIVE_SLICE) {
            const slice = chunk.subarray(start, start + ARCHIVE_SLICE)
            compressed += slice.length
            push(slice, false)
          }
          return verdict === undefined
        })
      ),
      Effect.map(() => {
        if (verdict === undefined) push(new Uint8Array(0), true)
        return verdict
      })
    )
  })

const xlsx = <E>(bytes: Stream.Stream<Uint8Array, E>): Stream.Stream<TabularRow, E | TabularLimitExceeded> =>
  Stream.unwrap(
    Effect.map(checkArchive(bytes), (verdict) =>
      verdict === undefined
        ? parsedRows(bytes, xlsxRows)
        : verdict._tag === "TabularLimitExceeded"
          ? Stream.fail(verdict)
          : Stream.make(problemRow(1, verdict.message))
    )
  )

/** The longest text in a value (a JSON line's values may nest). */
const longestText = (value: unknown, depth = 0): number => {
  if (typeof value === "string") return value.length
  if (value === null || typeof value !== "object" || depth > 16) return 0
  let longest = 0
  for (const inner of Object.values(value)) longest = Math.max(longest, longestText(inner, depth + 1))
  return longest
}

/** The caps every format shares: the rows of a file, the length of a value. */
const withinRowLimits = <E>(rows: Stream.Stream<TabularRow, E>): Stream.Stream<TabularRow, E | TabularLimitExceeded> =>
  Stream.suspend(() => {
    let count = 0
    return Stream.mapEffect(rows, (row) =>
      ++count > IMPORT_LIMITS.rows
        ? Effect.fail(new TabularLimitExceeded({ limit: "rows" }))
        : longestText(row.values) > IMPORT_LIMITS.cell_chars
          ? Effect.fail(new TabularLimitExceeded({ limit: "cell_chars" }))
          : Effect.succeed(row)
    )
  })

const rows = <E>(format: TabularFormat, bytes: Stream.Stream<Uint8Array, E>): Stream.Stream<TabularRow, E | TabularLimitExceeded> =>
  withinRowLimits(format === "jsonl" ? jsonLines(bytes) : format === "csv" ? parsedRows(bytes, csvRows) : xlsx(bytes))

export const StreamingTabularReader: Layer.Layer<TabularReader> = Layer.succeed(TabularReader, { rows })
