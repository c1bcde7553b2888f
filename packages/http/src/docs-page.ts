/**
 * The public reference of the API, outside `/api/v3` and without a credential (`/api/v3`
 * itself requires one, §5):
 *
 * - `GET /docs`: a Redoc page of the description (its sidebar follows `x-tagGroups`);
 * - `GET /docs/openapi.json`: the description of the latest release, the same document as
 *   `GET /api/v3/openapi.json` (with the server's deprecations);
 * - `GET /docs/redoc.standalone.js`: Redoc's script, served from the `redoc` package rather
 *   than a CDN, so that the page works offline and on a private network.
 *
 * `HEAD` is answered like `GET`, without the body; another method is 405 with `Allow`.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { Effect } from "effect"
import type { OpenApiDocument } from "./openapi.js"
import type { OutsideApp } from "./pipeline.js"
import { RELEASE, ServerSettings, type ServerSettingsShape } from "./services.js"

export const DOCS_PATH = "/docs"
export const DOCS_DESCRIPTION_PATH = "/docs/openapi.json"
export const DOCS_SCRIPT_PATH = "/docs/redoc.standalone.js"

/**
 * Redoc's browser bundle, read once, on the first request for it; `null` when the `redoc`
 * package is not installed. It is an optional peer of this package (the standalone server
 * depends on it) so that embedders and `@syllabus/testing` users do not install React for a
 * page they may not serve.
 */
let script: Uint8Array | null | undefined
const redocScript = (): Uint8Array | null => {
  if (script !== undefined) return script
  try {
    script = readFileSync(createRequire(import.meta.url).resolve("redoc/bundles/redoc.standalone.js"))
  } catch {
    script = null
  }
  return script
}

/** The page without Redoc: where the description is, and what to install for the reference page. */
const plainPage = `<!doctype html>
<html lang="en">
  <head><meta charset="utf-8"><title>Course-platform administration API ${RELEASE}: reference</title></head>
  <body>
    <h1>Course-platform administration API ${RELEASE}</h1>
    <p>The description: <a href="${DOCS_DESCRIPTION_PATH}">${DOCS_DESCRIPTION_PATH}</a>.</p>
    <p>Install the <code>redoc</code> package beside <code>@syllabus/http</code> for the reference page.</p>
  </body>
</html>
`

const page = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Course-platform administration API ${RELEASE}: reference</title>
    <style>body { margin: 0; padding: 0; }</style>
  </head>
  <body>
    <redoc spec-url="${DOCS_DESCRIPTION_PATH}" hide-hostname="true" json-sample-expand-level="2"></redoc>
    <script src="${DOCS_SCRIPT_PATH}"></script>
  </body>
</html>
`

const common = { "x-service-release": RELEASE, "x-content-type-options": "nosniff", "cache-control": "no-cache" }

/**
 * The page loads nothing from another host: its script, its description and its images are
 * the server's own (Redoc's "by Redocly" logo, from a CDN, is not loaded and not shown).
 * Redoc styles itself inline and searches in a worker made from a blob.
 */
const pagePolicy =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
  "worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

type Describe = (settings: ServerSettingsShape) => OpenApiDocument

/** The description as bytes, encoded once per document (it does not change while serving). */
const encoded = new WeakMap<OpenApiDocument, Uint8Array>()
const bytesOf = (document: OpenApiDocument): Uint8Array => {
  const known = encoded.get(document)
  if (known !== undefined) return known
  const bytes = new TextEncoder().encode(JSON.stringify(document))
  encoded.set(document, bytes)
  return bytes
}

/** The app of the `/docs` paths; `describe` gives the description the server serves under its settings. */
export const docsApp =
  (describe: Describe): OutsideApp =>
  (request) =>
    Effect.gen(function* () {
      const path = request.url.split("?", 1)[0]
      if (path !== DOCS_PATH && path !== DOCS_DESCRIPTION_PATH && path !== DOCS_SCRIPT_PATH) return undefined
      if (request.method !== "GET" && request.method !== "HEAD") {
        return HttpServerResponse.unsafeJson(
          { status: "method_not_allowed" },
          { status: 405, headers: { ...common, allow: "GET, HEAD" } }
        )
      }
      const head = request.method === "HEAD"
      const answer = (body: string | Uint8Array, contentType: string, headers: Record<string, string> = {}) =>
        HttpServerResponse.uint8Array(head ? new Uint8Array() : typeof body === "string" ? new TextEncoder().encode(body) : body, {
          contentType,
          headers: { ...common, ...headers }
        })
      const redoc = redocScript()
      if (path === DOCS_PATH) return answer(redoc === null ? plainPage : page, "text/html; charset=utf-8", { "content-security-policy": pagePolicy })
      if (path === DOCS_SCRIPT_PATH) {
        if (redoc === null) return HttpServerResponse.unsafeJson({ status: "not_found" }, { status: 404, headers: common })
        return answer(redoc, "text/javascript; charset=utf-8")
      }
      const settings = yield* ServerSettings
      return answer(bytesOf(describe(settings)), "application/json")
    })
