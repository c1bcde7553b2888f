/**
 * Frequently asked questions (`faq_`, release 3.2.0, open-points route `/support/faqs`): the
 * help centre's answers, shown before a learner opens a ticket. Decisions (also in
 * docs/support.md and the OpenAPI description):
 *
 * - One order for the whole help centre: `position` is 1-based and dense among the non-trashed
 *   FAQs (a new or restored one last, the trash closes the gap, `PUT /support/faqs/order`
 *   rearranges the exact set), as the departments (`arrangedSet`). A list filtered by
 *   `department_id` keeps that order.
 * - `department_id` (optional) files the FAQ under a department of the account, not trashed
 *   (else 422 on `department_id`, reason `not_found`); a department trashed later leaves it
 *   filed there.
 * - `status`: `published` (shown by the help centre) or `draft` (default `published`).
 */
import { Effect, Schema } from "effect"
import { Caller } from "../access/context.js"
import { fieldError, readUnavailable } from "../errors/errors.js"
import { Records } from "../ports/store.js"
import { defineResource, equalsFilter, requireReference, type ResourceDefinition } from "../records/resource.js"
import { Enum, List, PublicId, RichText, Text } from "../records/schema.js"
import { arrangedSet, departments, DEPARTMENT_TYPE } from "./departments.js"

export const FAQ_TYPE = "faq"

const faqStatuses = ["published", "draft"] as const
const Status = Enum(...faqStatuses)

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

const arranged = arrangedSet(FAQ_TYPE, () => faqs)

/** A department of the caller's tenant, not trashed, that it may read: else 422 on `department_id`. */
const requireDepartment = (id: string) => Effect.asVoid(requireReference(departments, "department_id", id))

export const faqs: ResourceDefinition = defineResource({
  type: FAQ_TYPE,
  idKind: "faq",
  plural: "faqs",
  path: "/support/faqs",
  tag: "Support",
  fields: {
    question: Schema.String.annotations({ description: "Plain text, at most 1,000 characters." }),
    answer: Schema.String.annotations({ description: "Rich text (HTML), at most 512 KiB." }),
    department_id: Schema.NullOr(Schema.String).annotations({ description: "The department it is filed under, or null." }),
    status: Schema.Literal(...faqStatuses).annotations({ description: "`published`: shown by the help centre; `draft`: kept aside. Default `published`." }),
    position: Schema.Int.annotations({
      description: "1-based place among the non-trashed FAQs (one order for the help centre). A new or restored FAQ comes last; `PUT /support/faqs/order` rearranges."
    })
  },
  create: Schema.Struct({
    question: Text({ min: 1, max: 1000 }),
    answer: RichText({ min: 1 }),
    department_id: optional(Schema.NullOr(PublicId("department"))),
    status: optional(Status)
  }),
  update: Schema.Struct({
    question: optional(Text({ min: 1, max: 1000 })),
    answer: optional(RichText({ min: 1 })),
    department_id: optional(Schema.NullOr(PublicId("department"))),
    status: optional(Status)
  }),
  defaults: (body) =>
    Effect.map(arranged.count, (count) => ({
      question: body.question,
      answer: body.answer,
      department_id: body.department_id ?? null,
      status: body.status ?? "published",
      position: count + 1
    })),
  change: (current, patch) =>
    Effect.gen(function* () {
      const next = { ...current, ...(patch as object) }
      // An FAQ restored from the trash comes last.
      return current.deleted === true ? { ...next, position: (yield* arranged.count) + 1 } : next
    }),
  rules: {
    check: (data, previous) =>
      typeof data.department_id === "string" && data.department_id !== previous?.department_id ? requireDepartment(data.department_id) : Effect.void,
    afterDelete: (record) => arranged.closeGap(record)
  },
  trash: true,
  revision: "string",
  filters: {
    department_id: equalsFilter("department_id", PublicId("department"), "FAQs filed under this department."),
    status: equalsFilter("status", Status)
  },
  sorts: [
    { name: "position", field: "position", kind: "number" },
    { name: "created_at", field: "id", kind: "text" }
  ],
  search: ["question"],
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

export const FaqOrderBody = Schema.Struct({
  ids: List(PublicId("faq")).annotations({ description: "Every non-trashed FAQ, each once, in the new order." })
}).annotations({ identifier: "FaqOrderBody" })

/** `PUT /support/faqs/order`: the FAQs in the order given. */
export const orderFaqs = (ids: ReadonlyArray<string>) => arranged.order(ids)
