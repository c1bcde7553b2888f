/**
 * The rules every described resource follows (§2.1, §3, §4.1, §4.2, §8.2), seen through the
 * simplest ones: showcases (trash, replicas, a file field, search) and tags (removed for
 * good, a unique name).
 */
import { createHash } from "node:crypto"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const api = (h: Harness, secret = h.live) => ({
  get: (path: string) => h.request("GET", `/api/v3${path}`, { secret }),
  post: (path: string, json: unknown) => h.request("POST", `/api/v3${path}`, { secret, json }),
  patch: (path: string, json: unknown, headers: Record<string, string> = {}) =>
    h.request("PATCH", `/api/v3${path}`, { secret, json, headers }),
  del: (path: string) => h.request("DELETE", `/api/v3${path}`, { secret })
})

const uploadPng = async (h: Harness, secret: string, purpose = "image") => {
  const bytes = Buffer.alloc(2048, 1)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const contentType = purpose === "image" ? "image/png" : "image/png"
  const session = await h.request("POST", "/api/v3/uploads", {
    secret,
    json: { purpose, filename: "a.png", size: bytes.length, content_type: contentType, sha256 }
  })
  await h.request("PUT", session.body.data.upload_urls[0].url, { secret, raw: bytes, headers: { "content-type": "application/octet-stream" } })
  const file = await h.request("POST", `/api/v3/uploads/${session.body.data.id}/completions`, { secret })
  return file.body.data.id as string
}

eachStore("described resources", (h) => {
  it("create answers 201 with Location, ETag and every field, null where empty (§2.1)", async () => {
    const res = await api(h()).post("/showcases", { name: "Spring" })
    expect(res.status).toBe(201)
    const showcase = res.body.data
    expect(res.headers.get("location")).toBe(`/api/v3/showcases/${showcase.id}`)
    expect(res.headers.get("etag")).toBe(`W/"showcase:${showcase.id}:1"`)
    expect(Object.keys(showcase)).toEqual(["object", "id", "name", "description", "status", "image", "created_at", "updated_at", "deleted", "revision"])
    expect(showcase).toMatchObject({ object: "showcase", name: "Spring", description: null, image: null, status: "active", deleted: false, revision: "1" })
    expect(showcase.id).toMatch(/^shw_[0-9A-Za-z]{9}$/)
  })

  it("a single read carries the ETag of its revision; PATCH changes only the fields sent", async () => {
    const created = (await api(h()).post("/showcases", { name: "Summer", description: "Warm" })).body.data
    const read = await api(h()).get(`/showcases/${created.id}`)
    expect(read.headers.get("etag")).toBe(`W/"showcase:${created.id}:1"`)
    const patched = await api(h()).patch(`/showcases/${created.id}`, { status: "inactive" }, { "if-match": read.headers.get("etag")! })
    expect(patched.status).toBe(200)
    expect(patched.body.data).toMatchObject({ name: "Summer", description: "Warm", status: "inactive", revision: "2" })
    const cleared = await api(h()).patch(`/showcases/${created.id}`, { description: null })
    expect(cleared.body.data.description).toBeNull()
  })

  it("If-Match with a stale ETag is 412 revision_mismatch and nothing is saved; malformed is 400", async () => {
    const created = (await api(h()).post("/showcases", { name: "Autumn" })).body.data
    await api(h()).patch(`/showcases/${created.id}`, { name: "Fall" })
    const stale = await api(h()).patch(`/showcases/${created.id}`, { name: "Late" }, { "if-match": `W/"showcase:${created.id}:1"` })
    expect(stale.status).toBe(412)
    expect(stale.body.error.code).toBe("revision_mismatch")
    expect((await api(h()).get(`/showcases/${created.id}`)).body.data.name).toBe("Fall")
    const malformed = await api(h()).patch(`/showcases/${created.id}`, { name: "Late" }, { "if-match": "v2" })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error.code).toBe("if_match_invalid")
  })

  it("DELETE moves to the trash: listed with deleted=true, gone elsewhere; PATCH deleted=false restores (§3)", async () => {
    const created = (await api(h()).post("/showcases", { name: "To trash" })).body.data
    const trashed = await api(h()).del(`/showcases/${created.id}`)
    expect(trashed.status).toBe(200)
    expect(trashed.body.data.deleted).toBe(true)
    expectError(await api(h()).get(`/showcases/${created.id}`), 404, "not_found")
    const trash = await api(h()).get(`/showcases?deleted=true&limit=200`)
    expect(trash.body.data.map((s: { id: string }) => s.id)).toContain(created.id)
    const live = await api(h()).get(`/showcases?limit=200`)
    expect(live.body.data.map((s: { id: string }) => s.id)).not.toContain(created.id)
    expectError(await api(h()).patch(`/showcases/${created.id}`, { name: "x" }), 404, "not_found")
    const restored = await api(h()).patch(`/showcases/${created.id}`, { deleted: false })
    expect(restored.status).toBe(200)
    expect(restored.body.data.deleted).toBe(false)
    expect((await api(h()).get(`/showcases/${created.id}`)).status).toBe(200)
  })

  it("deleted=true in a PATCH is 422 validation_failed (3.4.0)", async () => {
    const created = (await api(h()).post("/showcases", { name: "Stay" })).body.data
    const res = await api(h()).patch(`/showcases/${created.id}`, { deleted: true })
    expectError(res, 422, "validation_failed", { field: "deleted" })
  })

  it("lists filter, search with q, sort and paginate with cursors", async () => {
    const tag = `zq${Date.now()}`
    for (const name of [`${tag} b`, `${tag} a`, `${tag} c`]) await api(h()).post("/showcases", { name, status: "inactive" })
    const byName = await api(h()).get(`/showcases?q=${tag}&sort=name&limit=2`)
    expect(byName.body.data.map((s: { name: string }) => s.name)).toEqual([`${tag} a`, `${tag} b`])
    const next = await api(h()).get(`/showcases?q=${tag}&sort=name&limit=2&cursor=${encodeURIComponent(byName.body.page.next_cursor)}`)
    expect(next.body.data.map((s: { name: string }) => s.name)).toEqual([`${tag} c`])
    expect(next.body.page.next_cursor).toBeNull()
    const reversed = await api(h()).get(`/showcases?q=${tag.toUpperCase()}&sort=-name`)
    expect(reversed.body.data.map((s: { name: string }) => s.name)).toEqual([`${tag} c`, `${tag} b`, `${tag} a`])
    const active = await api(h()).get(`/showcases?q=${tag}&status=active`)
    expect(active.body.data).toEqual([])
    const badSort = await api(h()).get(`/showcases?sort=status`)
    expectError(badSort, 422, "validation_failed", { parameter: "sort" })
    const badStatus = await api(h()).get(`/showcases?status=open`)
    expectError(badStatus, 422, "validation_failed", { parameter: "status" })
  })

  it("§8.2's plain text limit is 64 KiB of UTF-8, whatever the script; a name's own limit counts characters", async () => {
    // 16,384 emoji are 65,536 bytes: they fit; 21,846 Cyrillic letters are 43,692 bytes: they fit too.
    const fits = await api(h()).post("/showcases", { name: "Ж".repeat(200), description: "😀".repeat(16_384) })
    expect(fits.status, fits.text.slice(0, 300)).toBe(201)
    expect((await api(h()).post("/showcases", { name: "Cyrillic", description: "Ж".repeat(21_846) })).status).toBe(201)
    // 32,769 two-byte letters are 65,538 bytes (UTF-16 would count 32,769): too large.
    expectError(await api(h()).post("/showcases", { name: "n", description: "Ж".repeat(32_769) }), 422, "validation_failed", {
      field: "description",
      code: "too_long",
      reason: "utf8_bytes"
    })
  })

  it("limits of §8.2: a name over its length, plain text over 64 KiB → 422 itemized", async () => {
    const res = await api(h()).post("/showcases", { name: "n".repeat(201), description: "d".repeat(64 * 1024 + 1) })
    expectError(res, 422, "validation_failed", { field: "name", code: "too_long" })
    expect(res.body.error.details.map((d: { field: string; code: string }) => [d.field, d.code])).toEqual([
      ["name", "too_long"],
      ["description", "too_long"]
    ])
  })

  it("a file field takes a file of the account with the right purpose; another account's file is 422 on the field", async () => {
    const own = await uploadPng(h(), h().live)
    const ok = await api(h()).post("/showcases", { name: "With image", image: own })
    expect(ok.status).toBe(201)
    expect(ok.body.data.image).toBe(own)
    const other = await h().openAccount(`files-${Date.now()}`)
    const foreign = await uploadPng(h(), other.credentials.find((c) => c.environment === "production")!.secret)
    const refused = await api(h()).post("/showcases", { name: "Foreign", image: foreign })
    expectError(refused, 422, "validation_failed", { field: "image", reason: "not_found" })
    const sandboxFile = await uploadPng(h(), h().test)
    const crossEnvironment = await api(h()).patch(`/showcases/${ok.body.data.id}`, { image: sandboxFile })
    expectError(crossEnvironment, 422, "validation_failed", { field: "image", reason: "not_found" })
    const malformed = await api(h()).post("/showcases", { name: "Bad", image: "fil_?" })
    expectError(malformed, 422, "validation_failed", { field: "image", code: "invalid" })
  })

  it("a replicated record is read-only except status: 403 replica_readonly (3.3.0)", async () => {
    const created = (await api(h()).post("/showcases", { name: "Replica" })).body.data
    await h().patchRecord({ accountId: h().account.account.id, environment: "production" }, "showcase", created.id, {
      replica_of: { account_id: "acc_000000001", id: "shw_000000001" }
    })
    const renamed = await api(h()).patch(`/showcases/${created.id}`, { name: "Renamed" })
    expect(renamed.status).toBe(403)
    expect(renamed.body.error.code).toBe("replica_readonly")
    const status = await api(h()).patch(`/showcases/${created.id}`, { status: "inactive" })
    expect(status.status).toBe(200)
    expect(status.body.data.status).toBe("inactive")
    const trashed = await api(h()).del(`/showcases/${created.id}`)
    expect(trashed.status).toBe(403)
    expect(trashed.body.error.code).toBe("replica_readonly")
  })

  it("every change leaves its audit entry", async () => {
    const created = await api(h()).post("/showcases", { name: "Audited" })
    const entries = await api(h()).get(`/audit-entries?resource_id=${created.body.data.id}`)
    expect(entries.body.data.map((e: { action: string; request_id: string }) => [e.action, e.request_id])).toEqual([
      ["showcase.created", created.headers.get("x-request-id")]
    ])
  })

  it("permissions: a read-only credential reads but does not write (403); a policy limited to one showcase sees only it", async () => {
    const first = (await api(h()).post("/showcases", { name: "Visible" })).body.data
    const second = (await api(h()).post("/showcases", { name: "Hidden" })).body.data
    const readOnly = (await api(h()).post("/credentials", { name: "ro", policies: [{ template: "read_only" }] })).body.data.secret.value
    expect((await api(h(), readOnly).get(`/showcases/${first.id}`)).status).toBe(200)
    const denied = await api(h(), readOnly).post("/showcases", { name: "No" })
    expect(denied.status).toBe(403)
    expect(denied.body.error.code).toBe("permission_denied")
    const limited = (
      await api(h()).post("/credentials", { name: "one", policies: [{ capabilities: ["showcases.read"], resources: [first.id] }] })
    ).body.data.secret.value
    expect((await api(h(), limited).get(`/showcases/${first.id}`)).status).toBe(200)
    expectError(await api(h(), limited).get(`/showcases/${second.id}`), 404, "not_found")
    const listed = await api(h(), limited).get(`/showcases?limit=200`)
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([first.id])
  })

  it("unknown body fields are 422 unknown_field; managed fields cannot be written", async () => {
    const res = await api(h()).post("/showcases", { name: "X", id: "shw_000000001", revision: "9" })
    expectError(res, 422, "unknown_field", { field: "id", code: "unknown_field" })
    expectError(res, 422, "unknown_field", { field: "revision", code: "unknown_field" })
    expect(res.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(["id", "revision"])
  })

  it("a resource removed for good answers 204 and is then gone; a unique name is 409 already_exists", async () => {
    const name = `Group ${Date.now()}`
    const created = await api(h()).post("/tags", { name })
    expect(created.status).toBe(201)
    const duplicate = await api(h()).post("/tags", { name })
    expect(duplicate.status).toBe(409)
    expect(duplicate.body.error).toMatchObject({ code: "already_exists", details: [{ field: "name", code: "already_exists" }] })
    const removed = await api(h()).del(`/tags/${created.body.data.id}`)
    expect(removed.status).toBe(204)
    expectError(await api(h()).get(`/tags/${created.body.data.id}`), 404, "not_found")
    expect((await api(h()).post("/tags", { name })).status).toBe(201)
  })

  it("resources of one tenant are invisible to another (404)", async () => {
    const created = (await api(h()).post("/showcases", { name: "Mine" })).body.data
    expectError(await api(h(), h().test).get(`/showcases/${created.id}`), 404, "not_found")
    expectError(await api(h(), h().test).patch(`/showcases/${created.id}`, { name: "Theirs" }), 404, "not_found")
  })
})

eachStore("resources outside the contract", (h) => {
  it("serves no /tag-groups: tag groups are not a resource of v3 (503 operation_not_catalogued, §7)", async () => {
    expectError(await api(h()).get("/tag-groups"), 503, "operation_not_catalogued")
    expectError(await api(h()).post("/tag-groups", { name: "G" }), 503, "operation_not_catalogued")
  })

  it("names no tag group in the event types, the capabilities or the batch types", async () => {
    const types = (await api(h()).get("/event-types")).body.data.map((t: { type: string }) => t.type)
    expect(types).toContain("tag.created")
    expect(types.filter((type: string) => type.startsWith("tag_group"))).toEqual([])
    const capabilities: Array<string> = (await api(h()).get("/capabilities")).body.data.capabilities
    expect(capabilities).toContain("tags.read")
    expect(capabilities.filter((capability) => capability.startsWith("tag_groups"))).toEqual([])
    const batch = await api(h()).post("/operations", { type: "tag_groups.create", items: [{ key: "a", name: "G" }] })
    expectError(batch, 422, "operation_type_unknown")
  })
})
