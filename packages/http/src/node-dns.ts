/**
 * The `DnsResolver` port of `@syllabus/core` on `node:dns/promises`: the TXT records a custom
 * domain's verification reads (`account/domains.ts`), from the resolvers the operating system
 * is configured with. A lookup is bounded (a timeout per try, two tries) so a verification
 * never waits long on a silent server; whatever goes wrong becomes a value, never a failure:
 * NXDOMAIN and NODATA are `not_found`, anything else (timeout, SERVFAIL, refused) `unavailable`.
 */
import { DnsResolver, type TxtLookup } from "@syllabus/core"
import { Effect, Layer } from "effect"
import { Resolver } from "node:dns/promises"

export interface NodeDnsOptions {
  /** Milliseconds a try may take (default 2,500). */
  readonly timeoutMs?: number
  /** Tries per lookup (default 2). */
  readonly tries?: number
  /** Resolver addresses (`"8.8.8.8"`, `"[2001:4860:4860::8888]:53"`); default the system's. */
  readonly servers?: ReadonlyArray<string>
}

/** The answers of `node:dns` that mean "no such record". */
const absent = new Set(["ENOTFOUND", "ENODATA", "NXDOMAIN", "NODATA"])

export const makeNodeDnsResolver = (options: NodeDnsOptions = {}): DnsResolver["Type"] => ({
  resolveTxt: (name) =>
    Effect.tryPromise({
      try: (signal) => {
        const resolver = new Resolver({ timeout: options.timeoutMs ?? 2500, tries: options.tries ?? 2 })
        if (options.servers !== undefined) resolver.setServers([...options.servers])
        signal.addEventListener("abort", () => resolver.cancel())
        return resolver.resolveTxt(name)
      },
      catch: (error) => error
    }).pipe(
      Effect.map((chunks): TxtLookup => ({ outcome: "found", records: chunks.map((parts) => parts.join("")) })),
      Effect.catchAll((error) => {
        const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "unknown"
        return Effect.succeed<TxtLookup>(absent.has(code) ? { outcome: "not_found" } : { outcome: "unavailable", detail: code })
      })
    )
})

/** The system's resolvers (the default of `syllabusLayer`). */
export const NodeDnsResolver = (options: NodeDnsOptions = {}): Layer.Layer<DnsResolver> =>
  Layer.sync(DnsResolver, () => makeNodeDnsResolver(options))
