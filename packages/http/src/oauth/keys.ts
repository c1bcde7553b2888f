/**
 * The signing keys of the authorization server (§5.2): one RS256 key pair made on first
 * start and kept in the store, like the server keys of `layer.ts`, so that every process on
 * one database signs and verifies with the same keys. `retired_keys` (public JWKs) still
 * verify tokens signed before a rotation and are published on `/oauth/jwks`.
 */
import { type JsonObject, Records, type StoreUnavailable, type Tenant } from "@syllabus/core"
import { Effect } from "effect"
import { exportJWK, generateKeyPair, importJWK, type JWK } from "jose"
import { randomBytes } from "node:crypto"

const SYSTEM: Tenant = { accountId: "system", environment: "production" }
const KEYS_TYPE = "oauth_signing_keys"

type KeyObject = Awaited<ReturnType<typeof importJWK>>

export interface SigningKeys {
  readonly kid: string
  readonly privateKey: KeyObject
  /** Public keys by `kid`: the signing key's and the retired ones. */
  readonly verifying: ReadonlyMap<string, KeyObject>
  /** The public JWKS document. */
  readonly jwks: { readonly keys: ReadonlyArray<JWK> }
}

type RecordsService = Records["Type"]

/** Loaded keys per store (a process may serve several stores: tests do). */
const cache = new WeakMap<object, SigningKeys>()

const fresh = Effect.promise(async () => {
  const pair = await generateKeyPair("RS256", { extractable: true })
  const kid = randomBytes(12).toString("base64url")
  const privateJwk = await exportJWK(pair.privateKey)
  return { kid, private_jwk: { ...privateJwk, kid, alg: "RS256" }, retired_keys: [] } as unknown as JsonObject
})

const publicPart = (jwk: JWK): JWK => ({ kty: "RSA", n: String(jwk.n), e: String(jwk.e), kid: String(jwk.kid), alg: "RS256", use: "sig" })

const build = (data: JsonObject) =>
  Effect.promise(async (): Promise<SigningKeys> => {
    const privateJwk = data.private_jwk as unknown as JWK
    const kid = String(data.kid)
    const retired = (Array.isArray(data.retired_keys) ? data.retired_keys : []) as unknown as ReadonlyArray<JWK>
    const published = [publicPart(privateJwk), ...retired.filter((k) => typeof k.kid === "string").map(publicPart)]
    const verifying = new Map<string, KeyObject>()
    for (const jwk of published) {
      try {
        verifying.set(jwk.kid!, await importJWK(jwk, "RS256"))
      } catch {
        // An unusable stored key verifies nothing.
      }
    }
    return { kid, privateKey: await importJWK(privateJwk, "RS256"), verifying, jwks: { keys: published } }
  })

/** Read the keys from the store, making them on first use. */
const readKeys = (records: RecordsService): Effect.Effect<SigningKeys, StoreUnavailable> =>
  Effect.gen(function* () {
    const existing = yield* records.get(SYSTEM, KEYS_TYPE, "default")
    if (existing) return yield* build(existing.data)
    const made = yield* fresh
    const data = yield* records.insert(SYSTEM, KEYS_TYPE, "default", made).pipe(
      Effect.map((r) => r.data),
      // Another process made them first: use theirs.
      Effect.catchTag("UniqueViolation", () =>
        records.get(SYSTEM, KEYS_TYPE, "default").pipe(Effect.map((r) => r?.data ?? made))
      )
    )
    return yield* build(data)
  })

/** The keys of this store; `reload` reads them again (a `kid` this process does not know yet). */
export const signingKeys = (records: RecordsService, reload = false): Effect.Effect<SigningKeys, StoreUnavailable> =>
  Effect.suspend(() => {
    const known = cache.get(records)
    if (known && !reload) return Effect.succeed(known)
    return readKeys(records).pipe(Effect.tap((keys) => Effect.sync(() => cache.set(records, keys))))
  })

/** The same, from the context. */
export const currentSigningKeys = Effect.flatMap(Records, (records) => signingKeys(records))
