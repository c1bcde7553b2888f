/**
 * Product defects a property finds today. Each entry marks exactly one case (property, store,
 * operation) as `it.fails`: the run stays green while the defect is visible, and the day the
 * defect is fixed the case passes, `it.fails` fails, and the entry must go.
 *
 * Keys: `<property>|<store>|<operation id or *>`. Every entry is described, with the request,
 * the answer and what the contract expects, in docs/reliability.md ("Fuzzing from the
 * description").
 */
const bothStores = (property: string, operationId: string, defect: string): Array<[string, string]> => [
  [`${property}|memory|${operationId}`, defect],
  [`${property}|postgresql|${operationId}`, defect]
]

/**
 * (operation, status, code) the server answers and the description does not list: the general
 * properties skip exactly these, and "declared-codes" cases reproduce each one. None today
 * (F2, the codes of banners, navigation and taxonomies, is fixed: docs/reliability.md).
 */
export const undeclaredCodes: ReadonlyArray<{ readonly operationId: string; readonly status: number; readonly code: string }> = []

export const isKnownUndeclared = (operationId: string, status: number, code: string): boolean =>
  undeclaredCodes.some((u) => u.operationId === operationId && u.status === status && u.code === code)

/** None today: F1 to F5 of docs/reliability.md are fixed, and their cases are plain tests. */
export const knownDefects: Readonly<Record<string, string>> = Object.fromEntries(
  undeclaredCodes.flatMap((u) => bothStores("declared-codes", u.operationId, `(${u.status} ${u.code}) is not in the description`))
)

/** `FUZZ_KNOWN_DEFECTS=show` runs the known cases as plain tests, to read their failures. */
const show = process.env["FUZZ_KNOWN_DEFECTS"] === "show"

export const knownDefect = (property: string, store: string, operationId = "*"): string | undefined =>
  show ? undefined : knownDefects[`${property}|${store}|${operationId}`]
