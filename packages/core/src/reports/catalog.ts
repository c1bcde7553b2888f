/**
 * The catalog of reports (§4.4 `GET /reports`): for each report served, its ID, path, the
 * filters it accepts, its columns (those of personal data marked, and listed only to callers
 * holding `users.read_personal`), where its figures come from and how fresh they are. Static:
 * it holds no account data. The routes (`@syllabus/http` routes/reports.ts) and this catalog
 * read the same descriptions, so a column a report answers is a column the catalog lists.
 */
export type ReportColumnType = "string" | "integer" | "number" | "date-time"

export interface ReportColumn {
  readonly name: string
  readonly type: ReportColumnType
  readonly nullable: boolean
  readonly description: string
  /** Personal data: `null` in the rows, and left out of the catalog, without `users.read_personal`. */
  readonly personal: boolean
}

export interface ReportFilter {
  readonly name: string
  readonly type: "string" | "array" | "date-time" | "integer"
  readonly required: boolean
  readonly description: string
  /** A deprecated alias of another filter (§9): it still works, the answer carries `Deprecation`. */
  readonly deprecated?: boolean
}

export interface ReportDescription {
  readonly id: string
  readonly path: string
  readonly title: string
  readonly description: string
  readonly filters: ReadonlyArray<ReportFilter>
  readonly columns: ReadonlyArray<ReportColumn>
  /** The records the figures are computed from. */
  readonly source: ReadonlyArray<string>
  /** `live`: computed by the store when asked, from the committed records. */
  readonly freshness: "live"
  /** The order of the rows (stable: ties by ID or key). */
  readonly order: string
  readonly paginated: boolean
}

const column = (name: string, type: ReportColumnType, description: string, options: { nullable?: boolean; personal?: boolean } = {}): ReportColumn => ({
  name,
  type,
  nullable: options.nullable ?? false,
  description,
  personal: options.personal ?? false
})

const filter = (name: string, type: ReportFilter["type"], description: string, options: { required?: boolean; deprecated?: boolean } = {}): ReportFilter => ({
  name,
  type,
  required: options.required ?? false,
  description,
  ...(options.deprecated === true ? { deprecated: true } : {})
})

const pageFilters: ReadonlyArray<ReportFilter> = [
  filter("limit", "integer", "Rows per page, 1 to 200 (default 50)."),
  filter("cursor", "string", "`page.next_cursor` of the previous page.")
]

const productIds = (what: string) => filter("product_id[]", "array", `${what} Repeat it for several products (at most 100).`)

export const RANKINGS_REPORT: ReportDescription = {
  id: "rankings",
  path: "/reports/rankings",
  title: "Points ranking",
  description:
    "Learners by points, most first. Without `product_id[]`: by their balance (every point awarded). With it: by the points they earned in those products (the sum of their ledger entries there).",
  filters: [
    productIds("Rank by the points earned in these products."),
    filter("product_id", "string", "Deprecated alias of `product_id[]` taking one product.", { deprecated: true }),
    ...pageFilters
  ],
  columns: [
    column("position", "integer", "1-based place of the row in the ranking (ties get consecutive places, in user ID order)."),
    column("user_id", "string", "The learner."),
    column("user_name", "string", "The learner's name; null when the user was removed.", { nullable: true, personal: true }),
    column("user_email", "string", "The learner's email; null when the user was removed.", { nullable: true, personal: true }),
    column("points", "integer", "The balance, or the points earned in the products asked for.")
  ],
  source: ["point_balance", "point_entry", "user"],
  freshness: "live",
  order: "points, highest first; ties by user ID, last first",
  paginated: true
}

export const PRODUCTS_REPORT: ReportDescription = {
  id: "products",
  path: "/reports/products",
  title: "Product performance",
  description: "Per product: its enrollments by status, how many completed, the learners' average progress, and its sales (approved, refunded, through funnels).",
  filters: [productIds("Only these products."), ...pageFilters],
  columns: [
    column("product_id", "string", "The product."),
    column("product_name", "string", "Its name."),
    column("enrollments", "integer", "Every enrollment in the product, whatever its status."),
    column("active", "integer", "Enrollments `active`."),
    column("expired", "integer", "Enrollments `expired`."),
    column("canceled", "integer", "Enrollments `canceled`."),
    column("completed", "integer", "Enrollments whose learner completed every published lesson (`completed_at` set), whatever their status."),
    column(
      "average_progress_percent",
      "number",
      "Average `progress_percent` of the enrollments not canceled, two decimals; null when there is none.",
      { nullable: true }
    ),
    column("sales_approved", "integer", "Sales events `approved` naming the product (renewals are not counted)."),
    column("sales_refunded", "integer", "Sales events `refunded` or `chargeback` naming the product, counted apart: `sales_approved` is not reduced by them."),
    column("funnel_conversions", "integer", "Of `sales_approved`, those made through a funnel step (`funnel_step_id` set).")
  ],
  source: ["product", "enrollment", "sales_event"],
  freshness: "live",
  order: "products oldest first (by product ID)",
  paginated: true
}

export const EXAMS_REPORT: ReportDescription = {
  id: "exams",
  path: "/reports/exams",
  title: "Exam performance",
  description: "Per exam: attempts recorded, how many passed, the pass rate and the average grade.",
  filters: [productIds("Only the exams of these products."), ...pageFilters],
  columns: [
    column("exam_id", "string", "The exam."),
    column("product_id", "string", "Its product."),
    column("exam_title", "string", "Its title."),
    column("attempts", "integer", "Attempts recorded."),
    column("passed", "integer", "Attempts that passed (`grade >= min_grade` at submission)."),
    column("pass_rate", "number", "`passed / attempts` as a percent, two decimals; null without attempts.", { nullable: true }),
    column("average_grade", "number", "Average `grade` of the attempts, two decimals; null without attempts.", { nullable: true })
  ],
  source: ["exam", "exam_attempt"],
  freshness: "live",
  order: "exams oldest first (by exam ID)",
  paginated: true
}

export const CERTIFICATES_REPORT: ReportDescription = {
  id: "certificates",
  path: "/reports/certificates",
  title: "Certificate issuance",
  description: "Per product: certificates issued within the date range (all time without one). Products without certificates in the range have no row.",
  filters: [
    filter("issued_after", "date-time", "Issued at or after this instant."),
    filter("issued_before", "date-time", "Issued before this instant."),
    ...pageFilters
  ],
  columns: [
    column("product_id", "string", "The product."),
    column("product_name", "string", "Its name; null when the product was removed.", { nullable: true }),
    column("issued", "integer", "Certificates issued in the range.")
  ],
  source: ["certificate", "product"],
  freshness: "live",
  order: "by product ID",
  paginated: true
}

export const LESSONS_REPORT: ReportDescription = {
  id: "lessons",
  path: "/reports/lessons",
  title: "Lesson performance",
  description:
    "Per lesson of one product (trashed lessons left out): how many learners started it, are on it, and completed it, and their average percent. Counted from the progress recorded (`PUT /enrollments/{enrollment_id}/progress/lessons/{lesson_id}`), whatever the enrollment's status since.",
  filters: [filter("product_id", "string", "The product (required).", { required: true }), ...pageFilters],
  columns: [
    column("lesson_id", "string", "The lesson."),
    column("module_id", "string", "Its module."),
    column("lesson_name", "string", "Its name."),
    column("status", "string", "Its status (`draft`, `published`, …)."),
    column("started", "integer", "Learners with progress recorded on it (in progress or completed)."),
    column("in_progress", "integer", "Learners on it, not completed."),
    column("completed", "integer", "Learners who completed it."),
    column("average_percent", "number", "Average `percent` of the learners who started it, two decimals; null when none did.", {
      nullable: true
    })
  ],
  source: ["lesson", "lesson_progress"],
  freshness: "live",
  order: "lessons oldest first (by lesson ID)",
  paginated: true
}

export const USERS_REPORT: ReportDescription = {
  id: "users",
  path: "/reports/users",
  title: "Learners",
  description:
    "Per user not trashed: their enrollments (every one, active, completed), the certificates issued to them and their points balance.",
  filters: [...pageFilters],
  columns: [
    column("user_id", "string", "The user."),
    column("user_name", "string", "Their name.", { nullable: true, personal: true }),
    column("user_email", "string", "Their email.", { nullable: true, personal: true }),
    column("enrollments", "integer", "Their enrollments, whatever the status."),
    column("active_enrollments", "integer", "Their enrollments `active`."),
    column("completed_enrollments", "integer", "Their enrollments whose every published lesson they completed (`completed_at` set)."),
    column("certificates", "integer", "Certificates issued to them."),
    column("points", "integer", "Their points balance.")
  ],
  source: ["user", "enrollment", "certificate", "point_balance"],
  freshness: "live",
  order: "users oldest first (by user ID)",
  paginated: true
}

export const ACTIVITY_REPORT: ReportDescription = {
  id: "activity",
  path: "/reports/activity",
  title: "Recent learner activity",
  description:
    "What learners did, newest first: enrollments made, lesson progress recorded (its latest change), exam attempts submitted, certificates issued.",
  filters: [
    filter("occurred_after", "date-time", "Only what happened at or after this instant."),
    filter("occurred_before", "date-time", "Only what happened before this instant."),
    ...pageFilters
  ],
  columns: [
    column("occurred_at", "date-time", "When: an enrollment's creation, a progress's last change, an attempt's submission, a certificate's issue."),
    column("kind", "string", "`enrollment`, `lesson_progress`, `exam_attempt` or `certificate` (an open set)."),
    column("resource_id", "string", "The record: the enrollment, progress, attempt or certificate."),
    column("user_id", "string", "The learner; null when the progress's enrollment was removed.", { nullable: true }),
    column("user_name", "string", "The learner's name.", { nullable: true, personal: true }),
    column("product_id", "string", "The product; null when the progress's enrollment was removed.", { nullable: true }),
    column("subject_id", "string", "The lesson of a progress, the exam of an attempt; null otherwise.", { nullable: true })
  ],
  source: ["enrollment", "lesson_progress", "exam_attempt", "certificate", "user"],
  freshness: "live",
  order: "newest first; ties by record ID, last first",
  paginated: true
}

export const SUPPORT_REPORT: ReportDescription = {
  id: "support",
  path: "/reports/support",
  title: "Support desk",
  description:
    "Per department (and one row, `department_id` null, for the tickets routed to none): the tickets in each status now, and within the period the tickets opened, solved and the replies written, with the average time to the first agent reply. Trashed tickets are left out of the ticket counts. Departments without tickets have no row; the totals of the desk are the sums of the rows.",
  filters: [
    filter("occurred_after", "date-time", "The period starts at this instant (inclusive); without it, from the first ticket."),
    filter("occurred_before", "date-time", "The period ends at this instant (exclusive); without it, now."),
    ...pageFilters
  ],
  columns: [
    column("department_id", "string", "The department; null for the tickets routed to none.", { nullable: true }),
    column("department_name", "string", "Its name; null for no department, or when the department was removed.", { nullable: true }),
    column("open", "integer", "Tickets `open` now."),
    column("pending", "integer", "Tickets `pending` now."),
    column("solved", "integer", "Tickets `solved` now."),
    column("closed", "integer", "Tickets `closed` now."),
    column("opened", "integer", "Tickets opened in the period."),
    column("solved_in_period", "integer", "Tickets whose latest solution falls in the period (a ticket reopened since is not counted; one solved then closed is)."),
    column("replies", "integer", "Replies written in the period (messages after the opening one, by agents and requesters), counted for the department the ticket had when each was written; the work done, so a reply to a ticket trashed since still counts."),
    column(
      "average_first_reply_seconds",
      "number",
      "Over the tickets opened in the period that have an agent reply: the average seconds from opening to the first one, two decimals; null when none has.",
      { nullable: true }
    )
  ],
  source: ["ticket", "ticket_message", "department"],
  freshness: "live",
  order: "by department ID, the row without department first",
  paginated: true
}

export const EMAIL_BOUNCES_REPORT: ReportDescription = {
  id: "email-bounces",
  path: "/reports/email-bounces",
  title: "Email bounces",
  description:
    "Each mail the platform sent that the receiving mail server refused for good (an SMTP 5xx answer), newest first. While a bounce is `active` no mail is queued to its address; `PATCH /reports/email-bounces/{bounce_id}` ignores it.",
  filters: [filter("status", "string", "`active` or `ignored` (default: both)."), ...pageFilters],
  columns: [
    column("id", "string", "The bounce (`ebn_`)."),
    column("email_id", "string", "The message that bounced (`eml_`)."),
    column("kind", "string", "What the message was: `access` or `ticket_reply` (an open set)."),
    column("user_id", "string", "The user the message was for; null for an anonymous recipient.", { nullable: true }),
    column("email", "string", "The address that bounced.", { nullable: true, personal: true }),
    column("smtp_code", "integer", "The SMTP reply code (550, 553, …).", { nullable: true }),
    column("enhanced_code", "string", "The enhanced status code (RFC 3463, e.g. `5.1.1`), when the server gave one.", { nullable: true }),
    column("diagnostic", "string", "The server's answer, at most 200 characters, addresses and tokens masked."),
    column("status", "string", "`active` or `ignored`."),
    column("bounced_at", "date-time", "When the server refused the message."),
    column("ignored_at", "date-time", "When the bounce was ignored; null while active.", { nullable: true })
  ],
  source: ["email_bounce"],
  freshness: "live",
  order: "newest first (by bounce ID)",
  paginated: true
}

export const EXPORTS_REPORT: ReportDescription = {
  id: "exports",
  path: "/reports/exports",
  title: "Exports",
  description:
    "Per resource type and status (`queued`, `succeeded`, `failed`, `canceled`, `expired`): the exports made in the period, the rows and the bytes their files hold (counted when an export succeeds, so 0 for the other statuses but `expired`, whose file was removed). Combinations without exports have no row; the totals are the sums of the rows.",
  filters: [
    filter("created_after", "date-time", "Exports made at or after this instant; without it, from the first."),
    filter("created_before", "date-time", "Exports made before this instant; without it, until now."),
    filter("resource_type", "string", "Only the exports of this resource type (e.g. `users`)."),
    ...pageFilters
  ],
  columns: [
    column("resource_type", "string", "The resource type exported (`users`, `products`, …)."),
    column("status", "string", "The exports' status."),
    column("exports", "integer", "Exports of that type in that status."),
    column("rows", "integer", "Rows written by them (the sum of their `row_count`)."),
    column("bytes", "integer", "Bytes of their files (the sum of their `size`).")
  ],
  source: ["export"],
  freshness: "live",
  order: "by resource type, then status",
  paginated: true
}

/** Every report served, in the order `GET /reports` lists them. */
export const reportCatalog: ReadonlyArray<ReportDescription> = [
  ACTIVITY_REPORT,
  CERTIFICATES_REPORT,
  EMAIL_BOUNCES_REPORT,
  EXAMS_REPORT,
  EXPORTS_REPORT,
  LESSONS_REPORT,
  PRODUCTS_REPORT,
  RANKINGS_REPORT,
  SUPPORT_REPORT,
  USERS_REPORT
]
