/** Faults on demand: the store and the file storage go down and come back, and the API says so in its envelope (§7). */
import { createTestApi, type TestApi } from "@syllabus/testing"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { complete, declare, png, putPart } from "./upload.js"

let api: TestApi
beforeEach(async () => {
  api = await createTestApi()
})
afterEach(() => api.close())

describe("faults on demand", () => {
  it("store down: 503 credential_state_unverifiable (nothing answered from a store it cannot read); back: 200", async () => {
    api.faults.store(true)
    for (const [method, path] of [["GET", "/products"], ["POST", "/showcases"]] as const) {
      const res = await api.request(method, path, method === "POST" ? { json: { name: "During" } } : {})
      expect(res.status).toBe(503)
      expect(res.body.error.code).toBe("credential_state_unverifiable")
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"))
    }
    api.faults.store(false)
    const back = await api.request("GET", "/showcases")
    expect(back.status).toBe(200)
    expect(back.body.data).toEqual([])
  })

  it("storage down: opening a session, sending a part and completing answer 503 storage_unavailable; back: they work", async () => {
    const bytes = png()
    api.faults.storage(true)
    const refused = await declare(api, bytes)
    expect(refused.status).toBe(503)
    expect(refused.body.error.code).toBe("storage_unavailable")
    api.faults.storage(false)

    const session = (await declare(api, bytes)).body.data
    api.faults.storage(true)
    expect(await putPart(api, session.id, bytes)).toBe(503)
    api.faults.storage(false)
    expect(await putPart(api, session.id, bytes)).toBe(200)
    api.faults.storage(true)
    const notCompleted = await complete(api, session.id)
    expect(notCompleted.status).toBe(503)
    expect(notCompleted.body.error.code).toBe("storage_unavailable")
    api.faults.storage(false)
    expect((await complete(api, session.id)).status).toBe(201)
  })

  it("storage down leaves the records up", async () => {
    api.faults.storage(true)
    expect((await api.request("POST", "/showcases", { json: { name: "Fine" } })).status).toBe(201)
  })
})
