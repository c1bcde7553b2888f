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
  readonly headers: Headers
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
      return { status: res.status, body: parse(await res.text()), headers: res.headers }
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
// Error bodies: the API's envelope (§7), with its details, and OAuth's `{ error, error_description }`

const Detail = Schema.Struct({
  field: Schema.optional(Schema.String),
  parameter: Schema.optional(Schema.String),
  code: Schema.String,
  message: Schema.optional(Schema.String),
  reason: Schema.optional(Schema.String)
})
const ApiErrorBody = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    reason: Schema.optional(Schema.String),
    details: Schema.optional(Schema.Array(Detail))
  })
})
const OAuthErrorBody = Schema.Struct({ error: Schema.String, error_description: Schema.optional(Schema.String) })

const withReason = (text: string, reason: string | undefined) => (reason === undefined ? text : `${text} (reason: ${reason})`)

/**
 * The envelope as `message (reason: …)`, then one line per itemized problem:
 * `  field: code (reason: …): message`. A detail's message that the top message already
 * carries (the server repeats a single problem there) is not printed twice.
 */
const describeApiError = ({ message, reason, details = [] }: typeof ApiErrorBody.Type["error"]) =>
  withReason(message, reason) +
  details
    .map((d) => {
      const said = d.message === undefined || d.message === "" || message.includes(d.message)
      return `\n  ${withReason(`${d.field ?? d.parameter ?? "-"}: ${d.code}`, d.reason)}${said ? "" : `: ${d.message}`}`
    })
    .join("")

export const errorOf = (result: Pick<HttpResult, "status" | "body">): CliError => {
  const api = Schema.decodeUnknownOption(ApiErrorBody)(result.body)
  if (Option.isSome(api)) return new CliError({ code: api.value.error.code, message: describeApiError(api.value.error) })
  const oauth = Schema.decodeUnknownOption(OAuthErrorBody)(result.body)
  if (Option.isSome(oauth)) return new CliError({ code: oauth.value.error, message: oauth.value.error_description ?? oauth.value.error })
  return new CliError({ code: "http_error", message: `the server answered ${result.status}` })
}

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

export const apiUrl = (config: Config, path: string) => `${config.base_url.replace(/\/+$/, "")}/api/v3${path}`

/** The headers that authenticate a call: §5.1 without tokens, §5.2 with them. */
const authHeaders = (config: Config, tokens: Option.Option<Tokens>): Record<string, string> =>
  Option.match(tokens, {
    // §5.1: the credential's secret as bearer.
    onNone: () => ({ authorization: `Bearer ${config.api_key}` }),
    // §5.2: the credential in X-API-Key, the administrator's access token as bearer.
    onSome: ({ access_token }) => ({ "x-api-key": config.api_key, authorization: `Bearer ${access_token}` })
  })

/** What the server answered before its body is read (a streamed answer keeps its body open). */
interface Answered {
  readonly status: number
  /** The parsed JSON body of an error answer, to recognize `invalid_access_token`. */
  readonly errorBody: unknown
}

/**
 * Send a request with the configuration's credentials, in human mode when signed in (else
 * autonomous), refreshing the access token before when its lifetime has passed on our clock,
 * and once more when the server answers 401 `invalid_access_token`.
 */
const authorized = <A extends Answered>(attempt: (config: Config, auth: Record<string, string>) => Effect.Effect<A, CliError>) =>
  Effect.gen(function* () {
    const config = yield* loadConfig
    let tokens = yield* loadTokens
    if (Option.isSome(tokens) && tokens.value.expires_at <= (yield* Clock.currentTimeMillis)) {
      tokens = Option.some(yield* refresh(tokens.value))
    }
    let result = yield* attempt(config, authHeaders(config, tokens))
    if (Option.isSome(tokens) && result.status === 401 && errorOf({ status: 401, body: result.errorBody }).code === "invalid_access_token") {
      tokens = Option.some(yield* refresh(tokens.value))
      result = yield* attempt(config, authHeaders(config, tokens))
    }
    return result
  })

export interface ApiRequest {
  readonly method: string
  /** Under `/api/v3`, with its query string if any. */
  readonly path: string
  /** A JSON body. */
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string>>
}

/** Call the API and answer whatever it answered (status, headers, parsed body), errors included. */
export const call = (request: ApiRequest) =>
  authorized((config, auth) =>
    send(apiUrl(config, request.path), {
      method: request.method,
      headers: {
        accept: "application/json",
        ...(request.body !== undefined ? { "content-type": "application/json" } : {}),
        ...request.headers,
        ...auth
      },
      ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {})
    }).pipe(Effect.map((result) => ({ ...result, errorBody: result.body })))
  )

/** Call the API and answer the parsed body of a success; an error answer fails with its `error.code` and message. */
export const api = (method: string, path: string, options: Omit<ApiRequest, "method" | "path"> = {}) =>
  Effect.flatMap(call({ method, path, ...options }), (result) => (result.status >= 400 ? Effect.fail(errorOf(result)) : Effect.succeed(result.body)))

/**
 * Open a streamed answer (`Accept: text/event-stream`) in the current scope: closing the
 * scope closes the connection. An error answer fails with its code and message.
 */
export const openStream = (path: string, headers: Readonly<Record<string, string>> = {}) =>
  Effect.gen(function* () {
    const controller = yield* Effect.acquireRelease(
      Effect.sync(() => new AbortController()),
      (c) => Effect.sync(() => c.abort())
    )
    const opened = yield* authorized((config, auth) =>
      Effect.tryPromise({
        try: async () => {
          const res = await fetch(apiUrl(config, path), {
            headers: { accept: "text/event-stream", ...headers, ...auth },
            signal: controller.signal
          })
          const errorBody = res.status >= 400 ? parse(await res.text()) : undefined
          return { status: res.status, errorBody, response: res }
        },
        catch: (cause) => new CliError({ code: "network_error", message: `${path}: ${cause instanceof Error ? cause.message : String(cause)}` })
      })
    )
    if (opened.status >= 400) return yield* Effect.fail(errorOf({ status: opened.status, body: opened.errorBody }))
    return opened.response
  })
