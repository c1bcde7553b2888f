/**
 * A file's bytes (`GET /files/{file_id}/content`) and the expiry of the files the service makes
 * for a time (certificate previews). Decisions: docs/files.md.
 *
 * - The bytes stream from storage as they are read, never held whole: the whole file, or one
 *   byte range (`Range: bytes=a-b`, `a-`, `-n`), which storage reads from its offset
 *   (`FileStorage.openObject`). Several ranges in one header, a unit other than `bytes` or a
 *   malformed header are ignored (RFC 9110 §14.2: the whole file, 200), as S3 and GCS do; a
 *   range starting past the end is 416 with `Content-Range: bytes *\/<size>`.
 * - The validator is the file's SHA-256 (a strong ETag: the bytes of a file never change).
 *   `If-None-Match` naming it (or `*`) is 304; `If-Range` naming another one (or a date) makes
 *   a `Range` answer the whole file.
 * - A file past its `expires_at` is gone (404, as after its removal) before the housekeeping
 *   removes its record and its bytes (`sweepExpiredFiles`).
 * - A file whose bytes are not stored yet (a record with a `status` other than `available`:
 *   none today, every file is recorded once its bytes are whole) is 409 `state_conflict` with
 *   the status as the reason, as an upload session answers a completion it cannot make.
 */
import { Clock, Effect, Option, Stream } from "effect"
import { Caller } from "../access/context.js"
import { type ApiError, apiError, readUnavailable } from "../errors/errors.js"
import { FileStorage, type StorageUnavailable } from "../ports/file-storage.js"
import { type AccessPath, housekeepingPath, type JsonObject, Records, type StoredRecord } from "../ports/store.js"
import { formatTimestamp, HOUR } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { FILE_TYPE, fileFields, isExpiredFile, loadLiveFile } from "./uploads.js"

/** How long a certificate preview is kept: a preview is looked at, then made again. */
export const CERTIFICATE_PREVIEW_TTL_MS = 24 * HOUR

// ---------------------------------------------------------------------------------------
// Validators and ranges

/** The strong ETag of a file: its SHA-256. */
export const fileEtag = (data: JsonObject): string => `"${String(data.sha256)}"`

/** The entity tags of an `If-None-Match` / `If-Range` value; weak ones compare by their opaque part (RFC 9110 §8.8.3.2). */
const entityTags = (header: string): ReadonlyArray<string> =>
  header.split(",").map((tag) => tag.trim().replace(/^W\//, "")).filter((tag) => tag !== "")

/** Does `If-None-Match` match the file (its ETag among those listed, or `*`)? */
export const noneMatchHits = (header: string | undefined, etag: string): boolean =>
  header !== undefined && (header.trim() === "*" || entityTags(header).includes(etag))

/** What a `Range` header asks of a file of `size` bytes. */
export type RangeRequest =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Part"; readonly start: number; readonly end: number }
  | { readonly _tag: "Unsatisfiable" }

const RANGE = /^bytes=(\d*)-(\d*)$/i

/**
 * One range of bytes (RFC 9110 §14.1.2), resolved against the size: `a-b` (cut at the end), `a-`
 * (to the end), `-n` (the last n bytes). Whole for no header, a malformed one, another unit or
 * several ranges (ignored: the whole file is a valid answer); unsatisfiable when it starts past
 * the end or asks for the last 0 bytes.
 */
export const parseRange = (header: string | undefined, size: number): RangeRequest => {
  if (header === undefined) return { _tag: "Whole" }
  const match = RANGE.exec(header.trim().replace(/\s+/g, ""))
  if (!match) return { _tag: "Whole" }
  const [, first = "", last = ""] = match
  if (first === "" && last === "") return { _tag: "Whole" }
  if (first === "") {
    const suffix = Number(last)
    if (!Number.isSafeInteger(suffix)) return { _tag: "Whole" }
    if (suffix === 0) return { _tag: "Unsatisfiable" }
    return { _tag: "Part", start: Math.max(size - suffix, 0), end: size - 1 }
  }
  const start = Number(first)
  const end = last === "" ? Number.MAX_SAFE_INTEGER : Number(last)
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return { _tag: "Whole" }
  if (start >= size) return { _tag: "Unsatisfiable" }
  return { _tag: "Part", start, end: Math.min(end, size - 1) }
}

// ---------------------------------------------------------------------------------------
// The bytes

export interface FileContentConditions {
  /** The `Range` header. */
  readonly range?: string | undefined
  /** The `If-None-Match` header. */
  readonly ifNoneMatch?: string | undefined
  /** The `If-Range` header: the range holds only while the ETag it names is the file's. */
  readonly ifRange?: string | undefined
}

/** What `GET /files/{file_id}/content` answers. */
export type FileContent =
  | { readonly _tag: "NotModified"; readonly file: JsonObject; readonly etag: string }
  | {
      readonly _tag: "Bytes"
      readonly file: JsonObject
      readonly etag: string
      /** The whole file's size. */
      readonly size: number
      /** The range sent; none for the whole file. */
      readonly range: Option.Option<{ readonly start: number; readonly end: number }>
      readonly stream: Stream.Stream<Uint8Array, ApiError<"storage_unavailable">>
    }

const storageFailure = (cause: StorageUnavailable) => apiError("storage_unavailable", { internal: cause })

/**
 * A file's bytes, or the answer that replaces them (304, 416). Storage is asked whether the
 * object is there before anything is answered: a missing one is 404 when the file went meanwhile
 * (it expired and the housekeeping removed it), else 503 `storage_unavailable` (the record names
 * bytes storage lost); a storage that fails after the first byte ends the answer short.
 */
export const fileContent = Effect.fn("Files.content")(function* (id: string, conditions: FileContentConditions) {
  const storage = yield* FileStorage
  const record = yield* loadLiveFile(id)
  const status = record.data.status
  if (typeof status === "string" && status !== "available") return yield* Effect.fail(apiError("state_conflict", { reason: status }))
  const file = inOrder(record.data, fileFields)
  const etag = fileEtag(record.data)
  if (noneMatchHits(conditions.ifNoneMatch, etag)) return { _tag: "NotModified", file, etag } satisfies FileContent
  const size = Number(record.data.size)
  const rangeHolds = conditions.ifRange === undefined || conditions.ifRange.trim() === etag
  const asked = rangeHolds ? parseRange(conditions.range, size) : ({ _tag: "Whole" } as const)
  if (asked._tag === "Unsatisfiable") {
    return yield* Effect.fail(
      apiError("http_error", { reason: "range_not_satisfiable", statusOverride: 416, headers: { "content-range": `bytes */${size}` } })
    )
  }
  const range = asked._tag === "Part" ? Option.some({ start: asked.start, end: asked.end }) : Option.none()
  const opened = yield* storage.openObject(String(record.data.storage_key), Option.getOrUndefined(range)).pipe(Effect.mapError(storageFailure))
  if (Option.isNone(opened)) {
    yield* loadLiveFile(id)
    return yield* Effect.fail(apiError("storage_unavailable", { internal: new Error(`the bytes of ${id} are not in storage`) }))
  }
  if (opened.value.size !== size) {
    return yield* Effect.fail(apiError("storage_unavailable", { internal: new Error(`storage holds ${opened.value.size} bytes of ${id}, ${size} recorded`) }))
  }
  const stream: Stream.Stream<Uint8Array, ApiError<"storage_unavailable">> = Stream.mapError(opened.value.stream, storageFailure)
  return { _tag: "Bytes", file, etag, size, range, stream } satisfies FileContent
})

// ---------------------------------------------------------------------------------------
// Expiry

/** Files removed per store read at most; a larger backlog is finished by the next passes. */
export const FILE_EXPIRY_BATCH = 200
/** Reads per pass at most. */
export const FILE_EXPIRY_MAX_BATCHES = 50
/** The earliest timestamp: a lower bound that leaves out the files without `expires_at` (null sorts lowest). */
const EPOCH = formatTimestamp(0)

/** The cross-tenant read of `sweepExpiredFiles`: files by `expires_at`, an index of the store. */
export const filesAccessPaths: ReadonlyArray<AccessPath> = [housekeepingPath(FILE_TYPE, [], [{ field: "expires_at", kind: "text" }])]

/**
 * Housekeeping: files past `expires_at` (certificate previews, 24 hours after they were made)
 * lose their bytes, then their record: bytes first, so a pass that fails half-way leaves a
 * record (already 404 to reads) that the next pass finds again, never bytes no record names.
 * Reads `expires_at <= now` over the declared index, a batch at a time. No event and no audit
 * entry: retention is not a change a caller made (as the pruning of §8.3). Answers how many it
 * removed.
 */
export const sweepExpiredFiles = Effect.fn("Files.sweepExpired")(function* () {
  const records = yield* Records
  const storage = yield* FileStorage
  const now = yield* Clock.currentTimeMillis
  const at = formatTimestamp(now)
  let removed = 0
  for (let step = 0; step < FILE_EXPIRY_MAX_BATCHES; step++) {
    const due: ReadonlyArray<StoredRecord> = yield* records.scan(
      FILE_TYPE,
      [
        { field: "expires_at", op: "gte", value: EPOCH },
        { field: "expires_at", op: "lte", value: at }
      ],
      FILE_EXPIRY_BATCH
    )
    for (const record of due) {
      if (!isExpiredFile(record.data, now)) continue
      yield* storage.deleteObject(String(record.data.storage_key))
      if (yield* records.remove(record.tenant, FILE_TYPE, record.id)) removed++
    }
    if (due.length < FILE_EXPIRY_BATCH) break
  }
  return removed
})
