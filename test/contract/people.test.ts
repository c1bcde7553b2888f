/**
 * People (3.1.0): users (personal data behind `users.read_personal`, custom field values,
 * `PUT /users/{user_id}/tags`), tags (`users_count`, 409 `tag_in_use`), custom fields and
 * administrators (account-wide, write-only password, TOTP enrollment, removal ends human mode).
 * The rules every described resource shares are in resources.test.ts.
 */
import { Validator } from "@seriousme/openapi-schema-validator"
import { createHmac } from "node:crypto"
import { createRequire } from "node:module"
import { expect, it } from "vitest"
import { eachStore, freshKey, type Harness, type Response } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const api = (h: Harness, secret = h.live) => ({
  get: (path: string) => h.request("GET", `/api/v3${path}`, { secret }),
  post: (path: string, json?: unknown, options: { idempotencyKey?: string } = {}) =>
    h.request("POST", `/api/v3${path}`, { secret, ...(json === undefined ? {} : { json }), ...options }),
  patch: (path: string, json: unknown, headers: Record<string, string> = {}) => h.request("PATCH", `/api/v3${path}`, { secret, json, headers }),
  put: (path: string, json: unknown, headers: Record<string, string> = {}) => h.request("PUT", `/api/v3${path}`, { secret, json, headers }),
  del: (path: string) => h.request("DELETE", `/api/v3${path}`, { secret })
})

/** `[field, code]` of each detail item. */
const items = (res: Response) => res.body.error.details.map((d: { field: string; code: string }) => [d.field, d.code])

let counter = 0
const unique = (prefix: string) => `${prefix}${Date.now().toString(36)}${++counter}`

// RFC 6238 codes, computed here independently of the server.
const base32Decode = (text: string) => {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
  let bits = ""
  for (const c of text) bits += alphabet.indexOf(c).toString(2).padStart(5, "0")
  return Buffer.from((bits.match(/.{8}/g) ?? []).map((b) => parseInt(b, 2)))
}
const totp = (secret: string, atMs = Date.now()) => {
  const counterBytes = Buffer.alloc(8)
  counterBytes.writeBigUInt64BE(BigInt(Math.floor(atMs / 30_000)))
  const mac = createHmac("sha1", base32Decode(secret)).update(counterBytes).digest()
  const offset = mac[19]! & 0x0f
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, "0")
}

/** A production credential holding exactly these capabilities. */
const credentialWith = async (h: Harness, capabilities: ReadonlyArray<string>) => {
  const res = await api(h).post("/credentials", { name: unique("cap"), policies: [{ capabilities }] })
  expect(res.status, res.text).toBe(201)
  return res.body.data.secret.value as string
}

eachStore("people", (h) => {
  const newUser = async (fields: Record<string, unknown> = {}) => {
    const res = await api(h()).post("/users", { name: "Ada", email: `${unique("u")}@example.com`, ...fields })
    expect(res.status, res.text).toBe(201)
    return res.body.data
  }
  const newTag = async (fields: Record<string, unknown> = {}) => {
    const res = await api(h()).post("/tags", { name: unique("tag "), ...fields })
    expect(res.status, res.text).toBe(201)
    return res.body.data
  }
  const newField = async (fields: Record<string, unknown>) => {
    const res = await api(h()).post("/custom-fields", { key: unique("f"), label: "Field", ...fields })
    expect(res.status, res.text).toBe(201)
    return res.body.data
  }
  const newAdmin = async (secret = h().live) => {
    const res = await api(h(), secret).post("/administrators", { email: `${unique("a")}@example.com`, name: "Grace", password: "a long passphrase" })
    expect(res.status, res.text).toBe(201)
    return res.body.data
  }
  const credentialId = (environment: "production" | "sandbox") => h().account.credentials.find((c) => c.environment === environment)!.id

  // -------------------------------------------------------------------------------------
  // Users

  it("a new user has every field: email lowercased, no tags, no custom fields, never accessed", async () => {
    const res = await api(h()).post("/users", { name: "Ada", email: "Ada.Lovelace@Example.COM", phone: "+44 20 0000" })
    expect(res.status, res.text).toBe(201)
    const user = res.body.data
    expect(user.id).toMatch(/^usr_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/users/${user.id}`)
    expect(Object.keys(user)).toEqual([
      "object", "id", "name", "email", "document", "phone", "status", "tags", "custom_fields", "last_access_at",
      "created_at", "updated_at", "deleted", "revision"
    ])
    expect(user).toMatchObject({
      object: "user", name: "Ada", email: "ada.lovelace@example.com", document: null, phone: "+44 20 0000",
      status: "active", tags: [], custom_fields: {}, last_access_at: null, deleted: false, revision: "1"
    })
  })

  it("a user's email is unique in the account whatever its case: 409 already_exists on email", async () => {
    const email = `${unique("dup")}@example.com`
    await newUser({ email })
    const again = await api(h()).post("/users", { name: "Other", email: email.toUpperCase() })
    expectError(again, 409, "already_exists")
    expect(items(again)).toEqual([["email", "already_exists"]])
    const other = await newUser()
    expectError(await api(h()).patch(`/users/${other.id}`, { email }), 409, "already_exists")
  })

  it("a trashed user's email is free; restoring the user then conflicts (409)", async () => {
    const email = `${unique("trash")}@example.com`
    const first = await newUser({ email })
    expect((await api(h()).del(`/users/${first.id}`)).body.data.deleted).toBe(true)
    await newUser({ email })
    expectError(await api(h()).patch(`/users/${first.id}`, { deleted: false }), 409, "already_exists")
  })

  it("an email that is not one is 422 on email; tags cannot be written with the user (422 unknown_field)", async () => {
    const bad = await api(h()).post("/users", { name: "X", email: "not-an-email" })
    expectError(bad, 422, "validation_failed")
    expect(items(bad)).toEqual([["email", "invalid_value"]])
    const tag = await newTag()
    expectError(await api(h()).post("/users", { name: "X", email: `${unique("t")}@example.com`, tags: [tag.id] }), 422, "unknown_field")
    const user = await newUser()
    expectError(await api(h()).patch(`/users/${user.id}`, { tags: [tag.id] }), 422, "unknown_field")
  })

  it("personal data (email, document, phone) is null without users.read_personal, in every answer", async () => {
    const without = await credentialWith(h(), ["users.read", "users.create", "users.update"])
    const withPersonal = await credentialWith(h(), ["users.read", "users.read_personal"])
    const created = await api(h(), without).post("/users", {
      name: "Private", email: `${unique("p")}@example.com`, document: "123.456.789-00", phone: "+55 11 0000"
    })
    expect(created.status, created.text).toBe(201)
    const hidden = { email: null, document: null, phone: null }
    expect(created.body.data).toMatchObject({ name: "Private", ...hidden })
    expect((await api(h(), without).get(`/users/${created.body.data.id}`)).body.data).toMatchObject(hidden)
    const page = await api(h(), without).get(`/users?limit=200`)
    expect(page.body.data.find((u: { id: string }) => u.id === created.body.data.id)).toMatchObject(hidden)
    expect((await api(h(), without).patch(`/users/${created.body.data.id}`, { name: "Renamed" })).body.data).toMatchObject(hidden)
    const shown = await api(h(), withPersonal).get(`/users/${created.body.data.id}`)
    expect(shown.body.data).toMatchObject({ document: "123.456.789-00", phone: "+55 11 0000" })
    expect(shown.body.data.email).toMatch(/@example\.com$/)
  })

  it("personal data limited to some users shows only theirs", async () => {
    const [mine, theirs] = [await newUser(), await newUser()]
    const res = await api(h()).post("/credentials", {
      name: unique("limited"),
      policies: [{ capabilities: ["users.read"] }, { capabilities: ["users.read_personal"], resources: [mine.id] }]
    })
    const limited = res.body.data.secret.value as string
    expect((await api(h(), limited).get(`/users/${mine.id}`)).body.data.email).toBe(mine.email)
    expect((await api(h(), limited).get(`/users/${theirs.id}`)).body.data.email).toBeNull()
  })

  it("filtering users by email needs users.read_personal (403); with it any case finds the user", async () => {
    const user = await newUser()
    const without = await credentialWith(h(), ["users.read"])
    expectError(await api(h(), without).get(`/users?email=${encodeURIComponent(user.email)}`), 403, "permission_denied")
    const found = await api(h()).get(`/users?email=${encodeURIComponent(user.email.toUpperCase())}`)
    expect(found.body.data.map((u: { id: string }) => u.id)).toEqual([user.id])
  })

  // -------------------------------------------------------------------------------------
  // Custom field values

  it("custom field values are checked against the defined fields: unknown key and wrong types → 422 on custom_fields.<key>", async () => {
    const [text, number, date, select, checkbox] = [
      await newField({ type: "text" }),
      await newField({ type: "number" }),
      await newField({ type: "date" }),
      await newField({ type: "select", options: ["red", "green"] }),
      await newField({ type: "checkbox" })
    ]
    const wrong = await api(h()).post("/users", {
      name: "Typed",
      email: `${unique("cf")}@example.com`,
      custom_fields: { nope: "x", [text.key]: 1, [number.key]: "1", [date.key]: "2024-02-30", [select.key]: "blue", [checkbox.key]: "yes" }
    })
    expectError(wrong, 422, "validation_failed")
    expect(items(wrong)).toEqual([
      ["custom_fields.nope", "unknown_field"],
      [`custom_fields.${text.key}`, "invalid_type"],
      [`custom_fields.${number.key}`, "invalid_type"],
      [`custom_fields.${date.key}`, "invalid_value"],
      [`custom_fields.${select.key}`, "invalid_value"],
      [`custom_fields.${checkbox.key}`, "invalid_type"]
    ])
    const values = { [text.key]: "hello", [number.key]: 4.5, [date.key]: "2024-02-29", [select.key]: "green", [checkbox.key]: true }
    const ok = await newUser({ custom_fields: values })
    expect(ok.custom_fields).toEqual(values)
    const patched = await api(h()).patch(`/users/${ok.id}`, { custom_fields: { nope: 1 } })
    expectError(patched, 422, "validation_failed")
    expect(items(patched)).toEqual([["custom_fields.nope", "unknown_field"]])
  })

  it("a PATCH of custom_fields changes only the keys sent; null removes a value", async () => {
    const [a, b] = [await newField({ type: "text" }), await newField({ type: "number" })]
    const user = await newUser({ custom_fields: { [a.key]: "one", [b.key]: 1 } })
    const changed = await api(h()).patch(`/users/${user.id}`, { custom_fields: { [b.key]: 2 } })
    expect(changed.body.data.custom_fields).toEqual({ [a.key]: "one", [b.key]: 2 })
    const removed = await api(h()).patch(`/users/${user.id}`, { custom_fields: { [a.key]: null } })
    expect(removed.body.data.custom_fields).toEqual({ [b.key]: 2 })
  })

  it("a required custom field needs a value on create, and its value cannot be removed", async () => {
    // In the sandbox, so that the required field binds no other test's users.
    const sandbox = api(h(), h().test)
    const field = (await sandbox.post("/custom-fields", { key: unique("req"), label: "Required", type: "text", required: true })).body.data
    expect(field.required).toBe(true)
    const missing = await sandbox.post("/users", { name: "R", email: `${unique("r")}@example.com` })
    expectError(missing, 422, "validation_failed")
    expect(items(missing)).toEqual([[`custom_fields.${field.key}`, "required"]])
    const user = await sandbox.post("/users", { name: "R", email: `${unique("r")}@example.com`, custom_fields: { [field.key]: "there" } })
    expect(user.status, user.text).toBe(201)
    const cleared = await sandbox.patch(`/users/${user.body.data.id}`, { custom_fields: { [field.key]: null } })
    expectError(cleared, 422, "validation_failed", { field: `custom_fields.${field.key}`, code: "required" })
    expect(items(cleared)).toEqual([[`custom_fields.${field.key}`, "required"]])
    expect((await sandbox.patch(`/users/${user.body.data.id}`, { name: "Other fields still change" })).status).toBe(200)
  })

  it("removing a custom field removes its values from every user", async () => {
    const [gone, kept] = [await newField({ type: "text" }), await newField({ type: "text" })]
    const user = await newUser({ custom_fields: { [gone.key]: "x", [kept.key]: "y" } })
    expect((await api(h()).del(`/custom-fields/${gone.id}`)).status).toBe(204)
    const read = await api(h()).get(`/users/${user.id}`)
    expect(read.body.data.custom_fields).toEqual({ [kept.key]: "y" })
    expect(read.body.data.revision).toBe("2")
    // A new field of the same key starts empty, whatever its type.
    await newField({ key: gone.key, type: "number" })
    expect((await api(h()).get(`/users/${user.id}`)).body.data.custom_fields).toEqual({ [kept.key]: "y" })
  })

  // -------------------------------------------------------------------------------------
  // A user's tags

  it("PUT /users/{id}/tags replaces the set, answers the user with its ETag, and tags count their users", async () => {
    const [a, b, c] = [await newTag(), await newTag(), await newTag()]
    const user = await newUser()
    const first = await api(h()).put(`/users/${user.id}/tags`, { ids: [a.id, b.id] })
    expect(first.status, first.text).toBe(200)
    expect(first.body.data).toMatchObject({ object: "user", id: user.id, tags: [a.id, b.id], revision: "2" })
    expect(first.headers.get("etag")).toBe(`W/"user:${user.id}:2"`)
    const second = await api(h()).put(`/users/${user.id}/tags`, { ids: [c.id, b.id] })
    expect(second.body.data.tags).toEqual([c.id, b.id])
    expect((await api(h()).get(`/users/${user.id}`)).body.data.tags).toEqual([c.id, b.id])
    const counts = async () =>
      Promise.all([a, b, c].map(async (t) => (await api(h()).get(`/tags/${t.id}`)).body.data.users_count))
    expect(await counts()).toEqual([0, 1, 1])
    await api(h()).put(`/users/${(await newUser()).id}/tags`, { ids: [b.id] })
    expect(await counts()).toEqual([0, 2, 1])
    const listed = await api(h()).get(`/tags?q=${encodeURIComponent(b.name)}`)
    expect(listed.body.data.map((t: { users_count: number }) => t.users_count)).toEqual([2])
    expect((await api(h()).put(`/users/${user.id}/tags`, { ids: [] })).body.data.tags).toEqual([])
    expect(await counts()).toEqual([0, 1, 0])
  })

  it("PUT tags: an ID that is no tag of the account → 422 on ids[i]; malformed and repeated IDs too; nothing changes", async () => {
    const tag = await newTag()
    const user = await newUser()
    const other = await h().openAccount(unique("tags-"))
    const foreign = await api(h(), other.credentials.find((c) => c.environment === "production")!.secret).post("/tags", { name: "theirs" })
    const res = await api(h()).put(`/users/${user.id}/tags`, { ids: [tag.id, foreign.body.data.id] })
    expectError(res, 422, "validation_failed")
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: "ids[1]", reason: "not_found" })])
    const repeated = await api(h()).put(`/users/${user.id}/tags`, { ids: [tag.id, tag.id] })
    expectError(repeated, 422, "validation_failed", { field: "ids[1]", reason: "duplicate" })
    expect(repeated.body.error.details).toEqual([expect.objectContaining({ field: "ids[1]", reason: "duplicate" })])
    const malformed = await api(h()).put(`/users/${user.id}/tags`, { ids: ["tag_?"] })
    expectError(malformed, 422, "validation_failed", { field: "ids[0]", code: "invalid" })
    expect(items(malformed)).toEqual([["ids[0]", "invalid"]])
    const read = await api(h()).get(`/users/${user.id}`)
    expect(read.body.data).toMatchObject({ tags: [], revision: "1" })
  })

  it("PUT tags honours If-Match (412, nothing saved); a trashed user is 404", async () => {
    const tag = await newTag()
    const user = await newUser()
    await api(h()).patch(`/users/${user.id}`, { name: "Moved on" })
    const stale = await api(h()).put(`/users/${user.id}/tags`, { ids: [tag.id] }, { "if-match": `W/"user:${user.id}:1"` })
    expectError(stale, 412, "revision_mismatch")
    expect((await api(h()).get(`/tags/${tag.id}`)).body.data.users_count).toBe(0)
    const current = await api(h()).put(`/users/${user.id}/tags`, { ids: [tag.id] }, { "if-match": `W/"user:${user.id}:2"` })
    expect(current.status, current.text).toBe(200)
    await api(h()).del(`/users/${user.id}`)
    expectError(await api(h()).put(`/users/${user.id}/tags`, { ids: [] }), 404, "not_found")
  })

  // -------------------------------------------------------------------------------------
  // Tags

  it("a tag has a name, a live users_count and a string revision; a taken name is 409 already_exists", async () => {
    const tag = await newTag()
    expect(tag).toMatchObject({ object: "tag", users_count: 0, revision: "1" })
    expect(tag.id).toMatch(/^tag_[0-9A-Za-z]{9}$/)
    // Tag groups are not part of the contract: the field is unknown, not silently dropped.
    expectError(await api(h()).post("/tags", { name: unique("t"), tag_group_id: "tag_000000001" }), 422, "unknown_field")
    expectError(await api(h()).post("/tags", { name: tag.name }), 409, "already_exists")
  })

  it("DELETE of a tag a user holds → 409 tag_in_use (even a user in the trash); once no one holds it → 204", async () => {
    const tag = await newTag()
    const user = await newUser()
    await api(h()).put(`/users/${user.id}/tags`, { ids: [tag.id] })
    expectError(await api(h()).del(`/tags/${tag.id}`), 409, "tag_in_use")
    await api(h()).del(`/users/${user.id}`)
    expectError(await api(h()).del(`/tags/${tag.id}`), 409, "tag_in_use")
    await api(h()).patch(`/users/${user.id}`, { deleted: false })
    await api(h()).put(`/users/${user.id}/tags`, { ids: [] })
    expect((await api(h()).del(`/tags/${tag.id}`)).status).toBe(204)
    expectError(await api(h()).get(`/tags/${tag.id}`), 404, "not_found")
  })

  // -------------------------------------------------------------------------------------
  // Custom fields

  it("a custom field: key of ^[a-z][a-z0-9_]{0,63}$, unique; key and type fixed; position after the last by default", async () => {
    const first = await newField({ type: "text" })
    expect(first).toMatchObject({ object: "custom_field", label: "Field", type: "text", options: [], required: false })
    expect(first.id).toMatch(/^cfd_[0-9A-Za-z]{9}$/)
    const second = await newField({ type: "checkbox" })
    expect(second.position).toBeGreaterThan(first.position)
    for (const key of ["Upper", "1digit", "with-dash", "k".repeat(65)]) {
      const res = await api(h()).post("/custom-fields", { key, label: "L", type: "text" })
      expect(res.status, key).toBe(422)
      expectError(res, 422, "validation_failed", { field: "key" })
    }
    expectError(await api(h()).post("/custom-fields", { key: first.key, label: "Again", type: "text" }), 409, "already_exists")
    expectError(await api(h()).patch(`/custom-fields/${first.id}`, { type: "number" }), 422, "unknown_field")
    expectError(await api(h()).patch(`/custom-fields/${first.id}`, { key: "renamed" }), 422, "unknown_field")
    const moved = await api(h()).patch(`/custom-fields/${first.id}`, { label: "Renamed", position: 1 })
    expect(moved.body.data).toMatchObject({ key: first.key, label: "Renamed", position: 1 })
  })

  it("options: required and distinct for a select field, refused for any other type", async () => {
    const none = await api(h()).post("/custom-fields", { key: unique("s"), label: "S", type: "select" })
    expectError(none, 422, "validation_failed")
    expect(items(none)).toEqual([["options", "required"]])
    const twice = await api(h()).post("/custom-fields", { key: unique("s"), label: "S", type: "select", options: ["a", "b", "a"] })
    expectError(twice, 422, "validation_failed", { field: "options[2]", code: "invalid_value" })
    expect(items(twice)).toEqual([["options[2]", "invalid_value"]])
    const text = await api(h()).post("/custom-fields", { key: unique("s"), label: "S", type: "text", options: ["a"] })
    expectError(text, 422, "validation_failed", { field: "options", code: "not_allowed" })
    expect(items(text)).toEqual([["options", "not_allowed"]])
    const select = await newField({ type: "select", options: ["a"] })
    const emptied = await api(h()).patch(`/custom-fields/${select.id}`, { options: [] })
    expectError(emptied, 422, "validation_failed", { field: "options", code: "required" })
    expect(items(emptied)).toEqual([["options", "required"]])
  })

  // -------------------------------------------------------------------------------------
  // Administrators

  it("a new administrator: 201 with every field, email lowercased, two-factor off; the password never shown", async () => {
    const email = `${unique("Admin")}@Example.com`
    const res = await api(h()).post("/administrators", { email, name: "Grace", password: "a long passphrase" })
    expect(res.status, res.text).toBe(201)
    const admin = res.body.data
    expect(admin.id).toMatch(/^adm_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/administrators/${admin.id}`)
    expect(res.headers.get("etag")).toBe(`W/"administrator:${admin.id}:1"`)
    expect(Object.keys(admin)).toEqual(["object", "id", "email", "name", "status", "two_factor", "last_sign_in_at", "created_at", "updated_at", "revision"])
    expect(admin).toMatchObject({
      object: "administrator", email: email.toLowerCase(), name: "Grace", status: "active",
      two_factor: { enabled: false, enrolled_at: null }, last_sign_in_at: null, revision: "1"
    })
    const opening = await api(h()).get(`/administrators/${h().account.administrator.id}`)
    expect(opening.body.data).toMatchObject({ status: "active", two_factor: { enabled: false, enrolled_at: null } })
  })

  it("an administrator's email is unique in the account whatever its case (the first administrator's too): 409", async () => {
    const taken = String(h().account.administrator.email).toUpperCase()
    const res = await api(h()).post("/administrators", { email: taken, name: "Copy", password: "a long passphrase" })
    expectError(res, 409, "already_exists")
    expect(items(res)).toEqual([["email", "already_exists"]])
    const admin = await newAdmin()
    expectError(await api(h()).patch(`/administrators/${admin.id}`, { email: taken }), 409, "already_exists")
  })

  it("a password shorter than 12 characters → 422 too_short, on create and on PATCH", async () => {
    const res = await api(h()).post("/administrators", { email: `${unique("p")}@example.com`, name: "P", password: "short" })
    expectError(res, 422, "validation_failed")
    expect(items(res)).toEqual([["password", "too_short"]])
    const admin = await newAdmin()
    expect(items(await api(h()).patch(`/administrators/${admin.id}`, { password: "elevenchars" }))).toEqual([["password", "too_short"]])
    const ok = await api(h()).patch(`/administrators/${admin.id}`, { password: "twelve chars" }, { "if-match": `W/"administrator:${admin.id}:1"` })
    expect(ok.status, ok.text).toBe(200)
    expect(ok.body.data.revision).toBe("2")
    expectError(await api(h()).patch(`/administrators/${admin.id}`, { name: "Late" }, { "if-match": `W/"administrator:${admin.id}:1"` }), 412, "revision_mismatch")
  })

  it("administrators belong to the account: the same in production and sandbox, invisible to another account", async () => {
    const admin = await newAdmin(h().test)
    expect((await api(h()).get(`/administrators/${admin.id}`)).body.data.email).toBe(admin.email)
    const renamed = await api(h()).patch(`/administrators/${admin.id}`, { name: "Renamed in production" })
    expect(renamed.status, renamed.text).toBe(200)
    expect((await api(h(), h().test).get(`/administrators/${admin.id}`)).body.data.name).toBe("Renamed in production")
    const listed = await api(h(), h().test).get(`/administrators?email=${encodeURIComponent(admin.email.toUpperCase())}`)
    expect(listed.body.data.map((a: { id: string }) => a.id)).toEqual([admin.id])
    const other = await h().openAccount(unique("admins-"))
    const theirs = other.credentials.find((c) => c.environment === "production")!.secret
    expectError(await api(h(), theirs).get(`/administrators/${admin.id}`), 404, "not_found")
    expectError(await api(h(), theirs).patch(`/administrators/${admin.id}`, { name: "Stolen" }), 404, "not_found")
  })

  it("two-factor enrollment: a pending secret shown once, a wrong code → 422, a current code turns it on", async () => {
    const admin = await newAdmin()
    expectError(await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments/confirmations`, { code: "123456" }), 409, "state_conflict")
    const key = freshKey()
    const started = await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments`, undefined, { idempotencyKey: key })
    expect(started.status, started.text).toBe(201)
    const enrollment = started.body.data
    expect(enrollment).toMatchObject({ object: "two_factor_enrollment", administrator_id: admin.id, status: "pending" })
    expect(enrollment.secret).toMatch(/^[A-Z2-7]{32}$/)
    const uri = new URL(enrollment.otpauth_uri)
    expect(uri.protocol).toBe("otpauth:")
    expect(Object.fromEntries(uri.searchParams)).toMatchObject({ secret: enrollment.secret, algorithm: "SHA1", digits: "6", period: "30" })
    const replay = await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments`, undefined, { idempotencyKey: key })
    expectError(replay, 409, "secret_not_replayable")
    expect(replay.text).not.toContain(enrollment.secret)
    expect((await api(h()).get(`/administrators/${admin.id}`)).body.data.two_factor.enabled).toBe(false)

    const good = totp(enrollment.secret)
    const wrong = await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments/confirmations`, {
      code: String((Number(good) + 500_000) % 1_000_000).padStart(6, "0")
    })
    expectError(wrong, 422, "validation_failed")
    expect(wrong.body.error.details).toEqual([expect.objectContaining({ field: "code", reason: "code_mismatch" })])
    expect(items(await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments/confirmations`, { code: "12345" }))).toEqual([["code", "invalid_value"]])
    const confirmed = await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments/confirmations`, { code: good })
    expect(confirmed.status, confirmed.text).toBe(200)
    expect(confirmed.body.data.two_factor.enabled).toBe(true)
    expect(Date.parse(confirmed.body.data.two_factor.enrolled_at)).not.toBeNaN()
    // The enrollment is used up.
    expectError(await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments/confirmations`, { code: good }), 409, "state_conflict")
  })

  it("a code of the previous 30-second step is accepted; one of two steps ago is not (RFC 6238, ±1 step)", async () => {
    const admin = await newAdmin()
    const start = async () => (await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments`)).body.data.secret as string
    const confirm = (code: string) => api(h()).post(`/administrators/${admin.id}/two-factor-enrollments/confirmations`, { code })
    // Away from a step's edge, so that the server's clock is in the same step as ours.
    const intoStep = Date.now() % 30_000
    if (intoStep > 28_000) await new Promise((resolve) => setTimeout(resolve, 30_500 - intoStep))
    const old = await start()
    const twoStepsAgo = totp(old, Date.now() - 60_000)
    const tooOld = await confirm(twoStepsAgo)
    // Two codes of one secret can be equal (1 in 10^6): then the old one is also a current one.
    if (![totp(old, Date.now() - 30_000), totp(old), totp(old, Date.now() + 30_000)].includes(twoStepsAgo)) {
      expectError(tooOld, 422, "validation_failed")
    }
    const previous = await confirm(totp(await start(), Date.now() - 30_000))
    expect(previous.status, previous.text).toBe(200)
  })

  it("no answer of an administrator route shows a password, its hash or a factor secret", async () => {
    const password = "correct horse battery staple"
    const seen: Array<Response> = []
    const keep = async (res: Promise<Response>) => {
      const r = await res
      seen.push(r)
      return r
    }
    const created = await keep(api(h()).post("/administrators", { email: `${unique("s")}@example.com`, name: "S", password }))
    const id = created.body.data.id
    const enrollment = (await api(h()).post(`/administrators/${id}/two-factor-enrollments`)).body.data
    await keep(api(h()).post(`/administrators/${id}/two-factor-enrollments/confirmations`, { code: totp(enrollment.secret) }))
    const second = (await api(h()).post(`/administrators/${id}/two-factor-enrollments`)).body.data
    await keep(api(h()).patch(`/administrators/${id}`, { password: `${password}!` }))
    await keep(api(h()).get(`/administrators/${id}`))
    await keep(api(h()).get(`/administrators?limit=200`))
    await keep(api(h(), h().test).get(`/administrators?limit=200`))
    await keep(api(h()).get(`/audit-entries?resource_id=${id}`))
    await keep(api(h()).del(`/administrators/${id}`))
    for (const res of seen) {
      expect(res.status, res.text).toBeLessThan(300)
      for (const secret of [password, enrollment.secret, second.secret, "password", "totp", "hash"]) expect(res.text).not.toContain(secret)
    }
  })

  it("removing an administrator keeps it as removed and ends its links to credentials of every environment (§5.4)", async () => {
    const admin = await newAdmin()
    const live = credentialId("production")
    const sandbox = credentialId("sandbox")
    expect((await api(h()).post(`/credentials/${live}/administrators`, { administrator_id: admin.id })).status).toBe(201)
    expect((await api(h(), h().test).post(`/credentials/${sandbox}/administrators`, { administrator_id: admin.id })).status).toBe(201)
    const removed = await api(h()).del(`/administrators/${admin.id}`)
    expect(removed.status, removed.text).toBe(200)
    expect(removed.body.data).toMatchObject({ id: admin.id, status: "removed", two_factor: { enabled: false } })
    const linked = async (secret: string, credential: string) =>
      (await api(h(), secret).get(`/credentials/${credential}/administrators`)).body.data.map((a: { id: string }) => a.id)
    expect(await linked(h().live, live)).not.toContain(admin.id)
    expect(await linked(h().test, sandbox)).not.toContain(admin.id)
    expect(await linked(h().live, live)).toContain(h().account.administrator.id)
    const trail = await api(h(), h().test).get(`/audit-entries?resource_id=${sandbox}&action=credential.administrator_unlinked`)
    expect(trail.body.data).toHaveLength(1)
    // Kept for the record, changed no more; the email is free for someone new; no link can come back.
    expect((await api(h()).get(`/administrators?status=removed&limit=200`)).body.data.map((a: { id: string }) => a.id)).toContain(admin.id)
    const again = await api(h()).patch(`/administrators/${admin.id}`, { name: "Back" })
    expectError(again, 409, "state_conflict")
    expect(again.body.error.reason).toBe("administrator_removed")
    expectError(await api(h()).del(`/administrators/${admin.id}`), 409, "state_conflict")
    expectError(await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments`), 409, "state_conflict")
    expect((await api(h()).post("/administrators", { email: admin.email, name: "New", password: "a long passphrase" })).status).toBe(201)
    expectError(await api(h()).post(`/credentials/${live}/administrators`, { administrator_id: admin.id }), 422, "validation_failed", { field: "administrator_id" })
  })

  it("the last active administrator of an account cannot be removed: 409 state_conflict", async () => {
    const other = await h().openAccount(unique("solo-"))
    const secret = other.credentials.find((c) => c.environment === "production")!.secret
    const res = await api(h(), secret).del(`/administrators/${other.administrator.id}`)
    expectError(res, 409, "state_conflict")
    expect(res.body.error.reason).toBe("last_administrator")
    expect((await api(h(), secret).get(`/administrators/${other.administrator.id}`)).body.data.status).toBe("active")
  })

  it("administrators need their capabilities: a read-only credential lists them but cannot add one (403)", async () => {
    const readOnly = (await api(h()).post("/credentials", { name: unique("ro"), policies: [{ template: "read_only" }] })).body.data.secret.value
    expect((await api(h(), readOnly).get("/administrators")).status).toBe(200)
    expectError(await api(h(), readOnly).post("/administrators", { email: `${unique("x")}@example.com`, name: "X", password: "a long passphrase" }), 403, "permission_denied")
    expectError(await api(h(), readOnly).post(`/administrators/${h().account.administrator.id}/two-factor-enrollments`), 403, "permission_denied")
  })

  // -------------------------------------------------------------------------------------
  // Audit and description

  it("every change leaves its audit entry, in the environment of the call", async () => {
    const actions = async (id: string, secret = h().live) =>
      (await api(h(), secret).get(`/audit-entries?resource_id=${id}&limit=200`)).body.data.map((e: { action: string }) => e.action).sort()
    const tag = await newTag()
    const field = await newField({ type: "text" })
    const user = await newUser()
    await api(h()).patch(`/users/${user.id}`, { name: "B" })
    await api(h()).put(`/users/${user.id}/tags`, { ids: [tag.id] })
    await api(h()).del(`/users/${user.id}`)
    expect(await actions(user.id)).toEqual(["user.created", "user.trashed", "user.updated", "user.updated"])
    await api(h()).patch(`/tags/${tag.id}`, { name: unique("renamed ") })
    expect(await actions(tag.id)).toEqual(["tag.created", "tag.updated"])
    await api(h()).del(`/custom-fields/${field.id}`)
    expect(await actions(field.id)).toEqual(["custom_field.created", "custom_field.deleted"])
    const admin = await newAdmin(h().test)
    const secret = (await api(h(), h().test).post(`/administrators/${admin.id}/two-factor-enrollments`)).body.data.secret
    await api(h(), h().test).post(`/administrators/${admin.id}/two-factor-enrollments/confirmations`, { code: totp(secret) })
    await api(h(), h().test).patch(`/administrators/${admin.id}`, { name: "C" })
    await api(h(), h().test).del(`/administrators/${admin.id}`)
    expect(await actions(admin.id, h().test)).toEqual([
      "administrator.created", "administrator.removed", "administrator.two_factor_enabled",
      "administrator.two_factor_enrollment_started", "administrator.updated"
    ])
    expect(await actions(admin.id)).toEqual([])
  })

  it("the description holds every people operation, and answers match it", async () => {
    const doc = (await api(h()).get("/openapi.json")).body
    const result = await new Validator().validate(doc)
    expect(result.valid, JSON.stringify(result.errors ?? null).slice(0, 2000)).toBe(true)
    const operationIds = Object.values(doc.paths).flatMap((p: any) => Object.values(p).map((o: any) => o.operationId))
    for (const id of [
      "users.list", "users.get", "users.create", "users.update", "users.delete", "users.tags.replace",
      "tags.list", "tags.create", "tags.delete", "custom_fields.list", "custom_fields.create",
      "administrators.list", "administrators.get", "administrators.create", "administrators.update", "administrators.delete",
      "administrators.two_factor_enrollments.create", "administrators.two_factor_enrollments.confirmations.create"
    ]) expect(operationIds).toContain(id)
    const fromValidator = createRequire(createRequire(import.meta.url).resolve("@seriousme/openapi-schema-validator"))
    const Ajv2020 = fromValidator("ajv/dist/2020.js").default
    const addFormats = fromValidator("ajv-formats").default
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
    addFormats(ajv)
    ajv.addSchema({ ...doc, $id: "https://syllabus.test/openapi.json" })
    const conforms = (path: string, method: string, status: number, body: unknown) => {
      const pointer = ["paths", path, method, "responses", String(status), "content", "application/json", "schema"]
        .map((s) => s.replaceAll("~", "~0").replaceAll("/", "~1"))
        .join("/")
      const validate = ajv.compile({ $ref: `https://syllabus.test/openapi.json#/${pointer}` })
      return validate(body) ? [] : validate.errors
    }
    const hidden = await credentialWith(h(), ["users.read"])
    const user = await newUser({ custom_fields: { [(await newField({ type: "checkbox" })).key]: true } })
    expect(conforms("/users/{user_id}", "get", 200, (await api(h(), hidden).get(`/users/${user.id}`)).body)).toEqual([])
    expect(conforms("/users", "get", 200, (await api(h()).get("/users")).body)).toEqual([])
    expect(conforms("/tags", "post", 201, { data: await newTag() })).toEqual([])
    const admin = await newAdmin()
    expect(conforms("/administrators/{administrator_id}", "get", 200, (await api(h()).get(`/administrators/${admin.id}`)).body)).toEqual([])
    const enrollment = await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments`)
    expect(conforms("/administrators/{administrator_id}/two-factor-enrollments", "post", 201, enrollment.body)).toEqual([])
    const confirmed = await api(h()).post(`/administrators/${admin.id}/two-factor-enrollments/confirmations`, { code: totp(enrollment.body.data.secret) })
    expect(conforms("/administrators/{administrator_id}/two-factor-enrollments/confirmations", "post", 200, confirmed.body)).toEqual([])
  })
})
