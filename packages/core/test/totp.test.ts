import { createHmac } from "node:crypto"
import { describe, expect, it } from "vitest"
import { acceptedTotpCodes, base32Decode, base32Encode } from "@syllabus/core"

const hmacSha1 = (key: Uint8Array, message: Uint8Array) => new Uint8Array(createHmac("sha1", key).update(message).digest())
const rfcSecret = base32Encode(new TextEncoder().encode("12345678901234567890"))

describe("TOTP (RFC 6238, SHA-1, 6 digits)", () => {
  it("matches the test vectors of the RFC (their last six digits)", () => {
    for (const [seconds, code] of [[59, "287082"], [1111111109, "081804"], [1234567890, "005924"], [2000000000, "279037"]] as const) {
      expect(acceptedTotpCodes(hmacSha1, rfcSecret, seconds * 1000)[1]).toBe(code)
    }
  })

  it("accepts one step on either side for clock drift, and no more", () => {
    const at = 1111111109 * 1000
    const codes = acceptedTotpCodes(hmacSha1, rfcSecret, at)
    expect(codes).toHaveLength(3)
    expect(acceptedTotpCodes(hmacSha1, rfcSecret, at + 30_000)).toContain(codes[1])
    expect(acceptedTotpCodes(hmacSha1, rfcSecret, at + 90_000)).not.toContain(codes[1])
  })

  it("round-trips base32 secrets", () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 251, 252, 253, 254, 255, 17])
    expect(base32Decode(base32Encode(bytes))).toEqual(bytes)
  })
})
