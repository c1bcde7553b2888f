/**
 * Deprecation (§9), in one place: what a request meets and what the server lists.
 *
 * Two things can be deprecated: a whole operation (`ServerSettings.deprecations`, by operation
 * ID; none in this release) and a query parameter of an operation, an alias kept for a
 * replacement (`parameterDeprecations`, the release's list). Either way the rule is the same:
 * the answer carries `Deprecation`, `Sunset` and `Link`; after the sunset the call is 410
 * `operation_sunset`; the description marks it `deprecated: true` with `x-deprecated-at` and
 * `x-sunset`. `GET /capabilities` lists deprecated operations in `deprecations[]`, exactly as
 * §4.5 shapes its entries, and deprecated parameters apart, in `deprecated_parameters[]`: a
 * client that follows §9 reads `deprecations[]` as "this operation goes away", which an alias
 * parameter does not mean.
 * The pipeline (`deprecationOf`), the description (`openapi.ts`) and the capabilities route
 * (`deprecationList`) all read it from here.
 */
import { formatTimestamp } from "@syllabus/core"
import type { Deprecation, ServerSettingsShape } from "./services.js"

/** A query parameter deprecated in favour of another. */
export interface ParameterDeprecation extends Deprecation {
  readonly operationId: string
  readonly parameter: string
  /** The parameter to send instead. */
  readonly replacement: string
}

/** The query parameters this release deprecates. */
export const parameterDeprecations: ReadonlyArray<ParameterDeprecation> = [
  {
    // 3.4.1–3.4.2 gave rankings `product_id[]`; `product_id` stays as an alias taking one value.
    operationId: "reports.rankings.get",
    parameter: "product_id",
    replacement: "product_id[]",
    deprecatedAt: Date.UTC(2026, 5, 1),
    sunsetAt: Date.UTC(2027, 5, 1)
  }
]

const byOperation = new Map<string, ReadonlyMap<string, ParameterDeprecation>>()
for (const deprecation of parameterDeprecations) {
  byOperation.set(deprecation.operationId, new Map([...(byOperation.get(deprecation.operationId) ?? []), [deprecation.parameter, deprecation]]))
}
const none: ReadonlyMap<string, ParameterDeprecation> = new Map()

/** The deprecated parameters of an operation, by name. */
export const deprecatedParametersOf = (operationId: string): ReadonlyMap<string, ParameterDeprecation> =>
  byOperation.get(operationId) ?? none

/**
 * The deprecation a request meets: its operation's, else that of a deprecated query parameter it
 * sends (the one whose sunset comes first), else none.
 */
export const deprecationOf = (
  settings: ServerSettingsShape,
  operationId: string,
  parameters: Iterable<string>
): Deprecation | undefined => {
  const operation = settings.deprecations.get(operationId)
  if (operation !== undefined) return operation
  const deprecated = deprecatedParametersOf(operationId)
  let met: Deprecation | undefined
  for (const name of parameters) {
    const found = deprecated.get(name)
    if (found !== undefined && (met === undefined || found.sunsetAt < met.sunsetAt)) met = found
  }
  return met
}

/** The response headers of a deprecation (§9). */
export const deprecationHeaders = (settings: ServerSettingsShape, deprecation: Deprecation): Readonly<Record<string, string>> => ({
  deprecation: `@${Math.floor(deprecation.deprecatedAt / 1000)}`,
  sunset: new Date(deprecation.sunsetAt).toUTCString(),
  link: `<${settings.docsUrl}/deprecations>; rel="deprecation"`
})

/** `deprecations[]` of `GET /capabilities` (§4.5): the operations the server deprecates. */
export const deprecationList = (settings: ServerSettingsShape) =>
  [...settings.deprecations.entries()].map(([operation_id, d]) => ({
    operation_id,
    deprecated_at: formatTimestamp(d.deprecatedAt),
    sunset_at: formatTimestamp(d.sunsetAt)
  }))

/** `deprecated_parameters[]` of `GET /capabilities`: the release's deprecated query parameters, each with its replacement. */
export const deprecatedParameterList = () =>
  parameterDeprecations.map((d) => ({
    operation_id: d.operationId,
    parameter: d.parameter,
    replacement: d.replacement,
    deprecated_at: formatTimestamp(d.deprecatedAt),
    sunset_at: formatTimestamp(d.sunsetAt)
  }))
