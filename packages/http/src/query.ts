/**
 * Query parameters shared by collections (§4.2): `limit` 1..200 (default 50), `cursor`, and
 * `sort` restricted to the values each operation declares (a leading `-` reverses).
 */
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from "@syllabus/core"
import { Schema } from "effect"

export const LimitParam = Schema.String.pipe(
  Schema.filter((s) => /^\d{1,4}$/.test(s) && Number(s) >= 1 && Number(s) <= MAX_PAGE_LIMIT || `out_of_range|min=1|max=${MAX_PAGE_LIMIT}`),
  Schema.annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT } })
)

/** Any text: one that is not a cursor of ours (too long, altered, expired) is 400 `invalid_cursor` where it is decoded (§4.2). */
export const CursorParam = Schema.String.annotations({ description: "`page.next_cursor` or `page.prev_cursor` of the previous page." })

export const SortParam = <const S extends ReadonlyArray<string>>(...fields: S) => {
  const values = fields.flatMap((f) => [f, `-${f}`])
  // `override`: one message for the union, not one per literal it failed to be.
  return Schema.Literal(...(values as [string, ...Array<string>])).annotations({
    message: () => ({ message: `invalid_value|allowed=${values.join(", ")}`, override: true })
  })
}

/** `limit`, `cursor`, `sort` for a collection sorted by the given fields. */
export const pageQuery = <const S extends ReadonlyArray<string>>(...sorts: S) => ({
  limit: Schema.optional(LimitParam),
  cursor: Schema.optional(CursorParam),
  sort: Schema.optional(SortParam(...sorts))
})

export const pageLimit = (limit: string | undefined): number => (limit === undefined ? DEFAULT_PAGE_LIMIT : Number(limit))

export const sortSpec = (sort: string, kind: "text" | "number" = "text") => ({
  field: sort.replace(/^-/, ""),
  kind,
  direction: sort.startsWith("-") ? ("desc" as const) : ("asc" as const)
})
