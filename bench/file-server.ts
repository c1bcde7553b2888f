/**
 * The server child of the benchmarks that upload files (imports, hostile imports, locks): the
 * real app with its workers on PostgreSQL (a fresh database, dropped at the end) or in memory,
 * file bytes in a temporary directory, rate limits off; a bench account opened and served
 * (`serveBenchAccount`: the parent gets `{ port, secret, sandboxSecret, database }`). On any
 * message from the parent it stops the app, then removes the directory and the database.
 * Imported only by the child, so the parent never loads the app.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import { makeNodeListener } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { LocalFileStorage } from "@syllabus/storage"
import { freshDatabase } from "./pg.js"
import { serveBenchAccount } from "./shared.js"

export const serveFileBench = async (store: "postgresql" | "memory", name: string): Promise<void> => {
  const scope = Effect.runSync(Scope.make())
  const url = store === "postgresql" ? (await Effect.runPromise(Scope.extend(freshDatabase, scope))).url : undefined
  const directory = mkdtempSync(join(tmpdir(), `syllabus-${name}-bench-`))
  const app = await makeNodeListener({ store: url === undefined ? MemoryStore : pgLayer(url), storage: LocalFileStorage({ directory }), rateLimits: "off" })
  await serveBenchAccount(app, { subdomain: `bench${Date.now()}`, extra: { database: url === undefined ? null : new URL(url).pathname.slice(1) } })
  process.on("message", async () => {
    // The workers stop before their database goes.
    await app.dispose()
    rmSync(directory, { recursive: true, force: true })
    await Effect.runPromise(Scope.close(scope, Exit.void))
    process.exit(0)
  })
}
