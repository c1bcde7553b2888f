/**
 * Embedding: a web-standard `fetch` handler and a Node `(req, res)` listener, each built
 * from a store layer in one call. These are the edge where Effect meets callers that are
 * not Effect programs, so they run the layer themselves.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Effect, ManagedRuntime } from "effect"
import { app } from "./api.js"
import { type SyllabusOptions, syllabusLayer } from "./layer.js"

/** `handler(request) => Promise<Response>`; call `dispose()` on shutdown. */
export const makeFetchHandler = <E>(options: SyllabusOptions<E>) =>
  HttpApp.toWebHandlerLayer(app, syllabusLayer(options))

/** A Node listener for `http.createServer(listener)` or a route of an existing server. */
export const makeNodeListener = async <E>(
  options: SyllabusOptions<E>
): Promise<{
  readonly listener: (req: IncomingMessage, res: ServerResponse) => void
  readonly runtime: ManagedRuntime.ManagedRuntime<unknown, unknown>
  readonly dispose: () => Promise<void>
}> => {
  const runtime = ManagedRuntime.make(syllabusLayer(options))
  const listener = await runtime.runPromise(NodeHttpServer.makeHandler(app) as Effect.Effect<(req: IncomingMessage, res: ServerResponse) => void, never, never>)
  return { listener, runtime: runtime as ManagedRuntime.ManagedRuntime<unknown, unknown>, dispose: () => runtime.dispose() }
}
