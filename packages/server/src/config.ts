/** The standalone server's configuration, from the environment (documented in the README). */
import { Config, Option, Redacted } from "effect"

export const ServerConfig = Config.all({
  port: Config.integer("PORT").pipe(Config.withDefault(8080)),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")),
  /** `transaction`: DATABASE_URL is a pooler in transaction mode (PgBouncer); it needs DATABASE_LISTEN_URL (docs/scaling.md). */
  databasePooler: Config.literal("session", "transaction")("DATABASE_POOLER").pipe(Config.withDefault("session" as const)),
  /** A direct connection to the database, past the pooler: the change relay's LISTEN and the migrations. */
  databaseListenUrl: Config.option(Config.redacted("DATABASE_LISTEN_URL")),
  /** Read replicas (streaming standbys), a comma list of URLs: lists and reports are read there when fresh enough (docs/scaling.md). */
  databaseReplicaUrls: Config.option(Config.redacted("DATABASE_REPLICA_URLS")),
  secretKey: Config.option(Config.redacted("SECRET_HASH_KEY")),
  cursorKey: Config.option(Config.redacted("CURSOR_SIGNING_KEY")),
  rateLimits: Config.literal("on", "off")("RATE_LIMITS").pipe(Config.withDefault("on" as const)),
  /** Unset: `local` with a database, else `temporary` (files die with the in-memory records). */
  storage: Config.option(Config.literal("local", "temporary", "memory")("FILE_STORAGE")),
  storageDirectory: Config.string("STORAGE_DIR").pipe(Config.withDefault(".syllabus/files")),
  /** Let production webhooks reach http and loopback receivers (local development only). */
  allowLocalWebhooks: Config.boolean("ALLOW_LOCAL_WEBHOOKS").pipe(Config.withDefault(false)),
  /** The loopback ports sandbox webhooks may reach, a comma list (`3000,8787`); none when unset. */
  localWebhookPorts: Config.array(Config.integer(), "LOCAL_WEBHOOK_PORTS").pipe(
    Config.validate({ message: "LOCAL_WEBHOOK_PORTS: ports from 1 to 65535", validation: (ports) => ports.every((p) => p >= 1 && p <= 65535) }),
    Config.withDefault([] as ReadonlyArray<number>)
  ),
  docsUrl: Config.string("DOCS_URL").pipe(Config.withDefault("https://docs.syllabus.dev")),
  /** The platform's own host (`<subdomain>.<host>`): no custom domain may be it or under it (docs/domains.md). */
  platformHost: Config.option(Config.string("PLATFORM_HOST")),
  traceRequests: Config.boolean("TRACE_REQUESTS").pipe(Config.withDefault(false)),
  /** The access log: one JSON line per request on stdout (`on`, the default), or none (`off`). */
  requestLog: Config.literal("on", "off")("REQUEST_LOG").pipe(Config.withDefault("on" as const)),
  /** Deadlines (docs/reliability.md, "Fail closed on a stalled database"): unset keeps the defaults. */
  requestDeadlineMs: Config.option(Config.integer("REQUEST_DEADLINE_MS")),
  uploadRequestDeadlineMs: Config.option(Config.integer("UPLOAD_REQUEST_DEADLINE_MS")),
  readinessDeadlineMs: Config.option(Config.integer("READINESS_DEADLINE_MS")),
  dbStatementTimeoutMs: Config.option(Config.integer("DB_STATEMENT_TIMEOUT_MS")),
  dbLockTimeoutMs: Config.option(Config.integer("DB_LOCK_TIMEOUT_MS")),
  dbIdleInTransactionTimeoutMs: Config.option(Config.integer("DB_IDLE_IN_TRANSACTION_TIMEOUT_MS")),
  dbQueryTimeoutMs: Config.option(Config.integer("DB_QUERY_TIMEOUT_MS")),
  dbConnectTimeoutMs: Config.option(Config.integer("DB_CONNECT_TIMEOUT_MS")),
  dbTransactionTimeoutMs: Config.option(Config.integer("DB_TRANSACTION_TIMEOUT_MS")),
  /** Statements by key prepared once per connection; unset: on, unless DATABASE_POOLER is `transaction`. */
  dbPreparedStatements: Config.option(Config.literal("on", "off")("DB_PREPARED_STATEMENTS")),
  /** The edge (docs/reliability.md, "Hostile clients"): unset keeps the defaults of `defaultEdgeLimits` and the wire. */
  maxUnfinished: Config.option(Config.integer("MAX_UNFINISHED_REQUESTS")),
  maxUnfinishedPerOrigin: Config.option(Config.integer("MAX_UNFINISHED_REQUESTS_PER_ORIGIN")),
  headersTimeoutMs: Config.option(Config.integer("HEADERS_TIMEOUT_MS")),
  bodyTimeoutMs: Config.option(Config.integer("BODY_TIMEOUT_MS")),
  partBodyTimeoutMs: Config.option(Config.integer("PART_BODY_TIMEOUT_MS")),
  /** Mail (docs/email.md): an SMTP server by URL or by host; neither keeps mail in memory. */
  smtpUrl: Config.option(Config.redacted("SMTP_URL")),
  smtpHost: Config.option(Config.string("SMTP_HOST")),
  smtpPort: Config.option(Config.integer("SMTP_PORT")),
  smtpTls: Config.option(Config.literal("implicit", "starttls", "opportunistic", "off")("SMTP_TLS")),
  smtpUser: Config.option(Config.string("SMTP_USER")),
  smtpPassword: Config.option(Config.redacted("SMTP_PASSWORD")),
  smtpFrom: Config.string("SMTP_FROM").pipe(Config.withDefault("Syllabus <no-reply@localhost>")),
  smtpTimeoutMs: Config.option(Config.integer("SMTP_TIMEOUT_MS"))
})

export type ServerConfig = Config.Config.Success<typeof ServerConfig>

/** The configured ones of `entries`: an unset variable keeps its default. */
const configured = <K extends string>(entries: Record<K, Option.Option<number>>): Partial<Record<K, number>> => {
  const out: Partial<Record<K, number>> = {}
  for (const name of Object.keys(entries) as Array<K>) {
    const value = entries[name]
    if (Option.isSome(value)) out[name] = value.value
  }
  return out
}

/** The request deadlines of `ServerSettings`. */
export const deadlineSettingsOf = (config: ServerConfig) =>
  configured({
    requestDeadlineMs: config.requestDeadlineMs,
    uploadRequestDeadlineMs: config.uploadRequestDeadlineMs,
    readinessDeadlineMs: config.readinessDeadlineMs
  })

/** The deadlines of the PostgreSQL pool (`PgTimeouts`). */
export const pgTimeoutsOf = (config: ServerConfig) =>
  configured({
    statementMs: config.dbStatementTimeoutMs,
    lockMs: config.dbLockTimeoutMs,
    idleInTransactionMs: config.dbIdleInTransactionTimeoutMs,
    queryMs: config.dbQueryTimeoutMs,
    connectMs: config.dbConnectTimeoutMs,
    transactionMs: config.dbTransactionTimeoutMs
  })

/** Both keys, when both are configured; else they live in the store. */
export const configuredKeys = (config: ServerConfig) =>
  Option.isSome(config.secretKey) && Option.isSome(config.cursorKey)
    ? { secretKey: config.secretKey.value, cursorKey: config.cursorKey.value }
    : undefined

export { Redacted }

/** The SMTP options of `SmtpMailer`, when `SMTP_URL` or `SMTP_HOST` is set; else undefined (mail stays in memory). */
export const smtpOptionsOf = (config: ServerConfig) => {
  if (Option.isNone(config.smtpUrl) && Option.isNone(config.smtpHost)) return undefined
  const some = <A>(o: Option.Option<A>): A | undefined => Option.getOrUndefined(o)
  return {
    url: some(config.smtpUrl),
    host: some(config.smtpHost),
    port: some(config.smtpPort),
    tls: some(config.smtpTls),
    user: some(config.smtpUser),
    password: some(config.smtpPassword),
    from: config.smtpFrom,
    timeoutMs: some(config.smtpTimeoutMs)
  }
}
