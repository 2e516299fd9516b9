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

/** A search_files match line: `<path>:<line>: <excerpt>`. */
const MATCH_LINE = /^(.+?):\d+: /;

/** The workspace files one successful result shows content of: read_file's path, search_files' matching files. */
function filesOf(tool: string, input: string, result: ToolMessage): string[] {
  if (tool === "read_file") {
    const args = parseCallArguments(input) as { path?: unknown } | undefined;
    return typeof args?.path === "string" ? [args.path] : [];
  }
  if (tool !== "search_files") return [];
  const files: string[] = [];
  for (const line of result.content.split("\n")) {
    const match = MATCH_LINE.exec(line);
    if (match?.[1]) files.push(match[1]);
  }
  return files;
}

/**
 * The workspace files whose content entered `sent` (the messages of one model request, after
 * trimming): from the successful read_file and search_files results among them, first seen first,
 * up to MAX_INCLUDED_FILES names and MAX_INCLUDED_CHARS characters.
 */
export function includedFiles(sent: readonly AgentMessage[]): string[] {
  const calls = new Map<string, { name: string; input: string }>();
  const files = new Set<string>();
  let chars = 0;
  for (const message of sent) {
    if (message.role === "assistant") for (const call of message.toolCalls ?? []) calls.set(call.id, call);
    if (message.role !== "tool" || message.isError) continue;
    const call = calls.get(message.toolCallId);
    if (!call) continue;
    for (const file of filesOf(call.name, call.input, message)) {
      if (files.has(file)) continue;
      if (files.size >= MAX_INCLUDED_FILES || chars + file.length > MAX_INCLUDED_CHARS) return [...files];
      files.add(file);
      chars += file.length;
    }
  }
  return [...files];
}
