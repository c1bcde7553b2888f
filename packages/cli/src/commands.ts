/** The commands, on @effect/cli. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option, Schema } from "effect"
import { genericCall, type Method, newIdempotencyKey } from "./call.js"
import { CliContext, CliError, err, out } from "./context.js"
import { followEvents, forward, newSigningSecret } from "./events.js"
import { column, details, progressBar, table, text, type Column } from "./format.js"
import { api } from "./http.js"
import { login, logout } from "./login.js"
import { tailLogs } from "./logs.js"
import { loadTokens, saveConfig } from "./store.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print the raw JSON of `data` instead of a table."))
const id = Args.text({ name: "id" })

const Page = Schema.Struct({ data: Schema.Array(Schema.Unknown) })
const One = Schema.Struct({ data: Schema.Unknown })

const unexpected = () => new CliError({ code: "unexpected_response", message: "the server answered an unexpected body" })

const getPage = (path: string) => Effect.flatMap(api("GET", path), (body) => Schema.decodeUnknown(Page)(body).pipe(Effect.mapError(unexpected)))
const getOne = (path: string) => Effect.flatMap(api("GET", path), (body) => Schema.decodeUnknown(One)(body).pipe(Effect.mapError(unexpected)))

const printJson = (data: unknown) => out(JSON.stringify(data, null, 2) + "\n")

/** `list` and `get <id>` of a collection, printed as a table (list) or details (get). */
const listAndGet = (name: string, columns: { readonly list: ReadonlyArray<Column>; readonly get: ReadonlyArray<Column> }) =>
  [
      Command.make("list", { json }, ({ json }) =>
        Effect.flatMap(getPage(`/${name}?limit=100`), ({ data }) => (json ? printJson(data) : out(table(data, columns.list))))
      ).pipe(Command.withDescription(`List the ${name} (first 100).`)),
      Command.make("get", { json, id }, ({ json, id }) =>
        Effect.flatMap(getOne(`/${name}/${encodeURIComponent(id)}`), ({ data }) => (json ? printJson(data) : out(details(data, columns.get))))
      ).pipe(Command.withDescription(`Show one of the ${name}.`))
  ] as const

const collection = (name: string, columns: { readonly list: ReadonlyArray<Column>; readonly get: ReadonlyArray<Column> }) =>
  Command.make(name).pipe(Command.withDescription(`The ${name} of the credential's environment.`), Command.withSubcommands(listAndGet(name, columns)))

const credentials = collection("credentials", {
  list: [column("ID", "id"), column("NAME", "name"), column("MODE", "auth_mode"), column("ENVIRONMENT", "environment"), column("STATUS", "status")],
  get: [
    column("id", "id"),
    column("name", "name"),
    column("purpose", "purpose"),
    column("auth_mode", "auth_mode"),
    column("environment", "environment"),
    column("status", "status"),
    column("created_at", "created_at"),
    column("expires_at", "expires_at")
  ]
})

const productColumns = {
  list: [column("ID", "id"), column("NAME", "name"), column("FORMAT", "format"), column("STATUS", "status"), column("SHOWCASE", "showcase_id")],
  get: [
    column("id", "id"),
    column("name", "name"),
    column("format", "format"),
    column("status", "status"),
    column("showcase_id", "showcase_id"),
    column("position", "position"),
    column("lessons_count", "lessons_count"),
    column("updated_at", "updated_at")
  ]
}

// ---------------------------------------------------------------------------------------
// Operations

const Operation = Schema.Struct({
  status: Schema.String,
  progress: Schema.Struct({ done: Schema.Number, total: Schema.Number }),
  error: Schema.NullishOr(Schema.Struct({ code: Schema.String, message: Schema.String }))
})

const finished = new Set(["succeeded", "failed", "canceled"])

const operationColumns = [
  column("id", "id"),
  column("type", "type"),
  column("status", "status"),
  { title: "progress", value: (row: unknown) => `${text(row, "progress", "done")}/${text(row, "progress", "total")} (failed ${text(row, "progress", "failed")})` },
  column("error", "error", "code"),
  column("created_at", "created_at"),
  column("finished_at", "finished_at")
]

const fetchOperation = (id: string) =>
  Effect.flatMap(getOne(`/operations/${encodeURIComponent(id)}`), ({ data }) =>
    Schema.decodeUnknown(Operation)(data).pipe(
      Effect.mapError(unexpected),
      Effect.map((operation) => ({ data, operation }))
    )
  )

/**
 * Progress on stderr: on a terminal, a bar redrawn on one line; elsewhere (a log, a pipe, CI)
 * a plain line each time the progress or the status changes.
 */
const progressReporter = Effect.map(CliContext, ({ io }) => {
  let last = ""
  return {
    draw: ({ progress, status }: typeof Operation.Type) => {
      if (io.stderrIsTerminal) return err(`\r${progressBar(progress.done, progress.total)} ${status}`)
      const line = `progress ${progress.done}/${progress.total} ${status}\n`
      if (line === last) return Effect.void
      last = line
      return err(line)
    },
    end: io.stderrIsTerminal ? err("\n") : Effect.void
  }
})

/** Poll until the operation finishes, showing `progress.done/total` on stderr. */
const waitFor = (id: string) =>
  Effect.gen(function* () {
    const reporter = yield* progressReporter
    let current = yield* fetchOperation(id)
    yield* reporter.draw(current.operation)
    while (!finished.has(current.operation.status)) {
      yield* Effect.sleep("250 millis")
      current = yield* fetchOperation(id)
      yield* reporter.draw(current.operation)
    }
    yield* reporter.end
    return current
  })

const wait = Options.boolean("wait").pipe(Options.withDescription("Wait until it finishes, with its progress on stderr (a bar on a terminal)."))

/** Print an operation (waited for or not); one that ended other than `succeeded` fails the command. */
const showOperation = (id: string, options: { readonly json: boolean; readonly wait: boolean }) =>
  Effect.gen(function* () {
    const { data, operation } = yield* (options.wait ? waitFor(id) : fetchOperation(id))
    yield* options.json ? printJson(data) : out(details(data, operationColumns))
    if (options.wait && operation.status !== "succeeded") {
      const error = operation.error ?? { code: `operation_${operation.status}`, message: `the operation ended ${operation.status}` }
      return yield* Effect.fail(new CliError(error))
    }
  })

const operations = Command.make("operations").pipe(
  Command.withDescription("Asynchronous operations."),
  Command.withSubcommands([
    Command.make("get", { json, id, wait }, ({ json, id, wait }) => showOperation(id, { json, wait })).pipe(
      Command.withDescription("Show an operation; with --wait, follow it until it finishes.")
    )
  ])
)

// ---------------------------------------------------------------------------------------
// The generic call

const pathArg = Args.text({ name: "path" }).pipe(Args.withDescription("A path of the API, relative to /api/v3 (e.g. /products/prd_…), query string allowed."))
const params = Options.text("param").pipe(
  Options.withAlias("p"),
  Options.repeated,
  Options.withDescription("A query parameter name=value (repeat it; a repeated name is an array).")
)
const data = Options.text("data").pipe(
  Options.withAlias("d"),
  Options.repeated,
  Options.withDescription("The JSON body, whole ('{…}'), or field by field: name=text, name:=json, a.b=… nests, a[]=… appends.")
)
const idempotencyKey = Options.text("idempotency-key").pipe(
  Options.optional,
  Options.withDescription("The Idempotency-Key (POST: a new one is generated when absent).")
)
const ifMatch = Options.text("if-match").pipe(Options.optional, Options.withDescription("Send If-Match with this ETag."))
const autoIfMatch = Options.boolean("auto-if-match").pipe(Options.withDescription("GET the resource first and send its ETag as If-Match."))

const generic = (method: Method, withBody: boolean) =>
  Command.make(
    method.toLowerCase(),
    withBody ? { path: pathArg, params, data, idempotencyKey, ifMatch, autoIfMatch } : { path: pathArg, params, idempotencyKey, ifMatch, autoIfMatch },
    (options) => genericCall({ method, data: "data" in options ? options.data : [], ...options })
  ).pipe(Command.withDescription(`${method} any path of the API's description; prints the JSON answer.`))

// ---------------------------------------------------------------------------------------
// whoami

const Current = Schema.Struct({
  data: Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    environment: Schema.String,
    auth_mode: Schema.String,
    status: Schema.String,
    human: Schema.NullishOr(Schema.Struct({ admin_id: Schema.String }))
  })
})
const Administrator = Schema.Struct({ data: Schema.Struct({ email: Schema.NullishOr(Schema.String), name: Schema.NullishOr(Schema.String) }) })

/** The claims of a JWT access token (not verified: only to show the account it names). */
const claimsOf = (token: string): Record<string, unknown> => {
  try {
    return JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as Record<string, unknown>
  } catch {
    return {}
  }
}

const whoami = Command.make("whoami", { json }, ({ json }) =>
  Effect.gen(function* () {
    const body = yield* api("GET", "/credentials/current")
    const current = yield* Schema.decodeUnknown(Current)(body).pipe(Effect.mapError(unexpected))
    const tokens = yield* loadTokens
    const adminId = current.data.human?.admin_id
    // The administrator's name and email need `administrators.read`: shown when allowed.
    const admin =
      adminId === undefined
        ? Option.none()
        : yield* api("GET", `/administrators/${encodeURIComponent(adminId)}`).pipe(
            Effect.flatMap((answer) => Schema.decodeUnknown(Administrator)(answer)),
            Effect.option
          )
    const accountId = Option.match(tokens, { onNone: () => undefined, onSome: (t) => claimsOf(t.access_token).account_id })
    const who = {
      mode: adminId === undefined ? "autonomous" : "human",
      credential: { id: current.data.id, name: current.data.name, auth_mode: current.data.auth_mode, status: current.data.status },
      environment: current.data.environment,
      account_id: typeof accountId === "string" ? accountId : null,
      administrator:
        adminId === undefined ? null : { id: adminId, email: Option.getOrNull(Option.map(admin, (a) => a.data.email ?? null)), name: Option.getOrNull(Option.map(admin, (a) => a.data.name ?? null)) }
    }
    if (json) return yield* printJson(who)
    yield* out(
      details(who, [
        column("mode", "mode"),
        column("environment", "environment"),
        column("credential", "credential", "id"),
        column("name", "credential", "name"),
        column("auth_mode", "credential", "auth_mode"),
        column("status", "credential", "status"),
        column("account", "account_id"),
        column("administrator", "administrator", "id"),
        column("email", "administrator", "email")
      ])
    )
  })
).pipe(Command.withDescription("The credential in use (GET /credentials/current) and, signed in, the administrator and account."))

// ---------------------------------------------------------------------------------------
// Events: tail, listen, trigger

const typeFilter = Options.text("type").pipe(
  Options.repeated,
  Options.withDescription("Only events of this type; `*` matches any part (product.*, *.deleted). Repeatable.")
)
const resourceFilter = Options.text("resource-type").pipe(Options.repeated, Options.withDescription("Only events about this resource type (product, user…). Repeatable."))

const Envelope = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  created_at: Schema.String,
  data: Schema.Struct({ object: Schema.Struct({ id: Schema.optional(Schema.String) }) })
})
const eventLine = (event: unknown) =>
  Schema.decodeUnknownOption(Envelope)(event).pipe(
    Option.map((e) => `${e.created_at}  ${e.id}  ${e.type}  ${e.data.object.id ?? "-"}\n`),
    Option.getOrElse(() => `${JSON.stringify(event)}\n`)
  )

const eventsTail = Command.make("tail", { json, type: typeFilter, resourceType: resourceFilter }, ({ json, type, resourceType }) =>
  followEvents(
    { types: type, resourceTypes: resourceType },
    err("Waiting for events (Ctrl-C to stop)…\n"),
    (message, event) => out(json ? `${message.data}\n` : eventLine(event))
  )
).pipe(Command.withDescription("Print the events of the environment as they happen, one line each (or JSON with --json), until interrupted."))

const events = Command.make("events").pipe(Command.withDescription("The events of the environment."), Command.withSubcommands([eventsTail]))

const listen = Command.make(
  "listen",
  {
    forwardTo: Options.text("forward-to").pipe(Options.withDescription("The local URL each event is POSTed to, signed as a webhook.")),
    type: typeFilter,
    resourceType: resourceFilter,
    timeoutMs: Options.integer("timeout-ms").pipe(Options.withDefault(10_000), Options.withDescription("How long to wait for the receiver (ms).")),
    secret: Options.text("secret").pipe(
      Options.optional,
      Options.withDescription("Sign with this secret (whsec_<base64>) instead of a new one, so the receiver's configuration can stay.")
    )
  },
  ({ forwardTo, type, resourceType, timeoutMs, secret: given }) =>
    Effect.gen(function* () {
      if (!/^https?:\/\/[^/]/.test(forwardTo)) {
        return yield* Effect.fail(new CliError({ code: "invalid_forward_url", message: "--forward-to must be an http(s) URL" }))
      }
      if (Option.isSome(given) && !/^whsec_[A-Za-z0-9+/]{16,}={0,2}$/.test(given.value)) {
        return yield* Effect.fail(new CliError({ code: "invalid_secret", message: "--secret must be whsec_ followed by base64 (at least 12 bytes)" }))
      }
      const secret = Option.getOrElse(given, newSigningSecret)
      yield* followEvents(
        { types: type, resourceTypes: resourceType },
        err(`Ready. Your webhook signing secret is ${secret} (Standard Webhooks).\nForwarding events to ${forwardTo} (Ctrl-C to stop)…\n`),
        (message, event) =>
          Effect.gen(function* () {
            const line = eventLine(event).trimEnd()
            const id = message.id ?? String((event as { id?: unknown }).id)
            const status = yield* forward(forwardTo, secret, id, message.data, timeoutMs).pipe(
              Effect.map((status) => `[${status}]`),
              Effect.catchAll((error) => Effect.succeed(`[${error.code}: ${error.message}]`))
            )
            yield* out(`${line}  --> POST ${forwardTo} ${status}\n`)
          })
      )
    })
).pipe(
  Command.withDescription("Forward the events to a local endpoint as signed webhook requests (webhook-id, webhook-timestamp, webhook-signature), until interrupted.")
)

const Triggered = Schema.Struct({ data: Schema.Struct({ id: Schema.String, type: Schema.String }) })

const trigger = Command.make("trigger", { json, type: Args.text({ name: "event-type" }) }, ({ json, type }) =>
  Effect.gen(function* () {
    const body = yield* api("POST", "/sandbox/events", { body: { type }, headers: { "idempotency-key": newIdempotencyKey() } })
    const event = yield* Schema.decodeUnknown(Triggered)(body).pipe(Effect.mapError(unexpected))
    yield* json ? printJson((body as { data: unknown }).data) : out(`Triggered ${event.data.type}: ${event.data.id}\n`)
  })
).pipe(Command.withDescription("Make the sandbox emit a sample event of this type (POST /sandbox/events; sandbox credentials only)."))

// ---------------------------------------------------------------------------------------
// The request log

const logsTail = Command.make(
  "tail",
  {
    json,
    status: Options.text("status").pipe(Options.repeated, Options.withDescription("Only these statuses: 404, or a class, 4xx. Repeatable.")),
    method: Options.text("method").pipe(Options.repeated, Options.withDescription("Only these methods (GET, POST…). Repeatable.")),
    outcome: Options.choice("outcome", ["success", "client_error", "rate_limited", "server_error"]).pipe(
      Options.optional,
      Options.withDescription("Only this outcome (the list's own filter).")
    ),
    interval: Options.integer("interval-ms").pipe(Options.withDefault(2000), Options.withDescription("How often to poll (ms)."))
  },
  ({ json, status, method, outcome, interval }) =>
    tailLogs(
      { json, intervalMs: Math.max(100, interval), filters: { outcome, statuses: status, methods: method } },
      err("Waiting for requests (Ctrl-C to stop)…\n")
    )
).pipe(Command.withDescription("Print the calls of the environment's request log (GET /requests) as they are made, until interrupted."))

const logs = Command.make("logs").pipe(Command.withDescription("The request log."), Command.withSubcommands([logsTail]))

// ---------------------------------------------------------------------------------------
// Common writes: thin wrappers over a POST, each with a fresh Idempotency-Key

const created = (path: string, body: Record<string, unknown>, columns: ReadonlyArray<Column>, asJson: boolean) =>
  Effect.flatMap(getCreated(path, body), ({ data }) => (asJson ? printJson(data) : out(details(data, columns))))

const getCreated = (path: string, body: Record<string, unknown>) =>
  Effect.flatMap(api("POST", path, { body, headers: { "idempotency-key": newIdempotencyKey() } }), (answer) =>
    Schema.decodeUnknown(One)(answer).pipe(Effect.mapError(unexpected))
  )

const optionalField = <A>(name: string, value: Option.Option<A>) => (Option.isSome(value) ? { [name]: value.value } : {})

const productsCreate = Command.make(
  "create",
  {
    json,
    name: Options.text("name"),
    format: Options.text("format").pipe(Options.withDefault("course"), Options.withDescription("course (default), blog, … (see the description).")),
    showcaseId: Options.text("showcase-id").pipe(Options.withDescription("The showcase it is shown in (shw_…)."))
  },
  ({ json, name, format, showcaseId }) =>
    created("/products", { name, format, showcase_id: showcaseId }, [column("id", "id"), column("name", "name"), column("format", "format"), column("status", "status")], json)
).pipe(Command.withDescription("Create a product (POST /products)."))

const productsPublish = Command.make("publish", { json, id, wait }, ({ json, id, wait }) =>
  Effect.gen(function* () {
    const { data } = yield* getCreated(`/products/${encodeURIComponent(id)}/publications`, {})
    const operationId = text(data, "id")
    if (!wait) return yield* json ? printJson(data) : out(details(data, operationColumns))
    yield* showOperation(operationId, { json, wait })
  })
).pipe(Command.withDescription("Publish a product (an asynchronous operation); --wait follows it."))

const showcases = Command.make("showcases").pipe(
  Command.withDescription("Showcases."),
  Command.withSubcommands([
    Command.make("create", { json, name: Options.text("name") }, ({ json, name }) =>
      created("/showcases", { name }, [column("id", "id"), column("name", "name")], json)
    ).pipe(Command.withDescription("Create a showcase (POST /showcases)."))
  ])
)

const users = Command.make("users").pipe(
  Command.withDescription("Users."),
  Command.withSubcommands([
    Command.make("create", { json, name: Options.text("name"), email: Options.text("email") }, ({ json, name, email }) =>
      created("/users", { name, email }, [column("id", "id"), column("name", "name"), column("email", "email"), column("status", "status")], json)
    ).pipe(Command.withDescription("Create a user (POST /users)."))
  ])
)

const webhooks = Command.make("webhooks").pipe(
  Command.withDescription("Webhooks."),
  Command.withSubcommands([
    Command.make(
      "create",
      {
        json,
        url: Options.text("url"),
        event: Options.text("event").pipe(Options.atLeast(1), Options.withDescription("An event type to deliver (or *). Repeatable.")),
        description: Options.text("description").pipe(Options.optional)
      },
      ({ json, url, event, description }) =>
        created(
          "/webhooks",
          { url, event_types: event, ...optionalField("description", description) },
          [column("id", "id"), column("url", "url"), column("event_types", "event_types"), column("status", "status"), column("secret", "secret", "value")],
          json
        )
    ).pipe(Command.withDescription("Create a webhook (POST /webhooks); its signing secret is shown this once."))
  ])
)

// ---------------------------------------------------------------------------------------
// Configuration and sign-in

const configure = Command.make(
  "configure",
  {
    baseUrl: Options.text("base-url").pipe(Options.withDescription("The server's address, e.g. https://api.example.com")),
    apiKey: Options.text("api-key").pipe(Options.withDescription("The credential's secret (ck_live_… or ck_test_…)."))
  },
  ({ baseUrl, apiKey }) =>
    Effect.gen(function* () {
      if (!/^https?:\/\/[^/]/.test(baseUrl)) {
        return yield* Effect.fail(new CliError({ code: "invalid_base_url", message: "--base-url must be an http(s) URL" }))
      }
      if (!/^ck_(live|test)_/.test(apiKey)) {
        return yield* Effect.fail(new CliError({ code: "invalid_api_key", message: "--api-key must begin with ck_live_ or ck_test_" }))
      }
      yield* saveConfig({ base_url: baseUrl.replace(/\/+$/, ""), api_key: apiKey })
      yield* err("Saved.\n")
    })
).pipe(Command.withDescription("Store the server's address and the API key."))

const loginCommand = Command.make(
  "login",
  {
    platform: Options.text("platform").pipe(Options.optional, Options.withDescription("The account: subdomain, custom domain or URL.")),
    noBrowser: Options.boolean("no-browser").pipe(Options.withDescription("Only print the sign-in address."))
  },
  ({ platform, noBrowser }) => login({ platform, openBrowser: !noBrowser })
).pipe(Command.withDescription("Sign in as an administrator in the browser; calls then act for you (human mode)."))

const logoutCommand = Command.make("logout", {}, () => logout).pipe(Command.withDescription("Revoke and forget the tokens of `login`."))

const products = Command.make("products").pipe(
  Command.withDescription("The products of the credential's environment."),
  Command.withSubcommands([...listAndGet("products", productColumns), productsCreate, productsPublish])
)

export const syllabus = Command.make("syllabus").pipe(
  Command.withDescription("Command-line client of the Course-platform administration API v3."),
  Command.withSubcommands([
    configure,
    loginCommand,
    logoutCommand,
    whoami,
    generic("GET", false),
    generic("POST", true),
    generic("PATCH", true),
    generic("PUT", true),
    generic("DELETE", false),
    credentials,
    products,
    showcases,
    users,
    webhooks,
    operations,
    events,
    listen,
    trigger,
    logs
  ])
)

