#!/usr/bin/env node
/**
 * The standalone server.
 *
 *   syllabus-server [--demo]          serve on PORT/HOST (in memory unless DATABASE_URL is set)
 *   syllabus-server create-account --name N --subdomain S --admin-email E --admin-name A --admin-password P
 */
import { syllabusLayer, app } from "@syllabus/http"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer } from "effect"
import { createServer } from "node:http"
import { parseArgs } from "node:util"
import { type AccountRequest, DEMO_ACCOUNT, describeAccount, openAccountFrom } from "./accounts.js"
import { configuredKeys, ServerConfig } from "./config.js"
import { fileStorageLayer, storeLayer } from "./store.js"

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    demo: { type: "boolean", default: false },
    name: { type: "string" },
    subdomain: { type: "string" },
    "admin-email": { type: "string" },
    "admin-name": { type: "string" },
    "admin-password": { type: "string" }
  }
})

const program = Effect.gen(function* () {
  const config = yield* ServerConfig
  const store = storeLayer(config)
  const keys = configuredKeys(config)
  const services = syllabusLayer({
    store: store.layer,
    storage: fileStorageLayer(config),
    ...(keys ? { keys } : {}),
    rateLimits: config.rateLimits,
    allowLocalWebhooks: config.allowLocalWebhooks,
    settings: { docsUrl: config.docsUrl, traceRequests: config.traceRequests }
  })

  if (positionals[0] === "create-account") {
    const request: AccountRequest = {
      name: values.name ?? "",
      subdomain: values.subdomain ?? "",
      adminEmail: values["admin-email"] ?? "",
      adminName: values["admin-name"] ?? "",
      adminPassword: values["admin-password"] ?? ""
    }
    if (Object.values(request).some((v) => v === "")) {
      return yield* Effect.fail(new Error("create-account needs --name, --subdomain, --admin-email, --admin-name and --admin-password"))
    }
    const opened = yield* openAccountFrom(request, { demo: false }).pipe(Effect.provide(services))
    yield* Console.log(describeAccount(opened, request))
    return
  }
  if (positionals.length > 0) return yield* Effect.fail(new Error(`Unknown command: ${positionals.join(" ")}`))

  const seedDemo = values.demo || store.kind === "memory"
  const server = HttpServer.serve(app).pipe(
    // No platform `http.server` span per request unless TRACE_REQUESTS asks for it.
    HttpMiddleware.withTracerDisabledWhen(() => !config.traceRequests),
    Layer.provide(NodeHttpServer.layer(createServer, { port: config.port, host: config.host })),
    Layer.provideMerge(services)
  )
  yield* Layer.launch(
    Layer.effectDiscard(
      Effect.gen(function* () {
        if (seedDemo) {
          const opened = yield* openAccountFrom(DEMO_ACCOUNT, { demo: true })
          yield* Console.log(describeAccount(opened, DEMO_ACCOUNT))
        }
        yield* Console.log(
          `Syllabus serving /api/v3 on http://${config.host}:${config.port} (${store.kind} store${config.rateLimits === "off" ? ", rate limits off" : ""})`
        )
      })
    ).pipe(Layer.provideMerge(server))
  )
})

NodeRuntime.runMain(program as Effect.Effect<void, unknown, never>)
