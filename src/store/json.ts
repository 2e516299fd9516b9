import type { z } from "zod";

export class CorruptRowError extends Error {
  readonly code = "CORRUPT_ROW";
}

/** Parses a JSON column and checks it against its schema: data read back is a boundary too. */
export function parseJsonColumn<T>(schema: z.ZodType<T>, text: string, what: string): T {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new CorruptRowError(`${what}: stored JSON does not parse`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new CorruptRowError(`${what}: stored JSON does not match its schema (${parsed.error.message})`);
  return parsed.data;
}

export function parseOptionalJsonColumn<T>(schema: z.ZodType<T>, text: string | null, what: string): T | null {
  return text === null ? null : parseJsonColumn(schema, text, what);
}

export const toJson = (value: unknown): string | null =>
  value === undefined || value === null ? null : JSON.stringify(value);
