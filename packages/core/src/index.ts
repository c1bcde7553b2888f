/**
 * `@syllabus/core`: the rules of the contract, one folder per area (docs/architecture.md).
 * The other packages import only this file.
 */
export * from "./errors/errors.js"
export * from "./errors/messages.js"
export * from "./ports/store.js"
export * from "./ports/crypto.js"
export * from "./ports/file-storage.js"
export * from "./records/ids.js"
export * from "./records/time.js"
export * from "./records/schema.js"
export * from "./records/views.js"
export * from "./records/text.js"
export * from "./records/pagination.js"
export * from "./records/resource.js"
export * from "./records/access-paths.js"
export * from "./access/context.js"
export * from "./access/policies.js"
export * from "./access/credentials.js"
export * from "./access/auth.js"
export * from "./access/accounts.js"
export * from "./limits/rate-limit.js"
export * from "./idempotency/idempotency.js"
export * from "./trail/audit.js"
export * from "./trail/trail.js"
export * from "./trail/retention.js"
export * from "./workers/background.js"
export * from "./sandbox/sandbox.js"
export * from "./operations/operations.js"
export * from "./uploads/uploads.js"
export * from "./events/events.js"
export * from "./events/change-signals.js"
export * from "./events/event-streams.js"
export * from "./events/webhook-delivery.js"
export * from "./events/webhooks.js"
export { showcases } from "./catalog/showcases.js"
export * from "./catalog/products.js"
// Not `*`: `linkedTermIds` and `refreshLessonsCount` are for content/lesson-terms.ts only.
export {
  dropLessonTerms,
  LESSON_TERM_TYPE,
  taxonomies,
  taxonomiesOperationKinds,
  taxonomiesResources,
  taxonomyTerms
} from "./catalog/taxonomies.js"
export * from "./content/content.js"
export * from "./content/lesson-terms.js"
export * from "./people/people.js"
export * from "./people/totp.js"
export * from "./site/site.js"
export * from "./registry/resources.js"
export * from "./registry/capabilities.js"
export * from "./registry/event-types.js"
export * from "./registry/batches.js"
export * from "./registry/access-paths.js"
