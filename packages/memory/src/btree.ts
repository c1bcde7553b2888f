/**
 * A persistent (immutable, path-copying) B+tree: the ordered structure behind every index of
 * the memory store. A change copies the O(log n) nodes on its path and shares the rest, so a
 * snapshot of a bucket costs nothing and readers never see a half-made change.
 *
 * Keys are ordered by the tree's comparator. Seeks take a monotone predicate instead of a
 * key ("is this key still before where I start?"), so callers can start after a keyset
 * position, at the first key of an equality prefix, or anywhere else an order allows.
 *
 * A tree whose every value is its own key (a set: `add`, the posting lists of `search.ts`)
 * keeps one array per leaf for both, which halves what its leaves weigh.
 *
 * Writes may be given an `Edit`: the token of a transaction's work that no one else sees yet.
 * The nodes a write makes carry its owner and generation, and a later write of the same owner
 * changes them in place instead of copying them again (what Clojure calls a transient): a
 * transaction that writes thousands of records into one bucket copies each path once, not once
 * per record. Nodes of another owner (the committed tree, another transaction's) are copied as
 * ever, and so are those of a generation at or below the edit's floor: what a savepoint keeps.
 * An owner must never be passed again once the tree it wrote is shared (published at commit).
 */

/** Nodes visited and keys yielded by seeks and iterations: a test's window on the work a read does. */
export const instrumentation = { visited: 0 }

const MAX = 64
const MIN = 16

export type Compare<K> = (a: K, b: K) => number

/**
 * The token of a transaction's unpublished work: its nodes may be changed in place, except
 * those of a generation at or below `floor` (kept by a savepoint). New nodes get `generation`.
 */
export interface Edit {
  readonly owner: object
  readonly generation: number
  readonly floor: number
}

interface Leaf<K, V> {
  readonly leaf: true
  readonly keys: ReadonlyArray<K>
  readonly values: ReadonlyArray<V>
  readonly size: number
  /** The owner and generation of the `Edit` that made it, if any (see `owns`). */
  readonly owner?: object | undefined
  readonly generation?: number | undefined
}

interface Branch<K, V> {
  readonly leaf: false
  /** The largest key of each child. */
  readonly keys: ReadonlyArray<K>
  readonly children: ReadonlyArray<Node<K, V>>
  readonly size: number
  readonly owner?: object | undefined
  readonly generation?: number | undefined
}

/** Whether `edit` may change `node` in place. */
const owns = (edit: Edit | undefined, node: { readonly owner?: object | undefined; readonly generation?: number | undefined }): boolean =>
  edit !== undefined && node.owner === edit.owner && node.generation! > edit.floor

/** A node as its owner changes it in place. */
type Mutable<T> = { -readonly [P in keyof T]: T[P] extends ReadonlyArray<infer A> ? Array<A> : T[P] }

type Node<K, V> = Leaf<K, V> | Branch<K, V>

export interface Tree<K, V> {
  readonly compare: Compare<K>
  readonly root: Node<K, V>
}

const leaf = <K, V>(keys: ReadonlyArray<K>, values: ReadonlyArray<V>, edit?: Edit): Leaf<K, V> => ({
  leaf: true,
  keys,
  values,
  size: keys.length,
  owner: edit?.owner,
  generation: edit?.generation
})

const branch = <K, V>(children: ReadonlyArray<Node<K, V>>, edit?: Edit): Branch<K, V> => {
  let size = 0
  const keys: Array<K> = new Array(children.length)
  for (let i = 0; i < children.length; i++) {
    const child = children[i]!
    size += child.size
    keys[i] = child.keys[child.keys.length - 1]!
  }
  return { leaf: false, keys, children, size, owner: edit?.owner, generation: edit?.generation }
}

/** One array for the keys and values of an empty leaf, so that a set's first leaf shares it. */
const none: ReadonlyArray<never> = Object.freeze([])

/** Whether a leaf's values are its keys (a set's leaf): then they stay one array. */
const shares = <K, V>(node: Leaf<K, V>): boolean => (node.values as ReadonlyArray<unknown>) === node.keys

export const empty = <K, V>(compare: Compare<K>): Tree<K, V> => ({ compare, root: leaf(none, none) })

export const size = <K, V>(tree: Tree<K, V>): number => tree.root.size

/** First index in `keys` whose key is not below `key` (`keys.length` if none). */
const lowerBound = <K>(keys: ReadonlyArray<K>, key: K, compare: Compare<K>): number => {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compare(keys[mid]!, key) < 0) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** First index whose key is not `before` (`before` holds for a prefix of `keys`). */
const firstNot = <K>(keys: ReadonlyArray<K>, before: (key: K) => boolean): number => {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (before(keys[mid]!)) lo = mid + 1
    else hi = mid
  }
  return lo
}

export const get = <K, V>(tree: Tree<K, V>, key: K): V | undefined => {
  let node = tree.root
  while (!node.leaf) {
    const i = lowerBound(node.keys, key, tree.compare)
    if (i === node.keys.length) return undefined
    node = node.children[i]!
  }
  const i = lowerBound(node.keys, key, tree.compare)
  return i < node.keys.length && tree.compare(node.keys[i]!, key) === 0 ? node.values[i] : undefined
}

const splice = <A>(items: ReadonlyArray<A>, at: number, remove: number, ...add: ReadonlyArray<A>): Array<A> => {
  const out = items.slice()
  out.splice(at, remove, ...add)
  return out
}

/** `items` with `item` inserted at `at`. */
const inserted = <A>(items: ReadonlyArray<A>, at: number, item: A): Array<A> => {
  const out: Array<A> = new Array(items.length + 1)
  for (let i = 0; i < at; i++) out[i] = items[i]!
  out[at] = item
  for (let i = at; i < items.length; i++) out[i + 1] = items[i]!
  return out
}

/** `items` with `item` in place of the one at `at`. */
const replaced = <A>(items: ReadonlyArray<A>, at: number, item: A): Array<A> => {
  const out = items.slice()
  out[at] = item
  return out
}

/**
 * `node` with its child at `at` replaced by `child` (the common case of a write: no split, no
 * merge), without going over every child again for the keys and the size.
 */
const withChild = <K, V>(node: Branch<K, V>, at: number, child: Node<K, V>, before: number, edit?: Edit): Branch<K, V> => ({
  leaf: false,
  keys: replaced(node.keys, at, child.keys[child.keys.length - 1]!),
  children: replaced(node.children, at, child),
  size: node.size - before + child.size,
  owner: edit?.owner,
  generation: edit?.generation
})

/**
 * Where a node of `length` (over MAX) splits after an insert at `at`: in half, except after
 * an insert at its end (ids made in order, a load), where the left node stays nearly full:
 * appends would otherwise leave every node half empty for good.
 */
const cutOf = (length: number, at: number): number => (at === length - 1 ? length - (MIN >>> 1) : length >>> 1)

/** The node(s) replacing `node` after setting `key`; `node` itself, changed, when `edit` owns it. */
const setIn = <K, V>(node: Node<K, V>, key: K, value: V, compare: Compare<K>, edit: Edit | undefined): ReadonlyArray<Node<K, V>> => {
  if (owns(edit, node)) return setInPlace(node, key, value, compare, edit!)
  if (node.leaf) {
    const i = lowerBound(node.keys, key, compare)
    const replace = i < node.keys.length && compare(node.keys[i]!, key) === 0
    const keys = replace ? replaced(node.keys, i, key) : inserted(node.keys, i, key)
    if (shares(node) && (value as unknown) === key) {
      const own = keys as unknown as Array<V>
      if (keys.length <= MAX) return [leaf(keys, own, edit)]
      const cut = cutOf(keys.length, i)
      const low = keys.slice(0, cut)
      const high = keys.slice(cut)
      return [leaf(low, low as unknown as Array<V>, edit), leaf(high, high as unknown as Array<V>, edit)]
    }
    const values = replace ? replaced(node.values, i, value) : inserted(node.values, i, value)
    if (keys.length <= MAX) return [leaf(keys, values, edit)]
    const half = cutOf(keys.length, i)
    return [leaf(keys.slice(0, half), values.slice(0, half), edit), leaf(keys.slice(half), values.slice(half), edit)]
  }
  const i = Math.min(lowerBound(node.keys, key, compare), node.children.length - 1)
  // Its size before: a child `edit` owns is changed in place.
  const before = node.children[i]!.size
  const below = setIn(node.children[i]!, key, value, compare, edit)
  if (below.length === 1) return [withChild(node, i, below[0]!, before, edit)]
  const children = splice(node.children, i, 1, ...below)
  if (children.length <= MAX) return [branch(children, edit)]
  const half = cutOf(children.length, i + below.length - 1)
  return [branch(children.slice(0, half), edit), branch(children.slice(half), edit)]
}

/** `setIn` on a node `edit` owns: its arrays changed in place; a split adds one new node. */
const setInPlace = <K, V>(node: Node<K, V>, key: K, value: V, compare: Compare<K>, edit: Edit): ReadonlyArray<Node<K, V>> => {
  if (node.leaf) {
    const own = node as Mutable<Leaf<K, V>>
    const i = lowerBound(own.keys, key, compare)
    const set = shares(node)
    if (set && (value as unknown) !== key) {
      // A set's leaf given a value of its own: it keeps two arrays from now on.
      own.values = own.keys.slice() as unknown as Array<V>
    }
    const two = !shares(own)
    if (i < own.keys.length && compare(own.keys[i]!, key) === 0) {
      own.keys[i] = key
      if (two) own.values[i] = value
      return [own]
    }
    own.keys.splice(i, 0, key)
    if (two) own.values.splice(i, 0, value)
    own.size = own.keys.length
    if (own.keys.length <= MAX) return [own]
    const cut = cutOf(own.keys.length, i)
    const highKeys = own.keys.splice(cut)
    const high = leaf(highKeys, two ? own.values.splice(cut) : highKeys as unknown as Array<V>, edit)
    own.size = own.keys.length
    return [own, high]
  }
  const own = node as Mutable<Branch<K, V>>
  const i = Math.min(lowerBound(own.keys, key, compare), own.children.length - 1)
  const child = own.children[i]!
  const before = child.size
  const below = setIn(child, key, value, compare, edit)
  let grown = -before
  for (const part of below) grown += part.size
  own.size += grown
  if (below.length === 1) {
    own.children[i] = below[0]!
    own.keys[i] = below[0]!.keys[below[0]!.keys.length - 1]!
    return [own]
  }
  own.children.splice(i, 1, ...below)
  own.keys.splice(i, 1, ...below.map((part) => part.keys[part.keys.length - 1]!))
  if (own.children.length <= MAX) return [own]
  const cut = cutOf(own.children.length, i + below.length - 1)
  const high = branch(own.children.splice(cut), edit)
  own.keys.length = cut
  own.size -= high.size
  return [own, high]
}

/** The tree with `key` set to `value`; with `edit`, the nodes it owns are changed in place. */
export const set = <K, V>(tree: Tree<K, V>, key: K, value: V, edit?: Edit): Tree<K, V> => {
  const nodes = setIn(tree.root, key, value, tree.compare, edit)
  if (nodes.length === 1 && nodes[0] === tree.root) return tree
  return { compare: tree.compare, root: nodes.length === 1 ? nodes[0]! : branch(nodes, edit) }
}

/** A set of keys: a tree whose every value is its key (one array per leaf). */
export type KeySet<K> = Tree<K, K>

/** `set` with `key` as its own value: the set with `key`. */
export const add = <K>(tree: KeySet<K>, key: K, edit?: Edit): KeySet<K> => set(tree, key, key, edit)

/** `node` without `key` (`undefined` when it is left empty); the same node when `key` is absent. */
const removeIn = <K, V>(node: Node<K, V>, key: K, compare: Compare<K>): Node<K, V> | undefined => {
  const i = lowerBound(node.keys, key, compare)
  if (node.leaf) {
    if (i === node.keys.length || compare(node.keys[i]!, key) !== 0) return node
    if (node.keys.length === 1) return undefined
    const keys = splice(node.keys, i, 1)
    return leaf(keys, shares(node) ? keys as unknown as Array<V> : splice(node.values, i, 1))
  }
  if (i === node.children.length) return node
  const child = node.children[i]!
  const next = removeIn(child, key, compare)
  if (next === child) return node
  if (next === undefined) return node.children.length === 1 ? undefined : branch(splice(node.children, i, 1))
  // Keep nodes from thinning out: a small child merges with a neighbour when both fit in one.
  if (next.keys.length < MIN && node.children.length > 1) {
    const j = i > 0 ? i - 1 : i + 1
    const [a, b] = j < i ? [node.children[j]!, next] : [next, node.children[j]!]
    if (a.keys.length + b.keys.length <= MAX) {
      let merged: Node<K, V>
      if (a.leaf && b.leaf) {
        const keys = [...a.keys, ...b.keys]
        merged = leaf(keys, shares(a) && shares(b) ? keys as unknown as Array<V> : [...a.values, ...b.values])
      } else {
        merged = branch([...(a as Branch<K, V>).children, ...(b as Branch<K, V>).children])
      }
      return branch(splice(node.children, Math.min(i, j), 2, merged))
    }
  }
  return withChild(node, i, next, child.size)
}

export const remove = <K, V>(tree: Tree<K, V>, key: K): Tree<K, V> => {
  let root = removeIn(tree.root, key, tree.compare)
  if (root === tree.root) return tree
  while (root !== undefined && !root.leaf && root.children.length === 1) root = root.children[0]!
  return { compare: tree.compare, root: root ?? leaf(none, none) }
}

/** A tree of `entries` already sorted by key, without duplicates: O(n). */
export const fromSorted = <K, V>(compare: Compare<K>, entries: ReadonlyArray<readonly [K, V]>): Tree<K, V> => {
  if (entries.length === 0) return empty(compare)
  const fill = (MAX * 3) >>> 2
  let level: Array<Node<K, V>> = []
  for (let i = 0; i < entries.length; i += fill) {
    const chunk = entries.slice(i, i + fill)
    const keys = chunk.map((e) => e[0])
    const set = chunk.every((e) => (e[1] as unknown) === e[0])
    level.push(leaf(keys, set ? keys as unknown as Array<V> : chunk.map((e) => e[1])))
  }
  while (level.length > 1) {
    const up: Array<Node<K, V>> = []
    for (let i = 0; i < level.length; i += fill) up.push(branch(level.slice(i, i + fill)))
    level = up
  }
  return { compare, root: level[0]! }
}

/**
 * Keys and values in ascending order, from the first key for which `before` is false
 * (`before` must hold for a prefix of the order; omitted: from the start).
 */
export function* ascending<K, V>(tree: Tree<K, V>, before?: (key: K) => boolean): Generator<readonly [K, V]> {
  const stack: Array<{ node: Branch<K, V>; at: number }> = []
  let node = tree.root
  instrumentation.visited++
  while (!node.leaf) {
    const at = before === undefined ? 0 : firstNot(node.keys, before)
    if (at === node.children.length) return
    stack.push({ node, at })
    node = node.children[at]!
    instrumentation.visited++
  }
  let current: Leaf<K, V> = node
  let at = before === undefined ? 0 : firstNot(current.keys, before)
  for (;;) {
    while (at < current.keys.length) {
      instrumentation.visited++
      yield [current.keys[at]!, current.values[at]!]
      at++
    }
    // Up to the first ancestor with a next child, then down its leftmost path.
    let frame = stack.pop()
    while (frame !== undefined && frame.at + 1 >= frame.node.children.length) frame = stack.pop()
    if (frame === undefined) return
    frame.at++
    stack.push(frame)
    let next = frame.node.children[frame.at]!
    instrumentation.visited++
    while (!next.leaf) {
      stack.push({ node: next, at: 0 })
      next = next.children[0]!
      instrumentation.visited++
    }
    current = next
    at = 0
  }
}

/**
 * Keys and values in descending order, from the last key for which `after` is false
 * (`after` must hold for a suffix of the order; omitted: from the end).
 */
export function* descending<K, V>(tree: Tree<K, V>, after?: (key: K) => boolean): Generator<readonly [K, V]> {
  const stack: Array<{ node: Branch<K, V>; at: number }> = []
  let node = tree.root
  instrumentation.visited++
  while (!node.leaf) {
    // The last key not `after` is in the first child whose largest key is `after`, or before it.
    const at = after === undefined ? node.children.length - 1 : Math.min(firstNot(node.keys, (k) => !after(k)), node.children.length - 1)
    stack.push({ node, at })
    node = node.children[at]!
    instrumentation.visited++
  }
  let current: Leaf<K, V> = node
  let at = (after === undefined ? current.keys.length : firstNot(current.keys, (k) => !after(k))) - 1
  for (;;) {
    while (at >= 0) {
      instrumentation.visited++
      yield [current.keys[at]!, current.values[at]!]
      at--
    }
    let frame = stack.pop()
    while (frame !== undefined && frame.at === 0) frame = stack.pop()
    if (frame === undefined) return
    frame.at--
    stack.push(frame)
    let next = frame.node.children[frame.at]!
    instrumentation.visited++
    while (!next.leaf) {
      stack.push({ node: next, at: next.children.length - 1 })
      next = next.children[next.children.length - 1]!
      instrumentation.visited++
    }
    current = next
    at = current.keys.length - 1
  }
}

/** How many keys `before` holds for (a prefix of the order): O(log n), from the subtree sizes. */
export const countBefore = <K, V>(tree: Tree<K, V>, before: (key: K) => boolean): number => {
  let node = tree.root
  let count = 0
  instrumentation.visited++
  while (!node.leaf) {
    const at = firstNot(node.keys, before)
    for (let i = 0; i < at; i++) count += node.children[i]!.size
    if (at === node.children.length) return count
    node = node.children[at]!
    instrumentation.visited++
  }
  return count + firstNot(node.keys, before)
}
