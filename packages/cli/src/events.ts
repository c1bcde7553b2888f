/**
 * Following the account's events as they happen: an event stream of the API (§6,
 * open-points "Event streams (SSE)") made for the run, with the filters asked, read over its
 * Server-Sent Events connection and removed when the run ends. `events tail` prints them;
 * `listen` forwards them to a local endpoint signed as webhooks are (Standard Webhooks).
 */
import { Clock, Effect, Option, Schema } from "effect"
import { createHmac, randomBytes } from "node:crypto"
import { newIdempotencyKey } from "./call.js"
import { CliError, err, out } from "./context.js"
import { api, openStream, send } from "./http.js"

// ---------------------------------------------------------------------------------------
// Server-Sent Events

export interface SseMessage {
  readonly id: string | undefined
  readonly event: string | undefined
  readonly data: string
}

/**
 * Split the text received so far into complete messages (blocks ended by a blank line);
 * answers the messages and the unfinished rest. Comments (`: keep-alive`) are dropped.
 */
export const parseSse = (buffer: string): { readonly messages: ReadonlyArray<SseMessage>; readonly rest: string } => {
  const normalized = buffer.replace(/\r\n?/g, "\n")
  const blocks = normalized.split("\n\n")
  const rest = blocks.pop() ?? ""
  const messages: Array<SseMessage> = []
  for (const block of blocks) {
    let id: string | undefined
    let event: string | undefined
    const data: Array<string> = []
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue
      const colon = line.indexOf(":")
      const name = colon === -1 ? line : line.slice(0, colon)
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
      if (name === "id") id = value
      else if (name === "event") event = value
      else if (name === "data") data.push(value)
    }
    if (data.length > 0) messages.push({ id, event, data: data.join("\n") })
  }
  return { messages, rest }
}

// ---------------------------------------------------------------------------------------
// The run's event stream

export interface EventFilters {
  /** Event types, each exact (`product.created`) or a pattern (`product.*`, `*.deleted`). */
  readonly types: ReadonlyArray<string>
  readonly resourceTypes: ReadonlyArray<string>
}

const EventTypes = Schema.Struct({ data: Schema.Array(Schema.Struct({ type: Schema.String })) })
const Created = Schema.Struct({ data: Schema.Struct({ id: Schema.String }) })

const patternToRegExp = (pattern: string) =>
  new RegExp(`^${pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`)

/**
 * The exact types the stream filters on: patterns are expanded over `GET /event-types`
 * (the server's filter takes exact names). A pattern matching no type is an error.
 */
const expandTypes = (types: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    // `*` alone is every type: no filter at all.
    if (types.includes("*")) return []
    if (!types.some((type) => type.includes("*"))) return [...new Set(types)]
    const catalog = yield* Effect.flatMap(api("GET", "/event-types"), (body) =>
      Schema.decodeUnknown(EventTypes)(body).pipe(
        Effect.mapError(() => new CliError({ code: "unexpected_response", message: "the server answered an unexpected body for /event-types" }))
      )
    )
    const known = catalog.data.map((entry) => entry.type)
    const expanded = new Set<string>()
    for (const type of types) {
      if (!type.includes("*")) {
        expanded.add(type)
        continue
      }
      const matching = known.filter((name) => patternToRegExp(type).test(name))
      if (matching.length === 0) {
        return yield* Effect.fail(new CliError({ code: "unknown_event_type", message: `no event type matches ${type} (see GET /event-types)` }))
      }
      for (const name of matching) expanded.add(name)
    }
    return [...expanded]
  })

/** A stream for this run, starting now, deleted when the scope closes (streams are limited to 5 per credential). */
const runStream = (filters: EventFilters) =>
  Effect.gen(function* () {
    const eventTypes = yield* expandTypes(filters.types)
    const body = {
      start: "now",
      filters: {
        ...(eventTypes.length > 0 ? { event_types: eventTypes } : {}),
        ...(filters.resourceTypes.length > 0 ? { resource_types: [...filters.resourceTypes] } : {})
      }
    }
    const created = yield* Effect.flatMap(
      api("POST", "/event-streams", { body, headers: { "idempotency-key": newIdempotencyKey() } }),
      (answer) =>
        Schema.decodeUnknown(Created)(answer).pipe(
          Effect.mapError(() => new CliError({ code: "unexpected_response", message: "the server answered an unexpected body for the new stream" }))
        )
    )
    const id = created.data.id
    yield* Effect.addFinalizer(() => api("DELETE", `/event-streams/${id}`).pipe(Effect.ignore))
    return id
  })

type OnEvent<R> = (message: SseMessage, event: unknown) => Effect.Effect<void, CliError, R>

/**
 * Read the connection of stream `id` until it ends, calling `onEvent` with each event and its
 * parsed envelope; `onOpen` once connected. Answers the last event ID seen.
 */
const readConnection = <R>(id: string, lastEventId: Option.Option<string>, onOpen: Effect.Effect<void, never, R>, onEvent: OnEvent<R>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const response = yield* openStream(
        `/event-streams/${id}/events`,
        Option.match(lastEventId, { onNone: () => ({}), onSome: (last) => ({ "last-event-id": last }) })
      )
      yield* onOpen
      const reader = response.body!.getReader()
      const decoder = new TextDecoder()
      let buffer = ""
      let last = lastEventId
      for (;;) {
        const chunk = yield* Effect.tryPromise({
          try: () => reader.read(),
          catch: (cause) => new CliError({ code: "network_error", message: `the event stream broke: ${cause instanceof Error ? cause.message : String(cause)}` })
        })
        if (chunk.done) return last
        const { messages, rest } = parseSse(buffer + decoder.decode(chunk.value, { stream: true }))
        buffer = rest
        for (const message of messages) {
          const event = yield* Effect.try({
            try: () => JSON.parse(message.data) as unknown,
            catch: () => new CliError({ code: "unexpected_response", message: "an event of the stream is not JSON" })
          })
          if (message.id !== undefined) last = Option.some(message.id)
          yield* onEvent(message, event)
        }
      }
    })
  )

/**
 * Follow the events matching `filters` from now on until interrupted: a stream made for the
 * run (deleted at the end), reconnected after its last event when the server ends the
 * connection. `ready` runs once, when the first connection is open.
 */
export const followEvents = <R>(filters: EventFilters, ready: Effect.Effect<void, never, R>, onEvent: OnEvent<R>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const id = yield* runStream(filters)
      let last = yield* readConnection(id, Option.none(), ready, onEvent)
      for (;;) {
        yield* Effect.sleep("1 second")
        last = yield* readConnection(id, last, Effect.void, onEvent)
      }
    })
  )

// ---------------------------------------------------------------------------------------
// Forwarding as a webhook (Standard Webhooks)

/** A new signing secret: `whsec_` and the base64 of 24 random bytes, as the API's webhooks have. */
export const newSigningSecret = () => `whsec_${randomBytes(24).toString("base64")}`

/** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed with the secret's base64-decoded part. */
export const signature = (secret: string, id: string, timestamp: number, body: string) =>
  `v1,${createHmac("sha256", Buffer.from(secret.replace(/^whsec_/, ""), "base64")).update(`${id}.${timestamp}.${body}`).digest("base64")}`

/** POST one event to `url` as a webhook delivery; answers the receiver's status. */
export const forward = (url: string, secret: string, id: string, body: string, timeoutMs: number) =>
  Effect.gen(function* () {
    const timestamp = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const result = yield* send(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "syllabus-cli (listen)",
        "webhook-id": id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signature(secret, id, timestamp, body)
      },
      body
    }).pipe(
      Effect.timeoutFail({ duration: `${timeoutMs} millis`, onTimeout: () => new CliError({ code: "timeout", message: `no answer within ${timeoutMs} ms` }) })
    )
    return result.status
  })

// ---------------------------------------------------------------------------------------
// The commands: `events tail` and `listen`

const Envelope = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  created_at: Schema.String,
  data: Schema.Struct({ object: Schema.Struct({ id: Schema.optional(Schema.String) }) })
})

/** `created_at  id  type  resource id`, or the JSON of an event of another shape. */
const eventLine = (event: unknown) =>
  Schema.decodeUnknownOption(Envelope)(event).pipe(
    Option.map((e) => `${e.created_at}  ${e.id}  ${e.type}  ${e.data.object.id ?? "-"}\n`),
    Option.getOrElse(() => `${JSON.stringify(event)}\n`)
  )

/** `events tail`: one line per event (or its JSON), until interrupted. */
export const tailEvents = (filters: EventFilters, json: boolean) =>
  followEvents(filters, err("Waiting for events (Ctrl-C to stop)…\n"), (message, event) => out(json ? `${message.data}\n` : eventLine(event)))

export interface ListenOptions {
  readonly forwardTo: string
  readonly timeoutMs: number
  /** The signing secret to use, else a new one. */
  readonly secret: Option.Option<string>
}

/** `listen --forward-to URL`: each event POSTed to the URL as a signed webhook request, until interrupted. */
export const listenEvents = (filters: EventFilters, options: ListenOptions) =>
  Effect.gen(function* () {
    const { forwardTo, timeoutMs } = options
    if (!/^https?:\/\/[^/]/.test(forwardTo)) {
      return yield* Effect.fail(new CliError({ code: "invalid_forward_url", message: "--forward-to must be an http(s) URL" }))
    }
    if (Option.isSome(options.secret) && !/^whsec_[A-Za-z0-9+/]{16,}={0,2}$/.test(options.secret.value)) {
      return yield* Effect.fail(new CliError({ code: "invalid_secret", message: "--secret must be whsec_ followed by base64 (at least 12 bytes)" }))
    }
    const secret = Option.getOrElse(options.secret, newSigningSecret)
    yield* followEvents(
      filters,
      err(`Ready. Your webhook signing secret is ${secret} (Standard Webhooks).\nForwarding events to ${forwardTo} (Ctrl-C to stop)…\n`),
      (message, event) =>
        Effect.gen(function* () {
          const line = eventLine(event).trimEnd()
          const id = message.id ?? String((event as { id?: unknown }).id)
          const status = yield* forward(forwardTo, secret, id, message.data, timeoutMs).pipe(
            Effect.map((status) => `[${status}]`),
            Effect.catchAll((error) => Effect.succeed(`[${error.code}: ${error.message}]`))
          )
          yield* out(`${line}  --> POST ${forwardTo} ${status}\n`)
        })
    )
  })
