import { mkdir, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { toolError, toolOk } from "../agent/tool.js";
import { writeFileAtomic } from "./atomic-write.js";
import type { WorkspaceToolDefinition } from "./definition.js";
import { ToolErrorCode } from "./error-codes.js";
import { errnoCode, fsErrorOutcome, notAFileOutcome } from "./fs-errors.js";
import { formatBytes } from "./text.js";
import { resolveInWorkspace } from "./workspace.js";

/** The largest content write_file accepts, in UTF-8 bytes. */
export const WRITE_MAX_BYTES = 2 * 1024 * 1024;

export const writeFileInput = z.strictObject({
  path: z
    .string()
    .min(1)
    .describe("File to write, relative to the workspace root. Missing parent directories are created."),
  content: z.string().describe("The complete new content of the file (UTF-8 text)."),
});

export type WriteFileInput = z.infer<typeof writeFileInput>;

export const writeFileTool: WorkspaceToolDefinition<WriteFileInput> = {
  name: "write_file",
  description:
    "Create a file, or replace an existing file's whole content, in the workspace. Missing parent directories " +
    `are created. Content is at most ${formatBytes(WRITE_MAX_BYTES)}. The write is atomic. To change part of an ` +
    "existing file prefer edit_file.",
  inputSchema: writeFileInput,
  readOnly: false,
  async execute({ path, content }, { workspace }) {
    const bytes = Buffer.byteLength(content);
    if (bytes > WRITE_MAX_BYTES) {
      return toolError(
        ToolErrorCode.fileTooLarge,
        `content is ${formatBytes(bytes)}, over the ${formatBytes(WRITE_MAX_BYTES)} limit of write_file; write smaller files`,
        true,
      );
    }
    const resolved = await resolveInWorkspace(workspace, path);
    if (!resolved.ok) return resolved.outcome;
    if (/[/\\]$/.test(path) || /(^|\/)\.{1,2}$/.test(path)) {
      // resolve() would drop the trailing slash and write a file where a directory was meant.
      return toolError(
        ToolErrorCode.invalidPath,
        `"${path}" names a directory; give the path of the file to write (e.g. "${path.replace(/[/\\]+$/, "")}/name.txt")`,
        true,
      );
    }
    try {
      let previous: { size: number; mode: number } | null = null;
      try {
        const info = await stat(resolved.path);
        if (!info.isFile()) return notAFileOutcome(path, info.isDirectory());
        previous = { size: info.size, mode: info.mode & 0o7777 };
      } catch (err) {
        if (errnoCode(err) !== "ENOENT") throw err;
      }
      await mkdir(dirname(resolved.path), { recursive: true });
      await writeFileAtomic({ path: resolved.path, data: content, mode: previous?.mode });
      const what = previous ? `replaced its previous ${previous.size} bytes` : "created";
      return toolOk(`wrote ${bytes} bytes to "${path}" (${what})`);
    } catch (err) {
      return fsErrorOutcome(err, path);
    }
  },
};
