import { describe, expect, it } from "vitest"
import { allows, checkDelegation, grantOf, type Policy } from "@syllabus/core"

const caps = (capabilities: Array<string>, resources: Array<string> | null = null): Policy => ({
  capabilities,
  template: null,
  resources
})

describe("policies", () => {
  it("grant the union of their capabilities, unlimited when any policy is", () => {
    const grant = grantOf([caps(["credentials.read"], ["crd_A"]), caps(["credentials.read"])])
    expect(grant.get("credentials.read")).toBe("all")
    expect(allows(grant, "credentials.update")).toBe(false)
  })

  it("limit a capability to listed resources", () => {
    const grant = grantOf([caps(["credentials.read"], ["crd_A"]), caps(["credentials.read"], ["crd_B"])])
    expect(allows(grant, "credentials.read", "crd_A")).toBe(true)
    expect(allows(grant, "credentials.read", "crd_B")).toBe(true)
    expect(allows(grant, "credentials.read", "crd_C")).toBe(false)
  })

  it("expand templates", () => {
    const grant = grantOf([{ capabilities: null, template: "read_only", resources: null }])
    expect(allows(grant, "credentials.read")).toBe(true)
    expect(allows(grant, "credentials.create")).toBe(false)
    expect(allows(grant, "users.read_personal")).toBe(false)
  })
})

describe("delegation", () => {
  const issuer = grantOf([caps(["credentials.read", "credentials.create"]), caps(["credentials.update"], ["crd_A"])])

  it("allows what the issuer holds", () => {
    expect(checkDelegation(issuer, [caps(["credentials.read"]), caps(["credentials.update"], ["crd_A"])])).toBeUndefined()
  })

  it("refuses more capabilities or more resources than the issuer holds, itemized", () => {
    const error = checkDelegation(issuer, [caps(["credentials.revoke"]), caps(["credentials.update"], ["crd_A", "crd_B"]), caps(["credentials.update"])])
    expect(error?.code).toBe("delegation_limit_exceeded")
    expect(error?.details.map((d) => [d.field, d.reason])).toEqual([
      ["policies[0]", "credentials.revoke"],
      ["policies[1]", "credentials.update"],
      ["policies[2]", "credentials.update"]
    ])
  })
})
