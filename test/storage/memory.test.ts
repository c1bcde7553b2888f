import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { FileStorage } from "@syllabus/core"
import { MemoryFileStorage } from "../../packages/storage/src/index.js"
import { newKey, readAll, storageConformance, uploadParts } from "./conformance.js"

storageConformance("memory", MemoryFileStorage)

describe("MemoryFileStorage", () => {
  it.scoped("every build of the layer starts empty and keeps its own objects", () =>
    Effect.gen(function* () {
      const one = yield* Layer.build(MemoryFileStorage)
      const two = yield* Layer.build(MemoryFileStorage)
      const key = newKey()
      const read = Effect.flatMap(FileStorage, (storage) => readAll(storage.readObject(key)))
      yield* Effect.gen(function* () {
        const storage = yield* FileStorage
        const { uploadId, stored } = yield* uploadParts(key, [new Uint8Array([1, 2, 3])])
        yield* storage.completeUpload(key, uploadId, stored)
      }).pipe(Effect.provide(one))
      expect(yield* read.pipe(Effect.provide(one))).toEqual(new Uint8Array([1, 2, 3]))
      expect(Exit.isFailure(yield* read.pipe(Effect.provide(two), Effect.exit))).toBe(true)
    }))
})
