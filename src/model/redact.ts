/** Longest upstream detail quoted in an error message. */
const MAX_DETAIL_CHARS = 300;

/** Things that look like bearer secrets (OpenAI-style `sk-...` keys, possibly masked with `*`). */
const SECRET_LIKE = /\bsk-[A-Za-z0-9_*.-]{4,}/g;

/**
 * Secrets shorter than this are redacted as written only, and only as a whole word (not inside
 * a longer word or number): their base64 pieces, or they themselves, would match ordinary text.
 */
const MIN_ENCODED_SECRET_CHARS = 8;

/** A character of a word (ASCII letters, digits, `_`): what a short secret may not border on. */
const WORD_CHAR = /^\w$/;

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");

/** JSON's two-character escapes of the characters a secret may hold (`\"`, `\\`, `\/`). */
const JSON_ESCAPED = new Set(['"', "\\", "/"]);

/**
 * One character of a secret, as written in any case, %-encoded (its UTF-8 bytes) or as JSON
 * escapes it (`\u00XX`, and `\"`, `\\` or `\/`); the encodings first, so that a secret's `%`
 * followed by its `25` is taken as one `%25`, not as `%` ending the match.
 */
function charPattern(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  if (code > 0x7f) {
    const encoded = [...Buffer.from(char, "utf8")].map((byte) => `%${byte.toString(16).padStart(2, "0")}`).join("");
    return `(?:${encoded}|${escapeRegExp(char)})`;
  }
  const hex = code.toString(16).padStart(2, "0");
  const escaped = JSON_ESCAPED.has(char) ? `|\\\\${escapeRegExp(char)}` : "";
  return `(?:%${hex}|\\\\u00${hex}${escaped}|${escapeRegExp(char)})`;
}

/**
 * The pieces of text that any base64 (or base64url) encoding of bytes containing `secret`
 * contains, whatever the secret's offset: for each of the three alignments, the characters
 * that depend on the secret's bytes only. So the base64 of `Bearer <key>`, of `user:<key>`
 * or of the key alone all contain one of them.
 */
function base64Pieces(secret: string): string[] {
  const bytes = Buffer.from(secret, "utf8");
  const pieces = new Set<string>();
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
    const piece = encoded.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
    pieces.add(piece);
    pieces.add(piece.replaceAll("+", "-").replaceAll("/", "_"));
  }
  return [...pieces];
}

/**
 * A pattern matching the units in order, or a prefix of them at least half as long (and at
 * least MIN_ENCODED_SECRET_CHARS): a text cut short in the middle of a secret shows none of it.
 */
function prefixPattern(units: readonly string[]): string {
  const min = Math.min(units.length, Math.max(MIN_ENCODED_SECRET_CHARS, Math.ceil(units.length / 2)));
  let tail = "";
  for (let i = units.length - 1; i >= min; i--) tail = `(?:${units[i]}${tail})?`;
  return units.slice(0, min).join("") + tail;
}

/**
 * `secret` (shorter than MIN_ENCODED_SECRET_CHARS) in any of its encodings, where it is a
 * whole word: no word character just before it if it begins with one, nor just after it if it
 * ends with one (`1` is not redacted from `127` or `req_01`, `p` not from `pid`).
 */
function wholeWordPattern(secret: string): string {
  const chars = [...secret];
  const before = WORD_CHAR.test(chars[0] ?? "") ? "(?<!\\w)" : "";
  const after = WORD_CHAR.test(chars.at(-1) ?? "") ? "(?!\\w)" : "";
  return `${before}(?:${chars.map(charPattern).join("")})${after}`;
}

/**
 * A function that replaces every encoding of the secrets a text may carry with `[redacted]`:
 * the secret as written, in any letter case, %-encoded (wholly or in part), JSON-escaped, and
 * inside any base64 or base64url text (of `Bearer <secret>`, say); also each of these cut
 * short (see prefixPattern). A secret shorter than MIN_ENCODED_SECRET_CHARS is redacted in the
 * first three forms only, and only as a whole word (see wholeWordPattern). Empty secrets are ignored.
 *
 * Where encodings begin, the longest of them is replaced: so a secret sharing a prefix with
 * another (`team-alpha-2024-Qw7rT2xP`, `team-alpha-2024-Zk9mV4nL`), or a key's base64url sharing
 * one with its base64, is replaced whole, not only as far as the other's cut-short form reaches.
 */
export function secretRedactor(secrets: readonly string[]): (text: string) => string {
  const forms: { first: string; pattern: string }[] = [];
  for (const secret of new Set(secrets.filter((s) => s.length > 0))) {
    if ([...secret].length < MIN_ENCODED_SECRET_CHARS) {
      forms.push({ first: secret, pattern: wholeWordPattern(secret) });
      continue;
    }
    forms.push({ first: secret, pattern: prefixPattern([...secret].map(charPattern)) });
    for (const piece of base64Pieces(secret))
      forms.push({ first: piece, pattern: prefixPattern([...piece].map(charPattern)) });
  }
  if (forms.length === 0) return (text) => text;
  // Ignoring case also for base64 pieces only redacts a little more. The alternation finds
  // where an encoding begins (it takes the first alternative matching there, not the longest:
  // one scan of a text holding none); each form alone then says how far it reaches.
  const finder = new RegExp(forms.map((form) => form.pattern).join("|"), "gi");
  const startingWith = formsByFirstChar(forms);
  /** The end of the longest form matching at `start`, where the finder's match ends at `end`. */
  const reach = (text: string, start: number, end: number): number => {
    let longest = end;
    for (const pattern of startingWith(text[start] ?? "")) {
      pattern.lastIndex = start;
      if (pattern.test(text)) longest = Math.max(longest, pattern.lastIndex);
    }
    return longest;
  };
  const next = (text: string, from: number): RegExpExecArray | null => {
    finder.lastIndex = from;
    return finder.exec(text);
  };
  return (text) => {
    let found = next(text, 0);
    if (found === null) return text;
    let out = "";
    let copied = 0;
    while (found !== null) {
      out += `${text.slice(copied, found.index)}[redacted]`;
      copied = reach(text, found.index, found.index + found[0].length);
      found = next(text, copied);
    }
    return out + text.slice(copied);
  };
}

/**
 * The forms' patterns (sticky, ignoring case) that may match where a text has `char`: those
 * whose secret or piece begins with it in either case (or with a character beyond ASCII, whose
 * case the regex may fold otherwise), and all of them at `%` or `\\` (an encoded first character).
 */
function formsByFirstChar(forms: readonly { first: string; pattern: string }[]): (char: string) => RegExp[] {
  const all = forms.map((form) => ({ first: form.first[0] ?? "", regex: new RegExp(form.pattern, "iy") }));
  const beyondASCII = all.filter((form) => form.first > "\x7f").map((form) => form.regex);
  const byChar = new Map<string, RegExp[]>();
  for (const form of all) {
    if (form.first > "\x7f") continue;
    const key = form.first.toLowerCase();
    byChar.set(key, [...(byChar.get(key) ?? beyondASCII), form.regex]);
  }
  const every = all.map((form) => form.regex);
  return (char) => (char === "%" || char === "\\" ? every : (byChar.get(char.toLowerCase()) ?? beyondASCII));
}

/**
 * Makes upstream text safe to show: removes the server's secrets with `redactSecrets` (a
 * secretRedactor of them: the API key and every other secret the server knows) and anything
 * shaped like an API key (upstreams echo masked keys in 401 bodies), collapses whitespace and
 * caps the length. Contract: the returned text contains no encoding of those secrets that
 * secretRedactor knows.
 */
export function redactDetail(text: string, redactSecrets: (text: string) => string): string {
  let out = redactSecrets(text);
  out = out.replace(SECRET_LIKE, "sk-[redacted]").replace(/\s+/g, " ").trim();
  if (out.length > MAX_DETAIL_CHARS) out = `${out.slice(0, MAX_DETAIL_CHARS)}…`;
  // Truncation cannot reintroduce a secret (it only shortens), so the contract holds.
  return out;
}

/** A base URL as shown in messages: without user info, query or fragment. */
export function displayURL(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    url.username = "";
    url.password = "";
    url.search = "";
    url.hash = "";
    return url.toString().replace(/\/$/, "");
  } catch {
    return "(invalid base URL)";
  }
}
