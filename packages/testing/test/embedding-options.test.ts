/**
 * The embedding options that need no Effect code (docs/embedding.md): `storage` makes uploads
 * work, `onWebhook` receives the deliveries in process, signed as the network sender signs
 * them, and its answer decides each attempt.
 */
import { makeFetchHandler } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { MemoryFileStorage } from "@syllabus/storage"
import { Webhook } from "standardwebhooks"
import { afterEach, describe, expect, it } from "vitest"
import { png } from "./upload.js"
import { createHash } from "node:crypto"

type Embedded = Awaited<ReturnType<typeof makeFetchHandler>>
let embedded: Embedded | undefined
afterEach(async () => {
  await embedded?.dispose()
  embedded = undefined
})

const start = async (options: Omit<Parameters<typeof makeFetchHandler>[0], "store">) => {
  embedded = await makeFetchHandler({ store: MemoryStore, rateLimits: "off", ...options })
  const opened = await embedded.openAccount({
    name: "Embedded",
    subdomain: `embedded-${Date.now()}`,
    administrator: { email: "a@embedded.example", name: "A", password: "a long password" }
  })
  const secret = opened.credentials.find((c) => c.environment === "sandbox")!.secret
  let key = 0
  const call = async (method: string, path: string, json?: unknown) => {
    const res = await embedded!.handler(
      new Request(`http://embedded.test/api/v3${path}`, {
        method,
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", ...(method === "POST" ? { "idempotency-key": `k-${++key}` } : {}) },
        ...(json === undefined ? {} : { body: JSON.stringify(json) })
      })
    )
    return { status: res.status, body: (await res.json()) as any }
  }
  return { call }
}

const eventually = async <A>(read: () => Promise<A | undefined>): Promise<A> => {
  for (let i = 0; i < 300; i++) {
    const value = await read()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error("not within 6 s")
}

const declaration = (bytes: Uint8Array) => ({
  purpose: "image",
  filename: "a.png",
  size: bytes.length,
  content_type: "image/png",
  sha256: createHash("sha256").update(bytes).digest("hex")
})

describe("embedding options", () => {
  it("storage: uploads work with it, and answer 503 storage_unavailable without it", async () => {
    const without = await start({})
    const refused = await without.call("POST", "/uploads", declaration(png()))
    expect(refused.status).toBe(503)
    expect(refused.body.error.code).toBe("storage_unavailable")
    await embedded!.dispose()
    const withStorage = await start({ storage: MemoryFileStorage })
    expect((await withStorage.call("POST", "/uploads", declaration(png()))).status).toBe(201)
  })

  it("onWebhook: gets each delivery as the signed Request a destination gets", async () => {
    const requests: Array<{ url: string; headers: Record<string, string>; body: string }> = []
    const { call } = await start({
      onWebhook: async (request) => {
        const headers: Record<string, string> = {}
        request.headers.forEach((value, name) => (headers[name] = value))
        requests.push({ url: request.url, headers, body: await request.text() })
        return new Response(null, { status: 204 })
      }
    })
    const hook = (await call("POST", "/webhooks", { url: "https://hooks.example.com/in", event_types: ["showcase.created"] })).body.data
    const showcase = (await call("POST", "/showcases", { name: "Shelf" })).body.data
    const delivered = await eventually(async () => requests[0])
    expect(delivered.url).toBe("https://hooks.example.com/in")
    expect(delivered.headers["user-agent"]).toBe("Syllabus-Webhooks/1")
    const event = new Webhook(hook.secret.value).verify(delivered.body, delivered.headers) as { type: string; data: { object: { id: string } } }
    expect(event.type).toBe("showcase.created")
    expect(event.data.object.id).toBe(showcase.id)
    const [delivery] = (await call("GET", `/webhooks/${hook.id}/deliveries`)).body.data
    expect(delivery.status).toBe("succeeded")
  })

  it("onWebhook: a non-2xx answer or a throw is a failed attempt, recorded as such; the excerpt is masked (§4.3)", async () => {
    let answer: () => Response = () => new Response("busy: token sk_live_1234567890abcdef for ops@example.com", { status: 500 })
    const { call } = await start({ onWebhook: () => answer() })
    const hook = (await call("POST", "/webhooks", { url: "https://hooks.example.com/in", event_types: ["showcase.created"] })).body.data
    await call("POST", "/showcases", { name: "First" })
    const attemptsOf = async (n: number) => {
      const [delivery] = (await call("GET", `/webhooks/${hook.id}/deliveries`)).body.data
      if (!(delivery?.attempt_count >= 1)) return undefined
      const attempts = (await call("GET", `/webhooks/${hook.id}/deliveries/${delivery.id}/attempts`)).body.data
      return attempts.length >= n ? { delivery, attempts } : undefined
    }
    const first = await eventually(() => attemptsOf(1))
    expect(first.delivery.status).toBe("pending")
    expect(first.attempts[0]).toMatchObject({ http_status: 500, transport_error: null })
    expect(first.attempts[0].response_excerpt).toContain("busy")
    expect(first.attempts[0].response_excerpt).not.toContain("1234567890abcdef")
    expect(first.attempts[0].response_excerpt).not.toContain("ops@example.com")

    answer = () => {
      throw Object.assign(new Error("down"), { code: "ECONNREFUSED" })
    }
    await call("POST", "/showcases", { name: "Second" })
    const refused = await eventually(async () => {
      const deliveries = (await call("GET", `/webhooks/${hook.id}/deliveries`)).body.data
      const second = deliveries.find((d: { id: string; attempt_count: number }) => d.id !== first.delivery.id && d.attempt_count >= 1)
      return second && (await call("GET", `/webhooks/${hook.id}/deliveries/${second.id}/attempts`)).body.data[0]
    })
    expect(refused).toMatchObject({ http_status: null, transport_error: "connection_failed" })
  })
})
