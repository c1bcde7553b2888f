/**
 * Punycode decoding (RFC 3492 §6.2), for checking `xn--` labels of host names: the core depends
 * on `effect` alone, and the platform's `URL` encodes (UTS 46) but never decodes.
 */
const BASE = 36
const T_MIN = 1
const T_MAX = 26
const SKEW = 38
const DAMP = 700
const INITIAL_BIAS = 72
const INITIAL_N = 128

const adapt = (delta: number, points: number, first: boolean): number => {
  let d = first ? Math.floor(delta / DAMP) : delta >> 1
  d += Math.floor(d / points)
  let k = 0
  while (d > ((BASE - T_MIN) * T_MAX) >> 1) {
    d = Math.floor(d / (BASE - T_MIN))
    k += BASE
  }
  return k + Math.floor(((BASE - T_MIN + 1) * d) / (d + SKEW))
}

const digitOf = (code: number): number =>
  code >= 0x30 && code <= 0x39 ? code - 22 : code >= 0x41 && code <= 0x5a ? code - 0x41 : code >= 0x61 && code <= 0x7a ? code - 0x61 : BASE

/** The code points a punycode string (without `xn--`) encodes, or undefined when it is not valid punycode. */
export const decodePunycode = (input: string): string | undefined => {
  const output: Array<number> = []
  const cut = input.lastIndexOf("-")
  for (let j = 0; j < Math.max(cut, 0); j++) {
    const code = input.charCodeAt(j)
    if (code >= 0x80) return undefined
    output.push(code)
  }
  let n = INITIAL_N
  let bias = INITIAL_BIAS
  let i = 0
  for (let index = cut > 0 ? cut + 1 : 0; index < input.length; ) {
    const oldi = i
    for (let w = 1, k = BASE; ; k += BASE) {
      if (index >= input.length) return undefined
      const digit = digitOf(input.charCodeAt(index++))
      if (digit >= BASE || digit > Math.floor((0x7fffffff - i) / w)) return undefined
      i += digit * w
      const t = k <= bias ? T_MIN : k >= bias + T_MAX ? T_MAX : k - bias
      if (digit < t) break
      if (w > Math.floor(0x7fffffff / (BASE - t))) return undefined
      w *= BASE - t
    }
    const points = output.length + 1
    bias = adapt(i - oldi, points, oldi === 0)
    if (Math.floor(i / points) > 0x10ffff - n) return undefined
    n += Math.floor(i / points)
    i %= points
    if (n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return undefined
    output.splice(i++, 0, n)
  }
  return String.fromCodePoint(...output)
}
