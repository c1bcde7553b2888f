/**
 * What every use case knows about the call it serves: who calls (`Caller`) and the
 * public-ID generator.
 */
import { Context, Effect, Layer, Random } from "effect"
import type { JsonObject, StoredRecord, Tenant } from "../ports/store.js"
import { formatId, type IdKind, nextIdNumber } from "../records/ids.js"
import type { Grant } from "./policies.js"

/** The authenticated caller of one request. */
export interface CallerInfo {
  readonly tenant: Tenant
  readonly requestId: string
  /** The credential's stored data (see credentials.ts). */
  readonly credential: JsonObject & { readonly id: string }
  /**
   * The credential's record as authentication read it, so that the request need not read it
   * again. Absent for callers that authentication did not build (background workers).
   */
  readonly record?: StoredRecord
  readonly grant: Grant
  /** Human mode: the administrator acting through the credential. */
  readonly human: { readonly adminId: string; readonly expiresAt: number; readonly eligibleSince: string } | null
}

export class Caller extends Context.Tag("@syllabus/core/Caller")<Caller, CallerInfo>() {}

/** Public IDs that sort by creation (see records/ids.ts). */
export class Ids extends Context.Tag("@syllabus/core/Ids")<
  Ids,
  { readonly next: (kind: IdKind) => Effect.Effect<string> }
>() {
  static readonly live = Layer.sync(Ids, () => {
    // The last number handed out; reading and setting it in one synchronous step keeps it
    // atomic, as a `Ref` would, in fewer Effect steps (one ID per request at least).
    let last = 0
    return {
      next: (kind: IdKind) =>
        Effect.clockWith((clock) =>
          Effect.map(Random.nextIntBetween(0, 4096), (random12) => {
            last = nextIdNumber(clock.unsafeCurrentTimeMillis(), last, random12)
            return formatId(kind, last)
          })
        )
    }
  })
}
