import { expect, it } from "vitest"
import { eachStore } from "../support/harness.js"

eachStore("representation", (h) => {
  it("the demo credential reads itself", async () => {
    const res = await h().request("GET", "/api/v3/credentials/current", { secret: h().live })
    expect(res.status).toBe(200)
    expect(res.body.data.object).toBe("credential")
  })

  it("writes every field of a resource, in the documented order, on every store", async () => {
    const res = await h().request("GET", "/api/v3/credentials/current", { secret: h().live })
    expect(Object.keys(res.body.data)).toEqual([
      "object", "id", "name", "purpose", "auth_mode", "environment", "status", "created_at", "updated_at",
      "expires_at", "revoked_at", "created_by", "revoked_by", "human", "policy", "policies", "revision", "secret"
    ])
    expect(Object.keys(res.body.data.secret)).toEqual(["configured", "issued_at", "last4", "rotated_at", "valid_until", "version"])
    const log = await h().request("GET", `/api/v3/requests/${res.headers.get("x-request-id")}`, { secret: h().live })
    expect(Object.keys(log.body.data).slice(0, 4)).toEqual(["object", "id", "method", "path"])
  })
})
