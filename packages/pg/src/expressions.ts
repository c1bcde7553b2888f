/**
 * The SQL expressions over a record's data that statements test and sort by, and that the
 * access-path indexes are built on (`access-paths.ts`). A statement can only use an index on
 * an expression that is the same expression, so both are written by these functions, with the
 * field name (and the record type) as SQL literals: names come from code and are validated
 * (`fieldPattern`), so writing them into SQL is safe; values are always statement parameters.
 */

/** A field name or record type that may be written into SQL as a literal. */
export const fieldPattern = /^[a-z_][a-z0-9_]*$/

export const isSqlName = (name: string): boolean => fieldPattern.test(name)

const checked = (name: string): string => {
  if (!isSqlName(name)) throw new Error(`Records: invalid field name ${JSON.stringify(name)}`)
  return name
}

/** The field as JSON, with a missing field as JSON null (so `eq null` and `eq value` are one index). */
export const jsonExpr = (field: string): string => `COALESCE(data -> '${checked(field)}', 'null'::jsonb)`

/** The field as the key of an aggregate's group: a JSON scalar, or JSON null for a missing field, an object or an array. */
export const groupKeyExpr = (field: string): string =>
  `(CASE WHEN jsonb_typeof(data -> '${checked(field)}') IN ('string', 'number', 'boolean') THEN data -> '${field}' ELSE 'null'::jsonb END)`

/** The field as a number, NULL when it is not a JSON number (CASE: AND does not guard a cast). */
export const numericExpr = (field: string): string =>
  `(CASE WHEN jsonb_typeof(data -> '${checked(field)}') = 'number' THEN (data ->> '${field}')::numeric END)`

/** The field as text in bytewise order, NULL when it is not a JSON string. */
export const stringExpr = (field: string): string =>
  `((CASE WHEN jsonb_typeof(data -> '${checked(field)}') = 'string' THEN data ->> '${field}' END) COLLATE "C")`

/**
 * The field lowered, NULL when it is not a JSON string: what `contains` matches with LIKE, and
 * what its trigram index (`gin_trgm_ops`) holds. One expression, without a separate type guard
 * (a guard has no statistics: its default selectivity would make every search look empty).
 */
export const searchExpr = (field: string): string =>
  `lower(CASE WHEN jsonb_typeof(data -> '${checked(field)}') = 'string' THEN data ->> '${field}' END)`

/** A sort or range of a kind: `id` is the column, a data field its typed expression. */
export const orderExpr = (field: string, kind: "text" | "number"): string =>
  field === "id" ? "id" : kind === "number" ? numericExpr(field) : stringExpr(field)

/** `type = '<type>'`: a literal, so that the planner prunes `records` to the type's partition while it plans. */
export const typeCondition = (type: string): string => `type = '${checked(type)}'`
