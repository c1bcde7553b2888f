/**
 * Every kept figure of the release (`records/kept-figures.ts`): a store keeps them with every
 * write of the types they count (`keepingFigures` around its `Records`).
 */
import { planUsageFigures } from "../limits/plan-limits.js"
import type { KeptFigures } from "../records/kept-figures.js"
import { reportsKeptFigures } from "../reports/figures.js"

export const keptFigures = (): ReadonlyArray<KeptFigures> => [...reportsKeptFigures, ...planUsageFigures]
