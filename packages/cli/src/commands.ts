/**
 * The commands, on @effect/cli: their names, arguments, options and descriptions. What a
 * command does is in another module, imported when the command runs (`runs`): parsing the
 * arguments and printing the help load none of them, so `syllabus` starts quickly.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import type { Method } from "./call.js"
import { err } from "./context.js"

/** The work of a command, in a module loaded when the command runs. */
const runs = <M, A, E, R>(load: () => Promise<M>, work: (module: M) => Effect.Effect<A, E, R>) => Effect.flatMap(Effect.promise(load), work)

const actions = () => import("./actions.js")
const events = () => import("./events.js")

const json = Options.boolean("json").pipe(Options.withDescription("Print the raw JSON of `data` instead of a table."))
const id = Args.text({ name: "id" })
const wait = Options.boolean("wait").pipe(Options.withDescription("Wait until it finishes, with its progress on stderr (a bar on a terminal)."))

/** `list` and `get <id>` of a collection, printed as a table (list) or details (get). */
const listAndGet = (name: "credentials" | "products") =>
  [
    Command.make("list", { json }, ({ json }) => runs(actions, (a) => a.list(name, json))).pipe(Command.withDescription(`List the ${name} (first 100).`)),
    Command.make("get", { json, id }, ({ json, id }) => runs(actions, (a) => a.get(name, id, json))).pipe(Command.withDescription(`Show one of the ${name}.`))
  ] as const

const credentials = Command.make("credentials").pipe(
  Command.withDescription("The credentials of the credential's environment."),
  Command.withSubcommands(listAndGet("credentials"))
)

const operations = Command.make("operations").pipe(
  Command.withDescription("Asynchronous operations."),
  Command.withSubcommands([
    Command.make("get", { json, id, wait }, ({ json, id, wait }) => runs(actions, (a) => a.showOperation(id, { json, wait }))).pipe(
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
    (options) => runs(() => import("./call.js"), (call) => call.genericCall({ method, data: "data" in options ? options.data : [], ...options }))
  ).pipe(Command.withDescription(`${method} any path of the API's description; prints the JSON answer.`))

// ---------------------------------------------------------------------------------------
// Events: tail, listen, trigger

const typeFilter = Options.text("type").pipe(
  Options.repeated,
  Options.withDescription("Only events of this type; `*` matches any part (product.*, *.deleted). Repeatable.")
)
const resourceFilter = Options.text("resource-type").pipe(Options.repeated, Options.withDescription("Only events about this resource type (product, user…). Repeatable."))

const eventsTail = Command.make("tail", { json, type: typeFilter, resourceType: resourceFilter }, ({ json, type, resourceType }) =>
  runs(events, (e) => e.tailEvents({ types: type, resourceTypes: resourceType }, json))
).pipe(Command.withDescription("Print the events of the environment as they happen, one line each (or JSON with --json), until interrupted."))

const eventsCommand = Command.make("events").pipe(Command.withDescription("The events of the environment."), Command.withSubcommands([eventsTail]))

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
  ({ forwardTo, type, resourceType, timeoutMs, secret }) =>
    runs(events, (e) => e.listenEvents({ types: type, resourceTypes: resourceType }, { forwardTo, timeoutMs, secret }))
).pipe(
  Command.withDescription("Forward the events to a local endpoint as signed webhook requests (webhook-id, webhook-timestamp, webhook-signature), until interrupted.")
)

const trigger = Command.make("trigger", { json, type: Args.text({ name: "event-type" }) }, ({ json, type }) => runs(actions, (a) => a.trigger(type, json))).pipe(
  Command.withDescription("Make the sandbox emit a sample event of this type (POST /sandbox/events; sandbox credentials only).")
)

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
    runs(
      () => import("./logs.js"),
      (logs) =>
        logs.tailLogs(
          { json, intervalMs: Math.max(100, interval), filters: { outcome, statuses: status, methods: method } },
          err("Waiting for requests (Ctrl-C to stop)…\n")
        )
    )
).pipe(Command.withDescription("Print the calls of the environment's request log (GET /requests) as they are made, until interrupted."))

const logs = Command.make("logs").pipe(Command.withDescription("The request log."), Command.withSubcommands([logsTail]))

// ---------------------------------------------------------------------------------------
// Common writes: thin wrappers over a POST, each with a fresh Idempotency-Key

const productsCreate = Command.make(
  "create",
  {
    json,
    name: Options.text("name"),
    format: Options.text("format").pipe(Options.withDefault("course"), Options.withDescription("course (default), blog, … (see the description).")),
    showcaseId: Options.text("showcase-id").pipe(Options.withDescription("The showcase it is shown in (shw_…)."))
  },
  ({ json, ...product }) => runs(actions, (a) => a.createProduct(product, json))
).pipe(Command.withDescription("Create a product (POST /products)."))

const productsPublish = Command.make("publish", { json, id, wait }, ({ json, id, wait }) => runs(actions, (a) => a.publishProduct(id, { json, wait }))).pipe(
  Command.withDescription("Publish a product (an asynchronous operation); --wait follows it.")
)

const products = Command.make("products").pipe(
  Command.withDescription("The products of the credential's environment."),
  Command.withSubcommands([...listAndGet("products"), productsCreate, productsPublish])
)

const showcases = Command.make("showcases").pipe(
  Command.withDescription("Showcases."),
  Command.withSubcommands([
    Command.make("create", { json, name: Options.text("name") }, ({ json, name }) => runs(actions, (a) => a.createShowcase(name, json))).pipe(
      Command.withDescription("Create a showcase (POST /showcases).")
    )
  ])
)

const users = Command.make("users").pipe(
  Command.withDescription("Users."),
  Command.withSubcommands([
    Command.make("create", { json, name: Options.text("name"), email: Options.text("email") }, ({ json, ...user }) => runs(actions, (a) => a.createUser(user, json))).pipe(
      Command.withDescription("Create a user (POST /users).")
    )
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
      ({ json, url, event, description }) => runs(actions, (a) => a.createWebhook({ url, events: event, description }, json))
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
  ({ baseUrl, apiKey }) => runs(actions, (a) => a.configure(baseUrl, apiKey))
).pipe(Command.withDescription("Store the server's address and the API key."))

const login = () => import("./login.js")

const loginCommand = Command.make(
  "login",
  {
    platform: Options.text("platform").pipe(Options.optional, Options.withDescription("The account: subdomain, custom domain or URL.")),
    noBrowser: Options.boolean("no-browser").pipe(Options.withDescription("Only print the sign-in address."))
  },
  ({ platform, noBrowser }) => runs(login, (l) => l.login({ platform, openBrowser: !noBrowser }))
).pipe(Command.withDescription("Sign in as an administrator in the browser; calls then act for you (human mode)."))

const logoutCommand = Command.make("logout", {}, () => runs(login, (l) => l.logout)).pipe(Command.withDescription("Revoke and forget the tokens of `login`."))

const whoami = Command.make("whoami", { json }, ({ json }) => runs(actions, (a) => a.whoami(json))).pipe(
  Command.withDescription("The credential in use (GET /credentials/current) and, signed in, the administrator and account.")
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
    eventsCommand,
    listen,
    trigger,
    logs
  ])
)
