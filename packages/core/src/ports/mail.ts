/**
 * The mail port: hands one message to a mail server and says what the server answered. The
 * core decides what is sent, to whom and when (the outbox, `mail/outbox.ts`); an adapter
 * decides how: `@syllabus/http`'s `SmtpMailer` (SMTP, on nodemailer) for the standalone
 * server, `MemoryMailer` (an in-memory outbox) for tests and embedding.
 *
 * The answer is classified as SMTP classifies it (RFC 5321 §4.2.1): a 2xx is `accepted`, a
 * 4xx is `temporary` (try again later), a 5xx is `permanent` (a bounce: the address, or the
 * message, is refused). A failure to reach the server at all (refused connection, timeout,
 * TLS failure) is `temporary` with no code. `send` never fails: every outcome is a value.
 *
 * The shapes are written out here because `ports/` imports nothing else of the core.
 */
import { Context, type Effect } from "effect"

/** One message, in plain text. */
export interface MailMessage {
  /** The recipient's address (one per message). */
  readonly to: string
  readonly subject: string
  readonly text: string
  /**
   * The RFC 5322 `Message-ID` without its angle brackets (`eml_…@syllabus`): the same on
   * every attempt, so that a receiver can tell a repeated delivery from a new message.
   */
  readonly messageId: string
  /** Extra headers (e.g. `X-Syllabus-Kind`); never a secret. */
  readonly headers?: Readonly<Record<string, string>>
}

export type MailOutcome =
  | {
    readonly outcome: "accepted"
    /** The server's last answer (`250 2.0.0 Ok: queued as …`), for the record. */
    readonly response: string
  }
  | {
    readonly outcome: "temporary" | "permanent"
    /** The SMTP reply code (421, 450, 550, …); null when no server answered. */
    readonly code: number | null
    /** The enhanced status code of RFC 3463 (`5.1.1`), when the server gave one. */
    readonly enhancedCode: string | null
    /** The server's answer, or what went wrong on the way (`connection_refused`, `timeout`, …). */
    readonly response: string
  }

export class Mailer extends Context.Tag("@syllabus/core/Mailer")<
  Mailer,
  { readonly send: (message: MailMessage) => Effect.Effect<MailOutcome> }
>() {}
