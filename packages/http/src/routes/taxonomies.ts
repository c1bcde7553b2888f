/**
 * Operations of the "taxonomies" group beyond the derived list/get/create/update/delete of
 * taxonomies and terms: the terms of a blog's lesson (open-points), read and replaced as a set.
 */
import { LessonTermsBody, listLessonTerms, replaceLessonTerms, taxonomyTerms } from "@syllabus/core"
import { Effect } from "effect"
import { defineOperation, type Operation } from "../operation.js"
import { representationSchema } from "../resources.js"

const tag = "Catalog"
const params = { product_id: "product", lesson_id: "lesson" } as const
const path = "/products/{product_id}/lessons/{lesson_id}/terms"
const TermSchema = representationSchema(taxonomyTerms)

export const taxonomiesRoutes: ReadonlyArray<Operation> = [
  defineOperation({
    id: "lessons.terms.list",
    method: "GET",
    path,
    summary: "List the taxonomy terms of a lesson (blog products)",
    description: "The taxonomy terms of a lesson, all at once. Blog products only (else 409 `format_unsupported`).",
    tag,
    capability: "lessons.read",
    scopedBy: "product_id",
    params,
    idempotency: "none",
    success: { status: 200, description: "Every term of the lesson, in creation order; `next_cursor` is null.", schema: TermSchema, collection: true },
    errors: ["format_unsupported"],
    handler: ({ path }) => listLessonTerms(path.product_id!, path.lesson_id!).pipe(Effect.map((body) => ({ status: 200, body })))
  }),
  defineOperation({
    id: "lessons.terms.replace",
    method: "PUT",
    path,
    summary: "Replace the taxonomy terms of a lesson (blog products)",
    description:
      "Replace the taxonomy terms of a lesson with `ids` (terms of this product's taxonomies, else 422 on `ids[i]`). Blog products only (else 409 `format_unsupported`). `If-Match` takes the lesson's ETag; a change moves the lesson's revision.",
    tag,
    capability: "lessons.update",
    scopedBy: "product_id",
    params,
    body: LessonTermsBody,
    idempotency: "optional",
    ifMatch: "lesson",
    success: { status: 200, description: "Every term of the lesson, in creation order; `next_cursor` is null.", schema: TermSchema, collection: true },
    errors: ["format_unsupported", "replica_readonly"],
    handler: ({ path, body, expectedRevision }) =>
      replaceLessonTerms(path.product_id!, path.lesson_id!, body, expectedRevision).pipe(Effect.map((body) => ({ status: 200, body })))
  })
]
