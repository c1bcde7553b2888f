/**
 * The account's custom domains (release 3.2.0; open-points routes `/domains`,
 * `/domains/{domain_id}`, `POST /domains/{domain_id}/verifications`). Served from their
 * description (`describedOperations`) with the decisions in each operation's text
 * (docs/domains.md), and the verification, which reads DNS through the `DnsResolver` port
 * before its own unit of work (`verifyDomain`): a network call never holds a transaction open.
 */
import { domains, resourceEtag, resourceView, verifyDomain } from "@syllabus/core"
import { Effect } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { describedOperations, representationSchema } from "../resources.js"

const tag = "Account"

const productionNote =
  "Domains belong to the account's production environment: the sandbox has none (its list is empty, a create there is 422 `domain_rule_violation`, reason `sandbox_environment`), and the sandbox reset leaves them alone."

const domainOperations = describedOperations(domains, tag, {
  "domains.list": {
    summary: "List the account's custom domains",
    description: `Oldest first unless \`sort\` says otherwise (\`hostname\`: alphabetical). \`status\` and \`primary\` narrow the list; \`q\` searches the host name. ${productionNote}`
  },
  "domains.get": { summary: "Retrieve a custom domain", description: "With its verification challenge: the TXT record to publish." },
  "domains.create": {
    summary: "Add a custom domain, pending verification",
    description:
      "`hostname` is a DNS host name of at least two labels, stored in lower case (a trailing dot dropped): an IP address or a malformed name is 422 `validation_failed` on `hostname`; the platform's own host or a name under it is 422 `domain_rule_violation` (reason `platform_host`). A host name is unique across every account: one already held, here or elsewhere, is 409 `already_exists` on `hostname` (removing a domain frees its name at once). " +
      "The domain starts `pending`, not primary, with its challenge in `verification`: publish a TXT record named `verification.record_name` (`_syllabus-challenge.<hostname>`) holding `verification.record_value`, then `POST /domains/{domain_id}/verifications`. " +
      productionNote,
    errors: ["domain_rule_violation"]
  },
  "domains.update": {
    summary: "Make a custom domain the primary one",
    description:
      "Only `primary` changes (the host name never does: add the new one and remove the old). `primary: true` on an active domain makes it the address administrators sign in on (human mode's sign-in pages); the previous primary is no longer, in the same unit of work (its own `domain.updated`). On a domain that is not active: 422 `domain_rule_violation`, reason `not_active`. `primary: false` on the primary: reason `primary_required` (make another domain primary instead); on another domain it changes nothing.",
    errors: ["domain_rule_violation"]
  },
  "domains.delete": {
    summary: "Remove a custom domain",
    description:
      "Removed for good (no trash), its host name free at once for any account, event `domain.deleted`. The primary domain cannot be removed while another domain is active: 422 `domain_rule_violation`, reason `primary_domain` (make another one primary first). The last active domain can: sign-in falls back to the subdomain.",
    errors: ["domain_rule_violation"]
  }
})

const verificationOperation = defineOperation({
  id: "domains.verifications.create",
  method: "POST",
  path: "/domains/{domain_id}/verifications",
  summary: "Verify a custom domain: look up its DNS TXT challenge",
  description: [
    "Looks up the TXT records of `verification.record_name` and answers the domain as the lookup left it (200, whatever the outcome):",
    "",
    "- **Found** (a TXT record holding exactly `verification.record_value`): `status` `active`, `verified_at` set, event `domain.verified`. The first domain of the account to become active is made primary.",
    "- **Not found**: `status` `failed`, event `domain.failed`, with `verification.failure_reason`: `record_not_found` (no such name or no TXT record), `record_mismatch` (TXT records, none with the value), `lookup_failed` (DNS gave no answer in time). Fix the record and verify again: a failed domain may become active later.",
    "",
    "`verification.checked_at` is the lookup's time. A domain already active is 422 `invalid_transition` (reason `from_active`): it stays active. DNS changes take a while to reach every resolver: a failure right after publishing the record is common, and a later verification succeeds.",
    "",
    "`Idempotency-Key` is required: a retry with the same key answers the recorded outcome without looking up again."
  ].join("\n"),
  tag,
  capability: "domains.update",
  scopedBy: "domain_id",
  params: { domain_id: "domain" },
  // The DNS lookup runs before the unit of work that records its outcome (`verifyDomain`).
  unitOfWork: "handler",
  idempotency: "required",
  success: { status: 200, description: "The domain after the verification.", schema: representationSchema(domains), headers: ["ETag"] },
  errors: ["invalid_transition"],
  handler: ({ path }) =>
    Effect.map(verifyDomain(path.domain_id!), (record) => ({
      status: 200,
      body: { data: resourceView(domains, record) },
      headers: { etag: resourceEtag(domains, record) }
    }))
})

export const domainsRoutes: ReadonlyArray<Operation> = [...domainOperations, verificationOperation]
