/**
 * What a unit of work sends to PostgreSQL, observed on the driver itself as the server receives
 * it (structure, not time): its appends of streams (audit entries, events) in one statement, not
 * one each (packages/pg/src/internal.ts, `appendLater`), sent with the receipt the unit completes
 * or alone right before COMMIT; a record it already read by key not asked for again until it
 * writes it (`UnitState.reads`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Idempotency, Records, type Tenant, UnitOfWork } from "@syllabus/core"
import { pgLayer } from "@syllabus/pg"
import { freshPgDatabase, sentDuring } from "../support/pg.js"


const tenant: Tenant = { accountId: "acc_appends", environment: "production" }
const insertsOfRecords = (sent: ReadonlyArray<string>) => sent.filter((text) => text.includes("INSERT INTO records"))

const stores = Effect.gen(function*() {
  const { url } = yield* freshPgDatabase
  const context = yield* Layer.build(pgLayer(url, { maxConnections: 2, background: false }))
  return { records: Context.get(context, Records), idempotency: Context.get(context, Idempotency), uow: Context.get(context, UnitOfWork) }
})

describe("what a unit of work sends [postgresql]", () => {
  it.live("with the receipt it completes: its audit entry and its events go in the receipt's statement", () =>
    Effect.gen(function*() {
      const { idempotency, records, uow } = yield* stores
      yield* idempotency.claim(tenant, "key-1", { operationId: "op", fingerprint: "fp", token: "tok", now: 1, staleBefore: 0, expiresAt: Date.now() + 60_000 })
      const sent = yield* sentDuring(uow.transaction(Effect.gen(function*() {
        yield* records.insert(tenant, "product", "prd_1", { name: "One" })
        yield* records.insert(tenant, "audit_entry", "aud_1", { action: "created" })
        yield* records.insert(tenant, "event", "evt_1", { type: "product.created" })
        yield* records.insert(tenant, "event", "evt_2", { type: "product.updated" })
        yield* idempotency.complete(tenant, "key-1", "tok", { status: 201, headers: {}, body: null })
      })))
      const inserts = insertsOfRecords(sent)
      expect(inserts).toHaveLength(2)
      expect(inserts[0]).toContain("VALUES")
      expect(inserts[1]).toMatch(/^\/\* prepared \*\/ WITH appended AS \(INSERT INTO records .*\) UPDATE idempotency_receipts/)
      expect(sent.at(-1)).toBe("COMMIT")
      expect((yield* records.getMany(tenant, "event", ["evt_1", "evt_2"])).map((r) => r.id).sort()).toEqual(["evt_1", "evt_2"])
      expect(yield* records.get(tenant, "audit_entry", "aud_1")).toBeDefined()
    }).pipe(Effect.scoped), 30_000)

  it.live("without a receipt: in one statement right before COMMIT", () =>
    Effect.gen(function*() {
      const { records, uow } = yield* stores
      const sent = yield* sentDuring(uow.transaction(Effect.gen(function*() {
        yield* records.insert(tenant, "audit_entry", "aud_2", { action: "created" })
        yield* records.get(tenant, "product", "prd_2")
        yield* records.insert(tenant, "event", "evt_3", { type: "product.created" })
      })))
      expect(insertsOfRecords(sent)).toHaveLength(1)
      expect(sent.at(-2)).toContain("jsonb_to_recordset")
      expect(sent.at(-1)).toBe("COMMIT")
      expect(yield* records.get(tenant, "event", "evt_3")).toBeDefined()
    }).pipe(Effect.scoped), 30_000)

  it.live("a record read by key is asked for once, until the unit writes it", () =>
    Effect.gen(function*() {
      const { records, uow } = yield* stores
      yield* records.insert(tenant, "showcase", "shw_1", { name: "One" })
      const reads = (sent: ReadonlyArray<string>) => sent.filter((text) => text.includes("type = 'showcase' AND id ="))
      const sent = yield* sentDuring(uow.transaction(Effect.gen(function*() {
        for (let i = 0; i < 5; i++) expect((yield* records.get(tenant, "showcase", "shw_1"))?.data).toEqual({ name: "One" })
        expect(yield* records.get(tenant, "showcase", "shw_2")).toBeUndefined()
        expect(yield* records.get(tenant, "showcase", "shw_2")).toBeUndefined()
        yield* records.update(tenant, "showcase", "shw_1", { name: "Two" })
        expect((yield* records.get(tenant, "showcase", "shw_1"))?.data).toEqual({ name: "Two" })
        yield* records.insert(tenant, "showcase", "shw_2", { name: "New" })
        expect((yield* records.get(tenant, "showcase", "shw_2"))?.data).toEqual({ name: "New" })
      })))
      // shw_1 twice (before and after its update), shw_2 twice (before and after its insert); the update's own statement is not a read.
      expect(reads(sent).filter((text) => text.startsWith("/* prepared */ SELECT"))).toHaveLength(4)
    }).pipe(Effect.scoped), 30_000)
})
