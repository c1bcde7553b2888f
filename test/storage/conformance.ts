/**
 * The conformance suite of the file-storage port: what every adapter (local, memory) must do,
 * seen only through `FileStorage`. Adapters may share state between tests, so every test works
 * on its own keys and uploads.
 */
import { createHash, randomUUID } from "node:crypto"
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Effect, Exit, type Layer, Option, Stream } from "effect"
import { FileStorage, PartTooLarge, SNIFF_BYTES, StorageUnavailable, type StoredPart } from "@syllabus/core"

/** A key shaped as the product makes them. */
export const newKey = (): string => `acc_${randomUUID()}/production/fil_${randomUUID()}`

/** `size` deterministic, varied bytes (a different run for each seed). */
export const bytes = (size: number, seed: number): Uint8Array => {
  const out = new Uint8Array(size)
  let x = seed * 2654435761 + 1
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = x >>> 24
  }
  return out
}

/** The bytes as a stream of chunks of at most `chunkSize`, the way a request body arrives. */
export const chunked = (data: Uint8Array, chunkSize = 1000): Stream.Stream<Uint8Array> =>
  Stream.fromIterable(Array.from({ length: Math.ceil(data.length / chunkSize) }, (_, i) => data.subarray(i * chunkSize, (i + 1) * chunkSize)))

export const concat = (...parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

export const sha256 = (data: Uint8Array): string => createHash("sha256").update(data).digest("hex")

export const readAll = <E>(stream: Stream.Stream<Uint8Array, E>): Effect.Effect<Uint8Array, E> =>
  Effect.map(Stream.runCollect(stream), (chunks) => concat(...Chunk.toReadonlyArray(chunks)))

/** Starts an upload of `key` and puts each of `parts` as parts 1, 2, …. */
export const uploadParts = (key: string, parts: ReadonlyArray<Uint8Array>, maxBytes = 1 << 20) =>
  Effect.gen(function* () {
    const storage = yield* FileStorage
    const uploadId = yield* storage.startUpload(key)
    const stored: Array<StoredPart> = []
    for (const [i, part] of parts.entries()) stored.push(yield* storage.putPart(key, uploadId, i + 1, chunked(part), maxBytes))
    return { uploadId, stored }
  })

/** A part the caller believes exists (as after a put that in fact failed). */
const claimedPart = (number: number, size: number): StoredPart => ({ number, size, sha256: "0".repeat(64), etag: "x" })

const expectUnavailable = <A, E>(exit: Exit.Exit<A, E>): void => {
  expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : exit).toBeInstanceOf(StorageUnavailable)
}

export const storageConformance = (name: string, storageLayer: Layer.Layer<FileStorage, unknown>): void =>
  layer(storageLayer, { excludeTestServices: true, timeout: "120 seconds" })(`${name} file storage conformance`, (it) => {
    describe("multipart upload", () => {
      it.effect("parts put and completed round-trip: size, sha256 and bytes of the concatenation", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const parts = [bytes(5000, 1), bytes(1, 2), bytes(12_345, 3)]
          const { uploadId, stored } = yield* uploadParts(key, parts)
          const object = yield* storage.completeUpload(key, uploadId, stored)
          const whole = concat(...parts)
          expect(object.key).toBe(key)
          expect(object.size).toBe(whole.length)
          expect(object.sha256).toBe(sha256(whole))
          expect(yield* readAll(storage.readObject(key))).toEqual(whole)
        }))

      it.effect("putPart answers the part's number, size and sha256", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          const data = bytes(3333, 4)
          const part = yield* storage.putPart(key, uploadId, 7, chunked(data, 100), 10_000)
          expect(part).toMatchObject({ number: 7, size: 3333, sha256: sha256(data) })
          expect(typeof part.etag).toBe("string")
        }))

      it.effect("completeUpload joins the parts in the order given", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const [one, two] = [bytes(100, 5), bytes(200, 6)]
          const { uploadId, stored } = yield* uploadParts(key, [one, two])
          const object = yield* storage.completeUpload(key, uploadId, [stored[1]!, stored[0]!])
          expect(object.sha256).toBe(sha256(concat(two, one)))
          expect(yield* readAll(storage.readObject(key))).toEqual(concat(two, one))
        }))

      it.effect("the head is the object's first SNIFF_BYTES, across part boundaries", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const parts = [bytes(10, 7), bytes(500, 8)]
          const { uploadId, stored } = yield* uploadParts(key, parts)
          const object = yield* storage.completeUpload(key, uploadId, stored)
          expect(object.head).toEqual(concat(...parts).subarray(0, SNIFF_BYTES))
        }))

      it.effect("the head of an object shorter than SNIFF_BYTES is the whole object", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const data = new TextEncoder().encode("%PDF-1.7")
          const { uploadId, stored } = yield* uploadParts(key, [data])
          const object = yield* storage.completeUpload(key, uploadId, stored)
          expect(object.head).toEqual(data)
          expect(object.size).toBe(data.length)
        }))

      it.effect("a part of the same number replaces the earlier one", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          yield* storage.putPart(key, uploadId, 1, chunked(bytes(4000, 9)), 10_000)
          const replacement = bytes(1500, 10)
          const part = yield* storage.putPart(key, uploadId, 1, chunked(replacement), 10_000)
          const object = yield* storage.completeUpload(key, uploadId, [part])
          expect(object.sha256).toBe(sha256(replacement))
          expect(yield* readAll(storage.readObject(key))).toEqual(replacement)
        }))

      it.effect("completing a new upload of a key replaces the object", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const first = yield* uploadParts(key, [bytes(300, 11)])
          yield* storage.completeUpload(key, first.uploadId, first.stored)
          const second = yield* uploadParts(key, [bytes(200, 12)])
          yield* storage.completeUpload(key, second.uploadId, second.stored)
          expect(yield* readAll(storage.readObject(key))).toEqual(bytes(200, 12))
        }))

      it.effect("uploads are independent: each upload completes with its own parts", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const [keyA, keyB] = [newKey(), newKey()]
          const a = yield* uploadParts(keyA, [bytes(100, 13)])
          const b = yield* uploadParts(keyB, [bytes(100, 14)])
          yield* storage.completeUpload(keyB, b.uploadId, b.stored)
          yield* storage.completeUpload(keyA, a.uploadId, a.stored)
          expect(yield* readAll(storage.readObject(keyA))).toEqual(bytes(100, 13))
          expect(yield* readAll(storage.readObject(keyB))).toEqual(bytes(100, 14))
        }))

      it.effect("a completed upload takes no more parts; completing it again answers the same object until it is aborted", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 15)])
          const object = yield* storage.completeUpload(key, uploadId, stored)
          expectUnavailable(yield* Effect.exit(storage.putPart(key, uploadId, 2, chunked(bytes(10, 1)), 100)))
          expect(yield* storage.completeUpload(key, uploadId, stored)).toEqual(object)
          // Under another key it is still no upload.
          expectUnavailable(yield* Effect.exit(storage.completeUpload(newKey(), uploadId, stored)))
          yield* storage.abortUpload(key, uploadId)
          expectUnavailable(yield* Effect.exit(storage.completeUpload(key, uploadId, stored)))
          expect(yield* readAll(storage.readObject(key))).toEqual(bytes(100, 15))
        }))

      it.effect("concurrent completions of one upload all answer the one object, whole", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          for (let round = 0; round < 5; round++) {
            const key = newKey()
            const parts = [bytes(3000, 40 + round), bytes(2000, 50 + round)]
            const { uploadId, stored } = yield* uploadParts(key, parts)
            const objects = yield* Effect.all(
              Array.from({ length: 6 }, () => storage.completeUpload(key, uploadId, stored)),
              { concurrency: "unbounded" }
            )
            const whole = concat(...parts)
            for (const object of objects) expect({ size: object.size, sha256: object.sha256 }).toEqual({ size: whole.length, sha256: sha256(whole) })
            expect(yield* readAll(storage.readObject(key))).toEqual(whole)
          }
        }))

      it.effect("a part keeps its bytes even if the producer reuses its buffer", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          // One buffer, refilled between chunks, as a socket reader may do.
          const buffer = new Uint8Array(4)
          const stream = Stream.concat(
            Stream.fromEffect(Effect.sync(() => buffer.fill(1))),
            Stream.fromEffect(Effect.sync(() => buffer.fill(2)))
          )
          const part = yield* storage.putPart(key, uploadId, 1, stream, 100)
          yield* storage.completeUpload(key, uploadId, [part])
          expect(yield* readAll(storage.readObject(key))).toEqual(new Uint8Array([1, 1, 1, 1, 2, 2, 2, 2]))
        }))
    })

    describe("limits and failures of putPart", () => {
      it.effect("a part of exactly maxBytes is accepted", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          const part = yield* storage.putPart(key, uploadId, 1, chunked(bytes(2048, 16), 512), 2048)
          expect(part.size).toBe(2048)
        }))

      it.effect("a part over maxBytes fails with PartTooLarge(limit) and is not kept", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          const error = yield* Effect.flip(storage.putPart(key, uploadId, 1, chunked(bytes(2049, 17), 512), 2048))
          expect(error).toEqual(new PartTooLarge({ limit: 2048 }))
          expectUnavailable(yield* Effect.exit(storage.completeUpload(key, uploadId, [claimedPart(1, 2049)])))
        }))

      it.effect("a body past maxBytes is not read to its end (an endless body fails too)", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          let pulled = 0
          const endless = Stream.repeatEffect(Effect.sync(() => (pulled++, bytes(1000, 18))))
          const error = yield* Effect.flip(storage.putPart(key, uploadId, 1, endless, 10_000))
          expect(error).toBeInstanceOf(PartTooLarge)
          expect(pulled).toBeLessThan(100)
        }))

      it.effect("a replacement over maxBytes keeps the earlier part", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          const kept = bytes(1000, 19)
          const part = yield* storage.putPart(key, uploadId, 1, chunked(kept), 1000)
          expect(yield* Effect.flip(storage.putPart(key, uploadId, 1, chunked(bytes(1001, 20)), 1000))).toBeInstanceOf(PartTooLarge)
          yield* storage.completeUpload(key, uploadId, [part])
          expect(yield* readAll(storage.readObject(key))).toEqual(kept)
        }))

      it.effect("a failure of the body stream fails putPart with that error and keeps nothing", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          const broken = Stream.concat(chunked(bytes(3000, 21)), Stream.fail("client went away" as const))
          const error = yield* Effect.flip(storage.putPart(key, uploadId, 1, broken, 10_000))
          expect(error).toBe("client went away")
          expectUnavailable(yield* Effect.exit(storage.completeUpload(key, uploadId, [claimedPart(1, 3000)])))
        }))

      it.effect("putPart into an unknown upload fails with StorageUnavailable", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          expectUnavailable(yield* Effect.exit(storage.putPart(newKey(), randomUUID(), 1, chunked(bytes(10, 1)), 100)))
        }))

      it.effect("putPart under another key than the upload's fails with StorageUnavailable", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const uploadId = yield* storage.startUpload(newKey())
          expectUnavailable(yield* Effect.exit(storage.putPart(newKey(), uploadId, 1, chunked(bytes(10, 1)), 100)))
        }))

      it.effect("part numbers start at 1: 0 fails with StorageUnavailable", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          expectUnavailable(yield* Effect.exit(storage.putPart(key, uploadId, 0, chunked(bytes(10, 1)), 100)))
        }))
    })

    describe("completeUpload with parts that are not there", () => {
      it.effect("a part never put fails with StorageUnavailable", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 22)])
          expectUnavailable(yield* Effect.exit(storage.completeUpload(key, uploadId, [...stored, claimedPart(2, 100)])))
          // Nothing was made of it, and the upload still completes with the parts it has.
          expectUnavailable(yield* Effect.exit(readAll(storage.readObject(key))))
          yield* storage.completeUpload(key, uploadId, stored)
          expect(yield* readAll(storage.readObject(key))).toEqual(bytes(100, 22))
        }))

      it.effect("a part of another size than stored fails with StorageUnavailable", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId } = yield* uploadParts(key, [bytes(100, 23)])
          expectUnavailable(yield* Effect.exit(storage.completeUpload(key, uploadId, [claimedPart(1, 99)])))
        }))
    })

    describe("abortUpload", () => {
      it.effect("abort drops the upload: it takes no more parts and does not complete", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 24), bytes(100, 25)])
          yield* storage.abortUpload(key, uploadId)
          expectUnavailable(yield* Effect.exit(storage.completeUpload(key, uploadId, stored)))
          expectUnavailable(yield* Effect.exit(storage.putPart(key, uploadId, 3, chunked(bytes(10, 1)), 100)))
        }))

      it.effect("abort is idempotent, also for an upload never started", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 26)])
          yield* storage.abortUpload(key, uploadId)
          expect(Exit.isSuccess(yield* Effect.exit(storage.abortUpload(key, uploadId)))).toBe(true)
          expect(Exit.isSuccess(yield* Effect.exit(storage.abortUpload(newKey(), randomUUID())))).toBe(true)
          // Repeating the abort brought nothing back.
          expectUnavailable(yield* Effect.exit(storage.completeUpload(key, uploadId, stored)))
        }))

      it.effect("abort leaves the completed objects of the key alone", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const done = yield* uploadParts(key, [bytes(100, 27)])
          yield* storage.completeUpload(key, done.uploadId, done.stored)
          const pending = yield* uploadParts(key, [bytes(100, 28)])
          yield* storage.abortUpload(key, pending.uploadId)
          expect(yield* readAll(storage.readObject(key))).toEqual(bytes(100, 27))
        }))
    })

    describe("readObject and deleteObject", () => {
      it.effect("reading an object never completed fails with StorageUnavailable", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          expectUnavailable(yield* Effect.exit(readAll(storage.readObject(newKey()))))
        }))

      it.effect("a deleted object is gone: reading it fails with StorageUnavailable", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 29)])
          yield* storage.completeUpload(key, uploadId, stored)
          yield* storage.deleteObject(key)
          expectUnavailable(yield* Effect.exit(readAll(storage.readObject(key))))
        }))

      it.effect("delete is idempotent, also for an object that never existed", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 30)])
          yield* storage.completeUpload(key, uploadId, stored)
          yield* storage.deleteObject(key)
          expect(Exit.isSuccess(yield* Effect.exit(storage.deleteObject(key)))).toBe(true)
          expect(Exit.isSuccess(yield* Effect.exit(storage.deleteObject(newKey())))).toBe(true)
          expectUnavailable(yield* Effect.exit(readAll(storage.readObject(key))))
        }))

      it.effect("an object can be read more than once", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(70_000, 31)])
          yield* storage.completeUpload(key, uploadId, stored)
          const stream = storage.readObject(key)
          // Compared by hash: deep equality of large arrays is slow in the matcher.
          expect(sha256(yield* readAll(stream))).toBe(sha256(bytes(70_000, 31)))
          expect(sha256(yield* readAll(stream))).toBe(sha256(bytes(70_000, 31)))
        }))
    })

    describe("openObject", () => {
      it.effect("answers the size and the whole object, across parts; the stream can be read more than once", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const one = bytes(3000, 40)
          const two = bytes(2500, 41)
          const { uploadId, stored } = yield* uploadParts(key, [one, two])
          yield* storage.completeUpload(key, uploadId, stored)
          const opened = Option.getOrThrow(yield* storage.openObject(key))
          expect(opened.size).toBe(5500)
          expect(yield* readAll(opened.stream)).toEqual(concat(one, two))
          expect(yield* readAll(opened.stream)).toEqual(concat(one, two))
        }))

      it.effect("reads only the range asked for (both ends included), across part boundaries; a range past the end is cut there", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const one = bytes(3000, 42)
          const two = bytes(2500, 43)
          const whole = concat(one, two)
          const { uploadId, stored } = yield* uploadParts(key, [one, two])
          yield* storage.completeUpload(key, uploadId, stored)
          for (const [start, end] of [[0, 0], [0, 9], [2990, 3009], [3000, 3000], [5499, 5499], [100, 5499], [5000, 9999]] as const) {
            const opened = Option.getOrThrow(yield* storage.openObject(key, { start, end }))
            expect(opened.size).toBe(5500)
            expect(yield* readAll(opened.stream)).toEqual(whole.subarray(start, Math.min(end, 5499) + 1))
          }
        }))

      it.effect("answers none for an object never completed or deleted; a refused key fails", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          expect(Option.isNone(yield* storage.openObject(newKey()))).toBe(true)
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 44)])
          yield* storage.completeUpload(key, uploadId, stored)
          expect(Option.isSome(yield* storage.openObject(key))).toBe(true)
          yield* storage.deleteObject(key)
          expect(Option.isNone(yield* storage.openObject(key))).toBe(true)
          expectUnavailable(yield* Effect.exit(storage.openObject("../escape")))
        }))
    })

    describe("keys", () => {
      const refused = ["", "..", "../x", "acc_1/../../etc", "/etc/passwd", "acc_1//fil_1", "acc_1/fil_1/", "acc_1/./fil_1", "acc_1\\fil_1", "acc_1/fil 1", "fil.txt"]

      it.effect("keys outside [A-Za-z0-9_-] segments joined by / are refused with StorageUnavailable", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          for (const key of refused) {
            expectUnavailable(yield* Effect.exit(storage.startUpload(key)))
            expectUnavailable(yield* Effect.exit(readAll(storage.readObject(key))))
            expectUnavailable(yield* Effect.exit(storage.deleteObject(key)))
          }
        }))

      it.effect("a refused key is refused by every method, also with a valid upload id", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const uploadId = yield* storage.startUpload(newKey())
          for (const key of refused) {
            expectUnavailable(yield* Effect.exit(storage.putPart(key, uploadId, 1, chunked(bytes(10, 1)), 100)))
            expectUnavailable(yield* Effect.exit(storage.completeUpload(key, uploadId, [])))
            expectUnavailable(yield* Effect.exit(storage.abortUpload(key, uploadId)))
          }
        }))

      it.effect("upload ids that could leave the uploads are refused with StorageUnavailable", () =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          for (const uploadId of ["..", "../objects", "a/b", ""]) {
            expectUnavailable(yield* Effect.exit(storage.putPart(key, uploadId, 1, chunked(bytes(10, 1)), 100)))
            expectUnavailable(yield* Effect.exit(storage.abortUpload(key, uploadId)))
          }
        }))
    })
  })
