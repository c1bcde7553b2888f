/**
 * Custom domains (`/domains`, release 3.2.0; docs/domains.md): the shape and the host name's
 * rules (lower case, a DNS name, not an IP, not under the platform's host, unique across every
 * account, also under concurrent creates), the DNS TXT verification through an in-memory
 * resolver (pending → failed → active, each failure's reason), the one primary domain (moved in
 * one unit of work, also under concurrent moves), removal, the sandbox, permissions,
 * idempotency and batches; and human mode's sign-in host following the account's primary
 * active custom domain (§5.2 step 5), driven with plain HTTP requests as oauth.test.ts does.
 *
 * Each test opens an account of its own: domains live in production, which no reset empties.
 */
import { makeMemoryDns } from "@syllabus/http"
import { createHash, randomBytes } from "node:crypto"
import { expect, it } from "vitest"
import { api, created } from "../support/api.js"
import { FormBrowser } from "../support/browser.js"
import { expectError } from "../support/expect.js"
import { eachStore, type Harness } from "../support/harness.js"

const dns = makeMemoryDns()
const PLATFORM_HOST = "platform-syllabus.dev"

let counter = 0
const unique = () => `${Date.now().toString(36)}${(++counter).toString(36)}${randomBytes(3).toString("hex")}`
/** A host name no other test uses. */
const hostname = (prefix = "learn") => `${prefix}-${unique()}.example.com`

/** A new account of its own: its production client, and its sandbox one. */
const newAccount = async (h: Harness) => {
  const opened = await h.openAccount(`dom-${unique()}`)
  const secret = (env: string) => opened.credentials.find((c) => c.environment === env)!.secret
  return { opened, client: api(h, secret("production")), sandbox: api(h, secret("sandbox")), live: secret("production") }
}

type Client = ReturnType<typeof api>

/** A domain made active: its challenge published, then verified. */
const activeDomain = async (client: Client, name = hostname()) => {
  const domain = await created(client.post("/domains", { hostname: name }))
  dns.setTxt(domain.verification.record_name, [domain.verification.record_value])
  const verified = await client.post(`/domains/${domain.id}/verifications`)
  expect(verified.status, verified.text).toBe(200)
  expect(verified.body.data.status).toBe("active")
  return verified.body.data
}

const eventsOf = async (client: Client, id: string, type: string) => (await client.get(`/events?resource_id=${id}&type=${type}`)).body.data

eachStore(
  "custom domains",
  (h) => {
    it("create: lower-cased host name, dom_ ID, pending with its TXT challenge; Location, ETag, event and audit entry", async () => {
      const { client } = await newAccount(h())
      const name = hostname()
      const res = await client.post("/domains", { hostname: `${name.toUpperCase()}.` })
      expect(res.status, res.text).toBe(201)
      const data = res.body.data
      expect(Object.keys(data)).toEqual(["object", "id", "hostname", "status", "primary", "verification", "verified_at", "created_at", "updated_at", "revision"])
      expect(data).toMatchObject({ object: "domain", hostname: name, status: "pending", primary: false, verified_at: null, revision: "1" })
      expect(data.id).toMatch(/^dom_[0-9A-Za-z]{9}$/)
      expect(data.verification).toEqual({
        method: "dns_txt",
        record_type: "TXT",
        record_name: `_syllabus-challenge.${name}`,
        record_value: expect.stringMatching(/^syllabus-verification=[A-Za-z0-9_-]{32}$/),
        checked_at: null,
        failure_reason: null
      })
      expect(res.headers.get("location")).toBe(`/api/v3/domains/${data.id}`)
      const read = await client.get(`/domains/${data.id}`)
      expect(read.body.data).toEqual(data)
      expect(read.headers.get("etag")).toBe(`W/"domain:${data.id}:1"`)
      // Each domain has a token of its own.
      const other = await created(client.post("/domains", { hostname: hostname() }))
      expect(other.verification.record_value).not.toBe(data.verification.record_value)
      expect(await eventsOf(client, data.id, "domain.created")).toHaveLength(1)
      const audit = (await client.get(`/audit-entries?resource_id=${data.id}`)).body.data.map((e: { action: string }) => e.action)
      expect(audit).toContain("domain.created")
    })

    it("validation: a DNS host name of two labels or more, never an IP address; each problem on hostname; nothing created", async () => {
      const { client } = await newAccount(h())
      expectError(await client.post("/domains", {}), 422, "validation_failed", { field: "hostname", code: "required" })
      expectError(await client.post("/domains", { hostname: 42 }), 422, "validation_failed", { field: "hostname" })
      const refused = [
        "192.168.10.20",
        "::1",
        "[2001:db8::1]",
        "localhost",
        "bad_label.example.com",
        "-lead.example.com",
        "trail-.example.com",
        "*.example.com",
        "two..dots.example.com",
        "https://learn.example.com",
        "learn.example.com/path",
        "learn example.com",
        "example.123",
        `${"a".repeat(64)}.example.com`,
        // 234 characters: its challenge's name would pass DNS's 253.
        `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(42)}`
      ]
      for (const name of refused) {
        expectError(await client.post("/domains", { hostname: name }), 422, "validation_failed", { field: "hostname" })
      }
      expectError(await client.post("/domains", { hostname: hostname(), primary: true }), 422, "unknown_field", { field: "primary" })
      expectError(await client.post("/domains", { hostname: hostname() }, { idempotencyKey: null }), 422, "idempotency_key_required")
      expect((await client.get("/domains")).body.data).toEqual([])
      // The longest names accepted: 63-character labels, 233 in all (`_syllabus-challenge.` and it make 253).
      const longest = `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(41)}`
      expect(longest).toHaveLength(233)
      expect((await client.post("/domains", { hostname: longest })).status).toBe(201)
      // Valid IDNs in punycode (bücher, рф).
      expect((await client.post("/domains", { hostname: `xn--bcher-kva.${unique()}.com` })).status).toBe(201)
      expect((await client.post("/domains", { hostname: `learn-${unique()}.xn--p1ai` })).status).toBe(201)
    })

    it("special-use names (RFC 6761 and friends, the clouds' metadata names) and invalid IDNs: 422 on hostname with the reason", async () => {
      const { client } = await newAccount(h())
      const specialUse = [
        "foo.localhost",
        "printer.local",
        "a.b.local.",
        "metadata.google.internal",
        "instance-data.ec2.internal",
        "api.internal",
        "site.test",
        "x.invalid",
        "www.example",
        "hidden.onion",
        "router.home.arpa"
      ]
      for (const name of specialUse) {
        expectError(await client.post("/domains", { hostname: name }), 422, "validation_failed", { field: "hostname", code: "invalid_value", reason: "special_use" })
      }
      const invalidIdn = [
        "xn--zz.example.com", // not punycode at all
        "xn--a.example.com",
        "xn--ls8h.example.com", // an emoji: no IDN
        "xn--bcherkva.example.com", // decodes to symbols
        "xn--ab-cd.example.com", // not punycode either
        "ab--cd.example.com" // `--` at 3–4 without xn: reserved
      ]
      for (const name of invalidIdn) {
        expectError(await client.post("/domains", { hostname: name }), 422, "validation_failed", { field: "hostname", code: "invalid_value", reason: "invalid_idn" })
      }
      expect((await client.get("/domains")).body.data).toEqual([])
    })

    it("the platform's own host and names under it: 422 domain_rule_violation, reason platform_host", async () => {
      const { client } = await newAccount(h())
      for (const name of [PLATFORM_HOST, `school.${PLATFORM_HOST}`, `a.b.${PLATFORM_HOST.toUpperCase()}`]) {
        expectError(await client.post("/domains", { hostname: name }), 422, "domain_rule_violation", { field: "hostname", reason: "platform_host" })
      }
      // A name that merely ends with the same letters is not under it.
      expect((await client.post("/domains", { hostname: `not${PLATFORM_HOST}` })).status).toBe(201)
      expect((await client.get("/domains")).body.data.map((d: any) => d.hostname)).toEqual([`not${PLATFORM_HOST}`])
    })

    it("a pending claim holds nothing across accounts: the first to verify owns the name (409 elsewhere after, the other claim fails verified_elsewhere); removing it frees the name", async () => {
      const first = await newAccount(h())
      const second = await newAccount(h())
      const name = hostname()
      const squatted = await created(first.client.post("/domains", { hostname: name }))
      expectError(await first.client.post("/domains", { hostname: name.toUpperCase() }), 409, "already_exists", { field: "hostname" })
      // The real owner is not kept out by another account's pending claim, and its proof wins.
      const owned = await created(second.client.post("/domains", { hostname: name }))
      expect(owned.verification.record_value).not.toBe(squatted.verification.record_value)
      dns.setTxt(owned.verification.record_name, [owned.verification.record_value, squatted.verification.record_value])
      expect((await second.client.post(`/domains/${owned.id}/verifications`)).body.data).toMatchObject({ status: "active", primary: true })
      const lost = await first.client.post(`/domains/${squatted.id}/verifications`)
      expect(lost.status, lost.text).toBe(200)
      expect(lost.body.data).toMatchObject({ status: "failed", primary: false, verified_at: null, verification: { failure_reason: "verified_elsewhere" } })
      // Owned: nobody else may claim it now.
      const third = await newAccount(h())
      expectError(await third.client.post("/domains", { hostname: name }), 409, "already_exists", { field: "hostname" })
      expect((await third.client.get("/domains")).body.data).toEqual([])
      expect((await first.client.del(`/domains/${squatted.id}`)).status).toBe(204)
      expect((await second.client.del(`/domains/${owned.id}`)).status).toBe(204)
      const taken = await created(third.client.post("/domains", { hostname: name }))
      expect(taken.hostname).toBe(name)
      // Another account's domain is not found here.
      expectError(await first.client.get(`/domains/${taken.id}`), 404, "not_found")
      expectError(await first.client.post(`/domains/${taken.id}/verifications`), 404, "not_found")
    })

    it("concurrent verifications of one host name from six accounts, each proven: exactly one owns it, the others fail verified_elsewhere", async () => {
      const accounts = await Promise.all(Array.from({ length: 6 }, () => newAccount(h())))
      const name = hostname("race")
      const claims = await Promise.all(accounts.map((a) => created(a.client.post("/domains", { hostname: name }))))
      dns.setTxt(claims[0]!.verification.record_name, claims.map((c) => c.verification.record_value))
      const answers = await Promise.all(accounts.map((a, i) => a.client.post(`/domains/${claims[i]!.id}/verifications`)))
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
      const outcomes = answers.map((r) => r.body.data.verification.failure_reason ?? r.body.data.status).sort()
      expect(outcomes).toEqual(["active", "verified_elsewhere", "verified_elsewhere", "verified_elsewhere", "verified_elsewhere", "verified_elsewhere"])
      expectError(await (await newAccount(h())).client.post("/domains", { hostname: name }), 409, "already_exists", { field: "hostname" })
    })

    it("a claim not verified within 7 days lapses: its verification fails claim_expired without a lookup, even with the record published", async () => {
      const { client } = await newAccount(h())
      const domain = await created(client.post("/domains", { hostname: hostname() }))
      dns.setTxt(domain.verification.record_name, [domain.verification.record_value])
      h().advance(7 * 24 * 60 * 60 * 1000 + 1000)
      const lapsed = await client.post(`/domains/${domain.id}/verifications`)
      expect(lapsed.status, lapsed.text).toBe(200)
      expect(lapsed.body.data).toMatchObject({ status: "failed", verified_at: null, verification: { failure_reason: "claim_expired" } })
      // Removed and added again: a new claim, a new challenge, verified.
      expect((await client.del(`/domains/${domain.id}`)).status).toBe(204)
      const again = await created(client.post("/domains", { hostname: domain.hostname }))
      dns.setTxt(again.verification.record_name, [again.verification.record_value])
      expect((await client.post(`/domains/${again.id}/verifications`)).body.data).toMatchObject({ status: "active" })
    })

    it("within 7 days a claim is still verified", async () => {
      const { client } = await newAccount(h())
      const domain = await created(client.post("/domains", { hostname: hostname() }))
      dns.setTxt(domain.verification.record_name, [domain.verification.record_value])
      h().advance(7 * 24 * 60 * 60 * 1000 - 60 * 1000)
      expect((await client.post(`/domains/${domain.id}/verifications`)).body.data).toMatchObject({ status: "active" })
    })

    it("verification: not found, a different value, no DNS answer → failed with its reason; the record → active, verified_at, primary; events", async () => {
      const { client } = await newAccount(h())
      const domain = await created(client.post("/domains", { hostname: hostname() }))
      const verify = () => client.post(`/domains/${domain.id}/verifications`)
      const { record_name: name, record_value: value } = domain.verification

      const missing = await verify()
      expect(missing.status, missing.text).toBe(200)
      expect(missing.body.data).toMatchObject({ status: "failed", primary: false, verified_at: null, revision: "2" })
      expect(missing.body.data.verification).toMatchObject({ failure_reason: "record_not_found", record_value: value })
      expect(Date.parse(missing.body.data.verification.checked_at)).not.toBeNaN()
      expect(missing.headers.get("etag")).toBe(`W/"domain:${domain.id}:2"`)
      expect(dns.lookups).toContain(name)

      dns.setTxt(name, ["v=spf1 -all", "syllabus-verification=someone-elses-token"])
      expect((await verify()).body.data.verification.failure_reason).toBe("record_mismatch")
      dns.setTxt(name, [])
      expect((await verify()).body.data.verification.failure_reason).toBe("record_not_found")
      dns.setUnavailable(true)
      try {
        const silent = await verify()
        expect(silent.status).toBe(200)
        expect(silent.body.data).toMatchObject({ status: "failed", verification: { failure_reason: "lookup_failed" } })
      } finally {
        dns.setUnavailable(false)
      }
      expect(await eventsOf(client, domain.id, "domain.failed")).toHaveLength(4)

      // A failed domain may still become active; other TXT records beside it do not matter. DNS names have no case.
      dns.setTxt(name.toUpperCase(), ["v=spf1 -all", value])
      const found = await verify()
      expect(found.status).toBe(200)
      const active = found.body.data
      expect(active).toMatchObject({ status: "active", primary: true, verification: { failure_reason: null } })
      expect(Date.parse(active.verified_at)).not.toBeNaN()
      const verified = await eventsOf(client, domain.id, "domain.verified")
      expect(verified).toHaveLength(1)
      expect(verified[0].data.object).toMatchObject({ id: domain.id, status: "active" })
      expect(verified[0].previous_attributes).toMatchObject({ status: "failed" })
      const audit = (await client.get(`/audit-entries?resource_id=${domain.id}`)).body.data.map((e: { action: string }) => e.action)
      expect(audit).toEqual(expect.arrayContaining(["domain.verified", "domain.failed"]))

      // Once active it stays active: a verification is 422 invalid_transition, even with the record gone.
      dns.remove(name)
      expectError(await verify(), 422, "invalid_transition", { reason: "from_active" })
      expect((await client.get(`/domains/${domain.id}`)).body.data).toEqual(active)
      expectError(await client.post("/domains/dom_000000001/verifications"), 404, "not_found")
      expectError(await client.post(`/domains/${domain.id}/verifications`, undefined, { idempotencyKey: null }), 422, "idempotency_key_required")
    })

    it("verification with the same Idempotency-Key answers the recorded outcome without looking up again", async () => {
      const { client } = await newAccount(h())
      const domain = await created(client.post("/domains", { hostname: hostname() }))
      const key = `verify-${unique()}`
      const first = await client.post(`/domains/${domain.id}/verifications`, undefined, { idempotencyKey: key })
      expect(first.body.data.status).toBe("failed")
      const lookups = dns.lookups.length
      dns.setTxt(domain.verification.record_name, [domain.verification.record_value])
      const again = await client.post(`/domains/${domain.id}/verifications`, undefined, { idempotencyKey: key })
      expect(again.status).toBe(200)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(again.body).toEqual(first.body)
      expect(dns.lookups.length).toBe(lookups)
      // A new key looks up again.
      expect((await client.post(`/domains/${domain.id}/verifications`)).body.data.status).toBe("active")
    })

    it("primary: the first active domain; PATCH primary=true moves it (the previous one changed with it); only an active domain; never unset alone", async () => {
      const { client } = await newAccount(h())
      const a = await activeDomain(client)
      expect(a.primary).toBe(true)
      const b = await activeDomain(client)
      expect(b.primary).toBe(false)
      const pending = await created(client.post("/domains", { hostname: hostname() }))

      const moved = await client.patch(`/domains/${b.id}`, { primary: true })
      expect(moved.status, moved.text).toBe(200)
      expect(moved.body.data).toMatchObject({ primary: true, status: "active" })
      expect((await client.get(`/domains/${a.id}`)).body.data.primary).toBe(false)
      expect((await client.get("/domains?primary=true")).body.data.map((d: any) => d.id)).toEqual([b.id])
      expect((await client.get("/domains?primary=false")).body.data.map((d: any) => d.id).sort()).toEqual([a.id, pending.id].sort())
      const demoted = await eventsOf(client, a.id, "domain.updated")
      expect(demoted).toHaveLength(1)
      expect(demoted[0].previous_attributes).toMatchObject({ primary: true })

      expectError(await client.patch(`/domains/${pending.id}`, { primary: true }), 422, "domain_rule_violation", { field: "primary", reason: "not_active" })
      expectError(await client.patch(`/domains/${b.id}`, { primary: false }), 422, "domain_rule_violation", { field: "primary", reason: "primary_required" })
      expectError(await client.patch(`/domains/${b.id}`, { hostname: hostname() }), 422, "unknown_field", { field: "hostname" })
      expectError(await client.patch(`/domains/${b.id}`, { primary: "yes" }), 422, "validation_failed", { field: "primary" })
      // `false` on a domain that is not primary changes nothing.
      expect((await client.patch(`/domains/${a.id}`, { primary: false })).body.data.primary).toBe(false)
      expect((await client.get("/domains?primary=true")).body.data.map((d: any) => d.id)).toEqual([b.id])
      // Making the primary primary again keeps it so.
      expect((await client.patch(`/domains/${b.id}`, { primary: true })).body.data.primary).toBe(true)
      expect((await client.get("/domains?primary=true")).body.data.map((d: any) => d.id)).toEqual([b.id])
      // If-Match with an old revision: 412.
      expectError(await client.patch(`/domains/${a.id}`, { primary: true }, { "if-match": `W/"domain:${a.id}:1"` }), 412, "revision_mismatch")
    })

    it("concurrent moves of the primary: exactly one primary domain afterwards", async () => {
      const { client } = await newAccount(h())
      const all = [await activeDomain(client), await activeDomain(client), await activeDomain(client)]
      const answers = await Promise.all(Array.from({ length: 9 }, (_, i) => client.patch(`/domains/${all[i % 3]!.id}`, { primary: true })))
      for (const answer of answers) expect([200, 409]).toContain(answer.status)
      const primaries = (await client.get("/domains?primary=true")).body.data
      expect(primaries).toHaveLength(1)
      expect((await client.get("/domains")).body.data.filter((d: any) => d.primary)).toHaveLength(1)
    })

    it("concurrent first verifications: exactly one domain becomes primary", async () => {
      const { client } = await newAccount(h())
      const pending = await Promise.all(Array.from({ length: 4 }, async () => created(client.post("/domains", { hostname: hostname() }))))
      for (const domain of pending) dns.setTxt(domain.verification.record_name, [domain.verification.record_value])
      const answers = await Promise.all(pending.map((domain) => client.post(`/domains/${domain.id}/verifications`)))
      for (const answer of answers) expect(answer.status, answer.text).toBe(200)
      const all = (await client.get("/domains")).body.data
      expect(all.map((d: any) => d.status)).toEqual(["active", "active", "active", "active"])
      expect(all.filter((d: any) => d.primary)).toHaveLength(1)
    })

    it("delete: removed for good (204, domain.deleted); the primary only when no other domain is active (422 primary_domain)", async () => {
      const { client } = await newAccount(h())
      const primary = await activeDomain(client)
      const other = await activeDomain(client)
      const failed = await created(client.post("/domains", { hostname: hostname() }))
      await client.post(`/domains/${failed.id}/verifications`)

      expectError(await client.del(`/domains/${primary.id}`), 422, "domain_rule_violation", { reason: "primary_domain" })
      expect((await client.get(`/domains/${primary.id}`)).status).toBe(200)

      expect((await client.del(`/domains/${failed.id}`)).status).toBe(204)
      expect((await client.del(`/domains/${other.id}`)).status).toBe(204)
      expectError(await client.get(`/domains/${other.id}`), 404, "not_found")
      expectError(await client.del(`/domains/${other.id}`), 404, "not_found")
      expect(await eventsOf(client, other.id, "domain.deleted")).toHaveLength(1)
      // The last active domain, primary, can go: sign-in falls back to the subdomain.
      expect((await client.del(`/domains/${primary.id}`)).status).toBe(204)
      expect((await client.get("/domains")).body.data).toEqual([])
      expectError(await client.get("/domains?deleted=true"), 400, "unknown_parameter", { parameter: "deleted" })
    })

    it("lists: oldest first, sort=hostname, status filter, q; a bad status is 422", async () => {
      const { client } = await newAccount(h())
      const c = await created(client.post("/domains", { hostname: `c-${unique()}.example.org` }))
      const a = await activeDomain(client, `a-${unique()}.example.org`)
      const b = await created(client.post("/domains", { hostname: `b-${unique()}.example.net` }))
      expect((await client.get("/domains")).body.data.map((d: any) => d.id)).toEqual([c.id, a.id, b.id])
      expect((await client.get("/domains?sort=hostname")).body.data.map((d: any) => d.id)).toEqual([a.id, b.id, c.id])
      expect((await client.get("/domains?sort=-hostname")).body.data.map((d: any) => d.id)).toEqual([c.id, b.id, a.id])
      expect((await client.get("/domains?status=active")).body.data.map((d: any) => d.id)).toEqual([a.id])
      expect((await client.get("/domains?status=pending")).body.data.map((d: any) => d.id)).toEqual([c.id, b.id])
      expect((await client.get("/domains?q=example.net")).body.data.map((d: any) => d.id)).toEqual([b.id])
      const page = await client.get("/domains?limit=2")
      expect(page.body.data).toHaveLength(2)
      expect((await client.get(`/domains?limit=2&cursor=${page.body.page.next_cursor}`)).body.data.map((d: any) => d.id)).toEqual([b.id])
      expectError(await client.get("/domains?status=verified"), 422, "validation_failed", { parameter: "status" })
    })

    it("the sandbox has no domains: its list is empty and a create is 422 domain_rule_violation (sandbox_environment); its reset leaves production's", async () => {
      const { client, sandbox } = await newAccount(h())
      const domain = await created(client.post("/domains", { hostname: hostname() }))
      expect((await sandbox.get("/domains")).body.data).toEqual([])
      expectError(await sandbox.post("/domains", { hostname: hostname() }), 422, "domain_rule_violation", { reason: "sandbox_environment" })
      expectError(await sandbox.get(`/domains/${domain.id}`), 404, "not_found")
      expect((await sandbox.post("/sandbox/resets")).status).toBeLessThan(300)
      expect((await client.get(`/domains/${domain.id}`)).body.data.id).toBe(domain.id)
    })

    it("permissions: domains.read lists; creating, verifying, changing and removing need their capability; the domain_manager template holds them all", async () => {
      const { client, live } = await newAccount(h())
      const domain = await created(client.post("/domains", { hostname: hostname() }))
      const withCapabilities = async (capabilities: ReadonlyArray<string>) =>
        api(h(), (await created(client.post("/credentials", { name: "limited", policies: [{ capabilities }] }))).secret.value)
      const reader = await withCapabilities(["domains.read"])
      expect((await reader.get("/domains")).body.data.map((d: any) => d.id)).toEqual([domain.id])
      expectError(await reader.post("/domains", { hostname: hostname() }), 403, "permission_denied")
      expectError(await reader.post(`/domains/${domain.id}/verifications`), 403, "permission_denied")
      expectError(await reader.patch(`/domains/${domain.id}`, { primary: true }), 403, "permission_denied")
      expectError(await reader.del(`/domains/${domain.id}`), 403, "permission_denied")
      const verifier = await withCapabilities(["domains.update"])
      expect((await verifier.post(`/domains/${domain.id}/verifications`)).status).toBe(200)
      expectError(await verifier.get("/domains"), 403, "permission_denied")

      const templates = (await api(h(), live).get("/policy-templates")).body.data as ReadonlyArray<{ id: string; capabilities: ReadonlyArray<string> }>
      expect(templates.find((t) => t.id === "domain_manager")?.capabilities).toEqual(["domains.read", "domains.create", "domains.update", "domains.delete"])
      const manager = api(h(), (await created(client.post("/credentials", { name: "domains", policies: [{ template: "domain_manager" }] }))).secret.value)
      expect((await manager.post("/domains", { hostname: hostname() })).status).toBe(201)
      expectError(await manager.get("/products"), 403, "permission_denied")
    })

    it("idempotency: a create repeated with its key is replayed, one domain; the same key with another body is 422", async () => {
      const { client } = await newAccount(h())
      const key = `create-${unique()}`
      const name = hostname()
      const first = await client.post("/domains", { hostname: name }, { idempotencyKey: key })
      const again = await client.post("/domains", { hostname: name }, { idempotencyKey: key })
      expect(again.status).toBe(201)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(again.body).toEqual(first.body)
      expectError(await client.post("/domains", { hostname: hostname() }, { idempotencyKey: key }), 422, "idempotency_key_reused")
      expect((await client.get("/domains")).body.data).toHaveLength(1)
    })

    it("batches: domains.create items follow the same rules (a taken name or the platform's host fails its item only)", async () => {
      const { client } = await newAccount(h())
      const taken = await created(client.post("/domains", { hostname: hostname() }))
      const fresh = hostname()
      const started = await client.post("/operations", {
        type: "domains.create",
        items: [
          { key: "fresh", hostname: fresh },
          { key: "taken", hostname: taken.hostname },
          { key: "platform", hostname: `x.${PLATFORM_HOST}` }
        ]
      })
      expect(started.status, started.text).toBe(202)
      let items: any[] = []
      for (let i = 0; i < 100; i++) {
        const op = (await client.get(`/operations/${started.body.data.id}`)).body.data
        if (op.status === "succeeded" || op.status === "failed") {
          items = (await client.get(`/operations/${started.body.data.id}/items`)).body.data
          break
        }
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const byKey = Object.fromEntries(items.map((item) => [item.key, item]))
      expect(byKey.fresh?.status).toBe("succeeded")
      expect(byKey.taken?.error?.code).toBe("already_exists")
      expect(byKey.platform?.error?.code).toBe("domain_rule_violation")
      expect((await client.get("/domains?sort=hostname")).body.data.map((d: any) => d.hostname).sort()).toEqual([fresh, taken.hostname].sort())
    })
  },
  { dns: dns.layer, platformHost: PLATFORM_HOST }
)

// ---------------------------------------------------------------------------------------
// Human mode: the sign-in host follows the primary active custom domain (§5.2 step 5)

const pkceParams = () => {
  const verifier = randomBytes(32).toString("base64url")
  return {
    response_type: "code",
    client_id: "service-cli",
    redirect_uri: "http://127.0.0.1:49152/callback",
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: randomBytes(12).toString("base64url")
  }
}

const authorize = (browser: FormBrowser, params: Record<string, string>, platform: string) =>
  browser.go("GET", `/oauth/authorize?${new URLSearchParams({ ...params, platform }).toString()}`)

eachStore(
  "custom domains in human mode (§5.2 step 5)",
  (h) => {
    it("an active custom domain names its account; the confirmation shows it as the address and the browser goes on with it", async () => {
      const { opened, client } = await newAccount(h())
      const subdomain = String(opened.account.subdomain)
      const params = pkceParams()
      const host = `${h().baseUrl.replace(/^http:\/\//, "")}`

      // Without a custom domain: the subdomain under the server's host.
      const before = await authorize(new FormBrowser(h().baseUrl), params, subdomain)
      expect(before.html).toContain(`${subdomain}.${host}`)

      // A pending domain names no account yet.
      const domain = await created(client.post("/domains", { hostname: hostname("school") }))
      const unknown = await authorize(new FormBrowser(h().baseUrl), params, domain.hostname)
      expect(unknown.status).toBe(200)
      expect(unknown.html).toContain('role="alert"')
      expect(unknown.html).not.toContain('action="/oauth/authorize/confirm"')

      dns.setTxt(domain.verification.record_name, [domain.verification.record_value])
      expect((await client.post(`/domains/${domain.id}/verifications`)).body.data.status).toBe("active")

      for (const platform of [domain.hostname, domain.hostname.toUpperCase(), `https://${domain.hostname}/courses?x=1`, subdomain]) {
        const browser = new FormBrowser(h().baseUrl)
        const page = await authorize(browser, params, platform)
        expect(page.status, platform).toBe(200)
        expect(page.html, platform).toContain('action="/oauth/authorize/confirm"')
        expect(page.html, platform).toContain(String(opened.account.name))
        expect(page.html, platform).toContain(`<dd>${domain.hostname}</dd>`)
        expect(page.html, platform).not.toContain(`${subdomain}.${host}`)
        const confirmed = await browser.go("POST", "/oauth/authorize/confirm", { ...params, platform: subdomain })
        expect(confirmed.status).toBe(303)
        const next = new URL(confirmed.location!, h().baseUrl)
        expect(next.pathname).toBe("/oauth/authorize")
        expect(next.searchParams.get("platform")).toBe(domain.hostname)
        const signIn = await browser.go("GET", `${next.pathname}${next.search}`)
        expect(signIn.html).toContain('action="/oauth/sign-in"')
        expect(signIn.html).toContain(String(opened.account.name))
      }
    })

    it("a custom domain whose first label is another account's subdomain names the domain's account, not that one", async () => {
      const owner = await newAccount(h())
      const bystander = await newAccount(h())
      const name = `${String(bystander.opened.account.subdomain)}.example.com`
      await activeDomain(owner.client, name)
      const page = await authorize(new FormBrowser(h().baseUrl), pkceParams(), name)
      expect(page.html).toContain(String(owner.opened.account.name))
      expect(page.html).not.toContain(String(bystander.opened.account.name))
      // Any other host under it still falls back to the subdomain of its first label.
      const other = await authorize(new FormBrowser(h().baseUrl), pkceParams(), `${String(bystander.opened.account.subdomain)}.example.org`)
      expect(other.html).toContain(String(bystander.opened.account.name))
    })

    it("the address follows the primary: another active domain made primary is shown; with no active domain left, the subdomain again", async () => {
      const { opened, client } = await newAccount(h())
      const subdomain = String(opened.account.subdomain)
      const params = pkceParams()
      const first = await activeDomain(client, hostname("first"))
      const second = await activeDomain(client, hostname("second"))
      const address = async (platform: string) => {
        const page = await authorize(new FormBrowser(h().baseUrl), params, platform)
        return /<dt>Address<\/dt><dd>([^<]*)<\/dd>/.exec(page.html)?.[1]
      }
      expect(await address(second.hostname)).toBe(first.hostname)
      expect((await client.patch(`/domains/${second.id}`, { primary: true })).status).toBe(200)
      expect(await address(first.hostname)).toBe(second.hostname)
      expect(await address(subdomain)).toBe(second.hostname)
      expect((await client.del(`/domains/${first.id}`)).status).toBe(204)
      expect((await client.del(`/domains/${second.id}`)).status).toBe(204)
      expect(await address(subdomain)).toBe(`${subdomain}.${h().baseUrl.replace(/^http:\/\//, "")}`)
      // A removed domain names no account any more.
      const gone = await authorize(new FormBrowser(h().baseUrl), params, first.hostname)
      expect(gone.html).toContain('role="alert"')
    })
  },
  { dns: dns.layer, platformHost: PLATFORM_HOST }
)
