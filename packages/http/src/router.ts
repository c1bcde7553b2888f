/**
 * Route lookup over the operation list: a trie of path segments where a literal segment
 * wins over a `{parameter}`. Tells apart an unknown path from a known path with another
 * method (405 with `Allow`, HEAD listed wherever GET is).
 */
import type { Method, Operation } from "./operation.js"

interface Node {
  readonly literals: Map<string, Node>
  param: { readonly name: string; readonly node: Node } | undefined
  readonly methods: Map<Method, Operation>
}

const newNode = (): Node => ({ literals: new Map(), param: undefined, methods: new Map() })

export type RouteMatch =
  | { readonly _tag: "Found"; readonly operation: Operation; readonly params: Record<string, string> }
  | { readonly _tag: "MethodNotAllowed"; readonly allowed: ReadonlyArray<Method | "HEAD"> }
  | { readonly _tag: "NotFound" }

export const makeRouter = (operations: ReadonlyArray<Operation>) => {
  const root = newNode()
  for (const operation of operations) {
    let node = root
    for (const segment of operation.path.split("/").filter((s) => s !== "")) {
      const param = /^\{([a-z_]+)\}$/.exec(segment)?.[1]
      if (param !== undefined) {
        if (node.param !== undefined && node.param.name !== param) {
          throw new Error(`Conflicting parameter names at ${operation.path}: ${node.param.name} and ${param}`)
        }
        node.param ??= { name: param, node: newNode() }
        node = node.param.node
      } else {
        let next = node.literals.get(segment)
        if (!next) node.literals.set(segment, (next = newNode()))
        node = next
      }
    }
    if (node.methods.has(operation.method)) throw new Error(`Duplicate route ${operation.method} ${operation.path}`)
    node.methods.set(operation.method, operation)
  }

  const find = (node: Node, segments: ReadonlyArray<string>, i: number, params: Record<string, string>): Node | undefined => {
    if (i === segments.length) return node.methods.size > 0 ? node : undefined
    const segment = segments[i]!
    const literal = node.literals.get(segment)
    if (literal) {
      const found = find(literal, segments, i + 1, params)
      if (found) return found
    }
    if (node.param && segment !== "") {
      // Bound before going deeper, so the parameters come out in path order.
      params[node.param.name] = segment
      const found = find(node.param.node, segments, i + 1, params)
      if (found) return found
      delete params[node.param.name]
    }
    return undefined
  }

  return (method: string, path: string): RouteMatch => {
    const segments = path.split("/").slice(1)
    if (segments.length > 0 && segments[segments.length - 1] === "") segments.pop()
    const params: Record<string, string> = {}
    // A segment that is not valid percent-encoding stays as sent: in a parameter's place it is
    // a malformed ID (404 from the ID check), not an unknown route.
    const decoded = segments.map((s) => {
      try {
        return decodeURIComponent(s)
      } catch {
        return s
      }
    })
    const node = find(root, decoded, 0, params)
    if (!node) return { _tag: "NotFound" }
    const operation = node.methods.get(method as Method)
    if (operation) return { _tag: "Found", operation, params }
    // A GET route answers HEAD too (the pipeline routes HEAD as GET): `Allow` says so.
    const allowed = [...node.methods.keys()]
    return { _tag: "MethodNotAllowed", allowed: allowed.includes("GET") ? [...allowed, "HEAD"] : allowed }
  }
}
