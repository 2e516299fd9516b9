import type { AgentMessage, ToolMessage } from "./messages.js";
import { parseCallArguments } from "./plan.js";

/** The most file names one step trace lists. */
export const MAX_INCLUDED_FILES = 200;
/**
 * The most characters of file names one step trace lists: a name is the path the model gave
 * (of any length), and every step lists again the files of its whole window, so 64 reads under
 * 15,000-character paths made each later step store ~1 MB.
 */
export const MAX_INCLUDED_CHARS = 16 * 1024;

/**
 * The workspace files one successful result shows content of: those its tool named (the
 * result's `metadata.files`, see ToolOutcome); a read_file result that names none, by the path
 * its call gave.
 */
function filesOf(tool: string, input: string, result: ToolMessage): readonly string[] {
  if (result.metadata.files || tool !== "read_file") return result.metadata.files ?? [];
  const args = parseCallArguments(input) as { path?: unknown } | undefined;
  return typeof args?.path === "string" ? [args.path] : [];
}

/**
 * `names` without repeats, first seen first, up to MAX_INCLUDED_FILES names and
 * MAX_INCLUDED_CHARS characters (the first that does not fit ends the list).
 */
export function keptFiles(names: Iterable<string>): string[] {
  const files = new Set<string>();
  let chars = 0;
  for (const file of names) {
    if (files.has(file)) continue;
    if (files.size >= MAX_INCLUDED_FILES || chars + file.length > MAX_INCLUDED_CHARS) break;
    files.add(file);
    chars += file.length;
  }
  return [...files];
}

/**
 * The workspace files whose content entered `sent` (the messages of one model request, after
 * trimming): from the successful results among them that name files (filesOf), first seen first,
 * up to MAX_INCLUDED_FILES names and MAX_INCLUDED_CHARS characters.
 */
export function includedFiles(sent: readonly AgentMessage[]): string[] {
  return keptFiles(filesSent(sent));
}

function* filesSent(sent: readonly AgentMessage[]): Generator<string> {
  const calls = new Map<string, { name: string; input: string }>();
  for (const message of sent) {
    if (message.role === "assistant") for (const call of message.toolCalls ?? []) calls.set(call.id, call);
    if (message.role !== "tool" || message.isError) continue;
    const call = calls.get(message.toolCallId);
    if (call) yield* filesOf(call.name, call.input, message);
  }
}
