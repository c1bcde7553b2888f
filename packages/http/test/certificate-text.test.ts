/**
 * Texts in any script on a certificate (certificate-text.ts): a shaped run whose glyphs are not
 * in reading order carries its text as `ActualText`, for the tools that read marked content
 * (copy and paste, screen readers); a Latin-1 text keeps the template's standard font.
 */
import type { CertificateDocument } from "@syllabus/core"
import { Effect } from "effect"
import { inflateSync } from "node:zlib"
import { describe, expect, it } from "vitest"
import { renderCertificatePdf } from "../src/certificate-renderer.js"

const line = { enabled: true, color: "#000000", font: "arial" } as const
const certificate = (name: string): CertificateDocument => ({
  product: { name: "Course" },
  defaults: { color: "#000000", font: "arial" },
  layout: {
    showDates: true,
    showProductName: true,
    backSideEnabled: false,
    lines: { name: line, date: line, document: line, sequence: line },
    qr: { enabled: false, position: "bottom-right", color: "#000000", backgroundColor: "#FFFFFF" }
  },
  content: null,
  instructor: null,
  workload: null,
  fields: [],
  learner: { name, document: null },
  issuedAt: "2026-11-28T00:00:00Z",
  sequence: 1,
  code: "7KQ2-M9XD-4TZP-0C8W",
  background: null,
  preview: false
})

/** The page's drawing operators: its content streams, inflated. */
const contentOf = (pdf: Uint8Array): string => {
  const raw = Buffer.from(pdf).toString("latin1")
  const out: Array<string> = []
  for (const match of raw.matchAll(/stream\r?\n/g)) {
    const start = match.index + match[0].length
    const end = raw.indexOf("endstream", start)
    try {
      out.push(inflateSync(Buffer.from(raw.slice(start, end), "latin1")).toString("latin1"))
    } catch {
      // Not a deflated stream (an image, a font's raw bytes).
    }
  }
  return out.join("\n")
}

const escapes: Readonly<Record<string, string>> = { n: "\n", r: "\r", t: "\t", b: "\b", f: "\f" }

/** The `ActualText` strings of the content (PDF literal strings, UTF-16BE after a byte-order mark). */
const actualTexts = (content: string): ReadonlyArray<string> =>
  [...content.matchAll(/\/ActualText \(((?:\\.|[^\\)])*)\)/gs)].map(([, literal]) => {
    const bytes = Buffer.from(literal!.replace(/\\(.)/gs, (_, c: string) => escapes[c] ?? c), "latin1")
    return bytes.subarray(2).swap16().toString("utf16le")
  })

const fontsOf = (pdf: Uint8Array) => [...Buffer.from(pdf).toString("latin1").matchAll(/\/BaseFont \/([^\s/]+)/g)].map(([, name]) => name!)

describe("certificate texts", () => {
  it("marks shaped runs (Arabic, Hebrew, Devanagari) with their text; draws other scripts without marks", async () => {
    for (const name of ["प्रिया शर्मा", "محمد عبد الله", "שרה לוי"]) {
      const pdf = await Effect.runPromise(renderCertificatePdf(certificate(name)))
      expect(actualTexts(contentOf(pdf))).toEqual([name])
    }
    const greek = await Effect.runPromise(renderCertificatePdf(certificate("Νίκος Καζαντζάκης")))
    expect(actualTexts(contentOf(greek))).toEqual([])
    expect(fontsOf(greek).some((font) => font.endsWith("+NotoSans-Bold"))).toBe(true)
  })

  it("a Latin-1 certificate embeds no font: the template's standard font draws it", async () => {
    const pdf = await Effect.runPromise(renderCertificatePdf(certificate("José Müller")))
    expect(fontsOf(pdf).every((font) => !font.includes("+"))).toBe(true)
    expect(fontsOf(pdf)).toContain("Helvetica-Bold")
  })
})
