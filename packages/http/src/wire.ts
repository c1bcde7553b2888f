/**
 * The byte-level rules of §1 and §7 that come before any schema: content negotiation, the
 * 1 MiB body cap (also for chunked bodies), strict UTF-8, JSON syntax, object-only bodies
 * and nesting depth.
 */
import { type ApiError, apiError, type Json } from "@syllabus/core"
import { Effect, Option, Stream } from "effect"
import type { HttpServerRequest } from "@effect/platform/HttpServerRequest"

export const MAX_BODY_BYTES = 1024 * 1024
export const MAX_JSON_DEPTH = 16
/** How long a JSON body may take to arrive, from the moment it is read (after authentication). */
export const BODY_TIMEOUT_MS = 15_000
/** How long an upload part (at most 8 MiB, streamed to storage) may take to arrive. */
export const PART_BODY_TIMEOUT_MS = 120_000

/** Does an `Accept` header allow `mediaType` (JSON by default)? Absent allows anything. */
export const accepts = (accept: string | undefined, mediaType = "application/json"): boolean => {
  if (accept === undefined || accept.trim() === "") return true
  const [major] = mediaType.split("/")
  return accept.split(",").some((part) => {
    const [range, ...params] = part.trim().toLowerCase().split(";")
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="))
    if (q !== undefined && Number(q.slice(2)) === 0) return false
    const type = range?.trim()
    return (
      type === mediaType ||
      type === `${major}/*` ||
      type === "*/*" ||
      (mediaType === "application/json" && (type?.endsWith("+json") ?? false))
    )
  })
}

export const acceptsJson = (accept: string | undefined): boolean => accepts(accept)

/** Is a `Content-Type` JSON (`application/json`, optionally with a UTF-8 charset)? */
export const isJsonContentType = (contentType: string): boolean => {
  const [type, ...params] = contentType.toLowerCase().split(";")
  if (type?.trim() !== "application/json") return false
  return params.every((p) => {
    const [name, value] = p.trim().split("=")
    return name !== "charset" || value?.replace(/"/g, "") === "utf-8"
  })
}

/**
 * Over the cap the answer goes out at once. The connection is not closed with it (a client still
 * sending would see a reset instead of the 413): on Node the edge (`node-edge.ts`) reads and
 * discards a bounded amount of what is left, then closes.
 */
const tooLarge = apiError("payload_too_large")

/** A body that did not arrive in time: 408, and the edge closes the connection after a short drain. */
const bodyTimeout = apiError("http_error", { reason: "body_timeout", statusOverride: 408 })

const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array | undefined => {
  if (size === 0) return undefined
  const out = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}

/** The Node request under a platform request, when there is one. */
interface NodeSource {
  pause(): unknown
  on(event: "data", listener: (chunk: Buffer) => void): unknown
  on(event: "end" | "close", listener: () => void): unknown
  on(event: "error", listener: (error: unknown) => void): unknown
  off(event: string, listener: (...args: Array<never>) => void): unknown
  resume(): unknown
}
const nodeSourceOf = (request: HttpServerRequest): NodeSource | undefined => {
  const source = request.source as Partial<NodeSource> | undefined
  return source && typeof source.on === "function" && typeof source.resume === "function" && typeof source.pause === "function"
    ? (source as NodeSource)
    : undefined
}

/**
 * Read a Node body without destroying the request when it is too large (destroying it would
 * reset the connection before the 413 is written): past the cap, stop keeping the bytes and
 * let Node discard the rest.
 */
const readNodeBody = (source: NodeSource) =>
  Effect.async<Uint8Array | undefined, ApiError>((resume) => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    const detach = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength
      if (size > MAX_BODY_BYTES) {
        detach()
        source.resume()
        resume(Effect.fail(tooLarge))
      } else chunks.push(chunk)
    }
    const onEnd = () => {
      detach()
      resume(Effect.succeed(concat(chunks, size)))
    }
    const onError = (error: unknown) => {
      detach()
      resume(Effect.fail(apiError("malformed_json", { internal: error })))
    }
    source.on("data", onData)
    source.on("end", onEnd)
    source.on("error", onError)
    return Effect.sync(detach)
  })

/**
 * The body as a stream, for operations that take raw bytes (upload parts), read only after
 * authentication. On Node it pauses the request while the consumer is busy (so memory stays
 * flat), and stopping early does not destroy the request: the answer (a 413, say) still reaches
 * the client. The whole body must arrive within `timeoutMs` (408 `http_error`, reason `body_timeout`).
 */
export const bodyStream = (
  request: HttpServerRequest,
  timeoutMs: number = PART_BODY_TIMEOUT_MS
): Stream.Stream<Uint8Array, ApiError<"http_error">> =>
  Stream.interruptWhen(nodeOrWebStream(request), Effect.delay(Effect.fail(bodyTimeout), timeoutMs))

const nodeOrWebStream = (request: HttpServerRequest): Stream.Stream<Uint8Array, ApiError<"http_error">> => {
  const node = nodeSourceOf(request)
  if (!node) return Stream.mapError(request.stream, (e) => apiError("http_error", { reason: "body_unreadable", internal: e }))
  return Stream.async<Uint8Array, ApiError<"http_error">>(
    (emit) => {
      const onData = (chunk: Buffer) => {
        node.pause()
        void emit.single(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)).then(() => node.resume())
      }
      const onEnd = () => void emit.end()
      const onError = (error: unknown) => void emit.fail(apiError("http_error", { reason: "body_unreadable", internal: error }))
      node.on("data", onData)
      node.on("end", onEnd)
      node.on("error", onError)
      return Effect.sync(() => {
        node.off("data", onData)
        node.off("end", onEnd)
        node.off("error", onError)
        node.resume()
      })
    },
    { bufferSize: 4, strategy: "suspend" }
  )
}

/**
 * Does the request carry a body? Its framing says so on Node (Content-Length or
 * Transfer-Encoding); a web `Request` (the fetch handler) has no Content-Length of its own, so
 * there it is whether it has a body stream.
 */
export const hasBody = (request: HttpServerRequest): boolean => {
  const length = request.headers["content-length"]
  if (request.headers["transfer-encoding"] !== undefined) return true
  if (length !== undefined) return length.trim() !== "0"
  if (nodeSourceOf(request)) return false
  const web = request.source as { readonly body?: unknown } | undefined
  return web !== undefined && web !== null && web.body !== null && web.body !== undefined
}

/**
 * Read the body, refusing more than 1 MiB however it is framed, within `timeoutMs` (408
 * `http_error`, reason `body_timeout`). The pipeline calls it only once the caller is
 * authenticated and admitted by the rate limits.
 */
export const readBody = (
  request: HttpServerRequest,
  timeoutMs: number = BODY_TIMEOUT_MS
): Effect.Effect<Uint8Array | undefined, ApiError> => {
  if (!hasBody(request)) return Effect.succeed(undefined)
  const length = request.headers["content-length"]
  if (length !== undefined && Number(length) > MAX_BODY_BYTES) return Effect.fail(tooLarge)
  const node = nodeSourceOf(request)
  const read: Effect.Effect<Uint8Array | undefined, ApiError> = node
    ? readNodeBody(node)
    : Stream.runFoldEffect(request.stream, { chunks: [] as Array<Uint8Array>, size: 0 }, (acc, chunk) => {
      const size = acc.size + chunk.byteLength
      if (size > MAX_BODY_BYTES) return Effect.fail(tooLarge)
      acc.chunks.push(chunk)
      return Effect.succeed({ chunks: acc.chunks, size })
    }).pipe(
      Effect.mapError((e) => (e === tooLarge ? tooLarge : apiError("malformed_json", { internal: e }))),
      Effect.map(({ chunks, size }) => concat(chunks, size))
    )
  // The platform runs an app uninterruptibly (`HttpApp.toHandled`): the read must be marked
  // interruptible for the deadline to stop it.
  return Effect.timeoutFail(Effect.interruptible(read), { duration: timeoutMs, onTimeout: () => bodyTimeout })
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false })

/** The deepest nesting of a JSON text, counted without parsing it (so a deep text cannot exhaust the stack). */
export const jsonDepth = (text: string): number => {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91 /* { [ */) {
      depth++
      if (depth > max) max = depth
    } else if (c === 125 || c === 93 /* } ] */) depth--
  }
  return max
}

/** Decode and parse a JSON body: UTF-8, depth, syntax, and an object at the top. */
export const parseJsonBody = (bytes: Uint8Array): Effect.Effect<{ readonly [key: string]: Json }, ApiError> =>
  Effect.gen(function* () {
    const text = yield* Effect.try({ try: () => utf8.decode(bytes), catch: () => apiError("invalid_utf8") })
    if (jsonDepth(text) > MAX_JSON_DEPTH) return yield* Effect.fail(apiError("json_too_deep"))
    const value = yield* Effect.try({ try: () => JSON.parse(text) as Json, catch: () => apiError("malformed_json") })
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      return yield* Effect.fail(apiError("malformed_json"))
    }
    return value as { readonly [key: string]: Json }
  })

/** The client's address, for the origin rate limit. */
export const originOf = (request: HttpServerRequest): string => Option.getOrElse(request.remoteAddress, () => "unknown")
