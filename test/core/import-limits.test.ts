/**
 * The import reader's caps (issue 23; docs/imports.md "Limits"), on the reader itself: the rows
 * of a file are counted, and a hostile file is read no further than its cap (the bytes pulled
 * from the source are counted: the reader stops, not after reading it all).
 */
import { describe, expect, it } from "@effect/vitest"
import { IMPORT_LIMITS, type TabularFormat, TabularReader } from "@syllabus/core"
import { StreamingTabularReader } from "@syllabus/http"
import { Effect, Either, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { Zip, ZipDeflate } from "fflate"

/** The outcome of reading `chunks` (pulled lazily), and how many bytes the reader pulled. */
const read = (format: TabularFormat, chunks: () => Iterable<Uint8Array>) =>
  Effect.gen(function* () {
    let pulled = 0
    const bytes = Stream.fromIterable({ [Symbol.iterator]: () => chunks()[Symbol.iterator]() }).pipe(
      Stream.tap((chunk) => Effect.sync(() => (pulled += chunk.length)))
    )
    const reader = yield* TabularReader
    let rows = 0
    const outcome = yield* Stream.runForEach(reader.rows(format, bytes), () => Effect.sync(() => rows++)).pipe(Effect.either)
    return { outcome, rows, pulled }
  }).pipe(Effect.provide(StreamingTabularReader))

const MiB = 1024 * 1024
const megabyte = new Uint8Array(MiB).fill(0x61)

/** A header, then one line of `mib` MiB of `a` (generated as it is pulled), then a short row. */
function* longLine(mib: number) {
  yield new TextEncoder().encode("name\n")
  for (let i = 0; i < mib; i++) yield megabyte
  yield new TextEncoder().encode("\nlast\n")
}

const limitOf = (outcome: Either.Either<unknown, unknown>) => (Either.isLeft(outcome) ? (outcome.left as { limit?: string }).limit : undefined)

describe("import limits", () => {
  it.effect("a 300 MiB CSV line: line_bytes, after reading little more than the cap", () =>
    Effect.gen(function* () {
      const { outcome, rows, pulled } = yield* read("csv", () => longLine(300))
      expect(limitOf(outcome)).toBe("line_bytes")
      expect(rows).toBe(0)
      // The cap and what the parser's pipes buffer (a few MiB), not the file.
      expect(pulled).toBeLessThanOrEqual(IMPORT_LIMITS.line_bytes + 4 * MiB)
    }))

  it.effect("a 300 MiB JSON line: line_bytes, after reading little more than the cap", () =>
    Effect.gen(function* () {
      const { outcome, rows, pulled } = yield* read("jsonl", () => longLine(300))
      expect(limitOf(outcome)).toBe("line_bytes")
      // The first line (`name`, not a JSON object) is a row with a problem; the long one never is.
      expect(rows).toBeLessThanOrEqual(1)
      expect(pulled).toBeLessThanOrEqual(IMPORT_LIMITS.line_bytes + 2 * MiB)
    }))

  it.effect("an XLSX whose shared strings inflate past xlsx_shared_strings_bytes (text that hardly compresses): refused before any row", () =>
    Effect.gen(function* () {
      // 64 KiB of random text in 16-byte strings, repeated: DEFLATE's 32 KiB window cannot see the repeat, so the ratio stays low.
      const strings = Buffer.from(
        Array.from({ length: 4096 }, () => `<si><t>${randomBytes(9).toString("base64")}</t></si>`).join("")
      )
      const out: Array<Uint8Array> = []
      const zip = new Zip((error, chunk) => {
        if (error) throw error
        out.push(chunk)
      })
      const part = new ZipDeflate("xl/sharedStrings.xml", { level: 1 })
      zip.add(part)
      for (let n = 0; n <= IMPORT_LIMITS.xlsx_shared_strings_bytes; n += strings.length) part.push(strings)
      part.push(new Uint8Array(0), true)
      zip.end()
      const archive = Buffer.concat(out)
      expect(archive.length * IMPORT_LIMITS.xlsx_expansion_ratio).toBeGreaterThan(IMPORT_LIMITS.xlsx_shared_strings_bytes)
      const { outcome, rows } = yield* read("xlsx", function* () {
        for (let i = 0; i < archive.length; i += MiB) yield archive.subarray(i, i + MiB)
      })
      expect(limitOf(outcome)).toBe("xlsx_shared_strings_bytes")
      expect(rows).toBe(0)
    }), 60_000)

  it.effect("rows: the row after the cap fails the file, every row before it read", () =>
    Effect.gen(function* () {
      const rowsOf = (count: number) =>
        function* () {
          yield new TextEncoder().encode("name\n")
          const page = new TextEncoder().encode("x\n".repeat(10_000))
          for (let i = 0; i < count; i += 10_000) yield page
        }
      const over = yield* read("csv", rowsOf(IMPORT_LIMITS.rows + 10_000))
      expect(limitOf(over.outcome)).toBe("rows")
      expect(over.rows).toBe(IMPORT_LIMITS.rows)
    }), 120_000)
})
