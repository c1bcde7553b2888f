/**
 * Destination URLs of webhooks (open-points "Events and webhooks"): in production only
 * `https` to a public host; the sandbox also takes `http` and loopback, for local
 * development. Private, link-local (cloud metadata), reserved and special-use addresses and
 * names are refused everywhere. These checks read the URL only: the addresses a name
 * resolves to are checked when a delivery connects (the events issue), and so is the port of
 * a loopback destination: the sender reaches only the local ports its operator allows
 * (`LOCAL_WEBHOOK_PORTS`; none by default), so a sandbox webhook cannot scan the server's host.
 */
import type { Environment } from "../ports/store.js"

/** Why a URL is refused, as the `reason` of its 422 item. */
export type DestinationProblem = "malformed_url" | "unsupported_scheme" | "https_required" | "host_not_public"

type HostKind = "public" | "loopback" | "private"

const MAX_URL_LENGTH = 2048

// --- IPv4 -----------------------------------------------------------------------------

const ipv4Number = (text: string): number | undefined => {
  const parts = text.split(".")
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return undefined
  return parts.reduce((n, p) => n * 256 + Number(p), 0)
}

const cidr = (base: string, bits: number) => ({ base: ipv4Number(base)!, size: 2 ** (32 - bits) })

/** IPv4 ranges that are not the public internet (RFC 6890 and friends). */
const ipv4Special = [
  cidr("0.0.0.0", 8),
  cidr("10.0.0.0", 8),
  cidr("100.64.0.0", 10), // carrier-grade NAT (Alibaba metadata at 100.100.100.200)
  cidr("169.254.0.0", 16), // link-local: cloud metadata at 169.254.169.254
  cidr("172.16.0.0", 12),
  cidr("192.0.0.0", 24),
  cidr("192.0.2.0", 24),
  cidr("192.88.99.0", 24),
  cidr("192.168.0.0", 16),
  cidr("198.18.0.0", 15),
  cidr("198.51.100.0", 24),
  cidr("203.0.113.0", 24),
  cidr("224.0.0.0", 3) // multicast, reserved and broadcast
]
const ipv4Loopback = cidr("127.0.0.0", 8)

const inRange = (n: number, range: { base: number; size: number }) => n >= range.base && n < range.base + range.size

const ipv4Kind = (n: number): HostKind =>
  inRange(n, ipv4Loopback) ? "loopback" : ipv4Special.some((r) => inRange(n, r)) ? "private" : "public"

// --- IPv6 -----------------------------------------------------------------------------

/** The eight 16-bit groups of an IPv6 address as the URL parser writes it (compressed, lowercase). */
const ipv6Groups = (text: string): ReadonlyArray<number> | undefined => {
  const [head = "", tail] = text.split("::") as [string, string?]
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)))
  const left = parse(head)
  const right = tail === undefined ? [] : parse(tail)
  const groups = tail === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right]
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined
}

const ipv6Kind = (g: ReadonlyArray<number>): HostKind => {
  const embeddedV4 = g[6]! * 65536 + g[7]!
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0)
  if (zeros(0, 7) && g[7] === 1) return "loopback"
  // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) reach the IPv4 address inside.
  if (zeros(0, 5) && g[5] === 0xffff) return ipv4Kind(embeddedV4)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return ipv4Kind(embeddedV4)
  // Only global unicast (2000::/3) is public, less documentation, Teredo and 6to4.
  if ((g[0]! & 0xe000) !== 0x2000) return "private"
  if ((g[0] === 0x2001 && (g[1] === 0x0db8 || g[1] === 0)) || g[0] === 0x2002) return "private"
  return "public"
}

// --- Names ----------------------------------------------------------------------------

/** Special-use and private-use top-level names (RFC 6761, 6762, 7686, 8375, 9476; `.internal`). */
const privateSuffixes = ["local", "localdomain", "internal", "invalid", "test", "example", "onion", "alt", "home.arpa"]

const nameKind = (name: string): HostKind => {
  if (name === "localhost" || name.endsWith(".localhost")) return "loopback"
  // A single label (`intranet`) only resolves on a private network.
  if (!name.includes(".")) return "private"
  return privateSuffixes.some((s) => name === s || name.endsWith(`.${s}`)) ? "private" : "public"
}

const hostKind = (hostname: string): HostKind => {
  const host = hostname.replace(/\.$/, "").toLowerCase()
  if (host.startsWith("[")) {
    const groups = ipv6Groups(host.slice(1, -1))
    return groups === undefined ? "private" : ipv6Kind(groups)
  }
  // The URL parser has already turned every IPv4 spelling (`0x7f.1`, `2130706433`) into dotted decimal.
  const v4 = ipv4Number(host)
  return v4 === undefined ? nameKind(host) : ipv4Kind(v4)
}

/** What is wrong with a destination URL in this environment, if anything. */
export const destinationProblem = (url: string, environment: Environment): DestinationProblem | undefined => {
  if (url.length > MAX_URL_LENGTH || !URL.canParse(url)) return "malformed_url"
  const parsed = new URL(url)
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return "unsupported_scheme"
  if (parsed.hostname === "") return "malformed_url"
  const sandbox = environment === "sandbox"
  if (parsed.protocol === "http:" && !sandbox) return "https_required"
  const kind = hostKind(parsed.hostname)
  return kind === "public" || (kind === "loopback" && sandbox) ? undefined : "host_not_public"
}

/** Whether a URL points at this host's loopback (`localhost`, `127.0.0.0/8`, `::1` and their spellings). */
export const isLoopbackDestination = (url: string): boolean => URL.canParse(url) && hostKind(new URL(url).hostname) === "loopback"

/** The port a URL connects to (its default when the URL names none). */
export const destinationPort = (url: URL): number => (url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80)
