/**
 * Adapters of the file-storage port (`FileStorage` in @syllabus/core): `LocalFileStorage` on
 * the file system; `TemporaryFileStorage`, the same in a directory removed when it closes (the
 * in-memory server's default); `MemoryFileStorage` for tests.
 */
export { LocalFileStorage, type LocalFileStorageOptions, makeLocalFileStorage, TemporaryFileStorage } from "./local.js"
export { MemoryFileStorage, makeMemoryFileStorage } from "./memory.js"
export { InvalidStorageName, NoSuchObject, NoSuchUpload, PartMismatch } from "./common.js"
