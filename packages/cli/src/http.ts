/**
 * Talking to the server: the OAuth endpoints (token, revocation) and the API in both modes
 * (§5.1 autonomous, §5.2 human), refreshing the access token when it has expired.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { CliError } from "./context.js"
import { type Config, loadConfig, loadTokens, saveTokens, type Tokens } from "./store.js"

export interface HttpResult {
  readonly status: number
  /** The parsed JSON body, or `undefined` when the body is empty or not JSON. */
  readonly body: unknown
}

const parse = (text: string): unknown => {
  try {
    return text === "" ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

export const send = (url: string, init: RequestInit) =>
  Effect.tryPromise({
    try: async (signal): Promise<HttpResult> => {
      const res = await fetch(url, { ...init, signal })
      return { status: res.status, body: parse(await res.text()) }
    },
    catch: (cause) => new CliError({ code: "network_error", message: `${url}: ${cause instanceof Error ? cause.message : String(cause)}` })
  })

export const postForm = (url: string, form: Record<string, string>) =>
  send(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams(form).toString()
  })

// ---------------------------------------------------------------------------------------
// Error bodies: the API's envelope (§7) and OAuth's `{ error, error_description }`

const ApiErrorBody = Schema.Struct({ error: Schema.Struct({ code: Schema.String, message: Schema.String }) })
const OAuthErrorBody = Schema.Struct({ error: Schema.String, error_description: Schema.optional(Schema.String) })

export const errorOf = (result: HttpResult): CliError => {
  const api = Schema.decodeUnknownOption(ApiErrorBody)(result.body)
  if (Option.isSome(api)) return new CliError(api.value.error)
  const oauth = Schema.decodeUnknownOption(OAuthErrorBody)(result.body)
  if (Option.isSome(oauth)) return new CliError({ code: oauth.value.error, message: oauth.value.error_description ?? oauth.value.error })
  return new CliError({ code: "http_error", message: `the server answered ${result.status}` })
}

const errorCode = (result: HttpResult) => errorOf(result).code

// ---------------------------------------------------------------------------------------
// Tokens

const TokenResponse = Schema.Struct({
  token_type: Schema.String,
  access_token: Schema.String,
  refresh_token: Schema.String,
  expires_in: Schema.Number
})

/** POST to the token endpoint; the answer as the tokens to store. */
export const requestTokens = (
  endpoints: Pick<Tokens, "issuer" | "token_endpoint" | "revocation_endpoint">,
  form: Record<string, string>
) =>
  Effect.gen(function* () {
    const result = yield* postForm(endpoints.token_endpoint, form)
    if (result.status !== 200) return yield* Effect.fail(errorOf(result))
    const tokens = yield* Schema.decodeUnknown(TokenResponse)(result.body).pipe(
      Effect.mapError(() => new CliError({ code: "invalid_token_response", message: "the token endpoint answered an unexpected body" }))
    )
    const now = yield* Clock.currentTimeMillis
    const stored: Tokens = {
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token,
      expires_at: now + tokens.expires_in * 1000,
      issuer: endpoints.issuer,
      token_endpoint: endpoints.token_endpoint,
      revocation_endpoint: endpoints.revocation_endpoint
    }
    return stored
  })

/** Exchange the refresh token for a new pair (rotation) and store it. */
const refresh = (tokens: Tokens) =>
  requestTokens(tokens, { grant_type: "refresh_token", client_id: CLIENT_ID, refresh_token: tokens.refresh_token }).pipe(
    Effect.mapError(
      (error) => new CliError({ code: error.code, message: `${error.message} (the session has ended: run \`syllabus login\` again)` })
    ),
    Effect.tap(saveTokens)
  )

export const CLIENT_ID = "service-cli"

// ---------------------------------------------------------------------------------------
// The API

const apiUrl = (config: Config, path: string) => `${config.base_url.replace(/\/+$/, "")}/api/v3${path}`

const sendApi = (config: Config, method: string, path: string, tokens: Option.Option<Tokens>) =>
  send(apiUrl(config, path), {
    method,
    headers: Option.match(tokens, {
      // §5.1: the credential's secret as bearer.
      onNone: () => ({ accept: "application/json", authorization: `Bearer ${config.api_key}` }),
      // §5.2: the credential in X-API-Key, the administrator's access token as bearer.
      onSome: ({ access_token }) => ({ accept: "application/json", "x-api-key": config.api_key, authorization: `Bearer ${access_token}` })
    })
  })

/**
 * Call the API, in human mode when signed in (else autonomous), and answer the parsed body
 * of a success; an error answer fails with its `error.code` and message.
 */
export const api = (method: "GET", path: string) =>
  Effect.gen(function* () {
    const config = yield* loadConfig
    let tokens = yield* loadTokens
    if (Option.isSome(tokens) && tokens.value.expires_at <= (yield* Clock.currentTimeMillis)) {
      tokens = Option.some(yield* refresh(tokens.value))
    }
    let result = yield* sendApi(config, method, path, tokens)
    if (Option.isSome(tokens) && result.status === 401 && errorCode(result) === "invalid_access_token") {
      tokens = Option.some(yield* refresh(tokens.value))
      result = yield* sendApi(config, method, path, tokens)
    }
    if (result.status >= 400) return yield* Effect.fail(errorOf(result))
    return result.body
  })
