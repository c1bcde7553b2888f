/**
 * An in-memory DNS (the `DnsResolver` port of `@syllabus/core`) for tests and embedding: the
 * TXT records a custom domain's verification reads are the ones set here (`setTxt`), so a test
 * publishes a challenge, removes it, or makes the DNS silent (`unavailable`) without a network.
 * Names are compared as DNS compares them: without case and a trailing dot.
 */
import { DnsResolver, type TxtLookup } from "@syllabus/core"
import { Effect, Layer } from "effect"

export interface MemoryDns {
  /** The `DnsResolver` answering from these records. */
  readonly layer: Layer.Layer<DnsResolver>
  /** Publish the TXT records of a name (replacing those it had); an empty list leaves the name with no TXT record. */
  setTxt(name: string, records: ReadonlyArray<string>): void
  /** Remove a name: NXDOMAIN. */
  remove(name: string): void
  /** Make every lookup answer `unavailable` (a resolver that times out), or answer again. */
  setUnavailable(unavailable: boolean): void
  /** The names looked up so far, in order. */
  readonly lookups: ReadonlyArray<string>
}

const canonical = (name: string) => name.toLowerCase().replace(/\.$/, "")

export const makeMemoryDns = (): MemoryDns => {
  const zone = new Map<string, ReadonlyArray<string>>()
  const lookups: Array<string> = []
  let unavailable = false
  const layer = Layer.succeed(DnsResolver, {
    resolveTxt: (name) =>
      Effect.sync((): TxtLookup => {
        lookups.push(name)
        if (unavailable) return { outcome: "unavailable", detail: "ETIMEOUT" }
        const records = zone.get(canonical(name))
        return records === undefined || records.length === 0 ? { outcome: "not_found" } : { outcome: "found", records }
      })
  })
  return {
    layer,
    setTxt: (name, records) => void zone.set(canonical(name), [...records]),
    remove: (name) => void zone.delete(canonical(name)),
    setUnavailable: (value) => {
      unavailable = value
    },
    lookups
  }
}
