/**
 * Who is calling (§5): autonomous mode (`Authorization: Bearer <secret>`) or human mode
 * (`X-API-Key: <secret>` plus `Authorization: Bearer <access token>`), with the checks of
 * §5.1 and §5.3 in their order. Failing to verify is 503, never access.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { type ApiError, apiError, readUnavailable } from "../errors/errors.js"
import { Crypto } from "../ports/crypto.js"
import { Records, type StoredRecord, type StoreUnavailable, type Tenant } from "../ports/store.js"
import { ACCOUNT_HOME_ENVIRONMENT, ACCOUNT_TYPE, accountHome } from "./accounts.js"
import type { CallerInfo } from "./context.js"
import { credentialGrant, CREDENTIAL_TYPE, effectiveStatus, SECRET_HASH_KEY, secretPattern } from "./credentials.js"
import { CapabilityCatalog, type CapabilityCatalogShape } from "./policies.js"

/** A verified administrator access token (issued by the OAuth server of §5.2). */
export interface AccessTokenClaims {
  readonly administratorId: string
  readonly accountId: string
  /** Epoch ms. */
  readonly expiresAt: number
}

export type AccessTokenProblem =
  /** Bad signature, `aud`, `iss`, expiry, unknown key, or revoked. */
  | "invalid"
  /** An ID token (or anything that is not an access token) was sent. */
  | "not_an_access_token"

/** Checks administrator access tokens. Human mode exists only where an issuer is configured. */
export class AccessTokens extends Context.Tag("@syllabus/core/AccessTokens")<
  AccessTokens,
  { readonly verify: (token: string) => Effect.Effect<AccessTokenClaims, AccessTokenProblem | StoreUnavailable> }
>() {
  /** No authorization server: no access token is valid. */
  static readonly none = Layer.succeed(AccessTokens, { verify: () => Effect.fail("invalid" as const) })
}

/** The authentication headers as received: every value of each (a repeated header is ambiguous). */
export interface PresentedCredentials {
  readonly authorization: ReadonlyArray<string>
  readonly apiKey: ReadonlyArray<string>
}


/** The token of `Bearer <token>` (one run of non-spaces: the pattern must not backtrack on hostile input). */
export const bearerOf = (header: string): string | undefined => {
  const match = /^Bearer +(\S+)$/i.exec(header.trim())
  return match?.[1]
}

const looksLikeJwt = (token: string): boolean => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)

/** A credential found by its secret, with its account when the store read both at once (`findUniqueWithAccount`). */
interface FoundCredential {
  readonly credential: StoredRecord
  /** Absent: not read yet; `undefined` inside: read, and there is none. */
  readonly account?: { readonly record: StoredRecord | undefined }
}

/** The credential holding `key` (a secret's hash), with its account where the store joins them. */
const credentialByKey = (name: string, hash: string): Effect.Effect<FoundCredential | undefined, ApiError<"credential_state_unverifiable">, Records> =>
  Effect.flatMap(Records, (records) => {
    const key = { name, value: hash }
    const read = records.findUniqueWithAccount === undefined
      ? Effect.map(records.findUnique("global", CREDENTIAL_TYPE, key), (credential) => credential && { credential })
      : Effect.map(
        records.findUniqueWithAccount("global", CREDENTIAL_TYPE, key, { type: ACCOUNT_TYPE, environment: ACCOUNT_HOME_ENVIRONMENT }),
        (found) => found && { credential: found.record, account: { record: found.account } }
      )
    return Effect.mapError(read, readUnavailable)
  })

/** Find the credential of a secret: the current one, or a rotated-out one still in its grace period. */
const credentialOfSecret = Effect.fnUntraced(function* (secret: string) {
  if (!secretPattern.test(secret)) return yield* Effect.fail(apiError("unauthenticated"))
  const crypto = yield* Crypto
  const now = yield* Clock.currentTimeMillis
  const hash = crypto.hashSecret(secret)
  const current = yield* credentialByKey(SECRET_HASH_KEY, hash)
  if (current) return current
  const previous = yield* credentialByKey("previous_" + SECRET_HASH_KEY, hash)
  const graceUntil = previous?.credential.data.previous_secret_valid_until
  if (previous && typeof graceUntil === "string" && Date.parse(graceUntil) > now) return previous
  return yield* Effect.fail(apiError("unauthenticated"))
})

/** §5.1: the credential's own state, then its account's (read now, unless read with the credential). */
const checkCredentialState = Effect.fnUntraced(function* ({ account: read, credential }: FoundCredential) {
  const now = yield* Clock.currentTimeMillis
  const status = effectiveStatus(credential.data, now)
  if (status === "revoked") return yield* Effect.fail(apiError("credential_revoked"))
  if (status === "suspended") return yield* Effect.fail(apiError("credential_suspended"))
  if (status === "expired") return yield* Effect.fail(apiError("credential_expired"))
  const account = read !== undefined
    ? read.record
    : yield* Effect.flatMap(Records, (records) => records.get(accountHome(credential.tenant.accountId), ACCOUNT_TYPE, credential.tenant.accountId)).pipe(
      Effect.mapError(readUnavailable)
    )
  if (!account || account.data.status === "blocked") return yield* Effect.fail(apiError("instance_blocked"))
  if (account.data.status !== "active") return yield* Effect.fail(apiError("instance_unavailable"))
})

const callerOf = (
  credential: StoredRecord,
  requestId: string,
  human: CallerInfo["human"],
  catalog: CapabilityCatalogShape
): CallerInfo => ({
  tenant: credential.tenant as Tenant,
  requestId,
  credential: credential.data as CallerInfo["credential"],
  record: credential,
  grant: credentialGrant(credential, catalog),
  human
})

/** What authentication can answer instead of a caller: the codes of §5.3 and the 503 of §1.5. */
export type AuthenticationError = ApiError<
  | "unauthenticated"
  | "ambiguous_credentials"
  | "human_context_required"
  | "human_mode_not_allowed"
  | "invalid_access_token"
  | "admin_not_eligible"
  | "tenant_mismatch"
  | "credential_revoked"
  | "credential_suspended"
  | "credential_expired"
  | "instance_blocked"
  | "instance_unavailable"
  | "credential_state_unverifiable"
>

/** Authenticate one request; the caller, or the contract's error. */
export const authenticate = (
  presented: PresentedCredentials,
  requestId: string
): Effect.Effect<CallerInfo, AuthenticationError, Records | Crypto | AccessTokens | CapabilityCatalog> =>
  Effect.gen(function* () {
    const catalog = yield* CapabilityCatalog
    if (presented.authorization.length > 1 || presented.apiKey.length > 1) {
      return yield* Effect.fail(apiError("ambiguous_credentials"))
    }
    const authorization = presented.authorization[0]
    const apiKey = presented.apiKey[0]

    if (apiKey === undefined) {
      // Autonomous mode.
      const secret = authorization === undefined ? undefined : bearerOf(authorization)
      if (secret === undefined) return yield* Effect.fail(apiError("unauthenticated"))
      const found = yield* credentialOfSecret(secret)
      yield* checkCredentialState(found)
      const { credential } = found
      if (credential.data.auth_mode === "human_required") {
        return yield* Effect.fail(apiError("human_context_required", { reason: "credential_requires_human_mode" }))
      }
      return callerOf(credential, requestId, null, catalog)
    }

    // Human mode, in the order of §5.3.
    const found = yield* credentialOfSecret(apiKey.trim())
    yield* checkCredentialState(found)
    const { credential } = found
    if (credential.data.auth_mode === "autonomous") return yield* Effect.fail(apiError("human_mode_not_allowed"))
    const token = authorization === undefined ? undefined : bearerOf(authorization)
    // `X-API-Key` asks for human mode: what is missing is the administrator's token (the
    // credential itself may well be usable alone, as the bearer of an autonomous call).
    if (token === undefined) return yield* Effect.fail(apiError("human_context_required", { reason: "access_token_missing" }))
    if (secretPattern.test(token)) return yield* Effect.fail(apiError("ambiguous_credentials"))
    if (!looksLikeJwt(token)) return yield* Effect.fail(apiError("invalid_access_token"))
    const tokens = yield* AccessTokens
    const claims = yield* tokens.verify(token).pipe(
      Effect.mapError((problem) =>
        problem === "not_an_access_token"
          ? apiError("ambiguous_credentials")
          : problem === "invalid"
            ? apiError("invalid_access_token")
            : readUnavailable(problem)
      )
    )
    if (claims.accountId !== credential.tenant.accountId) return yield* Effect.fail(apiError("tenant_mismatch"))
    const links = (credential.data.administrators ?? []) as ReadonlyArray<{ administrator_id: string; linked_at: string }>
    const link = links.find((l) => l.administrator_id === claims.administratorId)
    if (!link) return yield* Effect.fail(apiError("admin_not_eligible"))
    return callerOf(
      credential,
      requestId,
      { adminId: claims.administratorId, expiresAt: claims.expiresAt, eligibleSince: link.linked_at },
      catalog
    )
  })
