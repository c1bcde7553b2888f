/**
 * The tags of the description (releases 3.3.1 and 3.3.2): each operation carries the tag of
 * the resource it acts on (3.3.2, "finer resource tags"), and `x-tagGroups` gathers those tags
 * by area (3.3.1, the tag groups extension), the areas of §1.
 *
 * Both are derived from the operation itself, so a new route is tagged without editing this
 * file: the resource tag from the first segment of its operation ID (`products.publications.create`
 * → Products), the area from its `tag`. What a human writes here is each tag's description
 * and the group of each area; a test fails when a tag in use has no written description.
 */
import type { Operation } from "./operation.js"

interface TagText {
  /** The tag's name, when the operation ID's segment does not read well as one. */
  readonly name?: string
  readonly description: string
}

/** By the first segment of the operation ID. */
const resourceTags: Readonly<Record<string, TagText>> = {
  credentials: {
    description: "API credentials: their secrets, modes, access policies, and the administrators that may act through them in human mode."
  },
  policy_templates: { description: "Named sets of capabilities a credential's policy can refer to." },
  capabilities: { description: "The contract release served, its capability catalog and the deprecated operations." },
  openapi: { name: "Description", description: "This OpenAPI description, always of the latest release." },
  showcases: { description: "Shelves of the storefront that group products; they can be trashed and restored." },
  products: { description: "Courses and blogs (`format`), their publication and their order within a showcase." },
  modules: { description: "The modules of a product, and their publication with everything nested in them." },
  lessons: { description: "The lessons of a product: their content, copies and taxonomy terms." },
  attachments: { description: "The files attached to a lesson, replaced as an ordered set." },
  taxonomies: { description: "The taxonomies of a blog product (categories and the like)." },
  taxonomy_terms: { description: "The terms of a taxonomy, given to lessons." },
  banners: { description: "The banners of the storefront, and their order." },
  navigation: { description: "The navigation menu of the storefront." },
  custom_fields: { description: "Extra fields the account defines on its users." },
  users: { description: "The learners of the account; personal data is shown only with `users.read_personal`." },
  tags: { description: "Labels given to users; a tag some user holds cannot be removed." },
  administrators: { description: "The people who administer the account, and their second factor." },
  settings: { description: "The account's settings, by group; each group has its own revision and defaults." },
  webhooks: { description: "Subscriptions that deliver events to an HTTPS endpoint, signed as Standard Webhooks, with their deliveries and replays." },
  uploads: { description: "Multipart upload sessions: declare a file, send its parts, complete it into a file." },
  files: { description: "Files made by completed uploads." },
  exports: { description: "Collections written to CSV or JSON lines files by an asynchronous operation; the files are kept 7 days." },
  imports: { description: "Files of records (CSV, JSON lines, XLSX) written into the account by an asynchronous operation, one item per row, each row the create its route makes." },
  configuration_plans: {
    name: "Configuration plans",
    description: "Declarative configuration: plan a manifest against the account (the changes it needs), apply the plan as an operation, export the account's manifest."
  },
  operations: { description: "Asynchronous operations (batches, publications, copies): their status, progress and items, kept 30 days." },
  events: { description: "The public events of the environment, kept 30 days." },
  event_types: { name: "Event types", description: "The catalog of the public event types of the release and their payload keys." },
  event_streams: { name: "Event streams", description: "Server-Sent Event streams of the public events, with filters and a resumable cursor." },
  requests: { description: "The request log: one entry per authenticated call, kept 30 days." },
  audit_entries: { name: "Audit entries", description: "The audit trail: every change made in the environment, kept 30 days." },
  account: { description: "The account's usage of the API and the limits in effect." },
  sandbox: { description: "The sandbox environment: emptying it, and sample events for integration tests." },
  certificate_templates: {
    name: "Certificate templates",
    description: "A product's certificate template (criteria, layout, texts), replaced whole, and its PDF preview."
  },
  certificates: { description: "Certificates issued to learners when a product's template criteria are met; read-only." },
  enrollments: { description: "A user's access to a product (one active per user and product), its cancellation, expiry and per-lesson progress." },
  release_rules: { name: "Release rules", description: "When the modules and lessons of a product open to a learner (drip content): after enrollment, on a date, after a module." },
  exams: { description: "The exams of a product, linked to lessons through a lesson's exam_id, with their settings and counts." },
  questions: {
    name: "Lesson questions",
    description: "Learners' questions on the lessons of a product: the queue awaiting a reply, moderation, pins (questions.reopen, questions.pin)."
  },
  question_replies: { name: "Lesson question replies", description: "The replies to a lesson question: the account's answers, drafts, and learners' follow-ups." },
  comments: { description: "Learners' comments on lessons, their moderation (pending, approved, hidden) and one level of replies." },
  exam_questions: {
    name: "Exam questions",
    description: "The questions of an exam, their alternatives and order; the answer key only with exams.read_answer_key."
  },
  exam_attempts: { name: "Exam attempts", description: "Learners' completed attempts of an exam, graded against the answer key at submission." },
  tickets: {
    description: "Support tickets: a requester's conversation with the support desk (or a visitor's, anonymous), its status, department and product."
  },
  ticket_messages: { name: "Ticket messages", description: "The messages of a ticket, oldest first: the opening one and the replies; never edited nor removed." },
  departments: { description: "The support desk's departments, in the help centre's order; tickets are routed to them." },
  faqs: { name: "FAQs", description: "The help centre's frequently asked questions, in its order, optionally filed under a department." },
  funnels: {
    description: "Sales funnels: ordered steps (pages, the offer, upsells, downsells, a thank-you page) tied to deliveries, with each step's conversions."
  },
  gamification_rules: { name: "Gamification rules", description: "Rules that award points for what learners do (lessons completed, exams passed, …), in one product or in all." },
  points: { description: "A learner's points: the balance, and the ledger of the points each rule awarded, newest first." },
  reports: {
    description: "Reports computed by the store from the learning records (enrollments, exam attempts, certificates, points), and their catalog."
  },
  legal_terms: {
    description: "The platform's legal term and each product's, versioned: a change of the text publishes a new version, which users must accept again."
  },
  legal_term_versions: { name: "Legal term versions", description: "Every published version of a legal term, exactly as published; never changed or removed." },
  term_acceptances: {
    description: "Users' acceptances of a version of a legal term, records of fact with their proof (IP address, user agent), shown only with legal_terms.read_proof."
  },
  deliveries: {
    name: "Sales deliveries",
    description: "What a sale grants: products, each as an enrollment with a duration, and tags; and applying a delivery's tags to the users with access through it."
  },
  gateways: {
    name: "Payment gateways",
    description: "The account's payment gateway connections: their kind, status, write-only credentials and the signing secret of their notifications (shown once)."
  },
  sales_events: {
    name: "Sales events",
    description: "The lifecycle of each sale as its gateway reported it (approved, refunded, chargeback, canceled, subscription renewed or expired), recorded once per gateway event and acting on the buyer's access."
  },
  access_emails: {
    name: "Access emails",
    description: "A user's access email, queued in the outbox and sent once through the mail server; the same email to the same address within 10 minutes is refused."
  },
  domains: {
    description: "The account's custom domains (production only): a DNS TXT challenge verifies each one; the primary active domain is where administrators sign in."
  },
  replicas: {
    description: "Links sharing this account's products with another account, which holds read-only copies (replicas) published along with the originals; the target accepts with a token."
  },
  email_bounces: {
    name: "Email bounces",
    description: "Addresses the mail server refused for good: each blocks mail to its address until it is ignored."
  }
}

/**
 * The group of each area (an operation's `tag`), named after the areas of §1. An area not
 * listed is a group of its own.
 */
const areaGroups: Readonly<Record<string, string>> = {
  Catalog: "Catalog and content",
  Content: "Catalog and content",
  Site: "Catalog and content",
  People: "People",
  Support: "Support",
  Sales: "Sales",
  Settings: "Settings",
  Credentials: "Access",
  Audit: "Access",
  Webhooks: "Integration",
  Events: "Integration",
  "Event streams": "Integration",
  Operations: "Integration",
  Files: "Integration",
  Exports: "Integration",
  Imports: "Integration",
  Account: "Platform",
  Sandbox: "Platform",
  Service: "Platform",
  Learning: "Learning",
  Legal: "Legal",
  Reports: "Learning"
}

/** The order of the groups in `x-tagGroups`: the order of §1. */
const groupOrder = ["Catalog and content", "People", "Learning", "Support", "Legal", "Sales", "Settings", "Access", "Integration", "Platform"]

const humanize = (segment: string) => {
  const words = segment.replaceAll("_", " ")
  return words.charAt(0).toUpperCase() + words.slice(1)
}

const segmentOf = (operation: Operation) => operation.id.split(".", 1)[0] ?? operation.id

/** The resource tag of an operation. */
export const resourceTagOf = (operation: Operation): string => {
  const segment = segmentOf(operation)
  return resourceTags[segment]?.name ?? humanize(segment)
}

export const groupOf = (operation: Operation): string => areaGroups[operation.tag] ?? operation.tag

/** Whether a person wrote the description of this operation's tag (a test requires it). */
export const hasWrittenTagDescription = (operation: Operation): boolean => resourceTags[segmentOf(operation)] !== undefined

export interface TagsOfDocument {
  readonly tags: ReadonlyArray<{ readonly name: string; readonly description: string }>
  readonly groups: ReadonlyArray<{ readonly name: string; readonly tags: ReadonlyArray<string> }>
}

/** The `tags` and `x-tagGroups` of the document: each tag once, in one group, in order of first use. */
export const tagsOf = (operations: ReadonlyArray<Operation>): TagsOfDocument => {
  const tags = new Map<string, string>()
  const groups = new Map<string, Array<string>>()
  for (const operation of operations) {
    const name = resourceTagOf(operation)
    if (tags.has(name)) continue
    tags.set(name, resourceTags[segmentOf(operation)]?.description ?? `Operations on ${name.toLowerCase()}.`)
    const group = groupOf(operation)
    groups.set(group, [...(groups.get(group) ?? []), name])
  }
  const rank = (group: string) => (groupOrder.includes(group) ? groupOrder.indexOf(group) : groupOrder.length)
  return {
    tags: [...tags].map(([name, description]) => ({ name, description })),
    groups: [...groups]
      .sort(([a], [b]) => rank(a) - rank(b))
      .map(([name, tags]) => ({ name, tags }))
  }
}
