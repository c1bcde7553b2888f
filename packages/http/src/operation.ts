/**
 * An operation of the API, described once: its route, what it needs (capability,
 * idempotency, `If-Match`), the schemas of its inputs and output, and its handler. The
 * router, the request pipeline and the OpenAPI description are all derived from this list.
 */
import type { ApiError, Caller, ErrorCode, IdKind, IdempotencyRule, Json } from "@syllabus/core"
import type { Effect, Schema, Stream } from "effect"
import type { AppServices } from "./services.js"

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE"

/** What a handler answers; the pipeline adds the envelope headers. */
export interface Reply {
  readonly status: number
  /** The JSON body, or `null` for 204. */
  readonly body: Json | null
  readonly headers?: Readonly<Record<string, string>>
  /** The body shows a secret once: the idempotency receipt keeps no copy and never replays it. */
  readonly showsSecretOnce?: boolean
  /**
   * A streamed answer instead of JSON (an operation with `produces`): the bytes as they come,
   * for as long as the stream runs (Server-Sent Events, a file's bytes). `body` is ignored. A
   * stream that fails after the headers went out ends the answer short (the connection is
   * closed: a client sees fewer bytes than `Content-Length`).
   */
  readonly stream?: Stream.Stream<Uint8Array, ApiError>
}

export interface HandlerInput<Q, B> {
  readonly path: Readonly<Record<string, string>>
  readonly query: Q
  readonly body: B
  /** The revision named by `If-Match`; `undefined` when absent or `*`. */
  readonly expectedRevision: number | undefined
  /** The record ID `If-Match` names, on an operation whose ETag names a record its path does not (`ifMatchNamesRecord`). */
  readonly expectedRecordId?: string | undefined
  /** The request body as it arrives, for operations with `rawBody` (read it at most once). */
  readonly raw: Stream.Stream<Uint8Array, ApiError<"http_error">>
  /** The request headers, names in lower case (for the conditions of a download: `Range`, `If-None-Match`, `If-Range`). */
  readonly headers: Readonly<Record<string, string | undefined>>
}

/** Schema of a JSON value, for inputs decoded by the pipeline and documented in OpenAPI. */
export type AnySchema = Schema.Schema.AnyNoContext

export interface Operation<QS extends AnySchema = AnySchema, BS extends AnySchema = AnySchema> {
  /** Stable operation ID, `<resource>.<action>` (e.g. `credentials.create`). */
  readonly id: string
  readonly method: Method
  /** Path under `/api/v3`, with `{name}` parameters. */
  readonly path: string
  /** A line for the sidebar of a reference: at most 120 characters, plain text (no backticks). */
  readonly summary: string
  /** What else a reader should know, in Markdown; the description adds what the declaration implies. */
  readonly description?: string
  /**
   * The area of the operation (Catalog, People, Settings…): the description groups the
   * resource tags by area in `x-tagGroups` (openapi-tags.ts).
   */
  readonly tag: string
  /**
   * The capability the caller must hold, or `"authenticated"` for operations any valid
   * credential may call. There is no default: an operation without it does not compile.
   */
  readonly capability: string | "authenticated"
  /** The path parameter naming the resource a resource-limited policy is checked against. */
  readonly scopedBy?: string
  /** Path parameters and the kind of public ID each holds (a malformed one is 404). */
  readonly params?: Readonly<Record<string, IdKind>>
  readonly query?: QS
  readonly body?: BS
  /**
   * The operation takes raw bytes of this media type instead of JSON. The pipeline does not
   * read the body nor open a unit of work: the handler streams `raw` and keeps its own.
   */
  readonly rawBody?: "application/octet-stream"
  /** The operation answers this media type instead of JSON (its errors stay JSON); `Accept` must allow it. */
  readonly produces?: "text/event-stream"
  /**
   * The operation answers a stored file's bytes (`Reply.stream`), in the file's own media type
   * whatever `Accept` says (its errors stay JSON), with the headers its reply sets
   * (`Content-Length`, `ETag`, `Cache-Control`…); also 206 for a range and 304 when the client's
   * copy is current. The description documents a binary answer and those statuses.
   */
  readonly download?: true
  readonly idempotency: IdempotencyRule
  /**
   * Who opens the unit of work of a write: the pipeline (default: the whole handler and the
   * idempotency receipt in one), or the handler itself, when it also does work no
   * transaction covers (file storage). Such a handler must be safe to repeat.
   */
  readonly unitOfWork?: "pipeline" | "handler"
  /** The resource type named in `If-Match` ETags, when the operation honours `If-Match`. */
  readonly ifMatch?: string
  /** The resource ID named in those ETags when the path has none (a settings group); else the path's last parameter. */
  readonly ifMatchId?: string
  /**
   * The ETag names a record by its own ID, which the path does not hold (a lesson's progress
   * of an enrollment, addressed by the enrollment and the lesson): the pipeline checks the
   * type, the handler compares the ID (`expectedRecordId`) with the record it writes.
   */
  readonly ifMatchNamesRecord?: true
  readonly sandboxOnly?: boolean
  readonly success: {
    readonly status: number
    readonly description: string
    /** The schema of `data` (or of the whole body for collections, see `collection`). */
    readonly schema?: AnySchema
    readonly collection?: boolean
    readonly headers?: ReadonlyArray<string>
  }
  /** Error codes this operation can answer besides those every operation can. */
  readonly errors: ReadonlyArray<ErrorCode>
  readonly handler: (
    input: HandlerInput<Schema.Schema.Type<QS>, Schema.Schema.Type<BS>>
  ) => Effect.Effect<Reply, ApiError, AppServices | Caller>
}

/** Identity that keeps the schema types of one operation tied to its handler. */
export const defineOperation = <QS extends AnySchema = AnySchema, BS extends AnySchema = AnySchema>(
  operation: Operation<QS, BS>
): Operation => operation as unknown as Operation
