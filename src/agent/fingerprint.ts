import { hash } from "node:crypto";
import { canonicalJson } from "./canonical-json.js";
import type { ToolCall } from "./messages.js";

/**
 * A call's arguments in canonical form: the JSON re-encoded with sorted keys, so `{"a":1,"b":2}`
 * and `{ "b": 2, "a": 1 }` are the same call; text that is not JSON stays as it was sent (trimmed).
 */
export function canonicalArguments(input: string): string {
  const text = input.trim();
  if (text === "") return "{}";
  try {
    return canonicalJson(JSON.parse(text));
  } catch {
    return text;
  }
}

const digest = (text: string): string => hash("sha256", text, "hex").slice(0, 16);

/** A stable fingerprint of a call: its tool name and canonical arguments, hashed (16 hex digits). */
export function callFingerprint(call: Pick<ToolCall, "name" | "input">): string {
  return digest(`${call.name}\n${canonicalArguments(call.input)}`);
}
