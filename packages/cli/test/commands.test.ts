/**
 * The commands beyond sign-in, each against a real server (memory store): the generic call
 * (`get|post|patch|delete` with params, bodies, Idempotency-Key, If-Match, the description's
 * check), `whoami`, `trigger`, `events tail`, `listen --forward-to` (a local receiver that
 * verifies the signatures with `standardwebhooks`), `logs tail`, the common writes and the
 * progress of `--wait` on a terminal and elsewhere.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Harness, startHarness } from "../../../test/support/harness.js"
import { bodyOf, withParams } from "../src/call.js"
import { parseSse } from "../src/events.js"
import { user, type CliRun } from "./support.js"

let h: Harness

beforeAll(async () => {
  h = await startHarness("memory")
}, 60_000)

afterAll(async () => {
  await h?.close()
})

const API = "/api/v3"

/** A user configured with the production (`live`) or the sandbox (`test`) secret. */
const configured = async (secret: "live" | "test" = "live", options: Parameters<typeof user>[0] = {}) => {
  const u = user(options)
  const res = await u.cli("configure", "--base-url", h.baseUrl, "--api-key", secret === "live" ? h.live : h.test)
  expect(res.code, res.stderr).toBe(0)
  return u
}

const newShowcase = async (name: string, secret = h.live) => {
  const res = await h.request("POST", `${API}/showcases`, { secret, json: { name } })
  expect(res.status, res.text).toBe(201)
  return res.body.data as { id: string; name: string }
}

/** Request-log entries, newest first. */
const requestLog = async (secret = h.live) => {
  const res = await h.request("GET", `${API}/requests?limit=50`, { secret })
  expect(res.status).toBe(200)
  return res.body.data as Array<{ method: string; path: string; status: number; idempotency_key: string | null }>
}

/** Stop a long-running command and check it ended as on Ctrl-C, with its output kept. */
const stopped = async (running: CliRun) => {
  expect(await running.stop()).toBe(130)
  return { stdout: running.stdout(), stderr: running.stderr() }
}

describe("the generic call", () => {
  it("get <path> --param prints the JSON answer, the params as the query string", async () => {
    const showcase = await newShowcase("Params shelf")
    const draft = await h.request("POST", `${API}/products`, { secret: h.live, json: { format: "course", name: "Draft one", showcase_id: showcase.id } })
    expect(draft.status).toBe(201)
    const u = await configured()
    const res = await u.cli("get", "/products", "--param", "status=published", "--param", `showcase_id=${showcase.id}`)
    expect(res.code, res.stderr).toBe(0)
    expect(JSON.parse(res.stdout)).toMatchObject({ data: [] })
    const drafts = await u.cli("get", "/products", "-p", "status=draft", "-p", `showcase_id=${showcase.id}`)
    expect(drafts.code, drafts.stderr).toBe(0)
    const direct = await h.request("GET", `${API}/products?status=draft&showcase_id=${showcase.id}`, { secret: h.live })
    expect(JSON.parse(drafts.stdout)).toEqual(direct.body)
    expect(direct.body.data.map((p: { id: string }) => p.id)).toEqual([draft.body.data.id])
  })

  it("a repeated --param is an array (repeated keys); a param without = is refused before any call", async () => {
    expect(await Effect.runPromise(withParams("/users?x=1", ["status=a", "status=b"]))).toBe("/users?x=1&status=a&status=b")
    const res = await (await configured()).cli("get", "/products", "--param", "status")
    expect(res.code).toBe(1)
    expect(res.stderr).toMatch(/^invalid_param: --param status: expected name=value$/m)
  })

  it("--data takes one JSON document or fields: text, := JSON, dotted names nest, [] appends", async () => {
    expect(await Effect.runPromise(bodyOf(['{"name":"A","tags":["x"]}']))).toEqual({ name: "A", tags: ["x"] })
    expect(await Effect.runPromise(bodyOf(["name=A", "limits.max:=3", "flag:=true", "tags[]=x", "tags[]=y"]))).toEqual({
      name: "A",
      limits: { max: 3 },
      flag: true,
      tags: ["x", "y"]
    })
    const bad = await (await configured()).cli("post", "/showcases", "-d", "{not json")
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/^invalid_data: --data is not valid JSON/m)
  })

  it("post --data creates, with a generated Idempotency-Key; the same --idempotency-key replays the first answer", async () => {
    const u = await configured()
    const res = await u.cli("post", "/showcases", "--data", '{"name":"From the CLI"}')
    expect(res.code, res.stderr).toBe(0)
    const created = JSON.parse(res.stdout)
    expect(created.data).toMatchObject({ object: "showcase", name: "From the CLI" })
    const [logged] = (await requestLog()).filter((r) => r.method === "POST" && r.path === `${API}/showcases`)
    expect(logged!.idempotency_key).toMatch(/^cli-[0-9a-f]{32}$/)

    const key = `cli-test-${Date.now()}`
    const first = await u.cli("post", "/showcases", "-d", "name=Once", "--idempotency-key", key)
    const second = await u.cli("post", "/showcases", "-d", "name=Once", "--idempotency-key", key)
    expect(first.code, first.stderr).toBe(0)
    expect(second.code, second.stderr).toBe(0)
    expect(JSON.parse(second.stdout).data.id).toBe(JSON.parse(first.stdout).data.id)
  })

  it("patch --if-match with a stale ETag fails 412; --auto-if-match sends the current one and succeeds", async () => {
    const showcase = await newShowcase("Before")
    const current = await h.request("GET", `${API}/showcases/${showcase.id}`, { secret: h.live })
    const staleEtag = current.headers.get("etag")!
    expect(staleEtag).toBeTruthy()
    expect((await h.request("PATCH", `${API}/showcases/${showcase.id}`, { secret: h.live, json: { name: "Moved on" } })).status).toBe(200)
    const u = await configured()
    const stale = await u.cli("patch", `/showcases/${showcase.id}`, "-d", "name=Stale", "--if-match", staleEtag)
    expect(stale.code).toBe(1)
    expect(stale.stdout).toBe("")
    expect(stale.stderr).toMatch(/^revision_mismatch: /m)
    const fresh = await u.cli("patch", `/showcases/${showcase.id}`, "-d", "name=After", "--auto-if-match")
    expect(fresh.code, fresh.stderr).toBe(0)
    expect(JSON.parse(fresh.stdout).data.name).toBe("After")
  })

  it("delete prints nothing for a 204; then get of it prints `not_found: …` on stderr and exits 1", async () => {
    const stream = await h.request("POST", `${API}/event-streams`, { secret: h.live, json: {} })
    expect(stream.status).toBe(201)
    const u = await configured()
    const removed = await u.cli("delete", `/api/v3/event-streams/${stream.body.data.id}`)
    expect(removed.code, removed.stderr).toBe(0)
    expect(removed.stdout).toBe("")
    const gone = await u.cli("get", `/event-streams/${stream.body.data.id}`)
    expect(gone.code).toBe(1)
    expect(gone.stdout).toBe("")
    expect(gone.stderr).toMatch(/^not_found: .+$/m)
  })

  it("an error answer with details prints each detail under the message: field, code, reason and message", async () => {
    const u = await configured()
    const res = await u.cli("post", "/products", "-d", "name=No format")
    expect(res.code).toBe(1)
    expect(res.stderr).toMatch(/^validation_failed: .+\n {2}format: required: \S.+$/m)
    const showcase = await u.cli("post", "/products", "-d", "name=Nowhere", "-d", "format=course", "-d", "showcase_id=shw_aaaaaaaaa")
    expect(showcase.code).toBe(1)
    expect(showcase.stderr).toMatch(/^validation_failed: .+ \(reason: not_found\)\n {2}showcase_id: validation_failed \(reason: not_found\)$/m)
  })

  it("an error's own reason follows its message", async () => {
    const u = await configured()
    expect((await u.cli("post", "/showcases", "--idempotency-key", "cli-reason-1", "-d", "name=First")).code).toBe(0)
    const reused = await u.cli("post", "/showcases", "--idempotency-key", "cli-reason-1", "-d", "name=Second")
    expect(reused.code).toBe(1)
    expect(reused.stderr).toMatch(/^idempotency_key_reused: .+ \(reason: different_body\)$/m)
  })

  it("a path or method the description does not have is refused with a clear message, nothing sent", async () => {
    const u = await configured()
    const before = (await requestLog()).length
    const unknown = await u.cli("get", "/prodcts")
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toMatch(/^unknown_path: \/prodcts is not a path of the API/m)
    const method = await u.cli("delete", "/credentials/current")
    expect(method.code).toBe(1)
    expect(method.stderr).toMatch(/^method_not_allowed: DELETE is not an operation of \/credentials\/current; it accepts GET/m)
    // The description was read once (and cached): no call went to the refused paths.
    const after = await requestLog()
    expect(after.filter((r) => r.path.includes("prodcts") || (r.method === "DELETE" && r.path.endsWith("/credentials/current")))).toEqual([])
    expect(after.length).toBeGreaterThan(before)
    expect(JSON.parse(readFileSync(join(u.dir, "openapi-paths.json"), "utf8")).paths["/products"]).toContain("GET")
  })

  it("a path missing from a fresh cache of the description is looked up again before being refused", async () => {
    const u = await configured()
    expect((await u.cli("get", "/products")).code).toBe(0)
    const file = join(u.dir, "openapi-paths.json")
    const cache = JSON.parse(readFileSync(file, "utf8"))
    delete cache.paths["/showcases"]
    writeFileSync(file, JSON.stringify(cache))
    const res = await u.cli("get", "/showcases")
    expect(res.code, res.stderr).toBe(0)
    expect(JSON.parse(readFileSync(file, "utf8")).paths["/showcases"]).toContain("GET")
  })
})

describe("whoami", () => {
  it("prints the credential in use, its environment and the mode", async () => {
    const current = await h.request("GET", `${API}/credentials/current`, { secret: h.test })
    const res = await (await configured("test")).cli("whoami")
    expect(res.code, res.stderr).toBe(0)
    expect(res.stdout).toMatch(/^mode\s+autonomous$/m)
    expect(res.stdout).toMatch(/^environment\s+sandbox$/m)
    expect(res.stdout).toMatch(new RegExp(`^credential\\s+${current.body.data.id}$`, "m"))
    const json = await (await configured("live")).cli("whoami", "--json")
    expect(JSON.parse(json.stdout)).toMatchObject({ mode: "autonomous", environment: "production", administrator: null })
  })
})

describe("trigger", () => {
  it("from the sandbox: prints the event made, which the events collection has", async () => {
    const res = await (await configured("test")).cli("trigger", "product.created")
    expect(res.code, res.stderr).toBe(0)
    const [, id] = /^Triggered product\.created: (evt_[0-9A-Za-z]{9})$/m.exec(res.stdout)!
    const event = await h.request("GET", `${API}/events/${id}`, { secret: h.test })
    expect(event.body.data).toMatchObject({ type: "product.created", environment: "sandbox" })
  })

  it("from production: sandbox_required; an unknown type: validation_failed on type", async () => {
    const production = await (await configured("live")).cli("trigger", "product.created")
    expect(production.code).toBe(1)
    expect(production.stderr).toMatch(/^sandbox_required: /m)
    const unknown = await (await configured("test")).cli("trigger", "product.exploded")
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toMatch(/^validation_failed: .+\n {2}type: invalid_value \(reason: unknown_event_type\)/m)
    // The types the server accepts are listed once (the server's message names the single problem too).
    expect(unknown.stderr.split("product.created").length - 1).toBe(1)
  })
})

describe("events tail", () => {
  it("prints one line per matching event until interrupted, then deletes the stream it made", async () => {
    const u = await configured()
    const running = u.start("events", "tail", "--type", "showcase.*")
    await running.waitForStderr(/Waiting for events/)
    const streams = await h.request("GET", `${API}/event-streams`, { secret: h.live })
    expect(streams.body.data).toHaveLength(1)
    expect(streams.body.data[0].filters.event_types).toEqual(expect.arrayContaining(["showcase.created", "showcase.updated"]))
    expect(streams.body.data[0].filters.event_types.every((t: string) => t.startsWith("showcase."))).toBe(true)

    const tag = await h.request("POST", `${API}/tags`, { secret: h.live, json: { name: `not-shown-${Date.now()}` } })
    expect(tag.status, tag.text).toBe(201)
    const showcase = await newShowcase("Tailed")
    const [line] = await running.waitForStdout(new RegExp(`^\\S+Z {2}evt_\\w{9} {2}showcase\\.created {2}${showcase.id}$`, "m"))
    expect(line).toBeTruthy()
    const { stdout } = await stopped(running)
    expect(stdout).not.toContain(tag.body.data.id)
    expect(stdout.trim().split("\n")).toHaveLength(1)
    const after = await h.request("GET", `${API}/event-streams`, { secret: h.live })
    expect(after.body.data).toEqual([])
  })

  it("--json prints each event envelope on one line", async () => {
    const running = (await configured()).start("events", "tail", "--json", "--type", "showcase.created")
    await running.waitForStderr(/Waiting for events/)
    const showcase = await newShowcase("Tailed as JSON")
    await running.waitForStdout(/\n$/)
    const { stdout } = await stopped(running)
    const event = JSON.parse(stdout.trim())
    expect(event).toMatchObject({ object: "event", type: "showcase.created", data: { object: { id: showcase.id } } })
  })

  it("a pattern that matches no event type is refused", async () => {
    const res = await (await configured()).cli("events", "tail", "--type", "nothing.*")
    expect(res.code).toBe(1)
    expect(res.stderr).toMatch(/^unknown_event_type: no event type matches nothing\.\*/m)
  })
})

describe("listen --forward-to", () => {
  interface Received {
    readonly headers: IncomingHttpHeaders
    readonly body: string
  }
  const receiver = async (status: number) => {
    const received: Array<Received> = []
    const server: Server = createServer((req, res) => {
      let body = ""
      req.on("data", (c: Buffer) => (body += c.toString("utf8")))
      req.on("end", () => {
        received.push({ headers: req.headers, body })
        res.writeHead(status).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
      received,
      close: () => new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }

  it("relays each event to the local endpoint signed with the secret it printed (verified by standardwebhooks), printing the receiver's status", async () => {
    const local = await receiver(202)
    try {
      const running = (await configured("test")).start("listen", "--forward-to", local.url)
      const [, secret] = await running.waitForStderr(/signing secret is (whsec_[A-Za-z0-9+/=]+)/)
      const triggered = await h.request("POST", `${API}/sandbox/events`, { secret: h.test, json: { type: "user.created" } })
      expect(triggered.status, triggered.text).toBe(201)
      const id = String(triggered.body.data.id)
      await running.waitForStdout(new RegExp(`${id}  user\\.created .*--> POST ${local.url.replace(/[/.]/g, "\\$&")} \\[202\\]`))
      await stopped(running)
      expect(local.received).toHaveLength(1)
      const [delivery] = local.received
      expect(delivery!.headers["webhook-id"]).toBe(id)
      const verified = new Webhook(secret!).verify(delivery!.body, {
        "webhook-id": String(delivery!.headers["webhook-id"]),
        "webhook-timestamp": String(delivery!.headers["webhook-timestamp"]),
        "webhook-signature": String(delivery!.headers["webhook-signature"])
      })
      expect(verified).toEqual(triggered.body.data)
      // Signed with another secret, the same request does not verify.
      expect(() =>
        new Webhook("whsec_" + Buffer.alloc(24, 7).toString("base64")).verify(delivery!.body, {
          "webhook-id": String(delivery!.headers["webhook-id"]),
          "webhook-timestamp": String(delivery!.headers["webhook-timestamp"]),
          "webhook-signature": String(delivery!.headers["webhook-signature"])
        })
      ).toThrow()
    } finally {
      await local.close()
    }
  })

  it("--secret signs with the secret given (a malformed one is refused)", async () => {
    const local = await receiver(200)
    const secret = "whsec_" + Buffer.alloc(24, 42).toString("base64")
    try {
      const bad = await (await configured("test")).cli("listen", "--forward-to", local.url, "--secret", "not-a-secret")
      expect(bad.code).toBe(1)
      expect(bad.stderr).toMatch(/^invalid_secret: /m)
      const running = (await configured("test")).start("listen", "--forward-to", local.url, "--secret", secret, "--type", "banner.*", "--type", "showcase.updated")
      await running.waitForStderr(new RegExp(`signing secret is ${secret.replace(/[+/]/g, "\\$&")}`))
      const triggered = await h.request("POST", `${API}/sandbox/events`, { secret: h.test, json: { type: "showcase.updated" } })
      await running.waitForStdout(/\[200\]/)
      await stopped(running)
      const [delivery] = local.received
      expect(new Webhook(secret).verify(delivery!.body, {
        "webhook-id": String(delivery!.headers["webhook-id"]),
        "webhook-timestamp": String(delivery!.headers["webhook-timestamp"]),
        "webhook-signature": String(delivery!.headers["webhook-signature"])
      })).toEqual(triggered.body.data)
    } finally {
      await local.close()
    }
  })

  it("a receiver that fails shows its status; one that is down shows the network error; listening goes on", async () => {
    const failing = await receiver(500)
    try {
      const running = (await configured("test")).start("listen", "--forward-to", failing.url, "--type", "tag.*")
      await running.waitForStderr(/Forwarding events/)
      await h.request("POST", `${API}/sandbox/events`, { secret: h.test, json: { type: "tag.created" } })
      await running.waitForStdout(/tag\.created .*\[500\]/)
      await failing.close()
      await h.request("POST", `${API}/sandbox/events`, { secret: h.test, json: { type: "tag.deleted" } })
      await running.waitForStdout(/tag\.deleted .*\[network_error: /)
      await stopped(running)
    } finally {
      await failing.close().catch(() => undefined)
    }
  })
})

describe("logs tail", () => {
  it("prints the new calls of the request log, oldest first, with the filters; not those before, nor its own polls", async () => {
    await newShowcase("Before the tail")
    const running = (await configured()).start("logs", "tail", "--interval-ms", "150", "--method", "POST")
    await running.waitForStderr(/Waiting for requests/)
    await h.request("GET", `${API}/showcases?limit=1`, { secret: h.live })
    const first = await h.request("POST", `${API}/showcases`, { secret: h.live, json: { name: "Tail one" } })
    const second = await h.request("POST", `${API}/showcases`, { secret: h.live, json: { name: "" } })
    const secondId = second.headers.get("x-request-id")!
    await running.waitForStdout(new RegExp(secondId))
    const { stdout } = await stopped(running)
    const lines = stdout.trim().split("\n")
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(new RegExp(`^\\S+Z {2}POST {4}201 +\\d+ms {2}${first.headers.get("x-request-id")} {2}/api/v3/showcases$`))
    expect(lines[1]).toMatch(new RegExp(`^\\S+Z {2}POST {4}422 .*${secondId} {2}/api/v3/showcases {2}validation_failed$`))
  })

  it("--status 4xx --json prints the failed calls only, as JSON", async () => {
    const running = (await configured()).start("logs", "tail", "--interval-ms", "150", "--status", "4xx", "--json")
    await running.waitForStderr(/Waiting for requests/)
    await h.request("GET", `${API}/showcases?limit=1`, { secret: h.live })
    const missing = await h.request("GET", `${API}/showcases/shw_000000001`, { secret: h.live })
    expect(missing.status).toBe(404)
    await running.waitForStdout(new RegExp(missing.headers.get("x-request-id")!))
    const { stdout } = await stopped(running)
    const entries = stdout.trim().split("\n").map((line) => JSON.parse(line))
    expect(entries.map((e) => [e.id, e.status])).toEqual([[missing.headers.get("x-request-id"), 404]])
  })
})

describe("common writes", () => {
  it("showcases create, products create and products publish --wait", async () => {
    const u = await configured()
    const showcase = await u.cli("showcases", "create", "--name", "Written", "--json")
    expect(showcase.code, showcase.stderr).toBe(0)
    const showcaseId = JSON.parse(showcase.stdout).id as string
    const product = await u.cli("products", "create", "--name", "Written course", "--showcase-id", showcaseId)
    expect(product.code, product.stderr).toBe(0)
    expect(product.stdout).toMatch(/^format\s+course$/m)
    const [, productId] = /^id\s+(prd_\w{9})$/m.exec(product.stdout)!
    const published = await u.cli("products", "publish", productId!, "--wait", "--json")
    expect(published.code, published.stderr).toBe(0)
    expect(JSON.parse(published.stdout)).toMatchObject({ status: "succeeded" })
    expect((await h.request("GET", `${API}/products/${productId}`, { secret: h.live })).body.data.status).toBe("published")
  })

  it("users create and webhooks create (its secret shown once)", async () => {
    const u = await configured("test")
    const email = `cli-${Date.now()}@example.com`
    const created = await u.cli("users", "create", "--name", "Ada", "--email", email)
    expect(created.code, created.stderr).toBe(0)
    expect(created.stdout).toMatch(new RegExp(`^email\\s+${email}$`, "m"))
    const hook = await u.cli("webhooks", "create", "--url", "http://127.0.0.1:9/hook", "--event", "product.created", "--event", "user.created")
    expect(hook.code, hook.stderr).toBe(0)
    expect(hook.stdout).toMatch(/^secret\s+whsec_\S+$/m)
    expect(hook.stdout).toMatch(/^event_types\s+\["product\.created","user\.created"\]$/m)
  })
})

describe("progress of --wait", () => {
  const publication = async () => {
    const showcase = await newShowcase("Progress shelf")
    const product = await h.request("POST", `${API}/products`, { secret: h.live, json: { format: "course", name: "Progress", showcase_id: showcase.id } })
    const started = await h.request("POST", `${API}/products/${product.body.data.id}/publications`, { secret: h.live })
    expect(started.status).toBe(202)
    return String(started.body.data.id)
  }

  it("on a terminal: a bar redrawn on one line", async () => {
    const u = await configured("live", { stderrIsTerminal: true })
    const res = await u.cli("operations", "get", await publication(), "--wait")
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).toMatch(/\r\[#{30}\] 1\/1 succeeded\n$/)
    expect(res.stderr).not.toContain("progress ")
  })

  it("elsewhere (a pipe, a log): plain lines, one per change, no carriage return", async () => {
    const res = await (await configured()).cli("operations", "get", await publication(), "--wait")
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).not.toContain("\r")
    expect(res.stderr).not.toContain("[#")
    const lines = res.stderr.trim().split("\n")
    expect(lines.at(-1)).toBe("progress 1/1 succeeded")
    expect(new Set(lines).size).toBe(lines.length)
  })
})

describe("parseSse", () => {
  it("splits complete messages, keeps the unfinished rest, drops comments", () => {
    const { messages, rest } = parseSse(': keep-alive\n\nid: evt_1\nevent: a.b\ndata: {"x":1}\n\nid: evt_2\ndata: {')
    expect(messages).toEqual([{ id: "evt_1", event: "a.b", data: '{"x":1}' }])
    expect(rest).toBe('id: evt_2\ndata: {')
  })
})
