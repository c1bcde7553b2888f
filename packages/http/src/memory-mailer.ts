/**
 * An in-memory outbox (the `Mailer` port of `@syllabus/core`) for tests and embedding: every
 * message the mail worker sends is kept in a list an embedder reads (`outbox.messages`) instead
 * of going to a mail server. `syllabusLayer` uses one when no `mailer` is given, so a server
 * without SMTP configured still records and "sends" its mail (nothing leaves the process).
 * `answer` decides what the "server" says (default: accepted), so a test can make a message
 * bounce (a permanent refusal) or wait (a temporary one).
 */
import { Mailer, type MailMessage, type MailOutcome } from "@syllabus/core"
import { Effect, Layer } from "effect"

export interface MemoryOutbox {
  /** The messages accepted, oldest first (at most `capacity`, the oldest dropped first). */
  readonly messages: ReadonlyArray<MailMessage>
  /** The `Mailer` that writes to this outbox. */
  readonly layer: Layer.Layer<Mailer>
  clear(): void
}

export interface MemoryOutboxOptions {
  /** What the "server" answers to a message (default: accepted). */
  readonly answer?: (message: MailMessage) => MailOutcome
  /** Messages kept at most (default 1,000). */
  readonly capacity?: number
}

/** A new outbox and the `Mailer` writing to it. */
export const makeMemoryOutbox = (options: MemoryOutboxOptions = {}): MemoryOutbox => {
  const messages: Array<MailMessage> = []
  const capacity = Math.max(1, options.capacity ?? 1000)
  const layer = Layer.succeed(Mailer, {
    send: (message) =>
      Effect.sync((): MailOutcome => {
        const outcome = options.answer?.(message) ?? { outcome: "accepted", response: "250 2.0.0 kept in memory" }
        if (outcome.outcome === "accepted") {
          messages.push(message)
          if (messages.length > capacity) messages.splice(0, messages.length - capacity)
        }
        return outcome
      })
  })
  return {
    messages,
    layer,
    clear: () => {
      messages.length = 0
    }
  }
}

/** A `Mailer` keeping what it sends in memory, in an outbox of its own (the default of `syllabusLayer`). */
export const MemoryMailer: Layer.Layer<Mailer> = Layer.suspend(() => makeMemoryOutbox().layer)
