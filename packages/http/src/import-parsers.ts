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
 */
import { type TabularFormat, TabularReader, type TabularRow } from "@syllabus/core"
import { parse } from "csv-parse"
import { Data, Effect, Layer, Option, Stream } from "effect"
import ExcelJS from "exceljs"
import { Readable, type Transform } from "node:stream"

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
): Stream.Stream<TabularRow, E> =>
  Stream.suspend(() => {
    const source = asNodeStream(bytes)
    const last = { number: 0 }
    return Stream.fromAsyncIterable(read(source.readable, last), (cause) =>
      new Unreadable({ message: cause instanceof Error ? cause.message : String(cause) })
    ).pipe(
      Stream.tap((row) => Effect.sync(() => (last.number = row.number))),
      Stream.catchAll((unreadable) => {
        const failed = source.failure()
        if (Option.isSome(failed)) return Stream.fail(failed.value)
        source.readable.destroy()
        return Stream.make(problemRow(last.number + 1, unreadable.message))
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
  const parser = input.pipe(parse({ bom: true, relax_column_count: true }))
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

const jsonLines = <E>(bytes: Stream.Stream<Uint8Array, E>): Stream.Stream<TabularRow, E> =>
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
      const values: Record<string, unknown> = {}
      header.forEach((name, i) => {
        if (cells[i] !== undefined) values[name] = cells[i]
      })
      yield { number: row.number, values }
    }
    // Only the first worksheet is read; the rest of the archive is drained, not parsed.
    return
  }
}

const rows = <E>(format: TabularFormat, bytes: Stream.Stream<Uint8Array, E>): Stream.Stream<TabularRow, E> =>
  format === "jsonl" ? jsonLines(bytes) : format === "csv" ? parsedRows(bytes, csvRows) : parsedRows(bytes, xlsxRows)

export const StreamingTabularReader: Layer.Layer<TabularReader> = Layer.succeed(TabularReader, { rows })
