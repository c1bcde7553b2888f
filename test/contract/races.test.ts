/**
 * Races end in the contract's 4xx (§4.1, §7). Concurrent writers of one thing each get an
 * answer the contract names: the winner its 2xx, every loser a 409 (`idempotency_in_progress`,
 * `state_conflict` with its reason, `already_exists`), a 412 (`revision_mismatch`) or a 404, or
 * the final state when the call is safe to repeat. 503 means a dependency is really gone, never
 * that another request got there first. `docs/reliability.md` lists each race and its answer.
 *
 * Every race is run on both stores (memory records with memory file storage; PostgreSQL with
 * local files), several times, with every request sent at once.
 */
import { createHash } from "node:crypto"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { expect, it } from "vitest"
import { eachStore, freshKey, type Harness, type RequestOptions, type Response } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const P = "/api/v3"
const MIB = 1024 ** 2

/** `size` bytes of a PNG image (its signature, then a pattern no signature matches). */
const png = (size: number, seed = 7): Uint8Array => {
  const bytes = new Uint8Array(size)
  let x = seed
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    bytes[i] = (x >>> 16) & 0xff
  }
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  return bytes
}
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** `n` copies of one request, all sent before any answer is read. */
const all = (n: number, send: (i: number) => Promise<Response>) => Promise.all(Array.from({ length: n }, (_, i) => send(i)))

/** No answer of a race is a 5xx. */
const expectNoServerError = (answers: ReadonlyArray<Response>) => {
  const failed = answers.filter((r) => r.status >= 500).map((r) => `${r.status} ${r.text}`)
  expect(failed, "a race answered 5xx").toEqual([])
}

const client = (h: () => Harness) => {
  const call = (method: string, path: string, options: RequestOptions = {}) => h().request(method, P + path, { secret: h().live, ...options })

  /** A session whose parts have all arrived (`bytes` as a PNG image). */
  const readyUpload = async (bytes: Uint8Array) => {
    const res = await call("POST", "/uploads", {
      json: { purpose: "image", filename: "race.png", size: bytes.length, content_type: "image/png", sha256: sha256(bytes) }
    })
    expect(res.status, res.text).toBe(201)
    const { id, part_size: partSize } = res.body.data as { id: string; part_size: number }
    for (let i = 0; i * partSize < bytes.length; i++) {
      const part = await putPart(id, i + 1, bytes.subarray(i * partSize, (i + 1) * partSize))
      expect(part.status, part.text).toBe(200)
    }
    return id
  }
  const putPart = (id: string, number: number, bytes: Uint8Array) =>
    call("PUT", `/uploads/${id}/parts/${number}`, { raw: bytes, headers: { "content-type": "application/octet-stream" } })
  const complete = (id: string, options: RequestOptions = {}) => call("POST", `/uploads/${id}/completions`, options)
  const abandon = (id: string) => call("DELETE", `/uploads/${id}`)
  const getUpload = async (id: string) => {
    const res = await call("GET", `/uploads/${id}`)
    expect(res.status, res.text).toBe(200)
    return res.body.data as { status: string; file_id: string | null; parts: Array<unknown> }
  }
  /** Local storage (PostgreSQL runs): what is left under `uploads/` and `objects/<account>`. */
  const storedEntries = (dir: "uploads" | "objects") => {
    const root = h().storageDirectory
    if (root === undefined) return undefined
    const path = dir === "uploads" ? join(root, "uploads") : join(root, "objects", h().account.account.id, "production")
    return existsSync(path) ? readdirSync(path) : []
  }
  return { call, readyUpload, putPart, complete, abandon, getUpload, storedEntries }
}

eachStore("races", (h) => {
  const c = client(h)

  // -------------------------------------------------------------------------------------
  // Completions of one upload

  it("4 to 8 concurrent completions of one upload, ten times: one file; each answer is that file (201) or 409 state_conflict (completing); never 503", async () => {
    const objectsBefore = c.storedEntries("objects")?.length ?? 0
    for (let round = 0; round < 10; round++) {
      const n = 4 + (round % 5)
      const id = await c.readyUpload(png(100 + round, round))
      const answers = await all(n, () => c.complete(id))
      expectNoServerError(answers)
      const files = answers.filter((r) => r.status === 201)
      expect(files.length, "at least the winner made the file").toBeGreaterThan(0)
      const fileIds = new Set(files.map((r) => r.body.data.id as string))
      expect(fileIds.size, "one file, whoever answered it").toBe(1)
      for (const r of answers) if (r.status !== 201) expectError(r, 409, "state_conflict", { reason: "completing" })
      const session = await c.getUpload(id)
      expect(session.status).toBe("completed")
      expect(session.file_id).toBe([...fileIds][0])
      // Completing it again now answers that file (the operation is safe to repeat).
      const again = await c.complete(id)
      expect(again.status, again.text).toBe(201)
      expect(again.body.data.id).toBe(session.file_id)
    }
    // Local storage: one object per file, and nothing of the sessions left behind.
    const objects = c.storedEntries("objects")
    if (objects !== undefined) expect(objects.length - objectsBefore).toBe(10)
  })

  it("concurrent completions of a 9 MiB upload (two parts): one file, the others the file or 409 (completing)", async () => {
    for (let round = 0; round < 3; round++) {
      const id = await c.readyUpload(png(9 * MIB, 100 + round))
      const answers = await all(4, () => c.complete(id))
      expectNoServerError(answers)
      const fileIds = new Set(answers.filter((r) => r.status === 201).map((r) => r.body.data.id as string))
      expect(fileIds.size).toBe(1)
      for (const r of answers) if (r.status !== 201) expectError(r, 409, "state_conflict", { reason: "completing" })
      expect((await c.getUpload(id)).file_id).toBe([...fileIds][0])
    }
  })

  it("concurrent completions with one Idempotency-Key: one runs, the others 409 idempotency_in_progress or its replay; then the key replays", async () => {
    for (let round = 0; round < 5; round++) {
      const id = await c.readyUpload(png(120 + round, 200 + round))
      const key = freshKey()
      const answers = await all(6, () => c.complete(id, { idempotencyKey: key }))
      expectNoServerError(answers)
      const executed = answers.filter((r) => r.status === 201 && r.headers.get("idempotent-replayed") === null)
      expect(executed).toHaveLength(1)
      const fileId = executed[0]!.body.data.id as string
      for (const r of answers) {
        if (r === executed[0]) continue
        if (r.status === 201) {
          expect(r.headers.get("idempotent-replayed")).toBe("true")
          expect(r.body).toEqual(executed[0]!.body)
        } else {
          expectError(r, 409, "idempotency_in_progress")
        }
      }
      const replay = await c.complete(id, { idempotencyKey: key })
      expect(replay.status, replay.text).toBe(201)
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
      expect(replay.body.data.id).toBe(fileId)
    }
  })

  it("a completion racing a DELETE of the session, ten times: the winner's 2xx, the loser's 409 state_conflict with the winner's state; never 503", async () => {
    const wins = { completion: 0, deletion: 0 }
    for (let round = 0; round < 10; round++) {
      const id = await c.readyUpload(png(140 + round, 300 + round))
      // Alternate which request leaves first.
      const [completion, deletion] =
        round % 2 === 0
          ? await Promise.all([c.complete(id), c.abandon(id)])
          : await Promise.all([c.abandon(id), c.complete(id)]).then(([d, f]) => [f, d] as const)
      expectNoServerError([completion, deletion])
      const session = await c.getUpload(id)
      if (completion.status === 201) {
        wins.completion++
        expectError(deletion, 409, "state_conflict")
        expect(["completed", "completing"]).toContain(deletion.body.error.reason ?? deletion.body.error.details[0]?.reason)
        expect(session.status).toBe("completed")
        expect(session.file_id).toBe(completion.body.data.id)
      } else {
        wins.deletion++
        expect(deletion.status, deletion.text).toBe(200)
        expectError(completion, 409, "state_conflict", { reason: "abandoned" })
        expect(session.status).toBe("abandoned")
        expect(session.file_id).toBeNull()
      }
    }
    expect(wins.completion + wins.deletion).toBe(10)
  })

  it("parts sent while the session is completed or deleted: 200 or 409 state_conflict, never 503", async () => {
    for (let round = 0; round < 6; round++) {
      const bytes = png(160 + round, 400 + round)
      const id = await c.readyUpload(bytes)
      const ending = round % 2 === 0 ? c.complete(id) : c.abandon(id)
      const parts = all(4, () => c.putPart(id, 1, bytes))
      const answers = [await ending, ...(await parts)]
      expectNoServerError(answers)
      expect(answers[0]!.status, answers[0]!.text).toBe(round % 2 === 0 ? 201 : 200)
      for (const r of answers.slice(1)) if (r.status !== 200) expectError(r, 409, "state_conflict")
    }
    // Local storage: no session is left with its directory once it ended.
    const left = c.storedEntries("uploads")
    if (left !== undefined) expect(left).toEqual([])
  })

  // -------------------------------------------------------------------------------------
  // The other writers

  it("concurrent PATCHes with one If-Match: one 200, the others 412 revision_mismatch; never 503", async () => {
    for (let round = 0; round < 5; round++) {
      const created = await c.call("POST", "/showcases", { json: { name: `Race ${freshKey()}` } })
      expect(created.status, created.text).toBe(201)
      const id = created.body.data.id as string
      const etag = created.headers.get("etag")!
      const answers = await all(6, (i) => c.call("PATCH", `/showcases/${id}`, { json: { name: `Renamed ${i}` }, headers: { "if-match": etag } }))
      expectNoServerError(answers)
      const ok = answers.filter((r) => r.status === 200)
      expect(ok).toHaveLength(1)
      for (const r of answers) if (r.status !== 200) expectError(r, 412, "revision_mismatch")
      const read = await c.call("GET", `/showcases/${id}`)
      expect(read.body.data).toMatchObject({ name: ok[0]!.body.data.name, revision: "2" })
    }
  })

  it("concurrent PATCHes without If-Match: each applies in turn (all 200, revisions 2..n+1); never 503", async () => {
    const created = await c.call("POST", "/showcases", { json: { name: `Race ${freshKey()}` } })
    const id = created.body.data.id as string
    const answers = await all(6, (i) => c.call("PATCH", `/showcases/${id}`, { json: { description: `d${i}` } }))
    expectNoServerError(answers)
    expect(answers.map((r) => r.status)).toEqual(Array(6).fill(200))
    expect(answers.map((r) => Number(r.body.data.revision)).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7])
  })

  it("concurrent DELETEs of one trashable resource: one 200 (deleted), the others 404; never 503", async () => {
    for (let round = 0; round < 5; round++) {
      const id = (await c.call("POST", "/showcases", { json: { name: `Race ${freshKey()}` } })).body.data.id as string
      const answers = await all(6, () => c.call("DELETE", `/showcases/${id}`))
      expectNoServerError(answers)
      expect(answers.filter((r) => r.status === 200)).toHaveLength(1)
      for (const r of answers) if (r.status !== 200) expectError(r, 404, "not_found")
    }
  })

  it("concurrent DELETEs of a resource removed for good: one 204, the others 404; never 503", async () => {
    for (let round = 0; round < 5; round++) {
      const group = await c.call("POST", "/tags", { json: { name: `G ${freshKey()}` } })
      expect(group.status, group.text).toBe(201)
      const answers = await all(6, () => c.call("DELETE", `/tags/${group.body.data.id}`))
      expectNoServerError(answers)
      expect(answers.filter((r) => r.status === 204)).toHaveLength(1)
      for (const r of answers) if (r.status !== 204) expectError(r, 404, "not_found")
    }
  })

  it("concurrent DELETEs of a never-used credential: one 204, the others 404; never 503", async () => {
    for (let round = 0; round < 3; round++) {
      const issued = await c.call("POST", "/credentials", { json: { name: `c-${freshKey()}` } })
      expect(issued.status, issued.text).toBe(201)
      const answers = await all(6, () => c.call("DELETE", `/credentials/${issued.body.data.id}`))
      expectNoServerError(answers)
      expect(answers.filter((r) => r.status === 204)).toHaveLength(1)
      for (const r of answers) if (r.status !== 204) expectError(r, 404, "not_found")
    }
  })

  it("concurrent creates with one unique name: one 201, the others 409 already_exists on the field; never 503", async () => {
    for (let round = 0; round < 5; round++) {
      const name = `Unique ${freshKey()}`
      const answers = await all(6, () => c.call("POST", "/tags", { json: { name } }))
      expectNoServerError(answers)
      expect(answers.filter((r) => r.status === 201)).toHaveLength(1)
      for (const r of answers) if (r.status !== 201) expectError(r, 409, "already_exists", { field: "name" })
    }
  })

  it("concurrent POSTs with one Idempotency-Key: one 201, the others 409 idempotency_in_progress or its replay; one record", async () => {
    for (let round = 0; round < 5; round++) {
      const key = freshKey()
      const name = `Once ${key}`
      const answers = await all(6, () => c.call("POST", "/showcases", { json: { name }, idempotencyKey: key }))
      expectNoServerError(answers)
      const executed = answers.filter((r) => r.status === 201 && r.headers.get("idempotent-replayed") === null)
      expect(executed).toHaveLength(1)
      for (const r of answers) {
        if (r === executed[0]) continue
        if (r.status === 201) expect(r.body).toEqual(executed[0]!.body)
        else expectError(r, 409, "idempotency_in_progress")
      }
      const listed = await c.call("GET", `/showcases?q=${encodeURIComponent(name)}`)
      expect(listed.status, listed.text).toBe(200)
      expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([executed[0]!.body.data.id])
    }
  })
})
