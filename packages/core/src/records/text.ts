/**
 * The one rule for text, on every store: what the contract accepts is what PostgreSQL can
 * store. Its `text` and `jsonb` refuse U+0000, and a UTF-16 surrogate without its pair has no
 * UTF-8 form; the memory store would keep both. So a request carrying either, in a body string
 * (or a body object's key) or a query parameter, is refused before any use case sees it:
 * 422 `validation_failed`, one detail per place, code `invalid_value`, reason
 * `invalid_characters`.
 */
import type { Json } from "../ports/store.js"

/** U+0000, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

export const isStorableText = (text: string): boolean => !UNSTORABLE.test(text)

/** The text as a detail can name it: the unstorable characters replaced by U+FFFD. */
export const storableForm = (text: string): string =>
  text.replace(/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd")

/**
 * The places in `value` holding unstorable text, as detail paths (`name`, `items[2].payload.name`):
 * a string, or an object key (named by the path to it, with the key in its storable form).
 */
export const unstorableTextPaths = (value: Json | undefined, path = ""): ReadonlyArray<string> => {
  if (typeof value === "string") return isStorableText(value) ? [] : [path]
  if (value === null || typeof value !== "object") return []
  if (Array.isArray(value)) return value.flatMap((item, i) => unstorableTextPaths(item, `${path}[${i}]`))
  return Object.entries(value).flatMap(([key, item]) => {
    const at = path === "" ? storableForm(key) : `${path}.${storableForm(key)}`
    return isStorableText(key) ? unstorableTextPaths(item, at) : [at]
  })
}
