import ipaddr from "ipaddr.js";

/**
 * Whether the service may call a URL it was given: webhook receivers, media delivery
 * destinations, ICS calendar feeds. Targets are https and public: never loopback,
 * private, link-local, shared, multicast or metadata addresses. The WHATWG URL parser
 * turns decimal, hex, octal and shortened IPv4 forms into dotted quads, so the checks
 * see canonical addresses; an address written in any such alternate form (or as an
 * IPv4-mapped or -compatible IPv6 literal) is refused outright, since nobody writes a
 * public target that way.
 *
 * The limit of this check: a Worker's `fetch` resolves host names itself and offers no
 * way to connect to an address resolved beforehand, so a public name whose DNS answers a
 * private address is not caught here. Names are checked, IP literals are checked, and
 * the check runs again at every fetch, not only when the URL is configured.
 */
export type OutboundVerdict = { ok: true; url: string } | { ok: false; reason: string };

/** Local development only: plain http to this machine, for a receiver or a MinIO beside `wrangler dev`. */
export interface OutboundPolicy {
  allowLocalHttp: boolean;
}

const BLOCKED_HOSTS = new Set([
  "localhost",
  "metadata",
  "metadata.google.internal",
  "instance-data",
  "instance-data.ec2.internal",
]);
const BLOCKED_SUFFIXES = [".localhost", ".internal", ".local", ".localdomain", ".home.arpa"];
const DEV_HOSTS = new Set(["localhost", "127.0.0.1"]);

/** IPv4 ranges the service never calls. */
const REFUSED_V4 = [
  "0.0.0.0/8", // "this" network
  "10.0.0.0/8", // private
  "100.64.0.0/10", // shared address space
  "127.0.0.0/8", // loopback
  "169.254.0.0/16", // link-local, cloud metadata
  "172.16.0.0/12", // private
  "192.0.0.0/24", // IETF protocol assignments
  "192.0.2.0/24", // TEST-NET-1
  "192.88.99.0/24", // 6to4 relay anycast
  "192.168.0.0/16", // private
  "198.18.0.0/15", // benchmarking
  "198.51.100.0/24", // TEST-NET-2
  "203.0.113.0/24", // TEST-NET-3
  "224.0.0.0/3", // multicast, reserved, broadcast
].map((range) => ipaddr.IPv4.parseCIDR(range));

/**
 * IPv6 ranges that carry an IPv4 address, at byte `at`: refused as that address would be.
 * `spelled`: an IPv4 address in IPv6 clothing, refused even when the address is public.
 */
const CARRYING_V4 = [
  { range: "::ffff:0:0/96", at: 12, spelled: true }, // IPv4-mapped
  { range: "::/96", at: 12, spelled: true }, // IPv4-compatible; :: and ::1 carry 0.0.0.0 and 0.0.0.1
  { range: "::ffff:0:0:0/96", at: 12, spelled: true }, // IPv4-translated
  { range: "64:ff9b::/48", at: 12, spelled: false }, // NAT64
  { range: "2002::/16", at: 2, spelled: false }, // 6to4
].map(({ range, ...carrier }) => ({ range: ipaddr.IPv6.parseCIDR(range), ...carrier }));

/** IPv6 ranges the service never calls, beside those that carry an IPv4 address. */
const REFUSED_V6 = [
  "64:ff9b::/32", // the rest of NAT64's, local-use 64:ff9b:1::/48 among it
  "fc00::/7", // unique local (fd00::/8 included)
  "fe80::/10", // link-local
  "fec0::/10", // site-local (deprecated)
  "ff00::/8", // multicast
  "2001:db8::/32", // documentation
  "2001::/32", // Teredo hides an IPv4 address
  "100::/64", // discard-only
].map((range) => ipaddr.IPv6.parseCIDR(range));

const refusedV4 = (address: ipaddr.IPv4) => REFUSED_V4.some((range) => address.match(range));

function refusedV6(address: ipaddr.IPv6): boolean {
  const carrier = CARRYING_V4.find(({ range }) => address.match(range));
  if (carrier) return refusedV4(new ipaddr.IPv4(address.toByteArray().slice(carrier.at, carrier.at + 4)));
  return REFUSED_V6.some((range) => address.match(range));
}

/** IPv4-mapped, -compatible and -translated literals: an IPv4 address in IPv6 clothing. */
const spellsIpv4 = (address: ipaddr.IPv6) => CARRYING_V4.some(({ range, spelled }) => spelled && address.match(range));

/** The host exactly as written in `raw` (lowercase, without credentials, port or a trailing dot). */
function writtenHost(raw: string): string | undefined {
  const m = /^[a-z][a-z\d+.-]*:[/\\]*([^/\\?#]*)/i.exec(raw.trim());
  if (!m) return undefined;
  const authority = m[1]!.slice(m[1]!.lastIndexOf("@") + 1);
  const host = authority.startsWith("[") ? authority.slice(0, authority.indexOf("]") + 1) : authority.split(":")[0]!;
  return host.toLowerCase().replace(/\.$/, "");
}

const REFUSED_ADDRESS = "must not point at a loopback, private, link-local or reserved address";

export function checkOutboundUrl(raw: string, policy: OutboundPolicy): OutboundVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "is not an absolute URL" };
  }
  if (url.username || url.password) return { ok: false, reason: "must not carry credentials" };
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  const devTarget = policy.allowLocalHttp && DEV_HOSTS.has(host) && writtenHost(raw) === host;
  if (devTarget)
    return url.protocol === "https:" || url.protocol === "http:"
      ? { ok: true, url: url.toString() }
      : { ok: false, reason: "must use https" };
  if (url.protocol !== "https:") return { ok: false, reason: "must use https" };
  if (BLOCKED_HOSTS.has(host) || BLOCKED_SUFFIXES.some((s) => host.endsWith(s)))
    return { ok: false, reason: "must not point at a local or metadata host" };
  const v4 = ipaddr.IPv4.isValidFourPartDecimal(host);
  if (v4 && refusedV4(ipaddr.IPv4.parse(host))) return { ok: false, reason: REFUSED_ADDRESS };
  if (v4 && writtenHost(raw) !== host)
    return { ok: false, reason: "must write an IPv4 address as a plain dotted quad" };
  if (host.startsWith("[")) {
    const literal = host.slice(1, -1);
    const v6 = ipaddr.IPv6.isValid(literal) ? ipaddr.IPv6.parse(literal) : undefined;
    if (!v6 || refusedV6(v6)) return { ok: false, reason: REFUSED_ADDRESS };
    if (spellsIpv4(v6)) return { ok: false, reason: "must not write an IPv4 address as an IPv6 literal" };
  }
  if (!v4 && !host.startsWith("[") && !host.includes("."))
    return { ok: false, reason: "must use a fully qualified public host name" };
  return { ok: true, url: url.toString() };
}
