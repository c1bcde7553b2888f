/**
 * The served OpenAPI description (`GET /api/v3/openapi.json`), read the way a client
 * generator would: every operation with its path, query and header parameters, its request
 * body schema, and for each response status the schema and the error codes it lists.
 * Nothing here knows the server's code: the fuzz suite learns what to send from this alone.
 */
import fc from "fast-check"
import { createRequire } from "node:module"

export type JsonSchema = { readonly [key: string]: any }

export interface Parameter {
  readonly name: string
  readonly in: "path" | "query" | "header"
  readonly required: boolean
  readonly schema: JsonSchema
}

export interface DescribedResponse {
  readonly status: number
  /** `x-error-codes`: the codes this status may carry for this operation. */
  readonly codes: ReadonlyArray<string> | undefined
  /** JSON pointer (within the description) of the body schema, when there is a JSON body. */
  readonly schemaPointer: string | undefined
  readonly headers: ReadonlyArray<string>
  /** The body schema requires `data` (every resource and collection; not the description itself). */
  readonly requiresData: boolean
}

export interface DescribedOperation {
  readonly id: string
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  /** The path template under `/api/v3`, e.g. `/products/{product_id}`. */
  readonly path: string
  readonly pathParams: ReadonlyArray<Parameter>
  readonly queryParams: ReadonlyArray<Parameter>
  readonly idempotency: "required" | "optional" | "none"
  readonly ifMatch: boolean
  /** The JSON request body (its schema with every `$ref` resolved), if the operation takes one. */
  readonly body: { readonly schema: JsonSchema; readonly required: boolean } | undefined
  /** A body that is not JSON (upload parts): its media type. */
  readonly rawBody: string | undefined
  /** What a success is sent as, when not JSON (`text/event-stream`). */
  readonly produces: string | undefined
  readonly responses: ReadonlyMap<number, DescribedResponse>
}

export interface Description {
  readonly doc: any
  readonly operations: ReadonlyArray<DescribedOperation>
  /** The methods described for each path template. */
  readonly methodsByPath: ReadonlyMap<string, ReadonlyArray<string>>
  /** Every literal path segment of every path (a generated path value must not collide with one). */
  readonly literalSegments: ReadonlySet<string>
}

const escapePointer = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1")

const methods = ["get", "post", "put", "patch", "delete"] as const

export const readDescription = (doc: any): Description => {
  const deref = (value: any, seen: ReadonlyArray<string> = []): any => {
    if (Array.isArray(value)) return value.map((v) => deref(v, seen))
    if (value === null || typeof value !== "object") return value
    if (typeof value.$ref === "string") {
      const ref: string = value.$ref
      if (seen.includes(ref)) throw new Error(`recursive request schema ${ref}: the generator does not handle it`)
      const target = ref
        .replace(/^#\//, "")
        .split("/")
        .reduce((node: any, part) => node?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], doc)
      if (target === undefined) throw new Error(`dangling $ref ${ref}`)
      return deref(target, [...seen, ref])
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, deref(v, seen)]))
  }

  const operations: Array<DescribedOperation> = []
  const methodsByPath = new Map<string, Array<string>>()
  const literalSegments = new Set<string>()
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    // A path on a server of its own is outside `/api/v3` (a gateway's notification): its own tests cover it.
    if (item.servers !== undefined) continue
    for (const segment of path.split("/")) if (segment !== "" && !segment.startsWith("{")) literalSegments.add(segment)
    for (const method of methods) {
      const op = item[method]
      if (op === undefined) continue
      methodsByPath.set(path, [...(methodsByPath.get(path) ?? []), method.toUpperCase()])
      const parameters: Array<any> = deref([...(item.parameters ?? []), ...(op.parameters ?? [])])
      const param = (p: any): Parameter => ({ name: p.name, in: p.in, required: p.required === true, schema: p.schema ?? {} })
      const idempotencyParam = parameters.find((p) => p.in === "header" && p.name === "Idempotency-Key")
      const content = op.requestBody?.content ?? {}
      const json = content["application/json"]
      const raw = Object.keys(content).find((type) => type !== "application/json")
      const responses = new Map<number, DescribedResponse>()
      for (const [status, response] of Object.entries<any>(op.responses)) {
        const resolved = deref(response)
        responses.set(Number(status), {
          status: Number(status),
          codes: resolved["x-error-codes"],
          schemaPointer:
            resolved.content?.["application/json"]?.schema === undefined
              ? undefined
              : // A response shared in `components/responses` is pointed to there.
                [...(typeof response.$ref === "string" ? response.$ref.slice(2).split("/") : ["paths", path, method, "responses", status]), "content", "application/json", "schema"]
                  .map(escapePointer)
                  .join("/"),
          headers: Object.keys(resolved.headers ?? {}).map((h) => h.toLowerCase()),
          requiresData: (resolved.content?.["application/json"]?.schema?.required ?? []).includes("data")
        })
      }
      const success = [...responses.values()].find((r) => r.status < 300)
      const produces = Object.keys(deref(op.responses[String(success?.status)])?.content ?? {}).find((t) => t !== "application/json")
      const described: DescribedOperation = {
        id: op.operationId,
        method: method.toUpperCase() as DescribedOperation["method"],
        path,
        pathParams: parameters.filter((p) => p.in === "path").map(param),
        queryParams: parameters.filter((p) => p.in === "query").map(param),
        idempotency: idempotencyParam === undefined ? "none" : idempotencyParam.required ? "required" : "optional",
        ifMatch: parameters.some((p) => p.in === "header" && p.name === "If-Match"),
        body: json === undefined ? undefined : { schema: deref(json.schema ?? {}), required: op.requestBody.required === true },
        rawBody: raw,
        produces,
        responses
      }
      // A counterexample names the operation, not its whole description.
      Object.defineProperty(described, fc.toStringMethod, { value: () => `${method.toUpperCase()} ${path}` })
      operations.push(described)
    }
  }
  return { doc, operations, methodsByPath, literalSegments }
}

// ---------------------------------------------------------------------------------------
// Validating an answer against the schema the description gives for it

/** Ajv for JSON Schema 2020-12, as shipped with the OpenAPI validator the contract tests use. */
const fromValidator = createRequire(createRequire(import.meta.url).resolve("@seriousme/openapi-schema-validator"))
const Ajv2020 = fromValidator("ajv/dist/2020.js").default
const addFormats = fromValidator("ajv-formats").default

export interface SchemaCheck {
  (pointer: string, body: unknown): ReadonlyArray<string>
}

/** One Ajv holding the whole description (so `#/components/...` resolve), validators compiled once per pointer. */
export const schemaChecker = (doc: any): SchemaCheck => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
  addFormats(ajv)
  const id = "https://syllabus.test/fuzz/openapi.json"
  ajv.addSchema({ ...doc, $id: id })
  // Most pointers lead to the same schema (every error status of every operation is `$ref: Error`):
  // compile each distinct schema once.
  const compiled = new Map<string, any>()
  const byPointer = new Map<string, any>()
  const at = (pointer: string) =>
    pointer.split("/").reduce((node: any, part) => node?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], doc)
  return (pointer, body) => {
    let validate = byPointer.get(pointer)
    if (validate === undefined) {
      const key = JSON.stringify(at(pointer))
      validate = compiled.get(key)
      if (validate === undefined) {
        validate = ajv.compile({ $ref: `${id}#/${pointer}` })
        compiled.set(key, validate)
      }
      byPointer.set(pointer, validate)
    }
    if (validate(body)) return []
    return (validate.errors ?? []).slice(0, 5).map((e: any) => `${e.instancePath || "/"} ${e.message}${e.params ? " " + JSON.stringify(e.params) : ""}`)
  }
}
