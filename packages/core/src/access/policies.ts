/**
 * Capabilities (`<resource>.<action>`), policy templates, access policies and delegation.
 *
 * A credential holds a list of policies. Each policy grants a set of capabilities, either
 * listed or by template, optionally limited to listed resources (at most 1,000 IDs). What a
 * credential may do is the union of its policies.
 *
 * The catalog of capability names is not known here: it is derived from the resource
 * descriptions (`registry/capabilities.ts`), which sit above the access rules. Templates are
 * therefore written as patterns over capability names, and whatever needs the catalog (a
 * template's capabilities, a check of a requested name) takes a `CapabilityCatalogShape`: the
 * `CapabilityCatalog` service, provided by the assembling layer.
 */
import { Context } from "effect"
import { apiError, type ApiError, type DetailItem } from "../errors/errors.js"

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

/** May the holder use `capability`, on `resourceId` when the operation acts on one resource? */
export const allows = (grant: Grant, capability: string, resourceId?: string): boolean => {
  const held = grant.get(capability)
  if (held === undefined) return false
  if (held === "all") return true
  return resourceId === undefined ? held.size > 0 : held.has(resourceId)
}

/** Does the holder of `capability` hold it for every record, or at least for all of `resources` (null: every record)? */
export const covers = (grant: Grant, capability: string, resources: ReadonlyArray<string> | null): boolean => {
  const held = grant.get(capability)
  return held === "all" || (held !== undefined && resources !== null && resources.every((id) => held.has(id)))
}

/** The resources a collection read may show: all, or only these IDs. Access rules come before pagination. */
export const visibleResources = (grant: Grant, capability: string): "all" | ReadonlySet<string> =>
  grant.get(capability) ?? new Set<string>()

// ---------------------------------------------------------------------------------------
// Policy templates

/** A policy template as served (`GET /policy-templates`): its patterns expanded over the catalog. */
export interface PolicyTemplate {
  readonly id: string
  readonly name: string
  readonly description: string
  readonly capabilities: ReadonlyArray<string>
}

/**
 * A template as written. Each pattern is `*` (every capability), `<resource>.*`, `*.<action>`
 * or one capability name. The template's capabilities are those of the catalog each pattern
 * matches, pattern after pattern (the catalog's order within one), each once, less `except`.
 */
interface TemplatePatterns {
  readonly id: string
  readonly name: string
  readonly description: string
  readonly patterns: ReadonlyArray<string>
  readonly except?: ReadonlyArray<string>
}

const templatePatterns: ReadonlyArray<TemplatePatterns> = [
  {
    id: "full_access",
    name: "Full access",
    description: "Every capability of the release.",
    patterns: ["*"]
  },
  {
    id: "read_only",
    name: "Read only",
    description: "Reads every resource; changes nothing. Excludes personal data, answer keys and proofs.",
    // `*.read` leaves out `users.read_personal`, `exams.read_answer_key` and `legal_terms.read_proof`.
    patterns: ["*.read"]
  },
  {
    id: "credentials_admin",
    name: "Credentials administrator",
    description: "Issues, changes and revokes credentials, and reads the audit trail.",
    patterns: ["credentials.*", "requests.read", "audit_entries.read"]
  },
  {
    id: "catalog_editor",
    name: "Catalog editor",
    description: "Edits showcases, banners, navigation, products, modules, lessons, exams, taxonomies and certificate templates.",
    patterns: [
      "files.*",
      "showcases.*",
      "banners.*",
      "navigation.*",
      "products.*",
      "modules.*",
      "lessons.*",
      "exams.*",
      "exam_questions.*",
      "taxonomies.*",
      "attachments.*",
      "taxonomy_terms.*",
      "certificate_templates.*",
      "release_rules.*"
    ],
    except: ["exams.read_answer_key"]
  },
  {
    id: "support_agent",
    name: "Support agent",
    description: "Answers tickets, lesson questions and comments, sends users their access emails and handles email bounces.",
    patterns: ["questions.*", "comments.*", "tickets.*", "ticket_messages.*", "departments.*", "faqs.*", "users.read", "products.read", "access_emails.*", "email_bounces.*"]
  },
  {
    id: "legal_manager",
    name: "Legal manager",
    description: "Publishes the platform's and the products' legal terms, records acceptances and reads them with their proofs.",
    patterns: ["legal_terms.*", "term_acceptances.*", "users.read"]
  },
  {
    id: "sales_manager",
    name: "Sales manager",
    description: "Sets up what the account sells (deliveries, gateways, funnels), reads its sales events, and applies a delivery's tags to its buyers.",
    // Reads what a delivery names (products, tags) and whom it reaches (users, enrollments), and the operations it starts.
    patterns: ["deliveries.*", "gateways.*", "sales_events.*", "funnels.*", "products.read", "tags.read", "users.read", "enrollments.read", "operations.read"]
  },
  {
    id: "domain_manager",
    name: "Domain manager",
    description: "Adds and verifies the account's custom domains, chooses the primary one and removes them.",
    patterns: ["domains.*"]
  },
  {
    id: "replica_manager",
    name: "Replica manager",
    description: "Shares products with other accounts (replica links: create, change, unlink, accept one from another account) and follows their copy operations.",
    patterns: ["replicas.*", "products.read", "operations.read"]
  },
  {
    id: "integration_events",
    name: "Event integration",
    description: "Reads events and manages webhooks and event streams.",
    patterns: ["events.read", "operations.read", "webhooks.*"]
  },
  {
    id: "data_exporter",
    name: "Data exporter",
    description: "Exports collections to files (CSV, JSON lines) and downloads them; reads every resource. Personal data is left out of exports unless `users.read_personal` is added.",
    // `*.read` leaves out `users.read_personal`: an export of users has null personal columns.
    patterns: ["exports.*", "*.read"]
  },
  {
    id: "data_importer",
    name: "Data importer",
    description:
      "Imports files of records (CSV, JSON lines, XLSX: users, tags, products, enrollments, custom fields, a user's tags), uploading them first, and follows the import's operation. Each row is the create it makes, so the creates of the targets are included.",
    // A row runs the target's own create (`users.update` for tag applications); files to upload the source.
    patterns: ["imports.*", "files.*", "operations.read", "users.create", "users.update", "users.read", "tags.create", "tags.read", "products.create", "products.read", "enrollments.create", "enrollments.read", "custom_fields.create", "custom_fields.read"]
  },
  {
    id: "configuration_manager",
    name: "Configuration manager",
    description:
      "Plans and applies declarative configuration manifests (showcases, tags, custom fields, webhooks, settings groups, products and their modules) and exports the account's manifest.",
    // Applying a plan runs each change's own write, so the writes of every type a manifest holds are needed.
    patterns: ["configuration_plans.*", "showcases.*", "tags.*", "custom_fields.*", "webhooks.*", "settings.*", "products.*", "modules.*", "operations.read"],
    except: ["products.publish", "modules.publish"]
  }
]

/** Does a capability name match a template pattern? */
const matchesPattern = (pattern: string, capability: string): boolean => {
  if (pattern === "*") return true
  if (pattern.startsWith("*.")) return capability.endsWith(pattern.slice(1))
  if (pattern.endsWith(".*")) return capability.startsWith(pattern.slice(0, -1))
  return capability === pattern
}

const expandTemplate = (template: TemplatePatterns, catalog: ReadonlyArray<string>): PolicyTemplate => {
  const excluded = new Set(template.except ?? [])
  const capabilities = new Set<string>()
  for (const pattern of template.patterns) {
    for (const capability of catalog) {
      if (matchesPattern(pattern, capability) && !excluded.has(capability)) capabilities.add(capability)
    }
  }
  return { id: template.id, name: template.name, description: template.description, capabilities: [...capabilities] }
}

// ---------------------------------------------------------------------------------------
// The catalog of a release, and what depends on it

/** The capabilities of a release, its templates expanded over them, and the rules that need both. */
export interface CapabilityCatalogShape {
  /** Every capability name of the release, in the order `GET /capabilities` lists them. */
  readonly capabilities: ReadonlyArray<string>
  readonly templates: ReadonlyArray<PolicyTemplate>
  readonly isCapability: (name: string) => boolean
  readonly findTemplate: (id: string) => PolicyTemplate | undefined
  /** The capabilities a policy grants: its own list, or its template's. */
  readonly policyCapabilities: (policy: Policy) => ReadonlyArray<string>
  /**
   * What a list of policies grants. `version` names the list's content where the caller knows
   * one that changes whenever the list may (a stored credential's id and revision): its grant
   * is then computed once.
   */
  readonly grantOf: (policies: ReadonlyArray<Policy>, version?: string) => Grant
  /**
   * Delegation never grants more than the issuer holds: every capability requested must be
   * held by the issuer for every resource requested. Returns the itemized excess.
   */
  readonly checkDelegation: (issuer: Grant, requested: ReadonlyArray<Policy>) => ApiError<"delegation_limit_exceeded"> | undefined
}

/** The capability catalog of the running release (see `registry/capabilities.ts`). */
export class CapabilityCatalog extends Context.Tag("@syllabus/core/CapabilityCatalog")<
  CapabilityCatalog,
  CapabilityCatalogShape
>() {}

/** How many grants by version a catalog keeps (one per credential in use is plenty). */
const VERSIONED_GRANTS_KEPT = 10_000

export const makeCapabilityCatalog = (capabilities: ReadonlyArray<string>): CapabilityCatalogShape => {
  const names = new Set(capabilities)
  const templates = templatePatterns.map((template) => expandTemplate(template, capabilities))
  const templatesById = new Map(templates.map((t) => [t.id, t]))
  const findTemplate = (id: string): PolicyTemplate | undefined => templatesById.get(id)

  const policyCapabilities = (policy: Policy): ReadonlyArray<string> =>
    policy.template !== null ? (findTemplate(policy.template)?.capabilities ?? []) : (policy.capabilities ?? [])

  const computeGrant = (policies: ReadonlyArray<Policy>): Grant => {
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

  // Grants of stored policy lists. A frozen list (the memory store hands out its stored,
  // frozen values) cannot change, so its grant is computed once; weak keys, so a list dropped
  // by the store takes its grant with it.
  const frozenGrants = new WeakMap<object, Grant>()
  // Grants by version (a PostgreSQL read gives a new list on every request), the oldest
  // dropped past the bound.
  const versionedGrants = new Map<string, Grant>()
  const grantOf = (policies: ReadonlyArray<Policy>, version?: string): Grant => {
    if (!Object.isFrozen(policies)) {
      if (version === undefined) return computeGrant(policies)
      const known = versionedGrants.get(version)
      if (known !== undefined) return known
      const grant = computeGrant(policies)
      if (versionedGrants.size >= VERSIONED_GRANTS_KEPT) versionedGrants.delete(versionedGrants.keys().next().value!)
      versionedGrants.set(version, grant)
      return grant
    }
    const known = frozenGrants.get(policies)
    if (known !== undefined) return known
    const grant = computeGrant(policies)
    frozenGrants.set(policies, grant)
    return grant
  }

  const checkDelegation = (issuer: Grant, requested: ReadonlyArray<Policy>): ApiError<"delegation_limit_exceeded"> | undefined => {
    const details: Array<DetailItem> = []
    requested.forEach((policy, index) => {
      for (const capability of policyCapabilities(policy)) {
        if (!covers(issuer, capability, policy.resources)) {
          details.push({ field: `policies[${index}]`, code: "delegation_limit_exceeded", reason: capability })
        }
      }
    })
    return details.length > 0 ? apiError("delegation_limit_exceeded", { details }) : undefined
  }

  return {
    capabilities,
    templates,
    isCapability: (name) => names.has(name),
    findTemplate,
    policyCapabilities,
    grantOf,
    checkDelegation
  }
}
