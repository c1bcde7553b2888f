/**
 * Showcases: the shelves of the catalog that products are placed on (release 3.1.0).
 * The simplest catalog resource: its whole description is the definition below.
 */
import { Effect, Schema } from "effect"
import { defineResource, equalsFilter } from "../records/resource.js"
import { Enum, Text } from "../records/schema.js"
import { requireFile } from "../uploads/uploads.js"

const Status = Enum("active", "inactive")
const FileId = Schema.String.annotations({ description: "ID of an uploaded file of purpose `image`." })

export const showcases = defineResource({
  type: "showcase",
  idKind: "showcase",
  plural: "showcases",
  path: "/showcases",
  tag: "Catalog",
  fields: {
    name: Schema.String,
    description: Schema.NullOr(Schema.String),
    status: Schema.Literal("active", "inactive"),
    image: Schema.NullOr(Schema.String).annotations({ description: "File ID of the showcase image." })
  },
  create: Schema.Struct({
    name: Text({ min: 1, max: 200 }),
    description: Schema.optional(Schema.NullOr(Text())),
    status: Schema.optional(Status),
    image: Schema.optional(Schema.NullOr(FileId))
  }),
  update: Schema.Struct({
    name: Schema.optional(Text({ min: 1, max: 200 })),
    description: Schema.optional(Schema.NullOr(Text())),
    status: Schema.optional(Status),
    image: Schema.optional(Schema.NullOr(FileId))
  }),
  defaults: (body) =>
    Effect.succeed({ name: body.name, description: body.description ?? null, status: body.status ?? "active", image: body.image ?? null }),
  rules: {
    check: (data, previous) =>
      typeof data.image === "string" && data.image !== previous?.image ? Effect.asVoid(requireFile("image", data.image, ["image"])) : Effect.void
  },
  trash: true,
  replicable: true,
  revision: "string",
  filters: { status: equalsFilter("status", Status) },
  // Newest first unless `sort` says otherwise.
  defaultReversed: true,
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  search: ["name"]
})
