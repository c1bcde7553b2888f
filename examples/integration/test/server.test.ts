/** The embedding itself: the API answers under /api/v3 of the app's node:http server, the app keeps the rest. */
import assert from "node:assert/strict"
import { after, before, describe, it } from "node:test"
import { type RunningServer, startServer } from "../src/server.js"

describe("the embedded API", () => {
  let running: RunningServer
  before(async () => {
    running = await startServer()
  })
  after(() => running.close())

  it("answers under /api/v3 with its envelope, and the host's routes elsewhere", async () => {
    const refused = await fetch(`${running.url}/api/v3/products`)
    assert.equal(refused.status, 401)
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, "unauthenticated")
    assert.equal(await (await fetch(`${running.url}/`)).text(), "The school's site\n")
  })

  it("serves an account opened on it", async () => {
    const opened = await running.openAccount({
      name: "School",
      subdomain: "school",
      administrator: { email: "admin@school.example", name: "Admin", password: "a long enough password" }
    })
    const secret = opened.credentials.find((c) => c.environment === "sandbox")!.secret
    const res = await fetch(`${running.url}/api/v3/credentials/current`, { headers: { authorization: `Bearer ${secret}` } })
    assert.equal(res.status, 200)
  })
})
