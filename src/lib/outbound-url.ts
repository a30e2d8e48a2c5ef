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

function ipv4(host: string): number[] | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  return parts.every((p) => p <= 255) ? parts : undefined;
}

function blockedIpv4([a, b, c]: number[]): boolean {
  return (
    a === 0 || // "this" network
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! <= 127) || // shared address space
    (a === 169 && b === 254) || // link-local, cloud metadata
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) || // IETF protocol assignments, TEST-NET-1
    (a === 192 && b === 88 && c === 99) || // 6to4 relay anycast
    (a === 192 && b === 168) ||
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    (a === 198 && b === 51 && c === 100) || // TEST-NET-2
    (a === 203 && b === 0 && c === 113) || // TEST-NET-3
    a! >= 224 // multicast, reserved, broadcast
  );
}

/** IPv6 literal (without brackets) to its eight 16-bit groups. */
function ipv6Groups(host: string): number[] | undefined {
  let h = host.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(h);
  if (v4) {
    const p = ipv4(v4[1]!);
    if (!p) return undefined;
    h = `${h.slice(0, -v4[1]!.length)}${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
  }
  const [head, tail] = h.split("::") as [string, string | undefined];
  const parse = (s: string) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  const a = parse(head);
  const b = tail === undefined ? [] : parse(tail);
  const groups = tail === undefined ? a : [...a, ...Array(8 - a.length - b.length).fill(0), ...b];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/** The IPv4 address held in two 16-bit groups. */
const embedded = (hi: number, lo: number) => [hi >> 8, hi & 255, lo >> 8, lo & 255];

/** IPv4-mapped, -compatible and -translated literals: an IPv4 address in IPv6 clothing. */
function embedsIpv4(g: number[]): boolean {
  const zeroPrefix = (n: number) => g.slice(0, n).every((x) => x === 0);
  return (zeroPrefix(5) && g[5] === 0xffff) || zeroPrefix(6) || (zeroPrefix(4) && g[4] === 0xffff && g[5] === 0);
}

function blockedIpv6(g: number[]): boolean {
  const zeroPrefix = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroPrefix(8)) return true; // ::
  if (zeroPrefix(7) && g[7] === 1) return true; // ::1
  if (zeroPrefix(5) && g[5] === 0xffff) return blockedIpv4(embedded(g[6]!, g[7]!)); // IPv4-mapped
  if (zeroPrefix(6)) return blockedIpv4(embedded(g[6]!, g[7]!)); // IPv4-compatible
  if (zeroPrefix(4) && g[4] === 0xffff && g[5] === 0) return blockedIpv4(embedded(g[6]!, g[7]!)); // IPv4-translated
  // NAT64; local-use 64:ff9b:1::/48 always
  if (g[0] === 0x64 && g[1] === 0xff9b) return g[2] !== 0 || blockedIpv4(embedded(g[6]!, g[7]!));
  if (g[0] === 0x2002) return blockedIpv4(embedded(g[1]!, g[2]!)); // 6to4
  const first = g[0]!;
  return (
    (first & 0xfe00) === 0xfc00 || // unique local, fc00::/7 (fd00::/8 included)
    (first & 0xffc0) === 0xfe80 || // link-local
    (first & 0xffc0) === 0xfec0 || // site-local (deprecated)
    (first & 0xff00) === 0xff00 || // multicast
    (first === 0x2001 && (g[1] === 0x0db8 || g[1] === 0)) || // documentation; Teredo hides an IPv4 address
    (first === 0x0100 && g[1] === 0 && g[2] === 0 && g[3] === 0) // discard-only 100::/64
  );
}

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
  const v4 = ipv4(host);
  if (v4 && blockedIpv4(v4)) return { ok: false, reason: REFUSED_ADDRESS };
  if (v4 && writtenHost(raw) !== host)
    return { ok: false, reason: "must write an IPv4 address as a plain dotted quad" };
  if (host.startsWith("[")) {
    const g = ipv6Groups(host.slice(1, -1));
    if (!g || blockedIpv6(g)) return { ok: false, reason: REFUSED_ADDRESS };
    if (embedsIpv4(g)) return { ok: false, reason: "must not write an IPv4 address as an IPv6 literal" };
  }
  if (!v4 && !host.startsWith("[") && !host.includes("."))
    return { ok: false, reason: "must use a fully qualified public host name" };
  return { ok: true, url: url.toString() };
}
