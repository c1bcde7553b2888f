/**
 * Issue 11: property-based requests generated from the served OpenAPI description, against
 * the memory store. See support/suite.ts for the properties and docs/reliability.md
 * ("Fuzzing from the description") for what they found.
 */
import { fuzzStore } from "./support/suite.js"

await fuzzStore("memory")
