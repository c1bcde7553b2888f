/**
 * The config directory and the two files in it, both readable by the user alone:
 * `config.json` (base URL and API key) and `tokens.json` (the OAuth tokens of `login`).
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { Effect, Option, Schema } from "effect"
import { homedir } from "node:os"
import { CliContext, CliError } from "./context.js"

export const Config = Schema.Struct({
  base_url: Schema.String,
  api_key: Schema.String
})
export type Config = typeof Config.Type

export const Tokens = Schema.Struct({
  access_token: Schema.String,
  refresh_token: Schema.String,
  /** Epoch milliseconds after which the access token is no longer accepted. */
  expires_at: Schema.Number,
  issuer: Schema.String,
  token_endpoint: Schema.String,
  revocation_endpoint: Schema.String
})
export type Tokens = typeof Tokens.Type

const CONFIG_FILE = "config.json"
const TOKENS_FILE = "tokens.json"

/** `$SYLLABUS_CONFIG_DIR`, else `$XDG_CONFIG_HOME/syllabus`, else `~/.config/syllabus`. */
export const configDir = Effect.gen(function* () {
  const { env } = yield* CliContext
  const path = yield* Path.Path
  if (env.SYLLABUS_CONFIG_DIR) return env.SYLLABUS_CONFIG_DIR
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || homedir(), ".config")
  return path.join(base, "syllabus")
})

const filePath = (name: string) => Effect.zipWith(configDir, Path.Path, (dir, path) => path.join(dir, name))

/** Write a file atomically with mode 0600, in a directory with mode 0700. */
const writePrivate = (name: string, content: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* configDir
    yield* fs.makeDirectory(dir, { recursive: true, mode: 0o700 })
    yield* fs.chmod(dir, 0o700)
    const target = yield* filePath(name)
    const temporary = `${target}.${process.pid}.tmp`
    yield* fs.writeFileString(temporary, content, { mode: 0o600 })
    yield* fs.chmod(temporary, 0o600)
    yield* fs.rename(temporary, target)
  })

const readJson = <A, I>(name: string, schema: Schema.Schema<A, I>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* filePath(name)
    if (!(yield* fs.exists(path))) return Option.none<A>()
    const text = yield* fs.readFileString(path)
    const decoded = yield* Schema.decodeUnknown(Schema.parseJson(schema))(text).pipe(
      Effect.mapError(() => new CliError({ code: "config_invalid", message: `${path} is not a valid file; fix or delete it` }))
    )
    return Option.some(decoded)
  })

export const saveConfig = (config: Config) => writePrivate(CONFIG_FILE, JSON.stringify(config, null, 2) + "\n")

export const loadConfig = Effect.flatMap(
  readJson(CONFIG_FILE, Config),
  Option.match({
    onNone: () =>
      Effect.fail(new CliError({ code: "not_configured", message: "run `syllabus configure --base-url URL --api-key KEY` first" })),
    onSome: Effect.succeed
  })
)

export const saveTokens = (tokens: Tokens) => writePrivate(TOKENS_FILE, JSON.stringify(tokens, null, 2) + "\n")

export const loadTokens = readJson(TOKENS_FILE, Tokens)

export const deleteTokens = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  yield* fs.remove(yield* filePath(TOKENS_FILE), { force: true })
})

export const tokensPath = filePath(TOKENS_FILE)
export const configPath = filePath(CONFIG_FILE)
