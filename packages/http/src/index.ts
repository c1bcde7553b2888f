export { app, operations } from "./api.js"
export { type AccessLogLine, type AccessLogSink, jsonLinesTo } from "./access-log.js"
export { type Embedding, makeFetchHandler, makeNodeEdge, makeNodeListener, webHandlerOf } from "./embed.js"
export { clientErrorHandler, defaultEdgeLimits, type EdgeLimits, type NodeEdge, nodeEdge } from "./node-edge.js"
export { type SyllabusOptions, syllabusLayer } from "./layer.js"
export {
  DEFAULT_RENDER_BUDGET_MS,
  DEFAULT_RENDER_QUEUE,
  makeRenderPool,
  PdfCertificateRenderer,
  pooledCertificateRenderer,
  type RenderPool,
  type RenderPoolOptions,
  renderCertificatePdf
} from "./certificate-renderer.js"
export { StreamingTabularReader } from "./import-parsers.js"
export { CallbackWebhookSender, type WebhookCallback } from "./webhook-callback.js"
export { standardWebhookSignature } from "./webhook-sender.js"
export { outcomeOfError, SmtpMailer, type SmtpOptions, type SmtpTls, smtpTransportOptions } from "./smtp-mailer.js"
export { makeMemoryOutbox, MemoryMailer, type MemoryOutbox, type MemoryOutboxOptions } from "./memory-mailer.js"
export { makeNodeDnsResolver, NodeDnsResolver, type NodeDnsOptions } from "./node-dns.js"
export { makeMemoryDns, type MemoryDns } from "./memory-dns.js"
export { type CryptoKeys, ephemeralKeys, makeNodeCrypto, NodeCrypto } from "./node-crypto.js"
export { defineOperation, type Operation, type Reply } from "./operation.js"
export { openApiDocument } from "./openapi.js"
export { API_PREFIX, makeApp } from "./pipeline.js"
export {
  type AppServices,
  defaultDeadlines,
  type Deprecation,
  RELEASE,
  ServerSettings,
  type ServerSettingsShape,
  type StoreServices
} from "./services.js"
