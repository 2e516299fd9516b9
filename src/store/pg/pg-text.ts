import { wellFormed } from "../../agent/messages.js";
import { CorruptRowError } from "../json.js";

/**
 * PostgreSQL's text cannot hold U+0000 (SQLSTATE 22021), which a tool's output, a model's reply
 * or a client's input may carry, and SQLite stores as given. So the PostgreSQL store keeps such
 * a value encoded, and every value it reads back decoded: the Store gives back exactly what it
 * was given on both backends.
 *
 * A value is kept encoded when it holds U+0000 or starts with MARK: MARK then its JSON string
 * literal (JSON writes U+0000 as the six characters `\u0000`). Any other value is kept as is,
 * so a stored value starts with MARK exactly when it is encoded (migration 0016 encoded the few
 * that started with it before). The encoding is a function of the value: an encoded key still
 * finds its row by `=`, and a value copied in SQL stays encoded. SQL must not cut or join a
 * value that may be encoded (its JSON documents, which never hold U+0000 raw, it may).
 *
 * An encoded value is made well-formed first (each lone surrogate U+FFFD), as every other is on
 * its way in UTF-8 and as SQLite stores it: JSON would keep a lone surrogate as its escape, and
 * the same text would then read back differently by backend and by whether it holds U+0000.
 */
const MARK = "\uFFFF";

/** `value` as PostgreSQL keeps it (see MARK). */
export function encodeText(value: string): string {
  return value.includes("\u0000") || value.startsWith(MARK) ? MARK + JSON.stringify(wellFormed(value)) : value;
}

/** A stored value as it was given (see encodeText); throws CorruptRowError when it is not one encodeText made. */
export function decodeText(stored: string): string {
  if (!stored.startsWith(MARK)) return stored;
  let value: unknown;
  try {
    value = JSON.parse(stored.slice(MARK.length));
  } catch {
    value = undefined;
  }
  if (typeof value !== "string") throw new CorruptRowError("a stored text value is not one the store encoded");
  // Well-formed also when encoded before encodeText made it so (a lone surrogate kept escaped).
  return wellFormed(value);
}

/** A statement's parameters as sent: every string, also in an array (`$1::text[]`), encoded. */
export function encodeValues(values: readonly unknown[] | undefined): unknown[] | undefined {
  return values?.map((value) =>
    typeof value === "string"
      ? encodeText(value)
      : Array.isArray(value)
        ? value.map((item) => (typeof item === "string" ? encodeText(item) : item))
        : value,
  );
}

/** Decodes, in place, every text value of `rows` as read; returns them. */
export function decodeRows<R>(rows: R[]): R[] {
  for (const row of rows) {
    const fields = row as Record<string, unknown>;
    for (const key in fields) {
      const value = fields[key];
      if (typeof value === "string" && value.startsWith(MARK)) fields[key] = decodeText(value);
    }
  }
  return rows;
}
