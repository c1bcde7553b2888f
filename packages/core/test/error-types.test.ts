/**
 * The error channel of a use case names the codes it can fail with (`ApiError<Code>`): these
 * are checked by the compiler (`pnpm typecheck` covers the tests), and the few runtime checks
 * below show that the code in the type is the code on the value.
 */
import {
  type ApiError,
  apiError,
  type AuthenticationError,
  authenticate,
  cancelOperation,
  type CodesOf,
  createEventStream,
  deleteCredential,
  errorStatus,
  fieldError,
  getOperation,
  issueCredential,
  revokeCredential,
  validationFailed
} from "@syllabus/core"
import { Effect } from "effect"
import { describe, expect, expectTypeOf, it } from "vitest"

/** The codes a use case can fail with. */
type CodesOfUseCase<F extends (...args: never) => Effect.Effect<unknown, unknown, unknown>> = CodesOf<Effect.Effect.Error<ReturnType<F>>>

describe("ApiError<Code>", () => {
  it("a built error carries its code in its type and on the value", () => {
    const missing = apiError("not_found")
    expectTypeOf(missing).toEqualTypeOf<ApiError<"not_found">>()
    expect(missing.code).toBe("not_found")
    expect(missing.status).toBe(404)
    const field = fieldError("already_exists", "external_id")
    expectTypeOf(field).toEqualTypeOf<ApiError<"already_exists">>()
    expect(field.details).toEqual([{ field: "external_id", code: "already_exists" }])
    expectTypeOf(validationFailed([])).toEqualTypeOf<ApiError<"validation_failed">>()
  })

  it("an error of one code is an error of a wider union, never the reverse", () => {
    expectTypeOf<ApiError<"not_found">>().toMatchTypeOf<ApiError<"not_found" | "already_exists">>()
    expectTypeOf<ApiError<"not_found">>().toMatchTypeOf<ApiError>()
    expectTypeOf<ApiError<"not_found" | "already_exists">>().not.toMatchTypeOf<ApiError<"not_found">>()
  })

  it("a use case that declares its codes cannot fail with another one", () => {
    const findCourse = (id: string): Effect.Effect<string, ApiError<"not_found">> =>
      id === "" ? Effect.fail(apiError("not_found")) : Effect.succeed(id)
    // @ts-expect-error: `already_exists` is not among the codes this use case declares
    const createCourse = (): Effect.Effect<string, ApiError<"not_found">> => Effect.fail(apiError("already_exists"))
    expect(Effect.runSync(Effect.flip(findCourse("")))).toMatchObject({ code: "not_found" })
    expect(Effect.runSync(Effect.flip(createCourse()))).toMatchObject({ code: "already_exists" })
  })

  it("use cases of the core name exactly the codes they can fail with", () => {
    expectTypeOf<CodesOfUseCase<typeof getOperation>>().toEqualTypeOf<"not_found" | "audit_unavailable">()
    expectTypeOf<CodesOfUseCase<typeof cancelOperation>>().toEqualTypeOf<
      "not_found" | "operation_not_cancelable" | "state_conflict" | "audit_unavailable"
    >()
    expectTypeOf<CodesOfUseCase<typeof createEventStream>>().toEqualTypeOf<
      "too_many_streams" | "credential_state_unverifiable" | "audit_unavailable"
    >()
    expectTypeOf<CodesOfUseCase<typeof issueCredential>>().toEqualTypeOf<
      "validation_failed" | "delegation_limit_exceeded" | "plan_limit_reached" | "internal_error" | "audit_unavailable"
    >()
    expectTypeOf<CodesOfUseCase<typeof revokeCredential>>().toEqualTypeOf<
      "not_found" | "credential_revoked" | "revision_mismatch" | "internal_error" | "credential_state_unverifiable" | "audit_unavailable"
    >()
    expectTypeOf<CodesOfUseCase<typeof deleteCredential>>().toEqualTypeOf<
      "not_found" | "credential_not_removable" | "credential_state_unverifiable" | "audit_unavailable"
    >()
    expectTypeOf<Effect.Effect.Error<ReturnType<typeof authenticate>>>().toEqualTypeOf<AuthenticationError>()
    // Authentication answers 401, 403 or 503 only (§5.3, §1.5).
    const statuses = new Set<number>(
      (
        [
          "unauthenticated",
          "ambiguous_credentials",
          "human_context_required",
          "human_mode_not_allowed",
          "invalid_access_token",
          "admin_not_eligible",
          "tenant_mismatch",
          "credential_revoked",
          "credential_suspended",
          "credential_expired",
          "instance_blocked",
          "instance_unavailable",
          "credential_state_unverifiable"
        ] satisfies ReadonlyArray<CodesOf<AuthenticationError>>
      ).map((code) => errorStatus[code])
    )
    expect([...statuses].sort()).toEqual([401, 403, 503])
  })
})
