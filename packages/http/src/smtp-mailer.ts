/**
 * The `Mailer` of a deployment (a port of `@syllabus/core`): SMTP, on nodemailer, the
 * long-maintained mail library of Node (no native code, no dependency of its own; STARTTLS,
 * implicit TLS, authentication, timeouts, RFC 5322 messages). It lives in the HTTP adapter, as
 * the other platform adapters `syllabusLayer` provides do (the webhook sender, the certificate
 * renderer), so the standalone server and an embedding send mail the same way.
 *
 * Each message is one SMTP transaction (a connection per message: the outbox sends few, and a
 * pool would hold connections a server may close). The server's answer decides the outcome:
 * accepted (2xx); a refusal of the envelope or the message (`EENVELOPE`, `EMESSAGE`) with a
 * 5xx is `permanent` (a bounce), with a 4xx `temporary`; anything else (no connection, a
 * timeout, TLS, a refused login, which is the operator's to fix and not the recipient's) is
 * `temporary`, so the message waits for its next attempt. Nothing is logged here: the answer
 * goes back to the core, which stores it masked.
 */
import { Mailer, type MailMessage, type MailOutcome } from "@syllabus/core"
import { Effect, Layer, Redacted } from "effect"
import type Nodemailer from "nodemailer"
import { importOptional } from "./optional-module.js"

/** How the connection is protected. */
export type SmtpTls = "implicit" | "starttls" | "opportunistic" | "off"

export interface SmtpOptions {
  /**
   * `smtp://user:password@host:port` (`smtps://` for implicit TLS); the fields below, when
   * given, take precedence over its parts.
   */
  readonly url?: string | Redacted.Redacted<string> | undefined
  readonly host?: string | undefined
  /** Default: 465 with `implicit` TLS, else 587. */
  readonly port?: number | undefined
  /**
   * `implicit`: TLS from the first byte (port 465); `starttls` (default): the session must be
   * upgraded with STARTTLS, else nothing is sent; `opportunistic`: upgraded when the server offers
   * it; `off`: never (a local relay or a test server only).
   */
  readonly tls?: SmtpTls | undefined
  readonly user?: string | undefined
  readonly password?: string | Redacted.Redacted<string> | undefined
  /** The `From` of every message, `Name <address>` or an address. */
  readonly from: string
  /** Connection, greeting and socket timeouts (default 30 s each). */
  readonly timeoutMs?: number | undefined
  /** Accept a certificate that does not verify (a local server with a self-signed one). Default: no. */
  readonly allowInvalidCertificates?: boolean | undefined
}

const reveal = (value: string | Redacted.Redacted<string> | undefined): string | undefined =>
  value === undefined ? undefined : typeof value === "string" ? value : Redacted.value(value)

/** The transport options of nodemailer for `options` (the URL's parts, then the fields). */
export const smtpTransportOptions = (options: SmtpOptions) => {
  const url = reveal(options.url)
  const parsed = url === undefined ? undefined : new URL(url)
  const fromUrlTls: SmtpTls | undefined = parsed === undefined ? undefined : parsed.protocol === "smtps:" ? "implicit" : undefined
  const tls: SmtpTls = options.tls ?? fromUrlTls ?? "starttls"
  const host = options.host ?? parsed?.hostname ?? "localhost"
  const port = options.port ?? (parsed?.port ? Number(parsed.port) : tls === "implicit" ? 465 : 587)
  const user = options.user ?? (parsed?.username ? decodeURIComponent(parsed.username) : undefined)
  const password = reveal(options.password) ?? (parsed?.password ? decodeURIComponent(parsed.password) : undefined)
  const timeout = options.timeoutMs ?? 30_000
  return {
    host,
    port,
    secure: tls === "implicit",
    requireTLS: tls === "starttls",
    ignoreTLS: tls === "off",
    ...(user !== undefined ? { auth: { user, pass: password ?? "" } } : {}),
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    tls: { rejectUnauthorized: options.allowInvalidCertificates !== true },
    // nodemailer logs nothing unless told: addresses never reach a log.
    logger: false,
    debug: false
  }
}

/** `5.1.1` in `550 5.1.1 <…>: Recipient address rejected`. */
const enhancedCodeOf = (text: string): string | null => /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(text)?.[1] ?? null

/** What a failed `sendMail` means: a refusal of the server (permanent with a 5xx) or a failure on the way (temporary). */
export const outcomeOfError = (error: unknown): MailOutcome => {
  const e = (typeof error === "object" && error !== null ? error : {}) as { code?: string; responseCode?: number; response?: string; message?: string }
  const code = typeof e.responseCode === "number" ? e.responseCode : null
  const response = typeof e.response === "string" && e.response !== "" ? e.response : (e.code ?? e.message ?? "error")
  const refused = e.code === "EENVELOPE" || e.code === "EMESSAGE"
  return {
    outcome: refused && code !== null && code >= 500 && code < 600 ? "permanent" : "temporary",
    code,
    enhancedCode: enhancedCodeOf(response),
    response
  }
}

/** The SMTP `Mailer`: one transaction per message, on a transport made once (nodemailer, loaded then). */
export const SmtpMailer = (options: SmtpOptions): Layer.Layer<Mailer> =>
  Layer.effect(Mailer, Effect.promise(() => importOptional<{ default: typeof Nodemailer }>("nodemailer", "Sending mail over SMTP")).pipe(Effect.map(({ default: nodemailer }) => {
    const transport = nodemailer.createTransport(smtpTransportOptions(options))
    const send = (message: MailMessage): Effect.Effect<MailOutcome> =>
      Effect.tryPromise({
        try: () =>
          transport.sendMail({
            from: options.from,
            to: message.to,
            subject: message.subject,
            text: message.text,
            messageId: `<${message.messageId}>`,
            ...(message.headers ? { headers: { ...message.headers } } : {})
          }),
        catch: outcomeOfError
      }).pipe(
        Effect.map((info): MailOutcome => ({ outcome: "accepted", response: String(info.response ?? "") })),
        Effect.catchAll((outcome) => Effect.succeed(outcome))
      )
    return { send }
  })))
