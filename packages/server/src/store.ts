/** The record store the server runs on: PostgreSQL when `DATABASE_URL` is set, else memory. */
import type { StoreServices } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { pgLayer } from "@syllabus/pg"
import { LocalFileStorage, MemoryFileStorage } from "@syllabus/storage"
import { type Layer, Option } from "effect"
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
      layer: pgLayer(url, { timeouts: pgTimeoutsOf(config), preparedStatements: config.dbPreparedStatements === "on" })
    })
  })

/** Where file bytes live, chosen apart from the record store: local files unless `FILE_STORAGE=memory`. */
export const fileStorageLayer = (config: ServerConfig) =>
  config.storage === "memory" ? MemoryFileStorage : LocalFileStorage({ directory: config.storageDirectory })
