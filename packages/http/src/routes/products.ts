/** Operations of the "products" group beyond the derived list/get/create/update/delete. */
import type { Operation } from "../operation.js"

export const productsRoutes: ReadonlyArray<Operation> = []
