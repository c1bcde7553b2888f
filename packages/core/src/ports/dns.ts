/**
 * The DNS port: reads the TXT records of a name, for the verification of an account's custom
 * domains (`account/domains.ts`). The core decides which name is read and what must be found
 * there; an adapter decides how: `@syllabus/http`'s `NodeDnsResolver` (on `node:dns/promises`)
 * for the standalone server, `makeMemoryDns()` (records a test or an embedder sets) otherwise.
 *
 * `resolveTxt` never fails: every outcome is a value, as a resolver reports it. A name that does
 * not exist (NXDOMAIN) and a name without TXT records (NODATA) are both `not_found`: to the
 * owner of the domain they mean the same thing, "the record is not there (yet)". A resolver
 * that could not answer (timeout, SERVFAIL, refused) is `unavailable`: nothing is known.
 *
 * The shapes are written out here because `ports/` imports nothing else of the core.
 */
import { Context, type Effect } from "effect"

export type TxtLookup =
  /** The TXT records of the name: each record's character-strings joined into one string (RFC 7208 §3.3 joins them so). */
  | { readonly outcome: "found"; readonly records: ReadonlyArray<string> }
  /** The name does not exist or has no TXT record. */
  | { readonly outcome: "not_found" }
  /** No answer could be had (timeout, server failure); `detail` says what went wrong, for the record. */
  | { readonly outcome: "unavailable"; readonly detail: string }

export class DnsResolver extends Context.Tag("@syllabus/core/DnsResolver")<
  DnsResolver,
  { readonly resolveTxt: (name: string) => Effect.Effect<TxtLookup> }
>() {}
