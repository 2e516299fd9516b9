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

/**
 * Why shell commands must not get the network (SHELL_NETWORK=1), naming AGENT_API_KEYS and
 * ALLOW_UNAUTHENTICATED; null when they may. The network they get is the host's, with this
 * server on 127.0.0.1: without API keys a command the model runs (shell_readonly needs no
 * approval by default) could drive the server itself, approving calls that wait for a person
 * or starting runs that ask for none. With keys, a command holds none (its environment is an
 * allow-list). ALLOW_UNAUTHENTICATED=1 accepts it, as it accepts serving others without keys.
 */
export function shellNetworkProblem({
  shellNetwork,
  authenticated,
  allowUnauthenticated,
}: {
  shellNetwork: boolean;
  authenticated: boolean;
  allowUnauthenticated: boolean;
}): string | null {
  if (!shellNetwork || authenticated || allowUnauthenticated) return null;
  return (
    "SHELL_NETWORK: 1 gives shell commands the host's network, where this server listens without AGENT_API_KEYS, " +
    "so a command the model runs could approve calls or start runs itself: set AGENT_API_KEYS, or " +
    "ALLOW_UNAUTHENTICATED=1 to accept it"
  );
}
