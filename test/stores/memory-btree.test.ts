/**
 * The memory store's B+tree written with and without an `Edit` (packages/memory/src/btree.ts):
 * the same contents as a reference map after any sequence of writes, every node in order and
 * within its bounds, and a tree kept aside (a committed bucket, a savepoint) never changed by
 * a later write, whichever token that write carries.
 */
import { describe, expect, it } from "vitest"
import * as BTree from "../../packages/memory/src/btree.js"

const compare = (a: number, b: number) => a - b

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const contents = <V>(tree: BTree.Tree<number, V>) => Array.from(BTree.ascending(tree))
const reference = <V>(map: Map<number, V>) => [...map.entries()].sort((a, b) => a[0] - b[0])

/** Every node's keys sorted, within MAX, and its size and separators those of its children. */
const checkShape = (tree: BTree.Tree<number, unknown>) => {
  const visit = (node: any): { size: number; last: number | undefined } => {
    expect(node.keys.length).toBeLessThanOrEqual(64)
    for (let i = 1; i < node.keys.length; i++) expect(node.keys[i - 1]).toBeLessThan(node.keys[i])
    if (node.leaf) {
      expect(node.size).toBe(node.keys.length)
      expect(node.values.length).toBe(node.keys.length)
      return { size: node.size, last: node.keys.at(-1) }
    }
    let size = 0
    node.children.forEach((child: any, i: number) => {
      const seen = visit(child)
      size += seen.size
      expect(node.keys[i]).toBe(seen.last)
    })
    expect(node.size).toBe(size)
    return { size, last: node.keys.at(-1) }
  }
  visit((tree as any).root)
}

describe("the memory store's B+tree, with edits", () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    it(`keeps the contents of a reference map through 5,000 random writes, and what each live savepoint keeps (seed ${seed})`, () => {
      const next = random(seed)
      let tree = BTree.empty<number, string>(compare)
      const map = new Map<number, string>()
      // One transaction's token, as the store keeps it: savepoints raise the floor while they live.
      const owner = {}
      let generation = 0
      let edit: BTree.Edit | undefined = { owner, generation, floor: -1 }
      const live: Array<{ floor: number; tree: BTree.Tree<number, string>; contents: Array<readonly [number, string]> }> = []
      let checked = 0
      const release = () => {
        const top = live.pop()!
        expect(contents(top.tree)).toEqual(top.contents)
        checked++
        edit = { owner, generation, floor: live.at(-1)?.floor ?? -1 }
      }
      for (let step = 0; step < 5_000; step++) {
        const roll = next()
        // Appends (ids made in order), writes anywhere, removals, savepoints taken and
        // released, and now and then a write without a token (outside a transaction).
        const key = roll < 0.4 ? step * 10 : Math.floor(next() * step * 10)
        if (roll < 0.85) {
          const value = `v${step}`
          tree = BTree.set(tree, key, value, next() < 0.05 ? undefined : edit)
          map.set(key, value)
        } else if (roll < 0.93) {
          tree = BTree.remove(tree, key)
          map.delete(key)
        } else if (roll < 0.97) {
          const floor = generation++
          live.push({ floor, tree, contents: contents(tree) })
          edit = { owner, generation, floor }
        } else if (live.length > 0) {
          release()
        }
      }
      expect(contents(tree)).toEqual(reference(map))
      expect(BTree.size(tree)).toBe(map.size)
      checkShape(tree)
      while (live.length > 0) release()
      expect(checked).toBeGreaterThan(20)
    })
  }

  it("a tree of another owner, or of a generation at or below the floor, is copied, never changed", () => {
    const owner = {}
    let tree = BTree.empty<number, number>(compare)
    for (let i = 0; i < 500; i++) tree = BTree.set(tree, i, i, { owner, generation: 0, floor: -1 })
    const before = contents(tree)
    expect(BTree.size(BTree.set(tree, 1_000, 1_000, { owner: {}, generation: 0, floor: -1 }))).toBe(501)
    expect(BTree.size(BTree.set(tree, 1_001, 1_001, { owner, generation: 1, floor: 0 }))).toBe(501)
    expect(BTree.size(BTree.set(tree, 1_002, 1_002))).toBe(501)
    expect(contents(tree)).toEqual(before)
    // Its own owner above the floor changes it in place: the tree object is the one given.
    expect(BTree.set(tree, 2_000, 2_000, { owner, generation: 0, floor: -1 })).toBe(tree)
    expect(BTree.size(tree)).toBe(501)
  })

  it("a set written with an edit keeps one array per leaf, and its keys", () => {
    let set: BTree.KeySet<number> = BTree.empty(compare)
    const edit = { owner: {}, generation: 0, floor: -1 }
    for (let i = 0; i < 1_000; i++) set = BTree.add(set, (i * 7919) % 1_000, edit)
    expect(contents(set).map(([key]) => key)).toEqual(Array.from({ length: 1_000 }, (_, i) => i))
    expect(contents(set).every(([key, value]) => key === value)).toBe(true)
    checkShape(set)
  })
})
