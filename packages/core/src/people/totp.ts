/**
 * Time-based one-time passwords (RFC 6238 over RFC 4226: HMAC-SHA-1, 6 digits, 30-second
 * steps) and the base32 secrets of authenticator apps (RFC 4648). The HMAC comes from the
 * platform (the `Crypto` port), the rest is arithmetic.
 */

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

/** Base32 without padding, as authenticator apps read it. */
export const base32Encode = (bytes: Uint8Array): string => {
  let out = ""
  let buffer = 0
  let bits = 0
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += BASE32[(buffer >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31]
  return out
}

export const base32Decode = (text: string): Uint8Array => {
  const out: Array<number> = []
  let buffer = 0
  let bits = 0
  for (const char of text.replace(/=+$/, "").toUpperCase()) {
    const value = BASE32.indexOf(char)
    if (value < 0) continue
    buffer = ((buffer << 5) | value) & 0xffff
    bits += 5
    if (bits >= 8) {
      out.push((buffer >>> (bits - 8)) & 0xff)
      bits -= 8
    }
  }
  return Uint8Array.from(out)
}

export const TOTP_STEP_SECONDS = 30
export const TOTP_DIGITS = 6

/** The RFC 4226 code of one counter value. */
type HmacSha1 = (key: Uint8Array, message: Uint8Array) => Uint8Array

const hotp = (hmacSha1: HmacSha1, key: Uint8Array, counter: number): string => {
  const message = new Uint8Array(8)
  const view = new DataView(message.buffer)
  view.setUint32(0, Math.floor(counter / 2 ** 32))
  view.setUint32(4, counter >>> 0)
  const mac = hmacSha1(key, message)
  const offset = mac[19]! & 0x0f
  const binary = ((mac[offset]! & 0x7f) << 24) | (mac[offset + 1]! << 16) | (mac[offset + 2]! << 8) | mac[offset + 3]!
  return String(binary % 10 ** TOTP_DIGITS).padStart(TOTP_DIGITS, "0")
}

/** The codes accepted at `nowMs`: the current step and one on either side, for clock drift. */
export const acceptedTotpCodes = (hmacSha1: HmacSha1, secret: string, nowMs: number): ReadonlyArray<string> => {
  const key = base32Decode(secret)
  const step = Math.floor(nowMs / 1000 / TOTP_STEP_SECONDS)
  return [step - 1, step, step + 1].map((counter) => hotp(hmacSha1, key, counter))
}
