/** Upload sessions and files (§8.2, open-points "Uploads") over HTTP. */
import {
  abandonUpload,
  apiError,
  completeUpload,
  CreateUploadBody,
  createUpload,
  getFile,
  getUpload,
  putUploadPart
} from "@syllabus/core"
import { Effect } from "effect"
import { defineOperation } from "../operation.js"
import { FileSchema, UploadPartSchema, UploadSchema } from "../schemas.js"

const tag = "Files"
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
  })
]
