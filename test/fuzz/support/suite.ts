/**
 * The fuzz suite of one store: a server of that store (the contract suite's harness, with no
 * workers, so nothing generated is ever delivered or run in the background), the description
 * it serves, fixtures, and the properties, one test per operation and property.
 */
import { eventTypeCatalog } from "@syllabus/core"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Harness, type Response, startHarness } from "../../support/harness.js"
import { answerProblems, detailsAt } from "./checks.js"
import { parameters, PROPERTY_TIMEOUT, runs, sent } from "./config.js"
import { type DescribedOperation, type Description, readDescription, type SchemaCheck, schemaChecker } from "./description.js"
import { type Fixtures, makeFixtures, pathParamFixture } from "./fixtures.js"
import { knownDefect, undeclaredCodes } from "./known-defects.js"
import {
  API,
  anyRequest,
  badQueryValue,
  baseRequest,
  describeExchange,
  type Exchange,
  type FuzzRequest,
  fixturePath,
  goodQueryValue,
  requiredQuery,
  send,
  undecodableSegments,
  undeclaredName
} from "./requests.js"
import { impossibleDates, type Mutated, unstorableText, validValue, violation, withUnknownProperty, withUnstorableText } from "./schema-arbitraries.js"

export type Store = "memory" | "postgresql"

/** A server of this store and the description it serves, read once. */
export const serve = async (store: Store): Promise<{ h: Harness; description: Description; check: SchemaCheck }> => {
  const h = await startHarness(store, { workers: false })
  const res = await h.request("GET", `${API}/openapi.json`, { secret: h.live })
  if (res.status !== 200) throw new Error(`GET /openapi.json → ${res.status}`)
  return { h, description: readDescription(res.body), check: schemaChecker(res.body) }
}

/** Stop a server, after checking (as every contract block does) that the events it recorded are in the catalog. */
export const stop = async (h: Harness): Promise<void> => {
  try {
    const catalog = new Set(eventTypeCatalog.map((entry) => entry.type))
    const missing = [...(await h.eventTypesRecorded())].filter((type) => !catalog.has(type))
    if (missing.length > 0) throw new Error(`events missing from GET /event-types: ${missing.join(", ")}`)
  } finally {
    await h.close()
  }
}

export const fail = (problems: ReadonlyArray<string>, exchange: Exchange, store?: string): void => {
  if (problems.length > 0) throw new Error(`${problems.map((p) => `- ${p}`).join("\n")}\n${describeExchange(exchange, store)}`)
}

const REFUSAL_CODES = ["validation_failed", "unknown_field", "too_many_items"]

/** The problems of an answer to a body with one described refusal or accepted bound in it. */
export const mutationProblems = (m: Mutated, res: Response): Array<string> => {
  const problems: Array<string> = []
  const at = detailsAt(res, m.expect.field)
  if (m.expect.kind === "refused") {
    if (res.status !== 422 || !REFUSAL_CODES.includes(res.body?.error?.code)) {
      problems.push(`${m.expect.what} at ${JSON.stringify(m.expect.field)}: expected 422 (${REFUSAL_CODES.join(" | ")}), got ${res.status} ${res.body?.error?.code ?? ""}`)
      return problems
    }
    if (at.length === 0) problems.push(`${m.expect.what}: no detail item names ${JSON.stringify(m.expect.field)}`)
    const { itemCode, field } = m.expect
    if (itemCode !== undefined && !at.some((d) => (d.field ?? d.parameter) === field && d.code === itemCode)) {
      problems.push(`${m.expect.what}: no detail item {field: ${JSON.stringify(field)}, code: ${itemCode}}`)
    }
  } else {
    const forbidden = m.expect.forbidden
    const wrong = at.filter((d) => (d.field ?? d.parameter) === m.expect.field && forbidden.includes(d.code ?? ""))
    if (wrong.length > 0) problems.push(`${m.expect.what} is accepted by the description, refused: ${JSON.stringify(wrong)}`)
  }
  return problems
}

/** A case that could not even make its request: never the known defect's failure. */
const SETUP_FAILED = "setup of the case failed:"

/**
 * `it`, or `it.fails` for a case a known defect makes fail. A known case fails only by its
 * property: if its setup fails instead, it returns, and `it.fails` reports it red.
 */
const test = (property: string, store: Store, operationId: string | undefined, title: string, body: (knownDefect: boolean) => Promise<void>) => {
  const defect = knownDefect(property, store, operationId)
  if (defect === undefined) {
    it(title, () => body(false), PROPERTY_TIMEOUT)
    return
  }
  it.fails(
    `${title} — known defect: ${defect}`,
    async () => {
      try {
        await body(true)
      } catch (error) {
        if (String(error).includes(SETUP_FAILED)) {
          console.error(`${title}: not the known defect's failure, ${String(error)}`)
          return
        }
        throw error
      }
    },
    PROPERTY_TIMEOUT
  )
}

const opTitle = (op: DescribedOperation) => `${op.method} ${op.path} (${op.id})`

export const fuzzStore = async (store: Store): Promise<void> => {
  // The server, and the description it serves, before the tests are defined: one test per operation.
  const started = Date.now()
  const { h, description, check } = await serve(store)
  let fixtures: Fixtures
  const operations = description.operations
  const withJsonBody = operations.filter((op) => op.body !== undefined)
  const byId = (id: string): DescribedOperation => {
    const op = operations.find((o) => o.id === id)
    if (op === undefined) throw new Error(`the description has no operation ${id}`)
    return op
  }

  const sendTo = (request: FuzzRequest) => send(h, fixtures, request)
  const problemsOf = (ex: Exchange) =>
    answerProblems(
      {
        operation: ex.request.operation,
        check,
        method: ex.method,
        clientRequestId: /^[A-Za-z0-9._-]{1,64}$/.test(ex.request.headers["x-client-request-id"] ?? "") ? ex.request.headers["x-client-request-id"] : undefined
      },
      ex.response
    )

  describe(`fuzzing from the description [${store}]`, () => {
    beforeAll(async () => {
      fixtures = await makeFixtures(h, `${store}-${process.pid}-${Date.now()}`)
    }, 120_000)
    afterAll(async () => {
      console.log(`fuzz [${store}]: ${sent.count} requests, ${((Date.now() - started) / 1000).toFixed(1)} s (FUZZ_RUNS=${process.env["FUZZ_RUNS"] ?? "default"})`)
      await stop(h)
    }, 60_000)

    // -------------------------------------------------------------------------------
    describe("replay: a generated valid create, then GET of what it made, answers what the create answered", () => {
      const creates = operations.filter(
        (op) =>
          op.method === "POST" &&
          op.body !== undefined &&
          op.responses.has(201) &&
          operations.some((get) => get.method === "GET" && get.path.startsWith(`${op.path}/{`) && get.path.split("/").length === op.path.split("/").length + 1)
      )
      // A custom field made here may be required, and then every later user create needs it: custom fields last.
      creates.sort((a, b) => Number(a.path === "/custom-fields") - Number(b.path === "/custom-fields"))
      for (const op of creates) {
        test("replay", store, op.id, opTitle(op), async (known) => {
          let created = 0
          await fc.assert(
            fc.asyncProperty(validValue(op.body!.schema, { operationId: op.id, clean: true }), async (value) => {
              const ex = await sendTo({ ...baseRequest(op, fixturePath(op)), body: { kind: "json", value } })
              // A refused create is the other properties' business (and may be right: a rule the description cannot state).
              if (ex.response.status !== 201) {
                if (ex.response.status >= 500) fail([`${ex.response.status} for a generated create`], ex)
                return
              }
              fail(problemsOf(ex), ex)
              created++
              const location = ex.response.headers.get("location") ?? ""
              const path = location.replace(/^https?:\/\/[^/]+/, "")
              const get = operations.find((g) => g.method === "GET" && new RegExp(`^${API}${g.path.replace(/\{[a-z_]+\}/g, "[^/]+")}$`).test(path))
              if (get === undefined) throw new Error(`Location ${location} is no described GET\n${describeExchange(ex)}`)
              const read = await h.request("GET", path, { secret: h.live })
              sent.count++
              const expected = structuredClone(ex.response.body.data)
              // Shown once (§2.3): a credential's `secret.value`, a webhook's signing secret.
              if (read.body?.data && !("secret" in read.body.data)) delete expected.secret
              if (read.body?.data?.secret && typeof read.body.data.secret === "object" && !("value" in read.body.data.secret)) delete expected.secret?.value
              expect({ status: read.status, data: read.body?.data }, `${describeExchange(ex)}\nGET ${path} → ${read.status} ${read.text.slice(0, 500)}`).toEqual({ status: 200, data: expected })
              const etag = ex.response.headers.get("etag")
              if (etag !== null) expect(read.headers.get("etag"), "the ETag of the create is the ETag of the read").toBe(etag)
            }),
            parameters(`replay ${op.id}`, Math.max(8, runs(6)), { knownDefect: known })
          )
          expect(created, `no generated create of ${op.id} was accepted: the property tested nothing`).toBeGreaterThan(0)
        })
      }
    })

    // -------------------------------------------------------------------------------
    describe("what the description refuses in a body is refused with 422 naming the field; its bounds are accepted", () => {
      for (const op of withJsonBody) {
        test("refusals", store, op.id, opTitle(op), async (known) => {
          await fc.assert(
            fc.asyncProperty(violation(op.body!.schema, { operationId: op.id }), async (m) => {
              const ex = await sendTo({ ...baseRequest(op, fixturePath(op)), body: { kind: "json", value: m.body } })
              fail([...problemsOf(ex), ...mutationProblems(m, ex.response)], ex)
            }),
            parameters(`refusals ${op.id}`, runs(8), { knownDefect: known })
          )
        })
      }
    })

    test("impossible-dates", store, undefined, "a date-time with no such day (2024-02-30) is refused, in a body or a query (format date-time, RFC 3339)", async (known) => {
      const inBody = withJsonBody.flatMap((op) =>
        Object.entries<any>(op.body!.schema.properties ?? {})
          .filter(([, sub]) => sub.format === "date-time" || (sub.anyOf ?? []).some((m: any) => m.format === "date-time"))
          .map(([name]) => ({ op, name, where: "body" as const }))
      )
      const inQuery = operations.flatMap((op) => op.queryParams.filter((p) => p.schema.format === "date-time").map((p) => ({ op, name: p.name, where: "query" as const })))
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...inBody, ...inQuery), fc.constantFrom(...impossibleDates), async ({ op, name, where }, date) => {
          const request =
            where === "body"
              ? { ...baseRequest(op, fixturePath(op)), body: { kind: "json" as const, value: { [name]: date } } }
              : { ...baseRequest(op, fixturePath(op)), query: [{ name, value: date }] }
          const ex = await sendTo(request)
          const problems = problemsOf(ex)
          if (ex.response.status !== 422 || detailsAt(ex.response, name).length === 0) problems.push(`${date} in ${where} ${name}: expected 422 naming ${name}`)
          fail(problems, ex)
        }),
        parameters("impossible-dates", runs(10), { knownDefect: known })
      )
    })

    // -------------------------------------------------------------------------------
    describe("an unknown body property is refused: 422 unknown_field on that field (§2.1)", () => {
      for (const op of withJsonBody) {
        test("unknown-field", store, op.id, opTitle(op), async (known) => {
          await fc.assert(
            fc.asyncProperty(withUnknownProperty(op.body!.schema, { operationId: op.id }), async (m) => {
              const ex = await sendTo({ ...baseRequest(op, fixturePath(op)), body: { kind: "json", value: m.body } })
              const problems = [...problemsOf(ex), ...mutationProblems(m, ex.response)]
              const details: Array<any> = ex.response.body?.error?.details ?? []
              if (details.length > 0 && details.every((d) => d.code === "unknown_field") && ex.response.body?.error?.code !== "unknown_field") {
                problems.push(`every problem is an unknown field, yet the code is ${ex.response.body?.error?.code}`)
              }
              fail(problems, ex)
            }),
            parameters(`unknown-field ${op.id}`, runs(4), { knownDefect: known })
          )
        })
      }
    })

    // -------------------------------------------------------------------------------
    describe("text a store cannot keep (U+0000, lone surrogates) is never a 5xx: 422 on the place", () => {
      for (const op of withJsonBody) {
        test("unstorable", store, op.id, opTitle(op), async (known) => {
          await fc.assert(
            fc.asyncProperty(withUnstorableText(op.body!.schema, { operationId: op.id }), async (m) => {
              const ex = await sendTo({ ...baseRequest(op, fixturePath(op)), body: { kind: "json", value: m.body } })
              const problems = [...problemsOf(ex), ...mutationProblems(m, ex.response)]
              if (ex.response.status === 422 && !detailsAt(ex.response, m.expect.field).some((d) => d.reason === "invalid_characters")) {
                problems.push(`no detail item at ${JSON.stringify(m.expect.field)} with reason invalid_characters`)
              }
              fail(problems, ex)
            }),
            parameters(`unstorable ${op.id}`, runs(4), { knownDefect: known })
          )
        })
      }
      const withStringQuery = operations.filter((op) => op.queryParams.some((p) => p.schema.type === "string" && p.name !== "cursor" && !p.schema.enum))
      test("unstorable-query", store, undefined, "in a query parameter (U+0000: a lone surrogate cannot be percent-encoded)", async (known) => {
        const arb = fc.constantFrom(...withStringQuery).chain((op) =>
          fc.tuple(
            fc.constant(op),
            fc.constantFrom(...op.queryParams.filter((p) => p.schema.type === "string" && p.name !== "cursor" && !p.schema.enum)),
            unstorableText.filter((t) => t.includes("\u0000")).map((t) => t.replace(/[\ud800-\udfff]/g, "x"))
          )
        )
        await fc.assert(
          fc.asyncProperty(arb, async ([op, param, text]) => {
            const ex = await sendTo({ ...baseRequest(op, fixturePath(op)), query: [{ name: param.name, value: text }] })
            const problems = problemsOf(ex)
            if (ex.response.status !== 422 || !detailsAt(ex.response, param.name).some((d) => d.reason === "invalid_characters")) {
              problems.push(`expected 422 with a detail on parameter ${param.name}, reason invalid_characters`)
            }
            fail(problems, ex)
          }),
          parameters("unstorable-query", runs(30), { knownDefect: known })
        )
      })
    })

    // -------------------------------------------------------------------------------
    describe("every error code answered is among the codes the description lists for the operation and status (x-error-codes)", () => {
      // The requests that make each code F2 names; the general properties found them.
      const name = fc.stringMatching(/^[A-Z][a-z]{2,10}$/)
      const api = async (method: string, path: string, json: unknown) => {
        sent.count++
        const res = await h.request(method, `${API}${path}`, { secret: h.live, json })
        if (res.status >= 300) throw new Error(`${SETUP_FAILED} ${method} ${path} → ${res.status} ${res.text}`)
        return res.body.data.id as string
      }
      const reproductions: Record<string, (n: string) => Promise<FuzzRequest>> = {
        "banners.create": async (n) => ({ ...baseRequest(byId("banners.create"), {}), body: { kind: "json", value: { name: n, type: "netflix" } } }),
        "banners.update": async () => ({ ...baseRequest(byId("banners.update"), fixturePath(byId("banners.update"))), body: { kind: "json", value: { type: "netflix" } } }),
        "navigation.create": async (n) => {
          const child = await api("POST", "/navigation", { label: `${n} child`, parent_id: fixtures.navigation_item })
          return { ...baseRequest(byId("navigation.create"), {}), body: { kind: "json", value: { label: `${n} grandchild`, parent_id: child } } }
        },
        "navigation.update": async () => ({
          ...baseRequest(byId("navigation.update"), fixturePath(byId("navigation.update"))),
          body: { kind: "json", value: { parent_id: fixtures.navigation_item } }
        }),
        "taxonomies.create": async (n) => {
          await api("POST", `/products/${fixtures.product}/taxonomies`, { name: n, plural_name: `${n}s` })
          return { ...baseRequest(byId("taxonomies.create"), fixturePath(byId("taxonomies.create"))), body: { kind: "json", value: { name: n, plural_name: `${n}s` } } }
        },
        "taxonomies.update": async (n) => {
          await api("POST", `/products/${fixtures.product}/taxonomies`, { name: n, plural_name: `${n}s` })
          return { ...baseRequest(byId("taxonomies.update"), fixturePath(byId("taxonomies.update"))), body: { kind: "json", value: { name: n } } }
        },
        "taxonomy_terms.create": async (n) => {
          await api("POST", `/products/${fixtures.product}/taxonomies/${fixtures.taxonomy}/terms`, { name: n })
          return { ...baseRequest(byId("taxonomy_terms.create"), fixturePath(byId("taxonomy_terms.create"))), body: { kind: "json", value: { name: n } } }
        },
        "taxonomy_terms.update": async (n) => {
          await api("POST", `/products/${fixtures.product}/taxonomies/${fixtures.taxonomy}/terms`, { name: n })
          return { ...baseRequest(byId("taxonomy_terms.update"), fixturePath(byId("taxonomy_terms.update"))), body: { kind: "json", value: { name: n } } }
        }
      }
      // The codes F2 found undeclared (docs/reliability.md), each made on purpose: the answer is
      // that code, and the description lists it.
      const reproduced: ReadonlyArray<{ readonly operationId: string; readonly status: number; readonly code: string }> = [
        { operationId: "banners.create", status: 422, code: "banner_type_unavailable" },
        { operationId: "banners.update", status: 422, code: "banner_type_unavailable" },
        { operationId: "navigation.create", status: 422, code: "hierarchy_violation" },
        { operationId: "navigation.update", status: 422, code: "hierarchy_violation" },
        { operationId: "taxonomies.create", status: 409, code: "already_exists" },
        { operationId: "taxonomies.update", status: 409, code: "already_exists" },
        { operationId: "taxonomy_terms.create", status: 409, code: "already_exists" },
        { operationId: "taxonomy_terms.update", status: 409, code: "already_exists" },
        ...undeclaredCodes
      ]
      for (const { operationId, status, code } of reproduced) {
        const op = byId(operationId)
        test("declared-codes", store, operationId, `${opTitle(op)}: ${status} ${code}`, async (known) => {
          let seen = 0
          await fc.assert(
            fc.asyncProperty(name, async (n) => {
              // Names unique to this case: another case's resources must not collide with its setup.
              const ex = await sendTo(await reproductions[operationId]!(`${n} ${operationId.replace(/[^a-z]/g, "")} ${++seen}`))
              const answered = ex.response.body?.error?.code
              const declared = op.responses.get(ex.response.status)?.codes ?? []
              const problems = ex.response.status === status && answered === code ? [] : [`answered ${ex.response.status} ${answered}, made for ${status} ${code}`]
              if (typeof answered === "string" && !declared.includes(answered)) {
                problems.push(`${ex.response.status} ${answered} is not among the codes the description lists for ${op.id} at ${ex.response.status} (${declared.join(", ")})`)
              }
              fail(problems, ex)
            }),
            parameters(`declared-codes ${operationId}`, runs(3), { knownDefect: known })
          )
        })
      }
    })

    // -------------------------------------------------------------------------------
    describe("query parameters: an undeclared one is 400 unknown_parameter, a declared one with a refused value 422 (§4.1, §4.2)", () => {
      for (const op of operations) {
        test("query", store, op.id, opTitle(op), async (known) => {
          const bad = op.queryParams.flatMap((p) => {
            const b = badQueryValue(p)
            return b ? [b] : []
          })
          const good = op.queryParams.flatMap((p) => {
            const g = goodQueryValue(op, p)
            return g ? [g.map((value) => ({ name: p.name, value }))] : []
          })
          const undeclared = fc.tuple(undeclaredName(op), fc.constantFrom("1", "", "x")).map(([name, value]) => ({
            part: { name, value },
            expect: { status: 400 as const, code: "unknown_parameter" as const },
            what: `undeclared parameter ${JSON.stringify(name)}`
          }))
          const offending = bad.length === 0 ? undeclared : fc.oneof(undeclared, ...bad)
          const others = good.length === 0 ? fc.constant([]) : fc.array(fc.oneof(...good), { maxLength: 2 })
          await fc.assert(
            fc.asyncProperty(offending, others, async (off, rest) => {
              // A cursor is read by the operation, after the query is decoded: sent with the required
              // parameters only (the filters of its first page), so nothing else refuses first.
              const others = off.expect.code === "invalid_cursor" ? requiredQuery(op) : rest.filter((p, i) => p.name !== off.part.name && rest.findIndex((q) => q.name === p.name) === i)
              const query = [...others, off.part]
              const raw = op.rawBody ? { body: { kind: "raw" as const, label: "1 byte", bytes: new Uint8Array([1]) } } : {}
              // An operation for sandboxes only refuses a production credential first (§4.5).
              const auth = op.responses.get(403)?.codes?.includes("sandbox_only") ? ("sandbox" as const) : ("live" as const)
              const ex = await sendTo({ ...baseRequest(op, fixturePath(op)), query, auth, ...raw })
              const problems = problemsOf(ex)
              const res = ex.response
              // A cursor is read by the operation, after the resources of its path: one that names no fixture is missing.
              const missingParent = off.expect.code === "invalid_cursor" && op.pathParams.some((p) => !(p.name in pathParamFixture)) && res.status === 404
              if (missingParent) return
              if (res.status !== off.expect.status || res.body?.error?.code !== off.expect.code) {
                problems.push(`${off.what}: expected ${off.expect.status} ${off.expect.code}, got ${res.status} ${res.body?.error?.code ?? ""}`)
              } else if (off.expect.code !== "invalid_cursor" && !detailsAt(res, off.part.name).length) {
                problems.push(`${off.what}: no detail item names parameter ${JSON.stringify(off.part.name)}`)
              }
              fail(problems, ex)
            }),
            parameters(`query ${op.id}`, runs(3), { knownDefect: known })
          )
        })
      }
    })

    // Every list, the cursor with the required parameters of its first page (`/reports/lessons`
    // its `product_id`: the query is decoded before the cursor is read, so a missing one is 422).
    const lists = operations.filter((op) => op.queryParams.some((p) => p.name === "cursor"))
    test("long-cursor", store, undefined, "a cursor over 2048 characters is still a cursor the server never issued: 400 invalid_cursor (§4.2)", async (known) => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...lists.filter((op) => op.pathParams.every((p) => p.name in pathParamFixture))), fc.integer({ min: 2049, max: 8000 }), async (op, length) => {
          const ex = await sendTo({ ...baseRequest(op, fixturePath(op)), query: [...requiredQuery(op), { name: "cursor", value: "x".repeat(length) }] })
          const problems = problemsOf(ex)
          if (ex.response.status !== 400 || ex.response.body?.error?.code !== "invalid_cursor") problems.push("expected 400 invalid_cursor")
          fail(problems, ex)
        }),
        parameters("long-cursor", runs(10), { knownDefect: known })
      )
    })

    const withQuery = operations.filter((op) => op.queryParams.length > 0 && op.pathParams.every((p) => p.name in pathParamFixture))
    test("proto-query", store, undefined, "a query parameter named __proto__ is an undeclared parameter like any other: 400 unknown_parameter (§4.1)", async (known) => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...withQuery), fc.constantFrom("1", "x", ""), async (op, value) => {
          const ex = await sendTo({ ...baseRequest(op, fixturePath(op)), query: [{ name: "__proto__", value }] })
          const problems = problemsOf(ex)
          if (ex.response.status !== 400 || ex.response.body?.error?.code !== "unknown_parameter" || detailsAt(ex.response, "__proto__").length === 0) {
            problems.push("expected 400 unknown_parameter naming __proto__")
          }
          fail(problems, ex)
        }),
        parameters("proto-query", runs(10), { knownDefect: known })
      )
    })

    // -------------------------------------------------------------------------------
    describe("routes: the methods a path does not describe, paths it does not describe, paths that do not decode", () => {
      test("methods", store, undefined, "a described path with another method: 405 method_not_allowed, Allow naming the described methods (and HEAD beside GET)", async (known) => {
        const cases = [...description.methodsByPath].flatMap(([path, methods]) =>
          ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].filter((m) => !methods.includes(m)).map((method) => ({ path, method, methods }))
        )
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(...cases), async ({ path, method, methods }) => {
            const op = operations.find((o) => o.path === path)!
            const ex = await sendTo({ ...baseRequest(op, fixturePath(op)), method })
            const problems = problemsOf(ex)
            const allow = (ex.response.headers.get("allow") ?? "").split(",").map((m) => m.trim()).filter((m) => m !== "").sort()
            if (ex.response.status !== 405 || ex.response.body?.error?.code !== "method_not_allowed") problems.push(`expected 405 method_not_allowed`)
            // HEAD is implied by GET (RFC 9110 §9.3.2): the server answers it on every GET route without the description listing it.
            const allowed = methods.includes("GET") ? [...methods, "HEAD"] : [...methods]
            if (ex.response.status === 405 && ex.response.body?.error?.code === "method_not_allowed" && JSON.stringify(allow) !== JSON.stringify(allowed.sort())) {
              problems.push(`Allow: ${allow.join(", ")}; described: ${allowed.join(", ")}`)
            }
            fail(problems, ex)
          }),
          parameters("methods", Math.min(cases.length, runs(60)), { knownDefect: known })
        )
      })

      test("unrouted", store, undefined, "a path under /api/v3 that no operation describes: 503 operation_not_catalogued in the envelope (§7)", async (known) => {
        const templates = operations.map((o) => new RegExp(`^${o.path.replace(/\{[a-z_]+\}/g, "[^/]+")}$`))
        const segment = fc.oneof(fc.constantFrom(...description.literalSegments), fc.stringMatching(/^[a-z_-]{1,12}$/), fc.constantFrom("v2", "api", "admin", ".well-known", "%00", "%2F"))
        const arb = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => `/${s.join("/")}`).filter((p) => !templates.some((t) => t.test(p)) && !/(^|\/)\.\.?(\/|$)/.test(p))
        await fc.assert(
          fc.asyncProperty(arb, async (path) => {
            const res = await h.request("GET", API + path, { secret: h.live })
            sent.count++
            const ex: Exchange = { request: baseRequest(operations[0]!, {}), method: "GET", url: API + path, headers: {}, body: undefined, response: res }
            const problems = answerProblems({ operation: operations[0]!, check, method: "GET" }, res).filter((p) => !p.startsWith("503") && !p.includes("not declared") && !p.includes("not among the codes"))
            if (res.status !== 503 || res.body?.error?.code !== "operation_not_catalogued") problems.push("expected 503 operation_not_catalogued")
            fail(problems, ex)
          }),
          parameters("unrouted", runs(20), { knownDefect: known })
        )
      })

      const withPathParams = operations.filter((op) => op.pathParams.some((p) => p.schema.type === "string"))
      test("undecodable-path", store, undefined, "a path parameter that is not valid percent-encoding is a malformed ID: 404 not_found, never 503 (§2.2)", async (known) => {
        const arb = fc.constantFrom(...withPathParams).chain((op) =>
          fc.tuple(fc.constant(op), fc.constantFrom(...op.pathParams.filter((p) => p.schema.type === "string")), fc.constantFrom(...undecodableSegments))
        )
        await fc.assert(
          fc.asyncProperty(arb, async ([op, param, raw]) => {
            const path = { ...fixturePath(op), [param.name]: { kind: "encoded" as const, raw } }
            const ex = await sendTo({ ...baseRequest(op, path), ...(op.rawBody ? { body: { kind: "raw" as const, label: "1 byte", bytes: new Uint8Array([1]) } } : {}) })
            const problems = problemsOf(ex)
            if (ex.response.status !== 404 || ex.response.body?.error?.code !== "not_found") problems.push(`expected 404 not_found for the malformed ID ${raw}`)
            fail(problems, ex)
          }),
          parameters("undecodable-path", runs(20), { knownDefect: known })
        )
      })
    })

    // -------------------------------------------------------------------------------
    // Last: it changes the most (it may trash or revoke the fixtures the others name).
    describe("every answer is JSON in the contract's shape: declared status, described body, §7 envelope, no 500, no 503", () => {
      for (const op of operations) {
        test("contract", store, op.id, opTitle(op), async (known) => {
          await fc.assert(
            fc.asyncProperty(anyRequest(op, description), async (request) => {
              const ex = await sendTo(request)
              fail(problemsOf(ex), ex)
            }),
            parameters(`contract ${op.id}`, runs(10), { knownDefect: known })
          )
        })
      }
    })
  })
}
