/**
 * Issue 11: the two stores answer alike. One generated request (for every operation of the
 * served description) is sent to a memory server and to a PostgreSQL server, each with its
 * own fixtures made the same way, in the same order: the answers must have the same status
 * and error code wherever the answer is decided by the request itself (a validation failure,
 * a malformed ID, a missing resource, a refused media type, ...), and for a 422 the same
 * places and item codes.
 */
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Response } from "../support/harness.js"
import { parameters, PROPERTY_TIMEOUT, runs, sent } from "./support/config.js"
import { type Fixtures, makeFixtures } from "./support/fixtures.js"
import { knownDefect } from "./support/known-defects.js"
import { anyRequest, API, describeExchange, send } from "./support/requests.js"
import { serve, stop } from "./support/suite.js"

/**
 * Codes a request decides alone: given the same request and the same history, no store may
 * answer otherwise. (Codes that depend on time, or on an outage, are not in it.)
 */
const decidedByTheRequest = new Set([
  "malformed_json",
  "json_too_deep",
  "invalid_utf8",
  "payload_too_large",
  "unsupported_media_type",
  "not_acceptable",
  "unknown_parameter",
  "unknown_field",
  "validation_failed",
  "too_many_items",
  "method_not_allowed",
  "idempotency_key_required",
  "idempotency_key_invalid",
  "if_match_invalid",
  "revision_mismatch",
  "unauthenticated",
  "ambiguous_credentials",
  "human_context_required",
  "human_mode_not_allowed",
  "permission_denied",
  "sandbox_only",
  "operation_not_catalogued",
  "not_found",
  "invalid_cursor",
  "already_exists",
  "state_conflict",
  "format_unsupported",
  "order_set_mismatch",
  "banner_type_unavailable",
  "operation_type_unknown",
  "duplicate_item_key",
  "item_invalid",
  "invalid_transition",
  "operation_not_cancelable",
  "operation_not_resumable"
])

const outcome = (res: Response) => {
  const error = res.body?.error
  const details: Array<any> = Array.isArray(error?.details) ? error.details : []
  return {
    status: res.status,
    code: error?.code ?? null,
    places: res.status === 422 ? details.map((d) => `${d.field ?? d.parameter}:${d.code}`).sort() : []
  }
}

const started = Date.now()
const memory = await serve("memory")
const postgresql = await serve("postgresql")
const { description } = memory

describe("fuzzing from the description: both stores answer alike", () => {
  let fixtures: { memory: Fixtures; postgresql: Fixtures }
  beforeAll(async () => {
    // The same tag on both: fixtures with the same names, so the stores hold the same history.
    const tag = `agree-${process.pid}-${Date.now()}`
    fixtures = { memory: await makeFixtures(memory.h, tag), postgresql: await makeFixtures(postgresql.h, tag) }
  }, 120_000)
  afterAll(async () => {
    console.log(`fuzz [both stores]: ${sent.count} requests, ${((Date.now() - started) / 1000).toFixed(1)} s`)
    await Promise.all([stop(memory.h), stop(postgresql.h)])
  }, 60_000)

  it("both serve the same description", async () => {
    const served = await postgresql.h.request("GET", `${API}/openapi.json`, { secret: postgresql.h.live })
    expect(served.body).toEqual(description.doc)
  })

  for (const op of description.operations) {
    const defect = knownDefect("stores-agree", "*", op.id)
    const title = `${op.method} ${op.path} (${op.id})`
    const body = async (known: boolean) => {
      await fc.assert(
        fc.asyncProperty(anyRequest(op, description, { reusedKeys: false }), async (request) => {
          const [m, p] = await Promise.all([send(memory.h, fixtures.memory, request), send(postgresql.h, fixtures.postgresql, request)])
          const a = outcome(m.response)
          const b = outcome(p.response)
          const meaningful =
            (a.status < 300 && b.status < 300) || decidedByTheRequest.has(a.code) || decidedByTheRequest.has(b.code) || a.status >= 500 || b.status >= 500
          if (meaningful && JSON.stringify(a) !== JSON.stringify(b)) {
            throw new Error(`the stores disagree:\n${describeExchange(m, "memory")}\n${describeExchange(p, "postgresql")}`)
          }
        }),
        parameters(`stores-agree ${op.id}`, runs(4), { knownDefect: known })
      )
    }
    if (defect !== undefined) it.fails(`${title} — known defect: ${defect}`, () => body(true), PROPERTY_TIMEOUT)
    else it(title, () => body(false), PROPERTY_TIMEOUT)
  }
})
