/**
 * The capability catalog of this release, and the policy templates expanded over it.
 *
 * The catalog is derived from the resource descriptions (read/create/update/delete of every
 * described resource), so it lives here, above the resources and above the access rules:
 * the access rules (`access/policies.ts`) know templates only as patterns, and receive this
 * catalog as the `CapabilityCatalog` service, which the assembling layer provides with
 * `ReleaseCapabilityCatalog`. The functions exported below are that catalog's, for callers
 * that read the release's catalog directly (`GET /capabilities`, `GET /policy-templates`).
 */
import { Layer } from "effect"
import { CapabilityCatalog, makeCapabilityCatalog } from "../access/policies.js"
import { resourceWrites } from "../records/resource.js"
import { resourceDefinitions } from "./resources.js"

const crud = (resource: string, ...extra: ReadonlyArray<string>) =>
  ["read", "create", "update", "delete", ...extra].map((action) => `${resource}.${action}`)

/** The catalog of capabilities of this release: those below, and read and the writes (`resourceWrites`) of every described resource. */
const listedCapabilities: ReadonlyArray<string> = [
  "credentials.read",
  "credentials.create",
  "credentials.update",
  "credentials.revoke",
  "credentials.delete",
  "requests.read",
  "audit_entries.read",
  "usage.read",
  "sandbox.reset",
  "sandbox.trigger",
  "events.read",
  "operations.read",
  "operations.create",
  "operations.cancel",
  "files.read",
  "files.create",
  // Exports (bulk/exports.ts): start one (it also needs the resource's `<plural>.read`) and read them.
  "exports.read",
  "exports.create",
  // Imports (registry/imports.ts): start one (it also needs the write its rows make, e.g. `users.create`) and read them.
  "imports.read",
  "imports.create",
  // Configuration plans (bulk/configuration-plans.ts): compute and read plans, export the manifest; apply one (it also needs the write of each change).
  "configuration_plans.read",
  "configuration_plans.create",
  "configuration_plans.apply",
  ...crud("showcases"),
  ...crud("banners"),
  ...crud("navigation"),
  ...crud("products", "publish"),
  ...crud("modules", "publish"),
  ...crud("lessons"),
  ...crud("exams"),
  "exams.read_answer_key",
  ...crud("taxonomies"),
  ...crud("users"),
  "users.read_personal",
  ...crud("tags"),
  ...crud("custom_fields"),
  ...crud("administrators"),
  "certificate_templates.read",
  "certificate_templates.update",
  "certificates.read",
  // A learner's balance and ledger (`GET /users/{user_id}/points`, `.../points/entries`); the rules are `gamification_rules.*`.
  "points.read",
  ...crud("questions"),
  "questions.reopen",
  "questions.pin",
  ...crud("comments"),
  ...crud("tickets"),
  ...crud("departments"),
  ...crud("faqs"),
  ...crud("deliveries"),
  ...crud("gateways"),
  "sales_events.read",
  ...crud("legal_terms"),
  "legal_terms.read_proof",
  ...crud("settings"),
  ...crud("domains"),
  ...crud("replicas"),
  ...crud("webhooks"),
  "reports.read",
  // Mail (docs/email.md): send a user's access email and read its status; ignore an email bounce (read in the reports).
  "access_emails.read",
  "access_emails.create",
  "email_bounces.update"
]

export const capabilityCatalog: ReadonlyArray<string> = [
  ...new Set([
    ...listedCapabilities,
    ...resourceDefinitions.flatMap((definition) => ["read", ...resourceWrites(definition)].map((action) => `${definition.plural}.${action}`))
  ])
]

/** This release's catalog, with the policy templates expanded over it. */
const release = makeCapabilityCatalog(capabilityCatalog)

/** The release's catalog as the `CapabilityCatalog` service, for the assembling layer. */
export const ReleaseCapabilityCatalog: Layer.Layer<CapabilityCatalog> = Layer.succeed(CapabilityCatalog, release)

export const policyTemplates = release.templates
export const isCapability = release.isCapability
export const findTemplate = release.findTemplate
export const policyCapabilities = release.policyCapabilities
export const grantOf = release.grantOf
export const checkDelegation = release.checkDelegation
