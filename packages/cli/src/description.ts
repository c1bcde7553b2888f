/**
 * The API's own description (`GET /api/v3/openapi.json`), to check a generic call's method
 * and path before sending it. Only the paths and their methods are kept, cached in the config
 * directory (`openapi-paths.json`) for an hour per server; a path the cache does not know is
 * looked up again once, so a newer server is never refused from a stale cache.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { Clock, Effect, Option, Schema } from "effect"
import { CliError } from "./context.js"
import { api } from "./http.js"
import { configDir, loadConfig } from "./store.js"

const CACHE_FILE = "openapi-paths.json"
const CACHE_TTL_MS = 60 * 60 * 1000

const Cache = Schema.Struct({
  base_url: Schema.String,
  fetched_at: Schema.Number,
  /** Path template (`/products/{product_id}`) → upper-case methods. */
  paths: Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) })
})
type Cache = typeof Cache.Type

const Description = Schema.Struct({ paths: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }) })

const httpMethods = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"])

const cachePath = Effect.zipWith(configDir, Path.Path, (dir, path) => path.join(dir, CACHE_FILE))

const readCache = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const file = yield* cachePath
  if (!(yield* fs.exists(file))) return Option.none<Cache>()
  const text = yield* fs.readFileString(file)
  return Schema.decodeUnknownOption(Schema.parseJson(Cache))(text)
}).pipe(Effect.orElseSucceed(() => Option.none<Cache>()))

const fetchPaths = Effect.gen(function* () {
  const config = yield* loadConfig
  const body = yield* api("GET", "/openapi.json")
  const description = yield* Schema.decodeUnknown(Description)(body).pipe(
    Effect.mapError(() => new CliError({ code: "unexpected_response", message: "the server's /openapi.json has no paths" }))
  )
  const paths: Record<string, Array<string>> = {}
  for (const [template, item] of Object.entries(description.paths)) {
    paths[template] = Object.keys(item)
      .filter((key) => httpMethods.has(key))
      .map((key) => key.toUpperCase())
  }
  const cache: Cache = { base_url: config.base_url, fetched_at: yield* Clock.currentTimeMillis, paths }
  // The cache is an optimization: failing to write it changes nothing.
  yield* Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.makeDirectory(yield* configDir, { recursive: true, mode: 0o700 })
    yield* fs.writeFileString(yield* cachePath, JSON.stringify(cache) + "\n", { mode: 0o600 })
  }).pipe(Effect.ignore)
  return cache
})

/** Does `path` (no query string) fit the template `/products/{product_id}`? */
export const matchesTemplate = (template: string, path: string): boolean => {
  const want = template.split("/")
  const have = path.split("/")
  return want.length === have.length && want.every((segment, i) => (/^\{[^}]+\}$/.test(segment) ? have[i] !== "" : segment === have[i]))
}

const parameterCount = (template: string) => (template.match(/\{[^}]+\}/g) ?? []).length

/**
 * The methods the description allows on `path`; `undefined` when no template fits it. As
 * in the router, literal segments win: `/credentials/current` is that path, not
 * `/credentials/{credential_id}`.
 */
const methodsOf = (cache: Cache, path: string): ReadonlyArray<string> | undefined => {
  const templates = Object.keys(cache.paths).filter((template) => matchesTemplate(template, path))
  if (templates.length === 0) return undefined
  const fewest = Math.min(...templates.map(parameterCount))
  return [...new Set(templates.filter((t) => parameterCount(t) === fewest).flatMap((template) => cache.paths[template] ?? []))]
}

/**
 * Fail with a clear message unless the description has `method path` (path relative to
 * `/api/v3`, query string allowed).
 */
export const checkOperation = (method: string, pathWithQuery: string) =>
  Effect.gen(function* () {
    const path = pathWithQuery.split("?")[0]!.replace(/\/+$/, "") || "/"
    const config = yield* loadConfig
    const now = yield* Clock.currentTimeMillis
    const cached = yield* readCache
    const fresh = Option.filter(cached, (c) => c.base_url === config.base_url && now - c.fetched_at < CACHE_TTL_MS)
    let cache = Option.isSome(fresh) ? fresh.value : yield* fetchPaths
    let methods = methodsOf(cache, path)
    if ((methods === undefined || !methods.includes(method)) && Option.isSome(fresh)) {
      // Perhaps the server is newer than the cache: ask once more.
      cache = yield* fetchPaths
      methods = methodsOf(cache, path)
    }
    if (methods === undefined) {
      return yield* Effect.fail(
        new CliError({ code: "unknown_path", message: `${path} is not a path of the API (see GET /openapi.json); paths are relative to /api/v3, e.g. /products` })
      )
    }
    if (!methods.includes(method)) {
      return yield* Effect.fail(
        new CliError({ code: "method_not_allowed", message: `${method} is not an operation of ${path}; it accepts ${methods.join(", ")}` })
      )
    }
  })
