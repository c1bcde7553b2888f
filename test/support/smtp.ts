/**
 * A real SMTP server for the email contract tests (the `smtp-server` package): it takes what
 * the server's `SmtpMailer` (nodemailer) sends and keeps each message as it arrived (envelope,
 * raw text, subject, Message-ID, body). `refuse(address)` chooses an SMTP refusal of the
 * recipient (a 5xx bounces, a 4xx is retried), or none.
 */
import type { AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"

export interface Arrived {
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly raw: string
  readonly subject: string
  readonly messageId: string
  readonly body: string
}

export interface SmtpTestServer {
  readonly port: number
  readonly received: Array<Arrived>
  /** The messages whose envelope names `address`. */
  arrivedFor(address: string): ReadonlyArray<Arrived>
  close(): Promise<void>
}

/** The value of header `name` in a raw message (unfolded). */
export const headerOf = (raw: string, name: string): string => {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? ""
  const unfolded = head.replace(/\r?\n[ \t]+/g, " ")
  const line = unfolded.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`))
  return line === undefined ? "" : line.slice(name.length + 1).trim()
}

/** The body of a raw message, quoted-printable soft breaks and escapes undone. */
export const bodyOf = (raw: string): string => {
  const at = raw.search(/\r?\n\r?\n/)
  const body = at < 0 ? "" : raw.slice(at).replace(/^\r?\n\r?\n/, "")
  return /quoted-printable/i.test(headerOf(raw, "Content-Transfer-Encoding"))
    ? body.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    : body
}

export const startSmtpServer = async (
  refuse: (address: string) => { readonly code: number; readonly message: string } | undefined = () => undefined
): Promise<SmtpTestServer> => {
  const received: Array<Arrived> = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(address, _session, callback) {
      const refusal = refuse(address.address.toLowerCase())
      if (refusal === undefined) return callback()
      callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }))
    },
    onData(stream, session, callback) {
      const chunks: Array<Buffer> = []
      stream.on("data", (chunk: Buffer) => chunks.push(chunk))
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8")
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((a) => a.address.toLowerCase()),
          raw,
          subject: headerOf(raw, "Subject"),
          messageId: headerOf(raw, "Message-ID"),
          body: bodyOf(raw)
        })
        callback()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.server.address() as AddressInfo).port,
    received,
    arrivedFor: (address) => received.filter((m) => m.to.includes(address.toLowerCase())),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
