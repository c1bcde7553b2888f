/**
 * Event streams (§2.3 `event_stream`, §4.3 `POST /event-streams`, §5.4, §6, §8.2,
 * open-points "Event streams (SSE)"): the streams themselves, and their Server-Sent Events
 * connection, read both with a standard `EventSource` client and as raw bytes.
 */
import { EventSource } from "eventsource"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { eachStore, type Harness, startHarness } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const KEEP_ALIVE_MS = 400
const DAY = 24 * 3600 * 1000

interface SseMessage {
  readonly id: string | undefined
  readonly event: string | undefined
  readonly data: string
}

interface Connection {
  readonly status: number
  readonly headers: Headers
  /** The JSON error body, when the connection was refused. */
  readonly body: any
  readonly messages: Array<SseMessage>
  readonly comments: Array<string>
  /** Everything received, as text. */
  raw(): string
  ended(): boolean
  close(): void
}

const open: Array<{ close(): void }> = []

const waitFor = async (what: string, predicate: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> => {
  const until = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** Parse complete SSE blocks out of `buffer`; answers what is left. */
const parseBlocks = (buffer: string, messages: Array<SseMessage>, comments: Array<string>): string => {
  let rest = buffer
  for (let end = rest.indexOf("\n\n"); end >= 0; end = rest.indexOf("\n\n")) {
    const lines = rest.slice(0, end).split("\n")
    rest = rest.slice(end + 2)
    if (lines.every((line) => line.startsWith(":"))) {
      comments.push(...lines)
      continue
    }
    const field = (name: string) => lines.filter((l) => l.startsWith(`${name}: `)).map((l) => l.slice(name.length + 2))
    messages.push({ id: field("id")[0], event: field("event")[0], data: field("data").join("\n") })
  }
  return rest
}

/** A raw connection with `fetch`, read in the background. */
const connect = async (
  h: Harness,
  streamId: string,
  options: { secret?: string; lastEventId?: string; accept?: string } = {}
): Promise<Connection> => {
  const abort = new AbortController()
  const res = await fetch(`${h.baseUrl}/api/v3/event-streams/${streamId}/events`, {
    headers: {
      authorization: `Bearer ${options.secret ?? h.live}`,
      accept: options.accept ?? "text/event-stream",
      ...(options.lastEventId !== undefined ? { "last-event-id": options.lastEventId } : {})
    },
    signal: abort.signal
  })
  const messages: Array<SseMessage> = []
  const comments: Array<string> = []
  let text = ""
  let ended = false
  const close = () => abort.abort()
  if (res.status !== 200) {
    const body = await res.json()
    return { status: res.status, headers: res.headers, body, messages, comments, raw: () => text, ended: () => true, close }
  }
  open.push({ close })
  void (async () => {
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let buffer = ""
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        const chunk = decoder.decode(value, { stream: true })
        text += chunk
        buffer = parseBlocks(buffer + chunk, messages, comments)
      }
    } catch {
      // aborted by the test
    }
    ended = true
  })()
  return { status: res.status, headers: res.headers, body: undefined, messages, comments, raw: () => text, ended: () => ended, close }
}

/** A standard `EventSource` client, authorized through its `fetch` option, listening to `types`. */
const eventSource = (h: Harness, streamId: string, types: ReadonlyArray<string>, secret = h.live) => {
  const received: Array<{ type: string; id: string; data: any }> = []
  const source = new EventSource(`${h.baseUrl}/api/v3/event-streams/${streamId}/events`, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, authorization: `Bearer ${secret}` } })
  })
  let opened = false
  source.onopen = () => {
    opened = true
  }
  for (const type of types) {
    source.addEventListener(type, (event) => received.push({ type: event.type, id: event.lastEventId, data: JSON.parse(event.data) }))
  }
  open.push(source)
  return { source, received, opened: () => opened }
}

const createStream = (h: Harness, json: unknown = {}, secret = h.live) =>
  h.request("POST", "/api/v3/event-streams", { secret, json })

const newShowcase = async (h: Harness, name: string, secret = h.live) => {
  const res = await h.request("POST", "/api/v3/showcases", { secret, json: { name } })
  expect(res.status).toBe(201)
  return res.body.data as { id: string }
}

const eventsOf = async (h: Harness, resourceId: string, secret = h.live) =>
  (await h.request("GET", `/api/v3/events?resource_id=${resourceId}&sort=created_at`, { secret })).body.data as Array<any>

const newCredential = async (h: Harness, name: string, capabilities: ReadonlyArray<string> = ["events.read"], secret = h.live) => {
  const res = await h.request("POST", "/api/v3/credentials", { secret, json: { name, policies: [{ capabilities }] } })
  expect(res.status).toBe(201)
  return { id: res.body.data.id as string, secret: res.body.data.secret.value as string }
}

const streamState = async (h: Harness, id: string) => (await h.request("GET", `/api/v3/event-streams/${id}`, { secret: h.live })).body.data

/** Close what a test left open and remove every stream, so that the next test starts under the limits. */
const cleanUp = async (h: Harness) => {
  for (const connection of open.splice(0)) connection.close()
  for (const secret of [h.live, h.test]) {
    for (;;) {
      const list = await h.request("GET", "/api/v3/event-streams?limit=200", { secret })
      if (list.body.data.length === 0) break
      for (const stream of list.body.data) await h.request("DELETE", `/api/v3/event-streams/${stream.id}`, { secret })
    }
  }
}

eachStore(
  "event streams",
  (h) => {
    afterEach(async () => {
      await cleanUp(h())
    })

    it("POST /event-streams creates an active stream with every field of §2.3 (201, Location); filters {} when none", async () => {
      const res = await createStream(h())
      expect(res.status).toBe(201)
      const stream = res.body.data
      expect(Object.keys(stream)).toEqual([
        "object", "id", "status", "created_at", "expires_at", "last_seen_at", "connection", "cursor", "filters"
      ])
      expect(stream).toMatchObject({
        object: "event_stream",
        status: "active",
        connection: { connected: false },
        cursor: { advanced_at: null, last_event_id: null },
        filters: {}
      })
      expect(stream.id).toMatch(/^evs_[0-9A-Za-z]{9}$/)
      expect(stream.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      expect(Date.parse(stream.expires_at)).toBeGreaterThan(Date.parse(stream.created_at))
      expect(Object.keys(stream.connection)).toEqual(["connected", "since"])
      expect(res.headers.get("location")).toBe(`/api/v3/event-streams/${stream.id}`)
      expect((await h().request("GET", `/api/v3/event-streams/${stream.id}`, { secret: h().live })).body.data).toEqual(stream)
      const list = await h().request("GET", "/api/v3/event-streams", { secret: h().live })
      expect(list.status).toBe(200)
      expect(list.body.data).toContainEqual(stream)
      expect(list.body.page).toMatchObject({ next_cursor: null })
    })

    it("keeps the filters given on creation", async () => {
      const filters = { event_types: ["showcase.created", "tag.created"], resource_types: ["showcase"] }
      const res = await createStream(h(), { filters, start: "now" })
      expect(res.status).toBe(201)
      expect(res.body.data.filters).toEqual(filters)
    })

    it("rejects an unknown start (422 validation_failed) and an unknown field (422 unknown_field)", async () => {
      const bad = await createStream(h(), { start: "yesterday" })
      expect(bad.status).toBe(422)
      expect(bad.body.error.code).toBe("validation_failed")
      expect(bad.body.error.details[0]).toMatchObject({ field: "start" })
      const unknown = await createStream(h(), { filters: {}, colour: "red" })
      expect(unknown.status).toBe(422)
      expect(unknown.body.error.code).toBe("unknown_field")
    })

    it("repeating the Idempotency-Key answers the same stream and creates no other (§4.1)", async () => {
      const key = `evs-${Date.now()}`
      const first = await h().request("POST", "/api/v3/event-streams", { secret: h().live, json: { start: "now" }, idempotencyKey: key })
      const again = await h().request("POST", "/api/v3/event-streams", { secret: h().live, json: { start: "now" }, idempotencyKey: key })
      expect(first.status).toBe(201)
      expect(again.status).toBe(201)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(again.body).toEqual(first.body)
      const list = await h().request("GET", "/api/v3/event-streams", { secret: h().live })
      expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([first.body.data.id])
    })

    it("needs an Idempotency-Key (422 idempotency_key_required, §4.3)", async () => {
      const res = await h().request("POST", "/api/v3/event-streams", { secret: h().live, json: {}, idempotencyKey: null })
      expect(res.status).toBe(422)
      expect(res.body.error.code).toBe("idempotency_key_required")
    })

    it("needs events.read (403 permission_denied, §4.3)", async () => {
      const other = await newCredential(h(), "no events", ["showcases.read"])
      const res = await createStream(h(), {}, other.secret)
      expect(res.status).toBe(403)
      expect(res.body.error.code).toBe("permission_denied")
    })

    it("allows 5 streams per credential: the 6th is 429 too_many_streams in the standard envelope, without rate-limit fields (§4.3, §8.2)", async () => {
      const reader = await newCredential(h(), "five streams")
      const created: Array<string> = []
      for (let i = 0; i < 5; i++) {
        const res = await createStream(h(), {}, reader.secret)
        expect(res.status).toBe(201)
        created.push(res.body.data.id)
      }
      const refused = await createStream(h(), {}, reader.secret)
      expect(refused.status).toBe(429)
      expect(refused.body).toEqual({
        error: {
          code: "too_many_streams",
          message: expect.any(String),
          request_id: refused.headers.get("x-request-id"),
          details: []
        }
      })
      // Another credential of the account still may.
      expect((await createStream(h())).status).toBe(201)
      // Removing one frees its place.
      expect((await h().request("DELETE", `/api/v3/event-streams/${created[0]}`, { secret: reader.secret })).status).toBe(204)
      expect((await createStream(h(), {}, reader.secret)).status).toBe(201)
    })

    it("allows 20 streams per account and environment: the 21st is 429 too_many_streams (§8.2)", async () => {
      // In the sandbox: its streams are apart from production's.
      const readers = await Promise.all([1, 2, 3, 4, 5].map((n) => newCredential(h(), `sandbox reader ${n}`, ["events.read"], h().test)))
      for (const reader of readers.slice(0, 4)) {
        for (let i = 0; i < 5; i++) expect((await createStream(h(), {}, reader.secret)).status).toBe(201)
      }
      const refused = await createStream(h(), {}, readers[4]!.secret)
      expect(refused.status).toBe(429)
      expect(refused.body.error.code).toBe("too_many_streams")
      expect(refused.body.error).not.toHaveProperty("retry_after_seconds")
      expect((await createStream(h())).status).toBe(201)
    })

    it("DELETE answers 204, and the stream is gone (404)", async () => {
      const id = (await createStream(h())).body.data.id
      const res = await h().request("DELETE", `/api/v3/event-streams/${id}`, { secret: h().live })
      expect(res.status).toBe(204)
      expect(res.text).toBe("")
      expectError(await h().request("GET", `/api/v3/event-streams/${id}`, { secret: h().live }), 404, "not_found")
    })

    it("a stream of the sandbox is not found with a production credential (404)", async () => {
      const id = (await createStream(h(), {}, h().test)).body.data.id
      expectError(await h().request("GET", `/api/v3/event-streams/${id}`, { secret: h().live }), 404, "not_found")
    })

    it("an EventSource client receives the events in the order and with the payloads of GET /events (§6)", async () => {
      const id = (await createStream(h(), { start: "now" })).body.data.id
      const client = eventSource(h(), id, ["showcase.created", "showcase.updated", "showcase.trashed"])
      await waitFor("the connection", () => client.opened())
      const showcase = await newShowcase(h(), "Streamed")
      await h().request("PATCH", `/api/v3/showcases/${showcase.id}`, { secret: h().live, json: { name: "Streamed again" } })
      await h().request("DELETE", `/api/v3/showcases/${showcase.id}`, { secret: h().live })
      await waitFor("three events", () => client.received.length >= 3)
      const collection = await eventsOf(h(), showcase.id)
      expect(client.received.map((m) => m.data)).toEqual(collection)
      expect(client.received.map((m) => m.id)).toEqual(collection.map((e) => e.id))
      expect(client.received.map((m) => m.type)).toEqual(["showcase.created", "showcase.updated", "showcase.trashed"])
    })

    it("each message is `id:`, `event:`, `data:` with the envelope as one line of JSON (open-points)", async () => {
      const id = (await createStream(h(), { start: "now" })).body.data.id
      const connection = await connect(h(), id)
      expect(connection.status).toBe(200)
      expect(connection.headers.get("content-type")).toMatch(/^text\/event-stream/)
      const showcase = await newShowcase(h(), "Line\nbreak")
      await waitFor("the event", () => connection.messages.length >= 1)
      const [event] = await eventsOf(h(), showcase.id)
      expect(connection.raw()).toContain(`id: ${event.id}\nevent: showcase.created\ndata: ${JSON.stringify(event)}\n\n`)
    })

    it("a connection that does not accept text/event-stream is 406 not_acceptable", async () => {
      const id = (await createStream(h())).body.data.id
      const connection = await connect(h(), id, { accept: "application/json" })
      expect(connection.status).toBe(406)
      expect(connection.body.error.code).toBe("not_acceptable")
    })

    it("allows one open connection per stream: a second is 409 stream_busy; once the first closes, a new one connects (§6)", async () => {
      const id = (await createStream(h())).body.data.id
      const first = await connect(h(), id)
      expect(first.status).toBe(200)
      const second = await connect(h(), id)
      expect(second.status).toBe(409)
      expect(second.body.error.code).toBe("stream_busy")
      first.close()
      await waitFor("the stream to be free", async () => (await streamState(h(), id)).connection.connected === false)
      const third = await connect(h(), id)
      expect(third.status).toBe(200)
    })

    it("filters deliver only the listed event types and resource types", async () => {
      const byType = (await createStream(h(), { start: "now", filters: { event_types: ["tag.created"] } })).body.data.id
      const byResource = (await createStream(h(), { start: "now", filters: { resource_types: ["showcase"] } })).body.data.id
      const types = await connect(h(), byType)
      const resources = await connect(h(), byResource)
      const showcase = await newShowcase(h(), "Filtered")
      await h().request("PATCH", `/api/v3/showcases/${showcase.id}`, { secret: h().live, json: { name: "Filtered 2" } })
      const group = await h().request("POST", "/api/v3/tags", { secret: h().live, json: { name: `group-${Date.now()}` } })
      expect(group.status).toBe(201)
      const marker = await newShowcase(h(), "Marker")
      await waitFor("the marker", () => resources.messages.some((m) => m.data.includes(marker.id)))
      await waitFor("the tag", () => types.messages.length >= 1)
      expect(resources.messages.map((m) => m.event)).toEqual(["showcase.created", "showcase.updated", "showcase.created"])
      expect(types.messages.map((m) => m.event)).toEqual(["tag.created"])
      expect(JSON.parse(types.messages[0]!.data).data.object.id).toBe(group.body.data.id)
    })

    it("start=earliest also delivers retained events published before the stream; start=now only later ones (§6)", async () => {
      const before = await newShowcase(h(), "Before")
      const earliest = (await createStream(h(), { start: "earliest", filters: { resource_types: ["showcase"] } })).body.data.id
      const now = (await createStream(h(), { start: "now", filters: { resource_types: ["showcase"] } })).body.data.id
      const defaulted = (await createStream(h(), { filters: { resource_types: ["showcase"] } })).body.data.id
      const after = await newShowcase(h(), "After")
      const [a, b, c] = await Promise.all([connect(h(), earliest), connect(h(), now), connect(h(), defaulted)])
      const sawAfter = (c: Connection) => c.messages.some((m) => m.data.includes(after.id))
      await waitFor("the later event", () => sawAfter(a!) && sawAfter(b!) && sawAfter(c!))
      const ids = (c: Connection) => c.messages.map((m) => JSON.parse(m.data).data.object.id)
      expect(ids(a!)).toContain(before.id)
      expect(ids(a!).indexOf(before.id)).toBeLessThan(ids(a!).indexOf(after.id))
      expect(ids(c!)).toContain(before.id)
      expect(ids(b!)).toEqual([after.id])
      // Ascending IDs, as the events collection sorted by creation.
      const eventIds = a!.messages.map((m) => m.id!)
      expect([...eventIds].sort()).toEqual(eventIds)
    })

    it("Last-Event-ID resumes after that event (open-points)", async () => {
      const id = (await createStream(h(), { start: "now", filters: { resource_types: ["showcase"] } })).body.data.id
      const one = await newShowcase(h(), "One")
      const two = await newShowcase(h(), "Two")
      const three = await newShowcase(h(), "Three")
      const [first] = await eventsOf(h(), one.id)
      const connection = await connect(h(), id, { lastEventId: first.id })
      await waitFor("two events", () => connection.messages.length >= 2)
      expect(connection.messages.map((m) => JSON.parse(m.data).data.object.id)).toEqual([two.id, three.id])
    })

    it("Last-Event-ID of an unknown event is 410 cursor_expired, before any streaming (open-points)", async () => {
      const id = (await createStream(h())).body.data.id
      const connection = await connect(h(), id, { lastEventId: "evt_000000001" })
      expect(connection.status).toBe(410)
      expect(connection.headers.get("content-type")).toMatch(/^application\/json/)
      expect(connection.body.error.code).toBe("cursor_expired")
      // Refused: the stream holds no connection.
      expect((await connect(h(), id)).status).toBe(200)
    })

    it("keeps connection and cursor current; a new connection without Last-Event-ID resumes after the cursor (§2.3)", async () => {
      const id = (await createStream(h(), { start: "now", filters: { resource_types: ["showcase"] } })).body.data.id
      const connection = await connect(h(), id)
      const first = await newShowcase(h(), "First")
      await waitFor("the first event", () => connection.messages.length >= 1)
      const [event] = await eventsOf(h(), first.id)
      await waitFor("the cursor", async () => (await streamState(h(), id)).cursor.last_event_id === event.id)
      const open = await streamState(h(), id)
      expect(open.connection.connected).toBe(true)
      expect(open.last_seen_at).not.toBeNull()
      expect(open.cursor.advanced_at).not.toBeNull()
      connection.close()
      await waitFor("the disconnection", async () => (await streamState(h(), id)).connection.connected === false)
      const second = await newShowcase(h(), "Second")
      const again = await connect(h(), id)
      await waitFor("the next event", () => again.messages.length >= 1)
      expect(JSON.parse(again.messages[0]!.data).data.object.id).toBe(second.id)
    })

    it("sends a `: keep-alive` comment while idle (open-points)", async () => {
      const id = (await createStream(h(), { start: "now", filters: { event_types: ["nothing.happened"] } })).body.data.id
      const connection = await connect(h(), id)
      await waitFor("two keep-alives", () => connection.comments.filter((c) => c === ": keep-alive").length >= 2, KEEP_ALIVE_MS * 6)
      expect(connection.ended()).toBe(false)
    })

    it("revoking the credential closes its open stream within a few seconds, and it cannot reconnect (§3, §5.4)", async () => {
      const reader = await newCredential(h(), "to revoke")
      const id = (await createStream(h(), { start: "now" }, reader.secret)).body.data.id
      const client = eventSource(h(), id, ["showcase.created"], reader.secret)
      const raw = await connect(h(), (await createStream(h(), { start: "now" }, reader.secret)).body.data.id, { secret: reader.secret })
      await waitFor("the connection", () => client.opened())
      const revoked = await h().request("POST", `/api/v3/credentials/${reader.id}/revocations`, { secret: h().live })
      expect(revoked.status).toBe(200)
      await waitFor("the raw connection to end", () => raw.ended(), 5000)
      // The EventSource client tries again, is refused (401) and gives up.
      await waitFor("the EventSource client to close", () => client.source.readyState === EventSource.CLOSED, 8000)
      const again = await connect(h(), id, { secret: reader.secret })
      expect(again.status).toBe(401)
      expect(again.body.error.code).toBe("credential_revoked")
    })

    it("suspending the credential also closes its open stream (§5.1)", async () => {
      const reader = await newCredential(h(), "to suspend")
      const id = (await createStream(h(), { start: "now" }, reader.secret)).body.data.id
      const connection = await connect(h(), id, { secret: reader.secret })
      expect(connection.status).toBe(200)
      const suspended = await h().request("PATCH", `/api/v3/credentials/${reader.id}`, { secret: h().live, json: { status: "suspended" } })
      expect(suspended.status).toBe(200)
      await waitFor("the connection to end", () => connection.ended(), 5000)
    })

    it("DELETE closes the stream's open connection", async () => {
      const id = (await createStream(h())).body.data.id
      const connection = await connect(h(), id)
      expect(connection.status).toBe(200)
      expect((await h().request("DELETE", `/api/v3/event-streams/${id}`, { secret: h().live })).status).toBe(204)
      await waitFor("the connection to end", () => connection.ended(), 5000)
    })
  },
  { settings: { eventStreamKeepAliveMs: KEEP_ALIVE_MS } }
)

eachStore(
  "event streams woken by a commit",
  (h) => {
    it("with polling all but off, a write committed by this server reaches an open stream at once (no poll needed)", async () => {
      const id = (await createStream(h(), { start: "now" })).body.data.id
      const connection = await connect(h(), id)
      expect(connection.status).toBe(200)
      await waitFor("the connection to open", () => connection.comments.length > 0 || connection.raw().includes(": connected"))
      const showcase = await newShowcase(h(), "woken")
      // The poll is ten minutes away: only the wake-up on commit can bring the event in time.
      await waitFor("the event of the write", () => connection.messages.some((m) => m.event === "showcase.created" && m.data.includes(showcase.id)), 5000)
      connection.close()
    })
  },
  { settings: { eventStreamPollMs: 600_000 } }
)

eachStore("event streams past retention", (h) => {
  it("Last-Event-ID of an event no longer retained is 410 cursor_expired (open-points, §6)", async () => {
    const showcase = await newShowcase(h(), "Old")
    const [event] = await eventsOf(h(), showcase.id)
    h().advance(30 * DAY + 3600_000)
    const id = (await createStream(h())).body.data.id
    const connection = await connect(h(), id, { lastEventId: event.id })
    expect(connection.status).toBe(410)
    expect(connection.body.error.code).toBe("cursor_expired")
  })
})

describe("event streams across two servers on one database [postgresql]", () => {
  let a: Harness
  let b: Harness
  beforeAll(async () => {
    a = await startHarness("postgresql")
    b = await startHarness("postgresql", { databaseUrl: a.databaseUrl!, account: a.account })
  }, 60_000)
  afterAll(async () => {
    for (const connection of open.splice(0)) connection.close()
    await b?.close()
    await a?.close()
  })

  it("an event written through one server reaches a stream connected to the other (issue: cross-process)", async () => {
    const id = (await createStream(a, { start: "now" })).body.data.id
    const client = eventSource(b, id, ["showcase.created"])
    await waitFor("the connection", () => client.opened())
    const showcase = await newShowcase(a, "Across")
    await waitFor("the event", () => client.received.length >= 1)
    expect(client.received[0]!.data).toEqual((await eventsOf(a, showcase.id))[0])
  })

  it("revoking a credential through one server closes its stream held by the other (§5.4)", async () => {
    const reader = await newCredential(a, "revoked across")
    const id = (await createStream(a, { start: "now" }, reader.secret)).body.data.id
    const connection = await connect(b, id, { secret: reader.secret })
    expect(connection.status).toBe(200)
    expect((await a.request("POST", `/api/v3/credentials/${reader.id}/revocations`, { secret: a.live })).status).toBe(200)
    await waitFor("the connection to end", () => connection.ended(), 5000)
  })

  it("the one-connection rule holds across servers: 409 stream_busy on the other", async () => {
    const id = (await createStream(a)).body.data.id
    const first = await connect(a, id)
    expect(first.status).toBe(200)
    const second = await connect(b, id)
    expect(second.status).toBe(409)
    expect(second.body.error.code).toBe("stream_busy")
  })
})
