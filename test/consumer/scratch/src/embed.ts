/**
 * A consumer of the packed packages: embeds the API in its own node:http server on the
 * in-memory store, opens an account, and asks for the sandbox credential once. Importing
 * every library package makes the type-check read all their declarations.
 */
import type * as Core from "@syllabus/core"
import { makeNodeListener } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import type * as Pg from "@syllabus/pg"
import type * as Storage from "@syllabus/storage"
import type * as Cli from "@syllabus/cli"
import type * as Testing from "@syllabus/testing"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

export type Everything = [typeof Core, typeof Pg, typeof Storage, typeof Cli, typeof Testing]

const syllabus = await makeNodeListener({ store: MemoryStore })
const server = createServer(syllabus.serverOptions, (req, res) => {
  if (req.url?.startsWith("/api/v3")) return syllabus.listener(req, res)
  res.writeHead(404).end()
})
syllabus.attach(server)
try {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const account = await syllabus.openAccount({
    name: "Scratch",
    subdomain: "scratch",
    administrator: { email: "ops@scratch.example", name: "Ops", password: "a long enough password" }
  })
  const sandbox = account.credentials.find((credential) => credential.environment === "sandbox")
  if (!sandbox) throw new Error("no sandbox credential in the opened account")
  const answer = await fetch(`http://127.0.0.1:${port}/api/v3/credentials/current`, {
    headers: { authorization: `Bearer ${sandbox.secret}` }
  })
  const body = (await answer.json()) as { data?: { environment?: string } }
  if (answer.status !== 200 || body.data?.environment !== "sandbox") {
    throw new Error(`GET /api/v3/credentials/current answered ${answer.status}: ${JSON.stringify(body)}`)
  }
  console.log(`embedded: ${answer.status} ${body.data.environment}`)
} finally {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await syllabus.dispose()
}
