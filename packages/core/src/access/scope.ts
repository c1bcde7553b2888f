/**
 * A credential's scope (§5 policies), one rule for every surface that names or reveals a record:
 * routes, batches, imports, configuration plans, reports, events, audit entries, exports, files
 * and operation items all ask the functions of this module, never a rule of their own.
 *
 * - **Resources.** A policy limited to resources names records by ID. A capability reaches a
 *   record when the credential holds it for every record, or for one of the record's
 *   *anchors*: its own ID, or the ID of a record it belongs to (a nested resource's outermost
 *   parent, a product's modules and lessons under it; the owners a description declares, an
 *   enrollment's product and user). Out of reach looks exactly like missing (404, or 422
 *   `not_found` on the field of a body that names it).
 * - **Personal data.** A person's email, document and phone are shown only to a credential
 *   holding `users.read_personal` for that user (for every user when the person has none, such
 *   as a ticket's anonymous contact).
 *
 * What a record's anchors are is said by its description (`anchorsOf` in records/resource.ts);
 * what a stored trace of a record keeps of them (an event, an audit entry) is `scope_ids`, written
 * when the trace is, so a reader is checked against the record as it was.
 */
import { Effect } from "effect"
import { apiError, type ApiError } from "../errors/errors.js"
import type { Json, JsonObject, Where } from "../ports/store.js"
import { Caller } from "./context.js"
import { covers, type Grant } from "./policies.js"

/** The IDs a resource-limited policy may name to reach a record (its own first). */
export type Anchors = ReadonlyArray<string>

/** The permission that shows a person's email, document and phone. */
export const READ_PERSONAL = "users.read_personal"

/** What a capability reaches: every record, or the records anchored on these IDs (none: it is not held). */
export const reachOf = (grant: Grant, capability: string): "all" | ReadonlySet<string> => grant.get(capability) ?? new Set<string>()

/** Does `capability` reach a record with these anchors? */
export const reaches = (grant: Grant, capability: string, anchors: Anchors): boolean => {
  const held = grant.get(capability)
  if (held === undefined) return false
  return held === "all" || anchors.some((id) => held.has(id))
}

/** The caller's `capability` reaches the record, else 404 `not_found` (out of reach looks missing). */
export const requireReach = (capability: string, anchors: Anchors): Effect.Effect<void, ApiError<"not_found">, Caller> =>
  Effect.flatMap(Caller, (caller) => (reaches(caller.grant, capability, anchors) ? Effect.void : Effect.fail(apiError("not_found"))))

/**
 * A collection's conditions for a limited grant: the records whose anchor field `field` names one
 * of the reached IDs, one alternative per anchor field (a record is shown when any holds). `all`:
 * no condition. No alternative at all: the capability reaches nothing.
 */
export const reachAlternatives = (
  reach: "all" | ReadonlySet<string>,
  anchorFields: ReadonlyArray<string>
): "all" | ReadonlyArray<ReadonlyArray<Where>> =>
  reach === "all" ? "all" : reach.size === 0 ? [] : anchorFields.map((field) => [{ field, op: "in", values: [...reach].sort() }])

/**
 * What reading something the platform produced needs (a file an export wrote, an uploaded import):
 * what producing it needed, so that it reveals nothing its reader could not read itself. Each
 * capability must be held for every record (`resources` null) or at least for these.
 */
export interface Requirement {
  readonly capability: string
  readonly resources: ReadonlyArray<string> | null
  /**
   * `resources` are the anchors of one record (a certificate's document: the certificate, its
   * product, its learner): held for any of them is enough, as reaching the record is (`reaches`).
   */
  readonly anyOf?: boolean
}

/** Does the grant meet every requirement? */
export const meetsRequirements = (grant: Grant, requirements: ReadonlyArray<Requirement>): boolean =>
  requirements.every((requirement) =>
    requirement.anyOf === true && requirement.resources !== null
      ? reaches(grant, requirement.capability, requirement.resources)
      : covers(grant, requirement.capability, requirement.resources))

/** Requirements as a record stores them. */
export const requirementsJson = (requirements: ReadonlyArray<Requirement>): Json =>
  requirements.map((requirement) => ({
    capability: requirement.capability,
    resources: requirement.resources === null ? null : [...requirement.resources],
    ...(requirement.anyOf === true ? { any_of: true } : {})
  }))

/** Requirements as stored (JSON), read back; anything malformed requires what no one holds. */
export const storedRequirements = (value: Json | undefined): ReadonlyArray<Requirement> =>
  Array.isArray(value)
    ? value.map((item) => {
        const { capability, resources, any_of } = (item !== null && typeof item === "object" && !Array.isArray(item) ? item : {}) as JsonObject
        return {
          capability: typeof capability === "string" ? capability : "",
          resources: Array.isArray(resources) ? resources.filter((id): id is string => typeof id === "string") : null,
          anyOf: any_of === true
        }
      })
    : []

/** The anchors kept on a stored trace of a record (`scope_ids`), else its own ID. */
export const storedAnchors = (data: JsonObject, fallback: string | null): Anchors => {
  const kept = data.scope_ids
  if (Array.isArray(kept)) return kept.filter((id): id is string => typeof id === "string")
  return fallback === null ? [] : [fallback]
}

// ---------------------------------------------------------------------------------------
// Personal data

/** May the caller see the personal data of the person with this user ID (null: a person who is no user)? */
export const showsPersonalData = (grant: Grant, userId: string | null): boolean => {
  const held = grant.get(READ_PERSONAL)
  if (held === undefined) return false
  return held === "all" || (userId !== null && held.has(userId))
}

/**
 * Where a resource holds personal data (its description's `personal`): the field at `path` is a
 * person's, the person whose user ID is at `person` (null: a person who is no user, such as a
 * ticket's anonymous contact, shown only to a credential holding the permission for everyone).
 */
export interface PersonalField {
  readonly path: ReadonlyArray<string>
  readonly person: ReadonlyArray<string> | null
}

/** The personal data a representation holds: each path present with a value, and whose it is. */
export interface PersonalMark {
  readonly path: ReadonlyArray<string>
  readonly user: string | null
}

const at = (value: Json | undefined, path: ReadonlyArray<string>): Json | undefined => {
  let current = value
  for (const key of path) {
    if (current === null || typeof current !== "object" || Array.isArray(current) || !Object.hasOwn(current, key)) return undefined
    current = (current as JsonObject)[key]
  }
  return current
}

/** The personal data of one representation (or of the `previous_attributes` of a change: the fields it holds). */
export const personalMarks = (fields: ReadonlyArray<PersonalField>, item: JsonObject | null): ReadonlyArray<PersonalMark> =>
  item === null
    ? []
    : fields.flatMap(({ path, person }) => {
        const value = at(item, path)
        if (value === undefined || value === null) return []
        const user = person === null ? null : at(item, person)
        return [{ path, user: typeof user === "string" ? user : null }]
      })

const withNullAt = (value: JsonObject, path: ReadonlyArray<string>): JsonObject => {
  const [key, ...rest] = path
  if (key === undefined || !Object.hasOwn(value, key)) return value
  const inner = value[key]
  if (rest.length === 0) return { ...value, [key]: null }
  return inner !== null && typeof inner === "object" && !Array.isArray(inner) ? { ...value, [key]: withNullAt(inner as JsonObject, rest) } : value
}

/** `item` as this grant may see it: each marked field null unless the grant shows that person's personal data. */
export const redactPersonal = (item: JsonObject, marks: ReadonlyArray<PersonalMark>, grant: Grant): JsonObject =>
  marks.reduce((out, mark) => (showsPersonalData(grant, mark.user) ? out : withNullAt(out, mark.path)), item)

/** `item` (a representation of a resource with `fields`) as this grant may see it. */
export const personalView = (fields: ReadonlyArray<PersonalField>, item: JsonObject, grant: Grant): JsonObject =>
  redactPersonal(item, personalMarks(fields, item), grant)
