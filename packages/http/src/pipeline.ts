/**
 * The request pipeline: every rule of §1, §2.1, §4.1, §4.2, §7 and §8 applied to every
 * operation, in the order of DESIGN.md ("A request, in order"). Operations only see decoded,
 * authorized input; every failure becomes one `ApiError`, answered by `errorBody`.
 */
import {
  ChangeSignals,
  type ApiError,
  apiError,
  admit,
  authenticate,
  Caller,
  type CallerInfo,
  checkIdempotencyKey,
  detailsOf,
  type DetailItem,
  formatTimestamp,
  Ids,
  isId as isPublicIdOf,
  type Json,
  storableForm,
  unstorableTextPaths,
  makeRequestLogWriter,
  negotiateLanguage,
  NOT_REPLAYABLE_HEADER,
  outcomeOf,
  type RateDecision,
  RateLimitConfig,
  rateLimitHeaders,
  type RecordedResponse,
  runIdempotent,
  readUnavailable,
  strict,
  UnitOfWork,
  writeUnavailable
} from "@syllabus/core"
import { HttpServerRequest } from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Clock, Effect, Either, Option, Schema, Stream } from "effect"
import { within } from "./deadline.js"
import { deprecationHeaders, deprecationOf } from "./deprecations.js"
import { errorBody, languageHeaders } from "./envelope.js"
import type { Operation, Reply } from "./operation.js"
import { makeRouter } from "./router.js"
import { type AppServices, defaultDeadlines, RELEASE, ServerSettings, type ServerSettingsShape } from "./services.js"
import { accepts, bodyStream, hasBody, isJsonContentType, originOf, parseJsonBody, readBody } from "./wire.js"

export const API_PREFIX = "/api/v3"

const clientRequestIdPattern = /^[A-Za-z0-9._-]{1,64}$/
const ifMatchPattern = /^W\/"([a-z_]+):([A-Za-z0-9_]+):(\d{1,15})"$/

/** What a request answers, before the headers every answer carries. */
interface Answer {
  readonly status: number
  readonly body: Json | null
  readonly headers: Readonly<Record<string, string>>
  readonly stream: Reply["stream"]
  readonly errorCode: string | null
}

/** What the pipeline learns about a request on its way, for the response headers and the log. */
interface RequestState {
  readonly requestId: string
  readonly startedAt: number
  clientRequestId: string | null
  caller: CallerInfo | undefined
  operation: Operation | undefined
  idempotencyKey: string | null
  replayed: boolean
  /** Set once a write has committed: a failing request log must not hide its result. */
  committed: boolean
  readonly headers: Record<string, string>
}

/** All values of a header, seeing through Node's folding of repeated headers. */
const headerValues = (request: HttpServerRequest, name: string): ReadonlyArray<string> => {
  const source = request.source as { rawHeaders?: ReadonlyArray<string> } | undefined
  if (source && Array.isArray(source.rawHeaders)) {
    const values: Array<string> = []
    for (let i = 0; i + 1 < source.rawHeaders.length; i += 2) {
      if (source.rawHeaders[i]!.toLowerCase() === name) values.push(...source.rawHeaders[i + 1]!.split(","))
    }
    return values.map((v) => v.trim()).filter((v) => v !== "")
  }
  const value = request.headers[name]
  return value === undefined ? [] : value.split(",").map((v) => v.trim()).filter((v) => v !== "")
}

const noParameters: Readonly<Record<string, string | Array<string>>> = Object.freeze(Object.create(null))

/** Query string → record; `name[]` collects arrays, a repeated plain name is an array too (and fails its schema). */
const queryRecord = (search: string): Record<string, string | Array<string>> => {
  // No prototype: a parameter named `__proto__` is a name like any other (and unknown).
  const out: Record<string, string | Array<string>> = Object.create(null)
  for (const [name, value] of new URLSearchParams(search)) {
    const existing = out[name]
    if (name.endsWith("[]")) out[name] = [...((existing as Array<string> | undefined) ?? []), value]
    else out[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value]
  }
  return out
}

/** Decode with the contract's strictness: unknown names and each problem itemized. */
export const decodeStrict = <S extends Schema.Schema.AnyNoContext>(
  schema: S,
  input: unknown,
  location: "field" | "parameter"
): Either.Either<Schema.Schema.Type<S>, ApiError> => {
  // Text no store can keep (core's `records/text.ts`): refused wherever it is, with the rest.
  const unstorable: Array<DetailItem> = unstorableTextPaths(input as Json).map((path) =>
    location === "field"
      ? { field: path, code: "invalid_value", reason: "invalid_characters" }
      : { parameter: path.replace(/\[\d+\]$/, ""), code: "invalid_value", reason: "invalid_characters" }
  )
  const result = Schema.decodeUnknownEither(schema)(input, strict)
  if (Either.isRight(result) && unstorable.length === 0) return Either.right(result.right)
  const named = (d: DetailItem) => ({
    ...d,
    ...(d.field === undefined ? {} : { field: storableForm(d.field) }),
    ...(d.parameter === undefined ? {} : { parameter: storableForm(d.parameter) })
  })
  const decoded = Either.isLeft(result) ? detailsOf(result.left, location).map(named) : []
  const unknownCode = location === "field" ? "unknown_field" : "unknown_parameter"
  const unknown = decoded.filter((d) => d.code === unknownCode)
  if (location === "parameter" && unknown.length > 0) return Either.left(apiError("unknown_parameter", { details: unknown }))
  const places = new Set(unstorable.map((d) => d.field ?? d.parameter))
  const details = [...unstorable, ...decoded.filter((d) => !places.has(d.field ?? d.parameter))]
  // A problem of one kind that has its own code names the error (§7 `unknown_field`, §8.2
  // `too_many_items`); mixed problems are a `validation_failed` listing each.
  const kinds = new Set(details.map((d) => d.code))
  const [only] = kinds
  if (kinds.size === 1 && (only === "unknown_field" || only === "too_many_items")) return Either.left(apiError(only, { details }))
  return Either.left(apiError("validation_failed", { details }))
}

/** What `If-Match` names: nothing (absent or `*`), or a revision of a record. */
type Expected = { readonly revision: number; readonly id: string } | undefined

/** `id`: the ID the ETag must name; `undefined` when the handler checks it (`ifMatchNamesRecord`). */
const parseIfMatch = (values: ReadonlyArray<string>, type: string, id: string | undefined): Either.Either<Expected, ApiError> => {
  if (values.length === 0) return Either.right(undefined)
  const joined = values.join(",")
  if (joined === "*") return Either.right(undefined)
  const match = ifMatchPattern.exec(joined)
  if (!match) return Either.left(apiError("if_match_invalid", { details: [{ parameter: "If-Match", code: "if_match_invalid" }] }))
  if (match[1] !== type || (id !== undefined && match[2] !== id)) return Either.left(apiError("revision_mismatch"))
  return Either.right({ revision: Number(match[3]), id: match[2]! })
}

const replyToRecorded = (reply: Reply): RecordedResponse => ({
  status: reply.status,
  headers: { ...reply.headers, ...(reply.showsSecretOnce ? { [NOT_REPLAYABLE_HEADER]: "secret" } : {}) },
  // A shown-once secret is never kept, not even in a receipt.
  body: reply.showsSecretOnce ? null : reply.body
})

const isWrite = (method: string) => method !== "GET" && method !== "HEAD"

/** An app answering paths outside `/api/v3` (the OAuth server of §5.2); `undefined` for "not mine". */
export type OutsideApp = (
  request: HttpServerRequest
) => Effect.Effect<HttpServerResponse.HttpServerResponse | undefined, never, AppServices>

export const makeApp = (operations: ReadonlyArray<Operation>, outsideApp?: OutsideApp) => {
  const route = makeRouter(operations)
  /** The request log of this app's calls, in group commits (trail/audit.ts). */
  const logRequest = makeRequestLogWriter()

  /**
   * Where a request under `/api/v3` goes: its path (without the query) and its query, and the
   * route it matches. The query is all after the first `?`: a `?` may appear in it (RFC 3986
   * §3.4). HEAD is answered as GET without its body (RFC 9110 §9.3.2), on every GET route.
   */
  const locate = (request: HttpServerRequest) => {
    const queryAt = request.url.indexOf("?")
    const rawPath = queryAt === -1 ? request.url : request.url.slice(0, queryAt)
    const search = queryAt === -1 ? "" : request.url.slice(queryAt + 1)
    const path = rawPath.slice(API_PREFIX.length) || "/"
    return { rawPath, search, path, match: route(request.method === "HEAD" ? "GET" : request.method, path) }
  }
  type Target = ReturnType<typeof locate>

  /**
   * The bound of a request: `requestDeadlineMs`, or `uploadRequestDeadlineMs` for the operations
   * that stream a body or talk to file storage (a raw body, or a handler owning its units of work).
   */
  const deadlineOf = (target: Target | undefined, settings: ServerSettingsShape): number => {
    const bound = settings.requestDeadlineMs ?? defaultDeadlines.requestDeadlineMs
    const match = target?.match
    const long = match?._tag === "Found" && (match.operation.rawBody !== undefined || match.operation.unitOfWork === "handler")
    if (!long) return bound
    // Unless set, it stays a minute above a part's body deadline (the wire's `partBodyTimeoutMs`).
    return settings.uploadRequestDeadlineMs ??
      Math.max(defaultDeadlines.uploadRequestDeadlineMs, (settings.partBodyTimeoutMs ?? 0) + 60_000)
  }

  /** Steps 2 to 9 of a request; the answer, or the failure to put in the envelope. */
  const serve = (request: HttpServerRequest, state: RequestState, { match, path, rawPath, search }: Target) =>
    Effect.gen(function* () {
      const settings = yield* ServerSettings
      const rateConfig = yield* RateLimitConfig
      const decisions: Array<RateDecision> = []
      const setRateHeaders = () => {
        const lines = decisions.flatMap((d) => d.lines)
        const tightest = decisions
          .map((d) => ({ d, line: d.tightest }))
          .filter((x) => x.line !== undefined)
          .sort((a, b) => a.line!.remaining - b.line!.remaining)[0]
        if (tightest && lines.length > 0) Object.assign(state.headers, rateLimitHeaders(tightest.d))
      }

      // 1. X-Client-Request-Id is checked and echoed.
      const clientIds = headerValues(request, "x-client-request-id")
      if (clientIds.length > 0) {
        const [value] = clientIds
        if (clientIds.length > 1 || value === undefined || !clientRequestIdPattern.test(value)) {
          return yield* Effect.fail(
            apiError("validation_failed", { details: [{ parameter: "X-Client-Request-Id", code: "invalid_value" }] })
          )
        }
        state.clientRequestId = value
        state.headers["x-client-request-id"] = value
      }

      // 2. Origin rate limit, before anything is looked up.
      if (rateConfig.enabled) {
        decisions.push(
          yield* admit([{ scope: "origin", key: `origin:${originOf(request)}`, limit: rateConfig.limits.origin }])
        )
      }

      // 4. The route (looked up with the deadline), first: a part upload streams its body to
      // storage after authentication instead of having it read here, and an event stream
      // negotiates its own media type.
      if (match._tag === "NotFound") return yield* Effect.fail(apiError("operation_not_catalogued"))
      if (match._tag === "MethodNotAllowed") {
        return yield* Effect.fail(
          apiError("method_not_allowed", { params: { allowed: match.allowed.join(", ") }, headers: { allow: match.allowed.join(", ") } })
        )
      }
      const operation = match.operation
      state.operation = operation

      // 3. Content negotiation: JSON, or what the operation produces instead.
      // A download answers the file's own type, whatever `Accept` says (as S3 and GCS do).
      if (operation.download !== true && !accepts(request.headers["accept"], operation.produces ?? "application/json")) {
        return yield* Effect.fail(apiError("not_acceptable"))
      }

      // The operation's deprecation, or that of a deprecated query parameter sent (deprecations.ts).
      // The query's parameters, parsed once (none without a query).
      const parameters = search === "" ? noParameters : queryRecord(search)
      const deprecation = deprecationOf(settings, operation.id, Object.keys(parameters))
      if (deprecation) {
        Object.assign(state.headers, deprecationHeaders(settings, deprecation))
        if ((yield* Clock.currentTimeMillis) >= deprecation.sunsetAt) return yield* Effect.fail(apiError("operation_sunset"))
      }

      // 3. Content-Type, from the headers alone: JSON, or the raw type the operation streams.
      const contentType = request.headers["content-type"]
      // The message names the type this operation takes.
      const expectedType = { params: { expected: operation.rawBody ?? "application/json" } }
      if (operation.rawBody) {
        if (contentType?.split(";")[0]?.trim().toLowerCase() !== operation.rawBody) {
          return yield* Effect.fail(apiError("unsupported_media_type", expectedType))
        }
      } else if ((contentType !== undefined || hasBody(request)) && !isJsonContentType(contentType ?? "")) {
        return yield* Effect.fail(apiError("unsupported_media_type", expectedType))
      }

      // 5. The credential, in autonomous or human mode, and its account. No body has been read:
      // a client without a valid credential gets its 401 (or its 429) without the server holding one.
      const caller = yield* authenticate(
        { authorization: headerValues(request, "authorization"), apiKey: headerValues(request, "x-api-key") },
        state.requestId
      )
      state.caller = caller

      // 6. Account and credential limits, permission, scope.
      if (rateConfig.enabled) {
        const env = caller.tenant.environment
        decisions.push(
          yield* admit([
            { scope: "instance", key: `instance:${caller.tenant.accountId}:${env}`, limit: rateConfig.limits.account[env] },
            {
              scope: "key",
              key: `key:${caller.credential.id}`,
              limit: Math.min(rateConfig.limits.credential[env], rateConfig.limits.account[env])
            }
          ])
        )
        setRateHeaders()
      }
      if (operation.sandboxOnly && caller.tenant.environment !== "sandbox") return yield* Effect.fail(apiError("sandbox_only"))
      if (operation.capability !== "authenticated") {
        const held = caller.grant.get(operation.capability)
        if (held === undefined) {
          return yield* Effect.fail(apiError("permission_denied", { params: { capability: operation.capability } }))
        }
        const scoped = operation.scopedBy === undefined ? undefined : match.params[operation.scopedBy]
        if (held !== "all" && scoped !== undefined && !held.has(scoped)) return yield* Effect.fail(apiError("not_found"))
      }

      // Only now the body: JSON under the 1 MiB cap and the body deadline, or raw bytes left for
      // the operation to stream (under the longer deadline of a part).
      let bytes: Uint8Array | undefined
      let body: { readonly [key: string]: Json } | undefined
      if (!operation.rawBody) {
        bytes = yield* readBody(request, settings.bodyTimeoutMs)
        body = bytes === undefined ? undefined : yield* parseJsonBody(bytes)
      }

      // 7. Path, query and body.
      for (const [name, kind] of Object.entries(operation.params ?? {})) {
        const value = match.params[name]
        if (value === undefined || !isPublicIdOf(kind, value)) return yield* Effect.fail(apiError("not_found"))
      }
      const query = operation.query
        ? yield* decodeStrict(operation.query, parameters, "parameter")
        : yield* noQuery(parameters)
      const input = operation.body
        ? yield* decodeStrict(operation.body, body ?? {}, "field")
        : yield* noBody(body)

      // 8. Idempotency-Key and If-Match.
      const key = yield* checkIdempotencyKey(operation.idempotency, headerValues(request, "idempotency-key"))
      state.idempotencyKey = key ?? null
      // If-Match only means something on operations that write a revisioned resource; elsewhere it is ignored.
      // The ETag names the resource of the path: its last parameter.
      const resourceId = operation.ifMatchNamesRecord ? undefined : (operation.ifMatchId ?? Object.values(match.params).at(-1))
      const expected =
        operation.ifMatch === undefined
          ? undefined
          : yield* parseIfMatch(headerValues(request, "if-match"), operation.ifMatch, resourceId)

      // HEAD of a streamed answer (an event stream's connection) does not open it: that would take
      // the stream's one-connection lease and move its cursor. The resource it streams is read
      // instead (a missing one is 404 as for GET), and the stream's headers answered.
      if (request.method === "HEAD" && operation.produces !== undefined) {
        const owner = route("GET", path.replace(/\/[^/]+\/?$/, ""))
        if (owner._tag === "Found") {
          yield* owner.operation
            .handler({ path: owner.params, query: {}, body: {}, expectedRevision: undefined, raw: Stream.empty, headers: request.headers })
            .pipe(Effect.provideService(Caller, caller))
        }
        return { status: 200, body: null, headers: { "content-type": operation.produces, "cache-control": "no-store" } } satisfies Reply
      }

      // 9. The use case: a write, its audit entry and its idempotency result in one unit of work.
      const handle = operation
        // The raw body stream is built only if the handler runs it (part uploads do).
        .handler({
          path: match.params,
          query,
          body: input,
          expectedRevision: expected?.revision,
          expectedRecordId: operation.ifMatchNamesRecord ? expected?.id : undefined,
          raw: Stream.suspend(() => bodyStream(request, settings.partBodyTimeoutMs)),
          headers: request.headers
        })
        .pipe(Effect.provideService(Caller, caller))
      if (!isWrite(operation.method)) return yield* handle
      // A handler that owns its units of work (it also talks to file storage, which no
      // transaction covers) runs as it is; any other write runs in one unit of work.
      const ownsUnitOfWork = operation.unitOfWork === "handler" || operation.rawBody !== undefined
      const uow = yield* UnitOfWork
      const atomically = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        ownsUnitOfWork ? effect : uow.transaction(effect).pipe(Effect.mapError(asApiError))
      const signals = yield* Effect.serviceOption(ChangeSignals)
      /** The write committed: its events may wake the tenant's open event streams in this process. */
      const markCommitted = Effect.suspend(() => {
        state.committed = true
        return Option.isSome(signals) ? signals.value.committed(caller.tenant) : Effect.void
      })
      if (key === undefined) {
        const reply = yield* atomically(handle)
        yield* markCommitted
        return reply
      }
      let executed: Reply | undefined
      const outcome = yield* runIdempotent(
        caller.tenant,
        key,
        {
          operationId: operation.id,
          path: rawPath,
          query: search,
          body: bytes === undefined ? "" : Buffer.from(bytes).toString("utf8"),
          atomic: !ownsUnitOfWork
        },
        (complete) =>
          atomically(
            Effect.gen(function* () {
              const reply = yield* handle
              executed = reply
              const recorded = replyToRecorded(reply)
              yield* complete(recorded)
              return recorded
            })
          )
      )
      yield* markCommitted
      if (outcome._tag === "Executed" && executed) return executed
      state.replayed = true
      const recorded = outcome.response
      return { status: recorded.status, body: recorded.body, headers: recorded.headers } satisfies Reply
    })

  return Effect.gen(function* () {
    const request = yield* HttpServerRequest
    const ids = yield* Ids
    const state: RequestState = {
      requestId: yield* ids.next("request"),
      startedAt: yield* Clock.currentTimeMillis,
      clientRequestId: null,
      caller: undefined,
      operation: undefined,
      idempotencyKey: null,
      replayed: false,
      committed: false,
      headers: {}
    }
    const language = negotiateLanguage(request.headers["accept-language"])
    const { accessLog } = yield* ServerSettings
    /** The access log's line (`access-log.ts`), once the status is known. */
    const writeAccessLog = (status: number, errorCode: string | null) =>
      accessLog === undefined
        ? Effect.void
        : Effect.map(Clock.currentTimeMillis, (now) =>
          accessLog({
            time: formatTimestamp(state.startedAt),
            level: "info",
            msg: "request",
            request_id: state.requestId,
            method: request.method,
            path: request.url.split("?", 1)[0] ?? "",
            operation_id: state.operation?.id ?? null,
            status,
            error_code: errorCode,
            duration_ms: now - state.startedAt,
            credential_id: state.caller?.credential.id ?? null,
            account_id: state.caller?.tenant.accountId ?? null,
            environment: state.caller?.tenant.environment ?? null,
            administrator_id: state.caller?.human?.adminId ?? null,
            client_request_id: state.clientRequestId
          })
        )

    const outside = !request.url.startsWith(API_PREFIX + "/") && request.url !== API_PREFIX
    // The request's deadline: past it, 503 as for a store that does not answer (for an
    // authenticated write, its audit entry could not be recorded), and what the request was
    // doing is interrupted in the background (an open unit of work rolls back).
    const target = outside ? undefined : locate(request)
    const deadlineMs = deadlineOf(target, yield* ServerSettings)
    const deadlineExceeded = (): ApiError => {
      const cause = new Error(`request deadline of ${deadlineMs} ms exceeded`)
      return state.caller !== undefined && isWrite(request.method) ? writeUnavailable(cause) : readUnavailable(cause)
    }
    let outsideFailure: ApiError | undefined
    if (outside && outsideApp) {
      const answered = yield* Effect.either(within(outsideApp(request), deadlineMs, deadlineExceeded))
      if (Either.isRight(answered) && answered.right) {
        yield* writeAccessLog(answered.right.status, null)
        return answered.right
      }
      if (Either.isLeft(answered)) outsideFailure = answered.left
    }

    /** The answer of a result; a failure in the envelope (and in the error log if it is ours). */
    const answerOf = (result: Either.Either<Reply, ApiError>): Effect.Effect<Answer> => {
      if (Either.isRight(result)) {
        const { body, headers, status, stream } = result.right
        return Effect.succeed({ status, body, headers: headers ?? {}, stream, errorCode: null })
      }
      const error = result.left
      const answer: Answer = {
        status: error.status,
        body: errorBody(error, state.requestId, language),
        headers: { ...error.headers, ...languageHeaders(language) },
        stream: undefined,
        errorCode: error.code
      }
      // A 503 for an unknown route is the client's doing, not an outage worth an error line.
      return error.status >= 500 && error.code !== "operation_not_catalogued"
        ? Effect.as(Effect.logError("request failed", error.code, error.internal), answer)
        : Effect.succeed(answer)
    }
    /** The request log's entry of an authenticated call. */
    const entryOf = (caller: CallerInfo, answer: Answer, now: number) => ({
      object: "request" as const,
      id: state.requestId,
      method: request.method,
      path: request.url.split("?")[0] ?? request.url,
      operation_id: state.operation?.id ?? null,
      status: answer.status,
      outcome: outcomeOf(answer.status),
      error_code: answer.errorCode,
      credential_id: caller.credential.id,
      administrator_id: caller.human?.adminId ?? null,
      client_request_id: state.clientRequestId,
      idempotency_key: state.idempotencyKey,
      idempotent_replayed: state.replayed,
      duration_ms: now - state.startedAt,
      environment: caller.tenant.environment,
      created_at: formatTimestamp(state.startedAt)
    })
    /**
     * The answer after a request log that could not be written: a read whose log cannot be
     * written fails closed; a committed write keeps its result (the log must not hide it).
     */
    const unlogged = (answer: Answer, failure: ApiError): Effect.Effect<Answer> =>
      Effect.as(
        Effect.logError("request log unavailable", failure.internal),
        state.committed
          ? answer
          : { status: failure.status, body: errorBody(failure, state.requestId, language), headers: languageHeaders(language), stream: undefined, errorCode: failure.code }
      )

    // Steps 2 to 9, then the request log's entry: one piece of work under the deadline (one
    // fiber for both, which is what a request's bound costs). `served` is its answer before the log.
    let served: Answer | undefined
    const work = Effect.gen(function* () {
      const answer = served = yield* answerOf(yield* Effect.either(serve(request, state, target!)))
      if (state.caller === undefined) return answer
      const logged = yield* Effect.either(logRequest(state.caller.tenant, entryOf(state.caller, answer, yield* Clock.currentTimeMillis)))
      return Either.isRight(logged) ? answer : yield* unlogged(answer, logged.left)
    })
    const finished = outsideFailure !== undefined
      ? Either.left(outsideFailure)
      : outside
      ? Either.left(apiError("not_found"))
      : yield* Effect.either(within(work, deadlineMs, (): ApiError | undefined => undefined))
    let answer: Answer
    if (Either.isRight(finished)) answer = finished.right
    else if (finished.left !== undefined) answer = yield* answerOf(Either.left(finished.left))
    else if (served !== undefined) {
      // Past the deadline while its entry was being written.
      answer = yield* unlogged(served, writeUnavailable(new Error(`request deadline of ${deadlineMs} ms exceeded by the request log`)))
    } else {
      // Past the deadline in the request: a 503, whose entry is written in the background when the store answers.
      answer = yield* answerOf(Either.left(deadlineExceeded()))
      const caller = state.caller
      if (caller !== undefined) {
        const timedOut = answer
        yield* Effect.forkDaemon(Effect.ignore(Effect.flatMap(Clock.currentTimeMillis, (now) =>
          logRequest(caller.tenant, entryOf(caller, timedOut, now)))))
      }
    }
    const { body, errorCode, headers: extraHeaders, status, stream } = answer

    yield* writeAccessLog(status, errorCode)
    const headers: Record<string, string> = {
      ...state.headers,
      // The answer's own headers win: a 429 carries the figures of the scope that refused it.
      ...withoutInternal(extraHeaders),
      "x-request-id": state.requestId,
      "x-service-release": RELEASE,
      ...(state.replayed ? { "idempotent-replayed": "true" } : {})
    }
    if (stream !== undefined && status < 300) {
      // A download's reply sets its own type, length and caching; an event stream is never cached.
      const download = state.operation?.download === true
      const streamed = download ? headers : { ...headers, "cache-control": "no-store" }
      // HEAD: the headers GET would have (`Content-Length` included), and the stream is never run.
      if (request.method === "HEAD") return HttpServerResponse.empty({ status, headers: streamed })
      const contentType = (download ? headers["content-type"] : undefined) ?? state.operation?.produces ?? "application/octet-stream"
      return HttpServerResponse.stream(closingOnFailure(request, stream), { status, headers: streamed, contentType })
    }
    if (request.method === "HEAD") return headResponse(status, headers, body)
    if (body === null) return HttpServerResponse.empty({ status, headers })
    return HttpServerResponse.text(JSON.stringify(body), { status, headers, contentType: "application/json" })
  })
}

/** An answer's headers without those for the pipeline alone (a recorded reply's marks). */
const withoutInternal = (headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> => {
  if (!(NOT_REPLAYABLE_HEADER in headers)) return headers
  const { [NOT_REPLAYABLE_HEADER]: _, ...rest } = headers
  return rest
}

/**
 * The answer to HEAD: the status and headers GET would have, `Content-Length` included, and no
 * body (a streamed answer is never started: see `serve`).
 */
const headResponse = (status: number, headers: Record<string, string>, body: Json | null): HttpServerResponse.HttpServerResponse => {
  if (body === null) return HttpServerResponse.empty({ status, headers })
  const length = Buffer.byteLength(JSON.stringify(body), "utf8")
  return HttpServerResponse.empty({ status, headers: { ...headers, "content-type": "application/json", "content-length": String(length) } })
}

/**
 * A streamed answer that fails after its headers went out (file storage lost mid-read) cannot
 * say so any more: the connection is closed, so that the client sees a short body (fewer bytes
 * than `Content-Length`) instead of a reply that looks whole, and the failure is logged.
 */
const closingOnFailure = (request: HttpServerRequest, stream: Stream.Stream<Uint8Array, ApiError>) =>
  Stream.tapErrorCause(stream, (cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.void
      : Effect.zipRight(
        Effect.logError("streamed answer failed", cause),
        Effect.sync(() => (request.source as { socket?: { destroy?: () => void } } | undefined)?.socket?.destroy?.())
      ))

const asApiError = (error: unknown): ApiError =>
  typeof error === "object" && error !== null && (error as { _tag?: string })._tag === "ApiError"
    ? (error as ApiError)
    : apiError("audit_unavailable", { internal: error })

const noQuery = (parameters: Readonly<Record<string, unknown>>): Either.Either<Record<string, never>, ApiError> => {
  const names = Object.keys(parameters)
  if (names.length === 0) return Either.right({})
  const details: Array<DetailItem> = names.map((parameter) => ({ parameter: storableForm(parameter), code: "unknown_parameter" }))
  return Either.left(apiError("unknown_parameter", { details }))
}

const noBody = (body: { readonly [key: string]: Json } | undefined): Either.Either<Record<string, never>, ApiError> => {
  const names = Object.keys(body ?? {})
  if (names.length === 0) return Either.right({})
  return Either.left(apiError("unknown_field", { details: names.map((field) => ({ field: storableForm(field), code: "unknown_field" })) }))
}
