import { isIP } from "node:net";
import type { FastifyInstance } from "fastify";
import { AppError } from "../errors.js";

/**
 * The host name of a `Host` header (`name:port`, `[v6]:port`), lower case, without a trailing
 * dot; null when there is none.
 */
export function hostName(header: string | undefined): string | null {
  if (header === undefined || header === "") return null;
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(header);
  const name = bracketed ? (bracketed[1] as string) : header.replace(/:\d*$/, "");
  return name.toLowerCase().replace(/\.$/, "");
}

/** The names a guard lets through: exact ones, and the suffixes (`.domain`) of `*.domain` entries. */
interface AllowedNames {
  exact: ReadonlySet<string | null>;
  suffixes: readonly string[];
}

/**
 * Whether a request naming `host` in its `Host` header may be served by a server without API
 * keys: an IP literal (a page elsewhere cannot make a browser send the server's address as
 * its Host), `localhost` and `*.localhost` (browsers resolve those to loopback themselves),
 * and the names `allowed` holds (HOST and ALLOWED_HOSTS; `*`: any; `*.domain`: a name ending
 * in `.domain`, so never `domain.evil.example`). Any other name is what DNS rebinding sends: a
 * page on `attacker.example`, whose name it re-points at 127.0.0.1, talking to the server as
 * its own origin, without CORS and without a key.
 */
function hostAllowed(host: string | null, allowed: AllowedNames): boolean {
  if (host === null || isIP(host) !== 0) return true;
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (allowed.exact.has("*") || allowed.exact.has(host)) return true;
  return allowed.suffixes.some((suffix) => host.endsWith(suffix));
}

/**
 * Without API keys nothing but the network stands between a client and the tools, and a
 * browser crosses it for any page it shows through DNS rebinding: such requests, recognised
 * by their `Host`, are refused (403 HOST_NOT_ALLOWED) before anything else runs, CORS
 * preflights included. With keys a rebinding page gains nothing (it has no key). `keyless`
 * says the app never takes keys (METRICS_PORT): the refusal then says so and offers ALLOWED_HOSTS alone.
 * `names` are ALLOWED_HOSTS's entries as the configuration gives them (see allowedHostEntry).
 */
export function guardHosts(
  app: FastifyInstance,
  options: { enabled: boolean; configuredHost: string; names: readonly string[]; keyless?: boolean },
): void {
  if (!options.enabled) return;
  const [what, remedy] = options.keyless
    ? ["this port (METRICS_PORT) takes no API keys", "add the name to ALLOWED_HOSTS"]
    : ["this server has no API keys", "add the name to ALLOWED_HOSTS, or set AGENT_API_KEYS"];
  // Sorted once here, not per request.
  const wildcards = options.names.filter((name) => name.startsWith("*."));
  const allowed: AllowedNames = {
    exact: new Set([hostName(options.configuredHost), ...options.names.filter((name) => !wildcards.includes(name))]),
    suffixes: wildcards.map((name) => name.slice(1)),
  };
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook("onRequest", (request, _reply, done) => {
    const host = hostName(request.headers.host);
    if (hostAllowed(host, allowed)) return done();
    done(
      new AppError(
        "HOST_NOT_ALLOWED",
        `${what} and does not answer requests for host "${host}" (a page using DNS rebinding ` +
          `sends those); ${remedy}`,
        403,
      ),
    );
  });
}
