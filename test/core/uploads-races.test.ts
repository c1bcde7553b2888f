/**
 * Completions of one upload session are claimed (`completeUpload`): while one joins the parts,
 * every other writer of the session answers 409 `state_conflict` (reason `completing`); a
 * failure lets go of the claim; a claim whose process died is taken over after its lease. Over
 * HTTP the memory store answers these requests one after another, so the races are made here,
 * deterministically, with a storage whose completion waits until the test lets it go.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  abandonUpload,
  type ApiError,
  Caller,
  type CallerInfo,
  COMPLETION_LEASE_MS,
  completeUpload,
  createUpload,
  FileStorage,
  getUpload,
  Ids,
  putUploadPart,
  type Records,
  StorageUnavailable,
  sweepExpiredUploads,
  type UnitOfWork,
  UPLOAD_TTL_MS
} from "@syllabus/core"
import { MemoryStore } from "@syllabus/memory"
import { MemoryFileStorage } from "@syllabus/storage"
import { createHash } from "node:crypto"
import { Deferred, Effect, Either, Fiber, Layer, Ref, Stream, TestClock } from "effect"

const caller: CallerInfo = {
  tenant: { accountId: "acc_races", environment: "production" },
  requestId: "req_000000001",
  credential: { id: "crd_000000001" },
  grant: new Map(),
  human: null
}

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4, 5, 6, 7, 8])
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** The storage's `completeUpload` waits for `gate` while `holding`, and fails while `failing`. */
interface Controls {
  readonly holding: Ref.Ref<boolean>
  readonly failing: Ref.Ref<boolean>
  readonly entered: Deferred.Deferred<void>
  readonly gate: Deferred.Deferred<void>
}

const setup = Effect.gen(function* () {
  const inner = yield* FileStorage
  const controls: Controls = {
    holding: yield* Ref.make(false),
    failing: yield* Ref.make(false),
    entered: yield* Deferred.make<void>(),
    gate: yield* Deferred.make<void>()
  }
  const storage: FileStorage["Type"] = {
    ...inner,
    completeUpload: (key, uploadId, parts) =>
      Effect.gen(function* () {
        if (yield* Ref.get(controls.failing)) return yield* Effect.fail(new StorageUnavailable({ cause: "injected outage" }))
        if (yield* Ref.get(controls.holding)) {
          yield* Deferred.succeed(controls.entered, undefined)
          yield* Deferred.await(controls.gate)
        }
        return yield* inner.completeUpload(key, uploadId, parts)
      })
  }
  return { controls, storage }
})

/** Run `body` with a caller, the memory store and a controllable memory file storage. */
const run = <A, E>(body: (controls: Controls) => Effect.Effect<A, E, Caller | FileStorage | Ids | Records | UnitOfWork>) =>
  Effect.gen(function* () {
    const { controls, storage } = yield* setup
    return yield* body(controls).pipe(Effect.provideService(FileStorage, storage))
  }).pipe(Effect.provideService(Caller, caller), Effect.provide(Layer.mergeAll(MemoryStore, Ids.live, MemoryFileStorage)))

/** A session of one part, sent. */
const readySession = Effect.gen(function* () {
  const session = yield* createUpload({ purpose: "image", filename: "a.png", size: PNG.length, content_type: "image/png", sha256: sha256(PNG) })
  const id = String(session.id)
  yield* putUploadPart(id, 1, Stream.make(PNG))
  return id
})

const codeOf = (result: Either.Either<unknown, ApiError>) =>
  Either.isLeft(result) ? `${result.left.status} ${result.left.code} ${String(result.left.reason ?? "")}`.trim() : "ok"

describe("concurrent writers of one upload session", () => {
  it.effect("while a completion joins the parts: other completions, a DELETE and parts are 409 completing; then the file, once", () =>
    run((controls) =>
      Effect.gen(function* () {
        const id = yield* readySession
        yield* Ref.set(controls.holding, true)
        const first = yield* Effect.fork(completeUpload(id))
        yield* Deferred.await(controls.entered)
        expect(codeOf(yield* Effect.either(completeUpload(id)))).toBe("409 state_conflict completing")
        expect(codeOf(yield* Effect.either(abandonUpload(id)))).toBe("409 state_conflict completing")
        expect(codeOf(yield* Effect.either(putUploadPart(id, 1, Stream.make(PNG))))).toBe("409 state_conflict completing")
        // The session still shows pending to a client meanwhile.
        expect((yield* getUpload(id)).status).toBe("pending")
        yield* Deferred.succeed(controls.gate, undefined)
        const file = yield* Fiber.join(first)
        const again = yield* completeUpload(id)
        expect(again).toEqual(file)
        expect(yield* getUpload(id)).toMatchObject({ status: "completed", file_id: file.id })
        expect(codeOf(yield* Effect.either(abandonUpload(id)))).toBe("409 state_conflict completed")
      })
    ))

  it.effect("a storage outage during the join is 503 and lets go of the claim: the next completion makes the file", () =>
    run((controls) =>
      Effect.gen(function* () {
        const id = yield* readySession
        yield* Ref.set(controls.failing, true)
        expect(codeOf(yield* Effect.either(completeUpload(id)))).toBe("503 storage_unavailable")
        yield* Ref.set(controls.failing, false)
        expect((yield* getUpload(id)).status).toBe("pending")
        const file = yield* completeUpload(id)
        expect(yield* getUpload(id)).toMatchObject({ status: "completed", file_id: file.id })
      })
    ))

  it.effect("an abandoned session answers completions 409 abandoned; abandoning again answers it again", () =>
    run(() =>
      Effect.gen(function* () {
        const id = yield* readySession
        expect((yield* abandonUpload(id)).status).toBe("abandoned")
        expect(codeOf(yield* Effect.either(completeUpload(id)))).toBe("409 state_conflict abandoned")
        expect((yield* abandonUpload(id)).status).toBe("abandoned")
      })
    ))

  it.effect("a completion whose process died holds the session only for its lease; the housekeeping leaves a live claim alone", () =>
    run((controls) =>
      Effect.gen(function* () {
        // Near its expiry, a completion claims the session and never comes back (as a killed process).
        const id = yield* readySession
        yield* TestClock.adjust(UPLOAD_TTL_MS - 1000)
        yield* Ref.set(controls.holding, true)
        const stuck = yield* Effect.fork(completeUpload(id))
        yield* Deferred.await(controls.entered)
        expect(codeOf(yield* Effect.either(completeUpload(id)))).toBe("409 state_conflict completing")
        // Past the expiry, within the lease: the housekeeping does not take its storage.
        yield* TestClock.adjust(2000)
        expect(yield* sweepExpiredUploads()).toBe(0)
        // Past the lease: the session is expired to everyone, and the housekeeping sweeps it.
        yield* TestClock.adjust(COMPLETION_LEASE_MS)
        expect(codeOf(yield* Effect.either(completeUpload(id)))).toBe("409 state_conflict expired")
        expect(yield* sweepExpiredUploads()).toBe(1)
        yield* Fiber.interrupt(stuck)
        expect((yield* getUpload(id)).status).toBe("expired")
      })
    ))

  it.effect("a claim past its lease on a session still open is taken over: the next completion makes the file", () =>
    run((controls) =>
      Effect.gen(function* () {
        const id = yield* readySession
        yield* Ref.set(controls.holding, true)
        const stuck = yield* Effect.fork(completeUpload(id))
        yield* Deferred.await(controls.entered)
        yield* TestClock.adjust(COMPLETION_LEASE_MS + 1)
        yield* Ref.set(controls.holding, false)
        const file = yield* completeUpload(id)
        expect(yield* getUpload(id)).toMatchObject({ status: "completed", file_id: file.id })
        // The one that held the claim before records nothing: it answers the file the other made.
        yield* Deferred.succeed(controls.gate, undefined)
        expect(yield* Fiber.join(stuck)).toEqual(file)
      })
    ))
})
