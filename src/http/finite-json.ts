import { MAX_JSON_DEPTH } from "./json-depth.js";

/**
 * The path (keys and indexes from `value`) of the first number in `value` that is not finite,
 * or null when it holds none. JSON writes a number a double cannot hold (`1e999`, `-1e999`):
 * JSON.parse reads it as ±Infinity, and JSON.stringify would store it as `null`, silently; what
 * a client's free-form JSON is kept as must be what it sent, so such a value is refused instead.
 * One walk of `value`, not past `maxDepth` levels of arrays and objects (the request parser
 * refuses a body nested deeper than MAX_JSON_DEPTH, so nothing deeper reaches here).
 */
export function nonFinitePath(value: unknown, maxDepth = MAX_JSON_DEPTH): (string | number)[] | null {
  if (typeof value === "number") return Number.isFinite(value) ? null : [];
  if (typeof value !== "object" || value === null || maxDepth <= 0) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const path = nonFinitePath(value[i], maxDepth - 1);
      if (path) return [i, ...path];
    }
    return null;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const path = nonFinitePath((value as Record<string, unknown>)[key], maxDepth - 1);
    if (path) return [key, ...path];
  }
  return null;
}

/** What a validation issue says of a number nonFinitePath found. */
export const NON_FINITE_MESSAGE =
  "a number beyond what a double holds (read as Infinity): it cannot be stored as sent; send it as a string";
