/**
 * File storage in memory: for tests and the in-memory server. Parts and objects are kept as the
 * chunks that arrived (holding them is the point here); the semantics and errors are those of
 * the local adapter. State lives as long as the layer; every build starts empty. As there, an
 * upload completed answers the same object when completed again, until it is aborted.
 */
import { randomUUID } from "node:crypto"
import { Effect, Layer, Option, Stream } from "effect"
import { FileStorage, SNIFF_BYTES, type StoredObject, type StoredPart } from "@syllabus/core"
import { checkKey, checkPartNumber, checkUploadId, noSuchObject, noSuchUpload, objectMeter, partMeter, partMismatch } from "./common.js"

interface Bytes {
  readonly chunks: ReadonlyArray<Uint8Array>
  readonly size: number
}

interface Upload {
  readonly key: string
  readonly parts: Map<number, Bytes>
}

/** The parts of `chunks` between the offsets `start` and `end` (both included), lazily. */
function* slices(chunks: ReadonlyArray<Uint8Array>, start: number, end: number): Generator<Uint8Array> {
  let offset = 0
  for (const chunk of chunks) {
    const from = Math.max(start - offset, 0)
    const to = Math.min(end + 1 - offset, chunk.length)
    if (from < to) yield chunk.subarray(from, to)
    offset += chunk.length
    if (offset > end) return
  }
}

export const makeMemoryFileStorage: Effect.Effect<FileStorage["Type"]> = Effect.sync(() => {
  const uploads = new Map<string, Upload>()
  const objects = new Map<string, Bytes>()
  /** Uploads completed (and not aborted since): the object each was completed into. */
  const completed = new Map<string, StoredObject>()

  const findUpload = (key: string, uploadId: string) =>
    Effect.suspend(() => {
      const upload = uploads.get(uploadId)
      return upload !== undefined && upload.key === key ? Effect.succeed(upload) : Effect.fail(noSuchUpload(key, uploadId))
    })

  const checkNames = (key: string, uploadId: string) => Effect.zipRight(checkKey(key), checkUploadId(uploadId))

  return FileStorage.of({
    startUpload: (key) =>
      Effect.zipRight(
        checkKey(key),
        Effect.sync(() => {
          const uploadId = randomUUID()
          uploads.set(uploadId, { key, parts: new Map() })
          return uploadId
        })
      ),

    putPart: (key, uploadId, number, body, maxBytes) =>
      Effect.gen(function* () {
        yield* checkNames(key, uploadId)
        yield* checkPartNumber(number)
        yield* findUpload(key, uploadId)
        const meter = partMeter(maxBytes)
        const chunks: Array<Uint8Array> = []
        yield* Stream.runForEach(body, (chunk) =>
          // A copy: the producer may reuse its buffer once the chunk is consumed.
          Effect.map(meter.add(chunk), () => void chunks.push(new Uint8Array(chunk)))
        )
        // Looked up again: the upload may have been aborted while the body streamed in.
        const upload = yield* findUpload(key, uploadId)
        upload.parts.set(number, { chunks, size: meter.size() })
        const sha256 = meter.sha256()
        return { number, size: meter.size(), sha256, etag: sha256 } satisfies StoredPart
      }),

    completeUpload: (key, uploadId, parts) =>
      Effect.gen(function* () {
        yield* checkNames(key, uploadId)
        const done = completed.get(uploadId)
        if (done !== undefined && done.key === key) return done
        const upload = yield* findUpload(key, uploadId)
        const meter = objectMeter(SNIFF_BYTES)
        const chunks: Array<Uint8Array> = []
        for (const part of parts) {
          const stored = upload.parts.get(part.number)
          if (stored === undefined) return yield* Effect.fail(partMismatch(part.number, "missing"))
          if (stored.size !== part.size) return yield* Effect.fail(partMismatch(part.number, `${stored.size} bytes stored, ${part.size} expected`))
          for (const chunk of stored.chunks) {
            meter.add(chunk)
            chunks.push(chunk)
          }
        }
        objects.set(key, { chunks, size: meter.size() })
        uploads.delete(uploadId)
        const object: StoredObject = { key, size: meter.size(), sha256: meter.sha256(), head: meter.head() }
        completed.set(uploadId, object)
        return object
      }),

    abortUpload: (key, uploadId) =>
      Effect.gen(function* () {
        yield* checkNames(key, uploadId)
        const owner = uploads.get(uploadId)?.key ?? completed.get(uploadId)?.key
        if (owner === undefined) return
        if (owner !== key) return yield* Effect.fail(noSuchUpload(key, uploadId))
        uploads.delete(uploadId)
        completed.delete(uploadId)
      }),

    // Looked up when the stream runs, not when it is built; a missing object is a failure.
    readObject: (key) =>
      Stream.unwrap(
        Effect.flatMap(checkKey(key), () =>
          Effect.suspend(() => {
            const object = objects.get(key)
            return object === undefined
              ? Effect.fail(noSuchObject(key))
              : Effect.succeed(Stream.fromIterable(object.chunks))
          })
        )
      ),

    // The chunks found now are read, even if the object is deleted meanwhile (a file opened
    // on disk reads on after it is unlinked); only the chunks that overlap the range are sent.
    openObject: (key, range) =>
      Effect.zipRight(
        checkKey(key),
        Effect.sync(() => {
          const object = objects.get(key)
          if (object === undefined) return Option.none()
          const start = range?.start ?? 0
          const end = Math.min(range?.end ?? object.size - 1, object.size - 1)
          return Option.some({ size: object.size, stream: Stream.suspend(() => Stream.fromIterable(slices(object.chunks, start, end))) })
        })
      ),

    deleteObject: (key) => Effect.zipRight(checkKey(key), Effect.sync(() => void objects.delete(key)))
  })
})

export const MemoryFileStorage: Layer.Layer<FileStorage> = Layer.effect(FileStorage, makeMemoryFileStorage)
