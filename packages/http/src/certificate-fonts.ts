/**
 * The fonts a certificate draws learners' names and a school's texts with, beyond the Latin-1
 * alphabets of PDF's standard fonts (issue 26): Noto, from the Fontsource packages of the npm
 * registry (SIL Open Font License), each family split by Google Fonts into subsets by Unicode
 * range (`unicode.json` of each package says which file holds which characters).
 *
 * - **Scripts**: Noto Sans for Latin, Cyrillic, Greek, Vietnamese and Devanagari; Noto Sans
 *   Arabic and Noto Sans Hebrew; Noto Sans SC, TC, JP and KR for Han, kana and Hangul.
 * - **Formats**: pdfkit embeds fonts through fontkit, whose subsetting of WOFF2 files loses the
 *   outlines (empty glyphs) and breaks on composite glyphs (accented letters), and whose
 *   re-encoding of a variable font's instance fails. So the non-CJK families are the static
 *   packages' WOFF files (weights 400 and 700), which fontkit embeds as they are; the CJK
 *   families ship only as variable WOFF2 in a sane size (about 5 MB a region, against 75 MB for
 *   the static packages), so their subsets are decoded to TrueType (wawoff2, Google's decoder
 *   in WebAssembly) and drawn from the font's default master, which is its thinnest weight:
 *   `strokeEm` thickens it to a regular or bold weight by stroking the outline.
 * - **Lazily**: a file is read (and a CJK file decoded) the first time a text needs it, then
 *   kept for the thread's later documents; a Latin-1 certificate reads none.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

/** The font families of the certificate's texts. */
export type Family = "sans" | "arabic" | "hebrew" | "sc" | "tc" | "jp" | "kr"

interface FamilyFiles {
  /** The Fontsource package. */
  readonly pkg: string
  /** A subset's file, by its key in `unicode.json` and the weight. */
  readonly file: (subset: string, bold: boolean) => string
  /** The subsets it is used for (others are another family's: the Arabic package's Latin, say). */
  readonly subsets?: ReadonlyArray<string>
  /** Ascent and descent of the font, in em (its `hhea`). */
  readonly ascent: number
  readonly descent: number
  /** Variable WOFF2, drawn from its thinnest master, stroked to weight (em). */
  readonly strokeEm?: { readonly regular: number; readonly bold: number }
}

const staticFile = (id: string) => (subset: string, bold: boolean) => `${id}-${subset}-${bold ? 700 : 400}-normal.woff`
const cjk = (region: string): FamilyFiles => ({
  pkg: `@fontsource-variable/noto-sans-${region}`,
  // Subset keys are `[n]`.
  file: (subset) => `noto-sans-${region}-${subset.replace(/[[\]]/g, "")}-wght-normal.woff2`,
  ascent: 1.16,
  descent: 0.288,
  strokeEm: { regular: 0.05, bold: 0.085 }
})

const families: Readonly<Record<Family, FamilyFiles>> = {
  sans: { pkg: "@fontsource/noto-sans", file: staticFile("noto-sans"), ascent: 1.069, descent: 0.293 },
  arabic: { pkg: "@fontsource/noto-sans-arabic", file: staticFile("noto-sans-arabic"), subsets: ["arabic"], ascent: 1.374, descent: 0.738 },
  hebrew: { pkg: "@fontsource/noto-sans-hebrew", file: staticFile("noto-sans-hebrew"), subsets: ["hebrew"], ascent: 1.068, descent: 0.292 },
  sc: cjk("sc"),
  tc: cjk("tc"),
  jp: cjk("jp"),
  kr: cjk("kr")
}

export const familyMetrics = (family: Family) => families[family]

const require = createRequire(import.meta.url)

/** A family's subsets: their key and code point ranges, Latin first (ranges overlap: a combining mark is in several). */
interface Subset {
  readonly key: string
  readonly ranges: ReadonlyArray<readonly [number, number]>
}

const parseRanges = (value: string): ReadonlyArray<readonly [number, number]> =>
  value.split(",").map((range) => {
    const [from = "0", to] = range.trim().replace(/^U\+/i, "").split("-")
    return [parseInt(from, 16), parseInt(to ?? from, 16)] as const
  })

const subsetsOf = new Map<Family, ReadonlyArray<Subset>>()
const loadSubsets = (family: Family): ReadonlyArray<Subset> => {
  const known = subsetsOf.get(family)
  if (known) return known
  const spec = families[family]
  const unicode = require(`${spec.pkg}/unicode.json`) as Record<string, string>
  const subsets = Object.entries(unicode)
    .filter(([key]) => spec.subsets === undefined || spec.subsets.includes(key))
    .map(([key, value]) => ({ key, ranges: parseRanges(value) }))
    .sort((a, b) => Number(b.key === "latin") - Number(a.key === "latin"))
  subsetsOf.set(family, subsets)
  return subsets
}

/** The subset of `family` holding this code point, or undefined (memoized: a text repeats its characters). */
const coverage = new Map<Family, Map<number, string | null>>()
export const subsetFor = (family: Family, codePoint: number): string | undefined => {
  let memo = coverage.get(family)
  if (!memo) coverage.set(family, (memo = new Map()))
  const known = memo.get(codePoint)
  if (known !== undefined) return known ?? undefined
  const found = loadSubsets(family).find((s) => s.ranges.some(([from, to]) => codePoint >= from && codePoint <= to))?.key ?? null
  memo.set(codePoint, found)
  return found ?? undefined
}

/** One font file: a subset of a family, in a weight. */
export interface Face {
  readonly family: Family
  readonly subset: string
  readonly bold: boolean
}

/** The name a face is registered under in a document. */
export const faceName = (face: Face): string => `noto-${face.family}-${face.subset}-${face.bold ? "bold" : "regular"}`

const fileOf = (face: Face): string => {
  const spec = families[face.family]
  // `@fontsource/*` packages export `./files/*`; the package's folder is found through its unicode.json.
  return join(dirname(require.resolve(`${spec.pkg}/unicode.json`)), "files", spec.file(face.subset, face.bold && spec.strokeEm === undefined))
}

/** The bytes pdfkit embeds for a face (TrueType or WOFF), loaded once per thread. */
const loaded = new Map<string, Promise<Uint8Array>>()
export const loadFace = (face: Face): Promise<Uint8Array> => {
  const file = fileOf(face)
  const known = loaded.get(file)
  if (known) return known
  const bytes = (async () => {
    const raw = readFileSync(file)
    if (families[face.family].strokeEm === undefined) return new Uint8Array(raw)
    const { default: decompress } = await import("wawoff2/decompress.js")
    // A copy: the decoder answers a view of its own memory, which its next call overwrites.
    return (await decompress(raw)).slice()
  })()
  loaded.set(file, bytes)
  // A failure is not kept: the next document tries again.
  bytes.catch(() => loaded.delete(file))
  return bytes
}
