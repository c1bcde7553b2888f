/**
 * Resources of the "support" group (release 3.2.0): tickets with their messages, departments
 * and FAQs (docs/support.md). All are served by `@syllabus/http`'s routes/support.ts (the
 * ticket's opening message, personal data hidden by the caller's grant, the reorders).
 * Lesson questions with their replies and comments (questions.ts, comments.ts) are served by
 * routes/questions.ts and routes/comments.ts.
 */
import type { ResourceDefinition } from "../records/resource.js"
import { departments } from "./departments.js"
import { faqs } from "./faqs.js"
import { ticketMessages, tickets } from "./tickets.js"
import { comments } from "./comments.js"
import { questionReplies, questions } from "./questions.js"

export * from "./departments.js"
export * from "./faqs.js"
export * from "./tickets.js"
export * from "./questions.js"
export * from "./comments.js"

export const supportResources: ReadonlyArray<ResourceDefinition> = [tickets, ticketMessages, departments, faqs, questions, comments]

/**
 * Described, but not in the capability catalog of their own: a question's replies are read and
 * written with the question's capabilities (`questions.read`, `.create`, `.update`, `.delete`).
 */
export const supportReplyResources: ReadonlyArray<ResourceDefinition> = [questionReplies]
