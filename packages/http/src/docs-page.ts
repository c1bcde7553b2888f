/**
 * The public reference of the API, outside `/api/v3` and without a credential (`/api/v3`
 * itself requires one, §5):
 *
 * - `GET /docs`: the introduction (authentication and its two modes, idempotency, errors,
 *   pagination, rate limits, versions) and the index of every operation, by area and
 *   resource: plain HTML made on the server, usable as soon as it arrives;
 * - `GET /docs/reference/{tag}`: a Redoc page of one resource tag's operations, from
 *   `GET /docs/reference/{tag}.json`, that tag's part of the description (docs-reference.ts);
 * - `GET /docs/openapi.json`: the description of the latest release, the same document as
 *   `GET /api/v3/openapi.json` (with the server's deprecations);
 * - `GET /docs/redoc.standalone.js`: Redoc's script, served from the `redoc` package rather
 *   than a CDN, so that the pages work offline and on a private network.
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
import { escapeHtml, inlineHtml, introduction, lead, sectionHtml } from "./docs-introduction.js"
import { REFERENCE_PATH, referenceIndexHtml, referencePart, tagOfSlug } from "./docs-reference.js"

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

const TITLE = `Course-platform administration API ${RELEASE}`

const indexStyle = `
  body { margin: 0; font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; background: #fff; }
  main { max-width: 960px; margin: 0 auto; padding: 24px 24px 64px; }
  h1 { font-size: 1.9em; margin: 0.4em 0; } h2 { margin-top: 2em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
  h3 { margin: 1.6em 0 0.4em; } h4 { margin: 1em 0 0.2em; font-size: 1.05em; }
  code { font: 0.9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f3f4f6; padding: 0.1em 0.3em; border-radius: 4px; }
  pre { background: #f6f8fa; padding: 12px 16px; overflow-x: auto; border-radius: 6px; } pre code { background: none; padding: 0; }
  table { border-collapse: collapse; margin: 0.8em 0; } th, td { border: 1px solid #d0d7de; padding: 6px 10px; text-align: left; vertical-align: top; }
  nav ul { columns: 2; } a { color: #0969da; text-decoration: none; } a:hover { text-decoration: underline; }
  .tag p { margin: 0.2em 0 0.4em; color: #57606a; } .operations { list-style: none; padding-left: 0; margin: 0; }
  .operations li { padding: 2px 0; } .method { display: inline-block; min-width: 4.2em; font: bold 0.75em ui-monospace, monospace; }
  .get { color: #1a7f37; } .post { color: #0969da; } .put, .patch { color: #9a6700; } .delete { color: #cf222e; }
  .deprecated { font-size: 0.8em; color: #cf222e; }
`

/** `/docs`: the introduction, then the index of the reference. No script: it is usable as soon as it is shown. */
const indexPage = (document: OpenApiDocument): string => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${TITLE}: introduction and reference</title>
    <style>${indexStyle}</style>
  </head>
  <body>
    <main>
      <h1>${TITLE}</h1>
      <p>${inlineHtml(lead)}</p>
      <nav><ul>
        ${introduction.map((section) => `<li><a href="#${section.id}">${escapeHtml(section.title)}</a></li>`).join("")}
        <li><a href="#reference">The reference, by area</a></li>
      </ul></nav>
      ${introduction.map(sectionHtml).join("\n")}
      <section id="reference">
        <h2>The reference, by area</h2>
        <p>Each resource's operations, with their parameters, bodies, answers, examples and error codes, are on a page of their own.
        The whole description, for tools and code generators: <a href="${DOCS_DESCRIPTION_PATH}">${DOCS_DESCRIPTION_PATH}</a> (OpenAPI 3.1).</p>
        ${referenceIndexHtml(document)}
      </section>
    </main>
  </body>
</html>
`

/** A tag's page: Redoc renders its part of the description. */
const tagPage = (tag: string, slug: string) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${TITLE}: ${escapeHtml(tag)}</title>
    <style>body { margin: 0; padding: 0; }</style>
  </head>
  <body>
    <redoc spec-url="${REFERENCE_PATH}/${slug}.json" hide-hostname="true" json-sample-expand-level="2"></redoc>
    <script src="${DOCS_SCRIPT_PATH}"></script>
  </body>
</html>
`

/** A tag's page without Redoc: where its part of the description is, and what to install. */
const plainTagPage = (tag: string, slug: string) => `<!doctype html>
<html lang="en">
  <head><meta charset="utf-8"><title>${TITLE}: ${escapeHtml(tag)}</title></head>
  <body>
    <h1>${TITLE}: ${escapeHtml(tag)}</h1>
    <p>This part of the description: <a href="${REFERENCE_PATH}/${slug}.json">${REFERENCE_PATH}/${slug}.json</a>; the introduction: <a href="${DOCS_PATH}">${DOCS_PATH}</a>.</p>
    <p>Install the <code>redoc</code> package beside <code>@syllabus/http</code> for the reference page.</p>
  </body>
</html>
`

const common = { "x-service-release": RELEASE, "x-content-type-options": "nosniff", "cache-control": "no-cache" }

/** The index runs no script and loads nothing but itself. */
const indexPolicy = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/**
 * A tag's page loads nothing from another host: its script, its description and its images are
 * the server's own (Redoc's "by Redocly" logo, from a CDN, is not loaded and not shown).
 * Redoc styles itself inline and searches in a worker made from a blob.
 */
const pagePolicy =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
  "worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

type Describe = (settings: ServerSettingsShape) => OpenApiDocument

/** What is served of a document (the description itself, the `/docs` page), encoded once per document: it does not change while serving. */
const encodedOnce = (render: (document: OpenApiDocument) => string) => {
  const encoded = new WeakMap<OpenApiDocument, Uint8Array>()
  return (document: OpenApiDocument): Uint8Array => {
    const known = encoded.get(document)
    if (known !== undefined) return known
    const bytes = new TextEncoder().encode(render(document))
    encoded.set(document, bytes)
    return bytes
  }
}
const descriptionBytes = encodedOnce((document) => JSON.stringify(document))
const indexBytes = encodedOnce(indexPage)

const notFound = () => HttpServerResponse.unsafeJson({ status: "not_found" }, { status: 404, headers: common })

/** The app of the `/docs` paths; `describe` gives the description the server serves under its settings. */
export const docsApp =
  (describe: Describe): OutsideApp =>
  (request) =>
    Effect.gen(function* () {
      const path = request.url.split("?", 1)[0]!
      const reference = path.startsWith(`${REFERENCE_PATH}/`) ? path.slice(REFERENCE_PATH.length + 1) : undefined
      if (path !== DOCS_PATH && path !== DOCS_DESCRIPTION_PATH && path !== DOCS_SCRIPT_PATH && reference === undefined) return undefined
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
      if (path === DOCS_SCRIPT_PATH) return redoc === null ? notFound() : answer(redoc, "text/javascript; charset=utf-8")
      const document = describe(yield* ServerSettings)
      if (path === DOCS_PATH) return answer(indexBytes(document), "text/html; charset=utf-8", { "content-security-policy": indexPolicy })
      if (path === DOCS_DESCRIPTION_PATH || reference === undefined) return answer(descriptionBytes(document), "application/json")
      // `/docs/reference/{tag}` (its page) and `/docs/reference/{tag}.json` (its part of the description)
      const json = reference.endsWith(".json")
      const slug = json ? reference.slice(0, -".json".length) : reference
      const tag = tagOfSlug(document, slug)
      const part = tag === undefined ? undefined : referencePart(document, tag)
      if (tag === undefined || part === undefined) return notFound()
      if (json) return answer(part, "application/json")
      return answer(redoc === null ? plainTagPage(tag, slug) : tagPage(tag, slug), "text/html; charset=utf-8", { "content-security-policy": pagePolicy })
    })
