/**
 * The stores the contract suite runs on: memory, PostgreSQL, and PostgreSQL through a PgBouncer
 * in transaction mode (`pgbouncer`, `test/support/pgbouncer.ts`); all three unless
 * `SYLLABUS_TEST_STORES` names some (comma-separated, e.g. `memory`), as mutation testing does
 * (`pnpm mutate`, docs/mutation-testing.md) to shorten each run. The full suite and CI run all.
 */
export const allStores = ["memory", "postgresql", "pgbouncer"] as const

export type StoreName = (typeof allStores)[number]

const onlyStores = process.env["SYLLABUS_TEST_STORES"]?.split(",").filter((name) => name !== "") ?? []
export const stores: ReadonlyArray<StoreName> = onlyStores.length === 0 ? allStores : allStores.filter((store) => onlyStores.includes(store))
