/** A small PNG file and the calls of an upload session, for the tests of this folder. */
import { createHash } from "node:crypto"
import type { ApiResponse, TestApi } from "@syllabus/testing"

/** `size` bytes that start with the PNG signature. */
export const png = (size = 64): Uint8Array<ArrayBuffer> => {
  const bytes = new Uint8Array(size).map((_, i) => (i * 31 + 7) & 0xff)
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  return bytes
}

export const declare = (api: TestApi, bytes: Uint8Array): Promise<ApiResponse> =>
  api.request("POST", "/uploads", {
    json: {
      purpose: "image",
      filename: "picture.png",
      size: bytes.length,
      content_type: "image/png",
      sha256: createHash("sha256").update(bytes).digest("hex")
    }
  })

export const putPart = async (api: TestApi, uploadId: string, bytes: Uint8Array<ArrayBuffer>): Promise<number> =>
  (
    await api.fetch(`/uploads/${uploadId}/parts/1`, {
      method: "PUT",
      headers: { authorization: `Bearer ${api.secrets.test}`, "content-type": "application/octet-stream" },
      body: bytes
    })
  ).status

export const complete = (api: TestApi, uploadId: string): Promise<ApiResponse> => api.request("POST", `/uploads/${uploadId}/completions`)
