/**
 * Platform cryptography, kept out of the pure core: implemented on the platform by the
 * HTTP adapter (`node-crypto.ts`), provided by the assembling layer.
 */
import { Context } from "effect"

/** Platform cryptography, kept out of the pure core. */
export class Crypto extends Context.Tag("@syllabus/core/Crypto")<
  Crypto,
  {
    /** Keyed hash used to store secrets (hex). */
    readonly hashSecret: (secret: string) => string
    /** HMAC-SHA256 with the cursor key, base64url. */
    readonly signCursor: (payload: string) => string
    readonly sha256Hex: (data: string) => string
    /** HMAC-SHA-1 (one-time passwords of RFC 4226/6238 need it). */
    readonly hmacSha1: (key: Uint8Array, message: Uint8Array) => Uint8Array
    /** HMAC-SHA256 (a gateway's signed notifications, Standard Webhooks). */
    readonly hmacSha256: (key: Uint8Array, message: Uint8Array) => Uint8Array
    /** Cryptographically strong random bytes. */
    readonly randomBytes: (size: number) => Uint8Array
    /** Constant-time string comparison. */
    readonly safeEqual: (a: string, b: string) => boolean
    /** A salted, slow password hash (scrypt) and its check. */
    readonly hashPassword: (password: string) => string
    readonly verifyPassword: (password: string, hash: string) => boolean
  }
>() {}
