/**
 * A throwaway PostgreSQL database per test file, on the server chosen by the global setup
 * (`test/support/database.ts`). Dropped when the scope closes.
 */
import { PgClient } from "@effect/sql-pg"
import { randomBytes } from "node:crypto"
import { createRequire } from "node:module"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { inject } from "vitest"

/** Create `syllabus_t_<random>` and return its URL; drop it (closing its connections) on close. */
export const freshPgDatabase: Effect.Effect<{ readonly url: string }, never, Scope.Scope> = Effect.gen(function*() {
  const serverUrl = inject("databaseUrl")
  const name = `syllabus_t_${randomBytes(6).toString("hex")}`
  const admin = Context.get(
    yield* Layer.build(PgClient.layer({ url: Redacted.make(serverUrl), maxConnections: 1 })),
    PgClient.PgClient
  )
  yield* admin`CREATE DATABASE ${admin(name)}`
  // Registered after the admin pool, so it runs before that pool closes. FORCE: the pools of
  // the tests may not have closed yet.
  yield* Effect.addFinalizer(() =>
    admin`DROP DATABASE IF EXISTS ${admin(name)} WITH (FORCE)`.pipe(
      Effect.catchAll((error) => Effect.logWarning(`could not drop test database ${name}`, error))
    )
  )
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return { url: url.toString() }
}).pipe(Effect.orDie)

/** The `pg` driver the stores use (the one `@syllabus/pg` resolves), to watch what it sends. */
const driver = createRequire(createRequire(import.meta.url).resolve("@syllabus/pg"))("pg") as {
  Client: { prototype: { query: (...args: Array<unknown>) => unknown } }
}

/** A statement the driver sent: its text (whitespace folded) and the server's port. */
export interface SentStatement {
  readonly text: string
  readonly port: number
}

/** Every statement the driver sends while `effect` runs, in order, with the port of the server it went to. */
export const statementsDuring = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<Array<SentStatement>, E, R> =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const sent: Array<SentStatement> = []
      const query = driver.Client.prototype.query
      driver.Client.prototype.query = function(this: { readonly port?: number }, ...args: Array<unknown>) {
        const first = args[0] as string | { readonly text?: string }
        sent.push({ text: (typeof first === "string" ? first : first.text ?? "").replace(/\s+/g, " ").trim(), port: Number(this.port) })
        return query.apply(this, args)
      }
      return { sent, query }
    }),
    ({ sent }) => Effect.as(effect, sent),
    ({ query }) => Effect.sync(() => (driver.Client.prototype.query = query))
  )

/** The text of every statement the driver sends while `effect` runs, in order (whitespace folded). */
export const sentDuring = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<Array<string>, E, R> =>
  Effect.map(statementsDuring(effect), (sent) => sent.map((statement) => statement.text))
