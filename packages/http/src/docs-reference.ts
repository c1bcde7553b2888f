/**
 * The reference of `/docs` in parts, from the description: an index of the operations by
 * area and resource (plain HTML, on the `/docs` page itself) and, for each resource tag, a
 * part of the description with that tag's operations and the components they refer to
 * (`/docs/reference/{tag}.json`, which a Redoc page renders). A reference page of every
 * operation at once takes Redoc about ten seconds on a two-core machine; one part, one or two.
 */
import type { Json, JsonObject } from "@syllabus/core"
import { escapeHtml, inlineHtml } from "./docs-introduction.js"
import { isObject } from "./openapi-examples.js"
import type { OpenApiDocument } from "./openapi.js"

export const REFERENCE_PATH = "/docs/reference"

const methods = ["get", "post", "put", "patch", "delete"] as const

/** `Taxonomy terms` → `taxonomy-terms`: a tag's part is at `/docs/reference/taxonomy-terms`. */
export const tagSlug = (tag: string) => tag.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "")

interface IndexedOperation {
  readonly method: string
  readonly path: string
  readonly operationId: string
  readonly summary: string
  readonly deprecated: boolean
}

interface Tag {
  readonly name: string
  readonly description: string
  readonly operations: ReadonlyArray<IndexedOperation>
}

interface Group {
  readonly name: string
  readonly tags: ReadonlyArray<Tag>
}

/** The operations of the description by tag, in the order of its paths. */
const operationsByTag = (document: OpenApiDocument): ReadonlyMap<string, ReadonlyArray<IndexedOperation>> => {
  const byTag = new Map<string, Array<IndexedOperation>>()
  const paths = isObject(document.paths) ? document.paths : {}
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue
    for (const method of methods) {
      const operation = item[method]
      if (!isObject(operation) || !Array.isArray(operation.tags) || typeof operation.tags[0] !== "string") continue
      const list = byTag.get(operation.tags[0]) ?? []
      list.push({
        method: method.toUpperCase(),
        path,
        operationId: String(operation.operationId ?? ""),
        summary: String(operation.summary ?? ""),
        deprecated: operation.deprecated === true
      })
      byTag.set(operation.tags[0], list)
    }
  }
  return byTag
}

/** The areas of `x-tagGroups`, each with its tags and their operations. */
const groupsOf = (document: OpenApiDocument): ReadonlyArray<Group> => {
  const byTag = operationsByTag(document)
  const descriptions = new Map(
    (Array.isArray(document.tags) ? document.tags : []).filter(isObject).map((tag) => [String(tag.name), String(tag.description ?? "")])
  )
  const groups = Array.isArray(document["x-tagGroups"]) ? document["x-tagGroups"].filter(isObject) : []
  return groups.map((group) => ({
    name: String(group.name),
    tags: (Array.isArray(group.tags) ? group.tags : [])
      .map((name) => String(name))
      .filter((name) => byTag.has(name))
      .map((name) => ({ name, description: descriptions.get(name) ?? "", operations: byTag.get(name)! }))
  }))
}

/** Where Redoc shows an operation of a tag's part. */
const operationHref = (tag: string, operationId: string) => `${REFERENCE_PATH}/${tagSlug(tag)}#tag/${encodeURIComponent(tag)}/operation/${encodeURIComponent(operationId)}`

const indexHtmlOf = (document: OpenApiDocument): string =>
  groupsOf(document)
    .map(
      (group) =>
        `<section class="area"><h3>${escapeHtml(group.name)}</h3>` +
        group.tags
          .map(
            (tag) =>
              `<div class="tag"><h4><a href="${REFERENCE_PATH}/${tagSlug(tag.name)}">${escapeHtml(tag.name)}</a></h4>` +
              (tag.description === "" ? "" : `<p>${inlineHtml(tag.description)}</p>`) +
              `<ul class="operations">${tag.operations
                .map(
                  (op) =>
                    `<li><a href="${operationHref(tag.name, op.operationId)}"><span class="method ${op.method.toLowerCase()}">${op.method}</span> ` +
                    `<code>${escapeHtml(op.path)}</code> ${escapeHtml(op.summary)}${op.deprecated ? ' <span class="deprecated">deprecated</span>' : ""}</a></li>`
                )
                .join("")}</ul></div>`
          )
          .join("") +
        `</section>`
    )
    .join("")

const indexes = new WeakMap<OpenApiDocument, string>()

/** The index of the reference as HTML: per area, per resource tag, each operation linked to its part. Made once per document. */
export const referenceIndexHtml = (document: OpenApiDocument): string => {
  const known = indexes.get(document)
  if (known !== undefined) return known
  const html = indexHtmlOf(document)
  indexes.set(document, html)
  return html
}

// ---------------------------------------------------------------------------------------
// A tag's part of the description

/** The `$ref`s in a value, as `[kind, name]` of `#/components/{kind}/{name}`. */
const refsIn = (value: Json | undefined, found: Array<readonly [string, string]>): void => {
  if (Array.isArray(value)) for (const item of value) refsIn(item, found)
  else if (isObject(value)) {
    if (typeof value.$ref === "string" && value.$ref.startsWith("#/components/")) {
      const [kind = "", name = ""] = value.$ref.slice("#/components/".length).split("/")
      found.push([kind, name])
    }
    for (const child of Object.values(value)) refsIn(child, found)
  }
}

/** The components `paths` refer to, and those they refer to in turn; the security schemes always. */
const componentsFor = (components: JsonObject, paths: JsonObject): JsonObject => {
  const kept: Record<string, Record<string, Json>> = {}
  const pending: Array<readonly [string, string]> = []
  refsIn(paths, pending)
  while (pending.length > 0) {
    const [kind, name] = pending.pop()!
    if (kept[kind]?.[name] !== undefined) continue
    const ofKind = components[kind]
    const component = isObject(ofKind) ? ofKind[name] : undefined
    if (component === undefined) continue
    ;(kept[kind] ??= {})[name] = component
    refsIn(component, pending)
  }
  return { ...kept, ...(components.securitySchemes !== undefined ? { securitySchemes: components.securitySchemes } : {}) }
}

const partOf = (document: OpenApiDocument, tag: string): OpenApiDocument | undefined => {
  const paths: Record<string, Json> = {}
  for (const [path, item] of Object.entries(isObject(document.paths) ? document.paths : {})) {
    if (!isObject(item)) continue
    const ofTag = methods.filter((method) => {
      const operation = item[method]
      return isObject(operation) && Array.isArray(operation.tags) && operation.tags[0] === tag
    })
    if (ofTag.length === 0) continue
    // The path item without the other tags' operations (its `servers` and `parameters` stay).
    paths[path] = Object.fromEntries(Object.entries(item).filter(([key]) => !(methods as ReadonlyArray<string>).includes(key) || ofTag.includes(key as (typeof methods)[number])))
  }
  if (Object.keys(paths).length === 0) return undefined
  const info = isObject(document.info) ? document.info : {}
  const group = (Array.isArray(document["x-tagGroups"]) ? document["x-tagGroups"] : []).filter(isObject).find((g) => Array.isArray(g.tags) && g.tags.includes(tag))
  return {
    ...document,
    info: {
      ...info,
      title: `${String(info.title ?? "")}: ${tag}`,
      description:
        "One part of the reference: the operations on this resource. The introduction (authentication and its two modes, " +
        "idempotency, errors, pagination, rate limits) and the other parts are at [/docs](/docs); the whole description, for tools, " +
        "at [/docs/openapi.json](/docs/openapi.json)."
    },
    tags: (Array.isArray(document.tags) ? document.tags : []).filter((t) => isObject(t) && t.name === tag),
    "x-tagGroups": group === undefined ? [] : [{ name: group.name ?? "", tags: [tag] }],
    paths,
    components: componentsFor(isObject(document.components) ? document.components : {}, paths)
  }
}

/** The tag of a slug in a document, if one has it. */
export const tagOfSlug = (document: OpenApiDocument, slug: string): string | undefined =>
  (Array.isArray(document.tags) ? document.tags : []).filter(isObject).map((t) => String(t.name)).find((name) => tagSlug(name) === slug)

const parts = new WeakMap<OpenApiDocument, Map<string, Uint8Array>>()

/** The part of a tag as JSON bytes, made once per document and tag; `undefined` for a tag without operations. */
export const referencePart = (document: OpenApiDocument, tag: string): Uint8Array | undefined => {
  const made = parts.get(document) ?? new Map<string, Uint8Array>()
  parts.set(document, made)
  const known = made.get(tag)
  if (known !== undefined) return known
  const part = partOf(document, tag)
  if (part === undefined) return undefined
  const bytes = new TextEncoder().encode(JSON.stringify(part))
  made.set(tag, bytes)
  return bytes
}
