/**
 * What every use case knows about the call it serves: who calls (`Caller`) and the
 * public-ID generator.
 */
import { Clock, Context, Effect, Layer, Random, Ref } from "effect"
import type { Grant } from "./capabilities.js"
import { formatId, type IdKind, nextIdNumber } from "./ids.js"
import type { JsonObject, Tenant } from "./ports.js"

/** The authenticated caller of one request. */
export interface CallerInfo {
  readonly tenant: Tenant
  readonly requestId: string
  /** The credential's stored data (see credentials.ts). */
  readonly credential: JsonObject & { readonly id: string }
  readonly grant: Grant
  /** Human mode: the administrator acting through the credential. */
  readonly human: { readonly adminId: string; readonly expiresAt: number; readonly eligibleSince: string } | null
}

export class Caller extends Context.Tag("@syllabus/core/Caller")<Caller, CallerInfo>() {}

/** Public IDs that sort by creation (see ids.ts). */
export class Ids extends Context.Tag("@syllabus/core/Ids")<
  Ids,
  { readonly next: (kind: IdKind) => Effect.Effect<string> }
>() {
  static readonly live = Layer.effect(
    Ids,
    Effect.gen(function* () {
      const last = yield* Ref.make(0)
      return {
        next: (kind: IdKind) =>
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            const random12 = yield* Random.nextIntBetween(0, 4096)
            const n = yield* Ref.modify(last, (prev) => {
              const next = nextIdNumber(now, prev, random12)
              return [next, next]
            })
            return formatId(kind, n)
          })
      }
    })
  )
}
