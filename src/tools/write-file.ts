import { z } from "zod";
import { toolError, toolOk } from "../agent/tool.js";
import { writeFileAtomic } from "./atomic-write.js";
import type { WorkspaceToolDefinition } from "./definition.js";
import { ToolErrorCode } from "./error-codes.js";
import { fsErrorOutcome, notAFileOutcome } from "./fs-errors.js";
import { openLocatedFile } from "./located-io.js";
import { pathInput } from "./path-input.js";
import { formatBytes } from "./text.js";
import { locateInWorkspace, workspaceComponents } from "./workspace.js";

/** The largest content write_file accepts, in UTF-8 bytes. */
export const WRITE_MAX_BYTES = 2 * 1024 * 1024;

export const writeFileInput = z.strictObject({
  path: pathInput
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
    // Refused before anything is created: a path outside, then one naming a directory.
    const parsed = workspaceComponents(workspace, path);
    if (!parsed.ok) return parsed.outcome;
    if (/[/\\]$/.test(path) || /(^|\/)\.{1,2}$/.test(path)) {
      // The last component would be dropped and a file written where a directory was meant.
      return toolError(
        ToolErrorCode.invalidPath,
        `"${path}" names a directory; give the path of the file to write (e.g. "${path.replace(/[/\\]+$/, "")}/name.txt")`,
        true,
      );
    }
    const located = await locateInWorkspace({ workspace, path, createParents: true });
    if (!located.ok) return located.outcome;
    const { dir, name, kind } = located.at;
    try {
      if (name === null || kind === "directory" || kind === "other") return notAFileOutcome(path, kind === "directory");
      let previous: { size: number; mode: number } | null = null;
      if (kind === "file") {
        const opened = await openLocatedFile(located.at, path);
        if (!opened.ok) return opened.outcome;
        await opened.file.close();
        previous = { size: opened.info.size, mode: opened.info.mode & 0o7777 };
      }
      await writeFileAtomic({ dir, name, data: content, mode: previous?.mode });
      const what = previous ? `replaced its previous ${previous.size} bytes` : "created";
      return toolOk(`wrote ${bytes} bytes to "${path}" (${what})`);
    } catch (err) {
      return fsErrorOutcome(err, path);
    } finally {
      await located.at.close();
    }
  },
};
