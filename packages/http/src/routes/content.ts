/** Operations of the "content" group beyond the derived list/get/create/update/delete. */
import type { Operation } from "../operation.js"

export const contentRoutes: ReadonlyArray<Operation> = []
