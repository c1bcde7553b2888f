import { describe, expect, it } from "vitest"
import { acceptsJson, isJsonContentType, jsonDepth } from "../src/wire.js"

describe("content negotiation", () => {
  it("accepts JSON, wildcards and an absent Accept; refuses others and q=0", () => {
    for (const ok of [undefined, "", "*/*", "application/json", "application/*", "text/html, application/json;q=0.5", "application/problem+json"]) {
      expect(acceptsJson(ok)).toBe(true)
    }
    for (const no of ["text/html", "application/xml", "application/json;q=0", "text/*"]) expect(acceptsJson(no)).toBe(false)
  })

  it("knows JSON content types, with or without a UTF-8 charset", () => {
    expect(isJsonContentType("application/json")).toBe(true)
    expect(isJsonContentType("Application/JSON; charset=UTF-8")).toBe(true)
    expect(isJsonContentType("application/json; charset=latin1")).toBe(false)
    expect(isJsonContentType("text/plain")).toBe(false)
  })
})

describe("JSON depth", () => {
  it("counts nesting without parsing, ignoring brackets inside strings", () => {
    expect(jsonDepth("{}")).toBe(1)
    expect(jsonDepth('{"a":[{"b":1}]}')).toBe(3)
    expect(jsonDepth('{"a":"[[[[\\"]]]"}')).toBe(1)
    expect(jsonDepth("[".repeat(100_000))).toBe(100_000)
  })
})
