/**
 * A file's bytes (`GET /files/{file_id}/content`, docs/files.md): an uploaded file and a
 * certificate preview downloaded byte for byte, the headers of a download, `ETag` and
 * `If-None-Match` (304), one `Range` (206, 416) and `If-Range`, the scope and permission of
 * `GET /files/{file_id}` (404, 403), storage that does not answer (503), and the expiry of
 * certificate previews by the clock (24 hours: 404, then the housekeeping removes record and
 * bytes).
 */
import { createHash } from "node:crypto"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { expect, it } from "vitest"
import { api, created, credentialWith } from "../support/api.js"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"

const P = "/api/v3"
const MIB = 1024 ** 2
const HOUR = 3600_000

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** `size` bytes starting with `head`, then a pattern no signature matches. */
const padded = (head: string | ArrayLike<number>, size: number, seed = 11): Uint8Array => {
  const bytes = new Uint8Array(size)
  let x = seed
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    bytes[i] = (x >>> 16) & 0xff
  }
  bytes.set(Array.from(typeof head === "string" ? Buffer.from(head, "latin1") : head).slice(0, size))
  return bytes
}
const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

interface Download {
  readonly status: number
  readonly headers: Headers
  readonly bytes: Buffer
  /** The envelope of an error answer. */
  readonly body: any
}

/** A raw GET (or HEAD) of a file's bytes: the harness's client reads bodies as text. */
const download = async (h: Harness, fileId: string, headers: Record<string, string> = {}, options: { secret?: string; method?: string } = {}): Promise<Download> => {
  const res = await fetch(`${h.baseUrl}${P}/files/${fileId}/content`, {
    method: options.method ?? "GET",
    headers: { authorization: `Bearer ${options.secret ?? h.live}`, ...headers }
  })
  const bytes = Buffer.from(await res.arrayBuffer())
  let body: any
  if ((res.headers.get("content-type") ?? "").startsWith("application/json")) body = JSON.parse(bytes.toString("utf8"))
  return { status: res.status, headers: res.headers, bytes, body }
}

/** A file through the whole uploads flow (session, parts, completion); its record. */
const uploadFile = async (
  h: Harness,
  bytes: Uint8Array,
  declaration: { purpose?: string; filename?: string; content_type?: string } = {},
  secret = h.live
): Promise<Record<string, any>> => {
  const session = await created(
    h.request("POST", `${P}/uploads`, {
      secret,
      json: { purpose: "image", filename: "picture.png", content_type: "image/png", size: bytes.length, sha256: sha256(bytes), ...declaration }
    })
  )
  for (const part of session.upload_urls as Array<{ part_number: number; url: string; size: number }>) {
    const from = (part.part_number - 1) * session.part_size
    const res = await h.request("PUT", part.url, {
      secret,
      raw: bytes.subarray(from, from + part.size),
      headers: { "content-type": "application/octet-stream" }
    })
    expect(res.status, res.text).toBe(200)
  }
  return created(h.request("POST", `${P}/uploads/${session.id}/completions`, { secret }))
}

/** A product with a certificate template, previewed: the preview's file. */
const preview = async (h: Harness): Promise<Record<string, any>> => {
  const showcase = await created(api(h).post("/showcases", { name: "Shelf" }))
  const product = await created(api(h).post("/products", { format: "course", name: "Photography 101", showcase_id: showcase.id }))
  const template = await api(h).put(`/products/${product.id}/certificate-template`, {
    enabled: true,
    texts: { content: "{name} completed {product} on {date}." }
  })
  expect(template.status, template.text).toBe(200)
  return created(api(h).post(`/products/${product.id}/certificate-template/previews`, { sample: { name: "Grace Hopper" } }))
}

const mine = (h: Harness) => ({ accountId: h.account.account.id, environment: "production" as const })

eachStore("file content", (h) => {
  let small: { file: Record<string, any>; bytes: Uint8Array } | undefined
  /** A 1,000-byte PNG uploaded once for the tests that read ranges and validators. */
  const smallFile = async () => {
    if (small) return small
    const bytes = padded(PNG, 1000)
    small = { file: await uploadFile(h(), bytes), bytes }
    return small
  }

  it("downloads an uploaded file of two parts byte for byte, with its type, length, ETag, disposition and caching", async () => {
    const bytes = padded(PNG, 9 * MIB + 123, 3)
    const file = await uploadFile(h(), bytes, { filename: "big.png" })
    const res = await download(h(), file.id)
    expect(res.status).toBe(200)
    expect(res.bytes.length).toBe(bytes.length)
    expect(sha256(res.bytes)).toBe(file.sha256)
    expect(res.bytes.equals(Buffer.from(bytes))).toBe(true)
    expect({
      type: res.headers.get("content-type"),
      length: res.headers.get("content-length"),
      etag: res.headers.get("etag"),
      cache: res.headers.get("cache-control"),
      disposition: res.headers.get("content-disposition"),
      ranges: res.headers.get("accept-ranges"),
      nosniff: res.headers.get("x-content-type-options")
    }).toEqual({
      type: "image/png",
      length: String(bytes.length),
      etag: `"${file.sha256}"`,
      cache: "private",
      disposition: `attachment; filename="big.png"; filename*=UTF-8''big.png`,
      ranges: "bytes",
      nosniff: "nosniff"
    })
    expect(res.headers.get("x-request-id")).toMatch(/^req_/)
    expect(file.expires_at).toBeNull()
  })

  it("HEAD answers the headers of GET and no body; Accept does not refuse a download", async () => {
    const { file } = await smallFile()
    const head = await download(h(), file.id, {}, { method: "HEAD" })
    expect(head.status).toBe(200)
    expect(head.bytes.length).toBe(0)
    expect([head.headers.get("content-length"), head.headers.get("content-type"), head.headers.get("etag")]).toEqual(["1000", "image/png", `"${file.sha256}"`])
    const json = await download(h(), file.id, { accept: "application/json" })
    expect([json.status, json.headers.get("content-type"), json.bytes.length]).toEqual([200, "image/png", 1000])
  })

  it("Content-Disposition: the exact name in filename* (RFC 8187) and an ASCII fallback without quotes", async () => {
    const bytes = padded("%PDF-1.7\n", 300)
    const file = await uploadFile(h(), bytes, { purpose: "document", content_type: "application/pdf", filename: 'relatório "final"; 100%.pdf' })
    const res = await download(h(), file.id)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("application/pdf")
    expect(res.headers.get("content-disposition")).toBe(
      `attachment; filename="relat_rio _final_; 100%.pdf"; filename*=UTF-8''relat%C3%B3rio%20%22final%22%3B%20100%25.pdf`
    )
    expect(res.bytes.equals(Buffer.from(bytes))).toBe(true)
  })

  it("downloads a certificate preview: the PDF the file describes, kept 24 hours", async () => {
    const file = await preview(h())
    expect(Date.parse(file.expires_at) - Date.parse(file.created_at)).toBe(24 * HOUR)
    expect((await api(h()).get(`/files/${file.id}`)).body.data).toEqual(file)
    const res = await download(h(), file.id)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("application/pdf")
    expect(res.bytes.subarray(0, 5).toString("latin1")).toBe("%PDF-")
    expect(res.bytes.length).toBe(file.size)
    expect(sha256(res.bytes)).toBe(file.sha256)
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${file.filename}"; filename*=UTF-8''${file.filename}`)
  })

  it("If-None-Match with the ETag (strong, weak or *) is 304 without a body; another ETag gets the bytes", async () => {
    const { file } = await smallFile()
    const etag = `"${file.sha256}"`
    for (const condition of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const res = await download(h(), file.id, { "if-none-match": condition })
      expect([condition, res.status, res.bytes.length, res.headers.get("etag"), res.headers.get("cache-control")]).toEqual([condition, 304, 0, etag, "private"])
    }
    const other = await download(h(), file.id, { "if-none-match": '"0000"' })
    expect([other.status, other.bytes.length]).toEqual([200, 1000])
    // 304 comes before a range.
    expect((await download(h(), file.id, { "if-none-match": etag, range: "bytes=0-9" })).status).toBe(304)
  })

  it("Range: one range is 206 with Content-Range, read from its offset; a last byte past the end is cut", async () => {
    const { file, bytes } = await smallFile()
    const cases: Array<[string, number, number]> = [
      ["bytes=0-9", 0, 9],
      ["bytes=990-", 990, 999],
      ["bytes=-5", 995, 999],
      ["bytes=500-500", 500, 500],
      ["bytes=100-999999", 100, 999],
      ["bytes=-5000", 0, 999]
    ]
    for (const [range, start, end] of cases) {
      const res = await download(h(), file.id, { range })
      expect([range, res.status, res.headers.get("content-range"), res.headers.get("content-length")]).toEqual([
        range,
        206,
        `bytes ${start}-${end}/1000`,
        String(end - start + 1)
      ])
      expect(res.bytes.equals(Buffer.from(bytes.subarray(start, end + 1))), range).toBe(true)
      expect(res.headers.get("etag")).toBe(`"${file.sha256}"`)
      expect(res.headers.get("content-type")).toBe("image/png")
    }
  })

  it("Range: past the end is 416 http_error with Content-Range bytes */size; several, malformed or other units are the whole file", async () => {
    const { file } = await smallFile()
    for (const range of ["bytes=1000-", "bytes=1000-2000", "bytes=-0"]) {
      const res = await download(h(), file.id, { range })
      expect([range, res.status, res.body?.error?.code, res.body?.error?.details]).toEqual([range, 416, "http_error", []])
      expect(res.headers.get("content-range")).toBe("bytes */1000")
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"))
    }
    for (const range of ["bytes=0-1,5-9", "bytes=9-2", "bytes=abc", "items=0-9", "bytes=-"]) {
      const res = await download(h(), file.id, { range })
      expect([range, res.status, res.bytes.length, res.headers.get("content-range")]).toEqual([range, 200, 1000, null])
    }
  })

  it("If-Range: the range holds while the ETag is the file's; another ETag or a date gets the whole file", async () => {
    const { file } = await smallFile()
    const hit = await download(h(), file.id, { range: "bytes=0-9", "if-range": `"${file.sha256}"` })
    expect([hit.status, hit.bytes.length]).toEqual([206, 10])
    for (const condition of ['"0000"', "Wed, 21 Oct 2015 07:28:00 GMT"]) {
      const miss = await download(h(), file.id, { range: "bytes=0-9", "if-range": condition })
      expect([condition, miss.status, miss.bytes.length]).toEqual([condition, 200, 1000])
    }
  })

  it("404 as GET /files/{id}: unknown, malformed, an upload's ID, another account's and the other environment's file", async () => {
    const { file } = await smallFile()
    expectError(await toResponse(download(h(), "fil_000000000")), 404, "not_found")
    expectError(await toResponse(download(h(), "not-a-file")), 404, "not_found")
    const session = await created(
      h().request("POST", `${P}/uploads`, { secret: h().live, json: { purpose: "image", filename: "x.png", content_type: "image/png", size: 10, sha256: sha256(padded(PNG, 10)) } })
    )
    expectError(await toResponse(download(h(), session.id)), 404, "not_found")
    // The sandbox environment of the same account does not see it.
    expectError(await toResponse(download(h(), file.id, {}, { secret: h().test })), 404, "not_found")
    // Nor does another account; its own file is its own.
    const other = await h().openAccount(`files-${process.pid}-${Date.now()}`)
    const otherSecret = other.credentials.find((c) => c.environment === "production")!.secret
    expectError(await toResponse(download(h(), file.id, {}, { secret: otherSecret })), 404, "not_found")
    const theirs = await uploadFile(h(), padded(PNG, 50, 5), {}, otherSecret)
    expectError(await toResponse(download(h(), theirs.id)), 404, "not_found")
    expect((await download(h(), theirs.id, {}, { secret: otherSecret })).status).toBe(200)
  })

  it("needs files.read: without it 403 permission_denied; with only it, the bytes", async () => {
    const { file } = await smallFile()
    const without = await credentialWith(h(), ["products.read"])
    expectError(await toResponse(download(h(), file.id, {}, { secret: without })), 403, "permission_denied")
    const reader = await credentialWith(h(), ["files.read"])
    const res = await download(h(), file.id, {}, { secret: reader })
    expect([res.status, res.bytes.length]).toEqual([200, 1000])
  })

  it("storage that does not answer is 503 storage_unavailable, before any byte", async () => {
    const { file } = await smallFile()
    h().fail("storage")
    try {
      expectError(await toResponse(download(h(), file.id)), 503, "storage_unavailable")
    } finally {
      h().fail("storage", false)
    }
    expect((await download(h(), file.id)).status).toBe(200)
  })

  it("a file whose bytes are not stored yet is 409 state_conflict (its status as the reason)", async () => {
    const file = await uploadFile(h(), padded(PNG, 64, 9))
    await h().patchRecord(mine(h()), "file", file.id, { status: "pending" })
    expectError(await toResponse(download(h(), file.id)), 409, "state_conflict", { reason: "pending" })
    await h().patchRecord(mine(h()), "file", file.id, { status: "available" })
    expect((await download(h(), file.id)).status).toBe(200)
  })

  it("the description documents the binary answers (200, 206, 304, 416) and every header they carry", async () => {
    const { file } = await smallFile()
    const doc = (await h().request("GET", `${P}/openapi.json`, { secret: h().live })).body
    const op = doc.paths["/files/{file_id}/content"].get
    expect(Object.keys(op.responses["200"].content)).toEqual(["application/octet-stream"])
    expect(op.parameters.map((p: any) => p.name).filter(Boolean)).toEqual(["Range", "If-None-Match", "If-Range"])
    expect(op.responses["406"]).toBeUndefined()
    expect(op.responses["416"]["x-error-codes"]).toEqual(["http_error"])
    const transport = new Set(["content-type", "content-length", "date", "connection", "keep-alive", "transfer-encoding"])
    const answers: Array<[number, Download]> = [
      [200, await download(h(), file.id)],
      [206, await download(h(), file.id, { range: "bytes=0-9" })],
      [304, await download(h(), file.id, { "if-none-match": `"${file.sha256}"` })],
      [416, await download(h(), file.id, { range: "bytes=5000-" })]
    ]
    for (const [status, res] of answers) {
      expect(res.status).toBe(status)
      const response = op.responses[String(status)]
      const documented = new Set(Object.keys(response.$ref ? {} : response.headers).map((n) => n.toLowerCase()))
      const sent: Array<string> = []
      res.headers.forEach((_value, name) => sent.push(name))
      expect([status, sent.filter((name) => !transport.has(name) && !documented.has(name))]).toEqual([status, []])
    }
  })

  it("a certificate preview expires by the clock: 404 at expires_at, then the housekeeping removes its record and bytes; uploads stay", async () => {
    const { file: uploaded } = await smallFile()
    const file = await preview(h())
    const objectPath = h().storageDirectory === undefined ? undefined : join(h().storageDirectory!, "objects", h().account.account.id, "production", file.id)
    if (objectPath !== undefined) expect(existsSync(objectPath)).toBe(true)
    let moved = 0
    const advance = (ms: number) => {
      moved += ms
      h().advance(ms)
    }
    try {
      advance(24 * HOUR - 60_000)
      await h().housekeeping()
      expect((await api(h()).get(`/files/${file.id}`)).status).toBe(200)
      expect((await download(h(), file.id)).status).toBe(200)

      advance(60_000)
      // Gone to reads at expires_at, before the housekeeping runs.
      expectError(await api(h()).get(`/files/${file.id}`), 404, "not_found")
      expectError(await toResponse(download(h(), file.id)), 404, "not_found")
      expect(await h().storedRecord(mine(h()), "file", file.id)).toBeDefined()

      await h().housekeeping()
      expect(await h().storedRecord(mine(h()), "file", file.id)).toBeUndefined()
      if (objectPath !== undefined) expect(existsSync(objectPath)).toBe(false)
      expectError(await toResponse(download(h(), file.id)), 404, "not_found")
      // An uploaded file has no expiry.
      expect((await download(h(), uploaded.id)).status).toBe(200)
    } finally {
      h().advance(-moved)
    }
    // Removed, it stays gone with the clock put back.
    expectError(await api(h()).get(`/files/${file.id}`), 404, "not_found")
  })
})

/** A download as the harness's `Response`, for `expectError`. */
const toResponse = async (pending: Promise<Download>) => {
  const res = await pending
  return { status: res.status, headers: res.headers, body: res.body, text: res.bytes.toString("utf8") }
}
