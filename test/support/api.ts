/**
 * What the contract tests of the resources share to call the API: a client bound to a secret,
 * the record a create answered, a product to hang things on, a limited credential, an
 * operation waited for, and a core use case run as a caller of the account would run it.
 */
import { Caller, type CallerInfo, UnitOfWork } from "@syllabus/core"
import { Effect } from "effect"
import type { Harness, Response } from "./harness.js"

/**
 * Calls under `/api/v3` with a secret (the account's production one by default). A POST sends
 * a fresh `Idempotency-Key` unless `idempotencyKey` says which (or `null`: none); PUT and PATCH
 * take extra headers (`if-match`, `idempotency-key`).
 */
export const api = (h: Harness, secret: string = h.live) => ({
  get: (path: string) => h.request("GET", `/api/v3${path}`, { secret }),
  post: (path: string, json?: unknown, options: { readonly idempotencyKey?: string | null } = {}) =>
    h.request("POST", `/api/v3${path}`, { secret, ...(json === undefined ? {} : { json }), ...options }),
  put: (path: string, json: unknown, headers: Record<string, string> = {}) => h.request("PUT", `/api/v3${path}`, { secret, json, headers }),
  patch: (path: string, json: unknown, headers: Record<string, string> = {}) => h.request("PATCH", `/api/v3${path}`, { secret, json, headers }),
  del: (path: string) => h.request("DELETE", `/api/v3${path}`, { secret })
})

/** The `data` of a 201, or a thrown error with the answer. */
export const created = async (res: Promise<Response>): Promise<Record<string, any>> => {
  const r = await res
  if (r.status !== 201) throw new Error(`expected 201, got ${r.status}: ${r.text}`)
  return r.body.data
}

/** A course product in a showcase of its own. */
export const newProduct = async (h: Harness, secret: string = h.live, fields: Record<string, unknown> = {}) => {
  const showcase = await created(api(h, secret).post("/showcases", { name: "Shelf" }))
  return created(api(h, secret).post("/products", { format: "course", name: "Course", showcase_id: showcase.id, ...fields }))
}

/** The secret of a new credential of the account holding these policies. */
export const credentialWithPolicies = async (h: Harness, policies: ReadonlyArray<object>): Promise<string> =>
  (await created(api(h).post("/credentials", { name: "limited", policies }))).secret.value as string

/** The secret of a new credential holding only these capabilities (on these resources, when given). */
export const credentialWith = (h: Harness, capabilities: ReadonlyArray<string>, resources?: ReadonlyArray<string>): Promise<string> =>
  credentialWithPolicies(h, [{ capabilities, ...(resources ? { resources } : {}) }])

/** The operation once it has finished (succeeded or failed). */
export const settle = async (h: Harness, operationId: string) => {
  for (let i = 0; i < 100; i++) {
    const op = (await api(h).get(`/operations/${operationId}`)).body.data
    if (op.status === "succeeded" || op.status === "failed") return op
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`operation ${operationId} did not finish`)
}

let requests = 0

/**
 * Run a core use case in a unit of work as a caller of the account in `environment` (its
 * credential, no grant), as the platform would when a change earns something: e.g.
 * `awardPoints`, `issueCertificateIfEarned`.
 */
export const runAsAccount = <A>(h: Harness, effect: Effect.Effect<A, unknown, any>, environment: "production" | "sandbox" = "production"): Promise<A> => {
  const credential = h.account.credentials.find((c) => c.environment === environment)!
  const caller: CallerInfo = {
    tenant: { accountId: h.account.account.id, environment },
    requestId: `req_${String(++requests + 1_000_000).padStart(9, "0")}`,
    credential: { id: credential.id },
    grant: new Map(),
    human: null
  }
  return h.runUseCase(Effect.flatMap(UnitOfWork, (uow) => uow.transaction(effect)).pipe(Effect.provideService(Caller, caller)))
}
