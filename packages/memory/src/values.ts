/**
 * Stored values are deep copies, frozen: a caller can neither change what is stored through
 * the object it passed in, nor through the one it got back (which is why reads can hand out
 * the stored object itself). The copy is the value a JSON round trip would give, the way a
 * JSON column would normalize it (no `undefined` properties, no class instances).
 */
const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}

/** Returned by `plainCopy` for a value the JSON round trip would change, or might. */
const NOT_PLAIN: unique symbol = Symbol("not plain")

const isPlainObject = (value: object): value is Record<string, unknown> => {
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * A frozen copy of plain JSON data (strings, finite numbers, booleans, null, arrays, plain
 * objects; `undefined` properties dropped), equal to what the JSON round trip gives but
 * without serializing; `NOT_PLAIN` for anything else (class instances, `toJSON`,
 * non-finite numbers, `undefined` in arrays, a `__proto__` key), left to the round trip.
 */
const plainCopy = (value: unknown): unknown => {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value
  if (typeof value === "number") return Number.isFinite(value) ? (value === 0 ? 0 : value) : NOT_PLAIN
  if (typeof value !== "object") return NOT_PLAIN
  if (Array.isArray(value)) {
    const out: Array<unknown> = new Array(value.length)
    for (let i = 0; i < value.length; i++) {
      const child = plainCopy(value[i])
      if (child === NOT_PLAIN) return NOT_PLAIN
      out[i] = child
    }
    return Object.freeze(out)
  }
  if (!isPlainObject(value)) return NOT_PLAIN
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const raw = value[key]
    if (raw === undefined) continue
    if (key === "__proto__") return NOT_PLAIN
    const child = plainCopy(raw)
    if (child === NOT_PLAIN) return NOT_PLAIN
    out[key] = child
  }
  return Object.freeze(out)
}

export const frozenCopy = <A>(value: A): A => {
  // Most values written are fresh plain data (a request-log entry, a record's document):
  // copying them directly costs a fraction of serializing and parsing them.
  const copy = plainCopy(value)
  return copy === NOT_PLAIN ? deepFreeze(JSON.parse(JSON.stringify(value)) as A) : (copy as A)
}
