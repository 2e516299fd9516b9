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
  ["ff00::", 8],
] as const) {
  blocked.addSubnet(net, prefix, "ipv6");
}

/** The IPv4 address an IPv4-mapped IPv6 address stands for (`::ffff:7f00:1` or `::ffff:127.0.0.1`), else null. */
function mappedIpv4(address: string): string | null {
  const match = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!match) return null;
  if (match[1]) return match[1];
  const high = Number.parseInt(match[2] as string, 16);
  const low = Number.parseInt(match[3] as string, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
}

/**
 * Whether `address` (an IP literal) is one a webhook may not reach; an IPv4-mapped IPv6
 * address is judged as its IPv4 address, and what is not an address is refused.
 */
export function isPrivateAddress(address: string): boolean {
  const mapped = mappedIpv4(address);
  if (mapped) return blocked.check(mapped, "ipv4");
  const family = isIP(address);
  if (family === 4) return blocked.check(address, "ipv4");
  if (family === 6) return blocked.check(address, "ipv6");
  return true;
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
    const refused = addresses.find((entry) => isPrivateAddress(entry.address));
    if (refused) {
      const error: NodeJS.ErrnoException = new Error(
        `${hostname} resolves to ${refused.address}, a private or loopback address (WEBHOOK_ALLOW_PRIVATE=1 allows it)`,
      );
      error.code = "WEBHOOK_PRIVATE_ADDRESS";
      return callback(error, options.all ? [] : "");
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0] as LookupAddress;
    callback(null, first.address, first.family);
  });
}
