/** Operations of the "webhooks" group beyond the derived list/get/create/update/delete. */
import type { Operation } from "../operation.js"

export const webhooksRoutes: ReadonlyArray<Operation> = []
