/**
 * Resources of the "legal" group (release 3.2.0): the platform's and the products' legal
 * terms, versioned, and the users' acceptances of them, recorded with their proof
 * (docs/legal.md). The published versions of a term are read through their own routes and
 * registered in registry/resources.ts with the other resources served that way.
 */
import type { ResourceDefinition } from "../records/resource.js"
import { LEGAL_TERM_VERSION_TYPE, legalTerms, TERM_ACCEPTANCE_TYPE } from "./legal-terms.js"
import { termAcceptances } from "./term-acceptances.js"

// Served by their own routes (`@syllabus/http` routes/legal.ts: the proof by the caller, `current` when read).
export const legalResources: ReadonlyArray<ResourceDefinition> = [legalTerms, termAcceptances]

/** The events of the legal resources that are not a whole lifecycle: versions and acceptances are only ever created. */
export const legalEventVerbs: Readonly<Record<string, ReadonlyArray<string>>> = {
  [LEGAL_TERM_VERSION_TYPE]: ["created"],
  [TERM_ACCEPTANCE_TYPE]: ["created"]
}
