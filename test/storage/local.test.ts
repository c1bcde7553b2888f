/**
 * The local adapter: the shared conformance suite on a temporary directory, then what only files
 * can get wrong: where things land, what is left behind, very large parts, a broken directory.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { FileStorage, StorageUnavailable } from "@syllabus/core"
import { LocalFileStorage } from "../../packages/storage/src/index.js"
import { bytes, chunked, newKey, readAll, storageConformance, uploadParts } from "./conformance.js"

const directories: Array<string> = []
const tempDirectory = (): string => {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), "syllabus-storage-"))
  directories.push(directory)
  return directory
}
afterAll(() => {
  for (const directory of directories) fs.rmSync(directory, { recursive: true, force: true })
})

storageConformance("local", LocalFileStorage({ directory: tempDirectory() }))

/** Runs `body` against a local storage on a fresh directory, which it is given. */
const onFreshDirectory = <A, E>(body: (directory: string) => Effect.Effect<A, E, FileStorage>) => {
  const directory = tempDirectory()
  return Effect.provide(body(directory), LocalFileStorage({ directory }))
}

const listUpload = (directory: string, uploadId: string) => fs.readdirSync(path.join(directory, "uploads", uploadId)).sort()

describe("LocalFileStorage", () => {
  it.effect("parts live under uploads/<uploadId>/ and the object under objects/<key>", () =>
    onFreshDirectory((directory) =>
      Effect.gen(function* () {
        const storage = yield* FileStorage
        const key = newKey()
        const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 1), bytes(50, 2)])
        expect(listUpload(directory, uploadId)).toEqual(["1.part", "2.part", "key"])
        yield* storage.completeUpload(key, uploadId, stored)
        expect(fs.readFileSync(path.join(directory, "objects", ...key.split("/")))).toEqual(
          Buffer.from([...bytes(100, 1), ...bytes(50, 2)])
        )
        // Completion removes the parts; the record of the completion stays until abort.
        expect(listUpload(directory, uploadId)).toEqual(["completed", "key"])
        yield* storage.abortUpload(key, uploadId)
        expect(fs.existsSync(path.join(directory, "uploads", uploadId))).toBe(false)
      })
    ))

  it.effect("abort removes the upload's directory", () =>
    onFreshDirectory((directory) =>
      Effect.gen(function* () {
        const storage = yield* FileStorage
        const key = newKey()
        const { uploadId } = yield* uploadParts(key, [bytes(100, 3)])
        yield* storage.abortUpload(key, uploadId)
        expect(fs.existsSync(path.join(directory, "uploads", uploadId))).toBe(false)
      })
    ))

  it.effect("a part over maxBytes or with a failing body leaves no file behind", () =>
    onFreshDirectory((directory) =>
      Effect.gen(function* () {
        const storage = yield* FileStorage
        const key = newKey()
        const uploadId = yield* storage.startUpload(key)
        yield* Effect.flip(storage.putPart(key, uploadId, 1, chunked(bytes(5000, 4)), 4999))
        yield* Effect.flip(storage.putPart(key, uploadId, 2, Stream.concat(chunked(bytes(5000, 5)), Stream.fail("gone")), 10_000))
        expect(listUpload(directory, uploadId)).toEqual(["key"])
      })
    ))

  it.effect("an interrupted putPart leaves no file behind", () =>
    onFreshDirectory((directory) =>
      Effect.gen(function* () {
        const storage = yield* FileStorage
        const key = newKey()
        const uploadId = yield* storage.startUpload(key)
        const stalled = Stream.concat(chunked(bytes(5000, 6)), Stream.never)
        yield* storage.putPart(key, uploadId, 1, stalled, 10_000).pipe(Effect.timeout("200 millis"), Effect.ignore)
        expect(listUpload(directory, uploadId)).toEqual(["key"])
      })
    ))

  it.effect("a 64 MiB part streams through putPart and completes with the right size and sha256", () =>
    onFreshDirectory((directory) =>
      Effect.gen(function* () {
        const storage = yield* FileStorage
        const key = newKey()
        const uploadId = yield* storage.startUpload(key)
        const chunkSize = 64 * 1024
        const chunks = 1024
        const expected = createHash("sha256")
        // Generated one chunk at a time (a range chunk size of 1), so the test holds no more of
        // the part than the adapter may.
        const body = Stream.range(0, chunks - 1, 1).pipe(
          Stream.map((i) => {
            const chunk = new Uint8Array(chunkSize).fill(i % 251)
            expected.update(chunk)
            return chunk
          })
        )
        const part = yield* storage.putPart(key, uploadId, 1, body, chunkSize * chunks)
        const sha256 = expected.digest("hex")
        expect(part).toMatchObject({ size: chunkSize * chunks, sha256 })
        const object = yield* storage.completeUpload(key, uploadId, [part])
        expect(object).toMatchObject({ size: chunkSize * chunks, sha256 })
        expect(fs.statSync(path.join(directory, "objects", ...key.split("/"))).size).toBe(chunkSize * chunks)
        const read = yield* Stream.runFold(storage.readObject(key), createHash("sha256"), (hash, chunk) => hash.update(chunk))
        expect(read.digest("hex")).toBe(sha256)
      })
    ), 60_000)

  it.effect("objects outlive the layer: a new layer on the same directory reads them", () =>
    Effect.gen(function* () {
      const directory = tempDirectory()
      const key = newKey()
      yield* Effect.gen(function* () {
        const storage = yield* FileStorage
        const { uploadId, stored } = yield* uploadParts(key, [bytes(300, 7)])
        yield* storage.completeUpload(key, uploadId, stored)
      }).pipe(Effect.provide(LocalFileStorage({ directory })))
      const read = yield* Effect.flatMap(FileStorage, (storage) => readAll(storage.readObject(key))).pipe(
        Effect.provide(LocalFileStorage({ directory }))
      )
      expect(read).toEqual(bytes(300, 7))
    }))

  it.effect("a key with .. reaches no file outside the directory", () =>
    Effect.gen(function* () {
      const parent = tempDirectory()
      const directory = path.join(parent, "storage")
      fs.writeFileSync(path.join(parent, "secret"), "do not touch")
      yield* Effect.gen(function* () {
        const storage = yield* FileStorage
        const error = yield* Effect.flip(readAll(storage.readObject("../secret")))
        expect(error).toBeInstanceOf(StorageUnavailable)
        expect(yield* Effect.flip(storage.deleteObject("../../secret"))).toBeInstanceOf(StorageUnavailable)
        expect(yield* Effect.flip(storage.startUpload("../objects/x"))).toBeInstanceOf(StorageUnavailable)
      }).pipe(Effect.provide(LocalFileStorage({ directory })))
      expect(fs.readFileSync(path.join(parent, "secret"), "utf8")).toBe("do not touch")
      expect(fs.existsSync(directory)).toBe(false)
    }))

  describe("a broken directory fails with StorageUnavailable", () => {
    it.effect("the storage directory is a regular file", () =>
      Effect.gen(function* () {
        const directory = path.join(tempDirectory(), "blocked")
        fs.writeFileSync(directory, "not a directory")
        const storage = yield* FileStorage.pipe(Effect.provide(LocalFileStorage({ directory })))
        expect(yield* Effect.flip(storage.startUpload(newKey()))).toBeInstanceOf(StorageUnavailable)
        expect(yield* Effect.flip(readAll(storage.readObject(newKey())))).toBeInstanceOf(StorageUnavailable)
      }))

    it.effect("objects/ is a regular file: completion fails, keeps the parts, and completes once it is fixed", () =>
      onFreshDirectory((directory) =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 8)])
          fs.writeFileSync(path.join(directory, "objects"), "in the way")
          expect(yield* Effect.flip(storage.completeUpload(key, uploadId, stored))).toBeInstanceOf(StorageUnavailable)
          expect(listUpload(directory, uploadId)).toEqual(["1.part", "key"])
          fs.rmSync(path.join(directory, "objects"))
          const object = yield* storage.completeUpload(key, uploadId, stored)
          expect(object.size).toBe(100)
        })
      ))

    it.effect("a directory where the part file goes: putPart fails and leaves no temporary file", () =>
      onFreshDirectory((directory) =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const uploadId = yield* storage.startUpload(key)
          fs.mkdirSync(path.join(directory, "uploads", uploadId, "1.part", "blocker"), { recursive: true })
          const error = yield* Effect.flip(storage.putPart(key, uploadId, 1, chunked(bytes(100, 9)), 1000))
          expect(error).toBeInstanceOf(StorageUnavailable)
          expect(listUpload(directory, uploadId)).toEqual(["1.part", "key"])
        })
      ))

    it.effect("a part file removed behind the storage's back fails completion", () =>
      onFreshDirectory((directory) =>
        Effect.gen(function* () {
          const storage = yield* FileStorage
          const key = newKey()
          const { uploadId, stored } = yield* uploadParts(key, [bytes(100, 10), bytes(100, 11)])
          fs.rmSync(path.join(directory, "uploads", uploadId, "2.part"))
          const error = yield* Effect.flip(storage.completeUpload(key, uploadId, stored))
          expect(error).toBeInstanceOf(StorageUnavailable)
          expect(fs.existsSync(path.join(directory, "objects", ...key.split("/")))).toBe(false)
        })
      ))
  })

})
