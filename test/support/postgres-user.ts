/**
 * What the tests' own PostgreSQL processes share (a PgBouncer, a replicated cluster): PostgreSQL
 * and PgBouncer refuse to run as root, so as root they run as the `postgres` OS user, which must
 * own their files; and a server's URL moved to another local port.
 */
import { execFileSync } from "node:child_process"

/** As root, the `postgres` OS user (its name and ids); otherwise `undefined`: run as the current user. */
export const postgresUser = (): { readonly user: string; readonly uid: number; readonly gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim())
  const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim())
  return { user: "postgres", uid, gid }
}

/** `url` on 127.0.0.1:`port` (a pooler in front of its server, or another server). */
export const onLocalPort = (url: string, port: number): string => {
  const moved = new URL(url)
  moved.hostname = "127.0.0.1"
  moved.port = String(port)
  return moved.toString()
}
