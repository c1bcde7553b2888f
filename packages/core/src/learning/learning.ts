/**
 * Resources of the "learning" group (release 3.2.0): enrollments, their per-lesson progress
 * and the release rules of a product's content (docs/learning.md), exams with their questions
 * and attempts (docs/exams.md), gamification rules (docs/gamification.md). Certificates and the
 * points ledger are registered in registry/resources.ts.
 */
import type { ResourceDefinition } from "../records/resource.js"
import { enrollments } from "./enrollments.js"
import { examAttempts } from "./exam-attempts.js"
import { examQuestions } from "./exam-questions.js"
import { exams } from "./exams.js"
import { gamificationRules } from "./gamification.js"
import { releaseRules } from "./release-rules.js"

export const learningResources: ReadonlyArray<ResourceDefinition> = [
  enrollments,
  releaseRules,
  // Served by their own routes (`@syllabus/http` routes/exams.ts: views by the caller, live counts).
  exams,
  examQuestions,
  examAttempts,
  // Served by routes/gamification.ts (the derived routes with the decisions in their texts).
  gamificationRules
]
