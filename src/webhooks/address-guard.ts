import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";

/** Addresses a webhook may not reach (server-side request forgery): loopback, private, link-local, and the like. */
const blocked = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  blocked.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  // Site-local (deprecated, still routed inside some networks).
  ["fec0::", 10],
  // NAT64 for local use: where the IPv4 address sits depends on the network.
  ["64:ff9b:1::", 48],
  // Teredo: the client's IPv4 address is obscured in it.
  ["2001::", 32],
  ["ff00::", 8],
] as const) {
  blocked.addSubnet(net, prefix, "ipv6");
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 part counts as two), or null. */
function ipv6Groups(address: string): number[] | null {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail, more] = text.split("::");
  if (more !== undefined) return null;
  const part = (p: string | undefined) => (p ? p.split(":").map((g) => Number.parseInt(g, 16)) : []);
  const left = part(head);
  const right = part(tail);
  const fill = tail === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...Array<number>(Math.max(fill, 0)).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

const ipv4Of = (high: number, low: number): string => [high >> 8, high & 255, low >> 8, low & 255].join(".");

/**
 * The IPv4 address an IPv6 address carries and reaches through, else null: IPv4-mapped
 * (`::ffff:0:0/96`), IPv4-compatible (`::/96`), IPv4-translated (`::ffff:0:0:0/96`), NAT64's
 * well-known prefix (`64:ff9b::/96`, which a NAT64 gateway turns into that IPv4 address) and
 * 6to4 (`2002::/16`).
 */
function embeddedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  if (!g) return null;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const last = ipv4Of(g[6] as number, g[7] as number);
  if (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) return last;
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return last;
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return last;
  if (g[0] === 0x2002) return ipv4Of(g[1] as number, g[2] as number);
  return null;
}

/**
 * Whether `address` (an IP literal) is one a webhook may not reach; an IPv6 address that
 * carries an IPv4 address it reaches through (see embeddedIpv4) is judged as that IPv4
 * address, and what is not an address is refused.
 */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, "ipv4");
  if (family !== 6) return true;
  if (address === "::" || address === "::1") return true;
  const carried = embeddedIpv4(address);
  if (carried) return blocked.check(carried, "ipv4");
  return blocked.check(address, "ipv6");
}

/** The host of a URL as an IP literal (brackets removed), or null when it is a name. */
export function literalHost(url: string): string | null {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, "$1");
  return isIP(host) ? host : null;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A DNS lookup for the connection itself that refuses a name resolving to a private address:
 * the check is on the address connected to, so a name that changes between a check and the
 * connection (DNS rebinding) cannot slip through.
 */
export function guardedLookup(hostname: string, options: { all?: boolean }, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, options.all ? [] : "");
    if (addresses.some((entry) => isPrivateAddress(entry.address))) {
      // The address is not named: a key that sets the name reads this in its deliveries, and
      // would learn where an internal name points.
      const error: NodeJS.ErrnoException = new Error(
        `${hostname} resolves to a private or loopback address (WEBHOOK_ALLOW_PRIVATE=1 allows it)`,
      );
      error.code = "WEBHOOK_PRIVATE_ADDRESS";
      return callback(error, options.all ? [] : "");
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0] as LookupAddress;
    callback(null, first.address, first.family);
  });
}
