/** Operations of the "people" group beyond the derived list/get/create/update/delete. */
import type { Operation } from "../operation.js"

export const peopleRoutes: ReadonlyArray<Operation> = []
