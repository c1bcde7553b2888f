/**
 * The default `CertificateRenderer` (a port of `@syllabus/core`): certificates drawn as PDFs
 * with pdfkit (`certificate-pdf.ts`) in a small pool of worker threads, off the event loop
 * (issue 23: a preview of a 64 KiB word without spaces took ~5 s of synchronous CPU, and every
 * other request waited for it). It lives in the HTTP adapter, as the other platform adapters
 * `syllabusLayer` provides by default do; an embedder may pass another renderer
 * (`SyllabusOptions.certificateRenderer`).
 *
 * - **Pool**: `size` threads (default min(2, cores)), started when first needed and unref'd
 *   (they never keep the process alive), closed with the layer's scope. One render per thread
 *   at a time.
 * - **Bounded queue**: renders waiting for a thread, at most `queue` (default 16); past it
 *   `RendererBusy` (503 with `Retry-After`).
 * - **Time budget**: a render has `budgetMs` (default 10 s) from when a loaded thread takes
 *   it; past it the thread is terminated (a new one is started at once, warming up for the
 *   next render) and the render fails with `RenderBudgetExceeded` (422: the same input would
 *   again).
 * - **The worker's script**: `certificate-render-worker.js` next to this module when built
 *   (dist, and the packed package); from the sources (tsx, vitest: this module is a `.ts`
 *   file) the `.ts` script, run through the tsx loader of the workspace.
 */
import { type CertificateDocument, CertificateRenderer, RenderBudgetExceeded, RendererBusy, RenderFailed } from "@syllabus/core"
import { Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { availableParallelism } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import type { RenderReply, RenderRequest } from "./certificate-render-worker.js"
import { isInstalled, notInstalled } from "./optional-module.js"

/** What drawing a certificate needs beyond @syllabus/http's own dependencies (its optional peers). */
const DRAWING_PACKAGES = ["pdfkit", "qrcode-generator", "wawoff2", "@fontsource/noto-sans"] as const

/** Why certificates cannot be drawn here, or `undefined` when they can. */
const drawingUnavailable = (): string | undefined => {
  const missing = DRAWING_PACKAGES.filter((name) => !isInstalled(name))
  return missing.length === 0 ? undefined : notInstalled("Drawing a certificate", missing)
}

export interface RenderPoolOptions {
  /** Render threads (default min(2, cores)). */
  readonly size?: number
  /** Renders waiting for a thread at most (default 16). */
  readonly queue?: number
  /** A render's time on its thread at most (default 10,000 ms). */
  readonly budgetMs?: number
}

export const DEFAULT_RENDER_BUDGET_MS = 10_000
export const DEFAULT_RENDER_QUEUE = 16

/**
 * The worker's thread: the built `.js` script when there is one (dist, the packed package);
 * else (this module is a `.ts` source, under tsx or vitest) a bootstrap that registers the
 * workspace's tsx loader (its `tsx/esm/api`), then imports the `.ts` script (Node 20 applies
 * no `--import` hook to a worker's entry).
 */
const startWorker = (): Worker => {
  const built = new URL("./certificate-render-worker.js", import.meta.url)
  if (existsSync(fileURLToPath(built))) return new Worker(built)
  const require = createRequire(import.meta.url)
  const manifest = require.resolve("tsx/package.json")
  const exported = (require(manifest) as { exports: Record<string, { import: { default: string } }> }).exports["./esm/api"]!
  const tsxApi = pathToFileURL(join(dirname(manifest), exported.import.default)).href
  const source = new URL("./certificate-render-worker.ts", import.meta.url).href
  return new Worker(`import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}) })`, { eval: true })
}

interface Job {
  readonly id: number
  readonly document: CertificateDocument
  readonly done: (outcome: Effect.Effect<Uint8Array, RenderFailed | RenderBudgetExceeded>) => void
}

interface Thread {
  worker: Worker | undefined
  /** Its worker has loaded (pdfkit and its fonts): renders are sent only then, so a budget is spent drawing. */
  ready: boolean
  job: Job | undefined
  timer: ReturnType<typeof setTimeout> | undefined
}

export interface RenderPool {
  readonly render: (document: CertificateDocument) => Effect.Effect<Uint8Array, RenderFailed | RenderBudgetExceeded | RendererBusy>
  /** Renders on a thread now, and waiting for one. */
  readonly load: () => { readonly running: number; readonly queued: number }
  readonly close: () => Promise<void>
}

export const makeRenderPool = (options: RenderPoolOptions = {}): RenderPool => {
  const size = Math.max(1, options.size ?? Math.min(2, availableParallelism()))
  const queueCap = Math.max(0, options.queue ?? DEFAULT_RENDER_QUEUE)
  const budgetMs = Math.max(1, options.budgetMs ?? DEFAULT_RENDER_BUDGET_MS)
  const threads: Array<Thread> = Array.from({ length: size }, () => ({ worker: undefined, ready: false, job: undefined, timer: undefined }))
  const queue: Array<Job> = []
  let ids = 0
  let closed = false
  // Checked once: a thread started without the drawing packages would fail to load, again and again.
  const unavailable = drawingUnavailable()

  /** The thread's job ends with `outcome`; a thread that failed or ran out of time is discarded. */
  const finish = (thread: Thread, outcome: Effect.Effect<Uint8Array, RenderFailed | RenderBudgetExceeded>, discard: boolean) => {
    const job = thread.job
    clearTimeout(thread.timer)
    thread.job = undefined
    thread.timer = undefined
    if (discard) {
      const worker = thread.worker
      thread.worker = undefined
      thread.ready = false
      void worker?.terminate()
    }
    job?.done(outcome)
    if (discard && !closed && thread.worker === undefined) thread.worker = start(thread)
    dispatch()
  }

  const start = (thread: Thread): Worker => {
    const worker = startWorker()
    worker.unref()
    worker.on("message", (reply: RenderReply) => {
      if (thread.worker !== worker) return
      if ("ready" in reply) {
        thread.ready = true
        return dispatch()
      }
      if (thread.job?.id !== reply.id) return
      finish(
        thread,
        "bytes" in reply ? Effect.succeed(new Uint8Array(reply.bytes)) : Effect.fail(new RenderFailed({ cause: reply.error })),
        false
      )
    })
    const lost = (cause: unknown) => {
      if (thread.worker !== worker) return
      if (thread.ready) return finish(thread, Effect.fail(new RenderFailed({ cause })), true)
      // It never loaded: the waiting renders fail, rather than a new thread started again and again.
      thread.worker = undefined
      void worker.terminate()
      for (const job of queue.splice(0)) job.done(Effect.fail(new RenderFailed({ cause })))
    }
    worker.on("error", lost)
    worker.on("exit", (code) => lost(new Error(`render worker exited (${code})`)))
    return worker
  }

  /** Give waiting renders to idle threads; start the threads they need (a stopped one is replaced at once). */
  const dispatch = () => {
    for (const thread of threads) {
      if (closed || queue.length === 0) return
      if (thread.job !== undefined) continue
      if (thread.worker === undefined) thread.worker = start(thread)
      if (!thread.ready) continue
      const job = queue.shift()!
      thread.job = job
      thread.timer = setTimeout(() => finish(thread, Effect.fail(new RenderBudgetExceeded({ budgetMs })), true), budgetMs)
      thread.timer.unref?.()
      thread.worker.postMessage({ id: job.id, document: job.document } satisfies RenderRequest)
    }
  }

  const busy = () => threads.filter((t) => t.job !== undefined).length

  return {
    render: (document) =>
      Effect.async<Uint8Array, RenderFailed | RenderBudgetExceeded | RendererBusy>((resume) => {
        if (closed) return resume(Effect.fail(new RenderFailed({ cause: "render pool closed" })))
        if (unavailable !== undefined) return resume(Effect.fail(new RenderFailed({ cause: unavailable })))
        if (busy() === size && queue.length >= queueCap) return resume(Effect.fail(new RendererBusy({ retryAfterSeconds: 1 })))
        const job: Job = { id: ++ids, document, done: resume }
        queue.push(job)
        dispatch()
        // Interrupted while waiting: leave the queue (a render already on a thread runs to its end or budget).
        return Effect.sync(() => {
          const at = queue.indexOf(job)
          if (at >= 0) queue.splice(at, 1)
        })
      }),
    load: () => ({ running: busy(), queued: queue.length }),
    close: async () => {
      closed = true
      for (const job of queue.splice(0)) job.done(Effect.fail(new RenderFailed({ cause: "render pool closed" })))
      await Promise.all(
        threads.map((thread) => {
          const worker = thread.worker
          thread.worker = undefined
          clearTimeout(thread.timer)
          thread.job?.done(Effect.fail(new RenderFailed({ cause: "render pool closed" })))
          thread.job = undefined
          return worker?.terminate()
        })
      )
    }
  }
}

/** Render one certificate in this thread (blocks the event loop while it draws: tools and tests, not a server). */
export const renderCertificatePdf = (c: CertificateDocument): Effect.Effect<Uint8Array, RenderFailed> =>
  Effect.tryPromise({
    try: async () => {
      const unavailable = drawingUnavailable()
      if (unavailable !== undefined) throw new Error(unavailable)
      return (await import("./certificate-pdf.js")).drawCertificatePdf(c)
    },
    catch: (cause) => new RenderFailed({ cause })
  })

/** The pdfkit renderer on a pool of worker threads, the default of `syllabusLayer`. */
export const pooledCertificateRenderer = (options: RenderPoolOptions = {}): Layer.Layer<CertificateRenderer> =>
  Layer.scoped(
    CertificateRenderer,
    Effect.map(
      Effect.acquireRelease(Effect.sync(() => makeRenderPool(options)), (pool) => Effect.promise(() => pool.close())),
      (pool) => ({ render: pool.render })
    )
  )

export const PdfCertificateRenderer: Layer.Layer<CertificateRenderer> = pooledCertificateRenderer()
