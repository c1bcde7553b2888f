/** The standalone server's configuration, from the environment (documented in the README). */
import { Config, Option, Redacted } from "effect"

export const ServerConfig = Config.all({
  port: Config.integer("PORT").pipe(Config.withDefault(8080)),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")),
  secretKey: Config.option(Config.redacted("SECRET_HASH_KEY")),
  cursorKey: Config.option(Config.redacted("CURSOR_SIGNING_KEY")),
  rateLimits: Config.literal("on", "off")("RATE_LIMITS").pipe(Config.withDefault("on" as const)),
  storage: Config.literal("local", "memory")("FILE_STORAGE").pipe(Config.withDefault("local" as const)),
  storageDirectory: Config.string("STORAGE_DIR").pipe(Config.withDefault(".syllabus/files")),
  /** Let production webhooks reach http and loopback receivers (local development only). */
  allowLocalWebhooks: Config.boolean("ALLOW_LOCAL_WEBHOOKS").pipe(Config.withDefault(false)),
  docsUrl: Config.string("DOCS_URL").pipe(Config.withDefault("https://docs.syllabus.dev")),
  traceRequests: Config.boolean("TRACE_REQUESTS").pipe(Config.withDefault(false))
})

export type ServerConfig = Config.Config.Success<typeof ServerConfig>

/** Both keys, when both are configured; else they live in the store. */
export const configuredKeys = (config: ServerConfig) =>
  Option.isSome(config.secretKey) && Option.isSome(config.cursorKey)
    ? { secretKey: config.secretKey.value, cursorKey: config.cursorKey.value }
    : undefined

export { Redacted }
