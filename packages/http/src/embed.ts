/**
 * Embedding: a web-standard `fetch` handler and a Node `(req, res)` listener, each built
 * from a store layer in one call. These are the edge where Effect meets callers that are
 * not Effect programs, so they run the layer themselves.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { openAccount, type OpenAccountInput, type OpenedAccount } from "@syllabus/core"
import { Effect, ManagedRuntime } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import { app } from "./api.js"
import { type SyllabusOptions, syllabusLayer } from "./layer.js"
import { type EdgeLimits, type NodeEdge, nodeEdge } from "./node-edge.js"
import { type AppServices, ServerSettings } from "./services.js"

/**
 * Run `effect` (which builds a handler) so that the handler honours
 * `ServerSettings.traceRequests`: unless it is on, the platform opens no `http.server` span
 * per request. A handler captures the fiber refs of the fiber that builds it, so setting the
 * predicate around the build holds for every request it serves.
 */
export const honouringTraceRequests = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | ServerSettings> =>
  Effect.flatMap(ServerSettings, (settings) =>
    settings.traceRequests ? effect : HttpMiddleware.withTracerDisabledWhenEffect(effect, () => true)
  )

export interface Embedding {
  /** Open an account (an administrator and a credential per environment); secrets are in the result only. */
  readonly openAccount: (input: OpenAccountInput) => Promise<OpenedAccount>
  /** Release the store (connections, timers). */
  readonly dispose: () => Promise<void>
}

const embedding = <E>(options: SyllabusOptions<E>) => {
  const runtime = ManagedRuntime.make(syllabusLayer(options))
  return {
    runtime,
    openAccount: (input: OpenAccountInput) => runtime.runPromise(openAccount(input)),
    dispose: () => runtime.dispose()
  }
}

/** The app as a web-standard handler on `runtime` (its store, clock and ports), e.g. a runtime of your own layer. */
export const webHandlerOf = async <E>(
  runtime: ManagedRuntime.ManagedRuntime<AppServices, E>
): Promise<(request: Request) => Promise<Response>> => {
  const withSettings = await runtime.runPromise(honouringTraceRequests(Effect.runtime<AppServices>()))
  const handler = HttpApp.toWebHandlerRuntime(withSettings)(app)
  return (request) => handler(request)
}

/** `handler(request) => Promise<Response>` for any host that speaks web-standard fetch. */
export const makeFetchHandler = async <E>(
  options: SyllabusOptions<E>
): Promise<Embedding & { readonly handler: (request: Request) => Promise<Response> }> => {
  const { runtime, ...rest } = embedding(options)
  return { ...rest, handler: await webHandlerOf(runtime) }
}

/**
 * The app as a Node listener behind the edge (`node-edge.ts`): the caps on unfinished requests
 * and the bounded drain of bodies the answer did not need. The standalone server and the
 * contract suite serve through it.
 */
export const makeNodeEdge = (limits: Partial<EdgeLimits> = {}): Effect.Effect<NodeEdge, never, AppServices> =>
  Effect.map(
    honouringTraceRequests(NodeHttpServer.makeHandler(app)),
    (handler) => nodeEdge(handler as (req: IncomingMessage, res: ServerResponse) => void, limits)
  )

/**
 * A Node listener for `http.createServer(listener)`, or for a path of an existing server.
 * Wire the rest of the edge to the server that serves it, so that the requests Node's parser
 * refuses get the envelope too and the timeouts are sized for JSON:
 *
 * ```ts
 * const syllabus = await makeNodeListener({ store: MemoryStore })
 * const server = createServer(syllabus.serverOptions, syllabus.listener) // or your own listener calling it
 * syllabus.attach(server) // timeouts, and server.on("clientError", syllabus.clientError)
 * ```
 *
 * `edge` overrides the limits (`defaultEdgeLimits`).
 */
export const makeNodeListener = async <E>(
  options: SyllabusOptions<E> & { readonly edge?: Partial<EdgeLimits> }
): Promise<Embedding & NodeEdge> => {
  const { runtime, ...rest } = embedding(options)
  const edge = await runtime.runPromise(makeNodeEdge(options.edge))
  return { ...rest, ...edge }
}
