/**
 * Adapters of the file-storage port (`FileStorage` in @syllabus/core): `LocalFileStorage`, the
 * embedded default, on the file system; `MemoryFileStorage` for tests and the in-memory server.
 */
export { LocalFileStorage, type LocalFileStorageOptions, makeLocalFileStorage } from "./local.js"
export { MemoryFileStorage, makeMemoryFileStorage } from "./memory.js"
export { InvalidStorageName, NoSuchObject, NoSuchUpload, PartMismatch } from "./common.js"
