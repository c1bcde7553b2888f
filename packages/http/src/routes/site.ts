/** Operations of the "site" group beyond the derived list/get/create/update/delete. */
import type { Operation } from "../operation.js"

export const siteRoutes: ReadonlyArray<Operation> = []
