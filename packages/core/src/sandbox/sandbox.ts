/**
 * `POST /sandbox/resets`: empty the sandbox environment of the caller's account. Credentials,
 * administrators, settings and the audit trail stay.
 */
import { Clock, Effect } from "effect"
import { ACCOUNT_TYPE } from "../access/accounts.js"
import { Caller, Ids } from "../access/context.js"
import { ADMINISTRATOR_TYPE, CREDENTIAL_TYPE } from "../access/credentials.js"
import { apiError, writeUnavailable } from "../errors/errors.js"
import { Records } from "../ports/store.js"
import { formatTimestamp } from "../records/time.js"
import { AUDIT_ENTRY_TYPE, recordChange, REQUEST_TYPE } from "../trail/audit.js"

/** Record types a reset keeps. Resource types added later are emptied by default. */
export const SANDBOX_KEEPS: ReadonlyArray<string> = [ACCOUNT_TYPE, ADMINISTRATOR_TYPE, CREDENTIAL_TYPE, "settings", REQUEST_TYPE, AUDIT_ENTRY_TYPE]

export const resetSandbox = Effect.fn("Sandbox.reset")(function* () {
  const caller = yield* Caller
  if (caller.tenant.environment !== "sandbox") return yield* Effect.fail(apiError("sandbox_only"))
  const records = yield* Records
  const id = yield* (yield* Ids).next("sandbox_reset")
  const removed = yield* records
    .purge(caller.tenant, SANDBOX_KEEPS)
    .pipe(Effect.mapError(writeUnavailable))
  yield* recordChange("sandbox.reset", { object: "sandbox_reset", id }, { removed_records: removed })
  return {
    object: "sandbox_reset",
    id,
    status: "succeeded",
    removed_records: removed,
    created_at: formatTimestamp(yield* Clock.currentTimeMillis)
  }
})
