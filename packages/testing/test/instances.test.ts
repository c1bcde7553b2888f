/**
 * Fresh instances: each has its own account, credentials, administrator and store, and the
 * in-process `fetch` and the socket of `listen()` are the same API.
 */
import { createTestApi, type TestApi } from "@syllabus/testing"
import { afterEach, describe, expect, it } from "vitest"
import { complete, declare, png, putPart } from "./upload.js"

const opened: Array<TestApi> = []
const fresh = async (...args: Parameters<typeof createTestApi>) => {
  const api = await createTestApi(...args)
  opened.push(api)
  return api
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((api) => api.close()))
})

describe("a fresh instance", () => {
  it("has an account, a live and a test secret and an administrator, all usable", async () => {
    const api = await fresh()
    for (const [credential, environment] of [["live", "production"], ["test", "sandbox"]] as const) {
      const res = await api.request("GET", "/credentials/current", { credential })
      expect(res.status).toBe(200)
      expect(res.body.data.id).toBe(api.credentials[credential].id)
      expect(res.body.data.environment).toBe(environment)
      expect(api.secrets[credential]).toBe(api.credentials[credential].secret)
    }
    const admin = await api.request("GET", `/administrators/${api.administrator.id}`, { credential: "live" })
    expect(admin.status).toBe(200)
    expect(admin.body.data.email).toBe(api.administrator.email)
  })

  it("shares nothing with another instance: records, secrets and time are its own", async () => {
    const a = await fresh()
    const b = await fresh()
    expect(a.account.id).not.toBe(b.account.id)
    await a.seed.product({ name: "Only in A" })
    const inB = await b.request("GET", "/products")
    expect(inB.status).toBe(200)
    expect(inB.body.data).toEqual([])
    const foreign = await b.request("GET", "/products", { headers: { authorization: `Bearer ${a.secrets.test}` } })
    expect(foreign.status).toBe(401)
    expect(foreign.body.error.code).toBe("unauthenticated")
    await a.clock.advance("2d")
    expect(a.clock.now() - b.clock.now()).toBeGreaterThanOrEqual(2 * 86_400_000 - 1000)
  })

  it("answers the same through api.fetch (any path form) and through the socket of listen()", async () => {
    const api = await fresh()
    await api.seed.product({ name: "Shared" })
    const auth = { authorization: `Bearer ${api.secrets.test}` }
    const base = await api.listen()
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v3$/)
    const answers = [
      await api.fetch("/products", { headers: auth }),
      await api.fetch("products", { headers: auth }),
      await api.fetch("/api/v3/products", { headers: auth }),
      await api.fetch(new Request(`${api.baseUrl}/products`, { headers: auth })),
      await fetch(`${base}/products`, { headers: auth })
    ]
    const bodies = await Promise.all(answers.map((res) => res.json()))
    for (const [i, res] of answers.entries()) {
      expect(res.status, `answer ${i}`).toBe(200)
      expect(bodies[i].data, `answer ${i}`).toEqual(bodies[0].data)
    }
    expect(bodies[0].data.map((p: { name: string }) => p.name)).toEqual(["Shared"])
    // A body without Content-Length (a web Request made in process) is read.
    const created = await api.fetch("/showcases", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", "idempotency-key": "k-1" },
      body: JSON.stringify({ name: "From fetch" })
    })
    expect(created.status).toBe(201)
  })

  it("serves uploads by default (memory file storage), and none with storage: \"none\"", async () => {
    const bytes = png()
    const api = await fresh()
    const session = await declare(api, bytes)
    expect(session.status, JSON.stringify(session.body)).toBe(201)
    expect(await putPart(api, session.body.data.id, bytes)).toBe(200)
    const file = await complete(api, session.body.data.id)
    expect(file.status, JSON.stringify(file.body)).toBe(201)
    expect(file.body.data.size).toBe(bytes.length)

    const bare = await fresh({ storage: "none" })
    const refused = await declare(bare, bytes)
    expect(refused.status).toBe(503)
    expect(refused.body.error.code).toBe("storage_unavailable")
  })
})
