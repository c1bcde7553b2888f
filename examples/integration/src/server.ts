/**
 * The integrator's server: the Syllabus API embedded in their own `node:http` server under
 * `/api/v3` (an in-memory store here; `pgLayer(url)` from `@syllabus/pg` in production), and
 * the host's own routes beside it.
 *
 *   npm run build && node dist/src/server.js     # PORT=8080 to choose the port
 */
import { makeNodeListener } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

export interface RunningServer {
  readonly server: Server
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** Open an account on the embedded API; its secrets are in the answer only. */
  readonly openAccount: Awaited<ReturnType<typeof makeNodeListener>>["openAccount"]
  close(): Promise<void>
}

export const startServer = async (port = 0): Promise<RunningServer> => {
  const syllabus = await makeNodeListener({ store: MemoryStore })
  const server = createServer(syllabus.serverOptions, (req, res) => {
    if (req.url === "/api/v3" || req.url?.startsWith("/api/v3/")) return syllabus.listener(req, res)
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" })
    res.end("The school's site\n")
  })
  // Timeouts sized for JSON, and the requests Node's parser refuses answered in the API's envelope.
  syllabus.attach(server)
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    openAccount: syllabus.openAccount,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await syllabus.dispose()
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const running = await startServer(Number(process.env["PORT"] ?? 8080))
  console.log(`listening on ${running.url} (API under ${running.url}/api/v3)`)
}
