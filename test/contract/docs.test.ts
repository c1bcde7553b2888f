/**
 * The public reference (issue 12): `/docs` (a Redoc page) and `/docs/openapi.json` (the
 * description of the latest release) are served outside `/api/v3`, without a credential,
 * and work offline: the page's script comes from the server, not from a CDN. `/api/v3`
 * itself still requires a credential (§5).
 */
import { expect, it } from "vitest"
import { eachStore } from "../support/harness.js"
import { expectError } from "../support/expect.js"

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

    it("serves /docs, a reference page whose script and description come from this server", async () => {
      const res = await h().request("GET", "/docs")
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toMatch(/^text\/html/)
      const sources = [...res.text.matchAll(/(?:src|spec-url)="([^"]+)"/g)].map(([, url]) => url)
      expect(sources.sort()).toEqual(["/docs/openapi.json", "/docs/redoc.standalone.js"])
      // Nothing fetched from another host: the page works offline.
      expect(res.text).not.toMatch(/https?:\/\//)
    })

    it("serves the page's script from the redoc package", async () => {
      const res = await h().request("GET", "/docs/redoc.standalone.js")
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toMatch(/^text\/javascript/)
      expect(res.text.length).toBeGreaterThan(100_000)
      expect(res.text).toContain("Redoc")
    })

    it("answers HEAD like GET without a body, and another method 405 with Allow", async () => {
      const head = await h().request("HEAD", "/docs")
      expect(head.status).toBe(200)
      expect(head.text).toBe("")
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
