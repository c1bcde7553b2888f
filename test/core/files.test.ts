/**
 * A file ID given in a field of another resource (`requireFile`): only a file of the caller's
 * account and environment whose purpose the field accepts; else 422 on that field.
 */
import { describe, expect, it } from "@effect/vitest"
import { ApiError, Caller, type CallerInfo, Ids, Records, requireFile } from "@syllabus/core"
import { MemoryStore } from "@syllabus/memory"
import { Effect, Either, Layer } from "effect"

const callerOf = (accountId: string, environment: "production" | "sandbox"): CallerInfo => ({
  tenant: { accountId, environment },
  requestId: "req_000000001",
  credential: { id: "crd_000000001" },
  grant: new Map(),
  human: null
})

const layer = Layer.merge(MemoryStore, Ids.live)

const seedFile = (accountId: string, environment: "production" | "sandbox", purpose: string) =>
  Effect.gen(function* () {
    const id = yield* (yield* Ids).next("file")
    yield* (yield* Records).insert({ accountId, environment }, "file", id, { object: "file", id, purpose })
    return id
  })

const fieldErrorOf = (result: Either.Either<unknown, ApiError>) =>
  Either.isLeft(result) ? { code: result.left.code, status: result.left.status, details: result.left.details } : undefined

describe("file IDs in fields", () => {
  it.effect("accept a file of the caller's tenant whose purpose the field takes", () =>
    Effect.gen(function* () {
      const id = yield* seedFile("acc_A", "production", "image")
      const record = yield* requireFile("image", id, ["image"]).pipe(Effect.provideService(Caller, callerOf("acc_A", "production")))
      expect(record.id).toBe(id)
    }).pipe(Effect.provide(layer)))

  it.effect("refuse another account's file, another environment's file, and a wrong purpose with 422 on the field", () =>
    Effect.gen(function* () {
      const foreign = yield* seedFile("acc_B", "production", "image")
      const sandbox = yield* seedFile("acc_A", "sandbox", "image")
      const pdf = yield* seedFile("acc_A", "production", "pdf")
      const asA = Effect.provideService(Caller, callerOf("acc_A", "production"))
      for (const [id, reason] of [[foreign, "not_found"], [sandbox, "not_found"], [pdf, "purpose_mismatch"]] as const) {
        const result = yield* Effect.either(requireFile("image", id, ["image"]).pipe(asA))
        expect(fieldErrorOf(result)).toEqual({ code: "validation_failed", status: 422, details: [{ field: "image", code: "validation_failed", reason }] })
      }
      const malformed = yield* Effect.either(requireFile("image", "fil_nope", ["image"]).pipe(asA))
      expect(fieldErrorOf(malformed)).toEqual({ code: "validation_failed", status: 422, details: [{ field: "image", code: "invalid" }] })
    }).pipe(Effect.provide(layer)))
})
