/**
 * The Node edge: what happens on the socket around the app, where no Effect program runs.
 *
 * - Node's own answers (a request its parser refuses: duplicate Content-Length, Content-Length
 *   with Transfer-Encoding, a bad chunk, an unknown method, a control character in the path,
 *   headers or URL over 16 KiB, the request timeout) speak the envelope of §7: `clientError`.
 * - Timeouts sized for JSON: headers, the whole request (a backstop behind the wire's body
 *   deadlines), idle keep-alive.
 * - Caps on unfinished requests (received, not yet answered) per client address and in total:
 *   past them, 503 `http_error` with `Retry-After`, before the app runs.
 * - A body the answer did not need (a 401 before it was read, a 413 over the cap, a 503 past a
 *   cap) is read and discarded up to a bound, so a client still sending reads its answer
 *   instead of a reset; past the bound the connection is closed.
 *
 * `nodeEdge` wraps a listener; `embed.ts` (`makeNodeListener`, `makeNodeEdge`) and the
 * standalone server use it. See docs/reliability.md ("Hostile clients").
 */
import { apiError, formatId, negotiateLanguage, nextIdNumber } from "@syllabus/core"
import { randomInt } from "node:crypto"
import { type IncomingMessage, type Server, type ServerOptions, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { errorBody, languageHeaders } from "./envelope.js"
import { RELEASE } from "./services.js"

export interface EdgeLimits {
  /** Node's `headersTimeout`: the request line and headers must arrive within it (408 after). */
  readonly headersTimeoutMs: number
  /**
   * Node's `requestTimeout`: the whole request must arrive within it (408 after). A backstop
   * only: the wire's deadlines (a JSON body 15 s, an upload part 120 s, from the moment the
   * body is read) come first, so it is longer than the longest of them.
   */
  readonly requestTimeoutMs: number
  /** Node's `keepAliveTimeout`: how long an idle connection waits for its next request. */
  readonly keepAliveTimeoutMs: number
  /** Unfinished requests (received, not yet answered) of one client address. */
  readonly maxUnfinishedPerOrigin: number
  /** Unfinished requests of all clients. */
  readonly maxUnfinished: number
  /** After an answer that did not need the rest of the body: at most this much is read and discarded… */
  readonly drainBytes: number
  /** …for at most this long, then the connection is closed. */
  readonly drainMs: number
  /** The `Retry-After` of a 503 past a cap. */
  readonly retryAfterSeconds: number
}

export const defaultEdgeLimits: EdgeLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 150_000,
  keepAliveTimeoutMs: 5_000,
  maxUnfinishedPerOrigin: 64,
  maxUnfinished: 256,
  drainBytes: 4 * 1024 * 1024,
  drainMs: 2_000,
  retryAfterSeconds: 1
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void
type ClientErrorHandler = (error: Error & { readonly code?: string }, socket: Duplex) => void

export interface NodeEdge {
  /** The guarded listener: for `http.createServer(options, listener)` or a path of a host server. */
  readonly listener: Listener
  /** For `server.on("clientError", clientError)`; `attach` does it. */
  readonly clientError: ClientErrorHandler
  /**
   * Options for `http.createServer`: the timeouts, checked every second (Node's interval is
   * 30 s otherwise, and cannot be changed after the server is made), and 16 KiB of headers.
   */
  readonly serverOptions: ServerOptions
  /** Set the timeouts on an existing server and answer its parser errors with the envelope. */
  readonly attach: (server: Server) => void
}

// ---------------------------------------------------------------------------------------
// Answers written outside the app

let lastRequestNumber = 0
/** A request ID (`req_…`) for an answer the app never sees; it is not recorded anywhere. */
const edgeRequestId = (): string => {
  lastRequestNumber = nextIdNumber(Date.now(), lastRequestNumber, randomInt(4096))
  return formatId("request", lastRequestNumber)
}

const envelope = (status: number, reason: string, acceptLanguage: string | undefined) => {
  const requestId = edgeRequestId()
  const language = negotiateLanguage(acceptLanguage)
  const body = JSON.stringify(errorBody(apiError("http_error", { reason }), requestId, language))
  return {
    body,
    headers: {
      ...languageHeaders(language),
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      "x-request-id": requestId,
      "x-service-release": RELEASE
    }
  }
}

const answer = (req: IncomingMessage, res: ServerResponse, status: number, reason: string, extra: Record<string, string> = {}) => {
  const { body, headers } = envelope(status, reason, req.headers["accept-language"])
  res.writeHead(status, { ...headers, ...extra })
  res.end(body)
}

/** Node's parser failures, as the status and reason of an `http_error`; any other `HPE_` code is a 400. */
const parserFailures: Readonly<Record<string, { readonly status: number; readonly reason: string }>> = {
  HPE_HEADER_OVERFLOW: { status: 431, reason: "headers_too_large" },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, reason: "chunk_extensions_too_large" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: "request_timeout" },
  HPE_INVALID_METHOD: { status: 400, reason: "invalid_method" },
  HPE_INVALID_URL: { status: 400, reason: "invalid_url" },
  HPE_INVALID_VERSION: { status: 400, reason: "invalid_version" },
  HPE_INVALID_HEADER_TOKEN: { status: 400, reason: "invalid_header" },
  HPE_UNEXPECTED_CONTENT_LENGTH: { status: 400, reason: "invalid_content_length" },
  HPE_INVALID_CONTENT_LENGTH: { status: 400, reason: "invalid_content_length" },
  HPE_INVALID_TRANSFER_ENCODING: { status: 400, reason: "invalid_transfer_encoding" },
  HPE_INVALID_CHUNK_SIZE: { status: 400, reason: "invalid_chunk" }
}

/** How long a socket refused by `clientError` stays open after its answer, for the client to read it. */
const CLIENT_ERROR_LINGER_MS = 1_000

/**
 * `server.on("clientError", clientErrorHandler)`: a request Node's parser refuses (or that
 * timed out) gets the envelope of §7, `http_error` with the status of the condition (400, 408,
 * 413, 431) and a reason naming it, with `X-Request-Id`, `X-Service-Release` and
 * `Connection: close`; the socket is then closed (once the client closes its side, or after a
 * second). A socket that cannot be written to, one whose answer has already begun, and any
 * error that is not the parser's (a reset, say) are just destroyed.
 */
export const clientErrorHandler: ClientErrorHandler = (error, socket) => {
  const code = error.code ?? ""
  const failure = parserFailures[code] ?? (code.startsWith("HPE_") ? { status: 400, reason: "malformed_request" } : undefined)
  const inFlight = (socket as Duplex & { readonly _httpMessage?: { readonly headersSent?: boolean } | null })._httpMessage
  if (failure === undefined || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy()
    return
  }
  const { body, headers } = envelope(failure.status, failure.reason, undefined)
  const head = Object.entries({ ...headers, connection: "close" })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("")
  socket.end(`HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status] ?? "Error"}\r\n${head}\r\n${body}`)
  const destroy = () => socket.destroy()
  socket.once("end", destroy)
  setTimeout(destroy, CLIENT_ERROR_LINGER_MS).unref()
}

// ---------------------------------------------------------------------------------------
// After an early answer

/**
 * The answer is written and the request's body has not all arrived: read and discard up to
 * `drainBytes` of it for up to `drainMs`, then close. A body that ends within the bound leaves
 * the connection open for the next request. Runs before Node's own end-of-response step, so
 * that Node does not start discarding the body itself (it would, without a bound).
 */
const drainUnread = (req: IncomingMessage, limits: EdgeLimits) => {
  let seen = 0
  const done = () => {
    clearTimeout(timer)
    req.off("data", onData)
    req.off("end", done)
    req.off("close", done)
  }
  const cut = () => {
    done()
    req.socket.destroy()
  }
  const onData = (chunk: Buffer) => {
    seen += chunk.byteLength
    if (seen > limits.drainBytes) cut()
  }
  const timer = setTimeout(cut, limits.drainMs)
  timer.unref()
  req.on("data", onData)
  req.once("end", done)
  req.once("close", done)
  req.resume()
}

// ---------------------------------------------------------------------------------------
// The edge

/** Wrap `listener` with the caps on unfinished requests and the bounded drain of unread bodies. */
export const nodeEdge = (listener: Listener, overrides: Partial<EdgeLimits> = {}): NodeEdge => {
  const limits: EdgeLimits = { ...defaultEdgeLimits, ...overrides }
  /** Unfinished requests, by their response, with the address they came from. */
  const unfinished = new Map<ServerResponse, string>()
  const byOrigin = new Map<string, number>()
  const forget = (res: ServerResponse) => {
    const origin = unfinished.get(res)
    if (origin === undefined) return
    unfinished.delete(res)
    const left = (byOrigin.get(origin) ?? 1) - 1
    if (left <= 0) byOrigin.delete(origin)
    else byOrigin.set(origin, left)
  }
  /** A request whose answer has begun (an event stream, say) is no longer unfinished. */
  const prune = () => {
    for (const res of unfinished.keys()) if (res.headersSent) forget(res)
  }

  const guarded: Listener = (req, res) => {
    res.prependOnceListener("finish", () => {
      if (!req.complete) drainUnread(req, limits)
    })
    if (req.httpVersion === "1.1" && req.headers.host === undefined) {
      return answer(req, res, 400, "missing_host", { connection: "close" })
    }
    const origin = req.socket.remoteAddress ?? "unknown"
    const atCap = () =>
      unfinished.size >= limits.maxUnfinished
        ? "too_many_unfinished_requests"
        : (byOrigin.get(origin) ?? 0) >= limits.maxUnfinishedPerOrigin
          ? "too_many_unfinished_requests_from_origin"
          : undefined
    if (atCap() !== undefined) prune()
    const refused = atCap()
    if (refused !== undefined) return answer(req, res, 503, refused, { "retry-after": String(limits.retryAfterSeconds) })
    unfinished.set(res, origin)
    byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + 1)
    res.once("close", () => forget(res))
    listener(req, res)
  }

  const serverOptions: ServerOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    maxHeaderSize: 16 * 1024
  }

  return {
    listener: guarded,
    clientError: clientErrorHandler,
    serverOptions,
    attach: (server) => {
      server.headersTimeout = limits.headersTimeoutMs
      server.requestTimeout = limits.requestTimeoutMs
      server.keepAliveTimeout = limits.keepAliveTimeoutMs
      server.on("clientError", clientErrorHandler)
    }
  }
}
