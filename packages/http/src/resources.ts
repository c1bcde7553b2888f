/**
 * The routes of a described resource (`ResourceDefinition` of `@syllabus/core`): list, get,
 * create, update (restore from the trash included) and delete, with their query, bodies,
 * capabilities, scopes, ETags and OpenAPI schemas derived from the one description.
 */
import {
  type ApiError,
  Caller,
  capabilityOf,
  createResource,
  deleteResource,
  getResource,
  isPlanLimited,
  type JsonObject,
  listResources,
  type ParentDefinition,
  planLimitNote,
  type ResourceDefinition,
  resourceEtag,
  Records,
  resourceView,
  scopedInCore,
  updateResource
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation, type Reply } from "./operation.js"
import { pageLimit, pageQuery } from "./query.js"

const Timestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

const pascal = (name: string) => name.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase())

/** The chain of parents, outermost first. */
const ancestry = (parent: ParentDefinition | undefined): ReadonlyArray<ParentDefinition> =>
  parent ? [...ancestry(parent.parent), parent] : []

/** The representation's schema, for OpenAPI. */
export const representationSchema = (definition: ResourceDefinition): Schema.Schema.AnyNoContext =>
  Schema.Struct({
    object: Schema.Literal(definition.type),
    id: Schema.String,
    ...(definition.parent ? { [definition.parent.field]: Schema.String } : {}),
    ...definition.fields,
    created_at: Timestamp,
    updated_at: Timestamp,
    ...(definition.trash ? { deleted: Schema.Boolean } : {}),
    revision: definition.revision === "string" ? Schema.String : Schema.Int
  }).annotations({ identifier: pascal(definition.type) }) as unknown as Schema.Schema.AnyNoContext

export const itemParam = (definition: ResourceDefinition) => `${definition.type}_id`

const pathIds = (path: Readonly<Record<string, string>>): Readonly<Record<string, string | undefined>> => path

export const resourceOperations = (definition: ResourceDefinition): ReadonlyArray<Operation> => {
  const parents = ancestry(definition.parent)
  const parentParams = Object.fromEntries(parents.map((p) => [p.field, p.idKind]))
  const item = itemParam(definition)
  const itemPath = `${definition.path}/{${item}}`
  const params = { ...parentParams, [item]: definition.idKind }
  // A resource-limited policy names records: the pipeline checks the path's ID (a nested resource's
  // outermost parent, else the record's own), unless the resource has owners, whose records the
  // core checks once loaded (`scopedInCore`).
  const inCore = scopedInCore(definition)
  const scope = inCore ? undefined : parents[0]?.field
  const itemScope = inCore ? undefined : (scope ?? item)
  const client = { checkScope: true } as const
  const representation = representationSchema(definition)
  const tag = definition.tag
  // A type the account's plan may cap: its create (and restore) may answer 409 `plan_limit_reached`.
  const planLimit = isPlanLimited(definition.type) ? (["plan_limit_reached"] as const) : []
  const planNote = planLimitNote(definition.type)
  const { plural } = definition
  const etagged = (record: Parameters<typeof resourceEtag>[1]) => ({ etag: resourceEtag(definition, record) })
  const location = (path: Readonly<Record<string, string>>, id: string) =>
    `/api/v3${definition.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => path[name] ?? "")}/${id}`

  const filters = Object.fromEntries(Object.entries(definition.filters ?? {}).map(([name, f]) => [name, Schema.optional(f.schema)]))
  const ListQuery: Schema.Schema.AnyNoContext = Schema.Struct({
    ...pageQuery(...definition.sorts.map((s) => s.name)),
    ...(definition.trash ? { deleted: Schema.optional(Schema.Literal("true", "false")) } : {}),
    ...(definition.search ? { q: Schema.optional(Schema.String.pipe(Schema.maxLength(200))) } : {}),
    ...filters
  }) as unknown as Schema.Schema.AnyNoContext
  const UpdateBody = definition.trash
    ? (Schema.extend(
        definition.update as unknown as Schema.Struct<Schema.Struct.Fields>,
        Schema.Struct({ deleted: Schema.optional(Schema.Boolean) })
      ) as unknown as Schema.Schema.AnyNoContext)
    : definition.update

  const replaced = new Set(definition.replacedRoutes ?? [])
  const derived: ReadonlyArray<readonly ["list" | "get" | "create" | "update" | "delete", Operation]> = [
    ["list", defineOperation({
      id: `${plural}.list`,
      method: "GET",
      path: definition.path,
      summary: `List ${plural.replaceAll("_", " ")}`,
      ...(definition.trash ? { description: "`deleted=true` lists the trash instead." } : {}),
      tag,
      capability: capabilityOf(definition, "read"),
      ...(scope ? { scopedBy: scope } : {}),
      params: parentParams,
      query: ListQuery,
      idempotency: "none",
      success: { status: 200, description: `A page of ${plural.replaceAll("_", " ")}.`, schema: representation, collection: true },
      errors: ["invalid_cursor"],
      handler: ({ path, query }) =>
        Effect.gen(function* () {
          const { limit, cursor, sort, deleted, q, ...rest } = query as Record<string, string | undefined>
          const result = yield* listResources(definition, {
            parentIds: pathIds(path),
            limit: pageLimit(limit),
            cursor,
            sort,
            deleted: deleted === "true",
            q,
            filters: rest
          })
          return { status: 200, body: result }
        })
    })],
    ["get", defineOperation({
      id: `${plural}.get`,
      method: "GET",
      path: itemPath,
      summary: `Retrieve a ${definition.type.replaceAll("_", " ")}.`,
      tag,
      capability: capabilityOf(definition, "read"),
      ...(itemScope ? { scopedBy: itemScope } : {}),
      params,
      idempotency: "none",
      success: { status: 200, description: "The resource.", schema: representation, headers: ["ETag"] },
      errors: [],
      handler: ({ path }) =>
        getResource(definition, pathIds(path), path[item]!, client).pipe(
          Effect.map((record) => ({ status: 200, body: { data: resourceView(definition, record) }, headers: etagged(record) }))
        )
    })],
    ["create", defineOperation({
      id: `${plural}.create`,
      method: "POST",
      path: definition.path,
      summary: `Create a ${definition.type.replaceAll("_", " ")}.`,
      ...(planNote ? { description: planNote } : {}),
      tag,
      capability: capabilityOf(definition, "create"),
      ...(scope ? { scopedBy: scope } : {}),
      params: parentParams,
      body: definition.create,
      idempotency: "required",
      success: { status: 201, description: "The new resource.", schema: representation, headers: ["Location", "ETag"] },
      errors: [...(definition.unique ? (["already_exists"] as const) : []), ...planLimit, ...(definition.writeErrors ?? [])],
      handler: ({ path, body }) =>
        createResource(definition, pathIds(path), body, client).pipe(
          Effect.map((record) => ({
            status: 201,
            body: { data: resourceView(definition, record) },
            headers: { location: location(path, record.id), ...etagged(record) }
          }))
        )
    })],
    ["update", defineOperation({
      id: `${plural}.update`,
      method: "PATCH",
      path: itemPath,
      summary: `Change a ${definition.type.replaceAll("_", " ")}`,
      description: `Only the fields sent change; \`null\` clears a nullable field.${
        definition.trash ? " `deleted: false` restores it from the trash." : ""
      }${definition.trash && planNote ? ` ${planNote}` : ""}`,
      tag,
      capability: capabilityOf(definition, "update"),
      ...(itemScope ? { scopedBy: itemScope } : {}),
      params,
      body: UpdateBody,
      idempotency: "optional",
      ifMatch: definition.type,
      success: { status: 200, description: "The resource.", schema: representation, headers: ["ETag"] },
      errors: [
        ...(definition.unique ? (["already_exists"] as const) : []),
        ...(definition.replicable ? (["replica_readonly"] as const) : []),
        ...(definition.trash ? planLimit : []),
        ...(definition.writeErrors ?? [])
      ],
      handler: ({ path, body, expectedRevision }) =>
        updateResource(definition, pathIds(path), path[item]!, body as never, expectedRevision, client).pipe(
          Effect.map((record) => ({ status: 200, body: { data: resourceView(definition, record) }, headers: etagged(record) }))
        )
    })],
    ["delete", defineOperation({
      id: `${plural}.delete`,
      method: "DELETE",
      path: itemPath,
      summary: definition.trash
        ? `Move a ${definition.type.replaceAll("_", " ")} to the trash.`
        : `Remove a ${definition.type.replaceAll("_", " ")}.`,
      tag,
      capability: capabilityOf(definition, "delete"),
      ...(itemScope ? { scopedBy: itemScope } : {}),
      params,
      idempotency: "optional",
      success: definition.trash
        ? { status: 200, description: "The resource, `deleted: true`.", schema: representation }
        : { status: 204, description: "Removed." },
      errors: [...(definition.replicable ? (["replica_readonly"] as const) : []), ...(definition.writeErrors ?? [])],
      handler: ({ path }) =>
        deleteResource(definition, pathIds(path), path[item]!, client).pipe(
          Effect.map((record) =>
            record ? { status: 200, body: { data: resourceView(definition, record) }, headers: etagged(record) } : { status: 204, body: null }
          )
        )
    })]
  ]
  return derived.filter(([route]) => !replaced.has(route)).map(([, operation]) => operation)
}

/** How a caller sees records of a resource (e.g. personal data or an answer key only with their capability). */
export type RecordsView = (items: ReadonlyArray<JsonObject>) => Effect.Effect<ReadonlyArray<JsonObject>, ApiError, Caller | Records>

/** The reply's `data`, one resource or a page of them, as the view shows it. */
const viewReply = (reply: Reply, view: RecordsView): Effect.Effect<Reply, ApiError, Caller | Records> => {
  const body = reply.body
  if (body === null || typeof body !== "object" || Array.isArray(body) || !("data" in body)) return Effect.succeed(reply)
  const data = (body as JsonObject).data
  if (Array.isArray(data)) return Effect.map(view(data as ReadonlyArray<JsonObject>), (items) => ({ ...reply, body: { ...body, data: items } }))
  if (data === null || typeof data !== "object") return Effect.succeed(reply)
  return Effect.map(view([data as JsonObject]), ([item]) => ({ ...reply, body: { ...body, data: item ?? null } }))
}

/** The operation with its answers shown through `view`. */
export const withView =
  (view: RecordsView) =>
  (operation: Operation): Operation => ({
    ...operation,
    handler: (input) => Effect.flatMap(operation.handler(input), (reply) => viewReply(reply, view))
  })

/** What a route file says of a derived operation it serves: its own words, and where they differ its ID, capability and errors. */
export interface OperationText {
  readonly summary: string
  /** Put before the derived description. */
  readonly description?: string
  /** Codes its rules answer besides the derived ones. */
  readonly errors?: Operation["errors"]
  /** The operation ID, when the derived one (`<plural>.<action>`) is not the one served. */
  readonly id?: string
  /** The capability, when the derived one (`<plural>.read`, …) is not the one required. */
  readonly capability?: string
}

/**
 * The derived operations of a description that serves its routes itself (`replacedRoutes`),
 * those named in `texts`, with their words, under `tag`.
 */
export const describedOperations = (definition: ResourceDefinition, tag: string, texts: Readonly<Record<string, OperationText>>): ReadonlyArray<Operation> =>
  resourceOperations({ ...definition, replacedRoutes: [] })
    .filter((operation) => texts[operation.id] !== undefined)
    .map((operation) => {
      const text = texts[operation.id]!
      const description = [text.description, operation.description].filter((d) => d !== undefined).join(" ")
      return {
        ...operation,
        id: text.id ?? operation.id,
        capability: text.capability ?? operation.capability,
        summary: text.summary,
        ...(description !== "" ? { description } : {}),
        errors: [...operation.errors, ...(text.errors ?? [])],
        tag
      }
    })
