/**
 * Term acceptances (§2.3 `term_acceptance`, §4.3 `GET /users/{user_id}/term-acceptances`, §5
 * `legal_terms.read_proof`; open-points routes `/legal-terms/{id}/acceptances`): the shape,
 * the proof shown only with `legal_terms.read_proof` (omitted, not null, otherwise; never in
 * events), `current` and new acceptance after a new version, the user's list of both kinds
 * with its date bounds, immutability, errors, permissions, idempotency and the sandbox reset.
 * Decisions: docs/legal.md.
 */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { api, created, credentialWith, credentialWithPolicies, newProduct, settle } from "../support/api.js"
import { expectError } from "../support/expect.js"

const proof = { ip: "203.0.113.7", user_agent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0" }

let users = 0
const newUser = (h: Harness, secret: string = h.live) =>
  created(api(h, secret).post("/users", { name: "Learner", email: `learner${++users}-${Date.now()}@example.com` }))

/** A product with its legal term. */
const productTerm = async (h: Harness, secret: string = h.live, text = "<p>Course rules</p>") => {
  const product = await newProduct(h, secret)
  return created(api(h, secret).post("/legal-terms", { kind: "product", product_id: product.id, title: "Course terms", text }))
}

/** The platform term, made afresh (a previous test's is trashed first when nobody accepted it, else reused). */
const platformTerm = async (h: Harness) => {
  const [existing] = (await api(h).get("/legal-terms?kind=platform")).body.data
  if (existing) return existing
  return created(api(h).post("/legal-terms", { kind: "platform", title: "Terms of use", text: "<p>Platform rules</p>" }))
}

const accept = (h: Harness, termId: string, userId: string, version = 1, secret: string = h.live) =>
  api(h, secret).post(`/legal-terms/${termId}/acceptances`, { user_id: userId, version, proof })

eachStore("term acceptances", (h) => {
  it("an acceptance records the user, the exact version and its hash, when, links.self under its term, and the proof", async () => {
    const term = await productTerm(h())
    const user = await newUser(h())
    const res = await accept(h(), term.id, user.id)
    expect(res.status, res.text).toBe(201)
    const acceptance = res.body.data
    expect(acceptance.id).toMatch(/^tac_[0-9A-Za-z]{9}$/)
    const self = `/api/v3/legal-terms/${term.id}/acceptances/${acceptance.id}`
    expect(res.headers.get("location")).toBe(self)
    expect(res.headers.get("etag")).toBe(`W/"term_acceptance:${acceptance.id}:1"`)
    expect(Object.keys(acceptance)).toEqual([
      "object", "id", "legal_term_id", "user_id", "version", "text_sha256", "current", "accepted_at", "links", "proof", "created_at", "updated_at", "revision"
    ])
    expect(acceptance).toMatchObject({
      object: "term_acceptance",
      legal_term_id: term.id,
      user_id: user.id,
      version: 1,
      text_sha256: term.text_sha256,
      current: true,
      links: { self },
      proof
    })
    expect(acceptance.accepted_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(acceptance.accepted_at).toBe(acceptance.created_at)
    // links.self answers the acceptance.
    const read = await h().request("GET", self, { secret: h().live })
    expect(read.status).toBe(200)
    expect(read.body.data).toEqual(acceptance)
    const ipv6 = await api(h()).post(`/legal-terms/${term.id}/acceptances`, {
      user_id: (await newUser(h())).id,
      version: 1,
      proof: { ip: "2001:db8::8a2e:370:7334", user_agent: "App/1.0" }
    })
    expect(ipv6.status, ipv6.text).toBe(201)
    expect(ipv6.body.data.proof.ip).toBe("2001:db8::8a2e:370:7334")
  })

  it("without legal_terms.read_proof the proof is omitted (not null) from every answer; with it (on the term) it is shown; events never carry it", async () => {
    const term = await productTerm(h())
    const user = await newUser(h())
    const writer = await credentialWith(h(), ["term_acceptances.create", "term_acceptances.read"])
    const createdRes = await accept(h(), term.id, user.id, 1, writer)
    expect(createdRes.status, createdRes.text).toBe(201)
    const acceptance = createdRes.body.data
    expect("proof" in acceptance).toBe(false)
    const path = `/legal-terms/${term.id}/acceptances/${acceptance.id}`
    const single = (await api(h(), writer).get(path)).body.data
    expect("proof" in single).toBe(false)
    expect(single.links.self).toBe(`/api/v3${path}`)
    const listed = (await api(h(), writer).get(`/legal-terms/${term.id}/acceptances`)).body.data
    expect(listed.every((a: any) => !("proof" in a))).toBe(true)
    const ofUser = (await api(h(), writer).get(`/users/${user.id}/term-acceptances`)).body.data
    expect(ofUser).toHaveLength(1)
    expect("proof" in ofUser[0]).toBe(false)

    const prover = await credentialWith(h(), ["term_acceptances.read", "legal_terms.read_proof"])
    expect((await api(h(), prover).get(path)).body.data.proof).toEqual(proof)
    expect((await api(h(), prover).get(`/users/${user.id}/term-acceptances`)).body.data[0].proof).toEqual(proof)
    // read_proof limited to another term shows no proof of this one.
    const otherTerm = await productTerm(h())
    const elsewhere = await credentialWithPolicies(h(), [
      { capabilities: ["term_acceptances.read"] },
      { capabilities: ["legal_terms.read_proof"], resources: [otherTerm.id] }
    ])
    expect("proof" in (await api(h(), elsewhere).get(path)).body.data).toBe(false)

    const events = (await api(h()).get(`/events?resource_id=${acceptance.id}`)).body.data
    expect(events.map((e: any) => e.type)).toEqual(["term_acceptance.created"])
    expect("proof" in events[0].data.object).toBe(false)
    expect(JSON.stringify(events[0])).not.toContain(proof.ip)
    expect((await api(h()).get(`/audit-entries?resource_id=${acceptance.id}`)).body.data.map((e: any) => e.action)).toEqual(["term_acceptance.created"])
  })

  it("a new version requires new acceptance: earlier acceptances turn current: false until the user accepts the new version", async () => {
    const term = await productTerm(h(), h().live, "<p>v1</p>")
    const user = await newUser(h())
    const first = (await accept(h(), term.id, user.id, 1)).body.data
    const list = (query: string) => api(h()).get(`/legal-terms/${term.id}/acceptances?${query}`)
    expect((await list(`user_id=${user.id}&current=true`)).body.data.map((a: any) => a.id)).toEqual([first.id])

    expect((await api(h()).patch(`/legal-terms/${term.id}`, { text: "<p>v2</p>" })).body.data.current_version).toBe(2)
    expect((await api(h()).get(`/legal-terms/${term.id}/acceptances/${first.id}`)).body.data.current).toBe(false)
    expect((await list(`user_id=${user.id}&current=true`)).body.data).toEqual([])
    expect((await list(`user_id=${user.id}&current=false`)).body.data.map((a: any) => a.id)).toEqual([first.id])
    expect((await api(h()).get(`/users/${user.id}/term-acceptances`)).body.data.map((a: any) => [a.version, a.current])).toEqual([[1, false]])

    const second = (await accept(h(), term.id, user.id, 2)).body.data
    expect(second).toMatchObject({ version: 2, current: true })
    const v2 = (await api(h()).get(`/legal-terms/${term.id}/versions`)).body.data.find((v: any) => v.version === 2)
    expect(second.text_sha256).toBe(v2.text_sha256)
    expect(second.text_sha256).not.toBe(first.text_sha256)
    expect((await list(`user_id=${user.id}&current=true`)).body.data.map((a: any) => a.id)).toEqual([second.id])
    expect((await api(h()).get(`/users/${user.id}/term-acceptances`)).body.data.map((a: any) => [a.version, a.current])).toEqual([
      [2, true],
      [1, false]
    ])
    // An acceptance of an earlier version is recorded as such, not current.
    const late = (await accept(h(), term.id, (await newUser(h())).id, 1)).body.data
    expect(late).toMatchObject({ version: 1, current: false })
    expectError(await list("current=yes"), 422, "validation_failed", { parameter: "current" })
  })

  it("errors: the user (422 on user_id), the version (422 on version), the proof (422 itemized), a second acceptance of a version (409), a missing term (404)", async () => {
    const term = await productTerm(h())
    const user = await newUser(h())
    const path = `/legal-terms/${term.id}/acceptances`
    expectError(await api(h()).post(path, { user_id: "usr_000000001", version: 1, proof }), 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expectError(await api(h()).post(path, { user_id: "nope", version: 1, proof }), 422, "validation_failed", { field: "user_id", code: "invalid" })
    const trashed = await newUser(h())
    await api(h()).del(`/users/${trashed.id}`)
    expectError(await api(h()).post(path, { user_id: trashed.id, version: 1, proof }), 422, "validation_failed", { field: "user_id", reason: "not_found" })
    expectError(await api(h()).post(path, { user_id: user.id, version: 2, proof }), 422, "validation_failed", { field: "version", reason: "not_found" })
    expectError(await api(h()).post(path, { user_id: user.id, version: 0, proof }), 422, "validation_failed", { field: "version", code: "out_of_range" })
    expectError(await api(h()).post(path, { user_id: user.id, version: 1.5, proof }), 422, "validation_failed", { field: "version", code: "invalid_type" })
    const missing = await api(h()).post(path, {})
    for (const field of ["user_id", "version", "proof"]) expectError(missing, 422, "validation_failed", { field, code: "required" })
    for (const ip of ["999.1.1.1", "1.2.3", "localhost", "2001:db8:::1", "::g", "01.2.3.4"]) {
      expectError(await api(h()).post(path, { user_id: user.id, version: 1, proof: { ...proof, ip } }), 422, "validation_failed", {
        field: "proof.ip",
        code: "invalid_value"
      })
    }
    expectError(await api(h()).post(path, { user_id: user.id, version: 1, proof: { ip: proof.ip } }), 422, "validation_failed", { field: "proof.user_agent", code: "required" })
    expectError(await api(h()).post(path, { user_id: user.id, version: 1, proof: { ...proof, user_agent: "a".repeat(1025) } }), 422, "validation_failed", {
      field: "proof.user_agent",
      code: "too_long"
    })
    expectError(await api(h()).post(path, { user_id: user.id, version: 1, proof, accepted_at: "2020-01-01T00:00:00Z" }), 422, "unknown_field", { field: "accepted_at" })
    expectError(await api(h()).post(path, { user_id: user.id, version: 1, proof: { ...proof, country: "BR" } }), 422, "unknown_field", { field: "proof.country" })
    // Nothing of the refused requests was recorded.
    expect((await api(h()).get(`${path}?user_id=${user.id}`)).body.data).toEqual([])

    expect((await accept(h(), term.id, user.id)).status).toBe(201)
    expectError(await accept(h(), term.id, user.id), 409, "already_exists", { field: "user_id" })
    expect((await api(h()).get(`${path}?user_id=${user.id}`)).body.data).toHaveLength(1)
    expectError(await accept(h(), "lgt_000000001", user.id), 404, "not_found")
    expectError(await api(h()).get("/legal-terms/lgt_000000001/acceptances"), 404, "not_found")
    const other = await productTerm(h())
    const mine = (await api(h()).get(`${path}?user_id=${user.id}`)).body.data[0]
    expectError(await api(h()).get(`/legal-terms/${other.id}/acceptances/${mine.id}`), 404, "not_found")
  })

  it("an acceptance is a record of fact: no PATCH or DELETE (405); a term some user accepted cannot be trashed (409 term_accepted)", async () => {
    const term = await productTerm(h())
    const user = await newUser(h())
    const acceptance = (await accept(h(), term.id, user.id)).body.data
    const path = `/legal-terms/${term.id}/acceptances/${acceptance.id}`
    expectError(await api(h()).patch(path, { version: 2 }), 405, "method_not_allowed")
    expectError(await api(h()).del(path), 405, "method_not_allowed")
    expectError(await api(h()).del(`/legal-terms/${term.id}`), 409, "state_conflict", { reason: "term_accepted" })
    expect((await api(h()).get(`/legal-terms/${term.id}`)).body.data.deleted).toBe(false)
    // The user's trash leaves the acceptance under its term.
    await api(h()).del(`/users/${user.id}`)
    expect((await api(h()).get(path)).body.data.id).toBe(acceptance.id)
  })

  it("GET /users/{user_id}/term-acceptances (§4.3): the platform's and the products' terms, newest first, sort id/-id, cursor pages", async () => {
    const user = await newUser(h())
    const platform = await platformTerm(h())
    const a = (await accept(h(), platform.id, user.id, platform.current_version)).body.data
    const product = await productTerm(h())
    const b = (await accept(h(), product.id, user.id)).body.data
    const another = await productTerm(h())
    const c = (await accept(h(), another.id, user.id)).body.data
    // Another user's acceptances are not listed.
    await accept(h(), another.id, (await newUser(h())).id)

    const path = `/users/${user.id}/term-acceptances`
    const res = await api(h()).get(path)
    expect(res.status).toBe(200)
    expect(res.body.data.map((x: any) => x.id)).toEqual([c.id, b.id, a.id])
    expect(res.body.data.map((x: any) => x.legal_term_id)).toEqual([another.id, product.id, platform.id])
    for (const item of res.body.data) expect(item.links.self).toBe(`/api/v3/legal-terms/${item.legal_term_id}/acceptances/${item.id}`)
    expect(res.body.data[2]).toEqual(a)
    expect((await api(h()).get(`${path}?sort=id`)).body.data.map((x: any) => x.id)).toEqual([a.id, b.id, c.id])
    expect((await api(h()).get(`${path}?sort=-id`)).body.data.map((x: any) => x.id)).toEqual([c.id, b.id, a.id])
    const page1 = await api(h()).get(`${path}?limit=2`)
    expect(page1.body.data.map((x: any) => x.id)).toEqual([c.id, b.id])
    expect(page1.body.page.limit).toBe(2)
    const page2 = await api(h()).get(`${path}?limit=2&cursor=${encodeURIComponent(page1.body.page.next_cursor)}`)
    expect(page2.body.data.map((x: any) => x.id)).toEqual([a.id])
    expect(page2.body.page.next_cursor).toBeNull()
    expectError(await api(h()).get(`${path}?cursor=${encodeURIComponent(page1.body.page.next_cursor)}&sort=id`), 400, "invalid_cursor")
    expectError(await api(h()).get(`${path}?sort=accepted_at`), 422, "validation_failed", { parameter: "sort" })
    expectError(await api(h()).get(`${path}?limit=0`), 422, "validation_failed", { parameter: "limit" })
    // Exactly the parameters of §4.3.
    expectError(await api(h()).get(`${path}?current=true`), 400, "unknown_parameter", { parameter: "current" })
    expectError(await api(h()).get(`${path}?legal_term_id=${product.id}`), 400, "unknown_parameter", { parameter: "legal_term_id" })
    // A missing or trashed user is 404; a user without acceptances, an empty page.
    expectError(await api(h()).get("/users/usr_000000001/term-acceptances"), 404, "not_found")
    const quiet = await newUser(h())
    expect((await api(h()).get(`/users/${quiet.id}/term-acceptances`)).body).toMatchObject({ data: [], page: { next_cursor: null } })
    await api(h()).del(`/users/${quiet.id}`)
    expectError(await api(h()).get(`/users/${quiet.id}/term-acceptances`), 404, "not_found")
  })

  it("accepted_after is inclusive, accepted_before exclusive; an empty range is 422; a malformed instant is 422 on its parameter", async () => {
    const user = await newUser(h())
    const term = await productTerm(h(), h().live, "<p>v1</p>")
    const first = (await accept(h(), term.id, user.id, 1)).body.data
    h().advance(60_000)
    await api(h()).patch(`/legal-terms/${term.id}`, { text: "<p>v2</p>" })
    const second = (await accept(h(), term.id, user.id, 2)).body.data
    h().advance(60_000)
    await api(h()).patch(`/legal-terms/${term.id}`, { text: "<p>v3</p>" })
    const third = (await accept(h(), term.id, user.id, 3)).body.data
    const ids = async (query: string) => {
      const res = await api(h()).get(`/users/${user.id}/term-acceptances?sort=id&${query}`)
      expect(res.status, res.text).toBe(200)
      return res.body.data.map((x: any) => x.id)
    }
    const at = (x: any) => encodeURIComponent(x.accepted_at)
    expect(await ids(`accepted_after=${at(second)}`)).toEqual([second.id, third.id])
    expect(await ids(`accepted_before=${at(second)}`)).toEqual([first.id])
    expect(await ids(`accepted_after=${at(first)}&accepted_before=${at(third)}`)).toEqual([first.id, second.id])
    const justAfter = encodeURIComponent(new Date(Date.parse(second.accepted_at) + 1).toISOString())
    expect(await ids(`accepted_after=${justAfter}`)).toEqual([third.id])
    // Any offset is accepted and compared as the instant it names.
    const offset = new Date(Date.parse(second.accepted_at) - 3 * 3_600_000).toISOString().replace("Z", "-03:00")
    expect(await ids(`accepted_after=${encodeURIComponent(offset)}`)).toEqual([second.id, third.id])
    // The term's list takes the same bounds.
    const termList = (await api(h()).get(`/legal-terms/${term.id}/acceptances?sort=id&accepted_after=${at(second)}&accepted_before=${at(third)}`)).body.data
    expect(termList.map((x: any) => x.id)).toEqual([second.id])

    expectError(await api(h()).get(`/users/${user.id}/term-acceptances?accepted_after=${at(second)}&accepted_before=${at(second)}`), 422, "validation_failed", {
      parameter: "accepted_before",
      reason: "empty_range"
    })
    expectError(await api(h()).get(`/users/${user.id}/term-acceptances?accepted_after=${at(third)}&accepted_before=${at(first)}`), 422, "validation_failed", {
      parameter: "accepted_before",
      reason: "empty_range"
    })
    expectError(await api(h()).get(`/users/${user.id}/term-acceptances?accepted_after=yesterday`), 422, "validation_failed", { parameter: "accepted_after" })
    expectError(await api(h()).get(`/users/${user.id}/term-acceptances?accepted_before=2026-13-01T00:00:00Z`), 422, "validation_failed", { parameter: "accepted_before" })
  })

  it("permissions: creating needs term_acceptances.create, reading term_acceptances.read; a policy limited to terms sees only their acceptances", async () => {
    const user = await newUser(h())
    const term = await productTerm(h())
    const other = await productTerm(h())
    const onTerm = (await accept(h(), term.id, user.id)).body.data
    const onOther = (await accept(h(), other.id, user.id)).body.data

    const reader = await credentialWith(h(), ["term_acceptances.read"])
    expectError(await accept(h(), term.id, (await newUser(h())).id, 1, reader), 403, "permission_denied")
    expect((await api(h(), reader).get(`/users/${user.id}/term-acceptances`)).body.data).toHaveLength(2)
    const noRead = await credentialWith(h(), ["legal_terms.read", "users.read"])
    expectError(await api(h(), noRead).get(`/users/${user.id}/term-acceptances`), 403, "permission_denied")
    expectError(await api(h(), noRead).get(`/legal-terms/${term.id}/acceptances`), 403, "permission_denied")

    const limited = await credentialWith(h(), ["term_acceptances.read", "term_acceptances.create"], [term.id])
    expect((await api(h(), limited).get(`/users/${user.id}/term-acceptances`)).body.data.map((x: any) => x.id)).toEqual([onTerm.id])
    expect((await api(h(), limited).get(`/legal-terms/${term.id}/acceptances/${onTerm.id}`)).status).toBe(200)
    expectError(await api(h(), limited).get(`/legal-terms/${other.id}/acceptances/${onOther.id}`), 404, "not_found")
    expectError(await api(h(), limited).get(`/legal-terms/${other.id}/acceptances`), 404, "not_found")
    expectError(await accept(h(), other.id, (await newUser(h())).id, 1, limited), 404, "not_found")
    expect((await accept(h(), term.id, (await newUser(h())).id, 1, limited)).status).toBe(201)

    const catalog = (await api(h()).get("/policy-templates")).body.data.find((t: any) => t.id === "full_access").capabilities
    expect(catalog).toEqual(expect.arrayContaining(["term_acceptances.read", "term_acceptances.create", "legal_terms.read_proof"]))
    expect(catalog).not.toContain("term_acceptances.update")
    expect(catalog).not.toContain("term_acceptances.delete")
  })

  it("idempotency (§4.1): recording needs a key; a replay answers the same acceptance and records no other", async () => {
    const term = await productTerm(h())
    const user = await newUser(h())
    const path = `/legal-terms/${term.id}/acceptances`
    const body = { user_id: user.id, version: 1, proof }
    expectError(await api(h()).post(path, body, { idempotencyKey: null }), 422, "idempotency_key_required")
    const first = await api(h()).post(path, body, { idempotencyKey: "tac-1" })
    expect(first.status).toBe(201)
    const replay = await api(h()).post(path, body, { idempotencyKey: "tac-1" })
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.body.data.id).toBe(first.body.data.id)
    expect((await api(h()).get(`${path}?user_id=${user.id}`)).body.data).toHaveLength(1)
  })

  it("a batch records acceptances as the route does, without the proof in its results", async () => {
    const term = await productTerm(h())
    const user = await newUser(h())
    const res = await api(h()).post("/operations", {
      type: "term_acceptances.create",
      items: [{ key: "a", legal_term_id: term.id, user_id: user.id, version: 1, proof }]
    })
    expect(res.status, res.text).toBe(202)
    const op = await settle(h(), res.body.data.id)
    expect(op.status).toBe("succeeded")
    const items = (await api(h()).get(`/operations/${op.id}/items`)).body.data
    expect(JSON.stringify(items)).not.toContain(proof.ip)
    const listed = (await api(h()).get(`/users/${user.id}/term-acceptances`)).body.data
    expect(listed).toHaveLength(1)
    expect(listed[0].proof).toEqual(proof)
    expectError(
      await api(h()).post("/operations", { type: "term_acceptances.delete", items: [{ key: "a", legal_term_id: term.id, id: listed[0].id }] }),
      422,
      "operation_type_unknown"
    )
  })

  it("a sandbox reset empties the sandbox's acceptances", async () => {
    const user = await newUser(h(), h().test)
    const term = await productTerm(h(), h().test)
    const acceptance = (await accept(h(), term.id, user.id, 1, h().test)).body.data
    expect((await api(h(), h().test).get(`/users/${user.id}/term-acceptances`)).body.data.map((x: any) => x.id)).toEqual([acceptance.id])
    expectError(await api(h()).get(`/legal-terms/${term.id}/acceptances/${acceptance.id}`), 404, "not_found")
    expect((await api(h(), h().test).post("/sandbox/resets")).status).toBeLessThan(300)
    expectError(await api(h(), h().test).get(`/legal-terms/${term.id}/acceptances/${acceptance.id}`), 404, "not_found")
    expectError(await api(h(), h().test).get(`/users/${user.id}/term-acceptances`), 404, "not_found")
  })
})
