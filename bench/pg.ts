/** A throwaway PostgreSQL database for one benchmark server (as test/support/pg.ts does for tests). */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { defaultDatabaseUrl } from "./shared.js"

const serverUrl = () => process.env["DATABASE_URL"] ?? defaultDatabaseUrl

/** The URL of the database `name` on the server of `DATABASE_URL`. */
export const databaseUrl = (name: string): string => {
  const url = new URL(serverUrl())
  url.pathname = `/${name}`
  return url.toString()
}

/** A throwaway database on the server of `DATABASE_URL`, dropped when the scope closes. */
export const freshDatabase = Effect.gen(function* () {
  const name = `syllabus_bench_${randomBytes(6).toString("hex")}`
  const admin = Context.get(
    yield* Layer.build(PgClient.layer({ url: Redacted.make(serverUrl()), maxConnections: 1 })),
    PgClient.PgClient
  )
  yield* admin`CREATE DATABASE ${admin(name)}`
  yield* Effect.addFinalizer(() =>
    admin`DROP DATABASE IF EXISTS ${admin(name)} WITH (FORCE)`.pipe(
      Effect.catchAll((error) => Effect.logWarning(`could not drop benchmark database ${name}`, error))
    )
  )
  return { name, url: databaseUrl(name) }
}).pipe(Effect.orDie)
