/**
 * The HTTP edge, black-box over sockets (docs/reliability.md, "Hostile clients" and "Every
 * response speaks the envelope"):
 * - a request Node's parser refuses is answered in the envelope of §7 (`http_error`), with
 *   `X-Request-Id` and `Connection: close`;
 * - the credential (and the rate limits) come before the body: a client without a valid
 *   credential gets its 401 or 429 without the server waiting for, or holding, its body;
 * - unfinished requests are capped per client address and in total (503 `http_error`, `Retry-After`);
 * - an answer given before the body was read (a 413 over the cap) reaches a client that keeps
 *   streaming, and the connection is closed only past a bound;
 * - bodies and headers have deadlines (408 `http_error`);
 * - the fetch handler reads a body that has no Content-Length.
 */
import { makeFetchHandler } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { Effect, Exit, Scope } from "effect"
import { request as httpRequest } from "node:http"
import { connect, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError } from "../support/expect.js"
import { eachStore, freshKey, type Harness, type Response, stores } from "../support/harness.js"
import { freshPgDatabase } from "../support/pg.js"

const MiB = 1024 * 1024
const RELEASE = "3.4.7"

// ---------------------------------------------------------------------------------------
// A raw socket: bytes exactly as given, one response read back.

interface RawAnswer extends Response {
  /** When the response was complete, in ms since the socket was opened. */
  readonly elapsedMs: number
  /** Resolves `true` when the server closes the connection within `ms`, else `false`. */
  readonly closedWithin: (ms: number) => Promise<boolean>
}

const parseResponse = (raw: Buffer): { status: number; headers: Headers; text: string; complete: boolean } | undefined => {
  const end = raw.indexOf("\r\n\r\n")
  if (end < 0) return undefined
  const [statusLine = "", ...lines] = raw.subarray(0, end).toString("latin1").split("\r\n")
  const headers = new Headers()
  for (const line of lines) {
    const colon = line.indexOf(":")
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  const length = Number(headers.get("content-length") ?? "0")
  const body = raw.subarray(end + 4)
  return { status: Number(statusLine.split(" ")[1]), headers, text: body.subarray(0, length).toString("utf8"), complete: body.length >= length }
}

/**
 * Connect (from `localAddress` when given), let `write` send what it likes (it may go on
 * sending after the answer), and read one response; fails when none is complete in `timeoutMs`.
 */
const exchange = (
  baseUrl: string,
  write: (socket: Socket) => void | Promise<void>,
  options: { readonly localAddress?: string; readonly timeoutMs?: number } = {}
): Promise<RawAnswer> =>
  new Promise<RawAnswer>((resolve, reject) => {
    const url = new URL(baseUrl)
    const started = Date.now()
    const socket = connect({ host: url.hostname, port: Number(url.port), ...(options.localAddress ? { localAddress: options.localAddress } : {}) })
    let received = Buffer.alloc(0)
    let closed = false
    const closeWaiters: Array<() => void> = []
    socket.on("error", () => undefined)
    socket.on("close", () => {
      closed = true
      for (const waiter of closeWaiters) waiter()
    })
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no complete answer within ${options.timeoutMs ?? 5_000} ms (got ${JSON.stringify(received.toString("latin1").slice(0, 200))})`))
    }, options.timeoutMs ?? 5_000)
    let done = false
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      const parsed = parseResponse(received)
      if (done || parsed === undefined || !parsed.complete) return
      done = true
      clearTimeout(timer)
      let body: unknown
      try {
        body = parsed.text === "" ? undefined : JSON.parse(parsed.text)
      } catch {
        body = undefined
      }
      resolve({
        status: parsed.status,
        headers: parsed.headers,
        body,
        text: parsed.text,
        elapsedMs: Date.now() - started,
        closedWithin: (ms) =>
          closed
            ? Promise.resolve(true)
            : new Promise<boolean>((settle) => {
              const giveUp = setTimeout(() => {
                socket.destroy()
                settle(false)
              }, ms)
              closeWaiters.push(() => {
                clearTimeout(giveUp)
                settle(true)
              })
            })
      })
    })
    socket.on("connect", () => {
      Promise.resolve(write(socket)).catch(() => undefined)
    })
  })

/** Send `text` and keep the socket open; `stop()` closes it. */
const hold = (baseUrl: string, text: string, localAddress?: string): Promise<{ readonly stop: () => void }> =>
  new Promise((resolve, reject) => {
    const url = new URL(baseUrl)
    const socket = connect({ host: url.hostname, port: Number(url.port), ...(localAddress ? { localAddress } : {}) })
    socket.on("error", () => undefined)
    socket.on("connect", () => {
      socket.write(text)
      resolve({ stop: () => socket.destroy() })
    })
    socket.once("error", reject)
  })

/** A GET through node:http from a chosen local address (another client address on loopback). */
const getFrom = (baseUrl: string, path: string, headers: Record<string, string>, localAddress: string): Promise<Response> =>
  new Promise((resolve, reject) => {
    const url = new URL(path, baseUrl)
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, headers, localAddress, agent: false }, (res) => {
      const parts: Array<Buffer> = []
      res.on("data", (part: Buffer) => parts.push(part))
      res.on("end", () => {
        const text = Buffer.concat(parts).toString("utf8")
        const responseHeaders = new Headers()
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === "string") responseHeaders.set(name, value)
        let body: unknown
        try {
          body = text === "" ? undefined : JSON.parse(text)
        } catch {
          body = undefined
        }
        resolve({ status: res.statusCode ?? 0, headers: responseHeaders, body, text })
      })
    })
    req.on("error", reject)
    req.end()
  })

interface Upload {
  readonly res: Response
  /** The client's socket error (EPIPE, ECONNRESET), if the connection broke under it. */
  readonly error: string | undefined
  /** Bytes of the body the client handed to its socket before it finished or broke. */
  readonly written: number
}

/**
 * POST `total` bytes over a raw socket in 64 KiB writes (a pause between them: a client
 * streaming at its own pace is still sending when the answer comes), going on whatever the
 * server answers, as a streaming client does; with a Content-Length or chunked. Resolves once
 * the answer is read and the upload has finished (all bytes flushed) or broken.
 */
const streamUpload = (
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  total: number,
  framing: "length" | "chunked",
  pauseMs = 0
): Promise<Upload> =>
  new Promise((resolve, reject) => {
    const url = new URL(baseUrl)
    const socket = connect({ host: url.hostname, port: Number(url.port) })
    let received = Buffer.alloc(0)
    let res: Response | undefined
    let error: string | undefined
    let written = 0
    let uploadOver = false
    const giveUp = setTimeout(() => {
      socket.destroy()
      reject(new Error(`the upload did not settle (answer: ${res?.status}, written ${written}, error ${error})`))
    }, 20_000)
    const settle = () => {
      if (res === undefined || !uploadOver) return
      clearTimeout(giveUp)
      socket.destroy()
      resolve({ res, error, written })
    }
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      const parsed = parseResponse(received)
      if (res !== undefined || parsed === undefined || !parsed.complete) return
      res = { status: parsed.status, headers: parsed.headers, body: JSON.parse(parsed.text), text: parsed.text }
      settle()
    })
    const broken = (e?: NodeJS.ErrnoException) => {
      if (e !== undefined) error ??= e.code ?? e.message
      uploadOver = true
      if (res === undefined && e !== undefined) {
        clearTimeout(giveUp)
        reject(new Error(`the upload broke before any answer (${error})`))
      }
      settle()
    }
    socket.on("error", broken)
    socket.on("close", () => broken())
    const write = (data: string | Buffer) =>
      new Promise<void>((done) => {
        if (socket.destroyed) return done()
        if (socket.write(data)) done()
        else {
          socket.once("drain", done)
          socket.once("close", done)
        }
      })
    const send = async () => {
      await write(
        `POST ${path} HTTP/1.1\r\nHost: edge.test\r\n` +
          Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") +
          (framing === "length" ? `Content-Length: ${total}\r\n` : "Transfer-Encoding: chunked\r\n") +
          "\r\n"
      )
      const chunk = Buffer.alloc(64 * 1024, 0x61)
      while (written < total && !socket.destroyed) {
        const piece = chunk.subarray(0, Math.min(chunk.length, total - written))
        await write(framing === "length" ? piece : Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")]))
        if (!socket.destroyed) written += piece.length
        if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs))
      }
      if (framing === "chunked") await write("0\r\n\r\n")
      if (socket.destroyed) return
      // Everything handed over; the upload is over once it is flushed.
      socket.write("", () => {
        uploadOver = true
        settle()
      })
    }
    socket.on("connect", () => void send().catch(() => undefined))
  })

const expectEnvelopeHeaders = (res: Response) => {
  expect(res.headers.get("x-request-id") ?? "").toMatch(/^req_[0-9A-Za-z]+$/)
  expect(res.headers.get("x-service-release")).toBe(RELEASE)
}

const postHead = (length: number | "chunked", headers: Record<string, string> = {}) =>
  "POST /api/v3/credentials HTTP/1.1\r\nHost: edge.test\r\nContent-Type: application/json\r\n" +
  Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") +
  (length === "chunked" ? "Transfer-Encoding: chunked\r\n" : `Content-Length: ${length}\r\n`) +
  "\r\n"

// ---------------------------------------------------------------------------------------

eachStore("the HTTP edge", (h: () => Harness) => {
  const authorization = () => `Bearer ${h().live}`

  // (6) Every response speaks the envelope ---------------------------------------------------

  const parserCases: ReadonlyArray<[string, number, () => string]> = [
    [
      "a duplicate Content-Length",
      400,
      () => `POST /api/v3/credentials HTTP/1.1\r\nHost: edge.test\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`
    ],
    [
      "Content-Length with Transfer-Encoding",
      400,
      () => `POST /api/v3/credentials HTTP/1.1\r\nHost: edge.test\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`
    ],
    [
      "a bad chunk size",
      400,
      // With a valid credential, so that the app is waiting for the body when the parser fails.
      () => postHead("chunked", { Authorization: authorization(), "Idempotency-Key": freshKey() }) + `zz\r\n{}\r\n0\r\n\r\n`
    ],
    ["an unknown method", 400, () => `FROB /api/v3/credentials/current HTTP/1.1\r\nHost: edge.test\r\n\r\n`],
    ["a control character in the path", 400, () => `GET /api/v3/cred\x01entials HTTP/1.1\r\nHost: edge.test\r\n\r\n`],
    ["a header over 16 KiB", 431, () => `GET /api/v3/credentials/current HTTP/1.1\r\nHost: edge.test\r\nX-Big: ${"a".repeat(17 * 1024)}\r\n\r\n`],
    ["a URL over 16 KiB", 431, () => `GET /api/v3/credentials/${"a".repeat(17 * 1024)} HTTP/1.1\r\nHost: edge.test\r\n\r\n`],
    ["an HTTP/1.1 request without Host", 400, () => `GET /api/v3/credentials/current HTTP/1.1\r\n\r\n`]
  ]

  it.each(parserCases)(
    "%s is answered %i http_error in the envelope, with X-Request-Id and Connection: close, then the connection closes",
    async (_, status, text) => {
      const res = await exchange(h().baseUrl, (socket) => void socket.write(text()))
      const error = expectError(res, status, "http_error")
      expect(error.request_id).toMatch(/^req_/)
      expectEnvelopeHeaders(res)
      expect(res.headers.get("connection")).toBe("close")
      expect(await res.closedWithin(3_000)).toBe(true)
    }
  )

  it("the request IDs of parser errors differ from one answer to the next", async () => {
    const ids = new Set<string | null>()
    for (let i = 0; i < 5; i++) {
      const res = await exchange(h().baseUrl, (socket) => void socket.write(`FROB / HTTP/1.1\r\nHost: edge.test\r\n\r\n`))
      ids.add(res.headers.get("x-request-id"))
    }
    expect(ids.size).toBe(5)
  })

  it("after a parser error the server is well", async () => {
    await exchange(h().baseUrl, (socket) => void socket.write(`FROB / HTTP/1.1\r\nHost: edge.test\r\n\r\n`))
    expect((await h().request("GET", "/api/v3/credentials/current", { secret: h().live })).status).toBe(200)
  })

  // (3) The credential before the body ------------------------------------------------------

  it.each([
    ["no credential", {}],
    ["an unknown credential", { Authorization: `Bearer ck_live_${"Abc123".repeat(7).slice(0, 40)}` }],
    ["a malformed credential", { Authorization: "Bearer nonsense" }]
  ])("a slow 1 MiB body with %s gets its 401 at once: the server does not wait for the body", async (_, headers) => {
    const res = await exchange(h().baseUrl, (socket) => void socket.write(postHead(MiB, headers) + `{"name":"sl`), { timeoutMs: 3_000 })
    expectError(res, 401, "unauthenticated")
    expect(res.elapsedMs).toBeLessThan(2_000)
  })

  it("a slow chunked body without a credential gets its 401 at once", async () => {
    const res = await exchange(h().baseUrl, (socket) => void socket.write(postHead("chunked") + `4\r\n{"na\r\n`), { timeoutMs: 3_000 })
    expectError(res, 401, "unauthenticated")
  })

  it("after the 401 the server reads only a bounded part of the body: a client that keeps trickling is closed", async () => {
    let trickle: NodeJS.Timeout | undefined
    const res = await exchange(h().baseUrl, (socket) => {
      socket.write(postHead(MiB) + `{"name":"`)
      trickle = setInterval(() => socket.write("a".repeat(100)), 100)
    })
    expectError(res, 401, "unauthenticated")
    try {
      // The drain lasts at most 2 s (defaultEdgeLimits.drainMs).
      expect(await res.closedWithin(4_000)).toBe(true)
    } finally {
      clearInterval(trickle)
    }
  })

  it("an unauthenticated 1 MiB body sent whole gets its 401, and the connection is kept for the next request", async () => {
    let socketRef: Socket | undefined
    const first = await exchange(h().baseUrl, (socket) => {
      socketRef = socket
      socket.write(postHead(MiB) + "a".repeat(MiB))
    })
    expectError(first, 401, "unauthenticated")
    expect(socketRef!.destroyed).toBe(false)
  })

  // (7) A 413 reaches a client that keeps streaming ----------------------------------------

  it.each(["length", "chunked"] as const)(
    "a body 2 MiB over the 1 MiB limit (%s), streamed on after the answer, gets its 413 in full, without a reset",
    async (framing) => {
      const upload = await streamUpload(
        h().baseUrl,
        "/api/v3/credentials",
        { authorization: authorization(), "content-type": "application/json", "idempotency-key": freshKey() },
        3 * MiB,
        framing,
        5
      )
      expectError(upload.res, 413, "payload_too_large")
      expectEnvelopeHeaders(upload.res)
      expect(upload.error).toBeUndefined()
      expect(upload.written).toBe(3 * MiB)
    }
  )

  it("a client that goes on sending far past the drain bound (64 MiB) gets its 413, then the close", async () => {
    const upload = await streamUpload(
      h().baseUrl,
      "/api/v3/credentials",
      { authorization: authorization(), "content-type": "application/json", "idempotency-key": freshKey() },
      64 * MiB,
      "length"
    )
    expectError(upload.res, 413, "payload_too_large")
    expect(upload.error).toBeDefined()
    expect(upload.written).toBeLessThan(64 * MiB)
  })
})

eachStore(
  "the HTTP edge: rate limits before the body",
  (h: () => Harness) => {
    it("a credential over its limit gets its 429 for a slow body at once, without the server waiting for the body", async () => {
      // The sandbox credential's limit is 150 per minute (§8.1): spend it (the window slides, so
      // until a 429 is seen rather than exactly 150 calls).
      let limited = false
      for (let round = 0; round < 40 && !limited; round++) {
        const answers = await Promise.all(Array.from({ length: 10 }, () => h().request("GET", "/api/v3/credentials/current", { secret: h().test })))
        limited = answers.some((answer) => answer.status === 429)
      }
      expect(limited).toBe(true)
      const res = await exchange(
        h().baseUrl,
        (socket) => void socket.write(postHead(MiB, { Authorization: `Bearer ${h().test}`, "Idempotency-Key": freshKey() }) + `{"name":"sl`),
        { timeoutMs: 3_000 }
      )
      const error = expectError(res, 429, "rate_limit_exceeded")
      expect(error.blocked_by).toEqual(["key"])
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/)
    })
  },
  { rateLimits: "on" }
)

// (3) Caps on unfinished requests ------------------------------------------------------------

eachStore(
  "the HTTP edge: unfinished requests are capped",
  (h: () => Harness) => {
    const slowBody = () => postHead(100, { Authorization: `Bearer ${h().live}`, "Idempotency-Key": freshKey() }) + `{"name":`
    const current = (from: string) => getFrom(h().baseUrl, "/api/v3/credentials/current", { authorization: `Bearer ${h().live}` }, from)
    const settle = () => new Promise((r) => setTimeout(r, 300))

    it("past 3 unfinished requests of one address, 503 http_error with Retry-After; other addresses are served; the slot frees when a request ends", async () => {
      const held = await Promise.all([1, 2, 3].map(() => hold(h().baseUrl, slowBody(), "127.0.0.1")))
      try {
        await settle()
        const refused = await current("127.0.0.1")
        const error = expectError(refused, 503, "http_error")
        expect(error.reason).toBe("too_many_unfinished_requests_from_origin")
        expect(refused.headers.get("retry-after")).toBe("1")
        expectEnvelopeHeaders(refused)
        expect((await current("127.0.0.2")).status).toBe(200)
      } finally {
        held[0]!.stop()
      }
      await settle()
      try {
        expect((await current("127.0.0.1")).status).toBe(200)
      } finally {
        for (const socket of held) socket.stop()
      }
    })

    it("past 5 unfinished requests in all, 503 http_error for every address", async () => {
      const held = [
        ...(await Promise.all([1, 2, 3].map(() => hold(h().baseUrl, slowBody(), "127.0.0.2")))),
        ...(await Promise.all([1, 2].map(() => hold(h().baseUrl, slowBody(), "127.0.0.3"))))
      ]
      try {
        await settle()
        const refused = await current("127.0.0.4")
        const error = expectError(refused, 503, "http_error")
        expect(error.reason).toBe("too_many_unfinished_requests")
        expect(refused.headers.get("retry-after")).toBe("1")
      } finally {
        for (const socket of held) socket.stop()
      }
      await settle()
      expect((await current("127.0.0.4")).status).toBe(200)
    })
  },
  { edge: { maxUnfinishedPerOrigin: 3, maxUnfinished: 5 } }
)

// Deadlines ----------------------------------------------------------------------------------

eachStore(
  "the HTTP edge: deadlines",
  (h: () => Harness) => {
    it("an authenticated body that does not arrive within the body deadline is 408 http_error (body_timeout)", async () => {
      const res = await exchange(
        h().baseUrl,
        (socket) => void socket.write(postHead(100, { Authorization: `Bearer ${h().live}`, "Idempotency-Key": freshKey() }) + `{"name":`),
        { timeoutMs: 4_000 }
      )
      const error = expectError(res, 408, "http_error")
      expect(error.reason).toBe("body_timeout")
      expectEnvelopeHeaders(res)
    })

    it("an upload part whose body does not arrive within the part deadline is 408 http_error (body_timeout)", async () => {
      const bytes = 100
      const session = await h().request("POST", "/api/v3/uploads", {
        secret: h().live,
        json: { purpose: "document", filename: "slow.pdf", size: bytes, content_type: "application/pdf", sha256: "0".repeat(64) }
      })
      expect(session.status, session.text).toBe(201)
      const res = await exchange(
        h().baseUrl,
        (socket) =>
          void socket.write(
            `PUT /api/v3/uploads/${session.body.data.id}/parts/1 HTTP/1.1\r\nHost: edge.test\r\nAuthorization: Bearer ${h().live}\r\n` +
              `Content-Type: application/octet-stream\r\nContent-Length: ${bytes}\r\n\r\n%PDF-`
          ),
        { timeoutMs: 4_000 }
      )
      const error = expectError(res, 408, "http_error")
      expect(error.reason).toBe("body_timeout")
    })

    it("headers that do not arrive within the headers deadline are 408 http_error (request_timeout) in the envelope", async () => {
      const res = await exchange(h().baseUrl, (socket) => void socket.write(`GET /api/v3/credentials/current HTTP/1.1\r\nHost: edge.test\r\n`), {
        timeoutMs: 4_000
      })
      const error = expectError(res, 408, "http_error")
      expect(error.reason).toBe("request_timeout")
      expectEnvelopeHeaders(res)
      expect(await res.closedWithin(3_000)).toBe(true)
    })
  },
  { settings: { bodyTimeoutMs: 500, partBodyTimeoutMs: 800 }, edge: { headersTimeoutMs: 1_000 } }
)

// The fetch handler (issue 12) ---------------------------------------------------------------

for (const store of stores) {
  describe(`the fetch handler [${store}]`, () => {
    const scope = Effect.runSync(Scope.make())
    let syllabus: Awaited<ReturnType<typeof makeFetchHandler>>
    let secret: string
    beforeAll(async () => {
      const layer = store === "memory" ? MemoryStore : pgLayer((await Effect.runPromise(Scope.extend(freshPgDatabase, scope))).url)
      syllabus = await makeFetchHandler({ store: layer, rateLimits: "off" })
      const opened = await syllabus.openAccount({
        name: "Fetched",
        subdomain: `fetched-${Date.now()}`,
        administrator: { email: "a@fetched.example", name: "A", password: "a long password" }
      })
      secret = opened.credentials.find((c) => c.environment === "production")!.secret
    }, 60_000)
    afterAll(async () => {
      await syllabus?.dispose()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }, 60_000)

    it("a Request with a JSON body and no Content-Length is read", async () => {
      const request = new Request("http://embedded.local/api/v3/credentials", {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": freshKey() },
        body: JSON.stringify({ name: "fetched" })
      })
      expect(request.headers.get("content-length")).toBeNull()
      const res = await syllabus.handler(request)
      const text = await res.text()
      expect(res.status, text).toBe(201)
      expect(JSON.parse(text).data.name).toBe("fetched")
    })

    it("a streamed Request body over 1 MiB is 413 payload_too_large", async () => {
      const big = new TextEncoder().encode(`{"name":"${"a".repeat(MiB)}"}`)
      const res = await syllabus.handler(
        new Request("http://embedded.local/api/v3/credentials", {
          method: "POST",
          headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": freshKey() },
          body: big
        })
      )
      const text = await res.text()
      expect({ status: res.status, code: JSON.parse(text).error.code }).toEqual({ status: 413, code: "payload_too_large" })
    })
  })
}
