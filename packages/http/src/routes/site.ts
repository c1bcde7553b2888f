/**
 * Operations of the "site" group beyond the derived list/get/create/update/delete: the order
 * of banners, and the settings groups (`GET|PATCH /settings/...`, open-points).
 */
import {
  BannerOrderBody,
  banners,
  getSettings,
  type JsonObject,
  orderBanners,
  type SettingsGroup,
  settingsGroups,
  updateSettings
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { representationSchema } from "../resources.js"

const Timestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

const pascal = (name: string) => name.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase())

/** The representation of a settings group, for OpenAPI. */
const settingsSchema = (group: SettingsGroup): Schema.Schema.AnyNoContext =>
  Schema.Struct({
    object: Schema.Literal("settings"),
    id: Schema.Literal(group.group),
    group: Schema.Literal(group.group),
    ...group.values,
    ...(group.managed?.fields ?? {}),
    defaults: Schema.Struct(group.values).annotations({ description: "The value each field takes until it is set, or when it is set to `null`." }),
    updated_at: Schema.NullOr(Timestamp).annotations({ description: "`null` until the group is first written." }),
    revision: Schema.String.annotations({ description: '`"0"` until the group is first written.' })
  }).annotations({ identifier: `${pascal(group.group)}Settings` }) as unknown as Schema.Schema.AnyNoContext

const settingsOperations = (group: SettingsGroup): ReadonlyArray<Operation> => {
  const schema = settingsSchema(group)
  const reply = ({ data, etag }: { readonly data: JsonObject; readonly etag: string }) => ({ status: 200, body: { data }, headers: { etag } })
  return [
    defineOperation({
      id: `settings.${group.group}.get`,
      method: "GET",
      path: group.path,
      summary: `Get the ${group.title}`,
      description: `Their defaults (revision "0") until first changed. ETag \`W/"settings:${group.group}:<revision>"\`.`,
      tag: "Settings",
      capability: "settings.read",
      idempotency: "none",
      success: { status: 200, description: `The ${group.title}.`, schema, headers: ["ETag"] },
      errors: [],
      handler: () => Effect.map(getSettings(group), reply)
    }),
    defineOperation({
      id: `settings.${group.group}.update`,
      method: "PATCH",
      path: group.path,
      summary: `Change the ${group.title}`,
      description: "Only the fields sent change; `null` restores a field's default. The group has its own revision.",
      tag: "Settings",
      capability: "settings.update",
      body: group.update,
      idempotency: "optional",
      ifMatch: "settings",
      ifMatchId: group.group,
      success: { status: 200, description: `The ${group.title}.`, schema, headers: ["ETag"] },
      errors: group.managed ? ["replica_readonly"] : [],
      handler: ({ body, expectedRevision }) => Effect.map(updateSettings(group, body as JsonObject, expectedRevision), reply)
    })
  ]
}

export const siteRoutes: ReadonlyArray<Operation> = [
  defineOperation({
    id: "banners.order.put",
    method: "PUT",
    path: "/banners/order",
    summary: "Arrange the banners in a new order",
    description:
      "Arrange the banners: `ids` lists every non-trashed banner (active and inactive) exactly once, in the new order; else 422 `order_set_mismatch` and the order is unchanged. Answers every banner, in the new order.",
    tag: "Site",
    capability: "banners.update",
    body: BannerOrderBody,
    idempotency: "optional",
    success: { status: 200, description: "The banners in the new order, all at once.", schema: representationSchema(banners), collection: true },
    errors: ["order_set_mismatch"],
    handler: ({ body }) => Effect.map(orderBanners(body.ids), (result) => ({ status: 200, body: result }))
  }),
  ...settingsGroups.flatMap(settingsOperations)
]
