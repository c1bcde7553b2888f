/**
 * Human mode (§5.2, §5.3, §5.4): the authorization server (discovery, JWKS, the
 * authorization request and its pages, the token and revocation endpoints), the checks of a
 * human-mode request, the attacks on access tokens and on the flow, and a third-party client
 * (`oauth4webapi`) going through it all.
 *
 * In this server every account signs in on the same origin (the account is the platform
 * chosen in the selector): "the account's own domain" of rule 5 is that choice.
 */
import { FormBrowser } from "../support/browser.js"
import { acceptedTotpCodes, type OpenedAccount } from "@syllabus/core"
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT, decodeJwt, decodeProtectedHeader } from "jose"
import * as oauth from "oauth4webapi"
import { createHash, createHmac, randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eachStore, type Harness, startHarness } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const CLIENT = "service-cli"
const PASSWORD = "correct horse battery"
const hmacSha1 = (key: Uint8Array, message: Uint8Array) => new Uint8Array(createHmac("sha1", key).update(message).digest())
const b64url = (bytes: Uint8Array | Buffer) => Buffer.from(bytes).toString("base64url")


/** A hidden field's value in a page. */
const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1]

interface FlowOptions {
  readonly platform: string
  readonly email: string
  readonly password?: string
  readonly totpSecret?: string
  readonly decision?: "approve" | "deny"
  readonly redirectUri?: string
  readonly browser?: FormBrowser
  readonly clockOffsetMs?: number
}

const pkce = () => {
  const verifier = b64url(randomBytes(32))
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

const authorizeQuery = (params: Record<string, string>) => `/oauth/authorize?${new URLSearchParams(params).toString()}`

/** Drive the pages from the authorization request to the redirect back to the client. */
const runFlow = async (h: Harness, options: FlowOptions) => {
  const browser = options.browser ?? new FormBrowser(h.baseUrl)
  const { verifier, challenge } = pkce()
  const state = b64url(randomBytes(12))
  const redirectUri = options.redirectUri ?? "http://127.0.0.1:49152/callback"
  const params = {
    response_type: "code",
    client_id: CLIENT,
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state
  }
  let page = await browser.go("GET", authorizeQuery({ ...params, platform: options.platform }))
  if (page.html.includes('action="/oauth/authorize/confirm"')) {
    const confirm = await browser.go("POST", "/oauth/authorize/confirm", { ...params, platform: field(page.html, "platform")! })
    page = await browser.go("GET", confirm.location!)
  }
  const flow = field(page.html, "flow")
  if (!flow) throw new Error(`no sign-in page: ${page.status} ${page.html.slice(0, 300)}`)
  const signedIn = await browser.go("POST", "/oauth/sign-in", { flow, email: options.email, password: options.password ?? PASSWORD })
  if (signedIn.status === 303) return { location: new URL(signedIn.location!), state, verifier, redirectUri, browser, page: signedIn }
  const code = acceptedTotpCodes(hmacSha1, options.totpSecret!, Date.now() + (options.clockOffsetMs ?? 0))[1]!
  const consent = await browser.go("POST", "/oauth/two-factor", { flow, code })
  if (consent.status !== 200) throw new Error(`two-factor failed: ${consent.status}`)
  const back = await browser.go("POST", "/oauth/consent", { flow, decision: options.decision ?? "approve" })
  return { location: new URL(back.location!), state, verifier, redirectUri, browser, page: consent }
}

const postForm = async (h: Harness, path: string, form: Record<string, string>) => {
  const res = await fetch(h.baseUrl + path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString()
  })
  const text = await res.text()
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text), headers: res.headers }
}

/**
 * An error of the token endpoint is not the API's envelope but RFC 6749 §5.2: a JSON object
 * whose `error` is the OAuth error code (and `error_description` optional text).
 */
const expectOAuthError = (res: { status: number; body: any; headers: Headers }, status: number, error: string) => {
  expect({ status: res.status, error: res.body?.error }, JSON.stringify(res.body)).toEqual({ status, error })
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
  if (res.body.error_description !== undefined) expect(typeof res.body.error_description).toBe("string")
}

/** An authorization page answering an error: HTML, no redirect, and the page says what went wrong (`role="alert"`). */
const expectErrorPage = (page: { status: number; location: string | null; html: string; headers: Headers }, status: number, why?: string) => {
  expect(page.status, why).toBe(status)
  expect(page.location, why).toBeNull()
  expect(page.headers.get("content-type") ?? "", why).toContain("text/html")
  expect(page.html, why).toContain('role="alert"')
}

const exchange = (h: Harness, code: string, verifier: string, redirectUri = "http://127.0.0.1:49152/callback") =>
  postForm(h, "/oauth/token", { grant_type: "authorization_code", client_id: CLIENT, code, code_verifier: verifier, redirect_uri: redirectUri })

const refresh = (h: Harness, refreshToken: string) =>
  postForm(h, "/oauth/token", { grant_type: "refresh_token", client_id: CLIENT, refresh_token: refreshToken })

const revoke = (h: Harness, token: string) => postForm(h, "/oauth/revoke", { token })

/** A human-mode call: the credential's secret in `X-API-Key`, the access token as bearer. */
const asHuman = (h: Harness, secret: string, accessToken: string, path = "/credentials/current") =>
  h.request("GET", `/api/v3${path}`, { headers: { "x-api-key": secret, authorization: `Bearer ${accessToken}` } })

/** Turn two-factor authentication on for an administrator, through the API. */
const enrollTotp = async (h: Harness, secret: string, administratorId: string) => {
  const started = await h.request("POST", `/api/v3/administrators/${administratorId}/two-factor-enrollments`, { secret })
  expect(started.status).toBe(201)
  const totp = String(started.body.data.secret)
  const code = acceptedTotpCodes(hmacSha1, totp, Date.now())[1]!
  const confirmed = await h.request("POST", `/api/v3/administrators/${administratorId}/two-factor-enrollments/confirmations`, {
    secret,
    json: { code }
  })
  expect(confirmed.status, confirmed.text).toBeLessThan(300)
  return totp
}

const liveOf = (opened: OpenedAccount) => opened.credentials.find((c) => c.environment === "production")!.secret

eachStore("OAuth authorization server and human mode (§5.2–§5.4)", (h) => {
  let totp = ""
  let subdomain = ""
  let email = ""
  let other: OpenedAccount
  let otherTotp = ""

  beforeAll(async () => {
    subdomain = String(h().account.account.subdomain)
    email = String(h().account.administrator.email)
    totp = await enrollTotp(h(), h().live, h().account.administrator.id)
    other = await h().openAccount(`other-${Date.now()}-${Math.floor(Math.random() * 1e6)}`)
    otherTotp = await enrollTotp(h(), liveOf(other), other.administrator.id)
  }, 60_000)

  /** A fresh token pair of the demo account's administrator. */
  const login = async (options: Partial<FlowOptions> = {}) => {
    const flow = await runFlow(h(), { platform: subdomain, email, totpSecret: totp, ...options })
    const code = flow.location.searchParams.get("code")
    if (!code) throw new Error(`no code: ${flow.location}`)
    const res = await exchange(h(), code, flow.verifier, flow.redirectUri)
    expect(res.status).toBe(200)
    return { ...res.body, code, flow } as { access_token: string; refresh_token: string; expires_in: number; code: string; flow: Awaited<ReturnType<typeof runFlow>> }
  }

  describe("discovery", () => {
    it("publishes exactly the metadata of §5.2, with this server as issuer", async () => {
      const res = await fetch(h().baseUrl + "/.well-known/oauth-authorization-server")
      expect(res.status).toBe(200)
      const issuer = h().baseUrl
      expect(await res.json()).toEqual({
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
    })

    it("publishes the public RS256 signing keys on /oauth/jwks, and no private part", async () => {
      const res = await fetch(h().baseUrl + "/oauth/jwks")
      expect(res.status).toBe(200)
      const { keys } = (await res.json()) as { keys: Array<JWK> }
      expect(keys.length).toBeGreaterThan(0)
      for (const key of keys) {
        expect(key).toMatchObject({ kty: "RSA", alg: "RS256", use: "sig" })
        expect(typeof key.kid).toBe("string")
        expect(key.d).toBeUndefined()
      }
    })
  })

  describe("§5.3 human-mode requests", () => {
    it("a valid access token with X-API-Key acts for the administrator (credentials/current shows human)", async () => {
      const tokens = await login()
      expect(tokens.expires_in).toBe(3600)
      const res = await asHuman(h(), h().live, tokens.access_token)
      expect(res.status).toBe(200)
      expect(res.body.data.human).toMatchObject({ admin_id: h().account.administrator.id })
    })

    it("the access token is an RS256 JWT with iss = discovery issuer, aud service-api-v3, sub = administrator, 1 hour", async () => {
      const tokens = await login()
      expect(decodeProtectedHeader(tokens.access_token).alg).toBe("RS256")
      const claims = decodeJwt(tokens.access_token)
      expect(claims.iss).toBe(h().baseUrl)
      expect(claims.aud).toBe("service-api-v3")
      expect(claims.sub).toBe(h().account.administrator.id)
      expect(claims.exp! - claims.iat!).toBe(3600)
    })

    it("an administrator of another account: 403 tenant_mismatch", async () => {
      const flow = await runFlow(h(), { platform: String(other.account.subdomain), email: String(other.administrator.email), totpSecret: otherTotp })
      const tokens = await exchange(h(), flow.location.searchParams.get("code")!, flow.verifier)
      expect(tokens.status).toBe(200)
      const res = await asHuman(h(), h().live, tokens.body.access_token)
      expect(res.status).toBe(403)
      expect(res.body.error.code).toBe("tenant_mismatch")
    })

    it("an administrator without an active link to the credential: 403 admin_not_eligible", async () => {
      const created = await h().request("POST", "/api/v3/credentials", { secret: h().live, json: { name: "no admins", auth_mode: "both" } })
      expect(created.status).toBe(201)
      const tokens = await login()
      const res = await asHuman(h(), String(created.body.data.secret.value), tokens.access_token)
      expect(res.status).toBe(403)
      expect(res.body.error.code).toBe("admin_not_eligible")
    })

    it("a token that is not a valid JWT of the issuer: 401 invalid_access_token, never autonomous", async () => {
      const res = await asHuman(h(), h().live, "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl")
      expect(res.status).toBe(401)
      expect(res.body.error.code).toBe("invalid_access_token")
    })
  })

  describe("attacks on access tokens (each refused with 401 invalid_access_token)", () => {
    let injected: { kid: string; privateKey: CryptoKey; publicJwk: JWK }

    /** An operator rotation: a key of the test's is added to the server's retired keys. */
    beforeAll(async () => {
      const pair = await generateKeyPair("RS256", { extractable: true })
      const kid = `test-${b64url(randomBytes(6))}`
      const publicJwk = { ...(await exportJWK(pair.publicKey)), kid, alg: "RS256", use: "sig" }
      await h().patchRecord({ accountId: "system", environment: "production" }, "oauth_signing_keys", "default", { retired_keys: [publicJwk] })
      injected = { kid, privateKey: pair.privateKey, publicJwk }
    })

    /** A real token's claims, re-signed with the injected key after `change`. */
    const resign = async (change: (claims: Record<string, unknown>) => Record<string, unknown>, typ = "at+jwt") => {
      const tokens = await login()
      const claims = change({ ...decodeJwt(tokens.access_token) })
      return new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: injected.kid, typ }).sign(injected.privateKey)
    }

    const expectInvalid = async (token: string) => {
      expectError(await asHuman(h(), h().live, token), 401, "invalid_access_token")
    }

    it("control: a token re-signed unchanged by a published key is accepted (so the attacks below are real)", async () => {
      const res = await asHuman(h(), h().live, await resign((c) => c))
      expect(res.status).toBe(200)
      expect(res.body.data.human.admin_id).toBe(h().account.administrator.id)
    })

    it("alg none", async () => {
      const tokens = await login()
      const [, payload] = tokens.access_token.split(".")
      const header = b64url(Buffer.from(JSON.stringify({ alg: "none", typ: "at+jwt" })))
      await expectInvalid(`${header}.${payload}.`)
    })

    it("HS256 signed with the server's public key as the HMAC secret", async () => {
      const tokens = await login()
      const { keys } = (await (await fetch(h().baseUrl + "/oauth/jwks")).json()) as { keys: Array<JWK> }
      const kid = decodeProtectedHeader(tokens.access_token).kid
      const jwk = keys.find((k) => k.kid === kid)!
      const publicKey = (await importJWK(jwk, "RS256", { extractable: true })) as CryptoKey
      const spki = new Uint8Array(await crypto.subtle.exportKey("spki", publicKey))
      const pem = `-----BEGIN PUBLIC KEY-----\n${Buffer.from(spki).toString("base64").replace(/(.{64})/g, "$1\n")}\n-----END PUBLIC KEY-----\n`
      for (const secret of [new TextEncoder().encode(pem), new TextEncoder().encode(JSON.stringify(jwk))]) {
        const forged = await new SignJWT(decodeJwt(tokens.access_token)).setProtectedHeader({ alg: "HS256", kid: kid!, typ: "at+jwt" }).sign(secret)
        await expectInvalid(forged)
      }
    })

    it("wrong aud", async () => {
      await expectInvalid(await resign((c) => ({ ...c, aud: "some-other-api" })))
    })

    it("wrong iss", async () => {
      await expectInvalid(await resign((c) => ({ ...c, iss: "http://127.0.0.1.evil.example" })))
    })

    it("expired (after 1 hour)", async () => {
      const tokens = await login()
      h().advance(3601_000)
      try {
        await expectInvalid(tokens.access_token)
      } finally {
        h().advance(-3601_000)
      }
    })

    it("not yet valid (nbf in the future)", async () => {
      await expectInvalid(await resign((c) => ({ ...c, nbf: Math.floor(Date.now() / 1000) + 600 })))
    })

    it("unknown kid", async () => {
      const pair = await generateKeyPair("RS256")
      const tokens = await login()
      const forged = await new SignJWT(decodeJwt(tokens.access_token))
        .setProtectedHeader({ alg: "RS256", kid: "no-such-key", typ: "at+jwt" })
        .sign(pair.privateKey)
      await expectInvalid(forged)
    })

    it("a revoked token", async () => {
      const tokens = await login()
      expect((await revoke(h(), tokens.access_token)).status).toBe(200)
      await expectInvalid(tokens.access_token)
    })

    it("an ID token (a JWT not typed as an access token) with X-API-Key: 401 ambiguous_credentials", async () => {
      const res = await asHuman(h(), h().live, await resign((c) => c, "JWT"))
      expect(res.status).toBe(401)
      expect(res.body.error.code).toBe("ambiguous_credentials")
    })
  })

  describe("§5.2 token endpoint", () => {
    it("a code is single-use: a replay is invalid_grant and revokes what it issued", async () => {
      const tokens = await login()
      const replay = await exchange(h(), tokens.code, tokens.flow.verifier)
      expectOAuthError(replay, 400, "invalid_grant")
      expectError(await asHuman(h(), h().live, tokens.access_token), 401, "invalid_access_token")
      expectOAuthError(await refresh(h(), tokens.refresh_token), 400, "invalid_grant")
    })

    it("a code expires 10 minutes after issue", async () => {
      const flow = await runFlow(h(), { platform: subdomain, email, totpSecret: totp })
      h().advance(10 * 60_000 + 1000)
      try {
        const res = await exchange(h(), flow.location.searchParams.get("code")!, flow.verifier)
        expectOAuthError(res, 400, "invalid_grant")
      } finally {
        h().advance(-(10 * 60_000 + 1000))
      }
    })

    it("a code is bound to its redirect_uri", async () => {
      const flow = await runFlow(h(), { platform: subdomain, email, totpSecret: totp })
      const res = await exchange(h(), flow.location.searchParams.get("code")!, flow.verifier, "http://127.0.0.1:49153/callback")
      expectOAuthError(res, 400, "invalid_grant")
    })

    it("a code is bound to the PKCE verifier: another verifier, or one of wrong length or characters, is refused", async () => {
      const flow = await runFlow(h(), { platform: subdomain, email, totpSecret: totp })
      const code = flow.location.searchParams.get("code")!
      for (const verifier of [pkce().verifier, flow.verifier.slice(0, 42), flow.verifier + "!", "a".repeat(129)]) {
        const res = await exchange(h(), code, verifier)
        expectOAuthError(res, 400, "invalid_grant")
      }
      expect((await exchange(h(), code, flow.verifier)).status).toBe(200)
    })

    it("refresh rotates: a new pair, and the new access token works", async () => {
      const tokens = await login()
      const res = await refresh(h(), tokens.refresh_token)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ token_type: "Bearer", expires_in: 3600 })
      expect(res.body.refresh_token).not.toBe(tokens.refresh_token)
      expect((await asHuman(h(), h().live, res.body.access_token)).status).toBe(200)
    })

    it("reusing an exchanged refresh token revokes the whole family", async () => {
      const tokens = await login()
      const second = (await refresh(h(), tokens.refresh_token)).body
      const reuse = await refresh(h(), tokens.refresh_token)
      expectOAuthError(reuse, 400, "invalid_grant")
      expectError(await asHuman(h(), h().live, second.access_token), 401, "invalid_access_token")
      expectOAuthError(await refresh(h(), second.refresh_token), 400, "invalid_grant")
    })

    it("two concurrent refreshes with one token: one wins, and the family is revoked", async () => {
      const tokens = await login()
      const results = await Promise.all([refresh(h(), tokens.refresh_token), refresh(h(), tokens.refresh_token)])
      expect(results.map((r) => r.status).sort()).toEqual([200, 400])
      expectOAuthError(results.find((r) => r.status !== 200)!, 400, "invalid_grant")
      const winner = results.find((r) => r.status === 200)!.body
      expectError(await asHuman(h(), h().live, winner.access_token), 401, "invalid_access_token")
      expectOAuthError(await refresh(h(), winner.refresh_token), 400, "invalid_grant")
    })

    it("an unknown client_id is invalid_client", async () => {
      const res = await postForm(h(), "/oauth/token", { grant_type: "refresh_token", client_id: "other", refresh_token: "x" })
      expectOAuthError(res, 401, "invalid_client")
    })
  })

  describe("§5.2 revocation", () => {
    it("always answers 200, even for unknown tokens", async () => {
      expect((await revoke(h(), "no-such-token")).status).toBe(200)
      expect((await revoke(h(), "a.b.c")).status).toBe(200)
    })

    it("revoking the refresh token revokes its access token", async () => {
      const tokens = await login()
      expect((await revoke(h(), tokens.refresh_token)).status).toBe(200)
      expectError(await asHuman(h(), h().live, tokens.access_token), 401, "invalid_access_token")
    })

    it("revoking the access token revokes its refresh token", async () => {
      const tokens = await login()
      expect((await revoke(h(), tokens.access_token)).status).toBe(200)
      expectOAuthError(await refresh(h(), tokens.refresh_token), 400, "invalid_grant")
    })
  })

  describe("§5.2 authorization request", () => {
    const base = () => ({
      response_type: "code",
      client_id: CLIENT,
      redirect_uri: "http://127.0.0.1:50000/callback",
      code_challenge: pkce().challenge,
      code_challenge_method: "S256",
      state: "st-123"
    })

    it("rule 1–2: redirect URIs other than loopback /callback get an error page and no redirect", async () => {
      for (const redirect_uri of [
        "http://localhost:50000/callback",
        "http://127.0.0.1.evil.example/callback",
        "http://127.0.0.1.evil.example:50000/callback",
        "HTTP://127.0.0.1:50000/callback",
        "https://127.0.0.1:50000/callback",
        "http://127.0.0.1:50000/other",
        "http://127.0.0.1:50000/callback/",
        "http://10.0.0.1:50000/callback",
        "http://192.168.1.5:50000/callback",
        "http://127.0.0.1/callback"
      ]) {
        const page = await new FormBrowser(h().baseUrl).go("GET", authorizeQuery({ ...base(), redirect_uri }))
        expectErrorPage(page, 401, redirect_uri)
      }
    })

    it("rule 1: http://[::1]:{port}/callback is accepted", async () => {
      const page = await new FormBrowser(h().baseUrl).go("GET", authorizeQuery({ ...base(), redirect_uri: "http://[::1]:50000/callback" }))
      expect(page.status).toBe(200)
      expect(page.html).toContain('name="platform"')
    })

    it("rule 2: an unknown client_id gets an error page and no redirect", async () => {
      const page = await new FormBrowser(h().baseUrl).go("GET", authorizeQuery({ ...base(), client_id: "someone-else" }))
      expectErrorPage(page, 401)
    })

    it("rule 3: PKCE missing, plain, or a malformed challenge redirects with error=invalid_request, state and iss", async () => {
      const { code_challenge: _, code_challenge_method: __, ...noPkce } = base()
      for (const query of [noPkce, { ...base(), code_challenge_method: "plain" }, { ...base(), code_challenge: "short" }]) {
        const page = await new FormBrowser(h().baseUrl).go("GET", authorizeQuery(query))
        expect(page.status).toBe(303)
        const location = new URL(page.location!)
        expect(location.origin + location.pathname).toBe("http://127.0.0.1:50000/callback")
        expect(location.searchParams.get("error")).toBe("invalid_request")
        expect(location.searchParams.get("error_description")).toBeTruthy()
        expect(location.searchParams.get("state")).toBe("st-123")
        expect(location.searchParams.get("iss")).toBe(h().baseUrl)
      }
    })

    it("rule 4: without platform, a selector form (no JavaScript) is shown", async () => {
      const page = await new FormBrowser(h().baseUrl).go("GET", authorizeQuery(base()))
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toContain("text/html")
      expect(page.html).toContain('<form method="get" action="/oauth/authorize">')
      expect(page.html).not.toContain("<script")
    })

    it("rule 4: an address matching no account reopens the selector with an error", async () => {
      const page = await new FormBrowser(h().baseUrl).go("GET", authorizeQuery({ ...base(), platform: "no-such-school-xyz" }))
      expect(page.status).toBe(200)
      expect(page.html).toContain('role="alert"')
      expect(page.html).toContain('name="platform"')
    })

    it("rule 4: a new platform shows a confirmation with the account name and address; the last one goes straight on", async () => {
      const browser = new FormBrowser(h().baseUrl)
      const first = await browser.go("GET", authorizeQuery({ ...base(), platform: subdomain }))
      expect(first.html).toContain('action="/oauth/authorize/confirm"')
      expect(first.html).toContain(String(h().account.account.name))
      expect(first.html).toContain(subdomain)
      const confirmed = await browser.go("POST", "/oauth/authorize/confirm", { ...base(), platform: subdomain })
      expect(confirmed.status).toBe(303)
      // The browser remembers the platform: next time, sign-in straight away.
      const again = await browser.go("GET", authorizeQuery({ ...base(), platform: subdomain }))
      expect(again.html).toContain('action="/oauth/sign-in"')
      // The selector offers the last platform.
      const selector = await browser.go("GET", authorizeQuery(base()))
      expect(selector.html).toContain(`value="${subdomain}"`)
    })

    it("rule 5: a wrong password or TOTP code keeps the person on the page with an error", async () => {
      const browser = new FormBrowser(h().baseUrl)
      browser.cookies.set("oauth_last_platform", subdomain)
      const signIn = await browser.go("GET", authorizeQuery({ ...base(), platform: subdomain }))
      const flow = field(signIn.html, "flow")!
      const wrong = await browser.go("POST", "/oauth/sign-in", { flow, email, password: "not the password" })
      expectErrorPage(wrong, 401)
      expect(wrong.html).toContain('action="/oauth/sign-in"')
      const second = await browser.go("POST", "/oauth/sign-in", { flow, email, password: PASSWORD })
      expect(second.html).toContain('action="/oauth/two-factor"')
      const badCode = await browser.go("POST", "/oauth/two-factor", { flow, code: "000000" === acceptedTotpCodes(hmacSha1, totp, Date.now())[1] ? "111111" : "000000" })
      expectErrorPage(badCode, 401)
      expect(badCode.html).toContain('action="/oauth/two-factor"')
    })

    it("rule 5: five wrong passwords end the sign-in (password guessing)", async () => {
      const browser = new FormBrowser(h().baseUrl)
      browser.cookies.set("oauth_last_platform", subdomain)
      const signIn = await browser.go("GET", authorizeQuery({ ...base(), platform: subdomain }))
      const flow = field(signIn.html, "flow")!
      for (let i = 0; i < 5; i++) await browser.go("POST", "/oauth/sign-in", { flow, email, password: `guess ${i}` })
      const right = await browser.go("POST", "/oauth/sign-in", { flow, email, password: PASSWORD })
      expect(right.html).not.toContain('action="/oauth/two-factor"')
      expectErrorPage(right, 400)
    })

    it("rule 5: the flow belongs to the browser that started it", async () => {
      const browser = new FormBrowser(h().baseUrl)
      browser.cookies.set("oauth_last_platform", subdomain)
      const signIn = await browser.go("GET", authorizeQuery({ ...base(), platform: subdomain }))
      const flow = field(signIn.html, "flow")!
      const stranger = new FormBrowser(h().baseUrl)
      const res = await stranger.go("POST", "/oauth/sign-in", { flow, email, password: PASSWORD })
      expectErrorPage(res, 400)
      expect(res.html).not.toContain('action="/oauth/two-factor"')
    })

    it("rule 5–6: consent names the client and the account; approval redirects with code, state and iss", async () => {
      const flow = await runFlow(h(), { platform: subdomain, email, totpSecret: totp })
      expect(flow.page.html).toContain("service-cli")
      expect(flow.page.html).toContain(String(h().account.account.name))
      expect(flow.location.origin + flow.location.pathname).toBe("http://127.0.0.1:49152/callback")
      expect(flow.location.searchParams.get("code")).toBeTruthy()
      expect(flow.location.searchParams.get("state")).toBe(flow.state)
      expect(flow.location.searchParams.get("iss")).toBe(h().baseUrl)
    })

    it("rule 6: Deny redirects with error=access_denied, state and iss, and no error_reason", async () => {
      const flow = await runFlow(h(), { platform: subdomain, email, totpSecret: totp, decision: "deny" })
      expect(flow.location.searchParams.get("error")).toBe("access_denied")
      expect(flow.location.searchParams.get("error_reason")).toBeNull()
      expect(flow.location.searchParams.get("state")).toBe(flow.state)
      expect(flow.location.searchParams.get("iss")).toBe(h().baseUrl)
      expect(flow.location.searchParams.get("code")).toBeNull()
    })

    it("rule 7: an administrator without two-factor authentication: access_denied, error_reason mfa_required", async () => {
      const third = await h().openAccount(`nomfa-${Date.now()}-${Math.floor(Math.random() * 1e6)}`)
      const flow = await runFlow(h(), { platform: String(third.account.subdomain), email: String(third.administrator.email) })
      expect(flow.location.searchParams.get("error")).toBe("access_denied")
      expect(flow.location.searchParams.get("error_reason")).toBe("mfa_required")
      expect(flow.location.searchParams.get("error_description")).toBeTruthy()
      expect(flow.location.searchParams.get("state")).toBe(flow.state)
      expect(flow.location.searchParams.get("iss")).toBe(h().baseUrl)
    })

    it("rule 7: an administrator of another account than the platform: error_reason platform_mismatch", async () => {
      const flow = await runFlow(h(), { platform: subdomain, email: String(other.administrator.email) })
      expect(flow.location.searchParams.get("error")).toBe("access_denied")
      expect(flow.location.searchParams.get("error_reason")).toBe("platform_mismatch")
    })

    it("rule 7: an account that cannot authorize (blocked): error_reason account_not_eligible", async () => {
      await h().setAccountStatus(other.account.id, "blocked")
      try {
        const flow = await runFlow(h(), { platform: String(other.account.subdomain), email: String(other.administrator.email), totpSecret: otherTotp })
        expect(flow.location.searchParams.get("error")).toBe("access_denied")
        expect(flow.location.searchParams.get("error_reason")).toBe("account_not_eligible")
      } finally {
        await h().setAccountStatus(other.account.id, "active")
      }
    })
  })

  describe("§5.4 revocation effects", () => {
    it("removing the administrator's link ends human mode only: admin_not_eligible, the credential still works autonomously", async () => {
      const created = await h().request("POST", "/api/v3/credentials", { secret: h().live, json: { name: "linked", auth_mode: "both" } })
      const credential = { id: String(created.body.data.id), secret: String(created.body.data.secret.value) }
      const link = await h().request("POST", `/api/v3/credentials/${credential.id}/administrators`, {
        secret: h().live,
        json: { administrator_id: h().account.administrator.id }
      })
      expect(link.status).toBeLessThan(300)
      const tokens = await login()
      expect((await asHuman(h(), credential.secret, tokens.access_token)).status).toBe(200)
      const unlink = await h().request("DELETE", `/api/v3/credentials/${credential.id}/administrators/${h().account.administrator.id}`, { secret: h().live })
      expect(unlink.status).toBeLessThan(300)
      expect((await asHuman(h(), credential.secret, tokens.access_token)).body.error.code).toBe("admin_not_eligible")
      expect((await h().request("GET", "/api/v3/credentials/current", { secret: credential.secret })).status).toBe(200)
    })
  })

  describe("§5.4 revoking the credential", () => {
    it("ends human mode too: 401 credential_revoked with a valid access token", async () => {
      const created = await h().request("POST", "/api/v3/credentials", { secret: h().live, json: { name: "to revoke", auth_mode: "both" } })
      const id = String(created.body.data.id)
      const secret = String(created.body.data.secret.value)
      await h().request("POST", `/api/v3/credentials/${id}/administrators`, { secret: h().live, json: { administrator_id: h().account.administrator.id } })
      const tokens = await login()
      expect((await asHuman(h(), secret, tokens.access_token)).status).toBe(200)
      expect((await h().request("POST", `/api/v3/credentials/${id}/revocations`, { secret: h().live })).status).toBe(200)
      const res = await asHuman(h(), secret, tokens.access_token)
      expect(res.status).toBe(401)
      expect(res.body.error.code).toBe("credential_revoked")
    })
  })

  describe("a third-party client (oauth4webapi)", () => {
    it("completes discovery, PKCE, the code exchange and refresh", async () => {
      const issuer = new URL(h().baseUrl)
      const insecure = { [oauth.allowInsecureRequests]: true }
      const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }))
      const client: oauth.Client = { client_id: CLIENT }
      const redirectUri = "http://127.0.0.1:51234/callback"
      const verifier = oauth.generateRandomCodeVerifier()
      const challenge = await oauth.calculatePKCECodeChallenge(verifier)
      const state = oauth.generateRandomState()
      const url = new URL(as.authorization_endpoint!)
      url.search = new URLSearchParams({
        response_type: "code",
        client_id: CLIENT,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: "S256",
        state,
        platform: subdomain
      }).toString()

      // The person in the browser: confirm the platform, sign in, the code, allow.
      const browser = new FormBrowser(h().baseUrl)
      const confirmation = await browser.go("GET", url.toString())
      const confirmForm = Object.fromEntries([...confirmation.html.matchAll(/name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!.replace(/&amp;/g, "&")]))
      const confirmed = await browser.go("POST", "/oauth/authorize/confirm", confirmForm)
      const signIn = await browser.go("GET", confirmed.location!)
      const flow = field(signIn.html, "flow")!
      await browser.go("POST", "/oauth/sign-in", { flow, email, password: PASSWORD })
      await browser.go("POST", "/oauth/two-factor", { flow, code: acceptedTotpCodes(hmacSha1, totp, Date.now())[1]! })
      const back = await browser.go("POST", "/oauth/consent", { flow, decision: "approve" })

      const params = oauth.validateAuthResponse(as, client, new URL(back.location!), state)
      const tokenResponse = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, insecure)
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, tokenResponse)
      expect(tokens.token_type.toLowerCase()).toBe("bearer")
      expect((await asHuman(h(), h().live, tokens.access_token)).status).toBe(200)

      const refreshed = await oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure)
      )
      expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
      expect((await asHuman(h(), h().live, refreshed.access_token)).status).toBe(200)

      const revoked = await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure)
      await oauth.processRevocationResponse(revoked)
      expect((await asHuman(h(), h().live, refreshed.access_token)).body.error.code).toBe("invalid_access_token")
    })
  })
})

describe("two server processes on one PostgreSQL database share the signing keys", () => {
  let first: Harness
  let second: Harness
  beforeAll(async () => {
    first = await startHarness("postgresql")
    second = await startHarness("postgresql", { databaseUrl: first.databaseUrl!, account: first.account })
  }, 60_000)
  afterAll(async () => {
    await second?.close()
    await first?.close()
  }, 60_000)

  it("the same JWKS, and a token issued by one is accepted by the other", async () => {
    const jwks = async (h: Harness) => (await (await fetch(h.baseUrl + "/oauth/jwks")).json()) as unknown
    expect(await jwks(second)).toEqual(await jwks(first))
    const totp = await enrollTotp(first, first.live, first.account.administrator.id)
    const flow = await runFlow(first, {
      platform: String(first.account.account.subdomain),
      email: String(first.account.administrator.email),
      totpSecret: totp
    })
    const tokens = await exchange(first, flow.location.searchParams.get("code")!, flow.verifier)
    expect(tokens.status).toBe(200)
    const res = await asHuman(second, second.live, tokens.body.access_token)
    expect(res.status).toBe(200)
    expect(res.body.data.human.admin_id).toBe(first.account.administrator.id)
  })
})
