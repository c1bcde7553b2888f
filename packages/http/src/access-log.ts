/**
 * The server's access log: one structured line per request answered by the app, for the
 * operator's log pipeline (the API's own request log, `GET /requests`, is the account's).
 * It names the request and who made it, never a secret: no header value, no body, no query
 * string (a query can carry anything), only the path.
 */

export interface AccessLogLine {
  /** When the request arrived (RFC 3339, UTC). */
  readonly time: string
  readonly level: "info"
  readonly msg: "request"
  readonly request_id: string
  readonly method: string
  /** The path without its query string. */
  readonly path: string
  readonly operation_id: string | null
  readonly status: number
  readonly error_code: string | null
  readonly duration_ms: number
  /** The credential's public ID (never its secret) and its account, once authenticated. */
  readonly credential_id: string | null
  readonly account_id: string | null
  readonly environment: string | null
  readonly administrator_id: string | null
  readonly client_request_id: string | null
}

/** Where the lines go (`ServerSettings.accessLog`); the standalone server writes them to stdout. */
export type AccessLogSink = (line: AccessLogLine) => void

/** A sink writing each line as one JSON text to a stream (stdout for the standalone server). */
export const jsonLinesTo =
  (stream: { write(chunk: string): unknown }): AccessLogSink =>
  (line) => {
    stream.write(`${JSON.stringify(line)}\n`)
  }
