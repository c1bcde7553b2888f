/**
 * Upload sessions and files (§8.2, release 3.4.0, open-points "Uploads"). A file of up to
 * 5 GiB arrives through a session: declared (purpose, name, size, type, SHA-256), sent in
 * numbered parts streamed to storage, then completed: the stored bytes must match what was
 * declared, or nothing becomes a file. An unfinished session can be resumed until it
 * expires, or abandoned; either way its storage is freed.
 */
import { Clock, Effect, Schema, type Stream } from "effect"
import { Caller, Ids } from "../access/context.js"
import { type ApiError, apiError, fieldError, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { meetsRequirements, READ_PERSONAL, type Requirement, requirementsJson, storedRequirements } from "../access/scope.js"
import { FileStorage, type StoredPart, type StorageUnavailable } from "../ports/file-storage.js"
import { type AccessPath, housekeepingPath, type JsonObject, Records, type StoredRecord, type Tenant, UnitOfWork } from "../ports/store.js"
import { isId } from "../records/ids.js"
import { Enum, Text } from "../records/schema.js"
import { DAY, formatTimestamp, MINUTE } from "../records/time.js"
import { inOrder } from "../records/views.js"
import { recordChange } from "../trail/audit.js"

export const UPLOAD_TYPE = "upload"
export const FILE_TYPE = "file"

export const MAX_FILE_BYTES = 5 * 1024 ** 3
export const MIN_PART_BYTES = 8 * 1024 ** 2
/** A session has at most this many parts (§8.2: arrays hold at most 1,000 items). */
export const MAX_PARTS = 1000
export const UPLOAD_TTL_MS = DAY
/**
 * A completion holds its session (`completing_since`, internal) while it joins the parts; one
 * whose process died mid-join lets go after this long, and another completion may take over.
 */
export const COMPLETION_LEASE_MS = 15 * MINUTE

export const purposes = ["image", "pdf", "import", "editor", "document"] as const
export type Purpose = (typeof purposes)[number]
/**
 * Purposes of files the service makes itself, never uploaded (an upload session refuses them):
 * `certificate_preview`, a certificate template rendered to PDF (learning/certificate-template.ts);
 * `certificate`, an issued certificate's document (learning/certificate-documents.ts); `export`.
 */
export const generatedPurposes = ["certificate_preview", "certificate", "export"] as const

const imageTypes = ["image/png", "image/jpeg", "image/gif", "image/webp"]
const officeTypes = [
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation"
]

/** The content types each purpose accepts. */
export const contentTypesByPurpose: Readonly<Record<Purpose, ReadonlyArray<string>>> = {
  image: imageTypes,
  pdf: ["application/pdf"],
  import: ["text/csv", "application/json", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"],
  editor: [...imageTypes, "application/pdf"],
  document: ["application/pdf", "text/plain", "text/csv", "application/zip", ...officeTypes, ...imageTypes]
}

/** Signatures of the types whose first bytes say what they are. */
const signatures: ReadonlyArray<{ readonly type: string; readonly matches: (head: Uint8Array) => boolean }> = [
  { type: "image/png", matches: (h) => [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((b, i) => h[i] === b) },
  { type: "image/jpeg", matches: (h) => h[0] === 0xff && h[1] === 0xd8 && h[2] === 0xff },
  { type: "image/gif", matches: (h) => ascii(h, 0, 4) === "GIF8" },
  { type: "image/webp", matches: (h) => ascii(h, 0, 4) === "RIFF" && ascii(h, 8, 12) === "WEBP" },
  { type: "application/pdf", matches: (h) => ascii(h, 0, 5) === "%PDF-" },
  { type: "application/zip", matches: (h) => h[0] === 0x50 && h[1] === 0x4b && h[2] === 0x03 && h[3] === 0x04 }
]
const ascii = (bytes: Uint8Array, from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to))

/** Office documents are zip archives. */
const zipTypes = new Set(["application/zip", ...officeTypes])

/** Do the first bytes agree with the declared type? Types without a signature (text) are not sniffed. */
export const headMatchesType = (head: Uint8Array, contentType: string): boolean => {
  const expected = zipTypes.has(contentType) ? "application/zip" : contentType
  const signature = signatures.find((s) => s.type === expected)
  if (signature) return signature.matches(head)
  // Text must not look like one of the binary types.
  return !signatures.some((s) => s.matches(head))
}

export const CreateUploadBody = Schema.Struct({
  purpose: Enum(...purposes),
  filename: Text({ min: 1, max: 255 }),
  size: Schema.Number.annotations({ message: () => "invalid_type|expected=integer" }).pipe(
    Schema.filter((n) => (Number.isInteger(n) && n >= 1 && n <= MAX_FILE_BYTES) || `out_of_range|min=1|max=${MAX_FILE_BYTES}`),
    Schema.annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: MAX_FILE_BYTES } })
  ),
  content_type: Text({ min: 1, max: 255 }),
  sha256: Schema.String.pipe(
    Schema.filter((s) => /^[0-9a-f]{64}$/.test(s) || "invalid_value|expected=64 lowercase hex digits"),
    Schema.annotations({ jsonSchema: { type: "string", pattern: "^[0-9a-f]{64}$" } })
  )
}).annotations({ identifier: "CreateUploadBody" })

/** Parts of at least 8 MiB, and never more than 1,000 of them. */
export const partSizeFor = (size: number): number => {
  const mib = 1024 ** 2
  return Math.max(MIN_PART_BYTES, Math.ceil(size / MAX_PARTS / mib) * mib)
}

const expectedPartSize = (size: number, partSize: number, number: number): number => {
  const count = Math.ceil(size / partSize)
  return number < count ? partSize : size - partSize * (count - 1)
}

interface PartEntry {
  readonly number: number
  readonly size: number
  readonly sha256: string
  readonly etag: string
  readonly received_at: string
}

const uploadFields = [
  "object",
  "id",
  "purpose",
  "filename",
  "size",
  "content_type",
  "sha256",
  "status",
  "part_size",
  "parts_count",
  "parts",
  "file_id",
  "expires_at",
  "created_at",
  "updated_at"
] as const

export const fileFields = ["object", "id", "purpose", "filename", "size", "content_type", "sha256", "created_at", "expires_at"] as const

/**
 * Is the file past its `expires_at`? Files the service makes for a time have one (certificate
 * previews, `CERTIFICATE_PREVIEW_TTL_MS`); uploaded files have none (null) and stay. An expired
 * file is gone to reads (404) before the housekeeping removes it (`sweepExpiredFiles`).
 */
export const isExpiredFile = (data: JsonObject, now: number): boolean =>
  typeof data.expires_at === "string" && Date.parse(data.expires_at) <= now

/** The status a client sees: a pending session past `expires_at` is `expired`. */
const uploadStatus = (data: JsonObject, now: number): string =>
  data.status === "pending" && Date.parse(String(data.expires_at)) <= now ? "expired" : String(data.status)

export const uploadView = (record: StoredRecord, now: number): JsonObject => {
  const parts = (record.data.parts ?? []) as unknown as ReadonlyArray<PartEntry>
  const view = inOrder(record.data, uploadFields)
  return {
    ...view,
    status: uploadStatus(record.data, now),
    parts: parts.map((p) => ({ number: p.number, size: p.size, sha256: p.sha256, received_at: p.received_at })),
    upload_urls:
      uploadStatus(record.data, now) === "pending"
        ? Array.from({ length: Number(record.data.parts_count) }, (_, i) => ({
            part_number: i + 1,
            method: "PUT",
            url: `/api/v3/uploads/${record.id}/parts/${i + 1}`,
            size: expectedPartSize(Number(record.data.size), Number(record.data.part_size), i + 1)
          }))
        : []
  }
}

const storageFailure = (cause: StorageUnavailable) => apiError("storage_unavailable", { internal: cause })

/** Where a file's bytes are kept in storage (also the files the service makes itself, such as certificate previews). */
export const objectKey = (tenant: Tenant, fileId: string) => `${tenant.accountId}/${tenant.environment}/${fileId}`

const loadUpload = (tenant: Tenant, id: string) =>
  Effect.flatMap(Records, (records) => records.get(tenant, UPLOAD_TYPE, id)).pipe(
    Effect.mapError(writeUnavailable),
    Effect.flatMap((record) => (record ? Effect.succeed(record) : Effect.fail(apiError("not_found"))))
  )

/** A session that can still take parts or be completed; else 409 `state_conflict` with the reason. */
const requirePending = (record: StoredRecord, now: number) => {
  const status = uploadStatus(record.data, now)
  return status === "pending" ? Effect.void : Effect.fail(apiError("state_conflict", { reason: status }))
}

/** Is a completion joining the session's parts (claimed within its lease)? */
const isCompleting = (data: JsonObject, now: number): boolean =>
  typeof data.completing_since === "number" && data.completing_since > now - COMPLETION_LEASE_MS

/**
 * A pending session that no completion holds: else 409 `state_conflict`, the reason its status
 * or `completing` (a concurrent completion is joining its parts; the status stays `pending`).
 */
const requireOpen = (record: StoredRecord, now: number) =>
  Effect.zipRight(
    requirePending(record, now),
    isCompleting(record.data, now) ? Effect.fail(apiError("state_conflict", { reason: "completing" })) : Effect.void
  )

/**
 * What a completion that lost a race answers, from the session as it now is: the winner's file
 * when it completed (completing is safe to repeat), 404 when the session is gone, else 409
 * `state_conflict` with the reason (`abandoned`, `expired`, `completing`).
 */
const completionAfterRace = (tenant: Tenant, id: string, now: number) =>
  Effect.gen(function* () {
    const current = yield* loadUpload(tenant, id)
    if (current.data.status === "completed" && typeof current.data.file_id === "string") return yield* getFile(current.data.file_id)
    yield* requireOpen(current, now)
    // Open again: the completion that won let go (its storage failed, or the bytes did not match).
    return yield* Effect.fail(apiError("state_conflict", { reason: "completing" }))
  })

/**
 * A unit of work whose conditional write found the record changed runs again (re-reading the
 * state it decides from), a few times; a lost race is never a 503.
 */
const againOnConflict = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.retry({ times: 5, while: (e) => e._tag === "RevisionConflict" }),
    Effect.catchIf(
      (e): e is Extract<E, { readonly _tag: "RevisionConflict" }> => e._tag === "RevisionConflict",
      () => Effect.fail(apiError("state_conflict", { reason: "concurrent_update" }))
    )
  )

export const createUpload = Effect.fn("Uploads.create")(function* (body: typeof CreateUploadBody.Type) {
  const caller = yield* Caller
  const ids = yield* Ids
  const records = yield* Records
  const storage = yield* FileStorage
  const now = yield* Clock.currentTimeMillis
  const accepted = contentTypesByPurpose[body.purpose]
  if (!accepted.includes(body.content_type.toLowerCase())) {
    return yield* Effect.fail(fieldError("validation_failed", "content_type", { reason: "not_accepted_for_purpose" }))
  }
  const id = yield* ids.next("upload")
  const fileId = yield* ids.next("file")
  const key = objectKey(caller.tenant, fileId)
  const storageUploadId = yield* storage.startUpload(key).pipe(Effect.mapError(storageFailure))
  const partSize = partSizeFor(body.size)
  const at = formatTimestamp(now)
  const data = {
    object: "upload",
    id,
    purpose: body.purpose,
    filename: body.filename,
    size: body.size,
    content_type: body.content_type.toLowerCase(),
    sha256: body.sha256,
    status: "pending",
    part_size: partSize,
    parts_count: Math.ceil(body.size / partSize),
    parts: [],
    file_id: null,
    expires_at: formatTimestamp(now + UPLOAD_TTL_MS),
    created_at: at,
    updated_at: at,
    // Internal: where the bytes go.
    reserved_file_id: fileId,
    storage_key: key,
    storage_upload_id: storageUploadId
  } satisfies JsonObject
  const uow = yield* UnitOfWork
  const record = yield* uow
    .transaction(
      Effect.gen(function* () {
        const stored = yield* records.insert(caller.tenant, UPLOAD_TYPE, id, data)
        yield* recordChange("upload.created", { object: "upload", id })
        return stored
      })
    )
    .pipe(
      Effect.mapError((e) => (e._tag === "ApiError" ? e : writeUnavailable(e))),
      // The session was not recorded: its storage upload must not linger.
      Effect.tapError(() => Effect.ignore(storage.abortUpload(key, storageUploadId)))
    )
  return uploadView(record, now)
})

export const getUpload = Effect.fn("Uploads.get")(function* (id: string) {
  const caller = yield* Caller
  const record = yield* loadUpload(caller.tenant, id)
  return uploadView(record, yield* Clock.currentTimeMillis)
})

/**
 * Stream one part to storage, then record it. Runs outside any unit of work: the bytes go
 * first, and the record of the part is a short unit of work of its own. A part that arrives
 * while the session ends (completed, abandoned) or while a completion joins its parts is 409
 * `state_conflict`, whichever step notices it.
 */
export const putUploadPart = Effect.fn("Uploads.putPart")(function* (
  id: string,
  number: number,
  /** The request body; it fails with `http_error` when the client's bytes cannot be read. */
  body: Stream.Stream<Uint8Array, ApiError<"http_error">>
) {
  const caller = yield* Caller
  const storage = yield* FileStorage
  const records = yield* Records
  const uow = yield* UnitOfWork
  const record = yield* loadUpload(caller.tenant, id)
  yield* requireOpen(record, yield* Clock.currentTimeMillis)
  const count = Number(record.data.parts_count)
  if (!Number.isInteger(number) || number < 1 || number > count) return yield* Effect.fail(apiError("not_found"))
  const expected = expectedPartSize(Number(record.data.size), Number(record.data.part_size), number)
  const stored: StoredPart = yield* storage
    .putPart(String(record.data.storage_key), String(record.data.storage_upload_id), number, body, expected)
    .pipe(
      Effect.catchTag("StorageUnavailable", (e) =>
        // The session may have ended meanwhile (its storage upload completed or aborted): that is
        // the answer then; only a session still open met a storage that failed.
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.flatMap(loadUpload(caller.tenant, id), (current) =>
            Effect.zipRight(requireOpen(current, now), Effect.fail(storageFailure(e)))
          )
        )
      ),
      Effect.catchTag("PartTooLarge", () => Effect.fail(apiError("payload_too_large", { params: { max: expected } })))
    )
  if (stored.size !== expected) {
    return yield* Effect.fail(
      apiError("upload_integrity_mismatch", { reason: "part_size", details: [{ parameter: "body", code: "upload_integrity_mismatch", reason: "part_size", params: { expected } }] })
    )
  }
  const now = yield* Clock.currentTimeMillis
  const part: PartEntry = { number, size: stored.size, sha256: stored.sha256, etag: stored.etag, received_at: formatTimestamp(now) }
  yield* uow
    .transaction(
      Effect.gen(function* () {
        const current = yield* loadUpload(caller.tenant, id)
        yield* requireOpen(current, now)
        const parts = ((current.data.parts ?? []) as unknown as ReadonlyArray<PartEntry>).filter((p) => p.number !== number)
        const next = [...parts, part].sort((a, b) => a.number - b.number)
        yield* records.update(caller.tenant, UPLOAD_TYPE, id, {
          ...current.data,
          parts: next as unknown as JsonObject[],
          updated_at: formatTimestamp(now)
        })
      })
    )
    .pipe(Effect.mapError((e) => (e._tag === "ApiError" ? e : writeUnavailable(e))))
  return { object: "upload_part", upload_id: id, number, size: part.size, sha256: part.sha256, received_at: part.received_at }
})

/**
 * Join the parts into the file and check it against the declaration. On a mismatch no file
 * is made; the joined bytes are dropped and the session starts over with no parts (storage
 * consumes the parts when it joins them), so the client sends them again. Completing a
 * session that is already completed answers its file again: the operation is safe to repeat.
 *
 * Concurrent completions of one session join its parts once: the first claims the session
 * (a conditional write of `completing_since`, in a unit of work of its own, as a worker claims
 * an operation); the others answer from the state they find, 409 `state_conflict` (reason
 * `completing`) while the claim holds, the file once it is made. Every later step is
 * conditional on the claim (the revision it wrote), and a failure lets go of it.
 */
export const completeUpload = Effect.fn("Uploads.complete")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const uow = yield* UnitOfWork
  const now = yield* Clock.currentTimeMillis
  const tenant = caller.tenant
  const claim = yield* againOnConflict(
    uow.transaction(
      Effect.gen(function* () {
        const record = yield* loadUpload(tenant, id)
        if (record.data.status === "completed" && typeof record.data.file_id === "string") return record.data.file_id
        yield* requireOpen(record, now)
        const parts = (record.data.parts ?? []) as unknown as ReadonlyArray<PartEntry>
        const count = Number(record.data.parts_count)
        const missing = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !parts.some((p) => p.number === n))
        if (missing.length > 0) {
          return yield* Effect.fail(apiError("state_conflict", { reason: "parts_missing", params: { missing: missing.slice(0, 20).join(", ") } }))
        }
        return yield* records.update(tenant, UPLOAD_TYPE, id, { ...record.data, completing_since: now }, { expectedRevision: record.revision })
      })
    )
  ).pipe(Effect.mapError((e) => (e._tag === "ApiError" ? e : writeUnavailable(e))))
  if (typeof claim === "string") return yield* getFile(claim)
  // Let go of the claim on any failure (or interruption); a no-op once the session moved on.
  const release = records
    .update(tenant, UPLOAD_TYPE, id, { ...claim.data, completing_since: null }, { expectedRevision: claim.revision })
    .pipe(Effect.ignore)
  return yield* finishCompletion(claim, now).pipe(Effect.onError(() => release))
})

/** The steps of a completion after its claim: join in storage, check, record the file. */
const finishCompletion = Effect.fnUntraced(function* (claimed: StoredRecord, now: number) {
  const caller = yield* Caller
  const storage = yield* FileStorage
  const records = yield* Records
  const uow = yield* UnitOfWork
  const tenant = caller.tenant
  const id = claimed.id
  const parts = (claimed.data.parts ?? []) as unknown as ReadonlyArray<PartEntry>
  const key = String(claimed.data.storage_key)
  const uploadId = String(claimed.data.storage_upload_id)
  const joined = yield* Effect.either(
    storage.completeUpload(key, uploadId, parts.map((p) => ({ number: p.number, size: p.size, sha256: p.sha256, etag: p.etag })))
  )
  if (joined._tag === "Left") {
    // Only a session still held by this completion met a storage that failed; else another
    // request moved it on (a completion that took over, a DELETE), and that is the answer.
    const current = yield* loadUpload(tenant, id)
    if (current.revision === claimed.revision) return yield* Effect.fail(storageFailure(joined.left))
    return yield* completionAfterRace(tenant, id, yield* Clock.currentTimeMillis)
  }
  const object = joined.right
  const mismatch =
    object.size !== Number(claimed.data.size)
      ? "size"
      : object.sha256 !== claimed.data.sha256
        ? "sha256"
        : !headMatchesType(object.head, String(claimed.data.content_type))
          ? "content_type"
          : undefined
  if (mismatch !== undefined) {
    yield* storage.deleteObject(key).pipe(Effect.mapError(storageFailure))
    const restarted = yield* storage.startUpload(key).pipe(Effect.mapError(storageFailure))
    const reset = yield* Effect.either(
      records.update(
        tenant,
        UPLOAD_TYPE,
        id,
        { ...claimed.data, parts: [], storage_upload_id: restarted, completing_since: null, updated_at: formatTimestamp(now) },
        { expectedRevision: claimed.revision }
      )
    )
    if (reset._tag === "Left") {
      yield* Effect.ignore(storage.abortUpload(key, restarted))
      if (reset.left._tag !== "RevisionConflict") return yield* Effect.fail(writeUnavailable(reset.left))
      return yield* completionAfterRace(tenant, id, yield* Clock.currentTimeMillis)
    }
    // The joined upload is done with: its storage's record of the completion can go.
    yield* Effect.ignore(storage.abortUpload(key, uploadId))
    return yield* Effect.fail(
      apiError("upload_integrity_mismatch", { reason: mismatch, details: [{ field: mismatch, code: "upload_integrity_mismatch", reason: mismatch }] })
    )
  }
  const fileId = String(claimed.data.reserved_file_id)
  const at = formatTimestamp(now)
  const file = {
    object: "file",
    id: fileId,
    purpose: String(claimed.data.purpose),
    filename: String(claimed.data.filename),
    size: object.size,
    content_type: String(claimed.data.content_type),
    sha256: object.sha256,
    created_at: at,
    expires_at: null,
    storage_key: key,
    [FILE_REQUIRES]: requirementsJson(uploadRequirements(String(claimed.data.purpose)))
  } satisfies JsonObject
  const stored = yield* Effect.either(
    uow.transaction(
      Effect.gen(function* () {
        // Conditional on the claim: a completion that lost it records nothing.
        yield* records.update(
          tenant,
          UPLOAD_TYPE,
          id,
          { ...claimed.data, status: "completed", file_id: fileId, completing_since: null, updated_at: at },
          { expectedRevision: claimed.revision }
        )
        const saved = yield* records.insert(tenant, FILE_TYPE, fileId, file)
        yield* recordChange("file.created", { object: "file", id: fileId })
        return saved
      })
    )
  )
  if (stored._tag === "Left") {
    const error = stored.left
    if (error._tag === "ApiError") return yield* Effect.fail(error)
    if (error._tag === "StoreUnavailable") return yield* Effect.fail(writeUnavailable(error))
    // RevisionConflict, UniqueViolation: another completion recorded the session first.
    return yield* completionAfterRace(tenant, id, yield* Clock.currentTimeMillis)
  }
  // The file is recorded: the storage's record of the upload's completion can go.
  yield* Effect.ignore(storage.abortUpload(key, uploadId))
  return inOrder(stored.right.data, fileFields)
})

/**
 * Give up a session: the state first (a conditional write in a unit of work, so that a
 * completion racing it either claimed the session first, 409 here, or finds it abandoned, 409
 * there), then its parts are dropped from storage. Abandoning again answers the session and
 * drops its storage again (harmless; it finishes what a storage outage interrupted).
 */
export const abandonUpload = Effect.fn("Uploads.abandon")(function* (id: string) {
  const caller = yield* Caller
  const storage = yield* FileStorage
  const records = yield* Records
  const now = yield* Clock.currentTimeMillis
  const uow = yield* UnitOfWork
  const saved = yield* againOnConflict(
    uow.transaction(
      Effect.gen(function* () {
        const record = yield* loadUpload(caller.tenant, id)
        if (record.data.status === "abandoned") return record
        yield* requireOpen(record, now)
        const updated = yield* records.update(
          caller.tenant,
          UPLOAD_TYPE,
          id,
          { ...record.data, status: "abandoned", updated_at: formatTimestamp(now) },
          { expectedRevision: record.revision }
        )
        yield* recordChange("upload.abandoned", { object: "upload", id })
        return updated
      })
    )
  ).pipe(Effect.mapError((e) => (e._tag === "ApiError" ? e : writeUnavailable(e))))
  yield* storage
    .abortUpload(String(saved.data.storage_key), String(saved.data.storage_upload_id))
    .pipe(Effect.mapError(storageFailure))
  return uploadView(saved, now)
})

/**
 * Where a file keeps what reading it needs beyond `files.read` (access/scope.ts, `Requirement`):
 * a file inherits the access of what produced it. An export's file needs what the export needed
 * (the resource's `<plural>.read` for the records it holds, and `users.read_personal` when it
 * holds personal data); a certificate preview, its template's read; an uploaded import file,
 * which may hold anyone's personal data, `imports.read` and `users.read_personal` for everyone.
 * Files without requirements (images, documents) are the account's assets.
 */
export const FILE_REQUIRES = "requires"

/** What reading an uploaded file needs, by its purpose. */
const uploadRequirements = (purpose: string): ReadonlyArray<Requirement> =>
  purpose === "import" ? [{ capability: "imports.read", resources: null }, { capability: READ_PERSONAL, resources: null }] : []

/**
 * A file of the caller's tenant that is still there and that the caller may read: 404 for an
 * unknown, another tenant's, an expired one, or one whose requirements it does not meet (out of
 * reach looks missing).
 */
export const loadLiveFile = Effect.fn("Files.load")(function* (id: string) {
  const caller = yield* Caller
  const records = yield* Records
  const record = yield* records.get(caller.tenant, FILE_TYPE, id).pipe(Effect.mapError(readUnavailable))
  if (!record || isExpiredFile(record.data, yield* Clock.currentTimeMillis) || !meetsRequirements(caller.grant, storedRequirements(record.data[FILE_REQUIRES]))) {
    return yield* Effect.fail(apiError("not_found"))
  }
  return record
})

export const getFile = Effect.fn("Files.get")(function* (id: string) {
  const record = yield* loadLiveFile(id)
  return inOrder(record.data, fileFields)
})

/**
 * A file ID given in a field of another resource: a file of the caller's account and
 * environment whose purpose the field accepts, else 422 on that field.
 */
export const requireFile = Effect.fn("Files.require")(function* (
  field: string,
  fileId: string,
  accepted: ReadonlyArray<Purpose>
) {
  if (!isId("file", fileId)) return yield* Effect.fail(apiError("validation_failed", { details: [{ field, code: "invalid" }] }))
  const caller = yield* Caller
  const records = yield* Records
  const record = yield* records.get(caller.tenant, FILE_TYPE, fileId).pipe(Effect.mapError(writeUnavailable))
  if (!record || isExpiredFile(record.data, yield* Clock.currentTimeMillis)) {
    return yield* Effect.fail(fieldError("validation_failed", field, { reason: "not_found" }))
  }
  if (!accepted.includes(record.data.purpose as Purpose)) {
    return yield* Effect.fail(fieldError("validation_failed", field, { reason: "purpose_mismatch" }))
  }
  return record
})

/** The cross-tenant read of `sweepExpiredUploads`, an index of the store. */
export const uploadsAccessPaths: ReadonlyArray<AccessPath> = [
  housekeepingPath(UPLOAD_TYPE, ["status"], [{ field: "expires_at", kind: "text" }])
]

/**
 * Housekeeping: sessions past `expires_at` that are still pending free their storage and
 * become `expired`. Returns how many were swept (at most `batch` a call).
 */
export const sweepExpiredUploads = Effect.fn("Uploads.sweepExpired")(function* (batch = 500) {
  const records = yield* Records
  const storage = yield* FileStorage
  const now = yield* Clock.currentTimeMillis
  const expired = yield* records.scan(
    UPLOAD_TYPE,
    [
      { field: "status", op: "eq", value: "pending" },
      { field: "expires_at", op: "lte", value: formatTimestamp(now) }
    ],
    batch
  )
  // A session a completion still holds (claimed before it expired) is left to that completion;
  // one that changed since the scan is left to the next pass.
  const due = expired.filter((record) => !isCompleting(record.data, now))
  yield* Effect.forEach(due, (record) =>
    Effect.gen(function* () {
      yield* storage.abortUpload(String(record.data.storage_key), String(record.data.storage_upload_id))
      yield* records
        .update(record.tenant, UPLOAD_TYPE, record.id, { ...record.data, status: "expired", completing_since: null, updated_at: formatTimestamp(now) }, {
          expectedRevision: record.revision
        })
        .pipe(Effect.catchTag("RevisionConflict", () => Effect.void))
    })
  )
  return due.length
})
