/** What `bench/run.ts` and its server children agree on. */

export type ServerKind = "raw" | "effect" | "memory" | "postgresql"

/**
 * Tracing in the Effect servers: `shipped`, each with its defaults (the bare route with the
 * platform's request span, the product without it since `traceRequests` is off by default);
 * `on`, both with the request span; `http-off`, neither; `off`, the tracer disabled.
 */
export type Tracing = "shipped" | "on" | "http-off" | "off"

export const isTracing = (value: string): value is Tracing =>
  value === "shipped" || value === "on" || value === "http-off" || value === "off"

/** Sent by a server child over the IPC channel. */
export type ServerMessage =
  | { readonly type: "ready"; readonly port: number; readonly secret: string | null; readonly database: string | null }
  | { readonly type: "failed"; readonly error: string }
  | { readonly type: "measuring" }
  /** CPU time the server used during the measured run (µs). */
  | { readonly type: "cpu"; readonly userMicros: number; readonly systemMicros: number }

/** The small fixed body of both baselines. */
export const BASELINE_BODY = { data: { object: "ping", ok: true, release: "bench" } } as const
export const BASELINE_PATH = "/x"

export const defaultDatabaseUrl = "postgres://postgres@127.0.0.1:5432/test"

/**
 * What-if experiments, to see what a part of the pipeline costs (not the product):
 * `skip-request-log` drops the request-log inserts in the store, as a log written off the
 * request path would cost the request nothing.
 */
export type Experiment = "none" | "skip-request-log"
