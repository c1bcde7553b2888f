/** Upload sessions and files (§8.2, open-points "Uploads") over HTTP; a file's bytes: docs/files.md. */
import {
  abandonUpload,
  apiError,
  completeUpload,
  CreateUploadBody,
  createUpload,
  type FileContent,
  fileContent,
  getFile,
  getUpload,
  putUploadPart
} from "@syllabus/core"
import { Effect, Option } from "effect"
import { defineOperation, type Reply } from "../operation.js"
import { FileSchema, UploadPartSchema, UploadSchema } from "../schemas.js"

const tag = "Files"

/** RFC 8187 `attr-char`s; every other byte of the UTF-8 name is percent-encoded. */
const attrChar = /[A-Za-z0-9!#$&+\-.^_`|~]/

/**
 * `Content-Disposition` of a download (RFC 6266): `attachment`, an ASCII `filename` for old
 * clients (quotes, backslashes, controls and non-ASCII replaced by `_`) and the exact name in
 * `filename*` (UTF-8, percent-encoded: no byte of it can end the header or the parameter).
 */
export const contentDisposition = (filename: string): string => {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, "_")
  const encoded = [...new TextEncoder().encode(filename)]
    .map((byte) => {
      const char = String.fromCharCode(byte)
      return byte < 0x80 && attrChar.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
    })
    .join("")
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`
}

/** The reply of `GET /files/{file_id}/content`: the bytes (200, 206) or 304, with their headers. */
const contentReply = (content: FileContent): Reply => {
  const validators = { etag: content.etag, "cache-control": "private" }
  if (content._tag === "NotModified") return { status: 304, body: null, headers: validators }
  const file = content.file
  const headers = {
    ...validators,
    "content-type": String(file.content_type),
    "content-disposition": contentDisposition(String(file.filename)),
    "accept-ranges": "bytes",
    "x-content-type-options": "nosniff"
  }
  return Option.match(content.range, {
    onNone: () => ({ status: 200, body: null, stream: content.stream, headers: { ...headers, "content-length": String(content.size) } }),
    onSome: ({ start, end }) => ({
      status: 206,
      body: null,
      stream: content.stream,
      headers: { ...headers, "content-length": String(end - start + 1), "content-range": `bytes ${start}-${end}/${content.size}` }
    })
  })
}
const uploadParams = { upload_id: "upload" } as const

export const uploadOperations = [
  defineOperation({
    id: "uploads.create",
    method: "POST",
    path: "/uploads",
    summary: "Open an upload session",
    description: "Open an upload session: declare the file, then send its parts to `upload_urls`.",
    tag,
    capability: "files.create",
    body: CreateUploadBody,
    unitOfWork: "handler",
    idempotency: "required",
    success: { status: 201, description: "The session, with one URL per part.", schema: UploadSchema, headers: ["Location"] },
    errors: ["storage_unavailable"],
    handler: ({ body }) =>
      createUpload(body).pipe(
        Effect.map((data) => ({ status: 201, body: { data }, headers: { location: `/api/v3/uploads/${String(data.id)}` } }))
      )
  }),
  defineOperation({
    id: "uploads.get",
    method: "GET",
    path: "/uploads/{upload_id}",
    summary: "A session: which parts arrived (to resume), its status and, once completed, its file.",
    tag,
    capability: "files.read",
    params: uploadParams,
    idempotency: "none",
    success: { status: 200, description: "The session.", schema: UploadSchema },
    errors: [],
    handler: ({ path }) => getUpload(path.upload_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "uploads.parts.put",
    method: "PUT",
    path: "/uploads/{upload_id}/parts/{part_number}",
    summary: "Send one part (raw bytes, exactly its size). Sending a part again replaces it.",
    tag,
    capability: "files.create",
    params: uploadParams,
    rawBody: "application/octet-stream",
    idempotency: "none",
    success: { status: 200, description: "The part as stored, with its SHA-256.", schema: UploadPartSchema },
    errors: ["payload_too_large", "upload_integrity_mismatch", "state_conflict", "storage_unavailable"],
    handler: ({ path, raw }) => {
      const number = Number(path.part_number)
      if (!/^\d{1,4}$/.test(path.part_number ?? "")) return Effect.fail(apiError("not_found"))
      return putUploadPart(path.upload_id!, number, raw).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
    }
  }),
  defineOperation({
    id: "uploads.completions.create",
    method: "POST",
    path: "/uploads/{upload_id}/completions",
    summary: "Complete an upload: join its parts into a file",
    description:
      "Join the parts into a file; the bytes must match the declared size, SHA-256 and type. On a mismatch (422) no file is made and the session starts over with no parts: send them again.",
    tag,
    capability: "files.create",
    params: uploadParams,
    unitOfWork: "handler",
    idempotency: "required",
    success: { status: 201, description: "The file.", schema: FileSchema, headers: ["Location"] },
    errors: ["upload_integrity_mismatch", "state_conflict", "storage_unavailable"],
    handler: ({ path }) =>
      completeUpload(path.upload_id!).pipe(
        Effect.map((data) => ({ status: 201, body: { data }, headers: { location: `/api/v3/files/${String(data.id)}` } }))
      )
  }),
  defineOperation({
    id: "uploads.delete",
    method: "DELETE",
    path: "/uploads/{upload_id}",
    summary: "Abandon a session; its parts are removed from storage.",
    tag,
    capability: "files.create",
    params: uploadParams,
    unitOfWork: "handler",
    idempotency: "optional",
    success: { status: 200, description: "The abandoned session.", schema: UploadSchema },
    errors: ["state_conflict", "storage_unavailable"],
    handler: ({ path }) => abandonUpload(path.upload_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "files.get",
    method: "GET",
    path: "/files/{file_id}",
    summary: "A file of the account.",
    tag,
    capability: "files.read",
    params: { file_id: "file" },
    idempotency: "none",
    success: { status: 200, description: "The file.", schema: FileSchema },
    errors: [],
    handler: ({ path }) => getFile(path.file_id!).pipe(Effect.map((data) => ({ status: 200, body: { data } })))
  }),
  defineOperation({
    id: "files.content.get",
    method: "GET",
    path: "/files/{file_id}/content",
    summary: "Download a file's bytes (one byte range with Range; 304 with If-None-Match).",
    description: [
      "The bytes of a file, streamed from storage as they are read, with `Content-Type` the file's `content_type`, `Content-Length`, `Content-Disposition: attachment` (the file's `filename`, RFC 8187 `filename*` and an ASCII `filename`), `Cache-Control: private` and `X-Content-Type-Options: nosniff`. The answer is the file's type whatever `Accept` says; errors stay JSON.",
      "",
      "- **Validators.** `ETag` is the file's `sha256` in quotes (strong: a file's bytes never change). `If-None-Match` naming it (or `*`) answers 304 with no body.",
      "- **Ranges.** One range, as S3 and GCS take it: `Range: bytes=a-b`, `bytes=a-` or `bytes=-n` answers 206 with `Content-Range: bytes a-b/size` (a last byte past the end is cut at it); storage reads from the range's offset. A range starting past the end is 416 `http_error` (reason `range_not_satisfiable`) with `Content-Range: bytes */size`. Several ranges, another unit or a malformed header are ignored (the whole file, 200). `If-Range` with another ETag (or a date) also gets the whole file.",
      "- **Scope.** As `GET /files/{file_id}`: `files.read`; a file of another account or environment, an unknown one or one past its `expires_at` (certificate previews, 24 hours) is 404.",
      "- **Not ready.** Every file is recorded once its bytes are whole (an upload's completion, a rendered preview), so there is nothing to wait for today; a file whose bytes are not stored yet would be 409 `state_conflict` with its status as the reason.",
      "- **Failures.** Storage that does not answer is 503 `storage_unavailable` before any byte; storage that fails after the first byte ends the answer short (the connection closes with fewer bytes than `Content-Length`): download again, or the rest with `Range` and `If-Range`."
    ].join("\n"),
    tag,
    capability: "files.read",
    params: { file_id: "file" },
    idempotency: "none",
    download: true,
    success: { status: 200, description: "The file's bytes." },
    errors: ["state_conflict", "storage_unavailable"],
    handler: ({ path, headers }) =>
      fileContent(path.file_id!, { range: headers["range"], ifNoneMatch: headers["if-none-match"], ifRange: headers["if-range"] }).pipe(
        Effect.map(contentReply)
      )
  })
]
