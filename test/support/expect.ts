/**
 * The one assertion for an error answer of the API (§7 of the contract): the HTTP status,
 * the stable `error.code`, and the envelope every error carries. Contract tests check an
 * error with this, never by its status alone.
 */
import { expect } from "vitest"
import type { Response } from "./harness.js"

/** One item of `error.details` (§7). */
export interface ErrorDetail {
  readonly field?: string
  readonly parameter?: string
  readonly code: string
  readonly message: string
  readonly reason?: string
  readonly [key: string]: unknown
}

/** The `error` object of the envelope (§7). */
export interface ErrorBody {
  readonly code: string
  readonly message: string
  readonly request_id: string
  readonly details: ReadonlyArray<ErrorDetail>
  readonly reason?: string
  readonly [key: string]: unknown
}

/**
 * Where the contract names the spot of the error. With `field` or `parameter`, one item of
 * `details` must name it, and that same item must carry `code` (the item's own code, e.g.
 * `invalid`, `required`, `unknown_field`) and `reason` when they are given here. With only a
 * `reason` (a business rejection without a field, e.g. `state_conflict`), the reason may be on
 * the error or on one of its items.
 */
export interface ErrorWhere {
  readonly field?: string
  readonly parameter?: string
  /** The detail item's `code` (not the envelope's). */
  readonly code?: string
  readonly reason?: string
}

const describeWhere = (where: { readonly [K in keyof ErrorWhere]?: string | undefined }) =>
  Object.entries(where)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ")

/**
 * Assert that `res` is the §7 error `code` with HTTP `status`: a JSON body whose `error` has
 * that `code`, a non-empty `message`, `request_id` equal to the `X-Request-Id` header, and
 * `details` as an array whose every item has a `field` or `parameter`, a `code` and a
 * `message`; and, with `where`, the item (or reason) the contract names for that spot.
 * Answers the `error` object for further checks.
 */
export const expectError = (res: Response, status: number, code: string, where?: ErrorWhere): ErrorBody => {
  const seen = `${res.status} ${res.text}`
  expect({ status: res.status, code: res.body?.error?.code }, seen).toEqual({ status, code })
  expect(res.headers.get("content-type") ?? "", seen).toMatch(/^application\/json/)
  const error = res.body.error as ErrorBody
  expect(typeof error.message, seen).toBe("string")
  expect(error.message.length, seen).toBeGreaterThan(0)
  expect(error.request_id, seen).toBe(res.headers.get("x-request-id"))
  expect(Array.isArray(error.details), seen).toBe(true)
  for (const item of error.details) {
    expect(typeof (item.field ?? item.parameter), `a detail item names its field or parameter: ${seen}`).toBe("string")
    expect(typeof item.code, `a detail item has a code: ${seen}`).toBe("string")
    expect(typeof item.message, `a detail item has a message: ${seen}`).toBe("string")
    expect(item.message.length, `a detail item has a message: ${seen}`).toBeGreaterThan(0)
  }
  if (where === undefined) return error
  if (where.field === undefined && where.parameter === undefined) {
    if (where.code !== undefined) {
      expect(error.details.map((d) => d.code), `a detail item with code ${where.code}: ${seen}`).toContain(where.code)
    }
    if (where.reason !== undefined) {
      const reasons = [error.reason, ...error.details.map((d) => d.reason)].filter((r) => r !== undefined)
      expect(reasons, `reason ${where.reason}: ${seen}`).toContain(where.reason)
    }
    return error
  }
  const named = error.details.filter(
    (d) => (where.field === undefined || d.field === where.field) && (where.parameter === undefined || d.parameter === where.parameter)
  )
  expect(named.length, `a detail item on ${describeWhere({ field: where.field, parameter: where.parameter })}: ${seen}`).toBeGreaterThan(0)
  const matching = named.filter((d) => (where.code === undefined || d.code === where.code) && (where.reason === undefined || d.reason === where.reason))
  expect(matching.length, `a detail item with ${describeWhere(where)}: ${seen}`).toBeGreaterThan(0)
  return error
}
