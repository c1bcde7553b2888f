/** Readable output: tables, key/value listings and the progress bar. */

/** A field of a JSON object as text (`-` when absent or null). */
export const text = (value: unknown, ...path: ReadonlyArray<string>): string => {
  let current = value
  for (const key of path) {
    if (typeof current !== "object" || current === null || !(key in current)) return "-"
    current = (current as Record<string, unknown>)[key]
  }
  if (current === null || current === undefined) return "-"
  return typeof current === "object" ? JSON.stringify(current) : String(current)
}

export interface Column {
  readonly title: string
  readonly value: (row: unknown) => string
}

export const column = (title: string, ...path: ReadonlyArray<string>): Column => ({ title, value: (row) => text(row, ...path) })

/** Rows under a header, each column as wide as its widest cell. */
export const table = (rows: ReadonlyArray<unknown>, columns: ReadonlyArray<Column>): string => {
  const cells = [columns.map((c) => c.title), ...rows.map((row) => columns.map((c) => c.value(row)))]
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)))
  const lines = cells.map((line) => line.map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "))
  return lines.join("\n") + "\n" + (rows.length === 0 ? "(none)\n" : "")
}

/** One `name  value` line per column, for a single resource. */
export const details = (row: unknown, columns: ReadonlyArray<Column>): string => {
  const width = Math.max(...columns.map((c) => c.title.length))
  return columns.map((c) => `${c.title.padEnd(width)}  ${c.value(row)}`).join("\n") + "\n"
}

/** `[#########-----------] 3/7` */
export const progressBar = (done: number, total: number, width = 30): string => {
  const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : 0
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total}`
}
