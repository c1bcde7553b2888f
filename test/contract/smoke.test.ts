import { expect, it } from "vitest"
import { eachStore } from "../support/harness.js"

eachStore("smoke", (h) => {
  it("the demo credential reads itself", async () => {
    const res = await h().request("GET", "/api/v3/credentials/current", { secret: h().live })
    expect(res.status).toBe(200)
    expect(res.body.data.object).toBe("credential")
  })
})
