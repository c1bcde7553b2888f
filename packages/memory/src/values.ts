/**
 * Stored values are deep copies, frozen: a caller can neither change what is stored through
 * the object it passed in, nor through the one it got back (which is why reads can hand out
 * the stored object itself). The JSON round trip also normalizes the value the way a JSON
 * column would (no `undefined` properties, no class instances).
 */
const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}

export const frozenCopy = <A>(value: A): A => deepFreeze(JSON.parse(JSON.stringify(value)) as A)
