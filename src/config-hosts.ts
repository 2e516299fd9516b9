import { isIP } from "node:net";
import { z } from "zod";
import { listSetting } from "./config-settings.js";

/** Dot-separated labels of letters, digits, `-` and `_` (compose service names may hold `_`). */
const HOST_NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/;

/** The host of `entry` written as a host (`name`, `name:port`, `[v6]:port`) or as an http(s) URL; null when neither. */
function hostOf(entry: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry)) {
    if (!URL.canParse(entry)) return null;
    const url = new URL(entry);
    return url.protocol === "http:" || url.protocol === "https:" ? url.hostname.replace(/^\[(.*)\]$/, "$1") : null;
  }
  if (isIP(entry) !== 0) return entry;
  const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(entry);
  return bracketed ? (bracketed[1] as string) : entry.replace(/:\d+$/, "");
}

/**
 * An ALLOWED_HOSTS entry as the host guard compares it: `*` (any host), `*.domain` (a name
 * ending in `.domain`, not `domain` itself), or a host name or IP address, lower case, without
 * a trailing dot; a URL stands for its host, and a port is dropped (the guard compares names).
 * Anything else is a problem quoting the entry: it could never match a request's Host.
 */
export function allowedHostEntry(entry: string): { ok: true; value: string } | { ok: false; error: string } {
  if (entry === "*") return { ok: true, value: entry };
  const host = hostOf(entry)?.toLowerCase().replace(/\.$/, "");
  if (host !== undefined) {
    const wildcard = host.startsWith("*.");
    const name = wildcard ? host.slice(2) : host;
    if (HOST_NAME.test(name) || (!wildcard && isIP(name) !== 0)) return { ok: true, value: host };
  }
  return {
    ok: false,
    error:
      `${JSON.stringify(entry)} can never match a request's Host: write a host name (app.internal), ` +
      "an IP address, *.domain for the names under domain, or * for any",
  };
}

/** ALLOWED_HOSTS: comma-separated entries, each as allowedHostEntry gives it. */
export const allowedHostsSetting = listSetting.pipe(
  z.array(
    z.string().transform((entry, ctx) => {
      const parsed = allowedHostEntry(entry);
      if (parsed.ok) return parsed.value;
      ctx.addIssue({ code: "custom", message: parsed.error });
      return z.NEVER;
    }),
  ),
);
