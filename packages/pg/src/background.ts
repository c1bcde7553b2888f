/**
 * The background workers' own pool (issue 11): `BackgroundStore` (the `Records`, `UnitOfWork`
 * and `Idempotency` the workers use) on a few connections of their own, apart from the
 * request pool, so that a storm of webhook deliveries, a long operation or a retention pass
 * never holds the connections requests wait for. The workers' concurrency is bounded by the
 * process's `BackgroundBudget`; this pool bounds their concurrent store work on top of that
 * (a unit of work waits for one of these connections, never for a request's).
 *
 * No migrations here: the request layer (`pgLayer`) brings the schema before the workers start.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { BackgroundStore, type Idempotency, type Records, type UnitOfWork } from "@syllabus/core"
import { Effect, Layer, Redacted } from "effect"
import { pgClientLayer, type PoolOptions } from "./pool.js"
import { PgStore } from "./store.js"

/** Connections of the workers' pool unless told otherwise. */
export const DEFAULT_BACKGROUND_CONNECTIONS = 3

/** `application_name` of the workers' connections (`pg_stat_activity` tells them from the requests'). */
export const BACKGROUND_APPLICATION_NAME = "syllabus-workers"

/** The stores of the background workers on a pool of their own on `url` (default 3 connections). */
export const pgBackgroundStore = (
  url: Redacted.Redacted<string> | string,
  options: Omit<PoolOptions, "url"> = {}
): Layer.Layer<BackgroundStore, SqlError> =>
  Layer.effect(BackgroundStore, Effect.context<Records | UnitOfWork | Idempotency>()).pipe(
    // Fresh: a layer is built once per program, and `pgLayer` builds `PgStore` on the request pool.
    Layer.provide(Layer.fresh(PgStore)),
    Layer.provide(
      pgClientLayer({
        maxConnections: DEFAULT_BACKGROUND_CONNECTIONS,
        ...options,
        applicationName: options.applicationName ?? BACKGROUND_APPLICATION_NAME,
        url: typeof url === "string" ? url : Redacted.value(url)
      })
    )
  )
