/**
 * What every use case knows about the call it serves: who calls (`Caller`) and the
 * public-ID generator.
 */
import { Context, Effect, Layer } from "effect"
import type { JsonObject, StoredRecord, Tenant } from "../ports/store.js"
import { formatId, ID_LANES, type IdKind, nextIdNumber } from "../records/ids.js"
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

/** A lane of this process when nothing gives it one: chosen at random once. */
const randomLane = Math.floor(Math.random() * ID_LANES)

/**
 * The lane of this process's IDs (0..4095, records/ids.ts): the low bits its IDs start at in
 * each millisecond. A store shared by several processes gives each its own (PostgreSQL: from a
 * sequence, `pgLayer`), so that two of them never make one ID in the same millisecond unless
 * one makes thousands in it; alone, a process takes one at random.
 */
export class IdLane extends Context.Reference<IdLane>()("@syllabus/core/IdLane", { defaultValue: () => randomLane }) {}

/** Public IDs that sort by creation (see records/ids.ts). */
export class Ids extends Context.Tag("@syllabus/core/Ids")<
  Ids,
  { readonly next: (kind: IdKind) => Effect.Effect<string> }
>() {
  static readonly live = Layer.effect(
    Ids,
    Effect.map(IdLane, (lane) => {
      // The last number handed out, and how many were made in its millisecond; reading and
      // setting them in one synchronous step keeps them atomic, as a `Ref` would, in fewer
      // Effect steps (one ID per request at least).
      let last = 0
      let lastMs = -1
      let made = 0
      return {
        next: (kind: IdKind) =>
          Effect.clockWith((clock) =>
            Effect.sync(() => {
              const now = clock.unsafeCurrentTimeMillis()
              made = now === lastMs ? made + 1 : 0
              lastMs = now
              last = nextIdNumber(now, last, (lane + made) % ID_LANES)
              return formatId(kind, last)
            })
          )
      }
    })
  )
}

/**
 * The caller background work acts as for a record it carries out (an email, a certificate's
 * document): whoever's request made it, as recorded in its `field` (`{ credential_id,
 * administrator_id, request_id }`), with no grant of its own.
 */
export const callerRecordedIn = (record: StoredRecord, field: string): CallerInfo => {
  const by = (record.data[field] ?? {}) as { credential_id?: string; administrator_id?: string | null; request_id?: string }
  return {
    tenant: record.tenant,
    requestId: by.request_id ?? record.id,
    credential: { id: by.credential_id ?? "unknown" },
    grant: new Map(),
    human: by.administrator_id ? { adminId: by.administrator_id, expiresAt: 0, eligibleSince: "" } : null
  }
}
