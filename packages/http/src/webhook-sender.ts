/**
 * The `WebhookSender` port on Node (open-points "Events and webhooks"): one POST per attempt,
 * signed with the Standard Webhooks scheme:
 *
 * - `webhook-id`: the event ID (the same on every attempt and replay, for de-duplication);
 * - `webhook-timestamp`: seconds since the epoch, when the attempt starts;
 * - `webhook-signature`: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed with
 *   the base64-decoded part of the `whsec_` secret; one such entry per valid secret, separated
 *   by spaces (after a rotation, the previous secret's until its grace period ends).
 *
 * Destination safety, checked when connecting and not only at registration: the name is
 * resolved here, every address it resolves to must be allowed (production: public only;
 * sandbox: public or loopback), and the connection goes to the address that was checked,
 * so a name that changes its answer in between (DNS rebinding) cannot reach anything else.
 * Redirects are never followed (a 3xx is a failed attempt). `allowLocal` (a server flag for
 * local development) lets every environment reach http and any address.
 *
 * The sandbox's loopback is narrower than the contract's "loopback for local development"
 * reads: only the ports of `localPorts` (the operator's `LOCAL_WEBHOOK_PORTS`; none by
 * default), else `destination_not_allowed` before connecting. An attempt to a loopback
 * address keeps no response excerpt, and every failed connection is one `connection_failed`,
 * so attempts cannot map the host's ports and services.
 */
import { destinationPort, destinationProblem, isLoopbackDestination, type WebhookRequest, type WebhookResponse, WebhookSender } from "@syllabus/core"
import { Effect, Layer } from "effect"
import { createHmac } from "node:crypto"
import { lookup as dnsLookup, type LookupAddress } from "node:dns"
import { request as httpRequest, type IncomingMessage } from "node:http"
import { request as httpsRequest } from "node:https"
import { isIP, type LookupFunction } from "node:net"

export interface NodeWebhookSenderOptions {
  /** Let every environment reach http and private or loopback addresses (local development only). */
  readonly allowLocal?: boolean
  /** The loopback ports a sandbox webhook may reach (default none); read at each attempt, so a live set works. */
  readonly localPorts?: ReadonlySet<number>
  /** Name resolution (default: the system's, `dns.lookup`); replaceable for tests. */
  readonly resolve?: (hostname: string) => Promise<ReadonlyArray<LookupAddress>>
}

/** How many bytes of a response body are read for the excerpt; the rest is discarded. */
const EXCERPT_BYTES = 1024

/** `v1,<base64>` of the Standard Webhooks scheme. */
export const standardWebhookSignature = (secret: string, id: string, timestamp: number, body: string): string => {
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64")
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`
}

/**
 * The headers of a delivery attempt (besides `content-length`): one place for every sender,
 * the network one below and the in-process one of `onWebhook` (`webhook-callback.ts`).
 */
export const webhookHeaders = (req: WebhookRequest): Record<string, string> => ({
  "content-type": "application/json",
  "user-agent": "Syllabus-Webhooks/1",
  "webhook-id": req.messageId,
  "webhook-timestamp": String(req.timestamp),
  "webhook-signature": req.secrets.map((secret) => standardWebhookSignature(secret, req.messageId, req.timestamp, req.body)).join(" ")
})

const systemResolve = (hostname: string) =>
  new Promise<ReadonlyArray<LookupAddress>>((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)))
  )

class Refused extends Error {
  readonly code = "destination_not_allowed"
}

const addressUrl = (address: string, family: number) => (family === 6 ? `https://[${address}]/` : `https://${address}/`)

/** One value for every failed connection (refused, reset, not HTTP): which one would tell open ports from closed. */
const transportErrorOf = (error: unknown): string => {
  const code = (error as { code?: string } | null)?.code ?? ""
  if (error instanceof Refused || code === "destination_not_allowed") return "destination_not_allowed"
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "ENODATA") return "dns_failure"
  if (code.startsWith("ERR_TLS") || code.includes("CERT") || code === "EPROTO" || code.startsWith("ERR_SSL")) return "tls_error"
  return "connection_failed"
}

export const makeNodeWebhookSender = (options: NodeWebhookSenderOptions = {}): WebhookSender["Type"] => {
  const resolve = options.resolve ?? systemResolve
  const allowLocal = options.allowLocal === true
  const localPorts = options.localPorts ?? new Set<number>()

  const send = (req: WebhookRequest, signal: AbortSignal): Promise<WebhookResponse> =>
    new Promise<WebhookResponse>((done) => {
      const started = performance.now()
      const elapsed = () => Math.round(performance.now() - started)
      let finished = false
      let timer: ReturnType<typeof setTimeout> | undefined
      const finish = (response: Omit<WebhookResponse, "durationMs">) => {
        if (finished) return
        finished = true
        clearTimeout(timer)
        done({ ...response, durationMs: elapsed() })
      }
      const fail = (error: unknown) => finish({ httpStatus: null, transportError: transportErrorOf(error), responseText: null })

      // The URL itself (scheme, literal addresses, special names), as at registration.
      const problem = allowLocal ? undefined : destinationProblem(req.url, req.environment)
      if (problem !== undefined) return fail(new Refused(problem))
      const url = new URL(req.url)
      const port = destinationPort(url)
      /** A loopback address on a port the operator did not allow. */
      const localRefused = (address: string) => !allowLocal && isLoopbackDestination(address) && !localPorts.has(port)
      if (localRefused(req.url)) return fail(new Refused("loopback port not allowed"))
      let local = allowLocal ? false : isLoopbackDestination(req.url)

      /** Resolve, check every address, and connect to one that was checked. */
      const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
        const host = hostname.replace(/^\[|\]$/g, "")
        const literal = isIP(host)
        const addresses: Promise<ReadonlyArray<LookupAddress>> = literal ? Promise.resolve([{ address: host, family: literal }]) : resolve(host)
        addresses.then(
          (found) => {
            if (found.length === 0) return callback(Object.assign(new Error("no address"), { code: "ENOTFOUND" }), "", 4)
            const refused = allowLocal
              ? undefined
              : found.find((a) => destinationProblem(addressUrl(a.address, a.family), req.environment) !== undefined || localRefused(addressUrl(a.address, a.family)))
            if (refused) return callback(new Refused(`${hostname} resolves to a refused address`), "", 4)
            if (!allowLocal && found.some((a) => isLoopbackDestination(addressUrl(a.address, a.family)))) local = true
            if ((lookupOptions as { all?: boolean }).all) return (callback as unknown as (e: null, a: ReadonlyArray<LookupAddress>) => void)(null, found)
            callback(null, found[0]!.address, found[0]!.family)
          },
          (error) => callback(error as NodeJS.ErrnoException, "", 4)
        )
      }

      const body = Buffer.from(req.body)
      const make = url.protocol === "https:" ? httpsRequest : httpRequest
      const outgoing = make(
        url,
        {
          method: "POST",
          lookup,
          agent: false,
          headers: { ...webhookHeaders(req), "content-length": String(body.length) }
        },
        (res: IncomingMessage) => {
          const chunks: Array<Buffer> = []
          let size = 0
          res.on("data", (chunk: Buffer) => {
            if (size < EXCERPT_BYTES) chunks.push(chunk)
            size += chunk.length
          })
          res.on("end", () =>
            finish({
              httpStatus: res.statusCode ?? null,
              transportError: null,
              // What a local service answers is not the webhook owner's to read.
              responseText: local ? null : Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString("utf8")
            })
          )
          res.on("error", fail)
        }
      )
      // `timeout_ms` covers the whole exchange: connection, request and response.
      timer = setTimeout(() => {
        finish({ httpStatus: null, transportError: "timeout", responseText: null })
        outgoing.destroy()
      }, req.timeoutMs)
      // The attempt was interrupted (the worker stops): the socket goes now, not at the timeout.
      const abort = () => {
        finish({ httpStatus: null, transportError: "connection_failed", responseText: null })
        outgoing.destroy()
      }
      if (signal.aborted) abort()
      else signal.addEventListener("abort", abort, { once: true })
      outgoing.on("close", () => signal.removeEventListener("abort", abort))
      outgoing.on("error", fail)
      outgoing.end(body)
    })

  // Never fails: whatever goes wrong is a transport error of the attempt.
  return {
    send: (req) =>
      Effect.tryPromise((signal) => send(req, signal)).pipe(
        Effect.orElseSucceed((): WebhookResponse => ({ httpStatus: null, transportError: "connection_failed", responseText: null, durationMs: 0 }))
      )
  }
}

/** The sender as a layer. */
export const NodeWebhookSender = (options: NodeWebhookSenderOptions = {}) => Layer.succeed(WebhookSender, makeNodeWebhookSender(options))
