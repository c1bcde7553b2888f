/**
 * Sync a school's roster into Syllabus users: every student of the roster that has no user
 * yet (by e-mail) gets one. Each creation carries an idempotency key derived from the
 * student, so a sync that failed half-way can simply run again.
 */
import { createHash } from "node:crypto"
import type { SyllabusClient } from "./client.js"

export interface Student {
  readonly name: string
  readonly email: string
}

export interface SyncReport {
  readonly created: ReadonlyArray<string>
  readonly existing: ReadonlyArray<string>
}

const allUserEmails = async (client: SyllabusClient): Promise<Set<string>> =>
  new Set((await client.all("/users?limit=200")).map((user: { email: string }) => user.email.toLowerCase()))

export const syncRoster = async (client: SyllabusClient, roster: ReadonlyArray<Student>): Promise<SyncReport> => {
  const known = await allUserEmails(client)
  const created: Array<string> = []
  const existing: Array<string> = []
  for (const student of roster) {
    const email = student.email.toLowerCase()
    if (known.has(email)) {
      existing.push(email)
      continue
    }
    // Keys take letters, digits and `._:-` only: a digest of the address (which also keeps it out of logs).
    await client.post("/users", { name: student.name, email }, `roster-sync:${createHash("sha256").update(email).digest("hex").slice(0, 40)}`)
    known.add(email)
    created.push(email)
  }
  return { created, existing }
}
