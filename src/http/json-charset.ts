import { AppError } from "../errors.js";

/** Charsets whose bytes UTF-8 decoding reads as sent (lower case). */
const READ_AS_SENT = new Set(["utf-8", "utf8", "us-ascii"]);

/** A Content-Type's parameters after its media type: `; name=token` or `; name="quoted string"`. */
const PARAMETER = /;\s*([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)/g;

/**
 * The charset a Content-Type header declares that a JSON body is not read in, or null when it
 * declares none or UTF-8 (`utf-8`, its common alias `utf8`, or `us-ascii`, which UTF-8 reads
 * as sent; in any case, quoted or not). JSON exchanged between systems
 * is UTF-8 (RFC 8259 8.1) and the body parser reads every body as UTF-8: a body in another
 * charset (iso-8859-1, utf-16) would be read as other text than the client sent, so it is
 * refused (see charsetRefused) rather than stored mangled. Every charset parameter counts.
 */
export function foreignCharset(contentType: string | undefined): string | null {
  if (!contentType) return null;
  for (const [, name, raw] of contentType.matchAll(PARAMETER)) {
    if (name?.toLowerCase() !== "charset" || raw === undefined) continue;
    const value = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, "$1") : raw.trim();
    if (!READ_AS_SENT.has(value.toLowerCase())) return value;
  }
  return null;
}

/** 415 UNSUPPORTED_MEDIA_TYPE for a JSON body declared in `charset` (see foreignCharset). */
export const charsetRefused = (charset: string): AppError =>
  new AppError(
    "UNSUPPORTED_MEDIA_TYPE",
    `unsupported charset ${JSON.stringify(charset)} in Content-Type: send the JSON body as UTF-8 (charset=utf-8, or no charset)`,
    415,
    { charset },
  );
