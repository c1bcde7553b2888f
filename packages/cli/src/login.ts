/**
 * `login` and `logout` (§5.2): discovery, PKCE S256, a loopback listener for the redirect,
 * the checks of `state` and `iss`, the code exchange, and revocation.
 */
import { Deferred, Effect, Exit, Option, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { CliContext, CliError, err } from "./context.js"
import { CLIENT_ID, postForm, requestTokens, send } from "./http.js"
import { deleteTokens, loadConfig, loadTokens, saveTokens } from "./store.js"

const Metadata = Schema.Struct({
  issuer: Schema.String,
  authorization_endpoint: Schema.String,
  token_endpoint: Schema.String,
  revocation_endpoint: Schema.String,
  code_challenge_methods_supported: Schema.Array(Schema.String)
})
type Metadata = typeof Metadata.Type

/** RFC 8414 discovery at `<base-url>/.well-known/oauth-authorization-server`. */
const discover = (baseUrl: string) =>
  Effect.gen(function* () {
    const result = yield* send(`${baseUrl.replace(/\/+$/, "")}/.well-known/oauth-authorization-server`, { headers: { accept: "application/json" } })
    const metadata = yield* Schema.decodeUnknown(Metadata)(result.body).pipe(
      Effect.mapError(() => new CliError({ code: "discovery_failed", message: `no authorization server metadata at ${baseUrl} (status ${result.status})` }))
    )
    if (!metadata.code_challenge_methods_supported.includes("S256")) {
      return yield* Effect.fail(new CliError({ code: "discovery_failed", message: "the authorization server does not support PKCE S256" }))
    }
    return metadata
  })

const randomToken = (bytes: number) => randomBytes(bytes).toString("base64url")

/** PKCE (RFC 7636): a 43-character verifier and its S256 challenge. */
const pkce = () => {
  const verifier = randomToken(32)
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

// ---------------------------------------------------------------------------------------
// The loopback listener

const page = (title: string, message: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto">
<h1>${title}</h1><p>${message}</p></body></html>
`

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c)

/** What the redirect back brings: a code to exchange, or why there is none. */
const checkCallback = (params: URLSearchParams, expected: { readonly state: string; readonly issuer: string }): Exit.Exit<string, CliError> => {
  if (params.get("state") !== expected.state) {
    return Exit.fail(new CliError({ code: "state_mismatch", message: "the sign-in answer does not belong to this login; nothing was stored" }))
  }
  if (params.get("iss") !== expected.issuer) {
    return Exit.fail(new CliError({ code: "issuer_mismatch", message: `the sign-in answer comes from another issuer than ${expected.issuer}; nothing was stored` }))
  }
  const error = params.get("error")
  if (error !== null) {
    const reason = params.get("error_reason")
    const description = params.get("error_description") ?? (error === "access_denied" && reason === null ? "access was denied" : error)
    return Exit.fail(new CliError({ code: reason ?? error, message: description }))
  }
  const code = params.get("code")
  return code ? Exit.succeed(code) : Exit.fail(new CliError({ code: "invalid_callback", message: "the sign-in answer has no code" }))
}

/** Listen on `127.0.0.1:<free port>`; the first request to `/callback` decides. */
const loopback = (expected: { readonly state: string; readonly issuer: string }) =>
  Effect.gen(function* () {
    const outcome = yield* Deferred.make<string, CliError>()
    const handle = (req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1")
      if (url.pathname !== "/callback") {
        res.writeHead(404, { "content-type": "text/html; charset=utf-8" }).end(page("Not found", "This address only receives the sign-in answer."))
        return
      }
      const exit = checkCallback(url.searchParams, expected)
      const html = Exit.match(exit, {
        onSuccess: () => page("Signed in", "You can close this window and go back to the terminal."),
        onFailure: (cause) => {
          const failure = cause._tag === "Fail" ? cause.error : undefined
          return page("Sign-in failed", escapeHtml(failure ? `${failure.code}: ${failure.message}` : "unexpected error"))
        }
      })
      res.writeHead(Exit.isSuccess(exit) ? 200 : 400, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(html)
      Deferred.unsafeDone(outcome, exit)
    }
    const server = yield* Effect.acquireRelease(
      Effect.async<Server, CliError>((resume) => {
        const created = createServer(handle)
        created.once("error", (cause) => resume(Effect.fail(new CliError({ code: "listen_failed", message: cause.message }))))
        created.listen(0, "127.0.0.1", () => resume(Effect.succeed(created)))
      }),
      (created) =>
        Effect.async<void>((resume) => {
          created.close(() => resume(Effect.void))
          created.closeAllConnections()
        })
    )
    const port = (server.address() as AddressInfo).port
    return { redirectUri: `http://127.0.0.1:${port}/callback`, code: Deferred.await(outcome) }
  })

// ---------------------------------------------------------------------------------------
// The commands

/**
 * Sign-in refuses an administrator without a second factor (`error_reason=mfa_required` on
 * the redirect back): say how to turn one on, which only the API can do.
 */
const MFA_HINT = [
  "Turn on two-factor authentication for the administrator first, with an API key that may update administrators:",
  "  1. syllabus get /administrators                      (find the administrator's ID, adm_…)",
  "  2. syllabus post /administrators/adm_…/two-factor-enrollments",
  "     and add the `secret` it shows once (or its `otpauth_uri`, as a QR code) to an authenticator app;",
  "  3. syllabus post /administrators/adm_…/two-factor-enrollments/confirmations -d code=<6 digits from the app>",
  "Then run `syllabus login` again."
].join("\n")

const withHint = (error: CliError) =>
  error.code === "mfa_required" ? new CliError({ code: error.code, message: `${error.message}\n${MFA_HINT}` }) : error

export interface LoginOptions {
  readonly platform: Option.Option<string>
  readonly openBrowser: boolean
}

export const login = (options: LoginOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const { io } = yield* CliContext
      const config = yield* loadConfig
      const metadata: Metadata = yield* discover(config.base_url)
      const { verifier, challenge } = pkce()
      const state = randomToken(16)
      const listener = yield* loopback({ state, issuer: metadata.issuer })
      const authorize = new URL(metadata.authorization_endpoint)
      const query: Record<string, string> = {
        response_type: "code",
        client_id: CLIENT_ID,
        redirect_uri: listener.redirectUri,
        code_challenge: challenge,
        code_challenge_method: "S256",
        state
      }
      for (const [name, value] of Object.entries(query)) authorize.searchParams.set(name, value)
      if (Option.isSome(options.platform)) authorize.searchParams.set("platform", options.platform.value)
      yield* err(`Open this address in your browser to sign in:\n\n  ${authorize.toString()}\n\nWaiting for the sign-in to finish…\n`)
      if (options.openBrowser) io.openBrowser(authorize.toString())
      const code = yield* listener.code.pipe(
        Effect.mapError(withHint),
        Effect.timeoutFail({
          duration: "10 minutes",
          onTimeout: () => new CliError({ code: "login_timeout", message: "no sign-in within 10 minutes" })
        })
      )
      const tokens = yield* requestTokens(metadata, {
        grant_type: "authorization_code",
        client_id: CLIENT_ID,
        code,
        code_verifier: verifier,
        redirect_uri: listener.redirectUri
      })
      yield* saveTokens(tokens)
      yield* err("Signed in. Calls now act for you (human mode).\n")
    })
  )

/** Revoke the pair (revoking one token of a pair revokes both) and forget it. */
export const logout = Effect.gen(function* () {
  const tokens = yield* loadTokens
  if (Option.isNone(tokens)) return yield* err("Not signed in.\n")
  const result = yield* postForm(tokens.value.revocation_endpoint, { token: tokens.value.refresh_token, client_id: CLIENT_ID })
  if (result.status !== 200) {
    return yield* Effect.fail(new CliError({ code: "revocation_failed", message: `the server answered ${result.status}; the tokens were kept` }))
  }
  yield* deleteTokens
  yield* err("Signed out.\n")
})
