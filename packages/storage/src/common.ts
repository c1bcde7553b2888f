/**
 * What both adapters share: the names they accept, the causes of their refusals, and the byte
 * counting and hashing of what flows through them.
 *
 * Keys become file paths in the local adapter, so both adapters check them before anything
 * else: segments of `[A-Za-z0-9_-]` joined by `/`, which leaves no room for `..`, `.`, absolute
 * paths, empty segments or backslashes. A refused name fails with `StorageUnavailable` (the
 * port's only error; an S3 adapter would get the same from the service), its cause naming why.
 */
import { createHash } from "node:crypto"
import { Effect } from "effect"
import { PartTooLarge, StorageUnavailable } from "@syllabus/core"

/** Why a name was refused; carried as the `cause` of `StorageUnavailable`. */
export class InvalidStorageName extends Error {
  override readonly name = "InvalidStorageName"
}

const KEY = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/
const UPLOAD_ID = /^[A-Za-z0-9_-]+$/
const MAX_KEY_LENGTH = 1024

const refuse = (message: string) => Effect.fail(new StorageUnavailable({ cause: new InvalidStorageName(message) }))

export const checkKey = (key: string): Effect.Effect<string, StorageUnavailable> =>
  KEY.test(key) && key.length <= MAX_KEY_LENGTH ? Effect.succeed(key) : refuse(`invalid object key: ${JSON.stringify(key)}`)

export const checkUploadId = (uploadId: string): Effect.Effect<string, StorageUnavailable> =>
  UPLOAD_ID.test(uploadId) ? Effect.succeed(uploadId) : refuse(`invalid upload id: ${JSON.stringify(uploadId)}`)

export const checkPartNumber = (number: number): Effect.Effect<number, StorageUnavailable> =>
  Number.isSafeInteger(number) && number >= 1 ? Effect.succeed(number) : refuse(`invalid part number: ${number}`)

/** The upload is unknown (never started, aborted, completed) or belongs to another key. */
export class NoSuchUpload extends Error {
  override readonly name = "NoSuchUpload"
}

export const noSuchUpload = (key: string, uploadId: string) =>
  new StorageUnavailable({ cause: new NoSuchUpload(`no upload ${uploadId} of ${key}`) })

/**
 * The object was never completed or was deleted. Reading it fails rather than yielding nothing:
 * the records only name objects that exist, so a missing one is a fault of the storage.
 */
export class NoSuchObject extends Error {
  override readonly name = "NoSuchObject"
}

export const noSuchObject = (key: string) => new StorageUnavailable({ cause: new NoSuchObject(`no object ${key}`) })

/** A part named by `completeUpload` is missing or no longer what the caller was told. */
export class PartMismatch extends Error {
  override readonly name = "PartMismatch"
}

export const partMismatch = (number: number, message: string) =>
  new StorageUnavailable({ cause: new PartMismatch(`part ${number}: ${message}`) })

/** Keeps the first `SNIFF_BYTES` of what passes through. */
export const headCollector = (limit: number) => {
  const head = new Uint8Array(limit)
  let filled = 0
  return {
    add: (chunk: Uint8Array): void => {
      if (filled >= limit) return
      const take = Math.min(limit - filled, chunk.length)
      head.set(chunk.subarray(0, take), filled)
      filled += take
    },
    get: (): Uint8Array => head.slice(0, filled)
  }
}

/**
 * Counts and hashes the bytes of one part as they stream in; refuses the chunk that would take
 * the count past `maxBytes`, before it is kept anywhere.
 */
export const partMeter = (maxBytes: number) => {
  const hash = createHash("sha256")
  let size = 0
  return {
    add: (chunk: Uint8Array): Effect.Effect<void, PartTooLarge> =>
      Effect.suspend(() => {
        if (size + chunk.length > maxBytes) return Effect.fail(new PartTooLarge({ limit: maxBytes }))
        size += chunk.length
        hash.update(chunk)
        return Effect.void
      }),
    size: (): number => size,
    sha256: (): string => hash.digest("hex")
  }
}

/** Counts and hashes the whole object while keeping its first `limit` bytes. */
export const objectMeter = (limit: number) => {
  const hash = createHash("sha256")
  const head = headCollector(limit)
  let size = 0
  return {
    add: (chunk: Uint8Array): void => {
      size += chunk.length
      hash.update(chunk)
      head.add(chunk)
    },
    size: (): number => size,
    sha256: (): string => hash.digest("hex"),
    head: head.get
  }
}
