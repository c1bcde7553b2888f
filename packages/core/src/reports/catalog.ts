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
  description: "Per product: its enrollments by status, how many completed, and the learners' average progress.",
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
    )
  ],
  source: ["product", "enrollment"],
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

/** Every report served, in the order `GET /reports` lists them. */
export const reportCatalog: ReadonlyArray<ReportDescription> = [
  ACTIVITY_REPORT,
  CERTIFICATES_REPORT,
  EXAMS_REPORT,
  LESSONS_REPORT,
  PRODUCTS_REPORT,
  RANKINGS_REPORT,
  USERS_REPORT
]
