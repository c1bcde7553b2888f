/**
 * `NodeDnsResolver` (the `DnsResolver` port on `node:dns/promises`) against a small DNS server
 * of the test's own on a loopback UDP port (RFC 1035 messages): TXT records found (a record's
 * character-strings joined), NXDOMAIN and NODATA both `not_found`, SERVFAIL and silence
 * `unavailable`. No test reaches the network.
 */
import { makeNodeDnsResolver } from "@syllabus/http"
import { Effect } from "effect"
import { createSocket, type Socket } from "node:dgram"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

type Answer = { readonly rcode: number; readonly txt?: ReadonlyArray<ReadonlyArray<string>> } | "silent"

/** What the server answers for each name (lower case); a name not listed is NXDOMAIN. */
const zone: Record<string, Answer> = {
  "_syllabus-challenge.learn.example.com": { rcode: 0, txt: [["v=spf1 -all"], ["syllabus-verification=", "abc123"]] },
  "empty.example.com": { rcode: 0, txt: [] },
  "broken.example.com": { rcode: 2 },
  "silent.example.com": "silent"
}

/** The question's name and the end of the question section. */
const readQuestion = (message: Buffer) => {
  const labels: Array<string> = []
  let at = 12
  while (message[at]! > 0) {
    const length = message[at]!
    labels.push(message.subarray(at + 1, at + 1 + length).toString("ascii"))
    at += 1 + length
  }
  return { name: labels.join(".").toLowerCase(), end: at + 1 + 4 }
}

const respond = (query: Buffer): Buffer | undefined => {
  const { name, end } = readQuestion(query)
  const answer: Answer = zone[name] ?? { rcode: 3 }
  if (answer === "silent") return undefined
  const records = (answer.txt ?? []).map((strings) => {
    const rdata = Buffer.concat(strings.map((s) => Buffer.concat([Buffer.from([Buffer.byteLength(s)]), Buffer.from(s)])))
    const fixed = Buffer.alloc(12)
    fixed.writeUInt16BE(0xc00c, 0) // the name: a pointer to the question's
    fixed.writeUInt16BE(16, 2) // TXT
    fixed.writeUInt16BE(1, 4) // IN
    fixed.writeUInt32BE(60, 6) // TTL
    fixed.writeUInt16BE(rdata.length, 10)
    return Buffer.concat([fixed, rdata])
  })
  const header = Buffer.alloc(12)
  query.copy(header, 0, 0, 2) // ID
  header.writeUInt16BE(0x8180 | answer.rcode, 2) // a response, recursion desired and available
  header.writeUInt16BE(1, 4)
  header.writeUInt16BE(records.length, 6)
  return Buffer.concat([header, query.subarray(12, end), ...records])
}

describe("NodeDnsResolver", () => {
  let server: Socket
  let address = ""

  beforeAll(async () => {
    server = createSocket("udp4")
    server.on("message", (message, from) => {
      const reply = respond(message)
      if (reply) server.send(reply, from.port, from.address)
    })
    await new Promise<void>((resolve) => server.bind(0, "127.0.0.1", resolve))
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const lookup = (name: string) =>
    Effect.runPromise(makeNodeDnsResolver({ servers: [address], timeoutMs: 300, tries: 1 }).resolveTxt(name))

  it("found: every TXT record, its character-strings joined", async () => {
    expect(await lookup("_syllabus-challenge.learn.example.com")).toEqual({
      outcome: "found",
      records: ["v=spf1 -all", "syllabus-verification=abc123"]
    })
  })

  it("NXDOMAIN and a name without TXT records are both not_found", async () => {
    expect(await lookup("nowhere.example.com")).toEqual({ outcome: "not_found" })
    expect(await lookup("empty.example.com")).toEqual({ outcome: "not_found" })
  })

  it("SERVFAIL and a server that never answers are unavailable, with what went wrong", async () => {
    expect(await lookup("broken.example.com")).toMatchObject({ outcome: "unavailable", detail: expect.any(String) })
    const started = Date.now()
    expect(await lookup("silent.example.com")).toMatchObject({ outcome: "unavailable", detail: expect.any(String) })
    expect(Date.now() - started).toBeLessThan(5000)
  })
})
