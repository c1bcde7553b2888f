/**
 * Resources of the "content" group (issue 4): modules, lessons (with their content) and
 * attachments. The descriptions are in content-catalog.ts, what a lesson holds in
 * content-lessons.ts, the asynchronous operations in content-operations.ts.
 */
import type { OperationKind } from "../operations/operations.js"
import type { ResourceDefinition } from "../records/resource.js"
import { lessons, modules } from "./content-catalog.js"
import { contentKinds } from "./content-operations.js"

export { attachments, lessonKinds, lessons, modules } from "./content-catalog.js"
export {
  AttachmentsInput,
  ContentBlock,
  embedProviders,
  getAttachment,
  getLessonContent,
  LessonContentInput,
  listAttachments,
  replaceAttachments,
  replaceLessonContent,
  videoProviders
} from "./content-lessons.js"
export { LESSON_COPY, LessonCopyInput, MODULE_PUBLICATION, startLessonCopy, startModulePublication } from "./content-operations.js"

/** Attachments are not here: they have no derived routes (their writes go through the lesson, see content-lessons.ts). */
export const contentResources: ReadonlyArray<ResourceDefinition> = [modules, lessons]

export const contentOperationKinds: Readonly<Record<string, OperationKind>> = contentKinds
