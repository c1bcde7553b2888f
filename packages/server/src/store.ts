/** The record store the server runs on: PostgreSQL when `DATABASE_URL` is set, else memory. */
import type { StoreServices } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { LocalFileStorage, MemoryFileStorage, TemporaryFileStorage } from "@syllabus/storage"
import { type Layer, Option, Redacted } from "effect"
import { pgTimeoutsOf, type ServerConfig } from "./config.js"

export interface ChosenStore {
  readonly kind: "memory" | "postgresql"
  readonly layer: Layer.Layer<StoreServices, unknown>
}

export const storeLayer = (config: ServerConfig): ChosenStore =>
  Option.match(config.databaseUrl, {
    onNone: () => ({ kind: "memory", layer: MemoryStore }),
    onSome: (url) => ({
      kind: "postgresql",
      layer: pgLayer(url, {
        timeouts: pgTimeoutsOf(config),
        pooler: config.databasePooler,
        ...Option.match(config.databaseListenUrl, { onNone: () => ({}), onSome: (listenUrl) => ({ listenUrl }) }),
        ...Option.match(config.databaseReplicaUrls, {
          onNone: () => ({}),
          onSome: (urls) => ({ replicaUrls: Redacted.value(urls).split(",").map((url) => url.trim()).filter((url) => url !== "") })
        }),
        ...Option.match(config.dbPreparedStatements, { onNone: () => ({}), onSome: (on) => ({ preparedStatements: on === "on" }) })
      })
    })
  })

/**
 * Where file bytes live (`FILE_STORAGE`): `local`, under `STORAGE_DIR`, kept across starts;
 * `temporary`, a directory of its own removed when the server stops; `memory`. Unset, they
 * live as long as the records that name them: `local` with a database, `temporary` without.
 */
export const fileStorageLayer = (config: ServerConfig, store: ChosenStore) => {
  const kind = Option.getOrElse(config.storage, () => (store.kind === "postgresql" ? ("local" as const) : ("temporary" as const)))
  switch (kind) {
    case "memory":
      return MemoryFileStorage
    case "temporary":
      return TemporaryFileStorage((directory) => console.log(`files: ${directory} (temporary: removed when the server stops; FILE_STORAGE=local keeps them in ${config.storageDirectory})`))
    case "local":
      return LocalFileStorage({ directory: config.storageDirectory })
  }
}
