#!/usr/bin/env node
/**
 * The standalone server.
 *
 *   syllabus-server [--demo]          serve on PORT/HOST (in memory unless DATABASE_URL is set)
 *   syllabus-server create-account --name N --subdomain S --admin-email E --admin-name A --admin-password P
 *   syllabus-server issue-credentials --subdomain S   new secrets for an account that lost its own
 *   syllabus-server set-plan-limits --subdomain S [--plan NAME] --plan-limit RESOURCE=N|unlimited …
 *
 * `create-account` takes `--plan NAME` and `--plan-limit RESOURCE=N` (repeatable) too; without
 * them every resource is unlimited (docs/plan-limits.md).
 *
 * The commands write to the database of DATABASE_URL: without one they refuse (an account
 * opened in memory would vanish with the command, its printed secrets with it).
 */
import { changePlan, noPlan, PlanLimitsInvalid } from "@syllabus/core"
import { type EdgeLimits, jsonLinesTo, makeNodeEdge, SmtpMailer, syllabusLayer } from "@syllabus/http"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer, Option } from "effect"
import { createServer } from "node:http"
import { parseArgs } from "node:util"
import {
  type AccountRequest,
  changePlanOf,
  DEMO_ACCOUNT,
  demoAccount,
  describeAccount,
  describeExistingDemo,
  issueCredentials,
  openAccountFrom,
  passwordProblem,
  planChangeOf
} from "./accounts.js"
import { configuredKeys, deadlineSettingsOf, ServerConfig, smtpOptionsOf } from "./config.js"
import { fileStorageLayer, storeLayer } from "./store.js"

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    demo: { type: "boolean", default: false },
    name: { type: "string" },
    subdomain: { type: "string" },
    "admin-email": { type: "string" },
    "admin-name": { type: "string" },
    "admin-password": { type: "string" },
    plan: { type: "string" },
    "plan-limit": { type: "string", multiple: true }
  }
})

const program = Effect.gen(function* () {
  const config = yield* ServerConfig
  const store = storeLayer(config)
  const keys = configuredKeys(config)
  // Mail goes to the SMTP server of SMTP_URL / SMTP_HOST; without one it stays in memory (docs/email.md).
  const smtp = smtpOptionsOf(config)
  if (smtp === undefined) yield* Effect.logInfo("mail: no SMTP_URL or SMTP_HOST set, the outbox keeps mail in memory")
  const services = syllabusLayer({
    store: store.layer,
    storage: fileStorageLayer(config, store),
    ...(keys ? { keys } : {}),
    rateLimits: config.rateLimits,
    allowLocalWebhooks: config.allowLocalWebhooks,
    localWebhookPorts: new Set(config.localWebhookPorts),
    ...(smtp ? { mailer: SmtpMailer(smtp) } : {}),
    ...Option.match(config.platformHost, { onNone: () => ({}), onSome: (platformHost) => ({ platformHost }) }),
    settings: {
      docsUrl: config.docsUrl,
      traceRequests: config.traceRequests,
      // One JSON line per request on stdout (REQUEST_LOG=off silences it).
      ...(config.requestLog === "on" ? { accessLog: jsonLinesTo(process.stdout) } : {}),
      ...deadlineSettingsOf(config),
      ...Option.match(config.bodyTimeoutMs, { onNone: () => ({}), onSome: (bodyTimeoutMs) => ({ bodyTimeoutMs }) }),
      ...Option.match(config.partBodyTimeoutMs, { onNone: () => ({}), onSome: (partBodyTimeoutMs) => ({ partBodyTimeoutMs }) })
    }
  })

  const command = positionals[0]
  if ((command === "create-account" || command === "issue-credentials" || command === "set-plan-limits") && store.kind === "memory") {
    return yield* Effect.fail(
      new UsageError(
        `${command} needs DATABASE_URL: without a database the account would live in this command's memory and vanish when it exits, its secrets with it.`
      )
    )
  }
  if (command === "issue-credentials") {
    if (values.subdomain === undefined || values.subdomain === "") return yield* Effect.fail(new UsageError("issue-credentials needs --subdomain"))
    yield* issueCredentials(values.subdomain).pipe(Effect.tap(Console.log), Effect.tap(commandDone), Effect.provide(services))
    return
  }
  // The plan flags are checked whole before any store work: a refusal changes nothing.
  const plan = planChangeOf(values.plan, values["plan-limit"])
  if ("problem" in plan) return yield* Effect.fail(new UsageError(`${command ?? "syllabus-server"}: ${plan.problem}`))
  yield* changePlan(noPlan, plan.change).pipe(Effect.mapError((e) => new UsageError(`${command ?? "syllabus-server"}: ${e.message}.`)))
  if (command === "set-plan-limits") {
    if (values.subdomain === undefined || values.subdomain === "") return yield* Effect.fail(new UsageError("set-plan-limits needs --subdomain"))
    if (values.plan === undefined && (values["plan-limit"] ?? []).length === 0) {
      return yield* Effect.fail(new UsageError("set-plan-limits needs --plan NAME or --plan-limit RESOURCE=N|unlimited (repeatable)"))
    }
    yield* changePlanOf(values.subdomain, plan.change).pipe(
      Effect.catchIf((e) => e instanceof PlanLimitsInvalid, (e) => Effect.fail(new UsageError(`set-plan-limits: ${e.message}.`))),
      Effect.tap(Console.log),
      Effect.tap(commandDone),
      Effect.provide(services)
    )
    return
  }
  if (command === "create-account") {
    const request: AccountRequest = {
      name: values.name ?? "",
      subdomain: values.subdomain ?? "",
      adminEmail: values["admin-email"] ?? "",
      adminName: values["admin-name"] ?? "",
      adminPassword: values["admin-password"] ?? ""
    }
    if (Object.values(request).some((v) => v === "")) {
      return yield* Effect.fail(new UsageError("create-account needs --name, --subdomain, --admin-email, --admin-name and --admin-password"))
    }
    const weak = passwordProblem(request.adminPassword)
    if (weak !== undefined) return yield* Effect.fail(new UsageError(`create-account: ${weak}.`))
    const planned = values.plan !== undefined || (values["plan-limit"] ?? []).length > 0
    yield* openAccountFrom(planned ? { ...request, plan: plan.change } : request).pipe(
      Effect.catchTag("UniqueViolation", () => Effect.fail(new UsageError(`create-account: the subdomain ${request.subdomain} is taken.`))),
      Effect.catchTag("PlanLimitsInvalid", (e) => Effect.fail(new UsageError(`create-account: ${e.message}.`))),
      Effect.tap((opened) => Console.log(describeAccount(opened, request))),
      Effect.tap(commandDone),
      Effect.provide(services)
    )
    return
  }
  if (positionals.length > 0) return yield* Effect.fail(new UsageError(`Unknown command: ${positionals.join(" ")}`))

  const seedDemo = values.demo || store.kind === "memory"
  // The app behind the edge (docs/reliability.md, "Hostile clients"): caps on unfinished
  // requests, timeouts sized for JSON, and Node's parser errors in the envelope. No platform
  // `http.server` span per request unless TRACE_REQUESTS asks for it (ServerSettings).
  const server = Layer.scopedDiscard(
    Effect.gen(function* () {
      const edge = yield* makeNodeEdge(edgeLimitsOf(config))
      // Without Host, the edge answers 400 in the envelope instead of Node's bare one.
      const node = createServer({ ...edge.serverOptions, requireHostHeader: false }, edge.listener)
      edge.attach(node)
      yield* Effect.acquireRelease(
        Effect.async<void, Error>((resume) => {
          const onError = (error: Error) => resume(Effect.fail(error))
          node.once("error", onError)
          node.listen(config.port, config.host, () => {
            node.off("error", onError)
            resume(Effect.void)
          })
        }),
        () =>
          Effect.async<void>((resume) => {
            node.close(() => resume(Effect.void))
            node.closeIdleConnections()
          })
      )
    })
  ).pipe(Layer.provideMerge(services))
  yield* Layer.launch(
    Layer.effectDiscard(
      Effect.gen(function* () {
        if (seedDemo) {
          const demo = yield* demoAccount
          yield* Console.log(demo._tag === "Opened" ? describeAccount(demo.opened, DEMO_ACCOUNT) : describeExistingDemo(demo.account))
        }
        yield* Console.log(
          `Syllabus serving /api/v3 on http://${config.host}:${config.port} (${store.kind} store${config.rateLimits === "off" ? ", rate limits off" : ""})`
        )
      })
    ).pipe(Layer.provideMerge(server))
  )
})

/** The edge's limits from the environment; the whole-request backstop stays longer than a part's deadline. */
const edgeLimitsOf = (config: ServerConfig): Partial<EdgeLimits> => {
  const limits: { -readonly [K in keyof EdgeLimits]?: EdgeLimits[K] } = {}
  if (Option.isSome(config.maxUnfinished)) limits.maxUnfinished = config.maxUnfinished.value
  if (Option.isSome(config.maxUnfinishedPerOrigin)) limits.maxUnfinishedPerOrigin = config.maxUnfinishedPerOrigin.value
  if (Option.isSome(config.headersTimeoutMs)) limits.headersTimeoutMs = config.headersTimeoutMs.value
  if (Option.isSome(config.partBodyTimeoutMs)) limits.requestTimeoutMs = Math.max(150_000, config.partBodyTimeoutMs.value + 30_000)
  return limits
}

/**
 * The most a stop may take once its work is done (a command's answer printed, or SIGTERM/SIGINT
 * received): closing the store's pool and the workers normally takes milliseconds, but a worker
 * caught in a slow statement must not keep an operator's command, or a server told to stop,
 * waiting for ever. An unreferenced timer: it never keeps the process alive by itself.
 */
const STOP_DEADLINE_MS = 20_000

const exitAfterDeadline = (code: number) => {
  setTimeout(() => {
    process.stderr.write(`syllabus-server: still stopping after ${STOP_DEADLINE_MS / 1000} s; exiting\n`)
    process.exit(code)
  }, STOP_DEADLINE_MS).unref()
}

/** A command's work is done and printed: what remains is releasing the services, within the deadline. */
const commandDone = () => Effect.sync(() => exitAfterDeadline(0))

for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => exitAfterDeadline(1))

/** A command used wrongly: its message alone on stderr, and exit code 2. */
class UsageError extends Error {}

NodeRuntime.runMain(
  (program as Effect.Effect<void, unknown, never>).pipe(
    Effect.catchIf(
      (error): error is UsageError => error instanceof UsageError,
      (error) =>
        Effect.sync(() => {
          process.stderr.write(`syllabus-server: ${error.message}\n`)
          // Exit now: after a refusal that came once the store was open (a taken subdomain), what the
          // store's layer leaves behind would keep the process waiting. Its scope is closed by now.
          process.exit(2)
        })
    )
  )
)
