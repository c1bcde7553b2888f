/**
 * The services the HTTP adapter runs on: a store (records, unit of work, idempotency, rate
 * counters), the platform's crypto, IDs, the access-token checker, the release's capability
 * catalog, and the server settings.
 */
import type {
  AccessTokens,
  CapabilityCatalog,
  Crypto,
  FileStorage,
  Idempotency,
  Ids,
  OperationKinds,
  RateLimitConfig,
  RateLimitStore,
  Records,
  UnitOfWork
} from "@syllabus/core"
import { Context, Layer } from "effect"

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
}

export class ServerSettings extends Context.Tag("@syllabus/http/ServerSettings")<ServerSettings, ServerSettingsShape>() {
  static readonly defaults: ServerSettingsShape = {
    docsUrl: "https://docs.syllabus.dev",
    deprecations: new Map(),
    traceRequests: false
  }
  static readonly layer = (settings: Partial<ServerSettingsShape> = {}) =>
    Layer.succeed(ServerSettings, { ...ServerSettings.defaults, ...settings })
}
