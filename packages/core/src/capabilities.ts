/**
 * Capabilities (`<resource>.<action>`), policy templates, access policies and delegation.
 *
 * A credential holds a list of policies. Each policy grants a set of capabilities, either
 * listed or by template, optionally limited to listed resources (at most 1,000 IDs). What a
 * credential may do is the union of its policies.
 */
import { apiError, type ApiError, type DetailItem } from "./errors.js"
import { resourceDefinitions } from "./resources/index.js"

const crud = (resource: string, ...extra: ReadonlyArray<string>) =>
  ["read", "create", "update", "delete", ...extra].map((action) => `${resource}.${action}`)

/** The catalog of capabilities of this release: those below, and read/create/update/delete of every described resource. */
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
  "events.read",
  "operations.read",
  "operations.create",
  "operations.cancel",
  "files.read",
  "files.create",
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
  ...crud("enrollments"),
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
  "reports.read"
]

export const capabilityCatalog: ReadonlyArray<string> = [
  ...new Set([...listedCapabilities, ...resourceDefinitions.flatMap((definition) => crud(definition.plural))])
]

const catalogSet = new Set(capabilityCatalog)
export const isCapability = (name: string): boolean => catalogSet.has(name)

export interface PolicyTemplate {
  readonly id: string
  readonly name: string
  readonly description: string
  readonly capabilities: ReadonlyArray<string>
}

const byAction = (action: string) => capabilityCatalog.filter((c) => c.endsWith(`.${action}`))

export const policyTemplates: ReadonlyArray<PolicyTemplate> = [
  {
    id: "full_access",
    name: "Full access",
    description: "Every capability of the release.",
    capabilities: capabilityCatalog
  },
  {
    id: "read_only",
    name: "Read only",
    description: "Reads every resource; changes nothing. Excludes personal data, answer keys and proofs.",
    capabilities: byAction("read")
  },
  {
    id: "credentials_admin",
    name: "Credentials administrator",
    description: "Issues, changes and revokes credentials, and reads the audit trail.",
    capabilities: capabilityCatalog.filter((c) => c.startsWith("credentials.")).concat(["requests.read", "audit_entries.read"])
  },
  {
    id: "catalog_editor",
    name: "Catalog editor",
    description: "Edits showcases, banners, navigation, products, modules, lessons, exams and taxonomies.",
    capabilities: capabilityCatalog.filter((c) =>
      ["showcases", "banners", "navigation", "products", "modules", "lessons", "attachments", "exams", "taxonomies", "taxonomy_terms", "files"].includes(
        c.split(".")[0]!
      ) && c !== "exams.read_answer_key"
    )
  },
  {
    id: "support_agent",
    name: "Support agent",
    description: "Answers tickets, lesson questions and comments.",
    capabilities: capabilityCatalog.filter((c) =>
      ["tickets", "questions", "comments", "departments", "faqs"].includes(c.split(".")[0]!)
    ).concat(["users.read"])
  },
  {
    id: "integration_events",
    name: "Event integration",
    description: "Reads events and manages webhooks and event streams.",
    capabilities: ["events.read", "operations.read"].concat(capabilityCatalog.filter((c) => c.startsWith("webhooks.")))
  }
]

const templatesById = new Map(policyTemplates.map((t) => [t.id, t]))
export const findTemplate = (id: string): PolicyTemplate | undefined => templatesById.get(id)

/** A policy as stored on a credential (the request form, validated). */
export interface Policy {
  readonly capabilities: ReadonlyArray<string> | null
  readonly template: string | null
  /** Limited to these resource IDs, or to none (`null`: every resource). */
  readonly resources: ReadonlyArray<string> | null
}

export const MAX_POLICY_RESOURCES = 1000

/** What a set of policies allows: per capability, every resource (`"all"`) or a set of IDs. */
export type Grant = ReadonlyMap<string, "all" | ReadonlySet<string>>

export const policyCapabilities = (policy: Policy): ReadonlyArray<string> =>
  policy.template !== null ? (findTemplate(policy.template)?.capabilities ?? []) : (policy.capabilities ?? [])

export const grantOf = (policies: ReadonlyArray<Policy>): Grant => {
  const grant = new Map<string, "all" | Set<string>>()
  for (const policy of policies) {
    for (const capability of policyCapabilities(policy)) {
      const held = grant.get(capability)
      if (held === "all") continue
      if (policy.resources === null) grant.set(capability, "all")
      else {
        const set = held ?? new Set<string>()
        for (const id of policy.resources) set.add(id)
        grant.set(capability, set)
      }
    }
  }
  return grant
}

/** May the holder use `capability`, on `resourceId` when the operation acts on one resource? */
export const allows = (grant: Grant, capability: string, resourceId?: string): boolean => {
  const held = grant.get(capability)
  if (held === undefined) return false
  if (held === "all") return true
  return resourceId === undefined ? held.size > 0 : held.has(resourceId)
}

/** The resources a collection read may show: all, or only these IDs. Access rules come before pagination. */
export const visibleResources = (grant: Grant, capability: string): "all" | ReadonlySet<string> =>
  grant.get(capability) ?? new Set<string>()

/**
 * Delegation never grants more than the issuer holds: every capability requested must be
 * held by the issuer for every resource requested. Returns the itemized excess.
 */
export const checkDelegation = (issuer: Grant, requested: ReadonlyArray<Policy>): ApiError | undefined => {
  const details: Array<DetailItem> = []
  requested.forEach((policy, index) => {
    for (const capability of policyCapabilities(policy)) {
      const held = issuer.get(capability)
      const covered =
        held === "all" ||
        (held !== undefined && policy.resources !== null && policy.resources.every((id) => held.has(id)))
      if (!covered) {
        details.push({ field: `policies[${index}]`, code: "delegation_limit_exceeded", reason: capability })
      }
    }
  })
  return details.length > 0 ? apiError("delegation_limit_exceeded", { details }) : undefined
}
