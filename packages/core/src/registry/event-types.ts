/**
 * `GET /event-types`: the catalog of the public events of the release (§6): type, version,
 * visibility and payload keys. Derived from the resource descriptions, so a described
 * resource's events are in the catalog without a line more; the events of the use cases
 * outside the machinery (administrators, settings, operations, a webhook's rotation) are
 * declared beside them. The contract suite checks that every event it sees is listed here.
 */
import { EVENT_VERSION } from "../events/events.js"
import { operationFields } from "../operations/operations.js"
import { ADMINISTRATOR_TYPE } from "../access/credentials.js"
import { administratorEventVerbs, administratorFields } from "../people/people-administrators.js"
import { representationFields, type ResourceDefinition } from "../records/resource.js"
import { SETTINGS_TYPE, settingsFields } from "../site/site-settings.js"
import { CERTIFICATE_TEMPLATE_TYPE, certificateTemplateFields } from "../learning/certificate-template.js"
import { CERTIFICATE_TYPE, certificateEventVerbs } from "../learning/certificates.js"
import { enrollmentEventVerbs, ENROLLMENT_TYPE } from "../learning/enrollments.js"
import { TICKET_MESSAGE_TYPE, ticketMessageEventVerbs } from "../support/tickets.js"
import { LESSON_PROGRESS_TYPE, lessonProgressFields } from "../learning/progress.js"
import { POINT_ENTRY_TYPE, pointEntryEventVerbs } from "../learning/gamification.js"
import { legalEventVerbs } from "../legal/legal.js"
import { EMAIL_BOUNCE_TYPE, EMAIL_MESSAGE_TYPE, emailBounceEventVerbs, emailBounceFields, emailMessageEventVerbs, emailMessageFields } from "../mail/outbox.js"
import { DOMAIN_TYPE, domainEventVerbs } from "../account/domains.js"
import { REPLICA_TYPE, replicaEventVerbs } from "../account/replicas.js"
import { SALES_EVENT_TYPE, salesEventEventVerbs } from "../sales/sales-events.js"
import { describedResources } from "./resources.js"
import { EXPORT_TYPE, exportFields } from "../bulk/exports.js"
import { IMPORT_TYPE, importFields } from "./imports.js"
import { CONFIGURATION_PLAN_TYPE, configurationPlanFields } from "../bulk/configuration-plans.js"

export interface EventTypeEntry {
  readonly object: "event_type"
  readonly type: string
  readonly version: number
  readonly visibility: "public"
  readonly resource_type: string
  /** Keys of `data.object` in the payload. */
  readonly payload_keys: ReadonlyArray<string>
}

/**
 * Events beyond the lifecycle of every resource: publications, copies, a secret's rotation,
 * and `reordered` for the resources kept at dense positions (a sibling's move shifts them).
 */
const extraVerbs: Readonly<Record<string, ReadonlyArray<string>>> = {
  product: ["published", "reordered"],
  module: ["published", "reordered"],
  lesson: ["copied", "published", "reordered"],
  banner: ["reordered"],
  navigation_item: ["reordered"],
  exam_question: ["reordered"],
  department: ["reordered"],
  faq: ["reordered"],
  webhook: ["secret_rotated"],
  gateway: ["secret_rotated"],
  // A domain's verification: found (`active`) or not (`failed`).
  [DOMAIN_TYPE]: domainEventVerbs
}

/**
 * Resources whose events are not the whole lifecycle: certificates are only ever issued, point
 * entries only created, and an enrollment is never deleted (it is canceled or expires).
 */
const onlyVerbs: Readonly<Record<string, ReadonlyArray<string>>> = {
  [ENROLLMENT_TYPE]: ["created", "updated", ...enrollmentEventVerbs],
  [CERTIFICATE_TYPE]: certificateEventVerbs,
  [POINT_ENTRY_TYPE]: pointEntryEventVerbs,
  // A ticket's messages are never edited nor removed.
  [TICKET_MESSAGE_TYPE]: ticketMessageEventVerbs,
  // Versions of a legal term and acceptances are only ever created.
  ...legalEventVerbs,
  // A sales event is recorded from a gateway's notification, never changed.
  [SALES_EVENT_TYPE]: salesEventEventVerbs,
  // A replica link is unlinked, never removed.
  [REPLICA_TYPE]: replicaEventVerbs
}

const lifecycle = (definition: ResourceDefinition): ReadonlyArray<string> => onlyVerbs[definition.type] ?? [
  "created",
  "updated",
  ...(definition.trash ? ["trashed", "restored"] : ["deleted"]),
  ...(extraVerbs[definition.type] ?? [])
]

const entry = (resourceType: string, verb: string, keys: ReadonlyArray<string>): EventTypeEntry => ({
  object: "event_type",
  type: `${resourceType}.${verb}`,
  version: EVENT_VERSION,
  visibility: "public",
  resource_type: resourceType,
  payload_keys: [...keys]
})

export const eventTypeCatalog: ReadonlyArray<EventTypeEntry> = [
  ...describedResources
    .filter((definition) => definition.type !== ADMINISTRATOR_TYPE)
    .flatMap((definition) => lifecycle(definition).map((verb) => entry(definition.type, verb, representationFields(definition)))),
  ...administratorEventVerbs.map((verb) => entry(ADMINISTRATOR_TYPE, verb, administratorFields)),
  entry(SETTINGS_TYPE, "updated", settingsFields),
  entry(CERTIFICATE_TEMPLATE_TYPE, "updated", certificateTemplateFields),
  entry(LESSON_PROGRESS_TYPE, "updated", lessonProgressFields),
  ...["completed", "failed", "canceled"].map((verb) => entry("operation", verb, operationFields)),
  ...["created", "completed", "failed"].map((verb) => entry(EXPORT_TYPE, verb, exportFields)),
  ...["created", "completed"].map((verb) => entry(IMPORT_TYPE, verb, importFields)),
  ...["created", "applied"].map((verb) => entry(CONFIGURATION_PLAN_TYPE, verb, configurationPlanFields)),
  ...emailMessageEventVerbs.map((verb) => entry(EMAIL_MESSAGE_TYPE, verb, emailMessageFields)),
  ...emailBounceEventVerbs.map((verb) => entry(EMAIL_BOUNCE_TYPE, verb, emailBounceFields))
].sort((a, b) => (a.type < b.type ? -1 : 1))
