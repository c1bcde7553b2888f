/**
 * The public reference (issues 12 and 26): `/docs` (the introduction and the index of the
 * operations, plain HTML), `/docs/reference/{tag}` (a Redoc page of one resource tag, from
 * its part of the description) and `/docs/openapi.json` (the description of the latest
 * release) are served outside `/api/v3`, without a credential, and work offline: the script
 * comes from the server, not from a CDN. They are written for a reader without the contract:
 * no bare "§" reference. `/api/v3` itself still requires a credential (§5).
 */
import { expect, it } from "vitest"
import { eachStore } from "../support/harness.js"
import { expectError } from "../support/expect.js"
import type { Response } from "../support/harness.js"

const expectError404 = (res: Response) => {
  expect(res.status).toBe(404)
  expect(res.body).toEqual({ status: "not_found" })
}

const deprecatedAt = Date.UTC(2026, 0, 15)
const sunsetAt = Date.UTC(2099, 0, 1)

eachStore(
  "the public reference at /docs",
  (h) => {
    it("serves /docs/openapi.json without a credential: the same description as /api/v3/openapi.json", async () => {
      const open = await h().request("GET", "/docs/openapi.json")
      expect(open.status).toBe(200)
      expect(open.headers.get("content-type")).toMatch(/^application\/json/)
      const served = await h().request("GET", "/api/v3/openapi.json", { secret: h().live })
      expect(served.status).toBe(200)
      expect(open.body).toEqual(served.body)
      expect(open.body.info.version).toBe(open.headers.get("x-service-release"))
    })

    it("reflects the server's deprecations in the public copy (§9)", async () => {
      const op = (await h().request("GET", "/docs/openapi.json")).body.paths["/policy-templates"].get
      expect(op).toMatchObject({ deprecated: true, "x-sunset": new Date(sunsetAt).toISOString() })
    })

    it("serves /docs: the introduction and an index of every operation, plain HTML that loads nothing", async () => {
      const res = await h().request("GET", "/docs")
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toMatch(/^text\/html/)
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'")
      // Usable as soon as it arrives: no script, nothing else to fetch, and small.
      expect(res.text).not.toMatch(/<script|<link|<img|<iframe/)
      expect(res.text).not.toMatch(/(?:src|href)="https?:/)
      expect(res.text.length).toBeLessThan(200_000)
      for (const id of ["authentication", "modes", "idempotency", "errors", "pagination", "rate-limits"]) expect(res.text).toContain(`<section id="${id}">`)
      for (const words of ["Authorization: Bearer ck_live_", "X-API-Key", "code_challenge_method=S256", "Idempotency-Key", "Idempotent-Replayed", "request_id", "next_cursor", "Retry-After", "RateLimit-Remaining"]) {
        expect(res.text).toContain(words)
      }
      // Each operation of the description is linked to its place in its tag's page.
      const doc = (await h().request("GET", "/docs/openapi.json")).body
      const operations = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((item) =>
        ["get", "post", "put", "patch", "delete"].filter((m) => item[m] !== undefined).map((m) => item[m])
      )
      const links = [...res.text.matchAll(/href="\/docs\/reference\/[a-z0-9-]+#tag\/[^/"]+\/operation\/([^"]+)"/g)].map(([, id]) => decodeURIComponent(id!))
      expect(links.sort()).toEqual(operations.map((op) => op.operationId).sort())
    })

    it("serves a page per resource tag, whose script and part of the description come from this server", async () => {
      const res = await h().request("GET", "/docs/reference/products")
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toMatch(/^text\/html/)
      const sources = [...res.text.matchAll(/(?:src|spec-url)="([^"]+)"/g)].map(([, url]) => url)
      expect(sources.sort()).toEqual(["/docs/redoc.standalone.js", "/docs/reference/products.json"])
      expect(res.text).not.toMatch(/https?:\/\//)
      expectError404(await h().request("GET", "/docs/reference/no-such-tag"))
      expectError404(await h().request("GET", "/docs/reference/no-such-tag.json"))
    })

    it("a tag's part of the description has its operations only, every reference resolving inside it", async () => {
      const whole = (await h().request("GET", "/docs/openapi.json")).body
      const res = await h().request("GET", "/docs/reference/products.json")
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toMatch(/^application\/json/)
      const part = res.body
      const tags = Object.values(part.paths as Record<string, Record<string, any>>).flatMap((item) =>
        Object.values(item).filter((op) => op?.operationId !== undefined).map((op) => op.tags[0])
      )
      expect(new Set(tags)).toEqual(new Set(["Products"]))
      expect(Object.keys(part.paths).sort()).toEqual(
        Object.entries(whole.paths as Record<string, Record<string, any>>)
          .filter(([, item]) => Object.values(item).some((op) => op?.tags?.[0] === "Products"))
          .map(([path]) => path)
          .sort()
      )
      const refs = [...res.text.matchAll(/"\$ref":"#\/components\/([^/"]+)\/([^"]+)"/g)]
      for (const [, kind, name] of refs) expect(part.components[kind!]?.[name!], `${kind}/${name}`).toBeDefined()
      // Small enough for the browser to render quickly: a fraction of the whole.
      expect(res.text.length).toBeLessThan(JSON.stringify(whole).length / 4)
    })

    it("is written for a reader without the contract: no bare § reference on /docs, in the description or in any part", async () => {
      const page = await h().request("GET", "/docs")
      const whole = await h().request("GET", "/docs/openapi.json")
      const slugs = [...new Set([...page.text.matchAll(/href="\/docs\/reference\/([a-z0-9-]+)"/g)].map(([, slug]) => slug!))]
      expect(slugs.length).toBe((whole.body.tags as Array<unknown>).length)
      const texts: Array<[string, string]> = [["/docs", page.text], ["/docs/openapi.json", whole.text]]
      for (const slug of slugs) texts.push([`/docs/reference/${slug}.json`, (await h().request("GET", `/docs/reference/${slug}.json`)).text])
      const cited = texts.flatMap(([where, text]) => [...text.matchAll(/.{0,60}§.{0,20}/g)].map(([context]) => `${where}: ${context}`))
      expect(cited).toEqual([])
    })

    it("serves the page's script from the redoc package", async () => {
      const res = await h().request("GET", "/docs/redoc.standalone.js")
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toMatch(/^text\/javascript/)
      expect(res.text.length).toBeGreaterThan(100_000)
      expect(res.text).toContain("Redoc")
    })

    it("answers HEAD like GET without a body, and another method 405 with Allow", async () => {
      for (const path of ["/docs", "/docs/reference/products", "/docs/reference/products.json"]) {
        const head = await h().request("HEAD", path)
        expect(head.status, path).toBe(200)
        expect(head.text).toBe("")
      }
      const post = await h().request("POST", "/docs/openapi.json", { json: {} })
      expect(post.status).toBe(405)
      expect(post.headers.get("allow")).toBe("GET, HEAD")
    })

    it("still requires a credential for /api/v3/openapi.json (§5)", async () => {
      expectError(await h().request("GET", "/api/v3/openapi.json"), 401, "unauthenticated")
    })
  },
  { settings: { deprecations: new Map([["policy_templates.list", { deprecatedAt, sunsetAt }]]) } }
)
