/**
 * The certificate render pool (issue 23, finding 5): renders on worker threads, a bounded
 * queue (`RendererBusy` past it), a time budget that stops the thread (`RenderBudgetExceeded`)
 * and a replacement thread for the next render.
 */
import type { CertificateDocument } from "@syllabus/core"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeRenderPool } from "../src/certificate-renderer.js"

const line = { enabled: true, color: "#000000", font: "arial" } as const
const certificate = (content: string): CertificateDocument => ({
  product: { name: "Pool" },
  defaults: { color: "#000000", font: "arial" },
  layout: {
    showDates: true,
    showProductName: true,
    backSideEnabled: false,
    lines: { name: line, date: line, document: line, sequence: line },
    qr: { enabled: true, position: "bottom-right", color: "#000000", backgroundColor: "#FFFFFF" }
  },
  content,
  instructor: null,
  workload: null,
  fields: [],
  learner: { name: "Ada", document: null },
  issuedAt: "2026-11-28T00:00:00Z",
  sequence: 1,
  code: "PREVIEW",
  background: null,
  preview: true
})
const heavy = certificate("W".repeat(64 * 1024))
const light = certificate("Completed the course.")

describe("certificate render pool", () => {
  it("renders a PDF on a thread; past the queue a render is refused at once (RendererBusy); past the budget it is stopped, and the next render goes through", async () => {
    const pool = makeRenderPool({ size: 1, queue: 1, budgetMs: 1500 })
    try {
      const pdf = await Effect.runPromise(pool.render(light))
      expect(Buffer.from(pdf).subarray(0, 5).toString("latin1")).toBe("%PDF-")
      // One on the thread, one waiting: a third is refused without waiting.
      const first = Effect.runPromise(Effect.either(pool.render(heavy)))
      const second = Effect.runPromise(Effect.either(pool.render(light)))
      expect(pool.load()).toEqual({ running: 1, queued: 1 })
      const third = await Effect.runPromise(Effect.either(pool.render(light)))
      expect(third._tag === "Left" && third.left._tag).toBe("RendererBusy")
      const stopped = await first
      expect(stopped._tag === "Left" && stopped.left._tag).toBe("RenderBudgetExceeded")
      // The waiting one runs on the replacement thread.
      const after = await second
      expect(after._tag).toBe("Right")
    } finally {
      await pool.close()
    }
  }, 60_000)
})
