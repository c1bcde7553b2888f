/**
 * The command-line client against a real server (memory store): configuration files,
 * `login` through the sign-in pages (§5.2), calls in both modes (§5.1, §5.2), refresh on
 * expiry, `logout` (revocation), and the commands with their table and JSON output.
 */
import { statSync, existsSync, readFileSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Harness, startHarness } from "../../../test/support/harness.js"
import { FormBrowser } from "../../../test/support/browser.js"
import { enrollTotp, PASSWORD, signIn, user } from "./support.js"

let h: Harness
let totp = ""
/** How far the server's clock has been moved (the TOTP codes follow it). */
let clockOffsetMs = 0

beforeAll(async () => {
  h = await startHarness("memory")
  totp = await enrollTotp(h, h.live, h.account.administrator.id)
}, 60_000)

afterAll(async () => {
  await h?.close()
})

const mode = (path: string) => statSync(path).mode & 0o777
const subdomain = () => h.account.account.subdomain
const person = () => ({ email: h.account.administrator.email, totpSecret: totp, clockOffsetMs })
const liveCredentialId = () => h.account.credentials.find((c) => c.environment === "production")!.id

/** A configured user. */
const configured = async () => {
  const u = user()
  const res = await u.cli("configure", "--base-url", h.baseUrl, "--api-key", h.live)
  expect(res.code, res.stderr).toBe(0)
  return u
}

/** Start `login`, answer the authorize URL it printed and the redirect URI inside it. */
const startLogin = async (u: ReturnType<typeof user>) => {
  const running = u.start("login", "--platform", subdomain(), "--no-browser")
  const [authorizeUrl] = await running.waitForStderr(/http:\/\/\S+\/oauth\/authorize\?\S+/)
  return { running, authorizeUrl: authorizeUrl!, redirectUri: new URL(authorizeUrl!).searchParams.get("redirect_uri")! }
}

/** A signed-in user: the whole `login` with the browser side driven by the test. */
const signedIn = async () => {
  const u = await configured()
  const { running, authorizeUrl } = await startLogin(u)
  const back = await signIn(h, authorizeUrl, person())
  const answer = await fetch(back)
  expect(answer.status).toBe(200)
  expect(await answer.text()).toContain("Signed in")
  expect(await running.exit, running.stderr()).toBe(0)
  return u
}

const tokensOf = (u: ReturnType<typeof user>) =>
  JSON.parse(readFileSync(join(u.dir, "tokens.json"), "utf8")) as { access_token: string; refresh_token: string }

/** The newest request-log entries (to see who made a call). */
const requestLog = async () => {
  const res = await h.request("GET", "/api/v3/requests?limit=20", { secret: h.live })
  expect(res.status).toBe(200)
  return res.body.data as Array<{
    id: string
    path: string
    status: number
    error_code: string | null
    administrator_id: string | null
    credential_id: string
  }>
}

describe("configuration", () => {
  it("configure stores the base URL and API key in SYLLABUS_CONFIG_DIR, file 0600 in a 0700 directory", async () => {
    const u = await configured()
    const file = join(u.dir, "config.json")
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ base_url: h.baseUrl, api_key: h.live })
    expect(mode(file)).toBe(0o600)
    expect(mode(u.dir)).toBe(0o700)
  })

  it("without SYLLABUS_CONFIG_DIR the directory is $XDG_CONFIG_HOME/syllabus, else ~/.config/syllabus", async () => {
    const xdg = mkdtempSync(join(tmpdir(), "syllabus-xdg-"))
    expect((await user({ env: { XDG_CONFIG_HOME: xdg } }).cli("configure", "--base-url", h.baseUrl, "--api-key", h.live)).code).toBe(0)
    expect(existsSync(join(xdg, "syllabus", "config.json"))).toBe(true)
    const home = mkdtempSync(join(tmpdir(), "syllabus-home-"))
    expect((await user({ env: { HOME: home } }).cli("configure", "--base-url", h.baseUrl, "--api-key", h.live)).code).toBe(0)
    expect(existsSync(join(home, ".config", "syllabus", "config.json"))).toBe(true)
  })

  it("a command before configure fails with not_configured and a non-zero exit", async () => {
    const res = await user().cli("credentials", "list")
    expect(res.code).not.toBe(0)
    expect(res.stderr).toMatch(/^not_configured: /m)
  })
})

describe("autonomous mode (§5.1)", () => {
  it("credentials list --json prints the raw data, called with the API key as bearer (no administrator in the request log)", async () => {
    const u = await configured()
    const res = await u.cli("credentials", "list", "--json")
    expect(res.code, res.stderr).toBe(0)
    const data = JSON.parse(res.stdout) as Array<{ id: string }>
    expect(data.map((c) => c.id)).toContain(liveCredentialId())
    const [latest] = (await requestLog()).filter((r) => r.path.startsWith("/api/v3/credentials"))
    expect(latest).toMatchObject({ credential_id: liveCredentialId(), administrator_id: null })
  })

  it("credentials list prints a readable table by default", async () => {
    const res = await (await configured()).cli("credentials", "list")
    expect(res.code, res.stderr).toBe(0)
    const [header, ...rows] = res.stdout.trimEnd().split("\n")
    expect(header).toMatch(/^ID\s+NAME\s+MODE\s+ENVIRONMENT\s+STATUS$/)
    expect(rows.some((row) => row.startsWith(liveCredentialId()) && /\bactive$/.test(row))).toBe(true)
  })

  it("credentials get <id> prints its fields; --json prints data", async () => {
    const u = await configured()
    const table = await u.cli("credentials", "get", liveCredentialId())
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toMatch(new RegExp(`^id\\s+${liveCredentialId()}$`, "m"))
    expect(table.stdout).toMatch(/^environment\s+production$/m)
    const json = await u.cli("credentials", "get", liveCredentialId(), "--json")
    expect(JSON.parse(json.stdout)).toMatchObject({ object: "credential", id: liveCredentialId() })
  })

  it("an error answer prints `error.code: message` on stderr and exits non-zero", async () => {
    const res = await (await configured()).cli("credentials", "get", "cred_doesnotexist")
    expect(res.code).not.toBe(0)
    const direct = await h.request("GET", "/api/v3/credentials/cred_doesnotexist", { secret: h.live })
    expect(res.stderr.trim()).toBe(`${direct.body.error.code}: ${direct.body.error.message}`)
    expect(res.stdout).toBe("")
  })

  it("products list and get show a product; operations get --wait follows a publication to the end with a progress bar", async () => {
    const showcase = await h.request("POST", "/api/v3/showcases", { secret: h.live, json: { name: "CLI shelf" } })
    expect(showcase.status).toBe(201)
    const product = await h.request("POST", "/api/v3/products", {
      secret: h.live,
      json: { format: "course", name: "CLI Algebra", showcase_id: showcase.body.data.id }
    })
    expect(product.status).toBe(201)
    const id = String(product.body.data.id)
    const u = await configured()

    const list = await u.cli("products", "list")
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout.split("\n").some((row) => row.startsWith(id) && row.includes("CLI Algebra"))).toBe(true)
    const one = await u.cli("products", "get", id, "--json")
    expect(JSON.parse(one.stdout)).toMatchObject({ id, name: "CLI Algebra" })

    const started = await h.request("POST", `/api/v3/products/${id}/publications`, { secret: h.live })
    expect(started.status).toBe(202)
    const waited = await u.cli("operations", "get", String(started.body.data.id), "--wait", "--json")
    expect(waited.code, waited.stderr).toBe(0)
    expect(JSON.parse(waited.stdout)).toMatchObject({ id: started.body.data.id, status: "succeeded", progress: { done: 1, total: 1 } })
    expect(waited.stderr).toContain("progress 1/1 succeeded\n")
    const shown = await u.cli("operations", "get", String(started.body.data.id))
    expect(shown.stdout).toMatch(/^status\s+succeeded$/m)
    expect(shown.stdout).toMatch(/^progress\s+1\/1 \(failed 0\)$/m)
  })
})

describe("login and human mode (§5.2)", () => {
  it("login opens the browser on the authorize URL it prints: client service-cli, PKCE S256, a state, a loopback /callback redirect", async () => {
    const opened: Array<string> = []
    const u = user({ openBrowser: (url) => void opened.push(url) })
    expect((await u.cli("configure", "--base-url", h.baseUrl, "--api-key", h.live)).code).toBe(0)
    const running = u.start("login", "--platform", subdomain())
    const [printed] = await running.waitForStderr(/http:\/\/\S+\/oauth\/authorize\?\S+/)
    expect(opened).toEqual([printed])
    const url = new URL(printed!)
    expect(url.origin + url.pathname).toBe(`${h.baseUrl}/oauth/authorize`)
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: "code",
      client_id: "service-cli",
      code_challenge_method: "S256",
      platform: subdomain()
    })
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(url.searchParams.get("state")!.length).toBeGreaterThanOrEqual(16)
    expect(url.searchParams.get("redirect_uri")).toMatch(/^http:\/\/127\.0\.0\.1:[0-9]+\/callback$/)
    await fetch(await signIn(h, printed!, person()))
    expect(await running.exit, running.stderr()).toBe(0)
  })

  it("a denial at the consent screen ends login with access_denied; nothing is stored", async () => {
    const u = await configured()
    const { running, authorizeUrl } = await startLogin(u)
    const back = await signIn(h, authorizeUrl, { ...person(), decision: "deny" })
    expect(back.searchParams.get("error")).toBe("access_denied")
    expect((await fetch(back)).status).toBe(400)
    expect(await running.exit).not.toBe(0)
    expect(running.stderr()).toMatch(/^access_denied: /m)
    expect(existsSync(join(u.dir, "tokens.json"))).toBe(false)
  })

  it("login end to end: tokens stored 0600, then credentials list acts for the administrator (request log)", async () => {
    const u = await signedIn()
    const file = join(u.dir, "tokens.json")
    expect(mode(file)).toBe(0o600)
    const tokens = tokensOf(u)
    const claims = JSON.parse(Buffer.from(tokens.access_token.split(".")[1]!, "base64url").toString()) as { sub: string }
    expect(claims.sub).toBe(h.account.administrator.id)

    const res = await u.cli("credentials", "list", "--json")
    expect(res.code, res.stderr).toBe(0)
    const [latest] = (await requestLog()).filter((r) => r.path.startsWith("/api/v3/credentials"))
    expect(latest).toMatchObject({ credential_id: liveCredentialId(), administrator_id: h.account.administrator.id })
  })

  it("an administrator without a second factor: login fails with mfa_required and says how to enroll one; nothing is stored", async () => {
    const email = `no-factor-${Date.now()}@example.com`
    const admin = await h.request("POST", "/api/v3/administrators", { secret: h.live, json: { email, name: "No factor", password: PASSWORD } })
    expect(admin.status, admin.text).toBe(201)
    const u = await configured()
    const { running, authorizeUrl } = await startLogin(u)
    // The browser side: the sign-in page with the right password, then the redirect back.
    const browser = new FormBrowser(h.baseUrl)
    let page = await browser.go("GET", authorizeUrl)
    if (page.html.includes('action="/oauth/authorize/confirm"')) {
      const params = Object.fromEntries(new URL(authorizeUrl).searchParams)
      const platform = /name="platform" value="([^"]*)"/.exec(page.html)![1]!
      page = await browser.go("GET", (await browser.go("POST", "/oauth/authorize/confirm", { ...params, platform })).location!)
    }
    const flow = /name="flow" value="([^"]*)"/.exec(page.html)![1]!
    const refused = await browser.go("POST", "/oauth/sign-in", { flow, email, password: PASSWORD })
    const back = new URL(refused.location!)
    expect(back.searchParams.get("error_reason")).toBe("mfa_required")
    expect((await fetch(back)).status).toBe(400)
    expect(await running.exit).not.toBe(0)
    expect(running.stderr()).toMatch(/^mfa_required: Two-factor authentication must be turned on/m)
    expect(running.stderr()).toContain("syllabus post /administrators/adm_…/two-factor-enrollments\n")
    expect(running.stderr()).toContain("syllabus post /administrators/adm_…/two-factor-enrollments/confirmations -d code=")
    expect(existsSync(join(u.dir, "tokens.json"))).toBe(false)
  })

  it("whoami, signed in: human mode, the administrator (with the email) and the account", async () => {
    const u = await signedIn()
    const res = await u.cli("whoami", "--json")
    expect(res.code, res.stderr).toBe(0)
    expect(JSON.parse(res.stdout)).toEqual({
      mode: "human",
      credential: { id: liveCredentialId(), name: expect.any(String), auth_mode: expect.any(String), status: "active" },
      environment: "production",
      account_id: h.account.account.id,
      administrator: { id: h.account.administrator.id, email: h.account.administrator.email, name: expect.any(String) }
    })
  })

  it("a callback whose state differs from the one sent is refused; nothing is stored", async () => {
    const u = await configured()
    const { running, redirectUri } = await startLogin(u)
    const forged = await fetch(`${redirectUri}?code=stolen&state=not-the-state&iss=${encodeURIComponent(h.baseUrl)}`)
    expect(forged.status).toBe(400)
    expect(await running.exit).not.toBe(0)
    expect(running.stderr()).toMatch(/^state_mismatch: /m)
    expect(existsSync(join(u.dir, "tokens.json"))).toBe(false)
  })

  it("a callback whose iss differs from the discovery issuer is refused, even with the right state and a real code", async () => {
    const u = await configured()
    const { running, authorizeUrl } = await startLogin(u)
    const back = await signIn(h, authorizeUrl, person())
    expect(back.searchParams.get("code")).toBeTruthy()
    back.searchParams.set("iss", "http://127.0.0.1.evil.example")
    expect((await fetch(back)).status).toBe(400)
    expect(await running.exit).not.toBe(0)
    expect(running.stderr()).toMatch(/^issuer_mismatch: /m)
    expect(existsSync(join(u.dir, "tokens.json"))).toBe(false)
  })

  it("logout revokes the tokens (the old access token then fails) and deletes them", async () => {
    const u = await signedIn()
    const { access_token } = tokensOf(u)
    const res = await u.cli("logout")
    expect(res.code, res.stderr).toBe(0)
    expect(existsSync(join(u.dir, "tokens.json"))).toBe(false)
    const old = await h.request("GET", "/api/v3/credentials/current", { headers: { "x-api-key": h.live, authorization: `Bearer ${access_token}` } })
    expect(old.status).toBe(401)
    expect(old.body.error.code).toBe("invalid_access_token")
    // Signed out, the CLI is back to autonomous mode.
    expect((await u.cli("credentials", "list", "--json")).code).toBe(0)
    const [latest] = (await requestLog()).filter((r) => r.path.startsWith("/api/v3/credentials"))
    expect(latest!.administrator_id).toBeNull()
  })

  it("a session revoked elsewhere fails with the token endpoint's error and a hint to log in again, never falling back to autonomous mode", async () => {
    const u = await signedIn()
    const revoked = await fetch(`${h.baseUrl}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: tokensOf(u).access_token }).toString()
    })
    expect(revoked.status).toBe(200)
    const res = await u.cli("credentials", "list", "--json")
    expect(res.code).not.toBe(0)
    expect(res.stdout).toBe("")
    expect(res.stderr).toMatch(/^invalid_grant: .*syllabus login/m)
  })

  // These move the server's clock: keep them last.
  describe("refresh (access tokens live 1 h)", () => {
    /** Request-log entries of /credentials made by `action`. */
    const credentialCallsDuring = async (action: () => Promise<unknown>) => {
      const before = new Set((await requestLog()).map((r) => r.id))
      await action()
      return (await requestLog()).filter((r) => !before.has(r.id) && r.path.startsWith("/api/v3/credentials"))
    }

    it("when the server answers 401 invalid_access_token, the CLI refreshes, stores the rotated pair (0600) and retries as the administrator", async () => {
      const u = await signedIn()
      const before = tokensOf(u)
      h.advance(3601_000)
      clockOffsetMs += 3601_000
      let res = { code: -1, stderr: "" }
      const calls = await credentialCallsDuring(async () => (res = await u.cli("credentials", "list", "--json")))
      expect(res.code, res.stderr).toBe(0)
      // (The rejected first try is not in the log: the request log keeps authenticated calls.)
      expect(calls.map((c) => [c.status, c.administrator_id])).toEqual([[200, h.account.administrator.id]])
      const after = tokensOf(u)
      expect(after.access_token).not.toBe(before.access_token)
      expect(after.refresh_token).not.toBe(before.refresh_token)
      expect(mode(join(u.dir, "tokens.json"))).toBe(0o600)
    })

    it("when the access token's lifetime has passed on the CLI's clock, it refreshes before calling, even if the server would still accept it", async () => {
      const u = await signedIn()
      const before = tokensOf(u)
      u.advance(3601_000)
      let res = { code: -1, stderr: "" }
      const calls = await credentialCallsDuring(async () => (res = await u.cli("credentials", "list", "--json")))
      expect(res.code, res.stderr).toBe(0)
      expect(calls.map((c) => [c.status, c.administrator_id])).toEqual([[200, h.account.administrator.id]])
      const after = tokensOf(u)
      expect(after.refresh_token).not.toBe(before.refresh_token)
      // The stored access token is the new one, and it works.
      const current = await h.request("GET", "/api/v3/credentials/current", {
        headers: { "x-api-key": h.live, authorization: `Bearer ${after.access_token}` }
      })
      expect(current.status).toBe(200)
    })
  })
})
