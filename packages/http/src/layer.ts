/**
 * Everything the app runs on, assembled from a store layer in one call.
 */
import {
  AccessTokens,
  BackgroundBudget,
  type BackgroundOptions,
  batchKinds,
  importsOperationKinds,
  CertificateRenderer,
  certificateDocumentsWorker,
  TabularReader,
  ChangeSignals,
  Crypto,
  PlatformHost,
  FileStorage,
  housekeepingWorker,
  Ids,
  makeBackgroundBudget,
  onBackgroundStore,
  operationKinds,
  OperationKinds,
  operationsWorker,
  RateLimitConfig,
  Records,
  ReleaseCapabilityCatalog,
  StorageUnavailable,
  type Tenant,
  webhookDeliveryWorker,
  mailWorker,
  Mailer,
  DnsResolver,
  WebhookSender
} from "@syllabus/core"
import { Effect, Layer, Redacted, Stream } from "effect"
import { type CryptoKeys, makeNodeCrypto } from "./node-crypto.js"
import { type AppServices, ServerSettings, type ServerSettingsShape, type StoreServices } from "./services.js"
import { randomBytes } from "node:crypto"
import { NodeWebhookSender } from "./webhook-sender.js"
import { CallbackWebhookSender, type WebhookCallback } from "./webhook-callback.js"
import { OAuthConfig } from "./oauth/app.js"
import { joseAccessTokens } from "./oauth/grants.js"
import { PdfCertificateRenderer } from "./certificate-renderer.js"
import { StreamingTabularReader } from "./import-parsers.js"
import { MemoryMailer } from "./memory-mailer.js"
import { NodeDnsResolver } from "./node-dns.js"

export interface SyllabusOptions<E = never> {
  /** The record store: `MemoryStore` from `@syllabus/memory`, or `pgLayer(url)` from `@syllabus/pg`. */
  readonly store: Layer.Layer<StoreServices, E>
  /**
   * Where file bytes live (`LocalFileStorage` or `MemoryFileStorage` from `@syllabus/storage`,
   * or your own adapter). Absent: uploads answer 503 `storage_unavailable`.
   */
  readonly storage?: Layer.Layer<FileStorage>
  /** Keys for secret hashes and cursor signatures. Absent: read from the store, made on first start. */
  readonly keys?: CryptoKeys
  /** The rate limiter of §8.1: on (default) or off for benchmarks and load tests. */
  readonly rateLimits?: "on" | "off"
  readonly settings?: Partial<ServerSettingsShape>
  /**
   * Checks administrator access tokens (human mode). Default: the RS256 verifier of this
   * server's own authorization server (§5.2), whose keys are kept in the store.
   */
  readonly accessTokens?: Layer.Layer<AccessTokens>
  /** `{oauth_url}`, the issuer of access tokens. Default: each request's own origin. */
  readonly oauthUrl?: string
  /** Run the workers of asynchronous operations in this process (default: yes). */
  readonly workers?: boolean
  /**
   * The budget the workers (webhook delivery, operations, housekeeping) share in this process:
   * units of work in flight at most, and of one account (default 16 and 4). On a store that
   * offers `BackgroundStore` (PostgreSQL), the workers use it instead of the request store.
   */
  readonly background?: BackgroundOptions
  /** Sends webhook deliveries (default: `NodeWebhookSender`, with `allowLocalWebhooks`). */
  readonly webhookSender?: Layer.Layer<WebhookSender>
  /**
   * Deliver webhooks to this function instead of the network (when no `webhookSender` is
   * given): each attempt is the signed `Request` a destination would get, and the `Response`
   * decides it (2xx succeeded, anything else is retried on the schedule). See `webhook-callback.ts`.
   */
  readonly onWebhook?: WebhookCallback
  /** Let production webhooks reach http and private or loopback addresses (local development only). */
  readonly allowLocalWebhooks?: boolean
  /**
   * The loopback ports sandbox webhooks may reach (default none: a sandbox webhook at
   * `http://localhost:<port>` is refused when connecting, `destination_not_allowed`). A live
   * set is read at each attempt.
   */
  readonly localWebhookPorts?: ReadonlySet<number>
  /** Draws certificates and their previews as PDF (default: `PdfCertificateRenderer`, on pdfkit). */
  readonly certificateRenderer?: Layer.Layer<CertificateRenderer>
  /** Reads the rows of imported files (default: `StreamingTabularReader`, on csv-parse and exceljs). */
  readonly tabularReader?: Layer.Layer<TabularReader>
  /**
   * Sends the outbox's mail (access emails, ticket reply notifications; docs/email.md):
   * `SmtpMailer({ url | host…, from })` for a mail server, or `makeMemoryOutbox().layer` to
   * read what was sent. Default: `MemoryMailer`, an in-memory outbox (nothing leaves the process).
   */
  readonly mailer?: Layer.Layer<Mailer>
  /**
   * Reads the DNS TXT records a custom domain's verification looks for (docs/domains.md):
   * default `NodeDnsResolver()` (the system's resolvers); `makeMemoryDns().layer` for tests.
   */
  readonly dns?: Layer.Layer<DnsResolver>
  /**
   * The platform's own host, under which accounts have their addresses (`<subdomain>.<host>`):
   * no custom domain may be it or under it. Default: the host of `oauthUrl`, when given.
   */
  readonly platformHost?: string
}

const unavailable = Effect.fail(new StorageUnavailable({ cause: "no file storage configured" }))

/** The storage of a deployment without one: every call says so. */
export const NoFileStorage = Layer.succeed(FileStorage, {
  startUpload: () => unavailable,
  putPart: () => unavailable,
  completeUpload: () => unavailable,
  abortUpload: () => unavailable,
  readObject: () => Stream.fail(new StorageUnavailable({ cause: "no file storage configured" })),
  openObject: () => unavailable,
  deleteObject: () => unavailable
})

const SYSTEM: Tenant = { accountId: "system", environment: "production" }
const KEYS_TYPE = "server_keys"

/** Keys kept in the store itself, so that every process on one database shares them. */
const storedKeys = Effect.gen(function* () {
  const records = yield* Records
  const existing = yield* records.get(SYSTEM, KEYS_TYPE, "default")
  const fresh = { secret_key: randomBytes(32).toString("base64url"), cursor_key: randomBytes(32).toString("base64url") }
  const data =
    existing?.data ??
    (yield* records.insert(SYSTEM, KEYS_TYPE, "default", fresh).pipe(
      Effect.map((r) => r.data),
      // Another process made them first: use theirs.
      Effect.catchTag("UniqueViolation", () =>
        records.get(SYSTEM, KEYS_TYPE, "default").pipe(Effect.map((r) => r?.data ?? fresh))
      )
    ))
  return { secretKey: Redacted.make(String(data.secret_key)), cursorKey: Redacted.make(String(data.cursor_key)) } satisfies CryptoKeys
})

export const syllabusLayer = <E>(options: SyllabusOptions<E>): Layer.Layer<AppServices, E | unknown> => {
  const crypto = options.keys
    ? Layer.succeed(Crypto, makeNodeCrypto(options.keys))
    : Layer.effect(Crypto, Effect.map(storedKeys, makeNodeCrypto))
  const services = Layer.mergeAll(
    crypto,
    options.storage ?? NoFileStorage,
    Ids.live,
    options.accessTokens ?? joseAccessTokens({ issuer: options.oauthUrl }),
    options.oauthUrl === undefined ? Layer.empty : Layer.succeed(OAuthConfig, { oauthUrl: options.oauthUrl.replace(/\/+$/, "") }),
    options.rateLimits === "off" ? RateLimitConfig.off : RateLimitConfig.contract,
    ServerSettings.layer(options.settings),
    ReleaseCapabilityCatalog,
    ChangeSignals.live,
    options.certificateRenderer ?? PdfCertificateRenderer,
    options.tabularReader ?? StreamingTabularReader,
    options.mailer ?? MemoryMailer,
    options.dns ?? NodeDnsResolver(),
    Layer.succeed(PlatformHost, { host: options.platformHost ?? (options.oauthUrl === undefined ? null : new URL(options.oauthUrl).hostname) }),
    options.webhookSender ??
      (options.onWebhook ? CallbackWebhookSender(options.onWebhook) : NodeWebhookSender({
            allowLocal: options.allowLocalWebhooks === true,
            ...(options.localWebhookPorts ? { localPorts: options.localWebhookPorts } : {})
          }))
  )
  const workers =
    options.workers === false
      ? Layer.empty
      : Layer.scopedDiscard(
        Effect.gen(function* () {
          // One budget for them all, on the workers' own store when there is one.
          const budget = makeBackgroundBudget(options.background)
          const fork = <A, E, R>(worker: Effect.Effect<A, E, R>) =>
            Effect.forkScoped(onBackgroundStore(worker).pipe(Effect.provideService(BackgroundBudget, budget)))
          yield* fork(operationsWorker())
          yield* fork(webhookDeliveryWorker())
          yield* fork(mailWorker())
          yield* fork(certificateDocumentsWorker())
          yield* fork(housekeepingWorker())
        })
      )
  return Layer.provideMerge(
    workers,
    Layer.provideMerge(Layer.merge(services, OperationKinds.layer({ ...batchKinds, ...importsOperationKinds, ...operationKinds })), options.store)
  )
}
