/**
 * Declarative configuration plans over HTTP (release 3.2.0; open-points "Bulk": `POST
 * /configuration/plans` with `{ manifest }`, `GET /configuration/plans/{plan_id}`, `POST
 * /configuration/plans/{plan_id}/applications`), and `GET /configuration/manifest`, the
 * account's configuration as a manifest. The decisions are in `@syllabus/core`'s
 * bulk/configuration-plans.ts and bulk/configuration-manifest.ts, and in
 * docs/configuration-plans.md; each operation's description repeats what a client needs.
 */
import {
  applyConfigurationPlan,
  createConfigurationPlan,
  exportManifest,
  getConfigurationPlan,
  MAX_MANIFEST_ENTRIES,
  MAX_PLAN_CHANGES,
  PLAN_VALIDITY_MS
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { defineOperation } from "../operation.js"
import { OperationSchema } from "../schemas.js"
import { accepted } from "./operations.js"

const tag = "Bulk"
const validityHours = PLAN_VALIDITY_MS / 3_600_000

const Timestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })
const AnyJson = Schema.Unknown.annotations({ jsonSchema: {} })

const manifestDescription = [
  "A manifest: `{ prune?, showcases?, tags?, custom_fields?, webhooks?, settings?, products? }`. Each list holds entries named by a natural key, never by this account's IDs:",
  "a showcase by `name`, a tag by `name`, a custom field by `key`, a webhook by `url`, a product by `external_id` (with `showcase`, its showcase's name, and optional `modules`, each named by `name` within the product),",
  "a settings group by its group name (`settings: { sharing: { … } }`, the fields of its PATCH without file fields).",
  `At most ${MAX_MANIFEST_ENTRIES} entries per list. A field an entry leaves out is not managed. A list left out is not managed.`,
  "`prune: true` deletes the records of each listed type (and the modules of each product listing `modules`) that no entry names."
].join(" ")

const ManifestBody = Schema.Struct({
  // The body's shape is checked here (422 `validation_failed`); the manifest's content by the plan (422 `plan_invalid`, by path).
  manifest: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({ jsonSchema: { type: "object", description: manifestDescription } })
}).annotations({ identifier: "CreateConfigurationPlanBody" })

const ChangeSchema = Schema.Struct({
  action: Schema.Literal("create", "update", "delete"),
  resource_type: Schema.String.annotations({ description: "`showcase`, `tag`, `custom_field`, `webhook`, `settings`, `product` or `module`." }),
  key: Schema.String.annotations({ description: "The entry's key (a settings group: its name)." }),
  parent_key: Schema.NullOr(Schema.String).annotations({ description: "A module's product (its `external_id`); `null` otherwise." }),
  resource_id: Schema.NullOr(Schema.String).annotations({ description: "The record changed or deleted; `null` for a create." }),
  fields: Schema.Record({ key: Schema.String, value: Schema.Struct({ before: AnyJson, after: AnyJson }) }).annotations({
    description: "Each field the change sets: before (`null` for a create) and after (`null` for a delete)."
  })
})

const PlanSchema = Schema.Struct({
  object: Schema.Literal("configuration_plan"),
  id: Schema.String,
  status: Schema.Literal("planned", "applied", "expired").annotations({
    description: `\`planned\` until applied or until \`expires_at\` (${validityHours} hour after creation), then \`expired\`; \`applied\` once an application started (follow \`operation_id\`).`
  }),
  summary: Schema.Struct({ create: Schema.Int, update: Schema.Int, delete: Schema.Int }),
  changes: Schema.Array(ChangeSchema).annotations({ description: "In the order the application runs them. Empty: the account already matches the manifest." }),
  operation_id: Schema.NullOr(Schema.String).annotations({ description: "The operation of its application." }),
  created_at: Timestamp,
  expires_at: Timestamp,
  applied_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "ConfigurationPlan" })

const params = { plan_id: "plan" } as const

export const configurationPlansRoutes = [
  defineOperation({
    id: "configuration_plans.create",
    method: "POST",
    path: "/configuration/plans",
    summary: "Plan a manifest: the changes that would make the account match it",
    description: [
      "Compares the manifest with the account's current state and records a plan (`pln_`): one change per resource, `create`, `update` (each changed field, before and after) or `delete` (only with `prune: true`), in the order its application runs them: creates and updates of showcases, tags, custom fields, webhooks, settings groups, products, modules; then the deletes, modules first. Nothing is written besides the plan.",
      "",
      manifestDescription,
      "",
      "A manifest that fails validation is 422 `plan_invalid`, each problem itemized by its path in the request (`manifest.products[2].name`): a wrong field, a key twice in a list (reason `duplicate_key`), a product naming a showcase that will not exist (reason `not_found`), a field fixed at creation that differs (a product's `format`, a custom field's `type`: reason `immutable`), more than " +
        `${MAX_PLAN_CHANGES.toLocaleString("en-US")} changes (code \`too_many_items\` on \`manifest\`).`,
      "Reading the state needs the read capability of each listed type (`showcases.read`, …, `settings.read`). Event `configuration_plan.created`."
    ].join("\n"),
    tag,
    capability: "configuration_plans.create",
    body: ManifestBody,
    idempotency: "required",
    success: { status: 201, description: "The plan.", schema: PlanSchema, headers: ["Location"] },
    errors: ["plan_invalid", "permission_denied"],
    handler: ({ body }) =>
      Effect.map(createConfigurationPlan(body), (data) => ({
        status: 201,
        body: { data },
        headers: { location: `/api/v3/configuration/plans/${String(data.id)}` }
      }))
  }),
  defineOperation({
    id: "configuration_plans.get",
    method: "GET",
    path: "/configuration/plans/{plan_id}",
    summary: "Retrieve a configuration plan",
    description: `A plan with its changes. It can be applied for ${validityHours} hour after creation (\`expires_at\`); then its status reads \`expired\`.`,
    tag,
    capability: "configuration_plans.read",
    params,
    idempotency: "none",
    success: { status: 200, description: "The plan.", schema: PlanSchema },
    errors: [],
    handler: ({ path }) => Effect.map(getConfigurationPlan(path.plan_id!), (data) => ({ status: 200, body: { data } }))
  }),
  defineOperation({
    id: "configuration_plans.applications.create",
    method: "POST",
    path: "/configuration/plans/{plan_id}/applications",
    summary: "Apply a configuration plan as an asynchronous operation",
    description: [
      "Starts an operation of type `configuration_plan_application` (202, `Location` of the operation), one item per change in the plan's order, each running what the resource's own route runs (the same checks and events); an item that fails does not stop the others.",
      "",
      "Checked first, nothing queued otherwise: a plan applied before is 409 `state_conflict` (reason `plan_already_applied`); a plan past its `expires_at` is 409 `plan_expired`; a change the caller may not make is 403 `permission_denied` (each change needs its write: `showcases.create`, `products.update`, `settings.update`, …); a record the plan read at another revision now, or a key it creates taken since, is 409 `plan_stale` (compute a new plan).",
      "While the items run, each checks its record again: if the fields the plan compared changed meanwhile, the item fails with `plan_stale`.",
      "Event `configuration_plan.applied` when the application starts; the operation's `operation.completed` or `operation.failed` when it ends. Applying the same manifest again gives an empty plan."
    ].join("\n"),
    tag,
    capability: "configuration_plans.apply",
    params,
    idempotency: "required",
    success: { status: 202, description: "The queued operation.", schema: OperationSchema, headers: ["Location"] },
    errors: ["state_conflict", "plan_expired", "plan_stale", "permission_denied", "operation_backlog_exceeded"],
    handler: ({ path }) => Effect.map(applyConfigurationPlan(path.plan_id!), accepted)
  }),
  defineOperation({
    id: "configuration_plans.manifest.get",
    method: "GET",
    path: "/configuration/manifest",
    summary: "Export the account's configuration as a manifest",
    description:
      "The current configuration as a manifest every list of which is present: showcases, tags, custom fields, webhooks (without their secrets and product filters), the settings values set (not defaults, not files), and the products that have an `external_id` with their modules. Planned and applied in another account, it makes that account's configuration match: a plan computed right after is empty. Without `prune`: add `prune: true` to delete there what this account does not have.",
    tag,
    capability: "configuration_plans.read",
    idempotency: "none",
    success: { status: 200, description: "The manifest.", schema: Schema.Record({ key: Schema.String, value: AnyJson }).annotations({ identifier: "ConfigurationManifest" }) },
    errors: [],
    handler: () => Effect.map(exportManifest(), (data) => ({ status: 200, body: { data } }))
  })
]
