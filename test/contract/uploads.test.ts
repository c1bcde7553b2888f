/**
 * Upload sessions and files over HTTP (§8.2 "file: 5 GiB, always through an upload session",
 * §7 `upload_integrity_mismatch` / `storage_unavailable` / `payload_too_large` /
 * `unsupported_media_type`, release 3.4.0 purposes, open-points "Uploads" routes).
 *
 * A session declares the file (purpose, filename, size, content type, SHA-256), takes its
 * numbered parts as raw bytes, and is completed into a file only when the stored bytes match
 * the declaration. Files are small here: 9 MiB makes two parts (8 MiB + 1 MiB), which is
 * already past the 1 MiB JSON body limit.
 */
import { createHash } from "node:crypto"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { CLAIM_LEASE_MS } from "@syllabus/core"
import { expect, it } from "vitest"
import { eventually } from "../support/eventually.js"
import { eachStore, freshKey, type Harness, type RequestOptions, type Response } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const P = "/api/v3"
const MIB = 1024 ** 2
const GIB = 1024 ** 3
const PART = 8 * MIB
const HOUR_MS = 3600_000

// ---------------------------------------------------------------------------------------
// Bytes

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

/** `size` bytes starting with `head`, padded with a pattern that no signature matches. */
const padded = (head: ArrayLike<number>, size: number, seed = 7): Uint8Array => {
  const bytes = new Uint8Array(size)
  let x = seed
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    bytes[i] = (x >>> 16) & 0xff
  }
  bytes.set(Array.from(head).slice(0, size))
  return bytes
}

const png = (size: number, seed?: number) => padded(PNG_SIGNATURE, size, seed)
const pdf = (size: number, seed?: number) => padded(Buffer.from("%PDF-1.7\n"), size, seed)
/** Bytes that are no known type: they start with zeros. */
const noise = (size: number) => padded([0, 0, 0, 0, 0, 0, 0, 0], size)

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** The parts of `bytes` at the session's part size, numbered from 1. */
const split = (bytes: Uint8Array, partSize: number): Array<Uint8Array> =>
  Array.from({ length: Math.ceil(bytes.length / partSize) }, (_, i) => bytes.subarray(i * partSize, (i + 1) * partSize))

// ---------------------------------------------------------------------------------------
// Client

let counter = 0
const freshSubdomain = (tag: string) => `${tag}-${process.pid}-${Date.now()}-${++counter}`

interface Declaration {
  readonly purpose?: string
  readonly filename?: string
  readonly size?: number
  readonly content_type?: string
  readonly sha256?: string
}

const client = (h: () => Harness) => {
  const call = (method: string, path: string, options: RequestOptions = {}) => h().request(method, P + path, options)
  const asLive = (method: string, path: string, options: RequestOptions = {}) => call(method, path, { secret: h().live, ...options })

  /** POST /uploads declaring `bytes` (as a PNG image unless overridden). */
  const declare = (bytes: Uint8Array, overrides: Declaration = {}, options: RequestOptions = {}) =>
    asLive("POST", "/uploads", {
      json: {
        purpose: "image",
        filename: "picture.png",
        size: bytes.length,
        content_type: "image/png",
        sha256: sha256(bytes),
        ...overrides
      },
      ...options
    })

  /** A session for `bytes`; fails the test unless 201. */
  const open = async (bytes: Uint8Array, overrides: Declaration = {}, options: RequestOptions = {}) => {
    const res = await declare(bytes, overrides, options)
    expect(res.status, res.text).toBe(201)
    return res.body.data as { id: string; part_size: number; parts_count: number } & Record<string, any>
  }

  const putPart = (uploadId: string, number: number | string, bytes: Uint8Array, options: RequestOptions = {}) =>
    asLive("PUT", `/uploads/${uploadId}/parts/${number}`, {
      raw: bytes,
      headers: { "content-type": "application/octet-stream" },
      ...options
    })

  /** Send every part of `bytes`; fails the test unless each is 200. */
  const sendAll = async (uploadId: string, bytes: Uint8Array, partSize: number) => {
    for (const [i, part] of split(bytes, partSize).entries()) {
      const res = await putPart(uploadId, i + 1, part)
      expect(res.status, res.text).toBe(200)
    }
  }

  const complete = (uploadId: string, options: RequestOptions = {}) => asLive("POST", `/uploads/${uploadId}/completions`, options)
  const getUpload = (uploadId: string, secret = h().live) => call("GET", `/uploads/${uploadId}`, { secret })
  const getFile = (fileId: string, secret = h().live) => call("GET", `/files/${fileId}`, { secret })

  /** A whole file of `bytes` (a PNG image unless overridden); its ID. */
  const uploadFile = async (bytes: Uint8Array, overrides: Declaration = {}) => {
    const session = await open(bytes, overrides)
    await sendAll(session.id, bytes, session.part_size)
    const done = await complete(session.id)
    expect(done.status, done.text).toBe(201)
    return done.body.data.id as string
  }

  /** The entries of `<storage>/uploads` (local storage only). */
  const storedUploads = (): Array<string> => {
    const dir = join(h().storageDirectory!, "uploads")
    return existsSync(dir) ? readdirSync(dir) : []
  }

  /** Open a session and tell which `<storage>/uploads` entry it made (local storage only, else undefined). */
  const openTracked = async (bytes: Uint8Array, overrides: Declaration = {}) => {
    const local = h().storageDirectory !== undefined
    const before = local ? new Set(storedUploads()) : new Set<string>()
    const session = await open(bytes, overrides)
    if (!local) return { session, entry: undefined }
    const made = storedUploads().filter((e) => !before.has(e))
    expect(made).toHaveLength(1)
    return { session, entry: made[0]! }
  }

  const storedEntryExists = (entry: string) => existsSync(join(h().storageDirectory!, "uploads", entry))

  return {
    call,
    asLive,
    declare,
    open,
    putPart,
    sendAll,
    complete,
    getUpload,
    getFile,
    uploadFile,
    storedUploads,
    openTracked,
    storedEntryExists
  }
}

// ---------------------------------------------------------------------------------------

eachStore("uploads", (h) => {
  const c = client(h)

  // -------------------------------------------------------------------------------------
  // The whole journey

  it("a 9 MiB file in two parts sent in reverse order becomes a file matching its declaration", async () => {
    const bytes = png(9 * MIB)
    const created = await c.declare(bytes, { filename: "big.png" })
    expect(created.status, created.text).toBe(201)
    const session = created.body.data
    expect(created.headers.get("location")).toMatch(new RegExp(`/api/v3/uploads/${session.id}$`))
    expect(session).toMatchObject({
      object: "upload",
      purpose: "image",
      filename: "big.png",
      size: 9 * MIB,
      content_type: "image/png",
      sha256: sha256(bytes),
      status: "pending",
      part_size: PART,
      parts_count: 2,
      parts: [],
      file_id: null
    })
    expect(session.id).toMatch(/^upl_/)
    expect(Date.parse(session.expires_at) - Date.parse(session.created_at)).toBe(24 * HOUR_MS)
    expect(session.upload_urls).toEqual([
      { part_number: 1, method: "PUT", url: expect.stringMatching(new RegExp(`/api/v3/uploads/${session.id}/parts/1$`)), size: PART },
      { part_number: 2, method: "PUT", url: expect.stringMatching(new RegExp(`/api/v3/uploads/${session.id}/parts/2$`)), size: MIB }
    ])

    const [first, second] = split(bytes, PART) as [Uint8Array, Uint8Array]
    const put2 = await c.putPart(session.id, 2, second)
    expect(put2.status, put2.text).toBe(200)
    expect(put2.body.data).toMatchObject({ object: "upload_part", number: 2, size: MIB, sha256: sha256(second) })
    const put1 = await c.putPart(session.id, 1, first)
    expect(put1.status, put1.text).toBe(200)
    expect(put1.body.data).toMatchObject({ object: "upload_part", number: 1, size: PART, sha256: sha256(first) })

    const done = await c.complete(session.id)
    expect(done.status, done.text).toBe(201)
    const file = done.body.data
    expect(file).toMatchObject({
      object: "file",
      purpose: "image",
      filename: "big.png",
      size: 9 * MIB,
      content_type: "image/png",
      sha256: sha256(bytes)
    })
    expect(file.id).toMatch(/^fil_/)
    expect(done.headers.get("location")).toMatch(new RegExp(`/api/v3/files/${file.id}$`))

    const read = await c.getFile(file.id)
    expect(read.status, read.text).toBe(200)
    expect(read.body.data).toEqual(file)

    const after = await c.getUpload(session.id)
    expect(after.status).toBe(200)
    expect(after.body.data.status).toBe("completed")
    expect(after.body.data.file_id).toBe(file.id)
    expect(after.body.data.upload_urls).toEqual([])
  })

  // -------------------------------------------------------------------------------------
  // Parts

  it("a part over its declared size → 413 payload_too_large, and the part is not kept", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    const res = await c.putPart(session.id, 1, png(101))
    expectError(res, 413, "payload_too_large")
    const after = await c.getUpload(session.id)
    expect(after.body.data.parts).toEqual([])
  })

  it("a part under its declared size → 422 upload_integrity_mismatch (reason part_size), not kept", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    const res = await c.putPart(session.id, 1, bytes.subarray(0, 99))
    expectError(res, 422, "upload_integrity_mismatch", { reason: "part_size" })
    const after = await c.getUpload(session.id)
    expect(after.body.data.parts).toEqual([])
  })

  it("part number 0 or above parts_count → 404", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    expect(session.parts_count).toBe(1)
    expectError(await c.putPart(session.id, 0, bytes), 404, "not_found")
    expectError(await c.putPart(session.id, 2, bytes), 404, "not_found")
    const after = await c.getUpload(session.id)
    expect(after.body.data.parts).toEqual([])
  })

  it("a part sent as application/json → 415 unsupported_media_type", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    const res = await c.putPart(session.id, 1, bytes, { headers: { "content-type": "application/json" } })
    expectError(res, 415, "unsupported_media_type")
    expect((await c.getUpload(session.id)).body.data.parts).toEqual([])
  })

  it("a JSON route still refuses application/octet-stream → 415 (§1 rule 1)", async () => {
    const res = await c.asLive("POST", "/uploads", {
      raw: png(100),
      headers: { "content-type": "application/octet-stream" }
    })
    expectError(res, 415, "unsupported_media_type")
  })

  // -------------------------------------------------------------------------------------
  // Resume

  it("resume: GET lists the parts received with their SHA-256; completing early → 409 parts_missing; the rest then completes", async () => {
    const bytes = png(9 * MIB, 11)
    const session = await c.open(bytes)
    const [first, second] = split(bytes, session.part_size) as [Uint8Array, Uint8Array]
    expect((await c.putPart(session.id, 1, first)).status).toBe(200)

    const state = await c.getUpload(session.id)
    expect(state.status).toBe(200)
    expect(state.body.data.status).toBe("pending")
    expect(state.body.data.parts).toEqual([{ number: 1, size: PART, sha256: sha256(first), received_at: expect.any(String) }])

    const early = await c.complete(session.id)
    expectError(early, 409, "state_conflict", { reason: "parts_missing" })
    expect((await c.getUpload(session.id)).body.data.file_id).toBeNull()

    expect((await c.putPart(session.id, 2, second)).status).toBe(200)
    const done = await c.complete(session.id)
    expect(done.status, done.text).toBe(201)
    expect(done.body.data.sha256).toBe(sha256(bytes))
  })

  it("sending a part again replaces it", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    const wrong = png(100, 99)
    const firstTry = await c.putPart(session.id, 1, wrong)
    expect(firstTry.status).toBe(200)
    expect(firstTry.body.data.sha256).toBe(sha256(wrong))
    const secondTry = await c.putPart(session.id, 1, bytes)
    expect(secondTry.status).toBe(200)
    expect(secondTry.body.data.sha256).toBe(sha256(bytes))
    const state = await c.getUpload(session.id)
    expect(state.body.data.parts).toEqual([{ number: 1, size: 100, sha256: sha256(bytes), received_at: expect.any(String) }])
    const done = await c.complete(session.id)
    expect(done.status, done.text).toBe(201)
    expect(done.body.data.sha256).toBe(sha256(bytes))
  })

  // -------------------------------------------------------------------------------------
  // Integrity

  it("bytes whose SHA-256 differs from the declared one → 422 upload_integrity_mismatch (reason sha256), no file", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    await c.sendAll(session.id, png(100, 99), session.part_size)
    const res = await c.complete(session.id)
    expectError(res, 422, "upload_integrity_mismatch", { reason: "sha256" })
    const state = await c.getUpload(session.id)
    expect(state.body.data.status).toBe("pending")
    expect(state.body.data.file_id).toBeNull()
  })

  it("declared image/png but the bytes are a PDF → 422 upload_integrity_mismatch (reason content_type), no file", async () => {
    const bytes = pdf(100)
    const session = await c.open(bytes, { content_type: "image/png" })
    await c.sendAll(session.id, bytes, session.part_size)
    const res = await c.complete(session.id)
    expectError(res, 422, "upload_integrity_mismatch", { reason: "content_type" })
    const state = await c.getUpload(session.id)
    expect(state.body.data.status).toBe("pending")
    expect(state.body.data.file_id).toBeNull()
  })

  it("declared image/png but the bytes are of no known type → 422 upload_integrity_mismatch (reason content_type)", async () => {
    const bytes = noise(100)
    const session = await c.open(bytes, { content_type: "image/png" })
    await c.sendAll(session.id, bytes, session.part_size)
    expectError(await c.complete(session.id), 422, "upload_integrity_mismatch", { reason: "content_type" })
    expect((await c.getUpload(session.id)).body.data.file_id).toBeNull()
  })

  it("declared application/pdf with PDF bytes completes (the type check accepts what matches)", async () => {
    const bytes = pdf(300)
    const id = await c.uploadFile(bytes, { purpose: "pdf", filename: "doc.pdf", content_type: "application/pdf" })
    const read = await c.getFile(id)
    expect(read.body.data).toMatchObject({ purpose: "pdf", content_type: "application/pdf", size: 300, sha256: sha256(bytes) })
  })

  it("after an integrity mismatch the session stays open with no parts (storage consumed them): sending them again completes → 201", async () => {
    const bytes = png(9 * MIB, 5)
    const session = await c.open(bytes)
    const [first, second] = split(bytes, session.part_size) as [Uint8Array, Uint8Array]
    const corrupted = new Uint8Array(second)
    corrupted[corrupted.length - 1] = corrupted[corrupted.length - 1]! ^ 0xff
    expect((await c.putPart(session.id, 1, first)).status).toBe(200)
    expect((await c.putPart(session.id, 2, corrupted)).status).toBe(200)
    expectError(await c.complete(session.id), 422, "upload_integrity_mismatch", { reason: "sha256" })
    const reopened = (await c.getUpload(session.id)).body.data
    expect(reopened.status).toBe("pending")
    expect(reopened.parts).toEqual([])
    expect(reopened.upload_urls).toHaveLength(2)

    expect((await c.putPart(session.id, 1, first)).status).toBe(200)
    const resent = await c.putPart(session.id, 2, second)
    expect(resent.status, resent.text).toBe(200)
    expect(resent.body.data.sha256).toBe(sha256(second))
    const done = await c.complete(session.id)
    expect(done.status, done.text).toBe(201)
    expect(done.body.data).toMatchObject({ size: 9 * MIB, sha256: sha256(bytes) })
    expect((await c.getFile(done.body.data.id)).status).toBe(200)
  })

  // -------------------------------------------------------------------------------------
  // Validation and idempotency

  it("an unknown purpose → 422 validation_failed itemized on purpose", async () => {
    const res = await c.declare(png(100), { purpose: "video" })
    expectError(res, 422, "validation_failed")
    expect(res.body.error.details.some((d: any) => d.field === "purpose")).toBe(true)
  })

  it("a content_type the purpose does not accept (image + application/pdf) → 422 itemized on content_type", async () => {
    const res = await c.declare(pdf(100), { purpose: "image", content_type: "application/pdf" })
    expectError(res, 422, "validation_failed")
    expect(res.body.error.details.some((d: any) => d.field === "content_type")).toBe(true)
  })

  it("size must be 1 to 5 GiB: 0 and 5 GiB + 1 → 422 itemized on size; exactly 5 GiB is accepted", async () => {
    for (const size of [0, 5 * GIB + 1]) {
      const res = await c.declare(png(100), { size })
      expectError(res, 422, "validation_failed")
      expect(res.body.error.details.some((d: any) => d.field === "size"), res.text).toBe(true)
    }
    const max = await c.declare(png(100), { size: 5 * GIB })
    expect(max.status, max.text).toBe(201)
    expect(max.body.data.parts_count * max.body.data.part_size).toBeGreaterThanOrEqual(5 * GIB)
    expect(max.body.data.parts_count).toBeLessThanOrEqual(1000)
    expect(max.body.data.part_size).toBeGreaterThanOrEqual(PART)
    expect((await c.asLive("DELETE", `/uploads/${max.body.data.id}`)).status).toBe(200)
  })

  it("a malformed sha256 (uppercase, short) → 422 itemized on sha256", async () => {
    const good = sha256(png(100))
    for (const bad of [good.toUpperCase(), good.slice(0, 63)]) {
      const res = await c.declare(png(100), { sha256: bad })
      expectError(res, 422, "validation_failed")
      expect(res.body.error.details.some((d: any) => d.field === "sha256"), res.text).toBe(true)
    }
  })

  it("POST /uploads without Idempotency-Key → 422 idempotency_key_required", async () => {
    const res = await c.declare(png(100), {}, { idempotencyKey: null })
    expectError(res, 422, "idempotency_key_required")
  })

  it("a completion retried with the same Idempotency-Key replays the same 201 with Idempotent-Replayed: true", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    await c.sendAll(session.id, bytes, session.part_size)
    const key = freshKey()
    const first = await c.complete(session.id, { idempotencyKey: key })
    expect(first.status, first.text).toBe(201)
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    const replay = await c.complete(session.id, { idempotencyKey: key })
    expect(replay.status, replay.text).toBe(201)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.body.data).toEqual(first.body.data)
    expect(replay.headers.get("location")).toBe(first.headers.get("location"))
  })

  it("a completion whose first attempt died without a result (its claim past the lease) → 409 result_uncertain; the retry after it runs", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    await c.sendAll(session.id, bytes, session.part_size)
    const key = freshKey()
    // The first attempt hangs in the file storage, holding the key, as a process that died there would.
    h().stall("storage")
    let first: Promise<Response> | undefined
    try {
      first = c.complete(session.id, { idempotencyKey: key })
      // Its completion holds the session (it took the key before): seen in the store, without a request that could take the key itself.
      const tenant = { accountId: h().account.account.id, environment: "production" as const }
      await eventually(async () => expect(typeof (await h().storedRecord(tenant, "upload", session.id))?.completing_since).toBe("number"))
      expectError(await c.complete(session.id, { idempotencyKey: key }), 409, "idempotency_in_progress")
      // Past the claim's lease: no live request holds a key that long (its deadline is shorter).
      h().advance(CLAIM_LEASE_MS + 1000)
      const uncertain = await c.complete(session.id, { idempotencyKey: key })
      expectError(uncertain, 409, "result_uncertain")
    } finally {
      h().stall("storage", false)
      await first
      h().advance(-(CLAIM_LEASE_MS + 1000))
    }
    // The abandoned claim is gone: the retry runs (the session is complete by now: it answers that file, recorded).
    const retry = await c.complete(session.id, { idempotencyKey: key })
    expect([200, 201], retry.text).toContain(retry.status)
    expect(retry.headers.get("idempotent-replayed")).toBeNull()
    const replay = await c.complete(session.id, { idempotencyKey: key })
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
  })

  // -------------------------------------------------------------------------------------
  // Tenancy and permissions

  it("an upload or a file of another account is 404 (as if it did not exist)", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    const fileId = await c.uploadFile(png(120))
    const other = await h().openAccount(freshSubdomain("uploads-other"))
    const foreign = other.credentials.find((cr) => cr.environment === "production")!.secret
    expectError(await c.getUpload(session.id, foreign), 404, "not_found")
    expectError(await c.getFile(fileId, foreign), 404, "not_found")
    expectError(await c.putPart(session.id, 1, bytes, { secret: foreign }), 404, "not_found")
    expectError(await c.complete(session.id, { secret: foreign }), 404, "not_found")
    expectError(await c.call("DELETE", `/uploads/${session.id}`, { secret: foreign }), 404, "not_found")
    // Untouched for its owner.
    const mine = await c.getUpload(session.id)
    expect(mine.body.data.status).toBe("pending")
    expect(mine.body.data.parts).toEqual([])
  })

  it("a production file read with the sandbox credential is 404", async () => {
    const fileId = await c.uploadFile(png(130))
    expectError(await c.getFile(fileId, h().test), 404, "not_found")
    expect((await c.getFile(fileId)).status).toBe(200)
  })

  it("a read_only credential cannot open uploads (403 permission_denied) but reads files", async () => {
    const issued = await c.asLive("POST", "/credentials", {
      json: { name: `reader-${freshKey()}`, policies: [{ template: "read_only" }] }
    })
    expect(issued.status, issued.text).toBe(201)
    const reader = issued.body.data.secret.value as string
    const fileId = await c.uploadFile(png(140))
    const bytes = png(100)
    const denied = await c.declare(bytes, {}, { secret: reader })
    expectError(denied, 403, "permission_denied")
    const read = await c.getFile(fileId, reader)
    expect(read.status, read.text).toBe(200)
    expect(read.body.data.id).toBe(fileId)
  })

  // -------------------------------------------------------------------------------------
  // Storage outage

  it("with the file storage down, opening, sending a part and completing → 503 storage_unavailable; nothing half done", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    const entriesBefore = h().storageDirectory === undefined ? [] : c.storedUploads()
    try {
      h().fail("storage")
      expectError(await c.declare(png(110)), 503, "storage_unavailable")
      expectError(await c.putPart(session.id, 1, bytes), 503, "storage_unavailable")
    } finally {
      h().fail("storage", false)
    }
    if (h().storageDirectory !== undefined) expect(c.storedUploads().sort()).toEqual([...entriesBefore].sort())
    expect((await c.getUpload(session.id)).body.data.parts).toEqual([])

    expect((await c.putPart(session.id, 1, bytes)).status).toBe(200)
    try {
      h().fail("storage")
      expectError(await c.complete(session.id), 503, "storage_unavailable")
    } finally {
      h().fail("storage", false)
    }
    const between = await c.getUpload(session.id)
    expect(between.body.data.status).toBe("pending")
    expect(between.body.data.file_id).toBeNull()
    expect(between.body.data.parts).toHaveLength(1)

    const done = await c.complete(session.id)
    expect(done.status, done.text).toBe(201)
    expect(done.body.data.sha256).toBe(sha256(bytes))
  })

  // -------------------------------------------------------------------------------------
  // Abandon

  it("DELETE abandons a session: status abandoned, no upload_urls, later parts → 409, its stored parts removed", async () => {
    const bytes = png(9 * MIB, 13)
    const { session, entry } = await c.openTracked(bytes)
    const [first, second] = split(bytes, session.part_size) as [Uint8Array, Uint8Array]
    expect((await c.putPart(session.id, 1, first)).status).toBe(200)
    if (entry !== undefined) expect(c.storedEntryExists(entry)).toBe(true)

    const res = await c.asLive("DELETE", `/uploads/${session.id}`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.status).toBe("abandoned")
    expect(res.body.data.upload_urls).toEqual([])
    expect(res.body.data.file_id).toBeNull()

    expectError(await c.putPart(session.id, 2, second), 409, "state_conflict")
    expectError(await c.complete(session.id), 409, "state_conflict")
    const after = await c.getUpload(session.id)
    expect(after.body.data.status).toBe("abandoned")
    if (entry !== undefined) expect(c.storedEntryExists(entry)).toBe(false)
  })
})

// ---------------------------------------------------------------------------------------
// Expiry moves the clock: a server of its own.

eachStore("uploads expiry", (h) => {
  const c = client(h)

  it("24 h after creation a session is expired: parts and completion → 409 state_conflict; housekeeping frees its storage", async () => {
    const bytes = png(100)
    const { session, entry } = await c.openTracked(bytes)
    await c.sendAll(session.id, bytes, session.part_size)
    if (entry !== undefined) expect(c.storedEntryExists(entry)).toBe(true)

    h().advance(24 * HOUR_MS + 60_000)
    const state = await c.getUpload(session.id)
    expect(state.status).toBe(200)
    expect(state.body.data.status).toBe("expired")
    expect(state.body.data.file_id).toBeNull()
    expectError(await c.putPart(session.id, 1, bytes), 409, "state_conflict")
    expectError(await c.complete(session.id), 409, "state_conflict")

    await h().housekeeping()
    const swept = await c.getUpload(session.id)
    expect(swept.body.data.status).toBe("expired")
    if (entry !== undefined) expect(c.storedEntryExists(entry)).toBe(false)
  })

  it("an expired session offers no upload_urls (published Upload schema: empty once no longer pending)", async () => {
    const bytes = png(100)
    const session = await c.open(bytes)
    expect(session.upload_urls).toHaveLength(1)
    h().advance(24 * HOUR_MS + 60_000)
    const state = await c.getUpload(session.id)
    expect(state.body.data.status).toBe("expired")
    expect(state.body.data.upload_urls).toEqual([])
  })
})
