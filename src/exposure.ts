import { lookup } from "node:dns/promises";
import { isIPv4 } from "node:net";

/** Whether `address` (an IP) is reachable only from this machine: 127.0.0.0/8 or ::1. */
export function isLoopbackAddress(address: string): boolean {
  const v4 = address.startsWith("::ffff:") ? address.slice("::ffff:".length) : address;
  if (isIPv4(v4)) return v4.startsWith("127.");
  return address === "::1" || address === "0:0:0:0:0:0:0:1";
}

/**
 * Why the server must not listen on `host` (HOST), naming AGENT_API_KEYS and
 * ALLOW_UNAUTHENTICATED; null when it may: it checks keys, or the operator allowed serving
 * without them, or every address `host` stands for is a loopback one. A host name that does
 * not resolve is left to `listen`, which names HOST.
 */
export async function exposureProblem({
  host,
  authenticated,
  allowUnauthenticated,
}: {
  host: string;
  authenticated: boolean;
  allowUnauthenticated: boolean;
}): Promise<string | null> {
  if (authenticated || allowUnauthenticated) return null;
  let addresses: string[];
  try {
    addresses = (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return null;
  }
  if (addresses.length > 0 && addresses.every(isLoopbackAddress)) return null;
  return (
    `HOST: ${JSON.stringify(host)} is reachable from other machines and AGENT_API_KEYS is not set, so anyone who ` +
    "reaches the port could run tools: set AGENT_API_KEYS, or ALLOW_UNAUTHENTICATED=1 to serve without authentication"
  );
}
