/**
 * One rule for text on both stores (core's `records/text.ts`): U+0000 and lone UTF-16
 * surrogates, which PostgreSQL cannot store, are refused wherever a request carries them —
 * a body string, a body object's key, a query parameter — with 422 `validation_failed` on the
 * place (reason `invalid_characters`), never a 503 and never a write; the memory store answers
 * the same. A surrogate pair (a character outside the BMP) is ordinary text.
 */
import { expect, it } from "vitest"
import { eachStore, freshKey, type Harness } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const showcases = async (h: Harness) =>
  (await h.request("GET", "/api/v3/showcases?limit=200", { secret: h.live })).body.data.map((s: { name: string }) => s.name)

eachStore("text no store can keep", (h) => {
  for (const [label, bad] of [["U+0000", "a\u0000b"], ["a lone high surrogate", "x\ud800"], ["a lone low surrogate", "\udc00y"]] as const) {
    it(`${label} in a body string: 422 validation_failed on the field, nothing written`, async () => {
      const before = await showcases(h())
      const res = await h().request("POST", "/api/v3/showcases", { secret: h().live, json: { name: bad } })
      expectError(res, 422, "validation_failed", { field: "name", code: "invalid_value", reason: "invalid_characters" })
      expect(await showcases(h())).toEqual(before)
    })
  }

  it("nested places are named by their path; other problems of the body are listed with them", async () => {
    const showcase = (await h().request("POST", "/api/v3/showcases", { secret: h().live, json: { name: "Nested" } })).body.data.id
    const res = await h().request("POST", "/api/v3/operations", {
      secret: h().live,
      json: {
        type: "products.create",
        items: [
          { key: "ok", payload: { name: "Fine", format: "course", showcase_id: showcase } },
          { key: "bad", payload: { name: "Bad\u0000", format: "course", showcase_id: showcase } }
        ]
      }
    })
    expectError(res, 422, "validation_failed", { field: "items[1].payload.name", code: "invalid_value", reason: "invalid_characters" })
    const both = await h().request("POST", "/api/v3/showcases", { secret: h().live, json: { name: "\ud800", description: 5 } })
    expectError(both, 422, "validation_failed", { field: "name", reason: "invalid_characters" })
    expect(both.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(["description", "name"])
  })

  it("a key holding U+0000 is named in its storable form (U+FFFD), and the answer replays under its Idempotency-Key", async () => {
    const key = freshKey()
    const raw = '{"name":"Keyed","\\u0000x":1}'
    const send = () =>
      h().request("POST", "/api/v3/showcases", { secret: h().live, raw, headers: { "content-type": "application/json" }, idempotencyKey: key })
    const first = await send()
    expectError(first, 422, "validation_failed", { field: "\ufffdx", code: "invalid_value", reason: "invalid_characters" })
    const again = await send()
    expect(again.status).toBe(422)
    expect(again.body.error.details).toEqual(first.body.error.details)
  })

  it("a query parameter holding U+0000: 422 on the parameter, not a 503", async () => {
    const res = await h().request("GET", "/api/v3/products?q=%00", { secret: h().live })
    expectError(res, 422, "validation_failed", { parameter: "q", code: "invalid_value", reason: "invalid_characters" })
    const unknown = await h().request("GET", "/api/v3/products?%00=1", { secret: h().live })
    expectError(unknown, 400, "unknown_parameter", { parameter: "\ufffd" })
  })

  it("a surrogate pair is ordinary text: stored and read back as sent, and searchable", async () => {
    const name = "Math 𝔘 é \u00a0end"
    const created = await h().request("POST", "/api/v3/showcases", { secret: h().live, json: { name } })
    expect(created.status).toBe(201)
    const read = await h().request("GET", `/api/v3/showcases/${created.body.data.id}`, { secret: h().live })
    expect(read.body.data.name).toBe(name)
  })
})
