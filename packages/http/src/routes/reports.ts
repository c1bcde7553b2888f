/**
 * The reports of §4.4 that read the learning records (docs/reports.md): the catalog
 * (`GET /reports`) and the reports it lists. Each report's row schema is derived from its
 * catalog entry (`@syllabus/core` reports/catalog.ts), so the columns described, listed and
 * answered are the same. Every report needs `reports.read`; personal columns (a learner's
 * name and email) are null without `users.read_personal`, and left out of the catalog.
 */
import {
  ACTIVITY_REPORT,
  activityReport,
  CERTIFICATES_REPORT,
  certificatesReport,
  EXAMS_REPORT,
  examsReport,
  LESSONS_REPORT,
  lessonsReport,
  List,
  listReports,
  PRODUCTS_REPORT,
  productsReport,
  PublicId,
  RANKINGS_REPORT,
  rankingsReport,
  type ReportColumn,
  type ReportDescription,
  Timestamp,
  USERS_REPORT,
  usersReport
} from "@syllabus/core"
import { Effect, Schema } from "effect"
import { deprecatedParametersOf } from "../deprecations.js"
import { defineOperation, type Operation } from "../operation.js"
import { CursorParam, LimitParam, pageLimit } from "../query.js"

const tag = "Reports"
const REPORTS_READ = "reports.read"

const WireTimestamp = Schema.String.annotations({ jsonSchema: { type: "string", format: "date-time" } })

const columnSchema = (column: ReportColumn): Schema.Schema.AnyNoContext => {
  const base = column.type === "integer"
    ? Schema.Int
    : column.type === "number"
    ? Schema.Number
    : column.type === "date-time"
    ? WireTimestamp
    : Schema.String
  const personal = column.personal ? " Personal data: null unless the credential holds `users.read_personal`." : ""
  return (column.nullable || column.personal ? Schema.NullOr(base) : base).annotations({
    description: `${column.description}${personal}`
  }) as unknown as Schema.Schema.AnyNoContext
}

/** The schema of a report's rows: one property per column of its catalog entry, in order. */
const rowSchema = (report: ReportDescription, identifier: string): Schema.Schema.AnyNoContext =>
  Schema.Struct(Object.fromEntries(report.columns.map((column) => [column.name, columnSchema(column)]))).annotations({
    identifier
  }) as unknown as Schema.Schema.AnyNoContext

const columnsText = (report: ReportDescription): string =>
  report.columns.map((c) => `\`${c.name}\`${c.personal ? " (personal)" : ""}`).join(", ")

/** What every report's description says about itself, from its catalog entry. */
const reportText = (report: ReportDescription, extra: string): string =>
  `${report.description} Columns: ${columnsText(report)}. Rows in a stable order: ${report.order}. ${extra} Computed by the store when asked (freshness \`live\`): figures include every change committed before the call. Pages go forward only: \`page.next_cursor\` reads the next one (\`prev_cursor\` is always null); a cursor is bound to the report and its filters (else 400 \`invalid_cursor\`).`

const pageParams = { limit: Schema.optional(LimitParam), cursor: Schema.optional(CursorParam) }

const ProductIds = (what: string) =>
  Schema.optional(
    List(PublicId("product"), 100).annotations({ description: `${what} Repeat the parameter for several products (at most 100).` })
  )

// ---------------------------------------------------------------------------------------
// The catalog

const ReportFilterSchema = Schema.Struct({
  name: Schema.String,
  type: Schema.Literal("string", "array", "date-time", "integer"),
  required: Schema.Boolean,
  deprecated: Schema.Boolean.annotations({ description: "A deprecated alias: it works until its sunset (`GET /capabilities` lists it); the answer carries `Deprecation`." }),
  description: Schema.String
})

const ReportColumnSchema = Schema.Struct({
  name: Schema.String,
  type: Schema.Literal("string", "integer", "number", "date-time"),
  nullable: Schema.Boolean,
  personal: Schema.Boolean.annotations({ description: "Personal data: listed, and filled in the rows, only with `users.read_personal`." }),
  description: Schema.String
})

const ReportSchema = Schema.Struct({
  object: Schema.Literal("report"),
  id: Schema.String.annotations({ description: "The report's ID: the last segment of its path." }),
  path: Schema.String.annotations({ description: "Its path under `/api/v3`." }),
  title: Schema.String,
  description: Schema.String,
  filters: Schema.Array(ReportFilterSchema).annotations({ description: "The query parameters it accepts; any other is 400 `unknown_parameter`." }),
  columns: Schema.Array(ReportColumnSchema).annotations({ description: "The fields of each row, in order." }),
  source: Schema.Array(Schema.String).annotations({ description: "The record types its figures are computed from." }),
  freshness: Schema.Literal("live").annotations({ description: "`live`: computed by the store when asked, from every committed change." }),
  order: Schema.String.annotations({ description: "The order of its rows." }),
  paginated: Schema.Boolean
}).annotations({ identifier: "Report" })

const catalog = defineOperation({
  id: "reports.list",
  method: "GET",
  path: "/reports",
  summary: "List the available reports, their filters, columns, data source and freshness",
  description:
    "The catalog of the reports this release serves, all at once (`page.next_cursor` null). Static: it holds no account data. Columns of personal data (`personal` true) are listed only to a credential holding `users.read_personal`; without it they are left out here and answered null in the report's rows.",
  tag,
  capability: REPORTS_READ,
  idempotency: "none",
  success: { status: 200, description: "Every report served.", schema: ReportSchema, collection: true },
  errors: [],
  handler: () =>
    listReports().pipe(
      Effect.map((data) => ({
        status: 200,
        body: { data, page: { limit: data.length, next_cursor: null, prev_cursor: null } }
      }))
    )
})

// ---------------------------------------------------------------------------------------
// Rankings

const productAlias = deprecatedParametersOf("reports.rankings.get").get("product_id")!

const RankingsQuery = Schema.Struct({
  "product_id[]": ProductIds("Rank by the points earned in these products (the sum of the ledger's entries there)."),
  product_id: Schema.optional(
    PublicId("product").annotations({
      description: `Deprecated (sunset ${new Date(productAlias.sunsetAt).toISOString().slice(0, 10)}): use \`product_id[]\`. One product, as \`product_id[]\` with one value; sent with \`product_id[]\`, both count.`
    })
  ),
  ...pageParams
})

const rankings = defineOperation({
  id: "reports.rankings.get",
  method: "GET",
  path: "/reports/rankings",
  summary: "Rank learners by points, overall or within some products",
  description: reportText(
    RANKINGS_REPORT,
    "Without `product_id[]` the ranking reads the learners' balances (learners never awarded a point have no row); with it, the points each learner earned in those products. `position` is the row's place in the whole ranking. `product_id` is a deprecated alias taking one value: a call that sends it is answered as with `product_id[]`, with the headers `Deprecation`, `Sunset` and `Link`, and after the sunset 410 `operation_sunset`."
  ),
  tag,
  capability: REPORTS_READ,
  query: RankingsQuery,
  idempotency: "none",
  success: { status: 200, description: "A page of the ranking.", schema: rowSchema(RANKINGS_REPORT, "RankingRow"), collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    rankingsReport({
      productIds: [...(query["product_id[]"] ?? []), ...(query.product_id === undefined ? [] : [query.product_id])],
      limit: pageLimit(query.limit),
      cursor: query.cursor
    }).pipe(Effect.map((body) => ({ status: 200, body })))
})

// ---------------------------------------------------------------------------------------
// Products and exams

const ProductsQuery = Schema.Struct({ "product_id[]": ProductIds("Only these products."), ...pageParams })

const products = defineOperation({
  id: "reports.products.get",
  method: "GET",
  path: "/reports/products",
  summary: "Per product: enrollments by status, completions and average progress",
  description: reportText(
    PRODUCTS_REPORT,
    "Every product not trashed has a row, zeros included. A product named in `product_id[]` that does not exist, or is trashed, has no row."
  ),
  tag,
  capability: REPORTS_READ,
  query: ProductsQuery,
  idempotency: "none",
  success: { status: 200, description: "A page of products.", schema: rowSchema(PRODUCTS_REPORT, "ProductReportRow"), collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    productsReport({ productIds: query["product_id[]"] ?? [], limit: pageLimit(query.limit), cursor: query.cursor }).pipe(
      Effect.map((body) => ({ status: 200, body }))
    )
})

const ExamsQuery = Schema.Struct({ "product_id[]": ProductIds("Only the exams of these products."), ...pageParams })

const exams = defineOperation({
  id: "reports.exams.get",
  method: "GET",
  path: "/reports/exams",
  summary: "Per exam: attempts, passes, pass rate and average grade",
  description: reportText(
    EXAMS_REPORT,
    "Every exam not trashed has a row, zeros and nulls included. Attempts are counted as recorded: a later change of the exam's questions or minimum grade does not change them."
  ),
  tag,
  capability: REPORTS_READ,
  query: ExamsQuery,
  idempotency: "none",
  success: { status: 200, description: "A page of exams.", schema: rowSchema(EXAMS_REPORT, "ExamReportRow"), collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    examsReport({ productIds: query["product_id[]"] ?? [], limit: pageLimit(query.limit), cursor: query.cursor }).pipe(
      Effect.map((body) => ({ status: 200, body }))
    )
})

// ---------------------------------------------------------------------------------------
// Lessons

const LessonsQuery = Schema.Struct({
  product_id: PublicId("product").annotations({ description: "The product whose lessons are reported (required)." }),
  ...pageParams
})

const lessons = defineOperation({
  id: "reports.lessons.get",
  method: "GET",
  path: "/reports/lessons",
  summary: "Per lesson of a product: learners started, on it and completed, and their average percent",
  description: reportText(
    LESSONS_REPORT,
    "`product_id` is required, on every page: a `cursor` is read after the query is decoded and is used with the filters of its first page (missing: 422 `required`; another product: 400 `invalid_cursor`); a product that does not exist or is trashed is 422 `validation_failed` on `product_id` (reason `not_found`). Every lesson of the product not trashed has a row, drafts included, zeros and nulls included."
  ),
  tag,
  capability: REPORTS_READ,
  query: LessonsQuery,
  idempotency: "none",
  success: { status: 200, description: "A page of the product's lessons.", schema: rowSchema(LESSONS_REPORT, "LessonReportRow"), collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    lessonsReport({ productId: query.product_id, limit: pageLimit(query.limit), cursor: query.cursor }).pipe(
      Effect.map((body) => ({ status: 200, body }))
    )
})

// ---------------------------------------------------------------------------------------
// Certificates

const CertificatesQuery = Schema.Struct({
  issued_after: Schema.optional(Timestamp.annotations({ description: "Only certificates issued at or after this instant." })),
  issued_before: Schema.optional(Timestamp.annotations({ description: "Only certificates issued before this instant; after `issued_after` (else 422)." })),
  ...pageParams
})

const certificates = defineOperation({
  id: "reports.certificates.get",
  method: "GET",
  path: "/reports/certificates",
  summary: "Certificates issued per product within a date range",
  description: reportText(
    CERTIFICATES_REPORT,
    "The range is `issued_after` (inclusive) to `issued_before` (exclusive), any offset accepted; either may be left out. `issued_before` not after `issued_after` is 422 `validation_failed` on `issued_before` (reason `empty_range`)."
  ),
  tag,
  capability: REPORTS_READ,
  query: CertificatesQuery,
  idempotency: "none",
  success: {
    status: 200,
    description: "A page of products with certificates issued in the range.",
    schema: rowSchema(CERTIFICATES_REPORT, "CertificateReportRow"),
    collection: true
  },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    certificatesReport({
      issuedAfter: query.issued_after,
      issuedBefore: query.issued_before,
      limit: pageLimit(query.limit),
      cursor: query.cursor
    }).pipe(Effect.map((body) => ({ status: 200, body })))
})

// ---------------------------------------------------------------------------------------
// Users

const users = defineOperation({
  id: "reports.users.get",
  method: "GET",
  path: "/reports/users",
  summary: "Per user: enrollments, completions, certificates and points balance",
  description: reportText(
    USERS_REPORT,
    "Every user not trashed has a row, zeros included. `user_name` and `user_email` are null without `users.read_personal`."
  ),
  tag,
  capability: REPORTS_READ,
  query: Schema.Struct(pageParams),
  idempotency: "none",
  success: { status: 200, description: "A page of users.", schema: rowSchema(USERS_REPORT, "UserReportRow"), collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    usersReport({ limit: pageLimit(query.limit), cursor: query.cursor }).pipe(Effect.map((body) => ({ status: 200, body })))
})

// ---------------------------------------------------------------------------------------
// Activity

const ActivityQuery = Schema.Struct({
  occurred_after: Schema.optional(Timestamp.annotations({ description: "Only what happened at or after this instant." })),
  occurred_before: Schema.optional(Timestamp.annotations({ description: "Only what happened before this instant; after `occurred_after` (else 422)." })),
  ...pageParams
})

const activity = defineOperation({
  id: "reports.activity.get",
  method: "GET",
  path: "/reports/activity",
  summary: "Recent learner activity: enrollments, lesson progress, exam attempts and certificates, newest first",
  description: reportText(
    ACTIVITY_REPORT,
    "A lesson's progress appears once, at its latest change. The range is `occurred_after` (inclusive) to `occurred_before` (exclusive), any offset accepted; `occurred_before` not after `occurred_after` is 422 `validation_failed` on `occurred_before` (reason `empty_range`). `kind` is an open set: later releases may add kinds."
  ),
  tag,
  capability: REPORTS_READ,
  query: ActivityQuery,
  idempotency: "none",
  success: { status: 200, description: "A page of activity.", schema: rowSchema(ACTIVITY_REPORT, "ActivityReportRow"), collection: true },
  errors: ["invalid_cursor"],
  handler: ({ query }) =>
    activityReport({
      occurredAfter: query.occurred_after,
      occurredBefore: query.occurred_before,
      limit: pageLimit(query.limit),
      cursor: query.cursor
    }).pipe(Effect.map((body) => ({ status: 200, body })))
})

/** For the reports served by other route files (routes/support.ts). */
export { reportText, rowSchema as reportRowSchema }

export const reportsRoutes: ReadonlyArray<Operation> = [catalog, activity, certificates, exams, lessons, products, rankings, users]
