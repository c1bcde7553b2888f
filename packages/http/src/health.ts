/**
 * Probes for operators, outside `/api/v3` and outside the contract (so not in the OpenAPI
 * description, which describes `/api/v3` only, as for the OAuth endpoints):
 *
 * - `GET /livez`: 200 while the process serves; it touches nothing else.
 * - `GET /readyz`: 200 when the store answers a trivial read within `readinessDeadlineMs`
 *   (default 2 s), else 503; the body names the failing dependency. A store with read replicas
 *   (`StoreReplicas`) also reports each one's state (`checks.replicas`): a replica failing,
 *   lagging or promoted leaves its reads to the primary, so it is `degraded`, not a 503.
 *
 * No credential, no rate limit, nothing of any tenant: a load balancer or an orchestrator
 * calls them. File storage is not probed: it has no cheap read, and its outage fails only the
 * upload operations (503 `storage_unavailable`), not the service.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Records, StoreReplicas, type Tenant } from "@syllabus/core"
import { Clock, Effect, Exit, Option } from "effect"
import { within } from "./deadline.js"
import type { OutsideApp } from "./pipeline.js"
import { defaultDeadlines, RELEASE, ServerSettings } from "./services.js"

export const LIVENESS_PATH = "/livez"
export const READINESS_PATH = "/readyz"

/** The read the probe makes: a record nobody writes, in a tenant no account has. */
const PROBE_TENANT: Tenant = { accountId: "system", environment: "production" }

const headers = { "cache-control": "no-store", "x-service-release": RELEASE }

const answer = (body: unknown, status = 200) => HttpServerResponse.unsafeJson(body, { status, headers })

/** The store's answer to a trivial read, within `timeoutMs`. */
const checkStore = (timeoutMs: number) =>
  Effect.gen(function* () {
    const records = yield* Records
    const started = yield* Clock.currentTimeMillis
    let timedOut = false
    const exit = yield* Effect.exit(within(records.get(PROBE_TENANT, "readiness_probe", "probe"), timeoutMs, () => {
      timedOut = true
      return "timeout" as const
    }))
    const duration_ms = (yield* Clock.currentTimeMillis) - started
    if (Exit.isSuccess(exit)) return { status: "ok", duration_ms } as const
    if (!timedOut) yield* Effect.logWarning("readiness: the store failed", exit.cause)
    return { status: "unavailable", reason: timedOut ? "timeout" : "error", duration_ms } as const
  })

/** The read replicas' states, when the store has some, within `timeoutMs` (a replica that does not answer by then is `failing`). */
const checkReplicas = (timeoutMs: number) =>
  Effect.flatMap(Effect.serviceOption(StoreReplicas), (replicas) => {
    if (Option.isNone(replicas)) return Effect.succeed(undefined)
    return replicas.value.check.pipe(
      Effect.timeoutTo({ duration: timeoutMs, onTimeout: () => undefined, onSuccess: (states) => states }),
      Effect.map((states) => {
        const all = states ?? []
        const status = states !== undefined && all.every((replica) => replica.state === "ok") ? "ok" as const : "degraded" as const
        return { status, replicas: all }
      })
    )
  })

export const healthApp: OutsideApp = (request) =>
  Effect.gen(function* () {
    const path = request.url.split("?", 1)[0]
    if (path !== LIVENESS_PATH && path !== READINESS_PATH) return undefined
    if (request.method !== "GET" && request.method !== "HEAD") {
      return HttpServerResponse.unsafeJson({ status: "method_not_allowed" }, { status: 405, headers: { ...headers, allow: "GET, HEAD" } })
    }
    if (path === LIVENESS_PATH) return answer({ status: "ok" })
    const settings = yield* ServerSettings
    const deadlineMs = settings.readinessDeadlineMs ?? defaultDeadlines.readinessDeadlineMs
    const [store, replicas] = yield* Effect.all([checkStore(deadlineMs), checkReplicas(deadlineMs)], { concurrency: "unbounded" })
    const ready = store.status === "ok"
    return answer(
      {
        status: ready ? "ready" : "unavailable",
        failing: ready ? [] : ["store"],
        ...(replicas === undefined ? {} : { degraded: replicas.status === "ok" ? [] : ["replicas"] }),
        checks: { store, ...(replicas === undefined ? {} : { replicas }) }
      },
      ready ? 200 : 503
    )
  })
