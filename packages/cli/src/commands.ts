/** The commands, on @effect/cli. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Schema } from "effect"
import { CliError, err, out } from "./context.js"
import { column, details, progressBar, table, text, type Column } from "./format.js"
import { api } from "./http.js"
import { login, logout } from "./login.js"
import { saveConfig } from "./store.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print the raw JSON of `data` instead of a table."))
const id = Args.text({ name: "id" })

const Page = Schema.Struct({ data: Schema.Array(Schema.Unknown) })
const One = Schema.Struct({ data: Schema.Unknown })

const unexpected = () => new CliError({ code: "unexpected_response", message: "the server answered an unexpected body" })

const getPage = (path: string) => Effect.flatMap(api("GET", path), (body) => Schema.decodeUnknown(Page)(body).pipe(Effect.mapError(unexpected)))
const getOne = (path: string) => Effect.flatMap(api("GET", path), (body) => Schema.decodeUnknown(One)(body).pipe(Effect.mapError(unexpected)))

const printJson = (data: unknown) => out(JSON.stringify(data, null, 2) + "\n")

/** `list` and `get <id>` of a collection, printed as a table (list) or details (get). */
const collection = (name: string, columns: { readonly list: ReadonlyArray<Column>; readonly get: ReadonlyArray<Column> }) =>
  Command.make(name).pipe(
    Command.withDescription(`The ${name} of the credential's environment.`),
    Command.withSubcommands([
      Command.make("list", { json }, ({ json }) =>
        Effect.flatMap(getPage(`/${name}?limit=100`), ({ data }) => (json ? printJson(data) : out(table(data, columns.list))))
      ).pipe(Command.withDescription(`List the ${name} (first 100).`)),
      Command.make("get", { json, id }, ({ json, id }) =>
        Effect.flatMap(getOne(`/${name}/${encodeURIComponent(id)}`), ({ data }) => (json ? printJson(data) : out(details(data, columns.get))))
      ).pipe(Command.withDescription(`Show one of the ${name}.`))
    ])
  )

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

const products = collection("products", {
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
})

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

const drawProgress = ({ progress, status }: typeof Operation.Type) => err(`\r${progressBar(progress.done, progress.total)} ${status}`)

/** Poll until the operation finishes, drawing `progress.done/total` on stderr. */
const waitFor = (id: string) =>
  Effect.gen(function* () {
    let current = yield* fetchOperation(id)
    yield* drawProgress(current.operation)
    while (!finished.has(current.operation.status)) {
      yield* Effect.sleep("250 millis")
      current = yield* fetchOperation(id)
      yield* drawProgress(current.operation)
    }
    yield* err("\n")
    return current
  })

const operations = Command.make("operations").pipe(
  Command.withDescription("Asynchronous operations."),
  Command.withSubcommands([
    Command.make(
      "get",
      { json, id, wait: Options.boolean("wait").pipe(Options.withDescription("Wait until it finishes, with a progress bar on stderr.")) },
      ({ json, id, wait }) =>
        Effect.gen(function* () {
          const { data, operation } = yield* (wait ? waitFor(id) : fetchOperation(id))
          yield* json ? printJson(data) : out(details(data, operationColumns))
          if (wait && operation.status !== "succeeded") {
            const error = operation.error ?? { code: `operation_${operation.status}`, message: `the operation ended ${operation.status}` }
            return yield* Effect.fail(new CliError(error))
          }
        })
    ).pipe(Command.withDescription("Show an operation; with --wait, follow it until it finishes."))
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

export const syllabus = Command.make("syllabus").pipe(
  Command.withDescription("Command-line client of the Course-platform administration API v3."),
  Command.withSubcommands([configure, loginCommand, logoutCommand, credentials, products, operations])
)

