/**
 * The authorization server of §5.2, answering outside `/api/v3`:
 *
 * - `GET /.well-known/oauth-authorization-server` (RFC 8414) and `GET /oauth/jwks`;
 * - `GET /oauth/authorize` (rules 1 to 7) and the pages of the flow: the platform selector,
 *   the confirmation screen, sign-in, the two-factor step and consent;
 * - `POST /oauth/token` and `POST /oauth/revoke`.
 *
 * The issuer is the configured `oauthUrl` (see `OAuthConfig`), else this server's own origin
 * as the request names it (`Host`).
 *
 * "The account's own domain" (rule 5): in this server every account signs in on the same
 * origin; the account is the one chosen (and confirmed) in the platform selector and is kept
 * in a short-lived flow record bound to the browser by a cookie. So the browser goes from the
 * selector to the sign-in page of that account on the same host, with the same parameters.
 * The platform named is a subdomain, an active custom domain of the account (found through
 * the host name's global unique key, `accountOfDomain`), or a URL of either; the address shown
 * on the confirmation screen and carried on as `platform` is the account's primary active
 * custom domain when it has one, else `<subdomain>.<host>` (docs/domains.md).
 */
import {
  acceptedTotpCodes,
  accountOfDomain,
  ACCOUNT_TYPE,
  accountHome,
  ADMINISTRATOR_TYPE,
  Crypto,
  primaryDomainOf,
  Records,
  type StoredRecord,
  type Tenant
} from "@syllabus/core"
import { HttpServerRequest } from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Clock, Context, Effect, Option } from "effect"
import { createHash, randomBytes } from "node:crypto"
import type { OutsideApp } from "../pipeline.js"
import { challengePattern, CLIENT_ID, exchangeCode, issueCode, OAUTH_PRUNE_BATCH, pruneExpiredGrants, refreshGrant, revokeToken } from "./grants.js"
import { currentSigningKeys } from "./keys.js"
import { readBody } from "../wire.js"
import { confirmationPage, consentPage, errorPage, selectorPage, signInPage, twoFactorPage } from "./pages.js"

/** Where the authorization server is reached (`{oauth_url}`), when not the request's own origin. */
export class OAuthConfig extends Context.Tag("@syllabus/http/OAuthConfig")<OAuthConfig, { readonly oauthUrl: string }>() {}

export const CLIENT_NAME = "Syllabus command-line client (service-cli)"
export const LAST_PLATFORM_COOKIE = "oauth_last_platform"
export const BROWSER_COOKIE = "oauth_browser"
const FLOW_TYPE = "oauth_flow"
const FLOW_MS = 15 * 60 * 1000
/** Wrong passwords or codes one flow tolerates before it ends. */
const MAX_ATTEMPTS = 5
const SYSTEM: Tenant = { accountId: "system", environment: "production" }

/** Rule 1: loopback only, an explicit port, path `/callback`; compared as written (no case folding). */
const redirectPattern = /^http:\/\/(?:127\.0\.0\.1|\[::1\]):([0-9]{1,5})\/callback$/
export const isAllowedRedirectUri = (uri: string): boolean => {
  const match = redirectPattern.exec(uri)
  if (!match) return false
  const port = Number(match[1])
  return port >= 1 && port <= 65535 && !match[1]!.startsWith("0")
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

// ---------------------------------------------------------------------------------------
// Responses

const noStore = { "cache-control": "no-store", pragma: "no-cache" }

const htmlResponse = (body: string, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(body, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: {
      ...noStore,
      "x-frame-options": "DENY",
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      "referrer-policy": "no-referrer",
      ...headers
    }
  })

const jsonResponse = (body: unknown, status = 200) => HttpServerResponse.unsafeJson(body, { status, headers: noStore })

const oauthError = (error: string, description: string, status = 400) =>
  jsonResponse({ error, error_description: description }, status)

const redirectTo = (location: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.empty({ status: 303, headers: { ...noStore, location, ...headers } })

const cookie = (name: string, value: string, maxAgeSeconds: number) =>
  `${name}=${encodeURIComponent(value)}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax`

// ---------------------------------------------------------------------------------------
// The authorization request

/** The parameters of an authorization request, as carried through the pages. */
interface AuthorizeParams {
  readonly client_id: string
  readonly redirect_uri: string
  readonly response_type: string
  readonly code_challenge: string
  readonly code_challenge_method: string
  readonly state: string
}

const paramNames = ["client_id", "redirect_uri", "response_type", "code_challenge", "code_challenge_method", "state"] as const

const paramsOf = (query: URLSearchParams): AuthorizeParams => {
  const out: Record<string, string> = {}
  for (const name of paramNames) out[name] = query.get(name) ?? ""
  return out as unknown as AuthorizeParams
}

/** The parameters to carry on (the empty ones dropped). */
const carried = (params: AuthorizeParams): Record<string, string> =>
  Object.fromEntries(Object.entries(params).filter(([, v]) => v !== ""))

/** Rules 3, 6, 7: back to the client, with `state` and `iss`. */
const redirectBack = (
  redirectUri: string,
  state: string,
  issuer: string,
  fields: Readonly<Record<string, string>>,
  headers: Record<string, string> = {}
) => {
  const url = new URL(redirectUri)
  for (const [name, value] of Object.entries(fields)) url.searchParams.set(name, value)
  if (state !== "") url.searchParams.set("state", state)
  url.searchParams.set("iss", issuer)
  return redirectTo(url.toString(), headers)
}

const issuerOf = (request: HttpServerRequest) =>
  Effect.map(Effect.serviceOption(OAuthConfig), (config) =>
    Option.match(config, {
      onSome: (c) => c.oauthUrl.replace(/\/+$/, ""),
      onNone: () => `http://${request.headers.host ?? "127.0.0.1"}`
    })
  )

/**
 * The account a platform names: a subdomain, an active custom domain, a host whose first label
 * is a subdomain, or a full URL of one of these. Each is one read of a global unique key.
 */
const findAccount = (platform: string) =>
  Effect.gen(function* () {
    const records = yield* Records
    let text = platform.trim().toLowerCase()
    if (text === "") return undefined
    text = text.replace(/^[a-z][a-z0-9+.-]*:\/\//, "").replace(/[/?#].*$/, "").replace(/:\d+$/, "")
    const bySubdomain = (candidate: string) =>
      candidate === "" ? Effect.succeed(undefined) : records.findUnique("global", ACCOUNT_TYPE, { name: "subdomain", value: candidate })
    return (yield* bySubdomain(text)) ?? (yield* accountOfDomain(text)) ?? (text.includes(".") ? yield* bySubdomain(text.split(".")[0]!) : undefined)
  })

/** Rule 5: where the account signs in: its primary active custom domain, else `<subdomain>.<host>`. */
const addressOf = (account: StoredRecord, issuer: string) =>
  Effect.map(primaryDomainOf(account.id), (domain) => domain ?? `${String(account.data.subdomain)}.${new URL(issuer).host}`)

const accountView = (account: StoredRecord, issuer: string) =>
  Effect.map(addressOf(account, issuer), (address) => ({
    name: String(account.data.name),
    subdomain: String(account.data.subdomain),
    address
  }))

/** Rules 1 and 2 (no redirect), then 3 (redirect with `invalid_request`). */
const validateRequest = (params: AuthorizeParams, issuer: string) => {
  if (params.client_id !== CLIENT_ID) return htmlResponse(errorPage("Unknown client_id: this application is not registered."), 401)
  if (!isAllowedRedirectUri(params.redirect_uri)) {
    return htmlResponse(
      errorPage("The redirect address is not allowed: only http://127.0.0.1:{port}/callback or http://[::1]:{port}/callback."),
      401
    )
  }
  const back = (error: string, description: string) =>
    redirectBack(params.redirect_uri, params.state, issuer, { error, error_description: description })
  if (params.response_type !== "code") return back("unsupported_response_type", "response_type must be code")
  if (params.code_challenge === "") return back("invalid_request", "code_challenge is required (PKCE)")
  if (params.code_challenge_method !== "S256") return back("invalid_request", "code_challenge_method must be S256")
  if (!challengePattern.test(params.code_challenge)) return back("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)")
  if (params.state === "") return back("invalid_request", "state is required")
  return undefined
}

/** Rule 4, then 5: the selector, the confirmation, or straight on to sign in. */
const authorize = (request: HttpServerRequest, query: URLSearchParams) =>
  Effect.gen(function* () {
    const issuer = yield* issuerOf(request)
    const params = paramsOf(query)
    const refused = validateRequest(params, issuer)
    if (refused) return refused
    const last = request.cookies[LAST_PLATFORM_COOKIE]
    const platform = query.get("platform") ?? ""
    if (platform === "") return htmlResponse(selectorPage(carried(params), last))
    const account = yield* findAccount(platform)
    if (!account) {
      return htmlResponse(selectorPage(carried(params), platform, `No platform matches “${platform}”. Check the address and try again.`))
    }
    const view = yield* accountView(account, issuer)
    if (last === undefined || last !== view.subdomain) return htmlResponse(confirmationPage(carried(params), view))
    return yield* startFlow(params, issuer, account)
  })

/** Confirmation accepted: remember the platform, then go on to it with the same parameters. */
const confirm = (request: HttpServerRequest, form: URLSearchParams) =>
  Effect.gen(function* () {
    const issuer = yield* issuerOf(request)
    const params = paramsOf(form)
    const refused = validateRequest(params, issuer)
    if (refused) return refused
    const account = yield* findAccount(form.get("platform") ?? "")
    if (!account) return htmlResponse(selectorPage(carried(params), undefined, "No platform matches this address."))
    const subdomain = String(account.data.subdomain)
    // On to the account's own address (rule 5): its primary active custom domain, else its subdomain.
    const next = new URLSearchParams({ ...carried(params), platform: (yield* primaryDomainOf(account.id)) ?? subdomain })
    return redirectTo(`/oauth/authorize?${next.toString()}`, {
      "set-cookie": cookie(LAST_PLATFORM_COOKIE, subdomain, 400 * 24 * 3600)
    })
  })

// ---------------------------------------------------------------------------------------
// The flow: sign-in, two-factor, consent

const startFlow = (params: AuthorizeParams, issuer: string, account: StoredRecord) =>
  Effect.gen(function* () {
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    // Housekeeping on the way: flows, codes and grants nobody can use any more.
    yield* Effect.ignore(Effect.zip(records.prune(FLOW_TYPE, "expires_at", new Date(now).toISOString(), OAUTH_PRUNE_BATCH), pruneExpiredGrants))
    const id = randomBytes(24).toString("base64url")
    const browser = randomBytes(24).toString("base64url")
    yield* records.insert(SYSTEM, FLOW_TYPE, id, {
      id,
      browser_hash: sha256(browser),
      client_id: params.client_id,
      redirect_uri: params.redirect_uri,
      code_challenge: params.code_challenge,
      state: params.state,
      issuer,
      account_id: account.id,
      stage: "sign_in",
      administrator_id: null,
      attempts: 0,
      expires_at: new Date(now + FLOW_MS).toISOString()
    })
    return htmlResponse(signInPage(id, { name: String(account.data.name) }), 200, {
      "set-cookie": cookie(BROWSER_COOKIE, browser, FLOW_MS / 1000)
    })
  })

/** The flow of a form, if it belongs to this browser, is live and at `stage`. */
const loadFlow = (request: HttpServerRequest, form: URLSearchParams, stage: string) =>
  Effect.gen(function* () {
    const records = yield* Records
    const now = yield* Clock.currentTimeMillis
    const crypto = yield* Crypto
    const id = form.get("flow") ?? ""
    const browser = request.cookies[BROWSER_COOKIE]
    if (id === "" || browser === undefined) return undefined
    const flow = yield* records.get(SYSTEM, FLOW_TYPE, id)
    if (!flow || !crypto.safeEqual(String(flow.data.browser_hash), sha256(browser))) return undefined
    if (Date.parse(String(flow.data.expires_at)) <= now || flow.data.stage !== stage) return undefined
    return flow
  })

const expired = htmlResponse(errorPage("This sign-in has expired or was already used. Start again from the application."), 400)

/** Leave the flow, back to the client. */
const finish = (flow: StoredRecord, fields: Readonly<Record<string, string>>) =>
  Effect.gen(function* () {
    const records = yield* Records
    yield* records.remove(SYSTEM, FLOW_TYPE, flow.id)
    return redirectBack(String(flow.data.redirect_uri), String(flow.data.state), String(flow.data.issuer), fields)
  })

const denied = (flow: StoredRecord, reason: string, description: string) =>
  finish(flow, { error: "access_denied", error_reason: reason, error_description: description })

const loadAccountOf = (flow: StoredRecord) =>
  Effect.flatMap(Records, (records) => records.get(accountHome(String(flow.data.account_id)), ACCOUNT_TYPE, String(flow.data.account_id)))

const signIn = (request: HttpServerRequest, form: URLSearchParams) =>
  Effect.gen(function* () {
    const flow = yield* loadFlow(request, form, "sign_in")
    if (!flow) return expired
    const records = yield* Records
    const crypto = yield* Crypto
    const account = yield* loadAccountOf(flow)
    if (!account) return expired
    const email = (form.get("email") ?? "").trim().toLowerCase()
    const password = form.get("password") ?? ""
    const passwordOk = (admin: StoredRecord | undefined) =>
      admin !== undefined &&
      admin.data.status === "active" &&
      typeof admin.data.password_hash === "string" &&
      crypto.verifyPassword(password, admin.data.password_hash)
    const admin = email === "" ? undefined : yield* records.findUnique(account.tenant, ADMINISTRATOR_TYPE, { name: "email", value: email })
    if (!passwordOk(admin)) {
      // An administrator of another account signing in on this platform (rule 7).
      const elsewhere = email === "" ? [] : yield* records.scan(ADMINISTRATOR_TYPE, [{ field: "email", op: "eq", value: email }], 20)
      if (elsewhere.some((other) => other.tenant.accountId !== account.id && passwordOk(other))) {
        return yield* denied(flow, "platform_mismatch", "The administrator belongs to a different account than the platform in the request.")
      }
      const attempts = Number(flow.data.attempts ?? 0) + 1
      if (attempts >= MAX_ATTEMPTS) {
        yield* records.remove(SYSTEM, FLOW_TYPE, flow.id)
        return htmlResponse(errorPage("Too many failed sign-in attempts. Start again from the application."), 401)
      }
      yield* records.update(SYSTEM, FLOW_TYPE, flow.id, { ...flow.data, attempts })
      return htmlResponse(signInPage(flow.id, { name: String(account.data.name) }, "Wrong email or password."), 401)
    }
    if (account.data.status !== "active") {
      return yield* denied(flow, "account_not_eligible", "The account cannot authorize this client.")
    }
    if (typeof admin!.data.totp_secret !== "string") {
      return yield* denied(flow, "mfa_required", "Two-factor authentication must be turned on for this administrator.")
    }
    yield* records.update(SYSTEM, FLOW_TYPE, flow.id, { ...flow.data, stage: "two_factor", administrator_id: admin!.id, attempts: 0 })
    return htmlResponse(twoFactorPage(flow.id))
  })

const twoFactor = (request: HttpServerRequest, form: URLSearchParams) =>
  Effect.gen(function* () {
    const flow = yield* loadFlow(request, form, "two_factor")
    if (!flow) return expired
    const records = yield* Records
    const crypto = yield* Crypto
    const now = yield* Clock.currentTimeMillis
    const tenant = accountHome(String(flow.data.account_id))
    const admin = yield* records.get(tenant, ADMINISTRATOR_TYPE, String(flow.data.administrator_id))
    if (!admin || admin.data.status !== "active") return expired
    if (typeof admin.data.totp_secret !== "string") {
      return yield* denied(flow, "mfa_required", "Two-factor authentication must be turned on for this administrator.")
    }
    const code = (form.get("code") ?? "").trim()
    const accepted = acceptedTotpCodes(crypto.hmacSha1, admin.data.totp_secret, now)
    if (!/^[0-9]{6}$/.test(code) || !accepted.some((a) => crypto.safeEqual(a, code))) {
      const attempts = Number(flow.data.attempts ?? 0) + 1
      if (attempts >= MAX_ATTEMPTS) {
        yield* records.remove(SYSTEM, FLOW_TYPE, flow.id)
        return htmlResponse(errorPage("Too many wrong codes. Start again from the application."), 401)
      }
      yield* records.update(SYSTEM, FLOW_TYPE, flow.id, { ...flow.data, attempts })
      return htmlResponse(twoFactorPage(flow.id, "That code is not valid. Try the current one."), 401)
    }
    yield* records.update(SYSTEM, FLOW_TYPE, flow.id, { ...flow.data, stage: "consent" })
    const account = yield* loadAccountOf(flow)
    if (!account) return expired
    const issuer = String(flow.data.issuer)
    return htmlResponse(consentPage(flow.id, CLIENT_NAME, yield* accountView(account, issuer), `${String(admin.data.name)} <${String(admin.data.email)}>`))
  })

const consent = (request: HttpServerRequest, form: URLSearchParams) =>
  Effect.gen(function* () {
    const flow = yield* loadFlow(request, form, "consent")
    if (!flow) return expired
    if (form.get("decision") !== "approve") return yield* finish(flow, { error: "access_denied", error_description: "The administrator denied access." })
    const account = yield* loadAccountOf(flow)
    if (!account || account.data.status !== "active") {
      return yield* denied(flow, "account_not_eligible", "The account cannot authorize this client.")
    }
    const code = yield* issueCode({
      clientId: String(flow.data.client_id),
      redirectUri: String(flow.data.redirect_uri),
      codeChallenge: String(flow.data.code_challenge),
      administratorId: String(flow.data.administrator_id),
      accountId: String(flow.data.account_id),
      issuer: String(flow.data.issuer)
    })
    return yield* finish(flow, { code })
  })

// ---------------------------------------------------------------------------------------
// Token and revocation endpoints

const token = (form: URLSearchParams) =>
  Effect.gen(function* () {
    const clientId = form.get("client_id") ?? ""
    if (clientId !== CLIENT_ID) return oauthError("invalid_client", "unknown client_id", 401)
    const grantType = form.get("grant_type") ?? ""
    if (grantType === "authorization_code") {
      const code = form.get("code")
      const codeVerifier = form.get("code_verifier")
      const redirectUri = form.get("redirect_uri")
      if (!code || !codeVerifier || !redirectUri) return oauthError("invalid_request", "code, code_verifier and redirect_uri are required")
      const outcome = yield* exchangeCode({ clientId, code, codeVerifier, redirectUri })
      return outcome._tag === "Issued" ? jsonResponse(outcome.pair) : oauthError("invalid_grant", outcome.description)
    }
    if (grantType === "refresh_token") {
      const refreshToken = form.get("refresh_token")
      if (!refreshToken) return oauthError("invalid_request", "refresh_token is required")
      const outcome = yield* refreshGrant({ clientId, refreshToken })
      return outcome._tag === "Issued" ? jsonResponse(outcome.pair) : oauthError("invalid_grant", outcome.description)
    }
    return oauthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
  })

const revoke = (form: URLSearchParams) =>
  Effect.gen(function* () {
    const value = form.get("token") ?? ""
    if (value !== "") yield* revokeToken(value)
    return HttpServerResponse.empty({ status: 200, headers: noStore })
  })

// ---------------------------------------------------------------------------------------
// Discovery

const metadata = (issuer: string) => ({
  issuer,
  authorization_endpoint: `${issuer}/oauth/authorize`,
  token_endpoint: `${issuer}/oauth/token`,
  revocation_endpoint: `${issuer}/oauth/revoke`,
  response_types_supported: ["code"],
  grant_types_supported: ["authorization_code", "refresh_token"],
  code_challenge_methods_supported: ["S256"],
  token_endpoint_auth_methods_supported: ["none"],
  authorization_response_iss_parameter_supported: true,
  scopes_supported: []
})

// ---------------------------------------------------------------------------------------
// The app

/** A form, read under the wire's 1 MiB cap and body deadline (these endpoints take no credential); unreadable: empty. */
const readForm = (request: HttpServerRequest) =>
  Effect.map(
    readBody(request).pipe(
      Effect.map((bytes) => (bytes === undefined ? "" : new TextDecoder().decode(bytes))),
      Effect.orElseSucceed(() => "")
    ),
    (text) => new URLSearchParams((request.headers["content-type"] ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded") ? text : "")
  )

const methodNotAllowed = (allow: string) =>
  HttpServerResponse.unsafeJson({ error: "invalid_request", error_description: `use ${allow}` }, { status: 405, headers: { allow } })

export const oauthApp: OutsideApp = (request) =>
  Effect.gen(function* () {
    const url = new URL(request.url, "http://server.invalid")
    const path = url.pathname
    const method = request.method
    switch (path) {
      case "/.well-known/oauth-authorization-server": {
        if (method !== "GET" && method !== "HEAD") return methodNotAllowed("GET")
        return jsonResponse(metadata(yield* issuerOf(request)))
      }
      case "/oauth/jwks": {
        if (method !== "GET" && method !== "HEAD") return methodNotAllowed("GET")
        const keys = yield* currentSigningKeys
        return HttpServerResponse.unsafeJson(keys.jwks, { headers: { "cache-control": "public, max-age=300" } })
      }
      case "/oauth/authorize":
        if (method !== "GET") return methodNotAllowed("GET")
        return yield* authorize(request, url.searchParams)
      case "/oauth/authorize/confirm":
        if (method !== "POST") return methodNotAllowed("POST")
        return yield* confirm(request, yield* readForm(request))
      case "/oauth/sign-in":
        if (method !== "POST") return methodNotAllowed("POST")
        return yield* signIn(request, yield* readForm(request))
      case "/oauth/two-factor":
        if (method !== "POST") return methodNotAllowed("POST")
        return yield* twoFactor(request, yield* readForm(request))
      case "/oauth/consent":
        if (method !== "POST") return methodNotAllowed("POST")
        return yield* consent(request, yield* readForm(request))
      case "/oauth/token":
        if (method !== "POST") return methodNotAllowed("POST")
        return yield* token(yield* readForm(request))
      case "/oauth/revoke":
        if (method !== "POST") return methodNotAllowed("POST")
        return yield* revoke(yield* readForm(request))
      default:
        return undefined
    }
  }).pipe(
    Effect.catchAll(() =>
      Effect.succeed(
        HttpServerResponse.unsafeJson(
          { error: "temporarily_unavailable", error_description: "The authorization server cannot reach its store; try again." },
          { status: 503, headers: { ...noStore, "retry-after": "1" } }
        )
      )
    )
  )
