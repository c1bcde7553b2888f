/** Tag groups: named sets of tags (3.3.1). */
import { Effect, Schema } from "effect"
import { defineResource } from "../resource.js"
import { Text } from "../schema.js"

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
  search: ["name"]
})
