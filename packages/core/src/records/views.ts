/**
 * A resource as the wire shows it: its fields in the documented order (a JSON store may
 * keep keys in any order), every field present, `null` where empty.
 */
import type { Json, JsonObject } from "../ports/store.js"

export const inOrder = (data: JsonObject, fields: ReadonlyArray<string>): JsonObject => {
  const out: Record<string, Json> = {}
  for (const field of fields) out[field] = data[field] ?? null
  return out
}
