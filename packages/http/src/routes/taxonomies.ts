/** Operations of the "taxonomies" group beyond the derived list/get/create/update/delete. */
import type { Operation } from "../operation.js"

export const taxonomiesRoutes: ReadonlyArray<Operation> = []
