/**
 * The work of the commands that read and write resources: the tables of `credentials` and
 * `products`, operations and their progress, `whoami`, `trigger`, the common writes and
 * `configure`. Loaded when such a command runs (see `commands.ts`), not at start.
 */
import { Effect, Option, Schema } from "effect"
import { newIdempotencyKey } from "./call.js"
import { CliContext, CliError, err, out } from "./context.js"
import { column, details, progressBar, table, text, type Column } from "./format.js"
import { api } from "./http.js"
import { loadTokens, saveConfig } from "./store.js"

const Page = Schema.Struct({ data: Schema.Array(Schema.Unknown) })
const One = Schema.Struct({ data: Schema.Unknown })

const unexpected = () => new CliError({ code: "unexpected_response", message: "the server answered an unexpected body" })

const getPage = (path: string) => Effect.flatMap(api("GET", path), (body) => Schema.decodeUnknown(Page)(body).pipe(Effect.mapError(unexpected)))
const getOne = (path: string) => Effect.flatMap(api("GET", path), (body) => Schema.decodeUnknown(One)(body).pipe(Effect.mapError(unexpected)))

const printJson = (data: unknown) => out(JSON.stringify(data, null, 2) + "\n")

// ---------------------------------------------------------------------------------------
// Collections: `list` and `get <id>`, as a table (list) or details (get)

export type Listed = "credentials" | "products"

const columnsOf: Readonly<Record<Listed, { readonly list: ReadonlyArray<Column>; readonly get: ReadonlyArray<Column> }>> = {
  credentials: {
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
  },
  products: {
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
}

export const list = (name: Listed, json: boolean) =>
  Effect.flatMap(getPage(`/${name}?limit=100`), ({ data }) => (json ? printJson(data) : out(table(data, columnsOf[name].list))))

export const get = (name: Listed, id: string, json: boolean) =>
  Effect.flatMap(getOne(`/${name}/${encodeURIComponent(id)}`), ({ data }) => (json ? printJson(data) : out(details(data, columnsOf[name].get))))

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

/** Print an operation (waited for or not); one that ended other than `succeeded` fails the command. */
export const showOperation = (id: string, options: { readonly json: boolean; readonly wait: boolean }) =>
  Effect.gen(function* () {
    const { data, operation } = yield* (options.wait ? waitFor(id) : fetchOperation(id))
    yield* options.json ? printJson(data) : out(details(data, operationColumns))
    if (options.wait && operation.status !== "succeeded") {
      const error = operation.error ?? { code: `operation_${operation.status}`, message: `the operation ended ${operation.status}` }
      return yield* Effect.fail(new CliError(error))
    }
  })

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

export const whoami = (json: boolean) =>
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

// ---------------------------------------------------------------------------------------
// trigger

const Triggered = Schema.Struct({ data: Schema.Struct({ id: Schema.String, type: Schema.String }) })

export const trigger = (type: string, json: boolean) =>
  Effect.gen(function* () {
    const body = yield* api("POST", "/sandbox/events", { body: { type }, headers: { "idempotency-key": newIdempotencyKey() } })
    const event = yield* Schema.decodeUnknown(Triggered)(body).pipe(Effect.mapError(unexpected))
    yield* json ? printJson((body as { data: unknown }).data) : out(`Triggered ${event.data.type}: ${event.data.id}\n`)
  })

// ---------------------------------------------------------------------------------------
// Common writes: thin wrappers over a POST, each with a fresh Idempotency-Key

const getCreated = (path: string, body: Record<string, unknown>) =>
  Effect.flatMap(api("POST", path, { body, headers: { "idempotency-key": newIdempotencyKey() } }), (answer) =>
    Schema.decodeUnknown(One)(answer).pipe(Effect.mapError(unexpected))
  )

const created = (path: string, body: Record<string, unknown>, columns: ReadonlyArray<Column>, asJson: boolean) =>
  Effect.flatMap(getCreated(path, body), ({ data }) => (asJson ? printJson(data) : out(details(data, columns))))

const optionalField = <A>(name: string, value: Option.Option<A>) => (Option.isSome(value) ? { [name]: value.value } : {})

export const createShowcase = (name: string, json: boolean) => created("/showcases", { name }, [column("id", "id"), column("name", "name")], json)

export const createProduct = (product: { readonly name: string; readonly format: string; readonly showcaseId: string }, json: boolean) =>
  created(
    "/products",
    { name: product.name, format: product.format, showcase_id: product.showcaseId },
    [column("id", "id"), column("name", "name"), column("format", "format"), column("status", "status")],
    json
  )

export const publishProduct = (id: string, options: { readonly json: boolean; readonly wait: boolean }) =>
  Effect.gen(function* () {
    const { data } = yield* getCreated(`/products/${encodeURIComponent(id)}/publications`, {})
    if (!options.wait) return yield* options.json ? printJson(data) : out(details(data, operationColumns))
    yield* showOperation(text(data, "id"), options)
  })

export const createUser = (user: { readonly name: string; readonly email: string }, json: boolean) =>
  created("/users", user, [column("id", "id"), column("name", "name"), column("email", "email"), column("status", "status")], json)

export const createWebhook = (
  webhook: { readonly url: string; readonly events: ReadonlyArray<string>; readonly description: Option.Option<string> },
  json: boolean
) =>
  created(
    "/webhooks",
    { url: webhook.url, event_types: webhook.events, ...optionalField("description", webhook.description) },
    [column("id", "id"), column("url", "url"), column("event_types", "event_types"), column("status", "status"), column("secret", "secret", "value")],
    json
  )

// ---------------------------------------------------------------------------------------
// configure

export const configure = (baseUrl: string, apiKey: string) =>
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
