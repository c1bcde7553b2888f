/** The roster sync, tested against the in-process double of @syllabus/testing with node:test. */
import { createTestApi, type TestApi } from "@syllabus/testing"
import assert from "node:assert/strict"
import { afterEach, beforeEach, describe, it } from "node:test"
import { ApiError, syllabusClient } from "../src/client.js"
import { syncRoster } from "../src/roster-sync.js"

const roster = [
  { name: "Ada Lovelace", email: "ada@school.example" },
  { name: "Alan Turing", email: "alan@school.example" }
]

describe("roster sync", () => {
  let api: TestApi
  beforeEach(async () => {
    api = await createTestApi()
  })
  afterEach(() => api.close())

  const client = () => syllabusClient({ baseUrl: api.baseUrl, secret: api.secrets.test, fetch: api.fetch })

  it("creates the students that have no user, and only those", async () => {
    await api.seed.user({ name: "Ada", email: "ada@school.example" })
    const report = await syncRoster(client(), roster)
    assert.deepEqual(report, { created: ["alan@school.example"], existing: ["ada@school.example"] })
    await api.events.expect("user.created", { match: { email: "alan@school.example", name: "Alan Turing" } })
    const again = await syncRoster(client(), roster)
    assert.deepEqual(again.created, [])
  })

  it("reports the API's error code when the store is down, and completes when run again", async () => {
    api.faults.store(true)
    await assert.rejects(syncRoster(client(), roster), (error: unknown) => error instanceof ApiError && error.status === 503)
    api.faults.store(false)
    const report = await syncRoster(client(), roster)
    assert.equal(report.created.length, 2)
  })

  it("works over a real socket too (an SDK that needs a URL)", async () => {
    const baseUrl = await api.listen()
    const report = await syncRoster(syllabusClient({ baseUrl, secret: api.secrets.test }), roster)
    assert.equal(report.created.length, 2)
    const users = await api.request("GET", "/users")
    assert.deepEqual(users.body.data.map((u: { email: string }) => u.email).sort(), ["ada@school.example", "alan@school.example"])
  })
})
