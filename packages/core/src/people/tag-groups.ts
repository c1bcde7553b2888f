/** Tag groups: named sets of tags (3.3.1). */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { apiError, writeUnavailable } from "../errors/errors.js"
import { Records } from "../ports/store.js"
import { defineResource } from "../records/resource.js"
import { Text } from "../records/schema.js"

export const tagGroups = defineResource({
  type: "tag_group",
  idKind: "tag_group",
  plural: "tag_groups",
  path: "/tag-groups",
  tag: "People",
  fields: {
    name: Schema.String,
    description: Schema.NullOr(Schema.String)
  },
  create: Schema.Struct({ name: Text({ min: 1, max: 200 }), description: Schema.optional(Schema.NullOr(Text())) }),
  update: Schema.Struct({ name: Schema.optional(Text({ min: 1, max: 200 })), description: Schema.optional(Schema.NullOr(Text())) }),
  defaults: (body) => Effect.succeed({ name: body.name, description: body.description ?? null }),
  unique: ["name"],
  trash: false,
  revision: "string",
  sorts: [
    { name: "name", field: "name", kind: "text" },
    { name: "created_at", field: "id", kind: "text" }
  ],
  search: ["name"],
  rules: {
    // The tags of a removed group stay, without a group (as a Shopify collection's products do).
    afterDelete: (group) =>
      Effect.gen(function* () {
        const caller = yield* Caller
        const records = yield* Records
        const grouped = yield* records.list(caller.tenant, "tag", {
          where: [{ field: "tag_group_id", op: "eq", value: group.id }],
          sort: { field: "id", kind: "text", direction: "asc" },
          limit: 10_000
        })
        yield* Effect.forEach(grouped, (tag) => records.update(caller.tenant, "tag", tag.id, { ...tag.data, tag_group_id: null }))
      }).pipe(Effect.mapError(writeUnavailable))
  }
})
