/**
 * The wire rules of the request pipeline, black-box over HTTP: content negotiation (§1.1),
 * the response headers every call carries (§1.2), the language of messages (§1.3), the
 * error envelope (§7), the body limits (§8.2), `X-Client-Request-Id` and strict query and
 * body decoding (§4.1, §4.2), routing, path IDs (open-points "Public IDs") and the basics of
 * authentication (§5.1).
 */
import { request as httpRequest } from "node:http"
import { expect, it } from "vitest"
import { eachStore, type Harness, type Response } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const MiB = 1024 * 1024
const RELEASE = "3.4.7"

// ---------------------------------------------------------------------------------------
// Raw node:http requests: what fetch cannot send (repeated headers, no Content-Type on a
// body, chunked bodies without Content-Length, bytes that are not UTF-8).

interface RawOptions {
  /** An object, or a flat `[name, value, name, value, …]` list sent exactly as given. */
  readonly headers?: Record<string, string> | ReadonlyArray<string>
  /** Sent in one piece with its Content-Length. */
  readonly body?: string | Uint8Array
  /** Sent as several writes with `Transfer-Encoding: chunked` and no Content-Length. */
  readonly chunks?: ReadonlyArray<string | Uint8Array>
}

const rawRequest = (baseUrl: string, method: string, path: string, options: RawOptions = {}): Promise<Response> =>
  new Promise<Response>((resolve, reject) => {
    const url = new URL(path, baseUrl)
    const given = options.headers ?? {}
    const headers: Array<string> = Array.isArray(given)
      ? [...(given as ReadonlyArray<string>)]
      : Object.entries(given as Record<string, string>).flat()
    const names = headers.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase())
    // A raw header list gets no Host from node:http; HTTP/1.1 servers refuse a request without it.
    if (!names.includes("host")) headers.unshift("Host", url.host)
    if (options.body !== undefined && !names.includes("content-length")) {
      headers.push("Content-Length", String(Buffer.byteLength(options.body)))
    }
    if (options.chunks !== undefined) headers.push("Transfer-Encoding", "chunked")

    let answered = false
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      method,
      path: url.pathname + url.search,
      headers: headers as Array<string> as never,
      agent: false
    })
    const answer = new Promise<void>((done) => {
      req.on("response", (res) => {
        answered = true
        done()
        const parts: Array<Buffer> = []
        res.on("data", (part: Buffer) => parts.push(part))
        res.on("error", reject)
        res.on("end", () => {
          const text = Buffer.concat(parts).toString("utf8")
          let body: unknown
          try {
            body = text === "" ? undefined : JSON.parse(text)
          } catch {
            body = undefined
          }
          const responseHeaders = new Headers()
          for (const [name, value] of Object.entries(res.headers)) {
            for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) responseHeaders.append(name, v)
          }
          resolve({ status: res.statusCode ?? 0, headers: responseHeaders, body, text })
        })
      })
    })
    // The server may answer (413) and close before the whole body is sent: only an error
    // before any answer is a failure of the request.
    req.on("error", (error) => {
      if (!answered) reject(new Error(`the connection ended without a response (${error.message})`))
    })

    const send = async () => {
      if (options.body !== undefined) {
        req.end(options.body)
        return
      }
      for (const chunk of options.chunks ?? []) {
        if (answered || req.destroyed) break
        if (!req.write(chunk)) {
          await Promise.race([new Promise((r) => req.once("drain", r)), new Promise((r) => req.once("close", r)), answer])
        }
      }
      if (!req.destroyed) req.end()
    }
    send().catch(() => undefined)
  })

// ---------------------------------------------------------------------------------------
// Assertions

const expectReleaseHeaders = (res: Response) => {
  expect(res.headers.get("x-request-id") ?? "").toMatch(/^req_[0-9A-Za-z]+$/)
  expect(res.headers.get("x-service-release")).toBe(RELEASE)
}

/** A JSON object `{"name":"…","nest":…}` whose nesting, counting the top object, is `depth`. */
const nestedBody = (depth: number): string => {
  let inner = "{}"
  for (let level = 2; level < depth; level++) inner = `{"a":${inner}}`
  return `{"name":"deep","nest":${inner}}`
}

/** A JSON object of exactly `size` bytes (an unknown `pad` field makes it up). */
const bodyOfSize = (size: number): string => {
  const head = `{"name":"big","pad":"`
  const tail = `"}`
  return head + "a".repeat(size - head.length - tail.length) + tail
}

const validSecretShape = (prefix: "ck_live_" | "ck_test_") => prefix + "Abc123".repeat(7).slice(0, 40)

// ---------------------------------------------------------------------------------------

eachStore("wire rules", (h: () => Harness) => {
  const get = (path: string, headers: Record<string, string> = {}) =>
    h().request("GET", path, { secret: h().live, headers })
  const raw = (method: string, path: string, options: RawOptions = {}) => rawRequest(h().baseUrl, method, path, options)
  const auth = () => ({ Authorization: `Bearer ${h().live}`, "Idempotency-Key": `wire-${Date.now()}-${Math.random()}` })

  // §1.1 Content negotiation ---------------------------------------------------------------

  it.each(["text/html", "application/xml", "text/plain, image/png", "application/json;q=0"])(
    "§1.1 an Accept that does not allow JSON (%s) is 406 not_acceptable",
    async (accept) => {
      expectError(await get("/api/v3/credentials/current", { accept }), 406, "not_acceptable")
    }
  )

  it.each(["*/*", "application/*", "application/json", "text/html, application/json;q=0.5"])(
    "§1.1 an Accept that allows JSON (%s) is served",
    async (accept) => {
      const res = await get("/api/v3/credentials/current", { accept })
      expect(res.status).toBe(200)
      expect(res.body.data.object).toBe("credential")
    }
  )

  it("a ? inside the query string is part of it (RFC 3986 §3.4): the parameters after it still apply", async () => {
    const name = `what? ${Date.now()}`
    const made = await h().request("POST", "/api/v3/showcases", { secret: h().live, json: { name } })
    expect(made.status, made.text).toBe(201)
    await h().request("POST", "/api/v3/showcases", { secret: h().live, json: { name: `${name} again` } })
    const res = await get(`/api/v3/showcases?q=${encodeURIComponent(name).replace("%3F", "?")}&limit=1`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.page.limit).toBe(1)
    expect(res.body.data).toHaveLength(1)
    expect(res.body.data[0].name.startsWith(name)).toBe(true)
    // A value holding a `?` is read whole: not a number.
    expectError(await get("/api/v3/showcases?limit=1?2"), 422, "validation_failed", { parameter: "limit" })
  })

  it("§1.1 a request without Accept is served as JSON", async () => {
    const res = await raw("GET", "/api/v3/credentials/current", { headers: { Authorization: `Bearer ${h().live}` } })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
    expect(res.body.data.object).toBe("credential")
  })

  it.each(["text/plain", "application/x-www-form-urlencoded"])(
    "§1.1 a body sent as %s is 415 unsupported_media_type",
    async (contentType) => {
      const res = await h().request("POST", "/api/v3/credentials", {
        secret: h().live,
        headers: { "content-type": contentType },
        raw: contentType === "text/plain" ? `{"name":"plain"}` : "name=form"
      })
      expectError(res, 415, "unsupported_media_type")
    }
  )

  it("§1.1 a body without Content-Type is 415 unsupported_media_type", async () => {
    const res = await raw("POST", "/api/v3/credentials", { headers: auth(), body: `{"name":"no type"}` })
    expectError(res, 415, "unsupported_media_type")
  })

  it("§1.1 application/json; charset=utf-8 is accepted", async () => {
    const res = await h().request("POST", "/api/v3/credentials", {
      secret: h().live,
      headers: { "content-type": "application/json; charset=utf-8" },
      json: { name: "charset" }
    })
    expect(res.status).toBe(201)
    expect(res.body.data.name).toBe("charset")
  })

  // §7, §8.2 The body -----------------------------------------------------------------------

  it("§8.2 a body over 1 MiB with Content-Length is 413 payload_too_large", async () => {
    const res = await raw("POST", "/api/v3/credentials", {
      headers: { ...auth(), "Content-Type": "application/json" },
      body: bodyOfSize(MiB + 1)
    })
    expectError(res, 413, "payload_too_large")
  })

  it("§8.2 a body over 1 MiB sent chunked without Content-Length is 413 payload_too_large", async () => {
    const text = bodyOfSize(MiB + 64 * 1024)
    const chunks: Array<string> = []
    for (let i = 0; i < text.length; i += 64 * 1024) chunks.push(text.slice(i, i + 64 * 1024))
    const res = await raw("POST", "/api/v3/credentials", {
      headers: { ...auth(), "Content-Type": "application/json" },
      chunks
    })
    expectError(res, 413, "payload_too_large")
  })

  it("§8.2 a body of exactly 1 MiB passes the size check", async () => {
    const res = await raw("POST", "/api/v3/credentials", {
      headers: { ...auth(), "Content-Type": "application/json" },
      body: bodyOfSize(MiB)
    })
    // It reaches the schema, which refuses the unknown `pad` field.
    const error = expectError(res, 422, "unknown_field")
    expect(error.details.map((d) => d.field)).toEqual(["pad"])
  })

  it("§8.2 a chunked body within the limit is read as usual", async () => {
    const res = await raw("POST", "/api/v3/credentials", {
      headers: { ...auth(), "Content-Type": "application/json" },
      chunks: [`{"name":`, `"chun`, `ked"}`]
    })
    expect(res.status).toBe(201)
    expect(res.body.data.name).toBe("chunked")
  })

  it.each([
    ["a lone 0xFF byte", [0xff]],
    ["an overlong encoding", [0xc0, 0xaf]],
    ["an encoded surrogate", [0xed, 0xa0, 0x80]],
    ["a truncated sequence", [0xe2, 0x82]]
  ])("§7 a body with invalid UTF-8 (%s) is 400 invalid_utf8", async (_, bytes) => {
    const body = Buffer.concat([Buffer.from(`{"name":"`), Buffer.from(bytes), Buffer.from(`"}`)])
    const res = await raw("POST", "/api/v3/credentials", { headers: { ...auth(), "Content-Type": "application/json" }, body })
    expectError(res, 400, "invalid_utf8")
  })

  it.each([`{"name":`, "hello", `{"name":"x",}`, `{'name':'x'}`])(
    "§7 a body that is not JSON (%s) is 400 malformed_json",
    async (text) => {
      const res = await h().request("POST", "/api/v3/credentials", {
        secret: h().live,
        headers: { "content-type": "application/json" },
        raw: text
      })
      expectError(res, 400, "malformed_json")
    }
  )

  it.each([`[{"name":"x"}]`, `"name"`, "42", "null", "true"])(
    "§7 a JSON body that is not an object (%s) is 400 malformed_json",
    async (text) => {
      const res = await h().request("POST", "/api/v3/credentials", {
        secret: h().live,
        headers: { "content-type": "application/json" },
        raw: text
      })
      expectError(res, 400, "malformed_json")
    }
  )

  it("§8.2 a body nested 17 levels deep is 400 json_too_deep", async () => {
    const res = await h().request("POST", "/api/v3/credentials", {
      secret: h().live,
      headers: { "content-type": "application/json" },
      raw: nestedBody(17)
    })
    expectError(res, 400, "json_too_deep")
  })

  it("§8.2 a body nested 16 levels deep passes the depth check", async () => {
    const res = await h().request("POST", "/api/v3/credentials", {
      secret: h().live,
      headers: { "content-type": "application/json" },
      raw: nestedBody(16)
    })
    // It reaches the schema, which refuses the unknown `nest` field.
    const error = expectError(res, 422, "unknown_field")
    expect(error.details.map((d) => d.field)).toEqual(["nest"])
  })

  it("§8.2 brackets inside a string are not nesting", async () => {
    const res = await h().request("POST", "/api/v3/credentials", {
      secret: h().live,
      json: { name: `\\"${"[{".repeat(20)}` }
    })
    expect(res.status).toBe(201)
    expect(res.body.data.name).toBe(`\\"${"[{".repeat(20)}`)
  })

  it("§8.2 a hugely nested body (100,000 levels) is 400 json_too_deep, not a failure", async () => {
    const res = await h().request("POST", "/api/v3/credentials", {
      secret: h().live,
      headers: { "content-type": "application/json" },
      raw: `{"name":"x","nest":${"[".repeat(100_000)}${"]".repeat(100_000)}}`
    })
    expectError(res, 400, "json_too_deep")
    // The server is still well.
    expect((await get("/api/v3/credentials/current")).status).toBe(200)
  })

  // §7 The envelope -----------------------------------------------------------------------

  it("§7 every error has code, message, request_id equal to X-Request-Id and a details array", async () => {
    const cases: Array<[Promise<Response>, number, string]> = [
      [h().request("GET", "/api/v3/credentials/current"), 401, "unauthenticated"],
      [get("/api/v3/credentials/current", { accept: "text/html" }), 406, "not_acceptable"],
      [get("/api/v3/credentials?foo=1"), 400, "unknown_parameter"],
      [get("/api/v3/credentials/crd_000000001"), 404, "not_found"],
      [h().request("PUT", "/api/v3/credentials/current", { secret: h().live, json: {} }), 405, "method_not_allowed"],
      [get("/api/v3/nope"), 503, "operation_not_catalogued"],
      [h().request("POST", "/api/v3/credentials", { secret: h().live, json: {} }), 422, "validation_failed"]
    ]
    for (const [pending, status, code] of cases) {
      const error = expectError(await pending, status, code)
      expect(error.request_id).toMatch(/^req_/)
    }
  })

  it("§7 an error with nothing to itemize has an empty details array", async () => {
    const error = expectError(await h().request("GET", "/api/v3/credentials/current"), 401, "unauthenticated")
    expect(error.details).toEqual([])
  })

  // §1.2 Response headers -----------------------------------------------------------------

  it("§1.2 a success carries X-Request-Id and X-Service-Release", async () => {
    const res = await get("/api/v3/credentials/current")
    expect(res.status).toBe(200)
    expectReleaseHeaders(res)
  })

  it("§1.2 errors, authenticated or not, carry X-Request-Id and X-Service-Release", async () => {
    const responses = [
      await h().request("GET", "/api/v3/credentials/current"),
      await h().request("GET", "/api/v3/credentials/current", { secret: "nonsense" }),
      await get("/api/v3/credentials/crd_000000001"),
      await get("/api/v3/credentials/current", { accept: "text/html" }),
      await get("/api/v3/nope"),
      await get("/elsewhere")
    ]
    for (const res of responses) {
      expect(res.status).toBeGreaterThanOrEqual(400)
      expectReleaseHeaders(res)
    }
  })

  it("§1.2 X-Request-Id is different on every call", async () => {
    const ids: Array<string | null> = []
    for (let i = 0; i < 5; i++) {
      ids.push((await get("/api/v3/credentials/current")).headers.get("x-request-id"))
      ids.push((await h().request("GET", "/api/v3/credentials/current")).headers.get("x-request-id"))
    }
    expect(new Set(ids).size).toBe(ids.length)
  })

  // §1.3 Language -------------------------------------------------------------------------

  it("§1.3 Accept-Language chooses the message; the code never changes", async () => {
    const messages = new Map<string, string>()
    for (const language of ["en-US", "pt-BR", "es-ES", "fr-FR"]) {
      const res = await h().request("GET", "/api/v3/credentials/current", { headers: { "accept-language": language } })
      const error = expectError(res, 401, "unauthenticated")
      messages.set(language, error.message)
    }
    expect(new Set(messages.values()).size).toBe(4)
  })

  it("§1.3 without Accept-Language, or with an unsupported one, messages are en-US", async () => {
    const english = expectError(
      await h().request("GET", "/api/v3/credentials/current", { headers: { "accept-language": "en-US" } }),
      401,
      "unauthenticated"
    ).message
    const none = expectError(await h().request("GET", "/api/v3/credentials/current"), 401, "unauthenticated").message
    const german = expectError(
      await h().request("GET", "/api/v3/credentials/current", { headers: { "accept-language": "de-DE" } }),
      401,
      "unauthenticated"
    ).message
    expect(none).toBe(english)
    expect(german).toBe(english)
  })

  it("§1.3 the messages of details items follow Accept-Language too, with the same codes", async () => {
    const english = expectError(await get("/api/v3/credentials?foo=1"), 400, "unknown_parameter")
    const portuguese = expectError(
      await get("/api/v3/credentials?foo=1", { "accept-language": "pt-BR" }),
      400,
      "unknown_parameter"
    )
    expect(portuguese.message).not.toBe(english.message)
    expect(portuguese.details.map((d) => [d.parameter, d.code])).toEqual(english.details.map((d) => [d.parameter, d.code]))
    expect(portuguese.details[0]!.message).not.toBe(english.details[0]!.message)
  })

  // §4.1 X-Client-Request-Id --------------------------------------------------------------

  const longClientId = ("Aa0._-" + "x".repeat(64)).slice(0, 64)

  it("§4.1 a valid X-Client-Request-Id (64 characters) is echoed and does not replace X-Request-Id", async () => {
    const res = await get("/api/v3/credentials/current", { "x-client-request-id": longClientId })
    expect(res.status).toBe(200)
    expect(res.headers.get("x-client-request-id")).toBe(longClientId)
    expect(res.headers.get("x-request-id")).toMatch(/^req_/)
    expect(res.headers.get("x-request-id")).not.toBe(longClientId)
  })

  it("§4.1 X-Client-Request-Id never replaces X-Request-Id, even when it looks like one", async () => {
    const res = await h().request("GET", "/api/v3/credentials/current", { headers: { "x-client-request-id": "req_000000001" } })
    const error = expectError(res, 401, "unauthenticated")
    expect(res.headers.get("x-client-request-id")).toBe("req_000000001")
    expect(res.headers.get("x-request-id")).not.toBe("req_000000001")
    expect(error.request_id).toBe(res.headers.get("x-request-id"))
  })

  it.each([
    ["65 characters", "a".repeat(65)],
    ["a space", "abc def"],
    ["a slash", "abc/def"]
  ])("§4.1 an X-Client-Request-Id with %s is 422 validation_failed on that parameter", async (_, value) => {
    const res = await get("/api/v3/credentials/current", { "x-client-request-id": value })
    const error = expectError(res, 422, "validation_failed")
    expect(error.details.map((d) => d.parameter)).toContain("X-Client-Request-Id")
  })

  it("§4.1 X-Client-Request-Id is recorded in the request log", async () => {
    const clientId = `wire-log-${Date.now()}`
    const res = await get("/api/v3/credentials/current", { "x-client-request-id": clientId })
    expect(res.status).toBe(200)
    const requestId = res.headers.get("x-request-id")!
    const entry = await get(`/api/v3/requests/${requestId}`)
    expect(entry.status).toBe(200)
    expect(entry.body.data.id).toBe(requestId)
    expect(entry.body.data.client_request_id).toBe(clientId)
  })

  // §4.1, §4.2 Strict query and body ----------------------------------------------------------

  it("§4.1 every unknown query parameter is itemized in a 400 unknown_parameter", async () => {
    const error = expectError(await get("/api/v3/credentials?foo=1&bar=2"), 400, "unknown_parameter")
    expect(error.details.map((d) => d.parameter).sort()).toEqual(["bar", "foo"])
    for (const item of error.details) expect(item.code).toBe("unknown_parameter")
  })

  it("§4.1 a query parameter on an operation that declares none is 400 unknown_parameter", async () => {
    const error = expectError(await get("/api/v3/credentials/current?limit=10"), 400, "unknown_parameter")
    expect(error.details).toEqual([expect.objectContaining({ parameter: "limit", code: "unknown_parameter" })])
  })

  it("§2.1 an unknown body field is 422 unknown_field, itemized", async () => {
    const res = await h().request("POST", "/api/v3/credentials", { secret: h().live, json: { name: "x", colour: "blue" } })
    const error = expectError(res, 422, "unknown_field")
    expect(error.details).toEqual([expect.objectContaining({ field: "colour", code: "unknown_field" })])
  })

  it("§7 a missing required field with an unknown field is 422 validation_failed listing both", async () => {
    const res = await h().request("POST", "/api/v3/credentials", { secret: h().live, json: { colour: "blue" } })
    const error = expectError(res, 422, "validation_failed")
    const fields = error.details.map((d) => d.field)
    expect(fields).toContain("name")
    expect(fields).toContain("colour")
    expect(error.details.find((d) => d.field === "colour")!.code).toBe("unknown_field")
    expect(error.details.find((d) => d.field === "name")!.code).not.toBe("unknown_field")
  })

  it.each([
    ["limit=0", "limit"],
    ["limit=201", "limit"],
    ["limit=abc", "limit"],
    ["limit=-1", "limit"],
    ["sort=name", "sort"]
  ])("§4.2 %s is 422 validation_failed on that parameter", async (query, parameter) => {
    const error = expectError(await get(`/api/v3/credentials?${query}`), 422, "validation_failed")
    expect(error.details.map((d) => d.parameter)).toContain(parameter)
  })

  it.each(["limit=1", "limit=200", "sort=created_at", "sort=-created_at"])("§4.2 %s is accepted", async (query) => {
    const res = await get(`/api/v3/credentials?${query}`)
    expect(res.status).toBe(200)
    expect(Array.isArray(res.body.data)).toBe(true)
  })

  // Routing -------------------------------------------------------------------------------

  it.each(["/api/v3/nope", "/api/v3/credentials/current/nope", "/api/v3/"])(
    "an unknown route under /api/v3 (%s) is 503 operation_not_catalogued",
    async (path) => {
      expectError(await get(path), 503, "operation_not_catalogued")
    }
  )

  it.each([
    ["PUT", "/api/v3/credentials/current"],
    ["DELETE", "/api/v3/policy-templates"]
  ])("%s on %s, a known path, is 405 method_not_allowed with Allow", async (method, path) => {
    const res = await h().request(method, path, { secret: h().live })
    expectError(res, 405, "method_not_allowed")
    const allowed = (res.headers.get("allow") ?? "").split(",").map((m) => m.trim())
    expect(allowed).toContain("GET")
    expect(allowed).not.toContain(method)
  })

  it.each(["/api/v2/credentials", "/credentials/current", "/api/v3x/credentials/current", "/"])(
    "a path outside /api/v3 (%s) is 404",
    async (path) => {
      const res = await get(path)
      expectError(res, 404, "not_found")
      expectReleaseHeaders(res)
    }
  )

  // Path IDs (open-points "Public IDs") ---------------------------------------------------

  const ownCredentialId = () => h().account.credentials.find((c) => c.environment === "production")!.id

  it("a credential's own ID reads it", async () => {
    const res = await get(`/api/v3/credentials/${ownCredentialId()}`)
    expect(res.status).toBe(200)
    expect(res.body.data.id).toBe(ownCredentialId())
  })

  it.each(["crd_abc", "crd_0000000001", "crd_00000000!", "crd_", "12345", "crd-000000001"])(
    "a malformed ID in the path (%s) is 404 not_found",
    async (id) => {
      expectError(await get(`/api/v3/credentials/${encodeURIComponent(id)}`), 404, "not_found")
    }
  )

  it("an ID with another resource's prefix is 404 not_found", async () => {
    const id = ownCredentialId().replace(/^crd_/, "prd_")
    expectError(await get(`/api/v3/credentials/${id}`), 404, "not_found")
  })

  it("an ID above the supported range is 404 not_found", async () => {
    expectError(await get("/api/v3/credentials/crd_zzzzzzzzz"), 404, "not_found")
  })

  it("a well-formed ID that does not exist is 404 not_found", async () => {
    expectError(await get("/api/v3/credentials/crd_000000001"), 404, "not_found")
  })

  // §5.1 Authentication -------------------------------------------------------------------

  it("§5.1 a call without a credential is 401 unauthenticated", async () => {
    expectError(await h().request("GET", "/api/v3/credentials/current"), 401, "unauthenticated")
  })

  it.each([
    ["Bearer abc", "Bearer abc"],
    ["Basic credentials", "Basic dXNlcjpwYXNz"],
    ["a bare secret without Bearer", () => h().live],
    ["a secret one character short", () => `Bearer ${h().live.slice(0, -1)}`]
  ])("§5.1 an unrecognized credential format (%s) is 401 unauthenticated", async (_, value) => {
    const authorization = typeof value === "function" ? value() : value
    expectError(await h().request("GET", "/api/v3/credentials/current", { headers: { authorization } }), 401, "unauthenticated")
  })

  it("§5.1 a well-formed but unknown ck_live_ secret is 401 unauthenticated", async () => {
    const secret = validSecretShape("ck_live_")
    expect(secret).toMatch(/^ck_live_[0-9A-Za-z]{40}$/)
    expectError(await h().request("GET", "/api/v3/credentials/current", { secret }), 401, "unauthenticated")
  })

  it.each([
    ["a 32-hex legacy token", "Bearer 5f4dcc3b5aa765d61d8327deb882cf99"],
    ["a legacy Token scheme", "Token token=5f4dcc3b5aa765d61d8327deb882cf99"]
  ])("§5 a legacy-API token (%s) is 401 unauthenticated", async (_, authorization) => {
    expectError(await h().request("GET", "/api/v3/credentials/current", { headers: { authorization } }), 401, "unauthenticated")
  })

  it("§5.1 Authorization sent twice is 401 ambiguous_credentials", async () => {
    const res = await raw("GET", "/api/v3/credentials/current", {
      headers: ["Authorization", "Bearer x", "Authorization", "Bearer y"]
    })
    expectError(res, 401, "ambiguous_credentials")
  })

  it("§5.1 Authorization sent twice is ambiguous even when one of them is a valid secret", async () => {
    const res = await raw("GET", "/api/v3/credentials/current", {
      headers: ["Authorization", `Bearer ${h().live}`, "Authorization", `Bearer ${h().test}`]
    })
    expectError(res, 401, "ambiguous_credentials")
  })
})
