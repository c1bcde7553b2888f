/** The embedding examples work as documented: the API under /api/v3, the host app elsewhere. */
import { makeFetchHandler } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startEmbedded } from "../../examples/embed-node-http.js"

describe("embedding in an existing node:http server", () => {
  let embedded: Awaited<ReturnType<typeof startEmbedded>>
  let base: string
  beforeAll(async () => {
    embedded = await startEmbedded()
    const address = embedded.server.address()
    base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`
  })
  afterAll(() => embedded.close())

  it("serves the API under /api/v3 and leaves other paths to the host", async () => {
    const api = await fetch(`${base}/api/v3/credentials/current`)
    expect(api.status).toBe(401)
    expect((await api.json()).error.code).toBe("unauthenticated")
    const host = await fetch(`${base}/elsewhere`)
    expect(await host.text()).toBe("the host application\n")
  })

  it("answers a request Node's parser refuses in the envelope, with X-Request-Id", async () => {
    const text = await new Promise<string>((resolve) => {
      const socket = connect(Number(new URL(base).port), "127.0.0.1", () => socket.write("FROB /api/v3 HTTP/1.1\r\nHost: x\r\n\r\n"))
      let received = ""
      socket.on("data", (data: Buffer) => (received += data.toString("latin1")))
      socket.on("close", () => resolve(received))
    })
    expect(text).toMatch(/^HTTP\/1\.1 400 /)
    expect(text).toMatch(/\r\nx-request-id: req_/i)
    expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)).error.code).toBe("http_error")
  })
})

describe("embedding behind a fetch handler", () => {
  it("opens an account and answers its credential", async () => {
    const syllabus = await makeFetchHandler({ store: MemoryStore })
    try {
      const opened = await syllabus.openAccount({
        name: "Embedded",
        subdomain: "embedded",
        administrator: { email: "a@embedded.example", name: "A", password: "a long password" }
      })
      const secret = opened.credentials.find((c) => c.environment === "sandbox")!.secret
      const res = await syllabus.handler(
        new Request("http://embedded.local/api/v3/credentials/current", { headers: { authorization: `Bearer ${secret}` } })
      )
      expect(res.status).toBe(200)
      expect(res.headers.get("x-service-release")).toBe("3.4.7")
      expect((await res.json()).data.environment).toBe("sandbox")
    } finally {
      await syllabus.dispose()
    }
  })
})
