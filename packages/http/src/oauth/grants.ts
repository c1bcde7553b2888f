/**
 * The token store of the authorization server (§5.2): authorization codes, and grants (one
 * access token and its refresh token, issued together). Both live in the administrator's
 * account (its production tenant). An access token is an RS256 JWT whose `jti` is its
 * grant's id; a refresh token is an opaque random string found by its hash.
 *
 * - A code is single-use, lives 10 minutes, and is bound to its `redirect_uri`, client and
 *   PKCE challenge; presenting a used code again revokes every grant descended from it.
 * - Refresh rotates: the used grant is marked exchanged and a new one issued. Presenting an
 *   exchanged refresh token is reuse: every grant of that administrator and client is revoked.
 * - Revoking either token of a grant revokes the grant, so both.
 */
import {
  AccessTokens,
  type AccessTokenClaims,
  accountHome,
  Records,
  type StoredRecord,
  type StoreUnavailable,
  UnitOfWork
} from "@syllabus/core"
import { Clock, Effect, Layer } from "effect"
import { decodeProtectedHeader, errors as joseErrors, type JWTPayload, jwtVerify, SignJWT } from "jose"
import { createHash, randomBytes } from "node:crypto"
import { signingKeys } from "./keys.js"

export const CLIENT_ID = "service-cli"
export const AUDIENCE = "service-api-v3"
export const ACCESS_TOKEN_SECONDS = 3600
export const REFRESH_TOKEN_MS = 30 * 24 * 3600 * 1000
export const CODE_MS = 10 * 60 * 1000
/** RFC 9068 media type of JWT access tokens: an ID token never has it. */
export const ACCESS_TOKEN_TYP = "at+jwt"

const GRANT = "oauth_grant"
const CODE = "oauth_code"

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")
const token = (bytes = 32) => randomBytes(bytes).toString("base64url")
const iso = (ms: number) => new Date(ms).toISOString()

/** RFC 7636: S256 challenge of a verifier. */
export const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")
export const verifierPattern = /^[A-Za-z0-9\-._~]{43,128}$/
export const challengePattern = /^[A-Za-z0-9_-]{43}$/

export interface TokenPair {
  readonly token_type: "Bearer"
  readonly access_token: string
  readonly refresh_token: string
  readonly expires_in: number
}

export type GrantOutcome = { readonly _tag: "Issued"; readonly pair: TokenPair } | { readonly _tag: "InvalidGrant"; readonly description: string }

const invalid = (description: string): GrantOutcome => ({ _tag: "InvalidGrant", description })

// ---------------------------------------------------------------------------------------
// Codes

export interface CodeInput {
  readonly clientId: string
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly administratorId: string
  readonly accountId: string
  readonly issuer: string
}

/** Issue an authorization code after consent. */
export const issueCode = (input: CodeInput) =>
  Effect.gen(function* () {
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const code = token()
    const id = "code_" + token(12)
    yield* records.insert(
      accountHome(input.accountId),
      CODE,
      id,
      {
        id,
        client_id: input.clientId,
        redirect_uri: input.redirectUri,
        code_challenge: input.codeChallenge,
        administrator_id: input.administratorId,
        account_id: input.accountId,
        issuer: input.issuer,
        expires_at: iso(now + CODE_MS),
        used_at: null,
        created_at: iso(now)
      },
      [{ name: "code_hash", value: sha256(code), global: true }]
    )
    return code
  })

// ---------------------------------------------------------------------------------------
// Grants

interface GrantInput {
  readonly administratorId: string
  readonly accountId: string
  readonly clientId: string
  readonly issuer: string
  /** The code the chain of grants started from. */
  readonly codeId: string
}

/** Sign the access token of a grant. */
const signAccessToken = (grantId: string, input: GrantInput, nowMs: number) =>
  Effect.gen(function* () {
    const keys = yield* Effect.flatMap(Records, (records) => signingKeys(records))
    const iat = Math.floor(nowMs / 1000)
    return yield* Effect.promise(() =>
      new SignJWT({ account_id: input.accountId, client_id: input.clientId })
        .setProtectedHeader({ alg: "RS256", kid: keys.kid, typ: ACCESS_TOKEN_TYP })
        .setIssuer(input.issuer)
        .setAudience(AUDIENCE)
        .setSubject(input.administratorId)
        .setJti(grantId)
        .setIssuedAt(iat)
        .setNotBefore(iat)
        .setExpirationTime(iat + ACCESS_TOKEN_SECONDS)
        .sign(keys.privateKey)
    )
  })

/** Make a grant record (inside the caller's unit of work) and its tokens. */
const insertGrant = (input: GrantInput, nowMs: number) =>
  Effect.gen(function* () {
    const records = yield* Records
    const id = "grt_" + token(16)
    const refresh = token()
    yield* records.insert(
      accountHome(input.accountId),
      GRANT,
      id,
      {
        id,
        administrator_id: input.administratorId,
        account_id: input.accountId,
        client_id: input.clientId,
        issuer: input.issuer,
        code_id: input.codeId,
        access_expires_at: iso(nowMs + ACCESS_TOKEN_SECONDS * 1000),
        refresh_expires_at: iso(nowMs + REFRESH_TOKEN_MS),
        refresh_state: "active",
        revoked_at: null,
        created_at: iso(nowMs)
      },
      [{ name: "refresh_hash", value: sha256(refresh), global: true }]
    )
    return { id, refresh }
  })

const pairOf = (grantId: string, refresh: string, input: GrantInput, nowMs: number) =>
  Effect.map(signAccessToken(grantId, input, nowMs), (access) => ({
    token_type: "Bearer" as const,
    access_token: access,
    refresh_token: refresh,
    expires_in: ACCESS_TOKEN_SECONDS
  }))

const inputOf = (grant: StoredRecord): GrantInput => ({
  administratorId: String(grant.data.administrator_id),
  accountId: String(grant.data.account_id),
  clientId: String(grant.data.client_id),
  issuer: String(grant.data.issuer),
  codeId: String(grant.data.code_id)
})

/** Revoke the grants of an account matching `where` (not yet revoked). */
const revokeWhere = (accountId: string, where: ReadonlyArray<{ field: string; value: string }>, nowMs: number) =>
  Effect.gen(function* () {
    const records = yield* Records
    const tenant = accountHome(accountId)
    const grants = yield* records.list(tenant, GRANT, {
      where: [...where.map((w) => ({ field: w.field, op: "eq" as const, value: w.value })), { field: "revoked_at", op: "eq", value: null }],
      sort: { field: "id", kind: "text", direction: "asc" },
      limit: 10_000
    })
    yield* Effect.forEach(grants, (g) => records.update(tenant, GRANT, g.id, { ...g.data, revoked_at: iso(nowMs) }), {
      discard: true
    })
  })

const revokeFamily = (grant: StoredRecord, nowMs: number) =>
  revokeWhere(
    String(grant.data.account_id),
    [
      { field: "administrator_id", value: String(grant.data.administrator_id) },
      { field: "client_id", value: String(grant.data.client_id) }
    ],
    nowMs
  )

/** `grant_type=authorization_code`. */
export const exchangeCode = (input: {
  readonly clientId: string
  readonly code: string
  readonly codeVerifier: string
  readonly redirectUri: string
}): Effect.Effect<GrantOutcome, StoreUnavailable, Records | UnitOfWork> =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const now = yield* Clock.currentTimeMillis
    if (!verifierPattern.test(input.codeVerifier)) return invalid("code_verifier must be 43 to 128 unreserved characters")
    const outcome = yield* uow.transaction(
      Effect.gen(function* () {
        const code = yield* records.findUnique("global", CODE, { name: "code_hash", value: sha256(input.code) })
        if (!code) return { _tag: "Invalid" as const, description: "unknown authorization code" }
        if (code.data.used_at !== null) {
          // Replay: whatever the code issued is revoked.
          yield* revokeWhere(String(code.data.account_id), [{ field: "code_id", value: code.id }], now)
          return { _tag: "Invalid" as const, description: "authorization code already used" }
        }
        if (Date.parse(String(code.data.expires_at)) <= now) return { _tag: "Invalid" as const, description: "authorization code expired" }
        if (code.data.client_id !== input.clientId) return { _tag: "Invalid" as const, description: "client_id does not match the code" }
        if (code.data.redirect_uri !== input.redirectUri) return { _tag: "Invalid" as const, description: "redirect_uri does not match the code" }
        if (s256(input.codeVerifier) !== code.data.code_challenge) return { _tag: "Invalid" as const, description: "code_verifier does not match the code_challenge" }
        yield* records.update(code.tenant, CODE, code.id, { ...code.data, used_at: iso(now) }, { expectedRevision: code.revision })
        const grantInput: GrantInput = {
          administratorId: String(code.data.administrator_id),
          accountId: String(code.data.account_id),
          clientId: String(code.data.client_id),
          issuer: String(code.data.issuer),
          codeId: code.id
        }
        const made = yield* insertGrant(grantInput, now)
        return { _tag: "Made" as const, made, grantInput }
      }).pipe(
        Effect.catchTags({
          RevisionConflict: () => Effect.succeed({ _tag: "Invalid" as const, description: "authorization code already used" }),
          UniqueViolation: () => Effect.succeed({ _tag: "Invalid" as const, description: "try again" })
        })
      )
    )
    if (outcome._tag === "Invalid") return invalid(outcome.description)
    const pair = yield* pairOf(outcome.made.id, outcome.made.refresh, outcome.grantInput, now)
    return { _tag: "Issued", pair } satisfies GrantOutcome
  })

/** `grant_type=refresh_token`. */
export const refreshGrant = (input: {
  readonly clientId: string
  readonly refreshToken: string
}): Effect.Effect<GrantOutcome, StoreUnavailable, Records | UnitOfWork> =>
  Effect.gen(function* () {
    const records = yield* Records
    const uow = yield* UnitOfWork
    const now = yield* Clock.currentTimeMillis
    const hash = sha256(input.refreshToken)
    const attempt = uow.transaction(
      Effect.gen(function* () {
        const grant = yield* records.findUnique("global", GRANT, { name: "refresh_hash", value: hash })
        if (!grant) return { _tag: "Invalid" as const, description: "unknown refresh token" }
        if (grant.data.client_id !== input.clientId) return { _tag: "Invalid" as const, description: "client_id does not match the refresh token" }
        if (grant.data.revoked_at !== null) return { _tag: "Invalid" as const, description: "refresh token revoked" }
        if (grant.data.refresh_state !== "active") {
          // Reuse of an exchanged refresh token: the whole family goes.
          yield* revokeFamily(grant, now)
          return { _tag: "Invalid" as const, description: "refresh token already used; every token of this grant family is revoked" }
        }
        if (Date.parse(String(grant.data.refresh_expires_at)) <= now) return { _tag: "Invalid" as const, description: "refresh token expired" }
        yield* records.update(grant.tenant, GRANT, grant.id, { ...grant.data, refresh_state: "exchanged" }, { expectedRevision: grant.revision })
        const grantInput = inputOf(grant)
        const made = yield* insertGrant(grantInput, now)
        return { _tag: "Made" as const, made, grantInput }
      })
    )
    const outcome = yield* attempt.pipe(
      Effect.catchTags({
        // Lost a race with another refresh of the same token: that is reuse too.
        RevisionConflict: () =>
          uow
            .transaction(
              Effect.gen(function* () {
                const grant = yield* records.findUnique("global", GRANT, { name: "refresh_hash", value: hash })
                if (grant) yield* revokeFamily(grant, now)
              })
            )
            .pipe(
              Effect.catchTags({ RevisionConflict: () => Effect.void, UniqueViolation: () => Effect.void }),
              Effect.as({ _tag: "Invalid" as const, description: "refresh token already used; every token of this grant family is revoked" })
            ),
        UniqueViolation: () => Effect.succeed({ _tag: "Invalid" as const, description: "try again" })
      })
    )
    if (outcome._tag === "Invalid") return invalid(outcome.description)
    const pair = yield* pairOf(outcome.made.id, outcome.made.refresh, outcome.grantInput, now)
    return { _tag: "Issued", pair } satisfies GrantOutcome
  })

/** `/oauth/revoke`: an access or refresh token; unknown tokens are ignored. */
export const revokeToken = (value: string): Effect.Effect<void, StoreUnavailable, Records> =>
  Effect.gen(function* () {
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    let grant: StoredRecord | undefined
    if (value.split(".").length === 3) {
      // An access token: only one of ours (a good signature) names a grant.
      const claims = yield* verifySignature(records, value)
      if (claims && typeof claims.jti === "string" && typeof claims.account_id === "string") {
        grant = yield* records.get(accountHome(claims.account_id), GRANT, claims.jti)
      }
    } else {
      grant = yield* records.findUnique("global", GRANT, { name: "refresh_hash", value: sha256(value) })
    }
    if (grant && grant.data.revoked_at === null) {
      yield* records
        .update(grant.tenant, GRANT, grant.id, { ...grant.data, revoked_at: iso(now) })
        .pipe(Effect.catchTags({ RevisionConflict: () => Effect.void, UniqueViolation: () => Effect.void }))
    }
  })

// ---------------------------------------------------------------------------------------
// Verifying access tokens

type RecordsService = Records["Type"]

const keyResolver = (records: RecordsService) => (header: { kid?: string | undefined; alg?: string | undefined }) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const kid = header.kid
      if (typeof kid !== "string") return undefined
      const known = yield* signingKeys(records)
      // A kid this process does not know may come from a rotation made by another process.
      const keys = known.verifying.has(kid) ? known : yield* signingKeys(records, true)
      return keys.verifying.get(kid)
    }).pipe(Effect.orElseSucceed(() => undefined))
  ).then((key) => {
    if (!key) throw new joseErrors.JWKSNoMatchingKey()
    return key
  })

/** Signature only (any time, any audience): for revocation. */
const verifySignature = (records: RecordsService, value: string) =>
  Effect.promise(() =>
    jwtVerify(value, keyResolver(records), { algorithms: ["RS256"], currentDate: new Date(0), clockTolerance: Number.MAX_SAFE_INTEGER })
      .then((r) => r.payload as JWTPayload & { account_id?: unknown })
      .catch(() => undefined)
  )

/** Is this token an ID token or similar (a JWT of ours that is not an access token)? */
const typOf = (value: string): string | undefined => {
  try {
    const typ = decodeProtectedHeader(value).typ
    return typeof typ === "string" ? typ.toLowerCase() : undefined
  } catch {
    return undefined
  }
}

/**
 * The `AccessTokens` port with jose: RS256 only, the issuer's keys by `kid`, `aud`
 * `service-api-v3`, `iss` (the configured one, else the one the token was issued under),
 * `exp` and `nbf` on the server's clock, and the grant not revoked.
 */
export const joseAccessTokens = (options: { readonly issuer?: string | undefined } = {}) =>
  Layer.effect(
    AccessTokens,
    Effect.gen(function* () {
      const records = yield* Records
      // Made at start, so that every process of one store shares them from the first request.
      yield* signingKeys(records)
      const verify = (value: string): Effect.Effect<AccessTokenClaims, "invalid" | "not_an_access_token" | StoreUnavailable> =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const verified = yield* Effect.promise(() =>
            jwtVerify(value, keyResolver(records), {
              algorithms: ["RS256"],
              audience: AUDIENCE,
              ...(options.issuer ? { issuer: options.issuer } : {}),
              currentDate: new Date(now),
              requiredClaims: ["iss", "sub", "exp", "jti", "iat"]
            }).then(
              (r) => r.payload as JWTPayload & { account_id?: unknown },
              () => undefined
            )
          )
          if (!verified) return yield* Effect.fail("invalid" as const)
          if (typOf(value) !== ACCESS_TOKEN_TYP) return yield* Effect.fail("not_an_access_token" as const)
          const accountId = verified.account_id
          if (typeof accountId !== "string" || typeof verified.jti !== "string") return yield* Effect.fail("invalid" as const)
          const grant = yield* records.get(accountHome(accountId), GRANT, verified.jti)
          if (
            !grant ||
            grant.data.revoked_at !== null ||
            grant.data.administrator_id !== verified.sub ||
            grant.data.issuer !== verified.iss
          ) {
            return yield* Effect.fail("invalid" as const)
          }
          return { administratorId: String(verified.sub), accountId, expiresAt: verified.exp! * 1000 }
        })
      return { verify }
    })
  )

/**
 * Housekeeping: forget codes a day after they expired (a replay is then only an unknown
 * code) and grants whose refresh token has expired (nothing of them still works).
 */
/** What one sign-in removes at most of each kind; sign-ins are frequent enough to keep up. */
export const OAUTH_PRUNE_BATCH = 100

export const pruneExpiredGrants = Effect.gen(function* () {
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  yield* records.prune(CODE, "expires_at", iso(now - 24 * 3600 * 1000), OAUTH_PRUNE_BATCH)
  yield* records.prune(GRANT, "refresh_expires_at", iso(now), OAUTH_PRUNE_BATCH)
})
