/**
 * The file-storage port: where the bytes of uploads and files live, apart from the record
 * store (a deployment chooses each independently). Shaped as S3's multipart upload, so that
 * an S3-compatible adapter is a drop-in: start an upload, put numbered parts (each streamed,
 * each replaceable), complete it into one object, or abort it.
 */
import { Context, Data, type Effect, type Option, type Stream } from "effect"

/** The storage did not answer or failed: the wire says 503 `storage_unavailable`. */
export class StorageUnavailable extends Data.TaggedError("StorageUnavailable")<{ readonly cause: unknown }> {}

/** A part carried more bytes than it may: nothing of it is kept. */
export class PartTooLarge extends Data.TaggedError("PartTooLarge")<{ readonly limit: number }> {}

export interface StoredPart {
  readonly number: number
  readonly size: number
  /** Hex SHA-256 of the part's bytes. */
  readonly sha256: string
  /** The adapter's own token for the part (S3's ETag); opaque. */
  readonly etag: string
}

export interface StoredObject {
  readonly key: string
  readonly size: number
  /** Hex SHA-256 of the whole object. */
  readonly sha256: string
  /** The first bytes of the object (at most `SNIFF_BYTES`), to recognize its type. */
  readonly head: Uint8Array
}

export const SNIFF_BYTES = 64

/** Bytes `start` to `end` of an object, both included (HTTP's `Range: bytes=start-end`, S3's `Range`). */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

/** An object opened for reading (`FileStorage.openObject`): its whole size and the bytes asked for. */
export interface OpenedObject {
  /** The size of the whole object, whatever range was asked for. */
  readonly size: number
  /**
   * The bytes asked for, read as the stream is pulled, chunk by chunk (never the whole object in
   * memory). Building it reads nothing; a stream never run costs nothing.
   */
  readonly stream: Stream.Stream<Uint8Array, StorageUnavailable>
}

export class FileStorage extends Context.Tag("@syllabus/core/FileStorage")<
  FileStorage,
  {
    /** Begin a multipart upload of the object `key`; the answer names the upload. */
    readonly startUpload: (key: string) => Effect.Effect<string, StorageUnavailable>
    /**
     * Stream one part (numbers from 1) into the upload, never holding it whole in memory. A
     * part of the same number replaces the earlier one. More than `maxBytes` fails with
     * `PartTooLarge` and keeps nothing. A failure of the body stream keeps nothing either.
     */
    readonly putPart: <E>(
      key: string,
      uploadId: string,
      number: number,
      body: Stream.Stream<Uint8Array, E>,
      maxBytes: number
    ) => Effect.Effect<StoredPart, StorageUnavailable | PartTooLarge | E>
    /**
     * Join the parts, in the order given, into the object; its size, hash and first bytes. The
     * object is replaced whole or not at all. Idempotent per upload: completing an upload again
     * (concurrently, or later until it is aborted) answers the same object, and takes no parts.
     */
    readonly completeUpload: (
      key: string,
      uploadId: string,
      parts: ReadonlyArray<StoredPart>
    ) => Effect.Effect<StoredObject, StorageUnavailable>
    /** Drop an upload and every part of it, or the record of its completion; never its object (idempotent). */
    readonly abortUpload: (key: string, uploadId: string) => Effect.Effect<void, StorageUnavailable>
    /** The bytes of a completed object. */
    readonly readObject: (key: string) => Stream.Stream<Uint8Array, StorageUnavailable>
    /**
     * Open a completed object to read it, or only the bytes of `range` (the adapter seeks: a
     * file's offset, S3's and GCS's ranged GET; nothing before `start` is read). Answers none
     * when there is no such object, so a caller can tell a missing object from a failing
     * storage before it promises any byte. `range` must lie within the object
     * (`0 <= start <= end < size`); a range past its end is cut at its end.
     */
    readonly openObject: (key: string, range?: ByteRange) => Effect.Effect<Option.Option<OpenedObject>, StorageUnavailable>
    /** Remove a completed object (idempotent). */
    readonly deleteObject: (key: string) => Effect.Effect<void, StorageUnavailable>
  }
>() {}
