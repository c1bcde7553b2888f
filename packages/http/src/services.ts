/**
 * The services the HTTP adapter runs on: a store (records, unit of work, idempotency, rate
 * counters), the platform's crypto, IDs, the access-token checker, the release's capability
 * catalog, and the server settings.
 */
import type {
  AccessTokens,
  CapabilityCatalog,
  CertificateRenderer,
  TabularReader,
  Crypto,
  DnsResolver,
  FileStorage,
  Idempotency,
  Ids,
  Mailer,
  OperationKinds,
  RateLimitConfig,
  RateLimitStore,
  Records,
  UnitOfWork
} from "@syllabus/core"
import { Context, Layer } from "effect"
import type { AccessLogSink } from "./access-log.js"

/** The ports a store package provides. */
export type StoreServices = Records | UnitOfWork | Idempotency | RateLimitStore

export type AppServices =
  | StoreServices
  | FileStorage
  | Crypto
  | Ids
  | AccessTokens
  | RateLimitConfig
  | ServerSettings
  | OperationKinds
  | CapabilityCatalog
  | CertificateRenderer
  | TabularReader
  | Mailer
  | DnsResolver

export const RELEASE = "3.4.7"

export interface Deprecation {
  /** Announcement date (epoch ms). */
  readonly deprecatedAt: number
  /** After this instant the operation answers 410 `operation_sunset` (epoch ms). */
  readonly sunsetAt: number
}

export interface ServerSettingsShape {
  /** Base of documentation links (the `Link: <…/deprecations>` header). */
  readonly docsUrl: string
  /** Operations marked deprecated, by operation ID. None in release 3.4.7. */
  readonly deprecations: ReadonlyMap<string, Deprecation>
  /** A tracing span per request costs throughput on trivial routes: off unless asked for. */
  readonly traceRequests: boolean
  /** Interval of the `: keep-alive` comments on an idle event-stream connection (default 15 s; tests shorten it). */
  readonly eventStreamKeepAliveMs?: number
  /**
   * How often an idle event-stream connection reads the store (default 200 ms). A write
   * committed by this process wakes it at once; the poll is how it sees other processes' writes.
   */
  readonly eventStreamPollMs?: number
  /** How long a JSON body may take to arrive once it is read (default 15 s): 408 `http_error` after. */
  readonly bodyTimeoutMs?: number
  /** How long an upload part's body may take to arrive (default 120 s): 408 `http_error` after. */
  readonly partBodyTimeoutMs?: number
  /**
   * The most a request may take, from its arrival to its answer (default 30 s; 0: no bound).
   * Past it the answer is 503 (`credential_state_unverifiable`, or `audit_unavailable` for an
   * authenticated write) and what the request was doing is interrupted: its unit of work rolls
   * back. A stalled store fails each call sooner (the store's own deadlines): this bounds the sum.
   */
  readonly requestDeadlineMs?: number
  /**
   * The same bound for the operations that stream a body or talk to file storage, which no
   * store deadline covers (the upload session operations: a part's body, joining and hashing
   * up to 5 GiB at completion); default 5 min, or a minute above `partBodyTimeoutMs` if that is longer.
   */
  readonly uploadRequestDeadlineMs?: number
  /** How long `GET /readyz` waits for the store's answer before it says 503 (default 2 s). */
  readonly readinessDeadlineMs?: number
  /**
   * The access log: called with one structured line per request answered (`access-log.ts`;
   * never a secret). Unset, nothing is written; the standalone server writes JSON lines to stdout.
   */
  readonly accessLog?: AccessLogSink
}

/** The defaults of the request deadlines (`ServerSettingsShape`). */
export const defaultDeadlines = { requestDeadlineMs: 30_000, uploadRequestDeadlineMs: 300_000, readinessDeadlineMs: 2_000 } as const

export class ServerSettings extends Context.Tag("@syllabus/http/ServerSettings")<ServerSettings, ServerSettingsShape>() {
  static readonly defaults: ServerSettingsShape = {
    docsUrl: "https://docs.syllabus.dev",
    deprecations: new Map(),
    traceRequests: false
  }
  static readonly layer = (settings: Partial<ServerSettingsShape> = {}) =>
    Layer.succeed(ServerSettings, { ...ServerSettings.defaults, ...settings })
}
