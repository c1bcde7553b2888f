/**
 * Public IDs: `<prefix>_<body>` (§2.2 and open-points). The body is a fixed-width base62
 * encoding of a positive integer in [1, 2^53 - 1]. The alphabet is in ASCII order, so the
 * bodies of one prefix sort as their integers do; the integer leads with the creation time in
 * milliseconds, so sorting by `id` is sorting by creation.
 */
import { Option } from "effect"

export const idPrefixes = {
  // §2.2
  product: "prd",
  module: "mod",
  lesson: "les",
  exam: "exm",
  exam_question: "exq",
  question: "qst",
  taxonomy: "tax",
  taxonomy_term: "ttm",
  delivery: "dlv",
  user: "usr",
  webhook: "whk",
  webhook_delivery: "whd",
  webhook_delivery_attempt: "wha",
  // open-points
  showcase: "shw",
  banner: "bnr",
  tag: "tag",
  custom_field: "cfd",
  administrator: "adm",
  enrollment: "enr",
  ticket: "tkt",
  comment: "cmt",
  department: "dpt",
  faq: "faq",
  gateway: "gtw",
  sales_event: "sev",
  credential: "crd",
  operation: "op",
  operation_item: "opi",
  event: "evt",
  event_stream: "evs",
  file: "fil",
  upload: "upl",
  request: "req",
  audit_entry: "aud",
  legal_term: "lgt",
  term_acceptance: "tac",
  domain: "dom",
  replica: "rpl",
  plan: "pln",
  // ours, following the same rule
  navigation_item: "nav",
  attachment: "att",
  account: "acc",
  sandbox_reset: "rst",
  certificate: "crt",
  exam_attempt: "exa",
  exam_alternative: "alt",
  release_rule: "rrl",
  lesson_progress: "lpr",
  gamification_rule: "gmr",
  point_entry: "pte",
  legal_term_version: "ltv",
  question_reply: "qrp",
  email_message: "eml",
  email_bounce: "ebn",
  ticket_message: "tkm",
  funnel: "fnl",
  funnel_step: "fst",
  // issue 16: bulk exports
  export: "exp",
  // issue 16: bulk imports
  import: "imp"
} as const

export type IdKind = keyof typeof idPrefixes

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
export const ID_BODY_LENGTH = 9
export const ID_MAX = Number.MAX_SAFE_INTEGER // 2^53 - 1
const bodyPattern = /^[0-9A-Za-z]{9}$/

export const encodeIdBody = (n: number): string => {
  let out = ""
  let rest = n
  for (let i = 0; i < ID_BODY_LENGTH; i++) {
    out = alphabet[rest % 62] + out
    rest = Math.floor(rest / 62)
  }
  return out
}

export const formatId = (kind: IdKind, n: number): string => `${idPrefixes[kind]}_${encodeIdBody(n)}`

/** The integer behind a public ID of this kind, if the ID is well formed and in range. */
export const parseId = (kind: IdKind, id: string): Option.Option<number> => {
  const prefix = idPrefixes[kind] + "_"
  if (!id.startsWith(prefix)) return Option.none()
  const body = id.slice(prefix.length)
  if (!bodyPattern.test(body)) return Option.none()
  let n = 0
  for (const ch of body) n = n * 62 + alphabet.indexOf(ch)
  return n >= 1 && n <= ID_MAX ? Option.some(n) : Option.none()
}

export const isId = (kind: IdKind, id: string): boolean => Option.isSome(parseId(kind, id))

/** Milliseconds since 2020-01-01T00:00:00Z lead the integer; 12 low bits order IDs made in one ms. */
export const ID_EPOCH_MS = Date.UTC(2020, 0, 1)
export const ID_SEQUENCE_BITS = 12

/**
 * The next integer for an ID: creation time first, then `low12` (0..4095) in the low bits,
 * or, when that would not sort after `last` (several IDs in one millisecond), `last + 1`: IDs
 * of one process always grow. `Ids` passes the process's lane plus the IDs it made earlier in
 * the same millisecond (`IdLane`), so that processes on one database, each on its own lane,
 * do not make the same ID in the same millisecond.
 */
export const nextIdNumber = (nowMs: number, last: number, low12: number): number => {
  const base = Math.max(1, nowMs - ID_EPOCH_MS) * 2 ** ID_SEQUENCE_BITS
  const candidate = base + (Math.abs(Math.floor(low12)) % 2 ** ID_SEQUENCE_BITS)
  return Math.min(ID_MAX, candidate > last ? candidate : last + 1)
}

/** The number of lanes: the values of an ID's low bits. */
export const ID_LANES = 2 ** ID_SEQUENCE_BITS

/**
 * The lane of the `n`-th process of a database (a sequence's value): consecutive processes
 * far apart (Knuth's multiplicative hash, a bijection of the 12 bits), so that even bursts of
 * IDs in one millisecond rarely reach another process's lane.
 */
export const idLaneOf = (n: number): number => Number((BigInt(Math.floor(n)) * 2654435761n) % BigInt(ID_LANES))

/**
 * The smallest ID of this kind made at `ms` or later: IDs made before sort below it, IDs made
 * then or after at or above it (the store partitions append-only streams by week on it).
 */
export const firstIdAt = (kind: IdKind, ms: number): string =>
  formatId(kind, Math.min(ID_MAX, Math.max(1, ms - ID_EPOCH_MS) * 2 ** ID_SEQUENCE_BITS))
