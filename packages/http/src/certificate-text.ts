/**
 * A certificate's texts in any script (issue 26): a text PDF's standard fonts can encode
 * (Latin-1) is drawn with the template's font as before; any other is drawn with Noto
 * (certificate-fonts.ts), a font chosen per run of one script, shaped by fontkit through the
 * font's OpenType tables (Arabic joining, Devanagari conjuncts and vowel signs).
 *
 * - **Runs**: each character goes to its script's family (Arabic, Hebrew, Han, kana, Hangul,
 *   else Noto Sans), and to the subset file of that family that holds it; spaces and combining
 *   marks stay in the run they follow. Han takes the Japanese font in a text with kana, the
 *   Korean in one with Hangul, else the Simplified Chinese, the others in turn when a font
 *   lacks the character.
 * - **Direction**: a paragraph whose first letter is Arabic or Hebrew is right to left: its
 *   runs are laid out from the right (fontkit already orders the glyphs of a right-to-left run).
 *   This is the Unicode bidirectional algorithm for what names and certificate texts hold: runs
 *   of one direction, digits and punctuation between them.
 * - **Extraction**: a shaped run whose glyphs are not in reading order (Arabic, Hebrew,
 *   Devanagari) is marked with its text (`ActualText`), which copy and paste and text
 *   extractors that read marked content use.
 * - **Lines**: broken after spaces and between CJK characters; a word longer than the line is
 *   broken between characters. Centered.
 */
import { type Face, type Family, faceName, familyMetrics, loadFace, subsetFor } from "./certificate-fonts.js"

/** Characters PDF's standard fonts encode (WinAnsi): Latin-1 and a few more. */
const WIN_ANSI_EXTRA = new Set([..."€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ"].map((c) => c.codePointAt(0)!))
const standardEncodable = (text: string): boolean => {
  for (const ch of text) {
    const cp = ch.codePointAt(0)!
    if (!(cp === 0x0a || cp === 0x0d || cp === 0x09 || (cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xff) || WIN_ANSI_EXTRA.has(cp))) return false
  }
  return true
}

type Script = "arabic" | "hebrew" | "han" | "kana" | "hangul" | "space" | "mark" | "other"

const within = (cp: number, ranges: ReadonlyArray<readonly [number, number]>) => ranges.some(([a, b]) => cp >= a && cp <= b)
const ARABIC = [[0x0600, 0x06ff], [0x0750, 0x077f], [0x0870, 0x08ff], [0xfb50, 0xfdff], [0xfe70, 0xfefc]] as const
const HEBREW = [[0x0590, 0x05ff], [0xfb1d, 0xfb4f]] as const
const HAN = [[0x2e80, 0x2fdf], [0x3000, 0x303f], [0x3190, 0x31ef], [0x3400, 0x4dbf], [0x4e00, 0x9fff], [0xf900, 0xfaff], [0xff00, 0xff64], [0x20000, 0x3ffff]] as const
const KANA = [[0x3040, 0x30ff], [0x31f0, 0x31ff], [0xff65, 0xff9f]] as const
const HANGUL = [[0x1100, 0x11ff], [0x3130, 0x318f], [0xa960, 0xa97f], [0xac00, 0xd7ff]] as const
const MARKS = [[0x0300, 0x036f], [0x1ab0, 0x1aff], [0x1dc0, 0x1dff], [0x200c, 0x200d], [0x20d0, 0x20ff], [0xfe00, 0xfe0f], [0xfe20, 0xfe2f]] as const

const scriptOf = (cp: number): Script =>
  cp === 0x20 || cp === 0xa0
    ? "space"
    : within(cp, MARKS)
      ? "mark"
      : within(cp, ARABIC)
        ? "arabic"
        : within(cp, HEBREW)
          ? "hebrew"
          : within(cp, KANA)
            ? "kana"
            : within(cp, HANGUL)
              ? "hangul"
              : within(cp, HAN)
                ? "han"
                : "other"

const isRtl = (family: Family) => family === "arabic" || family === "hebrew"
const cjkFamilies: ReadonlyArray<Family> = ["sc", "tc", "jp", "kr"]

/** A run of characters drawn with one face. */
interface Run {
  text: string
  readonly face: Face
}

/** The face of a character: its script's family, the subset holding it; Noto Sans's Latin when none does. */
const faceOf = (cp: number, script: Script, cjkOrder: ReadonlyArray<Family>, bold: boolean): Face => {
  const candidates: ReadonlyArray<Family> =
    script === "arabic" ? ["arabic", "sans"] : script === "hebrew" ? ["hebrew", "sans"] : script === "han" || script === "kana" || script === "hangul" ? [...cjkOrder, "sans"] : ["sans", ...cjkOrder]
  for (const family of candidates) {
    const subset = subsetFor(family, cp)
    if (subset !== undefined) return { family, subset, bold }
  }
  return { family: "sans", subset: "latin", bold }
}

const sameFace = (a: Face, b: Face) => a.family === b.family && a.subset === b.subset && a.bold === b.bold

/** A paragraph's runs, in reading order. */
const runsOf = (text: string, bold: boolean): ReadonlyArray<Run> => {
  const scripts = [...text].map((ch) => scriptOf(ch.codePointAt(0)!))
  const preferred: Family = scripts.includes("kana") ? "jp" : scripts.includes("hangul") ? "kr" : "sc"
  const cjkOrder = [preferred, ...cjkFamilies.filter((f) => f !== preferred)]
  const runs: Array<Run> = []
  let i = 0
  for (const ch of text) {
    const script = scripts[i++]!
    const last = runs.at(-1)
    if (last && (script === "space" || script === "mark")) {
      last.text += ch
      continue
    }
    const face = faceOf(ch.codePointAt(0)!, script, cjkOrder, bold)
    if (last && sameFace(last.face, face)) last.text += ch
    else runs.push({ text: ch, face })
  }
  return runs
}

/** Is the paragraph right to left: is its first letter Arabic or Hebrew? */
const rightToLeft = (text: string): boolean => {
  for (const ch of text) {
    if (/\p{L}/u.test(ch)) {
      const script = scriptOf(ch.codePointAt(0)!)
      return script === "arabic" || script === "hebrew"
    }
  }
  return false
}

/** The texts a certificate draws, to load their faces before drawing (both weights: a text may be drawn in either). */
export const loadFaces = async (doc: PDFKit.PDFDocument, texts: ReadonlyArray<string | null>): Promise<void> => {
  const faces = new Map<string, Face>()
  for (const text of texts) {
    if (text === null || standardEncodable(text)) continue
    for (const bold of [false, true]) {
      for (const paragraph of text.split(/\r?\n/)) for (const run of runsOf(paragraph, bold)) faces.set(faceName(run.face), run.face)
    }
  }
  for (const [name, face] of faces) doc.registerFont(name, Buffer.from(await loadFace(face)))
}

interface Style {
  /** The standard font of the template for a Latin-1 text. */
  readonly standardFont: string
  readonly bold: boolean
  readonly size: number
  readonly color: string
}

const withFace = (doc: PDFKit.PDFDocument, face: Face, size: number) => doc.font(faceName(face)).fontSize(size)

/**
 * Layout options of every Noto run: naming a feature makes pdfkit shape the run whole; without
 * one it lays a text out a word at a time and joins the words left to right, which reverses the
 * words of a right-to-left run. Kerning is on by default anyway.
 */
const WHOLE_RUN: PDFKit.Mixins.TextOptions = { features: ["kern"] }
const widthIn = (doc: PDFKit.PDFDocument, face: Face, size: number, text: string) => withFace(doc, face, size).widthOfString(text, WHOLE_RUN)

/** Break opportunities: a piece ends after spaces, and CJK characters are pieces of their own. */
const piecesOf = (text: string): ReadonlyArray<{ readonly text: string; readonly cjk: boolean }> =>
  text.match(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}][ \u00a0]*|[^ \u00a0\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+[ \u00a0]*|[ \u00a0]+/gu)?.map((piece) => ({
    text: piece,
    cjk: /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u.test(piece)
  })) ?? []

type Word = Array<Run>

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" })

/** Lines of words that fit `width`; a word wider than a line alone is broken between characters. */
const wrap = (doc: PDFKit.PDFDocument, runs: ReadonlyArray<Run>, size: number, width: number): ReadonlyArray<Word> => {
  const words: Array<Word> = [[]]
  for (const run of runs) {
    for (const piece of piecesOf(run.text)) {
      if (piece.cjk && words.at(-1)!.length > 0) words.push([])
      words.at(-1)!.push({ text: piece.text, face: run.face })
      if (piece.cjk || /[ \u00a0]$/.test(piece.text)) words.push([])
    }
  }
  const widthOf = (word: Word) => word.reduce((sum, chunk) => sum + widthIn(doc, chunk.face, size, chunk.text.trimEnd()), 0)
  const lines: Array<Word> = []
  let line: Word = []
  let used = 0
  const place = (word: Word) => {
    const w = widthOf(word)
    if (line.length > 0 && used + w > width) {
      lines.push(line)
      line = []
      used = 0
    }
    line.push(...word)
    used += word.reduce((sum, chunk) => sum + widthIn(doc, chunk.face, size, chunk.text), 0)
  }
  for (const word of words) {
    if (word.length === 0) continue
    if (widthOf(word) <= width) place(word)
    else for (const chunk of word) for (const { segment } of graphemes.segment(chunk.text)) place([{ text: segment, face: chunk.face }])
  }
  if (line.length > 0) lines.push(line)
  return lines
}

/** A line's chunks as drawn: adjacent ones of one face merged, trailing spaces cut, from the left. */
const visual = (line: Word, rtl: boolean): ReadonlyArray<Run> => {
  const merged: Array<Run> = []
  for (const chunk of line) {
    const last = merged.at(-1)
    if (last && sameFace(last.face, chunk.face)) last.text += chunk.text
    else merged.push({ ...chunk })
  }
  const end = merged.at(-1)
  if (end) end.text = end.text.trimEnd()
  return rtl ? merged.reverse() : merged
}

/** Draw a line from `x` on `baseline`. */
const drawLine = (doc: PDFKit.PDFDocument, runs: ReadonlyArray<Run>, x: number, baseline: number, style: Style) => {
  for (const run of runs) {
    const spec = familyMetrics(run.face.family)
    const width = widthIn(doc, run.face, style.size, run.text)
    // Shaped runs whose glyphs are not in reading order carry their text for extraction.
    const shaped = isRtl(run.face.family) || run.face.subset === "devanagari"
    if (shaped) doc.markContent("Span", { actual: run.text })
    doc.fillColor(style.color)
    if (spec.strokeEm !== undefined) {
      // A CJK font's thinnest master, stroked to the weight asked.
      doc.save().lineWidth((style.bold ? spec.strokeEm.bold : spec.strokeEm.regular) * style.size).strokeColor(style.color)
      doc.text(run.text, x, baseline, { ...WHOLE_RUN, lineBreak: false, baseline: "alphabetic", fill: true, stroke: true })
      doc.restore()
    } else {
      doc.text(run.text, x, baseline, { ...WHOLE_RUN, lineBreak: false, baseline: "alphabetic" })
    }
    if (shaped) doc.endMarkedContent()
    x += width
  }
}

/**
 * Draw `text` centered in the band from `left`, `width` wide, from the document's `y`; the
 * document's `y` ends below it. The faces it needs were loaded (`loadFaces`).
 */
export const drawCentered = (doc: PDFKit.PDFDocument, text: string, style: Style, left: number, width: number): void => {
  if (standardEncodable(text)) {
    doc.font(style.standardFont).fontSize(style.size).fillColor(style.color).text(text, left, doc.y, { width, align: "center" })
    return
  }
  let y = doc.y
  for (const paragraph of text.split(/\r?\n/)) {
    const rtl = rightToLeft(paragraph)
    const lines = wrap(doc, runsOf(paragraph, style.bold), style.size, width)
    if (lines.length === 0) y += familyMetrics("sans").ascent * style.size + familyMetrics("sans").descent * style.size
    for (const line of lines) {
      const runs = visual(line, rtl)
      const ascent = Math.max(...runs.map((r) => familyMetrics(r.face.family).ascent))
      const descent = Math.max(...runs.map((r) => familyMetrics(r.face.family).descent))
      const total = runs.reduce((sum, run) => sum + widthIn(doc, run.face, style.size, run.text), 0)
      drawLine(doc, runs, left + (width - total) / 2, y + ascent * style.size, style)
      y += (ascent + descent) * style.size
    }
  }
  doc.x = left
  doc.y = y
}
