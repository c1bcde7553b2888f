/**
 * Embedding Syllabus in an existing node:http server: the API answers under /api/v3, the
 * host application keeps every other path.
 *
 *   node --import tsx examples/embed-node-http.ts
 */
import { makeNodeListener } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"
import { createServer, type Server } from "node:http"

export const startEmbedded = async (port = 0): Promise<{ server: Server; close: () => Promise<void> }> => {
  const syllabus = await makeNodeListener({ store: MemoryStore })
  // `serverOptions`: timeouts sized for JSON, checked every second.
  const server = createServer(syllabus.serverOptions, (req, res) => {
    if (req.url?.startsWith("/api/v3")) return syllabus.listener(req, res)
    res.writeHead(200, { "content-type": "text/plain" })
    res.end("the host application\n")
  })
  // A request Node's parser refuses is answered in the API's error envelope (with X-Request-Id).
  syllabus.attach(server)
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return {
    server,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await syllabus.dispose()
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { server } = await startEmbedded(Number(process.env["PORT"] ?? 3000))
  console.log(`host app on`, server.address())
}
