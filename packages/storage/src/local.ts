/**
 * File storage on the local file system: the embedded default. Under the directory:
 *
 *   uploads/<uploadId>/key        the key the upload belongs to
 *   uploads/<uploadId>/<n>.part   a stored part
 *   uploads/<uploadId>/<uuid>.tmp a part or object being written
 *   uploads/<uploadId>/completed  the object the upload was completed into (JSON), until abort
 *   objects/<key>                 a completed object (the key's segments are directories)
 *
 * Bytes only ever stream (a chunk at a time, awaiting each write), so memory stays flat whatever
 * the size. Everything is written to a temporary file first and renamed into place, so a part or
 * an object is either whole or absent, and replacing one is atomic. Temporary files live in the
 * upload's directory: the same file system as `objects/` (rename needs it) and swept by abort.
 *
 * Completion is idempotent per upload: the object is renamed into place (atomically replacing
 * whatever was there), then the completion is recorded (`completed`, renamed into place too), and
 * only then are the parts removed. Completing again, at once or later, answers the recorded object;
 * a completion that lost a race with another one of the same upload (its parts or its temporary
 * file removed under it) answers the winner's record instead of failing. Abort removes the record.
 *
 * Every failure of the file system (ENOSPC, EACCES, a file where a directory should be, …) is
 * `StorageUnavailable` with the Node error as cause; so are an unknown upload, a part that
 * `completeUpload` names but which is missing or of another size, and reading a missing object.
 * Keys must not nest inside each other (`a/b` and `a/b/c`): one would be a file, the other a
 * directory below it.
 */
import { randomUUID } from "node:crypto"
import { createReadStream } from "node:fs"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer, Option, Stream } from "effect"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { FileStorage, SNIFF_BYTES, StorageUnavailable, type StoredObject, type StoredPart } from "@syllabus/core"
import { checkKey, checkPartNumber, checkUploadId, noSuchObject, noSuchUpload, objectMeter, partMeter, partMismatch } from "./common.js"

export interface LocalFileStorageOptions {
  /** Where the uploads and objects live; created on first use. */
  readonly directory: string
}

const unavailable = (cause: unknown) => new StorageUnavailable({ cause })

const attempt = <A>(run: () => Promise<A>): Effect.Effect<A, StorageUnavailable> =>
  Effect.tryPromise({ try: run, catch: unavailable })

const isMissing = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && (error.code === "ENOENT" || error.code === "ENOTDIR")

/** Best effort: used only to clean up after a failure that is already being reported. */
const removeQuietly = (file: string) => Effect.ignore(attempt(() => fs.rm(file, { force: true })))

/** Writes the whole chunk: a write to a file may take fewer bytes than offered. */
const writeChunk = (handle: fs.FileHandle, chunk: Uint8Array) =>
  attempt(async () => {
    let offset = 0
    while (offset < chunk.length) {
      const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset)
      offset += bytesWritten
    }
  })

/**
 * Streams `body` into a new file, letting `inspect` see (and refuse) each chunk before it is
 * written; flushed to disk before it counts as written. Any failure or interruption removes the
 * file, so nothing partial is left behind.
 */
const streamToFile = <E, E2>(
  file: string,
  body: Stream.Stream<Uint8Array, E>,
  inspect: (chunk: Uint8Array) => Effect.Effect<void, E2>
): Effect.Effect<void, E | E2 | StorageUnavailable> =>
  Effect.acquireUseRelease(
    attempt(() => fs.open(file, "wx")),
    (handle) =>
      Stream.runForEach(body, (chunk) => Effect.zipRight(inspect(chunk), writeChunk(handle, chunk))).pipe(
        Effect.zipRight(attempt(() => handle.datasync()))
      ),
    (handle) => Effect.ignore(attempt(() => handle.close()))
  ).pipe(Effect.onError(() => removeQuietly(file)))

/** Renames into place; the source is removed if that fails. */
const moveInto = (from: string, to: string) =>
  attempt(() => fs.rename(from, to)).pipe(Effect.onError(() => removeQuietly(from)))

/** A file's bytes, or those from `start` to `end` (both included: the read stream seeks, reading nothing before). */
const readFileStream = (file: string, onError: (error: unknown) => StorageUnavailable, range?: { readonly start: number; readonly end: number }) =>
  NodeStream.fromReadable<StorageUnavailable, Uint8Array>(
    () => createReadStream(file, range === undefined ? {} : { start: range.start, end: range.end }),
    onError
  )

export const makeLocalFileStorage = (options: LocalFileStorageOptions): FileStorage["Type"] => {
  const root = path.resolve(options.directory)
  const uploadDir = (uploadId: string) => path.join(root, "uploads", uploadId)
  const partFile = (uploadId: string, number: number) => path.join(uploadDir(uploadId), `${number}.part`)
  const tempFile = (uploadId: string) => path.join(uploadDir(uploadId), `${randomUUID()}.tmp`)
  const objectFile = (key: string) => path.join(root, "objects", ...key.split("/"))
  const keyFile = (uploadId: string) => path.join(uploadDir(uploadId), "key")
  const completionFile = (uploadId: string) => path.join(uploadDir(uploadId), "completed")

  /** The object an upload of `key` was completed into, if it was (and not aborted since). */
  const completion = (key: string, uploadId: string): Effect.Effect<Option.Option<StoredObject>, StorageUnavailable> =>
    Effect.tryPromise({
      try: async (): Promise<Option.Option<StoredObject>> => {
        const recorded = JSON.parse(await fs.readFile(completionFile(uploadId), "utf8")) as { key: string; size: number; sha256: string; head: string }
        if (recorded.key !== key) return Option.none()
        return Option.some({ key, size: recorded.size, sha256: recorded.sha256, head: new Uint8Array(Buffer.from(recorded.head, "base64")) })
      },
      catch: (error) => error
    }).pipe(Effect.catchAll((error) => (isMissing(error) ? Effect.succeedNone : Effect.fail(unavailable(error)))))

  /** Record the completion: written aside, then renamed into place, so it is whole or absent. */
  const recordCompletion = (uploadId: string, object: StoredObject) =>
    Effect.suspend(() => {
      const temp = tempFile(uploadId)
      const text = JSON.stringify({ key: object.key, size: object.size, sha256: object.sha256, head: Buffer.from(object.head).toString("base64") })
      return attempt(() => fs.writeFile(temp, text, { flag: "wx" })).pipe(Effect.zipRight(moveInto(temp, completionFile(uploadId))))
    })

  /** After completion: the parts (and temporary files) are garbage; the key and the record stay. */
  const removeParts = (uploadId: string) =>
    Effect.ignore(
      attempt(async () => {
        const entries = await fs.readdir(uploadDir(uploadId))
        await Promise.all(
          entries.filter((name) => name !== "key" && name !== "completed").map((name) => fs.rm(path.join(uploadDir(uploadId), name), { force: true }))
        )
      })
    )

  /** The key an upload was started for; none when the upload is gone (aborted, completed, never). */
  const uploadKey = (uploadId: string): Effect.Effect<Option.Option<string>, StorageUnavailable> =>
    Effect.tryPromise({ try: () => fs.readFile(keyFile(uploadId), "utf8"), catch: (error) => error }).pipe(
      Effect.map(Option.some),
      Effect.catchAll((error) => (isMissing(error) ? Effect.succeedNone : Effect.fail(unavailable(error))))
    )

  /** Checks the names and that the upload exists and belongs to the key. */
  const openUpload = (key: string, uploadId: string) =>
    Effect.gen(function* () {
      yield* checkKey(key)
      yield* checkUploadId(uploadId)
      const owner = yield* uploadKey(uploadId)
      if (Option.getOrUndefined(owner) !== key) return yield* Effect.fail(noSuchUpload(key, uploadId))
      // A completed upload takes no more parts.
      if (Option.isSome(yield* completion(key, uploadId))) return yield* Effect.fail(noSuchUpload(key, uploadId))
    })

  /** A stored part's bytes, failing unless it exists with the size the caller was told. */
  const partBytes = (uploadId: string, part: StoredPart): Stream.Stream<Uint8Array, StorageUnavailable> =>
    Stream.suspend(() => {
      let size = 0
      const checkSize = Effect.suspend(() =>
        size === part.size ? Effect.void : Effect.fail(partMismatch(part.number, `${size} bytes stored, ${part.size} expected`))
      )
      return readFileStream(partFile(uploadId, part.number), (error) =>
        isMissing(error) ? partMismatch(part.number, "missing") : unavailable(error)
      ).pipe(
        Stream.tap((chunk) => Effect.sync(() => void (size += chunk.length))),
        Stream.concat(Stream.execute(checkSize))
      )
    })

  return FileStorage.of({
    startUpload: (key) =>
      Effect.gen(function* () {
        yield* checkKey(key)
        const uploadId = randomUUID()
        yield* attempt(() => fs.mkdir(uploadDir(uploadId), { recursive: true }))
        yield* attempt(() => fs.writeFile(keyFile(uploadId), key, { flag: "wx" }))
        return uploadId
      }),

    putPart: (key, uploadId, number, body, maxBytes) =>
      Effect.gen(function* () {
        yield* checkPartNumber(number)
        yield* openUpload(key, uploadId)
        const temp = tempFile(uploadId)
        const meter = partMeter(maxBytes)
        // Failing in `inspect` ends the stream: no byte past the limit is read or written.
        yield* streamToFile(temp, body, meter.add)
        // If the upload was aborted meanwhile, its directory is gone and the rename fails.
        yield* moveInto(temp, partFile(uploadId, number))
        const sha256 = meter.sha256()
        return { number, size: meter.size(), sha256, etag: sha256 } satisfies StoredPart
      }),

    completeUpload: (key, uploadId, parts) =>
      Effect.gen(function* () {
        yield* checkKey(key)
        yield* checkUploadId(uploadId)
        const done = yield* completion(key, uploadId)
        if (Option.isSome(done)) return done.value
        const join = Effect.gen(function* () {
          yield* openUpload(key, uploadId)
          const temp = tempFile(uploadId)
          const meter = objectMeter(SNIFF_BYTES)
          const joined = Stream.flatMap(Stream.fromIterable(parts), (part) => partBytes(uploadId, part))
          yield* streamToFile(temp, joined, (chunk) => Effect.sync(() => meter.add(chunk)))
          const target = objectFile(key)
          yield* attempt(() => fs.mkdir(path.dirname(target), { recursive: true })).pipe(
            Effect.onError(() => removeQuietly(temp))
          )
          yield* moveInto(temp, target)
          const object: StoredObject = { key, size: meter.size(), sha256: meter.sha256(), head: meter.head() }
          yield* recordCompletion(uploadId, object)
          // The object is in place and recorded; parts left behind by a failed removal are garbage, not data.
          yield* removeParts(uploadId)
          return object
        })
        // A completion of the same upload that finished first removed the parts (or our
        // temporary file) under us: its record is the answer.
        return yield* join.pipe(
          Effect.catchAll((error) =>
            Effect.flatMap(completion(key, uploadId), Option.match({ onNone: () => Effect.fail(error), onSome: Effect.succeed }))
          )
        )
      }),

    abortUpload: (key, uploadId) =>
      Effect.gen(function* () {
        yield* checkKey(key)
        yield* checkUploadId(uploadId)
        const owner = yield* uploadKey(uploadId)
        // A directory without its key file is a start that failed half-way: removed all the same.
        if (Option.isSome(owner) && owner.value !== key) return yield* Effect.fail(noSuchUpload(key, uploadId))
        // A part being written meanwhile may add a file while the directory is emptied (ENOTEMPTY):
        // that write then fails, its directory gone; removing again finishes the work.
        yield* attempt(() => fs.rm(uploadDir(uploadId), { recursive: true, force: true, maxRetries: 5 }))
      }),

    readObject: (key) =>
      Stream.unwrap(
        Effect.map(checkKey(key), () =>
          readFileStream(objectFile(key), (error) => (isMissing(error) ? noSuchObject(key) : unavailable(error)))
        )
      ),

    // A stat says whether the object is there and its size; the stream opens the file when it
    // runs (an object removed in between fails it, as a storage that failed mid-read would).
    openObject: (key, range) =>
      Effect.gen(function* () {
        yield* checkKey(key)
        const file = objectFile(key)
        const stats = yield* Effect.tryPromise({ try: () => fs.stat(file), catch: (error) => error }).pipe(
          Effect.map(Option.some),
          Effect.catchAll((error) => (isMissing(error) ? Effect.succeedNone : Effect.fail(unavailable(error))))
        )
        if (Option.isNone(stats) || !stats.value.isFile()) return Option.none()
        const size = stats.value.size
        const bounds = range === undefined ? undefined : { start: range.start, end: Math.min(range.end, size - 1) }
        const stream = readFileStream(file, (error) => (isMissing(error) ? noSuchObject(key) : unavailable(error)), bounds)
        return Option.some({ size, stream })
      }),

    deleteObject: (key) =>
      Effect.zipRight(
        checkKey(key),
        attempt(() => fs.rm(objectFile(key), { force: true }))
      )
  })
}

/** The local adapter as a layer; the directory is checked (and created) on use, not here. */
export const LocalFileStorage = (options: LocalFileStorageOptions): Layer.Layer<FileStorage> =>
  Layer.sync(FileStorage, () => makeLocalFileStorage(options))

/**
 * Local file storage in a directory of its own under the system's temporary directory, made
 * when the layer is built and removed with every file when its scope closes (the server
 * stops): for records that die with the process (the in-memory store), so that none of their
 * files (an export's personal data) outlives them. A process killed outright leaves the
 * directory to the system's cleaning of its temporary files. `onReady` is told where it is.
 */
export const TemporaryFileStorage = (onReady: (directory: string) => void = () => {}): Layer.Layer<FileStorage> =>
  Layer.scoped(
    FileStorage,
    Effect.acquireRelease(
      Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "syllabus-files-"))),
      (directory) => Effect.promise(() => fs.rm(directory, { recursive: true, force: true }))
    ).pipe(
      Effect.tap((directory) => Effect.sync(() => onReady(directory))),
      Effect.map((directory) => makeLocalFileStorage({ directory }))
    )
  )
