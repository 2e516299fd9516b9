import type { AgentMessage } from "../agent/messages.js";
import type { ModelRequest, ToolSpec } from "../agent/model.js";
import { ObjectSlot } from "../object-slot.js";
import type { ProviderProfile } from "./provider-profile.js";
import { providerExtras, toChatMessage, toChatTools } from "./wire-request.js";

/**
 * Each message's request form as UTF-8 JSON, made once per message and provider profile:
 * a session's history is sent again with every model request, and re-encoding it each time
 * is most of what a long history costs. Kept on the message object, so it lives exactly as
 * long as the message does (the history tail's, the run's). Sound because a message is not
 * changed once committed: the loop and the store make new objects, never edit one.
 */
const encoded = new ObjectSlot<AgentMessage, { profile: string; bytes: Buffer }>("request bytes");

const COMMA = Buffer.from(",");
const EMPTY = Buffer.alloc(0);

/** `text` as UTF-8 in a buffer of its own (a slice of the shared pool would keep the whole pool alive). */
function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

function messageBytes(message: AgentMessage, profile: ProviderProfile): Buffer {
  const known = encoded.get(message);
  if (known?.profile === profile.name) return known.bytes;
  const bytes = ownBytes(JSON.stringify(toChatMessage(message, profile)));
  encoded.set(message, { profile: profile.name, bytes });
  return bytes;
}

/** Each assistant message's extraChars, per profile, kept on the message as its request bytes are. */
const extras = new ObjectSlot<AgentMessage, { profile: string; chars: number }>("sent extra chars");

/**
 * What `profile` sends for `message` beyond its content and tool-call arguments, in characters:
 * each provider field it sends back (providerExtras), a string by its length (as content is
 * counted), anything else by its JSON text. Counted against `contextMaxChars` with the rest;
 * worked out once per message and profile, like the request bytes.
 */
export function extraChars(message: AgentMessage, profile: ProviderProfile): number {
  if (message.role !== "assistant") return 0;
  const known = extras.get(message);
  if (known?.profile === profile.name) return known.chars;
  const sent = providerExtras(message, profile);
  let chars = 0;
  for (const fields of [sent.message, ...sent.calls]) {
    for (const value of Object.values(fields)) chars += typeof value === "string" ? value.length : jsonLength(value);
  }
  extras.set(message, { profile: profile.name, chars });
  return chars;
}

function jsonLength(value: unknown): number {
  return JSON.stringify(value)?.length ?? 0;
}

/**
 * The tools' part of a request: `,"tools":[...]`, or nothing without tools. The last one made
 * is kept per first spec (specs are reused across runs: see toolSpecs).
 */
const toolParts = new WeakMap<ToolSpec, { tools: ToolSpec[]; part: Buffer }>();
function toolsPart(tools: ToolSpec[]): Buffer {
  const first = tools[0];
  if (first === undefined) return EMPTY;
  const known = toolParts.get(first);
  if (known && known.tools.length === tools.length && known.tools.every((tool, i) => tool === tools[i])) {
    return known.part;
  }
  const part = ownBytes(`,"tools":${JSON.stringify(toChatTools(tools))}`);
  toolParts.set(first, { tools: [...tools], part });
  return part;
}

/**
 * The streaming request body (toChatRequest's) as the bytes sent: exactly
 * `JSON.stringify(toChatRequest(request, model, profile))` in UTF-8, with every message's
 * part encoded once and reused by later requests. The body has memory of its own: it lives as
 * long as its request (seconds, while the model streams), and a slice of Node's shared pool
 * (64 KiB in Node 24) would keep the whole pool alive that long.
 */
export function encodeChatRequest(request: ModelRequest, model: string, profile: ProviderProfile): Buffer {
  const parts: Buffer[] = [Buffer.from(`{"model":${JSON.stringify(model)},"messages":[`)];
  if (request.system) parts.push(Buffer.from(JSON.stringify({ role: "system", content: request.system })));
  for (const message of request.messages) {
    if (parts.length > 1) parts.push(COMMA);
    parts.push(messageBytes(message, profile));
  }
  parts.push(Buffer.from("]"), toolsPart(request.tools));
  parts.push(Buffer.from(`,"stream":true,"stream_options":{"include_usage":true}}`));
  let length = 0;
  for (const part of parts) length += part.length;
  const body = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const part of parts) at += part.copy(body, at);
  return body;
}
