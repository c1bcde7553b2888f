import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { defineOperation, type Method } from "../src/operation.js"
import { makeRouter } from "../src/router.js"

const op = (method: Method, path: string) =>
  defineOperation({
    id: `${method} ${path}`,
    method,
    path,
    summary: "",
    tag: "t",
    capability: "authenticated",
    idempotency: "none",
    success: { status: 200, description: "" },
    errors: [],
    handler: () => Effect.succeed({ status: 200, body: null })
  })

describe("router", () => {
  const route = makeRouter([op("GET", "/credentials/current"), op("GET", "/credentials/{credential_id}"), op("PATCH", "/credentials/{credential_id}")])

  it("prefers a literal segment over a parameter", () => {
    const match = route("GET", "/credentials/current")
    expect(match._tag === "Found" && match.operation.path).toBe("/credentials/current")
  })

  it("binds parameters in path order (the last one names the resource of an ETag)", () => {
    const nested = makeRouter([op("PATCH", "/products/{product_id}/taxonomies/{taxonomy_id}")])
    const match = nested("PATCH", "/products/prd_1/taxonomies/tax_2")
    expect(match._tag === "Found" && Object.keys(match.params)).toEqual(["product_id", "taxonomy_id"])
  })

  it("binds parameters", () => {
    const match = route("PATCH", "/credentials/crd_123456789")
    expect(match._tag === "Found" && match.params).toEqual({ credential_id: "crd_123456789" })
  })

  it("tells a known path with another method from an unknown path", () => {
    expect(route("DELETE", "/credentials/crd_123456789")).toEqual({ _tag: "MethodNotAllowed", allowed: ["GET", "PATCH", "HEAD"] })
    expect(route("GET", "/nope")._tag).toBe("NotFound")
    expect(route("GET", "/credentials/a/b")._tag).toBe("NotFound")
  })
})
