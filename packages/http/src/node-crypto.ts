/**
 * The `Crypto` port on Node's `crypto`: secrets are stored as HMAC-SHA256 under a server key
 * (a stolen table alone does not let anyone test guesses), cursors are signed with another.
 */
import { Crypto } from "@syllabus/core"
import { createHash, createHmac, randomBytes, scryptSync, timingSafeEqual } from "node:crypto"
import { Layer, Redacted } from "effect"

export interface CryptoKeys {
  /** Key of the secret hash. Changing it invalidates every stored secret. */
  readonly secretKey: Redacted.Redacted<string>
  /** Key of cursor signatures. Changing it invalidates open cursors only. */
  readonly cursorKey: Redacted.Redacted<string>
}

export const makeNodeCrypto = (keys: CryptoKeys): Crypto["Type"] => {
  const secretKey = Redacted.value(keys.secretKey)
  const cursorKey = Redacted.value(keys.cursorKey)
  const safeEqual = (a: string, b: string) => {
    const x = Buffer.from(a)
    const y = Buffer.from(b)
    return x.length === y.length && timingSafeEqual(x, y)
  }
  return {
    hashSecret: (secret) => createHmac("sha256", secretKey).update(secret).digest("hex"),
    signCursor: (payload) => createHmac("sha256", cursorKey).update(payload).digest("base64url"),
    sha256Hex: (data) => createHash("sha256").update(data).digest("hex"),
    hmacSha1: (key, message) => new Uint8Array(createHmac("sha1", key).update(message).digest()),
    hmacSha256: (key, message) => new Uint8Array(createHmac("sha256", key).update(message).digest()),
    randomBytes: (size) => new Uint8Array(randomBytes(size)),
    safeEqual,
    hashPassword: (password) => {
      const salt = randomBytes(16)
      const hash = scryptSync(password, salt, 32)
      return `scrypt$${salt.toString("base64url")}$${hash.toString("base64url")}`
    },
    verifyPassword: (password, stored) => {
      const [scheme, salt, hash] = stored.split("$")
      if (scheme !== "scrypt" || salt === undefined || hash === undefined) return false
      const candidate = scryptSync(password, Buffer.from(salt, "base64url"), 32).toString("base64url")
      return safeEqual(candidate, hash)
    }
  }
}

export const NodeCrypto = (keys: CryptoKeys) => Layer.succeed(Crypto, makeNodeCrypto(keys))

/** Fresh random keys: for the in-memory store, whose secrets die with the process anyway. */
export const ephemeralKeys = (): CryptoKeys => ({
  secretKey: Redacted.make(randomBytes(32).toString("base64url")),
  cursorKey: Redacted.make(randomBytes(32).toString("base64url"))
})
